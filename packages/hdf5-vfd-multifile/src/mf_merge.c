/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_merge.c - loading, verifying and reconstructing a multifile directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mf_merge.h"

#include "mf_index.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* records of epochs a reconstruction uses (those of epochs that never completed are
 * dropped when the writer did not finish) */
static int
used(const mf_dir_t *d, const mf_record_t *rec)
{
    return d->meta.state == MF_STATE_COMPLETE || rec->epoch < d->meta.committed;
}

/*
 * Every record the metafile committed must be there, intact: a complete directory has no
 * torn record, and the committed epochs hold exactly the records the last commit counted
 * (metafile version 2). Else the directory is damaged: refused, or with MF_LOAD_ANY noted.
 */
static int
accounted(mf_dir_t *d, int load_mode, mf_err_t err)
{
    char msg[MF_ERRMSG_SIZE] = "";
    for (unsigned r = 0; r < d->meta.ranks && !*msg; r++)
        if (d->ranks[r].torn && d->meta.state == MF_STATE_COMPLETE)
            snprintf(
                msg, sizeof msg,
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
        if (!*d->problem) /* an unreadable rank's reason comes first */
            snprintf(d->problem, sizeof d->problem, "%s", msg);
        return 0;
    }
    snprintf(err, MF_ERRMSG_SIZE, "%s", msg);
    return -1;
}

/* what reading one rank's index needs: the directory, the rank, and for a whole load
 * where its records and pieces go */
typedef struct {
    mf_dir_t    *d;
    unsigned     r;
    uint64_t     cap; /* of d->ranks[r].v; keep: records kept (mf_dir_load) */
    int          keep;
    mf_pieces_t *pieces; /* keep: the pieces of the map */
    const char  *data_path;
    char         msg[MF_ERRMSG_SIZE];
} reader_t;

/* a record's buckets [b0, b1] in the histogram, or 0 when it lies past the end */
static int
buckets(const mf_dir_t *d, uint64_t addr, uint64_t end, size_t *b0, size_t *b1)
{
    if (addr >= d->size || end <= addr)
        return 0;
    *b0 = (size_t)(addr / d->bucket);
    *b1 = (size_t)(((end < d->size ? end : d->size) - 1) / d->bucket);
    return 1;
}

/* one more in buckets b0..b1 of h, kept as differences (summed up by finish_histogram) */
static void
count_range(uint64_t *h, size_t b0, size_t b1)
{
    h[b0]++;
    if (b1 + 1 < MF_HIST)
        h[b1 + 1]--;
}

/* count the record in the histogram: every record, and apart the data records */
static void
histogram_add(mf_dir_t *d, const mf_record_t *rec)
{
    int    hole = rec->flags & MF_REC_TRUNCATE;
    size_t b0, b1;
    if (!buckets(d, rec->addr, hole ? UINT64_MAX : rec->addr + rec->len, &b0, &b1))
        return;
    count_range(d->hist_records, b0, b1);
    if (!hole)
        count_range(d->hist_data, b0, b1);
}

static void
finish_histogram(mf_dir_t *d)
{
    for (size_t b = 1; b < MF_HIST; b++) {
        d->hist_records[b] += d->hist_records[b - 1];
        d->hist_data[b] += d->hist_data[b - 1];
    }
}

static int
read_record(const mf_record_t *rec, uint64_t seq, void *arg)
{
    reader_t          *x  = arg;
    mf_dir_t          *d  = x->d;
    mf_rank_records_t *rr = &d->ranks[x->r];
    if (x->keep && rr->n == x->cap) {
        uint64_t     cap = x->cap ? 2 * x->cap : 1024;
        mf_record_t *v   = realloc(rr->v, cap * sizeof *v);
        if (!v)
            return snprintf(x->msg, sizeof x->msg, "%s: out of memory", d->path), -1;
        rr->v  = v;
        x->cap = cap;
    }
    if (x->keep)
        rr->v[rr->n] = *rec;
    rr->n++;
    rr->bytes += rec->len;
    if (!used(d, rec)) {
        rr->dropped++;
        return 0;
    }
    d->records++;
    if (rec->pos + rec->len > rr->data_size)
        return snprintf(x->msg, sizeof x->msg,
                        "%s: record %" PRIu64 " needs bytes %" PRIu64 "..%" PRIu64
                        " but the file has %" PRIu64 " (truncated rank file)",
                        x->data_path, seq, rec->pos, rec->pos + rec->len, rr->data_size),
               -1;
    if (rec->epoch + 1 > d->epochs)
        d->epochs = rec->epoch + 1;
    if (!x->keep) {
        histogram_add(d, rec);
        return 0;
    }
    if (mf_pieces_add(x->pieces, rec, (int32_t)x->r, seq) < 0)
        return snprintf(x->msg, sizeof x->msg, "%s: out of memory", d->path), -1;
    return 0;
}

