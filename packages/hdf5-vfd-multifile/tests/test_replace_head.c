/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_replace_head - a merge in place of a head replaces only the head it read: when
 * another file took the head's path while the merge ran (a copy, a new file of the same
 * name, its body another or the same name anew, a link), or the head was renamed away,
 * mf_replace_head refuses, says which, and leaves the path, the body and the merged
 * output as they are; the head itself is replaced. The same for a directory of the dir
 * layout created anew (mf_replace_dir). The merge holds its directory locked
 * since its load, as h5mf's and the driver's merges do. Exit 0 and "replace_head: ok"
 * when every case holds.
 */
#include "mf_head.h"
#include "mf_replace.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char work[] = "/tmp/mf-replace-head.XXXXXX";
static int  failures;

static void
expect(int ok, const char *what)
{
    if (!ok) {
        printf("replace_head: FAILED: %s\n", what);
        failures++;
    }
}

static void
join(char *out, const char *name)
{
    snprintf(out, PATH_MAX, "%s/%s", work, name);
}

/* the head of body at head (a complete small HDF5 file: also a whole merged output) */
static void
make_head(const char *head, const char *body, uint64_t run)
{
    mf_err_t err;
    int      fd = mf_head_write(head, body, run, 0, 0, err);
    if (fd < 0) {
        printf("replace_head: %s\n", err);
        exit(1);
    }
    close(fd);
}

static ino_t
inode(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_ino : 0;
}

static mf_merge_lock_t merge_lock = MF_MERGE_LOCK_INIT; /* the merge's locks */

/* the merge's lock on its directory, taken at its load */
static void
lock(const char *body)
{
    mf_err_t err;
    if (mf_merge_lock_dir(body, &merge_lock, err) < 0) {
        printf("replace_head: %s\n", err);
        exit(1);
    }
}

/* the head's path changed under the merge (why: what the error must say): refused,
 * nothing moved */
static void
taken(const char *head, const char *body, const char *tmp, const char *why, const char *how)
{
    mf_err_t err   = "";
    ino_t    there = inode(head), merged = inode(tmp), dir = inode(body);
    lock(body);
    expect(mf_replace_head(head, body, tmp, &merge_lock, err) == -1, how);
    expect(strstr(err, why) != NULL, err);
    expect(inode(head) == there && inode(tmp) == merged && inode(body) == dir, how);
}

/* the dir layout: the directory created anew (H5F_ACC_TRUNC) while the merge ran is
 * swapped back and kept; the one the merge read is replaced */
static void
replace_dir(const char *tmp)
{
    char     dir[PATH_MAX];
    mf_err_t why = "", err = "";
    join(dir, "d.h5");
    make_head(tmp, "any.h5mf", 4); /* a whole HDF5 file, the merged output */
    expect(mkdir(dir, 0755) == 0, "mkdir d.h5");
    lock(dir);
    rmdir(dir);
    expect(mkdir(dir, 0755) == 0, "mkdir d.h5 anew");
    ino_t now = inode(dir), merged = inode(tmp);
    expect(mf_replace_dir(dir, tmp, &merge_lock, why) == -1 && strstr(why, "created anew") &&
               inode(dir) == now && inode(tmp) == merged,
           "a directory created anew during the merge was replaced");
    lock(dir);
    expect(mf_replace_dir(dir, tmp, &merge_lock, err) >= 0 && inode(dir) == merged, err);
    unlink(dir);
}

int
main(void)
{
    char     head[PATH_MAX], body[PATH_MAX], tmp[PATH_MAX], other[PATH_MAX], copy[PATH_MAX];
    mf_err_t err = "";
    if (!mkdtemp(work))
        return perror("mkdtemp"), 1;
    join(head, "x.h5");
    join(body, "x.h5.h5mf");
    join(tmp, ".x.h5.h5mf-merge.1");
    join(other, "x.h5.7.h5mf");
    join(copy, "copy.h5");
    if (mkdir(body, 0755) < 0 || mkdir(other, 0755) < 0)
        return perror("mkdir"), 1;
    make_head(tmp, other, 9); /* the "merged output": any whole HDF5 file */
    make_head(copy, "precious.h5mf", 3);
    rename(copy, head); /* an unrelated file at the path */
    taken(head, body, tmp, "another file took its path", "a file put at the head's path was replaced");
    make_head(head, other, 7); /* a new file of the same name, its body another */
    taken(head, body, tmp, "another file took its path", "the head of another body was replaced");
    unlink(head); /* the head renamed away */
    taken(head, body, tmp, "renamed or removed", "a path emptied during the merge was filled");
    make_head(copy, body, 5); /* the head moved, a link to it at the path */
    expect(symlink("copy.h5", head) == 0, "symlink");
    taken(head, body, tmp, "another file took its path", "a link put at the head's path was replaced");
    unlink(head);
    unlink(copy);
    /* a new file of the same name, its body the same name anew (H5F_ACC_TRUNC) */
    lock(body);
    rmdir(body);
    expect(mkdir(body, 0755) == 0, "mkdir");
    make_head(head, body, 6);
    mf_err_t why = "";
    ino_t    now = inode(head);
    expect(mf_replace_head(head, body, tmp, &merge_lock, why) == -1 && strstr(why, "created anew") &&
               inode(head) == now,
           "a file created anew during the merge was replaced");
    make_head(head, body, 5); /* the head itself: replaced, the body removed */
    ino_t merged = inode(tmp);
    lock(body);
    expect(mf_replace_head(head, body, tmp, &merge_lock, err) >= 0, err);
    expect(inode(head) == merged && inode(tmp) == 0, "the head was not replaced by the merged file");
    unlink(head);
    replace_dir(tmp);
    rmdir(other);
    rmdir(body);
    rmdir(work);
    if (failures)
        return 1;
    printf("replace_head: ok\n");
    return 0;
}
