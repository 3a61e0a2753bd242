/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_couple: MPMD coupling of the DSM's servers and clients (see dsm_couple.h). */
#include "dsm_couple.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
dsm_couple_mpmd(dsm_couple_t *c, int is_server, char *err, size_t len)
{
    memset(c, 0, sizeof *c);
    c->local = c->inter = c->merged = MPI_COMM_NULL;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int  mine = is_server ? 1 : 0;
    int *all  = malloc((size_t)size * sizeof *all);
    if (!all) {
        snprintf(err, len, "no memory");
        return -1;
    }
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    int first_server = -1, first_client = -1;
    for (int r = 0; r < size; r++) {
        if (all[r]) {
            c->nservers++;
            if (first_server < 0)
                first_server = r;
        }
        else {
            c->nclients++;
            if (first_client < 0)
                first_client = r;
        }
    }
    free(all);
    if (first_server < 0 || first_client < 0) {
        snprintf(err, len,
                 "not an MPMD job with servers and clients (%d server rank(s), %d client rank(s) in "
                 "MPI_COMM_WORLD): "
                 "start it as `mpiexec -n S h5dsm-server ... : -n C app ...` (or srun --multi-prog)",
                 c->nservers, c->nclients);
        return -1;
    }
    c->is_server = is_server;
    MPI_Comm_split(MPI_COMM_WORLD, c->is_server ? 0 : 1, rank, &c->local);
    /* leaders: rank 0 of each program's communicator; the remote one by its world rank */
    MPI_Intercomm_create(c->local, 0, MPI_COMM_WORLD, c->is_server ? first_client : first_server, 7311,
                         &c->inter);
    MPI_Intercomm_merge(c->inter, c->is_server ? 0 : 1, &c->merged); /* servers low: ranks 0 .. S-1 */
    return 0;
}

void
dsm_couple_free(dsm_couple_t *c)
{
    if (c->merged != MPI_COMM_NULL)
        MPI_Comm_free(&c->merged);
    if (c->inter != MPI_COMM_NULL)
        MPI_Comm_free(&c->inter);
    if (c->local != MPI_COMM_NULL)
        MPI_Comm_free(&c->local);
}
