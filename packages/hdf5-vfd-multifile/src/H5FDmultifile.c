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
#include "H5FDmultifile.h"

#include "mf_clock.h"
#include "mf_extents.h"
#include "mf_format.h"
#include "mf_head.h"
#include "mf_index.h"
#include "mf_merge.h"
#include "mf_merge_mpi.h"
#include "mf_replace.h"
#include "mf_options.h"
#include "vfd_datatype.h"
#include "vfd_driver.h"
#include "vfd_fapl.h"
#include "vfd_mpihandle.h"
#include "vfd_path.h"
#include "vfd_selection.h"
#include "vfd_watch.h"

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

#define MF_MAXADDR   ((haddr_t)((1ULL << 62) - 1))
#define MF_ALIGN     (4096u)     /* block size a reflink can share */
#define MF_ALIGN_MIN (64u << 10) /* writes this large start block-aligned in the data file */

typedef enum { MODE_WRITE, MODE_PLAIN, MODE_INPLACE, MODE_ALIAS } mf_mode_t;

typedef struct {
    H5FD_t       pub;        /* public part, must be first */
    MPI_File     mpi_handle; /* for HDF5's atomicity calls (vfd_mpihandle.h) */
    MPI_Comm     comm;
    MPI_Info     info;
    int          rank, size;
    vfd_watch_t *watch;   /* until every rank has come to the open (watch_open) */
    int          nfiles;  /* MODE_WRITE: rank files in the directory (> size when fewer ranks continue it) */
    char        *path;    /* the multifile directory, or the file (MODE_PLAIN) */
    char        *head;    /* the head that names the directory (mf_head.h), or NULL: path is the name */
    int          head_fd; /* rank 0 of a write session: the head, extended at each commit */
    mf_mode_t    mode;
    mf_options_t opt;
    dev_t        dev; /* identity of the directory or file on disk (cmp, ALIAS) */
    ino_t        ino;
    haddr_t      eoa;
    haddr_t      eof; /* as HDF5's mpio driver: known at open and at each commit only, the same on
                         every rank (HDF5 takes decisions on it, e.g. "empty file: create") */
    /* MODE_WRITE */
    int          dir_fd;    /* the directory, held from open: it may be renamed meanwhile */
    int          writer_fd; /* rank 0: the one writer's lock (lock_writer) */
    int          data_fd, idx_fd;
    uint64_t     data_pos, idx_pos, nrec;
    uint64_t     nrec_idle; /* rank 0: records of the rank files no rank of this open writes */
    uint32_t     epoch;
    uint64_t     run_id; /* the write session's identity (the metafile's "run", mf_format.h) */
    mf_clock_t   clock;
    int64_t      hlc;                    /* the last order stamp given or learned (see next_stamp) */
    mf_record_t  run;                    /* this rank's last record, while writes may still extend it */
    char         broken[MF_ERRMSG_SIZE]; /* why the live map can no longer be trusted, or "" */
    bool         run_open;               /* see extend_run */
    mf_extents_t map;                    /* MODE_WRITE: live map; MODE_INPLACE: dir.map */
    mf_tail_t   *tails;                  /* other ranks' files (MODE_WRITE), NULL entries closed */
    uint64_t    *cut;    /* during a collective read: each rank's index length at its start (agree_cut) */
    bool         cut_on; /* a collective read is under way: refresh reads up to the cut */
    /* MODE_PLAIN */
    int      plain_fd;
    int      writable;
    uint64_t plain_size;
    /* MODE_INPLACE */
    mf_dir_t  dir;
    int      *rank_fds;
    uint8_t **checked; /* per rank and record: its data checksum held when first read */
    /* where each rank's data is read from (not owned): rank_fds (INPLACE), or this rank's
     * data_fd and the other ranks' tails[r].data_fd as they are opened (WRITE) */
    int *read_fds;
} H5FD_multifile_t;
VFD_MPI_HANDLE_FIRST(H5FD_multifile_t, mpi_handle);

/* the options keep the read mode as the public enum's value (mf_options.h has no HDF5) */
_Static_assert(MF_READ_MERGE == (int)H5FD_MULTIFILE_READ_MERGE &&
                   MF_READ_INPLACE == (int)H5FD_MULTIFILE_READ_INPLACE &&
                   MF_READ_PARALLEL == (int)H5FD_MULTIFILE_READ_PARALLEL_MERGE,
               "mf_options.h's read modes must be the values of H5FD_multifile_read_t");

/* no later write extends this rank's last record (see extend_run) */
static void
close_run(H5FD_multifile_t *f)
{
    f->run_open = false;
}

/* the files this process has open (not ALIAS): HDF5 asks a driver to open a file
 * again before it looks for it among its open files */
static H5FD_multifile_t **open_files_g = NULL;
static size_t             n_open_g = 0, cap_open_g = 0;

static int
register_open(H5FD_multifile_t *f)
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

static void
unregister_open(H5FD_multifile_t *f)
{
    for (size_t i = 0; i < n_open_g; i++)
        if (open_files_g[i] == f) {
            open_files_g[i] = open_files_g[--n_open_g];
            return;
        }
}

static H5FD_multifile_t *
find_open(dev_t dev, ino_t ino)
{
    for (size_t i = 0; i < n_open_g; i++)
        if (open_files_g[i]->dev == dev && open_files_g[i]->ino == ino)
            return open_files_g[i];
    return NULL;
}

/* ---------------------------------------------------------------- class callbacks */

