/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_store: the DSM's window and its one-sided transfers (see dsm_store.h). */
#include "dsm_store.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* bytes the servers of one node can have: MemAvailable, and no more than /dev/shm has
 * free where it exists (both MPIs keep the windows of ranks sharing a node there) */
static double
node_memory(void)
{
    FILE  *f = fopen("/proc/meminfo", "r");
    char   line[256];
    double kib = -1, have;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    have = kib >= 0 ? kib * 1024 : (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    struct statvfs st;
    if (statvfs("/dev/shm", &st) == 0 && (double)st.f_bavail * (double)st.f_frsize < have)
        have = (double)st.f_bavail * (double)st.f_frsize;
    return have;
}

/* collective over comm: do the servers of every node fit in its memory? 0, or -1 with
 * err (on every rank: the message of the first node that does not) */
static int
check_node_memory(MPI_Comm comm, MPI_Aint bytes, char *err, size_t len)
{
    MPI_Comm node;
    int      rank, node_servers = 0, server = bytes > 0;
    double   need = 0, mine = (double)bytes;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Allreduce(&mine, &need, 1, MPI_DOUBLE, MPI_SUM, node);
    MPI_Allreduce(&server, &node_servers, 1, MPI_INT, MPI_SUM, node);
    MPI_Comm_free(&node);
    double have     = node_memory();
    char   msg[512] = "";
    if (need > have)
        snprintf(msg, sizeof msg,
                 "the DSM needs %.2f GiB of memory on one node (%d server rank(s) x %.2f GiB), the node has "
                 "%.2f GiB "
                 "available (MemAvailable, /dev/shm free): use a smaller --size or more nodes",
                 need / 1073741824.0, node_servers, (double)bytes / 1073741824.0, have / 1073741824.0);
    int first = *msg ? rank : INT_MAX, any;
    MPI_Allreduce(&first, &any, 1, MPI_INT, MPI_MIN, comm);
    if (any == INT_MAX)
        return 0;
    MPI_Bcast(msg, sizeof msg, MPI_CHAR, any, comm);
    snprintf(err, len, "%s", msg);
    return -1;
}

int
dsm_store_open(dsm_store_t *s, MPI_Comm comm, int first_server, int nservers, uint64_t buffer_len,
               dsm_kind_t kind, uint64_t block, uint64_t seed, char *err, size_t len)
{
    memset(s, 0, sizeof *s);
    int size;
    MPI_Comm_rank(comm, &s->rank);
    MPI_Comm_size(comm, &size);
    if (first_server < 0 || nservers < 1 || first_server + nservers > size) {
        snprintf(err, len, "servers %d..%d are not ranks of the communicator (size %d)", first_server,
                 first_server + nservers - 1, size);
        return -1;
    }
    /* same arguments on every rank, so every rank builds the same layout (or fails alike) */
    /* mask: block is the size of the files to hold; each server's share page-aligned */
    const uint64_t file_size = kind == DSM_MASK ? block : 0;
    if (dsm_layout_init(&s->layout, kind, nservers, buffer_len, kind == DSM_MASK ? 0 : block, seed, file_size,
                        kind == DSM_MASK ? 4096 : 0, err, len) < 0)
        return -1;
    s->first_server = first_server;
    s->is_server    = s->rank >= first_server && s->rank < first_server + nservers;
    s->locked       = calloc((size_t)nservers, sizeof *s->locked);
    /* whole pages: with segments of odd sizes (10007 bytes), MPICH 4.0.2's window on one
     * node put the first bytes written to server 1 into the last bytes of server 0
     * (tests/test_store.c on 4 ranks); page-sized segments do not overlap */
    if (s->layout.local > (uint64_t)INT64_MAX / 2) { /* rounded to pages and summed per node below */
        snprintf(err, len, "%" PRIu64 " bytes per server are more than any machine holds", s->layout.local);
        free(s->locked);
        dsm_layout_free(&s->layout);
        return -1;
    }
    MPI_Aint bytes = s->is_server ? (MPI_Aint)((s->layout.local + 4095) / 4096 * 4096) : 0;
    if (check_node_memory(comm, bytes, err, len) < 0) { /* before anything is allocated */
        free(s->locked);
        dsm_layout_free(&s->layout);
        return -1;
    }
    int rc = MPI_Comm_dup(comm, &s->comm);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(s->comm,
                                MPI_ERRORS_RETURN); /* a window MPI cannot make: an error, not an abort */
        rc = MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, s->comm, &s->local, &s->win);
    }
    int ok = rc == MPI_SUCCESS && s->locked, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    if (!all) {
        char why[MPI_MAX_ERROR_STRING] = "failed on another rank";
        int  n                         = 0;
        if (rc != MPI_SUCCESS)
            MPI_Error_string(rc, why, &n);
        snprintf(err, len,
                 "cannot expose %" PRIu64
                 " bytes per server in an MPI window (MPI_Win_allocate: %s); across nodes "
                 "the MPI needs a one-sided component that reaches every rank (Open MPI over TCP: "
                 "OMPI_MCA_osc=ucx "
                 "or pt2pt)",
                 s->layout.local, why);
        return -1;
    }
    MPI_Win_set_errhandler(s->win, MPI_ERRORS_RETURN); /* failures come back as errors, with a message */
    if (s->is_server) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, s->rank, 0, s->win);
        memset(s->local, 0, s->layout.local);
        MPI_Win_unlock(s->rank, s->win);
    }
    MPI_Barrier(s->comm);
    return 0;
}

