/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_host: hosting the DSM on server ranks (the host API of H5FDdsm.h).
 *
 * Server 0 takes the clients' requests one at a time (dsm_link.h) and tells the other
 * servers; requests are handled in order, so an OPEN that arrives while the action on
 * the last file runs is answered only when the action is done: clients wait rather
 * than overwrite what a server reads.
 *
 * Clients that leave with a file open (they disconnect, or stop answering for longer
 * than the client timeout while the file is open: a client job that died) lose that
 * file: the servers discard it (no action runs on it, a read-only open is refused) and
 * serve on. A dead client job's connection cannot be freed (that is collective with
 * it): it is abandoned with its memory.
 */
#include "H5FDdsm.h"

#include "dsm_driver.h"
#include "dsm_link.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct h5dsm_host {
    dsm_link_t link;
    char       layout[128];
    char       held[DSM_NAME_MAX]; /* the file the DSM holds ("" before the first) */
    uint64_t   size;
    uint64_t   dirty;          /* the DSM's bytes below this address may hold an earlier file's */
    uint64_t   steps;          /* files closed so far */
    int        open;           /* a client program has the file open */
    double     client_timeout; /* seconds without a request while a file is open; 0: none */
    int        abandoned;      /* the clients vanished: the connection cannot be closed */
    double     lag;            /* H5DSM_TEST_LAG: seconds the other servers take to act on an OPEN */
};

int
h5dsm_host_start(h5dsm_host_t **out, const char *distribution, uint64_t bytes_per_server, const char *contact,
                 char *err, size_t len)
{
    dsm_kind_t        kind;
    dsm_link_layout_t layout = {0, 0, 0, bytes_per_server};
    *out                     = NULL;
    if (dsm_layout_parse(distribution, &kind, &layout.block, &layout.seed, err, len) < 0)
        return -1;
    if (kind == DSM_MASK && layout.block == 0) {
        snprintf(err, len,
                 "the mask distribution resizes the window to the files it will hold: give their size, "
                 "mask:<bytes> (each server then holds a page-aligned share of ceil(bytes/servers))");
        return -1;
    }
    layout.kind     = (uint64_t)kind;
    h5dsm_host_t *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    const char *lag = getenv("H5DSM_TEST_LAG"); /* fault injection: a server slow to act */
    h->lag          = lag ? atof(lag) : 0;
    if (dsm_link_serve(&h->link, contact, &layout, err, len) < 0) {
        free(h);
        return -1;
    }
    dsm_layout_describe(&h->link.store.layout, h->layout, sizeof h->layout);
    *out = h;
    return 0;
}

uint64_t
h5dsm_host_capacity(const h5dsm_host_t *h)
{
    return h->link.store.layout.total;
}
const char *
h5dsm_host_layout(const h5dsm_host_t *h)
{
    return h->layout;
}

hid_t
h5dsm_host_fapl(h5dsm_host_t *h)
{
    (void)h;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0)
        return fapl;
    if (H5Pset_fapl_dsm(fapl, MPI_COMM_SELF, NULL) < 0) {
        H5Pclose(fapl);
        return H5I_INVALID_HID;
    }
    return fapl;
}

int
h5dsm_host_read(h5dsm_host_t *h, uint64_t addr, void *buf, size_t len, char *err, size_t errlen)
{
    return dsm_store_get(&h->link.store, addr, buf, len, err, errlen);
}

/* H5DSM_TEST_LAG: take this long, with MPI progressing (the clients' transfers to this
 * server go on meanwhile) */
static void
lag(MPI_Comm comm, double seconds)
{
    double until = MPI_Wtime() + seconds;
    while (MPI_Wtime() < until) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
        usleep(1000);
    }
}

/* server 0's answer to an OPEN */
static void
answer_open(h5dsm_host_t *h, const dsm_msg_t *req, dsm_msg_t *ans)
{
    memset(ans, 0, sizeof *ans);
    ans->type = DSM_MSG_GRANT;
    ans->step = h->steps;
    if (req->mode == DSM_OPEN_CREATE) { /* every server: no byte of the file before shows through */
        if (h->lag > 0 && h->link.rank > 0)
            lag(h->link.local, h->lag);
        snprintf(h->held, sizeof h->held, "%s", req->name);
        h->size = 0;
        dsm_store_clear(&h->link.store, h->dirty);
        h->dirty = 0;
    }
    else if (!*h->held) {
        ans->type = DSM_MSG_REFUSE;
        snprintf(ans->name, sizeof ans->name, "the DSM holds no file yet");
    }
    else if (strcmp(h->held, req->name) != 0) {
        ans->type = DSM_MSG_REFUSE;
        snprintf(ans->name, sizeof ans->name, "the DSM holds '%.900s', not this file", h->held);
    }
    else
        ans->size = h->size;
    if (ans->type == DSM_MSG_GRANT)
        h->open = 1;
}

