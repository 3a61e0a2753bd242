/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_plan.c - random workloads and their model (see fz_plan.h).
 */
#include "fz_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: small, fast, and the same sequence everywhere */
static uint64_t
mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

typedef struct {
    uint64_t state;
} rng_t;

static uint64_t
next(rng_t *r)
{
    return mix(r->state++);
}
static uint64_t
below(rng_t *r, uint64_t n)
{
    return n ? next(r) % n : 0;
}
static int
chance(rng_t *r, unsigned percent)
{
    return below(r, 100) < percent;
}

const char *
fz_op_name(int kind)
{
    static const char *names[] = {"group", "dataset", "write",  "extend", "attribute",
                                  "read",  "flush",   "reopen", "delete"};
    return kind >= 0 && kind <= OP_DELETE ? names[kind] : "?";
}

uint64_t
fz_elements(const fz_object_t *o, uint64_t dim0)
{
    uint64_t n = dim0;
    for (int k = 1; k < o->nd; k++)
        n *= o->dims[k];
    return n;
}

/* the bytes of each memory type (enum fz_mem_type); the compound is packed: int32 a at 0,
 * double b at 4, uint16 c at 12; the string is 8 bytes, null-terminated; the enum's base
 * is a native int; the array holds 3 int16 */
static const size_t esizes[MT_COUNT] = {4, 1, 2, 8, 4, 8, 14, 8, 4, 6};

size_t
fz_element_size(const fz_object_t *o)
{
    return o->mtype > 0 && o->mtype < MT_COUNT ? esizes[o->mtype] : 4;
}

/* the enum's members in memory (fz_types.c names them; its file type has other values) */
const int fz_enum_values[4] = {0, 1, -7, 100000};

void
fz_element_bytes(const fz_object_t *o, int32_t v, uint8_t *out)
{
    union {
        int8_t   i8;
        uint16_t u16;
        int16_t  a16[3];
        int64_t  i64;
        float    f32;
        double   f64;
        int      e;
        char     s[8];
    } u;
    memset(&u, 0, sizeof u);
    switch (o->mtype) {
        case MT_I8:
            u.i8 = (int8_t)v;
            break;
        case MT_U16:
            u.u16 = (uint16_t)v;
            break;
        case MT_I64:
            u.i64 = (int64_t)v * 3;
            break;
        case MT_F32:
            u.f32 = (float)(v & 0xffffff);
            break; /* exact in float */
        case MT_F64:
            u.f64 = (double)v * 0.5;
            break;
        case MT_ENUM:
            u.e = fz_enum_values[(v >> 3) & 3];
            break;
        case MT_ARRAY:
            u.a16[0] = (int16_t)v, u.a16[1] = (int16_t)(v >> 16), u.a16[2] = (int16_t)(v >> 8);
            break;
        case MT_STRING:
            for (int k = 0; k < 7; k++)
                u.s[k] = (char)('a' + ((v >> (4 * k)) & 15));
            break;
        case MT_COMPOUND: {
            double   b = (double)v * 0.25;
            uint16_t c = (uint16_t)(v >> 7);
            memcpy(out, &v, 4);
            memcpy(out + 4, &b, 8);
            memcpy(out + 12, &c, 2);
            return;
        }
        default:
            memcpy(out, &v, 4);
            return;
    }
    memcpy(out, &u, fz_element_size(o));
}

uint64_t
fz_row(const fz_object_t *o)
{
    uint64_t n = 1;
    for (int k = 1; k < o->nd; k++)
        n *= o->dims[k];
    return n;
}

uint64_t
fz_line(const fz_object_t *o)
{
    return o->nd > 1 ? o->dims[o->nd - 1] : 0;
}

int
fz_filtered(const fz_object_t *o)
{
    return o->deflate || o->shuffle || o->fletcher32 || o->nbit || o->scaleoffset;
}

int32_t
fz_value(const fz_op_t *op, uint64_t i)
{
    return (int32_t)((mix(op->salt ^ (i * 0x100000001b3ULL)) >> 33) | 1);
}

int
fz_op_ranks(const fz_plan_t *p, const fz_op_t *op)
{
    return op->ranks > 0 ? op->ranks : p->ranks;
}

/* the session ranks an operation planned now records (0: all): with FZ_PLAN_ALL_RANKS
 * always all, while p->active still changes as without it (the same random draws) */
static int
session_ranks(const fz_plan_t *p)
{
    return p->all_ranks || p->active == p->ranks ? 0 : p->active;
}

