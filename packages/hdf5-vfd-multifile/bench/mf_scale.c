/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_scale.c - h5mf-bench --records: how the index operations grow with the number of
 * records.
 *
 * For each count N, the ranks write one dataset as N records of --record-bytes bytes
 * (rank r the blocks r, r + P, r + 2P, ... of every other block, so no two of a rank's
 * writes touch and none coalesces), with one H5Dwrite per rank. Then, timed:
 *   info           reading the directory and counting its extents (h5mf info), rank 0
 *   merge-serial   reading and reconstructing it by rank 0 alone (h5mf merge)
 *   merge-parallel reading and reconstructing it by all ranks, each its share
 * (the index resolved in address windows of h5mf's default memory, mf_merge.h)
 *   inplace-open   H5Fopen + H5Fclose with read=inplace, all ranks
 * with the peak memory each adds to its process (VmHWM, reset before). The exponent k
 * of time ~ N^k is fitted over the counts of at least 10^4 records.
 */
#include "mf_scale.h"
#include "vfd_path.h"

#include "H5FDmultifile.h"
#include "mf_replace.h"

#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OP_INFO, OP_MERGE_SERIAL, OP_MERGE_PARALLEL, OP_INPLACE, NOPS };
static const char *op_names[NOPS] = {"info", "merge-serial", "merge-parallel", "inplace-open"};

static int rank, size;

static void
fail(const char *what)
{
    fprintf(stderr, "h5mf-bench: rank %d: %s failed\n", rank, what);
    H5Eprint2(H5E_DEFAULT, stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* peak memory: reset the high-water mark, read it back later (kB) */
static long
status_kb(const char *field)
{
    char  line[256];
    long  kb = 0;
    FILE *f  = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, strlen(field)))
            kb = atol(line + strlen(field) + 1);
    if (f)
        fclose(f);
    return kb;
}

static long
reset_peak(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    if (fd >= 0) {
        if (write(fd, "5", 1) != 1)
            perror("clear_refs");
        close(fd);
    }
    return status_kb("VmRSS:");
}

static hid_t
mf_fapl(const char *options)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (H5Pset_fapl_multifile(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) < 0 ||
        (options && H5Pset_multifile_options(fapl, options) < 0))
        fail("H5Pset_fapl_multifile");
    return fapl;
}

static void
write_records(const char *path, uint64_t n, uint64_t bytes)
{
    uint64_t mine  = n / (uint64_t)size + ((uint64_t)rank < n % (uint64_t)size);
    hsize_t  total = 2 * n * bytes, start = 2 * bytes * (hsize_t)rank, stride = 2 * bytes * (hsize_t)size;
    hsize_t  count = mine, block = bytes, all = mine * bytes;
    hid_t    fapl = mf_fapl("layout=dir"), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    char    *data = malloc(all ? all : 1);
    if (!data)
        fail("malloc");
    memset(data, 1 + rank, all);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    hid_t f  = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t fs = H5Screate_simple(1, &total, NULL), ms = H5Screate_simple(1, &all, NULL);
    hid_t d = H5Dcreate2(f, "data", H5T_NATIVE_UCHAR, fs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (f < 0 || d < 0)
        fail("H5Fcreate/H5Dcreate2");
    if (mine == 0)
        H5Sselect_none(fs), H5Sselect_none(ms);
    else if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, &stride, &count, &block) < 0)
        fail("H5Sselect_hyperslab");
    if (H5Dwrite(d, H5T_NATIVE_UCHAR, ms, fs, H5P_DEFAULT, data) < 0)
        fail("H5Dwrite");
    H5Dclose(d), H5Sclose(ms), H5Sclose(fs), H5Pclose(dcpl), H5Pclose(fapl);
    if (H5Fclose(f) < 0)
        fail("H5Fclose");
    free(data);
}

