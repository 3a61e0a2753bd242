/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_clock.h - order stamps common to all ranks of a communicator.
 *
 * Writes of one epoch are ordered by a stamp: CLOCK_MONOTONIC nanoseconds shifted
 * onto rank 0's clock. Ranks on rank 0's node share its clock exactly (offset 0);
 * every other node's offset is measured at open by the node leader with rank 0
 * (the ping-pong sample with the smallest round trip, error below half of it).
 * HDF5 separates conflicting writes by different ranks with barriers, so their
 * stamps differ by at least a message latency.
 */
#ifndef MF_CLOCK_H
#define MF_CLOCK_H

#include <mpi.h>
#include <stdint.h>

typedef struct {
    int64_t offset_ns;    /* add to the local clock to get rank 0's */
    int64_t max_error_ns; /* half the best round trip of the measurement (0 on rank 0's node) */
} mf_clock_t;

int     mf_clock_sync(mf_clock_t *c, MPI_Comm comm); /* collective; returns MPI error code */
int64_t mf_clock_now(const mf_clock_t *c);

#endif
