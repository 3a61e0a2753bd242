/*
 * mf_merge.c - loading, verifying and reconstructing a multifile directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mf_merge.h"

#include "mf_index.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
    mf_rank_records_t *rr;
    uint64_t           cap;
} collect_t;

static int collect(const mf_record_t *rec, uint64_t seq, void *arg)
{
    collect_t *c = arg;
    (void)seq;
    if (c->rr->n == c->cap) {
        uint64_t     cap = c->cap ? 2 * c->cap : 1024;
        mf_record_t *v   = realloc(c->rr->v, cap * sizeof *v);
        if (!v)
            return -1;
        c->rr->v = v;
        c->cap   = cap;
    }
    c->rr->v[c->rr->n++] = *rec;
    return 0;
}

static const mf_dir_t *sort_dir; /* qsort context */

static int order_cmp(const void *a, const void *b)
{
    const mf_extent_t *x = &sort_dir->map.v[*(const size_t *)a], *y = &sort_dir->map.v[*(const size_t *)b];
    if (x->key.rank != y->key.rank)
        return x->key.rank < y->key.rank ? -1 : 1;
    if (x->key.seq != y->key.seq)
        return x->key.seq < y->key.seq ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Every record the metafile committed must be there, intact: a complete directory has no
 * torn record, and the committed epochs hold exactly the records the last commit counted
 * (metafile version 2). Else the directory is damaged: refused, or with MF_LOAD_ANY noted.
 */
static int accounted(mf_dir_t *d, int load_mode, mf_err_t err)
{
    char msg[MF_ERRMSG_SIZE] = "";
    for (unsigned r = 0; r < d->meta.ranks && !*msg; r++)
        if (d->ranks[r].torn && d->meta.state == MF_STATE_COMPLETE)
            snprintf(msg, sizeof msg,
                     "%s: damaged: rank %u's index ends in a damaged or partial record although the directory "
                     "was closed (complete): corrupt or truncated, refused",
                     d->path, r);
    if (!*msg && d->meta.version >= 2 && d->records != d->meta.records)
        snprintf(msg, sizeof msg,
                 "%s: damaged: the metafile committed %" PRIu64 " records, the indexes hold %" PRIu64
                 " of them (an index truncated or damaged): refused",
                 d->path, d->meta.records, d->records);
    if (!*msg)
        return 0;
    if (load_mode == MF_LOAD_ANY) {
        snprintf(d->problem, sizeof d->problem, "%s", msg);
        return 0;
    }
    snprintf(err, MF_ERRMSG_SIZE, "%s", msg);
    return -1;
}

int mf_dir_load(mf_dir_t *d, const char *path, int load_mode, mf_err_t err)
{
    memset(d, 0, sizeof *d);
    mf_extents_init(&d->map);
    snprintf(d->path, sizeof d->path, "%s", path);
    if (mf_meta_read(path, &d->meta, err) < 0)
        return -1;
    uint32_t limit = d->meta.state == MF_STATE_COMPLETE ? UINT32_MAX : d->meta.committed;
    if (d->meta.state != MF_STATE_COMPLETE && load_mode == MF_LOAD_COMPLETE) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: incomplete: its writer did not close it (%" PRIu32 " flushes completed); records after the "
                 "last completed flush would be lost, so it is not reconstructed in place (see h5mf info; "
                 "h5mf merge --partial -o FILE keeps the directory)",
                 path, d->meta.committed);
        return -1;
    }
    if (d->meta.state != MF_STATE_COMPLETE && d->meta.committed == 0 && load_mode == MF_LOAD_PARTIAL) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: the writer never completed a flush or close (state writing, no committed epoch): "
                 "nothing can be reconstructed",
                 path);
        return -1;
    }
    d->ranks = calloc(d->meta.ranks, sizeof *d->ranks);
    if (!d->ranks) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", path);
        return -1;
    }
    for (unsigned r = 0; r < d->meta.ranks; r++) {
        mf_tail_t          t;
        mf_rank_records_t *rr = &d->ranks[r];
        collect_t          c  = {rr, 0};
        int                torn;
        struct stat        st;
        if (mf_tail_open(&t, AT_FDCWD, path, r, err) < 0)
            goto fail;
        int rc = mf_tail_poll(&t, collect, &c, 1, &torn, err);
        if (rc == 0 && t.have_header && t.hdr.ranks != d->meta.ranks) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: written by %" PRIu32 " ranks, the metafile says %" PRIu32, t.idx_path,
                     t.hdr.ranks, d->meta.ranks);
            rc = -1;
        }
        if (rc == 0 && !t.have_header) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: empty index (no header)", t.idx_path);
            rc = -1;
        }
        if (rc == 0 && fstat(t.data_fd, &st) < 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: %s", t.data_path, strerror(errno));
            rc = -1;
        }
        rr->torn      = (uint64_t)torn;
        rr->checksums = t.hdr.checksums;
        rr->data_size = rc == 0 ? (uint64_t)st.st_size : 0;
        for (uint64_t i = 0; rc == 0 && i < rr->n; i++) {
            mf_record_t *rec = &rr->v[i];
            rr->bytes += rec->len;
            if (rec->epoch >= limit) {
                rr->dropped++;
                continue;
            }
            d->records++;
            if (rec->pos + rec->len > rr->data_size) {
                snprintf(err, MF_ERRMSG_SIZE,
                         "%s: record %" PRIu64 " needs bytes %" PRIu64 "..%" PRIu64 " but the file has %" PRIu64
                         " (truncated rank file)",
                         t.data_path, i, rec->pos, rec->pos + rec->len, rr->data_size);
                rc = -1;
                break;
            }
            mf_key_t key = {rec->epoch, rec->stamp, (int32_t)r, i};
            if (rec->epoch + 1 > d->epochs)
                d->epochs = rec->epoch + 1;
            if (rec->flags & MF_REC_TRUNCATE) {
                key.rank = MF_HOLE_RANK;
                rc       = mf_extents_insert(&d->map, rec->addr, UINT64_MAX / 2 - rec->addr, 0, &key);
            }
            else
                rc = mf_extents_insert(&d->map, rec->addr, rec->len, rec->pos, &key);
            if (rc < 0)
                snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", path);
        }
        mf_tail_close(&t);
        if (rc < 0)
            goto fail;
    }
    if (accounted(d, load_mode, err) < 0)
        goto fail;
    d->size = d->meta.eoa ? d->meta.eoa : mf_extents_end(&d->map);
    /* holes carry no source: the order lists data extents only, hole key rank is -1 */
    d->order = malloc((d->map.n ? d->map.n : 1) * sizeof *d->order);
    if (!d->order) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", path);
        goto fail;
    }
    for (size_t i = 0; i < d->map.n; i++)
        if (d->map.v[i].key.rank != MF_HOLE_RANK && d->map.v[i].addr < d->size)
            d->order[d->norder++] = i;
    sort_dir = d;
    qsort(d->order, d->norder, sizeof *d->order, order_cmp);
    return 0;