/* the part of the dataset a write distributes: rows of 2-D datasets (columns for the
 * cyclic pattern), elements of 1-D ones, over the ranks of the write's session */
int
fz_owner(const fz_plan_t *p, const fz_object_t *o, const fz_op_t *op, uint64_t i)
{
    uint64_t n = op->dim0, k = o->nd == 1 ? i : i / fz_row(o), ranks = (uint64_t)fz_op_ranks(p, op);
    int      owner;
    if (op->pattern == PAT_ALL)
        return 0;
    if (op->pattern == PAT_CYCLIC) {
        k     = o->nd == 1 ? i : i % fz_line(o);
        owner = (int)((k / op->block + (uint64_t)op->shift) % ranks);
    }
    else
        owner = (int)((k * ranks / (n ? n : 1) + (uint64_t)op->shift) % ranks);
    if (op->skip & (1u << (owner % 32)))
        return -1;
    if (op->pattern == PAT_POINTS && mix(op->salt + i) % op->block != 0)
        return -1;
    return owner;
}

void
fz_read_region(const fz_object_t *o, const fz_op_t *op, int rank, uint64_t *first, uint64_t *count)
{
    uint64_t n = op->dim0;
    (void)o;
    if (op->block) { /* rank `shift` its band, the others the band's first element */
        uint64_t lo = (uint64_t)rank * op->block, len = rank == op->shift ? op->block : 1;
        *first = lo < n ? lo : n;
        *count = lo < n ? (len < n - lo ? len : n - lo) : 0;
        return;
    }
    uint64_t a = mix(op->salt + 2 * (uint64_t)rank) % (n + 1),
             b = mix(op->salt + 2 * (uint64_t)rank + 1) % (n + 1);
    *first     = a < b ? a : b;
    *count     = a < b ? b - a : a - b;
}

static fz_op_t *
push(fz_plan_t *p, int kind, rng_t *r)
{
    if (p->nops == p->cap) {
        size_t   cap = p->cap ? 2 * p->cap : 64;
        fz_op_t *v   = realloc(p->ops, cap * sizeof *v);
        if (!v)
            return NULL;
        p->ops = v;
        p->cap = cap;
    }
    fz_op_t *op = &p->ops[p->nops++];
    memset(op, 0, sizeof *op);
    op->kind       = kind;
    op->delay_rank = -1;
    op->ranks      = session_ranks(p);
    if (r && chance(r, 30)) { /* perturbation: one rank late for this operation */
        op->delay_rank = (int)below(r, (uint64_t)p->active);
        op->delay_us   = (unsigned)below(r, 3000);
    }
    return op;
}

/* ---------------------------------------------------------------- the model */

void
fz_model_init(fz_model_t *m)
{
    memset(m, 0, sizeof *m);
}

void
fz_model_free(fz_model_t *m)
{
    for (int i = 0; i < FZ_MAX_OBJECTS; i++) {
        free(m->obj[i].v);
        free(m->obj[i].state);
    }
    fz_model_init(m);
}

uint64_t
fz_model_elements(const fz_mobj_t *mo)
{
    uint64_t n = mo->nd ? 1 : 0;
    for (int k = 0; k < mo->nd; k++)
        n *= mo->dims[k];
    return n;
}

uint64_t
fz_model_undefined(const fz_mobj_t *mo)
{
    uint64_t u = 0;
    for (uint64_t i = 0, n = fz_model_elements(mo); i < n; i++)
        u += mo->state[i] == FZ_UNDEFINED;
    return u;
}

/* a dataset's new first dimension: elements keep their row-major index (only the first
 * dimension changes); new ones hold the fill value where HDF5 writes one */
static int
resize(fz_mobj_t *mo, const fz_object_t *o, uint64_t dim0)
{
    size_t   es  = fz_element_size(o);
    uint64_t old = mo->nd ? fz_model_elements(mo) : 0, n = fz_elements(o, dim0);
    uint8_t *v = realloc(mo->v, (n ? n : 1) * es);
    if (v)
        mo->v = v;
    uint8_t *st = realloc(mo->state, n ? n : 1);
    if (st)
        mo->state = st;
    if (!v || !st)
        return -1;
    int     filled   = o->fill_time == FILL_ALLOC || (o->fill_time == FILL_IFSET && o->fill_set);
    uint8_t fill[16] = {0}; /* HDF5's default fill value: zero bytes */
    if (o->fill_set)
        fz_element_bytes(o, o->fill, fill);
    for (uint64_t i = old; i < n; i++) {
        memcpy(v + i * es, fill, es);
        st[i] = filled ? FZ_FILLED : FZ_UNDEFINED;
    }
    mo->nd    = o->nd;
    mo->esize = es;
    memcpy(mo->dims, o->dims, sizeof mo->dims);
    mo->dims[0] = dim0;
    return 0;
}

