/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * fz_exec.h - running a plan (fz_plan.h) through parallel HDF5, and checking a file
 * against its model value by value.
 */
#ifndef FZ_EXEC_H
#define FZ_EXEC_H

#include "fz_plan.h"

#include <hdf5.h>
#include <mpi.h>

typedef struct {
    MPI_Comm    comm;
    int         rank, size;
    hid_t       fapl; /* the driver under test (closed by the caller) */
    const char *path;
    int         verbose; /* print each operation (rank 0) */
    long        stale;   /* values read during the session that differ from the model */
    char        err[1024];
} fz_ctx_t;

/* create the file and run every operation; reads during the session are compared with
 * the model as it is then. Collective; 0, or -1 with c->err (same outcome on all ranks). */
int fz_execute(const fz_plan_t *p, fz_ctx_t *c);

/* a file against the model of the whole plan (the same on every rank) */
typedef struct {
    long     bad;                       /* wrong values, attributes or objects */
    uint64_t undefined[FZ_MAX_OBJECTS]; /* per dataset: elements the model leaves undefined */
    uint64_t odd[FZ_MAX_OBJECTS];       /* ... of which the file holds other bytes than zero */
} fz_verdict_t;

/* open the file read-only and compare every object with the model after the whole plan
 * (undefined elements are counted, not compared). Collective; 0, or -1 with c->err */
int fz_verify(const fz_plan_t *p, fz_ctx_t *c, fz_verdict_t *v);

#endif