static herr_t  mf_term(void);
static void   *mf_fapl_get(H5FD_t *file);
static H5FD_t *mf_open(const char *name, unsigned flags, hid_t fapl_id, haddr_t maxaddr);
static herr_t  mf_close(H5FD_t *file);
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
static vfd_driver_t mf_driver_g =
    VFD_DRIVER_INIT(&H5FD_multifile_g, "multifile", "h5stack multifile VFD", "multifile driver");
#define MF_ERROR(...) VFD_ERROR(&mf_driver_g, __VA_ARGS__)

/* all ranks' outcome, the message of the lowest failing rank in msg (vfd_agree) */
static int
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

/* ---------------------------------------------------------------- helpers */

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

/* the fapl's communicator and info; an access list that names none (HDF5_DRIVER=multifile
 * over a default list) is the calling rank's own file, or every rank's with comm=world;
 * both are the caller's to free */
static void
fapl_comm(hid_t fapl_id, int world, MPI_Comm *comm, MPI_Info *info)
{
    if (!vfd_fapl_mpi(fapl_id, comm, info))
        MPI_Comm_dup(world ? MPI_COMM_WORLD : MPI_COMM_SELF, comm);
}

static void
free_file(H5FD_multifile_t *f)
{
    if (!f)
        return;
    vfd_watch_stop(f->watch);
    unregister_open(f);
    if (f->data_fd >= 0)
        close(f->data_fd);
    if (f->idx_fd >= 0)
        close(f->idx_fd);
    if (f->dir_fd >= 0)
        close(f->dir_fd);
    if (f->writer_fd >= 0)
        close(f->writer_fd);
    if (f->plain_fd >= 0)
        close(f->plain_fd);
    if (f->head_fd >= 0)
        close(f->head_fd);
    if (f->tails) {
        for (int r = 0; r < f->nfiles; r++)
            if (f->tails[r].idx_fd >= 0)
                mf_tail_close(&f->tails[r]);
        free(f->tails);
    }
    free(f->cut);
    if (f->mode == MODE_WRITE)
        free(f->read_fds);
    if (f->rank_fds) {
        for (unsigned r = 0; r < f->dir.meta.ranks; r++)
            if (f->rank_fds[r] >= 0)
                close(f->rank_fds[r]);
        free(f->rank_fds);
    }
    if (f->checked) {
        for (unsigned r = 0; r < f->dir.meta.ranks; r++)
            free(f->checked[r]);
        free(f->checked);
    }
    if (f->mode == MODE_INPLACE)
        mf_dir_free(&f->dir);
    else
        mf_extents_free(&f->map);
    vfd_comm_free(&f->mpi_handle, &f->comm, &f->info);
    free(f->path);
    free(f->head);
    free(f);
}

/* One writer at a time: rank 0 of a write session holds an exclusive flock on rank 0's
 * data file of the directory until the close. A second writer (another program, or an
 * open over other ranks in this one) is refused instead of mixing its records with the
 * first's; a file system without flock (ENOTSUP, ENOLCK) locks nothing, as HDF5's own
 * file locks then do. */
static int
writer_lock(int at, const char *rank0_data, int *fd)
{
    *fd = openat(at, rank0_data, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0)
        return errno == ENOENT ? 0 : -1;
    return flock(*fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK ? 1 : 0;
}

#define MF_SECOND_WRITER                                                                                     \
    "%s: open for writing by another program (or another open in this one): a multifile file has one "       \
    "writer at a time; close the other first"

/* H5Fdelete of a file another program writes: refused, as HDF5's own delete fails on a
 * file another process holds locked (its open for the signature cannot lock it) */
#define MF_BEING_WRITTEN "%s: open for writing by another program: not deleting it (close it first)"

/* rank 0 of a write session: take the writer's lock, held until the close */
static int
lock_writer(H5FD_multifile_t *f, mf_err_t err)
{
    char name[MF_NAME_SIZE];
    mf_data_name(name, sizeof name, 0);
    int held = writer_lock(f->dir_fd, name, &f->writer_fd);
    if (held < 0)
        snprintf(err, MF_ERRMSG_SIZE, "%s/0: %s", f->path, strerror(errno));
    else if (held)
        snprintf(err, MF_ERRMSG_SIZE, MF_SECOND_WRITER, f->path);
    return held ? -1 : 0;
}

/* remove the multifile directory at path unless it is being written; 0 or -1 (err) */
static int
remove_body(const char *path, mf_err_t err)
{
    if (mf_being_written(path)) {
        snprintf(err, MF_ERRMSG_SIZE, MF_SECOND_WRITER, path);
        return -1;
    }
    if (mf_rmtree(path) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot remove the old multifile directory: %s", path,
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* rank 0: make an empty multifile directory at path, honouring H5F_ACC_TRUNC/EXCL */
static int
create_dir(const char *path, unsigned flags, int nranks, uint64_t run, int do_sync, mf_err_t err)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (flags & H5F_ACC_EXCL) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: exists (H5F_ACC_EXCL)", path);
            return -1;
        }
        if (!(flags & H5F_ACC_TRUNC)) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: exists and H5F_ACC_TRUNC was not given", path);
            return -1;
        }
        if (S_ISDIR(st.st_mode)) {
            if (!mf_is_multifile(path)) {
                snprintf(err, MF_ERRMSG_SIZE,
                         "%s: is a directory that is not a multifile file: not touching it", path);
                return -1;
            }
            if (remove_body(path, err) < 0)
                return -1;
        }
        else if (unlink(path) < 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: cannot replace the existing file: %s", path, strerror(errno));
            return -1;
        }
    }
    if (mkdir(path, 0755) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot create the directory: %s", path, strerror(errno));
        return -1;
    }
    if (do_sync && vfd_sync_parent(path) < 0) { /* with sync=on the directory itself survives a power loss */
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot sync the directory that holds it: %s", path,
                 strerror(errno));
        return -1;
    }
    int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", path, strerror(errno));
        return -1;
    }
    mf_meta_t meta = {MF_META_VERSION, (uint32_t)nranks, MF_STATE_WRITING, 0, 0, 0, run};
    int       rc   = mf_meta_write(dirfd, path, &meta, 0, err);
    close(dirfd);
    return rc;
}

