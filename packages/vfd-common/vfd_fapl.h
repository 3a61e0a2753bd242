/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_fapl.h - what a driver reads from a file access property list, alike for every
 * driver: its options (the driver info a setter stored, then the configuration string of
 * HDF5_DRIVER_CONFIG or H5Pset_driver_by_name over them), and the communicator and info
 * the list names (H5Pset_mpi_params).
 */
#ifndef VFD_FAPL_H
#define VFD_FAPL_H

#include "vfd_options.h"

#include <hdf5.h>
#include <sys/types.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* a driver's default options, over opt */
typedef void (*vfd_defaults_fn)(void *opt);

/* The driver's options of the list into opt (size bytes, beginning with the uint32_t
 * magic of the driver's options): the driver info when it is this driver's, else
 * defaults(opt) (a list set by name or HDF5_DRIVER has none; nothing is pushed). */
void vfd_fapl_info(hid_t fapl, uint32_t magic, void *opt, size_t size, vfd_defaults_fn defaults);

/* vfd_fapl_info, then the list's configuration string over it, item by item (fn, with
 * the driver's keys: vfd_options.h). 0, or -1 with the reason in err (len bytes):
 * "driver configuration '<text>': <why>". */
int vfd_fapl_options(hid_t fapl, uint32_t magic, void *opt, size_t size, vfd_defaults_fn defaults,
                     const char *keys, vfd_option_fn fn, char *err, size_t len);

/* The communicator and info the list names, both the caller's to free: 1, or 0 when it
 * names none (comm MPI_COMM_NULL, info MPI_INFO_NULL; nothing pushed). */
int vfd_fapl_mpi(hid_t fapl, MPI_Comm *comm, MPI_Info *info);

#endif
