/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_open.c - the multifile driver's open path: a file opened in its mode (a new or
 * continued directory, a head and its body, an ordinary file, a directory read in place,
 * an alias of an open file), an epoch committed, the file closed (see mf_file.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mf_file.h"

#include "mf_head.h"
#include "mf_merge_mpi.h"
#include "mf_replace.h"
#include "vfd_fapl.h"
#include "vfd_mpihandle.h"
#include "vfd_path.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void
free_file(H5FD_multifile_t *f)
{
    if (!f)
        return;
    vfd_watch_stop(f->watch);
    mf_unregister_open(f);
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
    if (ok && done.left && f->rank == 0) /* the file is in place; err is rank 0's */
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
int
mf_fapl_options(const char *name, hid_t fapl_id, mf_options_t *opt)
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
    if (mf_fapl_options(name, fapl_id, &f->opt) < 0) {
        free_file(f);
        return NULL;
    }
    watch_open(f);
    mf_fapl_comm(fapl_id, f->opt.comm_world, &f->comm, &f->info);
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
    H5FD_multifile_t *same = identity(name, &st) == 0 ? mf_find_open(st.st_dev, st.st_ino) : NULL;
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

H5FD_t *
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
    if (ok && mf_register_open(f) < 0) {
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
int
mf_commit(H5FD_multifile_t *f, mf_state_t state, mf_err_t err)
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
    mf_close_run(f);
    f->eof = f->eoa; /* HDF5 truncates the file to its EOA at this point */
    return 0;
}

herr_t
mf_close(H5FD_t *_file)
{
    H5FD_multifile_t *f   = (H5FD_multifile_t *)_file;
    mf_err_t          err = "";
    int               ok  = 1;
    if (f->mode == MODE_WRITE)
        ok = mf_commit(f, MF_STATE_COMPLETE, err) == 0;
    if (!ok)
        MF_ERROR("%s", err);
    free_file(f);
    return ok ? 0 : -1;
}
