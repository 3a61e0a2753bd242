/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_extents.h - which write holds the latest bytes of each part of the logical file.
 *
 * A sorted array of non-overlapping extents [addr, addr+len), each naming its source:
 * a rank, a position in that rank's data file and the record it came from, plus the
 * record's ordering key. Inserting a record replaces exactly the parts whose current
 * key is older, so records may arrive in any order (own writes as they happen, other
 * ranks' records when their index files are read). A truncate is a "hole" source.
 * Memory: one 64-byte extent per distinct piece (at most 2 per inserted record).
 *
 * Two ways to fill it: mf_extents_insert() one record at a time (a live writer's own
 * writes, which mostly land at the end: cheap; in the middle it moves the tail), and
 * mf_extents_build() for a whole batch at once in O(n log n) time (loading a directory,
 * merging many records read from other ranks).
 */
#ifndef MF_EXTENTS_H
#define MF_EXTENTS_H

#include "mf_format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t epoch;
    int64_t  stamp;
    int32_t  rank;
    uint64_t seq; /* record number within its rank */
} mf_key_t;

#define MF_HOLE_RANK (-1)

typedef struct {
    uint64_t addr, len;
    uint64_t pos; /* position in the source rank's data file of byte `addr` */
    mf_key_t key; /* key.rank: source rank, or MF_HOLE_RANK for zeros */
} mf_extent_t;

typedef struct {
    mf_extent_t *v;
    size_t       n, cap;
} mf_extents_t;

int  mf_key_cmp(const mf_key_t *a, const mf_key_t *b);
void mf_extents_init(mf_extents_t *m);
void mf_extents_free(mf_extents_t *m);
/* insert [addr, addr+len) from source pos with key; returns 0 or -1 (out of memory) */
int mf_extents_insert(mf_extents_t *m, uint64_t addr, uint64_t len, uint64_t pos, const mf_key_t *key);
/*
 * Add n pieces (addr, len, pos, key; len 0 ignored) to the map in one pass: the map's
 * extents and the pieces are swept in address order with a heap of the ones covering
 * the current address, the largest key winning. O((m + n) log (m + n)) time; at its peak
 * up to 232 bytes per extent and piece (a copy, two boundaries, a heap slot, and room
 * for twice as many results). Returns 0 or -1 (out of memory; map unchanged).
 */
int mf_extents_build(mf_extents_t *m, const mf_extent_t *pieces, size_t n);
/* pieces gathered for mf_extents_build */
typedef struct {
    mf_extent_t *v;
    size_t       n, cap;
} mf_pieces_t;

/* add record number seq of rank as a piece: its bytes, or for a truncate record a hole
 * from its address to the end of the address space; 0 or -1 (out of memory) */
int  mf_pieces_add(mf_pieces_t *p, const mf_record_t *rec, int32_t rank, uint64_t seq);
void mf_pieces_free(mf_pieces_t *p);

/* index of the first extent ending after addr (n if none) */
size_t mf_extents_find(const mf_extents_t *m, uint64_t addr);
/* end of the last non-hole extent (the logical end of file), 0 if none */
uint64_t mf_extents_end(const mf_extents_t *m);

#endif
