/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_alone - files that some ranks open without the others, through HDF5_DRIVER.
 *
 *   mpiexec -n N mf_alone DIR own     rank 0 alone creates DIR/own.h5 with a default
 *       access list and writes it; every rank then reads it back together (the
 *       communicator named with H5Pset_mpi_params), then the last rank alone again with
 *       a default list; every rank writes its own DIR/rank<R>.h5 at the same time (a
 *       default list: each rank's own file) and reads back the others'. Every value is
 *       checked against the model; prints "mf_alone: ok".
 *   mpiexec -n 2 mf_alone DIR conflict   two opens that cannot both be: rank 0 keeps
 *       DIR/own.h5 open for writing (its own file), and rank 1's open of it for writing
 *       (its own session) is refused, as is rank 0's second open of it over
 *       MPI_COMM_WORLD (HDF5 would share the one-rank open with it: their collectives
 *       would never meet); both fail at once with an error, nothing hangs, and the file
 *       keeps rank 0's values; prints "mf_alone: conflicts refused".
 *   mpiexec -n N mf_alone DIR stray   every rank names MPI_COMM_WORLD in an access list
 *       (H5Pset_mpi_params duplicates it: collective), then rank 0 alone creates
 *       DIR/stray.h5 with it while the other ranks wait in MPI_Barrier:
 *       the open can never complete; the driver must end the job with the reason
 *       (open_wait), not wait for ever.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64

static void
check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "mf_alone: %s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static hid_t
access_list(MPI_Comm comm)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (comm != MPI_COMM_NULL)
        check(H5Pset_mpi_params(fapl, comm, MPI_INFO_NULL) >= 0, "H5Pset_mpi_params");
    return fapl;
}

static void
write_file(const char *path, hid_t fapl, int seed)
{
    int     v[N];
    hsize_t n = N;
    hid_t   f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check(f >= 0, path);
    for (int i = 0; i < N; i++)
        v[i] = seed * 1000 + i;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "v", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(d >= 0 && H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0, "H5Dwrite");
    check(H5Dclose(d) >= 0 && H5Sclose(s) >= 0 && H5Fclose(f) >= 0, "close");
}

static void
read_file(const char *path, MPI_Comm comm, int seed)
{
    int   v[N];
    hid_t fapl = access_list(comm);
    hid_t f    = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    check(f >= 0, path);
    hid_t d = H5Dopen2(f, "v", H5P_DEFAULT);
    check(d >= 0 && H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0, "H5Dread");
    for (int i = 0; i < N; i++)
        if (v[i] != seed * 1000 + i) {
            fprintf(stderr, "mf_alone: %s[%d] = %d, expected %d\n", path, i, v[i], seed * 1000 + i);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    check(H5Dclose(d) >= 0 && H5Fclose(f) >= 0 && H5Pclose(fapl) >= 0, "close");
}

/* an open that must fail (HDF5 prints its error stack, the driver's reason in it): 1 if it did */
static int
refused(const char *path, hid_t fapl)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    if (f >= 0)
        H5Fclose(f);
    return f < 0;
}

static int
conflict(const char *dir, hid_t own, hid_t world)
{
    char path[4096];
    int  rank, ok = 1, all = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(path, sizeof path, "%s/own.h5", dir);
    if (rank == 0)
        write_file(path, own, 7);
    MPI_Barrier(MPI_COMM_WORLD);
    hid_t f = rank == 0 ? H5Fopen(path, H5F_ACC_RDWR, own) : H5I_INVALID_HID;
    check(rank != 0 || f >= 0, "rank 0's open of its own file");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1 && !refused(path, own)) {
        fprintf(stderr, "mf_alone: rank 1 opened for writing a file rank 0 is writing\n");
        ok = 0;
    }
    if (!refused(path, world)) { /* collective over MPI_COMM_WORLD: every rank fails */
        fprintf(stderr, "mf_alone: rank %d opened over MPI_COMM_WORLD a file rank 0 has open alone\n", rank);
        ok = 0;
    }
    if (rank == 0)
        check(H5Fclose(f) >= 0, "close");
    MPI_Barrier(MPI_COMM_WORLD);
    read_file(path, MPI_COMM_WORLD, 7);
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0 && all)
        printf("mf_alone: conflicts refused (a second writer, an open over other ranks)\n");
    H5Pclose(own);
    H5Pclose(world);
    MPI_Finalize();
    return all ? 0 : 1;
}

int
main(int argc, char **argv)
{
    int  rank, size;
    char path[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || (strcmp(argv[2], "own") && strcmp(argv[2], "stray") && strcmp(argv[2], "conflict"))) {
        if (!rank)
            fprintf(stderr, "usage: mpiexec -n N %s DIR own|conflict|stray\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    hid_t own = access_list(MPI_COMM_NULL), world = access_list(MPI_COMM_WORLD); /* every rank */
    if (!strcmp(argv[2], "stray")) {
        snprintf(path, sizeof path, "%s/stray.h5", argv[1]);
        if (rank == 0)
            write_file(path, world, 1); /* never returns: the other ranks never come */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 1;
    }
    if (!strcmp(argv[2], "conflict"))
        return conflict(argv[1], own, world);
    snprintf(path, sizeof path, "%s/own.h5", argv[1]);
    if (rank == 0)
        write_file(path, own, 7);
    MPI_Barrier(MPI_COMM_WORLD);
    read_file(path, MPI_COMM_WORLD, 7);
    if (rank == size - 1)
        read_file(path, MPI_COMM_NULL, 7);
    snprintf(path, sizeof path, "%s/rank%d.h5", argv[1], rank);
    write_file(path, own, rank);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        snprintf(path, sizeof path, "%s/rank%d.h5", argv[1], r);
        read_file(path, MPI_COMM_NULL, r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    H5Pclose(own);
    H5Pclose(world);
    if (rank == 0)
        printf("mf_alone: ok (%d ranks: a file one rank writes alone, read by all and by one; each rank's "
               "own)\n",
               size);
    MPI_Finalize();
    return 0;
}
