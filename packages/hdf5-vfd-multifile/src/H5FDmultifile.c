/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * H5FDmultifile.c - the multifile virtual file driver: the HDF5 side.
 *
 * Modes of an open file:
 *   WRITE    a multifile directory, new (create) or continued (read-write open of a
 *            complete one, by any number of ranks): every write is appended to this
 *            rank's data file and indexed in its .offset file; reads are served from
 *            the extent map of own records and of the records other ranks appended
 *            (their index tails are read before each read); flush/truncate/close are
 *            the collective epoch boundaries where rank 0 commits the metafile
 *   PLAIN    an ordinary HDF5 file (e.g. a reconstructed one): read-only, or
 *            read-write with every rank writing in place (the original mpiposix way)
 *   INPLACE  a multifile directory read without reconstruction
 *   ALIAS    a file this process has open already: HDF5 opens a file again to find
 *            that out, then closes the new handle; the stand-in touches nothing
 * Errors go to the HDF5 error stack under the driver's own error class, as
 * "multifile: <path>: <reason>"; all ranks of a collective call fail together.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mf_file.h"

#include "mf_head.h"
#include "mf_merge_mpi.h"
#include "mf_replace.h"
#include "vfd_datatype.h"
#include "vfd_fapl.h"
#include "vfd_mpihandle.h"
#include "vfd_path.h"
#include "vfd_selection.h"

#include <H5FDdevelop.h>
#include <H5PLextern.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

VFD_MPI_HANDLE_FIRST(H5FD_multifile_t, mpi_handle);

/* the options keep the read mode as the public enum's value (mf_options.h has no HDF5) */
_Static_assert(MF_READ_MERGE == (int)H5FD_MULTIFILE_READ_MERGE &&
                   MF_READ_INPLACE == (int)H5FD_MULTIFILE_READ_INPLACE &&
                   MF_READ_PARALLEL == (int)H5FD_MULTIFILE_READ_PARALLEL_MERGE,
               "mf_options.h's read modes must be the values of H5FD_multifile_read_t");

/* no later write extends this rank's last record (see extend_run) */
void
mf_close_run(H5FD_multifile_t *f)
{
    f->run_open = false;
}

/* the files this process has open (not ALIAS): HDF5 asks a driver to open a file
 * again before it looks for it among its open files */
static H5FD_multifile_t **open_files_g = NULL;
static size_t             n_open_g = 0, cap_open_g = 0;

int
mf_register_open(H5FD_multifile_t *f)
{
    if (n_open_g == cap_open_g) {
        size_t             cap = cap_open_g ? 2 * cap_open_g : 8;
        H5FD_multifile_t **v   = realloc(open_files_g, cap * sizeof *v);
        if (!v)
            return -1;
        open_files_g = v;
        cap_open_g   = cap;
    }
    open_files_g[n_open_g++] = f;
    return 0;
}

void
mf_unregister_open(H5FD_multifile_t *f)
{
    for (size_t i = 0; i < n_open_g; i++)
        if (open_files_g[i] == f) {
            open_files_g[i] = open_files_g[--n_open_g];
            return;
        }
}

H5FD_multifile_t *
mf_find_open(dev_t dev, ino_t ino)
{
    for (size_t i = 0; i < n_open_g; i++)
        if (open_files_g[i]->dev == dev && open_files_g[i]->ino == ino)
            return open_files_g[i];
    return NULL;
}

/* ---------------------------------------------------------------- class callbacks */

static herr_t  mf_term(void);
static void   *mf_fapl_get(H5FD_t *file);
static int     mf_cmp(const H5FD_t *f1, const H5FD_t *f2);
static haddr_t mf_get_eoa(const H5FD_t *file, H5FD_mem_t type);
static herr_t  mf_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr);
static haddr_t mf_get_eof(const H5FD_t *file, H5FD_mem_t type);
static herr_t  mf_get_handle(H5FD_t *file, hid_t fapl, void **handle);
static herr_t  mf_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf);
static herr_t mf_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *buf);
static herr_t mf_read_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[], haddr_t addrs[],
                             size_t sizes[], void *bufs[]);
static herr_t mf_write_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[], haddr_t addrs[],
                              size_t sizes[], const void *bufs[]);
static herr_t mf_read_selection(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count, hid_t mem_spaces[],
                                hid_t file_spaces[], haddr_t offsets[], size_t element_sizes[], void *bufs[]);
static herr_t mf_write_selection(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count, hid_t mem_spaces[],
                                 hid_t file_spaces[], haddr_t offsets[], size_t element_sizes[],
                                 const void *bufs[]);
static herr_t mf_flush(H5FD_t *file, hid_t dxpl, hbool_t closing);
static herr_t mf_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing);
static herr_t mf_ctl(H5FD_t *file, uint64_t op_code, uint64_t flags, const void *input, void **output);
static herr_t mf_delete(const char *name, hid_t fapl_id);

