/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_runs - one index record per contiguous run of writes, seen at once by readers.
 *
 *   mpiexec -n 2 mf_runs DIR
 *
 * 1. Each rank writes two chunks of a chunked dataset row by row, one independent
 *    H5Dwrite per row: the rows of a chunk continue each other in the file, so each
 *    chunk must be one raw-data record in the rank's index (checked by loading the
 *    directory), and the data must read back right.
 * 2. Rank 0 writes a contiguous dataset in pieces, one H5Dwrite each; after each piece
 *    (and a barrier) rank 1 reads everything written so far: it must see the bytes that
 *    extended a record it had read before.
 * 3. A flush or a collective write (the events that order two ranks' writes) ends a
 *    run: a row written after it must win over another rank's earlier write of the same
 *    bytes even when it continues the run before the event (ordered_rewrites).
 * Rank 0 prints "runs: ok" on success; any failure exits non-zero.
 */
#include "H5FDmultifile.h"
#include "mf_merge.h"

#include <hdf5.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS   16   /* rows per chunk */
#define COLS   1024 /* ints per row */
#define PIECES 8    /* pieces of the contiguous dataset */

static int rank, size;

#define CHECK(expr)                                                                                          \
    do {                                                                                                     \
        if (!(expr)) {                                                                                       \
            fprintf(stderr, "rank %d: %s:%d: %s failed\n", rank, __FILE__, __LINE__, #expr);                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)

static int
value(int row, int col)
{
    return row * COLS + col + 1;
}

static void
write_rows(hid_t d, int first, int n)
{
    static int buf[COLS];
    hsize_t    count[2] = {1, COLS}, start[2] = {0, 0};
    hid_t      fs = H5Dget_space(d), ms = H5Screate_simple(2, count, NULL);
    for (int row = first; row < first + n; row++) {
        for (int c = 0; c < COLS; c++)
            buf[c] = value(row, c);
        start[0] = (hsize_t)row;
        CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0);
        CHECK(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf) >= 0);
    }
    H5Sclose(ms);
    H5Sclose(fs);
}

/* raw-data records per rank in the closed directory */
static void
count_raw_records(const char *path, uint64_t *raw)
{
    mf_dir_t d;
    mf_err_t err;
    if (mf_dir_load(&d, path, MF_LOAD_COMPLETE, err) < 0) {
        fprintf(stderr, "%s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (unsigned r = 0; r < d.meta.ranks; r++) {
        raw[r] = 0;
        for (uint64_t i = 0; i < d.ranks[r].n; i++)
            raw[r] += d.ranks[r].v[i].type == H5FD_MEM_DRAW;
    }
    mf_dir_free(&d);
}

static void
check_rows(hid_t d, int n)
{
    int    *buf      = malloc(sizeof(int) * (size_t)n * COLS);
    hsize_t count[2] = {(hsize_t)n, COLS}, start[2] = {0, 0};
    hid_t   fs = H5Dget_space(d), ms = H5Screate_simple(2, count, NULL);
    CHECK(buf && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0);
    CHECK(H5Dread(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf) >= 0);
    for (int i = 0; i < n * COLS; i++)
        if (buf[i] != value(i / COLS, i % COLS)) {
            fprintf(stderr, "rank %d: element %d of %d rows is %d, not %d\n", rank, i, n, buf[i],
                    value(i / COLS, i % COLS));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    H5Sclose(ms);
    H5Sclose(fs);
    free(buf);
}

static hid_t
create(const char *path, hid_t fapl, hid_t *chunked, hid_t *contig, hid_t *shared, hid_t *coll)
{
    hsize_t dims[2] = {(hsize_t)(2 * size * ROWS), COLS}, chunk[2] = {ROWS, COLS};
    hsize_t cdims[2] = {PIECES * ROWS, COLS};
    hid_t   f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    CHECK(f >= 0);
    CHECK(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0);
    hid_t s = H5Screate_simple(2, cdims, NULL);
    *contig = H5Dcreate2(f, "contiguous", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    *shared = H5Dcreate2(f, "shared", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    *coll   = H5Dcreate2(f, "collective", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Sclose(s);
    CHECK(H5Pset_chunk(dcpl, 2, chunk) >= 0);
    s        = H5Screate_simple(2, dims, NULL);
    *chunked = H5Dcreate2(f, "chunked", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(*chunked >= 0 && *contig >= 0 && *shared >= 0 && *coll >= 0);
    H5Sclose(s);
    H5Pclose(dcpl);
    return f;
}

static void
write_row_as(hid_t d, int row, int wrong)
{
    static int buf[COLS];
    hsize_t    start[2] = {(hsize_t)row, 0}, count[2] = {1, COLS};
    hid_t      fs = H5Dget_space(d), ms = H5Screate_simple(2, count, NULL);
    for (int c = 0; c < COLS; c++)
        buf[c] = wrong ? -1 : value(row, c);
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0);
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
}

/* a collective H5Dwrite to which rank 1 alone brings data (row0 + 1): an ordering event
 * that leaves rank 0's last record as it was */
static void
collective_write(hid_t d, int row0)
{
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) >= 0);
    static int buf[COLS];
    hsize_t    start[2] = {(hsize_t)(row0 + rank), 0}, count[2] = {1, COLS};
    hid_t      fs = H5Dget_space(d), ms = H5Screate_simple(2, count, NULL);
    for (int c = 0; c < COLS; c++)
        buf[c] = value(row0 + rank, c);
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0);
    if (rank == 0)
        CHECK(H5Sselect_none(fs) >= 0 && H5Sselect_none(ms) >= 0);
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, dxpl, buf) >= 0);
    H5Sclose(ms), H5Sclose(fs), H5Pclose(dxpl);
}

/*
 * Rows 0..3 of "shared" are rewritten by rank 0 after rank 1 wrote them wrong:
 *   rank 1 row 0 (wrong); H5Fflush (an epoch); rank 0 rows 0, 1, 2 (one run);
 *   a collective write; rank 1 row 3 (wrong); a collective write; rank 0 row 3, which
 *   continues rank 0's run of rows 0..2 but must not join it: that run is stamped before
 *   rank 1's row 3, and the row after it.
 */
static void
ordered_rewrites(hid_t f, hid_t shared, hid_t coll)
{
    if (rank == 1)
        write_row_as(shared, 0, 1);
    CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0);
    for (int row = 0; rank == 0 && row < 3; row++)
        write_row_as(shared, row, 0);
    collective_write(coll, 0);
    if (rank == 1)
        write_row_as(shared, 3, 1);
    collective_write(coll, 2);
    if (rank == 0)
        write_row_as(shared, 3, 0);
}

int
main(int argc, char **argv)
{
    char     path[PATH_MAX];
    uint64_t raw[64];
    hid_t    chunked, contig, shared, coll;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc == 2 && size == 2);
    snprintf(path, sizeof path, "%s/runs.h5", argv[1]);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_multifile(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) >= 0);
    CHECK(H5Pset_multifile_options(fapl, "layout=dir") >= 0); /* its records are counted in path/ */
    hid_t f = create(path, fapl, &chunked, &contig, &shared, &coll);
    for (int k = 0; k < 2; k++) /* chunks rank, rank + size */
        write_rows(chunked, (rank + k * size) * ROWS, ROWS);
    for (int p = 0; p < PIECES; p++) {
        if (rank == 0)
            write_rows(contig, p * ROWS, ROWS);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1)
            check_rows(contig, (p + 1) * ROWS);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    ordered_rewrites(f, shared, coll);
    H5Dclose(chunked), H5Dclose(contig), H5Dclose(shared), H5Dclose(coll);
    CHECK(H5Fclose(f) >= 0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        count_raw_records(path, raw);
        /* rank 0: its 2 chunks, the contiguous dataset in one run, rows 0..2 of
         * "shared", row 3; rank 1: its 2 chunks, rows 0 and 3 of "shared", its parts of
         * the 2 collective writes */
        fprintf(stderr, "raw-data records: rank 0 %llu, rank 1 %llu\n", (unsigned long long)raw[0],
                (unsigned long long)raw[1]);
        CHECK(raw[0] == 5 && raw[1] == 6);
    }
    /* read back through reconstruction (read=merge), every rank */
    CHECK(H5Pset_multifile_options(fapl, "read=merge") >= 0);
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    CHECK(f >= 0);
    chunked = H5Dopen2(f, "chunked", H5P_DEFAULT);
    contig  = H5Dopen2(f, "contiguous", H5P_DEFAULT);
    shared  = H5Dopen2(f, "shared", H5P_DEFAULT);
    check_rows(chunked, 2 * size * ROWS);
    check_rows(contig, PIECES * ROWS);
    coll = H5Dopen2(f, "collective", H5P_DEFAULT);
    check_rows(shared, 4);
    H5Dclose(chunked), H5Dclose(contig), H5Dclose(shared), H5Dclose(coll);
    CHECK(H5Fclose(f) >= 0);
    H5Pclose(fapl);
    if (rank == 0)
        printf("runs: ok\n");
    MPI_Finalize();
    return 0;
}
