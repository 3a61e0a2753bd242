/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_reopen - read-write reopening and deleting with the multifile driver, in the
 * directory layout (layout=dir: the path is the directory; tests/head.sh reopens heads).
 *
 *   mpiexec -n N mf_reopen DIR
 *
 * In DIR, with N ranks:
 *   1. create a.h5 (a multifile directory), write dataset "a", close;
 *   2. reopen it read-write: it stays a directory (continued in new epochs); overwrite
 *      rank 0's row of "a", add dataset "b" and open it a second time in the same
 *      process (HDF5 then asks the driver to open it again), close;
 *   3. open it read-only with the default options: it is read in place (check "a" and
 *      "b"), still a directory;
 *   4. open it read-only through H5Pset_fapl_mpiposix (the original patch's API, which
 *      keeps its read=merge): reconstructed into an ordinary file; check "a" and "b";
 *   5. reopen the reconstructed ordinary file read-write (every rank writes in place),
 *      add dataset "c", close, open read-only and check it;
 *   6. H5Fdelete removes it;
 *   7. create z.h5, write and read "a", remove the directory while it is open (rm -rf),
 *      write "b", flush, read both, close: the driver goes on through the descriptors
 *      it holds, as a POSIX file removed while open does;
 *   8. other numbers of ranks: the first half of the ranks create g.h5 and write
 *      dataset "a" (N rows, rows dealt cyclically over the session's ranks); all N
 *      continue it read-write (more rank files than it had), rewrite "a" and write "b";
 *      rank 0 alone continues it (fewer ranks than rank files), rewrites the last row
 *      of "a" and writes "c"; all N read it in place and reconstructed, and check it.
 *
 *   mpiexec -n N mf_reopen --open-rdwr FILE [OPTIONS]
 *   mpiexec -n N mf_reopen --open-rdonly FILE [OPTIONS]
 *
 * only opens FILE read-write or read-only (OPTIONS: H5Pset_multifile_options, e.g.
 * read=merge) and closes it (for the error tests: HDF5's error stack says why it
 * failed; exit 1); MF_REOPEN_HOLD_SECONDS=N keeps it open N seconds first.
 * Rank 0 prints "reopen: ok" on success; any failure exits non-zero.
 */
#include "H5FDmultifile.h"

#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COLS 8

static int rank, size;

#define CHECK(expr)                                                                                          \
    do {                                                                                                     \
        if ((expr) < 0) {                                                                                    \
            fprintf(stderr, "rank %d: %s:%d: %s failed\n", rank, __FILE__, __LINE__, #expr);                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)
#define EXPECT(cond, ...)                                                                                    \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "rank %d: ", rank);                                                              \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                    \
        }                                                                                                    \
    } while (0)

static hid_t
fapl(const char *options)
{
    hid_t p = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(p);
    CHECK(H5Pset_fapl_multifile(p, MPI_COMM_WORLD, MPI_INFO_NULL));
    CHECK(H5Pset_multifile_options(p, "layout=dir"));
    if (options)
        CHECK(H5Pset_multifile_options(p, options));
    return p;
}

/* every rank writes its row (value base + rank*100 + column) of a size x COLS dataset;
 * with only_rank >= 0 every rank takes part (opening a dataset is collective) but only
 * that rank selects its row */
static void
write_rows(hid_t f, const char *name, int base, int create, int only_rank)
{
    hsize_t dims[2] = {(hsize_t)size, COLS}, start[2] = {(hsize_t)rank, 0}, count[2] = {1, COLS};
    int     row[COLS];
    hid_t   space = H5Screate_simple(2, dims, NULL), d;
    CHECK(space);
    d = create ? H5Dcreate2(f, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
               : H5Dopen2(f, name, H5P_DEFAULT);
    CHECK(d);
    hid_t mem = H5Screate_simple(2, count, NULL);
    if (only_rank < 0 || only_rank == rank)
        CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL));
    else {
        CHECK(H5Sselect_none(space));
        CHECK(H5Sselect_none(mem));
    }
    for (int c = 0; c < COLS; c++)
        row[c] = base + rank * 100 + c;
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, row));
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
}

/* every rank checks every row: row r holds base + r*100 + column, row odd_row odd_base + ... */
static void
check_rows_but(hid_t f, const char *name, int base, int odd_row, int odd_base)
{
    int  *all = malloc(sizeof(int) * (size_t)size * COLS);
    hid_t d   = H5Dopen2(f, name, H5P_DEFAULT);
    CHECK(d);
    CHECK(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, all));
    for (int r = 0; r < size; r++)
        for (int c = 0; c < COLS; c++) {
            int want = (r == odd_row ? odd_base : base) + r * 100 + c;
            EXPECT(all[r * COLS + c] == want, "%s[%d][%d] = %d, expected %d", name, r, c, all[r * COLS + c],
                   want);
        }
    H5Dclose(d);
    free(all);
}

