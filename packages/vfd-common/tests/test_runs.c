/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_runs - vfd_each_run against writing the entries one by one (vfd_each_entry): for
 * random vectors (entries that continue one another, gaps, overlaps, memory type changes,
 * HDF5's compact convention of a 0 size and H5FD_MEM_NOLIST), the file image is the same,
 * entries that continue one another are one write up to VFD_RUN_MAX bytes, and an entry
 * larger than VFD_RUN_MAX stays a write of its own (with a continuing entry after it).
 */
#include "vfd_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPAN (24u << 20) /* bytes of the file image: entries up to three times VFD_RUN_MAX */
#define MAXN 64

static unsigned char *image[2];
static unsigned       calls[2], largest[2];
static int            failures;

static herr_t
put(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    int which = (int)(intptr_t)file;
    (void)type, (void)dxpl;
    if (addr + size > SPAN)
        return -1;
    memcpy(image[which] + addr, buf, size);
    calls[which]++;
    largest[which] = size > largest[which] ? (unsigned)size : largest[which];
    return 0;
}

static uint64_t state = 88172645463325252ULL;
static uint64_t
rnd(uint64_t n)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state % n;
}

static void
expect(int ok, const char *what, int round)
{
    if (!ok && failures++ < 10)
        printf("test_runs: round %d: %s\n", round, what);
}

/* one random vector: both ways, the same image; runs no longer than VFD_RUN_MAX unless alone */
static void
one_round(int round, unsigned char *mem)
{
    H5FD_mem_t  types[MAXN];
    haddr_t     addrs[MAXN];
    size_t      sizes[MAXN];
    const void *bufs[MAXN];
    uint32_t    n = 1 + (uint32_t)rnd(MAXN), joins = 0;
    haddr_t     at  = rnd(1 << 20);
    size_t      big = round % 7 == 0 ? VFD_RUN_MAX + 1 + rnd(4096) : 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t size = i == 0 && big ? big : 1 + rnd(round % 3 ? 512 : 1 << 20);
        int    how  = (int)rnd(10); /* 0: a gap, 1: an overlap, 2: another type, else continue */
        if (i > 0 && how == 0)
            at += 1 + rnd(100);
        if (i > 0 && how == 1)
            at -= rnd(at < 64 ? at : 64);
        types[i] = i > 0 && how == 2 ? H5FD_MEM_SUPER : H5FD_MEM_DRAW;
        addrs[i] = at, sizes[i] = size, bufs[i] = mem + rnd(SPAN - size);
        at += size;
        if (at + (2u << 20) > SPAN)
            n = i + 1;
    }
    if (round % 5 == 0 && n > 3) { /* HDF5's compact convention: the last size and type hold */
        sizes[2] = 1 + sizes[2] % 4096;
        for (uint32_t i = 3; i < n; i++)
            sizes[i] = 0, types[i] = H5FD_MEM_NOLIST, addrs[i] = addrs[i - 1] + sizes[2];
        types[2] = types[1];
        addrs[2] = addrs[1] + sizes[1];
    }
    for (uint32_t i = 1; i < n; i++) /* a pair that continues, of one type, small enough */
        joins += addrs[i] == addrs[i - 1] + (sizes[i - 1] ? sizes[i - 1] : sizes[2]) &&
                 (types[i] == types[i - 1] || types[i] == H5FD_MEM_NOLIST) &&
                 sizes[i - 1] < VFD_RUN_MAX / 4 && (sizes[i] ? sizes[i] : sizes[2]) < VFD_RUN_MAX / 4;
    for (int w = 0; w < 2; w++)
        memset(image[w], 0, SPAN), calls[w] = largest[w] = 0;
    herr_t a = vfd_each_entry(put, (H5FD_t *)(intptr_t)0, H5P_DEFAULT, n, types, addrs, sizes, (void **)bufs);
    herr_t b = vfd_each_run(put, (H5FD_t *)(intptr_t)1, H5P_DEFAULT, n, types, addrs, sizes, bufs);
    expect(a == 0 && b == 0, "a write failed", round);
    expect(memcmp(image[0], image[1], SPAN) == 0, "the images differ", round);
    expect(calls[1] <= calls[0], "more writes than entries", round);
    expect(largest[1] <= (big > VFD_RUN_MAX ? big : VFD_RUN_MAX), "a run larger than the stage", round);
    if (joins > 0)
        expect(calls[1] < calls[0], "no entries were joined", round);
}

int
main(void)
{
    unsigned char *mem = malloc(SPAN);
    image[0] = malloc(SPAN), image[1] = malloc(SPAN);
    if (!mem || !image[0] || !image[1])
        return 1;
    for (size_t i = 0; i < SPAN; i++)
        mem[i] = (unsigned char)rnd(251);
    /* the rows of a chunk: 512 rows of 4 KiB, one after the other, one write */
    H5FD_mem_t  types[512];
    haddr_t     addrs[512];
    size_t      sizes[512];
    const void *bufs[512];
    for (int i = 0; i < 512; i++)
        types[i] = H5FD_MEM_DRAW, addrs[i] = 4096 + (haddr_t)i * 4096, sizes[i] = 4096,
        bufs[i] = mem + i * 8192;
    calls[1] = 0;
    expect(vfd_each_run(put, (H5FD_t *)(intptr_t)1, H5P_DEFAULT, 512, types, addrs, sizes, bufs) == 0 &&
               calls[1] == 1,
           "512 rows of a chunk are not one write", -1);
    for (int round = 0; round < 300; round++)
        one_round(round, mem);
    free(mem), free(image[0]), free(image[1]);
    printf(failures ? "test_runs: %d failure(s)\n" : "test_runs: ok\n", failures);
    return failures != 0;
}
