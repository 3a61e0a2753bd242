/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_link: the connection between the DSM's servers and its clients, and the protocol
 * they speak over it.
 *
 * Joining: MPMD in one job (dsm_couple.h), or separate jobs through a contact file (the
 * servers MPI_Open_port, write the port name to the file, MPI_Comm_accept; the clients
 * read it and MPI_Comm_connect). Either way the result is one communicator with the
 * servers first; server 0 then sends the layout (distribution, block, seed, bytes per
 * server), and servers and clients open the store (dsm_store.h) over it.
 *
 * The protocol, between client 0 and server 0 (server 0 tells the other servers):
 *   OPEN  name, mode   a client program opens a file; server 0 answers GRANT with the
 *                      size of the file the DSM holds (0 when creating) once no file is
 *                      open and the action on the last one has finished: clients wait
 *                      rather than overwrite what a server reads
 *   CLOSE size         the file is complete (all clients' transfers are done); the
 *                      servers run their action on it before granting the next OPEN
 *   BYE                the clients disconnect (at MPI_Finalize)
 * A client that waits longer than its timeout for an answer gets an error, never a hang.
 */
#ifndef DSM_LINK_H
#define DSM_LINK_H

#include "dsm_store.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

enum { DSM_MSG_OPEN = 1, DSM_MSG_GRANT, DSM_MSG_REFUSE, DSM_MSG_CLOSE, DSM_MSG_BYE, DSM_MSG_DELETE };
enum { DSM_OPEN_CREATE = 1, DSM_OPEN_RDWR, DSM_OPEN_RDONLY };

#define DSM_NAME_MAX 1024

typedef struct {
    uint64_t type;    /* DSM_MSG_* */
    uint64_t mode;    /* OPEN: DSM_OPEN_*; CLOSE: 1 when the file was written */
    uint64_t size;    /* GRANT: size of the file held; CLOSE: final size */
    uint64_t step;    /* GRANT/CLOSE: number of the file in the series (0, 1, ...) */
    uint64_t written; /* CLOSE: the end of the highest write of any client */
    char     name[DSM_NAME_MAX];
} dsm_msg_t;

typedef struct {
    MPI_Comm    local;  /* this program's ranks (clients: the application's communicator) */
    MPI_Comm    inter;  /* servers <-> clients */
    MPI_Comm    merged; /* servers 0 .. nservers-1, then clients */
    int         is_server;
    int         nservers, nclients;
    int         rank;    /* in local */
    double      timeout; /* seconds a client waits for server 0 */
    dsm_store_t store;
} dsm_link_t;

/* The layout the servers host, sent by server 0 to every client at connection. */
typedef struct {
    uint64_t kind, block, seed, bytes_per_server;
} dsm_link_layout_t;

/* Servers: collective over local (MPMD: over MPI_COMM_WORLD; the servers' communicator
 * results). contact: NULL for MPMD, else the file to write the port name to. Builds
 * the store with the layout. 0, or -1 with err. */
int dsm_link_serve(dsm_link_t *link, const char *contact, const dsm_link_layout_t *layout, char *err,
                   size_t len);

/* Clients: collective over comm (MPMD: every rank of MPI_COMM_WORLD calls it, servers
 * through dsm_link_serve; comm is then ignored and local becomes the clients' part).
 * contact: NULL for MPMD, else the file written by the servers (waited for up to
 * timeout seconds). 0, or -1 with err, the same on every client. */
int dsm_link_connect(dsm_link_t *link, MPI_Comm comm, const char *contact, double timeout, char *err,
                     size_t len);

/* Collective over merged: frees the store and the communicators. */
void dsm_link_close(dsm_link_t *link);

/* Client 0 -> server 0, within link->timeout seconds. */
int dsm_link_send(dsm_link_t *link, const dsm_msg_t *msg, char *err, size_t len);
/* Client 0: send msg to server 0 and wait for its answer, within link->timeout seconds. */
int dsm_link_ask(dsm_link_t *link, const dsm_msg_t *msg, dsm_msg_t *answer, char *err, size_t len);
/* how a wait for MPI requests ended */
typedef enum {
    DSM_WAIT_ERROR   = -1, /* an MPI error */
    DSM_WAIT_DONE    = 0,
    DSM_WAIT_TIMEOUT = 1 /* nothing came within the timeout */
} dsm_wait_t;

/* Server 0: the next request of client 0 (the servers' life is to wait), within timeout
 * seconds (timeout <= 0: wait for ever). */
dsm_wait_t dsm_link_request(dsm_link_t *link, dsm_msg_t *msg, double timeout);
/* Servers: forget a connection whose clients are gone without freeing it (freeing is
 * collective with the dead clients and would hang); its memory stays taken. */
void dsm_link_abandon(dsm_link_t *link);
/* Complete req, yielding the core between tests: an idle server leaves the core to the
 * clients instead of spinning in a blocking call, and still drives MPI's progress. */
void dsm_idle_wait(MPI_Request *req);
/* Server 0 -> client 0. */
int dsm_link_reply(dsm_link_t *link, const dsm_msg_t *msg);

#endif
