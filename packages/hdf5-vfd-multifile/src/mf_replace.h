/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_replace.h - what a merge leaves beside and in the place of a multifile directory:
 * its output, the locks that tell a running merge from one that died, the swap of the
 * output for the directory (or for the head that names it), and the removal of what
 * merges that died and writers that never finished left behind (outputs, swapped-out
 * directories, orphan bodies).
 *
 * A merge holds an exclusive lock (flock) on its output .<base>.h5mf-merge.<pid> from its
 * creation until the directory is replaced, and on the directory itself from its load (a
 * merge in place) or from just before the swap until it is removed. The locks are the
 * merge's own (mf_merge_lock_t): two merges in one process hold theirs apart. A leftover
 * whose lock can be taken belongs to no running merge: one that died (or is a zombie), on
 * this node or another.
 */
#ifndef MF_REPLACE_H
#define MF_REPLACE_H

#include "mf_merge.h"

#include <stddef.h>

/* one merge's locks: descriptors, -1 when not held */
typedef struct {
    int output; /* on its output (a dup, kept past the output's close) */
    int dir;    /* on the directory it replaces */
} mf_merge_lock_t;
#define MF_MERGE_LOCK_INIT                                                                                   \
    {                                                                                                        \
        -1, -1                                                                                               \
    }

/* create the output next to out_path (or, when NULL, next to the directory), sized to the
 * reconstruction and locked in lock: its fd, its name in tmp_path; or -1 (err) */
int mf_merge_create_output(const mf_dir_t *d, const char *out_path, char *tmp_path, size_t n,
                           mf_merge_lock_t *lock, mf_err_t err);
/* give up the output tmp (mf_merge_create_output): removed, its lock released */
void mf_merge_discard_output(const char *tmp, mf_merge_lock_t *lock);

/* a merge that will replace dir: lock it exclusively before loading it, so that no
 * writer (which holds it shared while open read-write) adds records the swap would lose,
 * and none starts; 0 (also where the file system has no flock: no exclusion then), or
 * -1 with the reason. mf_replace_dir and mf_replace_head take the lock over */
int mf_merge_lock_dir(const char *dir, mf_merge_lock_t *lock, mf_err_t err);
/* release what lock still holds (a merge that did not get as far as the swap) */
void mf_merge_unlock(mf_merge_lock_t *lock);

/* atomically put tmp_path in the place of the directory `dir` and remove the directory:
 * 0; 1 when the file is in place but the old directory could not be removed (err says
 * where it is); -1 (err) when nothing was replaced (the output is the caller's to
 * discard). The directory's lock is released, and the output's once it is in place */
int mf_replace_dir(const char *dir, const char *tmp_path, mf_merge_lock_t *lock, mf_err_t err);
/* the same for a head and its body (mf_head.h): tmp renamed over head, then body removed;
 * -1 (err), both left as they are, when head no longer names body (another file took its
 * path: a merge never replaces what it did not read) */
int mf_replace_head(const char *head, const char *body, const char *tmp_path, mf_merge_lock_t *lock,
                    mf_err_t err);

/* remove what merges of path that died left beside it (outputs and swapped-out
 * directories whose lock is free, a head's directory NAME.h5mf that no head names and
 * no writer holds) */
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
