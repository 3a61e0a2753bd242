/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_merge.h - reading a whole multifile directory: information, verification and
 * reconstruction of the ordinary HDF5 file it stands for.
 *
 * mf_dir_load() reads the metafile and every index (records of epochs that never
 * completed are left out when the writer did not finish) and builds the extent map.
 * mf_merge_part() writes part `part` of `nparts` of the reconstructed file into an
 * output file already sized to the result: the parts are address ranges holding equal
 * shares of its data bytes, and a part reads only the bytes it writes. Large pieces go
 * through copy_file_range(2) (which shares blocks where the file system has reflinks),
 * small ones are gathered from the mapped data files into writes of MF_MERGE_BUFFER
 * bytes. Serial reconstruction is part 0 of 1.
 * mf_verify_part() checks the data checksums of source ranks part, part+nparts, ...,
 * reading each data file once, front to back, and each index as a stream. Reconstruction
 * does not check them: it reads only the bytes that survive, while a checksum covers a
 * whole record.
 *
 * Bounded memory: mf_dir_scan() reads the same as mf_dir_load() but keeps no record and
 * builds no map, only the counts and a fixed histogram of the address space (2 x
 * MF_HIST counters). mf_merge_part() and mf_dir_extents() then resolve the address
 * space window by window: each window's map is built from the records that overlap it
 * (the indexes read again as streams), with at most `window_records` records per window
 * (MF_WINDOW_DEFAULT_BYTES' worth unless the caller sets it; 0: one window per part). Peak memory: about 250
 * bytes per record of one window, whatever the directory holds; time O(n log n) per pass over the indexes,
 * one pass per window. A directory whose metafile records no end of file (format 1) is loaded whole.
 */
#ifndef MF_MERGE_H
#define MF_MERGE_H

#include "mf_extents.h"
#include "mf_format.h"

#define MF_MERGE_BUFFER (8u << 20)

typedef struct {
    mf_record_t *v;
    uint64_t     n;
    uint64_t     torn;      /* 1 when the index ends in a partial/torn record */
    uint64_t     data_size; /* size of the data file */
    uint64_t     bytes;     /* bytes in all records */
    uint64_t     dropped;   /* records of epochs that never completed */
    uint32_t     checksums;
} mf_rank_records_t;

#define MF_WINDOW_RECORD_BYTES  256          /* peak bytes per record of a window's map (for budgets) */
#define MF_WINDOW_DEFAULT_BYTES (1ull << 30) /* h5mf's --memory by default */
#define MF_HIST                 (1u << 16)   /* histogram buckets over the reconstructed file (mf_dir_scan) */

typedef struct {
    char               path[4096];
    mf_meta_t          meta;
    mf_rank_records_t *ranks;
    mf_extents_t       map;
    uint64_t           size;                    /* size of the reconstructed file */
    uint64_t           records;                 /* records of the committed epochs found in the indexes */
    char               problem[MF_ERRMSG_SIZE]; /* MF_LOAD_ANY: why a merge would refuse, or "" */
    uint32_t           epochs;                  /* epochs used */
    /* mf_dir_scan: no records kept; per bucket of `bucket` bytes, the records that overlap
     * it and the data records that do (holes not counted) */
    int       scanned;
    uint64_t  bucket;
    uint64_t *hist_records, *hist_data;
    uint64_t  window_records; /* the most records a window's map holds (0: no limit) */
} mf_dir_t;

typedef void (*mf_progress_cb)(uint64_t done, uint64_t total, void *arg);

/* what mf_dir_load accepts of a directory whose writer did not finish (state writing) */
#define MF_LOAD_COMPLETE 0 /* refuse it: reconstruction must not drop what was written */
#define MF_LOAD_PARTIAL  1 /* use the epochs committed by the last flush; refuse if there is none */
#define MF_LOAD_ANY      2 /* load for information: never refuse for being incomplete or damaged (problem) */

int  mf_dir_load(mf_dir_t *d, const char *path, int load_mode, mf_err_t err);
int  mf_dir_scan(mf_dir_t *d, const char *path, int load_mode, mf_err_t err);
void mf_dir_free(mf_dir_t *d);

/* the number of extents of the reconstructed file (windows joined where one continues
 * the other): d->map.n after mf_dir_load, resolved window by window after mf_dir_scan */
int mf_dir_extents(const mf_dir_t *d, uint64_t *n, mf_err_t err);

/* bytes the part will write (after mf_dir_scan: at most), bytes mf_verify_part will
 * check (for progress bars) */
uint64_t mf_part_bytes(const mf_dir_t *d, unsigned part, unsigned nparts);
uint64_t mf_verify_bytes(const mf_dir_t *d, unsigned part, unsigned nparts);

int mf_merge_part(const mf_dir_t *d, int out_fd, unsigned part, unsigned nparts, mf_progress_cb cb, void *arg,
                  mf_err_t err);
int mf_verify_part(const mf_dir_t *d, unsigned part, unsigned nparts, mf_progress_cb cb, void *arg,
                   mf_err_t err);
/* check one record's data checksum against its bytes in fd (rank's data file data_path);
 * 0, or -1 with the record, its address and the reason in err */
int mf_record_check(int fd, const char *data_path, const mf_record_t *rec, uint64_t seq, mf_err_t err);

#endif
