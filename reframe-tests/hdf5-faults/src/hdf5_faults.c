/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdf5_faults - faults of parallel HDF5 itself (with its MPI-IO driver), one probe each:
 *
 *   mpiexec -n 3 hdf5_faults PROBE FILE [--control] [--timeout SECONDS]
 *
 * coll-md-cache: a collective operation after independent reads that left the ranks'
 * metadata caches holding different entries. Every rank makes the same HDF5 calls; only
 * the selections of one independent H5Dread differ:
 *   1. a 16 KiB metadata cache (H5Pset_mdc_config); a compact dataset /d whose object
 *      header is larger than 512 bytes, and a chunked dataset /c of 2000 chunks;
 *   2. reopened read-write; H5Oget_info_by_name3("/d") on every rank: /d's header is in
 *      every cache;
 *   3. an independent H5Dread of /c: rank 0 reads one chunk, the others every chunk;
 *      their chunk-index lookups evict /d's header from their caches only;
 *   4. H5Ldelete("/d") on every rank, collective as HDF5 asks. HDF5 reads the metadata
 *      of a modifying operation collectively: rank 0 broadcasts an entry it holds with
 *      its whole size (H5C_protect), a rank that must load it expects the 512 bytes of
 *      the speculative first read (H5C__load_entry): MPI_Bcast of different sizes.
 * HDF5 1.14.6 and 2.2.0: the delete fails ("MPI_Bcast failed ... Message truncated" on
 * MPICH, MPI_ERR_TRUNCATE on Open MPI) in every run; under Intel MPI the job hangs.
 * --control: every rank reads every chunk (the same caches everywhere), which must
 * succeed.
 *
 * contig-fill: the fill of a new contiguous dataset over space that other ranks are
 * still writing. Every rank but 0 writes its share of a contiguous dataset /a (int64,
 * 4096 elements), one independent H5Dwrite per element, after a pause of 0.3 s (a slow
 * rank); then every rank closes /a, deletes it and creates /b of the same shape with
 * fill value 7 and fill time ALLOC. HDF5 reuses /a's space for /b, and rank 0 alone
 * writes the fill (H5D__contig_fill: a barrier after that write, none before), so the
 * other ranks' writes to /a, each returned before their H5Ldelete, can land after the
 * fill and inside /b. The ranks read /b after a barrier. HDF5 1.14.6 and 2.2.0 on MPICH
 * 4.0.2: 3996 of 4096 elements are not the fill value in every run; Open MPI 4.1.4 at
 * times. --control: a barrier before the delete (what an application can add), which
 * must leave /b its fill value.
 *
 * scaleoffset-int: lossless integer scaleoffset (H5Z_SO_INT, default minimum bits) on a
 * chunked int8 dataset whose every chunk spans -128..127, the whole range of the type:
 * each rank writes its own chunk of 256 elements in one collective H5Dwrite; the file is
 * reopened and every rank reads the whole dataset collectively and compares it with the
 * pattern. HDF5 1.14.6 fails the read on every rank ("filter returned failure during
 * read"; serial too: a signed type whose values need all its bits); 2.2.0 reads it back.
 * --control: the same values in an int32 dataset, which must read back right.
 *
 * nbit-after-deflate: a chunked uint8 dataset whose filters are deflate, then nbit (the
 * order H5Pset_deflate, H5Pset_nbit gives), each chunk 256 bytes that deflate cannot
 * shrink (its output is longer than the chunk): each rank writes its own chunk in one
 * collective H5Dwrite, and every rank reads the whole dataset back collectively. HDF5
 * 1.14.6 fails the read on every rank ("filter returned failure during read"; serial
 * too, and uint16 alike; chunks that deflate shrinks read back): nbit on a type of full
 * precision returns the buffer size deflate recorded, the chunk's uncompressed size, so
 * only 256 of deflate's 267 bytes are stored (H5Z__filter_nbit): the chunks are written
 * truncated; 2.2.0 writes and reads them back. --control: nbit, then deflate, which must
 * read back right.
 *
 * filtered-empty-read: a deflated chunked dataset with fill value 7 and incremental
 * allocation that holds no chunk yet, read whole by every rank in one collective H5Dread
 * (H5FD_MPIO_COLLECTIVE): every element must be the fill value, and the read must return.
 * --control: the same read independent.
 *
 * close-order: collective metadata operations (H5Pset_all_coll_metadata_ops,
 * H5Pset_coll_metadata_write); every rank creates groups /g0../g3, each with an attribute
 * and a chunked dataset with an attribute, in one order, and keeps them open; the odd
 * ranks then close them in the reverse order; H5Fclose must return, and the reopened
 * file hold every attribute. --control: every rank closes in one order.
 *
 * shrink-filtered: H5Dset_extent shrinking a deflated chunked dataset so that its last chunk
 * becomes an edge chunk, on ranks that get there at different times: each rank writes its
 * own chunk of /e (int) in one collective H5Dwrite, the file is flushed, and every rank
 * opens /e, the ranks but 0 after a pause of 0.3 s, calls H5Dset_extent and closes /e.
 * Every rank reads the edge chunk to fill its cut-off part (H5D__chunk_prune_fill) and
 * writes the filled chunk when it closes the dataset, where the old one was (here one byte
 * longer, extended in place), so a rank that reads it after another rank's close gets
 * the new bytes where it expects the old chunk's. HDF5 1.14.6 and 2.2.0 on MPICH 4.0.2:
 * the shrink fails on every rank but 0 ("filter returned failure during read") in every
 * run, and H5Fclose then waits forever (the probe ends the job); Open MPI 4.1.4 at times
 * (2 of 10 runs). --control: a barrier between H5Dset_extent and H5Dclose (what an
 * application can add), which must shrink and read back right.
 *
 * A probe never hangs: rank 0 gives the verdict FAULT and ends the job when a step (the
 * set-up, the read, the delete, the close) has not returned within --timeout seconds
 * (default 60, at most a day), naming the step
 * (HDF5_FAULTS_TEST_STALL=S makes rank 0 stall S seconds before the delete: its test).
 *
 * Output (rank 0): mpi-ranks, mpi-library, hdf5-library, then "PROBE: verdict: OK: ..."
 * (exit 0) or "PROBE: verdict: FAULT: ..." (exit non-zero: coll-md-cache and
 * shrink-filtered end the job with MPI_Abort, as H5Fclose would wait for collectives that
 * never match; the others exit 1). Exit 2: bad usage, or an HDF5 call before the probe's own failed.
 */
#define _DEFAULT_SOURCE /* usleep() under -std=c99 */
#include <hdf5.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ELEMENTS 500   /* of the compact dataset: a header of about 2.3 KiB */
#define CHUNKED  20000 /* elements of the chunked dataset */
#define CHUNK    10

static const char *volatile step = "the set-up"; /* what rank 0 is doing, for a hang's verdict */
static const char *probe_name    = "coll-md-cache";
static unsigned    step_seconds  = 60; /* --timeout: the longest a step may take */
static int         watching      = 0;  /* rank 0 watches the steps */

/* a step begins: it has step_seconds to return (rank 0) */
static void
begin(const char *what)
{
    step = what;
    if (watching)
        alarm(step_seconds);
}

/* before a verdict: no step is watched any more */
static void
end_watch(void)
{
    if (watching)
        alarm(0);
}

/* SIGALRM on rank 0: a step that did not return is a hang, said as the probe's verdict */
static void
on_hang(int sig)
{
    (void)sig;
    const char *parts[] = {probe_name, ": verdict: FAULT: ", step,
                           " did not return within the timeout on rank 0 (a hang)\n"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) /* write(): safe in a handler */
        if (write(STDOUT_FILENO, parts[i], strlen(parts[i])) < 0)
            _exit(3);
    _exit(1); /* the launcher ends the other ranks (srun: --kill-on-bad-exit) */
}

static void
must(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "hdf5_faults: %s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* after a FAULT whose ranks can no longer close the file (their metadata differ: H5Fclose
   would wait for collectives that never match): rank 0's verdict reaches the launcher,
   then the job ends */
static void
abort_job(int rank)
{
    if (rank == 0) {
        fflush(stdout);
        sleep(1);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* an access list of MPI-IO on every rank */
static hid_t
mpio_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    must(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) >= 0, "H5Pset_fapl_mpio");
    return fapl;
}

/* how many ranks failed (bad < 0) and the most elements any rank read wrong (bad) */
static void
tally(long bad, int *failures, long *most)
{
    int failed = bad < 0;
    MPI_Allreduce(&failed, failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&bad, most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
}

/* is element i of buf (read as type) not what the probe wrote? */
typedef int (*wrong_fn)(const void *buf, hid_t type, hsize_t i);

/* every rank reads all n elements of dataset name as type with transfer mode, HDF5's error
 * stack not printed: -1 when the read fails, else the elements wrong() rejects */
static long
read_wrong(hid_t f, const char *name, hid_t type, H5FD_mpio_xfer_t mode, hsize_t n, wrong_fn wrong)
{
    long   bad  = 0;
    herr_t read = -1;
    void  *buf  = calloc(n, H5Tget_size(type));
    hid_t  d = H5Dopen2(f, name, H5P_DEFAULT), dx = H5Pcreate(H5P_DATASET_XFER);
    must(buf && d >= 0, "H5Dopen2 of the probe's dataset");
    H5Pset_dxpl_mpio(dx, mode);
    H5E_BEGIN_TRY
    {
        read = H5Dread(d, type, H5S_ALL, H5S_ALL, dx, buf);
    }
    H5E_END_TRY
    for (hsize_t i = 0; read >= 0 && i < n; i++)
        bad += wrong(buf, type, i);
    H5Pclose(dx), H5Dclose(d);
    free(buf);
    return read < 0 ? -1 : bad;
}

/* the file reopened read-only and all n elements of dataset name read back collectively by
   every rank (read_wrong), tallied; `step` names the read for a hang's verdict */
static void
reread(const char *path, hid_t fapl, const char *name, hid_t type, hsize_t n, wrong_fn wrong,
       const char *step, int *failures, long *most)
{
    begin(step);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    must(f >= 0, "H5Fopen");
    tally(read_wrong(f, name, type, H5FD_MPIO_COLLECTIVE, n, wrong), failures, most);
    begin("H5Fclose");
    must(H5Fclose(f) >= 0, "H5Fclose");
}

/* MPI-IO with a small fixed-size metadata cache */
static hid_t
small_cache_fapl(void)
{
    hid_t               fapl = mpio_fapl();
    H5AC_cache_config_t mdc  = {.version = H5AC__CURR_CACHE_CONFIG_VERSION};
    must(H5Pget_mdc_config(fapl, &mdc) >= 0, "H5Pget_mdc_config");
    mdc.set_initial_size = 1;
    mdc.initial_size = mdc.min_size = mdc.max_size = 16 * 1024;
    must(H5Pset_mdc_config(fapl, &mdc) >= 0, "H5Pset_mdc_config");
    return fapl;
}

static void
create_datasets(const char *path, hid_t fapl)
{
    hsize_t n = ELEMENTS, cn = CHUNKED, cc = CHUNK;
    hid_t   f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    must(f >= 0, "H5Fcreate");
    hid_t s = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(dcpl, H5D_COMPACT);
    hid_t d  = H5Dcreate2(f, "/d", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hid_t cs = H5Screate_simple(1, &cn, NULL), ccpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(ccpl, 1, &cc);
    hid_t c = H5Dcreate2(f, "/c", H5T_NATIVE_INT, cs, H5P_DEFAULT, ccpl, H5P_DEFAULT);
    must(d >= 0 && c >= 0, "H5Dcreate2");
    H5Dclose(d), H5Dclose(c), H5Sclose(s), H5Sclose(cs), H5Pclose(dcpl), H5Pclose(ccpl);
    must(H5Fclose(f) >= 0, "H5Fclose");
}

/* an independent read of the first count elements of /c */
static void
read_chunks(hid_t f, hsize_t count)
{
    hsize_t start = 0;
    int    *buf   = malloc(CHUNKED * sizeof *buf);
    hid_t   c = H5Dopen2(f, "/c", H5P_DEFAULT), fs = H5Dget_space(c), ms = H5Screate_simple(1, &count, NULL);
    must(buf && c >= 0, "H5Dopen2");
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
    must(H5Dread(c, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf) >= 0, "H5Dread");
    H5Sclose(ms), H5Sclose(fs), H5Dclose(c);
    free(buf);
}

static int
coll_md_cache(const char *path, int control)
{
    int   rank, size, failed, failures = 0;
    hid_t fapl = small_cache_fapl();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    begin("the set-up");
    create_datasets(path, fapl);
    hid_t       f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    H5O_info2_t oi;
    must(f >= 0 && H5Oget_info_by_name3(f, "/d", &oi, H5O_INFO_BASIC, H5P_DEFAULT) >= 0,
         "H5Oget_info_by_name3");
    begin("the independent H5Dread");
    read_chunks(f, control || rank != 0 ? CHUNKED : CHUNK);
    MPI_Barrier(MPI_COMM_WORLD);
    begin("the collective H5Ldelete");
    if (rank == 0 && getenv("HDF5_FAULTS_TEST_STALL")) /* the watchdog's own test: rank 0 stalls */
        sleep((unsigned)atoi(getenv("HDF5_FAULTS_TEST_STALL")));
    H5E_BEGIN_TRY
    {
        failed = H5Ldelete(f, "/d", H5P_DEFAULT) < 0;
    }
    H5E_END_TRY
    MPI_Allreduce(&failed, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (failures) {
        if (rank == 0) {
            end_watch();
            printf("coll-md-cache: verdict: FAULT: a collective H5Ldelete failed on %d of %d ranks whose "
                   "metadata caches differed (MPI_Bcast of different sizes in HDF5's collective metadata "
                   "read)\n",
                   failures, size);
        }
        abort_job(rank);
    }
    begin("H5Fclose");
    must(H5Fclose(f) >= 0, "H5Fclose");
    H5Pclose(fapl);
    end_watch();
    if (rank == 0) {
        printf("coll-md-cache: verdict: OK: the collective H5Ldelete succeeded on %d ranks%s\n", size,
               control ? " (control: the same caches everywhere)" : "");
        fflush(stdout);
    }
    return 0;
}

#define FILL_N     4096
#define FILL_VALUE 7

/* ranks other than 0 write every element of /a, one independent write each */
static void
write_a(hid_t a, int rank, int size)
{
    hsize_t one = 1;
    hid_t   fs = H5Dget_space(a), ms = H5Screate_simple(1, &one, NULL);
    int64_t v = -1;
    usleep(300000);
    for (hsize_t i = (hsize_t)rank - 1; i < FILL_N; i += (hsize_t)size - 1) {
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &i, NULL, &one, NULL);
        must(H5Dwrite(a, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &v) >= 0, "H5Dwrite of /a");
    }
    H5Sclose(ms), H5Sclose(fs);
}

/* a contiguous int64 dataset of FILL_N elements, fill value FILL_VALUE written `when` */
static hid_t
contiguous(hid_t f, const char *name, H5D_fill_time_t when)
{
    hsize_t n    = FILL_N;
    int64_t fill = FILL_VALUE;
    hid_t   s = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_fill_time(dcpl, when);
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &fill);
    hid_t d = H5Dcreate2(f, name, H5T_NATIVE_INT64, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    must(d >= 0, "H5Dcreate2");
    H5Pclose(dcpl), H5Sclose(s);
    return d;
}

static int
contig_fill(const char *path, int control)
{
    int   rank, size;
    long  wrong = 0, most = 0;
    hid_t fapl = mpio_fapl();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    begin("the set-up");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    must(f >= 0, "H5Fcreate");
    hid_t a = contiguous(f, "/a", H5D_FILL_TIME_NEVER);
    must(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "H5Fflush");
    MPI_Barrier(MPI_COMM_WORLD);
    begin("the independent writes of /a");
    if (rank > 0)
        write_a(a, rank, size);
    H5Dclose(a);
    if (control)
        MPI_Barrier(MPI_COMM_WORLD);
    begin("the delete of /a and the create of /b");
    must(H5Ldelete(f, "/a", H5P_DEFAULT) >= 0, "H5Ldelete");
    hid_t b = contiguous(f, "/b", H5D_FILL_TIME_ALLOC);
    MPI_Barrier(MPI_COMM_WORLD);
    begin("the read of /b");
    int64_t *buf = malloc(FILL_N * sizeof *buf);
    must(buf && H5Dread(b, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0, "H5Dread of /b");
    for (int i = 0; i < FILL_N; i++)
        wrong += buf[i] != FILL_VALUE;
    MPI_Allreduce(&wrong, &most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    free(buf);
    begin("H5Fclose");
    H5Dclose(b), H5Pclose(fapl);
    must(H5Fclose(f) >= 0, "H5Fclose");
    end_watch();
    if (rank == 0 && most)
        printf("contig-fill: verdict: FAULT: %ld of %d elements of a new contiguous dataset are not its fill "
               "value: other ranks' earlier writes to the deleted dataset in its space landed after rank 0's "
               "fill (H5D__contig_fill: no barrier before the fill)\n",
               most, FILL_N);
    else if (rank == 0)
        printf("contig-fill: verdict: OK: the new dataset holds its fill value on %d ranks%s\n", size,
               control ? " (control: a barrier before the delete)" : "");
    fflush(stdout);
    return most ? 1 : 0;
}

#define SO_CHUNK 256 /* elements of a chunk of the scaleoffset dataset: each rank writes one */

/* element i of the scaleoffset pattern: every chunk spans -128..127, the whole int8 range */
static int
so_value(hsize_t i)
{
    return (int)(i % SO_CHUNK) - 128;
}

/* element i of a buffer of `type` (int8 or int32) set to v, or read */
static void
so_set(void *buf, hid_t type, hsize_t i, int v)
{
    if (H5Tequal(type, H5T_NATIVE_INT8) > 0)
        ((int8_t *)buf)[i] = (int8_t)v;
    else
        ((int32_t *)buf)[i] = v;
}

static int
so_get(const void *buf, hid_t type, hsize_t i)
{
    return H5Tequal(type, H5T_NATIVE_INT8) > 0 ? ((const int8_t *)buf)[i] : ((const int32_t *)buf)[i];
}

/* a chunked dataset `name` of n elements of `type` in chunks of `chunk`, created with dcpl,
   each rank writing its own chunk (buf) in one collective H5Dwrite (filtered writes are
   collective in parallel HDF5) */
static void
write_own_chunks(hid_t f, const char *name, hid_t type, hid_t dcpl, hsize_t chunk, const void *buf)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hsize_t n = (hsize_t)size * chunk, start = (hsize_t)rank * chunk;
    hid_t   s = H5Screate_simple(1, &n, NULL), ms = H5Screate_simple(1, &chunk, NULL);
    hid_t   dx = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_dxpl_mpio(dx, H5FD_MPIO_COLLECTIVE);
    hid_t d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    must(d >= 0, "H5Dcreate2");
    H5Sselect_hyperslab(s, H5S_SELECT_SET, &start, NULL, &chunk, NULL);
    must(H5Dwrite(d, type, ms, s, dx, buf) >= 0, "H5Dwrite of the probe's dataset");
    H5Dclose(d), H5Pclose(dx), H5Sclose(ms), H5Sclose(s);
}

/* /s of `type` with lossless integer scaleoffset, each rank's chunk the pattern */
static void
so_write(hid_t f, hid_t type, int rank)
{
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    void *buf  = malloc(SO_CHUNK * sizeof(int32_t));
    must(buf != NULL, "malloc");
    must(H5Pset_scaleoffset(dcpl, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT) >= 0, "H5Pset_scaleoffset");
    for (hsize_t i = 0; i < SO_CHUNK; i++)
        so_set(buf, type, i, so_value((hsize_t)rank * SO_CHUNK + i));
    write_own_chunks(f, "/s", type, dcpl, SO_CHUNK, buf);
    H5Pclose(dcpl);
    free(buf);
}

/* an element of /s that is not the pattern's */
static int
so_wrong(const void *buf, hid_t type, hsize_t i)
{
    return so_get(buf, type, i) != so_value(i);
}

static int
scaleoffset_int(const char *path, int control)
{
    int   rank, size, failures = 0;
    long  most = 0;
    hid_t type = control ? H5T_NATIVE_INT32 : H5T_NATIVE_INT8, fapl = mpio_fapl();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    begin("the set-up");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    must(f >= 0, "H5Fcreate");
    begin("the collective write of /s");
    so_write(f, type, rank);
    must(H5Fclose(f) >= 0, "H5Fclose");
    reread(path, fapl, "/s", type, (hsize_t)size * SO_CHUNK, so_wrong, "the collective read of /s", &failures,
           &most);
    H5Pclose(fapl);
    end_watch();
    if (rank == 0 && failures)
        printf("scaleoffset-int: verdict: FAULT: the read of a scaleoffset int8 dataset whose chunks span "
               "-128..127 failed on %d of %d ranks (\"filter returned failure during read\")\n",
               failures, size);
    else if (rank == 0 && most)
        printf("scaleoffset-int: verdict: FAULT: %ld of %d elements of a scaleoffset int8 dataset read back "
               "wrong\n",
               most, size * SO_CHUNK);
    else if (rank == 0)
        printf("scaleoffset-int: verdict: OK: the scaleoffset %s dataset read back right on %d ranks%s\n",
               control ? "int32" : "int8", size, control ? " (control: int32, the same values)" : "");
    fflush(stdout);
    return failures || most ? 1 : 0;
}

#define ND_CHUNK 256 /* bytes of a chunk of the nbit dataset: each rank writes one */

/* byte i of the nbit pattern: each chunk a permutation of the 256 byte values, which
   deflate cannot shrink (its output, 267 bytes, is longer than the chunk) */
static int
nd_value(hsize_t i)
{
    return (int)(i * 37) & 0xff;
}

static int
nd_wrong(const void *buf, hid_t type, hsize_t i)
{
    (void)type;
    return ((const uint8_t *)buf)[i] != nd_value(i);
}

static int
nbit_after_deflate(const char *path, int control)
{
    int      rank, size, failures = 0;
    long     most = 0;
    hid_t    fapl = mpio_fapl(), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    uint8_t *buf = malloc(ND_CHUNK);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    must(buf != NULL, "malloc");
    for (hsize_t i = 0; i < ND_CHUNK; i++)
        buf[i] = (uint8_t)nd_value((hsize_t)rank * ND_CHUNK + i);
    if (control) /* nbit first, then deflate */
        must(H5Pset_nbit(dcpl) >= 0 && H5Pset_deflate(dcpl, 1) >= 0, "H5Pset_nbit, H5Pset_deflate");
    else
        must(H5Pset_deflate(dcpl, 1) >= 0 && H5Pset_nbit(dcpl) >= 0, "H5Pset_deflate, H5Pset_nbit");
    begin("the collective write of /n");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    must(f >= 0, "H5Fcreate");
    write_own_chunks(f, "/n", H5T_NATIVE_UINT8, dcpl, ND_CHUNK, buf);
    must(H5Fclose(f) >= 0, "H5Fclose");
    reread(path, fapl, "/n", H5T_NATIVE_UINT8, (hsize_t)size * ND_CHUNK, nd_wrong,
           "the collective read of /n", &failures, &most);
    H5Pclose(dcpl), H5Pclose(fapl);
    free(buf);
    end_watch();
    const char *order = control ? "nbit then deflate" : "deflate then nbit";
    if (rank == 0 && failures)
        printf(
            "nbit-after-deflate: verdict: FAULT: the read of a uint8 dataset filtered by %s failed on %d of "
            "%d ranks (\"filter returned failure during read\")\n",
            order, failures, size);
    else if (rank == 0 && most)
        printf("nbit-after-deflate: verdict: FAULT: %ld of %d bytes of a dataset filtered by %s read back "
               "wrong\n",
               most, size * ND_CHUNK, order);
    else if (rank == 0)
        printf(
            "nbit-after-deflate: verdict: OK: the uint8 dataset filtered by %s read back right on %d ranks\n",
            order, size);
    fflush(stdout);
    return failures || most ? 1 : 0;
}

#define FE_N     3000 /* elements of the deflated dataset that holds no chunk */
#define FE_CHUNK 100

/* a deflated chunked int dataset /z, fill value FILL_VALUE, allocated incrementally: no chunk yet */
static void
fe_create(hid_t f)
{
    hsize_t n = FE_N, chunk = FE_CHUNK;
    int     fill = FILL_VALUE;
    hid_t   s = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    must(H5Pset_deflate(dcpl, 6) >= 0, "H5Pset_deflate");
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_INCR);
    hid_t d = H5Dcreate2(f, "/z", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    must(d >= 0, "H5Dcreate2 of /z");
    H5Dclose(d), H5Pclose(dcpl), H5Sclose(s);
}

/* an element of /z that is not its fill value */
static int
fe_wrong(const void *buf, hid_t type, hsize_t i)
{
    (void)type;
    return ((const int *)buf)[i] != FILL_VALUE;
}

static int
filtered_empty_read(const char *path, int control)
{
    int   rank, size, failures = 0;
    long  bad, most = 0;
    hid_t fapl = mpio_fapl();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    begin("the set-up");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    must(f >= 0, "H5Fcreate");
    fe_create(f);
    must(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "H5Fflush");
    begin(control ? "the independent read of /z" : "the collective read of /z");
    bad = read_wrong(f, "/z", H5T_NATIVE_INT, control ? H5FD_MPIO_INDEPENDENT : H5FD_MPIO_COLLECTIVE, FE_N,
                     fe_wrong);
    tally(bad, &failures, &most);
    begin("H5Fclose");
    must(H5Fclose(f) >= 0, "H5Fclose");
    H5Pclose(fapl);
    end_watch();
    if (rank == 0 && failures)
        printf(
            "filtered-empty-read: verdict: FAULT: the read of a deflated dataset that holds no chunk failed "
            "on %d of %d ranks\n",
            failures, size);
    else if (rank == 0 && most)
        printf("filtered-empty-read: verdict: FAULT: %ld of %d elements of a deflated dataset that holds no "
               "chunk are not its fill value\n",
               most, FE_N);
    else if (rank == 0)
        printf("filtered-empty-read: verdict: OK: a deflated dataset that holds no chunk read as its fill "
               "value on %d ranks%s\n",
               size, control ? " (control: an independent read)" : "");
    fflush(stdout);
    return failures || most ? 1 : 0;
}

#define CO_GROUPS 4  /* groups /g0.., each with an attribute and a chunked dataset */
#define CO_N      64 /* elements of each dataset */

/* a scalar int attribute `name` = v on obj */
static void
co_attribute(hid_t obj, const char *name, int v)
{
    hid_t s = H5Screate(H5S_SCALAR), a = H5Acreate2(obj, name, H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT);
    must(a >= 0 && H5Awrite(a, H5T_NATIVE_INT, &v) >= 0, "H5Awrite");
    H5Aclose(a), H5Sclose(s);
}

/* group /g<i> with attribute index = i and a chunked dataset d with attribute index = i;
   both left open (obj[0] the group, obj[1] the dataset) */
static void
co_setup(hid_t f, int i, hid_t obj[2])
{
    char    name[16];
    hsize_t n = CO_N, chunk = CO_N / 4;
    hid_t   s = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    snprintf(name, sizeof name, "/g%d", i);
    H5Pset_chunk(dcpl, 1, &chunk);
    obj[0] = H5Gcreate2(f, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    must(obj[0] >= 0, "H5Gcreate2");
    co_attribute(obj[0], "index", i);
    obj[1] = H5Dcreate2(obj[0], "d", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    must(obj[1] >= 0, "H5Dcreate2");
    co_attribute(obj[1], "index", i);
    H5Pclose(dcpl), H5Sclose(s);
}

/* the attributes of the reopened file that are not their group's index (-1: unreadable) */
static int
co_wrong(const char *path, hid_t fapl)
{
    int   wrong = 0;
    hid_t f     = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    for (int i = 0; i < CO_GROUPS; i++) {
        char name[16];
        int  v = -1;
        snprintf(name, sizeof name, "/g%d/d", i);
        H5E_BEGIN_TRY
        {
            hid_t a = H5Aopen_by_name(f, name, "index", H5P_DEFAULT, H5P_DEFAULT);
            if (a < 0 || H5Aread(a, H5T_NATIVE_INT, &v) < 0)
                v = -1;
            H5Aclose(a);
        }
        H5E_END_TRY
        wrong += v != i;
    }
    H5E_BEGIN_TRY
    {
        H5Fclose(f);
    }
    H5E_END_TRY
    return f < 0 ? -1 : wrong;
}

static int
close_order(const char *path, int control)
{
    int   rank, size, failed, failures = 0, wrong, most = 0;
    hid_t fapl = mpio_fapl(), obj[CO_GROUPS][2];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    begin("the set-up");
    must(H5Pset_all_coll_metadata_ops(fapl, 1) >= 0 && H5Pset_coll_metadata_write(fapl, 1) >= 0,
         "H5Pset_all_coll_metadata_ops");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    must(f >= 0, "H5Fcreate");
    begin("the creates");
    for (int i = 0; i < CO_GROUPS; i++) /* in one order on every rank, as HDF5 asks */
        co_setup(f, i, obj[i]);
    begin("the closes (odd ranks in the reverse order)");
    int reverse = !control && rank % 2;
    for (int k = 0; k < CO_GROUPS; k++) {
        int i = reverse ? CO_GROUPS - 1 - k : k;
        H5Dclose(obj[i][1]), H5Gclose(obj[i][0]);
    }
    begin("H5Fclose");
    H5E_BEGIN_TRY
    {
        failed = H5Fclose(f) < 0;
    }
    H5E_END_TRY
    MPI_Allreduce(&failed, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    begin("the read-back of the attributes");
    wrong = failures ? 0 : co_wrong(path, fapl);
    wrong = wrong < 0 ? CO_GROUPS : wrong;
    MPI_Allreduce(&wrong, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    H5Pclose(fapl);
    end_watch();
    if (rank == 0 && (failures || most))
        printf(
            "close-order: verdict: FAULT: after closes in different orders on different ranks (collective "
            "metadata operations) H5Fclose failed on %d of %d ranks, %d of %d attributes read back wrong\n",
            failures, size, most, CO_GROUPS);
    else if (rank == 0)
        printf("close-order: verdict: OK: H5Fclose returned and the file reads back right on %d ranks%s\n",
               size, control ? " (control: every rank closes in one order)" : "");
    fflush(stdout);
    return failures || most ? 1 : 0;
}

#define SF_CHUNK 256 /* elements of a chunk of the shrunk dataset: each rank writes one */

/* element i of /e: a pattern deflate shrinks, and the fill value (0) more */
static int
sf_value(hsize_t i)
{
    return (int)((i * 7) % 11) + 1;
}

static int
sf_wrong(const void *buf, hid_t type, hsize_t i)
{
    (void)type;
    return ((const int *)buf)[i] != sf_value(i);
}

/* an error stack's frame: is it the fill of the new edge chunk? (found: set to 1 if so) */
static herr_t
sf_frame(unsigned n, const H5E_error2_t *e, void *found)
{
    (void)n;
    if (e->func_name && !strcmp(e->func_name, "H5D__chunk_prune_fill"))
        *(int *)found = 1;
    return 0;
}

/* H5Dset_extent on every rank, the ranks but 0 after a pause of 0.3 s (a slow rank), then
   H5Dclose; with control a barrier between the two. The ranks that failed it; a rank
   whose shrink failed elsewhere than in the edge chunk's fill ends the job (exit 2). */
static int
sf_shrink(hid_t f, hsize_t n, int rank, int control)
{
    int    failed, failures = 0;
    herr_t rc = -1;
    hid_t  d  = H5Dopen2(f, "/e", H5P_DEFAULT);
    must(d >= 0, "H5Dopen2 of /e");
    if (rank > 0)
        usleep(300000);
    H5E_BEGIN_TRY
    {
        rc = H5Dset_extent(d, &n);
    }
    H5E_END_TRY
    int in_the_fill = 0;
    if (rc < 0 && H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, sf_frame, &in_the_fill) >= 0 && !in_the_fill) {
        H5Eprint2(H5E_DEFAULT, stderr);
        must(0, "H5Dset_extent of /e (not in the fill of the edge chunk)");
    }
    if (control)
        MPI_Barrier(MPI_COMM_WORLD);
    H5Dclose(d);
    failed = rc < 0;
    MPI_Allreduce(&failed, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return failures;
}

static int
shrink_filtered(const char *path, int control)
{
    int   rank, size, failures = 0;
    long  most = 0;
    hid_t fapl = mpio_fapl(), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int  *buf = malloc(SF_CHUNK * sizeof *buf);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    must(buf != NULL && H5Pset_deflate(dcpl, 1) >= 0, "H5Pset_deflate");
    for (hsize_t i = 0; i < SF_CHUNK; i++)
        buf[i] = sf_value((hsize_t)rank * SF_CHUNK + i);
    begin("the collective write of /e");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    must(f >= 0, "H5Fcreate");
    write_own_chunks(f, "/e", H5T_NATIVE_INT, dcpl, SF_CHUNK, buf);
    must(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "H5Fflush");
    hsize_t n = (hsize_t)size * SF_CHUNK - SF_CHUNK / 2; /* the last chunk becomes an edge chunk */
    begin("H5Dset_extent of /e");
    failures = sf_shrink(f, n, rank, control);
    end_watch();
    if (failures) {
        if (rank == 0)
            printf(
                "shrink-filtered: verdict: FAULT: H5Dset_extent shrinking a deflated dataset failed on %d of "
                "%d ranks (\"filter returned failure during read\": a rank read the edge chunk while "
                "another rank, done with the shrink, wrote it)\n",
                failures, size);
        abort_job(rank);
    }
    begin("H5Fclose");
    must(H5Fclose(f) >= 0, "H5Fclose");
    reread(path, fapl, "/e", H5T_NATIVE_INT, n, sf_wrong, "the collective read of /e", &failures, &most);
    H5Pclose(dcpl), H5Pclose(fapl);
    free(buf);
    end_watch();
    if (rank == 0 && (failures || most))
        printf("shrink-filtered: verdict: FAULT: after the shrink the read of /e failed on %d of %d ranks, "
               "%ld of %llu elements read back wrong\n",
               failures, size, most, (unsigned long long)n);
    else if (rank == 0)
        printf(
            "shrink-filtered: verdict: OK: the deflated dataset shrank and read back right on %d ranks%s\n",
            size, control ? " (control: a barrier between H5Dset_extent and H5Dclose)" : "");
    fflush(stdout);
    return failures || most ? 1 : 0;
}

/* the probes: name, function */
static const struct {
    const char *name;
    int (*run)(const char *path, int control);
} PROBES[] = {{"coll-md-cache", coll_md_cache},
              {"contig-fill", contig_fill},
              {"scaleoffset-int", scaleoffset_int},
              {"nbit-after-deflate", nbit_after_deflate},
              {"filtered-empty-read", filtered_empty_read},
              {"close-order", close_order},
              {"shrink-filtered", shrink_filtered}};

/* which MPI and HDF5 ran, on how many ranks (reframe-tests/lib/h5checks/mpi.py) */
static void
banner(int size)
{
    char     library[MPI_MAX_LIBRARY_VERSION_STRING];
    int      len = 0;
    unsigned maj = 0, min = 0, rel = 0;
    MPI_Get_library_version(library, &len);
    H5get_libversion(&maj, &min, &rel);
    printf("mpi-ranks: %d\nmpi-library: %s\nhdf5-library: %u.%u.%u\n", size, strtok(library, "\n"), maj, min,
           rel);
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int    control = 0, bad = argc < 3 || size < 2, probe = -1;
    size_t n = sizeof PROBES / sizeof *PROBES;
    for (size_t i = 0; i < n && !bad; i++)
        probe = !strcmp(argv[1], PROBES[i].name) ? (int)i : probe;
    bad = bad || probe < 0;
    for (int i = 3; i < argc && !bad; i++) {
        char         *end = NULL;
        unsigned long s   = 0;
        if (!strcmp(argv[i], "--control"))
            control = 1;
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc && (s = strtoul(argv[++i], &end, 10)) > 0 &&
                 *end == '\0' && s <= 86400)
            step_seconds = (unsigned)s;
        else
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "usage: mpiexec -n N (N >= 2) hdf5_faults "
                        "coll-md-cache|contig-fill|scaleoffset-int|nbit-after-deflate|filtered-empty-read|"
                        "close-order|shrink-filtered FILE [--control] [--timeout SECONDS]\n");
        MPI_Finalize();
        return 2;
    }
    probe_name = PROBES[probe].name;
    if (rank == 0) {
        banner(size);
        signal(SIGALRM, on_hang);
        watching = 1;
    }
    int rc = PROBES[probe].run(argv[2], control);
    MPI_Finalize();
    return rc;
}
