/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_dropin - legal parallel HDF5 calls a drop-in driver must carry out as MPI-IO does,
 * each judged against the program's own model (every element's value is a function of
 * its dataset and position; every element is written, so whole files compare too):
 *   - collective transfers with selection I/O off (HDF5 then passes MPI derived
 *     datatypes): a band of rows from a hyperslab in memory, a strided hyperslab of a
 *     chunked dataset whose other columns are written independently, a point selection
 *     in reverse order, a memory type that needs conversion;
 *   - one H5Dwrite_multi over a compact, a contiguous and a chunked dataset;
 *   - collective reads right after the writes (selection I/O off, and chunks that fit
 *     the chunk cache), and again after a close and a read-only open;
 *   - the API calls HDF5 routes to MPI drivers: H5Fset/get_mpi_atomicity,
 *     H5Fget_vfd_handle: a pointer to an MPI_File that MPI accepts (MPI-IO's own, or a
 *     driver's handle that is not the file's bytes: size 0, writes through it fail).
 * Usage: mpiexec -n N vfd_dropin FILE [mpio] [--variant 0|1|2]
 *   mpio: HDF5's MPI-IO driver; else the default file access list (HDF5_DRIVER).
 *   variant 1: alignment and collective metadata; 2: the latest file format.
 * In an MPMD job (MPI_APPNUM > 0) the program's ranks are those of its own program.
 * Prints "vfd_dropin: ok (...)" and exits 0, or names the first wrong element, exit 1.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS_U8  37
#define COLS_F64 24
#define COLS_PT  9

static MPI_Comm comm;
static int      rank, nranks, rows;
static long     checks;

static void
fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "vfd_dropin: rank %d: ", rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CHECK(x)                                                                                             \
    do {                                                                                                     \
        if ((x) < 0)                                                                                         \
            fail("%s failed (line %d)", #x, __LINE__);                                                       \
    } while (0)

/* the model: the value of element (i, j) of dataset d */
static double
model(int d, int i, int j)
{
    return (double)((d * 7919 + i * 131 + j * 17) % 251);
}

static int
band_lo(int r)
{
    return r * rows / nranks;
}
static int
band_hi(int r)
{
    return (r + 1) * rows / nranks;
}

static hid_t
dxpl_coll(int selection_off)
{
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
    if (selection_off)
        CHECK(H5Pset_selection_io(dxpl, H5D_SELECTION_IO_MODE_OFF));
    return dxpl;
}

static hid_t
make(hid_t file, const char *name, hid_t type, int cols, H5D_layout_t layout, int chunk_rows, int chunk_cols)
{
    hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols}, max[2] = {H5S_UNLIMITED, (hsize_t)cols};
    hsize_t chunk[2] = {(hsize_t)chunk_rows, (hsize_t)chunk_cols};
    hid_t   dcpl     = H5Pcreate(H5P_DATASET_CREATE);
    CHECK(H5Pset_layout(dcpl, layout));
    if (layout == H5D_CHUNKED)
        CHECK(H5Pset_chunk(dcpl, 2, chunk));
    hid_t space = H5Screate_simple(2, dims, layout == H5D_CHUNKED ? max : NULL);
    hid_t d     = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(d);
    H5Sclose(space);
    H5Pclose(dcpl);
    return d;
}

/* element kinds of the model (its values, 0..250, fit every one) */
typedef enum { U8, I16, I32, F32, F64 } kind_t;
static const size_t ksize[] = {1, 2, 4, 4, 8};

static hid_t
ktype(kind_t k)
{
    const hid_t t[] = {H5T_NATIVE_UINT8, H5T_NATIVE_INT16, H5T_NATIVE_INT32, H5T_NATIVE_FLOAT,
                       H5T_NATIVE_DOUBLE};
    return t[k];
}

static void
kset(kind_t k, void *at, double v)
{
    switch (k) {
        case U8:
            *(unsigned char *)at = (unsigned char)v;
            break;
        case I16:
            *(short *)at = (short)v;
            break;
        case I32:
            *(int *)at = (int)v;
            break;
        case F32:
            *(float *)at = (float)v;
            break;
        case F64:
            *(double *)at = v;
            break;
    }
}

