/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_store: the DSM's memory and its one-sided transport.
 *
 * The servers' buffers are exposed in one MPI window over a communicator that holds
 * servers and clients (in the coupled case the merge of their intercommunicator);
 * clients contribute no memory. A transfer at a file address is split by the layout
 * (dsm_distribution.h) into runs that each stay on one server; every server involved is
 * locked (passive target, MPI_Win_lock, shared: clients write disjoint ranges), the runs
 * are issued to all of them with MPI_Put / MPI_Get, and the locks are released, which
 * completes the transfers. Keeping servers from reading while clients write is the
 * protocol's job, not the transport's.
 * Addresses beyond the DSM's length are refused ("the DSM is full"), never written.
 */
#ifndef DSM_STORE_H
#define DSM_STORE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "dsm_distribution.h"

typedef struct {
    MPI_Comm     comm; /* servers and clients */
    MPI_Win      win;
    int          rank;
    int          first_server; /* servers are ranks first_server .. first_server + P - 1 of comm */
    int          is_server;
    void        *local; /* this server's buffer (NULL on clients) */
    dsm_layout_t layout;
    int         *locked; /* per server: locked in the current transfer */
} dsm_store_t;

/* Collective over comm. Servers (ranks [first_server, first_server + nservers)) each
 * expose buffer_len bytes; the layout (same arguments on every rank) decides how file
 * addresses map onto them. 0, or -1 with err. */
int dsm_store_open(dsm_store_t *store, MPI_Comm comm, int first_server, int nservers, uint64_t buffer_len,
                   dsm_kind_t kind, uint64_t block, uint64_t seed, char *err, size_t errlen);
/* (for DSM_MASK, block is the size of the files the window is resized to) */

/* Collective over the store's communicator. */
void dsm_store_close(dsm_store_t *store);

/* On a server: zero its share of file addresses [0, upto) (no client may transfer
 * meanwhile); a new file reads zeros wherever it was never written, as a new file on
 * disk does. Clients: nothing. */
void dsm_store_clear(dsm_store_t *store, uint64_t upto);

/* One-sided transfers of len bytes at file address addr (any rank, no server action). */
int dsm_store_put(dsm_store_t *store, uint64_t addr, const void *buf, size_t len, char *err, size_t errlen);
int dsm_store_get(dsm_store_t *store, uint64_t addr, void *buf, size_t len, char *err, size_t errlen);
/* a batch of transfers in one access epoch per server (many small pieces of one call):
 * issue them, then complete them all; a get's bytes and a put's source are only read
 * or free again after dsm_store_complete, which is needed after a failed issue too */
int dsm_store_issue_put(dsm_store_t *store, uint64_t addr, const void *buf, size_t len, char *err,
                        size_t errlen);
int dsm_store_issue_get(dsm_store_t *store, uint64_t addr, void *buf, size_t len, char *err, size_t errlen);
int dsm_store_complete(dsm_store_t *store, char *err, size_t errlen);

#endif
