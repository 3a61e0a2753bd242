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

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int      nservers     = size > 1 ? size / 2 : 1;
    const int      first_client = size > 1 ? nservers : 0, nclients = size - first_client;
    const int      is_client  = rank >= first_client;
    const char    *layouts[]  = {"linear", "block-cyclic:64", "block-cyclic:1000", "random-block:64:5",
                                 "random-block:7"};
    const uint64_t buffer_len = 10007; /* not a multiple of the blocks: L is rounded */
    long long      errors     = 0;
    char           err[512];

    for (size_t t = 0; t < sizeof layouts / sizeof *layouts; t++) {
        dsm_kind_t kind;
        uint64_t   block, seed;
        if (dsm_layout_parse(layouts[t], &kind, &block, &seed, err, sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        dsm_store_t s;
        if (dsm_store_open(&s, MPI_COMM_WORLD, 0, nservers, buffer_len, kind, block, seed, err, sizeof err) <
            0) {
            fprintf(stderr, "rank %d: %s: %s\n", rank, layouts[t], err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        const uint64_t L   = s.layout.total;
        unsigned char *buf = malloc(L);
        /* each client writes its share of [0, L) in runs of 1..777 bytes */
        if (is_client) {
            int      c  = rank - first_client;
            uint64_t lo = L * (uint64_t)c / (uint64_t)nclients,
                     hi = L * (uint64_t)(c + 1) / (uint64_t)nclients;
            for (uint64_t a = lo; a < hi; a++)
                buf[a] = pattern(a, (int)t);
            for (uint64_t a = lo, n = 1; a < hi; a += n, n = n * 7 % 777 + 1) {
                if (n > hi - a)
                    n = hi - a;
                if (dsm_store_put(&s, a, buf + a, n, err, sizeof err) < 0) {
                    fprintf(stderr, "rank %d: %s: %s\n", rank, layouts[t], err);
                    errors++;
                    break;
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* placement: each server's memory holds what belongs there */
        if (s.is_server) {
            int                  server = rank - s.first_server;
            const unsigned char *mem    = s.local;
            MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, s.win);
            for (uint64_t off = 0; off < s.layout.local; off++) {
                uint64_t a = dsm_unmap(&s.layout, server, off);
                if (mem[off] != pattern(a, (int)t) && errors++ < 5)
                    fprintf(stderr,
                            "rank %d: %s: server %d offset %" PRIu64 " (address %" PRIu64 ") holds %d\n",
                            rank, layouts[t], server, off, a, mem[off]);
            }
            MPI_Win_unlock(rank, s.win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* round trip: every client reads the whole DSM back in other runs */
        if (is_client) {
            memset(buf, 0, L);
            for (uint64_t a = 0, n = 5; a < L; a += n, n = n * 13 % 1021 + 1) {
                if (n > L - a)
                    n = L - a;
                if (dsm_store_get(&s, a, buf + a, n, err, sizeof err) < 0) {
                    fprintf(stderr, "rank %d: %s: %s\n", rank, layouts[t], err);
                    errors++;
                    break;
                }
            }
            for (uint64_t a = 0; a < L; a++)
                if (buf[a] != pattern(a, (int)t) && errors++ < 5)
                    fprintf(stderr, "rank %d: %s: read %d at %" PRIu64 "\n", rank, layouts[t], buf[a], a);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* beyond the end: refused, nothing written */
        if (rank == first_client) {
            unsigned char junk[16] = {0}, last = 0;
            if (dsm_store_put(&s, L - 8, junk, sizeof junk, err, sizeof err) == 0 ||
                !strstr(err, "the DSM is full")) {
                fprintf(stderr, "%s: a write beyond the DSM was not refused (%s)\n", layouts[t], err);
                errors++;
            }
            dsm_store_get(&s, L - 1, &last, 1, err, sizeof err);
            if (last != pattern(L - 1, (int)t)) {
                fprintf(stderr, "%s: the refused write changed the DSM\n", layouts[t]);
                errors++;
            }
            if (t == 0)
                printf("refused: %s\n", err);
        }
        free(buf);
        dsm_store_close(&s);
    }
    long long all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all)
        printf("store: FAILED, %lld error(s)\n", all);
    else if (rank == 0)
        printf("store: ok (%d ranks, %d servers, %zu layouts)\n", size, nservers,
               sizeof layouts / sizeof *layouts);
    MPI_Finalize();
    return all ? 1 : 0;
}
