/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_head.h - the head: what the application's path names in the head layout.
 *
 * With the option layout=head the driver writes a multifile file NAME as
 *   NAME            the head: a regular file of MF_HEAD_SIZE bytes or more, a small,
 *                   complete HDF5 file (superblock 0, a root group with one fixed-length
 *                   string attribute "multifile": what the file is, the directory that
 *                   holds its data and the two ways to read it), whose end of file
 *                   covers the slot at MF_HEAD_SLOT; extended (sparse) at every commit
 *                   to the reconstructed file's size, so stat and ls give it
 *   NAME.h5mf/      the body: a multifile directory (mf_format.h), beside the head
 * The slot (little-endian): "H5MFHEAD", version (u32), length of the body's name (u32),
 * the run of the body's metafile (u64), the body's name (a last path component, 256
 * bytes, NUL padded), crc32 of everything before it (u32). The HDF5 bytes are a template
 * HDF5 itself wrote (the same with 1.14 and 2.x); superblock 0 and object header 1 carry
 * no checksums, so the attribute's text is filled in place.
 * No HDF5 or MPI dependency: the h5mf tool uses it too.
 */
#ifndef MF_HEAD_H
#define MF_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "mf_format.h"

#define MF_HEAD_SIZE      4096 /* the head's HDF5 end of file: template, text, slot */
#define MF_HEAD_SLOT      2048 /* where the slot begins */
#define MF_HEAD_NAME_SIZE 256  /* the body's name in the slot, NUL included */
#define MF_HEAD_SUFFIX    ".h5mf"
#define MF_HEAD_MAGIC     "H5MFHEAD" /* the slot's first 8 bytes */

/* does path name a head (a regular file with a slot, or that begins with the template)?
 * 1 with the body's path (beside the head; beside its target for a symbolic link) and
 * run, 0 not a head (no such file, a directory, any other file), -1 with the reason: a
 * head whose slot is damaged, or whose HDF5 signature was overwritten (then body and run
 * are set: the slot still names them) */
int mf_head_read(const char *path, char *body, size_t n, uint64_t *run, mf_err_t err);

/* the body's name for a new head at path: NAME.h5mf, or NAME.<run>.h5mf when that name
 * is taken (alt != 0); the whole path beside the head */
void mf_head_body_path(const char *path, uint64_t run, int alt, char *body, size_t n);
/* is the directory entry the body of another run of the name base (NAME.<run>.h5mf, the
 * alternative mf_head_body_path makes)? 1 or 0 */
int mf_head_is_run_body(const char *entry, const char *base);

/* write the head of body (its run) at path: under a temporary name beside it, then
 * renamed over path (synced with do_sync); with excl put in place only where nothing is
 * at path (a hard link, else renameat2's RENAME_NOREPLACE: never over another create's
 * head, locks or not), -1 with errno EEXIST otherwise. The open head's descriptor
 * (O_RDWR), to be extended at commits, or -1 with the reason */
int mf_head_write(const char *path, const char *body, uint64_t run, int do_sync, int excl, mf_err_t err);

/* extend the head to the file's size (never below MF_HEAD_SIZE): a hint for stat and
 * ls; 0, or -1 (errno) */
int mf_head_extend(int fd, uint64_t size);

/* Both scan body's directory for heads of run (regular files: a link to a head is no
 * other head), damaged ones included. Is a multifile directory at body named by one,
 * by its name (its base name: a cleaner keeps what any head may mean)? 1 yes, 0 no (an
 * orphan), -1 (errno) when the directory cannot be read */
int mf_head_owned(const char *body, uint64_t run);
/* the heads beside body that name it, the same directory (by real path: a merge in place
 * replaces only the head of the directory it read): how many are *intact (the first
 * one's path in head, n bytes) and how many *damaged (mf_head_read's -1); 0, or -1
 * (errno) when body or its directory cannot be read */
int mf_head_find(const char *body, uint64_t run, char *head, size_t n, int *intact, int *damaged);
/* is the multifile directory path named as a head's body (NAME.h5mf, NAME.<run>.h5mf
 * with its own run) with a regular file at NAME? Then a merge in place of it would make
 * a second file beside that (a merge in place of the head cut before removing the body
 * leaves the merged file at NAME); otherwise it may as well be a file of the dir layout
 * named so. 1 or 0 */
int mf_head_name_taken(const char *path);

#endif
