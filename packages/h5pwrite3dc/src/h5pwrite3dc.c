/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* h5pwrite3dc: a series of 2-D images written as 3-D HDF5 datasets by an MPI program,
 * after MAX IV's hdf_pwrite3dc (Fortran): same arguments, same constraints, same
 * checkpoints and summary lines, so its users recognise it.
 *
 *   mpiexec -n N h5pwrite3dc FILE NSETS NDSETS [PARAMFILE] [options]      (--help)
 *
 * NSETS images of g_N x g_N 64-bit floats go into NDSETS datasets data_0000... of shape
 * (NSETS/NDSETS, g_N, g_N), chunked 1 x ch_N x ch_N. In each dataset rank r writes
 * images r, r+N, r+2N, ... (one H5Dwrite per image, collective by default), every pixel
 * holding r. Timed as the original: create phase (barrier, H5Dcreate of every dataset,
 * barrier) and write phase (barrier, H5Dopen/H5Dwrite.../H5Dclose, barrier). Then, in
 * the same run, the same bytes written with raw MPI-IO and raw POSIX (pw_limits.h), and
 * rate(write) printed as ratios to them; --rounds N runs the three kernels N times,
 * alternated, and prints medians with their spread (pw_rounds.h). --verify reads every
 * pixel back.
 */
#include <H5FDdevelop.h> /* H5FDis_driver_registered_by_name */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pw_dsm.h"
#include "pw_files.h"
#include "pw_hints.h"
#include "pw_limits.h"
#include "pw_options.h"
#include "pw_resources.h"
#include "pw_rounds.h"

static int         g_rank, g_np, g_quiet;
static MPI_Comm    g_comm = MPI_COMM_WORLD;         /* the writers: MPI_COMM_WORLD, or the DSM's clients */
static char        g_driver_in_use[32] = "unknown"; /* the driver HDF5 used for FILE */
static const char *g_file;

static void
checkpoint(int k)
{
    if (!g_quiet)
        fprintf(stderr, "Process: %d, chckpoint: %d\n", g_rank, k);
}

/* stop the job after an error message: let the launcher forward this rank's messages
 * before MPI_Abort tears the job down (MPICH's launcher lost them now and then when
 * every rank aborted at once) */
static void
abort_job(void)
{
    fflush(NULL);
    usleep(1000000);              /* on a loaded node MPICH can lose what was written 0.3 s before */
    MPI_Abort(MPI_COMM_WORLD, 1); /* the whole job: DSM servers too */
}

/* an HDF5 call that failed: say what and where, print HDF5's stack, stop the job */
static void
h5_fail(const char *what)
{
    fprintf(stderr, "h5pwrite3dc: %s: %s failed on rank %d (HDF5's error stack above)\n", g_file, what,
            g_rank);
    abort_job();
}
#define PW_H5(call, what)                                                                                    \
    do {                                                                                                     \
        if ((call) < 0)                                                                                      \
            h5_fail(what);                                                                                   \
    } while (0)

/* every rank learns whether one failed (its message printed by itself) */
static int
any_failed(int failed)
{
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, g_comm);
    return any;
}

/* room for the run on every node (memory) and on FILE's file system (disk), before
 * anything is allocated or written; 1 (reason printed once per node) if not */
static int
check_resources(const pw_options *o, char *err, size_t len)
{
    MPI_Comm node;
    int      on_node = 1, node_rank = 0;
    MPI_Comm_split_type(g_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &on_node);
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_free(&node);
    int bad = (node_rank == 0 && pw_check_memory(o, on_node, err, len) < 0) ||
              (g_rank == 0 && pw_check_disk(o, err, len) < 0);
    if (bad)
        fprintf(stderr, "h5pwrite3dc: %s\n", err);
    return any_failed(bad);
}

static hid_t
make_fapl(const pw_options *o, MPI_Info info)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    PW_H5(fapl, "H5Pcreate(file access)");
    if (!strcmp(o->driver, "mpio")) {
        PW_H5(H5Pset_fapl_mpio(fapl, g_comm, info), "H5Pset_fapl_mpio");
    }
    else if (!strcmp(o->driver, "subfiling")) {
#ifdef H5_HAVE_SUBFILING_VFD
        PW_H5(H5Pset_mpi_params(fapl, g_comm, info), "H5Pset_mpi_params");
        PW_H5(H5Pset_fapl_subfiling(fapl, NULL), "H5Pset_fapl_subfiling");
#else
        h5_fail("--driver subfiling (this HDF5 was built without the subfiling driver)");
#endif
    }
    else {
        /* a driver plugin by name (multifile, dsm): HDF5 loads it from HDF5_PLUGIN_PATH,
         * or finds it built in (the patched HDF5 has multifile) */
        PW_H5(H5Pset_mpi_params(fapl, g_comm, info), "H5Pset_mpi_params");
        if (H5Pset_driver_by_name(fapl, o->driver, o->driver_config) < 0) {
            fprintf(stderr,
                    "h5pwrite3dc: %s: no HDF5 driver named '%s' (a plugin must be on HDF5_PLUGIN_PATH)\n",
                    g_file, o->driver);
            H5Pclose(fapl); /* its communicator freed while MPI is still there */
            abort_job();
        }
    }
    if (o->alignment)
        PW_H5(H5Pset_alignment(fapl, o->alignment_threshold, o->alignment), "H5Pset_alignment");
    if (o->latest_format)
        PW_H5(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), "H5Pset_libver_bounds");
    if (o->meta_block_size >= 0)
        PW_H5(H5Pset_meta_block_size(fapl, (hsize_t)o->meta_block_size), "H5Pset_meta_block_size");
    if (o->coll_metadata) {
        PW_H5(H5Pset_all_coll_metadata_ops(fapl, 1), "H5Pset_all_coll_metadata_ops");
        PW_H5(H5Pset_coll_metadata_write(fapl, 1), "H5Pset_coll_metadata_write");
    }
    return fapl;
}

