/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* serial_default_fapl: an unmodified serial HDF5 program (no MPI call, default fapl)
 * writing a 10x10 dataset of i*10+j. With HDF5_DRIVER=multifile it writes a multifile
 * directory: the driver initialises MPI itself.
 *
 * usage: serial_default_fapl FILE
 */
#include <hdf5.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int     data[10][10];
    hsize_t dims[2] = {10, 10};
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 10; j++)
            data[i][j] = i * 10 + j;
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0)
        return 1;
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dset  = H5Dcreate2(file, "grid", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc   = dset < 0 ? -1 : H5Dwrite(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Dclose(dset);
    H5Sclose(space);
    if (H5Fclose(file) < 0 || rc < 0)
        return 1;
    printf("serial: wrote %s\n", argv[1]);
    return 0;
}
