/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* vfd_mpi.c - what the drivers and their tools do with MPI alone (see vfd_mpi.h) */
#include "vfd_mpi.h"

int
vfd_agree(MPI_Comm comm, int ok, char *msg, size_t len)
{
    int rank, size, mine, first;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    mine = ok ? size : rank;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size)
        return 0;
    MPI_Bcast(msg, (int)len, MPI_CHAR, first, comm);
    return -1;
}
