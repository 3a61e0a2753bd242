/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * h5dsm-server - host an HDF5 DSM on MPI ranks and act on every file the clients write.
 *
 *   mpiexec -n S h5dsm-server --size 64m [options] : -n C app ...        MPMD, one job
 *   mpiexec -n S h5dsm-server --size 64m --contact dsm.contact [options] &
 *   HDF5_DRIVER=dsm HDF5_DRIVER_CONFIG=contact=dsm.contact mpiexec -n C app   two jobs
 *
 * Each server rank hosts --size bytes; --distribution says how file addresses map onto
 * them. After each file the clients close, the actions run (in the order given) before
 * the clients may open the next: summary (one line), list (the objects, h5dump -n
 * style, read through the driver), dump:<path> (the file's bytes to <path> on disk,
 * "{step}" replaced by the file's number; written to a temporary name, synced, renamed
 * and its directory synced: after a crash the name holds the whole file or nothing).
 * Exit status: 0 after the clients disconnected, 1 on a failed action or transport,
 * 2 on bad arguments.
 */
#include "H5FDdsm.h"
#include "dsm_distribution.h"
#include "dsm_files.h"
#include "vfd_path.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ACTIONS 8

typedef struct {
    const char *actions[MAX_ACTIONS];
    int         nactions;
    int         failures;
} server_t;

static int g_rank = 0;

static void
usage(FILE *to)
{
    fprintf(
        to,
        "usage: h5dsm-server --size BYTES [--distribution D] [--contact FILE] [--action A]... [--connections "
        "N]\n"
        "  --size BYTES        memory each server rank hosts (k, m, g suffixes: powers of 1024)\n"
        "  --distribution D    linear (default), mask:<file size>, block-cyclic:<size>, "
        "random-block:<size>[:seed]\n"
        "  --contact FILE      accept clients of another job through FILE (else: MPMD, servers first)\n"
        "  --action A          after each closed file: summary (default), list, dump:<path> ({step}: its\n"
        "                      number), none; several --action run in order\n"
        "  --connections N     serve N client jobs one after the other (--contact only; default 1)\n"
        "  --client-timeout S  with a file open, take the clients for gone after S seconds without a\n"
        "                      request (a client job that died): discard the file, serve the next\n"
        "                      connection (default 0: wait for ever)\n");
}

/* stop the whole job: in an MPMD job the clients would otherwise wait for the servers
 * forever; the pause lets the launcher forward the message first */
static void
stop_job(int status)
{
    fflush(NULL);
    usleep(1000000); /* on a loaded node MPICH can lose what was written 0.3 s before */
    MPI_Abort(MPI_COMM_WORLD, status);
}

static void
bad_args(const char *fmt, const char *what)
{
    if (g_rank == 0) {
        fprintf(stderr, "h5dsm-server: ");
        fprintf(stderr, fmt, what);
        fprintf(stderr, " (see --help)\n");
    }
    stop_job(2);
}

/* ---------------------------------------------------------------- actions */

static herr_t
list_object(hid_t obj, const char *name, const H5O_info2_t *info, void *arg)
{
    (void)arg;
    if (info->type == H5O_TYPE_GROUP)
        printf("h5dsm-server:   GROUP \"/%s\"\n", strcmp(name, ".") ? name : "");
    else if (info->type == H5O_TYPE_DATASET) {
        hid_t   ds    = H5Dopen2(obj, name, H5P_DEFAULT);
        hid_t   space = ds >= 0 ? H5Dget_space(ds) : H5I_INVALID_HID;
        hsize_t dims[H5S_MAX_RANK];
        int     rank = space >= 0 ? H5Sget_simple_extent_dims(space, dims, NULL) : -1;
        printf("h5dsm-server:   DATASET \"/%s\" {", name);
        for (int i = 0; i < rank; i++)
            printf("%s%llu", i ? ", " : " ", (unsigned long long)dims[i]);
        printf(" }\n");
        if (space >= 0)
            H5Sclose(space);
        if (ds >= 0)
            H5Dclose(ds);
    }
    else
        printf("h5dsm-server:   OBJECT \"/%s\"\n", name);
    return 0;
}

static int
action_list(h5dsm_host_t *host, const h5dsm_file_t *file)
{
    hid_t fapl = h5dsm_host_fapl(host);
    hid_t f    = fapl >= 0 ? H5Fopen(file->name, H5F_ACC_RDONLY, fapl) : H5I_INVALID_HID;
    int   ok   = f >= 0 && H5Ovisit3(f, H5_INDEX_NAME, H5_ITER_INC, list_object, NULL, H5O_INFO_BASIC) >= 0;
    if (f >= 0)
        ok = H5Fclose(f) >= 0 && ok;
    if (fapl >= 0)
        H5Pclose(fapl);
    if (!ok)
        fprintf(stderr, "h5dsm-server: %s: cannot list the file held in the DSM (HDF5's error stack above)\n",
                file->name);
    fflush(stdout);
    return ok ? 0 : -1;
}

