/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_mpihandle.h - the MPI file handle HDF5 expects of every MPI driver.
 *
 * HDF5 serves H5Fset_mpi_atomicity and H5Fget_mpi_atomicity (h5py's File.atomic) for
 * any driver that reports H5FD_FEAT_HAS_MPI by calling MPI_File_set_atomicity and
 * MPI_File_get_atomicity on the MPI_File that its own MPI-IO driver keeps right after
 * the public part of its file struct (H5FD_mpio_t in H5FDmpio.c, HDF5 1.14 and 2.x).
 * A driver that is not MPI-IO therefore keeps a real MPI file handle at that place
 * (VFD_MPI_HANDLE_FIRST checks it at compile time): the flag is set and read back as
 * MPI-IO does; what the mode promises for the driver's own transfers is the driver's
 * to state. The handle is MPI-IO's view of /dev/null on MPI_COMM_SELF, read-only: no
 * file of the user's is opened twice, and no rank waits for another.
 *
 * It is also what H5Fget_vfd_handle gives, as for MPI-IO a pointer to an MPI_File: a
 * program may close it (HDF5's testpar/t_pflush1 does, to leave a file unclosed), set or
 * query atomicity on it, and ask its size (0). The file's bytes are not behind it: a
 * write through it fails (MPI_ERR_READ_ONLY), a read through it reads nothing (its
 * status counts 0 elements). The data is reached through HDF5 only.
 */
#ifndef VFD_MPIHANDLE_H
#define VFD_MPIHANDLE_H

#include <H5FDdevelop.h>
#include <mpi.h>
#include <stddef.h>

/* the head of HDF5's H5FD_mpio_t: the public part, then the MPI_File */
typedef struct {
    H5FD_t   pub;
    MPI_File f;
} vfd_mpio_head_t;

/* a driver's file struct `type` keeps its handle in `member` where HDF5 looks for it */
#define VFD_MPI_HANDLE_FIRST(type, member)                                                                   \
    _Static_assert(offsetof(type, member) == offsetof(vfd_mpio_head_t, f),                                   \
                   #type "." #member                                                                         \
                         " must follow the public part, where HDF5's MPI-IO driver keeps its MPI_File")

/* open the handle; on failure *fh is MPI_FILE_NULL, for which the MPI calls HDF5 makes
 * return MPI's error (HDF5 then reports it): never a crash. Returns 0 or -1. */
int  vfd_mpi_handle_open(MPI_File *fh);
void vfd_mpi_handle_close(MPI_File *fh);
/* the get_handle callback's answer: *handle = fh; 0, or -1 when there is no handle (it
 * could not be opened, or the program closed it) */
int vfd_mpi_handle_get(MPI_File *fh, void **handle);

#endif
