/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * hyperslab_by_chunk.c - Parallel HDF5 tutorial, "Writing by Chunk".
 *
 * Four ranks write the chunked 8x4 dataset "IntArray" (chunks of 4x2); each
 * rank writes exactly one chunk filled with the value rank+1:
 *
 *     rows 0-3:  1 1 2 2        rank 0 | rank 1
 *     rows 4-7:  3 3 4 4        rank 2 | rank 3
 *
 * usage: mpiexec -n 4 hyperslab_by_chunk FILE [collective|independent]
 */
#include "tutorial_common.h"

#include <stdlib.h>

#define NRANKS 4
#define NX     8 /* dataset rows */
#define NY     4 /* dataset columns */
#define CH_NX  4 /* chunk rows */
#define CH_NY  2 /* chunk columns */

static void write_by_chunk(const struct tut_args *args)
{
    hsize_t dims[2]   = {NX, NY};
    hsize_t chunk[2]  = {CH_NX, CH_NY};
    hsize_t offset[2] = {(hsize_t)(args->rank / 2) * CH_NX, (hsize_t)(args->rank % 2) * CH_NY};
    hsize_t count[2]  = {1, 1};
    int     data[CH_NX][CH_NY];
    hid_t   file, filespace, memspace, dcpl, dset;

    for (int i = 0; i < CH_NX; i++)
        for (int j = 0; j < CH_NY; j++)
            data[i][j] = args->rank + 1;

    file      = tut_create_file(args->file);
    filespace = CHECK(H5Screate_simple(2, dims, NULL));
    dcpl      = CHECK(H5Pcreate(H5P_DATASET_CREATE));
    CHECK(H5Pset_chunk(dcpl, 2, chunk));
    dset      = CHECK(H5Dcreate2(file, TUT_DATASET, H5T_NATIVE_INT, filespace,
                                 H5P_DEFAULT, dcpl, H5P_DEFAULT));
    memspace  = CHECK(H5Screate_simple(2, chunk, NULL));
    CHECK(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, offset, NULL, count, chunk));
    tut_write(dset, memspace, filespace, args->xfer, &data[0][0]);

    CHECK(H5Sclose(memspace));
    CHECK(H5Sclose(filespace));
    CHECK(H5Dclose(dset));
    CHECK(H5Pclose(dcpl));
    CHECK(H5Fclose(file));
}

int main(int argc, char **argv)
{
    struct tut_args args;
    int             status = EXIT_FAILURE;

    if (tut_init(&argc, &argv, NRANKS, &args) == 0) {
        write_by_chunk(&args);
        status = EXIT_SUCCESS;
    }
    MPI_Finalize();
    return status;
}
