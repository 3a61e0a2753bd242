/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_options.h - the driver's options and their text form (HDF5_DRIVER_CONFIG,
 * H5Pset_driver_by_name, H5Pset_multifile_options):
 *   read=inplace|merge|parallel   what opening a multifile directory read-only does: read
 *                                 it as it is (the default: a read changes nothing), or
 *                                 reconstruct it into a file that replaces it, by rank 0 or
 *                                 by all ranks (H5Pset_fapl_mpiposix selects merge, the
 *                                 original patch's behaviour)
 *   checksums=on|off              crc32 of every write's bytes (checked on merge/verify)
 *   sync=on|off                   fdatasync the rank files at every commit (flush/close)
 *   comm=self|world               the communicator of an access list that names none (no
 *                                 H5Pset_mpi_params: HDF5_DRIVER=multifile over a default
 *                                 list): the calling rank alone (the default), or
 *                                 MPI_COMM_WORLD, for programs written to open one file
 *                                 from every rank that way
 *   open_wait=SECONDS             how long a rank waits in an open for the other ranks of
 *                                 its communicator before it ends the job with the reason
 *                                 (default 600; 0: for ever)
 *   layout=head|dir               what a created file's path names: a head, a small
 *                                 HDF5 file that names the directory NAME.h5mf beside it
 *                                 (mf_head.h; the default), or the multifile directory
 *                                 itself; opening reads either
 * separated by ";", "," or blanks (vfd_options.h).
 */
#ifndef MF_OPTIONS_H
#define MF_OPTIONS_H

#include "mf_format.h"

#include <stddef.h>
#include <stdint.h>

#define MF_OPTIONS_MAGIC 0x4d463033u /* "MF03" */

/* read modes: the values of H5FD_multifile_read_t (H5FDmultifile.h; checked there) */
typedef enum { MF_READ_MERGE = 0, MF_READ_INPLACE = 1, MF_READ_PARALLEL = 2 } mf_read_mode_t;

typedef struct {
    uint32_t magic;
    int32_t  read_mode; /* an mf_read_mode_t, of fixed size: the options are the fapl's driver info */
    int32_t  checksums;
    int32_t  sync;
    int32_t  comm_world; /* comm=world */
    int32_t  open_wait;  /* seconds; 0: for ever */
    int32_t  head;       /* layout=head */
} mf_options_t;

/* the defaults over o, an mf_options_t (a vfd_defaults_fn) */
void mf_options_default(void *o);
/* the keys, for messages */
#define MF_OPTIONS_KEYS "read, checksums, sync, comm, open_wait, layout"
/* one key=value over o, an mf_options_t (a vfd_option_fn); 0, or -1 with the reason */
int mf_option_item(void *o, const char *key, const char *value, char *err, size_t len);
/* parse text over o; 0, or -1 with a message naming the bad option */
int mf_options_parse(mf_options_t *o, const char *text, mf_err_t err);

#endif
