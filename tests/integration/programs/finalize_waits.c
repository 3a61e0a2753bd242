/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* finalize_waits: does MPI_Finalize wait for every rank of the job?
 *
 * Open MPI ends MPI_Finalize (and MPI_Init) with a PMIx fence that carries no data, its
 * barrier over the whole job. The last rank first sleeps, then creates MARKER, then calls
 * MPI_Finalize; every other rank calls MPI_Finalize at once and looks for MARKER after it.
 * Where the fence is a barrier the last rank had created MARKER before any rank left it.
 * Each rank but the last prints "finalize-waits: rank R: marker present" or "... absent".
 * Used by tests/integration/test_cluster.py with the ranks on different nodes.
 *
 * usage: srun -N2 -n2 finalize_waits MARKER SECONDS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size;
    if (argc != 3) {
        fprintf(stderr, "usage: finalize_waits MARKER SECONDS\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == size - 1) {
        sleep((unsigned)atoi(argv[2]));
        FILE *f = fopen(argv[1], "w");
        if (!f || fclose(f) != 0) {
            perror(argv[1]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Finalize();
    if (rank != size - 1)
        printf("finalize-waits: rank %d: marker %s\n", rank, access(argv[1], F_OK) == 0 ? "present" : "absent");
    return 0;
}
