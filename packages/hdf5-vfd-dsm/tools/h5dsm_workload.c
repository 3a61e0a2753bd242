/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * h5dsm-workload - a DSM client for tests and examples: HDF5's tutorial patterns, file after
 * file (installed: the ReFrame checks and the Spack test run it).
 *
 *   h5dsm-workload ROUTE PATTERN STEPS [NDSETS] [--verify] [--rows N] [--config C]
 * ROUTE: mpio (HDF5's MPI-IO driver: the reference), mpmd (the DSM driver in an MPMD job,
 * H5FD_dsm_mpmd_clients), env (whatever HDF5_DRIVER selects: an unmodified program).
 * PATTERN: the file name, "{step}" replaced by the step (0, 1, ...).
 * Each file: a group /fields with a 2-D dataset written in row blocks by the ranks
 * (collective hyperslabs), NDSETS chunked 1-D datasets /series/data_NN of growing sizes
 * (each rank its block), and a "step" attribute; values depend on the step, so files of
 * different steps differ. Odd steps add /fields/unwritten, created first (where the step
 * before had data) and never written: it must read as the fill value, 0, everywhere. --config: the DSM
 * driver's configuration (mpmd). --verify reopens each file read-only through the same route and checks every
 * value. Prints "mpi-ranks: <ranks of the job>", "mpi-library: ...", and "workload: ok (<files> files,
 * <ranks> ranks)" (client ranks). --die-mid-file: in the last file, rank 0 kills itself (SIGKILL) after the
 * first dataset is written (tests: a client job that dies with a file open). --open-at-finalize: the last
 * file is never closed by the program: HDF5 closes it inside MPI_Finalize (as HDF5's t_pshutdown does), and
 * it cannot be verified from here (the servers' dump can). --delete-last: then H5Fdelete of the last file,
 * after which it must be inaccessible and a second H5Fdelete must fail.
 */
#include "H5FDdsm.h"

#include <hdf5.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COLS 96

static int         g_rank, g_size;
static MPI_Comm    g_comm;
static const char *g_config = NULL; /* --config: the DSM driver's configuration (mpmd route) */
static int         g_die    = 0;    /* --die-mid-file */
static int         g_alone  = 0;    /* --alone: rank 0 opens the first file without the others */
static int         g_leave  = 0;    /* --open-at-finalize: the last file is left open */
static int         g_delete = 0;    /* --delete-last */

static void
fail(const char *what, const char *file)
{
    fprintf(stderr, "workload: rank %d: %s: %s failed\n", g_rank, file, what);
    fflush(NULL);
    usleep(1000000); /* on a loaded node MPICH can lose what was written 0.3 s before */
    MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CHECK(call, what, file)                                                                              \
    do {                                                                                                     \
        if ((call) < 0)                                                                                      \
            fail(what, file);                                                                                \
    } while (0)

static double
field_value(int step, hsize_t row, hsize_t col)
{
    return step * 1e6 + (double)(row * COLS + col);
}
static int
series_value(int step, int d, hsize_t i)
{
    return step * 100000 + d * 1000 + (int)(i % 1000);
}

static hid_t
make_fapl(const char *route)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (!strcmp(route, "mpio"))
        CHECK(H5Pset_fapl_mpio(fapl, g_comm, MPI_INFO_NULL), "H5Pset_fapl_mpio", route);
    else if (!strcmp(route, "mpmd"))
        CHECK(H5Pset_fapl_dsm(fapl, g_comm, g_config), "H5Pset_fapl_dsm", route);
    else /* the driver: HDF5_DRIVER's */
        CHECK(H5Pset_mpi_params(fapl, g_comm, MPI_INFO_NULL), "H5Pset_mpi_params", route);
    return fapl;
}

static void
write_file(const char *name, hid_t fapl, int step, int ndsets, hsize_t rows, int last)
{
    if (g_alone) { /* an open that can never complete: the driver must end the job, not hang */
        if (g_rank == 0)
            H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        else
            MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, g_comm, MPI_STATUS_IGNORE); /* never sent */
        fprintf(stderr, "workload: rank %d: the open of %s by rank 0 alone returned\n", g_rank, name);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(f, "H5Fcreate", name);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);

    hid_t g = H5Gcreate2(f, "fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(g, "H5Gcreate", name);
    if (step % 2) { /* never written, where the step before had data: it must read as zeros */
        hsize_t n  = rows * (hsize_t)g_size * COLS;
        hid_t   us = H5Screate_simple(1, &n, NULL);
        hid_t   ud = H5Dcreate2(g, "unwritten", H5T_IEEE_F64LE, us, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        CHECK(ud, "H5Dcreate unwritten", name);
        H5Dclose(ud);
        H5Sclose(us);
    }
    hsize_t dims[2] = {rows * (hsize_t)g_size, COLS}, start[2] = {rows * (hsize_t)g_rank, 0},
            count[2] = {rows, COLS};
    hid_t space      = H5Screate_simple(2, dims, NULL);
    hid_t ds = H5Dcreate2(g, "pressure", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(ds, "H5Dcreate pressure", name);
    double *buf = malloc(rows * COLS * sizeof *buf);
    for (hsize_t r = 0; r < rows; r++)
        for (hsize_t c = 0; c < COLS; c++)
            buf[r * COLS + c] = field_value(step, start[0] + r, c);
    hid_t mem = H5Screate_simple(2, count, NULL);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    CHECK(H5Dwrite(ds, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf), "H5Dwrite pressure", name);
    free(buf);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(ds);
    H5Gclose(g);
    if (g_die && last) {
        MPI_Barrier(g_comm); /* every rank's part of the first dataset is on its way */
        if (g_rank == 0) {
            printf("workload: rank 0 dies in the middle of %s\n", name);
            fflush(NULL);
            raise(SIGKILL);
        }
    }

    g = H5Gcreate2(f, "series", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (int d = 0; d < ndsets; d++) {
        char    dname[32];
        hsize_t per = 1000 * (hsize_t)(d + 1), n = per * (hsize_t)g_size, first = per * (hsize_t)g_rank;
        hsize_t chunk = n < 4096 ? n : 4096;
        snprintf(dname, sizeof dname, "data_%02d", d);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        space = H5Screate_simple(1, &n, NULL);
        ds    = H5Dcreate2(g, dname, H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        CHECK(ds, "H5Dcreate series", name);
        int *v = malloc(per * sizeof *v);
        for (hsize_t i = 0; i < per; i++)
            v[i] = series_value(step, d, first + i);
        mem = H5Screate_simple(1, &per, NULL);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &first, NULL, &per, NULL);
        CHECK(H5Dwrite(ds, H5T_NATIVE_INT, mem, space, dxpl, v), "H5Dwrite series", name);
        free(v);
        H5Sclose(mem);
        H5Sclose(space);
        H5Dclose(ds);
        H5Pclose(dcpl);
    }
    H5Gclose(g);

    hid_t ascalar = H5Screate(H5S_SCALAR);
    hid_t attr    = H5Acreate2(f, "step", H5T_STD_I32LE, ascalar, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(H5Awrite(attr, H5T_NATIVE_INT, &step), "H5Awrite", name);
    H5Aclose(attr);
    H5Sclose(ascalar);
    H5Pclose(dxpl);
    if (g_leave && last)
        return; /* HDF5 closes it in MPI_Finalize */
    CHECK(H5Fclose(f), "H5Fclose", name);
}

/* independent reads of every value (a chunk cache is fine: no collective transfer) */
static long
verify_file(const char *name, hid_t fapl, int step, int ndsets, hsize_t rows)
{
    long  wrong = 0;
    hid_t f     = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    CHECK(f, "H5Fopen (--verify)", name);
    hid_t ds = H5Dopen2(f, "fields/pressure", H5P_DEFAULT);
    CHECK(ds, "H5Dopen pressure", name);
    hsize_t n   = rows * (hsize_t)g_size * COLS;
    double *buf = malloc(n * sizeof *buf);
    CHECK(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), "H5Dread pressure", name);
    for (hsize_t i = 0; i < n; i++)
        wrong += buf[i] != field_value(step, i / COLS, i % COLS);
    H5Dclose(ds);
    if (step % 2) { /* the fill value, 0, wherever nothing was written */
        ds = H5Dopen2(f, "fields/unwritten", H5P_DEFAULT);
        CHECK(ds, "H5Dopen unwritten", name);
        CHECK(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), "H5Dread unwritten", name);
        long stale = 0;
        for (hsize_t i = 0; i < n; i++)
            stale += buf[i] != 0.0;
        if (stale && g_rank == 0)
            printf("workload: %s: %ld never-written values of /fields/unwritten are not 0\n", name, stale);
        wrong += stale;
        H5Dclose(ds);
    }
    free(buf);
    for (int d = 0; d < ndsets; d++) {
        char dname[40];
        snprintf(dname, sizeof dname, "series/data_%02d", d);
        ds = H5Dopen2(f, dname, H5P_DEFAULT);
        CHECK(ds, "H5Dopen series", name);
        hsize_t m = 1000 * (hsize_t)(d + 1) * (hsize_t)g_size;
        int    *v = malloc(m * sizeof *v);
        CHECK(H5Dread(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), "H5Dread series", name);
        for (hsize_t i = 0; i < m; i++)
            wrong += v[i] != series_value(step, d, i);
        free(v);
        H5Dclose(ds);
    }
    CHECK(H5Fclose(f), "H5Fclose (--verify)", name);
    return wrong;
}

/* H5Fdelete: the file is gone, and a second delete fails */
static void
delete_file(const char *name, hid_t fapl)
{
    CHECK(H5Fdelete(name, fapl), "H5Fdelete", name);
    htri_t there = -1, again = -1;
    H5E_BEGIN_TRY
    {
        there = H5Fis_accessible(name, fapl);
        again = H5Fdelete(name, fapl);
    }
    H5E_END_TRY
    if (there > 0 || again >= 0)
        fail(there > 0 ? "H5Fis_accessible after H5Fdelete (it answered yes)"
                       : "a second H5Fdelete (it succeeded)",
             name);
    if (g_rank == 0)
        printf("workload: %s deleted\n", name);
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *args[4] = {0};
    int         nargs = 0, verify = 0;
    hsize_t     rows = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verify"))
            verify = 1;
        else if (!strcmp(argv[i], "--config") && i + 1 < argc)
            g_config = argv[++i];
        else if (!strcmp(argv[i], "--die-mid-file"))
            g_die = 1;
        else if (!strcmp(argv[i], "--alone"))
            g_alone = 1;
        else if (!strcmp(argv[i], "--open-at-finalize"))
            g_leave = 1;
        else if (!strcmp(argv[i], "--delete-last"))
            g_delete = 1;
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            rows = strtoull(argv[++i], NULL, 10);
        else if (nargs < 4)
            args[nargs++] = argv[i];
    }
    if (nargs < 3 || rows == 0) {
        fprintf(stderr, "usage: h5dsm-workload mpio|mpmd|env PATTERN STEPS [NDSETS] [--verify] [--rows N] "
                        "[--config C] [--die-mid-file] [--alone] [--open-at-finalize] [--delete-last]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* HDF5 first, as most programs start it (any H5P call does): its own MPI_Finalize
     * callback then runs after the driver's (--open-at-finalize) */
    if (H5open() < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    const char *route = args[0], *pattern = args[1];
    int         steps = atoi(args[2]), ndsets = nargs > 3 ? atoi(args[3]) : 10;
    if (!strcmp(route, "mpmd")) {
        if (H5FD_dsm_mpmd_clients(&g_comm) < 0)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    else
        MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    MPI_Comm_rank(g_comm, &g_rank);
    MPI_Comm_size(g_comm, &g_size);
    if (g_rank == 0) { /* the job's ranks (servers too) and library, for the checks' sanity */
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int  len = 0, world = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &world);
        MPI_Get_library_version(lib, &len);
        lib[strcspn(lib, "\n")] = '\0';
        printf("mpi-ranks: %d\nmpi-library: %s\n", world, lib);
        fflush(stdout);
    }

    long wrong = 0;
    for (int step = 0; step < steps; step++) {
        char        name[4096];
        const char *at = strstr(pattern, "{step}");
        if (at)
            snprintf(name, sizeof name, "%.*s%d%s", (int)(at - pattern), pattern, step, at + 6);
        else
            snprintf(name, sizeof name, "%s", pattern);
        hid_t fapl = make_fapl(route);
        write_file(name, fapl, step, ndsets, rows, step == steps - 1);
        if (verify && !(g_leave && step == steps - 1))
            wrong += verify_file(name, fapl, step, ndsets, rows);
        if (g_delete && step == steps - 1)
            delete_file(name, fapl);
        H5Pclose(fapl);
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, g_comm);
    if (g_rank == 0) {
        if (wrong)
            printf("workload: %ld wrong values\n", wrong);
        else
            printf("workload: ok (%d files, %d ranks%s)\n", steps, g_size, verify ? ", verified" : "");
    }
    MPI_Comm_free(&g_comm);
    MPI_Finalize();
    return wrong ? 1 : 0;
}
