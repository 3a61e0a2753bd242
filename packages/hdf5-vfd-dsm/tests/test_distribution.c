/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* Property tests of the DSM address distributions (src/dsm_distribution.h): every mapping
 * is a bijection on [0, L) that round-trips through dsm_unmap, the contiguous runs it
 * reports stay on one server, block-cyclic follows the paper's formula, random-block is
 * reproducible from its seed, and bad input is refused with its reason. */
#include "dsm_distribution.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define EXPECT(cond, ...)                                                                                    \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            failures++;                                                                                      \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                             \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
        }                                                                                                    \
    } while (0)

/* every address once: in range, unique, round-trips, runs contiguous on one server */
static void
check_bijection(const dsm_layout_t *l, const char *what)
{
    unsigned char *seen = calloc(l->total ? l->total : 1, 1);
    for (uint64_t a = 0; a < l->total; a++) {
        int      s;
        uint64_t off, run;
        dsm_map(l, a, &s, &off, &run);
        if (s < 0 || s >= l->nservers || off >= l->local || run == 0 || off + run > l->local) {
            EXPECT(0, "%s: address %" PRIu64 " -> server %d offset %" PRIu64 " run %" PRIu64 " out of range",
                   what, a, s, off, run);
            break;
        }
        uint64_t slot = (uint64_t)s * l->local + off;
        if (seen[slot]) {
            EXPECT(0, "%s: two addresses map to server %d offset %" PRIu64, what, s, off);
            break;
        }
        seen[slot] = 1;
        if (dsm_unmap(l, s, off) != a) {
            EXPECT(0, "%s: unmap(map(%" PRIu64 ")) = %" PRIu64, what, a, dsm_unmap(l, s, off));
            break;
        }
        if (run > 1 && a + run - 1 < l->total) { /* the last byte of the run: same server, next offsets */
            int      s2;
            uint64_t off2, run2;
            dsm_map(l, a + run - 1, &s2, &off2, &run2);
            if (s2 != s || off2 != off + run - 1 || run2 != 1) {
                EXPECT(0, "%s: run of %" PRIu64 " from %" PRIu64 " is not contiguous on server %d", what, run,
                       a, s);
                break;
            }
        }
    }
    free(seen);
}

static void
bijections(void)
{
    const int      servers[] = {1, 2, 3, 5, 8};
    const uint64_t buffers[] = {1, 7, 64, 1000, 4096};
    const uint64_t blocks[]  = {1, 3, 16, 64};
    char           err[256], what[128];
    int            n = 0;
    for (size_t i = 0; i < sizeof servers / sizeof *servers; i++)
        for (size_t j = 0; j < sizeof buffers / sizeof *buffers; j++) {
            dsm_layout_t l;
            EXPECT(dsm_layout_init(&l, DSM_LINEAR, servers[i], buffers[j], 0, 0, 0, 0, err, sizeof err) == 0,
                   "%s", err);
            snprintf(what, sizeof what, "linear P=%d l=%" PRIu64, servers[i], buffers[j]);
            EXPECT(l.total == (uint64_t)servers[i] * buffers[j], "%s: L = %" PRIu64, what, l.total);
            check_bijection(&l, what);
            n++;
            /* mask: the window resized to a file of 2/3 of the buffers */
            uint64_t size = (uint64_t)servers[i] * buffers[j] * 2 / 3;
            if (dsm_layout_init(&l, DSM_MASK, servers[i], buffers[j], 0, 0, size, 1, err, sizeof err) == 0) {
                snprintf(what, sizeof what, "mask P=%d S=%" PRIu64, servers[i], size);
                EXPECT(l.total >= size && l.total - size <= (uint64_t)servers[i], "%s: L = %" PRIu64, what,
                       l.total);
                check_bijection(&l, what);
                n++;
            }
            for (size_t k = 0; k < sizeof blocks / sizeof *blocks; k++) {
                if (blocks[k] > buffers[j])
                    continue;
                for (int kind = DSM_BLOCK_CYCLIC; kind <= DSM_RANDOM_BLOCK; kind++) {
                    EXPECT(dsm_layout_init(&l, (dsm_kind_t)kind, servers[i], buffers[j], blocks[k], 42, 0, 0,
                                           err, sizeof err) == 0,
                           "%s", err);
                    dsm_layout_describe(&l, what, sizeof what);
                    snprintf(what + strlen(what), sizeof what - strlen(what), " P=%d l=%" PRIu64, servers[i],
                             buffers[j]);
                    EXPECT(l.local % blocks[k] == 0 && l.local + blocks[k] > buffers[j],
                           "%s: l rounded to %" PRIu64, what, l.local);
                    check_bijection(&l, what);
                    dsm_layout_free(&l);
                    n++;
                }
            }
        }
    printf("bijections: %d layouts checked address by address\n", n);
}

static void
paper_formula(void)
{
    /* block-cyclic, s = 4, P = 3: a -> (B mod P, B / P, a mod s) with B = a / s */
    dsm_layout_t l;
    char         err[256];
    EXPECT(dsm_layout_init(&l, DSM_BLOCK_CYCLIC, 3, 16, 4, 0, 0, 0, err, sizeof err) == 0, "%s", err);
    for (uint64_t a = 0; a < l.total; a++) {
        int      s;
        uint64_t off, run;
        dsm_map(&l, a, &s, &off, &run);
        uint64_t b = a / 4;
        EXPECT(s == (int)(b % 3) && off == (b / 3) * 4 + a % 4 && run == 4 - a % 4,
               "block-cyclic: %" PRIu64 " -> (%d, %" PRIu64 ")", a, s, off);
    }
    /* linear: a file of size S uses ceil(S / l) servers */
    EXPECT(dsm_layout_init(&l, DSM_LINEAR, 4, 100, 0, 0, 0, 0, err, sizeof err) == 0, "%s", err);
    int      s;
    uint64_t off, run;
    dsm_map(&l, 250, &s, &off, &run);
    EXPECT(s == 2 && off == 50 && run == 50, "linear: 250 -> (%d, %" PRIu64 ", run %" PRIu64 ")", s, off,
           run);
    printf("paper: block-cyclic and linear follow the formulas\n");
}

