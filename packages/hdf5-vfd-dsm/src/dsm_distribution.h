/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* dsm_distribution: how the addresses of an in-memory HDF5 file map onto the memory of
 * the DSM's server ranks (Soumagne, Biddiscombe, Esnard, EuroMPI 2011).
 *
 * A DSM of total length L spreads over P servers holding l bytes each (L = l x P).
 * A file address a in [0, L) maps to (server, offset in that server's buffer):
 *   linear              server = a / l, offset = a mod l: contiguous, server 0 first;
 *                       a file of size S uses ceil(S / l) servers
 *   mask                linear over a window resized to the file: l' = ceil(S / P)
 *                       rounded up to the alignment, so S ~ L' and every server holds a share
 *   block-cyclic:<s>    B = a / s; server = B mod P, offset = (B / P) x s + a mod s;
 *                       l is rounded down to a multiple of s (L = P x l)
 *   random-block:<s>[:seed]  as block-cyclic on B' = perm(B), perm a fixed permutation
 *                       of the L / s blocks drawn from a seeded generator (reproducible:
 *                       every rank that builds the layout gets the same permutation)
 * Every mapping is a bijection on [0, L); dsm_unmap is its inverse. dsm_map also says how
 * many bytes from a stay contiguous on that server, so transfers split at block ends.
 * No MPI, no HDF5: pure arithmetic, tested on its own (tests/test_distribution.c).
 */
#ifndef DSM_DISTRIBUTION_H
#define DSM_DISTRIBUTION_H

#include <stddef.h>
#include <stdint.h>

typedef enum { DSM_LINEAR, DSM_MASK, DSM_BLOCK_CYCLIC, DSM_RANDOM_BLOCK } dsm_kind_t;

typedef struct {
    dsm_kind_t kind;
    int        nservers; /* P */
    uint64_t   local;    /* l: bytes used in each server's buffer */
    uint64_t   total;    /* L = P x l */
    uint64_t   block;    /* s (block kinds); 0 otherwise */
    uint64_t   seed;     /* random-block */
    uint64_t   nblocks;  /* L / s (block kinds) */
    uint64_t  *perm;     /* random-block: block -> shuffled block, and its inverse */
    uint64_t  *inverse;
} dsm_layout_t;

/* A positive size with an optional k/m/g suffix (powers of 1024); 0 on bad text, else
 * *end points after it. */
uint64_t dsm_parse_size(const char *s, const char **end);

/* Parse "linear", "mask", "mask:<file size>", "block-cyclic:<size>", "random-block:<size>[:seed]"
 * (sizes with k/m/g suffixes, powers of 1024; mask's file size comes back in *block, 0
 * when not given). 0, or -1 with err saying why. */
int dsm_layout_parse(const char *text, dsm_kind_t *kind, uint64_t *block, uint64_t *seed, char *err,
                     size_t errlen);

/* Build a layout over nservers buffers of buffer_len bytes each. For mask, file_size is
 * the size of the file to hold (the window is resized to it; alignment rounds each
 * server's share up); other kinds ignore file_size and alignment. 0, or -1 with err. */
int dsm_layout_init(dsm_layout_t *layout, dsm_kind_t kind, int nservers, uint64_t buffer_len, uint64_t block,
                    uint64_t seed, uint64_t file_size, uint64_t alignment, char *err, size_t errlen);

void dsm_layout_free(dsm_layout_t *layout);

/* The server and offset of address addr (< total), and how many bytes from addr stay
 * contiguous there (to the end of its block, or of the server's share). */
void dsm_map(const dsm_layout_t *layout, uint64_t addr, int *server, uint64_t *offset, uint64_t *contiguous);

/* The address at (server, offset): the inverse of dsm_map. */
uint64_t dsm_unmap(const dsm_layout_t *layout, int server, uint64_t offset);

/* "linear", "mask", "block-cyclic:65536", "random-block:65536:42": what the layout is. */
void dsm_layout_describe(const dsm_layout_t *layout, char *buf, size_t len);

#endif
