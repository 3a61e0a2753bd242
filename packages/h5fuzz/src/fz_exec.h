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
    hid_t       fapl;    /* the driver under test (closed by the caller) */
    const char *path;
    int         verbose; /* print each operation (rank 0) */
    long        stale;   /* values read during the session that differ from the model */
    char        err[1024];
} fz_ctx_t;

/* create the file and run every operation; reads during the session are compared with
 * the model as it is then. Collective; 0, or -1 with c->err (same outcome on all ranks). */
int fz_execute(const fz_plan_t *p, fz_ctx_t *c);

/* open the file read-only and compare every object with the model after the whole plan:
 * the number of wrong values, attributes or objects (summed over ranks), -1 on error */
long fz_verify(const fz_plan_t *p, fz_ctx_t *c);

#endif
