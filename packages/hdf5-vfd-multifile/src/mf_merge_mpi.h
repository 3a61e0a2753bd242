/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_merge_mpi.h - the steps of a reconstruction that the ranks of a communicator take
 * together, one sequence for the driver (a merge at close or at a read=merge open) and
 * for h5mf merge; the rest (mf_merge.h, mf_replace.h) needs no MPI.
 */
#ifndef MF_MERGE_MPI_H
#define MF_MERGE_MPI_H

#include "mf_merge.h"
#include "mf_replace.h"

#include <limits.h>
#include <mpi.h>

/* The reconstruction of d written by every rank of comm: rank 0 creates the output
 * (mf_merge_create_output: beside out, or beside the directory when out is NULL; its lock
 * in lock), every rank writes its share into it (mf_merge_part; cb with arg: its
 * progress) and fsyncs it. 0 on every rank, the output's name in tmp on all of them; or
 * -1 on every rank with the lowest failing rank's reason in err, the output removed (and
 * its lock released). */
int mf_merge_write(const mf_dir_t *d, MPI_Comm comm, const char *out, mf_progress_cb cb, void *arg,
                   char tmp[PATH_MAX], mf_merge_lock_t *lock, mf_err_t err);

/* what to reconstruct, from where, to where */
typedef struct {
    MPI_Comm    comm;      /* the ranks that reconstruct: each verifies and writes its share */
    const char *dir;       /* the multifile directory */
    const char *head;      /* rank 0: the head that names dir (mf_head.h), or NULL */
    const char *out;       /* the file to write; NULL: in the place of head, else of dir */
    int         load_mode; /* MF_LOAD_COMPLETE, or MF_LOAD_PARTIAL (with out) */
    /* 0: the directory loaded whole (mf_dir_load); else scanned (mf_dir_scan) and
     * resolved in windows of at most this many records */
    uint64_t       window_records;
    int            verify;    /* every data checksum checked before anything is written */
    mf_progress_cb verify_cb; /* progress of the verification and of the writing (or NULL) */
    mf_progress_cb write_cb;
    void          *arg;
} mf_merge_job_t;

/* what a reconstruction did (rank 0's view) */
typedef struct {
    double   load, verify, write; /* seconds of each step */
    uint64_t size;                /* bytes of the reconstructed file */
    uint64_t bytes, records;      /* data bytes and records it was made from */
    int      checksums;           /* the records carry data checksums */
    int      left;                /* in place, the old directory stays (every rank; where: rank 0's err) */
} mf_merge_done_t;

/* The whole reconstruction, on every rank of job->comm: a merge in place locks the
 * directory first (rank 0, mf_merge_lock_dir: no writer under it), the directory loaded
 * by every rank, verified (each rank its share), written (mf_merge_write) and put where
 * it goes by rank 0 (renamed to out, whole HDF5 only; or mf_replace_head or
 * mf_replace_dir). Each step ends when every rank has done it. 0 on every rank (done
 * filled, if given; when done->left, rank 0's err says where the old directory stays);
 * or -1 on every rank with the lowest failing rank's reason in err, nothing replaced
 * and the output removed. */
int mf_merge_run(const mf_merge_job_t *job, mf_merge_done_t *done, mf_err_t err);

#endif