fail:
    mf_dir_free(d);
    return -1;
}

void mf_dir_free(mf_dir_t *d)
{
    if (d->ranks)
        for (unsigned r = 0; r < d->meta.ranks; r++)
            free(d->ranks[r].v);
    free(d->ranks);
    free(d->order);
    mf_extents_free(&d->map);
    d->ranks = NULL;
    d->order = NULL;
}

uint64_t mf_part_bytes(const mf_dir_t *d, unsigned part, unsigned nparts)
{
    uint64_t total = 0;
    for (unsigned r = part; r < d->meta.ranks; r += nparts)
        total += d->ranks[r].bytes;
    return total;
}

int mf_merge_part(const mf_dir_t *d, int out_fd, unsigned part, unsigned nparts, mf_progress_cb cb, void *arg,
                  mf_err_t err)
{
    unsigned char *buf = malloc(MF_MERGE_BUFFER);
    uint64_t       done = 0, total = mf_part_bytes(d, part, nparts);
    int            ret  = 0;
    if (!buf) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", d->path);
        return -1;
    }
    size_t k = 0; /* cursor in d->order */
    for (unsigned r = part; r < d->meta.ranks && ret == 0; r += nparts) {
        const mf_rank_records_t *rr = &d->ranks[r];
        char                     data_path[PATH_MAX];
        mf_data_path(data_path, sizeof data_path, d->path, r);
        int fd = open(data_path, O_RDONLY);
        if (fd < 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: %s", data_path, strerror(errno));
            ret = -1;
            break;
        }
        while (k < d->norder && d->map.v[d->order[k]].key.rank < (int32_t)r)
            k++;
        for (uint64_t i = 0; i < rr->n && ret == 0; i++) {
            const mf_record_t *rec = &rr->v[i];
            uint32_t           crc = 0;
            for (uint64_t off = 0; off < rec->len && ret == 0;) { /* stream the record through buf */
                size_t    want = rec->len - off < MF_MERGE_BUFFER ? (size_t)(rec->len - off) : MF_MERGE_BUFFER;
                long long got  = mf_pread_all(fd, buf, want, rec->pos + off);
                if (got != (long long)want) {
                    snprintf(err, MF_ERRMSG_SIZE, "%s: cannot read record %" PRIu64 ": %s", data_path, i,
                             got < 0 ? strerror(errno) : "file too short");
                    ret = -1;
                    break;
                }
                if (rr->checksums)
                    crc = mf_data_crc(crc, buf, want);
                /* write the pieces of this record that survive, within [off, off+want) */
                for (size_t j = k; out_fd >= 0 && j < d->norder; j++) {
                    const mf_extent_t *e = &d->map.v[d->order[j]];
                    if (e->key.rank != (int32_t)r || e->key.seq != i)
                        break;
                    uint64_t s = e->pos, t = e->pos + e->len; /* data-file positions */
                    uint64_t lo = s > rec->pos + off ? s : rec->pos + off;
                    uint64_t hi = t < rec->pos + off + want ? t : rec->pos + off + want;
                    uint64_t addr = e->addr + (lo - s);
                    if (lo >= hi || addr >= d->size)
                        continue;
                    if (addr + (hi - lo) > d->size)
                        hi = lo + (d->size - addr);
                    if (mf_pwrite_all(out_fd, buf + (lo - rec->pos - off), hi - lo, addr) < 0) {
                        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot write the reconstructed file: %s", d->path,
                                 strerror(errno));
                        ret = -1;
                        break;
                    }
                }
                off += want;
                done += want;
                if (cb)
                    cb(done, total, arg);
            }
            if (ret == 0 && rr->checksums && rec->len && crc != rec->data_crc) {
                snprintf(err, MF_ERRMSG_SIZE,
                         "%s: record %" PRIu64 " (address %" PRIu64 ", %" PRIu64 " bytes): data checksum mismatch",
                         data_path, i, rec->addr, rec->len);
                ret = -1;
            }
            while (k < d->norder && d->map.v[d->order[k]].key.rank == (int32_t)r && d->map.v[d->order[k]].key.seq == i)
                k++;
        }
        close(fd);
    }
    free(buf);
    return ret;
}

