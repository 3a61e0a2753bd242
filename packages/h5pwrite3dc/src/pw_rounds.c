/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_rounds: the order of the kernels per round, medians and spreads (see pw_rounds.h). */
#include "pw_rounds.h"

#include <stdlib.h>
#include <string.h>

#include "pw_options.h" /* PW_ROUNDS_MAX */

int
pw_kernel_of(int round, int k)
{
    return (round + k) % PW_KERNELS;
}

static int
by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double
pw_median(const double *v, int n)
{
    double s[PW_ROUNDS_MAX];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, by_value);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

void
pw_range(const double *v, int n, double *lo, double *hi)
{
    *lo = *hi = v[0];
    for (int k = 1; k < n; k++) {
        if (v[k] < *lo)
            *lo = v[k];
        if (v[k] > *hi)
            *hi = v[k];
    }
}

int
pw_rounds_alloc(pw_rounds *r, int rounds)
{
    memset(r, 0, sizeof *r);
    double **arrays[] = {&r->create, &r->write, &r->close, &r->mpiio, &r->posix};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        if (!(*arrays[k] = calloc((size_t)rounds, sizeof(double)))) {
            pw_rounds_free(r);
            return -1;
        }
    return 0;
}

void
pw_rounds_free(pw_rounds *r)
{
    free(r->create);
    free(r->write);
    free(r->close);
    free(r->mpiio);
    free(r->posix);
    memset(r, 0, sizeof *r);
}

pw_stat
pw_rate_stat(const double *seconds, int n, double mb)
{
    pw_stat s;
    double  rate[PW_ROUNDS_MAX];
    for (int k = 0; k < n; k++)
        rate[k] = mb / seconds[k];
    s.median = pw_median(rate, n); /* of the rates: with an even n, not mb / the median time */
    pw_range(rate, n, &s.lo, &s.hi);
    return s;
}

pw_stat
pw_ratio_stat(const double *limit, const double *write, int n)
{
    pw_stat s;
    double  q[PW_ROUNDS_MAX];
    for (int k = 0; k < n; k++)
        q[k] = limit[k] / write[k];
    s.median = pw_median(q, n);
    pw_range(q, n, &s.lo, &s.hi);
    return s;
}