/* load and reconstruct part `part` of `nparts` into out (created by rank 0) */
static uint64_t
merge(const char *src, const char *out, int part, int nparts)
{
    mf_dir_t d;
    mf_err_t err;
    if (mf_dir_scan(&d, src, MF_LOAD_COMPLETE, err) < 0) {
        fprintf(stderr, "h5mf-bench: %s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int fd = open(out, O_WRONLY);
    if (fd < 0 || mf_merge_part(&d, fd, (unsigned)part, (unsigned)nparts, NULL, NULL, err) < 0 ||
        close(fd) < 0) {
        fprintf(stderr, "h5mf-bench: %s: %s\n", out, fd < 0 ? "cannot open" : err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    uint64_t records = d.records;
    mf_dir_free(&d);
    return records;
}

static void
make_output(const char *out, const char *src)
{
    mf_dir_t d;
    mf_err_t err;
    int      fd = -1;
    if (rank == 0) {
        if (mf_dir_scan(&d, src, MF_LOAD_COMPLETE, err) < 0 || (fd = vfd_create_new(out)) < 0 ||
            ftruncate(fd, (off_t)d.size) < 0)
            fail("creating the merge output");
        close(fd);
        mf_dir_free(&d);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* one count: times (s) and peak memory added (kB, max over ranks) of each operation */
static uint64_t
measure(const char *dir, uint64_t n, uint64_t bytes, double t[NOPS], long kb[NOPS])
{
    char     src[PATH_MAX], out[PATH_MAX];
    uint64_t records = 0;
    snprintf(src, sizeof src, "%s/scale.h5", dir);
    snprintf(out, sizeof out, "%s/scale-merged.h5", dir);
    write_records(src, n, bytes);
    for (int op = 0; op < NOPS; op++) {
        int  all  = op == OP_MERGE_PARALLEL || op == OP_INPLACE;
        long mine = 0;
        if (op == OP_MERGE_SERIAL || op == OP_MERGE_PARALLEL)
            make_output(out, src);
        MPI_Barrier(MPI_COMM_WORLD);
        long   base = reset_peak();
        double t0   = MPI_Wtime();
        if (op == OP_INFO && rank == 0) {
            mf_dir_t d;
            mf_err_t err;
            uint64_t extents;
            if (mf_dir_scan(&d, src, MF_LOAD_ANY, err) < 0 || mf_dir_extents(&d, &extents, err) < 0)
                fail(err);
            records = d.records;
            mf_dir_free(&d);
        }
        else if (op == OP_MERGE_SERIAL && rank == 0)
            merge(src, out, 0, 1);
        else if (op == OP_MERGE_PARALLEL)
            merge(src, out, rank, size);
        else if (op == OP_INPLACE) {
            hid_t fapl = mf_fapl("read=inplace"), f = H5Fopen(src, H5F_ACC_RDONLY, fapl);
            if (f < 0 || H5Fclose(f) < 0)
                fail("in-place H5Fopen");
            H5Pclose(fapl);
        }
        double dt = MPI_Wtime() - t0;
        if (all || rank == 0)
            mine = status_kb("VmHWM:") - base;
        MPI_Allreduce(&dt, &t[op], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &kb[op], 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        unlink(out);
        mf_rmtree(src);
    }
    MPI_Bcast(&records, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    return records;
}

/* least-squares slope of log t against log n over the counts >= 10^4 */
static double
exponent(const uint64_t *n, double t[][NOPS], int k, int op)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int    m = 0;
    for (int i = 0; i < k; i++)
        if (n[i] >= 10000 && t[i][op] > 0) {
            double x = log((double)n[i]), y = log(t[i][op]);
            sx += x, sy += y, sxx += x * x, sxy += x * y, m++;
        }
    return m >= 2 && m * sxx - sx * sx > 0 ? (m * sxy - sx * sy) / (m * sxx - sx * sx) : NAN;
}

int
mf_scale_run(const char *dir, const uint64_t *counts, int k, uint64_t bytes, FILE *json)
{
    double(*t)[NOPS] = calloc((size_t)k, sizeof *t);
    long(*kb)[NOPS]  = calloc((size_t)k, sizeof *kb);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!t || !kb)
        fail("calloc");
    if (rank == 0)
        printf("h5mf-bench --records: %d ranks, records of %llu bytes, in %s\nmpi-ranks: %d\n\n%10s %10s",
               size, (unsigned long long)bytes, dir, size, "records", "found");
    for (int op = 0; rank == 0 && op < NOPS; op++)
        printf(" %14s %9s", op_names[op], "peak MiB");
    if (rank == 0)
        printf("\n");
    for (int i = 0; i < k; i++) {
        uint64_t found = measure(dir, counts[i], bytes, t[i], kb[i]);
        if (rank != 0)
            continue;
        printf("%10llu %10llu", (unsigned long long)counts[i], (unsigned long long)found);
        for (int op = 0; op < NOPS; op++)
            printf(" %12.4f s %9.1f", t[i][op], kb[i][op] / 1024.0);
        printf("\n");
        for (int op = 0; op < NOPS; op++) /* for harnesses, one line per measurement */
            printf("scale %s count=%llu records=%llu seconds=%.6f peak_bytes_per_record=%.1f\n", op_names[op],
                   (unsigned long long)counts[i], (unsigned long long)found, t[i][op],
                   found ? kb[i][op] * 1024.0 / (double)found : 0.0);
        fflush(stdout);
    }
    if (rank == 0) {
        for (int op = 0; op < NOPS; op++)
            printf("fit %s exponent=%.3f\n", op_names[op], exponent(counts, t, k, op));
        if (json) {
            fprintf(json, "{\n  \"ranks\": %d, \"record_bytes\": %llu,\n  \"points\": [", size,
                    (unsigned long long)bytes);
            for (int i = 0; i < k; i++) {
                fprintf(json, "%s\n    {\"records\": %llu", i ? "," : "", (unsigned long long)counts[i]);
                for (int op = 0; op < NOPS; op++)
                    fprintf(json, ", \"%s_s\": %.6f, \"%s_peak_kib\": %ld", op_names[op], t[i][op],
                            op_names[op], kb[i][op]);
                fprintf(json, "}");
            }
            fprintf(json, "\n  ],\n  \"exponents\": {");
            for (int op = 0; op < NOPS; op++) {
                double e = exponent(counts, t, k, op);
                fprintf(json, isnan(e) ? "%s\"%s\": null" : "%s\"%s\": %.4f", op ? ", " : "", op_names[op],
                        e);
            }
            fprintf(json, "}\n}\n");
        }
    }
    free(t);
    free(kb);
    return 0;
}
