/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPMD coupling (src/dsm_couple.h) with the transport on top:
 *   mpiexec -n S test_couple server : -n C test_couple client
 * Clients write the whole DSM (block-cyclic), the servers check their memory, every
 * client reads it back; prints "couple: ok (S servers, C clients)". Started without
 * the MPMD form it must refuse with its reason: "couple: refused: ...". */
#include "dsm_couple.h"
#include "dsm_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    char         err[512];
    dsm_couple_t c;
    int          wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (dsm_couple_mpmd(&c, argc > 1 && !strcmp(argv[1], "server"), err, sizeof err) < 0) {
        if (wrank == 0)
            printf("couple: refused: %s\n", err);
        MPI_Finalize();
        return 0;
    }
    int rank;
    MPI_Comm_rank(c.merged, &rank);
    dsm_store_t s;
    if (dsm_store_open(&s, c.merged, 0, c.nservers, 4096, DSM_BLOCK_CYCLIC, 256, 0, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const uint64_t L      = s.layout.total;
    long long      errors = 0;
    unsigned char *buf    = malloc(L);
    int            crank  = rank - c.nservers;
    if (!c.is_server) { /* client k writes [k L / C, (k+1) L / C) */
        uint64_t lo = L * (uint64_t)crank / (uint64_t)c.nclients,
                 hi = L * (uint64_t)(crank + 1) / (uint64_t)c.nclients;
        for (uint64_t a = lo; a < hi; a++)
            buf[a] = (unsigned char)(a * 7 + 1);
        if (dsm_store_put(&s, lo, buf + lo, hi - lo, err, sizeof err) < 0) {
            fprintf(stderr, "client %d: %s\n", crank, err);
            errors++;
        }
    }
    MPI_Barrier(c.merged);
    if (c.is_server) {
        const unsigned char *mem = s.local;
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, s.win);
        for (uint64_t off = 0; off < s.layout.local; off++)
            if (mem[off] != (unsigned char)(dsm_unmap(&s.layout, rank, off) * 7 + 1))
                errors++;
        MPI_Win_unlock(rank, s.win);
    }
    else {
        if (dsm_store_get(&s, 0, buf, L, err, sizeof err) < 0) {
            fprintf(stderr, "client %d: %s\n", crank, err);
            errors++;
        }
        for (uint64_t a = 0; a < L; a++)
            errors += buf[a] != (unsigned char)(a * 7 + 1);
    }
    free(buf);
    long long all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_LONG_LONG, MPI_SUM, c.merged);
    dsm_store_close(&s);
    if (rank == 0) {
        if (all)
            printf("couple: FAILED, %lld wrong byte(s)\n", all);
        else
            printf("couple: ok (%d servers, %d clients)\n", c.nservers, c.nclients);
    }
    dsm_couple_free(&c);
    MPI_Finalize();
    return all ? 1 : 0;
}
