/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
 *
 * compound_latest FILE: writes FILE through HDF5's MPI-IO driver with the latest format
 * bounds (H5Pset_libver_bounds(LATEST, LATEST)): a compound dataset /d043 (an int, a
 * double and a fixed string), each rank a block of it in one collective write. The file
 * is defined byte by byte wherever h5diff looks, so two runs give equal files. HDF5's
 * tools of an older series than the library's may not read it.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PER_RANK 16

typedef struct {
    int id;
    double value;
    char tag[8];
} record_t;

static void check(herr_t status, const char *what)
{
    if (status < 0) {
        fprintf(stderr, "compound_latest: %s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static hid_t record_type(void)
{
    hid_t tag = H5Tcopy(H5T_C_S1);
    check(H5Tset_size(tag, sizeof(((record_t *)0)->tag)), "H5Tset_size");
    hid_t type = H5Tcreate(H5T_COMPOUND, sizeof(record_t));
    check(H5Tinsert(type, "id", HOFFSET(record_t, id), H5T_NATIVE_INT), "H5Tinsert id");
    check(H5Tinsert(type, "value", HOFFSET(record_t, value), H5T_NATIVE_DOUBLE), "H5Tinsert value");
    check(H5Tinsert(type, "tag", HOFFSET(record_t, tag), tag), "H5Tinsert tag");
    check(H5Tclose(tag), "H5Tclose");
    return type;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (rank == 0)
            fprintf(stderr, "usage: compound_latest FILE\n");
        MPI_Finalize();
        return 2;
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    check(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL), "H5Pset_fapl_mpio");
    check(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), "H5Pset_libver_bounds");
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check(file, "H5Fcreate");

    hid_t type = record_type();
    hsize_t total = (hsize_t)PER_RANK * (hsize_t)size, start = (hsize_t)PER_RANK * (hsize_t)rank, count = PER_RANK;
    hid_t space = H5Screate_simple(1, &total, NULL);
    hid_t dset = H5Dcreate2(file, "/d043", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(dset, "H5Dcreate2");
    check(H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL), "H5Sselect_hyperslab");
    hid_t mem = H5Screate_simple(1, &count, NULL);

    record_t buf[PER_RANK];
    memset(buf, 0, sizeof buf);
    for (int i = 0; i < PER_RANK; i++) {
        int id = (int)start + i;
        buf[i].id = id;
        buf[i].value = id * 0.5;
        snprintf(buf[i].tag, sizeof buf[i].tag, "r%d", id);
    }
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    check(H5Dwrite(dset, type, mem, space, dxpl, buf), "H5Dwrite");

    check(H5Pclose(dxpl), "H5Pclose");
    check(H5Sclose(mem), "H5Sclose");
    check(H5Sclose(space), "H5Sclose");
    check(H5Dclose(dset), "H5Dclose");
    check(H5Tclose(type), "H5Tclose");
    check(H5Fclose(file), "H5Fclose");
    check(H5Pclose(fapl), "H5Pclose");
    if (rank == 0)
        printf("compound_latest: %d ranks wrote %llu records\n", size, (unsigned long long)total);
    MPI_Finalize();
    return 0;
}