static const H5FD_class_t H5FD_multifile_g = {
    H5FD_CLASS_VERSION,   /* struct version       */
    H5FD_MULTIFILE_VALUE, /* value                */
    H5FD_MULTIFILE_NAME,  /* name                 */
    MF_MAXADDR,           /* maxaddr              */
    H5F_CLOSE_SEMI,       /* fc_degree            */
    mf_term,              /* terminate            */
    NULL,                 /* sb_size              */
    NULL,                 /* sb_encode            */
    NULL,                 /* sb_decode            */
    sizeof(mf_options_t), /* fapl_size            */
    mf_fapl_get,          /* fapl_get             */
    NULL,                 /* fapl_copy            */
    NULL,                 /* fapl_free            */
    0,                    /* dxpl_size            */
    NULL,                 /* dxpl_copy            */
    NULL,                 /* dxpl_free            */
    mf_open,              /* open                 */
    mf_close,             /* close                */
    mf_cmp,               /* cmp                  */
    vfd_query,            /* query                */
    NULL,                 /* get_type_map         */
    NULL,                 /* alloc                */
    NULL,                 /* free                 */
    mf_get_eoa,           /* get_eoa              */
    mf_set_eoa,           /* set_eoa              */
    mf_get_eof,           /* get_eof              */
    mf_get_handle,        /* get_handle           */
    mf_read,              /* read                 */
    mf_write,             /* write                */
    mf_read_vector,       /* read_vector          */
    mf_write_vector,      /* write_vector         */
    mf_read_selection,    /* read_selection       */
    mf_write_selection,   /* write_selection      */
    mf_flush,             /* flush                */
    mf_truncate,          /* truncate             */
    NULL,                 /* lock                 */
    NULL,                 /* unlock               */
    mf_delete,            /* del                  */
    mf_ctl,               /* ctl                  */
    H5FD_FLMAP_DICHOTOMY  /* fl_map               */
};

/* the driver's registration, error class and MPI initialisation (vfd_driver.h) */
vfd_driver_t mf_driver_g =
    VFD_DRIVER_INIT(&H5FD_multifile_g, "multifile", "h5stack multifile VFD", "multifile driver");

/* all ranks' outcome, the message of the lowest failing rank in msg (vfd_agree) */
int
mf_agree(MPI_Comm comm, int ok, mf_err_t msg)
{
    return vfd_agree(comm, ok, msg, MF_ERRMSG_SIZE);
}

/* ---------------------------------------------------------------- plugin entry points */

#ifndef H5_MULTIFILE_BUILTIN /* not inside libhdf5 (the patch): plugins are looked up by these names */
H5PL_type_t
H5PLget_plugin_type(void)
{
    return H5PL_TYPE_VFD;
}
const void *
H5PLget_plugin_info(void)
{
    return &H5FD_multifile_g;
}
#endif

/* ---------------------------------------------------------------- public API */

hid_t
H5FD_multifile_init(void)
{
    return vfd_register(&mf_driver_g);
}

static herr_t
set_options(hid_t fapl_id, const mf_options_t *opt)
{
    hid_t id = H5FD_multifile_init();
    if (id < 0) {
        MF_ERROR("cannot register the driver");
        return vfd_api_fail();
    }
    return H5Pset_driver(fapl_id, id, opt);
}

static void
get_options(hid_t fapl_id, mf_options_t *opt)
{
    vfd_fapl_info(fapl_id, MF_OPTIONS_MAGIC, opt, sizeof *opt, mf_options_default);
}

herr_t
H5Pset_fapl_multifile(hid_t fapl_id, MPI_Comm comm, MPI_Info info)
{
    mf_options_t opt;
    vfd_api_enter();
    mf_options_default(&opt);
    if (comm == MPI_COMM_NULL) {
        MF_ERROR("H5Pset_fapl_multifile: the communicator is MPI_COMM_NULL");
        return vfd_api_fail();
    }
    if (H5Pset_mpi_params(fapl_id, comm, info) < 0)
        return -1;
    return set_options(fapl_id, &opt);
}

/* the original patch's API, with its behaviour: a read-only open reconstructs the directory */
herr_t
H5Pset_fapl_mpiposix(hid_t fapl_id, MPI_Comm comm, hbool_t use_gpfs_hints)
{
    (void)use_gpfs_hints;
    if (H5Pset_fapl_multifile(fapl_id, comm, MPI_INFO_NULL) < 0)
        return -1;
    return H5Pset_multifile_options(fapl_id, "read=merge");
}

herr_t
H5Pget_fapl_multifile(hid_t fapl_id, MPI_Comm *comm, MPI_Info *info)
{
    vfd_api_enter();
    if (H5Pget_driver(fapl_id) != H5FD_multifile_init()) {
        MF_ERROR("the file access property list does not use the multifile driver");
        return vfd_api_fail();
    }
    return H5Pget_mpi_params(fapl_id, comm, info);
}

herr_t
H5Pset_multifile_options(hid_t fapl_id, const char *options)
{
    mf_options_t opt;
    mf_err_t     err;
    vfd_api_enter();
    if (H5Pget_driver(fapl_id) == H5FD_multifile_init())
        get_options(fapl_id, &opt);
    else
        mf_options_default(&opt);
    if (mf_options_parse(&opt, options, err) < 0) {
        MF_ERROR("%s", err);
        return vfd_api_fail();
    }
    return set_options(fapl_id, &opt);
}

herr_t
H5Pget_multifile_read_mode(hid_t fapl_id, H5FD_multifile_read_t *mode)
{
    mf_options_t opt;
    vfd_api_enter();
    if (H5Pget_driver(fapl_id) != H5FD_multifile_init()) {
        MF_ERROR("the file access property list does not use the multifile driver");
        return vfd_api_fail();
    }
    get_options(fapl_id, &opt);
    *mode = (H5FD_multifile_read_t)opt.read_mode;
    return 0;
}

/* ---------------------------------------------------------------- class callbacks: the rest
 * (open and close: mf_open.c) */

static herr_t
mf_term(void)
{
    return vfd_terminate(&mf_driver_g);
}

static void *
mf_fapl_get(H5FD_t *_file)
{
    H5FD_multifile_t *file = (H5FD_multifile_t *)_file;
    mf_options_t     *opt  = malloc(sizeof *opt);
    if (opt)
        *opt = file->opt;
    return opt;
}

