/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_replace.c - what a merge leaves beside and in the place of a multifile directory
 * (see mf_replace.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mf_replace.h"

#include "mf_head.h"
#include "vfd_path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int rm_multifile_dir(const char *path);

static void
release_lock(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void
remove_stale_outputs(const char *parent, const char *base)
{
    char           prefix[PATH_MAX], path[PATH_MAX];
    DIR           *d = opendir(parent);
    struct dirent *e;
    snprintf(prefix, sizeof prefix, ".%s.h5mf-merge.", base);
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0) {
            snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
            if (!S_ISDIR(st.st_mode))
                unlink(path);
            else if (mf_is_multifile(path))
                rm_multifile_dir(path);
            else /* an old directory whose removal (metafile last) was cut after its last
                  * unlink: empty, and rmdir removes nothing else */
                rmdir(path);
        }
        close(fd);
    }
    if (d)
        closedir(d);
}

int
mf_body_state(const char *body)
{
    struct stat st;
    mf_meta_t   meta;
    mf_err_t    ignored;
    if (lstat(body, &st) != 0 || !S_ISDIR(st.st_mode) || !mf_is_multifile(body) ||
        mf_meta_read(body, &meta, ignored) < 0)
        return MF_BODY_OTHER;
    int owned = mf_head_owned(body, meta.run);
    if (owned != 0)
        return owned > 0 ? MF_BODY_OWNED : MF_BODY_OTHER;
    return mf_being_written(body) ? MF_BODY_BUSY : MF_BODY_ORPHAN;
}

int
mf_being_written(const char *dir)
{
    char data[PATH_MAX];
    snprintf(data, sizeof data, "%s/0", dir);
    int fd = open(data, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), busy = 0;
    if (fd >= 0) {
        busy = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
        close(fd);
    }
    return busy;
}

int
mf_check_in_place(const char *dir, mf_err_t err)
{
    struct stat st;
    int         state;
    size_t      n = strlen(dir), k = strlen(MF_HEAD_SUFFIX);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: a symbolic link: a merge in place replaces the directory itself; give its own path, or "
                 "h5mf merge %s -o FILE",
                 dir, dir);
    else if (n <= k || strncmp(dir + n - k, MF_HEAD_SUFFIX, k)) /* not named as a body: no scan */
        return 0;
    else if ((state = mf_body_state(dir)) == MF_BODY_OWNED)
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: the directory of a head beside it: open the head (a merge in place of the directory "
                 "would leave the head naming nothing), or h5mf merge %s -o FILE",
                 dir, dir);
    else if (state == MF_BODY_ORPHAN && mf_head_name_taken(dir))
        snprintf(
            err, MF_ERRMSG_SIZE,
            "%s: no head names it (an orphan), and a file has its name (a merge in place of its head cut "
            "before removing it leaves the merged file there): a merge in place would make a second file; "
            "h5mf merge %s -o FILE keeps its data",
            dir, dir);
    else
        return 0;
    return -1;
}

int
mf_remove_orphan(const char *body)
{
    if (mf_body_state(body) != MF_BODY_ORPHAN) {
        errno = EBUSY;
        return -1;
    }
    return rm_multifile_dir(body);
}

/* the directory NAME.h5mf beside path when no head names it and no writer holds it: what
 * a merge in place of a head leaves when it is cut after its rename (the directory's
 * removal unfinished, metafile last), or an empty remnant of it */
static void
remove_orphan_body(const char *path)
{
    char        body[PATH_MAX];
    struct stat st;
    snprintf(body, sizeof body, "%s%s", path, MF_HEAD_SUFFIX);
    if (lstat(body, &st) != 0 || !S_ISDIR(st.st_mode))
        return;
    if (!mf_is_multifile(body))
        rmdir(body); /* empty, or not ours: rmdir removes nothing else */
    else
        mf_remove_orphan(body);
}

void
mf_remove_run_orphans(const char *path)
{
    char        copy[PATH_MAX], body[PATH_MAX];
    const char *parent, *base;
    vfd_split_path(path, copy, &parent, &base);
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (mf_head_is_run_body(e->d_name, base)) {
            snprintf(body, sizeof body, "%s/%s", parent, e->d_name);
            mf_remove_orphan(body); /* kept where a head names it or a writer holds it */
        }
    closedir(d);
}

void
mf_remove_stale(const char *path)
{
    char        copy[PATH_MAX];
    const char *parent, *base;
    vfd_split_path(path, copy, &parent, &base);
    remove_stale_outputs(parent, base);
    remove_orphan_body(path);
}