/* --chunk-cache, else HDF5's default cache, or (for_verify) none: --verify reads each
 * chunk once, so a cache would only copy it */
static hid_t
make_dapl(const pw_options *o, int for_verify)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    PW_H5(dapl, "H5Pcreate(dataset access)");
    if (o->chunk_cache >= 0 || for_verify)
        PW_H5(H5Pset_chunk_cache(dapl, H5D_CHUNK_CACHE_NSLOTS_DEFAULT,
                                 o->chunk_cache >= 0 ? (size_t)o->chunk_cache : 0,
                                 H5D_CHUNK_CACHE_W0_DEFAULT),
              "H5Pset_chunk_cache");
    return dapl;
}

/* between timed phases, outside the timing: write back every dirty page, so a phase
 * does not pay for the previous phase's data (page-cache writeback) */
static void
settle(const pw_options *o)
{
    if (!o->sync)
        return;
    MPI_Barrier(g_comm);
    sync();
    MPI_Barrier(g_comm);
}

static void
dataset_name(long long d, char *buf, size_t len)
{
    snprintf(buf, len, "/data_%04lld", d);
}

typedef struct {
    double    create, write, close, verify;
    long long pixels_checked, pixels_wrong;
} pw_times;

/* The name of the driver HDF5 uses for file f: the requested one may have been replaced
 * underneath (a preloaded shim, HDF5_DRIVER for a default access list). Compared by
 * class with each driver HDF5 has registered under a known name; "unknown" if none. */
static const char *
driver_in_use(hid_t f)
{
    static const char *names[] = {"mpio",  "multifile", "subfiling", "dsm",   "mpiposix", "ioc",
                                  "sec2",  "core",      "log",       "stdio", "family",   "split",
                                  "multi", "direct",    "mirror",    "onion"};
    hid_t       fapl = H5Fget_access_plist(f), used = fapl >= 0 ? H5Pget_driver(fapl) : H5I_INVALID_HID;
    const char *found = "unknown";
    H5E_BEGIN_TRY
    {
        for (size_t i = 0; used >= 0 && i < sizeof names / sizeof *names && !strcmp(found, "unknown"); i++) {
            if (H5FDis_driver_registered_by_name(names[i]) <= 0)
                continue; /* never load a plugin only to name it */
            hid_t probe = H5Pcreate(H5P_FILE_ACCESS);
            if (H5Pset_driver_by_name(probe, names[i], NULL) >= 0 && H5Pget_driver(probe) == used)
                found = names[i];
            H5Pclose(probe);
        }
    }
    H5E_END_TRY
    if (fapl >= 0)
        H5Pclose(fapl);
    return found;
}

/* FILE created through fapl, and the driver HDF5 uses for it printed (rank 0, the first
 * time); -1 on
 * every rank when a rank could not create it (said by rank 0) */
