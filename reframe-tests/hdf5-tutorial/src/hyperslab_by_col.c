/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * hyperslab_by_col.c - Parallel HDF5 tutorial, "Writing by Pattern" (columns).
 *
 * Two ranks write the 8x6 dataset "IntArray" by columns.  Each rank holds an
 * 8x3 buffer whose rows are (r+1) * {1, 10, 100} and writes it to every
 * second column, starting at column r, so that every row of the file reads
 * 1, 2, 10, 20, 100, 200.
 *
 * usage: mpiexec -n 2 hyperslab_by_col FILE [collective|independent]
 */
#include "tutorial_common.h"

#include <stdlib.h>

#define NRANKS 2
#define NX     8 /* dataset rows */
#define NY     6 /* dataset columns */
#define COLS   (NY / NRANKS) /* columns per rank */

static void write_by_col(const struct tut_args *args)
{
    hsize_t dims[2]   = {NX, NY};
    hsize_t mdims[2]  = {NX, COLS};
    hsize_t offset[2] = {0, (hsize_t)args->rank};
    hsize_t stride[2] = {1, NRANKS};
    hsize_t count[2]  = {1, COLS};
    hsize_t block[2]  = {NX, 1};
    int     data[NX][COLS];
    hid_t   file, filespace, memspace, dset;

    for (int i = 0; i < NX; i++)
        for (int j = 0, k = 1; j < COLS; j++, k *= 10)
            data[i][j] = (args->rank + 1) * k;

    file      = tut_create_file(args->file);
    filespace = CHECK(H5Screate_simple(2, dims, NULL));
    dset      = CHECK(H5Dcreate2(file, TUT_DATASET, H5T_NATIVE_INT, filespace,
                                 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    memspace  = CHECK(H5Screate_simple(2, mdims, NULL));
    CHECK(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, offset, stride, count, block));
    tut_write(dset, memspace, filespace, args->xfer, &data[0][0]);

    CHECK(H5Sclose(memspace));
    CHECK(H5Sclose(filespace));
    CHECK(H5Dclose(dset));
    CHECK(H5Fclose(file));
}

int main(int argc, char **argv)
{
    struct tut_args args;
    int             status = EXIT_FAILURE;

    if (tut_init(&argc, &argv, NRANKS, &args) == 0) {
        write_by_col(&args);
        status = EXIT_SUCCESS;
    }
    MPI_Finalize();
    return status;
}
