/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_path.h - paths and their directories on disk, for the drivers and their tools
 * (no HDF5, no MPI).
 */
#ifndef VFD_PATH_H
#define VFD_PATH_H

#include <limits.h>

/* path's parent directory and last component, both in copy: trailing slashes are
 * dropped; the parent of a name without a slash is ".", of "/name" "/" */
void vfd_split_path(const char *path, char copy[PATH_MAX], const char **parent, const char **base);

/* fsync the directory that holds path (trailing slashes ignored), so that a new entry
 * or a rename there persists; 0 or -1 (errno) */
int vfd_sync_parent(const char *path);

#endif
