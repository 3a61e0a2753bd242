/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_files: creating output files without following links someone else planted.
 *
 * Every file the program creates itself (the JSON results, the limit files) is made
 * new: an entry already at its path (a stale file, or a symbolic link pointing
 * elsewhere) is removed first, never written through, and the file is created with
 * O_CREAT|O_EXCL|O_NOFOLLOW, so a link planted between the two steps makes the
 * creation fail instead of clobbering its target. Results that replace a previous file
 * are written to a private temporary name (mkstemp) and renamed into place. The HDF5
 * file the user names is refused when a symbolic link stands at its name.
 *
 * The files it reads (the hints file, the parameter file) are opened only when they
 * are regular files: a directory or a FIFO is refused with the reason, never read as
 * an empty file or waited on.
 */
#ifndef PW_FILES_H
#define PW_FILES_H

#include <stddef.h>
#include <stdio.h>

/* 0 if a file can be created at path (its directory exists and is writable, the path
 * is not a directory), else -1 with err = "<path>: <reason>" */
int pw_check_creatable(const char *path, char *err, size_t len);

/* 0 unless a symbolic link stands at path (-1 with err) */
int pw_check_not_a_link(const char *path, char *err, size_t len);

/* a new file at path, opened for writing (vfd_create_new: what was at path removed first,
 * never written through); fd or -1 with err */
int pw_create_new(const char *path, char *err, size_t len);

/* write(f, arg) into a private temporary file next to path, then rename it to path;
 * 0 or -1 with err (no partial file left at path) */
int pw_write_replacing(const char *path, void (*write)(FILE *f, const void *arg), const void *arg, char *err,
                       size_t len);

/* path opened for reading if it is a regular file; NULL with err = "<path>: cannot
 * open the <what>: <reason>" (a directory, a FIFO, a device, or open(2)'s reason) */
FILE *pw_open_input(const char *path, const char *what, char *err, size_t len);

#endif
