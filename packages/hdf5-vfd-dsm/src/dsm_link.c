/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_link: joining servers and clients, and the protocol between them (see dsm_link.h). */
#include "dsm_link.h"

#include "dsm_couple.h"
#include "dsm_files.h"
#include "vfd_driver.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAG_LAYOUT 7401
#define TAG_MSG    7402

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void
init(dsm_link_t *l)
{
    memset(l, 0, sizeof *l);
    l->local = l->inter = l->merged = MPI_COMM_NULL;
}

/* the layout travels from server 0 to every rank of merged; all open the store */
static int
open_store(dsm_link_t *l, const dsm_link_layout_t *given, char *err, size_t len)
{
    dsm_link_layout_t layout = {0, 0, 0, 0};
    if (given)
        layout = *given;
    MPI_Bcast(&layout, 4, MPI_UINT64_T, 0, l->merged);
    return dsm_store_open(&l->store, l->merged, 0, l->nservers, layout.bytes_per_server,
                          (dsm_kind_t)layout.kind, layout.block, layout.seed, err, len);
}

static int
from_couple(dsm_link_t *l, int is_server, char *err, size_t len)
{
    dsm_couple_t c;
    if (dsm_couple_mpmd(&c, is_server, err, len) < 0)
        return -1;
    l->local     = c.local;
    l->inter     = c.inter;
    l->merged    = c.merged;
    l->is_server = c.is_server;
    l->nservers  = c.nservers;
    l->nclients  = c.nclients;
    MPI_Comm_rank(l->local, &l->rank);
    return 0;
}

int
dsm_link_serve(dsm_link_t *l, const char *contact, const dsm_link_layout_t *layout, char *err, size_t len)
{
    init(l);
    if (!contact) {
        if (from_couple(l, 1, err, len) < 0)
            return -1;
        return open_store(l, layout, err, len);
    }
    /* separate jobs: accept the clients' connection through a port written to contact */
    l->is_server = 1;
    MPI_Comm_dup(MPI_COMM_WORLD, &l->local);
    MPI_Comm_rank(l->local, &l->rank);
    MPI_Comm_size(l->local, &l->nservers);
    char port[MPI_MAX_PORT_NAME] = "";
    int  ok                      = 1;
    if (l->rank == 0) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", contact, (int)getpid());
        FILE *fp = NULL;
        /* MPI_Open_port reports on MPI_COMM_SELF or MPI_COMM_WORLD, depending on the MPI */
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Open_port(MPI_INFO_NULL, port);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
        if (rc != MPI_SUCCESS) {
            char text[MPI_MAX_ERROR_STRING] = "";
            int  n                          = 0;
            MPI_Error_string(rc, text, &n);
            while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
                text[--n] = '\0';
            const char *last = strrchr(text, '\n'); /* MPICH: an error stack, the cause last */
            snprintf(err, len,
                     "MPI_Open_port failed: this MPI cannot accept connections from other jobs (%s); start "
                     "servers "
                     "and clients as one MPMD job instead",
                     last ? last + 1 : text);
            ok = 0;
        }
        else if (!(fp = dsm_create_new(tmp)) || fprintf(fp, "%s\n", port) < 0 || fclose(fp) != 0 ||
                 rename(tmp, contact) != 0) {
            snprintf(err, len, "%s: cannot write the contact file: %s", contact, strerror(errno));
            ok = 0;
        }
    }
    if (vfd_agree(l->local, ok, err, len) < 0)
        return -1;
    MPI_Comm_set_errhandler(l->local, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, l->local, &l->inter);
    if (l->rank == 0) {
        MPI_Close_port(port);
        unlink(contact); /* one connection per contact file: a later client must not find a stale port */
    }
    if (vfd_agree(l->local, rc == MPI_SUCCESS, err, len) < 0) {
        if (rc != MPI_SUCCESS)
            snprintf(err, len, "MPI_Comm_accept failed");
        return -1;
    }
    MPI_Comm_remote_size(l->inter, &l->nclients);
    MPI_Intercomm_merge(l->inter, 0, &l->merged); /* servers low */
    return open_store(l, layout, err, len);
}

/* wait for the contact file to exist (the servers may still be starting) */
static int
read_contact(const char *contact, double timeout, char *port, char *err, size_t len)
{
    double end = now() + timeout;
    for (;;) {
        FILE *fp = fopen(contact, "r");
        if (fp) {
            int got = fgets(port, MPI_MAX_PORT_NAME, fp) != NULL;
            fclose(fp);
            if (got) {
                port[strcspn(port, "\n")] = '\0';
                if (*port)
                    return 0;
            }
        }
        else if (errno != ENOENT) {
            snprintf(err, len, "%s: cannot read the contact file: %s", contact, strerror(errno));
            return -1;
        }
        if (now() > end) {
            snprintf(err, len,
                     "%s: no DSM server wrote this contact file within %.0f s (start h5dsm-server first)",
                     contact, timeout);
            return -1;
        }
        usleep(100000);
    }
}

