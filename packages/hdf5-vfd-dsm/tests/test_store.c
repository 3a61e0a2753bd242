/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* The DSM's one-sided transport (src/dsm_store.h) on N ranks: the first half host the
 * DSM, the others write it with MPI_Put in runs of odd sizes, for each distribution.
 * The servers check their own memory against dsm_unmap (placement), the clients read
 * everything back with MPI_Get in other run sizes (round trip), and a write beyond the
 * DSM is refused with "the DSM is full" and changes nothing.
 *   mpiexec -n N test_store          prints "store: ok (...)" */
#include "dsm_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char
pattern(uint64_t addr, int round)
{
    return (unsigned char)((addr * 31 + 7 + round * 13) & 0xff);
}

/* the ranks' roles: the first nservers host the DSM, the others (or rank 0 alone) write it */
typedef struct {
    int rank, size, nservers, first_client, nclients, is_client;
} roles_t;

/* the clients: each writes its share of [0, L) in runs of 1..777 bytes; the errors */
static long long
write_shares(dsm_store_t *s, const roles_t *r, unsigned char *buf, const char *layout, int t)
{
    char           err[512];
    const uint64_t L = s->layout.total;
    int            c = r->rank - r->first_client;
    uint64_t lo = L * (uint64_t)c / (uint64_t)r->nclients, hi = L * (uint64_t)(c + 1) / (uint64_t)r->nclients;
    for (uint64_t a = lo; a < hi; a++)
        buf[a] = pattern(a, t);
    for (uint64_t a = lo, n = 1; a < hi; a += n, n = n * 7 % 777 + 1) {
        if (n > hi - a)
            n = hi - a;
        if (dsm_store_put(s, a, buf + a, n, err, sizeof err) < 0) {
            fprintf(stderr, "rank %d: %s: %s\n", r->rank, layout, err);
            return 1;
        }
    }
    return 0;
}

/* placement, on a server: its memory holds what belongs there; the errors (errors: so far) */
static long long
check_placement(dsm_store_t *s, int rank, const char *layout, int t, long long errors)
{
    int                  server = rank - s->first_server;
    const unsigned char *mem    = s->local;
    long long            found  = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, s->win);
    for (uint64_t off = 0; off < s->layout.local; off++) {
        uint64_t a = dsm_unmap(&s->layout, server, off);
        if (mem[off] != pattern(a, t) && errors + found++ < 5)
            fprintf(stderr, "rank %d: %s: server %d offset %" PRIu64 " (address %" PRIu64 ") holds %d\n",
                    rank, layout, server, off, a, mem[off]);
    }
    MPI_Win_unlock(rank, s->win);
    return found;
}

/* round trip, on a client: the whole DSM read back in other runs; the errors (errors: so far) */
static long long
read_back(dsm_store_t *s, int rank, unsigned char *buf, const char *layout, int t, long long errors)
{
    char           err[512];
    const uint64_t L     = s->layout.total;
    long long      found = 0;
    memset(buf, 0, L);
    for (uint64_t a = 0, n = 5; a < L; a += n, n = n * 13 % 1021 + 1) {
        if (n > L - a)
            n = L - a;
        if (dsm_store_get(s, a, buf + a, n, err, sizeof err) < 0) {
            fprintf(stderr, "rank %d: %s: %s\n", rank, layout, err);
            found++;
            break;
        }
    }
    for (uint64_t a = 0; a < L; a++)
        if (buf[a] != pattern(a, t) && errors + found++ < 5)
            fprintf(stderr, "rank %d: %s: read %d at %" PRIu64 "\n", rank, layout, buf[a], a);
    return found;
}

/* beyond the end: refused, nothing written; the errors */
static long long
check_refused(dsm_store_t *s, const char *layout, int t)
{
    char           err[512];
    const uint64_t L        = s->layout.total;
    unsigned char  junk[16] = {0}, last = 0;
    long long      found = 0;
    if (dsm_store_put(s, L - 8, junk, sizeof junk, err, sizeof err) == 0 || !strstr(err, "the DSM is full")) {
        fprintf(stderr, "%s: a write beyond the DSM was not refused (%s)\n", layout, err);
        found++;
    }
    dsm_store_get(s, L - 1, &last, 1, err, sizeof err);
    if (last != pattern(L - 1, t)) {
        fprintf(stderr, "%s: the refused write changed the DSM\n", layout);
        found++;
    }
    if (t == 0)
        printf("refused: %s\n", err);
    return found;
}

/* one distribution (the t-th): the store opened, written, checked, closed; the errors
 * (errors: so far) */
static long long
test_layout(const roles_t *r, const char *layout, int t, long long errors)
{
    char        err[512];
    dsm_kind_t  kind;
    uint64_t    block, seed;
    dsm_store_t s;
    if (dsm_layout_parse(layout, &kind, &block, &seed, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (dsm_store_open(&s, MPI_COMM_WORLD, 0, r->nservers,
                       10007 /* not a multiple of the blocks: L is rounded */, kind, block, seed, err,
                       sizeof err) < 0) {
        fprintf(stderr, "rank %d: %s: %s\n", r->rank, layout, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    unsigned char *buf   = malloc(s.layout.total);
    long long      found = 0;
    if (r->is_client)
        found += write_shares(&s, r, buf, layout, t);
    MPI_Barrier(MPI_COMM_WORLD);
    if (s.is_server)
        found += check_placement(&s, r->rank, layout, t, errors + found);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r->is_client)
        found += read_back(&s, r->rank, buf, layout, t, errors + found);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r->rank == r->first_client)
        found += check_refused(&s, layout, t);
    free(buf);
    dsm_store_close(&s);
    return found;
}

int
main(int argc, char **argv)
{
    static const char *layouts[] = {"linear", "block-cyclic:64", "block-cyclic:1000", "random-block:64:5",
                                    "random-block:7"};
    roles_t            r;
    long long          errors = 0, all = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.size);
    r.nservers     = r.size > 1 ? r.size / 2 : 1;
    r.first_client = r.size > 1 ? r.nservers : 0;
    r.nclients     = r.size - r.first_client;
    r.is_client    = r.rank >= r.first_client;
    for (size_t t = 0; t < sizeof layouts / sizeof *layouts; t++)
        errors += test_layout(&r, layouts[t], (int)t, errors);
    MPI_Allreduce(&errors, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (r.rank == 0 && all)
        printf("store: FAILED, %lld error(s)\n", all);
    else if (r.rank == 0)
        printf("store: ok (%d ranks, %d servers, %zu layouts)\n", r.size, r.nservers,
               sizeof layouts / sizeof *layouts);
    MPI_Finalize();
    return all ? 1 : 0;
}
