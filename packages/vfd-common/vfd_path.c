/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* vfd_path.c - paths and their directories on disk (see vfd_path.h) */
#include "vfd_path.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void
vfd_split_path(const char *path, char copy[PATH_MAX], const char **parent, const char **base)
{
    snprintf(copy, PATH_MAX, "%s", path);
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/') /* trailing slashes */
        copy[--n] = '\0';
    char *slash = strrchr(copy, '/');
    *base       = slash ? slash + 1 : copy;
    if (slash)
        *slash = '\0';
    *parent = slash ? (slash == copy ? "/" : copy) : ".";
}

int
vfd_sync_parent(const char *path)
{
    char        copy[PATH_MAX];
    const char *parent, *base;
    vfd_split_path(path, copy, &parent, &base);
    int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}