/* layout=head, rank 0: what is at name goes (H5F_ACC_TRUNC/EXCL honoured): a head with
 * its directory, a multifile directory; an ordinary file is replaced by the new head */
static int
clear_name(const char *name, unsigned flags, mf_err_t err)
{
    struct stat st;
    char        old[PATH_MAX] = "";
    uint64_t    run           = 0;
    if (stat(name, &st) != 0)
        return 0;
    if (flags & H5F_ACC_EXCL) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: exists (H5F_ACC_EXCL)", name);
        return -1;
    }
    if (!(flags & H5F_ACC_TRUNC)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: exists and H5F_ACC_TRUNC was not given", name);
        return -1;
    }
    /* its directory goes too if it is still this head's (same run); also when the head's
     * first bytes were overwritten (its slot still names the directory: -1 with old set) */
    mf_meta_t meta;
    int       head = mf_head_read(name, old, sizeof old, &run, err);
    if (head == 1 || (head < 0 && old[0]))
        return mf_is_multifile(old) && mf_meta_read(old, &meta, err) == 0 && meta.run == run
                   ? remove_body(old, err)
                   : 0;
    if (S_ISDIR(st.st_mode) && !mf_is_multifile(name)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: is a directory that is not a multifile file: not touching it",
                 name);
        return -1;
    }
    return S_ISDIR(st.st_mode) ? remove_body(name, err) : 0;
}

/* layout=head, rank 0: the body's path for a new head at name: NAME.h5mf, unless a
 * head there (renamed) still names that directory: then NAME.<run>.h5mf. The orphans of
 * the name (NAME.h5mf and NAME.<run>.h5mf that no head names, no writer holds) are
 * removed, except under H5F_ACC_EXCL, which never removes anything: then the body is
 * NAME.<run>.h5mf too, as it is beside a NAME.h5mf that is not a multifile directory */
static int
choose_body(const char *name, unsigned flags, uint64_t run, char body[PATH_MAX], mf_err_t err)
{
    struct stat st;
    mf_meta_t   meta;
    bool        excl = flags & H5F_ACC_EXCL;
    if (!excl)
        mf_remove_run_orphans(name);
    mf_head_body_path(name, run, 0, body, PATH_MAX);
    if (lstat(body, &st) != 0)
        return 0;
    if (!excl && (!mf_is_multifile(body) || mf_meta_read(body, &meta, err) < 0)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: exists and is not a multifile directory: not touching it", body);
        return -1;
    }
    if (!excl && mf_head_owned(body, meta.run) == 0)
        return remove_body(body, err);
    mf_head_body_path(name, run, 1, body, PATH_MAX);
    if (lstat(body, &st) == 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: exists: not touching it", body);
        return -1;
    }
    return 0;
}

/* layout=head, rank 0: the body (a new multifile directory), then the head over name
 * (a crash leaves the old name or the new head, whose body exists); f->head_fd */
static int
create_head(H5FD_multifile_t *f, const char *name, unsigned flags, char body[PATH_MAX], mf_err_t err)
{
    if (clear_name(name, flags, err) < 0 || choose_body(name, flags, f->run_id, body, err) < 0 ||
        create_dir(body, flags, f->size, f->run_id, f->opt.sync, err) < 0)
        return -1;
    f->head_fd = mf_head_write(name, body, f->run_id, f->opt.sync, (flags & H5F_ACC_EXCL) != 0, err);
    if (f->head_fd < 0)
        mf_rmtree(body);
    return f->head_fd < 0 ? -1 : 0;
}

/* every rank: the directory is body, named by the head at name */
static int
take_head(H5FD_multifile_t *f, const char *name, char body[PATH_MAX], mf_err_t err)
{
    MPI_Bcast(body, PATH_MAX, MPI_CHAR, 0, f->comm);
    free(f->path);
    free(f->head);
    f->path = strdup(body);
    f->head = realpath(name, NULL); /* a merge replaces the head itself, never a link to it */
    if (!f->head)
        f->head = strdup(name);
    if (!f->path || !f->head) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", name);
        return -1;
    }
    return 0;
}

/* every rank: hold the directory open (files are opened and the metafile replaced in it),
 * and shared, before anything of it is read: a merge in place locks it exclusively
 * (mf_merge_lock_dir), so neither starts under the other (where the file system has
 * flock) */
static int
open_dir(H5FD_multifile_t *f, mf_err_t err)
{
    f->dir_fd = open(f->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (f->dir_fd < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", f->path,
                 errno == ENOTDIR ? "reconstructed into a file meanwhile (a merge finished): open it again"
                                  : strerror(errno));
        return -1;
    }
    if (flock(f->dir_fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: being merged in place by another process (h5mf merge, a read=merge open): not "
                 "opened for writing; open it once the merge is done",
                 f->path);
        return -1;
    }
    return 0;
}

