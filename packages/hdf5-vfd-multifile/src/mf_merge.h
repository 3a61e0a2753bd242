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

/* create the output next to the directory: returns fd, fills tmp_path */
int mf_merge_create_output(const mf_dir_t *d, const char *out_path, char *tmp_path, size_t n, mf_err_t err);
/* give up the output tmp (mf_merge_create_output): removed, this process's lock on it
 * released */
void mf_merge_discard_output(const char *tmp);

/* atomically put tmp_path in the place of the directory `dir` and remove the directory:
 * 0; 1 when the file is in place but the old directory could not be removed (err says
 * where it is); -1 (err) when nothing was replaced */
int mf_replace_dir(const char *dir, const char *tmp_path, mf_err_t err);
/* the same for a head and its body (mf_head.h): tmp renamed over head, then body removed;
 * -1 (err), both left as they are, when head no longer names body (another file took its
 * path: a merge never replaces what it did not read) */
int mf_replace_head(const char *head, const char *body, const char *tmp_path, mf_err_t err);
/* a merge that will replace dir: lock it exclusively before loading it, so that no
 * writer (which holds it shared while open read-write) adds records the swap would lose,
 * and none starts; 0 (also where the file system has no flock: no exclusion then), or
 * -1 with the reason. mf_replace_dir takes the lock over; mf_merge_unlock_dir drops it
 * when the merge does not get that far */
int  mf_merge_lock_dir(const char *dir, mf_err_t err);
void mf_merge_unlock_dir(void);

/* remove what merges of path that died left beside it (outputs and swapped-out
 * directories whose lock is free, a head's directory NAME.h5mf that no head names and
 * no writer holds; see mf_merge.c) */
void mf_remove_stale(const char *path);

/* what a head's directory (NAME.h5mf, NAME.<run>.h5mf) is to a cleaner: an orphan (a
 * multifile directory that no head in its own directory names with its run, and that no
 * writer holds), owned by a head, being written, or something else (not a multifile
 * directory; unreadable) */
enum { MF_BODY_ORPHAN, MF_BODY_OWNED, MF_BODY_BUSY, MF_BODY_OTHER };
int mf_body_state(const char *body);
/* does a writer hold the multifile directory dir (its lock on rank 0's data file)? */
int mf_being_written(const char *dir);
/* may the multifile directory dir, given by its own path (not through a head), be merged
 * in place? Not through a symbolic link (the link would be replaced), not a head's body
 * (the head would name nothing), nor an orphan body with a regular file at its name (a
 * second file; mf_head_name_taken). Only a name NAME.h5mf costs a scan of its parent.
 * 0, or -1 with the reason and the way out in err */
int mf_check_in_place(const char *dir, mf_err_t err);
/* remove body if it is an orphan (its metafile last); 0, or -1 (errno; EBUSY: not an
 * orphan) */
int mf_remove_orphan(const char *body);
/* remove the orphans among the bodies of other runs of path's name (NAME.<run>.h5mf
 * beside it): what creates with H5F_ACC_EXCL beside an orphan left */
void mf_remove_run_orphans(const char *path);

/* remove a directory tree; 0 or -1 */
int mf_rmtree(const char *path);

#endif
