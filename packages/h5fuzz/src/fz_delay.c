/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_delay.c - libh5fuzz_delay.so: slowed ranks, for any MPI program (LD_PRELOAD per rank).
 *
 *   H5FUZZ_DELAY=MAX_US[:PERCENT[:SEED]]  mpiexec -n 4 env LD_PRELOAD=.../libh5fuzz_delay.so app
 *
 * Before PERCENT % (default 20) of the calls that move file bytes (pwrite, pwrite64,
 * MPI_Put, MPI_Get, MPI_File_write_at, MPI_File_write_at_all) the calling rank sleeps
 * a random time of up to MAX_US microseconds. The sequence depends on SEED and the rank
 * (PMI_RANK, OMPI_COMM_WORLD_RANK), so a failing run can be replayed. Without
 * H5FUZZ_DELAY every call passes straight through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int      configured = 0;
static unsigned max_us = 0, percent = 20;
static uint64_t state = 0;

static uint64_t
mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void
configure(void)
{
    const char *spec = getenv("H5FUZZ_DELAY"), *rank = getenv("PMI_RANK");
    char       *end;
    configured = 1;
    if (!rank)
        rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!spec || !*spec)
        return;
    max_us = (unsigned)strtoul(spec, &end, 10);
    if (*end == ':')
        percent = (unsigned)strtoul(end + 1, &end, 10);
    uint64_t seed = *end == ':' ? strtoull(end + 1, NULL, 10) : 1;
    state         = mix(seed) ^ mix(rank ? strtoull(rank, NULL, 10) + 1 : (uint64_t)getpid());
}

static void
maybe_sleep(void)
{
    if (!configured)
        configure();
    if (!max_us)
        return;
    uint64_t r = mix(state++);
    if (r % 100 < percent) {
        struct timespec ts = {0, (long)((r >> 8) % max_us) * 1000};
        nanosleep(&ts, NULL);
    }
}

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

static ssize_t
delayed_pwrite(const char *name, pwrite_fn *next, int fd, const void *buf, size_t n, off_t off)
{
    if (!*next)
        *(void **)next = dlsym(RTLD_NEXT, name);
    maybe_sleep();
    return (*next)(fd, buf, n, off);
}

ssize_t
pwrite(int fd, const void *buf, size_t n, off_t off)
{
    static pwrite_fn next;
    return delayed_pwrite("pwrite", &next, fd, buf, n, off);
}

ssize_t
pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    static pwrite_fn next;
    return delayed_pwrite("pwrite64", &next, fd, buf, n, off);
}

int
MPI_Put(const void *oaddr, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp, int tcount,
        MPI_Datatype ttype, MPI_Win win)
{
    maybe_sleep();
    return PMPI_Put(oaddr, ocount, otype, target, tdisp, tcount, ttype, win);
}

int
MPI_Get(void *oaddr, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp, int tcount,
        MPI_Datatype ttype, MPI_Win win)
{
    maybe_sleep();
    return PMPI_Get(oaddr, ocount, otype, target, tdisp, tcount, ttype, win);
}

int
MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype type, MPI_Status *st)
{
    maybe_sleep();
    return PMPI_File_write_at(fh, off, buf, count, type, st);
}

int
MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype type,
                      MPI_Status *st)
{
    maybe_sleep();
    return PMPI_File_write_at_all(fh, off, buf, count, type, st);
}
