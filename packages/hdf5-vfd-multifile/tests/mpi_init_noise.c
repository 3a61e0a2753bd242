/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_init_noise.c - preloaded, MPI_Init prints a line on stdout first, as some MPI
 * libraries do while they start (Intel MPI without srun in a Slurm job of several
 * tasks: "MPI startup(): PMI server not found ..."). json_stdout.sh checks that h5mf's
 * machine-read output stays a JSON document all the same.
 */
#include <mpi.h>
#include <stdio.h>

int
MPI_Init(int *argc, char ***argv)
{
    printf("MPI startup(): a notice of the MPI library on stdout\n");
    fflush(stdout);
    return PMPI_Init(argc, argv);
}
