/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tail - a live reader never misses a record's growth that finished before it
 * looked, although the record is rewritten in place while it reads.
 *
 * A writer thread keeps extending the last index record (as the driver extends a run),
 * the record straddling a 4 KiB page boundary so that a read during a rewrite can come
 * back torn; the main thread polls the index as a live reader does (mf_tail_poll, not
 * strict). Before each poll it notes the length the writer has finished writing; the
 * poll must deliver at least that length. Exit 0 and "tail: ok" when no poll missed.
 */
#include "mf_index.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define POLLS  200000
#define BEFORE 84 /* records before the growing one: it starts at 32 + 84 * 48 = 4064 */

static int              idx_fd;
static _Atomic uint64_t done_len;
static _Atomic int      stop;
static uint64_t         seen;

static void
put(const mf_record_t *r, uint64_t at)
{
    unsigned char b[MF_RECORD_SIZE];
    mf_record_encode(r, b);
    if (mf_pwrite_all(idx_fd, b, sizeof b, at) < 0) {
        perror("pwrite");
        exit(1);
    }
}

static void *
writer(void *arg)
{
    mf_record_t r = {1000, 1, 0, 42, 0, 1, 0, 0}; /* the last record as main wrote it */
    (void)arg;
    while (!stop) {
        r.len++;
        put(&r, MF_INDEX_HEADER_SIZE + BEFORE * MF_RECORD_SIZE);
        atomic_store(&done_len, r.len);
    }
    return NULL;
}

static int
grown(const mf_record_t *r, uint64_t seq, void *arg)
{
    (void)arg;
    if (seq == BEFORE && r->len > seen)
        seen = r->len;
    return 0;
}

int
main(void)
{
    char              dir[] = "/tmp/mf-tail.XXXXXX", p[64];
    unsigned char     hb[MF_INDEX_HEADER_SIZE];
    mf_index_header_t h = {MF_FORMAT_VERSION, 0, 1, MF_RECORD_SIZE, 0, 0};
    mf_tail_t         t;
    mf_err_t          err;
    int               torn;
    pthread_t         th;
    long              missed = 0;
    if (!mkdtemp(dir))
        return 1;
    snprintf(p, sizeof p, "%s/0", dir);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    snprintf(p, sizeof p, "%s/0.offset", dir);
    idx_fd = open(p, O_CREAT | O_RDWR, 0644);
    mf_index_header_encode(&h, hb);
    if (idx_fd < 0 || mf_pwrite_all(idx_fd, hb, sizeof hb, 0) < 0)
        return 1;
    for (int i = 0; i < BEFORE; i++)
        put(&(mf_record_t){(uint64_t)i * 10, 1, 0, i, 0, 1, 0, 0},
            MF_INDEX_HEADER_SIZE + (uint64_t)i * MF_RECORD_SIZE);
    put(&(mf_record_t){1000, 1, 0, 42, 0, 1, 0, 0},
        MF_INDEX_HEADER_SIZE + BEFORE * MF_RECORD_SIZE); /* grows */
    if (mf_tail_open(&t, AT_FDCWD, dir, 0, 0, err) < 0 || mf_tail_poll(&t, grown, NULL, 0, &torn, err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    pthread_create(&th, NULL, writer, NULL);
    for (int i = 0; i < POLLS; i++) {
        uint64_t before = atomic_load(&done_len); /* growth finished before this poll */
        if (mf_tail_poll(&t, grown, NULL, 0, &torn, err) < 0) {
            fprintf(stderr, "poll %d: %s\n", i, err);
            missed++;
            break;
        }
        missed += seen < before;
    }
    stop = 1;
    pthread_join(th, NULL);
    mf_tail_close(&t);
    unlink(p);
    snprintf(p, sizeof p, "%s/0", dir);
    unlink(p);
    rmdir(dir);
    printf("tail: %d polls of a record rewritten meanwhile, %ld missed growth finished before them\n", POLLS,
           missed);
    if (missed == 0)
        printf("tail: ok\n");
    return missed != 0;
}