/* row 0 holds base_row0 + ..., the others base + ... */
static void
check_rows(hid_t f, const char *name, int base, int base_row0)
{
    check_rows_but(f, name, base, 0, base_row0);
}

static int
is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 7.: every rank has read every row (so holds every rank's files) before rank 0
 * removes the directory; afterwards writes, a flush, reads and the close succeed */
static void
written_while_removed(const char *path, hid_t p)
{
    char  cmd[4200];
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, p);
    CHECK(f);
    write_rows(f, "a", 1000, 1, -1);
    CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
    check_rows(f, "a", 1000, 1000);
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (rank == 0)
        EXPECT(system(cmd) == 0 && access(path, F_OK) != 0, "%s: could not remove it", path);
    MPI_Barrier(MPI_COMM_WORLD);
    write_rows(f, "b", 2000, 1, -1);
    CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
    check_rows(f, "a", 1000, 1000);
    check_rows(f, "b", 2000, 2000);
    CHECK(H5Fclose(f));
    EXPECT(access(path, F_OK) != 0, "%s: came back after the close", path);
}

/* 8.: a session of the first k ranks on comm writes dataset name (size rows, created
 * when create): rank r of the session writes rows r, r + k, ... (base + row*100 + column),
 * or with last_only only the last row; ranks outside the session take no part */
static void
write_dealt(const char *path, unsigned mode, int k, const char *name, int base, int last_only)
{
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, rank < k ? 0 : MPI_UNDEFINED, rank, &comm);
    if (comm == MPI_COMM_NULL)
        return;
    hid_t p = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_multifile(p, comm, MPI_INFO_NULL));
    CHECK(H5Pset_multifile_options(p, "layout=dir"));
    hid_t f = mode == H5F_ACC_TRUNC ? H5Fcreate(path, mode, H5P_DEFAULT, p) : H5Fopen(path, mode, p);
    CHECK(f);
    hsize_t dims[2] = {(hsize_t)size, COLS}, count[2] = {1, COLS}, start[2] = {0, 0};
    hid_t   space = H5Screate_simple(2, dims, NULL), mem = H5Screate_simple(2, count, NULL);
    hid_t   d = H5Lexists(f, name, H5P_DEFAULT) > 0
                    ? H5Dopen2(f, name, H5P_DEFAULT)
                    : H5Dcreate2(f, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(d);
    for (int row = last_only ? size - 1 : rank; row < size; row += k) {
        int vals[COLS];
        for (int c = 0; c < COLS; c++)
            vals[c] = base + row * 100 + c;
        start[0] = (hsize_t)row;
        CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL));
        CHECK(H5Dwrite(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, vals));
    }
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
    CHECK(H5Fclose(f));
    H5Pclose(p);
    MPI_Comm_free(&comm);
}

