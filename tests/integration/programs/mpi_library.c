/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
 * Prints the MPI library's version line; links MPI_UNWEIGHTED, which MPICH's ABI has and
 * Open MPI's libmpi.so does not: linked against the wrong one it does not build.
 * Valid C and C++ (compiled by mpicc and mpicxx alike). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Init(&argc, &argv);
    MPI_Get_library_version(version, &length);
    printf("%.60s\nunweighted: %d\n", version, MPI_UNWEIGHTED != NULL);
    MPI_Finalize();
    return 0;
}
