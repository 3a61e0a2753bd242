/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * H5FDdsm.c - the DSM virtual file driver: the HDF5 side.
 *
 * A file's addresses are the DSM's addresses: a write of n bytes at a is an MPI_Put of
 * those bytes to the servers the layout maps [a, a+n) to (dsm_store.h), a read an
 * MPI_Get. One connection per process (dsm_link.h), made at the first open (contact
 * file) or by H5FD_dsm_mpmd_clients, closed at MPI_Finalize. Every open asks server 0
 * for the file (OPEN/GRANT), every close hands it back (CLOSE): the servers run their
 * action on it before the next open is granted.
 * Modes of an open file:
 *   CLIENT  a client program's file: create (size 0), read-write or read-only (the size
 *           of the file the DSM holds); collective over the client ranks
 *   HOST    on a server rank, while an action runs: the file the DSM holds, read-only,
 *           on that rank alone
 * Errors go to the HDF5 error stack under the driver's own class as "dsm: <name>: <reason>";
 * all client ranks of a collective call fail together.
 */
#include "H5FDdsm.h"

#include "dsm_driver.h"
#include "dsm_link.h"
#include "vfd_datatype.h"
#include "vfd_driver.h"
#include "vfd_fapl.h"
#include "vfd_mpihandle.h"
#include "vfd_options.h"
#include "vfd_watch.h"
#include "vfd_selection.h"

#include <H5FDdevelop.h>
#include <H5PLextern.h>
#include <inttypes.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DSM_MAXADDR  ((haddr_t)((1ULL << 62) - 1))
#define DSM_ERR_SIZE 1024

typedef enum { MODE_CLIENT, MODE_HOST } dsm_mode_t;

typedef struct {
    H5FD_t      pub;        /* public part, must be first */
    MPI_File    mpi_handle; /* for HDF5's atomicity calls (vfd_mpihandle.h) */
    MPI_Comm    comm;
    MPI_Info    info;
    int         rank, size;
    char       *name;
    dsm_mode_t  mode;
    int         writable;
    haddr_t     eoa, eof;
    uint64_t    step;
    uint64_t    written; /* the end of the highest write of this rank (the servers clear up to it) */
    dsm_link_t *link;
} H5FD_dsm_t;
VFD_MPI_HANDLE_FIRST(H5FD_dsm_t, mpi_handle);

/* options of a fapl: by H5Pset_fapl_dsm (driver info) or the configuration string */
typedef struct {
    uint32_t magic;
    char     contact[DSM_NAME_MAX];
    double   timeout;
} dsm_options_t;
#define DSM_OPTIONS_MAGIC 0x44534d31u /* "DSM1" */

static dsm_link_t  client_link_g; /* this process's connection as a client */
static int         client_linked_g = 0;
static int         file_open_g     = 0;    /* the DSM holds one file at a time */
static int         finalizing_g    = 0;    /* MPI_Finalize began with a file open */
static dsm_link_t *host_link_g     = NULL; /* set by the host while its action runs */
static char        host_name_g[DSM_NAME_MAX];
static uint64_t    host_size_g = 0;

/* ---------------------------------------------------------------- class */

static herr_t  dsm_term(void);
static void   *dsm_fapl_get(H5FD_t *file);
static H5FD_t *dsm_open(const char *name, unsigned flags, hid_t fapl_id, haddr_t maxaddr);
static herr_t  dsm_close(H5FD_t *file);
static int     dsm_cmp(const H5FD_t *f1, const H5FD_t *f2);
static haddr_t dsm_get_eoa(const H5FD_t *file, H5FD_mem_t type);
static herr_t  dsm_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr);
static haddr_t dsm_get_eof(const H5FD_t *file, H5FD_mem_t type);
static herr_t  dsm_get_handle(H5FD_t *file, hid_t fapl, void **handle);
static herr_t  dsm_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf);
static herr_t  dsm_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                         const void *buf);
static herr_t  dsm_read_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[], haddr_t addrs[],
                               size_t sizes[], void *bufs[]);
static herr_t  dsm_write_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[], haddr_t addrs[],
                                size_t sizes[], const void *bufs[]);
static herr_t  dsm_read_selection(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count, hid_t mem_spaces[],
                                  hid_t file_spaces[], haddr_t offsets[], size_t element_sizes[],
                                  void *bufs[]);
