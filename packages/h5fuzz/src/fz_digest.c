/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
#include "fz_digest.h"

#include <string.h>

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME  1099511628211ULL

/* one value into the hash, as 8 little-endian bytes whatever its type */
static void
mix(uint64_t *h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        *h ^= (v >> (8 * i)) & 0xff;
        *h *= FNV_PRIME;
    }
}

static void
mix_object(uint64_t *h, const fz_object_t *o)
{
    size_t n = strnlen(o->name, sizeof o->name);
    mix(h, n);
    for (size_t i = 0; i < n; i++)
        mix(h, (unsigned char)o->name[i]);
    int64_t props[] = {o->is_dset,     o->parent, o->nd,    o->layout,  o->deflate,     o->fill_time,
                       o->fill_set,    o->fill,   o->ftype, o->shuffle, o->fletcher32,  o->cache,
                       o->dense_attrs, o->mtype,  o->fconv, o->nbit,    o->scaleoffset, o->deleted};
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        mix(h, (uint64_t)props[i]);
    for (int d = 0; d < o->nd && d < FZ_MAX_RANK; d++) {
        mix(h, o->dims[d]);
        mix(h, o->maxdims[d]);
        mix(h, o->chunk[d]);
    }
}

static void
mix_op(uint64_t *h, const fz_op_t *op)
{
    int64_t fields[] = {op->kind,           op->target,        op->coll, op->pattern,       op->shift,
                        (int64_t)op->block, (int64_t)op->dim0, op->skip, (int64_t)op->salt, op->value,
                        op->delay_rank,     op->delay_us,      op->xfer, op->barrier};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        mix(h, (uint64_t)fields[i]);
}

/* grammar 5's fields (not hashed before it, so the digests of earlier plans stand) */
static void
mix_sessions(uint64_t *h, const fz_plan_t *p)
{
    if (p->all_ranks) /* only when set: the digests of the plans before it stand */
        mix(h, 0xa11);
    mix(h, (uint64_t)p->ranks0);
    for (size_t i = 0; i < p->nops; i++)
        mix(h, (uint64_t)p->ops[i].ranks);
}

/* grammar 6's field */
static void
mix_joins(uint64_t *h, const fz_plan_t *p)
{
    for (size_t i = 0; i < p->nops; i++)
        mix(h, (uint64_t)p->ops[i].join);
}

uint64_t
fz_plan_digest(const fz_plan_t *p)
{
    uint64_t h      = FNV_OFFSET;
    int64_t  file[] = {p->ranks, p->sync_bytes, p->coll_md, p->grammar, p->align, p->latest, p->paged};
    for (size_t i = 0; i < sizeof file / sizeof file[0]; i++)
        mix(&h, (uint64_t)file[i]);
    mix(&h, (uint64_t)p->nobj);
    for (int k = 0; k < p->nobj; k++)
        mix_object(&h, &p->obj[k]);
    mix(&h, p->nops);
    for (size_t i = 0; i < p->nops; i++)
        mix_op(&h, &p->ops[i]);
    if (p->grammar >= 5)
        mix_sessions(&h, p);
    if (p->grammar >= 6)
        mix_joins(&h, p);
    return h;
}
