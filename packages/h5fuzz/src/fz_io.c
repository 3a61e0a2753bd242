/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_io.c - one dataset's part of a transfer (see fz_io.h).
 */
#include "fz_io.h"
#include "fz_types.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the dataset's dimensions with dim0 rows (o->nd of them) */
void
fz_dims(const fz_object_t *o, uint64_t dim0, hsize_t *dims)
{
    for (int k = 0; k < o->nd; k++)
        dims[k] = k ? o->dims[k] : dim0;
}

hid_t
fz_space(const fz_object_t *o, uint64_t dim0, int with_max)
{
    hsize_t dims[FZ_MAX_RANK], max[FZ_MAX_RANK];
    fz_dims(o, dim0, dims);
    for (int k = 0; k < o->nd; k++)
        max[k] = k ? o->maxdims[k] : o->maxdims[0] ? o->maxdims[0] : H5S_UNLIMITED;
    return H5Screate_simple(o->nd, dims, with_max ? max : NULL);
}

/* open a dataset with its chunk cache (enum fz_cache) */
hid_t
fz_open_dataset(const fz_object_t *o, hid_t file)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    if (o->cache == CACHE_NONE)
        H5Pset_chunk_cache(dapl, H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 0, 1.0);
    else if (o->cache == CACHE_LARGE) /* every chunk fits: HDF5 turns selection I/O off for reads */
        H5Pset_chunk_cache(dapl, 10007, 64u << 20, 1.0);
    hid_t d = H5Dopen2(file, o->name, dapl);
    H5Pclose(dapl);
    return d;
}

/* a transfer list: collective or not, with the operation's variations (enum fz_xfer) */
hid_t
fz_transfer_list(const fz_op_t *op)
{
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, op->coll ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    if (op->xfer & XFER_SELECTION_OFF)
        H5Pset_selection_io(dxpl, H5D_SELECTION_IO_MODE_OFF);
    if (op->coll && (op->xfer & XFER_INDIVIDUAL))
        H5Pset_dxpl_mpio_collective_opt(dxpl, H5FD_MPIO_INDIVIDUAL_IO);
    if (op->coll && (op->xfer & (XFER_CHUNK_ONE | XFER_CHUNK_MULTI)))
        H5Pset_dxpl_mpio_chunk_opt(dxpl, op->xfer & XFER_CHUNK_ONE ? H5FD_MPIO_CHUNK_ONE_IO
                                                                   : H5FD_MPIO_CHUNK_MULTI_IO);
    return dxpl;
}

/* element i's coordinates (row-major) */
static void
coords_of(const fz_object_t *o, uint64_t i, hsize_t *at)
{
    for (int k = o->nd - 1; k > 0; k--) {
        at[k] = i % o->dims[k];
        i /= o->dims[k];
    }
    at[0] = i;
}

/* this rank's part of a write: the file selection and the elements' bytes in selection
 * order; runs of the rank's elements within one line (the innermost dimension) are
 * hyperslabs, points are points */
static hid_t
write_selection(const fz_plan_t *p, const fz_object_t *o, const fz_op_t *op, int rank, uint8_t **vals,
                hsize_t *count)
{
    hid_t    fs = fz_space(o, op->dim0, 0);
    uint64_t n = fz_elements(o, op->dim0), line = o->nd > 1 ? fz_line(o) : n;
    size_t   es  = fz_element_size(o);
    int      nd  = o->nd;
    uint8_t *v   = malloc((n ? n : 1) * es);
    hsize_t *pts = op->pattern == PAT_POINTS ? malloc((n ? n : 1) * (size_t)nd * sizeof *pts) : NULL;
    hsize_t  k   = 0;
    H5Sselect_none(fs);
    for (uint64_t i = 0; i < n;) {
        int own = op->pattern == PAT_ALL || fz_owner(p, o, op, i) == rank;
        if (!own) {
            i++;
            continue;
        }
        uint64_t j = i + 1; /* a run of this rank's elements within one line */
        while (op->pattern != PAT_POINTS && op->pattern != PAT_ALL && j < n && j % line != 0 &&
               fz_owner(p, o, op, j) == rank)
            j++;
        if (op->pattern == PAT_ALL)
            j = n;
        if (op->pattern == PAT_POINTS)
            coords_of(o, i, pts + (size_t)k * (size_t)nd);
        else if (op->pattern != PAT_ALL) {
            hsize_t start[FZ_MAX_RANK], cnt[FZ_MAX_RANK];
            coords_of(o, i, start);
            for (int d = 0; d < nd; d++)
                cnt[d] = d == nd - 1 ? j - i : 1;
            H5Sselect_hyperslab(fs, H5S_SELECT_OR, start, NULL, cnt, NULL);
        }
        for (uint64_t e = i; e < j; e++)
            fz_element_bytes(o, fz_value(op, e), v + (k++) * es);
        i = j;
    }
    if (op->pattern == PAT_ALL)
        H5Sselect_all(fs);
    else if (op->pattern == PAT_POINTS && k)
        H5Sselect_elements(fs, H5S_SELECT_SET, (size_t)k, pts);
    free(pts);
    *vals  = v;
    *count = k;
    return fs;
}

