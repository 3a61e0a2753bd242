/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* LD_PRELOAD: shared maps of the files under NOMMAP_DIR refused with ENODEV, as a FUSE
 * file system mounted with direct I/O refuses them (GlusterFS --direct-io-mode=enable,
 * ceph-fuse without its page cache); every other map (the MPI's shared memory among them)
 * is the C library's. UCX replaces mmap in the libraries it hooks: run with
 * UCX_MEM_MMAP_HOOK_MODE=none so that the calls come here. With NOMMAP_COUNT=FILE the
 * process's pread calls (each a round trip to the servers on such a file system) are
 * counted, and so are the refused maps: "<reads> <refused maps>" is appended to FILE at its
end (a line per process: a launcher's daemons write theirs). For nommap.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <string.h>
#include <unistd.h>

static long preads, refused;

static ssize_t
counted(int fd, void *buf, size_t n, off_t off, const char *name)
{
    __atomic_add_fetch(&preads, 1, __ATOMIC_RELAXED);
    ssize_t (*real)(int, void *, size_t, off_t) =
        (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, name);
    return real(fd, buf, n, off);
}

ssize_t
pread(int fd, void *buf, size_t n, off_t off)
{
    return counted(fd, buf, n, off, "pread");
}

ssize_t
pread64(int fd, void *buf, size_t n, off_t off)
{
    return counted(fd, buf, n, off, "pread64");
}

__attribute__((destructor)) static void
report(void)
{
    const char *path = getenv("NOMMAP_COUNT");
    FILE       *f    = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%ld %ld\n", preads, refused);
        fclose(f);
    }
}

/* is the file open at fd under NOMMAP_DIR? */
static int
under_dir(int fd)
{
    const char *dir = getenv("NOMMAP_DIR");
    char        link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (!dir || !*dir || n <= 0)
        return 0;
    path[n] = '\0';
    return strncmp(path, dir, strlen(dir)) == 0;
}

static void *
refuse_or_map(void *addr, size_t len, int prot, int flags, int fd, off_t off, const char *name)
{
    if (fd >= 0 && (flags & MAP_SHARED) && under_dir(fd)) {
        __atomic_add_fetch(&refused, 1, __ATOMIC_RELAXED);
        errno = ENODEV;
        return MAP_FAILED;
    }
    void *(*real)(void *, size_t, int, int, int, off_t) =
        (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, name);
    return real(addr, len, prot, flags, fd, off);
}

void *
mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return refuse_or_map(addr, len, prot, flags, fd, off, "mmap");
}

void *
mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return refuse_or_map(addr, len, prot, flags, fd, off, "mmap64");
}