static herr_t dsm_write_selection(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count, hid_t mem_spaces[],
                                  hid_t file_spaces[], haddr_t offsets[], size_t element_sizes[],
                                  const void *bufs[]);
static herr_t dsm_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing);
static herr_t dsm_ctl(H5FD_t *file, uint64_t op_code, uint64_t flags, const void *input, void **output);
static herr_t dsm_delete(const char *name, hid_t fapl_id);

static const H5FD_class_t H5FD_dsm_g = {
    H5FD_CLASS_VERSION,    /* struct version       */
    H5FD_DSM_VALUE,        /* value                */
    H5FD_DSM_NAME,         /* name                 */
    DSM_MAXADDR,           /* maxaddr              */
    H5F_CLOSE_SEMI,        /* fc_degree            */
    dsm_term,              /* terminate            */
    NULL,                  /* sb_size              */
    NULL,                  /* sb_encode            */
    NULL,                  /* sb_decode            */
    sizeof(dsm_options_t), /* fapl_size            */
    dsm_fapl_get,          /* fapl_get             */
    NULL,                  /* fapl_copy            */
    NULL,                  /* fapl_free            */
    0,                     /* dxpl_size            */
    NULL,                  /* dxpl_copy            */
    NULL,                  /* dxpl_free            */
    dsm_open,              /* open                 */
    dsm_close,             /* close                */
    dsm_cmp,               /* cmp                  */
    vfd_query,             /* query                */
    NULL,                  /* get_type_map         */
    NULL,                  /* alloc                */
    NULL,                  /* free                 */
    dsm_get_eoa,           /* get_eoa              */
    dsm_set_eoa,           /* set_eoa              */
    dsm_get_eof,           /* get_eof              */
    dsm_get_handle,        /* get_handle           */
    dsm_read,              /* read                 */
    dsm_write,             /* write                */
    dsm_read_vector,       /* read_vector          */
    dsm_write_vector,      /* write_vector         */
    dsm_read_selection,    /* read_selection       */
    dsm_write_selection,   /* write_selection      */
    NULL,                  /* flush                */
    dsm_truncate,          /* truncate             */
    NULL,                  /* lock                 */
    NULL,                  /* unlock               */
    dsm_delete,            /* del                  */
    dsm_ctl,               /* ctl                  */
    H5FD_FLMAP_DICHOTOMY   /* fl_map               */
};

/* the driver's registration, error class and MPI initialisation (vfd_driver.h) */
static vfd_driver_t dsm_driver_g = VFD_DRIVER_INIT(&H5FD_dsm_g, "dsm", "h5stack DSM VFD", "DSM driver");
#define DSM_ERROR(...) VFD_ERROR(&dsm_driver_g, __VA_ARGS__)

/* ---------------------------------------------------------------- plugin entry points */

H5PL_type_t
H5PLget_plugin_type(void)
{
    return H5PL_TYPE_VFD;
}
const void *
H5PLget_plugin_info(void)
{
    return &H5FD_dsm_g;
}

/* ---------------------------------------------------------------- options */

static void
options_default(void *opt)
{
    dsm_options_t *o = opt;
    memset(o, 0, sizeof *o);
    o->magic   = DSM_OPTIONS_MAGIC;
    o->timeout = 60.0;
}

#define KEYS "contact, timeout"

/* one key=value over the options (vfd_option_fn) */
static int
one_option(void *ctx, const char *key, const char *value, char *err, size_t len)
{
    dsm_options_t *o = ctx;
    if (!strcmp(key, "contact")) {
        if (!*value || strlen(value) >= sizeof o->contact) {
            snprintf(err, len, "contact: an empty or too long file name");
            return -1;
        }
        strcpy(o->contact, value);
        return 0;
    }
    if (!strcmp(key, "timeout")) {
        char  *end = NULL;
        double t   = strtod(value, &end);
        if (!*value || *end || !(t > 0 && t <= H5FD_DSM_TIMEOUT_MAX)) {
            snprintf(err, len, "timeout must be a positive number of seconds up to %.0f (a week), got '%s'",
                     H5FD_DSM_TIMEOUT_MAX, value);
            return -1;
        }
        o->timeout = t;
        return 0;
    }
    snprintf(err, len, "unknown key '%s' (keys: " KEYS ")", key);
    return -1;
}

