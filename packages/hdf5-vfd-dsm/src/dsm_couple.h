/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_couple: joining the DSM's servers and its clients into one communicator.
 *
 * MPMD in one job: `mpiexec -n S h5dsm-server ... : -n C app ...` (or `srun --multi-prog`)
 * starts both programs in one MPI_COMM_WORLD. Each rank says which side it is on (the
 * server program and the client library know): the MPI_APPNUM attribute would tell
 * the programs of an mpiexec MPMD line apart, but srun --multi-prog gives every rank
 * the same one. Each side gets its own communicator (split by role), the two are
 * joined with MPI_Intercomm_create, and the intercommunicator is merged with the
 * servers first, so the DSM's window (dsm_store.h) spans servers and clients.
 */
#ifndef DSM_COUPLE_H
#define DSM_COUPLE_H

#include <mpi.h>
#include <stddef.h>

typedef struct {
    MPI_Comm local;  /* this program's ranks */
    MPI_Comm inter;  /* servers <-> clients */
    MPI_Comm merged; /* servers (ranks 0 .. nservers-1), then clients */
    int      is_server;
    int      nservers, nclients;
} dsm_couple_t;

/* Collective over MPI_COMM_WORLD; is_server: this rank hosts the DSM. 0, or -1 with err
 * (not an MPMD job: no server or no client ranks). */
int dsm_couple_mpmd(dsm_couple_t *c, int is_server, char *err, size_t errlen);

void dsm_couple_free(dsm_couple_t *c);

#endif
