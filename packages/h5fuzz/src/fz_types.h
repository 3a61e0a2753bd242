/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_types.h - the HDF5 datatypes of a plan's datasets: the type in memory of every
 * read and write (its bytes: fz_element_size, fz_element_bytes) and the type in the
 * file, the same or one that needs a conversion (enum fz_mem_type, fz_object_t.fconv).
 */
#ifndef FZ_TYPES_H
#define FZ_TYPES_H

#include "fz_plan.h"

#include <hdf5.h>

/* new datatypes, each closed by the caller with H5Tclose; negative on failure */
hid_t fz_mem_type(const fz_object_t *o);
hid_t fz_file_type(const fz_object_t *o);

#endif