int
fz_model_apply(fz_model_t *m, const fz_plan_t *p, const fz_op_t *op)
{
    const fz_object_t *o  = &p->obj[op->target];
    fz_mobj_t         *mo = &m->obj[op->target];
    switch (op->kind) {
        case OP_GROUP:
            mo->exists = 1;
            return 0;
        case OP_DSET:
            mo->exists = 1;
            return resize(mo, o, o->dims[0]);
        case OP_EXTEND:
            return resize(mo, o, op->dim0);
        case OP_ATTR:
            mo->has_attr = 1;
            mo->attr     = op->value;
            return 0;
        case OP_DELETE:
            mo->exists = mo->has_attr = 0;
            return 0;
        case OP_WRITE:
            for (uint64_t i = 0, n = fz_elements(o, op->dim0); i < n; i++)
                if (fz_owner(p, o, op, i) >= 0) {
                    fz_element_bytes(o, fz_value(op, i), mo->v + i * mo->esize);
                    mo->state[i] = FZ_WRITTEN;
                }
            return 0;
        default:
            return 0;
    }
}

/* ---------------------------------------------------------------- planning */

static void
ordering_point(fz_plan_t *p)
{
    for (int i = 0; i < p->nobj; i++)
        p->obj[i].last_owners = -1;
}

/* grammar 2's choices for a new dataset, from its own stream g */
static void
new_dataset_g2(fz_object_t *o, rng_t *g)
{
    o->ftype       = (int)below(g, FT_COUNT);
    o->dense_attrs = chance(g, 20);
    if (o->layout != LAYOUT_CHUNKED)
        return;
    o->shuffle    = chance(g, 20);
    o->fletcher32 = chance(g, 15);
    o->cache      = (int)below(g, 3);
}

/* grammar 3's choices for a new dataset, from its own stream g: the element type, a file
 * type that converts (not for filtered datasets: HDF5 1.14.6 turns a collective write
 * with a conversion independent and then refuses it), a third dimension for some
 * 2-D datasets (the second split in two) */
static void
new_dataset_g3(fz_object_t *o, rng_t *g)
{
    o->mtype = (int)below(g, MT_COUNT);
    o->fconv = !fz_filtered(o) && chance(g, 50);
    if (o->mtype != MT_I32) /* grammar 2's file types are int32's */
        o->ftype = FT_I32LE;
    if (o->nd == 2 && chance(g, 40)) {
        o->nd         = 3;
        o->dims[2]    = 1 + below(g, 12);
        o->dims[1]    = o->dims[1] / o->dims[2] ? o->dims[1] / o->dims[2] : 1;
        o->maxdims[1] = o->dims[1];
        o->maxdims[2] = o->dims[2];
        if (o->layout == LAYOUT_CHUNKED) {
            o->chunk[1] = 1 + below(g, o->dims[1]);
            o->chunk[2] = 1 + below(g, o->dims[2]);
        }
    }
}

/* grammar 4's choices, from its own stream g: nbit (not for strings and enums) and
 * lossless scaleoffset (integers) on chunked datasets, which then are written without
 * conversion, as every filtered one */
static void
new_dataset_g4(fz_object_t *o, rng_t *g)
{
    int integer = o->mtype == MT_I32 || o->mtype == MT_I8 || o->mtype == MT_U16 || o->mtype == MT_I64;
    if (o->layout != LAYOUT_CHUNKED)
        return;
    o->nbit        = o->mtype != MT_STRING && o->mtype != MT_ENUM && chance(g, 25);
    o->scaleoffset = integer && !o->nbit && chance(g, 25);
    if (o->nbit || o->scaleoffset) {
        o->fconv = 0;
        if (o->fill_time == FILL_NEVER)
            o->fill_time = FILL_ALLOC;
    }
}

/* the innermost dimension of o split in two (a new one of 1 to 6 elements after it) */
static void
split_last(fz_object_t *o, rng_t *g)
{
    int      d     = o->nd - 1;
    uint64_t inner = 1 + below(g, 6);
    o->dims[d + 1] = o->maxdims[d + 1] = inner;
    o->dims[d]                         = o->dims[d] / inner ? o->dims[d] / inner : 1;
    o->maxdims[d]                      = o->dims[d];
    if (o->layout == LAYOUT_CHUNKED) {
        o->chunk[d]     = 1 + below(g, o->dims[d]);
        o->chunk[d + 1] = 1 + below(g, inner);
    }
    o->nd++;
}

