/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_datatype.c - flattening MPI datatypes into byte runs (see vfd_datatype.h).
 *
 * A datatype is flattened once per combiner node into runs relative to its own origin;
 * repetitions (count, blocklengths) shift those runs, and adjacent runs coalesce, so a
 * dense type of any count is one run. The combiners are those of MPI 3 that describe
 * a typemap by counts and displacements (HDF5 builds its types from contiguous,
 * (h)vector, (h)indexed, (h)indexed_block, struct and resized); subarray and darray
 * are refused with the reason.
 */
#include "vfd_datatype.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t  off;
    uint64_t len;
} run_t;

typedef struct {
    run_t *v;
    size_t n, cap;
} runs_t;

static int
push(runs_t *r, int64_t off, uint64_t len, char *err)
{
    if (len == 0)
        return 0;
    if (r->n && r->v[r->n - 1].off + (int64_t)r->v[r->n - 1].len == off) {
        r->v[r->n - 1].len += len;
        return 0;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        run_t *v   = realloc(r->v, cap * sizeof *v);
        if (!v) {
            snprintf(err, VFD_ERR_SIZE, "out of memory flattening an MPI datatype (%zu runs)", r->n);
            return -1;
        }
        r->v   = v;
        r->cap = cap;
    }
    r->v[r->n++] = (run_t){off, len};
    return 0;
}

/* n copies of one element's runs, copy i at base + i * stride */
static int
push_copies(runs_t *r, const runs_t *one, int64_t n, int64_t base, int64_t stride, char *err)
{
    if (one->n == 1 && (int64_t)one->v[0].len == stride) /* dense: the copies make one run */
        return n > 0 ? push(r, base + one->v[0].off, one->v[0].len * (uint64_t)n, err) : 0;
    for (int64_t i = 0; i < n; i++)
        for (size_t j = 0; j < one->n; j++)
            if (push(r, base + i * stride + one->v[j].off, one->v[j].len, err) < 0)
                return -1;
    return 0;
}

static int flatten(MPI_Datatype t, runs_t *out, int depth, char *err);

/* an element type's runs and extent, for the repetitions of a combiner */
typedef struct {
    runs_t   runs;
    MPI_Aint extent;
} element_t;

static int
element(MPI_Datatype t, element_t *e, int depth, char *err)
{
    MPI_Aint lb;
    memset(e, 0, sizeof *e);
    if (MPI_Type_get_extent(t, &lb, &e->extent) != MPI_SUCCESS) {
        snprintf(err, VFD_ERR_SIZE, "cannot get the extent of an MPI datatype");
        return -1;
    }
    return flatten(t, &e->runs, depth + 1, err);
}

static bool
is_named(MPI_Datatype t)
{
    int ni, na, nd, comb;
    return MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) == MPI_SUCCESS && comb == MPI_COMBINER_NAMED;
}

static int
flatten_named(MPI_Datatype t, runs_t *out, char *err)
{
    MPI_Count size;
    MPI_Aint  lb, extent;
    if (MPI_Type_size_x(t, &size) != MPI_SUCCESS || MPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS) {
        snprintf(err, VFD_ERR_SIZE, "cannot get the size of a predefined MPI datatype");
        return -1;
    }
    if ((MPI_Aint)size != extent) { /* MPI_SHORT_INT and the like have gaps */
        snprintf(err, VFD_ERR_SIZE,
                 "a predefined MPI datatype with gaps (size %lld, extent %lld) is not supported",
                 (long long)size, (long long)extent);
        return -1;
    }
    return push(out, 0, (uint64_t)size, err);
}

/* blocks of an element: count blocks of lens[i] (or lens[0] when one_len) elements at
 * displs: bytes (addrs) or elements (ints, scaled by the element's extent) */
typedef struct {
    int             count;
    const int      *lens;
    bool            one_len;
    const int      *idispl;
    const MPI_Aint *adispl;
} blocks_t;