/* "contact=<file>;timeout=<seconds>" (vfd_options.h); 0, or -1 with err */
static int
options_parse(dsm_options_t *o, const char *text, char *err, size_t len)
{
    return vfd_options_each(text, KEYS, one_option, o, err, len);
}

/* ---------------------------------------------------------------- public API */

hid_t
H5FD_dsm_init(void)
{
    return vfd_register(&dsm_driver_g);
}

herr_t
H5Pset_fapl_dsm(hid_t fapl_id, MPI_Comm comm, const char *config)
{
    dsm_options_t o;
    char          err[DSM_ERR_SIZE];
    vfd_api_enter();
    options_default(&o);
    if (comm == MPI_COMM_NULL) {
        DSM_ERROR("H5Pset_fapl_dsm: the communicator is MPI_COMM_NULL");
        return vfd_api_fail();
    }
    if (config && options_parse(&o, config, err, sizeof err) < 0) {
        DSM_ERROR("H5Pset_fapl_dsm: configuration '%s': %s", config, err);
        return vfd_api_fail();
    }
    hid_t id = H5FD_dsm_init();
    if (id < 0) {
        DSM_ERROR("cannot register the driver");
        return vfd_api_fail();
    }
    if (H5Pset_mpi_params(fapl_id, comm, MPI_INFO_NULL) < 0)
        return -1;
    return H5Pset_driver(fapl_id, id, &o);
}

/* the clients leave the servers: BYE from client 0, then the link's collective close */
static int
disconnect(void)
{
    int ok = 1;
    if (client_linked_g) {
        char      err[DSM_ERR_SIZE];
        dsm_msg_t bye = {.type = DSM_MSG_BYE};
        MPI_Barrier(client_link_g.local);
        if (client_link_g.rank == 0 && dsm_link_send(&client_link_g, &bye, err, sizeof err) < 0) {
            fprintf(stderr, "dsm: %s\n", err);
            ok = 0;
        }
        dsm_link_close(&client_link_g);
        client_linked_g = 0;
    }
    return ok ? 0 : -1;
}

/* at MPI_Finalize (MPI_COMM_SELF's attributes are deleted first thing there, in the
 * reverse order of their setting, while collective calls still work). HDF5 set its own
 * attribute before this one, at its initialisation, and closes the files left open in it:
 * with a file open the clients stay linked until that close (dsm_close) */
static int
disconnect_at_finalize(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    if (file_open_g)
        finalizing_g = 1;
    else
        disconnect();
    return MPI_SUCCESS;
}

static void
remember_link(void)
{
    static int keyval = MPI_KEYVAL_INVALID;
    client_linked_g   = 1;
    if (keyval == MPI_KEYVAL_INVALID) {
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, disconnect_at_finalize, &keyval, NULL);
        MPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL);
    }
}

int
H5FD_dsm_disconnect(void)
{
    if (file_open_g) {
        fprintf(stderr, "dsm: H5FD_dsm_disconnect: a file is still open in the DSM\n");
        return -1;
    }
    return disconnect();
}

int
H5FD_dsm_mpmd_clients(MPI_Comm *clients)
{
    char err[DSM_ERR_SIZE];
    if (client_linked_g) {
        MPI_Comm_dup(client_link_g.local, clients);
        return 0;
    }
    if (dsm_link_connect(&client_link_g, MPI_COMM_WORLD, NULL, 60.0, err, sizeof err) < 0) {
        fprintf(stderr, "dsm: cannot join the DSM servers: %s\n", err);
        return -1;
    }
    remember_link();
    MPI_Comm_dup(client_link_g.local, clients);
    return 0;
}

/* ---------------------------------------------------------------- helpers */

void
dsm_driver_set_host(dsm_link_t *link, const char *name, uint64_t size)
{
    host_link_g = link;
    snprintf(host_name_g, sizeof host_name_g, "%s", name ? name : "");
    host_size_g = size;
}

static herr_t
dsm_term(void)
{
    return vfd_terminate(&dsm_driver_g);
}

static void *
dsm_fapl_get(H5FD_t *file)
{
    (void)file;
    dsm_options_t *o = malloc(sizeof *o);
    if (o)
        options_default(o);
    return o;
}

