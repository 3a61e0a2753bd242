/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_dsm: h5pwrite3dc as a client of the DSM driver (packages/hdf5-vfd-dsm) in one MPMD
 * job:
 *
 *   mpiexec -n S h5dsm-server --size BYTES ... : -n N h5pwrite3dc FILE NSETS NDSETS --driver dsm
 *
 * The servers share MPI_COMM_WORLD with the clients, so the clients need their own
 * communicator, which the DSM library hands out (H5FD_dsm_mpmd_clients). h5pwrite3dc
 * does not link against the DSM library (it is a separate package, and HDF5 loads the
 * driver as a plugin anyway): the function is looked up in the library HDF5 would load,
 * libh5fd_dsm.so on HDF5's plugin search path. dlopen gives HDF5 the same loaded
 * library later, so the connection made here is the one the driver uses.
 */
#ifndef PW_DSM_H
#define PW_DSM_H

#include <mpi.h>
#include <stddef.h>

/* Does the command line ask for the DSM driver (even if it is faulty otherwise)? A
 * refused DSM client then stops the whole job, as the servers would wait for it. */
int pw_dsm_requested(int argc, char **argv);

/* Is this run a DSM client in an MPMD job (driver "dsm" without contact=<file>)? */
int pw_dsm_mpmd(const char *driver, const char *driver_config);

/* Collective over MPI_COMM_WORLD (the servers take part): *clients becomes the
 * clients' communicator. 0, or -1 with err set (the library or the coupling failed). */
int pw_dsm_clients(MPI_Comm *clients, char *err, size_t errlen);

#endif