static int
push_blocks(runs_t *out, const element_t *e, const blocks_t *b, char *err)
{
    for (int i = 0; i < b->count; i++) {
        int64_t len  = b->one_len ? b->lens[0] : b->lens[i];
        int64_t disp = b->adispl ? (int64_t)b->adispl[i] : (int64_t)b->idispl[i] * e->extent;
        if (push_copies(out, &e->runs, len, disp, e->extent, err) < 0)
            return -1;
    }
    return 0;
}

/* (h)vector: count blocks of len elements, stride in bytes */
static int
push_vector(runs_t *out, const element_t *e, int count, int len, int64_t stride, char *err)
{
    for (int i = 0; i < count; i++)
        if (push_copies(out, &e->runs, len, (int64_t)i * stride, e->extent, err) < 0)
            return -1;
    return 0;
}

static int
flatten_combiner(int comb, const int *ints, const MPI_Aint *addrs, const MPI_Datatype *types, runs_t *out,
                 int depth, char *err)
{
    element_t e;
    int       ret = -1;
    if (comb == MPI_COMBINER_STRUCT) {
        for (int i = 0; i < ints[0]; i++) {
            if (element(types[i], &e, depth, err) < 0) {
                free(e.runs.v);
                return -1;
            }
            ret = push_copies(out, &e.runs, ints[1 + i], (int64_t)addrs[i], e.extent, err);
            free(e.runs.v);
            if (ret < 0)
                return -1;
        }
        return 0;
    }
    if (element(types[0], &e, depth, err) < 0) {
        free(e.runs.v);
        return -1;
    }
    switch (comb) {
        case MPI_COMBINER_DUP:
        case MPI_COMBINER_RESIZED: /* the extent is the handle's own: asked of it where it repeats */
            ret = push_copies(out, &e.runs, 1, 0, e.extent, err);
            break;
        case MPI_COMBINER_CONTIGUOUS:
            ret = push_copies(out, &e.runs, ints[0], 0, e.extent, err);
            break;
        case MPI_COMBINER_VECTOR:
            ret = push_vector(out, &e, ints[0], ints[1], (int64_t)ints[2] * e.extent, err);
            break;
        case MPI_COMBINER_HVECTOR:
            ret = push_vector(out, &e, ints[0], ints[1], (int64_t)addrs[0], err);
            break;
        case MPI_COMBINER_INDEXED:
            ret = push_blocks(out, &e, &(blocks_t){ints[0], ints + 1, false, ints + 1 + ints[0], NULL}, err);
            break;
        case MPI_COMBINER_HINDEXED:
            ret = push_blocks(out, &e, &(blocks_t){ints[0], ints + 1, false, NULL, addrs}, err);
            break;
        case MPI_COMBINER_INDEXED_BLOCK:
            ret = push_blocks(out, &e, &(blocks_t){ints[0], ints + 1, true, ints + 2, NULL}, err);
            break;
        case MPI_COMBINER_HINDEXED_BLOCK:
            ret = push_blocks(out, &e, &(blocks_t){ints[0], ints + 1, true, NULL, addrs}, err);
            break;
        default:
            snprintf(err, VFD_ERR_SIZE,
                     "MPI datatypes built with combiner %d (e.g. subarray, darray) are not supported", comb);
    }
    free(e.runs.v);
    return ret;
}

static int
flatten(MPI_Datatype t, runs_t *out, int depth, char *err)
{
    int ni, na, nd, comb;
    if (depth > 64) {
        snprintf(err, VFD_ERR_SIZE, "an MPI datatype nested more than 64 levels deep");
        return -1;
    }
    if (MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) {
        snprintf(err, VFD_ERR_SIZE, "cannot decode an MPI datatype (MPI_Type_get_envelope)");
        return -1;
    }
    if (comb == MPI_COMBINER_NAMED)
        return flatten_named(t, out, err);
    int          *ints  = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint     *addrs = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
    int           ret   = -1;
    if (!ints || !addrs || !types)
        snprintf(err, VFD_ERR_SIZE, "out of memory decoding an MPI datatype");
    else if (MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types) != MPI_SUCCESS)
        snprintf(err, VFD_ERR_SIZE, "cannot decode an MPI datatype (MPI_Type_get_contents)");
    else {
        ret = flatten_combiner(comb, ints, addrs, types, out, depth, err);
        for (int i = 0; i < nd; i++) /* the handles get_contents made for derived types */
            if (!is_named(types[i]))
                MPI_Type_free(&types[i]);
    }
    free(ints);
    free(addrs);
    free(types);
    return ret;
}

