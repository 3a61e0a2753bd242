/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_merge_mpi.h - the step of a reconstruction that the ranks of a communicator take
 * together: one output, every rank writing its share. Used by the driver (a merge at
 * close or at a read=merge open) and by h5mf merge; the rest (mf_merge.h) needs no MPI.
 */
#ifndef MF_MERGE_MPI_H
#define MF_MERGE_MPI_H

#include "mf_merge.h"

#include <limits.h>
#include <mpi.h>

/* The reconstruction of d written by every rank of comm: rank 0 creates the output
 * (mf_merge_create_output: beside out, or beside the directory when out is NULL), every
 * rank writes its share into it (mf_merge_part; cb with arg: its progress) and fsyncs it.
 * 0 on every rank, the output's name in tmp on all of them; or -1 on every rank with the
 * lowest failing rank's reason in err, the output removed (and its lock released). */
int mf_merge_write(const mf_dir_t *d, MPI_Comm comm, const char *out, mf_progress_cb cb, void *arg,
                   char tmp[PATH_MAX], mf_err_t err);

#endif