static void
free_file(H5FD_dsm_t *f)
{
    if (!f)
        return;
    vfd_comm_free(&f->mpi_handle, &f->comm, &f->info);
    free(f->name);
    free(f);
}

/* on a server rank while the action runs: the file held, read-only, this rank alone */
static H5FD_t *
open_host(H5FD_dsm_t *f, unsigned flags)
{
    if (flags & (H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC)) {
        DSM_ERROR("%s: a server opens the DSM's file read-only", f->name);
        free_file(f);
        return NULL;
    }
    if (strcmp(f->name, host_name_g) != 0) {
        DSM_ERROR("%s: the DSM holds '%s'", f->name, host_name_g);
        free_file(f);
        return NULL;
    }
    f->mode = MODE_HOST;
    f->link = host_link_g;
    f->eof = f->eoa = host_size_g;
    MPI_Comm_dup(MPI_COMM_SELF, &f->comm);
    f->rank = 0;
    f->size = 1;
    return (H5FD_t *)f;
}

/* the client's options and communicator from the fapl; 0, or -1 with err */
/* is this process in a later program of an MPMD job (MPI_APPNUM > 0: the servers come first)? */
static int
mpmd_client(void)
{
    int *appnum = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    return flag && appnum && *appnum > 0;
}

static int
client_setup(H5FD_dsm_t *f, hid_t fapl_id, dsm_options_t *o, char *err, size_t len)
{
    if (vfd_fapl_options(fapl_id, DSM_OPTIONS_MAGIC, o, sizeof *o, options_default, KEYS, one_option, err,
                         len) < 0)
        return -1;
    MPI_Info info       = MPI_INFO_NULL;
    int      world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    /* the communicator's collectives (its duplication, then a barrier) with a bounded
     * wait: a client rank that opens a file alone never waits for ever */
    vfd_watch_t *watch = vfd_watch_start(
        (int)ceil(o->timeout),
        "dsm: %s: rank %d of MPI_COMM_WORLD has waited %.0f s in the collective open for the other "
        "client ranks of the file's communicator (H5Pset_mpi_params, H5Pset_fapl_dsm, or every client "
        "with HDF5_DRIVER=dsm): every client rank of the DSM must open the file, in the same order (a "
        "file one rank opens alone cannot be in the DSM), or they come later than timeout allows (raise "
        "it). Ending the job",
        f->name, world_rank, o->timeout);
    int named = vfd_fapl_mpi(fapl_id, &f->comm, &info);
    if (info != MPI_INFO_NULL) { /* the application's hints, given back by H5Fget_access_plist */
        MPI_Info_free(&f->info);
        f->info = info;
    }
    if (!named) { /* HDF5_DRIVER=dsm in an unmodified program */
        if (!client_linked_g && !*o->contact && mpmd_client()) {
            /* a later program of an MPMD job (the servers are the first): join them, as
             * H5FD_dsm_mpmd_clients() would; its MPI_COMM_WORLD holds the servers too */
            if (H5FD_dsm_mpmd_clients(&f->comm) < 0) {
                vfd_watch_stop(watch);
                snprintf(err, len, "cannot join the DSM servers of this MPMD job");
                return -1;
            }
        }
        else
            MPI_Comm_dup(client_linked_g ? client_link_g.local : MPI_COMM_WORLD, &f->comm);
    }
    MPI_Barrier(f->comm); /* every rank has come */
    vfd_watch_stop(watch);
    MPI_Comm_rank(f->comm, &f->rank);
    MPI_Comm_size(f->comm, &f->size);
    return 0;
}

/* the connection to the servers (made once per process, at the first open) and its
 * preconditions for this file; collective; 0, or -1 with err (the same on every rank) */