/* grammar 5's choices, from its own stream g: 3-D datasets made 4-D, some of them 5-D */
static void
new_dataset_g5(fz_object_t *o, rng_t *g)
{
    if (o->nd == 3 && chance(g, 50)) {
        split_last(o, g);
        if (chance(g, 40))
            split_last(o, g);
    }
}

/* pick the creation properties of a new dataset (r[0]; grammar 2 also r[1], 3 r[2]) */
static void
new_dataset(fz_plan_t *p, fz_object_t *o, rng_t *r)
{
    o->is_dset = 1;
    o->layout =
        (int)below(r, 10) < 2 ? LAYOUT_CONTIGUOUS : (below(r, 10) < 1 ? LAYOUT_COMPACT : LAYOUT_CHUNKED);
    o->nd          = chance(r, 60) ? 1 : 2;
    o->last_owners = -1;
    if (o->nd == 1)
        o->dims[0] = 1 + below(r, o->layout == LAYOUT_COMPACT ? 2000 : 20000);
    else {
        o->dims[1] = 1 + below(r, 96);
        o->dims[0] = 1 + below(r, (o->layout == LAYOUT_COMPACT ? 2000 : 20000) / o->dims[1]);
    }
    if (o->layout == LAYOUT_CHUNKED) {
        /* chunks that do and do not align with the ranks' parts */
        uint64_t part = o->dims[0] / (uint64_t)p->active;
        o->chunk[0]   = chance(r, 30) && part ? part : 1 + below(r, o->dims[0] < 3000 ? o->dims[0] : 3000);
        o->chunk[1]   = o->nd == 2 ? 1 + below(r, o->dims[1]) : 0;
        o->maxdims[0] = chance(r, 50) ? 0 : o->dims[0];
        o->deflate    = chance(r, 25);
    }
    else
        o->maxdims[0] = o->dims[0];
    o->maxdims[1] = o->dims[1];
    o->cur0       = o->dims[0];
    o->fill_set   = chance(r, 50);
    o->fill       = (int32_t)(next(r) >> 40) - 7;
    o->fill_time  = (int)below(r, 3);
    if (p->grammar >= 2)
        new_dataset_g2(o, r + 1);
    if (fz_filtered(o) && o->fill_time == FILL_NEVER) /* HDF5 refuses fill time never with filters */
        o->fill_time = FILL_ALLOC;
    if (fz_filtered(o))      /* a conversion turns HDF5 1.14.6's collective write independent, which */
        o->ftype = FT_I32LE; /* it refuses for filtered datasets ("filters in pipeline") */
    if (p->grammar >= 3)
        new_dataset_g3(o, r + 2);
    if (p->grammar == 4) /* grammar 5 builds on 3: HDF5 fails grammar 4's filters */
        new_dataset_g4(o, r + 3);
    if (p->grammar >= 5)
        new_dataset_g5(o, r + 4);
}

/* does HDF5 1.14.6 turn a collective write of the dataset independent (a compact layout,
 * or memory and file types that differ)? Such a write does not order the ranks, and a
 * multi-dataset write with one such dataset is independent as a whole */
static int
breaks_collective(const fz_object_t *o)
{
    return o->layout == LAYOUT_COMPACT || (o->mtype == MT_I32 ? o->ftype != FT_I32LE : o->fconv);
}

/* a write: who writes which part, collective or not; a flush first when it would rewrite
 * what another rank wrote independently since the last ordering point */
/* grammar 2: a collective transfer's property variations */
static int
xfer_bits(rng_t *g)
{
    int x = chance(g, 35) ? XFER_SELECTION_OFF : 0;
    if (chance(g, 20))
        x |= XFER_INDIVIDUAL;
    int chunk = (int)below(g, 4);
    return x | (chunk == 1 ? XFER_CHUNK_ONE : chunk == 2 ? XFER_CHUNK_MULTI : 0);
}

