/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * H5FDdsm.h - the DSM virtual file driver for parallel HDF5 (1.14, 2.x): HDF5 files held
 * in the memory of a group of server processes and written by client processes with
 * MPI one-sided transfers (Soumagne, Biddiscombe, Esnard, EuroMPI 2011).
 *
 * Clients select the driver like any other:
 *   H5Pset_fapl_dsm(fapl, comm, "contact=dsm.contact");         linked
 *   H5Pset_driver_by_name(fapl, "dsm", "contact=dsm.contact");   by name
 *   HDF5_DRIVER=dsm HDF5_DRIVER_CONFIG=contact=dsm.contact ./app plugin, no recompilation
 * Configuration (';'-separated): contact=<file> (separate jobs: the file h5dsm-server
 * wrote), timeout=<seconds> (how long a client waits for the servers, default 60).
 * In one MPMD job (`mpiexec -n S h5dsm-server ... : -n C app`) the application first
 * calls H5FD_dsm_mpmd_clients() to get its own communicator; no contact is needed then.
 *
 * Servers host the DSM: the program h5dsm-server, or any application through the host
 * API below (an action runs on every file the clients close).
 */
#ifndef H5FDdsm_H
#define H5FDdsm_H

#include <hdf5.h>
#include <mpi.h>
#include <stdint.h>

#define H5FD_DSM_NAME "dsm"
/* a value of the range HDF5 leaves for testing/unregistered drivers (256-511) */
#define H5FD_DSM_VALUE ((H5FD_class_value_t)362)
/* the longest timeout accepted (seconds: a week), for the clients and the server alike */
#define H5FD_DSM_TIMEOUT_MAX 604800.0
#define H5FD_DSM             (H5FD_dsm_init())

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ clients */

/* the driver's ID, registering it on first use */
hid_t H5FD_dsm_init(void);

/* select the driver for the ranks of comm (all the client ranks) with a configuration
 * as above (NULL: MPMD, after H5FD_dsm_mpmd_clients) */
herr_t H5Pset_fapl_dsm(hid_t fapl_id, MPI_Comm comm, const char *config);

/* MPMD: collective over MPI_COMM_WORLD, matched by the servers (first on the mpiexec
 * line); *clients becomes the application's communicator (use it where the program
 * used MPI_COMM_WORLD). 0, or -1 with a message on stderr. */
int H5FD_dsm_mpmd_clients(MPI_Comm *clients);

/* Leave the servers now (collective over the client ranks; otherwise done at
 * MPI_Finalize): h5dsm_host_serve returns on the servers. A later open or
 * H5FD_dsm_mpmd_clients connects again. 0, or -1 with a message on stderr. */
int H5FD_dsm_disconnect(void);

/* ------------------------------------------------------------------ servers */

typedef struct h5dsm_host h5dsm_host_t;

/* one file the clients closed, as the servers' action sees it */
typedef struct {
    const char *name; /* the name the clients gave it */
    uint64_t    size; /* bytes */
    uint64_t    step; /* 0 for the first file of the connection, then 1, 2, ... */
    MPI_Comm    comm; /* the servers */
    int         rank; /* in comm */
} h5dsm_file_t;

/* called on every server after each file the clients closed, before clients may open
 * the next; 0 on success (a failure is reported, the servers keep serving) */
typedef int (*h5dsm_action_t)(h5dsm_host_t *host, const h5dsm_file_t *file, void *arg);

/* Start hosting: collective over MPI_COMM_WORLD (MPMD: all ranks; separate jobs: the
 * servers' job). distribution: "linear", "block-cyclic:<size>", "random-block:<size>[:seed]";
 * bytes_per_server: l. contact: NULL for MPMD, else the file to publish the port in.
 * 0, or -1 with err. */
int h5dsm_host_start(h5dsm_host_t **host, const char *distribution, uint64_t bytes_per_server,
                     const char *contact, char *err, size_t errlen);

/* Serve one client connection until the clients disconnect; the action may be NULL.
 * Returns the number of files closed by the clients, -1 on error, H5DSM_CLIENTS_LOST
 * when the clients stopped answering with a file open (see the client timeout). A file
 * the clients leave open (disconnecting, or lost) is discarded: no action runs on it. */
long h5dsm_host_serve(h5dsm_host_t *host, h5dsm_action_t action, void *arg);
#define H5DSM_CLIENTS_LOST (-2L)

/* While a file is open, the clients are taken for gone (a client job that died mid-file)
 * after this many seconds without a request; the file is discarded and
 * h5dsm_host_serve returns H5DSM_CLIENTS_LOST. 0 (the default): wait for ever. Choose it
 * longer than the clients' longest time between opening and closing a file. A lost
 * connection stays connected to the dead job in MPI's eyes, so MPI_Finalize would wait
 * for it: a host that lost clients ends with MPI_Abort. */
void h5dsm_host_set_client_timeout(h5dsm_host_t *host, double seconds);

/* A file access property list that opens the file the action is given, read-only,
 * through the driver, on this server rank alone (H5Fopen(file->name, H5F_ACC_RDONLY, fapl)). */
hid_t h5dsm_host_fapl(h5dsm_host_t *host);

/* Raw bytes of the file held (any server rank). 0, or -1 with err. */
int h5dsm_host_read(h5dsm_host_t *host, uint64_t addr, void *buf, size_t len, char *err, size_t errlen);

/* The DSM: total bytes, servers, layout description. */
uint64_t    h5dsm_host_capacity(const h5dsm_host_t *host);
const char *h5dsm_host_layout(const h5dsm_host_t *host);

/* Collective over the servers: free the DSM. */
void h5dsm_host_stop(h5dsm_host_t *host);

#ifdef __cplusplus
}
#endif

#endif