/* server 0's answer to a DELETE: the file held, closed, is forgotten */
static void
answer_delete(h5dsm_host_t *h, const dsm_msg_t *req, dsm_msg_t *ans)
{
    memset(ans, 0, sizeof *ans);
    ans->type = DSM_MSG_REFUSE;
    if (h->open)
        snprintf(ans->name, sizeof ans->name, "'%.900s' is open", h->held);
    else if (!*h->held || strcmp(h->held, req->name) != 0)
        snprintf(ans->name, sizeof ans->name, "the DSM holds no file of this name");
    else {
        h->held[0] = '\0';
        h->size    = 0;
        ans->type  = DSM_MSG_GRANT;
    }
}

void
h5dsm_host_set_client_timeout(h5dsm_host_t *h, double seconds)
{
    h->client_timeout = seconds;
}

/* the clients left with the file open: it is incomplete, nobody acts on it */
static void
discard_open_file(h5dsm_host_t *h, const char *why)
{
    if (h->link.rank == 0) {
        fprintf(stderr, "h5dsm: step %" PRIu64 ": '%s' discarded (%s): no action runs on it\n", h->steps,
                h->held, why);
        fflush(stderr);
    }
    h->held[0] = '\0';
    h->size    = 0;
    h->open    = 0;
    h->dirty   = UINT64_MAX; /* written up to where, nobody said */
}

long
h5dsm_host_serve(h5dsm_host_t *h, h5dsm_action_t action, void *arg)
{
    dsm_link_t *l     = &h->link;
    long        files = 0;
    for (;;) {
        dsm_msg_t msg;
        int       got = DSM_WAIT_DONE; /* a dsm_wait_t, broadcast as an int */
        if (l->rank == 0)
            got = dsm_link_request(l, &msg, h->open ? h->client_timeout : 0);
        MPI_Request req;
        MPI_Ibcast(&got, 1, MPI_INT, 0, l->local, &req);
        dsm_idle_wait(&req); /* the other servers wait here for the next request */
        if (got == DSM_WAIT_ERROR)
            return -1;
        if (got == DSM_WAIT_TIMEOUT) { /* none within the client timeout */
            char why[160];
            snprintf(why, sizeof why,
                     "no word from the clients for %g s with the file open: their job is gone",
                     h->client_timeout);
            discard_open_file(h, why);
            dsm_link_abandon(l);
            h->abandoned = 1;
            return H5DSM_CLIENTS_LOST;
        }
        MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, l->local);
        if (msg.type == DSM_MSG_BYE) {
            if (h->open)
                discard_open_file(h, "the clients disconnected without closing it");
            return files;
        }
        if (msg.type == DSM_MSG_OPEN || msg.type == DSM_MSG_DELETE) {
            dsm_msg_t ans;
            if (msg.type == DSM_MSG_OPEN)
                answer_open(h, &msg, &ans);
            else
                answer_delete(h, &msg, &ans);
            /* the clients write as soon as they have the answer: every server must have
             * cleared the earlier file first, or it clears their first writes */
            MPI_Barrier(l->local);
            if (l->rank == 0 && dsm_link_reply(l, &ans) < 0)
                return -1;
            continue;
        }
        if (msg.type != DSM_MSG_CLOSE) {
            if (l->rank == 0)
                fprintf(stderr, "h5dsm: unknown request %" PRIu64 " from the clients: ignored\n", msg.type);
            continue;
        }
        h->open = 0;
        if (!msg.mode) /* read-only: nothing changed */
            continue;
        h->size = msg.size;
        if (msg.size > h->dirty || msg.written > h->dirty)
            h->dirty = msg.size > msg.written ? msg.size : msg.written;
        files++;
        if (action) {
            h5dsm_file_t file = {h->held, h->size, h->steps, l->local, l->rank};
            dsm_driver_set_host(l, h->held, h->size);
            int failed = action(h, &file, arg) != 0;
            dsm_driver_set_host(NULL, NULL, 0);
            int all = 0;
            MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_MAX, l->local);
            if (all != 0 && l->rank == 0)
                fprintf(stderr, "h5dsm: the action on '%s' (step %" PRIu64 ") failed; serving on\n", h->held,
                        h->steps);
        }
        h->steps++;
    }
}

void
h5dsm_host_stop(h5dsm_host_t *h)
{
    if (!h)
        return;
    if (h->abandoned) /* the servers' own communicator is still theirs to free */
        MPI_Comm_free(&h->link.local);
    else
        dsm_link_close(&h->link);
    free(h);
}
