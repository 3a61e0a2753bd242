/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * tutorial_common.h - helpers shared by the Parallel HDF5 tutorial programs.
 *
 * Every program takes the same arguments, `FILE [collective|independent]`,
 * prints the same banner (read by the ReFrame check) and stops all ranks on
 * the first failed HDF5 call.  Header-only: each program is one source file.
 */
#ifndef TUTORIAL_COMMON_H
#define TUTORIAL_COMMON_H

#include <mpi.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>

/* Name of the dataset every program writes. */
#define TUT_DATASET "IntArray"

/* CHECK(call): evaluate an HDF5 call; on a negative result print
 * file:line and the call, then abort all ranks.  Yields the call's value. */
#define CHECK(call) tut_check((call), #call, __FILE__, __LINE__)

static inline hid_t tut_check(hid_t ret, const char *call, const char *file, int line)
{
    if (ret < 0) {
        fprintf(stderr, "%s:%d: %s failed\n", file, line, call);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return ret;
}

struct tut_args {
    const char      *file;  /* HDF5 file to create */
    H5FD_mpio_xfer_t xfer;  /* raw-data transfer mode */
    int              rank;
    int              size;
};

/* The file driver: "mpio" (HDF5's MPI-IO driver) or another parallel driver
 * that HDF5 loads by name, e.g. "multifile" (HDF5_PLUGIN_PATH must find it). */
static const char *tut_driver = "mpio";


/* Rank 0 prints the MPI library and the HDF5 library; every rank prints
 * "rank R of N" so the harness can count the ranks started.  Only the first
 * line of the MPI version string is kept (MPICH appends its whole configure
 * line), with tabs turned into spaces. */
static inline void tut_print_banner(const struct tut_args *args)
{
    if (args->rank == 0) {
        char     version[MPI_MAX_LIBRARY_VERSION_STRING];
        int      len = 0;
        unsigned maj, min, rel;

        MPI_Get_library_version(version, &len);
        len = (int)strcspn(version, "\r\n");
        for (int i = 0; i < len; i++)
            if (version[i] == '\t')
                version[i] = ' ';
        CHECK(H5get_libversion(&maj, &min, &rel));
        printf("mpi-library: %.*s\n", len, version);
        printf("hdf5-library: %u.%u.%u\n", maj, min, rel);
        printf("driver: %s\n", tut_driver);
        printf("transfer: %s\n",
               args->xfer == H5FD_MPIO_COLLECTIVE ? "collective" : "independent");
        fflush(stdout);
    }
    printf("rank %d of %d\n", args->rank, args->size);
    fflush(stdout);
}

/* Initialise MPI, parse `FILE [collective|independent [DRIVER]]`, print the banner and
 * check that the program runs on exactly `nranks` ranks.  Returns 0 when the
 * program may go on, -1 (after a message from rank 0) when it must not.
 * Either way the caller ends with MPI_Finalize(). */
static inline int tut_init(int *argc, char ***argv, int nranks, struct tut_args *args)
{
    const char *prog, *mode;

    MPI_Init(argc, argv);
    prog = (*argc > 0) ? (*argv)[0] : "hyperslab";
    if (strrchr(prog, '/') != NULL)
        prog = strrchr(prog, '/') + 1;
    mode = (*argc > 2) ? (*argv)[2] : "collective";
    MPI_Comm_rank(MPI_COMM_WORLD, &args->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &args->size);
    args->file = (*argc > 1) ? (*argv)[1] : NULL;
    args->xfer = H5FD_MPIO_COLLECTIVE;

    if (*argc > 3)
        tut_driver = (*argv)[3];
    if (args->file == NULL || *argc > 4 ||
        (strcmp(mode, "collective") != 0 && strcmp(mode, "independent") != 0)) {
        if (args->rank == 0)
            fprintf(stderr, "usage: %s FILE [collective|independent [mpio|DRIVER]]\n", prog);
        return -1;
    }
    if (strcmp(mode, "independent") == 0)
        args->xfer = H5FD_MPIO_INDEPENDENT;

    tut_print_banner(args);
    if (args->size != nranks) {
        if (args->rank == 0)
            fprintf(stderr, "%s: needs exactly %d MPI ranks, started with %d\n",
                    prog, nranks, args->size);
        return -1;
    }
    return 0;
}

/* Create (truncate) FILE for parallel access on MPI_COMM_WORLD through MPI-IO
 * or the driver named on the command line. */
static inline hid_t tut_create_file(const char *name)
{
    hid_t fapl = CHECK(H5Pcreate(H5P_FILE_ACCESS));
    hid_t file;

    if (strcmp(tut_driver, "mpio") == 0)
        CHECK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
    else {
        CHECK(H5Pset_mpi_params(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
        CHECK(H5Pset_driver_by_name(fapl, tut_driver, NULL));
    }
    file = CHECK(H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    CHECK(H5Pclose(fapl));
    return file;
}

/* Write `data` (native ints) from `memspace` into the selection of
 * `filespace` with the requested MPI-IO transfer mode. */
static inline void tut_write(hid_t dset, hid_t memspace, hid_t filespace,
                             H5FD_mpio_xfer_t xfer, const int *data)
{
    hid_t dxpl = CHECK(H5Pcreate(H5P_DATASET_XFER));

    CHECK(H5Pset_dxpl_mpio(dxpl, xfer));
    CHECK(H5Dwrite(dset, H5T_NATIVE_INT, memspace, filespace, dxpl, data));
    CHECK(H5Pclose(dxpl));
}

#endif /* TUTORIAL_COMMON_H */
