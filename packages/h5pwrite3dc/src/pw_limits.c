/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_limits: raw MPI-IO and POSIX writes of the benchmark's bytes (see pw_limits.h). */
#include "pw_limits.h"

#include "pw_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void
limit_path(const pw_options *o, const char *what, int rank, char *buf, size_t len)
{
    if (rank < 0)
        snprintf(buf, len, "%s.limit-%s", o->file, what);
    else
        snprintf(buf, len, "%s.limit-%s.%d", o->file, what, rank);
}

/* every rank learns whether any failed; a rank that did not fail says which rank did */
static int
agree(int failed, MPI_Comm comm, char *err, size_t len)
{
    int any = 0, rank;
    MPI_Comm_rank(comm, &rank);
    int who = failed ? rank : -1;
    MPI_Allreduce(&who, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any >= 0 && !failed)
        snprintf(err, len, "rank %d failed (its message is on its standard error)", any);
    return any >= 0;
}

static void
mpi_error(int code, const char *path, const char *what, char *err, size_t len)
{
    char text[MPI_MAX_ERROR_STRING];
    int  n = 0;
    MPI_Error_string(code, text, &n);
    snprintf(err, len, "%s: %s: %s", path, what, text);
}

int
pw_limit_mpiio(const pw_options *o, MPI_Comm comm, MPI_Info info, const double *image, pw_limit *out,
               char *err, size_t len)
{
    int rank, np;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &np);
    char path[4096];
    limit_path(o, "mpiio", -1, path, sizeof path);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL); /* absent is fine; a link is removed, not followed */
    MPI_Barrier(comm);

    /* created new (O_EXCL): a link planted at its name meanwhile fails the open */
    MPI_File fh = MPI_FILE_NULL;
    int      rc = MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, info, &fh);
    if (rc != MPI_SUCCESS) {
        mpi_error(rc, path, "MPI_File_open", err, len); /* collective: every rank sees it */
        return 1;
    }
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    MPI_Datatype row;
    MPI_Type_contiguous((int)o->g_n, MPI_DOUBLE, &row);
    MPI_Type_commit(&row);
    const long long  per_dset = o->nsets / o->ndsets, mine = per_dset / np;
    const MPI_Offset image_bytes = (MPI_Offset)o->g_n * o->g_n * 8;
    int              failed      = 0;

    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (long long d = 0; d < o->ndsets; d++)
        for (long long i = 0; i < mine; i++) {
            MPI_Offset at = (d * per_dset + rank + i * np) * image_bytes;
            rc = o->independent ? MPI_File_write_at(fh, at, image, (int)o->g_n, row, MPI_STATUS_IGNORE)
                                : MPI_File_write_at_all(fh, at, image, (int)o->g_n, row, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS && !failed) {
                mpi_error(rc, path, o->independent ? "MPI_File_write_at" : "MPI_File_write_at_all", err, len);
                failed = 1;
            }
        }
    MPI_Barrier(comm);
    out->seconds = MPI_Wtime() - t0;
    MPI_Type_free(&row);
    rc = MPI_File_close(&fh);
    if (rc != MPI_SUCCESS && !failed) {
        mpi_error(rc, path, "MPI_File_close", err, len);
        failed = 1;
    }
    return agree(failed, comm, err, len);
}

int
pw_limit_posix(const pw_options *o, MPI_Comm comm, const double *image, pw_limit *out, char *err, size_t len)
{
    int rank, np;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &np);
    char path[4096];
    limit_path(o, "posix", rank, path, sizeof path);
    int failed = 0;
    int fd     = pw_create_new(path, err, len); /* never through a link planted at its name */
    if (fd < 0)
        failed = 1;
    if (agree(failed, comm, err, len)) {
        if (fd >= 0)
            close(fd);
        return 1;
    }
    const long long per_dset = o->nsets / o->ndsets, mine = per_dset / np;
    const size_t    image_bytes = (size_t)o->g_n * (size_t)o->g_n * 8;

    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    off_t  at = 0;
    for (long long k = 0; k < o->ndsets * mine && !failed; k++) {
        const char *p    = (const char *)image;
        size_t      left = image_bytes;
        while (left) {
            ssize_t n = pwrite(fd, p, left, at);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                snprintf(err, len, "%s: write failed at byte %lld: %s", path, (long long)at,
                         n < 0 ? strerror(errno) : "no progress");
                failed = 1;
                break;
            }
            p += n;
            left -= (size_t)n;
            at += n;
        }
    }
    MPI_Barrier(comm);
    out->seconds = MPI_Wtime() - t0;
    if (close(fd) && !failed) {
        snprintf(err, len, "%s: close failed: %s", path, strerror(errno));
        failed = 1;
    }
    return agree(failed, comm, err, len);
}

void
pw_limits_remove(const pw_options *o, int rank)
{
    char path[4096];
    limit_path(o, "posix", rank, path, sizeof path);
    unlink(path);
    if (rank == 0) {
        limit_path(o, "mpiio", -1, path, sizeof path);
        unlink(path);
    }
}