/* the two files of a rank in a multifile directory */
typedef enum { RANK_DATA, RANK_INDEX } rank_file_t;

/* this rank's data or index file in the directory; path: for messages */
static int
open_rank_file(H5FD_multifile_t *f, rank_file_t which, int flags, char *path, size_t n)
{
    char name[MF_NAME_SIZE];
    (which == RANK_INDEX ? mf_index_name : mf_data_name)(name, sizeof name, (unsigned)f->rank);
    snprintf(path, n, "%s/%s", f->path, name);
    return openat(f->dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0644);
}

/* this rank's data and index files, new, in the directory held open */
static int
create_rank_files(H5FD_multifile_t *f, mf_err_t err)
{
    char              dpath[PATH_MAX], ipath[PATH_MAX];
    unsigned char     hdr[MF_INDEX_HEADER_SIZE];
    mf_index_header_t h = {MF_FORMAT_VERSION,
                           (uint32_t)f->rank,
                           (uint32_t)f->nfiles,
                           MF_RECORD_SIZE,
                           f->opt.checksums ? MF_DATA_CRC32C : 0,
                           MF_RUN_TAG(f->run_id)};
    f->data_fd          = open_rank_file(f, RANK_DATA, O_RDWR | O_CREAT | O_TRUNC, dpath, sizeof dpath);
    if (f->data_fd < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot create: %s", dpath, strerror(errno));
        return -1;
    }
    f->idx_fd = open_rank_file(f, RANK_INDEX, O_RDWR | O_CREAT | O_TRUNC, ipath, sizeof ipath);
    mf_index_header_encode(&h, hdr);
    if (f->idx_fd < 0 || mf_pwrite_all(f->idx_fd, hdr, sizeof hdr, 0) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot create: %s", ipath, strerror(errno));
        return -1;
    }
    f->idx_pos = MF_INDEX_HEADER_SIZE;
    return 0;
}

/* every rank: create its data and index files */
static int
open_rank_files(H5FD_multifile_t *f, mf_err_t err)
{
    if (open_dir(f, err) < 0 || create_rank_files(f, err) < 0)
        return -1;
    return f->rank == 0 ? lock_writer(f, err) : 0;
}

/* reconstruct the directory into a file that replaces it (parallel: every rank writes its
 * share; serial: rank 0 alone), after checking every data checksum (the directory is
 * removed afterwards, and with it the last chance to find a damaged byte); from before
 * its load to the swap, rank 0 holds it locked: no writer adds records that the swap
 * would lose (mf_merge_run) */
static int
merge_dir(H5FD_multifile_t *f, bool parallel, mf_err_t err)
{
    mf_merge_job_t  job  = {.comm      = parallel ? f->comm : MPI_COMM_SELF,
                            .dir       = f->path,
                            .head      = f->head,
                            .load_mode = MF_LOAD_COMPLETE,
                            .verify    = 1};
    mf_merge_done_t done = {0};
    int             ok   = f->rank != 0 || f->head || mf_check_in_place(f->path, err) == 0;
    if (mf_agree(f->comm, ok, err) < 0)
        return -1;
    if (parallel || f->rank == 0)
        ok = mf_merge_run(&job, &done, err) == 0;
    if (ok && done.left) /* the file is in place */
        fprintf(stderr, "multifile: warning: %s\n", err);
    if (mf_agree(f->comm, ok, err) < 0)
        return -1;
    if (f->head) { /* the ordinary file is at the head's name now */
        free(f->path);
        f->path = f->head;
        f->head = NULL;
    }
    return 0;
}

static int
set_identity(H5FD_multifile_t *f, mf_err_t err)
{
    struct stat st;
    if (stat(f->path, &st) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", f->path, strerror(errno));
        return -1;
    }
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    return 0;
}

/* an ordinary file; read-write: every rank writes in place (pwrite), as the original
 * mpiposix driver did (needs a file system with POSIX consistency across nodes) */
static int
open_plain(H5FD_multifile_t *f, int writable, mf_err_t err)
{
    struct stat st;
    f->mode     = MODE_PLAIN;
    f->writable = writable;
    f->plain_fd = open(f->path, writable ? O_RDWR : O_RDONLY);
    if (f->plain_fd < 0 || fstat(f->plain_fd, &st) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", f->path, strerror(errno));
        return -1;
    }
    f->dev        = st.st_dev;
    f->ino        = st.st_ino;
    f->plain_size = (uint64_t)st.st_size;
    f->eof        = (haddr_t)f->plain_size;
    return 0;
}

/* MODE_WRITE: one tail per other rank (opened when first needed) and where each rank's
 * data is read from (this rank: its own data file) */
static int
alloc_tails(H5FD_multifile_t *f, mf_err_t err)
{
    f->tails    = calloc((size_t)f->nfiles, sizeof *f->tails);
    f->read_fds = calloc((size_t)f->nfiles, sizeof *f->read_fds);
    f->cut      = calloc((size_t)f->size, sizeof *f->cut);
    if (!f->tails || !f->read_fds || !f->cut) { /* nothing for free_file to close */
        free(f->tails);
        f->tails = NULL;
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", f->path);
        return -1;
    }
    for (int r = 0; r < f->nfiles; r++) {
        f->tails[r].idx_fd = f->tails[r].data_fd = -1;
        f->read_fds[r]                           = r == f->rank ? f->data_fd : -1;
    }
    return 0;
}

