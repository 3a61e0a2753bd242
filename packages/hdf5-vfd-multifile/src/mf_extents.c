/*
 * mf_extents.c - the extent map of mf_extents.h.
 */
#include "mf_extents.h"

#include <stdlib.h>
#include <string.h>

int mf_key_cmp(const mf_key_t *a, const mf_key_t *b)
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

void mf_extents_init(mf_extents_t *m) { memset(m, 0, sizeof *m); }

void mf_extents_free(mf_extents_t *m)
{
    free(m->v);
    mf_extents_init(m);
}

size_t mf_extents_find(const mf_extents_t *m, uint64_t addr)
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

uint64_t mf_extents_end(const mf_extents_t *m)
{
    for (size_t i = m->n; i > 0; i--)
        if (m->v[i - 1].key.rank != MF_HOLE_RANK)
            return m->v[i - 1].addr + m->v[i - 1].len;
    return 0;
}

static int reserve(mf_extents_t *m, size_t extra)
{
    if (m->n + extra <= m->cap)
        return 0;
    size_t       cap = m->cap ? m->cap : 64;
    while (cap < m->n + extra)
        cap *= 2;
    mf_extent_t *v = realloc(m->v, cap * sizeof *v);
    if (!v)
        return -1;
    m->v   = v;
    m->cap = cap;
    return 0;
}

static void set_ext(mf_extent_t *e, uint64_t addr, uint64_t len, uint64_t pos, const mf_key_t *key)
{
    e->addr = addr;
    e->len  = len;
    e->pos  = pos;
    e->key  = *key;
}

/* append to out, merging with the previous piece when it continues the same source */
static void push(mf_extent_t *out, size_t *n, uint64_t addr, uint64_t len, uint64_t pos, const mf_key_t *key)
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

int mf_extents_insert(mf_extents_t *m, uint64_t addr, uint64_t len, uint64_t pos, const mf_key_t *key)
{
    if (len == 0)
        return 0;
    uint64_t end   = addr + len;
    size_t   first = mf_extents_find(m, addr);
    size_t   last  = first; /* one past the last extent overlapping [addr, end) */
    while (last < m->n && m->v[last].addr < end)
        last++;
    size_t       noverlap = last - first;
    /* worst case: every overlapping extent and every gap between them yields a piece, plus the new one */
    mf_extent_t *tmp      = malloc((2 * noverlap + 3) * sizeof *tmp);
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
