/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_mpi.h - what the drivers and their MPI tools (h5mf) do with MPI alone (no HDF5).
 */
#ifndef VFD_MPI_H
#define VFD_MPI_H

#include <mpi.h>
#include <stddef.h>

/* A collective outcome: every rank passes its status and message (len bytes); all get
 * the message of the lowest failing rank. 0 when every rank succeeded, else -1. */
int vfd_agree(MPI_Comm comm, int ok, char *msg, size_t len);

#endif