static hid_t
create_file(const pw_options *o, hid_t fapl)
{
    hid_t f = H5Fcreate(o->file, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (any_failed(f < 0)) {
        if (g_rank == 0)
            fprintf(stderr, "h5pwrite3dc: %s: Unable to open (H5Fcreate failed; HDF5's error stack above)\n",
                    o->file);
        if (f >= 0)
            H5Fclose(f);
        return H5I_INVALID_HID;
    }
    static int said; /* once, not in every round */
    snprintf(g_driver_in_use, sizeof g_driver_in_use, "%s", driver_in_use(f));
    if (g_rank == 0 && !said++) {
        if (strcmp(g_driver_in_use, o->driver))
            printf(" driver in use: %s (requested: %s; replaced underneath, e.g. by a preloaded library or "
                   "HDF5_DRIVER)\n",
                   g_driver_in_use, o->driver);
        else
            printf(" driver in use: %s\n", g_driver_in_use);
        fflush(stdout);
    }
    return f;
}

/* the datasets' creation properties: chunks of 1 x ch_N x ch_N, the fill time */
static hid_t
make_dcpl(const pw_options *o)
{
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    PW_H5(dcpl, "H5Pcreate(dataset create)");
    checkpoint(7);
    hsize_t cdims[3] = {1, (hsize_t)o->ch_n, (hsize_t)o->ch_n};
    PW_H5(H5Pset_chunk(dcpl, 3, cdims), "H5Pset_chunk");
    H5D_fill_time_t fill = o->fill == PW_FILL_NEVER   ? H5D_FILL_TIME_NEVER
                           : o->fill == PW_FILL_ALLOC ? H5D_FILL_TIME_ALLOC
                                                      : H5D_FILL_TIME_IFSET;
    PW_H5(H5Pset_fill_time(dcpl, fill), "H5Pset_fill_time");
    return dcpl;
}

/* collective transfers, or independent ones (--independent) */
static hid_t
make_dxpl(const pw_options *o)
{
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    PW_H5(dxpl, "H5Pcreate(transfer)");
    PW_H5(H5Pset_dxpl_mpio(dxpl, o->independent ? H5FD_MPIO_INDEPENDENT : H5FD_MPIO_COLLECTIVE),
          "H5Pset_dxpl_mpio");
    return dxpl;
}

/* the create phase: every dataset created and closed again */
static void
create_datasets(const pw_options *o, hid_t f, hid_t fspace, hid_t dcpl, hid_t dapl)
{
    char name[64];
    for (long long d = 0; d < o->ndsets; d++) {
        dataset_name(d, name, sizeof name);
        hid_t ds = H5Dcreate2(f, name, H5T_IEEE_F64LE, fspace, H5P_DEFAULT, dcpl, dapl);
        PW_H5(ds, "H5Dcreate");
        PW_H5(H5Dclose(ds), "H5Dclose");
    }
}

/* the write phase: in each dataset this rank's images r, r+N, r+2N, ..., one H5Dwrite each */
static void
write_datasets(const pw_options *o, hid_t f, hid_t mspace, hid_t fspace, hid_t dapl, hid_t dxpl,
               const double *image)
{
    const long long mine = o->nsets / o->ndsets / g_np;
    char            name[64];
    for (long long d = 0; d < o->ndsets; d++) {
        dataset_name(d, name, sizeof name);
        hid_t ds = H5Dopen2(f, name, dapl);
        PW_H5(ds, "H5Dopen");
        for (long long i = 0; i < mine; i++) {
            hsize_t start[3] = {(hsize_t)(g_rank + i * g_np), 0, 0};
            hsize_t count[3] = {1, (hsize_t)o->g_n, (hsize_t)o->g_n};
            PW_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL),
                  "H5Sselect_hyperslab");
            PW_H5(H5Dwrite(ds, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, image), "H5Dwrite");
        }
        PW_H5(H5Dclose(ds), "H5Dclose");
    }
}

/* The original's phases. Returns 0, or 1 when the file could not be created. */
static int
write_file(const pw_options *o, MPI_Info info, double *image, pw_times *t)
{
    hid_t fapl = make_fapl(o, info);
    checkpoint(2);
    hid_t f = create_file(o, fapl);
    if (f < 0) {
        H5Pclose(fapl);
        return 1;
    }
    /* the local image, generated after the file is open as in the original */
    for (size_t k = 0, npix = (size_t)o->g_n * (size_t)o->g_n; k < npix; k++)
        image[k] = (double)g_rank;
    checkpoint(3);
    hsize_t mdims[3] = {1, (hsize_t)o->g_n, (hsize_t)o->g_n};
    hid_t   mspace   = H5Screate_simple(3, mdims, NULL);
    PW_H5(mspace, "H5Screate_simple(memory)");
    checkpoint(4);
    hsize_t fdims[3] = {(hsize_t)(o->nsets / o->ndsets), (hsize_t)o->g_n, (hsize_t)o->g_n};
    hid_t   fspace   = H5Screate_simple(3, fdims, NULL);
    PW_H5(fspace, "H5Screate_simple(file)");
    checkpoint(5);
    hid_t dcpl = make_dcpl(o);
    hid_t dapl = make_dapl(o, 0);
    checkpoint(8);

    MPI_Barrier(g_comm);
    double t0 = MPI_Wtime();
    create_datasets(o, f, fspace, dcpl, dapl);
    checkpoint(9);
    MPI_Barrier(g_comm);
    double t1   = MPI_Wtime();
    hid_t  dxpl = make_dxpl(o);
    write_datasets(o, f, mspace, fspace, dapl, dxpl, image);
    MPI_Barrier(g_comm);
    double t2 = MPI_Wtime();
    checkpoint(10);

    H5Pclose(dxpl);
    H5Pclose(dapl);
    H5Pclose(dcpl);
    H5Sclose(fspace);
    H5Sclose(mspace);
    PW_H5(H5Fclose(f), "H5Fclose");
    H5Pclose(fapl);
    MPI_Barrier(g_comm);
    double t3 = MPI_Wtime();
    t->create = t1 - t0;
    t->write  = t2 - t1;
    t->close  = t3 - t2;
    return 0;
}