static double
kget(kind_t k, const void *at)
{
    switch (k) {
        case U8:
            return *(const unsigned char *)at;
        case I16:
            return *(const short *)at;
        case I32:
            return *(const int *)at;
        case F32:
            return *(const float *)at;
        default:
            return *(const double *)at;
    }
}

/* a whole-dataset buffer of dataset d's model values */
static void *
model_buf(int d, int cols, kind_t k)
{
    char *buf = calloc((size_t)rows * cols, ksize[k]);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            kset(k, buf + ((size_t)i * cols + j) * ksize[k], model(d, i, j));
    return buf;
}

/* read the whole of dataset `name` (model number d) on every rank and judge it */
static void
judge(hid_t file, const char *name, int d, int cols, kind_t k, hid_t dxpl, const char *when)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    CHECK(H5Pset_chunk_cache(dapl, 521, 64 << 20, 1.0)); /* every chunk fits the cache */
    hid_t dset = H5Dopen2(file, name, dapl);
    CHECK(dset);
    char *buf = calloc((size_t)rows * cols, ksize[k]);
    memset(buf, 0xA5, (size_t)rows * cols * ksize[k]);
    CHECK(H5Dread(dset, ktype(k), H5S_ALL, H5S_ALL, dxpl, buf));
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            double got = kget(k, buf + ((size_t)i * cols + j) * ksize[k]);
            if (got != model(d, i, j))
                fail("%s: %s[%d][%d] is %g, the model says %g", when, name, i, j, got, model(d, i, j));
            checks++;
        }
    free(buf);
    H5Dclose(dset);
    H5Pclose(dapl);
}

/* this rank's band of rows, from a whole-dataset buffer (a hyperslab in memory too) */
static void
write_band(hid_t dset, kind_t k, int d, int cols, hid_t dxpl)
{
    hsize_t dims[2]  = {(hsize_t)rows, (hsize_t)cols};
    hsize_t start[2] = {(hsize_t)band_lo(rank), 0},
            count[2] = {(hsize_t)(band_hi(rank) - band_lo(rank)), (hsize_t)cols};
    hid_t fs = H5Dget_space(dset), ms = H5Screate_simple(2, dims, NULL);
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    CHECK(H5Sselect_hyperslab(ms, H5S_SELECT_SET, start, NULL, count, NULL));
    void *buf = model_buf(d, cols, k);
    CHECK(H5Dwrite(dset, ktype(k), ms, fs, dxpl, buf));
    free(buf);
    H5Sclose(fs);
    H5Sclose(ms);
}

/* this rank's band of columns, from a buffer of just that band: the memory is
 * contiguous, the file selection is not (plain bytes against a derived file type) */
static void
write_columns(hid_t dset, int d, hid_t dxpl)
{
    int      lo = rank * COLS_U8 / nranks, w = (rank + 1) * COLS_U8 / nranks - lo;
    hsize_t  start[2] = {0, (hsize_t)lo}, count[2] = {(hsize_t)rows, (hsize_t)w};
    uint8_t *buf = malloc((size_t)rows * (size_t)w + 1);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < w; j++)
            buf[(size_t)i * w + j] = (uint8_t)model(d, i, lo + j);
    hid_t fs = H5Dget_space(dset), ms = H5Screate_simple(2, count, NULL);
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    CHECK(H5Dwrite(dset, H5T_NATIVE_UINT8, ms, fs, dxpl, buf));
    free(buf);
    H5Sclose(fs);
    H5Sclose(ms);
}

/* the even columns of this rank's band collectively (a strided hyperslab), the odd ones
 * independently, row by row */
