/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/* pw_options: parsing and checking h5pwrite3dc's command line (see pw_options.h). */
#include "pw_options.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_files.h"

static const char USAGE[] =
    "usage: h5pwrite3dc FILE NSETS NDSETS [PARAMFILE] [options]\n"
    "\n"
    "Writes NSETS images of g_N x g_N 64-bit pixels into NDSETS datasets data_0000...\n"
    "of FILE (shape NSETS/NDSETS x g_N x g_N, chunked), each rank writing its rank id\n"
    "into its images, and prints the original hdf_pwrite3dc's summary lines. NSETS must\n"
    "be divisible by NDSETS and by (ranks x NDSETS). PARAMFILE: the original's parameter\n"
    "file (g_N, ch_N, romio_cb_write, romio_ds_write, filling 0=never/1=alloc/2=ifset).\n"
    "\n"
    "  --size N               image edge g_N in pixels (default 8000)\n"
    "  --chunk N              chunk edge ch_N in pixels (default 1000; chunks 1 x N x N)\n"
    "  --driver NAME          mpio (default), subfiling, or a driver plugin by name:\n"
    "                         multifile, dsm (HDF5_PLUGIN_PATH must hold it)\n"
    "  --driver-config STR    configuration string for a plugin driver\n"
    "  --independent          independent transfers (default: collective)\n"
    "  --fill-time WHEN       never (default, as the original), alloc, ifset (HDF5's own)\n"
    "  --no-fill              the same as --fill-time never\n"
    "  --alignment BYTES      H5Pset_alignment (threshold: --alignment-threshold, default 1)\n"
    "  --alignment-threshold BYTES\n"
    "  --hints FILE           MPI-IO hints, one \"key value\" per line (# comments)\n"
    "  --latest-format        H5Pset_libver_bounds(latest, latest)\n"
    "  --chunk-cache BYTES    H5Pset_chunk_cache size of each dataset\n"
    "  --meta-block-size BYTES  H5Pset_meta_block_size\n"
    "  --coll-metadata        collective metadata reads and writes\n"
    "  --verify               read every pixel back and check it (non-zero exit if wrong)\n"
    "  --no-limits            skip the raw MPI-IO and POSIX writes of the same bytes\n"
    "  --keep-limits          keep the limit files (FILE.limit-mpiio, FILE.limit-posix.R)\n"
    "  --rounds N             run the HDF5 write and the limits N times each (default 1),\n"
    "                         the first kernel turning with the round; figures are medians,\n"
    "                         printed with their spread (least and most of the rounds)\n"
    "  --no-sync              no sync(2) between the timed phases (default: each phase starts\n"
    "                         without the previous one's dirty pages)\n"
    "  --json FILE            write parameters and results as JSON\n"
    "  --quiet                no per-rank checkpoint lines\n"
    "  --help\n"
    "BYTES and N accept the suffixes k, m, g (powers of 1024).\n";

const char *
pw_usage(void)
{
    return USAGE;
}

const char *
pw_fill_name(pw_fill f)
{
    return f == PW_FILL_NEVER ? "never" : f == PW_FILL_ALLOC ? "alloc" : "ifset";
}

/* err set: PW_ARGS_BAD */
static pw_verdict
fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return PW_ARGS_BAD;
}

/* a non-negative count with an optional binary suffix; -1 on bad text */
static long long
parse_count(const char *s)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned long long mult = 1;
    if (*end) {
        switch (*end) {
            case 'k':
            case 'K':
                mult = 1ULL << 10;
                break;
            case 'm':
            case 'M':
                mult = 1ULL << 20;
                break;
            case 'g':
            case 'G':
                mult = 1ULL << 30;
                break;
            default:
                return -1;
        }
        if (end[1] &&
            !((end[1] == 'i' || end[1] == 'B') && (!end[2] || (end[1] == 'i' && end[2] == 'B' && !end[3]))))
            return -1;
    }
    if (v > (unsigned long long)(9e18 / mult))
        return -1;
    return (long long)(v * mult);
}

static int
copy_word(char *dst, size_t n, const char *src)
{
    if (strlen(src) >= n)
        return -1;
    strcpy(dst, src);
    return 0;
}