/* Read every image back through the same driver; each rank checks its own images. */
static void
verify_file(const pw_options *o, MPI_Info info, double *buf, pw_times *t)
{
    MPI_Barrier(g_comm);
    double t0   = MPI_Wtime();
    hid_t  fapl = make_fapl(o, info);
    hid_t  f    = H5Fopen(o->file, H5F_ACC_RDONLY, fapl);
    PW_H5(f, "H5Fopen (--verify)");
    const long long per_dset = o->nsets / o->ndsets, mine = per_dset / g_np;
    const size_t    npix     = (size_t)o->g_n * (size_t)o->g_n;
    hsize_t         mdims[3] = {1, (hsize_t)o->g_n, (hsize_t)o->g_n};
    hid_t           mspace   = H5Screate_simple(3, mdims, NULL);
    hid_t           dapl     = make_dapl(o, 1);
    hid_t           dxpl     = make_dxpl(o);
    long long       checked = 0, wrong = 0;
    char            name[64];
    for (long long d = 0; d < o->ndsets; d++) {
        dataset_name(d, name, sizeof name);
        hid_t ds = H5Dopen2(f, name, dapl);
        PW_H5(ds, "H5Dopen (--verify)");
        hid_t   fspace  = H5Dget_space(ds);
        hsize_t dims[3] = {0, 0, 0};
        if (H5Sget_simple_extent_ndims(fspace) != 3 || H5Sget_simple_extent_dims(fspace, dims, NULL) != 3 ||
            dims[0] != (hsize_t)per_dset || dims[1] != (hsize_t)o->g_n || dims[2] != (hsize_t)o->g_n) {
            fprintf(stderr, "h5pwrite3dc: %s: %s has shape %llu x %llu x %llu, expected %lld x %lld x %lld\n",
                    o->file, name, (unsigned long long)dims[0], (unsigned long long)dims[1],
                    (unsigned long long)dims[2], per_dset, o->g_n, o->g_n);
            abort_job();
        }
        for (long long i = 0; i < mine; i++) {
            long long plane    = g_rank + i * g_np;
            hsize_t   start[3] = {(hsize_t)plane, 0, 0};
            hsize_t   count[3] = {1, (hsize_t)o->g_n, (hsize_t)o->g_n};
            PW_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL),
                  "H5Sselect_hyperslab");
            for (size_t k = 0; k < npix; k++)
                buf[k] = -1.0;
            PW_H5(H5Dread(ds, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf), "H5Dread (--verify)");
            for (size_t k = 0; k < npix; k++)
                if (buf[k] != (double)g_rank) {
                    if (!wrong)
                        fprintf(stderr,
                                "h5pwrite3dc: %s: %s image %lld pixel (%zu, %zu) is %g, expected %d\n",
                                o->file, name, plane, k / (size_t)o->g_n, k % (size_t)o->g_n, buf[k], g_rank);
                    wrong++;
                }
            checked += (long long)npix;
        }
        H5Sclose(fspace);
        PW_H5(H5Dclose(ds), "H5Dclose");
    }
    H5Pclose(dxpl);
    H5Pclose(dapl);
    H5Sclose(mspace);
    PW_H5(H5Fclose(f), "H5Fclose (--verify)");
    H5Pclose(fapl);
    MPI_Allreduce(&checked, &t->pixels_checked, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    MPI_Allreduce(&wrong, &t->pixels_wrong, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    t->verify = MPI_Wtime() - t0;
}

static void
json_string(FILE *j, const char *s)
{
    fputc('"', j);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(j, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(j, "\\u%04x", *s);
        else
            fputc(*s, j);
    }
    fputc('"', j);
}

typedef struct {
    const pw_options *o;
    const char       *mpi_library;
    const pw_times   *t;
    double            mb;
    const pw_rounds  *rr;
} json_results;

/* "rounds" and the seconds of every round's kernels (figures above are their medians) */
static void
json_rounds(FILE *j, const pw_options *o, const pw_rounds *rr)
{
    struct {
        const char   *name;
        const double *v;
    } series[] = {{"write", rr->write}, {"mpiio", rr->mpiio}, {"posix_fpp", rr->posix}};
    fprintf(j, ",\n  \"rounds\": %d, \"seconds_per_round\": {", rr->n);
    for (int k = 0; k < (o->limits ? 3 : 1); k++) {
        fprintf(j, "%s\"%s\": [", k ? ", " : "", series[k].name);
        for (int i = 0; i < rr->n; i++)
            fprintf(j, "%s%.6f", i ? ", " : "", series[k].v[i]);
        fprintf(j, "]");
    }
    fprintf(j, "}");
}

static void
json_body(FILE *j, const void *arg)
{
    const json_results *r  = arg;
    const pw_options   *o  = r->o;
    const pw_times     *t  = r->t;
    const double        mb = r->mb;
    unsigned            maj, min, rel;
    H5get_libversion(&maj, &min, &rel);
    fprintf(j, "{\n  \"program\": \"h5pwrite3dc\", \"version\": \"%s\",\n  \"file\": ", H5STACK_VERSION);
    json_string(j, o->file);
    fprintf(j, ",\n  \"ranks\": %d, \"nsets\": %lld, \"ndsets\": %lld, \"g_n\": %lld, \"ch_n\": %lld,\n",
            g_np, o->nsets, o->ndsets, o->g_n, o->ch_n);
    fprintf(j, "  \"driver\": ");
    json_string(j, o->driver);
    fprintf(j, ", \"driver_in_use\": ");
    json_string(j, g_driver_in_use);
    fprintf(j,
            ", \"transfer\": \"%s\", \"fill_time\": \"%s\", \"alignment\": %llu, \"alignment_threshold\": "
            "%llu,\n",
            o->independent ? "independent" : "collective", pw_fill_name(o->fill), o->alignment,
            o->alignment_threshold);
    fprintf(
        j,
        "  \"latest_format\": %s, \"coll_metadata\": %s, \"chunk_cache\": %lld, \"meta_block_size\": %lld,\n",
        o->latest_format ? "true" : "false", o->coll_metadata ? "true" : "false", o->chunk_cache,
        o->meta_block_size);
    fprintf(j, "  \"sync_between_phases\": %s,\n", o->sync ? "true" : "false");
    fprintf(j, "  \"hdf5_version\": \"%u.%u.%u\", \"mpi_library\": ", maj, min, rel);
    json_string(j, r->mpi_library);
    fprintf(
        j,
        ",\n  \"saved_mb\": %.3f, \"time_create_s\": %.6f, \"time_write_s\": %.6f, \"time_close_s\": %.6f,\n",
        mb, t->create, t->write, t->close);
    fprintf(j, "  \"rate_create_mb_s\": %.3f, \"rate_write_mb_s\": %.3f", mb / t->create, mb / t->write);
    if (o->limits) {
        const pw_rounds *rr = r->rr;
        fprintf(j,
                ",\n  \"limits\": {\"mpiio\": {\"time_s\": %.6f, \"rate_mb_s\": %.3f}, "
                "\"posix_fpp\": {\"time_s\": %.6f, \"rate_mb_s\": %.3f}},\n",
                pw_median(rr->mpiio, rr->n), pw_rate_stat(rr->mpiio, rr->n, mb).median,
                pw_median(rr->posix, rr->n), pw_rate_stat(rr->posix, rr->n, mb).median);
        fprintf(j, "  \"ratios\": {\"write/mpiio\": %.4f, \"write/posix_fpp\": %.4f}",
                pw_ratio_stat(rr->mpiio, rr->write, rr->n).median,
                pw_ratio_stat(rr->posix, rr->write, rr->n).median);
    }
    json_rounds(j, o, r->rr);
    if (o->verify)
        fprintf(j, ",\n  \"verify\": {\"pixels\": %lld, \"wrong\": %lld, \"time_s\": %.6f}",
                t->pixels_checked, t->pixels_wrong, t->verify);
    fprintf(j, "\n}\n");
}

/* 1 if --driver names no driver HDF5 has or can load (a plugin on HDF5_PLUGIN_PATH):
 * tried on a property list of its own before anything is opened, HDF5's reason
 * printed by rank 0 */
static int
driver_missing(const pw_options *o)
{
    if (!strcmp(o->driver, "mpio") || !strcmp(o->driver, "subfiling"))
        return 0;
    hid_t  probe = H5Pcreate(H5P_FILE_ACCESS);
    herr_t set;
    if (g_rank == 0)
        set = H5Pset_driver_by_name(probe, o->driver, o->driver_config);
    else {
        H5E_BEGIN_TRY
        {
            set = H5Pset_driver_by_name(probe, o->driver, o->driver_config);
        }
        H5E_END_TRY
    }
    H5Pclose(probe);
    return set < 0;
}

/* options parsed and checked, the DSM clients coupled, room for the run: PW_ARGS_OK to
 * go on, PW_ARGS_HELP (usage printed), or PW_ARGS_BAD (the reason printed; a DSM job
 * stopped as a whole) */
static pw_verdict
prepare(int argc, char **argv, int provided, pw_options *o, char *err, size_t len)
{
    pw_verdict rc = pw_parse(argc, argv, o, err, len);
    /* a DSM client in an MPMD job: the servers wait for the clients, so the clients
     * couple first (collective over MPI_COMM_WORLD) and then work on their own ranks */
    const int dsm_job = pw_dsm_requested(argc, argv);
    if (rc == PW_ARGS_OK && pw_dsm_mpmd(o->driver, o->driver_config)) {
        if (pw_dsm_clients(&g_comm, err, len) < 0) {
            fprintf(stderr, "h5pwrite3dc: rank %d: %s\n", g_rank, err);
            abort_job();
        }
        MPI_Comm_rank(g_comm, &g_rank);
        MPI_Comm_size(g_comm, &g_np);
    }
    if (rc == PW_ARGS_OK)
        rc = pw_check_ranks(o, g_np, err, len);
    if (rc != PW_ARGS_OK) {
        if (g_rank == 0)
            fprintf(rc == PW_ARGS_HELP ? stdout : stderr, rc == PW_ARGS_HELP ? "%s" : "h5pwrite3dc: %s\n",
                    err);
        if (rc == PW_ARGS_BAD && dsm_job) /* the servers would wait for clients that never come */
            abort_job();
        return rc;
    }
    /* a results file that cannot be written fails the run before it starts, not after */
    int bad = any_failed(g_rank == 0 && o->json && pw_check_creatable(o->json, err, len) < 0);
    if (bad && g_rank == 0)
        fprintf(stderr, "h5pwrite3dc: --json: %s\n", err);
    /* nor is the HDF5 file written through a link planted at its name */
    if (!bad && (bad = any_failed(g_rank == 0 && !dsm_job && pw_check_not_a_link(o->file, err, len) < 0)) &&
        g_rank == 0)
        fprintf(stderr, "h5pwrite3dc: %s\n", err);
    if (!bad && (bad = any_failed(driver_missing(o))) && g_rank == 0)
        fprintf(stderr, "h5pwrite3dc: %s: no HDF5 driver named '%s' (a plugin must be on HDF5_PLUGIN_PATH)\n",
                o->file, o->driver);
    if (!bad && !strcmp(o->driver, "subfiling") && provided < MPI_THREAD_MULTIPLE) {
        if (g_rank == 0)
            fprintf(stderr,
                    "h5pwrite3dc: --driver subfiling needs MPI_THREAD_MULTIPLE, this MPI gives level %d\n",
                    provided);
        bad = 1;
    }
    if (bad || check_resources(o, err, len)) {
        if (dsm_job)
            abort_job();
        return PW_ARGS_BAD;
    }
    return PW_ARGS_OK;
}

/* the lowest rank that failed (each rank says whether it did), or -1 if none did */
static int
first_failed(int failed)
{
    int mine = failed ? g_rank : g_np, first = g_np;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, g_comm);
    return first < g_np ? first : -1;
}

