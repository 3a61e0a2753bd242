/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_path - what code around HDF5 does with a file's path, on a multifile file of the
 * head layout (HDF5_DRIVER=multifile with the default options; the access lists
 * name MPI_COMM_WORLD with H5Pset_mpi_params).
 *
 *   mpiexec -n N mf_path DIR
 *   1. DIR/p.h5 created by every rank, each writing its band of /v, closed;
 *   2. the path sniffed as netCDF-C does before HDF5 is involved: MPI_File_open and
 *      MPI_File_read_at_all of its first 8 bytes on every rank: HDF5's signature;
 *   3. stat() of the path (HDF5's tests take the file's size so): a regular file of at
 *      least the size HDF5 reports (H5Fget_filesize);
 *   4. reopened read-write by every rank: a second dataset /w written; reopened
 *      read-only by every rank, and by the last rank alone with a default access list:
 *      every value of /v and /w against the model;
 *   5. DIR/gone.h5 written, then removed with MPI_File_delete (t_pmulti_dset's way) and
 *      DIR/gone2.h5 with remove() (nc_abort's, rm's): both succeed, the paths are gone;
 *   6. DIR/del.h5 written and removed with H5Fdelete: the path is gone (the script
 *      checks that its directory went with it).
 *   Prints "mf_path: ok (N ranks)".
 *
 *   mpiexec -n N mf_path create|excl|check PATH SEED, mf_path delete|plain PATH: one
 *   step of a script (tests/head.sh): create PATH (H5F_ACC_TRUNC, or H5F_ACC_EXCL) with
 *   /v of SEED; check every value of /v against SEED; H5Fdelete PATH; open PATH
 *   read-write with HDF5's serial driver (sec2, not the driver: what a tool without it
 *   does) and add an attribute. Exit 0 when the step succeeded (check: the values are
 *   right), 1 when HDF5 refused it, with HDF5's error stack.
 */
#include <errno.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ROWS 100

static int rank_g, size_g;

static void
check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "mf_path: rank %d: %s failed\n", rank_g, what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* a call that every rank refused (the driver agrees on refusals): the program ends
 * normally with exit 1, every rank's reason printed; an MPI_Abort may end the other ranks
 * before the launcher has forwarded what they printed */
