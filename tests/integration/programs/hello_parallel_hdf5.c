/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* hello_parallel_hdf5: every rank writes its rank id into one element of a shared
 * dataset with HDF5's MPI-IO driver; rank 0 prints the HDF5 and MPI library
 * versions. Used by tests/integration/test_stacks.py to check that a stack's compiler wrapper,
 * launcher and libraries fit together.
 *
 * usage: mpiexec -n N hello_parallel_hdf5 FILE
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, len, ret = 1;
    unsigned maj, min, rel;
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    H5get_libversion(&maj, &min, &rel);
    MPI_Get_library_version(mpi_version, &len);

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims = (hsize_t)size, start = (hsize_t)rank, count = 1;
    hid_t filespace = H5Screate_simple(1, &dims, NULL);
    hid_t dset = H5Dcreate2(file, "ranks", H5T_NATIVE_INT, filespace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t memspace = H5Screate_simple(1, &count, NULL);
    H5Sselect_hyperslab(filespace, H5S_SELECT_SET, &start, NULL, &count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    if (file >= 0 && dset >= 0 && H5Dwrite(dset, H5T_NATIVE_INT, memspace, filespace, dxpl, &rank) >= 0)
        ret = 0;
    H5Pclose(dxpl);
    H5Sclose(memspace);
    H5Dclose(dset);
    H5Sclose(filespace);
    if (H5Fclose(file) < 0)
        ret = 1;
    H5Pclose(fapl);

    printf("rank %d of %d\n", rank, size);
    if (rank == 0) {
        printf("hdf5-library: %u.%u.%u\n", maj, min, rel);
        printf("mpi-library: %s\n", mpi_version);
    }
    MPI_Finalize();
    return ret;
}