static int
client_link(H5FD_dsm_t *f, const dsm_options_t *o, char *err, size_t len)
{
    int ok = 1;
    if (!client_linked_g) {
        if (!*o->contact) {
            snprintf(err, len,
                     "no DSM to connect to: give contact=<file> (written by h5dsm-server) in the driver's "
                     "configuration (HDF5_DRIVER_CONFIG), or call H5FD_dsm_mpmd_clients() in an MPMD job");
            ok = 0;
        }
        if (vfd_agree(f->comm, ok, err, len) < 0)
            return -1;
        if (dsm_link_connect(&client_link_g, f->comm, o->contact, o->timeout, err, len) < 0) {
            char why[DSM_ERR_SIZE];
            snprintf(why, sizeof why, "%s", err);
            snprintf(err, len, "cannot join the DSM servers: %s", why);
            return -1;
        }
        remember_link();
    }
    f->link          = &client_link_g;
    f->link->timeout = o->timeout;
    int same         = 0;
    MPI_Comm_compare(f->comm, f->link->local, &same);
    if (same != MPI_CONGRUENT && same != MPI_IDENT)
        ok = 0, snprintf(err, len, "every client rank of the DSM must open the file, in the same order");
    else if (file_open_g)
        ok = 0, snprintf(err, len, "the DSM holds one file at a time: close the open one first");
    return vfd_agree(f->comm, ok, err, len);
}

/* ask server 0 (msg: the request, then the answer); every client gets the answer; 0 on
 * a grant, or -1 with err */
static int
client_ask(H5FD_dsm_t *f, dsm_msg_t *msg, const char *what, char *err, size_t len)
{
    int       ok  = 1;
    dsm_msg_t ask = *msg;
    if (f->link->rank == 0)
        ok = dsm_link_ask(f->link, &ask, msg, err, len) == 0;
    if (vfd_agree(f->link->local, ok, err, len) < 0)
        return -1;
    MPI_Bcast(msg, (int)sizeof *msg, MPI_BYTE, 0, f->link->local);
    if (msg->type != DSM_MSG_GRANT) {
        snprintf(err, len, "the DSM servers refused to %s it: %s", what, msg->name);
        return -1;
    }
    return 0;
}

/* ask server 0 for the file; every client gets its answer; 0, or -1 with err */
static int
client_ask_open(H5FD_dsm_t *f, const char *name, unsigned flags, char *err, size_t len)
{
    dsm_msg_t msg = {.type = DSM_MSG_OPEN};
    msg.mode      = (flags & (H5F_ACC_CREAT | H5F_ACC_TRUNC)) ? DSM_OPEN_CREATE
                    : (flags & H5F_ACC_RDWR)                  ? DSM_OPEN_RDWR
                                                              : DSM_OPEN_RDONLY;
    snprintf(msg.name, sizeof msg.name, "%s", name);
    if (client_ask(f, &msg, "open", err, len) < 0)
        return -1;
    f->mode     = MODE_CLIENT;
    f->writable = (flags & (H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC)) != 0;
    f->eof      = msg.size;
    f->step     = msg.step;
    file_open_g = 1;
    return 0;
}

static H5FD_t *
dsm_open(const char *name, unsigned flags, hid_t fapl_id, haddr_t maxaddr)
{
    H5FD_dsm_t   *f = NULL;
    dsm_options_t o;
    char          err[DSM_ERR_SIZE] = "";

    if (!name || !*name || strlen(name) >= DSM_NAME_MAX || maxaddr == 0) {
        DSM_ERROR("invalid file name (empty or longer than %d characters) or maximum address",
                  DSM_NAME_MAX - 1);
        return NULL;
    }
    if (vfd_ensure_mpi(&dsm_driver_g, name) < 0)
        return NULL;
    if (!(f = calloc(1, sizeof *f)) || !(f->name = strdup(name))) {
        free(f);
        DSM_ERROR("%s: out of memory", name);
        return NULL;
    }
    f->comm       = MPI_COMM_NULL;
    f->info       = MPI_INFO_NULL;
    f->mpi_handle = MPI_FILE_NULL;
    vfd_mpi_handle_open(&f->mpi_handle); /* without it, HDF5's atomicity calls fail with MPI's error */
    MPI_Info_create(&f->info);           /* HDF5 takes a null info for an error (H5Fget_access_plist) */
    if (host_link_g)
        return open_host(f, flags);
    if (client_setup(f, fapl_id, &o, err, sizeof err) < 0 || client_link(f, &o, err, sizeof err) < 0 ||
        client_ask_open(f, name, flags, err, sizeof err) < 0) {
        DSM_ERROR("%s: %s", name, err);
        free_file(f);
        return NULL;
    }
    return (H5FD_t *)f;
}

