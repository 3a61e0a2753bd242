/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_rename - a multifile directory renamed while it is being written.
 *
 *   mpiexec -n N mf_rename DIR
 *
 * Creates DIR/a.h5, writes and flushes a dataset; rank 0 renames the directory to
 * DIR/b.h5; every rank writes a second dataset, flushes and closes. The writers keep
 * working in the renamed directory (its descriptor is held from create), so DIR/b.h5
 * must be a complete directory with both datasets. Prints "rename: ok" on success.
 */
#include "H5FDmultifile.h"

#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int
write_dataset(hid_t file, const char *name, int rank, int size)
{
    hsize_t dims = (hsize_t)size * 100, start = (hsize_t)rank * 100, count = 100;
    int     buf[100];
    for (int i = 0; i < 100; i++)
        buf[i] = rank * 100 + i;
    hid_t fs = H5Screate_simple(1, &dims, NULL), ms = H5Screate_simple(1, &count, NULL);
    hid_t d = H5Dcreate2(file, name, H5T_NATIVE_INT, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
    herr_t rc = d < 0 ? -1 : H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf);
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(fs);
    H5Sclose(ms);
    return rc < 0 ? -1 : 0;
}

int
main(int argc, char **argv)
{
    int  rank, size, ok = 1;
    char a[4096], b[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        fprintf(stderr, "usage: mf_rename DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    snprintf(a, sizeof a, "%s/a.h5", argv[1]);
    snprintf(b, sizeof b, "%s/b.h5", argv[1]);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_multifile(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    H5Pset_multifile_options(fapl, "layout=dir"); /* the directory itself is renamed */
    hid_t file = H5Fcreate(a, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    ok = file >= 0 && write_dataset(file, "first", rank, size) == 0 && H5Fflush(file, H5F_SCOPE_GLOBAL) >= 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && rename(a, b) != 0) {
        perror("rename");
        ok = 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ok = ok && write_dataset(file, "second", rank, size) == 0 && H5Fflush(file, H5F_SCOPE_GLOBAL) >= 0;
    ok = (file < 0 || H5Fclose(file) >= 0) && ok;
    H5Pclose(fapl);
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "rename: ok (%d ranks)\n" : "rename: FAILED (%d ranks)\n", size);
    MPI_Finalize();
    return all ? 0 : 1;
}