/* whether a bad record followed by more is damage: in a complete directory, yes; one
 * whose writer did not finish may end in records of the epoch in progress that a crash
 * left with holes (writes after the last sync persist in any order), so there the first
 * bad record ends the index, and the count of committed records (accounted) tells
 * whether a committed one is missing. Every pass over the indexes reads them alike. */
static int
index_strict(const mf_dir_t *d)
{
    return d->meta.state == MF_STATE_COMPLETE;
}

/* read rank r's index: counts and checks (and with keep, its records and pieces) */
static int
read_rank(mf_dir_t *d, unsigned r, int keep, mf_pieces_t *pieces, mf_err_t err)
{
    mf_tail_t          t;
    mf_rank_records_t *rr = &d->ranks[r];
    struct stat        st;
    int                torn;
    if (mf_tail_open(&t, AT_FDCWD, d->path, r, MF_RUN_TAG(d->meta.run), err) < 0)
        return -1;
    reader_t x  = {d, r, 0, keep, pieces, t.data_path, ""};
    int      rc = fstat(t.data_fd, &st);
    if (rc < 0)
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", t.data_path, strerror(errno));
    rr->data_size = rc == 0 ? (uint64_t)st.st_size : 0;
    if (rc == 0 && (rc = mf_tail_poll(&t, read_record, &x, index_strict(d), &torn, err)) < 0 && *x.msg)
        snprintf(err, MF_ERRMSG_SIZE, "%s", x.msg);
    /* a header names the rank files of the open that made it; later opens may
     * have added more (a continuation by more ranks), never fewer */
    if (rc == 0 && t.have_header && (t.hdr.ranks > d->meta.ranks || t.hdr.ranks <= r)) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: made in a directory of %" PRIu32 " rank files, the metafile says %" PRIu32, t.idx_path,
                 t.hdr.ranks, d->meta.ranks);
        rc = -1;
    }
    if (rc == 0 && !t.have_header) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: empty index (no header)", t.idx_path);
        rc = -1;
    }
    rr->torn      = rc == 0 ? (uint64_t)torn : 0;
    rr->checksums = t.hdr.checksums;
    mf_tail_close(&t);
    return rc;
}

/* the metafile, and whether the directory may be read in this mode */
static int
load_meta(mf_dir_t *d, const char *path, int load_mode, mf_err_t err)
{
    memset(d, 0, sizeof *d);
    mf_extents_init(&d->map);
    snprintf(d->path, sizeof d->path, "%s", path);
    if (mf_meta_read(path, &d->meta, err) < 0)
        return -1;
    if (d->meta.state != MF_STATE_COMPLETE && load_mode == MF_LOAD_COMPLETE) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: incomplete: its writer did not close it (%" PRIu32
                 " flushes completed); records after the "
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
    if (!(d->ranks = calloc(d->meta.ranks, sizeof *d->ranks))) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", path);
        return -1;
    }
    return 0;
}

/* a rank whose index or data file cannot be read: with MF_LOAD_ANY the directory is
 * noted damaged (the first reason kept) and loading goes on; 0, or -1 to give up */
static int
unreadable(mf_dir_t *d, int load_mode, const mf_err_t why)
{
    if (load_mode != MF_LOAD_ANY)
        return -1;
    if (!*d->problem)
        snprintf(d->problem, sizeof d->problem, "%s: damaged: %s", d->path, why);
    return 0;
}

