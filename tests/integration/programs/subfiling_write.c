/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* subfiling_write: every rank writes its rank id into its block of a shared 1-D
 * dataset through HDF5's subfiling VFD (default configuration), closes the file,
 * reopens it with the same driver and checks every element. Rank 0 prints
 * "subfiling: N elements verified". Used by tests/integration/test_stacks.py; h5fuse then
 * merges the subfiles into one ordinary HDF5 file.
 *
 * usage: mpiexec -n N subfiling_write FILE
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define PER_RANK 1024

static int write_file(const char *name, int rank, int size)
{
    hid_t   fapl = H5Pcreate(H5P_FILE_ACCESS);
    hsize_t dims = (hsize_t)size * PER_RANK, start = (hsize_t)rank * PER_RANK, count = PER_RANK;
    int    *buf = malloc(PER_RANK * sizeof(int));
    int     ret = -1;

    for (int i = 0; i < PER_RANK; i++)
        buf[i] = rank;
    if (H5Pset_mpi_params(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) < 0 || H5Pset_fapl_subfiling(fapl, NULL) < 0)
        goto done;
    hid_t file   = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t fspace = H5Screate_simple(1, &dims, NULL);
    hid_t mspace = H5Screate_simple(1, &count, NULL);
    hid_t dset   = H5Dcreate2(file, "ranks", H5T_NATIVE_INT, fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL);
    if (dset >= 0 && H5Dwrite(dset, H5T_NATIVE_INT, mspace, fspace, H5P_DEFAULT, buf) >= 0)
        ret = 0;
    H5Dclose(dset);
    H5Sclose(mspace);
    H5Sclose(fspace);
    if (H5Fclose(file) < 0)
        ret = -1;
done:
    H5Pclose(fapl);
    free(buf);
    return ret;
}

static long verify_file(const char *name, int size)
{
    hid_t   fapl = H5Pcreate(H5P_FILE_ACCESS);
    hsize_t n    = (hsize_t)size * PER_RANK;
    int    *buf  = malloc(n * sizeof(int));
    long    good = -1;

    H5Pset_mpi_params(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    H5Pset_fapl_subfiling(fapl, NULL);
    hid_t file = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    hid_t dset = H5Dopen2(file, "ranks", H5P_DEFAULT);
    if (dset >= 0 && H5Dread(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
        good = 0;
        for (hsize_t i = 0; i < n; i++)
            if (buf[i] == (int)(i / PER_RANK))
                good++;
    }
    H5Dclose(dset);
    H5Fclose(file);
    H5Pclose(fapl);
    free(buf);
    return good;
}

int main(int argc, char **argv)
{
    int rank, size, provided, ret = 1;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2 || provided != MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, argc != 2 ? "usage: %s FILE\n" : "%s: no MPI_THREAD_MULTIPLE\n", argv[0]);
    }
    else if (write_file(argv[1], rank, size) == 0) {
        long good = verify_file(argv[1], size);
        if (good == (long)size * PER_RANK) {
            ret = 0;
            if (rank == 0)
                printf("subfiling: %ld elements verified\n", good);
        }
        else if (rank == 0)
            fprintf(stderr, "subfiling: %ld of %ld elements correct\n", good, (long)size * PER_RANK);
    }
    MPI_Finalize();
    return ret;
}