int
mf_merge_create_output(const mf_dir_t *d, const char *out_path, char *tmp_path, size_t n,
                       mf_merge_lock_t *lock, mf_err_t err)
{
    char        copy[PATH_MAX];
    const char *parent, *base;
    vfd_split_path(out_path ? out_path : d->path, copy, &parent, &base);
    remove_stale_outputs(parent, base);
    snprintf(tmp_path, n, "%s/.%s.h5mf-merge.%ld", parent, base, (long)getpid());
    int fd = open(tmp_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot create: %s", tmp_path, strerror(errno));
        return -1;
    }
    release_lock(&lock->output);
    lock->output = dup(fd);
    if (lock->output < 0 || flock(lock->output, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot lock: %s", tmp_path, strerror(errno));
        close(fd);
        mf_merge_discard_output(tmp_path, lock);
        return -1;
    }
    if (ftruncate(fd, (off_t)d->size) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot size to %" PRIu64 " bytes: %s", tmp_path, d->size,
                 strerror(errno));
        close(fd);
        mf_merge_discard_output(tmp_path, lock);
        return -1;
    }
    return fd;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int
mf_rmtree(const char *path)
{
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* remove a multifile directory with its metafile last: a removal cut short leaves one
 * still recognised as a multifile directory (removed by the next merge beside it) */
static int
rm_multifile_dir(const char *path)
{
    char           p[PATH_MAX];
    int            rc = 0;
    DIR           *d  = opendir(path);
    struct dirent *e;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, MF_METAFILE_NAME))
            continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        if (unlinkat(dirfd(d), e->d_name, 0) < 0 && (errno != EISDIR || mf_rmtree(p) < 0))
            rc = -1;
    }
    closedir(d);
    snprintf(p, sizeof p, "%s/%s", path, MF_METAFILE_NAME);
    if (rc < 0 || (unlink(p) < 0 && errno != ENOENT))
        return -1;
    return rmdir(path);
}

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

void
mf_merge_discard_output(const char *tmp, mf_merge_lock_t *lock)
{
    unlink(tmp);
    release_lock(&lock->output);
}

int
mf_merge_lock_dir(const char *dir, mf_merge_lock_t *lock, mf_err_t err)
{
    release_lock(&lock->dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) /* not a directory here (a symbolic link, gone): loading it says what it is */
        return 0;
    /* a job that just ended may take a moment to let go (its ranks still exiting): 2 s */
    for (int tries = 0; tries < 40; tries++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) { /* no flock here: no exclusion */
            lock->dir = fd;
            return 0;
        }
        usleep(50000);
    }
    close(fd);
    snprintf(err, MF_ERRMSG_SIZE,
             "%s: open read-write by a running job, or merged by another process: not merged now (the "
             "swap would lose what the writer adds); merge it once it is closed",
             dir);
    return -1;
}

void
mf_merge_unlock(mf_merge_lock_t *lock)
{
    release_lock(&lock->dir);
    release_lock(&lock->output);
}

/* the reconstructed file replaced dir, but the old directory (now at old) stays */
static void
old_dir_left(const char *dir, const char *old, mf_err_t err)
{
    snprintf(
        err, MF_ERRMSG_SIZE,
        "%s: replaced by the reconstructed file, but the old directory, now %s, could not be removed (%s): "
        "remove it by hand",
        dir, old, strerror(errno));
}

/* is path (not followed) the directory the merge holds: held, its lock's descriptor,
 * taken when the merge loaded it, or else just before the swap? 0 when held < 0 */
