/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_datatype.h - HDF5's collective transfers described by MPI datatypes, carried out
 * as byte runs by a driver that is not MPI-IO.
 *
 * When a collective raw-data transfer does not go through selection I/O (the
 * application switched it off, or HDF5 did for that call: type conversion, chunks that
 * fit the chunk cache, H5Dwrite_multi over several layouts, ...), HDF5 calls a driver's
 * read or write once with a buffer datatype and a file datatype kept in its API context
 * (H5CX_get_mpi_coll_datatypes), exactly as its MPI-IO driver then calls
 * MPI_File_set_view(fh, addr, MPI_BYTE, ftype) and MPI_File_write_at_all(fh, 0, buf,
 * size, btype): `size` counts elements of btype, not bytes. This module flattens both
 * types (MPI_Type_get_envelope/contents, recursively) into byte runs and walks them
 * together, handing each contiguous piece (file offset, memory address, length) to the
 * driver, in the order MPI-IO's typemaps give (the file type tiled by its extent, as a
 * file view is).
 */
#ifndef VFD_DATATYPE_H
#define VFD_DATATYPE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define VFD_ERR_SIZE 256

/* one contiguous piece: at file offset `file` (bytes from the view's start), memory `mem` */
typedef int (*vfd_piece_fn)(void *ctx, uint64_t file, void *mem, size_t len);

/* Is this pair of types the plain case (both MPI_BYTE: `size` counts bytes)? */
int vfd_types_are_bytes(MPI_Datatype btype, MPI_Datatype ftype);

/*
 * Carry out a transfer of `count` elements of btype at buf against the file view
 * (disp, ftype): piece() is called for every contiguous piece, file offsets being
 * disp + the offsets of ftype's typemap. Returns 0, or -1 with a message in err (a
 * datatype it cannot flatten, a negative file offset, out of memory, or what piece()
 * returned negative for, with err left to piece when it wrote one).
 */
int vfd_typed_transfer(MPI_Datatype btype, size_t count, void *buf, MPI_Datatype ftype, uint64_t disp,
                       vfd_piece_fn piece, void *ctx, char err[VFD_ERR_SIZE]);

#endif
