/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_index.h - reading a rank's index file, whole (merge) or by its growing tail
 * (a live write session reads what other ranks appended since the last look).
 */
#ifndef MF_INDEX_H
#define MF_INDEX_H

#include "mf_format.h"

typedef struct {
    unsigned          rank;
    int               idx_fd, data_fd;
    int               have_header;
    mf_index_header_t hdr;
    uint32_t          run;      /* MF_RUN_TAG the header must carry (0: none) */
    uint64_t          consumed; /* bytes of the index file already read */
    uint64_t          nrec;     /* records delivered so far (= next record number) */
    int               have_last;
    mf_record_t       last; /* the last record delivered: its writer may extend it */
    char              idx_path[4096], data_path[4096];
} mf_tail_t;

typedef int (*mf_record_cb)(const mf_record_t *rec, uint64_t seq, void *arg);

/* open rank's index and data files read-only, in the directory open as dirfd (or
 * AT_FDCWD: the directory dir); dir names them in messages; run: the MF_RUN_TAG the
 * index header must carry (0: a directory without a run identity) */
int  mf_tail_open(mf_tail_t *t, int dirfd, const char *dir, unsigned rank, uint32_t run, mf_err_t err);
void mf_tail_close(mf_tail_t *t);

/*
 * Deliver the complete records appended since the last call, and the last record
 * delivered before again (same record number) if its writer has extended it since
 * (see the index format in mf_format.h). A record whose checksum
 * fails at the very end of the file is taken as still being written (live) or torn by
 * a crash (merge): delivery stops there and *torn is set to 1. With strict, a bad
 * record followed by more data is corruption: error. Returns 0 or -1.
 */
int mf_tail_poll(mf_tail_t *t, mf_record_cb cb, void *arg, int strict, int *torn, mf_err_t err);
/* the same, reading the index only up to byte upto (a cut: records appended beyond it
 * wait for a later poll) */
int mf_tail_poll_to(mf_tail_t *t, uint64_t upto, mf_record_cb cb, void *arg, int strict, int *torn,
                    mf_err_t err);
/* the first nrec records are known already (e.g. loaded by mf_dir_load): the next
 * poll starts after them (the header is still read and checked) */
void mf_tail_skip(mf_tail_t *t, uint64_t nrec);
/*
 * The order stamp of the last complete record in the index now (stamps grow along an
 * index), without delivering any record: *stamp is left alone when there is none.
 * Cheap (one fstat and at most two record reads): a writer learns from it what the
 * other ranks wrote before it. Returns 0 or -1.
 */
int mf_tail_last_stamp(const mf_tail_t *t, int64_t *stamp, mf_err_t err);

#endif
