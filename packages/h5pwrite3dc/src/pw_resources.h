/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_resources: is there room for the run? Checked before anything is allocated or
 * written, so that a run too large for the machine stops with the reason at once
 * instead of being killed, filling a file system, or running for days.
 *
 * Memory: each rank holds one image (two with --verify); the ranks on one node
 * together need that much of the node's available memory (MemAvailable).
 * Disk: the file, and with the limits as much again twice (the MPI-IO file and the
 * per-rank POSIX files), in the free space of FILE's directory. Not for the DSM
 * driver, whose file lives in the servers' memory (the servers say when it is full).
 */
#ifndef PW_RESOURCES_H
#define PW_RESOURCES_H

#include <stddef.h>

#include "pw_options.h"

/* 0, or -1 with err = the reason (bytes needed and available) */
int pw_check_memory(const pw_options *o, int ranks_on_node, char *err, size_t len);
int pw_check_disk(const pw_options *o, char *err, size_t len);

#endif