/* the original's two hints, then the hints file; MPI_INFO_NULL on every rank when a
 * rank cannot read it (the reason printed by the first such rank) */
static MPI_Info
make_info(const pw_options *o, char *err, size_t len)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", o->romio_cb_write);
    MPI_Info_set(info, "romio_ds_write", o->romio_ds_write);
    int first = first_failed(o->hints_file && pw_hints_load(o->hints_file, info, err, len));
    if (first == 0 && g_rank == 0)
        fprintf(stderr, "h5pwrite3dc: %s\n", err);
    else if (first > 0 && g_rank == first)
        fprintf(stderr, "h5pwrite3dc: rank %d: %s\n", g_rank, err);
    if (first >= 0)
        MPI_Info_free(&info); /* MPI_INFO_NULL */
    return info;
}

/* the header: MPI, HDF5 and every parameter of the run (rank 0) */
static void
print_header(const pw_options *o, MPI_Info info, const char *mpi_library)
{
    unsigned maj, min, rel;
    H5get_libversion(&maj, &min, &rel);
    printf("mpi-ranks: %d\nmpi-library: %s\nhdf5-library: %u.%u.%u\n", g_np, mpi_library, maj, min, rel);
    printf(" np: %d, nsets: %lld, ndsets: %lld, g_N: %lld, ch_N: %lld\n", g_np, o->nsets, o->ndsets, o->g_n,
           o->ch_n);
    printf(" romio_cb_write: %s, romio_ds_write: %s, filling: %s\n", o->romio_cb_write, o->romio_ds_write,
           pw_fill_name(o->fill));
    printf(" driver: %s, transfer: %s, alignment: %llu (threshold %llu), latest format: %s, collective "
           "metadata: %s\n",
           o->driver, o->independent ? "independent" : "collective", o->alignment, o->alignment_threshold,
           o->latest_format ? "yes" : "no", o->coll_metadata ? "yes" : "no");
    printf(" limits: %s, sync between phases: %s\n", o->limits ? "raw MPI-IO and POSIX" : "none",
           o->sync ? "yes" : "no");
    if (o->hints_file) {
        printf(" MPI-IO hints (%s):\n", o->hints_file);
        pw_hints_print(info);
    }
    double per_rank = pw_bytes_per_rank_per_dataset(o, g_np);
    if (per_rank > 2e9)
        fprintf(stderr,
                "h5pwrite3dc: warning: each rank writes %.2f GB into each dataset (%lld images of %.1f MB), "
                "more than ~2 GB per process\n",
                per_rank / 1e9, o->nsets / (o->ndsets * g_np), (double)o->g_n * o->g_n * 8 / 1e6);
    fflush(stdout);
}