int
mf_dir_load(mf_dir_t *d, const char *path, int load_mode, mf_err_t err)
{
    mf_pieces_t p = {NULL, 0, 0};
    if (load_meta(d, path, load_mode, err) < 0)
        goto fail;
    for (unsigned r = 0; r < d->meta.ranks; r++)
        if (read_rank(d, r, 1, &p, err) < 0 && unreadable(d, load_mode, err) < 0)
            goto fail;
    if (mf_extents_build(&d->map, p.v, p.n) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory (%zu records)", path, p.n);
        goto fail;
    }
    mf_pieces_free(&p);
    if (accounted(d, load_mode, err) < 0)
        goto fail;
    d->size = d->meta.eoa ? d->meta.eoa : mf_extents_end(&d->map);
    return 0;
fail:
    mf_pieces_free(&p);
    mf_dir_free(d);
    return -1;
}

int
mf_dir_scan(mf_dir_t *d, const char *path, int load_mode, mf_err_t err)
{
    if (load_meta(d, path, load_mode, err) < 0)
        goto fail;
    if (!d->meta.eoa) { /* no end of file recorded: the map decides it */
        mf_dir_free(d);
        return mf_dir_load(d, path, load_mode, err);
    }
    d->scanned        = 1;
    d->window_records = MF_WINDOW_DEFAULT_BYTES / MF_WINDOW_RECORD_BYTES;
    d->size           = d->meta.eoa;
    d->bucket         = d->size / MF_HIST + 1; /* never 0, whatever the size */
    d->hist_records   = calloc(MF_HIST, sizeof *d->hist_records);
    d->hist_data      = calloc(MF_HIST, sizeof *d->hist_data);
    if (!d->hist_records || !d->hist_data) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", path);
        goto fail;
    }
    for (unsigned r = 0; r < d->meta.ranks; r++)
        if (read_rank(d, r, 0, NULL, err) < 0 && unreadable(d, load_mode, err) < 0)
            goto fail;
    finish_histogram(d);
    if (accounted(d, load_mode, err) < 0)
        goto fail;
    return 0;
fail:
    mf_dir_free(d);
    return -1;
}

void
mf_dir_free(mf_dir_t *d)
{
    if (d->ranks)
        for (unsigned r = 0; r < d->meta.ranks; r++)
            free(d->ranks[r].v);
    free(d->ranks);
    free(d->hist_records);
    free(d->hist_data);
    mf_extents_free(&d->map);
    d->ranks        = NULL;
    d->hist_records = d->hist_data = NULL;
}

/* ---------------------------------------------------------------- verification */

uint64_t
mf_verify_bytes(const mf_dir_t *d, unsigned part, unsigned nparts)
{
    uint64_t total = 0;
    for (unsigned r = part; r < d->meta.ranks; r += nparts)
        if (d->ranks[r].checksums)
            total += d->ranks[r].bytes;
    return total;
}

/* checking one rank's records as its index is read: its data file front to back through buf */
typedef struct {
    const mf_dir_t *d;
    int             fd;
    const char     *data_path;
    unsigned char  *buf;
    uint64_t        wlo, whi; /* the data-file bytes in buf */
    uint64_t       *done, total;
    mf_progress_cb  cb;
    void           *arg;
    char            msg[MF_ERRMSG_SIZE];
} verifier_t;

static int
verify_record(const mf_record_t *rec, uint64_t seq, void *arg)
{
    verifier_t *v   = arg;
    uint32_t    crc = 0;
    if (!used(v->d, rec) || rec->len == 0)
        return 0;
    for (uint64_t at = rec->pos; at < rec->pos + rec->len;) {
        if (at < v->wlo || at >= v->whi) { /* refill the window at `at` */
            long long got = mf_pread_all(v->fd, v->buf, MF_MERGE_BUFFER, at);
            if (got <= 0)
                return snprintf(v->msg, sizeof v->msg, "%s: cannot read record %" PRIu64 ": %s", v->data_path,
                                seq, got < 0 ? strerror(errno) : "file too short"),
                       -1;
            v->wlo = at;
            v->whi = at + (uint64_t)got;
        }
        uint64_t end = rec->pos + rec->len < v->whi ? rec->pos + rec->len : v->whi;
        crc          = mf_data_crc(crc, v->buf + (at - v->wlo), end - at);
        *v->done += end - at;
        at = end;
    }
    if (crc != rec->data_crc)
        return snprintf(v->msg, sizeof v->msg,
                        "%s: record %" PRIu64 " (address %" PRIu64 ", %" PRIu64
                        " bytes): data checksum mismatch",
                        v->data_path, seq, rec->addr, rec->len),
               -1;
    if (v->cb)
        v->cb(*v->done, v->total, v->arg);
    return 0;
}