/* this rank's files in a continued directory: appended to when the directory has them;
 * made, and with sync=on on disk before the metafile names them, when this open has
 * more ranks than the directory has rank files */
static int
open_own_files(H5FD_multifile_t *f, const mf_dir_t *d, mf_err_t err)
{
    char dpath[PATH_MAX], ipath[PATH_MAX];
    if ((uint32_t)f->rank >= d->meta.ranks) {
        if (create_rank_files(f, err) < 0)
            return -1;
        if (f->opt.sync && (fdatasync(f->idx_fd) < 0 || fsync(f->dir_fd) < 0)) {
            snprintf(err, MF_ERRMSG_SIZE, "%s/%d.offset: fdatasync: %s", f->path, f->rank, strerror(errno));
            return -1;
        }
        return 0;
    }
    const mf_rank_records_t *own = &d->ranks[f->rank];
    f->nrec                      = own->n;
    f->data_pos                  = own->data_size;
    f->idx_pos                   = MF_INDEX_HEADER_SIZE + own->n * MF_RECORD_SIZE;
    f->opt.checksums             = own->checksums != 0; /* new records follow the index's header */
    f->data_fd                   = open_rank_file(f, RANK_DATA, O_RDWR, dpath, sizeof dpath);
    f->idx_fd = f->data_fd < 0 ? -1 : open_rank_file(f, RANK_INDEX, O_RDWR, ipath, sizeof ipath);
    if (f->idx_fd < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", f->data_fd < 0 ? dpath : ipath, strerror(errno));
        return -1;
    }
    return 0;
}

/* the other rank files of a continued directory, with the records loaded skipped; files
 * of ranks new to the directory are opened when first read (they are made meanwhile) */
static int
open_other_files(H5FD_multifile_t *f, const mf_dir_t *d, mf_err_t err)
{
    if (alloc_tails(f, err) < 0)
        return -1;
    for (unsigned r = 0; r < d->meta.ranks; r++) {
        if (r == (unsigned)f->rank)
            continue;
        if (mf_tail_open(&f->tails[r], f->dir_fd, f->path, r, MF_RUN_TAG(f->run_id), err) < 0)
            return -1;
        mf_tail_skip(&f->tails[r], d->ranks[r].n);
        f->read_fds[r] = f->tails[r].data_fd;
        if (f->rank == 0 && r >= (unsigned)f->size) /* nobody writes there: counted by rank 0 */
            f->nrec_idle += d->ranks[r].n;
    }
    return 0;
}

/* read-write open of a complete multifile directory, by any number of ranks: every rank
 * loads the directory's extent map and goes on appending to its own files in new epochs
 * (rank files of ranks this open does not have stay as they are and are read; ranks
 * the directory has no files of yet make them); the metafile says "writing" again until
 * the close */
static int
open_append(H5FD_multifile_t *f, mf_err_t err)
{
    mf_dir_t d;
    /* the shared lock before the load: no merge in place can replace what is loaded */
    if (mf_agree(f->comm, open_dir(f, err) == 0 && (f->rank != 0 || lock_writer(f, err) == 0), err) < 0)
        return -1;
    int ok = mf_dir_load(&d, f->path, MF_LOAD_COMPLETE, err) == 0;
    if (mf_agree(f->comm, ok, err) < 0) {
        if (ok)
            mf_dir_free(&d);
        return -1;
    }
    uint64_t eoa = d.meta.eoa, records = d.records;
    f->mode   = MODE_WRITE;
    f->run_id = d.meta.run;
    f->epoch  = d.meta.committed;
    f->eof    = (haddr_t)d.size;
    f->nfiles = d.meta.ranks > (uint32_t)f->size ? (int)d.meta.ranks : f->size;
    ok        = mf_agree(f->comm, open_own_files(f, &d, err) == 0, err) == 0;
    ok        = ok && open_other_files(f, &d, err) == 0;
    mf_extents_free(&f->map);
    f->map = d.map; /* taken over */
    mf_extents_init(&d.map);
    mf_dir_free(&d);
    if (mf_agree(f->comm, ok && set_identity(f, err) == 0, err) < 0)
        return -1;
    if (mf_clock_sync(&f->clock, f->comm) != MPI_SUCCESS) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot set up the ranks' common clock", f->path);
        return -1;
    }
    if (f->rank == 0) {
        mf_meta_t meta = {MF_META_VERSION, (uint32_t)f->nfiles, MF_STATE_WRITING, f->epoch, eoa, records,
                          f->run_id};
        ok             = mf_meta_write(f->dir_fd, f->path, &meta, f->opt.sync, err) == 0;
    }
    return mf_agree(f->comm, ok, err);
}