/* --verify: every pixel read back; 0, or 1 when one is wrong */
static int
verify_step(const pw_options *o, MPI_Info info, pw_times *t)
{
    double *buf = malloc((size_t)o->g_n * (size_t)o->g_n * sizeof *buf);
    if (any_failed(!buf)) {
        fprintf(stderr, "h5pwrite3dc: rank %d: no memory for --verify\n", g_rank);
        abort_job();
    }
    verify_file(o, info, buf, t);
    free(buf);
    if (g_rank == 0) {
        if (t->pixels_wrong)
            printf(" verify: FAILED: %lld of %lld pixels wrong (first one above)\n", t->pixels_wrong,
                   t->pixels_checked);
        else
            printf(" verify: ok, %lld pixels read back, each its writer's rank; elapsed time(verify): %.6f\n",
                   t->pixels_checked, t->verify);
    }
    return t->pixels_wrong ? 1 : 0;
}

/* one limit kernel of a round into *seconds; 0, or 1 (reason printed, o->limits
 * cleared: no limit runs again, and the JSON carries none) */
static int
limit_kernel(pw_options *o, MPI_Info info, const double *image, int kernel, double *seconds, char *err,
             size_t len)
{
    pw_limit l      = {0};
    int      failed = kernel == PW_KERNEL_MPIIO ? pw_limit_mpiio(o, g_comm, info, image, &l, err, len)
                                                : pw_limit_posix(o, g_comm, image, &l, err, len);
    if (failed) {
        fprintf(stderr, "h5pwrite3dc: limit: %s\n", err);
        o->limits = 0;
        return 1;
    }
    *seconds = l.seconds;
    return 0;
}