/* (mf_file.h) */
void
mf_fapl_comm(hid_t fapl_id, int world, MPI_Comm *comm, MPI_Info *info)
{
    if (!vfd_fapl_mpi(fapl_id, comm, info))
        MPI_Comm_dup(world ? MPI_COMM_WORLD : MPI_COMM_SELF, comm);
}

static int
mf_cmp(const H5FD_t *f1, const H5FD_t *f2)
{
    const H5FD_multifile_t *a = (const H5FD_multifile_t *)f1, *b = (const H5FD_multifile_t *)f2;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->ino != b->ino)
        return a->ino < b->ino ? -1 : 1;
    return 0;
}

static haddr_t
mf_get_eoa(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const H5FD_multifile_t *)file)->eoa;
}

static herr_t
mf_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
    (void)type;
    if (addr > MF_MAXADDR) {
        MF_ERROR("%s: address %" PRIuHADDR " beyond the driver's maximum", ((H5FD_multifile_t *)file)->path,
                 addr);
        return -1;
    }
    ((H5FD_multifile_t *)file)->eoa = addr;
    return 0;
}

/* ---------------------------------------------------------------- I/O */

/* records read from other ranks' indexes, added to the map together */
typedef struct {
    const mf_tail_t *tail;
    int64_t         *hlc;
    mf_pieces_t      pieces;
} refresh_ctx_t;

/* new records are resolved with the map in one pass (O((n + m) log)) when they are many
 * beside it, else inserted one by one (each O(log n), plus moving the map's tail) */
#define MF_BUILD_MIN 64

static int
collect_record(const mf_record_t *rec, uint64_t seq, void *arg)
{
    refresh_ctx_t *ctx = arg;
    if (rec->stamp > *ctx->hlc)
        *ctx->hlc = rec->stamp;
    return mf_pieces_add(&ctx->pieces, rec, (int32_t)ctx->tail->rank, seq);
}

static int
add_collected(mf_extents_t *map, const mf_pieces_t *p)
{
    if (p->n >= MF_BUILD_MIN && p->n >= map->n / 16)
        return mf_extents_build(map, p->v, p->n);
    for (size_t i = 0; i < p->n; i++)
        if (mf_extents_insert(map, p->v[i].addr, p->v[i].len, p->v[i].pos, &p->v[i].key) < 0)
            return -1;
    return 0;
}

/* rank r's index and data files, opened when first needed */
static int
open_tail(H5FD_multifile_t *f, int r, mf_err_t err)
{
    if (f->tails[r].idx_fd >= 0)
        return 0;
    if (mf_tail_open(&f->tails[r], f->dir_fd, f->path, (unsigned)r, MF_RUN_TAG(f->run_id), err) < 0)
        return -1;
    f->read_fds[r] = f->tails[r].data_fd;
    return 0;
}

/* a collective read's cut names records of rank r that its index does not give (the
 * file system shows a shorter file, or a record fails its checksum): an error, never a
 * read without them */
static int
short_of_cut(const H5FD_multifile_t *f, int r, mf_err_t err)
{
    snprintf(
        err, MF_ERRMSG_SIZE,
        "%s/%d.offset: rank %d wrote %" PRIu64 " bytes of index before this collective read, but %" PRIu64
        " of them can be read here (a file system that shows other nodes' writes late, or a damaged record)",
        f->path, r, r, f->cut[r], f->tails[r].consumed);
    return -1;
}

/* read what the other ranks appended to their indexes since the last look (during a
 * collective read: up to the cut agreed at its start) */
static int
refresh(H5FD_multifile_t *f, mf_err_t err)
{
    refresh_ctx_t ctx = {NULL, &f->hlc, {NULL, 0, 0}};
    int           rc  = 0;
    mf_close_run(f);
    for (int r = 0; r < f->size && rc == 0; r++) {
        int torn;
        if (r == f->rank)
            continue;
        rc       = open_tail(f, r, err);
        ctx.tail = &f->tails[r];
        if (rc == 0)
            rc = mf_tail_poll_to(&f->tails[r], f->cut_on ? f->cut[r] : UINT64_MAX, collect_record, &ctx, 0,
                                 &torn, err);
        if (rc == 0 && f->cut_on && f->tails[r].consumed < f->cut[r]) /* written, yet not all readable */
            rc = short_of_cut(f, r, err);
    }
    if (rc == 0 && add_collected(&f->map, &ctx.pieces) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", f->path);
        rc = -1;
    }
    mf_pieces_free(&ctx.pieces);
    if (rc < 0) /* records read from the tails may be lost to the map: never read from it again */
        snprintf(f->broken, sizeof f->broken, "%s", err);
    return rc;
}

/*
 * Order stamps form a hybrid logical clock: the common clock (mf_clock.h), raised past
 * every stamp this rank has given or learned of. Stamps grow along each rank's index.
 */
static int64_t
next_stamp(H5FD_multifile_t *f)
{
    int64_t now = mf_clock_now(&f->clock);
    f->hlc      = now > f->hlc ? now : f->hlc + 1;
    return f->hlc;
}

/*
 * Before writing metadata: learn the last stamp of every other rank's index. HDF5 writes
 * metadata at its cache's sync points, each rank a share, with barriers between sync
 * points; so whatever another rank wrote of an entry at an earlier sync point is in its
 * index already, and this rank's rewrite is stamped after it, whatever the clocks say.
 */
static int
learn_stamps(H5FD_multifile_t *f, mf_err_t err)
{
    mf_close_run(f);
    for (int r = 0; r < f->size; r++)
        if (r != f->rank && (open_tail(f, r, err) < 0 || mf_tail_last_stamp(&f->tails[r], &f->hlc, err) < 0))
            return -1;
    return 0;
}

