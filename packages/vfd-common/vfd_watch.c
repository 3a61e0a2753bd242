/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_watch.c - a bounded wait for the other ranks (see vfd_watch.h).
 */
#include "vfd_watch.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct vfd_watch {
    pthread_t       thread;
    pthread_mutex_t lock;
    pthread_cond_t  stopped_cond;
    int             stopped;
    struct timespec deadline; /* CLOCK_MONOTONIC */
    char            message[1024];
};

static void *
watch(void *arg)
{
    vfd_watch_t *w  = arg;
    int          rc = 0;
    pthread_mutex_lock(&w->lock);
    while (!w->stopped && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->stopped_cond, &w->lock, &w->deadline);
    int expired = !w->stopped;
    pthread_mutex_unlock(&w->lock);
    if (expired) {
        fprintf(stderr, "%s\n", w->message);
        fflush(stderr);
        _exit(1); /* the rank's thread is inside MPI: no MPI call is safe from here */
    }
    return NULL;
}

vfd_watch_t *
vfd_watch_start(int seconds, const char *fmt, ...)
{
    vfd_watch_t       *w;
    pthread_condattr_t attr;
    if (seconds <= 0 || !(w = calloc(1, sizeof *w)))
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof w->message, fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_MONOTONIC, &w->deadline);
    w->deadline.tv_sec += seconds;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->stopped_cond, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&w->thread, NULL, watch, w) != 0) {
        pthread_cond_destroy(&w->stopped_cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

void
vfd_watch_stop(vfd_watch_t *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopped = 1;
    pthread_cond_signal(&w->stopped_cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->stopped_cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
