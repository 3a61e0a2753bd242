/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * The digest of a plan: a 64-bit FNV-1a hash of every planned value (the file's
 * properties, every object's creation properties, every operation), field by field, so
 * that it depends on the plan and not on the memory layout of its structures. The
 * harness keeps it beside each regression seed (packages/h5fuzz/regressions.yaml): a
 * change of the generator that gives a seed another workload is caught, not run silently.
 */
#ifndef FZ_DIGEST_H
#define FZ_DIGEST_H

#include "fz_plan.h"

#include <stdint.h>

uint64_t fz_plan_digest(const fz_plan_t *p);

#endif
