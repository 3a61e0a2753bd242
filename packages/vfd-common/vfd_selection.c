/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
#include "vfd_selection.h"

#include <stdint.h>
#include <stdlib.h>

#define SEQ_LEN 64 /* sequences fetched from a selection at a time */

/* a selection's sequences of bytes, fetched SEQ_LEN at a time */
typedef struct {
    hid_t   iter;
    size_t  n, i; /* fetched, and the one in use */
    hsize_t off[SEQ_LEN];
    size_t  len[SEQ_LEN];
} seqs_t;

/* the pieces of a selection transfer as a vector (address, length, memory) */
typedef struct {
    size_t   n, cap;
    haddr_t *addrs;
    size_t  *sizes;
    void   **bufs;
} pieces_t;

static int
seqs_open(seqs_t *s, hid_t space, size_t esize)
{
    s->n = s->i = 0;
    s->iter     = H5Ssel_iter_create(space, esize, 0); /* selection order, as HDF5's own walk */
    return s->iter < 0 ? -1 : 0;
}

/* the current sequence, fetching more when every fetched one is used up; 0 or -1 */
static int
seqs_ready(seqs_t *s)
{
    size_t bytes;
    if (s->i < s->n)
        return 0;
    if (H5Ssel_iter_get_seq_list(s->iter, SEQ_LEN, SIZE_MAX, &s->n, &bytes, s->off, s->len) < 0 || s->n == 0)
        return -1;
    s->i = 0;
    return 0;
}

static void
seqs_advance(seqs_t *s, size_t bytes)
{
    s->off[s->i] += bytes;
    if ((s->len[s->i] -= bytes) == 0)
        s->i++;
}

static int
pieces_add(pieces_t *p, haddr_t addr, size_t size, void *buf)
{
    if (p->n == p->cap) {
        size_t   cap = p->cap ? 2 * p->cap : 64;
        haddr_t *a   = realloc(p->addrs, cap * sizeof *a);
        size_t  *s   = a ? realloc(p->sizes, cap * sizeof *s) : NULL;
        void   **b   = s ? realloc(p->bufs, cap * sizeof *b) : NULL;
        p->addrs     = a ? a : p->addrs;
        p->sizes     = s ? s : p->sizes;
        p->bufs      = b ? b : p->bufs;
        if (!b)
            return -1;
        p->cap = cap;
    }
    p->addrs[p->n] = addr;
    p->sizes[p->n] = size;
    p->bufs[p->n]  = buf;
    p->n++;
    return 0;
}

/* one entry's pieces: file selection fs at base, memory selection ms in buf */
static int
entry_pieces(pieces_t *p, hid_t ms, hid_t fs, haddr_t base, size_t esize, void *buf)
{
    hssize_t npoints = H5Sget_select_npoints(fs);
    seqs_t   f, m;
    int      fo = seqs_open(&f, fs, esize), mo = seqs_open(&m, ms, esize);
    int      ret  = npoints < 0 || fo < 0 || mo < 0 ? -1 : 0;
    uint64_t left = npoints < 0 ? 0 : (uint64_t)npoints * esize;
    while (ret == 0 && left > 0) {
        if (seqs_ready(&f) < 0 || seqs_ready(&m) < 0) {
            ret = -1;
            break;
        }
        size_t n = f.len[f.i] < m.len[m.i] ? f.len[f.i] : m.len[m.i];
        ret      = pieces_add(p, base + f.off[f.i], n, (unsigned char *)buf + m.off[m.i]);
        seqs_advance(&f, n);
        seqs_advance(&m, n);
        left -= n;
    }
    if (fo == 0)
        H5Ssel_iter_close(f.iter);
    if (mo == 0)
        H5Ssel_iter_close(m.iter);
    return ret;
}

herr_t
vfd_each_selection(vfd_entry_fn io, bool join, H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count,
                   const hid_t mem_spaces[], const hid_t file_spaces[], const haddr_t offsets[],
                   const size_t element_sizes[], void *bufs[])
{
    pieces_t   p          = {0, 0, NULL, NULL, NULL};
    size_t     esize      = 0;
    void      *buf        = NULL;
    bool       fixed_size = false, fixed_buf = false;
    herr_t     ret      = 0;
    H5FD_mem_t types[2] = {type, H5FD_MEM_NOLIST}; /* one type for every piece */
    for (size_t i = 0; i < count && ret >= 0; i++) {
        fixed_size = fixed_size || (i > 0 && element_sizes[i] == 0);
        fixed_buf  = fixed_buf || (i > 0 && bufs[i] == NULL);
        esize      = fixed_size ? esize : element_sizes[i];
        buf        = fixed_buf ? buf : bufs[i];
        ret        = entry_pieces(&p, mem_spaces[i], file_spaces[i], offsets[i], esize, buf);
    }
    if (ret >= 0 && p.n > UINT32_MAX)
        ret = -1;
    if (ret >= 0 && p.n > 0)
        ret =
            join ? vfd_each_run(io, file, dxpl, (uint32_t)p.n, types, p.addrs, p.sizes, (const void **)p.bufs)
                 : vfd_each_entry(io, file, dxpl, (uint32_t)p.n, types, p.addrs, p.sizes, p.bufs);
    free(p.addrs);
    free(p.sizes);
    free(p.bufs);
    return ret;
}
