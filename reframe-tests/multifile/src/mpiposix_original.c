/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* mpiposix_original: a program written for the original Multifile HDF5 patch
 * (HDF5 1.8.11's mpiposix driver), unchanged but for its data: it selects the driver
 * with H5Pset_fapl_mpiposix, writes one row per rank, closes, and reads everything
 * back through the same fapl (which reconstructs the file). It must build with a
 * patched HDF5's plain h5pcc (no extra library) and run.
 *
 * usage: mpiexec -n N mpiposix_original FILE
 *
 * For test harnesses, rank 0 also prints "mpi-ranks: N" and "mpi-library: ..." (the
 * only lines that are not the original's).
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS 16

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int  len;
        MPI_Get_library_version(version, &len);
        version[strcspn(version, "\n")] = '\0';
        printf("mpi-ranks: %d\nmpi-library: %s\n", size, version);
    }
    if (argc != 2) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    hid_t plist_id = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpiposix(plist_id, MPI_COMM_WORLD, false);
    hid_t fileId = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, plist_id);
    if (fileId < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    hsize_t dims[2] = {(hsize_t)size, COLS}, start[2] = {(hsize_t)rank, 0}, count[2] = {1, COLS};
    int     row[COLS], *all = malloc(sizeof(int) * COLS * (size_t)size);
    for (int j = 0; j < COLS; j++)
        row[j] = 100 * rank + j;
    hid_t fs = H5Screate_simple(2, dims, NULL), ms = H5Screate_simple(2, count, NULL);
    hid_t ds = H5Dcreate2(fileId, "rows", H5T_NATIVE_INT, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    if (H5Dwrite(ds, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, row) < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    H5Dclose(ds);
    H5Sclose(ms);
    H5Sclose(fs);
    if (H5Fclose(fileId) < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);

    /* read: same fapl */
    fileId = H5Fopen(argv[1], H5F_ACC_RDONLY, plist_id);
    ds     = fileId < 0 ? -1 : H5Dopen2(fileId, "rows", H5P_DEFAULT);
    if (ds < 0 || H5Dread(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, all) < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int r = 0; r < size; r++)
        for (int j = 0; j < COLS; j++)
            bad += all[r * COLS + j] != 100 * r + j;
    H5Dclose(ds);
    H5Fclose(fileId);
    H5Pclose(plist_id);
    free(all);
    if (rank == 0)
        printf("mpiposix: %d ranks wrote and read back %s: %s\n", size, argv[1], bad ? "WRONG VALUES" : "ok");
    MPI_Finalize();
    return bad != 0;
}