static int
action_dump(h5dsm_host_t *host, const h5dsm_file_t *file, const char *pattern)
{
    char path[4096], tmp[4200], step[32], err[1024];
    snprintf(step, sizeof step, "%" PRIu64, file->step);
    const char *at = strstr(pattern, "{step}");
    if (at)
        snprintf(path, sizeof path, "%.*s%s%s", (int)(at - pattern), pattern, step, at + 6);
    else
        snprintf(path, sizeof path, "%s", pattern);
    snprintf(tmp, sizeof tmp, "%s.part", path);
    FILE *fp = dsm_create_new(tmp); /* never through a link planted at its name */
    if (!fp) {
        fprintf(stderr, "h5dsm-server: %s: cannot write: %s\n", tmp, strerror(errno));
        return -1;
    }
    size_t chunk = 4u << 20;
    char  *buf   = malloc(chunk);
    int    ok    = buf != NULL;
    for (uint64_t done = 0; ok && done < file->size;) {
        size_t n = file->size - done < chunk ? (size_t)(file->size - done) : chunk;
        if (h5dsm_host_read(host, done, buf, n, err, sizeof err) < 0) {
            fprintf(stderr, "h5dsm-server: %s: %s\n", file->name, err);
            ok = 0;
        }
        else if (fwrite(buf, 1, n, fp) != n) {
            fprintf(stderr, "h5dsm-server: %s: %s\n", tmp, strerror(errno));
            ok = 0;
        }
        done += n;
    }
    free(buf);
    /* on stable storage before it gets its name: after a crash the name holds the whole
     * file or nothing (a rename can reach the disk before the data it names) */
    if (ok && (fflush(fp) != 0 || fsync(fileno(fp)) != 0)) {
        fprintf(stderr, "h5dsm-server: %s: %s\n", tmp, strerror(errno));
        ok = 0;
    }
    if (fclose(fp) != 0 && ok) {
        fprintf(stderr, "h5dsm-server: %s: %s\n", tmp, strerror(errno));
        ok = 0;
    }
    if (ok && rename(tmp, path) != 0) {
        fprintf(stderr, "h5dsm-server: %s: cannot rename to %s: %s\n", tmp, path, strerror(errno));
        ok = 0;
    }
    if (ok && vfd_sync_parent(path) != 0) { /* the new name itself */
        fprintf(stderr, "h5dsm-server: %s: cannot sync its directory: %s\n", path, strerror(errno));
        ok = 0;
    }
    if (!ok)
        remove(tmp);
    else
        printf("h5dsm-server: step %" PRIu64 ": wrote %s (%" PRIu64 " bytes)\n", file->step, path,
               file->size);
    fflush(stdout);
    return ok ? 0 : -1;
}

/* every action runs on server 0; the other servers wait (their memory is read one-sided) */
static int
run_actions(h5dsm_host_t *host, const h5dsm_file_t *file, void *arg)
{
    server_t *s  = arg;
    int       rc = 0;
    if (file->rank != 0)
        return 0;
    for (int i = 0; i < s->nactions; i++) {
        const char *a = s->actions[i];
        if (!strcmp(a, "summary")) {
            printf("h5dsm-server: step %" PRIu64 ": '%s' closed, %" PRIu64 " bytes\n", file->step, file->name,
                   file->size);
            fflush(stdout);
        }
        else if (!strcmp(a, "list")) {
            printf("h5dsm-server: step %" PRIu64 ": '%s' holds:\n", file->step, file->name);
            rc |= action_list(host, file);
        }
        else if (!strncmp(a, "dump:", 5))
            rc |= action_dump(host, file, a + 5);
    }
    if (rc)
        s->failures++;
    return rc;
}

/* what the command line asks for */
typedef struct {
    const char *distribution, *contact;
    uint64_t    bytes;
    long        connections;
    double      client_timeout;
} options_t;

/* one --action into s (refused with the reason and exit 2 when unknown) */
static void
add_action(server_t *s, const char *action)
{
    if (strcmp(action, "summary") && strcmp(action, "list") && strcmp(action, "none") &&
        (strncmp(action, "dump:", 5) || !action[5]))
        bad_args("unknown action '%s' (summary, list, dump:<path>, none)", action);
    if (s->nactions == MAX_ACTIONS)
        bad_args("more than %s actions", "8");
    if (strcmp(action, "none"))
        s->actions[s->nactions++] = action;
}