/* test hook: H5MF_TEST_UNORDERED=1 switches the ordering of collective writes and of
 * metadata off (the driver as it was without them), so tests can show they catch the loss */
static bool
unordered(void)
{
    static int set = -1;
    if (set < 0) {
        const char *v = getenv("H5MF_TEST_UNORDERED");
        set           = v && *v == '1';
    }
    return set;
}

/* Is the current call collective? Then every rank of the file makes it (HDF5's rule for
 * its MPI-IO driver, which calls MPI_File_set_view / *_all in it). */
static bool
collective_call(void)
{
    return !unordered() && vfd_collective_call();
}

/*
 * The start and the end of a collective write, on every rank: the ranks exchange the
 * largest stamp, so every write of the call is stamped after every earlier write of any
 * rank, and every later write after every write of the call; no rank returns before
 * every rank's part is written (as MPI-IO's collective writes end), and the ranks agree
 * on the outcome (status: this rank's).
 */
static herr_t
sync_collective(H5FD_multifile_t *f, herr_t status)
{
    mf_close_run(f);
    return vfd_sync_collective(&mf_driver_g, f->comm, f->path, "rank", "collective write", status, &f->hlc);
}

/*
 * The start of a collective read, on every rank: the ranks agree on a cut, each rank's
 * index length as it enters, and the call reads the other ranks' records only up to it.
 * So the call reads the file as it was when it began on every rank, as HDF5's MPI-IO
 * driver's collective reads do (they end with a collective MPI_File_set_view, which no
 * rank leaves before every rank has read): every write a rank
 * issued before it entered is in it, and no write a rank issues after its own part of
 * the call returned (while a slower rank still reads) is. The run is closed first, so no
 * later write extends a record inside the cut. A rank's records beyond the cut are read
 * by its next read; end_cut ends the call. coll: the call is collective (HDF5's MPI-IO
 * driver reads collectively in a vector call made in collective mode, and in a plain
 * call only for raw data).
 */
static herr_t
agree_cut(H5FD_multifile_t *f, bool coll)
{
    if (f->mode != MODE_WRITE || f->size == 1 || !coll)
        return 0;
    mf_close_run(f);
    if (MPI_Allgather(&f->idx_pos, 1, MPI_UINT64_T, f->cut, 1, MPI_UINT64_T, f->comm) != MPI_SUCCESS) {
        MF_ERROR("%s: the ranks could not agree on the start of a collective read", f->path);
        return -1;
    }
    f->cut_on = true;
    return 0;
}

/* the end of a collective read: reads go back to every record there is */
static herr_t
end_cut(H5FD_multifile_t *f, herr_t status)
{
    f->cut_on = false;
    return status;
}

/* copy [addr, addr+size) out of the extent map; fds[rank] reads a rank's data */
static int
read_map(const mf_extents_t *map, const int *fds, haddr_t addr, size_t size, unsigned char *buf,
         const char *path, mf_err_t err)
{
    uint64_t end = addr + size, cur = addr;
    for (size_t i = mf_extents_find(map, addr); i < map->n && map->v[i].addr < end; i++) {
        const mf_extent_t *e  = &map->v[i];
        uint64_t           lo = e->addr > cur ? e->addr : cur;
        uint64_t           hi = e->addr + e->len < end ? e->addr + e->len : end;
        if (lo > cur)
            memset(buf + (cur - addr), 0, lo - cur); /* never written: zeros */
        if (e->key.rank == MF_HOLE_RANK)
            memset(buf + (lo - addr), 0, hi - lo);
        else {
            long long got =
                mf_pread_all(fds[e->key.rank], buf + (lo - addr), hi - lo, e->pos + (lo - e->addr));
            if (got != (long long)(hi - lo)) {
                snprintf(err, MF_ERRMSG_SIZE, "%s/%d: cannot read %" PRIu64 " bytes at %" PRIu64 ": %s", path,
                         e->key.rank, hi - lo, e->pos + (lo - e->addr),
                         got < 0 ? strerror(errno) : "short file");
                return -1;
            }
        }
        cur = hi;
    }
    if (cur < end)
        memset(buf + (cur - addr), 0, end - cur);
    return 0;
}

/* one piece of a transfer described by MPI datatypes */
typedef struct {
    H5FD_multifile_t *f;
    H5FD_mem_t        type;
} piece_ctx_t;

static int    read_range(H5FD_multifile_t *f, haddr_t addr, size_t size, void *buf);
static herr_t write_at(H5FD_t *_file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                       const void *buf);

static int
read_piece(void *ctx, uint64_t at, void *mem, size_t len)
{
    return read_range(((piece_ctx_t *)ctx)->f, at, len, mem);
}

static int
write_piece(void *ctx, uint64_t at, void *mem, size_t len)
{
    piece_ctx_t *c = ctx;
    return write_at((H5FD_t *)c->f, c->type, H5P_DEFAULT, at, len, mem);
}

/* a transfer of `count` elements of btype against the file view (addr, ftype) */
static herr_t
typed_transfer(H5FD_multifile_t *f, H5FD_mem_t type, bool writing, MPI_Datatype btype, MPI_Datatype ftype,
               haddr_t addr, size_t count, void *buf)
{
    piece_ctx_t ctx = {f, type};
    char        err[VFD_ERR_SIZE];
    if (vfd_typed_transfer(btype, count, buf, ftype, addr, writing ? write_piece : read_piece, &ctx, err) <
        0) {
        MF_ERROR("%s: a collective %s described by MPI datatypes: %s", f->path, writing ? "write" : "read",
                 err);
        return -1;
    }
    return 0;
}

