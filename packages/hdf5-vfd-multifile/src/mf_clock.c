/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_clock.c - order stamps (see mf_clock.h).
 */
#include "mf_clock.h"

#include <string.h>
#include <time.h>

static int64_t
mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
mf_clock_now(const mf_clock_t *c)
{
    return mono_ns() + c->offset_ns;
}

#define SAMPLES 8

int
mf_clock_sync(mf_clock_t *c, MPI_Comm comm)
{
    int      rank, noderank, leader_rank, nleaders, rc;
    MPI_Comm node = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
    int64_t  result[2] = {0, 0}; /* offset, error */

    memset(c, 0, sizeof *c);
    if ((rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node)) != MPI_SUCCESS)
        return rc;
    MPI_Comm_rank(node, &noderank);
    /* node leaders: the lowest rank of each node; rank 0 leads its node */
    rc = MPI_Comm_split(comm, noderank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
    if (rc == MPI_SUCCESS && leaders != MPI_COMM_NULL) {
        MPI_Comm_rank(leaders, &leader_rank);
        MPI_Comm_size(leaders, &nleaders);
        for (int peer = 1; peer < nleaders; peer++) {
            if (leader_rank == 0) {
                for (int s = 0; s < SAMPLES; s++) {
                    int64_t t0 = mono_ns(), remote;
                    MPI_Send(&t0, 1, MPI_INT64_T, peer, 0, leaders);
                    MPI_Recv(&remote, 1, MPI_INT64_T, peer, 1, leaders, MPI_STATUS_IGNORE);
                    int64_t t1        = mono_ns();
                    int64_t sample[2] = {t0 + (t1 - t0) / 2 - remote, (t1 - t0) / 2};
                    MPI_Send(sample, 2, MPI_INT64_T, peer, 2, leaders);
                }
            }
            else if (leader_rank == peer) {
                for (int s = 0; s < SAMPLES; s++) {
                    int64_t t0, now, sample[2];
                    MPI_Recv(&t0, 1, MPI_INT64_T, 0, 0, leaders, MPI_STATUS_IGNORE);
                    now = mono_ns();
                    MPI_Send(&now, 1, MPI_INT64_T, 0, 1, leaders);
                    MPI_Recv(sample, 2, MPI_INT64_T, 0, 2, leaders, MPI_STATUS_IGNORE);
                    if (s == 0 || sample[1] < result[1]) {
                        result[0] = sample[0];
                        result[1] = sample[1];
                    }
                }
            }
        }
        MPI_Comm_free(&leaders);
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(result, 2, MPI_INT64_T, 0, node);
    MPI_Comm_free(&node);
    c->offset_ns    = result[0];
    c->max_error_ns = result[1];
    return rc;
}