/* the command line into s and o; 1 after --help, 0 to run (bad arguments: exit 2) */
static int
parse_options(int argc, char **argv, server_t *s, options_t *o)
{
    static const struct option opts[]    = {{"size", required_argument, 0, 's'},
                                            {"distribution", required_argument, 0, 'd'},
                                            {"contact", required_argument, 0, 'c'},
                                            {"action", required_argument, 0, 'a'},
                                            {"connections", required_argument, 0, 'n'},
                                            {"client-timeout", required_argument, 0, 't'},
                                            {"help", no_argument, 0, 'h'},
                                            {0, 0, 0, 0}};
    const char                *size_text = NULL, *end = NULL;
    int                        chose_actions = 0;
    opterr                                   = 0;
    for (int c; (c = getopt_long(argc, argv, "+s:d:c:a:n:t:h", opts, NULL)) != -1;) {
        char *stop = NULL;
        switch (c) {
            case 's':
                size_text = optarg;
                break;
            case 'd':
                o->distribution = optarg;
                break;
            case 'c':
                o->contact = optarg;
                break;
            case 'a':
                add_action(s, optarg), chose_actions = 1;
                break;
            case 'n':
                o->connections = strtol(optarg, &stop, 10);
                if (!*optarg || *stop || o->connections < 1)
                    bad_args("--connections must be a positive integer, got '%s'", optarg);
                break;
            case 't':
                o->client_timeout = strtod(optarg, &stop);
                if (!*optarg || *stop ||
                    !(o->client_timeout >= 0 && o->client_timeout <= H5FD_DSM_TIMEOUT_MAX))
                    bad_args("--client-timeout must be a number of seconds from 0 to 604800 (a week, "
                             "H5FD_DSM_TIMEOUT_MAX), got '%s'",
                             optarg);
                break;
            case 'h':
                if (g_rank == 0)
                    usage(stdout);
                return 1;
            default:
                bad_args("unknown option or missing value: '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        bad_args("unexpected argument '%s'", argv[optind]);
    if (!size_text)
        bad_args("%s", "--size is required: the memory each server rank hosts, e.g. --size 64m");
    o->bytes = dsm_parse_size(size_text, &end);
    if (!o->bytes || *end)
        bad_args("--size must be a positive size (k, m, g suffixes), got '%s'", size_text);
    if (o->connections > 1 && !o->contact)
        bad_args("%s", "--connections needs --contact (an MPMD job has one set of clients)");
    if (!chose_actions)
        s->actions[s->nactions++] = "summary";
    return 0;
}

/* host the DSM for each connection in turn; the exit status, *lost the connections whose
 * clients were lost */
static int
serve_connections(server_t *s, const options_t *o, long *lost)
{
    int status = 0;
    for (long conn = 0; conn < o->connections && status == 0; conn++) {
        char          err[1024] = "";
        h5dsm_host_t *host      = NULL;
        if (h5dsm_host_start(&host, o->distribution, o->bytes, o->contact, err, sizeof err) < 0) {
            if (g_rank == 0)
                fprintf(stderr, "h5dsm-server: %s\n", err);
            /* a bad distribution is a bad argument; anything else a failure */
            stop_job(strstr(err, "distribution") || strstr(err, "block") ? 2 : 1);
        }
        if (g_rank == 0) {
            printf("h5dsm-server: hosting %" PRIu64 " bytes (%s) for clients (%s)\n",
                   h5dsm_host_capacity(host), h5dsm_host_layout(host), o->contact ? o->contact : "MPMD");
            fflush(stdout);
        }
        h5dsm_host_set_client_timeout(host, o->client_timeout);
        long files = h5dsm_host_serve(host, run_actions, s);
        if (files == H5DSM_CLIENTS_LOST) {
            (*lost)++;
            if (g_rank == 0)
                printf("h5dsm-server: the clients were lost (no request for %g s with a file open)%s\n",
                       o->client_timeout, conn + 1 < o->connections ? "; serving the next connection" : "");
        }
        else if (g_rank == 0)
            printf("h5dsm-server: the clients disconnected after %ld file(s)\n", files);
        if (files == -1)
            status = 1;
        h5dsm_host_stop(host);
    }
    if (s->failures > 0 && status == 0) /* actions run on server 0: its exit status tells */
        status = 1;
    return status;
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    server_t  s    = {.nactions = 0};
    options_t o    = {"linear", NULL, 0, 1, 0};
    long      lost = 0;
    if (parse_options(argc, argv, &s, &o)) {
        MPI_Finalize();
        return 0;
    }
    int status = serve_connections(&s, &o, &lost);
    if (lost > 0) { /* served on, but a connection ended badly */
        if (g_rank == 0)
            fprintf(stderr,
                    "h5dsm-server: %ld of %ld connection(s) lost their clients; ending with MPI_Abort "
                    "(MPI_Finalize "
                    "would wait for the dead job, which stays connected)\n",
                    lost, o.connections);
        fflush(NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return status;
}
