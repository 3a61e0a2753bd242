/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_limits: the physical limits measured in the same run as the HDF5 write.
 *
 * The same bytes as the HDF5 phase (each rank's images, one write per image, in the
 * same order), written without HDF5:
 *   mpiio      one shared file, MPI_File_write_at_all (MPI_File_write_at with
 *              --independent) at the image's place in the dataset order, same hints;
 *   posix-fpp  one file per rank, pwrite.
 * Timed like the HDF5 write phase: barrier, the writes, barrier (opens and closes
 * outside). The files are FILE.limit-mpiio and FILE.limit-posix.<rank>.
 */
#ifndef PW_LIMITS_H
#define PW_LIMITS_H

#include <mpi.h>
#include <stddef.h>

#include "pw_options.h"

typedef struct {
    double seconds; /* rank 0's barrier-to-barrier time */
} pw_limit;

/* Each returns 0, or 1 with err set ("<path>: <reason>") on the rank that failed;
 * the caller agrees on failure collectively. */
int pw_limit_mpiio(const pw_options *o, MPI_Comm comm, MPI_Info info, const double *image, pw_limit *out,
                   char *err, size_t errlen);
int pw_limit_posix(const pw_options *o, MPI_Comm comm, const double *image, pw_limit *out, char *err,
                   size_t errlen);

/* Remove this rank's limit files (rank 0 also the shared one). */
void pw_limits_remove(const pw_options *o, int rank);

#endif
