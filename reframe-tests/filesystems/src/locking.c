/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * locking DIR - what file locking does in DIR, and what HDF5 does with it (a finding for
 * the site, never a failure): flock() and fcntl() locks taken and excluding another
 * process (a child), then HDF5 creating and reopening a file with its file locking as
 * the environment sets it (HDF5_USE_FILE_LOCKING or the library's default), off, and
 * best effort (H5Pset_file_locking(fapl, 1, 1): locks taken, their absence ignored).
 * Each finding a line "NAME: yes|no[ (reason)]"; then "advice: ...". Exit 0 unless DIR
 * cannot be used at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static int
flock_taken(int fd)
{
    return flock(fd, LOCK_EX | LOCK_NB) == 0;
}

static int
fcntl_taken(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    return fcntl(fd, F_SETLK, &fl) == 0;
}

/* does a child process fail to take the lock the parent holds? */
static int
excludes(const char *path, int (*take)(int))
{
    pid_t child = fork();
    if (child == 0) {
        int fd = open(path, O_RDWR);
        _exit(fd >= 0 && take(fd) ? 1 : 0); /* 1: the child got the lock too */
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void
probe_lock(const char *name, const char *path, int (*take)(int), int *works)
{
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || !take(fd)) {
        printf("%s: no (%s)\n", name, strerror(errno));
        *works = 0;
    }
    else {
        *works = 1;
        printf("%s: yes\n%s-excludes: %s\n", name, name,
               excludes(path, take) ? "yes" : "no (another process took it too)");
    }
    if (fd >= 0)
        close(fd);
}

/* create, close and reopen read-only a file with the access list's locking */
static int
hdf5_roundtrip(const char *path, hid_t fapl)
{
    int ok = 0;
    H5E_BEGIN_TRY
    {
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        if (f >= 0 && H5Fclose(f) >= 0) {
            f  = H5Fopen(path, H5F_ACC_RDONLY, fapl);
            ok = f >= 0 && H5Fclose(f) >= 0;
        }
    }
    H5E_END_TRY
    return ok;
}

static int
hdf5_probe(const char *name, const char *path, int set, hbool_t use, hbool_t ignore)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (set)
        H5Pset_file_locking(fapl, use, ignore);
    int ok = hdf5_roundtrip(path, fapl);
    printf("%s: %s\n", name, ok ? "yes" : "no (H5Fcreate or H5Fopen failed)");
    H5Pclose(fapl);
    return ok;
}

int
main(int argc, char **argv)
{
    char path[4096], h5[4096];
    if (argc != 2) {
        fprintf(stderr, "usage: locking DIR\n");
        return 2;
    }
    snprintf(path, sizeof path, "%s/locking.probe", argv[1]);
    snprintf(h5, sizeof h5, "%s/locking.h5", argv[1]);
    int flock_ok = 0, fcntl_ok = 0;
    probe_lock("flock", path, flock_taken, &flock_ok);
    probe_lock("fcntl", path, fcntl_taken, &fcntl_ok);
    const char *env = getenv("HDF5_USE_FILE_LOCKING");
    printf("hdf5-use-file-locking: %s\n", env ? env : "(not set)");
    int as_set = hdf5_probe("hdf5-as-set", h5, 0, 0, 0);
    hdf5_probe("hdf5-off", h5, 1, 0, 0);
    hdf5_probe("hdf5-best-effort", h5, 1, 1, 1);
    unlink(path);
    unlink(h5);
    if (flock_ok && as_set)
        printf("advice: nothing to set: file locks work here and HDF5 uses them\n");
    else if (as_set)
        printf("advice: HDF5 opens files here without working locks (its default ignores their "
               "absence); a writer and readers are then not kept apart: HDF5_USE_FILE_LOCKING=BEST_EFFORT "
               "says so explicitly\n");
    else
        printf("advice: set HDF5_USE_FILE_LOCKING=BEST_EFFORT (or FALSE) for this file system: HDF5 "
               "cannot open files here with its locking as set\n");
    return 0;
}
