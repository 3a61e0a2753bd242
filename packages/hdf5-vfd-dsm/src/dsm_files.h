/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_files.h - creating a file anew, never through a link someone else planted.
 *
 * vfd_create_new (vfd_path.h) as a stdio stream: for the temporary files that are then
 * renamed into place (the contact file, the server's dumps).
 */
#ifndef DSM_FILES_H
#define DSM_FILES_H

#include "vfd_path.h"

#include <stdio.h>
#include <unistd.h>

/* a new file at path opened for writing ("w"), or NULL with errno set */
static inline FILE *
dsm_create_new(const char *path)
{
    int   fd = vfd_create_new(path);
    FILE *fp = fd < 0 ? NULL : fdopen(fd, "w");
    if (fd >= 0 && !fp)
        close(fd);
    return fp;
}

#endif