int
mf_record_check(int fd, const char *data_path, const mf_record_t *rec, uint64_t seq, mf_err_t err)
{
    unsigned char buf[1 << 16];
    uint32_t      crc = 0;
    for (uint64_t at = rec->pos, end = rec->pos + rec->len; at < end;) {
        size_t    want = end - at < sizeof buf ? (size_t)(end - at) : sizeof buf;
        long long got  = mf_pread_all(fd, buf, want, at);
        if (got != (long long)want)
            return snprintf(err, MF_ERRMSG_SIZE, "%s: cannot read record %" PRIu64 ": %s", data_path, seq,
                            got < 0 ? strerror(errno) : "file too short"),
                   -1;
        crc = mf_data_crc(crc, buf, want);
        at += want;
    }
    if (crc != rec->data_crc)
        return snprintf(err, MF_ERRMSG_SIZE,
                        "%s: record %" PRIu64 " (address %" PRIu64 ", %" PRIu64
                        " bytes): data checksum mismatch",
                        data_path, seq, rec->addr, rec->len),
               -1;
    return 0;
}

/* check rank r's records: its index read as a stream (no record kept) */
static int
verify_rank(const mf_dir_t *d, unsigned r, unsigned char *buf, uint64_t *done, uint64_t total,
            mf_progress_cb cb, void *arg, mf_err_t err)
{
    mf_tail_t t;
    int       torn;
    if (mf_tail_open(&t, AT_FDCWD, d->path, r, MF_RUN_TAG(d->meta.run), err) < 0)
        return -1;
    verifier_t v   = {d, t.data_fd, t.data_path, buf, 0, 0, done, total, cb, arg, ""};
    int        ret = mf_tail_poll(&t, verify_record, &v, index_strict(d), &torn, err);
    if (ret < 0 && *v.msg)
        snprintf(err, MF_ERRMSG_SIZE, "%s", v.msg);
    mf_tail_close(&t);
    return ret;
}

int
mf_verify_part(const mf_dir_t *d, unsigned part, unsigned nparts, mf_progress_cb cb, void *arg, mf_err_t err)
{
    unsigned char *buf  = malloc(MF_MERGE_BUFFER);
    uint64_t       done = 0, total = mf_verify_bytes(d, part, nparts);
    int            ret = 0;
    if (!buf) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", d->path);
        return -1;
    }
    for (unsigned r = part; r < d->meta.ranks && ret == 0; r += nparts)
        if (d->ranks[r].checksums)
            ret = verify_rank(d, r, buf, &done, total, cb, arg, err);
    free(buf);
    return ret;
}

/* ---------------------------------------------------------------- reconstruction */

/* the part's share of the reconstructed file's data bytes: [*lo, *hi) counted over the
 * data extents in address order */
static void
part_range(const mf_dir_t *d, unsigned part, unsigned nparts, uint64_t *lo, uint64_t *hi)
{
    uint64_t total = 0;
    for (size_t i = 0; i < d->map.n; i++) {
        const mf_extent_t *e = &d->map.v[i];
        if (e->key.rank != MF_HOLE_RANK && e->addr < d->size)
            total += e->addr + e->len <= d->size ? e->len : d->size - e->addr;
    }
    /* 128-bit free: total * part / nparts without overflow for any total below 2^64 */
    *lo = total / nparts * part + total % nparts * part / nparts;
    *hi = total / nparts * (part + 1) + total % nparts * (part + 1) / nparts;
}

/* after mf_dir_scan: the address of the start of data bucket number k (0: the file's
 * start, all of them: its end) */