/* H5Fdelete, by every client rank together (as the mpio driver's delete): the servers
 * forget the file they hold by that name; refused with the reason while a file is open or
 * when the DSM holds no file of that name (as MPI-IO cannot delete a missing file) */
static herr_t
dsm_delete(const char *name, hid_t fapl_id)
{
    H5FD_dsm_t    f = {.comm = MPI_COMM_NULL, .info = MPI_INFO_NULL, .mpi_handle = MPI_FILE_NULL};
    dsm_options_t o;
    char          err[DSM_ERR_SIZE] = "";
    if (!name || !*name || strlen(name) >= DSM_NAME_MAX) {
        DSM_ERROR("invalid file name (empty or longer than %d characters)", DSM_NAME_MAX - 1);
        return -1;
    }
    if (vfd_ensure_mpi(&dsm_driver_g, name) < 0)
        return -1;
    if (host_link_g) {
        DSM_ERROR("%s: a server does not delete the DSM's file", name);
        return -1;
    }
    dsm_msg_t msg = {.type = DSM_MSG_DELETE};
    snprintf(msg.name, sizeof msg.name, "%s", name);
    f.name = msg.name;
    MPI_Info_create(&f.info); /* replaced by the application's hints, if it gave some */
    int got = client_setup(&f, fapl_id, &o, err, sizeof err) == 0 &&
              client_link(&f, &o, err, sizeof err) == 0 &&
              client_ask(&f, &msg, "delete", err, sizeof err) == 0;
    if (!got)
        DSM_ERROR("%s: %s", name, err);
    vfd_comm_free(&f.mpi_handle, &f.comm, &f.info);
    return got ? 0 : -1;
}

static herr_t
dsm_close(H5FD_t *_file)
{
    H5FD_dsm_t *f                 = (H5FD_dsm_t *)_file;
    char        err[DSM_ERR_SIZE] = "";
    int         ok                = 1;
    if (f->mode == MODE_CLIENT) {
        /* every client's transfers are complete (each ends with its unlock): hand the file
         * back, with the end of the highest write (HDF5 may have truncated below it) */
        uint64_t written = 0;
        MPI_Allreduce(&f->written, &written, 1, MPI_UINT64_T, MPI_MAX, f->link->local);
        dsm_msg_t msg = {.type    = DSM_MSG_CLOSE,
                         .mode    = (uint64_t)f->writable,
                         .size    = f->eoa > f->eof ? f->eoa : f->eof,
                         .step    = f->step,
                         .written = written};
        snprintf(msg.name, sizeof msg.name, "%s", f->name);
        if (f->link->rank == 0)
            ok = dsm_link_send(f->link, &msg, err, sizeof err) == 0;
        ok          = vfd_agree(f->link->local, ok, err, sizeof err) == 0;
        file_open_g = 0;
    }
    if (!ok)
        DSM_ERROR("%s: %s", f->name, err);
    free_file(f);
    if (finalizing_g && disconnect() < 0)
        ok = 0;
    return ok ? 0 : -1;
}

static int
dsm_cmp(const H5FD_t *f1, const H5FD_t *f2)
{
    return strcmp(((const H5FD_dsm_t *)f1)->name, ((const H5FD_dsm_t *)f2)->name);
}

static haddr_t
dsm_get_eoa(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const H5FD_dsm_t *)file)->eoa;
}

static herr_t
dsm_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
    (void)type;
    ((H5FD_dsm_t *)file)->eoa = addr;
    return 0;
}

/* H5Fget_vfd_handle: as MPI-IO, a pointer to an MPI_File, the driver's handle that is
 * not the file's bytes (vfd_mpihandle.h: writes through it fail, reads read nothing) */
static herr_t
dsm_get_handle(H5FD_t *file, hid_t fapl, void **handle)
{
    H5FD_dsm_t *f = (H5FD_dsm_t *)file;
    (void)fapl;
    if (vfd_mpi_handle_get(&f->mpi_handle, handle) < 0) {
        DSM_ERROR("%s: no MPI file handle to give (it could not be opened, or the program closed it)",
                  f->name);
        return -1;
    }
    return 0;
}

/* as HDF5's mpio driver: known at open and at each truncate, the same on every rank */
static haddr_t
dsm_get_eof(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const H5FD_dsm_t *)file)->eof;
}