/* an element's bytes as text: an integer (1, 2, 4 or 8 bytes), else hex */
static const char *
element_text(const uint8_t *e, size_t esize, char *out, size_t len)
{
    int8_t  i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    switch (esize) {
        case 1:
            memcpy(&i8, e, 1);
            snprintf(out, len, "%d", i8);
            return out;
        case 2:
            memcpy(&i16, e, 2);
            snprintf(out, len, "%d", i16);
            return out;
        case 4:
            memcpy(&i32, e, 4);
            snprintf(out, len, "%" PRId32, i32);
            return out;
        case 8:
            memcpy(&i64, e, 8);
            snprintf(out, len, "%" PRId64, i64);
            return out;
        default:
            break;
    }
    size_t k = 0;
    for (size_t b = 0; b < esize && k + 3 < len; b++)
        k += (size_t)snprintf(out + k, len - k, "%02x", e[b]);
    return out;
}

static int
all_zero(const uint8_t *e, size_t esize)
{
    for (size_t b = 0; b < esize; b++)
        if (e[b])
            return 0;
    return 1;
}

void
fz_part_close(fz_part_t *w)
{
    if (w->ms >= 0)
        H5Sclose(w->ms);
    if (w->fs >= 0)
        H5Sclose(w->fs);
    if (w->t >= 0)
        H5Tclose(w->t);
    if (w->own_d && w->d >= 0)
        H5Dclose(w->d);
    free(w->v);
    fz_part_init(w);
}

void
fz_part_init(fz_part_t *w)
{
    memset(w, 0, sizeof *w);
    w->d = w->fs = w->ms = w->t = -1;
}

int
fz_part_write(const fz_plan_t *p, const fz_op_t *op, hid_t file, int rank, fz_part_t *w)
{
    const fz_object_t *o = &p->obj[op->target];
    hsize_t            k = 0;
    fz_part_init(w);
    w->d     = fz_open_dataset(o, file);
    w->own_d = 1;
    if (w->d < 0)
        return -1;
    w->t         = fz_mem_type(o);
    w->fs        = write_selection(p, o, op, rank, &w->v, &k);
    hsize_t mdim = k ? k : 1;
    w->ms        = H5Screate_simple(1, &mdim, NULL);
    if (!k)
        H5Sselect_none(w->ms);
    return w->t < 0 || !w->v ? -1 : 0;
}

/* elements first..first+n (row-major) of a dataset of dims, selected one by one; 0 or -1 */
static int
select_points(hid_t fs, int nd, const uint64_t *dims, uint64_t first, uint64_t n)
{
    hsize_t *pts = malloc((size_t)n * (size_t)nd * sizeof *pts);
    if (!pts)
        return -1;
    for (uint64_t e = 0; e < n; e++)
        for (uint64_t k = (uint64_t)nd, at = first + e; k-- > 0; at /= dims[k])
            pts[e * (uint64_t)nd + k] = at % dims[k];
    herr_t rc = H5Sselect_elements(fs, H5S_SELECT_SET, (size_t)n, pts);
    free(pts);
    return rc < 0 ? -1 : 0;
}

int
fz_part_read(const fz_object_t *o, const fz_mobj_t *mo, hid_t d, uint64_t first, uint64_t count, int points,
             fz_part_t *w)
{
    uint64_t row                = 1;
    hsize_t  start[FZ_MAX_RANK] = {first}, cnt[FZ_MAX_RANK] = {count};
    for (int k = 1; k < mo->nd; k++) {
        row *= mo->dims[k];
        cnt[k] = mo->dims[k];
    }
    fz_part_init(w);
    w->d         = d;
    w->first     = first * row;
    w->n         = count * row;
    w->v         = malloc((w->n ? w->n : 1) * mo->esize);
    w->t         = fz_mem_type(o);
    w->fs        = H5Dget_space(d);
    hsize_t mdim = w->n ? w->n : 1;
    w->ms        = H5Screate_simple(1, &mdim, NULL);
    if (w->n && points) {
        if (select_points(w->fs, mo->nd, mo->dims, w->first, w->n) < 0)
            return -1;
    }
    else if (w->n)
        H5Sselect_hyperslab(w->fs, H5S_SELECT_SET, start, NULL, cnt, NULL);
    else { /* a collective read takes every rank, with nothing to read too */
        H5Sselect_none(w->fs);
        H5Sselect_none(w->ms);
    }
    return w->t < 0 || w->fs < 0 || !w->v ? -1 : 0;
}

herr_t
fz_part_transfer(const fz_part_t *w, int write, hid_t dxpl)
{
    return write ? H5Dwrite(w->d, w->t, w->ms, w->fs, dxpl, w->v)
                 : H5Dread(w->d, w->t, w->ms, w->fs, dxpl, w->v);
}

long
fz_part_compare(const fz_object_t *o, const fz_mobj_t *mo, const fz_part_t *w, int rank, const char *when,
                uint64_t *odd)
{
    size_t es  = mo->esize;
    long   bad = 0;
    for (uint64_t e = 0; e < w->n; e++) {
        uint64_t       i   = w->first + e;
        const uint8_t *got = w->v + e * es, *want = mo->v + i * es;
        if (mo->state[i] == FZ_UNDEFINED) {
            if (odd && !all_zero(got, es))
                ++*odd;
        }
        else if (memcmp(got, want, es) && bad++ < 3) {
            char g[64], x[64];
            fprintf(stderr, "h5fuzz: rank %d: %s %s element %" PRIu64 ": read %s, expected %s (%s)\n", rank,
                    when, o->name, i, element_text(got, es, g, sizeof g), element_text(want, es, x, sizeof x),
                    mo->state[i] == FZ_FILLED ? "the fill value" : "written");
        }
    }
    return bad;
}
