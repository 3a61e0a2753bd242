/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * h5mf-bench - the multifile driver against the limits measured in the same run.
 *
 *   mpiexec -n N h5mf-bench DIR [--mib-per-rank M] [--block-kib K] [--repeat R]
 *                               [--fsync] [--multifile-options OPTS] [--json FILE]
 *   mpiexec -n N h5mf-bench DIR --records N1,N2,... [--record-bytes B] [--json FILE]
 *                               the index operations against the number of records
 *                               (mf_scale.c)
 *
 * Every kernel moves the same bytes (M MiB per rank in blocks of K KiB, rank r owning
 * one contiguous slab) on the same file system (DIR), timed from a barrier before
 * open to a barrier after close, R times; a ratio is the median over the R runs of
 * the two kernels' rates in the same run (the table gives each kernel's median):
 *   posix-fpp        raw pwrite, one file per rank                      (the write limit)
 *   mpiio-coll/-ind  MPI_File_write_at_all / MPI_File_write_at, one shared file
 *   hdf5-mpio        H5Dwrite of a 1-D dataset with HDF5's MPI-IO driver (collective)
 *   hdf5-subfiling   the same with HDF5's subfiling driver
 *   hdf5-multifile   the same with the multifile driver (linked: H5Pset_fapl_multifile)
 *   hdf5-mpio-seloff, hdf5-multifile-seloff   the same writes with selection I/O off
 *                    (H5Pset_selection_io): HDF5 describes each by MPI datatypes, which
 *                    each driver carries out (MPI-IO through a file view)
 *   hdf5-multifile-plugin  the same, the driver selected by name through HDF5's plugin
 *                    loader (HDF5_PLUGIN_PATH), as HDF5_DRIVER=multifile does; next to
 *                    hdf5-multifile in alternating order (the first run registers it),
 *                    both files kept until the end of the run
 *   merge-serial     reconstruction by one process     vs copy-serial: the rank files copied into one
 *                    (copy_file_range, as the merge and cp use), and cp: cp(1) of each rank file
 *   merge-parallel   reconstruction by all ranks       vs copy-parallel: each rank copies its file
 *   read-inplace     H5Dread of each slab from the directory vs read-merged: from the merged file
 *   session-read-multifile, session-read-mpio   collective H5Dread of each block of the
 *                    rank's slab while the file is still open for writing (written just
 *                    before, untimed): multifile's collective reads as consistent
 *                    snapshots (their agreement on a cut) against MPI-IO's
 * Each kernel's clock starts after sync(2) and a barrier, so no kernel pays for the
 * write-back of the one before it.
 * Without --fsync nothing is forced to stable storage (the page cache counts, as an
 * application's close does); with it every kernel's output is on stable storage before
 * its clock stops: raw kernels fsync, MPI-IO kernels MPI_File_sync, HDF5 kernels
 * H5Fflush before the close (multifile also runs with sync=on), copies fsync.
 * Output: a header (with "mpi-ranks: N" and "mpi-library: ..."), a table and "ratio"
 * lines on stdout, all figures as JSON with --json.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* copy_file_range */
#endif
#include "H5FDmultifile.h"
#include "vfd_path.h"
#include "mf_head.h"
#include "mf_replace.h"
#include "mf_scale.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <sys/wait.h>
#include <hdf5.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXREP     16
#define MF_XSTR(x) #x
#define MF_STR(x)  MF_XSTR(x)

extern char   **environ;
static int      rank, size, do_fsync, repeat = 3;
static uint64_t per_rank = 64ull << 20, block = 1ull << 20;
static char     dir[PATH_MAX];
static char    *buf;
static char    *mf_options; /* --multifile-options */

typedef struct {
    const char *name;
    double      mibs[MAXREP];
    int         n;
} result_t;

static result_t results[24];
static int      nresults;

static void
die(const char *what)
{
    fprintf(stderr, "h5mf-bench: rank %d: %s: %s\n", rank, what, strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void
check_h5(herr_t rc, const char *what)
{
    if (rc < 0) {
        H5Eprint2(H5E_DEFAULT, stderr);
        fprintf(stderr, "h5mf-bench: rank %d: %s failed\n", rank, what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static result_t *
result(const char *name)
{
    for (int i = 0; i < nresults; i++)
        if (!strcmp(results[i].name, name))
            return &results[i];
    results[nresults].name = name;
    return &results[nresults++];
}

static void
record(const char *name, double seconds, uint64_t bytes)
{
    double t;
    MPI_Allreduce(&seconds, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    result_t *r = result(name);
    if (r->n < MAXREP)
        r->mibs[r->n++] = (double)bytes / (1 << 20) / t;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
median_of(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double
median(const char *name)
{
    result_t *r = result(name);
    double    v[MAXREP];
    memcpy(v, r->mibs, sizeof(double) * (size_t)r->n);
    return median_of(v, r->n);
}

/* the median over the runs of a's rate / b's rate in the same run: kernels of one run
 * are measured minutes apart at most, so a drift of the machine between runs (other
 * load, writeback, the host of a VM) cancels, which a ratio of medians does not do */
static double
paired_ratio(const char *a, const char *b)
{
    result_t *x = result(a), *y = result(b);
    double    q[MAXREP];
    int       n = 0;
    for (int k = 0; k < x->n && k < y->n; k++)
        if (y->mibs[k] > 0)
            q[n++] = x->mibs[k] / y->mibs[k];
    return median_of(q, n);
}

/* every kernel starts alike: no dirty pages of the one before it (written back, not
 * timed), all ranks together */
static double
start_clock(void)
{
    if (rank == 0)
        sync();
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime();
}

static void
path(char *out, const char *name)
{
    snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

/* the multifile directory of DIR/name: the body a head names (the default layout), or
 * the path itself */
static void
dir_path(char *out, const char *name)
{
    char     body[PATH_MAX];
    uint64_t run;
    mf_err_t err;
    path(out, name);
    if (mf_head_read(out, body, sizeof body, &run, err) == 1)
        snprintf(out, PATH_MAX, "%s", body);
}

static void
rm_path(const char *p)
{
    struct stat st;
    if (lstat(p, &st) == 0)
        S_ISDIR(st.st_mode) ? mf_rmtree(p) : unlink(p);
}

static void
rm(const char *name)
{
    char p[PATH_MAX], body[PATH_MAX];
    dir_path(body, name);
    path(p, name);
    if (strcmp(body, p) != 0)
        rm_path(body); /* a head's body first, then the head */
    rm_path(p);
}

/* ---------------------------------------------------------------- raw kernels */

static void
posix_fpp(void)
{
    char name[64], p[PATH_MAX];
    snprintf(name, sizeof name, "fpp.%d", rank);
    path(p, name);
    double t0 = start_clock();
    int    fd = vfd_create_new(p);
    if (fd < 0)
        die(p);
    for (uint64_t off = 0; off < per_rank; off += block)
        if (mf_pwrite_all(fd, buf, block, off) < 0)
            die(p);
    if ((do_fsync && fsync(fd) < 0) || close(fd) < 0)
        die(p);
    MPI_Barrier(MPI_COMM_WORLD);
    record("posix-fpp", MPI_Wtime() - t0, per_rank * (uint64_t)size);
    unlink(p);
}

static void
mpiio(int collective)
{
    char     p[PATH_MAX];
    MPI_File fh;
    path(p, "shared.mpiio");
    if (rank == 0 && close(vfd_create_new(p)) < 0) /* a file of ours, never one through a planted link */
        die(p);
    double t0 = start_clock();
    if (MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) !=
        MPI_SUCCESS)
        die(p);
    for (uint64_t off = 0; off < per_rank; off += block) {
        MPI_Offset at = (MPI_Offset)((uint64_t)rank * per_rank + off);
        int rc = collective ? MPI_File_write_at_all(fh, at, buf, (int)block, MPI_BYTE, MPI_STATUS_IGNORE)
                            : MPI_File_write_at(fh, at, buf, (int)block, MPI_BYTE, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            die("MPI_File_write_at");
    }
    if (do_fsync)
        MPI_File_sync(fh);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    record(collective ? "mpiio-coll" : "mpiio-ind", MPI_Wtime() - t0, per_rank * (uint64_t)size);
    if (rank == 0)
        unlink(p);
}

/* ---------------------------------------------------------------- HDF5 kernels */

static hid_t
fapl_for(const char *driver, const char *options)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (!strcmp(driver, "mpio"))
        check_h5(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL), "H5Pset_fapl_mpio");
    else if (!strcmp(driver, "subfiling")) {
        check_h5(H5Pset_mpi_params(fapl, MPI_COMM_WORLD, MPI_INFO_NULL), "H5Pset_mpi_params");
        check_h5(H5Pset_fapl_subfiling(fapl, NULL), "H5Pset_fapl_subfiling");
    }
    else if (!strcmp(driver, "multifile-plugin")) {
        check_h5(H5Pset_mpi_params(fapl, MPI_COMM_WORLD, MPI_INFO_NULL), "H5Pset_mpi_params");
        check_h5(H5Pset_driver_by_name(fapl, "multifile", options && *options ? options : NULL),
                 "H5Pset_driver_by_name (is the plugin on HDF5_PLUGIN_PATH?)");
    }
    else {
        check_h5(H5Pset_fapl_multifile(fapl, MPI_COMM_WORLD, MPI_INFO_NULL), "H5Pset_fapl_multifile");
        if (options && *options)
            check_h5(H5Pset_multifile_options(fapl, options), "H5Pset_multifile_options");
    }
    return fapl;
}

static void
hdf5_write(const char *kernel, const char *driver, const char *file, int selection_off)
{
    char    p[PATH_MAX];
    hsize_t total = per_rank * (uint64_t)size, count = block;
    path(p, file);
    char opts[512];
    snprintf(opts, sizeof opts, "%s%s", do_fsync ? "sync=on;" : "", mf_options ? mf_options : "");
    hid_t fapl = fapl_for(driver, opts);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), dxpl = H5Pcreate(H5P_DATASET_XFER);
    check_h5(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
    check_h5(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    if (selection_off)
        check_h5(H5Pset_selection_io(dxpl, H5D_SELECTION_IO_MODE_OFF), "H5Pset_selection_io");
    /* a file of ours, never one through a planted link (multifile makes its directory anew) */
    if (rank == 0 && (!strcmp(driver, "mpio") || !strcmp(driver, "subfiling")) &&
        close(vfd_create_new(p)) < 0)
        die(p);
    double t0 = start_clock();
    hid_t  f  = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check_h5(f, "H5Fcreate");
    hid_t fs = H5Screate_simple(1, &total, NULL), ms = H5Screate_simple(1, &count, NULL);
    hid_t d = H5Dcreate2(f, "data", H5T_NATIVE_UCHAR, fs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check_h5(d, "H5Dcreate2");
    for (uint64_t off = 0; off < per_rank; off += block) {
        hsize_t start = (hsize_t)rank * per_rank + off;
        check_h5(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL), "H5Sselect_hyperslab");
        check_h5(H5Dwrite(d, H5T_NATIVE_UCHAR, ms, fs, dxpl, buf), "H5Dwrite");
    }
    H5Dclose(d);
    H5Sclose(ms);
    H5Sclose(fs);
    /* --fsync: every driver's data on stable storage before the clock stops. An
     * H5Fflush before the close syncs: MPI_File_sync for HDF5's MPI-IO and subfiling
     * drivers (their close alone does not), fdatasync of every rank file for multifile
     * (which sync=on also does at its close) */
    if (do_fsync)
        check_h5(H5Fflush(f, H5F_SCOPE_GLOBAL), "H5Fflush");
    check_h5(H5Fclose(f), "H5Fclose");
    MPI_Barrier(MPI_COMM_WORLD);
    record(kernel, MPI_Wtime() - t0, total);
    H5Pclose(dxpl);
    H5Pclose(dcpl);
    H5Pclose(fapl);
}

static void
hdf5_read(const char *kernel, const char *file, const char *options)
{
    char    p[PATH_MAX];
    hsize_t count = block;
    path(p, file);
    hid_t  fapl = fapl_for("multifile", options);
    double t0   = start_clock();
    hid_t  f    = H5Fopen(p, H5F_ACC_RDONLY, fapl);
    check_h5(f, "H5Fopen");
    hid_t d = H5Dopen2(f, "data", H5P_DEFAULT), fs = H5Dget_space(d), ms = H5Screate_simple(1, &count, NULL);
    for (uint64_t off = 0; off < per_rank; off += block) {
        hsize_t start = (hsize_t)rank * per_rank + off;
        check_h5(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL), "H5Sselect_hyperslab");
        check_h5(H5Dread(d, H5T_NATIVE_UCHAR, ms, fs, H5P_DEFAULT, buf), "H5Dread");
    }
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    check_h5(H5Fclose(f), "H5Fclose");
    MPI_Barrier(MPI_COMM_WORLD);
    record(kernel, MPI_Wtime() - t0, per_rank * (uint64_t)size);
    H5Pclose(fapl);
}

/* collective reads of the slab just written, in the same write session (the write and
 * the open untimed: the clock covers the reads) */
static void
session_read(const char *kernel, const char *driver, const char *file)
{
    char    p[PATH_MAX];
    hsize_t total = per_rank * (uint64_t)size, count = block, start = (hsize_t)rank * per_rank;
    path(p, file);
    if (rank == 0 && !strcmp(driver, "mpio") && close(vfd_create_new(p)) < 0)
        die(p);
    hid_t fapl = fapl_for(driver, mf_options), dxpl = H5Pcreate(H5P_DATASET_XFER);
    check_h5(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check_h5(f, "H5Fcreate");
    hid_t fs = H5Screate_simple(1, &total, NULL), ms = H5Screate_simple(1, &count, NULL);
    hid_t d = H5Dcreate2(f, "data", H5T_NATIVE_UCHAR, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check_h5(d, "H5Dcreate2");
    for (int reading = 0; reading < 2; reading++) {
        double t0 = reading ? start_clock() : 0;
        for (uint64_t off = 0; off < per_rank; off += block) {
            hsize_t at = start + off;
            check_h5(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at, NULL, &count, NULL), "H5Sselect_hyperslab");
            check_h5(reading ? H5Dread(d, H5T_NATIVE_UCHAR, ms, fs, dxpl, buf)
                             : H5Dwrite(d, H5T_NATIVE_UCHAR, ms, fs, dxpl, buf),
                     reading ? "H5Dread" : "H5Dwrite");
        }
        if (reading) {
            MPI_Barrier(MPI_COMM_WORLD);
            record(kernel, MPI_Wtime() - t0, total);
        }
    }
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    check_h5(H5Fclose(f), "H5Fclose");
    H5Pclose(dxpl);
    H5Pclose(fapl);
}

/* ---------------------------------------------------------------- reconstruction */

static uint64_t
record_bytes(const mf_dir_t *d)
{
    uint64_t b = 0;
    for (unsigned r = 0; r < d->meta.ranks; r++)
        b += d->ranks[r].bytes;
    return b;
}

/* reconstruct DIR/mf.h5 into DIR/merged.h5 with `parts` processes */
static void
merge(int parallel)
{
    char     src[PATH_MAX], out[PATH_MAX];
    mf_dir_t d;
    mf_err_t err;
    int      fd = -1, part = parallel ? rank : 0, nparts = parallel ? size : 1;
    dir_path(src, "mf.h5");
    path(out, "merged.h5");
    double t0 = start_clock();
    if (parallel || rank == 0) {
        if (mf_dir_scan(&d, src, MF_LOAD_COMPLETE, err) < 0) {
            fprintf(stderr, "h5mf-bench: %s\n", err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (rank == 0 && (fd = vfd_create_new(out)) < 0)
            die(out);
        if (rank == 0 && ftruncate(fd, (off_t)d.size) < 0)
            die(out);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (parallel && rank != 0 && (fd = open(out, O_WRONLY)) < 0)
        die(out);
    uint64_t bytes = 0;
    if (parallel || rank == 0) {
        if (mf_merge_part(&d, fd, (unsigned)part, (unsigned)nparts, NULL, NULL, err) < 0) {
            fprintf(stderr, "h5mf-bench: %s\n", err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if ((do_fsync && fsync(fd) < 0) || close(fd) < 0)
            die(out);
        bytes = record_bytes(&d);
        mf_dir_free(&d);
    }
    MPI_Bcast(&bytes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    record(parallel ? "merge-parallel" : "merge-serial", MPI_Wtime() - t0, bytes);
}

/* len bytes of in (from 0) into out at `at`, as cp copies: copy_file_range(2) */
static void
copy_fd(int in, int out, uint64_t at, uint64_t len)
{
    loff_t from = 0, to = (loff_t)at;
    while (len > 0) {
        ssize_t k = copy_file_range(in, &from, out, &to, len > (1u << 30) ? (1u << 30) : len, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            die("copy_file_range");
        len -= (uint64_t)k;
    }
}

/* copy the rank files of DIR/mf.h5 into one file: the bytes the merge moves, by the
 * means it uses (copy_file_range) */
static void
copy(int parallel)
{
    char     src[PATH_MAX], out[PATH_MAX], rf[PATH_MAX];
    uint64_t bytes = 0;
    dir_path(src, "mf.h5");
    path(out, "copy.out");
    double t0 = start_clock();
    if (rank == 0 && close(vfd_create_new(out)) < 0)
        die(out);
    MPI_Barrier(MPI_COMM_WORLD);
    int fd = open(out, O_WRONLY);
    if (fd < 0)
        die(out);
    for (int r = 0; r < size; r++) {
        struct stat st;
        mf_data_path(rf, sizeof rf, src, (unsigned)r);
        if (stat(rf, &st) < 0)
            die(rf);
        uint64_t at = bytes; /* rank r's bytes go after those of ranks < r */
        bytes += (uint64_t)st.st_size;
        if (parallel ? r != rank : rank != 0)
            continue;
        int in = open(rf, O_RDONLY);
        if (in < 0)
            die(rf);
        copy_fd(in, fd, at, (uint64_t)st.st_size);
        close(in);
    }
    if ((do_fsync && fsync(fd) < 0) || close(fd) < 0)
        die(out);
    MPI_Barrier(MPI_COMM_WORLD);
    record(parallel ? "copy-parallel" : "copy-serial", MPI_Wtime() - t0, bytes);
    if (rank == 0)
        unlink(out);
}

/* what cp(1) achieves on the same files, rank 0 copying each rank file (with --fsync,
 * each copy is fsynced too): the yardstick of copy-serial */
static void
cp_files(void)
{
    char     src[PATH_MAX], rf[PATH_MAX], out[PATH_MAX];
    uint64_t bytes = 0;
    dir_path(src, "mf.h5");
    double t0 = start_clock();
    for (int r = 0; rank == 0 && r < size; r++) {
        struct stat st;
        int         status, fd;
        pid_t       pid;
        mf_data_path(rf, sizeof rf, src, (unsigned)r);
        snprintf(out, sizeof out, "%s/cp.%d", dir, r);
        char *args[] = {"cp", rf, out, NULL};
        if (stat(rf, &st) < 0 || posix_spawnp(&pid, "cp", NULL, NULL, args, environ) != 0 ||
            waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            die("cp");
        if (do_fsync && ((fd = open(out, O_WRONLY)) < 0 || fsync(fd) < 0 || close(fd) < 0))
            die(out);
        bytes += (uint64_t)st.st_size;
    }
    MPI_Bcast(&bytes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    record("cp", MPI_Wtime() - t0, bytes);
    for (int r = 0; rank == 0 && r < size; r++) {
        snprintf(out, sizeof out, "cp.%d", r);
        rm(out);
    }
}

/* ---------------------------------------------------------------- main */

/* the JSON results: a new file (never written through a link planted at its name) */
static FILE *
create_json(const char *p)
{
    int   fd = vfd_create_new(p);
    FILE *f  = fd < 0 ? NULL : fdopen(fd, "w");
    if (fd >= 0 && !f)
        close(fd);
    return f;
}

static void
ratio(FILE *json, const char *what, const char *a, const char *b, int *first)
{
    double x = median(a), y = median(b), q = paired_ratio(a, b);
    if (rank != 0)
        return;
    printf("ratio %-40s %6.3f   (median of %d paired runs; medians %s %.1f, %s %.1f MiB/s)\n", what, q,
           result(a)->n < result(b)->n ? result(a)->n : result(b)->n, a, x, b, y);
    if (json)
        fprintf(json, "%s\n    \"%s\": %.4f", *first ? "" : ",", what, q);
    *first = 0;
}

typedef struct {
    const char *target, *json;
    uint64_t    counts[32], record_bytes;
    int         ncounts;
} args_t;

/* a whole number in [lo, hi]; 0 or -1 */
static int
number(const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno                = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *text == '-' || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int
usage(const char *prog, const char *why)
{
    if (rank == 0) {
        if (why)
            fprintf(stderr, "h5mf-bench: %s\n", why);
        fprintf(stderr,
                "usage: mpiexec -n N %s DIR [--mib-per-rank M] [--block-kib K] [--repeat R] "
                "[--fsync] [--multifile-options OPTS] [--json FILE]\n"
                "       mpiexec -n N %s DIR --records N1,N2,... [--record-bytes B] [--json FILE]\n",
                prog, prog);
    }
    return 2;
}

/* the command line into a and the globals; 0, or the exit status (the reason printed) */
static int
parse_args(int argc, char **argv, args_t *a)
{
    static const struct option opts[] = {{"mib-per-rank", required_argument, 0, 'm'},
                                         {"block-kib", required_argument, 0, 'b'},
                                         {"repeat", required_argument, 0, 'r'},
                                         {"json", required_argument, 0, 'j'},
                                         {"multifile-options", required_argument, 0, 'o'},
                                         {"fsync", no_argument, 0, 'f'},
                                         {"records", required_argument, 0, 'n'},
                                         {"record-bytes", required_argument, 0, 'B'},
                                         {0, 0, 0, 0}};
    uint64_t                   v;
    int                        c;
    memset(a, 0, sizeof *a);
    a->record_bytes = 8;
    opterr          = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
            case 'm':
                if (number(optarg, 1, 1u << 20, &v) < 0)
                    return usage(argv[0], "--mib-per-rank takes 1 to 1048576");
                per_rank = v << 20;
                break;
            case 'b':
                if (number(optarg, 1, 1u << 20, &v) < 0)
                    return usage(argv[0], "--block-kib takes 1 to 1048576");
                block = v << 10;
                break;
            case 'r':
                if (number(optarg, 1, MAXREP, &v) < 0)
                    return usage(argv[0], "--repeat takes 1 to " MF_STR(MAXREP));
                repeat = (int)v;
                break;
            case 'j':
                a->json = optarg;
                break;
            case 'o':
                mf_options = optarg;
                break;
            case 'f':
                do_fsync = 1;
                break;
            case 'n':
                for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ","))
                    if (a->ncounts == 32 || number(tok, 1, UINT64_MAX >> 8, &a->counts[a->ncounts++]) < 0)
                        return usage(argv[0], "--records takes up to 32 positive counts");
                break;
            case 'B':
                if (number(optarg, 1, 1u << 20, &a->record_bytes) < 0)
                    return usage(argv[0], "--record-bytes takes 1 to 1048576");
                break;
            default:
                return usage(argv[0], "unknown option or missing value");
        }
    }
    if (optind != argc - 1)
        return usage(argv[0], optind < argc ? "one DIR only" : "DIR is missing");
    a->target = argv[optind];
    if (per_rank % block)
        return usage(argv[0], "the block size must divide the bytes per rank");
    snprintf(dir, sizeof dir, "%s", a->target);
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        if (rank == 0)
            fprintf(stderr, "h5mf-bench: %s: not a directory\n", dir);
        return 1;
    }
    return 0;
}

/* one run of every kernel, then the files removed */
static void
one_run(int rep, int subfiling)
{
    posix_fpp();
    mpiio(1);
    mpiio(0);
    hdf5_write("hdf5-mpio", "mpio", "mpio.h5", 0);
    if (subfiling)
        hdf5_write("hdf5-subfiling", "subfiling", "subfiling.h5", 0);
    /* plugin and linked back to back, in alternating order (the first run registers
     * the driver through the plugin loader) */
    if (rep % 2)
        hdf5_write("hdf5-multifile", "multifile", "mf.h5", 0);
    hdf5_write("hdf5-multifile-plugin", "multifile-plugin", "mf-plugin.h5", 0);
    if (rep % 2 == 0)
        hdf5_write("hdf5-multifile", "multifile", "mf.h5", 0);
    hdf5_write("hdf5-mpio-seloff", "mpio", "mpio-seloff.h5", 1);
    hdf5_write("hdf5-multifile-seloff", "multifile", "mf-seloff.h5", 1);
    merge(0);
    copy(0);
    cp_files();
    merge(1);
    copy(1);
    hdf5_read("read-merged", "merged.h5", NULL);
    hdf5_read("read-inplace", "mf.h5", "read=inplace");
    session_read("session-read-mpio", "mpio", "session-mpio.h5");
    session_read("session-read-multifile", "multifile", "session-mf.h5");
    if (rank == 0) {
        rm("session-mpio.h5");
        rm("session-mf.h5");
        rm("mpio.h5");
        rm("mpio-seloff.h5");
        rm("mf-seloff.h5");
        rm("mf-plugin.h5"); /* removed with the others, so neither of the pair follows a removal */
        rm("merged.h5");
        rm("mf.h5");
        if (subfiling) { /* subfiling's config and subfiles */
            char cmd[PATH_MAX + 64];
            snprintf(cmd, sizeof cmd, "rm -f '%s'/subfiling.h5*", dir);
            if (system(cmd) != 0)
                fprintf(stderr, "h5mf-bench: could not remove the subfiling files\n");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* rank 0: the table of kernels, and the JSON opened with its kernels (NULL without --json) */
static FILE *
report_kernels(const char *json_path)
{
    printf("\n%-22s %12s %12s %12s   (MiB/s over %d runs)\n", "kernel", "median", "min", "max", repeat);
    for (int i = 0; i < nresults; i++) {
        double lo = results[i].mibs[0], hi = lo;
        for (int k = 1; k < results[i].n; k++) {
            lo = results[i].mibs[k] < lo ? results[i].mibs[k] : lo;
            hi = results[i].mibs[k] > hi ? results[i].mibs[k] : hi;
        }
        printf("%-22s %12.1f %12.1f %12.1f\n", results[i].name, median(results[i].name), lo, hi);
    }
    printf("\n");
    FILE *json = NULL;
    if (json_path && !(json = create_json(json_path)))
        die(json_path);
    if (json) {
        fprintf(json,
                "{\n  \"ranks\": %d, \"mib_per_rank\": %llu, \"block_kib\": %llu, \"repeat\": %d, "
                "\"fsync\": %s,\n  \"kernels\": {",
                size, (unsigned long long)(per_rank >> 20), (unsigned long long)(block >> 10), repeat,
                do_fsync ? "true" : "false");
        for (int i = 0; i < nresults; i++) {
            fprintf(json, "%s\n    \"%s\": {\"median_mib_s\": %.2f, \"runs_mib_s\": [", i ? "," : "",
                    results[i].name, median(results[i].name));
            for (int k = 0; k < results[i].n; k++)
                fprintf(json, "%s%.2f", k ? ", " : "", results[i].mibs[k]);
            fprintf(json, "]}");
        }
        fprintf(json, "\n  },\n  \"ratios\": {");
    }
    return json;
}

static void
report_ratios(FILE *json, int subfiling)
{
    int first = 1;
    ratio(json, "multifile/posix-fpp (write limit)", "hdf5-multifile", "posix-fpp", &first);
    ratio(json, "multifile/mpiio-coll", "hdf5-multifile", "mpiio-coll", &first);
    ratio(json, "multifile/mpiio-ind", "hdf5-multifile", "mpiio-ind", &first);
    ratio(json, "multifile/hdf5-mpio", "hdf5-multifile", "hdf5-mpio", &first);
    if (subfiling)
        ratio(json, "multifile/hdf5-subfiling", "hdf5-multifile", "hdf5-subfiling", &first);
    ratio(json, "multifile plugin/linked", "hdf5-multifile-plugin", "hdf5-multifile", &first);
    ratio(json, "multifile selection-off/on", "hdf5-multifile-seloff", "hdf5-multifile", &first);
    ratio(json, "hdf5-mpio selection-off/on", "hdf5-mpio-seloff", "hdf5-mpio", &first);
    ratio(json, "multifile/hdf5-mpio (selection off)", "hdf5-multifile-seloff", "hdf5-mpio-seloff", &first);
    ratio(json, "merge-serial/copy-serial", "merge-serial", "copy-serial", &first);
    ratio(json, "merge-serial/cp", "merge-serial", "cp", &first);
    ratio(json, "copy-serial/cp", "copy-serial", "cp", &first);
    ratio(json, "merge-parallel/copy-parallel", "merge-parallel", "copy-parallel", &first);
    ratio(json, "merge-parallel/merge-serial", "merge-parallel", "merge-serial", &first);
    ratio(json, "read-inplace/read-merged", "read-inplace", "read-merged", &first);
    ratio(json, "multifile/hdf5-mpio (collective reads in the session)", "session-read-multifile",
          "session-read-mpio", &first);
    if (json) {
        fprintf(json, "\n  }\n}\n");
        fclose(json);
    }
}

int
main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    args_t a;
    int    rc = parse_args(argc, argv, &a);
    if (rc) {
        MPI_Finalize();
        return rc;
    }
    if (a.ncounts > 0) { /* the index curve (mf_scale.c) */
        FILE *json = rank == 0 && a.json ? create_json(a.json) : NULL;
        if (rank == 0 && a.json && !json)
            die(a.json);
        mf_scale_run(dir, a.counts, a.ncounts, a.record_bytes, json);
        if (json)
            fclose(json);
        MPI_Finalize();
        return 0;
    }
    if (!(buf = malloc(block)))
        die("malloc");
    for (uint64_t i = 0; i < block; i++)
        buf[i] = (char)(rank + i);
    int subfiling = provided == MPI_THREAD_MULTIPLE;
    if (rank == 0) { /* for harnesses: which MPI ran, on how many ranks */
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int  len;
        MPI_Get_library_version(version, &len);
        version[strcspn(version, "\n")] = '\0';
        printf("h5mf-bench: %d ranks x %llu MiB in %llu KiB blocks, %d repetitions, %s, in %s\n", size,
               (unsigned long long)(per_rank >> 20), (unsigned long long)(block >> 10), repeat,
               do_fsync ? "fsync at close" : "no fsync (page cache counts)", dir);
        printf("mpi-ranks: %d\nmpi-library: %s\n", size, version);
    }
    for (int rep = 0; rep < repeat; rep++)
        one_run(rep, subfiling);
    report_ratios(rank == 0 ? report_kernels(a.json) : NULL, subfiling);
    free(buf);
    MPI_Finalize();
    return 0;
}