/* 8.: continued by more ranks than wrote it, then by fewer */
static void
other_rank_counts(const char *path, hid_t p)
{
    int half = size > 1 ? size / 2 : 1;
    write_dealt(path, H5F_ACC_TRUNC, half, "a", 1000, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    write_dealt(path, H5F_ACC_RDWR, size, "a", 2000, 0);
    write_dealt(path, H5F_ACC_RDWR, size, "b", 3000, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    write_dealt(path, H5F_ACC_RDWR, 1, "a", 4000, 1);
    write_dealt(path, H5F_ACC_RDWR, 1, "c", 5000, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(is_dir(path), "%s: not a directory after sessions of other rank counts", path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, p);
    CHECK(f);
    check_rows_but(f, "a", 2000, size - 1, 4000);
    check_rows(f, "b", 3000, 3000);
    check_rows(f, "c", 5000, 5000);
    CHECK(H5Fclose(f));
    hid_t merged = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_multifile(merged, MPI_COMM_WORLD, MPI_INFO_NULL));
    CHECK(H5Pset_multifile_options(merged, "read=merge"));
    f = H5Fopen(path, H5F_ACC_RDONLY, merged);
    CHECK(f);
    check_rows_but(f, "a", 2000, size - 1, 4000);
    check_rows(f, "c", 5000, 5000);
    CHECK(H5Fclose(f));
    H5Pclose(merged);
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(!is_dir(path), "%s: still a directory after read=merge", path);
}

/* --open-rdwr / --open-rdonly FILE [OPTIONS]: open and close only; the exit status */
static int
open_only(int argc, char **argv)
{
    unsigned    mode = strcmp(argv[1], "--open-rdwr") == 0 ? H5F_ACC_RDWR : H5F_ACC_RDONLY;
    hid_t       p = fapl(argc == 4 ? argv[3] : NULL), f = H5Fopen(argv[2], mode, p);
    const char *hold = getenv("MF_REOPEN_HOLD_SECONDS");
    if (f >= 0 && hold)
        sleep((unsigned)atoi(hold));
    int ok = f >= 0 && H5Fclose(f) >= 0;
    H5Pclose(p);
    return ok ? 0 : 1;
}

/* 1. and 2.: created, then continued read-write (and opened a second time meanwhile) */
static void
create_and_continue(const char *path, hid_t p)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, p);
    CHECK(f);
    write_rows(f, "a", 1000, 1, -1);
    CHECK(H5Fclose(f));
    EXPECT(is_dir(path), "%s: not a directory after the write", path);

    f = H5Fopen(path, H5F_ACC_RDWR, p);
    CHECK(f);
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(is_dir(path), "%s: the read-write open did not continue the directory", path);
    write_rows(f, "a", 5000, 0, 0); /* rank 0's row only */
    write_rows(f, "b", 2000, 1, -1);
    hid_t again = H5Fopen(path, H5F_ACC_RDONLY, p); /* the same file: HDF5 shares the open one */
    CHECK(again);
    check_rows(again, "b", 2000, 2000);
    CHECK(H5Fclose(again));
    CHECK(H5Fclose(f));
    EXPECT(is_dir(path), "%s: not a directory after the read-write session", path);
}

/* 3. and 4.: read in place (the directory stays), then through H5Pset_fapl_mpiposix
 * (reconstructed) */
static void
read_in_place_then_merged(const char *path, hid_t p)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, p);
    CHECK(f);
    check_rows(f, "a", 1000, 5000);
    check_rows(f, "b", 2000, 2000);
    CHECK(H5Fclose(f));
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(is_dir(path), "%s: a read-only open with the default options changed the directory", path);

    hid_t original = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_mpiposix(original, MPI_COMM_WORLD, 0));
    f = H5Fopen(path, H5F_ACC_RDONLY, original);
    CHECK(f);
    EXPECT(!is_dir(path), "%s: still a directory after the read-only open through H5Pset_fapl_mpiposix",
           path);
    check_rows(f, "a", 1000, 5000);
    check_rows(f, "b", 2000, 2000);
    CHECK(H5Fclose(f));
    H5Pclose(original);
}

/* 5. and 6.: the ordinary file written in place, read back, deleted */
static void
write_in_place_and_delete(const char *path, hid_t p)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, p);
    CHECK(f);
    write_rows(f, "c", 3000, 1, -1);
    CHECK(H5Fclose(f));
    f = H5Fopen(path, H5F_ACC_RDONLY, p);
    CHECK(f);
    check_rows(f, "a", 1000, 5000);
    check_rows(f, "c", 3000, 3000);
    CHECK(H5Fclose(f));

    CHECK(H5Fdelete(path, p));
    EXPECT(access(path, F_OK) != 0, "%s: still there after H5Fdelete", path);
}

int
main(int argc, char **argv)
{
    char path[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if ((argc == 3 || argc == 4) &&
        (strcmp(argv[1], "--open-rdwr") == 0 || strcmp(argv[1], "--open-rdonly") == 0)) {
        int rc = open_only(argc, argv);
        H5close();
        MPI_Finalize();
        return rc;
    }
    if (argc != 2) {
        if (rank == 0)
            fprintf(
                stderr,
                "usage: mpiexec -n N mf_reopen DIR | mpiexec -n N mf_reopen --open-rdwr|--open-rdonly FILE "
                "[OPTIONS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    snprintf(path, sizeof path, "%s/a.h5", argv[1]);
    hid_t p = fapl(NULL);
    create_and_continue(path, p);
    read_in_place_then_merged(path, p);
    write_in_place_and_delete(path, p);
    snprintf(path, sizeof path, "%s/z.h5", argv[1]);
    written_while_removed(path, p);
    snprintf(path, sizeof path, "%s/g.h5", argv[1]);
    other_rank_counts(path, p);
    H5Pclose(p);
    if (rank == 0)
        printf("reopen: ok (%d ranks)\n", size);
    H5close();
    MPI_Finalize();
    return 0;
}