static uint64_t
data_boundary(const mf_dir_t *d, uint64_t k, uint64_t total)
{
    if (k == 0)
        return 0;
    for (size_t b = 0, seen = 0; b < MF_HIST && k < total; b++)
        if (d->hist_data[b] && seen++ == k)
            return b * d->bucket;
    return d->size;
}

/* after mf_dir_scan: the part's address range, [*lo, *hi), holding an equal share of the
 * buckets that hold data; returns the most bytes it will write */
static uint64_t
part_window(const mf_dir_t *d, unsigned part, unsigned nparts, uint64_t *lo, uint64_t *hi)
{
    uint64_t total = 0, bytes = 0;
    for (size_t b = 0; b < MF_HIST; b++)
        total += d->hist_data[b] > 0;
    *lo = data_boundary(d, total * part / nparts, total);
    *hi = data_boundary(d, total * (part + 1) / nparts, total);
    for (size_t b = (size_t)(*lo / d->bucket); *hi > *lo && b <= (*hi - 1) / d->bucket && b < MF_HIST; b++)
        if (d->hist_data[b])
            bytes += d->bucket;
    return bytes < *hi - *lo ? bytes : *hi - *lo;
}

/* after mf_dir_scan: the end of the window that starts at lo (below hi): as many whole
 * buckets as keep its records within d->window_records (at least one bucket) */
static uint64_t
window_end(const mf_dir_t *d, uint64_t lo, uint64_t hi)
{
    uint64_t records = 0;
    size_t   b       = (size_t)(lo / d->bucket);
    for (; b < MF_HIST && b * d->bucket < hi; b++) {
        if (d->window_records && records && records + d->hist_records[b] > d->window_records)
            break;
        records += d->hist_records[b];
    }
    uint64_t end = b * d->bucket;
    return end < hi && end > lo ? end : hi;
}

/* building the map of one window [lo, hi) from every rank's records that overlap it */
typedef struct {
    const mf_dir_t *d;
    unsigned        r;
    uint64_t        lo, hi;
    mf_pieces_t     p;
    int             oom; /* a piece did not fit in memory */
} window_t;

static int
window_record(const mf_record_t *rec, uint64_t seq, void *arg)
{
    window_t *w    = arg;
    int       hole = rec->flags & MF_REC_TRUNCATE;
    uint64_t  end  = hole ? UINT64_MAX : rec->addr + rec->len;
    if (!used(w->d, rec) || end <= w->lo || rec->addr >= w->hi || (!hole && rec->len == 0))
        return 0;
    if (mf_pieces_add(&w->p, rec, (int32_t)w->r, seq) < 0)
        return w->oom = 1, -1;
    mf_extent_t *e = &w->p.v[w->p.n - 1]; /* clipped to the window */
    uint64_t     a = e->addr > w->lo ? e->addr : w->lo;
    uint64_t     z = e->addr + e->len < w->hi ? e->addr + e->len : w->hi;
    e->pos += a - e->addr;
    e->addr = a;
    e->len  = z - a;
    return 0;
}

/* the map of the window that starts at lo (below hi, see window_end), and its end */
static int
window_at(const mf_dir_t *d, uint64_t lo, uint64_t hi, uint64_t *end, mf_extents_t *map, mf_err_t err)
{
    window_t w   = {d, 0, lo, window_end(d, lo, hi), {NULL, 0, 0}, 0};
    int      ret = 0;
    for (unsigned r = 0; r < d->meta.ranks && ret == 0; r++) {
        mf_tail_t t;
        int       torn;
        if ((ret = mf_tail_open(&t, AT_FDCWD, d->path, r, MF_RUN_TAG(d->meta.run), err)) < 0)
            break;
        w.r = r;
        ret = mf_tail_poll(&t, window_record, &w, index_strict(d), &torn, err);
        mf_tail_close(&t);
    }
    mf_extents_init(map);
    if (ret == 0 && mf_extents_build(map, w.p.v, w.p.n) < 0)
        ret = -1, w.oom = 1;
    if (w.oom)
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory (%zu records in one window)", d->path, w.p.n);
    mf_pieces_free(&w.p);
    *end = w.hi;
    return ret;
}

