/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * mf_scale.h - the --records mode of h5mf-bench (see mf_scale.c).
 */
#ifndef MF_SCALE_H
#define MF_SCALE_H

#include <stdint.h>
#include <stdio.h>

/* measure the index operations at each of the k record counts; figures on stdout of
 * rank 0, and as JSON into json (may be NULL) */
int mf_scale_run(const char *dir, const uint64_t *counts, int k, uint64_t record_bytes, FILE *json);

#endif
