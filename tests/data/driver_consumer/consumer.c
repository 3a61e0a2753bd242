/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* consumer FILE: another project's program, linked with both drivers. It writes FILE
 * through multifile on every rank (a dataset of the ranks' numbers) and selects the DSM
 * on an access list (no DSM runs here: only that the linked driver registers and takes
 * its settings); "consumer: ok" on rank 0. */
#include <H5FDdsm.h>
#include <H5FDmultifile.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>

static int
write_ranks(const char *path, int rank, int size)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), dxpl = H5Pcreate(H5P_DATASET_XFER);
    if (H5Pset_fapl_multifile(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) < 0 ||
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) < 0)
        return -1;
    hid_t   f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t n = (hsize_t)size, one = 1, at = (hsize_t)rank;
    hid_t   space = H5Screate_simple(1, &n, NULL), mem = H5Screate_simple(1, &one, NULL);
    hid_t   d = H5Dcreate2(f, "ranks", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0 || d < 0 || H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, NULL, &one, NULL) < 0 ||
        H5Dwrite(d, H5T_NATIVE_INT, mem, space, dxpl, &rank) < 0)
        return -1;
    return H5Dclose(d) < 0 || H5Sclose(space) < 0 || H5Sclose(mem) < 0 || H5Fclose(f) < 0 ||
                   H5Pclose(fapl) < 0 || H5Pclose(dxpl) < 0
               ? -1
               : 0;
}

int
main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int   ok   = argc == 2 && write_ranks(argv[1], rank, size) == 0;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    ok = ok && H5FD_dsm_init() >= 0 && H5Pset_fapl_dsm(fapl, MPI_COMM_WORLD, "contact=none.contact") >= 0 &&
         H5Pget_driver(fapl) == H5FD_dsm_init();
    H5Pclose(fapl);
    if (rank == 0)
        puts(ok ? "consumer: ok" : "consumer: FAILED");
    MPI_Finalize();
    return !ok;
}