/* extents a and b (a before b) are one: b continues a in the file and in its source */
static int
continues(const mf_extent_t *a, const mf_extent_t *b)
{
    return a->key.rank == b->key.rank && a->addr + a->len == b->addr &&
           (a->key.rank == MF_HOLE_RANK || a->pos + a->len == b->pos);
}

int
mf_dir_extents(const mf_dir_t *d, uint64_t *n, mf_err_t err)
{
    if (!d->scanned || *d->problem) { /* loaded whole, or damaged: no windows to resolve */
        *n = d->map.n;
        return 0;
    }
    mf_extent_t last = {0, 0, 0, {0, 0, MF_HOLE_RANK - 1, 0}};
    *n               = 0;
    for (uint64_t lo = 0, hi; lo < d->size; lo = hi) {
        mf_extents_t map;
        if (window_at(d, lo, d->size, &hi, &map, err) < 0)
            return -1;
        for (size_t i = 0; i < map.n; i++, last = map.v[i - 1])
            *n += !continues(&last, &map.v[i]);
        mf_extents_free(&map);
    }
    return 0;
}

uint64_t
mf_part_bytes(const mf_dir_t *d, unsigned part, unsigned nparts)
{
    uint64_t lo, hi;
    if (d->scanned)
        return part_window(d, part, nparts, &lo, &hi);
    part_range(d, part, nparts, &lo, &hi);
    return hi - lo;
}

/* bytes [pos, pos + len) of a source file that cannot be mapped (FUSE with direct I/O:
 * ENODEV), kept for the small pieces after the one that read them: a piece each would be
 * a read each, a round trip to the servers on such a file system */
typedef struct {
    unsigned char *buf;
    uint64_t       pos, len;
} readahead_t;

/* the state of one part's reconstruction */

typedef struct {
    const mf_dir_t *d;
    int             out_fd;
    int            *fds;   /* source data files, opened when first needed */
    unsigned char **maps;  /* and mapped, for small pieces */
    readahead_t    *ahead; /* or, where a file system refuses the map, read ahead */
    unsigned char  *stage; /* small pieces gathered for one write at stage_addr */
    uint64_t        stage_addr, stage_fill;
    uint64_t        done, total;
    mf_progress_cb  cb;
    void           *arg;
} merger_t;

#define MF_COPY_MIN    (256u << 10) /* pieces this large go through copy_file_range */
#define MF_AHEAD       MF_COPY_MIN  /* a source's bytes read at once for the smaller pieces, */
#define MF_AHEAD_MIN   (16u << 10)  /* and no less, */
#define MF_AHEAD_TOTAL (64u << 20)  /* while all sources' read-aheads fit in this */
#define MF_BLOCK       4096u        /* the block a reflink shares (as the driver aligns, MF_ALIGN) */

static int
source(merger_t *m, int r, mf_err_t err)
{
    char p[PATH_MAX];
    if (m->fds[r] >= 0)
        return 0;
    mf_data_path(p, sizeof p, m->d->path, (unsigned)r);
    if ((m->fds[r] = open(p, O_RDONLY | O_CLOEXEC)) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", p, strerror(errno));
        return -1;
    }
    uint64_t size = m->d->ranks[r].data_size;
    void    *map  = size ? mmap(NULL, size, PROT_READ, MAP_SHARED, m->fds[r], 0) : MAP_FAILED;
    m->maps[r]    = map == MAP_FAILED ? NULL : map; /* without a map: pread */
    return 0;
}

static int
flush_stage(merger_t *m, mf_err_t err)
{
    if (m->stage_fill && mf_pwrite_all(m->out_fd, m->stage, m->stage_fill, m->stage_addr) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot write the reconstructed file: %s", m->d->path,
                 strerror(errno));
        return -1;
    }
    m->done += m->stage_fill;
    m->stage_fill = 0;
    if (m->cb)
        m->cb(m->done, m->total, m->arg);
    return 0;
}

/* n bytes from in_fd at pos to out_fd at addr: copy_file_range (the kernel copies, or
 * shares the blocks where the file system can), else through a buffer */