static int
open_inplace(H5FD_multifile_t *f, mf_err_t err)
{
    f->mode = MODE_INPLACE;
    mf_extents_free(&f->map);
    if (mf_dir_load(&f->dir, f->path, MF_LOAD_PARTIAL, err) < 0) {
        f->mode = MODE_PLAIN; /* nothing of dir to free */
        return -1;
    }
    f->rank_fds = malloc(f->dir.meta.ranks * sizeof *f->rank_fds);
    f->checked  = calloc(f->dir.meta.ranks, sizeof *f->checked);
    for (unsigned r = 0; f->checked && r < f->dir.meta.ranks; r++)
        if (f->dir.ranks[r].checksums && !(f->checked[r] = calloc(f->dir.ranks[r].n + 1, 1))) {
            free(f->rank_fds);
            f->rank_fds = NULL;
        }
    if (!f->rank_fds || !f->checked) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", f->path);
        return -1;
    }
    for (unsigned r = 0; r < f->dir.meta.ranks; r++)
        f->rank_fds[r] = -1;
    f->eof      = (haddr_t)f->dir.size;
    f->read_fds = f->rank_fds;
    for (unsigned r = 0; r < f->dir.meta.ranks; r++) {
        char p[PATH_MAX];
        mf_data_path(p, sizeof p, f->path, r);
        if ((f->rank_fds[r] = mf_open_regular(AT_FDCWD, p, p, err)) < 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- open / close */

/* the open's wait for the other ranks of its communicator, bounded by open_wait: from
 * before HDF5 duplicates the communicator to the end of the first collective (open_alias) */
static void
watch_open(H5FD_multifile_t *f)
{
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    f->watch = vfd_watch_start(
        f->opt.open_wait,
        "multifile: %s: rank %d of MPI_COMM_WORLD has waited %d s in the collective open for the other "
        "ranks of the file's communicator (H5Pset_mpi_params, H5Pset_fapl_mpio, H5Pset_fapl_multifile or "
        "comm=world): either they never open the file (every rank of the communicator must; a file that "
        "one rank opens alone takes an access list without a communicator) or they come later than "
        "open_wait allows (raise it; 0 waits for ever). Ending the job",
        f->path, world_rank, (int)f->opt.open_wait);
}

/* the fapl's options: its driver info, then its config string (HDF5_DRIVER_CONFIG,
 * by-name selection); -1 (error pushed) when the string is wrong */
static int
fapl_options(const char *name, hid_t fapl_id, mf_options_t *opt)
{
    char err[MF_ERRMSG_SIZE];
    if (vfd_fapl_options(fapl_id, MF_OPTIONS_MAGIC, opt, sizeof *opt, mf_options_default, MF_OPTIONS_KEYS,
                         mf_option_item, err, sizeof err) == 0)
        return 0;
    MF_ERROR("%s: %s", name, err);
    return -1;
}

/* a new file structure: its communicator and options from the fapl; NULL (error pushed) */
static H5FD_multifile_t *
new_file(const char *name, hid_t fapl_id)
{
    H5FD_multifile_t *f;
    if (!(f = calloc(1, sizeof *f))) {
        MF_ERROR("%s: out of memory", name);
        return NULL;
    }
    f->data_fd = f->idx_fd = f->plain_fd = f->dir_fd = f->writer_fd = f->head_fd = -1;
    f->comm                                                                      = MPI_COMM_NULL;
    f->info                                                                      = MPI_INFO_NULL;
    f->mpi_handle                                                                = MPI_FILE_NULL;
    mf_extents_init(&f->map);
    f->path = strdup(name);
    if (fapl_options(name, fapl_id, &f->opt) < 0) {
        free_file(f);
        return NULL;
    }
    watch_open(f);
    fapl_comm(fapl_id, f->opt.comm_world, &f->comm, &f->info);
    if (f->info == MPI_INFO_NULL) /* HDF5 takes a null info for an error (H5Fget_access_plist) */
        MPI_Info_create(&f->info);
    MPI_Comm_rank(f->comm, &f->rank);
    MPI_Comm_size(f->comm, &f->size);
    f->nfiles = f->size;
    return f;
}

/* what an open of name is known by (cmp, find_open): the directory a head names, or
 * what name is */
static int
identity(const char *name, struct stat *st)
{
    char     body[PATH_MAX];
    uint64_t run;
    mf_err_t ignored;
    return stat(mf_head_read(name, body, sizeof body, &run, ignored) == 1 ? body : name, st);
}

/* open already in this process, on every rank, over the same ranks: f becomes a
 * stand-in (see MODE_ALIAS); 1 if so, -1 (err, on every rank) when some rank has it
 * open already over other ranks (a file of its own, or one of all ranks): HDF5 would
 * share that open with this one, and the two sessions' collectives would never meet */
static int
open_alias(H5FD_multifile_t *f, const char *name, mf_err_t err)
{
    struct stat       st;
    H5FD_multifile_t *same = identity(name, &st) == 0 ? find_open(st.st_dev, st.st_ino) : NULL;
    int               cmp  = MPI_UNEQUAL;
    if (same)
        MPI_Comm_compare(same->comm, f->comm, &cmp);
    int here[2] = {same && (cmp == MPI_IDENT || cmp == MPI_CONGRUENT), same != NULL}, all[2] = {0, 0};
    here[1] = -here[1]; /* MIN of both: every rank the same ranks; any rank open */
    MPI_Allreduce(here, all, 2, MPI_INT, MPI_MIN, f->comm);
    vfd_watch_stop(f->watch); /* every rank has come */
    f->watch = NULL;
    if (!all[0] && all[1] < 0) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: open in this process already over other ranks (a rank's own file, or one of a "
                 "communicator with other ranks): close it before opening it over these",
                 name);
        return -1;
    }
    if (!all[0])
        return 0;
    f->mode = MODE_ALIAS;
    f->dev  = same->dev;
    f->ino  = same->ino;
    f->eoa  = same->eoa;
    f->eof  = same->eof;
    return 1;
}

/* Creates of one name by two programs at once: from the look at what the name holds
 * until the new file's writer lock is held, rank 0 holds an exclusive flock on the
 * directory that holds the name. A second create then finds the first's file being
 * written and is refused ("one writer at a time") instead of removing the files the
 * first one is making. Waits up to `seconds` for another create of that directory (0:
 * for ever); the lock's descriptor, -1 where the file system has no flock (nothing is
 * locked, as with the writer's lock), or -2 with the reason. */
static int
lock_creates(const char *name, double seconds, mf_err_t err)
{
    char        copy[PATH_MAX];
    const char *parent, *base;
    vfd_split_path(name, copy, &parent, &base);
    int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1; /* the create itself says what is wrong with the directory */
    for (double waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 0.01) {
        if (errno != EWOULDBLOCK) {
            close(fd);
            return -1;
        }
        if (seconds > 0 && waited >= seconds) {
            snprintf(
                err, MF_ERRMSG_SIZE,
                "%s: another program has been creating a file in %s for %.0f s (its lock on the directory)",
                name, parent, seconds);
            close(fd);
            return -2;
        }
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return fd;
}

/* H5F_ACC_CREAT: the directory (rank 0), every rank's files, the tails, the common clock */
static int
open_create(H5FD_multifile_t *f, const char *name, unsigned flags, mf_err_t err)
{
    int ok = 1, creates = -1;
    f->mode   = MODE_WRITE;
    f->run_id = f->rank == 0 ? mf_new_run() : 0;
    MPI_Bcast(&f->run_id, 1, MPI_UINT64_T, 0, f->comm);
    char body[PATH_MAX] = "";
    if (f->rank == 0 && (creates = lock_creates(name, f->opt.open_wait, err)) == -2)
        ok = 0;
    if (ok && f->rank == 0)
        ok = (f->opt.head ? create_head(f, name, flags, body, err)
                          : create_dir(name, flags, f->size, f->run_id, f->opt.sync, err)) == 0;
    if (mf_agree(f->comm, ok, err) == 0 &&
        (!f->opt.head || mf_agree(f->comm, take_head(f, name, body, err) == 0, err) == 0))
        ok = mf_agree(f->comm, open_rank_files(f, err) == 0, err) == 0;
    else
        ok = 0;
    if (creates >= 0)
        close(creates); /* the writer's lock is held from here on, or the create failed */
    if (!ok)
        return -1;
    ok = alloc_tails(f, err) == 0;
    if (ok && mf_clock_sync(&f->clock, f->comm) != MPI_SUCCESS) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot set up the ranks' common clock", name);
        ok = 0;
    }
    return mf_agree(f->comm, ok && set_identity(f, err) == 0, err) == 0 ? 0 : -1;
}

/* what an existing name is, as rank 0 finds it */
typedef enum { EXISTING_UNUSABLE, EXISTING_FILE, EXISTING_MULTIFILE, EXISTING_HEAD } existing_t;

/* rank 0: is name a head whose body is there, of the same run? EXISTING_HEAD (body),
 * EXISTING_UNUSABLE (err), or EXISTING_FILE when name is no head */
static int
existing_head(const char *name, char body[PATH_MAX], mf_err_t err)
{
    uint64_t  run = 0;
    mf_meta_t meta;
    mf_err_t  why;
    int       h = mf_head_read(name, body, PATH_MAX, &run, err);
    if (h <= 0)
        return h < 0 ? EXISTING_UNUSABLE : EXISTING_FILE;
    if (!mf_is_multifile(body) || mf_meta_read(body, &meta, why) < 0) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: the head of a multifile file, but its directory %s is missing or unreadable (%s): "
                 "a head moved away from its directory, or the directory removed; put them side by side "
                 "again (or open the directory itself, or reconstruct it: h5mf merge DIRECTORY -o FILE)",
                 name, body, mf_is_multifile(body) ? why : "no multifile directory there");
        return EXISTING_UNUSABLE;
    }
    if (meta.run != run) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: names the directory %s of run %016" PRIx64 ", which now holds run %016" PRIx64
                 ": the directory belongs to another file",
                 name, body, run, meta.run);
        return EXISTING_UNUSABLE;
    }
    return EXISTING_HEAD;
}