static int read_ready(H5FD_multifile_t *f, haddr_t addr, size_t size);

static herr_t
mf_read(H5FD_t *_file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    H5FD_multifile_t *f = (H5FD_multifile_t *)_file;
    MPI_Datatype      btype, ftype;
    (void)dxpl;
    if (agree_cut(f, type == H5FD_MEM_DRAW && collective_call()) < 0)
        return -1;
    if (vfd_call_datatypes(type, &btype, &ftype) < 0) {
        MF_ERROR("%s: cannot get the MPI datatypes of a collective read from HDF5", f->path);
        return end_cut(f, -1);
    }
    if (vfd_types_are_bytes(btype, ftype))
        return end_cut(f, read_ready(f, addr, size) < 0 || read_range(f, addr, size, buf) < 0 ? -1 : 0);
    return end_cut(
        f, read_ready(f, addr, 0) < 0 ? -1 : typed_transfer(f, type, false, btype, ftype, addr, size, buf));
}

/* before the reads of a call: the address is valid, and the other ranks' new records are known */
static int
read_ready(H5FD_multifile_t *f, haddr_t addr, size_t size)
{
    mf_err_t err;
    if (addr > MF_MAXADDR || size > MF_MAXADDR - addr) {
        MF_ERROR("%s: read of %zu bytes at %" PRIuHADDR " overflows the address space", f->path, size, addr);
        return -1;
    }
    if (f->mode == MODE_ALIAS) {
        MF_ERROR("%s: a stand-in handle for a file open already cannot be read", f->path);
        return -1;
    }
    if (f->mode != MODE_WRITE)
        return 0;
    if (*f->broken) {
        MF_ERROR("%s (an earlier read failed; reads of this open file are refused since)", f->broken);
        return -1;
    }
    if (f->size > 1 && refresh(f, err) < 0) {
        MF_ERROR("%s", err);
        return -1;
    }
    return 0;
}

/* MODE_INPLACE: the data checksum of every record whose bytes [addr, addr + size) are
 * read from, each record once per open (its whole bytes: a checksum covers a record) */
static int
check_records(H5FD_multifile_t *f, haddr_t addr, size_t size, mf_err_t err)
{
    const mf_extents_t *map = &f->dir.map;
    for (size_t i = mf_extents_find(map, addr); i < map->n && map->v[i].addr < addr + size; i++) {
        const mf_key_t *k = &map->v[i].key;
        if (k->rank == MF_HOLE_RANK || !f->checked[k->rank] || f->checked[k->rank][k->seq])
            continue;
        char p[PATH_MAX];
        mf_data_path(p, sizeof p, f->path, (unsigned)k->rank);
        if (mf_record_check(f->rank_fds[k->rank], p, &f->dir.ranks[k->rank].v[k->seq], k->seq, err) < 0)
            return -1;
        f->checked[k->rank][k->seq] = 1;
    }
    return 0;
}

/* the bytes at [addr, addr + size), whatever the mode, once read_ready said yes */
static int
read_range(H5FD_multifile_t *f, haddr_t addr, size_t size, void *buf)
{
    mf_err_t err;
    if (addr > MF_MAXADDR || size > MF_MAXADDR - addr) {
        MF_ERROR("%s: read of %zu bytes at %" PRIuHADDR " overflows the address space", f->path, size, addr);
        return -1;
    }
    if (f->mode == MODE_PLAIN) {
        long long got = mf_pread_all(f->plain_fd, buf, size, addr);
        if (got < 0) {
            MF_ERROR("%s: read of %zu bytes at %" PRIuHADDR ": %s", f->path, size, addr, strerror(errno));
            return -1;
        }
        memset((char *)buf + got, 0, size - (size_t)got); /* beyond the end: zeros, as sec2 */
        return 0;
    }
    const mf_extents_t *map = f->mode == MODE_INPLACE ? &f->dir.map : &f->map;
    if ((f->mode == MODE_INPLACE && check_records(f, addr, size, err) < 0) ||
        read_map(map, f->read_fds, addr, size, buf, f->path, err) < 0) {
        MF_ERROR("%s", err);
        return -1;
    }
    if (f->mode == MODE_INPLACE && addr + size > f->dir.size) /* bytes beyond the committed end of file */
        memset((char *)buf + (addr >= f->dir.size ? 0 : f->dir.size - addr), 0,
               addr >= f->dir.size ? size : addr + size - f->dir.size);
    return 0;
}

/* a read at a file address, whatever the mode (one entry of a vector read) */
static herr_t
read_at(H5FD_t *_file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    H5FD_multifile_t *f = (H5FD_multifile_t *)_file;
    (void)type;
    (void)dxpl;
    return read_ready(f, addr, size) < 0 || read_range(f, addr, size, buf) < 0 ? -1 : 0;
}

/*
 * One record per contiguous run: a write that continues this rank's last record in the
 * file and in the data file, with the same memory type in the same epoch, extends that
 * record (rewritten in place in the index) instead of adding one. The extension takes
 * the record's stamp. That is exact because a run is closed (close_run) at every event
 * that orders this rank's writes against other ranks' (a collective write, learning
 * stamps before metadata, reading other ranks' records, an epoch boundary): between
 * two such events no other rank's write of the same bytes is ordered before or after
 * this rank's (MPI-IO leaves concurrent conflicting writes undefined), so stamping the
 * whole run at its start orders it as correctly as stamping each write. extend_run
 * returns 0 when extended, 1 when the write needs a record of its own, -1 on error.
 */