/*
 * Every transfer is a batch of pieces issued to the servers in one access epoch each
 * and completed together (dsm_store_issue_*, dsm_store_complete): one piece for plain
 * bytes, many for a vector or a transfer described by MPI datatypes.
 */
static int
get_piece(void *file, uint64_t at, void *mem, size_t len)
{
    H5FD_dsm_t *f = file;
    char        err[DSM_ERR_SIZE];
    if (at > DSM_MAXADDR || len > DSM_MAXADDR - at) {
        DSM_ERROR("%s: read of %zu bytes at %" PRIu64 " overflows the address space", f->name, len, at);
        return -1;
    }
    /* a file being written is read where it lies; a complete one ends at its size (zeros
     * beyond, as sec2); and nothing lies beyond the DSM */
    uint64_t end = f->writable ? f->link->store.layout.total : f->eof;
    size_t   n   = at >= end ? 0 : (len > end - at ? (size_t)(end - at) : len);
    memset((char *)mem + n, 0, len - n);
    if (n && dsm_store_issue_get(&f->link->store, at, mem, n, err, sizeof err) < 0) {
        DSM_ERROR("%s: %s", f->name, err);
        return -1;
    }
    return 0;
}

static int
put_piece(void *file, uint64_t at, void *mem, size_t len)
{
    H5FD_dsm_t *f = file;
    char        err[DSM_ERR_SIZE];
    if (!f->writable) {
        DSM_ERROR("%s: the file is open read-only", f->name);
        return -1;
    }
    if (dsm_store_issue_put(&f->link->store, at, mem, len, err, sizeof err) < 0) {
        DSM_ERROR("%s: %s", f->name, err);
        return -1;
    }
    if (at + len > f->written)
        f->written = at + len;
    return 0;
}

/* the end of a batch: every piece issued is complete (also after a failed one) */
static herr_t
complete(H5FD_dsm_t *f, int status)
{
    char err[DSM_ERR_SIZE];
    if (dsm_store_complete(&f->link->store, err, sizeof err) < 0) {
        DSM_ERROR("%s: %s", f->name, err);
        return -1;
    }
    return status < 0 ? -1 : 0;
}

/* one call's transfer: bytes, or `size` elements of btype against the file view (addr, ftype) */
static herr_t
transfer(H5FD_dsm_t *f, H5FD_mem_t type, bool writing, haddr_t addr, size_t size, void *buf)
{
    MPI_Datatype btype, ftype;
    vfd_piece_fn piece = writing ? put_piece : get_piece;
    char         err[VFD_ERR_SIZE];
    if (vfd_call_datatypes(type, &btype, &ftype) < 0) {
        DSM_ERROR("%s: cannot get the MPI datatypes of a collective transfer from HDF5", f->name);
        return -1;
    }
    if (vfd_types_are_bytes(btype, ftype))
        return complete(f, piece(f, addr, buf, size));
    int rc = vfd_typed_transfer(btype, size, buf, ftype, addr, piece, f, err);
    if (rc < 0)
        DSM_ERROR("%s: a collective %s described by MPI datatypes: %s", f->name, writing ? "write" : "read",
                  err);
    return complete(f, rc);
}

/*
 * The start and the end of a collective transfer, on every client: each client's
 * transfers are complete at their targets (every transfer ends with its unlock), and no
 * client goes on before all are. So a collective write's puts land after every earlier
 * write of any client and before every later one, and a collective read's gets see every
 * write a client issued before it entered and none that a client issues after its own
 * part returned while a slower client still reads (as HDF5's MPI-IO driver's collective
 * calls begin and end); the clients agree on the outcome (status: this client's).
 */
static herr_t
sync_collective(H5FD_dsm_t *f, herr_t status)
{
    return vfd_sync_collective(&dsm_driver_g, f->comm, f->name, "client", "collective transfer", status,
                               NULL);
}

/* collective for raw data only, as HDF5's MPI-IO driver reads (metadata: independently) */
static herr_t
dsm_read(H5FD_t *_file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    H5FD_dsm_t *f    = (H5FD_dsm_t *)_file;
    bool        coll = type == H5FD_MEM_DRAW && vfd_collective_call();
    herr_t      ret  = coll ? sync_collective(f, 0) : 0;
    (void)dxpl;
    if (ret >= 0)
        ret = transfer(f, type, false, addr, size, buf);
    return coll ? sync_collective(f, ret) : ret;
}

