/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* mf_merge_mpi.c - the ranks' shared steps of a reconstruction (see mf_merge_mpi.h) */
#include "mf_merge_mpi.h"

#include "vfd_mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* every rank of comm agrees (vfd_agree): 0, or -1 with the lowest failing rank's err */
static int
agree(MPI_Comm comm, int ok, mf_err_t err)
{
    return vfd_agree(comm, ok, err, MF_ERRMSG_SIZE);
}

/* fsync and close fd (both, whatever the first did); 0, or -1 (errno) */
static int
sync_close(int fd)
{
    int rc = fsync(fd), saved = errno;
    if (close(fd) < 0)
        return -1;
    errno = saved;
    return rc;
}

int
mf_merge_write(const mf_dir_t *d, MPI_Comm comm, const char *out, mf_progress_cb cb, void *arg,
               char tmp[PATH_MAX], mf_merge_lock_t *lock, mf_err_t err)
{
    int rank, size, fd = -1, ok = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank == 0)
        ok = (fd = mf_merge_create_output(d, out, tmp, PATH_MAX, lock, err)) >= 0;
    if (agree(comm, ok, err) < 0)
        return -1; /* rank 0 could not create the output: nothing to remove */
    MPI_Bcast(tmp, PATH_MAX, MPI_CHAR, 0, comm);
    if (rank != 0 && (fd = open(tmp, O_WRONLY | O_CLOEXEC)) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", tmp, strerror(errno));
        ok = 0;
    }
    if (ok)
        ok = mf_merge_part(d, fd, (unsigned)rank, (unsigned)size, cb, arg, err) == 0;
    if (fd >= 0 && sync_close(fd) < 0 && ok) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", tmp, strerror(errno));
        ok = 0;
    }
    if (agree(comm, ok, err) == 0)
        return 0;
    if (rank == 0)
        mf_merge_discard_output(tmp, lock);
    return -1;
}

/* the directory read as the job asks: whole, or scanned for windows */
static int
load(const mf_merge_job_t *job, mf_dir_t *d, mf_err_t err)
{
    if (!job->window_records)
        return mf_dir_load(d, job->dir, job->load_mode, err);
    int rc = mf_dir_scan(d, job->dir, job->load_mode, err);
    if (rc == 0)
        d->window_records = job->window_records;
    return rc;
}

/* rank 0: the output tmp where the job puts it: 0, 1 (in place, the old directory
 * left: err says where), or -1 (err; the output discarded) */
static int
put_in_place(const mf_merge_job_t *job, const char *tmp, mf_merge_lock_t *lock, mf_err_t err)
{
    mf_err_t why;
    int      rc = -1;
    if (job->out && mf_check_hdf5(tmp, why) < 0)
        snprintf(err, MF_ERRMSG_SIZE, "%s: the reconstructed file is not whole: %.700s; not written",
                 job->out, why);
    else if (job->out && rename(tmp, job->out) < 0)
        snprintf(err, MF_ERRMSG_SIZE, "%s: %s", job->out, strerror(errno));
    else if (job->out)
        rc = 0;
    else
        rc = job->head ? mf_replace_head(job->head, job->dir, tmp, lock, err)
                       : mf_replace_dir(job->dir, tmp, lock, err);
    if (rc < 0)
        mf_merge_discard_output(tmp, lock);
    return rc;
}

/* what rank 0 reports of a loaded directory */
static void
describe(const mf_dir_t *d, mf_merge_done_t *done)
{
    done->size      = d->size;
    done->records   = d->records;
    done->checksums = d->meta.ranks && d->ranks[0].checksums;
    done->bytes     = 0;
    for (unsigned r = 0; r < d->meta.ranks; r++)
        done->bytes += d->ranks[r].bytes;
}

/* the steps after the load: verify, write, put in place (rank 0) */
static int
merge_loaded(const mf_merge_job_t *job, const mf_dir_t *d, int rank, mf_merge_lock_t *lock,
             mf_merge_done_t *done, mf_err_t err)
{
    char   tmp[PATH_MAX] = "";
    int    size, placed = 0;
    double t = MPI_Wtime();
    MPI_Comm_size(job->comm, &size);
    if (job->verify &&
        agree(job->comm,
              mf_verify_part(d, (unsigned)rank, (unsigned)size, job->verify_cb, job->arg, err) == 0, err) < 0)
        return -1;
    done->verify = MPI_Wtime() - t;
    t            = MPI_Wtime();
    if (mf_merge_write(d, job->comm, job->out, job->write_cb, job->arg, tmp, lock, err) < 0)
        return -1;
    if (rank == 0)
        placed = put_in_place(job, tmp, lock, err);
    done->write = MPI_Wtime() - t;
    if (agree(job->comm, placed >= 0, err) < 0)
        return -1;
    MPI_Bcast(&placed, 1, MPI_INT, 0, job->comm); /* every rank knows what was left */
    done->left = placed > 0;
    return 0;
}

int
mf_merge_run(const mf_merge_job_t *job, mf_merge_done_t *done, mf_err_t err)
{
    mf_merge_done_t ignored;
    mf_merge_lock_t lock = MF_MERGE_LOCK_INIT;
    mf_dir_t        d;
    int             rank, rc = -1;
    double          t = MPI_Wtime();
    MPI_Comm_rank(job->comm, &rank);
    done = done ? done : &ignored;
    memset(done, 0, sizeof *done);
    int ok = job->out || rank != 0 || mf_merge_lock_dir(job->dir, &lock, err) == 0; /* no writer under it */
    if (agree(job->comm, ok, err) == 0) { /* every rank loads what the lock holds */
        int loaded = load(job, &d, err) == 0;
        if (agree(job->comm, loaded, err) == 0) {
            done->load = MPI_Wtime() - t;
            describe(&d, done);
            rc = merge_loaded(job, &d, rank, &lock, done, err);
        }
        if (loaded)
            mf_dir_free(&d);
    }
    mf_merge_unlock(&lock);
    return rc;
}
