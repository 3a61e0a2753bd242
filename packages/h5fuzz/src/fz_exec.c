/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_exec.c - running and verifying plans (see fz_exec.h).
 */
#include "fz_exec.h"
#include "fz_io.h"
#include "fz_types.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ATTR "a"

static int
fail(fz_ctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* the outcome of a collective step over c's ranks: -1 on every rank when one failed, its
 * message (err: sizeof c->err bytes) then on all */
static int
agree_into(const fz_ctx_t *c, char *err, int rc)
{
    int mine = rc < 0 ? c->rank : c->size, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c->comm);
    if (first == c->size)
        return 0;
    MPI_Bcast(err, sizeof c->err, MPI_CHAR, first, c->comm);
    return -1;
}

static int
agree(fz_ctx_t *c, int rc)
{
    return agree_into(c, c->err, rc);
}

/* a rank failed an operation its peers do not agree on: say so and end the job at
 * once (the harness sees the failure, not a hang) */
static void
abandon(fz_ctx_t *c, size_t op)
{
    fprintf(stderr,
            "h5fuzz: rank %d: operation %zu failed: %s (ending the job: the other ranks would wait)\n",
            c->rank, op, c->err);
    fflush(stderr);
    usleep(500000); /* peers failing too get to print why */
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static int
create_dataset(const fz_object_t *o, hid_t file, fz_ctx_t *c)
{
    hid_t   dcpl = H5Pcreate(H5P_DATASET_CREATE), space = fz_space(o, o->dims[0], 1), d = -1;
    hid_t   mt = fz_mem_type(o), ft = fz_file_type(o);
    hsize_t chunk[FZ_MAX_RANK];
    uint8_t fill[16] = {0};
    for (int k = 0; k < o->nd; k++)
        chunk[k] = o->chunk[k];
    if (o->layout == LAYOUT_CHUNKED)
        H5Pset_chunk(dcpl, o->nd, chunk);
    else
        H5Pset_layout(dcpl, o->layout == LAYOUT_COMPACT ? H5D_COMPACT : H5D_CONTIGUOUS);
    if (o->shuffle)
        H5Pset_shuffle(dcpl);
    if (o->deflate)
        H5Pset_deflate(dcpl, 1);
    if (o->fletcher32)
        H5Pset_fletcher32(dcpl);
    if (o->nbit)
        H5Pset_nbit(dcpl);
    if (o->scaleoffset)
        H5Pset_scaleoffset(dcpl, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT);
    if (o->dense_attrs)
        H5Pset_attr_phase_change(dcpl, 0, 0);
    if (o->fill_set) {
        fz_element_bytes(o, o->fill, fill);
        H5Pset_fill_value(dcpl, mt, fill);
    }
    H5Pset_fill_time(dcpl, o->fill_time == FILL_ALLOC   ? H5D_FILL_TIME_ALLOC
                           : o->fill_time == FILL_NEVER ? H5D_FILL_TIME_NEVER
                                                        : H5D_FILL_TIME_IFSET);
    d = H5Dcreate2(file, o->name, ft, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Tclose(mt);
    H5Tclose(ft);
    H5Pclose(dcpl);
    H5Sclose(space);
    if (d < 0)
        return fail(c, "H5Dcreate2 %s failed", o->name);
    H5Dclose(d);
    return 0;
}

/* H5Dwrite_multi or H5Dread_multi of n parts with one transfer list */
static herr_t
transfer_multi(fz_part_t *w, size_t n, int write, hid_t dxpl)
{
    hid_t d[FZ_MAX_JOIN], t[FZ_MAX_JOIN], ms[FZ_MAX_JOIN], fs[FZ_MAX_JOIN];
    void *b[FZ_MAX_JOIN];
    for (size_t k = 0; k < n; k++) {
        d[k]  = w[k].d;
        t[k]  = w[k].t;
        ms[k] = w[k].ms;
        fs[k] = w[k].fs;
        b[k]  = w[k].v;
    }
    return write ? H5Dwrite_multi(n, d, t, ms, fs, dxpl, (const void **)b)
                 : H5Dread_multi(n, d, t, ms, fs, dxpl, b);
}

/* a collective transfer that HDF5 carried out independently (H5Pget_mpio_actual_io_mode:
 * no collective I/O on some rank, e.g. a type conversion with selection I/O off in HDF5
 * 1.14.6) orders nothing: neither MPI-IO nor a driver sees a collective call, so a rank
 * that returns may write over what another still reads, or read before another's part
 * is written. The program then orders the ranks itself, as MPI asks: every rank waits
 * until all have returned (the MPI_Allreduce). Collective; 1 when it did. */
static int
order_if_independent(hid_t dxpl, fz_ctx_t *c)
{
    H5D_mpio_actual_io_mode_t mode = H5D_MPIO_NO_COLLECTIVE;
    int                       independent;
    if (H5Pget_mpio_actual_io_mode(dxpl, &mode) < 0)
        mode = H5D_MPIO_NO_COLLECTIVE; /* unknown: ordered, to be safe */
    independent = mode == H5D_MPIO_NO_COLLECTIVE;
    MPI_Allreduce(MPI_IN_PLACE, &independent, 1, MPI_INT, MPI_MAX, c->comm);
    return independent;
}

/* the transfer of parts w[0..n) of operations ops[i..i+n): alone, or joined in one call */
static int
transfer_parts(const fz_plan_t *p, size_t i, fz_part_t *w, size_t n, int write, fz_ctx_t *c)
{
    const fz_op_t *op   = &p->ops[i];
    hid_t          dxpl = fz_transfer_list(op);
    herr_t         rc   = n == 1 ? fz_part_transfer(w, write, dxpl) : transfer_multi(w, n, write, dxpl);
    if (op->coll && order_if_independent(dxpl, c) && c->verbose && c->rank == 0)
        printf("h5fuzz: op %zu: HDF5 did this collective %s independently: the ranks are ordered after it\n",
               i, write ? "write" : "read");
    H5Pclose(dxpl);
    if (rc >= 0)
        return 0;
    const char *call =
        n == 1 ? (write ? "H5Dwrite" : "H5Dread") : (write ? "H5Dwrite_multi" : "H5Dread_multi");
    return fail(c, "%s %s%s (%s, transfer variations %#x) failed", call, p->obj[op->target].name,
                n == 1 ? "" : " and the joined datasets", op->coll ? "collective" : "independent", op->xfer);
}

/* the writes ops[i..j): one H5Dwrite, or several joined in one H5Dwrite_multi */
static int
do_writes(const fz_plan_t *p, size_t i, size_t j, hid_t file, fz_ctx_t *c)
{
    fz_part_t w[FZ_MAX_JOIN];
    size_t    n  = j - i;
    int       rc = 0;
    for (size_t k = 0; k < n; k++)
        fz_part_init(&w[k]);
    for (size_t k = 0; k < n && rc == 0; k++)
        if (fz_part_write(p, &p->ops[i + k], file, c->rank, &w[k]) < 0)
            rc = fail(c, "H5Dopen2 %s failed (or no memory for its values)",
                      p->obj[p->ops[i + k].target].name);
    if (rc == 0)
        rc = transfer_parts(p, i, w, n, 1, c);
    for (size_t k = 0; k < n; k++)
        fz_part_close(&w[k]);
    return rc;
}

/* the reads ops[i..j) (one H5Dread, or several joined in one H5Dread_multi), each
 * rank's region compared with the model; differences count as stale reads */
static int
do_reads(const fz_plan_t *p, const fz_model_t *m, size_t i, size_t j, hid_t file, fz_ctx_t *c)
{
    fz_part_t w[FZ_MAX_JOIN];
    size_t    n  = j - i;
    int       rc = 0, barrier = p->grammar < 2;
    long      bad = 0;
    for (size_t k = 0; k < n; k++) {
        fz_part_init(&w[k]);
        barrier |= p->ops[i + k].barrier;
    }
    if (barrier)
        MPI_Barrier(c->comm); /* every rank's writes are out */
    for (size_t k = 0; k < n && rc == 0; k++) {
        const fz_op_t     *op = &p->ops[i + k];
        const fz_object_t *o  = &p->obj[op->target];
        uint64_t           first, count;
        hid_t              d = fz_open_dataset(o, file);
        if (d < 0) {
            rc = fail(c, "H5Dopen2 %s failed", o->name);
            break;
        }
        fz_read_region(o, op, c->rank, &first, &count);
        int points = op->pattern == PAT_POINTS && op->shift == c->rank;
        if (fz_part_read(o, &m->obj[op->target], d, first, count, points, &w[k]) < 0)
            rc = fail(c, "no memory for a read of %s", o->name);
        w[k].own_d = 1;
    }
    if (rc == 0 && (p->ops[i].coll || w[0].n)) /* an independent read of nothing is no call */
        rc = transfer_parts(p, i, w, n, 0, c);
    const char *when = n > 1            ? "during the session (H5Dread_multi):"
                       : p->ops[i].coll ? "during the session (collective read):"
                                        : "during the session:";
    for (size_t k = 0; k < n; k++) {
        if (rc == 0)
            bad += fz_part_compare(&p->obj[p->ops[i + k].target], &m->obj[p->ops[i + k].target], &w[k],
                                   c->rank, when, NULL);
        fz_part_close(&w[k]);
    }
    c->stale += bad;
    return rc;
}

static int
do_attr(const fz_plan_t *p, const fz_op_t *op, hid_t file, fz_ctx_t *c)
{
    const fz_object_t *o   = &p->obj[op->target];
    hid_t              obj = H5Oopen(file, o->name, H5P_DEFAULT), a = -1;
    if (obj < 0)
        return fail(c, "H5Oopen %s failed", o->name);
    htri_t exists = H5Aexists(obj, ATTR);
    if (exists > 0)
        a = H5Aopen(obj, ATTR, H5P_DEFAULT);
    else if (exists == 0) {
        hid_t s = H5Screate(H5S_SCALAR);
        a       = H5Acreate2(obj, ATTR, H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT);
        H5Sclose(s);
    }
    herr_t rc = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_INT32, &op->value);
    if (a >= 0)
        H5Aclose(a);
    H5Oclose(obj);
    return rc < 0 ? fail(c, "attribute of %s failed", o->name) : 0;
}

static int
do_extend(const fz_plan_t *p, const fz_op_t *op, hid_t file, fz_ctx_t *c)
{
    const fz_object_t *o = &p->obj[op->target];
    hsize_t            dims[FZ_MAX_RANK];
    hid_t              d = H5Dopen2(file, o->name, H5P_DEFAULT);
    fz_dims(o, op->dim0, dims);
    herr_t rc = d < 0 ? -1 : H5Dset_extent(d, dims);
    /* in a shrink every rank reads a filtered edge chunk to fill its cut-off part and
     * writes the filled chunk when it closes the dataset, in the same place: a rank still
     * reading it after another's close fails ("filter returned failure during read",
     * HDF5's fault: reframe-tests/hdf5-faults, shrink-filtered). h5fuzz orders the closes
     * after every rank's change of extent; a rank that failed ends the job instead */
    if (rc >= 0)
        MPI_Barrier(c->comm);
    if (d >= 0)
        H5Dclose(d);
    return rc < 0 ? fail(c, "H5Dset_extent %s to %" PRIu64 " failed", o->name, op->dim0) : 0;
}

/* operation i (with the transfers joined to it up to j) */
static int
run_op(const fz_plan_t *p, const fz_model_t *m, size_t i, size_t j, hid_t *file, fz_ctx_t *c)
{
    const fz_op_t     *op = &p->ops[i];
    const fz_object_t *o  = &p->obj[op->target];
    switch (op->kind) {
        case OP_GROUP: {
            hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
            if (o->dense_attrs)
                H5Pset_attr_phase_change(gcpl, 0, 0);
            hid_t g = H5Gcreate2(*file, o->name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
            H5Pclose(gcpl);
            return g < 0 ? fail(c, "H5Gcreate2 %s failed", o->name) : H5Gclose(g);
        }
        case OP_DELETE:
            /* HDF5 reuses the deleted objects' space at once, and the fill value of a new
             * contiguous dataset there is written by rank 0 alone (H5D__contig_fill: a
             * barrier after that write, none before): an earlier independent write of
             * another rank to the deleted dataset, still under way, lands over the fill.
             * A program orders its independent writes before it deletes what they wrote;
             * h5fuzz does so with a barrier (README.md, "MPI-IO faults") */
            MPI_Barrier(c->comm);
            return H5Ldelete(*file, o->name, H5P_DEFAULT) < 0 ? fail(c, "H5Ldelete %s failed", o->name) : 0;
        case OP_DSET:
            return create_dataset(o, *file, c);
        case OP_WRITE:
            return do_writes(p, i, j, *file, c);
        case OP_EXTEND:
            return do_extend(p, op, *file, c);
        case OP_ATTR:
            return do_attr(p, op, *file, c);
        case OP_READ:
            return do_reads(p, m, i, j, *file, c);
        case OP_FLUSH:
            return H5Fflush(*file, H5F_SCOPE_GLOBAL) < 0 ? fail(c, "H5Fflush failed") : 0;
        case OP_REOPEN:
            if (H5Fclose(*file) < 0)
                return fail(c, "H5Fclose (before reopening) failed");
            *file = H5Fopen(c->path, H5F_ACC_RDWR, c->fapl);
            return *file < 0 ? fail(c, "H5Fopen %s read-write failed", c->path) : 0;
        default:
            return fail(c, "unknown operation %d", op->kind);
    }
}

/* a new dataset's properties (--verbose) */
static void
print_dataset(const fz_object_t *o)
{
    printf(" (%dD", o->nd);
    for (int k = 0; k < o->nd; k++)
        printf("%s%" PRIu64, k ? "x" : " ", o->dims[k]);
    printf(" layout %d chunk", o->layout);
    for (int k = 0; k < o->nd; k++)
        printf("%s%" PRIu64, k ? "x" : " ", o->chunk[k]);
    printf(" deflate %d shuffle %d fletcher32 %d nbit %d scaleoffset %d fill time %d fill %s file type %d "
           "cache %d "
           "element %d converted %d)",
           o->deflate, o->shuffle, o->fletcher32, o->nbit, o->scaleoffset, o->fill_time,
           o->fill_set ? "set" : "default", o->ftype, o->cache, o->mtype, o->fconv);
}

/* the plan's metadata settings on a copy of the driver's fapl */
static hid_t
session_fapl(const fz_plan_t *p, hid_t fapl)
{
    hid_t copy = H5Pcopy(fapl);
    if (p->sync_bytes) {
        H5AC_cache_config_t mdc = {.version = H5AC__CURR_CACHE_CONFIG_VERSION};
        H5Pget_mdc_config(copy, &mdc);
        /* a small cache that must stay mostly clean: sync points write most dirty entries */
        mdc.dirty_bytes_threshold = p->sync_bytes;
        mdc.set_initial_size      = 1;
        mdc.initial_size = mdc.min_size = mdc.max_size = 16 * 1024;
        mdc.min_clean_fraction                         = 0.9;
        mdc.incr_mode                                  = H5C_incr__off;
        mdc.flash_incr_mode                            = H5C_flash_incr__off;
        mdc.decr_mode                                  = H5C_decr__off;
        if (H5Pset_mdc_config(copy, &mdc) < 0)
            fprintf(stderr, "h5fuzz: H5Pset_mdc_config refused the small cache\n");
    }
    if (p->coll_md)
        H5Pset_coll_metadata_write(copy, 1);
    if (p->align)
        H5Pset_alignment(copy, 1, (hsize_t)p->align);
    if (p->latest)
        H5Pset_libver_bounds(copy, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    return copy;
}

/* the ranks of a session: the first k of the job on a communicator of their own (with
 * the driver's access list set to it), or the whole job as it is; a rank outside the
 * session has comm MPI_COMM_NULL and no file */
typedef struct {
    fz_ctx_t c;
    int      k;
    hid_t    file;
} session_t;

static void
session_begin(const fz_ctx_t *job, int k, session_t *s)
{
    s->c       = *job;
    s->c.stale = 0;
    s->k       = k;
    s->file    = -1;
    if (k >= job->size)
        return;
    s->c.fapl = H5Pcopy(job->fapl); /* on every rank: it duplicates the job's communicator */
    MPI_Comm_split(job->comm, job->rank < k ? 0 : MPI_UNDEFINED, job->rank, &s->c.comm);
    if (s->c.comm == MPI_COMM_NULL) {
        H5Pclose(s->c.fapl);
        s->c.fapl = -1;
        return;
    }
    MPI_Comm_rank(s->c.comm, &s->c.rank);
    MPI_Comm_size(s->c.comm, &s->c.size);
    if (s->c.fapl >= 0 && H5Pset_mpi_params(s->c.fapl, s->c.comm, MPI_INFO_NULL) < 0) {
        H5Pclose(s->c.fapl);
        s->c.fapl = -1;
    }
}

/* the session's counts go to the job's context, and its message when it failed (a
 * session's messages stay in s->c.err until then); s is then the whole job with no file */
static void
session_end(fz_ctx_t *job, session_t *s, int rc)
{
    job->stale += s->c.stale;
    if (rc < 0)
        memcpy(job->err, s->c.err, sizeof job->err);
    if (s->k < job->size && s->c.comm != MPI_COMM_NULL) {
        if (s->c.fapl >= 0)
            H5Pclose(s->c.fapl);
        MPI_Comm_free(&s->c.comm);
    }
    s->c       = *job;
    s->c.stale = 0;
    s->k       = job->size;
}

/* the file opened (created) by the session's ranks; 0 or -1, the same on every rank of the job */
static int
session_open(fz_ctx_t *job, session_t *s, unsigned create_flags, hid_t fcpl)
{
    int rc = 0;
    if (s->c.comm != MPI_COMM_NULL) {
        s->file = s->c.fapl < 0  ? -1
                  : create_flags ? H5Fcreate(s->c.path, create_flags, fcpl, s->c.fapl)
                                 : H5Fopen(s->c.path, H5F_ACC_RDWR, s->c.fapl);
        if (s->file < 0)
            rc = fail(&s->c, "%s %s by %d of %d ranks failed",
                      create_flags ? "H5Fcreate" : "H5Fopen read-write", s->c.path,
                      s->k < job->size ? s->k : job->size, job->size);
    }
    return agree_into(job, s->c.err, rc);
}

/* OP_REOPEN by another number of ranks: the session closes the file, the next opens it */
static int
session_change(fz_ctx_t *job, session_t *s, int k)
{
    int rc = 0;
    if (s->file >= 0 && H5Fclose(s->file) < 0)
        rc = fail(&s->c, "H5Fclose (before reopening by %d ranks) failed", k);
    s->file = -1;
    rc      = agree_into(job, s->c.err, rc);
    session_end(job, s, rc);
    if (rc < 0)
        return -1;
    session_begin(job, k, s);
    return session_open(job, s, 0, H5P_DEFAULT);
}

/* --verbose: operation i as rank 0 prints it */
static void
print_op(const fz_plan_t *p, size_t i)
{
    const fz_op_t     *op = &p->ops[i];
    const fz_object_t *o  = &p->obj[op->target];
    printf("h5fuzz: op %zu: %s %s", i, fz_op_name(op->kind), o->name);
    if (op->kind == OP_DSET)
        print_dataset(o);
    if (op->kind == OP_WRITE)
        printf(" (%s pattern %d shift %d block %" PRIu64 " skip %#x, %" PRIu64 " rows, transfer %#x)",
               op->coll ? "collective" : "independent", op->pattern, op->shift, op->block, op->skip, op->dim0,
               op->xfer);
    if (op->kind == OP_READ)
        printf(" (%s, transfer %#x%s)", op->coll ? "collective" : "independent", op->xfer,
               op->barrier ? "" : ", no barrier");
    if (op->kind == OP_EXTEND)
        printf(" (to %" PRIu64 " rows)", op->dim0);
    if (op->ranks)
        printf(" [ranks 0..%d]", op->ranks - 1);
    if (op->join)
        printf(" [joined to the one before: one %s]",
               op->kind == OP_WRITE ? "H5Dwrite_multi" : "H5Dread_multi");
    printf("\n");
}

/* is operation i's target among those of ops[i0..i)? */
static int
joined_before(const fz_plan_t *p, size_t i0, size_t i)
{
    for (size_t k = i0; k < i; k++)
        if (p->ops[k].target == p->ops[i].target)
            return 1;
    return 0;
}

/* the end of the transfers joined to operation i in one multi-dataset call (grammar 6):
 * collective transfers of the same kind and transfer list, each of another dataset */
static size_t
joined_end(const fz_plan_t *p, size_t i)
{
    const fz_op_t *op = &p->ops[i];
    size_t         j  = i + 1;
    if ((op->kind != OP_WRITE && op->kind != OP_READ) || !op->coll)
        return j;
    while (j < p->nops && j - i < FZ_MAX_JOIN && p->ops[j].join && p->ops[j].kind == op->kind &&
           p->ops[j].coll && p->ops[j].xfer == op->xfer && p->ops[j].ranks == op->ranks &&
           !joined_before(p, i, j))
        j++;
    return j;
}

/* operations i..j (one, or transfers joined in one call) by the session's ranks; ranks
 * outside the session only follow the model */
static int
step(const fz_plan_t *p, fz_model_t *m, size_t i, size_t j, fz_ctx_t *job, session_t *s)
{
    const fz_op_t *op = &p->ops[i];
    int            rc = 0;
    for (size_t k = i; k < j; k++)
        if (p->ops[k].delay_rank == job->rank && p->ops[k].delay_us)
            usleep(p->ops[k].delay_us);
    if (op->kind == OP_REOPEN && fz_op_ranks(p, op) != s->k)
        rc = session_change(job, s, fz_op_ranks(p, op));
    else if (s->c.comm != MPI_COMM_NULL) {
        rc = run_op(p, m, i, j, &s->file, &s->c);
        /* no agreement after a collective read: a rank goes on (to an independent write,
         * say) while a slower one may still be inside the read, which must not see it */
        if ((op->kind == OP_READ && !op->coll) || op->kind == OP_REOPEN || op->kind == OP_FLUSH)
            rc = agree(&s->c, rc);
        else if (rc < 0) /* the others go on to the next collective call and would wait there forever */
            abandon(&s->c, i);
    }
    for (size_t k = i; k < j && rc == 0; k++)
        if (fz_model_apply(m, p, &p->ops[k]) < 0) { /* this rank alone: its peers would wait */
            fail(&s->c, "out of memory");
            abandon(&s->c, k);
        }
    if (s->k < job->size) /* the idle ranks learn of a failure in the session (s->k is every rank's) */
        rc = agree_into(job, s->c.err, rc);
    return rc;
}

int
fz_execute(const fz_plan_t *p, fz_ctx_t *c)
{
    fz_model_t m;
    session_t  s;
    int        rc = 0;
    fz_model_init(&m);
    struct stat st; /* never written through a link planted at the file's name */
    if (agree(c, c->rank == 0 && lstat(c->path, &st) == 0 && S_ISLNK(st.st_mode)
                     ? fail(c, "is a symbolic link: not written through (give the path of its target)")
                     : 0) < 0)
        return -1;
    hid_t driver_fapl = c->fapl;
    c->fapl           = session_fapl(p, driver_fapl);
    hid_t fcpl        = H5Pcreate(H5P_FILE_CREATE);
    if (p->paged) /* paged aggregation; parallel HDF5 allows it without a page buffer */
        H5Pset_file_space_strategy(fcpl, H5F_FSPACE_STRATEGY_PAGE, 0, 1);
    session_begin(c, p->ranks0 ? p->ranks0 : p->ranks, &s);
    rc = session_open(c, &s, H5F_ACC_TRUNC, fcpl);
    H5Pclose(fcpl);
    if (c->verbose && c->rank == 0)
        printf("h5fuzz: grammar %d, sync points %d, collective metadata %d, alignment %d, latest format %d, "
               "paged %d, created by %d ranks\n",
               p->grammar, p->sync_bytes, p->coll_md, p->align, p->latest, p->paged, s.k);
    for (size_t i = 0, j; i < p->nops && rc == 0; i = j) {
        j = joined_end(p, i);
        for (size_t k = i; k < j && c->verbose && c->rank == 0; k++)
            print_op(p, k);
        if (c->verbose && c->rank == 0 && j - i > 1) /* the call made, not only the plan's mark */
            printf("h5fuzz: ops %zu..%zu: one %s of %zu datasets\n", i, j - 1,
                   p->ops[i].kind == OP_WRITE ? "H5Dwrite_multi" : "H5Dread_multi", j - i);
        rc = step(p, &m, i, j, c, &s);
    }
    if (s.file >= 0 && H5Fclose(s.file) < 0 && rc == 0)
        rc = fail(&s.c, "H5Fclose failed");
    session_end(c, &s, rc);
    H5Pclose(c->fapl);
    c->fapl = driver_fapl;
    fz_model_free(&m);
    return agree(c, rc);
}

/* every element of an open dataset against the model: the wrong ones (a failed read: 1) */
static long
verify_values(const fz_object_t *o, const fz_mobj_t *mo, hid_t d, fz_ctx_t *c, uint64_t *odd)
{
    fz_part_t w;
    long      bad = 1;
    if (fz_part_read(o, mo, d, 0, mo->dims[0], 0, &w) < 0)
        fprintf(stderr, "h5fuzz: no memory to read %s\n", o->name);
    else if (fz_part_transfer(&w, 0, H5P_DEFAULT) < 0)
        fprintf(stderr, "h5fuzz: H5Dread %s failed (after the session)\n", o->name);
    else
        bad = fz_part_compare(o, mo, &w, c->rank, "after the session:", odd);
    fz_part_close(&w);
    return bad;
}

/* one object of the file against the model: wrong values, attributes or objects */
static long
verify_object(const fz_object_t *o, const fz_mobj_t *mo, hid_t file, fz_ctx_t *c, uint64_t *odd)
{
    long  bad = 0;
    hid_t obj = H5Oopen(file, o->name, H5P_DEFAULT);
    if (obj < 0) {
        fprintf(stderr, "h5fuzz: %s is missing\n", o->name);
        return 1;
    }
    if (o->is_dset) {
        hid_t   s                 = H5Dget_space(obj);
        hsize_t dims[FZ_MAX_RANK] = {0};
        int     nd                = H5Sget_simple_extent_dims(s, dims, NULL);
        H5Sclose(s);
        if (nd != mo->nd || dims[0] != mo->dims[0]) {
            fprintf(stderr, "h5fuzz: %s has %d dimensions, %llu rows, expected %d, %" PRIu64 "\n", o->name,
                    nd, (unsigned long long)dims[0], mo->nd, mo->dims[0]);
            bad++;
        }
        else {
            bad += mo->dims[0] ? verify_values(o, mo, obj, c, odd) : 0;
        }
    }
    if (mo->has_attr) {
        int32_t v = 0;
        hid_t   a = H5Aexists(obj, ATTR) > 0 ? H5Aopen(obj, ATTR, H5P_DEFAULT) : -1;
        if (a < 0 || H5Aread(a, H5T_NATIVE_INT32, &v) < 0 || v != mo->attr) {
            fprintf(stderr, "h5fuzz: attribute of %s: %" PRId32 ", expected %" PRId32 "\n", o->name, v,
                    mo->attr);
            bad++;
        }
        if (a >= 0)
            H5Aclose(a);
    }
    H5Oclose(obj);
    return bad;
}

int
fz_verify(const fz_plan_t *p, fz_ctx_t *c, fz_verdict_t *v)
{
    fz_model_t m;
    long       bad                 = 0;
    int        rc                  = 0;
    uint64_t   odd[FZ_MAX_OBJECTS] = {0};
    memset(v, 0, sizeof *v);
    fz_model_init(&m);
    for (size_t i = 0; i < p->nops && rc == 0; i++)
        rc = fz_model_apply(&m, p, &p->ops[i]);
    hid_t file = rc < 0 ? -1 : H5Fopen(c->path, H5F_ACC_RDONLY, c->fapl);
    if (agree(c, rc < 0     ? fail(c, "out of memory")
                 : file < 0 ? fail(c, "H5Fopen %s read-only failed", c->path)
                            : 0) < 0) {
        fz_model_free(&m);
        return -1;
    }
    for (int k = 1; k < p->nobj; k++) {
        if (!m.obj[k].exists && k % c->size == c->rank && H5Lexists(file, p->obj[k].name, H5P_DEFAULT) != 0) {
            fprintf(stderr, "h5fuzz: %s was deleted and is still there\n", p->obj[k].name);
            bad++;
        }
        if (m.obj[k].exists && p->obj[k].is_dset)
            v->undefined[k] = fz_model_undefined(&m.obj[k]);
        if (k % c->size == c->rank && m.obj[k].exists)
            bad += verify_object(&p->obj[k], &m.obj[k], file, c, &odd[k]);
    }
    if (m.obj[0].has_attr && c->rank == 0) { /* the root group */
        int32_t a32 = 0;
        hid_t   a   = H5Aopen_by_name(file, "/", ATTR, H5P_DEFAULT, H5P_DEFAULT);
        if (a < 0 || H5Aread(a, H5T_NATIVE_INT32, &a32) < 0 || a32 != m.obj[0].attr)
            bad++;
        if (a >= 0)
            H5Aclose(a);
    }
    H5Fclose(file);
    fz_model_free(&m);
    MPI_Allreduce(&bad, &v->bad, 1, MPI_LONG, MPI_SUM, c->comm);
    MPI_Allreduce(odd, v->odd, FZ_MAX_OBJECTS, MPI_UINT64_T, MPI_SUM, c->comm);
    return 0;
}