static int
plan_write(fz_plan_t *p, fz_object_t *o, int target, rng_t *r, int coll)
{
    fz_op_t op0 = {0};
    op0.pattern = o->layout == LAYOUT_COMPACT ? PAT_ALL : (int)below(r, 3);
    op0.coll    = coll || o->layout == LAYOUT_COMPACT || fz_filtered(o) ? 1 : chance(r, 50);
    op0.shift   = (int)below(r, (uint64_t)p->active);
    op0.ranks   = session_ranks(p);
    op0.block   = op0.pattern == PAT_POINTS ? 2 + below(r, 40) : 1 + below(r, 300);
    op0.skip    = chance(r, 20) ? (uint32_t)next(r) : 0;
    op0.salt    = next(r);
    op0.dim0    = o->cur0;
    if (op0.pattern == PAT_CYCLIC && (o->nd == 1 ? o->dims[0] : fz_line(o)) / op0.block > 400)
        op0.block = (o->nd == 1 ? o->dims[0] : fz_line(o)) / 400 + 1; /* bounded number of pieces */
    /* which rank owns which element: the shift, and the block length of the cyclic pattern */
    int64_t owners  = op0.pattern == PAT_CYCLIC ? (int64_t)((op0.block << 16 | (uint64_t)op0.shift) << 1 | 1)
                                                : (int64_t)op0.shift << 1;
    int     ordered = op0.coll && !breaks_collective(o); /* HDF5 makes a converting one independent */
    if (op0.pattern != PAT_ALL && !ordered && o->last_owners >= 0 && o->last_owners != owners) {
        if (!push(p, OP_FLUSH, r))
            return -1;
        ordering_point(p);
    }
    fz_op_t *op = push(p, OP_WRITE, r);
    if (!op)
        return -1;
    int      delay_rank = op->delay_rank;
    unsigned delay      = op->delay_us;
    *op                 = op0;
    op->kind            = OP_WRITE;
    op->target          = target;
    op->delay_rank      = delay_rank;
    op->delay_us        = delay;
    op->dim0            = o->cur0;
    if (p->grammar >= 2 && op->coll)
        op->xfer = xfer_bits(r + 1);
    if (ordered && op->pattern != PAT_ALL)
        ordering_point(p);
    else if (op->pattern != PAT_ALL)
        o->last_owners = owners;
    return 0;
}

static int
plan_extend(fz_plan_t *p, fz_object_t *o, int target, rng_t *r)
{
    fz_op_t *op = push(p, OP_EXTEND, r);
    if (!op)
        return -1;
    uint64_t d0 = o->cur0;
    op->target  = target;
    op->dim0    = chance(r, 25) && d0 > 1 ? 1 + below(r, d0) : d0 + 1 + below(r, 2 * o->chunk[0] + 10);
    if (fz_elements(o, op->dim0) > 40000)
        op->dim0 = d0;
    o->cur0 = op->dim0;
    return 0;
}

/* a group to put a new object in (nesting bounded by the name's length) */
static int
group_for(const fz_plan_t *p, rng_t *r)
{
    int g = (int)below(r, (uint64_t)p->nobj);
    while (p->obj[g].is_dset)
        g = p->obj[g].parent;
    return strlen(p->obj[g].name) > FZ_NAME - 32 ? 0 : g;
}

/* grammar 2's operations, before a step of grammar 1: 1 when one was planned */
static int
plan_step_g2(fz_plan_t *p, rng_t *r)
{
    rng_t *g = r + 1;
    int    t = (int)below(g, (uint64_t)p->nobj);
    if (chance(g, 4) && p->obj[t].is_dset && !p->obj[t].deleted) { /* a dataset removed; its space reused */
        fz_op_t *op = push(p, OP_DELETE, r);
        if (!op)
            return -1;
        op->target        = t;
        p->obj[t].deleted = 1;
        return 1;
    }
    return 0;
}

/* a read during the session: independent after a barrier; grammar 2 also collective
 * (not of filtered datasets: HDF5 1.14.6 hangs in a collective read of one without
 * chunks), without a barrier when no independent write came since the last ordering
 * point (a collective write returns once every rank's part is written) */
static int
plan_read(fz_plan_t *p, int t, rng_t *r, int coll)
{
    fz_op_t *op = push(p, OP_READ, r);
    if (!op)
        return -1;
    op->target  = t;
    op->salt    = next(r);
    op->dim0    = p->obj[t].cur0;
    op->barrier = 1;
    if (p->grammar >= 2 && !fz_filtered(&p->obj[t]) && (coll || chance(r + 1, 50))) {
        op->coll    = 1;
        op->xfer    = xfer_bits(r + 1) & (XFER_SELECTION_OFF | XFER_INDIVIDUAL);
        op->barrier = p->obj[t].last_owners >= 0 || chance(r + 1, 30);
    }
    return 0;
}

