/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_io.h - one dataset's part of a transfer: a rank's selections in the file and in
 * memory, the elements' bytes in the memory type, the transfer list of an operation,
 * and what a read gave against the model. fz_exec.c runs the transfers, one dataset at
 * a time (H5Dwrite, H5Dread) or several in one call (H5Dwrite_multi, H5Dread_multi).
 */
#ifndef FZ_IO_H
#define FZ_IO_H

#include "fz_plan.h"

#include <hdf5.h>

/* a dataset's part of one transfer (every handle -1 when not open) */
typedef struct {
    hid_t    d, fs, ms, t; /* the dataset, file and memory selections, memory type */
    int      own_d;        /* d is closed with the part */
    uint8_t *v;            /* the elements in selection order */
    uint64_t first, n;     /* reads: the first element (row-major) and how many */
} fz_part_t;

/* the dataset's dimensions with dim0 rows, and a dataspace of them (and of its maxima) */
void  fz_dims(const fz_object_t *o, uint64_t dim0, hsize_t *dims);
hid_t fz_space(const fz_object_t *o, uint64_t dim0, int with_max);
/* the dataset opened with its chunk cache (enum fz_cache) */
hid_t fz_open_dataset(const fz_object_t *o, hid_t file);
/* a transfer list: collective or not, with the operation's variations (enum fz_xfer) */
hid_t fz_transfer_list(const fz_op_t *op);

void fz_part_init(fz_part_t *w);
/* this rank's part of a write: the dataset opened, the elements it owns and their
 * values; 0, or -1 (the dataset could not be opened, or no memory) */
int fz_part_write(const fz_plan_t *p, const fz_op_t *op, hid_t file, int rank, fz_part_t *w);
/* a read of rows first..first+count of the open dataset d (elements of 1-D ones; d
 * stays open), selected as a hyperslab or (points) element by element; 0 or -1 */
int fz_part_read(const fz_object_t *o, const fz_mobj_t *mo, hid_t d, uint64_t first, uint64_t count,
                 int points, fz_part_t *w);
/* H5Dwrite or H5Dread of the part alone */
herr_t fz_part_transfer(const fz_part_t *w, int write, hid_t dxpl);
/* a read part against the model: the elements that differ (the first three printed);
 * undefined elements are not compared, only counted in *odd when not zero */
long fz_part_compare(const fz_object_t *o, const fz_mobj_t *mo, const fz_part_t *w, int rank,
                     const char *when, uint64_t *odd);
void fz_part_close(fz_part_t *w);

#endif