static int
is_held_dir(int held, const char *path)
{
    struct stat a, b;
    return held >= 0 && fstat(held, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int
mf_replace_dir(const char *dir, const char *tmp_path, mf_merge_lock_t *lock, mf_err_t err)
{
    /* never a file that is not HDF5, or shorter than its superblock says, in the place of
     * the directory */
    mf_err_t why;
    if (mf_check_hdf5(tmp_path, why) < 0) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: the reconstructed file is not whole: %.700s; the directory is kept", dir, why);
        return -1;
    }
    int dir_lock = lock->dir; /* held since the merge loaded it (mf_merge_lock_dir), or taken now */
    lock->dir    = -1;
    if (dir_lock < 0 && (dir_lock = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
        flock(dir_lock, LOCK_EX); /* once swapped out, it is this merge's until removed */
    /* one atomic step where the file system can: swap the directory and the new file */
    if (syscall(SYS_renameat2, AT_FDCWD, tmp_path, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        if (dir_lock >= 0 && !is_held_dir(dir_lock, tmp_path)) { /* created anew meanwhile: swapped back */
            int back = syscall(SYS_renameat2, AT_FDCWD, tmp_path, AT_FDCWD, dir, RENAME_EXCHANGE) == 0;
            snprintf(err, MF_ERRMSG_SIZE,
                     "%s: created anew during the merge: the new file is left %s, this merge's output "
                     "dropped",
                     dir, back ? "as it is" : "under the name below");
            if (!back)
                snprintf(err + strlen(err), MF_ERRMSG_SIZE - strlen(err), " (%.300s)", tmp_path);
            release_lock(&dir_lock);
            return back ? -1 : 1;
        }
        /* the exchange on disk before the old directory's files go: a crash between must
         * leave the old directory whole under its name, or the new file there */
        if (vfd_sync_parent(dir) < 0) {
            snprintf(err, MF_ERRMSG_SIZE,
                     "%s: replaced, but its directory could not be synced (%s): the old "
                     "directory is kept as %s",
                     dir, strerror(errno), tmp_path);
            release_lock(&dir_lock);
            return 1;
        }
        release_lock(&lock->output);
        int left = rm_multifile_dir(tmp_path) < 0; /* tmp_path now names the old directory */
        if (left)
            old_dir_left(dir, tmp_path, err);
        release_lock(&dir_lock);
        return left;
    }
    /* else: move the directory aside, the file in, then remove the directory */
    char aside[PATH_MAX];
    snprintf(aside, sizeof aside, "%s.h5mf-old.%ld", tmp_path, (long)getpid());
    if (dir_lock >= 0 && !is_held_dir(dir_lock, dir)) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: created anew during the merge: left as it is, this merge's output dropped", dir);
        release_lock(&dir_lock);
        return -1;
    }
    if (rename(dir, aside) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot move the directory aside: %s", dir, strerror(errno));
        release_lock(&dir_lock);
        return -1;
    }
    if (rename(tmp_path, dir) < 0) {
        int e = errno;
        rename(aside, dir); /* put it back */
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot move the reconstructed file in place: %s", dir,
                 strerror(e));
        release_lock(&dir_lock);
        return -1;
    }
    release_lock(&lock->output);
    if (vfd_sync_parent(dir) < 0) {
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: replaced, but its directory could not be synced (%s): the old directory "
                 "is kept as %s",
                 dir, strerror(errno), aside);
        release_lock(&dir_lock);
        return 1;
    }
    int left = rm_multifile_dir(aside) < 0;
    if (left)
        old_dir_left(dir, aside, err);
    release_lock(&dir_lock);
    return left;
}

/* is head still the head the merge read: a regular file (not a link put there), intact,
 * naming the directory the merge holds (held)? The check is a syscall before the rename:
 * the window left is that, not the merge's */
static int
head_names(const char *head, int held)
{
    char        named[PATH_MAX];
    uint64_t    run;
    mf_err_t    why;
    struct stat h;
    return lstat(head, &h) == 0 && S_ISREG(h.st_mode) &&
           mf_head_read(head, named, sizeof named, &run, why) == 1 && is_held_dir(held, named);
}

/* why head_names said no, and where the data are */
static void
head_lost(const char *head, int held, const char *body, mf_err_t err)
{
    struct stat h;
    if (!is_held_dir(held, body))
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: created anew during the merge (its directory %s replaced): the new file is left as it "
                 "is, this merge's output dropped",
                 head, body);
    else if (lstat(head, &h) != 0 && errno == ENOENT)
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: renamed or removed during the merge: nothing replaced; its directory %s is kept (merge "
                 "the head's new name, or h5mf merge %s -o FILE)",
                 head, body, body);
    else
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: another file took its path during the merge: left as it is; the directory %s is kept "
                 "(h5mf merge %s -o FILE reads it)",
                 head, body, body);
}

int
mf_replace_head(const char *head, const char *body, const char *tmp_path, mf_merge_lock_t *lock, mf_err_t err)
{
    mf_err_t why;
    if (mf_check_hdf5(tmp_path, why) < 0) {
        snprintf(err, MF_ERRMSG_SIZE, "%s: the reconstructed file is not whole: %.700s; the file is kept",
                 head, why);
        return -1;
    }
    int dir_lock = lock->dir; /* as in mf_replace_dir: the body is this merge's until removed */
    lock->dir    = -1;
    if (dir_lock < 0 && (dir_lock = open(body, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
        flock(dir_lock, LOCK_EX);
    if (!head_names(head, dir_lock)) {
        head_lost(head, dir_lock, body, err);
        release_lock(&dir_lock);
        return -1;
    }
    if (rename(tmp_path, head) < 0) { /* one atomic step: the head or the ordinary file */
        snprintf(err, MF_ERRMSG_SIZE, "%s: cannot move the reconstructed file in place: %s", head,
                 strerror(errno));
        release_lock(&dir_lock);
        return -1;
    }
    release_lock(&lock->output);
    if (vfd_sync_parent(head) < 0) { /* the rename on disk before the body goes */
        snprintf(err, MF_ERRMSG_SIZE,
                 "%s: replaced, but its directory could not be synced (%s): its old directory %s is kept",
                 head, strerror(errno), body);
        release_lock(&dir_lock);
        return 1;
    }
    int left = rm_multifile_dir(body) < 0;
    if (left)
        old_dir_left(head, body, err);
    release_lock(&dir_lock);
    return left;
}