/* the original's parameter file: g_N, ch_N, romio_cb_write, romio_ds_write, filling */
static pw_verdict
read_paramfile(const char *path, pw_options *o, char *err, size_t len)
{
    FILE *f = pw_open_input(path, "parameter file", err, len);
    if (!f)
        return PW_ARGS_BAD;
    char line[5][256];
    int  n = 0;
    char buf[256];
    while (n < 5 && fgets(buf, sizeof buf, f)) {
        char word[256];
        if (sscanf(buf, " %255s", word) != 1)
            continue; /* blank line */
        strcpy(line[n++], word);
    }
    int unread = ferror(f) ? errno : 0;
    fclose(f);
    if (unread)
        return fail(err, len, "%s: cannot read the parameter file: %s", path, strerror(unread));
    if (n < 5)
        return fail(err, len,
                    "%s: the parameter file needs 5 lines (g_N, ch_N, romio_cb_write, romio_ds_write, "
                    "filling), found %d",
                    path, n);
    o->g_n  = parse_count(line[0]);
    o->ch_n = parse_count(line[1]);
    if (o->g_n <= 0 || o->ch_n <= 0)
        return fail(err, len, "%s: g_N and ch_N must be positive integers (got '%s', '%s')", path, line[0],
                    line[1]);
    for (int i = 2; i < 4; i++) {
        /* Fortran list-directed input also accepts quoted strings */
        char  *w = line[i];
        size_t l = strlen(w);
        if (l >= 2 && (w[0] == '"' || w[0] == '\'') && w[l - 1] == w[0]) {
            w[l - 1] = '\0';
            w++;
        }
        if (copy_word(i == 2 ? o->romio_cb_write : o->romio_ds_write, sizeof o->romio_cb_write, w))
            return fail(err, len, "%s: line %d is too long", path, i + 1);
    }
    if (!strcmp(line[4], "0"))
        o->fill = PW_FILL_NEVER;
    else if (!strcmp(line[4], "1"))
        o->fill = PW_FILL_ALLOC;
    else if (!strcmp(line[4], "2"))
        o->fill = PW_FILL_IFSET;
    else
        return fail(err, len, "%s: filling must be 0 (never), 1 (alloc) or 2 (ifset), got '%s'", path,
                    line[4]);
    return PW_ARGS_OK;
}

enum {
    OPT_SIZE = 256,
    OPT_CHUNK,
    OPT_DRIVER,
    OPT_DRIVER_CONFIG,
    OPT_INDEPENDENT,
    OPT_FILL_TIME,
    OPT_NO_FILL,
    OPT_ALIGNMENT,
    OPT_ALIGNMENT_THRESHOLD,
    OPT_HINTS,
    OPT_LATEST,
    OPT_CHUNK_CACHE,
    OPT_META_BLOCK,
    OPT_COLL_META,
    OPT_VERIFY,
    OPT_NO_LIMITS,
    OPT_KEEP_LIMITS,
    OPT_ROUNDS,
    OPT_NO_SYNC,
    OPT_JSON,
    OPT_QUIET,
    OPT_HELP
};