int
dsm_link_connect(dsm_link_t *l, MPI_Comm comm, const char *contact, double timeout, char *err, size_t len)
{
    init(l);
    l->timeout = timeout;
    if (!contact) {
        if (from_couple(l, 0, err, len) < 0)
            return -1;
        return open_store(l, NULL, err, len);
    }
    MPI_Comm_dup(comm, &l->local);
    MPI_Comm_rank(l->local, &l->rank);
    MPI_Comm_size(l->local, &l->nclients);
    char port[MPI_MAX_PORT_NAME] = "";
    int  ok                      = l->rank != 0 || read_contact(contact, timeout, port, err, len) == 0;
    if (vfd_agree(l->local, ok, err, len) < 0)
        return -1;
    MPI_Comm_set_errhandler(l->local, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, l->local, &l->inter);
    if (vfd_agree(l->local, rc == MPI_SUCCESS, err, len) < 0) {
        if (rc != MPI_SUCCESS)
            snprintf(err, len, "%s: MPI_Comm_connect to '%s' failed (is the server still running?)", contact,
                     port);
        return -1;
    }
    MPI_Comm_remote_size(l->inter, &l->nservers);
    MPI_Intercomm_merge(l->inter, 1, &l->merged);
    return open_store(l, NULL, err, len);
}

void
dsm_link_close(dsm_link_t *l)
{
    if (l->merged == MPI_COMM_NULL)
        return;
    dsm_store_close(&l->store);
    MPI_Comm_free(&l->merged);
    if (l->inter != MPI_COMM_NULL)
        MPI_Comm_disconnect(&l->inter);
    MPI_Comm_free(&l->local);
}

/* how a wait pauses between tests of its requests */
typedef enum {
    PAUSE_SLEEP, /* short sleeps */
    PAUSE_YIELD  /* give the core away but keep driving MPI's progress */
} pause_t;

/* complete n (<= 2) requests; timeout <= 0: wait for ever. On DSM_WAIT_TIMEOUT the
 * requests are cancelled and freed */
static dsm_wait_t
complete(MPI_Request *reqs, int n, double timeout, pause_t pause)
{
    int        done = 0;
    double     end  = now() + timeout;
    MPI_Status statuses[2]; /* (MPI_STATUSES_IGNORE makes GCC warn about MPICH's annotation) */
    while (MPI_Testall(n, reqs, &done, statuses) == MPI_SUCCESS && !done) {
        if (timeout > 0 && now() > end) {
            for (int i = 0; i < n; i++)
                if (reqs[i] != MPI_REQUEST_NULL) {
                    MPI_Cancel(&reqs[i]);
                    MPI_Request_free(&reqs[i]);
                }
            return DSM_WAIT_TIMEOUT;
        }
        if (pause == PAUSE_YIELD)
            sched_yield();
        else
            usleep(200);
    }
    return done ? DSM_WAIT_DONE : DSM_WAIT_ERROR;
}

/* complete the requests within the link's timeout; on expiry cancel them: a server that
 * never answers (or never even receives) must not hold the clients forever */
static int
wait_timed(dsm_link_t *l, MPI_Request *reqs, int n, char *err, size_t len)
{
    dsm_wait_t rc = complete(reqs, n, l->timeout, PAUSE_SLEEP);
    if (rc == DSM_WAIT_TIMEOUT)
        snprintf(err, len,
                 "no answer from the DSM servers within %.0f s (timeout=%g in the driver's configuration)",
                 l->timeout, l->timeout);
    else if (rc == DSM_WAIT_ERROR)
        snprintf(err, len, "lost the connection to the DSM servers");
    return rc == DSM_WAIT_DONE ? 0 : -1;
}

int
dsm_link_send(dsm_link_t *l, const dsm_msg_t *msg, char *err, size_t len)
{
    MPI_Request req;
    MPI_Isend(msg, (int)sizeof *msg, MPI_BYTE, 0, TAG_MSG, l->merged, &req);
    return wait_timed(l, &req, 1, err, len);
}

int
dsm_link_ask(dsm_link_t *l, const dsm_msg_t *msg, dsm_msg_t *answer, char *err, size_t len)
{
    MPI_Request reqs[2];
    MPI_Irecv(answer, (int)sizeof *answer, MPI_BYTE, 0, TAG_MSG, l->merged, &reqs[0]);
    MPI_Isend(msg, (int)sizeof *msg, MPI_BYTE, 0, TAG_MSG, l->merged, &reqs[1]);
    return wait_timed(l, reqs, 2, err, len);
}

/* wait for a request, yielding the core between tests: servers often share nodes (or, on
 * a workstation, cores) with the clients. No sleeping: an MPI whose one-sided transfers
 * need the target's progress (MPICH over UCX moves large puts in pieces, each when the
 * target next calls MPI) would crawl (pauses of up to 1 ms gave 89 MB/s instead of 8 GB/s) */
void
dsm_idle_wait(MPI_Request *req)
{
    complete(req, 1, 0, PAUSE_YIELD);
}

dsm_wait_t
dsm_link_request(dsm_link_t *l, dsm_msg_t *msg, double timeout)
{
    MPI_Request req;
    if (MPI_Irecv(msg, (int)sizeof *msg, MPI_BYTE, l->nservers, TAG_MSG, l->merged, &req) != MPI_SUCCESS)
        return DSM_WAIT_ERROR;
    /* DSM_WAIT_TIMEOUT: the clients are gone (or stuck), no longer listened to */
    return complete(&req, 1, timeout, PAUSE_YIELD);
}

void
dsm_link_abandon(dsm_link_t *l)
{
    /* the clients' side is gone: no collective call over the connection can complete,
     * so its communicators and window are left as they are (their memory stays taken) */
    l->merged = l->inter = MPI_COMM_NULL;
}

int
dsm_link_reply(dsm_link_t *l, const dsm_msg_t *msg)
{
    return MPI_Send(msg, (int)sizeof *msg, MPI_BYTE, l->nservers, TAG_MSG, l->merged) == MPI_SUCCESS ? 0 : -1;
}
