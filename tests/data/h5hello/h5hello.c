/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size;
    unsigned maj, min, rel;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    H5get_libversion(&maj, &min, &rel);
    if (rank == 0)
        printf("ranks=%d hdf5=%u.%u.%u\n", size, maj, min, rel);
    MPI_Finalize();
    return 0;
}