static const struct option LONG_OPTIONS[] = {
    {"size", required_argument, NULL, OPT_SIZE},
    {"chunk", required_argument, NULL, OPT_CHUNK},
    {"driver", required_argument, NULL, OPT_DRIVER},
    {"driver-config", required_argument, NULL, OPT_DRIVER_CONFIG},
    {"independent", no_argument, NULL, OPT_INDEPENDENT},
    {"fill-time", required_argument, NULL, OPT_FILL_TIME},
    {"no-fill", no_argument, NULL, OPT_NO_FILL},
    {"alignment", required_argument, NULL, OPT_ALIGNMENT},
    {"alignment-threshold", required_argument, NULL, OPT_ALIGNMENT_THRESHOLD},
    {"hints", required_argument, NULL, OPT_HINTS},
    {"latest-format", no_argument, NULL, OPT_LATEST},
    {"chunk-cache", required_argument, NULL, OPT_CHUNK_CACHE},
    {"meta-block-size", required_argument, NULL, OPT_META_BLOCK},
    {"coll-metadata", no_argument, NULL, OPT_COLL_META},
    {"verify", no_argument, NULL, OPT_VERIFY},
    {"no-limits", no_argument, NULL, OPT_NO_LIMITS},
    {"keep-limits", no_argument, NULL, OPT_KEEP_LIMITS},
    {"rounds", required_argument, NULL, OPT_ROUNDS},
    {"no-sync", no_argument, NULL, OPT_NO_SYNC},
    {"json", required_argument, NULL, OPT_JSON},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static pw_verdict
positive(const char *name, const char *text, long long *out, char *err, size_t len)
{
    long long v = parse_count(text);
    if (v <= 0)
        return fail(err, len, "%s must be a positive integer, got '%s'", name, text);
    *out = v;
    return PW_ARGS_OK;
}

static pw_verdict
byte_count(const char *name, const char *text, long long *out, char *err, size_t len)
{
    long long v = parse_count(text);
    if (v < 0)
        return fail(err, len, "%s must be a byte count, got '%s'", name, text);
    *out = v;
    return PW_ARGS_OK;
}

/* what the options set over the parameter file; -1: not given */
typedef struct {
    long long size, chunk, fill;
} overrides;

static void
set_defaults(pw_options *o)
{
    memset(o, 0, sizeof *o);
    o->g_n                 = 8000;
    o->ch_n                = 1000;
    o->driver              = "mpio";
    o->fill                = PW_FILL_NEVER;
    o->alignment_threshold = 1;
    strcpy(o->romio_cb_write, "enable");
    strcpy(o->romio_ds_write, "disable");
    o->chunk_cache     = -1;
    o->meta_block_size = -1;
    o->limits          = 1;
    o->rounds          = 1;
    o->sync            = 1;
}

static pw_verdict
fill_time(const char *text, long long *fill, char *err, size_t len)
{
    if (!strcmp(text, "never"))
        *fill = PW_FILL_NEVER;
    else if (!strcmp(text, "alloc"))
        *fill = PW_FILL_ALLOC;
    else if (!strcmp(text, "ifset"))
        *fill = PW_FILL_IFSET;
    else
        return fail(err, len, "--fill-time must be never, alloc or ifset, got '%s'", text);
    return PW_ARGS_OK;
}

/* an option without a value, --help, or what getopt_long refused (c) */
static pw_verdict
flag_option(int c, pw_options *o, overrides *ov, char **argv, char *err, size_t len)
{
    switch (c) {
        case OPT_INDEPENDENT:
            o->independent = 1;
            break;
        case OPT_NO_FILL:
            ov->fill = PW_FILL_NEVER;
            break;
        case OPT_LATEST:
            o->latest_format = 1;
            break;
        case OPT_COLL_META:
            o->coll_metadata = 1;
            break;
        case OPT_VERIFY:
            o->verify = 1;
            break;
        case OPT_NO_LIMITS:
            o->limits = 0;
            break;
        case OPT_KEEP_LIMITS:
            o->keep_limits = 1;
            break;
        case OPT_NO_SYNC:
            o->sync = 0;
            break;
        case OPT_QUIET:
            o->quiet = 1;
            break;
        case 'h':
        case OPT_HELP:
            snprintf(err, len, "%s", USAGE);
            return PW_ARGS_HELP;
        case ':':
            return fail(err, len, "option %s needs a value", argv[optind - 1]);
        default:
            return fail(err, len, "unknown option '%s' (see --help)", argv[optind - 1]);
    }
    return PW_ARGS_OK;
}

/* one option (c, as getopt_long gives it): those with a value here, the others by flag_option */
static pw_verdict
option(int c, const char *arg, pw_options *o, overrides *ov, char **argv, char *err, size_t len)
{
    long long  v  = 0;
    pw_verdict rc = PW_ARGS_OK;
    switch (c) {
        case OPT_SIZE:
            return positive("--size", arg, &ov->size, err, len);
        case OPT_CHUNK:
            return positive("--chunk", arg, &ov->chunk, err, len);
        case OPT_DRIVER:
            o->driver = arg;
            break;
        case OPT_DRIVER_CONFIG:
            o->driver_config = arg;
            break;
        case OPT_FILL_TIME:
            return fill_time(arg, &ov->fill, err, len);
        case OPT_ALIGNMENT:
            rc           = positive("--alignment", arg, &v, err, len);
            o->alignment = (unsigned long long)v;
            break;
        case OPT_ALIGNMENT_THRESHOLD:
            rc                     = byte_count("--alignment-threshold", arg, &v, err, len);
            o->alignment_threshold = (unsigned long long)v;
            break;
        case OPT_HINTS:
            o->hints_file = arg;
            break;
        case OPT_CHUNK_CACHE:
            return byte_count("--chunk-cache", arg, &o->chunk_cache, err, len);
        case OPT_META_BLOCK:
            return byte_count("--meta-block-size", arg, &o->meta_block_size, err, len);
        case OPT_JSON:
            o->json = arg;
            break;
        case OPT_ROUNDS:
            rc = positive("--rounds", arg, &v, err, len);
            if (rc == PW_ARGS_OK && v > PW_ROUNDS_MAX)
                return fail(err, len, "--rounds must be at most %d, got '%s'", PW_ROUNDS_MAX, arg);
            o->rounds = (int)v;
            break;
        default:
            return flag_option(c, o, ov, argv, err, len);
    }
    return rc;
}

/* FILE NSETS NDSETS [PARAMFILE]: the n arguments after the options */
static pw_verdict
positional(int n, char **args, pw_options *o, char *err, size_t len)
{
    if (n < 1)
        return fail(err, len, "Must supply a filename (see --help)");
    if (n < 2)
        return fail(err, len, "Must supply a total nb of 2d datasets (NSETS)");
    if (n < 3)
        return fail(err, len, "Must supply a nb of hdf5 datasets (NDSETS)");
    if (n > 4)
        return fail(err, len, "too many arguments: '%s' (FILE NSETS NDSETS [PARAMFILE])", args[4]);
    o->file = args[0];
    if (!*o->file)
        return fail(err, len, "FILE is empty");
    if (positive("NSETS", args[1], &o->nsets, err, len) != PW_ARGS_OK ||
        positive("NDSETS", args[2], &o->ndsets, err, len) != PW_ARGS_OK)
        return PW_ARGS_BAD;
    if (n == 4 && read_paramfile(args[3], o, err, len) != PW_ARGS_OK)
        return PW_ARGS_BAD;
    return PW_ARGS_OK;
}

/* the original's constraints, in its words, and sizes that fit in 64 bits */
static pw_verdict
check(const pw_options *o, char *err, size_t len)
{
    if (o->nsets % o->ndsets)
        return fail(
            err, len,
            "Must use divisible number of hdf5 datasets (%lld/%lld): NSETS must be a multiple of NDSETS",
            o->nsets, o->ndsets);
    if (o->ch_n > o->g_n)
        return fail(err, len, "the chunk edge (%lld) must not exceed the image edge (%lld)", o->ch_n, o->g_n);
    if (o->g_n > 2147483647LL)
        return fail(err, len, "the image edge %lld is too large", o->g_n);
    /* every size the run computes fits in 64 bits (else: a division by zero, a negative
     * size, a run that never ends) */
    if (pw_image_bytes(o) < 0)
        return fail(err, len,
                    "an image of %lld x %lld doubles is more bytes than a 64-bit size holds (--size)", o->g_n,
                    o->g_n);
    if (pw_total_bytes(o) < 0)
        return fail(err, len, "NSETS x image bytes (%lld x %lld) is more than a 64-bit size holds", o->nsets,
                    pw_image_bytes(o));
    if (!o->limits && o->keep_limits)
        return fail(err, len, "--keep-limits needs the limits (drop --no-limits)");
    if (!*o->driver)
        return fail(err, len, "--driver is empty");
    return PW_ARGS_OK;
}

pw_verdict
pw_parse(int argc, char **argv, pw_options *o, char *err, size_t len)
{
    overrides  ov = {-1, -1, -1};
    pw_verdict rc = PW_ARGS_OK;
    int        c;
    set_defaults(o);
    opterr = 0;
    optind = 1;
    while (rc == PW_ARGS_OK && (c = getopt_long(argc, argv, "h", LONG_OPTIONS, NULL)) != -1)
        rc = option(c, optarg, o, &ov, argv, err, len);
    if (rc == PW_ARGS_OK)
        rc = positional(argc - optind, argv + optind, o, err, len);
    if (rc != PW_ARGS_OK)
        return rc;
    /* options win over the parameter file */
    if (ov.size > 0)
        o->g_n = ov.size;
    if (ov.chunk > 0)
        o->ch_n = ov.chunk;
    if (ov.fill >= 0)
        o->fill = (pw_fill)ov.fill;
    return check(o, err, len);
}

/* a * b, or -1 when either is negative or the product overflows */
static long long
product(long long a, long long b)
{
    long long r;
    return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

long long
pw_image_bytes(const pw_options *o)
{
    return product(product(o->g_n, o->g_n), 8);
}

long long
pw_total_bytes(const pw_options *o)
{
    return product(o->nsets, pw_image_bytes(o));
}

pw_verdict
pw_check_ranks(const pw_options *o, int nprocs, char *err, size_t len)
{
    if (product(o->ndsets, nprocs) < 0)
        return fail(err, len, "NDSETS x ranks (%lld x %d) is more than a 64-bit count holds", o->ndsets,
                    nprocs);
    if (o->nsets % (o->ndsets * nprocs))
        return fail(err, len,
                    "Must use divisible number of proc and hdf5 datasets (%lld/%lld/%d): NSETS must be a "
                    "multiple of NDSETS x ranks = %lld",
                    o->nsets, o->ndsets, nprocs, o->ndsets * nprocs);
    return PW_ARGS_OK;
}

double
pw_bytes_per_rank_per_dataset(const pw_options *o, int nprocs)
{
    return (double)(o->nsets / (o->ndsets * nprocs)) * (double)o->g_n * (double)o->g_n * 8.0;
}