void
dsm_store_clear(dsm_store_t *s, uint64_t upto)
{
    if (!s->is_server)
        return;
    int me = s->rank - s->first_server;
    if (upto > s->layout.total)
        upto = s->layout.total;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, s->rank, 0, s->win);
    for (uint64_t addr = 0; addr < upto;) {
        int      server = 0;
        uint64_t offset = 0, run = 0;
        dsm_map(&s->layout, addr, &server, &offset, &run);
        if (run > upto - addr)
            run = upto - addr;
        if (server == me)
            memset((char *)s->local + offset, 0, run);
        addr += run;
    }
    MPI_Win_unlock(s->rank, s->win);
}

void
dsm_store_close(dsm_store_t *s)
{
    MPI_Win_free(&s->win);
    MPI_Comm_free(&s->comm);
    dsm_layout_free(&s->layout);
    free(s->locked);
    s->locked = NULL;
}

typedef enum { PUT, GET } dir_t;

#ifndef DSM_MAX_MESSAGE
#define DSM_MAX_MESSAGE (4u << 20)
#endif

/* issue the runs of one transfer, locking each server it touches (once per batch) */
static int
issue(dsm_store_t *s, dir_t dir, uint64_t addr, char *buf, size_t len, char *err, size_t elen)
{
    const dsm_layout_t *l = &s->layout;
    if (len == 0)
        return 0;
    if (addr > l->total || len > l->total - addr) {
        snprintf(err, elen,
                 "the DSM is full: %s of %zu bytes at address %" PRIu64 " goes beyond its %" PRIu64
                 " bytes (%d servers x %" PRIu64 ")",
                 dir == PUT ? "a write" : "a read", len, addr, l->total, l->nservers, l->local);
        return -1;
    }
    int rc = MPI_SUCCESS;
    for (size_t done = 0; done < len && rc == MPI_SUCCESS;) {
        int      server;
        uint64_t off, run;
        dsm_map(l, addr + done, &server, &off, &run);
        size_t n = run < len - done ? (size_t)run : len - done;
        if (n > DSM_MAX_MESSAGE)
            n = DSM_MAX_MESSAGE;
        int target = s->first_server + server;
        if (!s->locked[server]) {
            /* shared for writes too: clients write disjoint addresses (what HDF5 asks of any
             * parallel driver), and exclusive locks taken on several servers in different
             * orders by two clients deadlock (seen with block-cyclic on 4 ranks) */
            rc                = MPI_Win_lock(MPI_LOCK_SHARED, target, 0, s->win);
            s->locked[server] = 1;
        }
        if (rc == MPI_SUCCESS)
            rc = dir == PUT
                     ? MPI_Put(buf + done, (int)n, MPI_BYTE, target, (MPI_Aint)off, (int)n, MPI_BYTE, s->win)
                     : MPI_Get(buf + done, (int)n, MPI_BYTE, target, (MPI_Aint)off, (int)n, MPI_BYTE, s->win);
        done += n;
    }
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int  n = 0;
        MPI_Error_string(rc, text, &n);
        snprintf(err, elen, "one-sided %s of %zu bytes at %" PRIu64 " failed: %s",
                 dir == PUT ? "write" : "read", len, addr, text);
        return -1;
    }
    return 0;
}

int
dsm_store_complete(dsm_store_t *s, char *err, size_t elen)
{
    int rc = MPI_SUCCESS;
    for (int server = 0; server < s->layout.nservers; server++)
        if (s->locked[server]) {
            int urc = MPI_Win_unlock(s->first_server + server, s->win);
            if (rc == MPI_SUCCESS)
                rc = urc;
            s->locked[server] = 0;
        }
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int  n = 0;
        MPI_Error_string(rc, text, &n);
        snprintf(err, elen, "completing one-sided transfers failed: %s", text);
        return -1;
    }
    return 0;
}

/* one transfer, complete when it returns: the servers' locks are released (whatever
 * happened; an issue's error is the one kept) */
static int
transfer(dsm_store_t *s, dir_t dir, uint64_t addr, char *buf, size_t len, char *err, size_t elen)
{
    char later[256];
    int  rc   = issue(s, dir, addr, buf, len, err, elen);
    int  done = dsm_store_complete(s, rc < 0 ? later : err, rc < 0 ? sizeof later : elen);
    return rc < 0 || done < 0 ? -1 : 0;
}

int
dsm_store_issue_put(dsm_store_t *s, uint64_t addr, const void *buf, size_t len, char *err, size_t elen)
{
    return issue(s, PUT, addr, (char *)buf, len, err, elen);
}

int
dsm_store_issue_get(dsm_store_t *s, uint64_t addr, void *buf, size_t len, char *err, size_t elen)
{
    return issue(s, GET, addr, buf, len, err, elen);
}

int
dsm_store_put(dsm_store_t *s, uint64_t addr, const void *buf, size_t len, char *err, size_t elen)
{
    return transfer(s, PUT, addr, (char *)buf, len, err, elen);
}

int
dsm_store_get(dsm_store_t *s, uint64_t addr, void *buf, size_t len, char *err, size_t elen)
{
    return transfer(s, GET, addr, buf, len, err, elen);
}
