/* dsm_couple: joining the DSM's servers and its clients into one communicator.
 *
 * MPMD in one job: `mpiexec -n S h5dsm-server ... : -n C app ...` starts both programs in
 * one MPI_COMM_WORLD; the MPI_APPNUM attribute tells each rank which program it belongs
 * to. Each program gets its own communicator (split by MPI_APPNUM), the two are joined
 * with MPI_Intercomm_create, and the intercommunicator is merged with the servers first,
 * so the DSM's window (dsm_store.h) spans servers and clients.
 */
#ifndef DSM_COUPLE_H
#define DSM_COUPLE_H

#include <mpi.h>
#include <stddef.h>

typedef struct {
    MPI_Comm local;     /* this program's ranks */
    MPI_Comm inter;     /* servers <-> clients */
    MPI_Comm merged;    /* servers (ranks 0 .. nservers-1), then clients */
    int      is_server;
    int      nservers, nclients;
} dsm_couple_t;

/* Collective over MPI_COMM_WORLD. server_appnum: the MPI_APPNUM of the server program
 * (0 when it comes first on the mpiexec line). 0, or -1 with err (e.g. not an MPMD job). */
int dsm_couple_mpmd(dsm_couple_t *c, int server_appnum, char *err, size_t errlen);

void dsm_couple_free(dsm_couple_t *c);

#endif
