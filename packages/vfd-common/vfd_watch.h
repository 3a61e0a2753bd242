/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_watch.h - a bounded wait for the other ranks. A collective open cannot tell a
 * slow rank from one that never comes: a rank that opens a file over a communicator
 * whose other ranks never open it waits in MPI for ever. A watch started before the
 * open's first collective and stopped once every rank has passed it ends the job
 * (the message on standard error, the rank's exit status 1: the launcher ends the
 * other ranks) when its time runs out, instead of a hang without a word. Only time the
 * process runs counts: a job stopped meanwhile (suspended, preempted, a debugger) is
 * not ended for the time it was stopped.
 */
#ifndef VFD_WATCH_H
#define VFD_WATCH_H

typedef struct vfd_watch vfd_watch_t;

/* A watch of `seconds` (0: none) that prints the message made from fmt when it runs
 * out; NULL when there is none (or no thread could be started: then it waits unwatched). */
vfd_watch_t *vfd_watch_start(int seconds, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Stops the watch and frees it; NULL is allowed. */
void vfd_watch_stop(vfd_watch_t *w);

#endif
