/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_files.h - creating a file anew, never through a link someone else planted.
 *
 * What is at the path (a stale file, a symbolic link pointing elsewhere) is removed,
 * not written through, and the file is created with O_CREAT|O_EXCL|O_NOFOLLOW: a link
 * planted between the two steps makes the creation fail (EEXIST) instead of clobbering
 * its target. Used for the temporary files that are then renamed into place (the
 * contact file, the server's dumps).
 */
#ifndef DSM_FILES_H
#define DSM_FILES_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* a new file at path opened for writing ("w"), or NULL with errno set */
static inline FILE *
dsm_create_new(const char *path)
{
    if (unlink(path) < 0 && errno != ENOENT)
        return NULL;
    int   fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *fp = fd < 0 ? NULL : fdopen(fd, "w");
    if (fd >= 0 && !fp)
        close(fd);
    return fp;
}

#endif
