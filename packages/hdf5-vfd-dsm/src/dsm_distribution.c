/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_distribution: address distributions of the DSM (see dsm_distribution.h). */
#include "dsm_distribution.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* a positive size with an optional k/m/g suffix (powers of 1024); 0 on bad text */
uint64_t
dsm_parse_size(const char *s, const char **end_out)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return 0;
    errno                = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return 0;
    uint64_t mult = 1;
    switch (*end) {
        case 'k':
        case 'K':
            mult = 1ULL << 10;
            end++;
            break;
        case 'm':
        case 'M':
            mult = 1ULL << 20;
            end++;
            break;
        case 'g':
        case 'G':
            mult = 1ULL << 30;
            end++;
            break;
        default:
            break;
    }
    if (v > UINT64_MAX / mult)
        return 0;
    *end_out = end;
    return (uint64_t)v * mult;
}

int
dsm_layout_parse(const char *text, dsm_kind_t *kind, uint64_t *block, uint64_t *seed, char *err, size_t len)
{
    static const char *expected =
        "expected linear, mask[:<file size>], block-cyclic:<size> or random-block:<size>[:seed]";
    *block = 0;
    *seed  = 0;
    if (!text)
        return fail(err, len, "no distribution given (%s)", expected);
    if (!strcmp(text, "linear")) {
        *kind = DSM_LINEAR;
        return 0;
    }
    if (!strcmp(text, "mask")) {
        *kind = DSM_MASK;
        return 0;
    }
    if (!strncmp(text, "mask:", 5)) { /* the size of the files the window is resized to, in *block */
        const char *end = NULL;
        *kind           = DSM_MASK;
        *block          = dsm_parse_size(text + 5, &end);
        if (!*block || *end)
            return fail(err, len, "bad file size in '%s' (e.g. mask:48m)", text);
        return 0;
    }
    const char *rest;
    if (!strncmp(text, "block-cyclic", 12)) {
        *kind = DSM_BLOCK_CYCLIC;
        rest  = text + 12;
    }
    else if (!strncmp(text, "random-block", 12)) {
        *kind = DSM_RANDOM_BLOCK;
        rest  = text + 12;
    }
    else {
        return fail(err, len, "unknown distribution '%s' (%s)", text, expected);
    }
    if (*rest != ':' || !rest[1])
        return fail(err, len, "'%s' needs a block size, e.g. %.12s:1m", text, text);
    const char *end = NULL;
    *block          = dsm_parse_size(rest + 1, &end);
    if (!*block || (*end && *end != ':'))
        return fail(err, len, "bad block size in '%s' (a positive number of bytes, suffixes k, m, g)", text);
    if (*end == ':') {
        if (*kind != DSM_RANDOM_BLOCK)
            return fail(err, len, "'%s': only random-block takes a seed", text);
        char *send;
        errno                = 0;
        unsigned long long s = strtoull(end + 1, &send, 10);
        if (errno || send == end + 1 || *send || end[1] == '-')
            return fail(err, len, "bad seed in '%s' (a non-negative integer)", text);
        *seed = s;
    }
    return 0;
}

/* splitmix64: a small, well-mixed generator; the same seed gives the same sequence */
static uint64_t
splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z          = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* the bytes of each server's buffer the layout uses (l->local; l->block for the block
 * distributions); 0, or -1 with err */
static int
local_share(dsm_layout_t *l, uint64_t buffer_len, uint64_t block, uint64_t file_size, uint64_t alignment,
            char *err, size_t len)
{
    int nservers = l->nservers;
    switch (l->kind) {
        case DSM_LINEAR:
            l->local = buffer_len;
            return 0;
        case DSM_MASK: {
            uint64_t a     = alignment ? alignment : 1;
            uint64_t share = file_size / (uint64_t)nservers + (file_size % (uint64_t)nservers != 0);
            share          = (share + a - 1) / a * a;
            if (share == 0)
                share = a;
            if (share > buffer_len)
                return fail(err, len,
                            "a file of %" PRIu64 " bytes does not fit the DSM: %d servers x %" PRIu64
                            " bytes (mask needs "
                            "%" PRIu64 " per server)",
                            file_size, nservers, buffer_len, share);
            l->local = share;
            return 0;
        }
        case DSM_BLOCK_CYCLIC:
        case DSM_RANDOM_BLOCK:
            if (block == 0)
                return fail(err, len, "the block size must be positive");
            if (block > buffer_len)
                return fail(err, len,
                            "block size %" PRIu64 " exceeds each server's buffer (%" PRIu64 " bytes)", block,
                            buffer_len);
            l->block = block;
            l->local = buffer_len / block * block; /* L rounded to a multiple of s */
            return 0;
        default:
            return fail(err, len, "unknown distribution kind %d", (int)l->kind);
    }
}