static void
write_strided(hid_t dset, int d, hid_t coll)
{
    hsize_t dims[2]  = {(hsize_t)rows, COLS_F64};
    hsize_t start[2] = {(hsize_t)band_lo(rank), 0}, stride[2] = {1, 2};
    hsize_t count[2] = {(hsize_t)(band_hi(rank) - band_lo(rank)), COLS_F64 / 2};
    hid_t   fs = H5Dget_space(dset), ms = H5Screate_simple(2, dims, NULL);
    double *buf = model_buf(d, COLS_F64, F64);
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, stride, count, NULL));
    CHECK(H5Sselect_hyperslab(ms, H5S_SELECT_SET, start, stride, count, NULL));
    CHECK(H5Dwrite(dset, H5T_NATIVE_DOUBLE, ms, fs, coll, buf));
    start[1] = 1;
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, stride, count, NULL));
    CHECK(H5Sselect_hyperslab(ms, H5S_SELECT_SET, start, stride, count, NULL));
    CHECK(H5Dwrite(dset, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf));
    free(buf);
    H5Sclose(fs);
    H5Sclose(ms);
}

/* this rank's band as a point selection, last point first */
static void
write_points(hid_t dset, int d, hid_t dxpl)
{
    int      lo = band_lo(rank), n = (band_hi(rank) - lo) * COLS_PT;
    hsize_t *pts  = malloc(sizeof(hsize_t) * 2 * (size_t)(n + 1));
    int     *vals = malloc(sizeof(int) * (size_t)(n + 1));
    for (int p = 0; p < n; p++) {
        int q = n - 1 - p, i = lo + q / COLS_PT, j = q % COLS_PT;
        pts[2 * p] = (hsize_t)i, pts[2 * p + 1] = (hsize_t)j, vals[p] = (int)model(d, i, j);
    }
    hsize_t mdim = (hsize_t)(n ? n : 1);
    hid_t   fs = H5Dget_space(dset), ms = H5Screate_simple(1, &mdim, NULL);
    if (n)
        CHECK(H5Sselect_elements(fs, H5S_SELECT_SET, (size_t)n, pts));
    else {
        CHECK(H5Sselect_none(fs));
        CHECK(H5Sselect_none(ms));
    }
    CHECK(H5Dwrite(dset, H5T_NATIVE_INT, ms, fs, dxpl, vals));
    free(pts);
    free(vals);
    H5Sclose(fs);
    H5Sclose(ms);
}

/* the odd columns of the next rank's band into a buffer of just those: contiguous in
 * memory, strided in the file (a read that bytes at the dataset's address would get
 * wrong, silently) */
static void
judge_strided(hid_t file, hid_t dxpl, const char *when)
{
    int     r = (rank + 1) % nranks, lo = band_lo(r), h = band_hi(r) - lo;
    hsize_t start[2] = {(hsize_t)lo, 1}, stride[2] = {1, 2}, count[2] = {(hsize_t)h, COLS_F64 / 2};
    hsize_t n    = (hsize_t)h * (COLS_F64 / 2);
    hid_t   dset = H5Dopen2(file, "strided_f64", H5P_DEFAULT);
    hid_t   fs = H5Dget_space(dset), ms = H5Screate_simple(1, &n, NULL);
    double *buf = malloc(sizeof(double) * (n + 1));
    CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, stride, count, NULL));
    CHECK(H5Dread(dset, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf));
    for (int i = 0; i < h; i++)
        for (int j = 0; j < COLS_F64 / 2; j++) {
            double want = model(2, lo + i, 1 + 2 * j), got = buf[(size_t)i * (COLS_F64 / 2) + j];
            if (got != want)
                fail("%s: strided_f64[%d][%d] read as a strided selection is %g, the model says %g", when,
                     lo + i, 1 + 2 * j, got, want);
            checks++;
        }
    free(buf);
    H5Sclose(fs);
    H5Sclose(ms);
    H5Dclose(dset);
}

/* one H5Dwrite_multi: this rank's band of a compact, a contiguous and a chunked dataset */
#define NMULTI 3
static const char  *multi_name[NMULTI] = {"multi_compact", "multi_contig", "multi_chunked"};
static const kind_t multi_kind[NMULTI] = {I16, U8, F32};
static const int    multi_cols[NMULTI] = {4, 13, 10};

