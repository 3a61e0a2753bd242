/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_selection.h - the walk over a selection transfer (HDF5's read_selection and
 * write_selection callbacks): each entry's file and memory selections turned into pieces
 * of contiguous bytes, as HDF5 itself turns them into a vector for a driver without
 * selection callbacks. With the callbacks a driver keeps the whole call in its hands
 * (collective or not, in HDF5's API context of the call), and HDF5 reports the transfer
 * as selection I/O (H5Pget_actual_selection_io_mode), as it does for its MPI-IO driver.
 */
#ifndef VFD_SELECTION_H
#define VFD_SELECTION_H

#include "vfd_driver.h"

/*
 * Each piece of a selection transfer, in selection order, until one fails (then -1):
 * for entry i, the bytes of file_spaces[i]'s selection (at offsets[i] in the file) and
 * mem_spaces[i]'s (in bufs[i]), elements of element_sizes[i] bytes, as (address,
 * length, memory) of the longest runs contiguous in both. HDF5's compact convention: an
 * element size of 0 or a NULL buffer ends its array, the entry before then holding for
 * the rest. The pieces are gathered first and handed to io as a vector: one by one
 * (vfd_each_entry), or with join (writes) pieces that continue one another in the file
 * as one (vfd_each_run: the rows of a chunk are one write).
 */
herr_t vfd_each_selection(vfd_entry_fn io, bool join, H5FD_t *file, H5FD_mem_t type, hid_t dxpl, size_t count,
                          const hid_t mem_spaces[], const hid_t file_spaces[], const haddr_t offsets[],
                          const size_t element_sizes[], void *bufs[]);

#endif
