/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * hyperslab_by_pattern.c - Parallel HDF5 tutorial, "Writing by Pattern".
 *
 * Four ranks write the 8x4 dataset "IntArray" in an interleaved pattern:
 * rank r writes the value r+1 to every second row starting at row r % 2 and
 * every second column starting at column r / 2, from a 1-D buffer of 8 ints:
 *
 *     1 3 1 3        rank 0 -> even rows, even columns
 *     2 4 2 4        rank 1 -> odd rows,  even columns
 *     1 3 1 3        rank 2 -> even rows, odd columns
 *     ...            rank 3 -> odd rows,  odd columns
 *
 * usage: mpiexec -n 4 hyperslab_by_pattern FILE [collective|independent]
 */
#include "tutorial_common.h"

#include <stdlib.h>

#define NRANKS 4
#define NX     8 /* dataset rows */
#define NY     4 /* dataset columns */
#define NELEM  (NX * NY / NRANKS) /* elements per rank */

static void write_by_pattern(const struct tut_args *args)
{
    hsize_t dims[2]   = {NX, NY};
    hsize_t mdims[1]  = {NELEM};
    hsize_t offset[2] = {(hsize_t)args->rank % 2, (hsize_t)args->rank / 2};
    hsize_t stride[2] = {2, 2};
    hsize_t count[2]  = {NX / 2, NY / 2};
    int     data[NELEM];
    hid_t   file, filespace, memspace, dset;

    for (int i = 0; i < NELEM; i++)
        data[i] = args->rank + 1;

    file      = tut_create_file(args->file);
    filespace = CHECK(H5Screate_simple(2, dims, NULL));
    dset      = CHECK(H5Dcreate2(file, TUT_DATASET, H5T_NATIVE_INT, filespace,
                                 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    memspace  = CHECK(H5Screate_simple(1, mdims, NULL));
    CHECK(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, offset, stride, count, NULL));
    tut_write(dset, memspace, filespace, args->xfer, data);

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
        write_by_pattern(&args);
        status = EXIT_SUCCESS;
    }
    MPI_Finalize();
    return status;
}
