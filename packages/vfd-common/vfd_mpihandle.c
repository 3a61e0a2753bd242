/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* vfd_mpihandle.c - the MPI file handle HDF5 expects of every MPI driver (see the header) */
#include "vfd_mpihandle.h"

int
vfd_mpi_handle_open(MPI_File *fh)
{
    *fh = MPI_FILE_NULL;
    if (MPI_File_open(MPI_COMM_SELF, "/dev/null", MPI_MODE_RDONLY, MPI_INFO_NULL, fh) != MPI_SUCCESS) {
        *fh = MPI_FILE_NULL;
        return -1;
    }
    return 0;
}

void
vfd_mpi_handle_close(MPI_File *fh)
{
    if (*fh != MPI_FILE_NULL)
        MPI_File_close(fh);
    *fh = MPI_FILE_NULL;
}

int
vfd_mpi_handle_get(MPI_File *fh, void **handle)
{
    *handle = fh;
    return *fh == MPI_FILE_NULL ? -1 : 0;
}
