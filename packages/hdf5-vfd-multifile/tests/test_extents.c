/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_extents - the extent map against a byte-by-byte model: random records with
 * random keys, in random order, added one by one (mf_extents_insert), in batches
 * (mf_extents_build) or both mixed; every byte must end up naming the record with the
 * largest key that covers it, at the right source position.
 */
#include "mf_extents.h"

#include <stdio.h>
#include <stdlib.h>

#define SPACE   4096
#define ROUNDS  200
#define RECORDS 300

typedef struct {
    mf_key_t key;
    uint64_t pos; /* source position of byte 0 of the space for this record */
    int      set;
} cell_t;

/* how a round adds its records to the map */
typedef enum {
    ADD_INSERT, /* one by one */
    ADD_BUILD,  /* in one batch */
    ADD_MIXED   /* both, batches of up to 37 */
} add_t;

/* RECORDS random records into the map m (as how says) and into the byte model; 0, or
 * -1 when out of memory */
static int
add_records(mf_extents_t *m, cell_t *model, add_t how)
{
    static mf_extent_t batch[RECORDS];
    size_t             nbatch = 0;
    for (int r = 0; r < RECORDS; r++) {
        uint64_t addr = (uint64_t)(rand() % SPACE), len = 1 + (uint64_t)(rand() % 300);
        if (addr + len > SPACE)
            len = SPACE - addr;
        mf_key_t key = {(uint32_t)(rand() % 3), rand() % 1000, rand() % 4, (uint64_t)r};
        uint64_t pos = (uint64_t)(rand() % 100000);
        int      rc  = 0;
        if (how == ADD_INSERT || (how == ADD_MIXED && rand() % 2))
            rc = mf_extents_insert(m, addr, len, pos, &key);
        else
            batch[nbatch++] = (mf_extent_t){addr, len, pos, key};
        if (rc == 0 && nbatch > 0 && ((how == ADD_MIXED && rand() % 37 == 0) || r == RECORDS - 1)) {
            rc     = mf_extents_build(m, batch, nbatch);
            nbatch = 0;
        }
        if (rc < 0)
            return -1;
        for (uint64_t b = addr; b < addr + len; b++)
            if (!model[b].set || mf_key_cmp(&model[b].key, &key) < 0) {
                model[b].key = key;
                model[b].pos = pos + (b - addr);
                model[b].set = 1;
            }
    }
    return 0;
}

/* extent e of the map against the model (prev_end: where the extent before it ended); 0 or 1 (said) */
static int
check_extent(const mf_extents_t *m, size_t i, const cell_t *model, uint64_t prev_end, int round)
{
    const mf_extent_t *e = &m->v[i];
    if (e->len == 0 || e->addr < prev_end) {
        fprintf(stderr, "round %d: extent %zu overlaps or is empty\n", round, i);
        return 1;
    }
    if (i > 0 && e->addr == prev_end && mf_key_cmp(&e->key, &m->v[i - 1].key) == 0 &&
        e->pos == m->v[i - 1].pos + m->v[i - 1].len) {
        fprintf(stderr, "round %d: extent %zu continues the one before and was not joined\n", round, i);
        return 1;
    }
    for (uint64_t b = prev_end; b < e->addr; b++)
        if (model[b].set) {
            fprintf(stderr, "round %d: byte %llu missing from the map\n", round, (unsigned long long)b);
            return 1;
        }
    for (uint64_t b = e->addr; b < e->addr + e->len; b++)
        if (!model[b].set || mf_key_cmp(&model[b].key, &e->key) != 0 ||
            model[b].pos != e->pos + (b - e->addr)) {
            fprintf(stderr, "round %d: byte %llu has the wrong source\n", round, (unsigned long long)b);
            return 1;
        }
    return 0;
}

/* the whole map against the model; 0 or 1 (said) */
static int
check_map(const mf_extents_t *m, const cell_t *model, int round)
{
    uint64_t prev_end = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (check_extent(m, i, model, prev_end, round))
            return 1;
        prev_end = m->v[i].addr + m->v[i].len;
    }
    for (uint64_t b = prev_end; b < SPACE; b++)
        if (model[b].set) {
            fprintf(stderr, "round %d: byte %llu missing at the end\n", round, (unsigned long long)b);
            return 1;
        }
    if (mf_extents_find(m, 0) != 0 && m->n) {
        fprintf(stderr, "find(0) is wrong\n");
        return 1;
    }
    return 0;
}

int
main(void)
{
    srand(12345);
    for (int round = 0; round < ROUNDS; round++) {
        mf_extents_t  m;
        static cell_t model[SPACE];
        mf_extents_init(&m);
        for (int i = 0; i < SPACE; i++)
            model[i].set = 0;
        if (add_records(&m, model, (add_t)(round % 3)) < 0) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        if (check_map(&m, model, round))
            return 1;
        mf_extents_free(&m);
    }
    printf("extent map: %d rounds of %d random records (inserted, built, mixed) agree with the byte model\n",
           ROUNDS, RECORDS);
    return 0;
}
