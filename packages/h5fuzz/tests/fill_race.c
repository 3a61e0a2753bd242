/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fill_race - HDF5's fill of a new dataset over space that another rank is still writing.
 *
 *   mpiexec -n 3 fill_race FILE [--order none|barrier]
 *
 * Every rank but 0 writes its share of a contiguous dataset "a" (int64, 4096 elements),
 * one independent H5Dwrite per element, after a pause of 0.3 s (a slow rank). Then every
 * rank closes "a", deletes it, and creates "b" of the same shape with fill value 7 and
 * fill time ALLOC: HDF5 reuses the space of "a" for "b", and rank 0 alone writes the
 * fill (H5D__contig_fill: a barrier after that write, none before). With --order none
 * (the program as an application writes it) rank 0 fills "b" while the others still
 * write "a", and their writes land in "b". With --order barrier (what h5fuzz does before
 * every delete) every rank's writes are done before the delete. The ranks read "b"
 * back after a barrier; rank 0 prints
 *   fill-race: none: 3996 of 4096 elements of b are not its fill value
 *   fill-race: barrier: ok
 * Exit status 0 when it ran (whatever it found), 1 on an HDF5 error, 2 on bad arguments.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N    4096
#define FILL 7

static int
failed(const char *what)
{
    fprintf(stderr, "fill_race: %s failed\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

/* ranks other than 0 write every element of a, one independent write each */
static void
write_a(hid_t a, int rank, int size)
{
    hsize_t one = 1;
    hid_t   fs = H5Dget_space(a), ms = H5Screate_simple(1, &one, NULL);
    int64_t v = -1;
    usleep(300000);
    for (hsize_t i = (hsize_t)rank - 1; i < N; i += (hsize_t)size - 1) {
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &i, NULL, &one, NULL);
        if (H5Dwrite(a, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &v) < 0)
            failed("H5Dwrite of a");
    }
    H5Sclose(ms);
    H5Sclose(fs);
}

static hid_t
create(hid_t f, const char *name, H5D_fill_time_t when)
{
    hsize_t n    = N;
    int64_t fill = FILL;
    hid_t   s = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_fill_time(dcpl, when);
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &fill);
    hid_t d = H5Dcreate2(f, name, H5T_NATIVE_INT64, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(s);
    return d < 0 ? failed("H5Dcreate2") : d;
}

int
main(int argc, char **argv)
{
    int rank, size, barrier;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if ((argc != 2 && argc != 4) ||
        (argc == 4 &&
         (strcmp(argv[2], "--order") || (strcmp(argv[3], "none") && strcmp(argv[3], "barrier"))))) {
        if (rank == 0)
            fprintf(stderr, "usage: fill_race FILE [--order none|barrier]\n");
        MPI_Finalize();
        return 2;
    }
    barrier    = argc == 4 && !strcmp(argv[3], "barrier");
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (f < 0)
        failed("H5Fcreate");
    hid_t a = create(f, "a", H5D_FILL_TIME_NEVER);
    H5Fflush(f, H5F_SCOPE_GLOBAL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 0 && size > 1)
        write_a(a, rank, size);
    H5Dclose(a);
    if (barrier)
        MPI_Barrier(MPI_COMM_WORLD);
    if (H5Ldelete(f, "a", H5P_DEFAULT) < 0)
        failed("H5Ldelete");
    hid_t b = create(f, "b", H5D_FILL_TIME_ALLOC);
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t *buf = malloc(N * sizeof *buf);
    if (!buf || H5Dread(b, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
        failed("H5Dread of b");
    long bad = 0, most = 0;
    for (int i = 0; i < N; i++)
        bad += buf[i] != FILL;
    MPI_Allreduce(&bad, &most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && most)
        printf("fill-race: %s: %ld of %d elements of b are not its fill value\n",
               barrier ? "barrier" : "none", most, N);
    else if (rank == 0)
        printf("fill-race: %s: ok\n", barrier ? "barrier" : "none");
    free(buf);
    H5Dclose(b);
    H5Pclose(fapl);
    H5Fclose(f);
    MPI_Finalize();
    return 0;
}
