/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpiio_faults - does this MPI-IO lose disjoint independent writes? Does it write process
 * memory into files? Does a collective read return what the file holds? Each probe runs
 * its pattern several times (faults may be intermittent) on a fresh file.
 *
 *   mpiexec -n 4 mpiio_faults lost-writes FILE [--runs N] [--api mpiio|hdf5] [--order barrier|flush]
 *   mpiexec -n 4 mpiio_faults never-written FILE [--runs N] [--transfer collective|independent]
 *   mpiexec -n 4 mpiio_faults unread-tail FILE [--runs N] [--api mpiio|hdf5]
 *
 * lost-writes: 4096 bytes (with --api hdf5 one 16x16x16 uint8 chunk of a dataset) written
 * in 3 phases. In a phase every byte has one writer, drawn at random, and each rank writes
 * its bytes in one independent noncontiguous write (MPI_File_write_at through a file view;
 * H5Dwrite of a point selection). Between phases the writers are ordered as MPI-IO's
 * consistency semantics ask: MPI_File_sync, MPI_Barrier, MPI_File_sync (H5Fflush and
 * MPI_Barrier). Every rank then reads every byte back: each must hold its last value.
 * --order flush leaves the barrier out (H5Fflush alone: HDF5 does not order the ranks
 * then): a program outside MPI-IO's semantics, whose lost bytes are no fault of MPI-IO.
 *
 * never-written: every rank writes 5000 pieces of 8 bytes, one every 16 bytes, beyond the
 * end of the file, twice, in one collective (or independent) write each. The 8-byte gaps
 * are never written and must read as zeros, as any file reads where nothing was written.
 * Gaps holding one constant byte value are undefined bytes of the MPI-IO layer (ROMIO's
 * data-sieving buffer starts as 0xff); gaps holding varying bytes are process memory.
 *
 * unread-tail: rank 0 writes a file of 16 KiB (a dataset of as many bytes with --api
 * hdf5), the ranks are ordered (MPI_File_sync, MPI_Barrier, MPI_File_sync; H5Fflush and
 * MPI_Barrier), and each reads a range of it in one collective read (MPI_File_read_at_all;
 * H5Dread of a hyperslab) into a buffer filled with 0xa5 first: rank 1 all of it, the
 * last rank [6K, 8K), which starts after every other range and ends before most, the
 * others [4K, 12K). Every byte read must be the file's (the MPI-IO run also checks that
 * the status counts what was asked). Needs 3 ranks or more: with 2, OMPIO reads each
 * rank's range alone (fcoll individual), which is not the pattern ("not asked").
 *
 * Output (rank 0): mpi-ranks, mpi-library, hdf5-library, a line per run and a verdict:
 *   lost-writes: run 1: 0 of 4096 bytes lost
 *   lost-writes: verdict: ok in 5 runs | FAULT: bytes lost in R of 5 runs
 *   never-written: run 1: 160000 bytes never written: 160000 zero, 0 constant, 0 varying
 *   never-written: verdict: zero in 5 runs | constant 0xff in R of 5 runs | FAULT: ...
 *   unread-tail: run 1: 0 bytes read wrong
 *   unread-tail: verdict: ok in 5 runs | FAULT: ... in R of 5 runs
 * Exit status 0 when the probe ran (whatever it found), 1 on an error, 2 on bad arguments.
 * MPIIO_FAULTS_TEST_INJECT=lost-writes,never-written,unread-tail (any of them) shows the
 * fault on purpose in run 1 (the check's own test): rank 0 leaves out its last write,
 * writes an address into a gap, or zeroes the last byte it read.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REGION 4096 /* lost-writes: bytes, one 16x16x16 uint8 chunk */
#define PHASES 3
#define PIECE 8 /* never-written: bytes written, then as many never written */
#define PIECES 5000
#define TAIL_UNIT 4096 /* unread-tail: a quarter of the file, in bytes */

typedef struct {
    const char *probe, *path, *api, *order, *transfer;
    int         runs, rank, size;
} opts_t;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* MPIIO_FAULTS_TEST_INJECT names this probe (a comma-separated list): show its fault in run 1 */
static int injected(const char *probe, int run, int rank)
{
    const char *inject = getenv("MPIIO_FAULTS_TEST_INJECT");
    size_t      n      = strlen(probe);
    for (const char *p = inject; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, probe, n) && (p[n] == ',' || p[n] == '\0'))
            return run == 0 && rank == 0;
    return 0;
}

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "mpiio_faults: %s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* ------------------------------------------------------------- lost-writes */