static int
copy_range(merger_t *m, int in_fd, uint64_t pos, uint64_t addr, uint64_t n, mf_err_t err)
{
    while (n > 0) {
        loff_t  in = (loff_t)pos, out = (loff_t)addr;
        ssize_t k = copy_file_range(in_fd, &in, m->out_fd, &out, n > (1u << 30) ? (1u << 30) : n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
            size_t    want = n < MF_MERGE_BUFFER ? (size_t)n : MF_MERGE_BUFFER;
            long long got  = mf_pread_all(in_fd, m->stage, want, pos);
            k              = got == (long long)want && mf_pwrite_all(m->out_fd, m->stage, want, addr) == 0
                                 ? (ssize_t)want
                                 : (got >= 0 && got < (long long)want ? 0 : -1);
        }
        if (k <= 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: cannot copy %" PRIu64 " bytes at %" PRIu64 ": %s", m->d->path,
                     n, pos, k == 0 ? "a rank file is too short" : strerror(errno));
            return -1;
        }
        pos += (uint64_t)k;
        addr += (uint64_t)k;
        n -= (uint64_t)k;
        m->done += (uint64_t)k;
        if (m->cb)
            m->cb(m->done, m->total, m->arg);
    }
    return 0;
}

/* the read-ahead of each source: MF_AHEAD, less with many ranks (MF_AHEAD_TOTAL in all) */
static size_t
ahead_size(unsigned ranks)
{
    size_t each = MF_AHEAD_TOTAL / (ranks ? ranks : 1);
    return each > MF_AHEAD ? MF_AHEAD : each < MF_AHEAD_MIN ? MF_AHEAD_MIN : each;
}

/* n bytes of source r at pos, through its read-ahead: read again only where the piece is
 * not in it (a piece larger than the read-ahead, or without memory for it: read alone) */
static int
read_ahead(merger_t *m, int r, unsigned char *to, uint64_t pos, uint64_t n)
{
    readahead_t *w     = &m->ahead[r];
    size_t       ahead = ahead_size(m->d->meta.ranks);
    if (n > ahead || (!w->buf && !(w->buf = malloc(ahead))))
        return mf_pread_all(m->fds[r], to, n, pos) == (long long)n ? 0 : -1;
    if (pos < w->pos || pos + n > w->pos + w->len) {
        uint64_t  size = m->d->ranks[r].data_size;
        size_t    want = pos + ahead <= size ? ahead : (size_t)(pos + n > size ? n : size - pos);
        long long got  = mf_pread_all(m->fds[r], w->buf, want, pos);
        w->pos = pos, w->len = got > 0 ? (uint64_t)got : 0;
        if (w->len < n)
            return -1;
    }
    memcpy(to, w->buf + (pos - w->pos), n);
    return 0;
}

static int
copy_piece(merger_t *m, int r, uint64_t pos, uint64_t addr, uint64_t n, mf_err_t err)
{
    if (source(m, r, err) < 0)
        return -1;
    if (n >= MF_COPY_MIN) {
        /* a file system shares blocks only for block-aligned ranges: where the piece's
         * bytes sit at the same offsets within blocks (the driver starts large records
         * so), copy the head and tail apart and hand over the whole blocks between */
        uint64_t head = (MF_BLOCK - addr % MF_BLOCK) % MF_BLOCK, mid = 0;
        if (pos % MF_BLOCK == addr % MF_BLOCK && n > head)
            mid = (n - head) / MF_BLOCK * MF_BLOCK;
        if (mid == 0)
            head = n;
        if (flush_stage(m, err) < 0 || copy_range(m, m->fds[r], pos, addr, head, err) < 0 ||
            copy_range(m, m->fds[r], pos + head, addr + head, mid, err) < 0)
            return -1;
        return copy_range(m, m->fds[r], pos + head + mid, addr + head + mid, n - head - mid, err);
    }
    uint64_t end = m->stage_addr + m->stage_fill;
    if (m->stage_fill && (addr < end || addr - end > 4096 || addr - m->stage_addr + n > MF_MERGE_BUFFER) &&
        flush_stage(m, err) < 0)
        return -1;
    if (m->stage_fill == 0)
        m->stage_addr = addr;
    else if (addr > end) /* a small gap of zeros: the output reads zeros there anyway */
        memset(m->stage + m->stage_fill, 0, addr - end);
    unsigned char *to = m->stage + (addr - m->stage_addr);
    if (m->maps[r])
        memcpy(to, m->maps[r] + pos, n);
    else if (read_ahead(m, r, to, pos, n) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot read %" PRIu64 " bytes of rank %d at %" PRIu64, m->d->path,
                 n, r, pos);
        return -1;
    }
    m->stage_fill = addr - m->stage_addr + n;
    return 0;
}

