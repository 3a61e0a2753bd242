/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_path.h - paths and their directories on disk, for the drivers and their tools
 * (no HDF5, no MPI).
 */
#ifndef VFD_PATH_H
#define VFD_PATH_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

/* path's parent directory and last component, both in copy: trailing slashes are
 * dropped; the parent of a name without a slash is ".", of "/name" "/" */
void vfd_split_path(const char *path, char copy[PATH_MAX], const char **parent, const char **base);

/* fsync the directory that holds path (trailing slashes ignored), so that a new entry
 * or a rename there persists; 0 or -1 (errno) */
int vfd_sync_parent(const char *path);

/* a new file at path, for writing: what is there (a stale file, a planted symbolic link)
 * is removed, never written through, and the file created with O_EXCL|O_NOFOLLOW (a link
 * planted between the two steps makes it fail with EEXIST instead of clobbering its
 * target); fd or -1 (errno set) */
static inline int
vfd_create_new(const char *path)
{
    if (unlink(path) < 0 && errno != ENOENT)
        return -1;
    return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

#endif