static void
end_if_refused(int failed, const char *what)
{
    int any = 0;
    fflush(stderr);
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        if (rank_g == 0)
            fprintf(stderr, "mf_path: %s failed\n", what);
        MPI_Finalize();
        exit(1);
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

static int
model(int seed, hsize_t i)
{
    return seed * 100000 + (int)i;
}

/* every rank writes its band of dataset name */
static void
write_bands(hid_t f, const char *name, int seed)
{
    hsize_t n = (hsize_t)ROWS * (hsize_t)size_g, start = (hsize_t)ROWS * (hsize_t)rank_g, count = ROWS;
    int     v[ROWS];
    for (hsize_t i = 0; i < ROWS; i++)
        v[i] = model(seed, start + i);
    hid_t s = H5Screate_simple(1, &n, NULL), m = H5Screate_simple(1, &count, NULL);
    hid_t d = H5Dcreate2(f, name, H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(d >= 0, name);
    check(H5Sselect_hyperslab(s, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0, "select");
    check(H5Dwrite(d, H5T_NATIVE_INT, m, s, H5P_DEFAULT, v) >= 0, "H5Dwrite");
    H5Dclose(d);
    H5Sclose(m);
    H5Sclose(s);
}

static void
check_values(hid_t f, const char *name, int seed)
{
    hsize_t n = (hsize_t)ROWS * (hsize_t)size_g;
    int    *v = malloc(n * sizeof *v);
    hid_t   d = H5Dopen2(f, name, H5P_DEFAULT);
    check(v && d >= 0 && H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0, name);
    for (hsize_t i = 0; i < n; i++)
        if (v[i] != model(seed, i)) {
            fprintf(stderr, "mf_path: rank %d: %s[%llu] = %d, expected %d\n", rank_g, name,
                    (unsigned long long)i, v[i], model(seed, i));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    H5Dclose(d);
    free(v);
}

static void
create_file_with(const char *path, int seed, unsigned flags)
{
    hid_t fapl = access_list(MPI_COMM_WORLD);
    hid_t f    = H5Fcreate(path, flags, H5P_DEFAULT, fapl);
    end_if_refused(f < 0, path);
    write_bands(f, "v", seed);
    check(H5Fclose(f) >= 0 && H5Pclose(fapl) >= 0, "close");
}

static void
create_file(const char *path, int seed)
{
    create_file_with(path, seed, H5F_ACC_TRUNC);
}

/* one step of a script (see the head of the file); the exit status */
static int
step(const char *what, const char *path, int seed)
{
    hid_t fapl = access_list(MPI_COMM_WORLD), f = -1;
    if (!strcmp(what, "create") || !strcmp(what, "excl"))
        create_file_with(path, seed, !strcmp(what, "excl") ? H5F_ACC_EXCL : H5F_ACC_TRUNC);
    else if (!strcmp(what, "check")) {
        end_if_refused((f = H5Fopen(path, H5F_ACC_RDONLY, fapl)) < 0, path);
        check_values(f, "v", seed);
        check(H5Fclose(f) >= 0, "close");
    }
    else if (!strcmp(what, "delete")) {
        end_if_refused(H5Fdelete(path, fapl) < 0, "H5Fdelete");
    }
    else if (!strcmp(what, "plain") && rank_g == 0) {
        hid_t sec2 = H5Pcreate(H5P_FILE_ACCESS), s = H5Screate(H5S_SCALAR);
        check(H5Pset_fapl_sec2(sec2) >= 0 && (f = H5Fopen(path, H5F_ACC_RDWR, sec2)) >= 0, path);
        hid_t a = H5Acreate2(f, "added", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT);
        check(a >= 0 && H5Awrite(a, H5T_NATIVE_INT, &seed) >= 0 && H5Aclose(a) >= 0 && H5Fclose(f) >= 0,
              path);
        H5Sclose(s);
        H5Pclose(sec2);
    }
    H5Pclose(fapl);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_g == 0)
        printf("mf_path: %s %s: ok\n", what, path);
    return 0;
}

/* netCDF-C's sniff: the first bytes of the path through MPI-IO, collectively */
static void
sniff(const char *path)
{
    static const char sig[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    char              buf[8] = {0};
    MPI_File          fh;
    MPI_Status        st;
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "MPI_File_open of the path");
    check(MPI_File_read_at_all(fh, 0, buf, 8, MPI_BYTE, &st) == MPI_SUCCESS, "MPI_File_read_at_all");
    check(MPI_File_close(&fh) == MPI_SUCCESS, "MPI_File_close");
    check(memcmp(buf, sig, 8) == 0, "the path's first bytes are HDF5's signature");
}

static void
reopen(const char *path)
{
    hid_t fapl = access_list(MPI_COMM_WORLD);
    hid_t f    = H5Fopen(path, H5F_ACC_RDWR, fapl);
    check(f >= 0, "reopen read-write");
    hsize_t size = 0;
    check(H5Fget_filesize(f, &size) >= 0, "H5Fget_filesize");
    struct stat st;
    check(stat(path, &st) == 0 && S_ISREG(st.st_mode), "stat: a regular file");
    check((hsize_t)st.st_size >= size, "stat: the size HDF5 reports");
    write_bands(f, "w", 2);
    check(H5Fclose(f) >= 0, "close");
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    check(f >= 0, "reopen read-only");
    check_values(f, "v", 1);
    check_values(f, "w", 2);
    check(H5Fclose(f) >= 0 && H5Pclose(fapl) >= 0, "close");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_g == size_g - 1) { /* a rank alone, a default access list */
        f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        check(f >= 0, "an open by one rank alone");
        check_values(f, "v", 1);
        check(H5Fclose(f) >= 0, "close");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void
removals(const char *dir)
{
    char gone[4096], gone2[4096], del[4096];
    snprintf(gone, sizeof gone, "%s/gone.h5", dir);
    snprintf(gone2, sizeof gone2, "%s/gone2.h5", dir);
    snprintf(del, sizeof del, "%s/del.h5", dir);
    create_file(gone, 3);
    create_file(gone2, 4);
    create_file(del, 5);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_g == 0) {
        check(MPI_File_delete(gone, MPI_INFO_NULL) == MPI_SUCCESS, "MPI_File_delete of the path");
        check(remove(gone2) == 0, "remove() of the path");
    }
    hid_t fapl = access_list(MPI_COMM_WORLD);
    check(H5Fdelete(del, fapl) >= 0 && H5Pclose(fapl) >= 0, "H5Fdelete");
    MPI_Barrier(MPI_COMM_WORLD);
    struct stat st;
    check(stat(gone, &st) < 0 && stat(gone2, &st) < 0 && stat(del, &st) < 0, "the removed paths are gone");
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_g);
    MPI_Comm_size(MPI_COMM_WORLD, &size_g);
    if (argc >= 3) {
        int rc = step(argv[1], argv[2], argc > 3 ? atoi(argv[3]) : 0);
        H5close();
        MPI_Finalize();
        return rc;
    }
    check(argc == 2, "usage: mf_path DIR, or mf_path create|excl|check PATH SEED, delete|plain PATH");
    char path[4096];
    snprintf(path, sizeof path, "%s/p.h5", argv[1]);
    create_file(path, 1);
    sniff(path);
    reopen(path);
    removals(argv[1]);
    if (rank_g == 0)
        printf("mf_path: ok (%d ranks)\n", size_g);
    H5close();
    MPI_Finalize();
    return 0;
}