static void
write_multi(hid_t file, hid_t dxpl, int d0)
{
    hid_t dsets[NMULTI], types[NMULTI], ms[NMULTI], fs[NMULTI];
    void *bufs[NMULTI];
    for (int m = 0; m < NMULTI; m++) {
        H5D_layout_t layout  = m == 0 ? H5D_COMPACT : m == 1 ? H5D_CONTIGUOUS : H5D_CHUNKED;
        hsize_t      dims[2] = {(hsize_t)rows, (hsize_t)multi_cols[m]};
        /* a compact dataset's data lives in its object header: every rank writes all of
         * it, the same values (HDF5's rule in parallel); the others, this rank's band */
        hsize_t start[2] = {m == 0 ? 0 : (hsize_t)band_lo(rank), 0};
        hsize_t count[2] = {m == 0 ? (hsize_t)rows : (hsize_t)(band_hi(rank) - band_lo(rank)),
                            (hsize_t)multi_cols[m]};
        dsets[m] = make(file, multi_name[m], ktype(multi_kind[m]), multi_cols[m], layout, 3, 4);
        types[m] = ktype(multi_kind[m]);
        fs[m]    = H5Dget_space(dsets[m]);
        ms[m]    = H5Screate_simple(2, dims, NULL);
        CHECK(H5Sselect_hyperslab(fs[m], H5S_SELECT_SET, start, NULL, count, NULL));
        CHECK(H5Sselect_hyperslab(ms[m], H5S_SELECT_SET, start, NULL, count, NULL));
        bufs[m] = model_buf(d0 + m, multi_cols[m], multi_kind[m]);
    }
    CHECK(H5Dwrite_multi(NMULTI, dsets, types, ms, fs, dxpl, (const void **)bufs));
    for (int m = 0; m < NMULTI; m++) {
        free(bufs[m]);
        H5Sclose(ms[m]);
        H5Sclose(fs[m]);
        H5Dclose(dsets[m]);
    }
}

/* is the file's driver HDF5's MPI-IO driver? */
static int
mpio_driver(hid_t file)
{
    hid_t fapl = H5Fget_access_plist(file);
    int   mpio = fapl >= 0 && H5Pget_driver(fapl) == H5FD_MPIO;
    if (fapl >= 0)
        H5Pclose(fapl);
    return mpio;
}

