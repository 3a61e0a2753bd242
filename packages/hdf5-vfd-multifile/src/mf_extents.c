/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_extents.c - the extent map of mf_extents.h.
 */
#include "mf_extents.h"

#include <stdlib.h>
#include <string.h>

int
mf_key_cmp(const mf_key_t *a, const mf_key_t *b)
{
    if (a->epoch != b->epoch)
        return a->epoch < b->epoch ? -1 : 1;
    if (a->stamp != b->stamp)
        return a->stamp < b->stamp ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

void
mf_extents_init(mf_extents_t *m)
{
    memset(m, 0, sizeof *m);
}

void
mf_extents_free(mf_extents_t *m)
{
    free(m->v);
    mf_extents_init(m);
}

size_t
mf_extents_find(const mf_extents_t *m, uint64_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].addr + m->v[mid].len <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t
mf_extents_end(const mf_extents_t *m)
{
    for (size_t i = m->n; i > 0; i--)
        if (m->v[i - 1].key.rank != MF_HOLE_RANK)
            return m->v[i - 1].addr + m->v[i - 1].len;
    return 0;
}

static int
reserve(mf_extents_t *m, size_t extra)
{
    if (m->n + extra <= m->cap)
        return 0;
    size_t cap = m->cap ? m->cap : 64;
    while (cap < m->n + extra)
        cap *= 2;
    mf_extent_t *v = realloc(m->v, cap * sizeof *v);
    if (!v)
        return -1;
    m->v   = v;
    m->cap = cap;
    return 0;
}

static void
set_ext(mf_extent_t *e, uint64_t addr, uint64_t len, uint64_t pos, const mf_key_t *key)
{
    e->addr = addr;
    e->len  = len;
    e->pos  = pos;
    e->key  = *key;
}

/* append to out, merging with the previous piece when it continues the same source */
static void
push(mf_extent_t *out, size_t *n, uint64_t addr, uint64_t len, uint64_t pos, const mf_key_t *key)
{
    if (len == 0)
        return;
    if (*n > 0) {
        mf_extent_t *p = &out[*n - 1];
        if (p->addr + p->len == addr && mf_key_cmp(&p->key, key) == 0 &&
            (key->rank == MF_HOLE_RANK || p->pos + p->len == pos)) {
            p->len += len;
            return;
        }
    }
    set_ext(&out[(*n)++], addr, len, pos, key);
}

int
mf_extents_insert(mf_extents_t *m, uint64_t addr, uint64_t len, uint64_t pos, const mf_key_t *key)
{
    if (len == 0)
        return 0;
    uint64_t end   = addr + len;
    size_t   first = mf_extents_find(m, addr);
    size_t   last  = first; /* one past the last extent overlapping [addr, end) */
    while (last < m->n && m->v[last].addr < end)
        last++;
    size_t noverlap = last - first;
    /* worst case: every overlapping extent and every gap between them yields a piece, plus the new one */
    mf_extent_t *tmp = malloc((2 * noverlap + 3) * sizeof *tmp);
    if (!tmp)
        return -1;
    size_t   nt  = 0;
    uint64_t cur = addr;
    for (size_t i = first; i < last; i++) {
        mf_extent_t *e = &m->v[i];
        if (e->addr < addr) /* left part of e, outside the new record */
            push(tmp, &nt, e->addr, addr - e->addr, e->pos, &e->key);
        uint64_t s = e->addr > addr ? e->addr : addr;
        uint64_t t = e->addr + e->len < end ? e->addr + e->len : end;
        if (cur < s) /* gap before e: the new record fills it */
            push(tmp, &nt, cur, s - cur, pos + (cur - addr), key);
        if (mf_key_cmp(&e->key, key) < 0)
            push(tmp, &nt, s, t - s, pos + (s - addr), key);
        else
            push(tmp, &nt, s, t - s, e->pos + (s - e->addr), &e->key);
        cur = t;
        if (e->addr + e->len > end) /* right part of e, outside the new record */
            push(tmp, &nt, end, e->addr + e->len - end, e->pos + (end - e->addr), &e->key);
    }
    if (cur < end)
        push(tmp, &nt, cur, end - cur, pos + (cur - addr), key);
    if (nt > noverlap && reserve(m, nt - noverlap) < 0) {
        free(tmp);
        return -1;
    }
    memmove(&m->v[first + nt], &m->v[last], (m->n - last) * sizeof *m->v);
    memcpy(&m->v[first], tmp, nt * sizeof *tmp);
    m->n = m->n - noverlap + nt;
    free(tmp);
    return 0;
}

/* ---------------------------------------------------------------- batch build */

typedef struct {
    uint64_t at;    /* address of the boundary */
    size_t   piece; /* index into the combined pieces; the boundary is its start or end */
} boundary_t;

static int
boundary_cmp(const void *a, const void *b)
{
    const boundary_t *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

typedef struct {
    const mf_extent_t *p; /* all pieces */
    size_t            *v; /* heap of piece indices, largest key on top */
    size_t             n;
} heap_t;

static int
heap_less(const heap_t *h, size_t i, size_t j)
{
    return mf_key_cmp(&h->p[h->v[i]].key, &h->p[h->v[j]].key) < 0;
}

static void
heap_swap(heap_t *h, size_t i, size_t j)
{
    size_t t = h->v[i];
    h->v[i]  = h->v[j];
    h->v[j]  = t;
}

static void
heap_push(heap_t *h, size_t piece)
{
    size_t i = h->n++;
    h->v[i]  = piece;
    while (i > 0 && heap_less(h, (i - 1) / 2, i)) {
        heap_swap(h, (i - 1) / 2, i);
        i = (i - 1) / 2;
    }
}

static void
heap_pop(heap_t *h)
{
    size_t i = 0;
    h->v[0]  = h->v[--h->n];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, big = i;
        if (l < h->n && heap_less(h, big, l))
            big = l;
        if (r < h->n && heap_less(h, big, r))
            big = r;
        if (big == i)
            break;
        heap_swap(h, i, big);
        i = big;
    }
}

/* sweep the boundaries: between two consecutive boundary addresses the top of the heap
 * (after dropping pieces that ended) owns the bytes */
static size_t
sweep(const mf_extent_t *all, const boundary_t *b, size_t nb, heap_t *h, mf_extent_t *out)
{
    size_t nout = 0;
    for (size_t i = 0; i < nb;) {
        uint64_t at = b[i].at;
        for (; i < nb && b[i].at == at; i++)
            if (all[b[i].piece].addr == at) /* a start (an end is dropped lazily below) */
                heap_push(h, b[i].piece);
        while (h->n > 0 && all[h->v[0]].addr + all[h->v[0]].len <= at)
            heap_pop(h);
        if (h->n == 0 || i == nb)
            continue;
        const mf_extent_t *w = &all[h->v[0]];
        push(out, &nout, at, b[i].at - at, w->pos + (at - w->addr), &w->key);
    }
    return nout;
}

int
mf_extents_build(mf_extents_t *m, const mf_extent_t *pieces, size_t n)
{
    size_t       total = m->n + n, nb = 0;
    mf_extent_t *all = malloc((total ? total : 1) * sizeof *all);
    boundary_t  *b   = malloc((2 * total + 1) * sizeof *b);
    heap_t       h   = {all, malloc((total ? total : 1) * sizeof(size_t)), 0};
    /* the result has at most 2 * total - 1 extents (one per interval between boundaries) */
    mf_extent_t *out = malloc((2 * total + 1) * sizeof *out);
    if (!all || !b || !h.v || !out) {
        free(all), free(b), free(h.v), free(out);
        return -1;
    }
    if (m->n)
        memcpy(all, m->v, m->n * sizeof *all);
    size_t k = m->n;
    for (size_t i = 0; i < n; i++)
        if (pieces[i].len > 0)
            all[k++] = pieces[i];
    for (size_t i = 0; i < k; i++) {
        b[nb++] = (boundary_t){all[i].addr, i};
        b[nb++] = (boundary_t){all[i].addr + all[i].len, i};
    }
    qsort(b, nb, sizeof *b, boundary_cmp);
    size_t nout = sweep(all, b, nb, &h, out);
    free(all), free(b), free(h.v), free(m->v);
    mf_extent_t *shrunk = realloc(out, (nout ? nout : 1) * sizeof *out);
    m->v                = shrunk ? shrunk : out;
    m->n                = nout;
    m->cap              = shrunk ? (nout ? nout : 1) : 2 * total + 1;
    return 0;
}

/* ---------------------------------------------------------------- pieces of records */

int
mf_pieces_add(mf_pieces_t *p, const mf_record_t *rec, int32_t rank, uint64_t seq)
{
    if (p->n == p->cap) {
        size_t       cap = p->cap ? p->cap + p->cap / 2 : 256;
        mf_extent_t *v   = realloc(p->v, cap * sizeof *v);
        if (!v)
            return -1;
        p->v   = v;
        p->cap = cap;
    }
    mf_key_t key = {rec->epoch, rec->stamp, rank, seq};
    if (rec->flags & MF_REC_TRUNCATE) {
        key.rank     = MF_HOLE_RANK;
        p->v[p->n++] = (mf_extent_t){rec->addr, UINT64_MAX / 2 - rec->addr, 0, key};
    }
    else
        p->v[p->n++] = (mf_extent_t){rec->addr, rec->len, rec->pos, key};
    return 0;
}

void
mf_pieces_free(mf_pieces_t *p)
{
    free(p->v);
    p->v = NULL;
    p->n = p->cap = 0;
}
