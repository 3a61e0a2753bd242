/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* mpi_ranks: which MPI started the job, on how many ranks (rank 0 prints "mpi-ranks: N"
 * and "mpi-library: <the first line of MPI_Get_library_version>"), for checks whose own
 * programs do not say it (h5checks/mpi.py: mpi_sanity). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int
main(int argc, char **argv)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int  rank, size, len;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n")] = '\0';
    if (rank == 0)
        printf("mpi-ranks: %d\nmpi-library: %s\n", size, version);
    MPI_Finalize();
    return 0;
}
