/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_driver.h - the file access property list of each driver h5fuzz can run, without
 * linking any driver library: the drivers' own API calls are looked up at run time
 * in the library on HDF5's plugin path (or in libhdf5 itself for the patched twins).
 *
 *   mpio       H5Pset_fapl_mpio (the reference)
 *   default    HDF5's default driver with the communicator (HDF5_DRIVER selects a plugin)
 *   multifile  H5Pset_fapl_multifile + H5Pset_multifile_options (the linked API)
 *   mpiposix   H5Pset_fapl_mpiposix of a patched libhdf5 (the original patch's API)
 *   dsm        the DSM driver by name, as the clients of an MPMD job with h5dsm-server
 *   sec2       serial reads of an ordinary file (a reconstructed one)
 */
#ifndef FZ_DRIVER_H
#define FZ_DRIVER_H

#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>

/* the communicator the workload runs on: MPI_COMM_WORLD, or the DSM clients' */
int fz_driver_comm(const char *driver, MPI_Comm *comm, char *err, size_t errlen);
/* a new fapl for the driver; -1 with err */
hid_t fz_driver_fapl(const char *driver, const char *config, MPI_Comm comm, char *err, size_t errlen);

#endif