static int
write_index_record(H5FD_multifile_t *f, const mf_record_t *rec, uint64_t at)
{
    unsigned char rec_buf[MF_RECORD_SIZE];
    mf_record_encode(rec, rec_buf);
    if (mf_pwrite_all(f->idx_fd, rec_buf, sizeof rec_buf, at) < 0) {
        MF_ERROR("%s/%d.offset: cannot write a record: %s", f->path, f->rank, strerror(errno));
        return -1;
    }
    return 0;
}

/* the bytes of a write at the end of this rank's data file */
static int
append_bytes(H5FD_multifile_t *f, const void *buf, size_t size)
{
    if (mf_pwrite_all(f->data_fd, buf, size, f->data_pos) < 0) {
        MF_ERROR("%s/%d: cannot append %zu bytes: %s", f->path, f->rank, size, strerror(errno));
        return -1;
    }
    return 0;
}

/* [addr, addr + size), just appended at data_pos as part of record number seq, in the map */
static int
map_own(H5FD_multifile_t *f, const mf_record_t *rec, haddr_t addr, size_t size, uint64_t seq)
{
    mf_key_t key = {rec->epoch, rec->stamp, f->rank, seq};
    if (mf_extents_insert(&f->map, addr, size, f->data_pos, &key) < 0) {
        MF_ERROR("%s: out of memory", f->path);
        return -1;
    }
    return 0;
}

static int
extend_run(H5FD_multifile_t *f, H5FD_mem_t type, haddr_t addr, size_t size, const void *buf)
{
    mf_record_t *run = &f->run;
    if (!f->run_open || run->type != (uint16_t)type || run->epoch != f->epoch ||
        run->addr + run->len != addr || run->pos + run->len != f->data_pos)
        return 1;
    mf_record_t ext = *run;
    ext.len += size;
    ext.data_crc = f->opt.checksums ? mf_data_crc(run->data_crc, buf, size) : 0;
    if (append_bytes(f, buf, size) < 0 || write_index_record(f, &ext, f->idx_pos - MF_RECORD_SIZE) < 0 ||
        map_own(f, &ext, addr, size, f->nrec - 1) < 0)
        return -1;
    *run = ext;
    f->data_pos += size;
    return 0;
}

/*
 * A new record. A large write starts at a data-file position congruent to its file
 * address modulo MF_ALIGN (the data file gets a hole), so a merge on a file system with
 * reflinks (XFS, Btrfs) can share its whole blocks instead of copying them.
 */
static int
append_record(H5FD_multifile_t *f, H5FD_mem_t type, haddr_t addr, size_t size, const void *buf)
{
    if (size >= MF_ALIGN_MIN)
        f->data_pos += (addr - f->data_pos) % MF_ALIGN;
    mf_record_t rec = {
        addr,     size,           f->data_pos, next_stamp(f),
        f->epoch, (uint16_t)type, 0,           f->opt.checksums ? mf_data_crc(0, buf, size) : 0};
    if (append_bytes(f, buf, size) < 0 || write_index_record(f, &rec, f->idx_pos) < 0 ||
        map_own(f, &rec, addr, size, f->nrec) < 0)
        return -1;
    f->run      = rec;
    f->run_open = true;
    f->data_pos += size;
    f->idx_pos += MF_RECORD_SIZE;
    f->nrec++;
    return 0;
}