/* H5Fset/get_mpi_atomicity, and H5Fget_vfd_handle giving an MPI_File as MPI-IO does */
static void
mpi_driver_calls(hid_t file)
{
    hbool_t flag = 1;
    CHECK(H5Fget_mpi_atomicity(file, &flag));
    if (flag)
        fail("H5Fget_mpi_atomicity: atomic mode on a file just opened");
    CHECK(H5Fset_mpi_atomicity(file, 1));
    CHECK(H5Fget_mpi_atomicity(file, &flag));
    if (!flag)
        fail("H5Fget_mpi_atomicity: atomic mode off after H5Fset_mpi_atomicity(file, 1)");
    CHECK(H5Fset_mpi_atomicity(file, 0));
    void      *handle = NULL;
    MPI_Offset size   = -1;
    CHECK(H5Fget_vfd_handle(file, H5P_DEFAULT, &handle));
    if (!handle || MPI_File_get_size(*(MPI_File *)handle, &size) != MPI_SUCCESS)
        fail("H5Fget_vfd_handle: no MPI_File that MPI accepts");
    else if (!mpio_driver(file)) { /* a driver's handle: not the file's bytes, never written */
        char byte = 0;
        if (size != 0 ||
            MPI_File_write_at(*(MPI_File *)handle, 0, &byte, 1, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS)
            fail("H5Fget_vfd_handle: the driver's handle has a size or takes a write");
    }
    checks += 4;
}

static int
mpmd_later_program(void)
{
    int *appnum = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    return flag && appnum && *appnum > 0;
}

static hid_t
access_list(int mpio, int variant)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (mpio)
        CHECK(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
    else if (!mpmd_later_program()) /* there, the driver finds its ranks itself (the DSM's clients) */
        CHECK(H5Pset_mpi_params(fapl, comm, MPI_INFO_NULL));
    if (variant == 1) {
        CHECK(H5Pset_alignment(fapl, 1024, 4096));
        CHECK(H5Pset_all_coll_metadata_ops(fapl, 1));
        CHECK(H5Pset_coll_metadata_write(fapl, 1));
    }
    if (variant == 2)
        CHECK(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
    return fapl;
}

/* every dataset against the model, with the transfer list dxpl */
static void
judge_all(hid_t file, hid_t dxpl, const char *when)
{
    judge(file, "band_u8", 1, COLS_U8, U8, dxpl, when);
    judge(file, "columns_u8", 5, COLS_U8, U8, dxpl, when);
    judge(file, "strided_f64", 2, COLS_F64, F64, dxpl, when);
    judge(file, "points_i32", 3, COLS_PT, I32, dxpl, when);
    judge(file, "converted_i16", 4, COLS_PT, I16, dxpl, when);
    for (int m = 0; m < NMULTI; m++)
        judge(file, multi_name[m], 10 + m, multi_cols[m], multi_kind[m], dxpl, when);
    judge_strided(file, dxpl, when);
}

static void
write_all(hid_t file, hid_t off, hid_t on)
{
    hid_t d = make(file, "band_u8", H5T_NATIVE_UINT8, COLS_U8, H5D_CONTIGUOUS, 0, 0);
    write_band(d, U8, 1, COLS_U8, off);
    H5Dclose(d);
    d = make(file, "columns_u8", H5T_NATIVE_UINT8, COLS_U8, H5D_CONTIGUOUS, 0, 0);
    write_columns(d, 5, off);
    H5Dclose(d);
    d = make(file, "strided_f64", H5T_NATIVE_DOUBLE, COLS_F64, H5D_CHUNKED, 5, 7);
    write_strided(d, 2, off);
    H5Dclose(d);
    d = make(file, "points_i32", H5T_NATIVE_INT32, COLS_PT, H5D_CONTIGUOUS, 0, 0);
    write_points(d, 3, off);
    H5Dclose(d);
    d = make(file, "converted_i16", H5T_STD_I16BE, COLS_PT, H5D_CHUNKED, 4, 4); /* big-endian: converted */
    write_band(d, I32, 4, COLS_PT, on);
    H5Dclose(d);
    write_multi(file, off, 10);
}

int
main(int argc, char **argv)
{
    int mpio = 0, variant = 0;
    MPI_Init(&argc, &argv);
    comm = MPI_COMM_WORLD;
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "mpio"))
            mpio = 1;
        else if (!strcmp(argv[a], "--variant") && a + 1 < argc)
            variant = atoi(argv[++a]);
        else
            fail("usage: vfd_dropin FILE [mpio] [--variant 0|1|2]");
    if (argc < 2)
        fail("usage: vfd_dropin FILE [mpio] [--variant 0|1|2]");
    hid_t fapl = access_list(mpio, variant), off = dxpl_coll(1), on = dxpl_coll(0);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(file);
    hid_t    used = H5Fget_access_plist(file); /* the ranks the driver took (in MPMD: this program's) */
    MPI_Info info = MPI_INFO_NULL;
    CHECK(H5Pget_mpi_params(used, &comm, &info));
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    H5Pclose(used);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    rows = 4 * nranks + 3;
    write_all(file, off, on);
    judge_all(file, off, "read back before closing (selection I/O off)");
    judge_all(file, on, "read back before closing");
    mpi_driver_calls(file);
    CHECK(H5Fclose(file));
    file = H5Fopen(argv[1], H5F_ACC_RDONLY, fapl);
    CHECK(file);
    judge_all(file, off, "read back after a read-only open (selection I/O off)");
    judge_all(file, on, "read back after a read-only open");
    mpi_driver_calls(file);
    CHECK(H5Fclose(file));
    long all = 0;
    MPI_Reduce(&checks, &all, 1, MPI_LONG, MPI_SUM, 0, comm);
    if (rank == 0)
        printf("vfd_dropin: ok (%d ranks, variant %d, %ld elements and calls checked)\n", nranks, variant,
               all);
    H5Pclose(fapl);
    H5Pclose(off);
    H5Pclose(on);
    MPI_Comm_free(&comm);
    H5close(); /* as HDF5's own test programs end: plugins are unloaded before MPI_Finalize */
    MPI_Finalize();
    return 0;
}
