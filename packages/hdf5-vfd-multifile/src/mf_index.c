/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_index.c - reading index files (see mf_index.h).
 */
#include "mf_index.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MF_REREAD_TRIES 1000 /* about 10 ms in all before a record is taken as partial */

/*
 * A record read while its writer writes it (appends it, or rewrites it longer) can come
 * back half old, half new: its checksum fails. A live reader reads it again until it is
 * whole; each write of 48 bytes takes microseconds. 0 when it decodes, -1 when it never
 * did (an append that stays partial, or damage).
 */
static int
reread_record(int fd, uint64_t at, mf_record_t *rec)
{
    unsigned char buf[MF_RECORD_SIZE];
    for (int attempt = 0; attempt < MF_REREAD_TRIES; attempt++) {
        if (attempt > 0 && attempt < 16)
            sched_yield();
        else if (attempt >= 16)
            nanosleep(&(struct timespec){0, 10000}, NULL);
        if (mf_pread_all(fd, buf, sizeof buf, at) == MF_RECORD_SIZE && mf_record_decode(buf, rec) == 0)
            return 0;
    }
    return -1;
}

int
mf_tail_open(mf_tail_t *t, int dirfd, const char *dir, unsigned rank, uint32_t run, mf_err_t err)
{
    char idx[MF_NAME_SIZE], data[MF_NAME_SIZE];
    memset(t, 0, sizeof *t);
    t->rank = rank;
    t->run  = run;
    mf_index_path(t->idx_path, sizeof t->idx_path, dir, rank);
    mf_data_path(t->data_path, sizeof t->data_path, dir, rank);
    mf_index_name(idx, sizeof idx, rank);
    mf_data_name(data, sizeof data, rank);
    t->data_fd = -1;
    t->idx_fd  = mf_open_regular(dirfd, dirfd == AT_FDCWD ? t->idx_path : idx, t->idx_path, err);
    t->data_fd = t->idx_fd < 0
                     ? -1
                     : mf_open_regular(dirfd, dirfd == AT_FDCWD ? t->data_path : data, t->data_path, err);
    if (t->idx_fd < 0 || t->data_fd < 0) {
        mf_tail_close(t);
        return -1;
    }
    return 0;
}

void
mf_tail_close(mf_tail_t *t)
{
    if (t->idx_fd >= 0)
        close(t->idx_fd);
    if (t->data_fd >= 0)
        close(t->data_fd);
    t->idx_fd = t->data_fd = -1;
}

void
mf_tail_skip(mf_tail_t *t, uint64_t nrec)
{
    t->consumed  = MF_INDEX_HEADER_SIZE + nrec * MF_RECORD_SIZE;
    t->nrec      = nrec;
    t->have_last = 0; /* records of completed epochs: never extended */
}

/* the last record delivered, grown since by its writer: deliver it again */
static int
recheck_last(mf_tail_t *t, mf_record_cb cb, void *arg, mf_err_t err)
{
    mf_record_t rec;
    if (!t->have_last)
        return 0;
    if (reread_record(t->idx_fd, t->consumed - MF_RECORD_SIZE, &rec) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: record %" PRIu64 " was whole and is now corrupt (checksum)",
                 t->idx_path, t->nrec - 1);
        return -1;
    }
    if (rec.len <= t->last.len || rec.addr != t->last.addr || rec.pos != t->last.pos ||
        rec.stamp != t->last.stamp)
        return 0;
    if (cb(&rec, t->nrec - 1, arg) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: record %" PRIu64 " rejected", t->idx_path, t->nrec - 1);
        return -1;
    }
    t->last = rec;
    return 0;
}

int
mf_tail_last_stamp(const mf_tail_t *t, int64_t *stamp, mf_err_t err)
{
    struct stat st;
    if (fstat(t->idx_fd, &st) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", t->idx_path, strerror(errno));
        return -1;
    }
    if ((uint64_t)st.st_size < MF_INDEX_HEADER_SIZE + MF_RECORD_SIZE)
        return 0;
    uint64_t n = ((uint64_t)st.st_size - MF_INDEX_HEADER_SIZE) / MF_RECORD_SIZE;
    /* the last record may be being appended right now: then the one before is complete */
    for (uint64_t i = n; i > 0 && i >= n - 1; i--) {
        unsigned char buf[MF_RECORD_SIZE];
        mf_record_t   rec;
        long long     got =
            mf_pread_all(t->idx_fd, buf, sizeof buf, MF_INDEX_HEADER_SIZE + (i - 1) * MF_RECORD_SIZE);
        if (got < 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: %s", t->idx_path, strerror(errno));
            return -1;
        }
        if (got == MF_RECORD_SIZE && mf_record_decode(buf, &rec) == 0) {
            if (rec.stamp > *stamp)
                *stamp = rec.stamp;
            return 0;
        }
    }
    return 0;
}

#define POLL_BATCH 4096 /* records read per pread */

