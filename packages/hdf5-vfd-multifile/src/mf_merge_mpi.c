/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* mf_merge_mpi.c - the ranks' shared step of a reconstruction (see mf_merge_mpi.h) */
#include "mf_merge_mpi.h"

#include "vfd_mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
               char tmp[PATH_MAX], mf_err_t err)
{
    int rank, size, fd = -1, ok = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank == 0)
        ok = (fd = mf_merge_create_output(d, out, tmp, PATH_MAX, err)) >= 0;
    if (vfd_agree(comm, ok, err, MF_ERRMSG_SIZE) < 0)
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
    if (vfd_agree(comm, ok, err, MF_ERRMSG_SIZE) == 0)
        return 0;
    if (rank == 0)
        mf_merge_discard_output(tmp);
    return -1;
}