/* random-block: the blocks' permutation drawn from the seed, and its inverse; 0, or -1
 * with err */
static int
permute_blocks(dsm_layout_t *l, char *err, size_t len)
{
    if (l->nblocks > SIZE_MAX / (2 * sizeof *l->perm))
        return fail(err, len, "too many blocks (%" PRIu64 ") for a permutation in memory", l->nblocks);
    l->perm    = malloc(l->nblocks * sizeof *l->perm);
    l->inverse = malloc(l->nblocks * sizeof *l->inverse);
    if (!l->perm || !l->inverse) {
        dsm_layout_free(l);
        return fail(err, len, "no memory for the permutation of %" PRIu64 " blocks", l->nblocks);
    }
    for (uint64_t i = 0; i < l->nblocks; i++)
        l->perm[i] = i;
    uint64_t state = l->seed;
    for (uint64_t i = l->nblocks; i > 1; i--) { /* Fisher-Yates */
        uint64_t j = splitmix64(&state) % i, t = l->perm[i - 1];
        l->perm[i - 1] = l->perm[j];
        l->perm[j]     = t;
    }
    for (uint64_t i = 0; i < l->nblocks; i++)
        l->inverse[l->perm[i]] = i;
    return 0;
}

int
dsm_layout_init(dsm_layout_t *l, dsm_kind_t kind, int nservers, uint64_t buffer_len, uint64_t block,
                uint64_t seed, uint64_t file_size, uint64_t alignment, char *err, size_t len)
{
    memset(l, 0, sizeof *l);
    l->kind     = kind;
    l->nservers = nservers;
    l->seed     = seed;
    if (nservers < 1)
        return fail(err, len, "a DSM needs at least one server (got %d)", nservers);
    if (buffer_len == 0)
        return fail(err, len, "the servers' buffers are empty");
    if (buffer_len > UINT64_MAX / (uint64_t)nservers)
        return fail(err, len, "%d servers x %" PRIu64 " bytes overflow the address space", nservers,
                    buffer_len);
    if (local_share(l, buffer_len, block, file_size, alignment, err, len) < 0)
        return -1;
    l->total = l->local * (uint64_t)nservers;
    if (l->block)
        l->nblocks = l->total / l->block;
    return kind == DSM_RANDOM_BLOCK ? permute_blocks(l, err, len) : 0;
}

void
dsm_layout_free(dsm_layout_t *l)
{
    free(l->perm);
    free(l->inverse);
    l->perm = l->inverse = NULL;
}

void
dsm_map(const dsm_layout_t *l, uint64_t addr, int *server, uint64_t *offset, uint64_t *contiguous)
{
    if (l->kind == DSM_LINEAR || l->kind == DSM_MASK) {
        *server     = (int)(addr / l->local);
        *offset     = addr % l->local;
        *contiguous = l->local - *offset;
        return;
    }
    uint64_t b = addr / l->block, within = addr % l->block;
    if (l->kind == DSM_RANDOM_BLOCK)
        b = l->perm[b];
    *server     = (int)(b % (uint64_t)l->nservers);
    *offset     = b / (uint64_t)l->nservers * l->block + within;
    *contiguous = l->block - within;
}

uint64_t
dsm_unmap(const dsm_layout_t *l, int server, uint64_t offset)
{
    if (l->kind == DSM_LINEAR || l->kind == DSM_MASK)
        return (uint64_t)server * l->local + offset;
    uint64_t b = offset / l->block * (uint64_t)l->nservers + (uint64_t)server;
    if (l->kind == DSM_RANDOM_BLOCK)
        b = l->inverse[b];
    return b * l->block + offset % l->block;
}

void
dsm_layout_describe(const dsm_layout_t *l, char *buf, size_t len)
{
    switch (l->kind) {
        case DSM_LINEAR:
            snprintf(buf, len, "linear");
            break;
        case DSM_MASK:
            snprintf(buf, len, "mask:%" PRIu64, l->total);
            break;
        case DSM_BLOCK_CYCLIC:
            snprintf(buf, len, "block-cyclic:%" PRIu64, l->block);
            break;
        case DSM_RANDOM_BLOCK:
            snprintf(buf, len, "random-block:%" PRIu64 ":%" PRIu64, l->block, l->seed);
            break;
    }
}