/* grammar 6: can dataset t join the transfers ops[head..] of this kind? Another one,
 * not deleted; a collective read: not filtered (as plan_read); a write: none of them
 * compact or converting. HDF5 1.14.6 turns a multi-dataset write with one such member
 * independent as a whole: the plan would count writes as ordering the ranks that no
 * longer do, and a filtered member is then refused ("Can't perform independent write
 * with filters in pipeline") */
static int
can_join(const fz_plan_t *p, size_t head, int kind, int t)
{
    const fz_object_t *o = &p->obj[t];
    if (!o->is_dset || o->deleted || (kind == OP_READ && fz_filtered(o)))
        return 0;
    if (kind == OP_WRITE && breaks_collective(o))
        return 0;
    for (size_t k = head; k < p->nops; k++) {
        const fz_object_t *m = &p->obj[p->ops[k].target];
        if (p->ops[k].target == t || (kind == OP_WRITE && breaks_collective(m)))
            return 0;
    }
    return 1;
}

/* a dataset that can join ops[head..] (can_join), or -1 when none is found */
static int
joinable(const fz_plan_t *p, size_t head, int kind, rng_t *g)
{
    for (int tries = 0; tries < 8; tries++) {
        int t = (int)below(g, (uint64_t)p->nobj);
        if (can_join(p, head, kind, t))
            return t;
    }
    return -1;
}

/* grammar 6, after a collective write or read: 1 to 3 more of other datasets joined to
 * it in one H5Dwrite_multi or H5Dread_multi (collective, the same transfer list) */
static int
plan_joined(fz_plan_t *p, rng_t *r)
{
    rng_t        *g    = r + 5;
    size_t        head = p->nops - 1;
    const fz_op_t h    = p->ops[head];
    if (p->grammar < 6 || (h.kind != OP_WRITE && h.kind != OP_READ) || !h.coll || !chance(g, 40))
        return 0;
    for (uint64_t n = 1 + below(g, FZ_MAX_JOIN - 1); n > 0; n--) {
        int t = joinable(p, head, h.kind, g);
        if (t < 0)
            return 0;
        if ((h.kind == OP_WRITE ? plan_write(p, &p->obj[t], t, r, 1) : plan_read(p, t, r, 1)) < 0)
            return -1;
        fz_op_t *op = &p->ops[p->nops - 1];
        op->join    = 1;
        op->xfer    = h.xfer;
    }
    return 0;
}

/* a close and a reopen read-write; grammar 5: often by another number of ranks */
static int
plan_reopen(fz_plan_t *p, rng_t *r)
{
    fz_op_t *op = push(p, OP_REOPEN, r);
    if (!op)
        return -1;
    ordering_point(p);
    if (p->grammar < 5 || p->ranks < 2 || !chance(r + 4, 60))
        return 0;
    int k     = 1 + (int)below(r + 4, (uint64_t)p->ranks - 1); /* 1 .. ranks-1, then all again */
    p->active = p->active == p->ranks ? k : p->ranks;
    op->ranks = session_ranks(p);
    if (op->delay_rank >= p->active)
        op->delay_rank = -1;
    return 0;
}

static int
plan_step(fz_plan_t *p, rng_t *r)
{
    if (p->grammar >= 2) {
        int done = plan_step_g2(p, r);
        if (done)
            return done < 0 ? -1 : 0;
    }
    int      kind = (int)below(r, 100);
    int      t    = (int)below(r, (uint64_t)p->nobj);
    fz_op_t *op;
    if (kind < 8 && p->nobj < FZ_MAX_OBJECTS) { /* a group */
        fz_object_t *o      = &p->obj[p->nobj];
        int          parent = group_for(p, r);
        o->parent           = parent;
        snprintf(o->name, sizeof o->name, "%s/g%d", parent ? p->obj[parent].name : "", p->nobj);
        if (p->grammar >= 2)
            o->dense_attrs = chance(r + 1, 20);
        if (!(op = push(p, OP_GROUP, r)))
            return -1;
        op->target = p->nobj++;
        return 0;
    }
    if (kind < 25 && p->nobj < FZ_MAX_OBJECTS) { /* a dataset */
        fz_object_t *o      = &p->obj[p->nobj];
        int          parent = group_for(p, r);
        o->parent           = parent;
        snprintf(o->name, sizeof o->name, "%s/d%d", parent ? p->obj[parent].name : "", p->nobj);
        new_dataset(p, o, r);
        if (!(op = push(p, OP_DSET, r)))
            return -1;
        op->target = p->nobj++;
        return 0;
    }
    if (kind < 35) { /* an attribute on any object */
        if (p->obj[t].deleted)
            return 0;
        if (!(op = push(p, OP_ATTR, r)))
            return -1;
        op->target = t;
        op->value  = (int32_t)(next(r) >> 33);
        return 0;
    }
    if (kind < 42)
        return (push(p, OP_FLUSH, r) ? (ordering_point(p), 0) : -1);
    if (kind < 45)
        return plan_reopen(p, r);
    if (!p->obj[t].is_dset || p->obj[t].deleted)
        return 0;
    if (kind < 52 && p->obj[t].layout == LAYOUT_CHUNKED && p->obj[t].maxdims[0] == 0)
        return plan_extend(p, &p->obj[t], t, r);
    if ((kind < 62 ? plan_read(p, t, r, 0) : plan_write(p, &p->obj[t], t, r, 0)) < 0)
        return -1;
    return plan_joined(p, r);
}