/* the part's share of the loaded map (mf_dir_load): [lo, hi) counted over its data bytes */
static int
merge_loaded(merger_t *m, unsigned part, unsigned nparts, mf_err_t err)
{
    const mf_dir_t *d = m->d;
    uint64_t        lo, hi, cum = 0;
    int             ret = 0;
    part_range(d, part, nparts, &lo, &hi);
    m->total = hi - lo;
    for (size_t i = 0; ret == 0 && i < d->map.n && cum < hi; i++) {
        const mf_extent_t *e = &d->map.v[i];
        if (e->key.rank == MF_HOLE_RANK || e->addr >= d->size)
            continue;
        uint64_t len = e->addr + e->len <= d->size ? e->len : d->size - e->addr;
        uint64_t s   = lo > cum ? lo - cum : 0,
                 t   = hi < cum + len ? hi - cum : len; /* this part's share of e */
        if (s < t)
            ret = copy_piece(m, e->key.rank, e->pos + s, e->addr + s, t - s, err);
        cum += len;
    }
    return ret;
}

/* the part's address range of a scanned directory (mf_dir_scan), window by window */
static int
merge_windows(merger_t *m, unsigned part, unsigned nparts, mf_err_t err)
{
    const mf_dir_t *d = m->d;
    uint64_t        lo, hi;
    int             ret = 0;
    m->total            = part_window(d, part, nparts, &lo, &hi);
    for (uint64_t w0 = lo, w1; ret == 0 && w0 < hi; w0 = w1) {
        mf_extents_t map;
        if (window_at(d, w0, hi, &w1, &map, err) < 0)
            return -1;
        for (size_t i = 0; ret == 0 && i < map.n; i++)
            if (map.v[i].key.rank != MF_HOLE_RANK)
                ret = copy_piece(m, map.v[i].key.rank, map.v[i].pos, map.v[i].addr, map.v[i].len, err);
        mf_extents_free(&map);
        if (ret == 0)
            ret = flush_stage(m, err);
    }
    return ret;
}

int
mf_merge_part(const mf_dir_t *d, int out_fd, unsigned part, unsigned nparts, mf_progress_cb cb, void *arg,
              mf_err_t err)
{
    merger_t m   = {d,
                    out_fd,
                    calloc(d->meta.ranks, sizeof(int)),
                    calloc(d->meta.ranks, sizeof(void *)),
                    calloc(d->meta.ranks, sizeof(readahead_t)),
                    malloc(MF_MERGE_BUFFER),
                    0,
                    0,
                    0,
                    0,
                    cb,
                    arg};
    int      ret = 0;
    if (!m.fds || !m.maps || !m.ahead || !m.stage) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", d->path);
        ret = -1;
    }
    for (unsigned r = 0; m.fds && r < d->meta.ranks; r++)
        m.fds[r] = -1;
    if (ret == 0)
        ret = d->scanned ? merge_windows(&m, part, nparts, err) : merge_loaded(&m, part, nparts, err);
    if (ret == 0)
        ret = flush_stage(&m, err);
    for (unsigned r = 0; m.fds && m.maps && r < d->meta.ranks; r++) {
        if (m.maps[r])
            munmap(m.maps[r], d->ranks[r].data_size);
        if (m.fds[r] >= 0)
            close(m.fds[r]);
        if (m.ahead)
            free(m.ahead[r].buf);
    }
    free(m.fds), free(m.maps), free(m.ahead), free(m.stage);
    return ret;
}