static herr_t
dsm_write(H5FD_t *_file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *buf)
{
    H5FD_dsm_t *f    = (H5FD_dsm_t *)_file;
    bool        coll = vfd_collective_call();
    herr_t      ret  = coll ? sync_collective(f, 0) : 0;
    (void)dxpl;
    if (ret >= 0)
        ret = transfer(f, type, true, addr, size, (void *)buf);
    return coll ? sync_collective(f, ret) : ret;
}

/* vector entries (vfd_each_entry): plain byte ranges, whatever their memory types */
static herr_t
get_entry(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    (void)type;
    (void)dxpl;
    return get_piece(file, addr, buf, size);
}

static herr_t
put_entry(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    (void)type;
    (void)dxpl;
    return put_piece(file, addr, buf, size);
}

static herr_t
dsm_read_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[], haddr_t addrs[], size_t sizes[],
                void *bufs[])
{
    H5FD_dsm_t *f    = (H5FD_dsm_t *)file;
    bool        coll = vfd_collective_call();
    herr_t      ret  = coll ? sync_collective(f, 0) : 0;
    if (ret >= 0)
        ret = complete(f, vfd_each_entry(get_entry, file, dxpl, count, types, addrs, sizes, bufs));
    return coll ? sync_collective(f, ret) : ret;
}

static herr_t
dsm_write_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[], haddr_t addrs[],
                 size_t sizes[], const void *bufs[])
{
    H5FD_dsm_t *f    = (H5FD_dsm_t *)file;
    bool        coll = vfd_collective_call();
    herr_t      ret  = coll ? sync_collective(f, 0) : 0;
    /* the entries are only read from: the cast serves the shared loop */
    if (ret >= 0)
        ret = complete(f, vfd_each_entry(put_entry, file, dxpl, count, types, addrs, sizes, (void **)bufs));
    return coll ? sync_collective(f, ret) : ret;
}

/* a selection transfer: collective in collective mode, as the vector callbacks. Entry by
 * entry, never joined: a put reads its buffer until complete(), and a joined run's stage
 * buffer would be reused and freed before that */
static herr_t
selection(vfd_entry_fn io, H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count, hid_t mem_spaces[],
          hid_t file_spaces[], haddr_t offsets[], size_t element_sizes[], void *bufs[])
{
    H5FD_dsm_t *f    = (H5FD_dsm_t *)file;
    bool        coll = vfd_collective_call();
    herr_t      ret  = coll ? sync_collective(f, 0) : 0;
    if (ret >= 0)
        ret = complete(f, vfd_each_selection(io, false, file, type, dxpl, count, mem_spaces, file_spaces,
                                             offsets, element_sizes, bufs));
    return coll ? sync_collective(f, ret) : ret;
}

static herr_t
dsm_read_selection(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count, hid_t mem_spaces[],
                   hid_t file_spaces[], haddr_t offsets[], size_t element_sizes[], void *bufs[])
{
    return selection(get_entry, file, type, dxpl, count, mem_spaces, file_spaces, offsets, element_sizes,
                     bufs);
}

/* the buffers are only read from: the cast serves the shared walk */
static herr_t
dsm_write_selection(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count, hid_t mem_spaces[],
                    hid_t file_spaces[], haddr_t offsets[], size_t element_sizes[], const void *bufs[])
{
    return selection(put_entry, file, type, dxpl, count, mem_spaces, file_spaces, offsets, element_sizes,
                     (void **)bufs);
}

static herr_t
dsm_truncate(H5FD_t *_file, hid_t dxpl, hbool_t closing)
{
    H5FD_dsm_t *f = (H5FD_dsm_t *)_file;
    (void)dxpl;
    (void)closing;
    if (f->writable)
        f->eof = f->eoa;
    return 0;
}

static herr_t
dsm_ctl(H5FD_t *_file, uint64_t op_code, uint64_t flags, const void *input, void **output)
{
    H5FD_dsm_t *f = (H5FD_dsm_t *)_file;
    vfd_comm_t  c = {f->comm, f->info, f->rank, f->size};
    (void)input;
    return vfd_ctl(&dsm_driver_g, f->name, &c, op_code, flags, output);
}
