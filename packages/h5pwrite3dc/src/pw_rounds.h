/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_rounds: the benchmark's kernels measured in rounds (--rounds N).
 *
 * A round times each kernel once: the HDF5 write (PW_KERNEL_HDF5) and the two limits
 * (PW_KERNEL_MPIIO, PW_KERNEL_POSIX, pw_limits.h). The kernel that goes first turns
 * with the round, so none always meets the page cache, the disk or the other jobs of
 * the node in the same state. Each figure printed is the median over the rounds and
 * comes with its spread (the least and the most of the rounds); a ratio is taken within
 * each round (the driver and its limit measured next to each other), then its median.
 */
#ifndef PW_ROUNDS_H
#define PW_ROUNDS_H

enum { PW_KERNEL_HDF5, PW_KERNEL_MPIIO, PW_KERNEL_POSIX, PW_KERNELS };

/* the k-th kernel (0 .. PW_KERNELS-1) of round r (from 0): the first round runs HDF5,
 * MPI-IO, POSIX (the single run's order), the second MPI-IO, POSIX, HDF5, and so on */
int pw_kernel_of(int round, int k);

/* the seconds of every round's kernels (the HDF5 write's three phases, the limits) */
typedef struct {
    int     n; /* rounds run */
    double *create, *write, *close, *mpiio, *posix;
} pw_rounds;

/* a figure over the rounds: its median, the least and the most */
typedef struct {
    double median, lo, hi;
} pw_stat;

/* arrays for up to `rounds` rounds; 0, or -1 when out of memory */
int  pw_rounds_alloc(pw_rounds *r, int rounds);
void pw_rounds_free(pw_rounds *r);

/* a rate (mb / seconds of each round), and a ratio taken within each round (the
 * limit's seconds / the HDF5 write's seconds: the rate of the write over the limit's) */
pw_stat pw_rate_stat(const double *seconds, int n, double mb);
pw_stat pw_ratio_stat(const double *limit, const double *write, int n);

/* the median of v[0..n-1] (1 <= n <= PW_ROUNDS_MAX; v is left as it is) */
double pw_median(const double *v, int n);

/* the least and the most of v[0..n-1] (n >= 1) */
void pw_range(const double *v, int n, double *lo, double *hi);

#endif