/* the writer and value of byte i in a phase of a run */
static int     owner(int run, int phase, uint64_t i, int size) { return (int)(mix((uint64_t)run << 40 ^ (uint64_t)phase << 32 ^ i) % (uint64_t)size); }
static uint8_t value(int run, int phase, uint64_t i) { return (uint8_t)(mix(~((uint64_t)run << 40 ^ (uint64_t)phase << 32 ^ i)) % 255 + 1); }

/* this rank's bytes of a phase: offsets and values; their number */
static int mine(const opts_t *o, int run, int phase, MPI_Aint *disp, uint8_t *val)
{
    int k = 0;
    for (uint64_t i = 0; i < REGION; i++)
        if (owner(run, phase, i, o->size) == o->rank) {
            disp[k]  = (MPI_Aint)i;
            val[k++] = value(run, phase, i);
        }
    return k;
}

static void phase_mpiio(MPI_File fh, const MPI_Aint *disp, const uint8_t *val, int k)
{
    int         *len = malloc((size_t)(k ? k : 1) * sizeof *len);
    MPI_Datatype ft;
    for (int j = 0; j < k; j++)
        len[j] = 1;
    MPI_Type_create_hindexed(k, len, disp, MPI_BYTE, &ft);
    MPI_Type_commit(&ft);
    check(MPI_File_set_view(fh, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL) == MPI_SUCCESS, "MPI_File_set_view");
    check(MPI_File_write_at(fh, 0, val, k, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_File_write_at");
    check(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL) == MPI_SUCCESS, "MPI_File_set_view");
    MPI_Type_free(&ft);
    free(len);
}

static void phase_hdf5(hid_t d, const MPI_Aint *disp, const uint8_t *val, int k)
{
    hsize_t  dims[3] = {16, 16, 16}, n = (hsize_t)(k ? k : 1);
    hsize_t *pts = malloc(3 * n * sizeof *pts);
    hid_t    fs = H5Screate_simple(3, dims, NULL), ms = H5Screate_simple(1, &n, NULL);
    for (int j = 0; j < k; j++) {
        pts[3 * j]     = (hsize_t)disp[j] / 256;
        pts[3 * j + 1] = (hsize_t)disp[j] / 16 % 16;
        pts[3 * j + 2] = (hsize_t)disp[j] % 16;
    }
    if (k)
        H5Sselect_elements(fs, H5S_SELECT_SET, (size_t)k, pts);
    else {
        H5Sselect_none(fs);
        H5Sselect_none(ms);
    }
    check(H5Dwrite(d, H5T_NATIVE_UINT8, ms, fs, H5P_DEFAULT, val) >= 0, "H5Dwrite");
    H5Sclose(ms);
    H5Sclose(fs);
    free(pts);
}

static hid_t create_hdf5(const opts_t *o, hid_t *file)
{
    hsize_t dims[3] = {16, 16, 16};
    hid_t   fapl = H5Pcreate(H5P_FILE_ACCESS), dcpl = H5Pcreate(H5P_DATASET_CREATE), s = H5Screate_simple(3, dims, NULL);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    H5Pset_chunk(dcpl, 3, dims);
    *file = H5Fcreate(o->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check(*file >= 0, "H5Fcreate");
    hid_t d = H5Dcreate2(*file, "chunk", H5T_NATIVE_UINT8, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(d >= 0, "H5Dcreate2");
    H5Sclose(s);
    H5Pclose(dcpl);
    H5Pclose(fapl);
    return d;
}

/* one run: the bytes lost (the most any rank sees) */
static long lost_writes_run(const opts_t *o, int run)
{
    MPI_Aint *disp = malloc(REGION * sizeof *disp);
    uint8_t  *val = malloc(REGION), *back = malloc(REGION);
    int       hdf5 = !strcmp(o->api, "hdf5");
    MPI_File  fh   = MPI_FILE_NULL;
    hid_t     file = -1, d = -1;
    if (hdf5)
        d = create_hdf5(o, &file);
    else
        check(MPI_File_open(MPI_COMM_WORLD, o->path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
                  MPI_SUCCESS, "MPI_File_open");
    for (int phase = 0; phase < PHASES; phase++) {
        int k = mine(o, run, phase, disp, val);
        if (phase == PHASES - 1 && injected("lost-writes", run, o->rank))
            k = 0;
        if (hdf5) {
            phase_hdf5(d, disp, val, k);
            check(H5Fflush(file, H5F_SCOPE_GLOBAL) >= 0, "H5Fflush");
            if (!strcmp(o->order, "barrier"))
                MPI_Barrier(MPI_COMM_WORLD);
        }
        else {
            phase_mpiio(fh, disp, val, k);
            MPI_File_sync(fh);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_File_sync(fh);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (hdf5)
        check(H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0, "H5Dread");
    else
        check(MPI_File_read_at(fh, 0, back, REGION, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_File_read_at");
    long lost = 0, most = 0;
    for (uint64_t i = 0; i < REGION; i++)
        lost += back[i] != value(run, PHASES - 1, i);
    MPI_Allreduce(&lost, &most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (hdf5) {
        H5Dclose(d);
        H5Fclose(file);
    }
    else
        MPI_File_close(&fh);
    free(disp);
    free(val);
    free(back);
    return most;
}

static void lost_writes(const opts_t *o)
{
    int faulty = 0;
    for (int run = 0; run < o->runs; run++) {
        if (o->rank == 0)
            MPI_File_delete(o->path, MPI_INFO_NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        long lost = lost_writes_run(o, run);
        faulty += lost > 0;
        if (o->rank == 0)
            printf("lost-writes: run %d: %ld of %d bytes lost\n", run + 1, lost, REGION);
    }
    if (o->rank == 0 && faulty && !strcmp(o->order, "flush"))
        printf("lost-writes: verdict: bytes lost in %d of %d runs (%s, flush, %d ranks: H5Fflush alone does not "
               "order the ranks, the program is outside MPI-IO's semantics)\n", faulty, o->runs, o->api, o->size);
    else if (o->rank == 0 && faulty)
        printf("lost-writes: verdict: FAULT: bytes lost in %d of %d runs (%s, %s, %d ranks)\n", faulty, o->runs,
               o->api, o->order, o->size);
    else if (o->rank == 0)
        printf("lost-writes: verdict: ok in %d runs (%s, %s, %d ranks)\n", o->runs, o->api, o->order, o->size);
}

/* ---------------------------------------------------------- never-written */

typedef struct {
    long never, zero, constant, varying;
    int  value; /* the constant byte, -1 if none yet */
    char sample[24];
} gaps_t;

/* the gaps of a file written by never_written_run: zero, one constant value, or varying */
static void classify(const uint8_t *b, long len, gaps_t *g)
{
    long nonzero = 0;
    memset(g, 0, sizeof *g);
    g->value = -1;
    for (long i = 0; i < len; i++) {
        if (i % (2 * PIECE) < PIECE)
            continue;
        g->never++;
        if (!b[i]) {
            g->zero++;
            continue;
        }
        if (!nonzero++)
            for (int k = 0; k < PIECE && i - i % PIECE + k < len; k++)
                snprintf(g->sample + 2 * k, 3, "%02x", b[i - i % PIECE + k]);
        if (g->value < 0)
            g->value = b[i];
        else if (g->value != b[i])
            g->value = 256; /* more than one value */
    }
    if (g->value == 256)
        g->varying = nonzero;
    else
        g->constant = nonzero;
}

static void never_written_run(const opts_t *o, int run, gaps_t *g)
{
    MPI_File     fh;
    MPI_Datatype ft;
    MPI_Offset   region = (MPI_Offset)2 * PIECE * PIECES;
    uint8_t     *buf = malloc(PIECE * PIECES);
    memset(buf, 0x11 + o->rank, PIECE * PIECES);
    check(MPI_File_open(MPI_COMM_WORLD, o->path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "MPI_File_open");
    MPI_Type_vector(PIECES, PIECE, 2 * PIECE, MPI_BYTE, &ft);
    MPI_Type_commit(&ft);
    for (int round = 0; round < 2; round++) {
        MPI_File_set_view(fh, (round * o->size + o->rank) * region, MPI_BYTE, ft, "native", MPI_INFO_NULL);
        int rc = !strcmp(o->transfer, "collective")
                     ? MPI_File_write_at_all(fh, 0, buf, PIECE * PIECES, MPI_BYTE, MPI_STATUS_IGNORE)
                     : MPI_File_write_at(fh, 0, buf, PIECE * PIECES, MPI_BYTE, MPI_STATUS_IGNORE);
        check(rc == MPI_SUCCESS, "MPI_File_write_at(_all)");
    }
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    if (injected("never-written", run, o->rank)) {
        void *stack[1] = {&fh}; /* an address: what process memory looks like */
        MPI_File_write_at(fh, PIECE, stack, PIECE, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    MPI_Type_free(&ft);
    MPI_File_close(&fh);
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (o->rank == 0) {
        long     len = 2 * (long)o->size * region;
        uint8_t *b   = calloc((size_t)len, 1);
        FILE    *f   = fopen(o->path, "rb");
        check(f && fread(b, 1, (size_t)len, f) <= (size_t)len, "reading the file back");
        fclose(f);
        classify(b, len, g);
        free(b);
    }
}

static void never_written(const opts_t *o)
{
    int    constant = 0, varying = 0, value = -1;
    char   sample[24] = "";
    gaps_t g;
    for (int run = 0; run < o->runs; run++) {
        if (o->rank == 0)
            MPI_File_delete(o->path, MPI_INFO_NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        never_written_run(o, run, &g);
        if (o->rank != 0)
            continue;
        printf("never-written: run %d: %ld bytes never written: %ld zero, %ld constant, %ld varying\n", run + 1,
               g.never, g.zero, g.constant, g.varying);
        constant += g.constant > 0;
        varying += g.varying > 0;
        if (g.constant)
            value = g.value;
        if (g.varying && !sample[0])
            memcpy(sample, g.sample, sizeof sample);
    }
    if (o->rank != 0)
        return;
    if (varying)
        printf("never-written: verdict: FAULT: process memory in never-written bytes in %d of %d runs (%s, %d "
               "ranks; e.g. 8 bytes %s)\n", varying, o->runs, o->transfer, o->size, sample);
    else if (constant)
        printf("never-written: verdict: constant 0x%02x in %d of %d runs (undefined bytes, not memory; %s, %d ranks)\n",
               value, constant, o->runs, o->transfer, o->size);
    else
        printf("never-written: verdict: zero in %d runs (%s, %d ranks)\n", o->runs, o->transfer, o->size);
}

/* ------------------------------------------------------------ unread-tail */

/* rank r's range of the unread-tail file, in bytes: rank 1 all of it, the last rank a
 * short range that starts after every other rank's start, the others the middle half */
static void tail_range(const opts_t *o, long *first, long *end)
{
    int last = o->rank == o->size - 1, one = o->rank == 1;
    *first   = one ? 0 : last ? 3 * TAIL_UNIT / 2 : TAIL_UNIT;
    *end     = one ? 4 * TAIL_UNIT : last ? 2 * TAIL_UNIT : 3 * TAIL_UNIT;
}

static uint8_t tail_byte(int run, long i) { return (uint8_t)(mix((uint64_t)run << 40 ^ (uint64_t)i) % 255 + 1); }

/* rank 0 writes the file (MPI_File_write_at; H5Dwrite of a dataset), the ranks are
 * ordered, then each reads its range in one collective read; the MPI-IO run's status
 * count in *counted (n for the HDF5 run) */
static void tail_read(const opts_t *o, int run, uint8_t *back, long first, long n, long *counted)
{
    *counted = n;
    uint8_t *all = malloc(4 * TAIL_UNIT);
    for (long i = 0; i < 4 * TAIL_UNIT; i++)
        all[i] = tail_byte(run, i);
    if (!strcmp(o->api, "hdf5")) {
        hsize_t size = 4 * TAIL_UNIT, at = (hsize_t)first, count = (hsize_t)n;
        hid_t   fapl = H5Pcreate(H5P_FILE_ACCESS), dx = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
        H5Pset_dxpl_mpio(dx, H5FD_MPIO_COLLECTIVE);
        hid_t f = H5Fcreate(o->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl), fs = H5Screate_simple(1, &size, NULL);
        hid_t d = H5Dcreate2(f, "bytes", H5T_NATIVE_UINT8, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        check(f >= 0 && d >= 0, "H5Fcreate, H5Dcreate2");
        if (o->rank != 0)
            H5Sselect_none(fs);
        hid_t ms = H5Scopy(fs);
        check(H5Dwrite(d, H5T_NATIVE_UINT8, ms, fs, H5P_DEFAULT, all) >= 0, "H5Dwrite");
        check(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "H5Fflush");
        MPI_Barrier(MPI_COMM_WORLD);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at, NULL, &count, NULL);
        H5Sclose(ms);
        ms = H5Screate_simple(1, &count, NULL);
        check(H5Dread(d, H5T_NATIVE_UINT8, ms, fs, dx, back) >= 0, "H5Dread");
        H5Sclose(ms), H5Sclose(fs), H5Dclose(d), H5Fclose(f), H5Pclose(dx), H5Pclose(fapl);
    }
    else {
        MPI_File fh;
        check(MPI_File_open(MPI_COMM_WORLD, o->path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
                  MPI_SUCCESS, "MPI_File_open");
        if (o->rank == 0)
            check(MPI_File_write_at(fh, 0, all, 4 * TAIL_UNIT, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS,
                  "MPI_File_write_at");
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_sync(fh);
        MPI_Status st;
        int        got = 0;
        check(MPI_File_read_at_all(fh, first, back, (int)n, MPI_BYTE, &st) == MPI_SUCCESS, "MPI_File_read_at_all");
        MPI_Get_count(&st, MPI_BYTE, &got);
        *counted = got;
        MPI_File_close(&fh);
    }
    free(all);
}

/* one run: the bytes of the ranges read wrong, summed over the ranks; *short_counts:
 * whether a status counted fewer bytes than asked (on any rank) */
static long unread_tail_run(const opts_t *o, int run, int *short_counts)
{
    long first, end, wrong = 0, total = 0, counted;
    int  shorter;
    tail_range(o, &first, &end);
    uint8_t *back = malloc((size_t)(end - first));
    memset(back, 0xa5, (size_t)(end - first));
    tail_read(o, run, back, first, end - first, &counted);
    shorter = counted < end - first;
    MPI_Allreduce(&shorter, short_counts, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (injected("unread-tail", run, o->rank))
        back[end - first - 1] = 0;
    for (long i = first; i < end; i++)
        wrong += back[i - first] != tail_byte(run, i);
    MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    free(back);
    return total;
}

static void unread_tail(const opts_t *o)
{
    int  faulty = 0, short_counts = 0, counted_short = 0;
    long most = 0;
    if (o->size < 3) {
        if (o->rank == 0)
            printf("unread-tail: verdict: not asked (the pattern needs 3 ranks or more, %d here)\n", o->size);
        return;
    }
    for (int run = 0; run < o->runs; run++) {
        if (o->rank == 0)
            MPI_File_delete(o->path, MPI_INFO_NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        long wrong = unread_tail_run(o, run, &short_counts);
        faulty += wrong > 0;
        counted_short += wrong > 0 && short_counts;
        most = wrong > most ? wrong : most;
        if (o->rank == 0)
            printf("unread-tail: run %d: %ld bytes read wrong\n", run + 1, wrong);
    }
    if (o->rank == 0 && faulty)
        printf("unread-tail: verdict: FAULT: a collective read returned bytes that are not the file's in %d of %d "
               "runs (%s, %d ranks; up to %ld bytes; %s)\n", faulty, o->runs, o->api, o->size, most,
               !strcmp(o->api, "hdf5") ? "HDF5 reported success"
               : counted_short         ? "the status counted fewer bytes"
                                       : "the status counted every byte as read");
    else if (o->rank == 0)
        printf("unread-tail: verdict: ok in %d runs (%s, %d ranks)\n", o->runs, o->api, o->size);
}

/* ------------------------------------------------------------------ main */

static int parse(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.api = "mpiio", .order = "barrier", .transfer = "collective", .runs = 5};
    if (argc < 3 || (strcmp(argv[1], "lost-writes") && strcmp(argv[1], "never-written") &&
                     strcmp(argv[1], "unread-tail")))
        return -1;
    o->probe = argv[1];
    o->path  = argv[2];
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--runs"))
            o->runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--api"))
            o->api = argv[i + 1];
        else if (!strcmp(argv[i], "--order"))
            o->order = argv[i + 1];
        else if (!strcmp(argv[i], "--transfer"))
            o->transfer = argv[i + 1];
        else
            return -1;
    }
    if ((argc - 3) % 2 || o->runs < 1 || (strcmp(o->api, "mpiio") && strcmp(o->api, "hdf5")) ||
        (strcmp(o->order, "barrier") && strcmp(o->order, "flush")) ||
        (strcmp(o->transfer, "collective") && strcmp(o->transfer, "independent")))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o;
    char   library[MPI_MAX_LIBRARY_VERSION_STRING];
    int    len;
    unsigned maj, min, rel;
    int    rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse(argc, argv, &o) < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiio_faults lost-writes FILE [--runs N] [--api mpiio|hdf5] [--order barrier|flush]\n"
                            "       mpiio_faults never-written FILE [--runs N] [--transfer collective|independent]\n"
                            "       mpiio_faults unread-tail FILE [--runs N] [--api mpiio|hdf5]\n");
        MPI_Finalize();
        return 2;
    }
    o.rank = rank;
    o.size = size;
    MPI_Get_library_version(library, &len);
    H5get_libversion(&maj, &min, &rel);
    if (o.rank == 0)
        printf("mpi-ranks: %d\nmpi-library: %s\nhdf5-library: %u.%u.%u\n", o.size, strtok(library, "\n"), maj, min, rel);
    if (!strcmp(o.probe, "lost-writes"))
        lost_writes(&o);
    else if (!strcmp(o.probe, "unread-tail"))
        unread_tail(&o);
    else
        never_written(&o);
    if (o.rank == 0)
        MPI_File_delete(o.path, MPI_INFO_NULL);
    MPI_Finalize();
    return 0;
}