static void
reproducible(void)
{
    dsm_layout_t a, b, c;
    char         err[256];
    dsm_layout_init(&a, DSM_RANDOM_BLOCK, 4, 4096, 64, 7, 0, 0, err, sizeof err);
    dsm_layout_init(&b, DSM_RANDOM_BLOCK, 4, 4096, 64, 7, 0, 0, err, sizeof err);
    dsm_layout_init(&c, DSM_RANDOM_BLOCK, 4, 4096, 64, 8, 0, 0, err, sizeof err);
    EXPECT(!memcmp(a.perm, b.perm, a.nblocks * sizeof *a.perm),
           "random-block: the same seed gave two permutations");
    EXPECT(memcmp(a.perm, c.perm, a.nblocks * sizeof *a.perm),
           "random-block: seeds 7 and 8 gave one permutation");
    uint64_t fixed = 0;
    for (uint64_t i = 0; i < a.nblocks; i++)
        fixed += a.perm[i] == i;
    EXPECT(fixed < a.nblocks / 4, "random-block: %" PRIu64 " of %" PRIu64 " blocks unmoved", fixed,
           a.nblocks);
    dsm_layout_free(&a);
    dsm_layout_free(&b);
    dsm_layout_free(&c);
    printf("random-block: reproducible from its seed, different across seeds\n");
}

static void
parsing(void)
{
    struct {
        const char *text;
        int         ok;
        dsm_kind_t  kind;
        uint64_t    block, seed;
        const char *message;
    } cases[] = {
        {"linear", 1, DSM_LINEAR, 0, 0, NULL},
        {"mask", 1, DSM_MASK, 0, 0, NULL},
        {"mask:48m", 1, DSM_MASK, 48 << 20, 0, NULL},
        {"mask:", 0, 0, 0, 0, "bad file size in 'mask:' (e.g. mask:48m)"},
        {"mask:0", 0, 0, 0, 0, "bad file size in 'mask:0'"},
        {"block-cyclic:64k", 1, DSM_BLOCK_CYCLIC, 65536, 0, NULL},
        {"block-cyclic:4096", 1, DSM_BLOCK_CYCLIC, 4096, 0, NULL},
        {"random-block:1m", 1, DSM_RANDOM_BLOCK, 1 << 20, 0, NULL},
        {"random-block:1m:99", 1, DSM_RANDOM_BLOCK, 1 << 20, 99, NULL},
        {"cyclic", 0, 0, 0, 0,
         "unknown distribution 'cyclic' (expected linear, mask[:<file size>], block-cyclic:<size>"},
        {"block-cyclic", 0, 0, 0, 0, "'block-cyclic' needs a block size, e.g. block-cyclic:1m"},
        {"block-cyclic:", 0, 0, 0, 0, "needs a block size"},
        {"block-cyclic:0", 0, 0, 0, 0, "bad block size in 'block-cyclic:0'"},
        {"block-cyclic:12q", 0, 0, 0, 0, "bad block size in 'block-cyclic:12q'"},
        {"block-cyclic:4k:3", 0, 0, 0, 0, "only random-block takes a seed"},
        {"random-block:4k:x", 0, 0, 0, 0, "bad seed in 'random-block:4k:x'"},
        {"random-block:4k:-1", 0, 0, 0, 0, "bad seed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dsm_kind_t kind  = DSM_LINEAR;
        uint64_t   block = 0, seed = 0;
        char       err[256] = "";
        int        rc       = dsm_layout_parse(cases[i].text, &kind, &block, &seed, err, sizeof err);
        if (cases[i].ok)
            EXPECT(rc == 0 && kind == cases[i].kind && block == cases[i].block && seed == cases[i].seed,
                   "parse '%s': rc %d kind %d block %" PRIu64 " seed %" PRIu64 " (%s)", cases[i].text, rc,
                   kind, block, seed, err);
        else
            EXPECT(rc != 0 && strstr(err, cases[i].message), "parse '%s': expected \"%s\", got rc %d \"%s\"",
                   cases[i].text, cases[i].message, rc, err);
    }
    dsm_layout_t l;
    char         err[256];
    EXPECT(dsm_layout_init(&l, DSM_BLOCK_CYCLIC, 2, 100, 128, 0, 0, 0, err, sizeof err) != 0 &&
               strstr(err, "block size 128 exceeds each server's buffer (100 bytes)"),
           "big block: %s", err);
    EXPECT(dsm_layout_init(&l, DSM_MASK, 2, 100, 0, 0, 300, 1, err, sizeof err) != 0 &&
               strstr(err, "a file of 300 bytes does not fit the DSM: 2 servers x 100 bytes"),
           "mask: %s", err);
    EXPECT(dsm_layout_init(&l, DSM_LINEAR, 0, 100, 0, 0, 0, 0, err, sizeof err) != 0 &&
               strstr(err, "at least one server"),
           "no servers: %s", err);
    printf("parsing: %zu texts and 3 bad layouts\n", sizeof cases / sizeof *cases);
}

int
main(void)
{
    parsing();
    paper_formula();
    reproducible();
    bijections();
    if (failures) {
        printf("distribution: %d failure(s)\n", failures);
        return 1;
    }
    printf("distribution: ok\n");
    return 0;
}
