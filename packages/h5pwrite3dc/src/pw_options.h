/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_options: the command line of h5pwrite3dc.
 *
 *   h5pwrite3dc FILE NSETS NDSETS [PARAMFILE] [options]
 *
 * The three positional arguments are the original hdf_pwrite3dc's; PARAMFILE is its
 * optional parameter file (five lines: g_N, ch_N, romio_cb_write, romio_ds_write,
 * dataset filling 0/1/2). Every rank parses the same argv, so every rank reaches the
 * same verdict and the program can exit without MPI_Abort (except in a DSM job, where
 * the servers wait for the clients: there a bad argument stops the whole job).
 */
#ifndef PW_OPTIONS_H
#define PW_OPTIONS_H

#include <stddef.h>

/* the most rounds --rounds takes */
#define PW_ROUNDS_MAX 1000

typedef enum { PW_FILL_NEVER, PW_FILL_ALLOC, PW_FILL_IFSET } pw_fill;

/* what pw_parse and pw_check_ranks find */
typedef enum {
    PW_ARGS_OK,  /* the arguments are good */
    PW_ARGS_BAD, /* bad input: err says why (with the file for a file's fault) */
    PW_ARGS_HELP /* --help: err holds the usage text */
} pw_verdict;

typedef struct {
    const char        *file;          /* the HDF5 file (a directory with --driver multifile) */
    long long          nsets, ndsets; /* images in all, HDF5 datasets */
    long long          g_n, ch_n;     /* image edge and chunk edge, pixels */
    const char        *driver;        /* mpio, subfiling, or a plugin driver by name (multifile, dsm) */
    const char        *driver_config; /* string given to H5Pset_driver_by_name */
    int                independent;   /* H5FD_MPIO_INDEPENDENT transfers instead of collective */
    pw_fill            fill;          /* H5Pset_fill_time: the original's default is never */
    unsigned long long alignment, alignment_threshold; /* H5Pset_alignment; 0 = unset */
    const char        *hints_file;                     /* MPI-IO hints, "key value" per line */
    char               romio_cb_write[64];             /* the original's two hints (enable / disable) */
    char               romio_ds_write[64];
    int                latest_format;   /* H5Pset_libver_bounds(LATEST, LATEST) */
    long long          chunk_cache;     /* H5Pset_chunk_cache bytes on the datasets; -1 = HDF5's */
    long long          meta_block_size; /* H5Pset_meta_block_size; -1 = HDF5's */
    int                coll_metadata;   /* collective metadata reads and writes */
    int                verify;          /* read every pixel back and check it */
    int                limits;          /* measure raw MPI-IO and POSIX writes of the same bytes */
    int                keep_limits;     /* leave the limit files behind */
    int                rounds;          /* times each kernel runs, alternated (pw_rounds.h) */
    int                sync;            /* sync(2) between the timed phases (default on) */
    const char        *json;            /* machine-readable results (rank 0 writes it) */
    int                quiet;           /* no per-rank checkpoint lines */
} pw_options;

/* Fill o from argv. */
pw_verdict pw_parse(int argc, char **argv, pw_options *o, char *err, size_t errlen);

/* The original's constraint on the number of ranks writing (the clients of a DSM job:
 * known only after the coupling): PW_ARGS_OK, or PW_ARGS_BAD with err set. */
pw_verdict pw_check_ranks(const pw_options *o, int nprocs, char *err, size_t errlen);

/* Bytes of one image (SIZE^2 doubles) and of all NSETS images; -1 when more than a
 * 64-bit size holds (pw_parse refuses those). */
long long pw_image_bytes(const pw_options *o);
long long pw_total_bytes(const pw_options *o);

/* The usage text. */
const char *pw_usage(void);

/* Bytes one rank writes into one dataset (the original's 2 GB concern). */
double pw_bytes_per_rank_per_dataset(const pw_options *o, int nprocs);

const char *pw_fill_name(pw_fill f);

#endif