/* a write at a file address, whatever the mode (also one entry of a vector write) */
static herr_t
write_at(H5FD_t *_file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *buf)
{
    H5FD_multifile_t *f = (H5FD_multifile_t *)_file;
    (void)dxpl;
    if (f->mode != MODE_WRITE && !(f->mode == MODE_PLAIN && f->writable)) {
        MF_ERROR("%s: the file is open read-only", f->path);
        return -1;
    }
    if (addr > MF_MAXADDR || size > MF_MAXADDR - addr) {
        MF_ERROR("%s: write of %zu bytes at %" PRIuHADDR " overflows the address space", f->path, size, addr);
        return -1;
    }
    if (f->mode == MODE_PLAIN) {
        if (mf_pwrite_all(f->plain_fd, buf, size, addr) < 0) {
            MF_ERROR("%s: write of %zu bytes at %" PRIuHADDR ": %s", f->path, size, addr, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (size == 0)
        return 0;
    int extended = extend_run(f, type, addr, size, buf);
    return extended <= 0 ? extended : append_record(f, type, addr, size, buf);
}

/* H5Fget_vfd_handle: as MPI-IO, a pointer to an MPI_File, the driver's handle that is
 * not the file's bytes (vfd_mpihandle.h: writes through it fail, reads read nothing) */
static herr_t
mf_get_handle(H5FD_t *_file, hid_t fapl, void **handle)
{
    H5FD_multifile_t *f = (H5FD_multifile_t *)_file;
    (void)fapl;
    if (vfd_mpi_handle_get(&f->mpi_handle, handle) < 0) {
        MF_ERROR("%s: no MPI file handle to give (it could not be opened, or the program closed it)",
                 f->path);
        return -1;
    }
    return 0;
}

static haddr_t
mf_get_eof(const H5FD_t *_file, H5FD_mem_t type)
{
    (void)type;
    return ((const H5FD_multifile_t *)_file)->eof;
}

static herr_t
write_entry(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    return write_at(file, type, dxpl, addr, size, buf);
}

/*
 * A collective call that HDF5 carries out independently underneath: the application's
 * transfer list says collective, HDF5's record of the call says independent (HDF5 breaks
 * collective I/O for a type conversion with selection I/O off, an H5Dwrite_multi over a
 * compact dataset, ...). The application may rely on the call's order against the
 * collective calls before it, and HDF5 keeps it only by the MPI_Allreduce it makes at
 * the start of every collective dataset call (which the driver does not see): the
 * writes of an earlier call are complete before any rank goes on.
 */
static bool
collective_made_independent(hid_t dxpl)
{
    H5FD_mpio_xfer_t asked = H5FD_MPIO_INDEPENDENT, made = H5FD_MPIO_INDEPENDENT;
    herr_t           got = -1;
    if (dxpl == H5P_DEFAULT || H5CX_get_io_xfer_mode(&made) < 0 || made == H5FD_MPIO_COLLECTIVE)
        return false;
    H5E_BEGIN_TRY
    {
        got = H5Pget_dxpl_mpio(dxpl, &asked);
    }
    H5E_END_TRY
    return got >= 0 && asked == H5FD_MPIO_COLLECTIVE;
}

/*
 * Before a call's writes, learn the other ranks' stamps (the last of each index) when
 * no exchange of stamps orders them: with metadata among them (metadata is rewritten by
 * other ranks between sync points), or in a collective call made independent (its
 * writes must be stamped after every write of the calls before it, which are in the
 * indexes already: see collective_made_independent). Stamps then follow the order of
 * the program, not the clocks.
 */
static herr_t
before_writes(H5FD_multifile_t *f, bool metadata, hid_t dxpl)
{
    mf_err_t err;
    if (f->mode != MODE_WRITE || f->size == 1 || unordered() ||
        !(metadata || collective_made_independent(dxpl)))
        return 0;
    if (learn_stamps(f, err) < 0) {
        MF_ERROR("%s", err);
        return -1;
    }
    return 0;
}

static herr_t
mf_write(H5FD_t *_file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *buf)
{
    H5FD_multifile_t *f     = (H5FD_multifile_t *)_file;
    bool              coll  = collective_call();
    herr_t            ret   = coll ? sync_collective(f, 0) : 0;
    MPI_Datatype      btype = MPI_BYTE, ftype = MPI_BYTE;
    if (ret >= 0 && vfd_call_datatypes(type, &btype, &ftype) < 0) {
        MF_ERROR("%s: cannot get the MPI datatypes of a collective write from HDF5", f->path);
        ret = -1;
    }
    if (ret >= 0)
        ret = before_writes(f, type != H5FD_MEM_DRAW, dxpl);
    if (ret >= 0)
        ret = vfd_types_are_bytes(btype, ftype)
                  ? write_at(_file, type, dxpl, addr, size, buf)
                  : typed_transfer(f, type, true, btype, ftype, addr, size, (void *)buf);
    return coll ? sync_collective(f, ret) : ret;
}

/* vector entries are plain byte ranges (HDF5 passes no MPI datatypes with them) */
static herr_t
mf_read_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[], haddr_t addrs[], size_t sizes[],
               void *bufs[])
{
    H5FD_multifile_t *f = (H5FD_multifile_t *)file;
    if (agree_cut(f, collective_call()) < 0)
        return -1;
    return end_cut(f, vfd_each_entry(read_at, file, dxpl, count, types, addrs, sizes, bufs));
}

static herr_t
mf_write_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[], haddr_t addrs[], size_t sizes[],
                const void *bufs[])
{
    H5FD_multifile_t *f        = (H5FD_multifile_t *)file;
    bool              coll     = collective_call();
    bool              metadata = false;
    for (uint32_t i = 0; i < count && types[i] != H5FD_MEM_NOLIST; i++)
        metadata = metadata || types[i] != H5FD_MEM_DRAW;
    herr_t ret = coll ? sync_collective(f, 0) : 0;
    if (ret >= 0)
        ret = before_writes(f, metadata, dxpl);
    /* the rows of a chunk, each an entry, are one write: one data write and one record */
    if (ret >= 0)
        ret = vfd_each_run(write_entry, file, dxpl, count, types, addrs, sizes, bufs);
    return coll ? sync_collective(f, ret) : ret;
}

/* one piece of a selection read, once read_ready said yes for the call */
static herr_t
read_entry(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    (void)type;
    (void)dxpl;
    return read_range((H5FD_multifile_t *)file, addr, size, buf) < 0 ? -1 : 0;
}

/* a selection transfer: collective when HDF5's MPI-IO driver makes it collective (in
 * collective mode, whatever the memory type), as the vector callbacks */
static herr_t
mf_read_selection(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count, hid_t mem_spaces[],
                  hid_t file_spaces[], haddr_t offsets[], size_t element_sizes[], void *bufs[])
{
    H5FD_multifile_t *f = (H5FD_multifile_t *)file;
    if (agree_cut(f, collective_call()) < 0)
        return -1;
    herr_t ret = read_ready(f, 0, 0) < 0 ? -1 : 0;
    if (ret >= 0)
        ret = vfd_each_selection(read_entry, false, file, type, dxpl, count, mem_spaces, file_spaces, offsets,
                                 element_sizes, bufs);
    return end_cut(f, ret);
}

static herr_t
mf_write_selection(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count, hid_t mem_spaces[],
                   hid_t file_spaces[], haddr_t offsets[], size_t element_sizes[], const void *bufs[])
{
    H5FD_multifile_t *f    = (H5FD_multifile_t *)file;
    bool              coll = collective_call();
    herr_t            ret  = coll ? sync_collective(f, 0) : 0;
    if (ret >= 0)
        ret = before_writes(f, type != H5FD_MEM_DRAW, dxpl);
    /* the buffers are only read from: the cast serves the shared walk */
    if (ret >= 0)
        ret = vfd_each_selection(write_entry, true, file, type, dxpl, count, mem_spaces, file_spaces, offsets,
                                 element_sizes, (void **)bufs);
    return coll ? sync_collective(f, ret) : ret;
}

static herr_t
mf_flush(H5FD_t *_file, hid_t dxpl, hbool_t closing)
{
    H5FD_multifile_t *f = (H5FD_multifile_t *)_file;
    (void)dxpl;
    (void)closing;
    if (f->mode == MODE_WRITE && f->opt.sync && (fdatasync(f->data_fd) < 0 || fdatasync(f->idx_fd) < 0)) {
        MF_ERROR("%s/%d: fdatasync: %s", f->path, f->rank, strerror(errno));
        return -1;
    }
    if (f->mode == MODE_PLAIN && f->writable && f->opt.sync && fdatasync(f->plain_fd) < 0) {
        MF_ERROR("%s: fdatasync: %s", f->path, strerror(errno));
        return -1;
    }
    return 0;
}

/* a file written in place: once every rank's writes are out, rank 0 sets its size to the EOA */
static herr_t
truncate_plain(H5FD_multifile_t *f)
{
    mf_err_t    err = "";
    struct stat st;
    int         ok = 1;
    if (mf_agree(f->comm, 1, err) < 0) /* the barrier */
        return -1;
    if (f->rank == 0 && (fstat(f->plain_fd, &st) < 0 ||
                         ((haddr_t)st.st_size != f->eoa && ftruncate(f->plain_fd, (off_t)f->eoa) < 0))) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot set the size to %" PRIuHADDR ": %s", f->path, f->eoa,
                 strerror(errno));
        ok = 0;
    }
    if (mf_agree(f->comm, ok, err) < 0) {
        MF_ERROR("%s", err);
        return -1;
    }
    f->eof = f->eoa;
    return 0;
}