int
vfd_types_are_bytes(MPI_Datatype btype, MPI_Datatype ftype)
{
    return btype == MPI_BYTE && ftype == MPI_BYTE;
}

/* count elements of t from offset 0 (stride: t's extent) */
static int
runs_of(MPI_Datatype t, int64_t count, runs_t *out, char *err)
{
    element_t e;
    int       ret = element(t, &e, 0, err);
    if (ret == 0)
        ret = push_copies(out, &e.runs, count, 0, e.extent, err);
    free(e.runs.v);
    return ret;
}

/* hand the pieces of `total` bytes, memory runs m against file runs f, to piece() */
static int
walk(const runs_t *m, const runs_t *f, uint64_t total, void *buf, uint64_t disp, vfd_piece_fn piece,
     void *ctx, char *err)
{
    size_t   i = 0, j = 0;
    uint64_t mo = 0, fo = 0;
    while (total > 0) {
        if (i >= m->n || j >= f->n) {
            snprintf(err, VFD_ERR_SIZE, "the MPI datatypes of a transfer describe fewer bytes than it moves");
            return -1;
        }
        uint64_t len = m->v[i].len - mo;
        if (f->v[j].len - fo < len)
            len = f->v[j].len - fo;
        if (total < len)
            len = total;
        int64_t at = f->v[j].off + (int64_t)fo;
        if (at < 0) {
            snprintf(err, VFD_ERR_SIZE, "a file datatype with a negative displacement (%lld)", (long long)at);
            return -1;
        }
        err[0] = '\0';
        if (piece(ctx, disp + (uint64_t)at, (char *)buf + m->v[i].off + (int64_t)mo, (size_t)len) < 0) {
            if (!err[0])
                snprintf(err, VFD_ERR_SIZE, "the transfer of %llu bytes at %llu failed",
                         (unsigned long long)len, (unsigned long long)(disp + (uint64_t)at));
            return -1;
        }
        total -= len;
        if ((mo += len) == m->v[i].len)
            i++, mo = 0;
        if ((fo += len) == f->v[j].len)
            j++, fo = 0;
    }
    return 0;
}

int
vfd_typed_transfer(MPI_Datatype btype, size_t count, void *buf, MPI_Datatype ftype, uint64_t disp,
                   vfd_piece_fn piece, void *ctx, char err[VFD_ERR_SIZE])
{
    MPI_Count bsize = 0, fsize = 0;
    if (MPI_Type_size_x(btype, &bsize) != MPI_SUCCESS || MPI_Type_size_x(ftype, &fsize) != MPI_SUCCESS) {
        snprintf(err, VFD_ERR_SIZE, "cannot get the sizes of a transfer's MPI datatypes");
        return -1;
    }
    uint64_t total = (uint64_t)bsize * count;
    if (total == 0)
        return 0;
    if (fsize <= 0) {
        snprintf(err, VFD_ERR_SIZE, "a file datatype of no bytes for a transfer of %llu bytes",
                 (unsigned long long)total);
        return -1;
    }
    runs_t m = {0}, f = {0};
    int    ret = runs_of(btype, (int64_t)count, &m, err);
    if (ret == 0)
        ret = runs_of(ftype, (int64_t)((total + (uint64_t)fsize - 1) / (uint64_t)fsize), &f, err);
    if (ret == 0)
        ret = walk(&m, &f, total, buf, disp, piece, ctx, err);
    free(m.v);
    free(f.v);
    return ret;
}