/*
 * A merge holds an exclusive lock (flock) on its output .<base>.h5mf-merge.<pid> from its
 * creation until the directory is replaced, and on the directory itself from just before
 * the swap until it is removed (after the swap it has the output's name). A leftover whose
 * lock can be taken belongs to no running merge: one that died (or is a zombie), on this
 * node or another. It is removed: a partial output, or an old directory swapped out.
 */
static int held_lock_fd = -1; /* this process's lock on its output (a dup, kept past close) */

static void remove_stale_outputs(const char *parent, const char *base)
{
    char           prefix[PATH_MAX], path[PATH_MAX];
    DIR           *d = opendir(parent);
    struct dirent *e;
    snprintf(prefix, sizeof prefix, ".%s.h5mf-merge.", base);
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0) {
            snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
            if (!S_ISDIR(st.st_mode))
                unlink(path);
            else if (mf_is_multifile(path))
                mf_rmtree(path);
        }
        close(fd);
    }
    if (d)
        closedir(d);
}

int mf_merge_create_output(const mf_dir_t *d, const char *out_path, char *tmp_path, size_t n, mf_err_t err)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", out_path ? out_path : d->path);
    char *slash = strrchr(copy, '/');
    if (slash && slash[1] == '\0') { /* trailing slash */
        *slash = '\0';
        slash  = strrchr(copy, '/');
    }
    const char *base = slash ? slash + 1 : copy;
    if (slash)
        *slash = '\0';
    const char *parent = slash ? copy : ".";
    remove_stale_outputs(parent, base);
    snprintf(tmp_path, n, "%s/.%s.h5mf-merge.%ld", parent, base, (long)getpid());
    int fd = open(tmp_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot create: %s", tmp_path, strerror(errno));
        return -1;
    }
    if (held_lock_fd >= 0)
        close(held_lock_fd);
    held_lock_fd = dup(fd);
    if (held_lock_fd < 0 || flock(held_lock_fd, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot lock: %s", tmp_path, strerror(errno));
        close(fd);
        unlink(tmp_path);
        return -1;
    }
    if (ftruncate(fd, (off_t)d->size) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot size to %" PRIu64 " bytes: %s", tmp_path, d->size, strerror(errno));
        close(fd);
        unlink(tmp_path);
        return -1;
    }
    return fd;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int mf_rmtree(const char *path) { return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static void release_lock(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

int mf_replace_dir(const char *dir, const char *tmp_path, mf_err_t err)
{
    /* never a file that is not HDF5 in the place of the directory */
    if (!mf_is_hdf5(tmp_path)) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: the reconstructed file %s has no HDF5 signature: the directory is kept",
                 dir, tmp_path);
        return -1;
    }
    int dir_lock = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_lock >= 0)
        flock(dir_lock, LOCK_EX); /* once swapped out, it is this merge's until removed */
    /* one atomic step where the file system can: swap the directory and the new file */
    if (syscall(SYS_renameat2, AT_FDCWD, tmp_path, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        release_lock(&held_lock_fd);
        if (mf_rmtree(tmp_path) < 0) /* tmp_path now names the old directory */
            snprintf(err, MF_ERRMSG_SIZE, "%s: replaced, but the old directory %s could not be removed: %s", dir,
                     tmp_path, strerror(errno));
        release_lock(&dir_lock);
        return 0;
    }
    /* else: move the directory aside, the file in, then remove the directory */
    char aside[PATH_MAX];
    snprintf(aside, sizeof aside, "%s.h5mf-old.%ld", tmp_path, (long)getpid());
    if (rename(dir, aside) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot move the directory aside: %s", dir, strerror(errno));
        release_lock(&dir_lock);
        return -1;
    }
    if (rename(tmp_path, dir) < 0) {
        int e = errno;
        rename(aside, dir); /* put it back */
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot move the reconstructed file in place: %s", dir, strerror(e));
        release_lock(&dir_lock);
        return -1;
    }
    release_lock(&held_lock_fd);
    mf_rmtree(aside);
    release_lock(&dir_lock);
    return 0;
}