/* rank 0 of a session that writes a head's body: hold the head, extended at commits */
static int
hold_head(H5FD_multifile_t *f, mf_err_t err)
{
    int ok = 1;
    if (f->head && f->rank == 0 && (f->head_fd = open(f->head, O_RDWR | O_CLOEXEC)) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", f->head, strerror(errno));
        ok = 0;
    }
    return mf_agree(f->comm, ok, err);
}

/* an existing NAME: a multifile directory (continued, read in place, or reconstructed
 * and then read) or an ordinary file */
static int
open_existing(H5FD_multifile_t *f, const char *name, unsigned flags, mf_err_t err)
{
    /* rank 0 decides what NAME is, for all: a rank looking later could find the
     * directory already replaced by its reconstruction */
    struct stat st;
    int         rdwr           = (flags & H5F_ACC_RDWR) != 0;
    int         kind           = EXISTING_UNUSABLE; /* an existing_t, broadcast as an int */
    char        body[PATH_MAX] = "";
    if (f->rank == 0) {
        if (mf_is_multifile(name))
            kind = EXISTING_MULTIFILE;
        else if (stat(name, &st) == 0 && S_ISREG(st.st_mode))
            kind = existing_head(name, body, err);
        else
            snprintf(err, MF_ERRMSG_SIZE, "%s: %s", name,
                     stat(name, &st) != 0 ? strerror(errno) : "neither a multifile directory nor a file");
    }
    MPI_Bcast(&kind, 1, MPI_INT, 0, f->comm);
    if (kind == EXISTING_UNUSABLE) {
        MPI_Bcast(err, MF_ERRMSG_SIZE, MPI_CHAR, 0, f->comm);
        return -1;
    }
    if (kind == EXISTING_HEAD) {
        if (mf_agree(f->comm, take_head(f, name, body, err) == 0, err) != 0)
            return -1;
        kind = EXISTING_MULTIFILE;
    }
    if (kind == EXISTING_MULTIFILE && rdwr)
        return open_append(f, err) == 0 && hold_head(f, err) == 0 ? 0 : -1;
    if (kind == EXISTING_MULTIFILE && f->opt.read_mode == H5FD_MULTIFILE_READ_INPLACE)
        return mf_agree(f->comm, open_inplace(f, err) == 0 && set_identity(f, err) == 0, err) == 0 ? 0 : -1;
    int ok = 1;
    if (kind == EXISTING_MULTIFILE)
        ok = merge_dir(f, f->opt.read_mode == H5FD_MULTIFILE_READ_PARALLEL_MERGE, err) == 0;
    ok = ok && mf_agree(f->comm, open_plain(f, rdwr, err) == 0, err) == 0;
    return ok ? 0 : -1;
}

