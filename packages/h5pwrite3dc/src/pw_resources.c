/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_resources: is there room for the run? (see pw_resources.h) */
#include "pw_resources.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* MemAvailable of /proc/meminfo in bytes, or the physical memory where there is none */
static double
available_memory(void)
{
    FILE  *f = fopen("/proc/meminfo", "r");
    char   line[256];
    double kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib >= 0 ? kib * 1024 : (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
}

int
pw_check_memory(const pw_options *o, int ranks_on_node, char *err, size_t len)
{
    double need = (double)pw_image_bytes(o) * (o->verify ? 2 : 1) * ranks_on_node, have = available_memory();
    if (need <= have)
        return 0;
    snprintf(
        err, len,
        "the images need %.2f GB of memory on this node (%d rank(s) x %s%.2f GB for one %lld x %lld image), "
        "%.2f GB are available: use a smaller --size or fewer ranks per node",
        need / 1e9, ranks_on_node, o->verify ? "2 x " : "", (double)pw_image_bytes(o) / 1e9, o->g_n, o->g_n,
        have / 1e9);
    return -1;
}

int
pw_check_disk(const pw_options *o, char *err, size_t len)
{
    if (!strcmp(o->driver, "dsm"))
        return 0;
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", o->file);
    const char    *dir = dirname(copy);
    struct statvfs st;
    if (statvfs(dir, &st) < 0)
        return 0; /* a missing directory: the file's creation says so, with the file's name */
    double need = (double)pw_total_bytes(o) * (o->limits ? 3 : 1),
           have = (double)st.f_bavail * (double)st.f_frsize;
    if (need <= have)
        return 0;
    snprintf(err, len,
             "%s: the run writes %.2f GB (%lld images of %lld bytes%s), %s has %.2f GB free: use fewer or "
             "smaller images%s",
             o->file, need / 1e9, o->nsets, pw_image_bytes(o),
             o->limits ? ", and as much again twice for the limit files" : "", dir, have / 1e9,
             o->limits ? " (or --no-limits)" : "");
    return -1;
}
