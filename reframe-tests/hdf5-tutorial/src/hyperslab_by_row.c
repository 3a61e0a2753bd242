/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * hyperslab_by_row.c - Parallel HDF5 tutorial, "Writing by Contiguous Hyperslab".
 *
 * Four ranks write the 8x5 dataset "IntArray" by rows: rank r fills rows
 * 2r and 2r+1 with the value 10 + r.
 *
 * usage: mpiexec -n 4 hyperslab_by_row FILE [collective|independent]
 */
#include "tutorial_common.h"

#include <stdlib.h>

#define NRANKS 4
#define NX     8 /* dataset rows */
#define NY     5 /* dataset columns */
#define ROWS   (NX / NRANKS) /* rows per rank */

static void write_by_row(const struct tut_args *args)
{
    hsize_t dims[2]   = {NX, NY};
    hsize_t count[2]  = {ROWS, NY};
    hsize_t offset[2] = {(hsize_t)args->rank * ROWS, 0};
    int     data[ROWS][NY];
    hid_t   file, filespace, memspace, dset;

    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < NY; j++)
            data[i][j] = 10 + args->rank;

    file      = tut_create_file(args->file);
    filespace = CHECK(H5Screate_simple(2, dims, NULL));
    dset      = CHECK(H5Dcreate2(file, TUT_DATASET, H5T_NATIVE_INT, filespace,
                                 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    memspace  = CHECK(H5Screate_simple(2, count, NULL));
    CHECK(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, offset, NULL, count, NULL));
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
        write_by_row(&args);
        status = EXIT_SUCCESS;
    }
    MPI_Finalize();
    return status;
}
