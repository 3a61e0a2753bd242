/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_files: creating output files without following planted links (see pw_files.h). */
#include "pw_files.h"
#include "vfd_path.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* what st is, for a file that was expected to be a regular one */
static const char *
file_kind(const struct stat *st)
{
    return S_ISDIR(st->st_mode)    ? "is a directory"
           : S_ISFIFO(st->st_mode) ? "is a FIFO, not a regular file"
           : S_ISSOCK(st->st_mode) ? "is a socket, not a regular file"
                                   : "is a device, not a regular file";
}

FILE *
pw_open_input(const char *path, const char *what, char *err, size_t len)
{
    struct stat st;
    /* O_NONBLOCK: a FIFO opens at once (no writer needed), to be refused below */
    int   fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f  = NULL;
    if (fd < 0 || fstat(fd, &st) < 0)
        snprintf(err, len, "%s: cannot open the %s: %s", path, what, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(err, len, "%s: cannot open the %s: %s", path, what, file_kind(&st));
    else if (!(f = fdopen(fd, "r")))
        snprintf(err, len, "%s: cannot open the %s: %s", path, what, strerror(errno));
    if (!f && fd >= 0)
        close(fd);
    return f;
}

int
pw_check_creatable(const char *path, char *err, size_t len)
{
    char        copy[4096];
    struct stat st;
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    if (!*path)
        snprintf(err, len, "an empty file name");
    else if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(err, len, "%s: is a directory", path);
    else if (access(dir, W_OK | X_OK) < 0)
        snprintf(err, len, "%s: cannot create a file in %s: %s", path, dir, strerror(errno));
    else
        return 0;
    return -1;
}

int
pw_check_not_a_link(const char *path, char *err, size_t len)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        snprintf(err, len, "%s: is a symbolic link: not written through (give the path of its target)", path);
        return -1;
    }
    return 0;
}

int
pw_create_new(const char *path, char *err, size_t len)
{
    int fd = vfd_create_new(path);
    if (fd < 0)
        snprintf(err, len, "%s: cannot create: %s%s", path, strerror(errno),
                 errno == EEXIST ? " (created by someone else meanwhile: not written through)" : "");
    return fd;
}

int
pw_write_replacing(const char *path, void (*write)(FILE *f, const void *arg), const void *arg, char *err,
                   size_t len)
{
    char tmp[4096 + 16];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int   fd = mkstemp(tmp); /* O_EXCL: a new file of ours */
    FILE *f  = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        snprintf(err, len, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd), unlink(tmp);
        return -1;
    }
    mode_t mask = umask(0); /* mkstemp makes it 0600: give it the mode a plain creation would */
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    write(f, arg);
    int failed = fflush(f) != 0 || ferror(f) || fsync(fd) != 0;
    failed |= fclose(f) != 0;
    if (failed || rename(tmp, path) < 0) {
        snprintf(err, len, "%s: %s", path, strerror(errno ? errno : EIO));
        unlink(tmp);
        return -1;
    }
    return 0;
}