/* the HDF5 write and the raw MPI-IO and POSIX writes of the same bytes, o->rounds times,
 * the first kernel turning with the round (pw_kernel_of); times into rr. Returns 0, or
 * 1 when the HDF5 file could not be created; *status 1 when a limit failed */
static int
run_rounds(pw_options *o, MPI_Info info, double *image, pw_rounds *rr, int *status, char *err, size_t len)
{
    for (int r = 0; r < o->rounds; r++) {
        for (int k = 0; k < PW_KERNELS; k++) {
            int kernel = pw_kernel_of(r, k);
            if (kernel == PW_KERNEL_HDF5) {
                pw_times t = {0};
                if (r || k)
                    settle(o);
                if (write_file(o, info, image, &t))
                    return 1;
                rr->create[r] = t.create;
                rr->write[r]  = t.write;
                rr->close[r]  = t.close;
            }
            else if (o->limits) {
                settle(o);
                double *into = kernel == PW_KERNEL_MPIIO ? rr->mpiio : rr->posix;
                *status |= limit_kernel(o, info, image, kernel, &into[r], err, len);
            }
        }
        rr->n = r + 1;
    }
    return 0;
}

/* the limits' summary lines (rank 0): medians, and with several rounds their spread */
static void
print_limits(const pw_options *o, const pw_rounds *rr, double mb)
{
    const int n = rr->n;
    pw_stat   m = pw_rate_stat(rr->mpiio, n, mb), p = pw_rate_stat(rr->posix, n, mb);
    pw_stat   qm = pw_ratio_stat(rr->mpiio, rr->write, n), qp = pw_ratio_stat(rr->posix, rr->write, n);
    printf(" limit mpiio (%s, shared file): elapsed time( write): %.6f, rate(write): %.3f (MB/s)\n",
           o->independent ? "MPI_File_write_at" : "MPI_File_write_at_all", pw_median(rr->mpiio, n), m.median);
    printf(
        " limit posix-fpp (pwrite, file per process): elapsed time( write): %.6f, rate(write): %.3f (MB/s)\n",
        pw_median(rr->posix, n), p.median);
    printf(" ratio rate(write)/mpiio: %.4f\n", qm.median);
    printf(" ratio rate(write)/posix-fpp: %.4f\n", qp.median);
    if (n < 2)
        return;
    printf(" spread limit mpiio rate(write): %.3f - %.3f (MB/s)\n", m.lo, m.hi);
    printf(" spread limit posix-fpp rate(write): %.3f - %.3f (MB/s)\n", p.lo, p.hi);
    printf(" spread ratio rate(write)/mpiio: %.4f - %.4f\n", qm.lo, qm.hi);
    printf(" spread ratio rate(write)/posix-fpp: %.4f - %.4f\n", qp.lo, qp.hi);
}

/* the original's first checkpoint (with the host's name), and the MPI library's name
 * (its first line) in mpi_library */