static void
plan_init(fz_plan_t *p, uint64_t seed, int ranks)
{
    memset(p, 0, sizeof *p);
    p->grammar = 1;
    p->seed    = seed;
    p->ranks   = ranks;
    p->active  = ranks;
    p->nobj    = 1;
    snprintf(p->obj[0].name, sizeof p->obj[0].name, "/");
    p->obj[0].last_owners = -1;
}

int
fz_plan_make(fz_plan_t *p, uint64_t seed, int ranks, size_t nops, int grammar, int flags)
{
    rng_t r[6] = {{mix(seed) ^ 0x5eed}, {mix(seed) ^ 0x6a2}, {mix(seed) ^ 0x6a3},
                  {mix(seed) ^ 0x6a4},  {mix(seed) ^ 0x6a5}, {mix(seed) ^ 0x6a6}}; /* per grammar */
    plan_init(p, seed, ranks);
    p->grammar   = grammar;
    p->all_ranks = grammar >= 5 && (flags & FZ_PLAN_ALL_RANKS);
    /* frequent sync points: the same metadata rewritten by other ranks within an epoch */
    p->sync_bytes = chance(r, 60) ? 1024 << below(r, 4) : 0;
    p->coll_md    = chance(r, 30);
    if (grammar >= 2) {
        p->align  = chance(r + 1, 30) ? 512 << below(r + 1, 4) : 0;
        p->latest = chance(r + 1, 30);
    }
    if (grammar >= 3)
        p->paged = chance(r + 2, 25);
    if (grammar >= 5 && ranks > 1 && chance(r + 4, 30)) { /* created by fewer ranks than the job has */
        p->active = 1 + (int)below(r + 4, (uint64_t)ranks - 1);
        p->ranks0 = session_ranks(p);
    }
    while (p->nops < nops)
        if (plan_step(p, r) < 0)
            return -1;
    return 0;
}

int
fz_plan_straddle(fz_plan_t *p, int ranks)
{
    plan_init(p, 0, ranks);
    for (int d = 0; d < 12 && d + 1 < FZ_MAX_OBJECTS; d++) {
        fz_object_t *o = &p->obj[p->nobj];
        snprintf(o->name, sizeof o->name, "/d%02d", d);
        o->is_dset = 1;
        o->nd      = 1;
        o->layout  = LAYOUT_CHUNKED;
        o->dims[0] = o->maxdims[0] = o->cur0 = 50000 * (uint64_t)ranks;
        o->chunk[0]                          = 1024;
        o->fill_time                         = FILL_IFSET;
        o->last_owners                       = -1;
        fz_op_t *op                          = push(p, OP_DSET, NULL);
        if (!op)
            return -1;
        op->target = p->nobj++;
        fz_op_t w  = {.kind       = OP_WRITE,
                      .target     = op->target,
                      .pattern    = PAT_BLOCKS,
                      .salt       = (uint64_t)d + 1,
                      .dim0       = o->dims[0],
                      .delay_rank = -1};
        if (!(op = push(p, OP_WRITE, NULL)))
            return -1;
        *op = w;
        if (!push(p, OP_FLUSH, NULL))
            return -1;
    }
    return 0;
}

int
fz_plan_metadata(fz_plan_t *p, int ranks)
{
    rng_t r = {0x6d657461};
    plan_init(p, 0, ranks);
    p->sync_bytes = 1024;
    for (int k = 0; k < 2000; k++) {
        int      t  = k < FZ_MAX_OBJECTS - 1 ? -1 : (int)below(&r, (uint64_t)p->nobj);
        fz_op_t *op = push(p, t < 0 ? OP_GROUP : OP_ATTR, NULL);
        if (!op)
            return -1;
        if (t < 0) {
            fz_object_t *o = &p->obj[p->nobj];
            o->last_owners = -1;
            snprintf(o->name, sizeof o->name, "/m%d", p->nobj);
            op->target = p->nobj++;
        }
        else {
            op->target = t;
            op->value  = (int32_t)(next(&r) >> 33);
        }
    }
    return 0;
}