/* HDF5 truncates collectively at every flush and close: the epoch boundary */
static herr_t
mf_truncate(H5FD_t *_file, hid_t dxpl, hbool_t closing)
{
    H5FD_multifile_t *f   = (H5FD_multifile_t *)_file;
    mf_err_t          err = "";
    (void)dxpl;
    (void)closing;
    if (f->mode == MODE_PLAIN && f->writable)
        return truncate_plain(f);
    if (f->mode != MODE_WRITE)
        return 0;
    if (mf_commit(f, MF_STATE_WRITING, err) < 0) {
        MF_ERROR("%s", err);
        return -1;
    }
    return 0;
}

/* H5Fdelete: collective over the fapl's communicator like HDF5's mpio driver; rank 0
 * removes a multifile directory (only one: any other directory is left alone) or a file */
static herr_t
mf_delete(const char *name, hid_t fapl_id)
{
    MPI_Comm    comm = MPI_COMM_NULL;
    MPI_Info    info = MPI_INFO_NULL;
    mf_err_t    err  = "";
    int         rank = 0, ok = 1, head;
    struct stat st;
    if (vfd_ensure_mpi(&mf_driver_g, name) < 0)
        return -1;
    mf_options_t opt;
    if (mf_fapl_options(name, fapl_id, &opt) < 0)
        return -1;
    mf_fapl_comm(fapl_id, opt.comm_world, &comm, &info);
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        char     body[PATH_MAX];
        uint64_t run;
        if (lstat(name, &st) < 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: cannot delete: %s", name, strerror(errno));
            ok = 0;
        }
        else if (S_ISLNK(st.st_mode)) { /* as remove(): the link, not what it names */
            if (unlink(name) < 0) {
                snprintf(err, MF_ERRMSG_SIZE, "%s: cannot delete: %s", name, strerror(errno));
                ok = 0;
            }
        }
        else if ((head = mf_head_read(name, body, sizeof body, &run, err)) < 0)
            ok = 0;           /* a head this driver cannot read (err says why): neither it nor its body */
        else if (head == 1) { /* the head first, then its body */
            mf_meta_t meta;   /* the body only if it is still this head's (same run) */
            int       own = mf_is_multifile(body) && mf_meta_read(body, &meta, err) == 0 && meta.run == run;
            if (own && mf_being_written(body)) {
                snprintf(err, MF_ERRMSG_SIZE, MF_BEING_WRITTEN, name);
                ok = 0;
            }
            else if (unlink(name) < 0 || (own && mf_rmtree(body) < 0)) {
                snprintf(err, MF_ERRMSG_SIZE, "%s: cannot delete: %s", name, strerror(errno));
                ok = 0;
            }
        }
        else if (S_ISDIR(st.st_mode) && !mf_is_multifile(name)) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: a directory that is not a multifile file: not deleting it",
                     name);
            ok = 0;
        }
        else if (S_ISDIR(st.st_mode) && mf_being_written(name)) {
            snprintf(err, MF_ERRMSG_SIZE, MF_BEING_WRITTEN, name);
            ok = 0;
        }
        else if (S_ISDIR(st.st_mode) ? mf_rmtree(name) < 0 : unlink(name) < 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: cannot delete: %s", name, strerror(errno));
            ok = 0;
        }
    }
    ok = mf_agree(comm, ok, err) == 0;
    MPI_Comm_free(&comm);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    if (!ok) {
        MF_ERROR("%s", err);
        return -1;
    }
    return 0;
}

static herr_t
mf_ctl(H5FD_t *_file, uint64_t op_code, uint64_t flags, const void *input, void **output)
{
    H5FD_multifile_t *f = (H5FD_multifile_t *)_file;
    vfd_comm_t        c = {f->comm, f->info, f->rank, f->size};
    (void)input;
    return vfd_ctl(&mf_driver_g, f->path, &c, op_code, flags, output);
}