static H5FD_t *
mf_open(const char *name, unsigned flags, hid_t fapl_id, haddr_t maxaddr)
{
    H5FD_multifile_t *f;
    mf_err_t          err;
    memset(err, 0, sizeof err);
    if (!name || !*name || maxaddr == 0 || maxaddr > MF_MAXADDR) {
        MF_ERROR("invalid file name or maximum address");
        return NULL;
    }
    if (vfd_ensure_mpi(&mf_driver_g, name) < 0)
        return NULL;
    if (!(f = new_file(name, fapl_id)))
        return NULL;
    int alias = open_alias(f, name, err);
    if (alias > 0)
        return (H5FD_t *)f;
    vfd_mpi_handle_open(&f->mpi_handle); /* without it, HDF5's atomicity calls fail with MPI's error */
    int ok = alias == 0 && ((flags & H5F_ACC_CREAT) ? open_create(f, name, flags, err)
                                                    : open_existing(f, name, flags, err)) == 0;
    if (ok && register_open(f) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", name);
        ok = 0;
    }
    if (!ok) {
        MF_ERROR("%s", err);
        free_file(f);
        return NULL;
    }
    return (H5FD_t *)f;
}

/* has the directory been removed while open? Its files live on through the descriptors
 * held, as a POSIX file removed while open does; no new file can be made in it */
static bool
dir_removed(const H5FD_multifile_t *f)
{
    struct stat st;
    return fstat(f->dir_fd, &st) == 0 && st.st_nlink == 0;
}

/* the epoch boundary: every rank's records are written; rank 0 commits the metafile
 * (not in a removed directory: nothing could ever read it there) */
static int
commit(H5FD_multifile_t *f, mf_state_t state, mf_err_t err)
{
    int         ok = 1;
    struct stat own;
    if (f->opt.sync && (fdatasync(f->data_fd) < 0 || fdatasync(f->idx_fd) < 0)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s/%d: fdatasync: %s", f->path, f->rank, strerror(errno));
        ok = 0;
    }
    else if (fstat(f->idx_fd, &own) == 0 && own.st_nlink == 0 && !dir_removed(f)) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s/%d.offset: removed from the directory while open (by another program?)", f->path,
                 f->rank);
        ok = 0;
    }
    if (mf_agree(f->comm, ok, err) < 0) /* also the barrier: all records of this epoch are out */
        return -1;
    uint64_t records = 0; /* every record of the committed epochs: a reader must find them all */
    MPI_Reduce(&f->nrec, &records, 1, MPI_UINT64_T, MPI_SUM, 0, f->comm);
    if (f->rank == 0 && !dir_removed(f)) {
        mf_meta_t meta = {MF_META_VERSION,  (uint32_t)f->nfiles,    state,    f->epoch + 1,
                          (uint64_t)f->eoa, records + f->nrec_idle, f->run_id};
        ok             = mf_meta_write(f->dir_fd, f->path, &meta, f->opt.sync, err) == 0;
        if (ok && f->head_fd >= 0) /* the head's size: a hint for stat and ls, never read */
            mf_head_extend(f->head_fd, (uint64_t)f->eoa);
    }
    if (mf_agree(f->comm, ok, err) < 0)
        return -1;
    f->epoch++;
    close_run(f);
    f->eof = f->eoa; /* HDF5 truncates the file to its EOA at this point */
    return 0;
}

static herr_t
mf_close(H5FD_t *_file)
{
    H5FD_multifile_t *f   = (H5FD_multifile_t *)_file;
    mf_err_t          err = "";
    int               ok  = 1;
    if (f->mode == MODE_WRITE)
        ok = commit(f, MF_STATE_COMPLETE, err) == 0;
    if (!ok)
        MF_ERROR("%s", err);
    free_file(f);
    return ok ? 0 : -1;
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
    close_run(f);
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
    close_run(f);
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
    close_run(f);
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
    close_run(f);
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
    if (commit(f, MF_STATE_WRITING, err) < 0) {
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
    if (fapl_options(name, fapl_id, &opt) < 0)
        return -1;
    fapl_comm(fapl_id, opt.comm_world, &comm, &info);
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