/* the header read is this rank's index of this run */
static int
check_header(const mf_tail_t *t, mf_err_t err)
{
    if (t->hdr.rank != t->rank) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: index belongs to rank %" PRIu32 ", not %u", t->idx_path,
                 t->hdr.rank, t->rank);
        return -1;
    }
    if (t->hdr.run != t->run) { /* 0 on both sides for directories of versions 1 and 2 */
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: belongs to another run (run tag %08" PRIx32 ", the metafile's %08" PRIx32
                 "): a file copied from another directory",
                 t->idx_path, t->hdr.run, t->run);
        return -1;
    }
    return 0;
}

/* the index header, read and checked at the first poll that finds it in the file's size
 * bytes: 1 when it is there, 0 when it is not written yet (*torn: partly), -1 on error */
static int
tail_header(mf_tail_t *t, uint64_t size, int strict, int *torn, mf_err_t err)
{
    unsigned char h[MF_INDEX_HEADER_SIZE];
    if (t->have_header)
        return 1;
    if (size < MF_INDEX_HEADER_SIZE) {
        if (strict && size > 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: truncated index header (%" PRIu64 " bytes)", t->idx_path,
                     size);
            return -1;
        }
        *torn = size > 0;
        return 0;
    }
    if (mf_pread_all(t->idx_fd, h, sizeof h, 0) != (long long)sizeof h) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot read header: %s", t->idx_path, strerror(errno));
        return -1;
    }
    if (mf_index_header_decode(h, &t->hdr, t->idx_path, err) < 0 || check_header(t, err) < 0)
        return -1;
    t->have_header = 1;
    if (t->consumed < MF_INDEX_HEADER_SIZE) /* not moved on by mf_tail_skip */
        t->consumed = MF_INDEX_HEADER_SIZE;
    return 1;
}

/*
 * The n records in buf, read at t->consumed of an index of size bytes, delivered in
 * order; t->consumed moves past those delivered. 0 when all were; 1 when delivery stops
 * at a bad record (*torn: the last one, or any one unless strict); -1 on error (a bad
 * record before the end with strict, or one cb rejected).
 */
static int
deliver(mf_tail_t *t, const unsigned char *buf, size_t n, uint64_t size, int strict, mf_record_cb cb,
        void *arg, int *torn, mf_err_t err)
{
    for (size_t i = 0; i < n; i++) {
        mf_record_t rec;
        uint64_t    at  = t->consumed + (uint64_t)i * MF_RECORD_SIZE;
        int         bad = mf_record_decode(buf + i * MF_RECORD_SIZE, &rec) < 0;
        if (bad && (strict || reread_record(t->idx_fd, at, &rec) < 0)) {
            t->consumed = at;
            if (strict && at + MF_RECORD_SIZE < size) { /* not the last record: not being written */
                snprintf(err, MF_ERRMSG_SIZE,
                         "%s: record %" PRIu64 " at byte %" PRIu64 " is corrupt (checksum)", t->idx_path,
                         t->nrec, at);
                return -1;
            }
            *torn = 1; /* being written, or torn */
            return 1;
        }
        if (cb(&rec, t->nrec, arg) < 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: record %" PRIu64 " rejected", t->idx_path, t->nrec);
            t->consumed = at;
            return -1;
        }
        t->nrec++;
        t->last      = rec;
        t->have_last = 1;
    }
    t->consumed += (uint64_t)n * MF_RECORD_SIZE;
    return 0;
}

int
mf_tail_poll(mf_tail_t *t, mf_record_cb cb, void *arg, int strict, int *torn, mf_err_t err)
{
    return mf_tail_poll_to(t, UINT64_MAX, cb, arg, strict, torn, err);
}

int
mf_tail_poll_to(mf_tail_t *t, uint64_t upto, mf_record_cb cb, void *arg, int strict, int *torn, mf_err_t err)
{
    struct stat st;
    *torn = 0;
    if (fstat(t->idx_fd, &st) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", t->idx_path, strerror(errno));
        return -1;
    }
    uint64_t size   = (uint64_t)st.st_size < upto ? (uint64_t)st.st_size : upto;
    int      header = tail_header(t, size, strict, torn, err);
    if (header <= 0)
        return header;
    if (recheck_last(t, cb, arg, err) < 0)
        return -1;
    unsigned char *buf = malloc((size_t)POLL_BATCH * MF_RECORD_SIZE);
    if (!buf) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: out of memory", t->idx_path);
        return -1;
    }
    int ret = 0;
    while (ret == 0 && t->consumed + MF_RECORD_SIZE <= size) {
        uint64_t  avail = (size - t->consumed) / MF_RECORD_SIZE;
        size_t    want  = avail < POLL_BATCH ? (size_t)avail : POLL_BATCH;
        long long got   = mf_pread_all(t->idx_fd, buf, want * MF_RECORD_SIZE, t->consumed);
        if (got < 0) {
            snprintf(err, MF_ERRMSG_SIZE, "%s: %s", t->idx_path, strerror(errno));
            ret = -1;
        }
        else if ((size_t)got / MF_RECORD_SIZE == 0)
            break;
        else
            ret = deliver(t, buf, (size_t)got / MF_RECORD_SIZE, size, strict, cb, arg, torn, err);
    }
    if (ret == 0 && t->consumed < size && strict)
        *torn = 1; /* a partial record at the end */
    free(buf);
    return ret < 0 ? -1 : 0;
}
