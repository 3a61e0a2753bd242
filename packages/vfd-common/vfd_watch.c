/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfd_watch.c - a bounded wait for the other ranks (see vfd_watch.h).
 */
#include "vfd_watch.h"

#include <pthread.h>
#include <signal.h>
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
    double          seconds; /* the wait allowed, counted while the process runs */
    char            message[1024];
};

static double
now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Counts the wait in ticks of a second: a tick that ends much later than it should (the
 * job stopped: a debugger, a suspended or preempted job) counts as one tick only, so a
 * stopped job is not ended for the time it did not run. */
static void *
watch(void *arg)
{
    vfd_watch_t *w      = arg;
    double       waited = 0, last = now();
    pthread_mutex_lock(&w->lock);
    while (!w->stopped && waited < w->seconds) {
        struct timespec tick;
        clock_gettime(CLOCK_MONOTONIC, &tick);
        tick.tv_sec += 1;
        pthread_cond_timedwait(&w->stopped_cond, &w->lock, &tick);
        double t = now(), step = t - last;
        waited += step > 3 ? 1 : step;
        last = t;
    }
    int expired = !w->stopped;
    pthread_mutex_unlock(&w->lock);
    if (expired) {
        fflush(stdout);
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
    w->seconds = seconds;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->stopped_cond, &attr);
    pthread_condattr_destroy(&attr);
    sigset_t all, old;
    sigfillset(&all); /* signals meant for the program never land on the watch */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, watch, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
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