/* one round of fz_plan_snapshot: dataset late (band_late elements per rank) makes the last
 * rank late, dataset t (band elements per rank) is read and overwritten */
static int
snapshot_round(fz_plan_t *p, int late, uint64_t band_late, int t, uint64_t band, int round)
{
    int      last = p->ranks - 1;
    uint64_t n = band * (uint64_t)p->ranks, n_late = band_late * (uint64_t)p->ranks;
    fz_op_t *op = push(p, OP_WRITE, NULL); /* the last rank writes its band, collectively */
    if (!op)
        return -1;
    *op = (fz_op_t){.kind       = OP_WRITE,
                    .target     = t,
                    .coll       = 1,
                    .pattern    = PAT_BLOCKS,
                    .dim0       = n,
                    .skip       = ~(1u << (last % 32)),
                    .salt       = 2 * (uint64_t)round + 1,
                    .delay_rank = -1};
    /* one H5Dread_multi: the last rank reads its band of `late` as points, then its band
     * of t; the others one element of each. Selection I/O off: HDF5 builds the MPI
     * datatype of the points before it enters the driver, so the last rank enters late
     * (with selection I/O the driver gets the selection at once and walks it itself) */
    if (!(op = push(p, OP_READ, NULL)))
        return -1;
    *op = (fz_op_t){.kind       = OP_READ,
                    .target     = late,
                    .coll       = 1,
                    .pattern    = PAT_POINTS,
                    .shift      = last,
                    .block      = band_late,
                    .dim0       = n_late,
                    .delay_rank = -1,
                    .xfer       = XFER_SELECTION_OFF};
    if (!(op = push(p, OP_READ, NULL)))
        return -1;
    *op = (fz_op_t){.kind       = OP_READ,
                    .target     = t,
                    .coll       = 1,
                    .shift      = last,
                    .block      = band,
                    .dim0       = n,
                    .delay_rank = -1,
                    .xfer       = XFER_SELECTION_OFF,
                    .join       = 1};
    if (!(op = push(p, OP_WRITE, NULL))) /* at once rank 0 overwrites the last band of t, independently */
        return -1;
    *op = (fz_op_t){.kind       = OP_WRITE,
                    .target     = t,
                    .pattern    = PAT_BLOCKS,
                    .shift      = 1,
                    .dim0       = n,
                    .skip       = ~1u,
                    .salt       = 2 * (uint64_t)round + 2,
                    .delay_rank = -1};
    return push(p, OP_FLUSH, NULL) ? 0 : -1;
}

/* a contiguous 1-D dataset of n elements, every byte defined (fill value written at creation) */
static int
snapshot_dataset(fz_plan_t *p, const char *name, uint64_t n)
{
    fz_object_t *o = &p->obj[p->nobj];
    snprintf(o->name, sizeof o->name, "%s", name);
    o->is_dset = 1;
    o->nd      = 1;
    o->layout  = LAYOUT_CONTIGUOUS;
    o->dims[0] = o->maxdims[0] = o->cur0 = n;
    o->fill_time                         = FILL_ALLOC;
    o->fill_set                          = 1;
    o->fill                              = -1;
    o->last_owners                       = -1;
    fz_op_t *op                          = push(p, OP_DSET, NULL);
    if (!op)
        return -1;
    op->target = p->nobj++;
    return op->target;
}

int
fz_plan_snapshot(fz_plan_t *p, int ranks)
{
    uint64_t band_late = 700000, band = 64;
    plan_init(p, 0, ranks);
    p->grammar = 6; /* collective reads without a barrier first, joined in one call */
    int late   = snapshot_dataset(p, "/late", band_late * (uint64_t)ranks);
    int t      = late < 0 ? -1 : snapshot_dataset(p, "/read", band * (uint64_t)ranks);
    for (int round = 0; t >= 0 && round < 8; round++)
        if (snapshot_round(p, late, band_late, t, band, round) < 0)
            return -1;
    return t < 0 ? -1 : 0;
}

void
fz_plan_free(fz_plan_t *p)
{
    free(p->ops);
    memset(p, 0, sizeof *p);
}
