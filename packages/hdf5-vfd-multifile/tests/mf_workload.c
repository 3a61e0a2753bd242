/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_workload - a parallel HDF5 workload to compare drivers: groups, attributes,
 * contiguous, chunked and extendible datasets, collective and independent transfers,
 * overwrites across flushes, and reads of other ranks' data during the write session.
 * The same seed gives the same file whatever the driver, so a multifile result can
 * be compared with an MPI-IO one by h5diff.
 *
 *   mpiexec -n N mf_workload FILE --driver mpio|multifile|default [--seed S] [--datasets K]
 *                            [--alignment BYTES]
 *   mpiexec -n M mf_workload FILE --driver ... --check [--options "read=merge"]
 *
 * MF_WORKLOAD_KILL=RANK:PHASE (RANK a number or "all"; PHASE before-flush, after-flush or
 * before-close) makes that rank SIGKILL itself there, for crash tests; MF_WORKLOAD_STALL=RANK:PHASE
 * makes it print "rank R: stalled at PHASE" and wait there for ever (a node killed from
 * outside, at a known point: the cluster's node-failure test). --check-partial
 * verifies only what was written before the first flush. Rank 0 first prints
 * "mpi-ranks: N" and "mpi-library: <MPI_Get_library_version, first line>".
 *
 * --driver default names only the communicator (H5Pset_mpi_params, HDF5's call for
 * any MPI driver) and leaves the driver to HDF5_DRIVER: the plugin route. --alignment
 * sets H5Pset_alignment(fapl, 1, BYTES) (file-system block or stripe size: every
 * object starts on such a boundary). --check opens FILE read-only (a multifile
 * directory is read in place unless --options selects read=merge or read=parallel) and
 * verifies every value (any M). Rank 0 prints "workload: wrote|checked FILE on N ranks
 * with DRIVER: ok" on success; errors exit non-zero.
 */
#include "H5FDmultifile.h"

#include <hdf5.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROWS_PER_RANK 16
#define COLS          40
#define EXT_STEPS     3

static int rank, size, failures;

/* whether the environment variable VAR (RANK:PHASE) names this rank at this phase */
static int
named_here(const char *var, const char *phase)
{
    const char *spec = getenv(var);
    char        who[16];
    if (!spec || sscanf(spec, "%15[^:]:", who) != 1 ||
        strcmp(strchr(spec, ':') ? strchr(spec, ':') + 1 : "", phase))
        return 0;
    return !strcmp(who, "all") || atoi(who) == rank;
}

/* crash tests: die, or stall for ever, at a named point of the workload */
static void
maybe_die(const char *phase)
{
    if (named_here("MF_WORKLOAD_KILL", phase)) {
        fprintf(stderr, "rank %d: killing myself at %s (MF_WORKLOAD_KILL)\n", rank, phase);
        fflush(stderr);
        raise(SIGKILL);
    }
    if (named_here("MF_WORKLOAD_STALL", phase)) {
        printf("rank %d: stalled at %s (MF_WORKLOAD_STALL)\n", rank, phase);
        fflush(stdout);
        for (;;)
            sleep(60);
    }
}

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        if ((call) < 0) {                                                                                    \
            fprintf(stderr, "rank %d: %s:%d: %s failed\n", rank, __FILE__, __LINE__, #call);                 \
            H5Eprint2(H5E_DEFAULT, stderr);                                                                  \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)

/* the value of element (i, j) of dataset d after phase p */
static int
value(unsigned seed, int d, long i, long j, int p)
{
    return (int)((seed * 7919u + d * 104729u + i * 131u + j * 7u + p * 1000003u) % 2147483u);
}

static hid_t
make_fapl(const char *driver, const char *options)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (!strcmp(driver, "mpio"))
        CHECK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
    else if (!strcmp(driver, "multifile")) {
        CHECK(H5Pset_fapl_multifile(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
        if (options)
            CHECK(H5Pset_multifile_options(fapl, options));
    }
    else if (!strcmp(driver, "default"))
        CHECK(H5Pset_mpi_params(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
    else {
        fprintf(stderr, "unknown driver %s\n", driver);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return fapl;
}

/* write rows [r0, r0+n) of a 2-D int dataset with values of phase p */
static void
write_rows(hid_t dset, unsigned seed, int d, long r0, long n, int p, H5FD_mpio_xfer_t xfer)
{
    hsize_t start[2] = {(hsize_t)r0, 0}, count[2] = {(hsize_t)n, COLS};
    int    *buf = malloc((size_t)(n * COLS) * sizeof *buf);
    for (long i = 0; i < n; i++)
        for (long j = 0; j < COLS; j++)
            buf[i * COLS + j] = value(seed, d, r0 + i, j, p);
    hid_t fs = H5Dget_space(dset), ms = H5Screate_simple(2, count, NULL), dxpl = H5Pcreate(H5P_DATASET_XFER);
    CHECK(H5Pset_dxpl_mpio(dxpl, xfer));
    if (n == 0) {
        H5Sselect_none(fs);
        H5Sselect_none(ms);
    }
    else
        CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    CHECK(H5Dwrite(dset, H5T_NATIVE_INT, ms, fs, dxpl, buf));
    H5Pclose(dxpl);
    H5Sclose(ms);
    H5Sclose(fs);
    free(buf);
}

/* read rows [r0, r0+n) and compare with phase p for rows below split, phase q above */
static void
check_rows(hid_t dset, unsigned seed, int d, long r0, long n, int p, long split, int q, const char *what)
{
    hsize_t start[2] = {(hsize_t)r0, 0}, count[2] = {(hsize_t)n, COLS};
    int    *buf = malloc((size_t)(n * COLS) * sizeof *buf);
    hid_t   fs = H5Dget_space(dset), ms = H5Screate_simple(2, count, NULL);
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    CHECK(H5Dread(dset, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf));
    for (long i = 0; i < n; i++)
        for (long j = 0; j < COLS; j++) {
            int want = value(seed, d, r0 + i, j, r0 + i < split ? p : q);
            if (buf[i * COLS + j] != want) {
                if (failures++ < 5)
                    fprintf(stderr, "rank %d: %s[%ld][%ld] = %d, expected %d\n", rank, what, r0 + i, j,
                            buf[i * COLS + j], want);
            }
        }
    H5Sclose(ms);
    H5Sclose(fs);
    free(buf);
}

static void
write_attr(hid_t obj, const char *name, int v)
{
    hid_t s = H5Screate(H5S_SCALAR), a = H5Acreate2(obj, name, H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(a);
    CHECK(H5Awrite(a, H5T_NATIVE_INT, &v));
    H5Aclose(a);
    H5Sclose(s);
}

static void
check_attr(hid_t obj, const char *name, int v)
{
    int   got = -1;
    hid_t a   = H5Aopen(obj, name, H5P_DEFAULT);
    CHECK(a);
    CHECK(H5Aread(a, H5T_NATIVE_INT, &got));
    if (got != v && failures++ < 5)
        fprintf(stderr, "rank %d: attribute %s = %d, expected %d\n", rank, name, got, v);
    H5Aclose(a);
}

static hid_t
create_2d(hid_t loc, const char *name, long rows, int chunked, int extendible)
{
    hsize_t dims[2] = {(hsize_t)rows, COLS}, maxdims[2] = {extendible ? H5S_UNLIMITED : (hsize_t)rows, COLS};
    hsize_t chunk[2] = {ROWS_PER_RANK / 2, COLS / 2};
    hid_t   space = H5Screate_simple(2, dims, maxdims), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked || extendible)
        CHECK(H5Pset_chunk(dcpl, 2, chunk));
    hid_t d = H5Dcreate2(loc, name, H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(d);
    H5Pclose(dcpl);
    H5Sclose(space);
    return d;
}

/* the command line */
typedef struct {
    const char *file, *driver, *options;
    unsigned    seed;
    int         ndsets, check, partial;
    hsize_t     alignment;
} args_t;

/* 0, or 2 (the usage said by rank 0) */
static int
parse_args(int argc, char **argv, args_t *a)
{
    *a = (args_t){.driver = "multifile", .seed = 1, .ndsets = 40};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--driver") && i + 1 < argc)
            a->driver = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            a->seed = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--datasets") && i + 1 < argc)
            a->ndsets = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--options") && i + 1 < argc)
            a->options = argv[++i];
        else if (!strcmp(argv[i], "--alignment") && i + 1 < argc)
            a->alignment = (hsize_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--check"))
            a->check = 1;
        else if (!strcmp(argv[i], "--check-partial"))
            a->check = a->partial = 1;
        else if (!a->file && argv[i][0] != '-')
            a->file = argv[i];
        else {
            if (rank == 0)
                fprintf(stderr,
                        "usage: %s FILE --driver mpio|multifile|default [--seed S] [--datasets K] "
                        "[--alignment BYTES] [--check [--options OPTS]]\n",
                        argv[0]);
            return 2;
        }
    }
    if (!a->file) {
        if (rank == 0)
            fprintf(stderr, "%s: no FILE\n", argv[0]);
        return 2;
    }
    return 0;
}

/* many small objects: metadata cache sync points with writes from all ranks */
static void
write_groups(hid_t f, const args_t *a, long rows, long r0)
{
    char name[64];
    for (int g = 0; g < 4; g++) {
        snprintf(name, sizeof name, "g%d", g);
        hid_t grp = H5Gcreate2(f, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        CHECK(grp);
        write_attr(grp, "index", g);
        for (int k = g; k < a->ndsets; k += 4) {
            snprintf(name, sizeof name, "d%03d", k);
            hid_t d = create_2d(grp, name, rows, k % 2, 0);
            write_attr(d, "k", k);
            write_rows(d, a->seed, 10 + k, r0, ROWS_PER_RANK, 0,
                       k % 3 ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
            H5Dclose(d);
        }
        H5Gclose(grp);
    }
}

static void
check_groups(hid_t f, const args_t *a, long rows)
{
    char name[64];
    for (int g = 0; g < 4; g++) {
        snprintf(name, sizeof name, "g%d", g);
        hid_t grp = H5Gopen2(f, name, H5P_DEFAULT);
        CHECK(grp);
        check_attr(grp, "index", g);
        for (int k = g; k < a->ndsets; k += 4) {
            snprintf(name, sizeof name, "d%03d", k);
            hid_t d = H5Dopen2(grp, name, H5P_DEFAULT);
            CHECK(d);
            check_attr(d, "k", k);
            check_rows(d, a->seed, 10 + k, 0, rows, 0, rows, 0, name);
            H5Dclose(d);
        }
        H5Gclose(grp);
    }
}

/* the workload: every rank writes its rows, reads the others' during the session,
 * overwrites its neighbour's in a later epoch, grows a dataset across flushes */
static void
write_file(const args_t *a, hid_t fapl)
{
    long  rows = (long)size * ROWS_PER_RANK, r0 = (long)rank * ROWS_PER_RANK;
    hid_t f = H5Fcreate(a->file, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(f);
    write_attr(f, "nranks", size);
    hid_t contig = create_2d(f, "contig", rows, 0, 0), chunked = create_2d(f, "chunked", rows, 1, 0);
    hid_t ext = create_2d(f, "ext", ROWS_PER_RANK, 0, 1);
    write_rows(contig, a->seed, 0, r0, ROWS_PER_RANK, 0, H5FD_MPIO_COLLECTIVE);
    write_rows(chunked, a->seed, 1, r0, ROWS_PER_RANK, 0, H5FD_MPIO_INDEPENDENT);
    write_groups(f, a, rows, r0);
    maybe_die("before-flush");
    CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
    maybe_die("after-flush");
    /* read other ranks' rows during the session */
    check_rows(contig, a->seed, 0, 0, rows, 0, rows, 0, "contig (in session)");
    /* overwrite the neighbour's rows in a later epoch: the later write must win */
    long nb = (long)((rank + 1) % size) * ROWS_PER_RANK;
    write_rows(contig, a->seed, 0, nb, ROWS_PER_RANK / 2, 1, H5FD_MPIO_COLLECTIVE);
    /* grow the extendible dataset across flushes */
    for (int step = 1; step <= EXT_STEPS; step++) {
        hsize_t dims[2] = {(hsize_t)(ROWS_PER_RANK + step * rows), COLS};
        CHECK(H5Dset_extent(ext, dims));
        write_rows(ext, a->seed, 2, ROWS_PER_RANK + (step - 1) * rows + r0, ROWS_PER_RANK, step,
                   H5FD_MPIO_COLLECTIVE);
        CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
    }
    if (rank == 0)
        write_rows(ext, a->seed, 2, 0, ROWS_PER_RANK, 0, H5FD_MPIO_INDEPENDENT);
    MPI_Barrier(MPI_COMM_WORLD);
    check_rows(contig, a->seed, 0, nb, ROWS_PER_RANK, 1, nb + ROWS_PER_RANK / 2, 0, "contig (overwritten)");
    write_attr(f, "done", 1);
    maybe_die("before-close");
    H5Dclose(ext);
    H5Dclose(chunked);
    H5Dclose(contig);
    CHECK(H5Fclose(f));
}

/* what write_file wrote, read back (--check-partial: as of its first flush) */
static void
check_file(const args_t *a, hid_t fapl)
{
    int   partial = a->partial;
    hid_t f       = H5Fopen(a->file, H5F_ACC_RDONLY, fapl);
    CHECK(f);
    int   writers = 0;
    hid_t attr    = H5Aopen(f, "nranks", H5P_DEFAULT);
    CHECK(H5Aread(attr, H5T_NATIVE_INT, &writers));
    H5Aclose(attr);
    long  rows   = (long)writers * ROWS_PER_RANK;
    hid_t contig = H5Dopen2(f, "contig", H5P_DEFAULT), chunked = H5Dopen2(f, "chunked", H5P_DEFAULT);
    hid_t ext = H5Dopen2(f, "ext", H5P_DEFAULT);
    CHECK(contig);
    CHECK(chunked);
    CHECK(ext);
    if (partial) /* the state of the first flush: no overwrites, no extension */
        check_rows(contig, a->seed, 0, 0, rows, 0, rows, 0, "contig");
    for (int w = 0; !partial && w < writers; w++) { /* rank w overwrote half of rank w+1's rows */
        long nb = (long)((w + 1) % writers) * ROWS_PER_RANK;
        check_rows(contig, a->seed, 0, nb, ROWS_PER_RANK, 1, nb + ROWS_PER_RANK / 2, 0, "contig");
    }
    check_rows(chunked, a->seed, 1, 0, rows, 0, rows, 0, "chunked");
    for (int step = 1; !partial && step <= EXT_STEPS; step++)
        check_rows(ext, a->seed, 2, ROWS_PER_RANK + (step - 1) * rows, rows, step, 1L << 40, step, "ext");
    if (!partial)
        check_rows(ext, a->seed, 2, 0, ROWS_PER_RANK, 0, ROWS_PER_RANK, 0, "ext");
    check_groups(f, a, rows);
    if (!partial)
        check_attr(f, "done", 1);
    H5Dclose(ext);
    H5Dclose(chunked);
    H5Dclose(contig);
    CHECK(H5Fclose(f));
}

int
main(int argc, char **argv)
{
    args_t a;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse_args(argc, argv, &a)) {
        MPI_Finalize();
        return 2;
    }
    if (rank == 0) { /* for harnesses: which MPI ran, on how many ranks (N singletons print 1 N times) */
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int  len;
        MPI_Get_library_version(version, &len);
        version[strcspn(version, "\n")] = '\0';
        printf("mpi-ranks: %d\nmpi-library: %s\n", size, version);
    }
    hid_t fapl = make_fapl(a.driver, a.options);
    if (a.alignment > 0) {
        CHECK(H5Pset_alignment(fapl, 1, a.alignment));
        if (rank == 0)
            printf("alignment: %llu\n", (unsigned long long)a.alignment);
    }
    if (a.check)
        check_file(&a, fapl);
    else
        write_file(&a, fapl);
    H5Pclose(fapl);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("workload: %s %s on %d ranks with %s: %s\n", a.check ? "checked" : "wrote", a.file, size,
               a.driver, total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