static void
first_checkpoint(char mpi_library[MPI_MAX_LIBRARY_VERSION_STRING])
{
    char host[MPI_MAX_PROCESSOR_NAME];
    int  hlen = 0, llen = 0;
    MPI_Get_processor_name(host, &hlen);
    if (!g_quiet)
        fprintf(stderr, "Process: %d, chckpoint: 1, hostname: %s\n", g_rank, host);
    MPI_Get_library_version(mpi_library, &llen);
    mpi_library[strcspn(mpi_library, "\n")] = '\0';
}

/* the original's summary lines of the timed phases (rank 0); mb: the megabytes written */
static void
print_phases(const pw_times *t, double mb)
{
    printf(" elapsed time(create): %.6f\n", t->create);
    printf(" elapsed time( write): %.6f\n", t->write);
    printf(" elapsed time( close): %.6f\n", t->close);
    printf(" saved %.3f (MB), rate(create): %.3f (MB/s), rate(write): %.3f (MB/s)\n", mb, mb / t->create,
           mb / t->write);
    fflush(stdout);
}

/* the medians of the HDF5 write's phases over the rounds, and the rounds' line (rank 0,
 * with several rounds: their number and the spread of rate(write)) */
static pw_times
median_phases(const pw_rounds *rr, double mb)
{
    pw_times t = {.create = pw_median(rr->create, rr->n),
                  .write  = pw_median(rr->write, rr->n),
                  .close  = pw_median(rr->close, rr->n)};
    if (g_rank == 0 && rr->n > 1) {
        pw_stat w = pw_rate_stat(rr->write, rr->n, mb);
        printf(" rounds: %d, the kernels alternated; each figure is the median of the rounds\n", rr->n);
        printf(" spread rate(write): %.3f - %.3f (MB/s)\n", w.lo, w.hi);
    }
    return t;
}

int
main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    /* HDF5 shuts down in MPI_Finalize (its MPI_COMM_SELF attribute), not at exit: after
     * an MPI_Abort its exit handler would free communicators of an MPI already gone */
    H5dont_atexit();
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_np);

    pw_options o;
    char       err[4096];
    pw_verdict rc   = prepare(argc, argv, provided, &o, err, sizeof err);
    MPI_Info   info = rc != PW_ARGS_OK ? MPI_INFO_NULL : make_info(&o, err, sizeof err);
    if (rc != PW_ARGS_OK || info == MPI_INFO_NULL) {
        MPI_Finalize();
        return rc == PW_ARGS_HELP ? 0 : 2; /* 2: bad arguments or hints */
    }
    g_quiet = o.quiet;
    g_file  = o.file;
    char mpi_library[MPI_MAX_LIBRARY_VERSION_STRING];
    first_checkpoint(mpi_library);
    if (g_rank == 0)
        print_header(&o, info, mpi_library);

    /* one image, every pixel this rank's id (the original's local array; filled once
     * the file is open, so a refused file costs no memory) */
    size_t  npix  = (size_t)o.g_n * (size_t)o.g_n;
    double *image = malloc(npix * sizeof *image);
    if (!image)
        fprintf(stderr, "h5pwrite3dc: rank %d: Unable to allocate local data array (%.1f MB)\n", g_rank,
                npix * 8.0 / 1e6);
    pw_rounds rr;
    int       no_memory = pw_rounds_alloc(&rr, o.rounds) < 0;
    int       status    = 0;
    const int limits    = o.limits; /* asked for (o.limits is cleared when one fails) */
    if (any_failed(!image || no_memory) || run_rounds(&o, info, image, &rr, &status, err, sizeof err)) {
        if (no_memory)
            fprintf(stderr, "h5pwrite3dc: rank %d: no memory for %d rounds\n", g_rank, o.rounds);
        if (limits && !o.keep_limits) /* an earlier round's limit files */
            pw_limits_remove(&o, g_rank);
        free(image);
        pw_rounds_free(&rr);
        MPI_Info_free(&info);
        MPI_Finalize();
        return 1;
    }
    const double mb = (double)o.g_n / 1e3 * (double)o.g_n / 1e3 * (double)o.nsets * 8.0; /* as the original */
    pw_times     t  = median_phases(&rr, mb);
    if (g_rank == 0)
        print_phases(&t, mb);

    settle(&o);
    status |= o.verify ? verify_step(&o, info, &t) : 0;
    if (o.limits && g_rank == 0)
        print_limits(&o, &rr, mb);
    if (limits && !o.keep_limits) /* never files of another run when no limit ran */
        pw_limits_remove(&o, g_rank);
    if (g_rank == 0 && o.json) {
        json_results r = {&o, mpi_library, &t, mb, &rr};
        if (pw_write_replacing(o.json, json_body, &r, err, sizeof err) < 0) {
            fprintf(stderr, "h5pwrite3dc: --json: %s\n", err);
            status = 1;
        }
    }
    pw_rounds_free(&rr);
    if (g_rank == 0)
        fflush(stdout);
    free(image);
    MPI_Info_free(&info);
    MPI_Finalize();
    return status;
}
