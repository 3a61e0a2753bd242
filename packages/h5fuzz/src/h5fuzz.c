/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * h5fuzz - one random parallel HDF5 workload, written through a driver and checked
 * value by value against its model (the differential part, h5diff against the same
 * workload written with MPI-IO, is the harness's: ./h5stack fuzz).
 *
 *   mpiexec -n N h5fuzz FILE --seed S [--ops K] [--driver D] [--config STR]
 *   mpiexec -n M h5fuzz FILE --seed S --verify-only --writer-ranks N [--driver D]
 *   mpiexec -n N h5fuzz FILE --case straddle|metadata|snapshot [--driver D]
 *   h5fuzz --plan --seed S [--ops K] [--grammar G] --writer-ranks N   (the plan's digest)
 *
 * Exit status: 0 when every value is as the model says, 4 when not (or a read during
 * the session was stale), 1 on an HDF5 error, 2 on bad arguments, 3 when a rank failed
 * an operation its peers did not fail.
 */
#include "fz_digest.h"
#include "fz_driver.h"
#include "fz_exec.h"
#include "fz_plan.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *path, *driver, *config, *casename;
    uint64_t    seed;
    long        ops, writer_ranks, grammar;
    int         verify_only, no_verify, verbose, plan, all_ranks;
} options_t;

static void
usage(FILE *to)
{
    fprintf(to,
            "usage: h5fuzz FILE [--seed S] [--ops K] [--grammar G] [--all-ranks] [--case C] [--driver D]\n"
            "              [--config STR]\n"
            "              [--writer-ranks N] [--verify-only | --no-verify] [--verbose]\n"
            "  --seed S          the workload (default 1); the same seed and writer ranks give the same\n"
            "  --ops K           operations in the workload (default 60)\n"
            "  --grammar G       the generator: 1 (default: int32, plain transfers, independent reads),\n"
            "                    2 (file types, filters, transfer variations, collective reads,\n"
            "                    deletes, chunk caches, alignment, latest format) or 3 (2 and\n"
            "                    element types: integers, floats, compound, string, enum, array,\n"
            "                    converted or not; 3-D datasets; paged file space), 4 (3 and\n"
            "                    nbit, scaleoffset: HDF5 1.14.6 fails them), 5 (3 and 4-D and\n"
            "                    5-D datasets; the file created and reopened read-write by fewer\n"
            "                    ranks than the job has) or 6 (5 and collective transfers of\n"
            "                    several datasets in one H5Dwrite_multi or H5Dread_multi); a seed\n"
            "                    means one workload per grammar\n"
            "  --all-ranks       grammars 5 and 6: every session by all the job's ranks (the same\n"
            "                    workload without its sessions of fewer ranks: what the DSM hosts)\n"
            "  --case C          a fixed regression workload instead of a random one: straddle, metadata,\n"
            "                    snapshot\n"
            "  --driver D        mpio (default), default (HDF5_DRIVER), multifile, mpiposix, dsm, sec2\n"
            "  --config STR      the driver's configuration (multifile options, dsm configuration)\n"
            "  --writer-ranks N  ranks that wrote the file (--verify-only; default: this job's)\n"
            "  --verify-only     only check FILE against the model; --no-verify: only write it\n"
            "  --plan            print the digest of the workload's plan (\"plan <16 hex digits>\") and\n"
            "                    exit: no FILE, no HDF5 (regressions.yaml keeps it beside each seed)\n");
}

static int rank0_g; /* every rank parses the command line, rank 0 says what is wrong */

/* "h5fuzz: <what is wrong>" on stderr (rank 0); -1 */
static int
wrong(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (rank0_g) {
        fputs("h5fuzz: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
    return -1;
}

/* text as a decimal integer of lo..hi (digits only: strtoull takes " -1" too): 0, or -1
 * with the option, the text and what it should be said */
static int
number(const char *opt, const char *text, uint64_t lo, uint64_t hi, uint64_t *v)
{
    char *end;
    errno      = 0;
    *v         = strtoull(text, &end, 10);
    int digits = isdigit((unsigned char)*text) && !*end;
    if (digits && !errno && *v >= lo && *v <= hi)
        return 0;
    if (digits && (errno == ERANGE || *v > hi))
        return wrong("%s: '%s' is more than %" PRIu64, opt, text, hi);
    return wrong("%s: '%s' is not a %s integer", opt, text, lo ? "positive" : "non-negative");
}

/* one option of getopt_long's: 0, 1 for --help, -1 when its value is wrong (said) */
static int
option(int c, options_t *o)
{
    uint64_t v  = 0;
    int      rc = 0;
    switch (c) {
        case 's':
            rc = number("--seed", optarg, 0, UINT64_MAX, &o->seed);
            break;
        case 'k':
            rc     = number("--ops", optarg, 1, 100000, &v);
            o->ops = (long)v;
            break;
        case 'w':
            rc              = number("--writer-ranks", optarg, 1, 1 << 20, &v);
            o->writer_ranks = (long)v;
            break;
        case 'g':
            rc         = number("--grammar", optarg, 1, FZ_GRAMMAR_LATEST, &v);
            o->grammar = (long)v;
            break;
        case 'c':
            o->casename = optarg;
            if (strcmp(optarg, "straddle") && strcmp(optarg, "metadata") && strcmp(optarg, "snapshot"))
                rc = wrong("--case: '%s' is not a case (straddle, metadata, snapshot)", optarg);
            break;
        case 'd':
            o->driver = optarg;
            break;
        case 'C':
            o->config = optarg;
            break;
        case 'V':
            o->verify_only = 1;
            break;
        case 'N':
            o->no_verify = 1;
            break;
        case 'v':
            o->verbose = 1;
            break;
        case 'P':
            o->plan = 1;
            break;
        case 'A':
            o->all_ranks = 1;
            break;
        case 'h':
            return 1;
        default:
            return -1; /* getopt said why (on rank 0) */
    }
    return rc;
}

/* 0, 1 for --help, -1 on bad arguments (what is wrong said by rank 0) */
static int
parse(int argc, char **argv, options_t *o)
{
    static const struct option opts[] = {
        {"seed", required_argument, 0, 's'},    {"ops", required_argument, 0, 'k'},
        {"case", required_argument, 0, 'c'},    {"driver", required_argument, 0, 'd'},
        {"config", required_argument, 0, 'C'},  {"writer-ranks", required_argument, 0, 'w'},
        {"verify-only", no_argument, 0, 'V'},   {"no-verify", no_argument, 0, 'N'},
        {"verbose", no_argument, 0, 'v'},       {"help", no_argument, 0, 'h'},
        {"grammar", required_argument, 0, 'g'}, {"plan", no_argument, 0, 'P'},
        {"all-ranks", no_argument, 0, 'A'},     {0, 0, 0, 0}};
    int c, rc = 0;
    *o     = (options_t){.driver = "mpio", .seed = 1, .ops = 60, .grammar = 1};
    opterr = rank0_g;
    while (rc == 0 && (c = getopt_long(argc, argv, "s:k:c:d:C:w:g:VNvh", opts, NULL)) != -1)
        rc = option(c, o);
    if (rc)
        return rc;
    if (o->plan && (o->casename || optind < argc))
        return wrong("--plan: a random workload's digest, with no FILE and no --case");
    if (o->plan)
        return 0;
    if (optind >= argc)
        return wrong("FILE missing");
    if (optind < argc - 1)
        return wrong("'%s': one FILE only (the first is '%s')", argv[optind + 1], argv[optind]);
    if (!*argv[optind])
        return wrong("FILE is empty");
    if (o->verify_only && o->no_verify)
        return wrong("--verify-only and --no-verify: one or the other");
    o->path = argv[optind];
    return 0;
}

/* the datasets whose elements the model leaves undefined (never written, no fill value
 * written): a comparison of whole files must leave them out (./h5stack fuzz does) */
static void
report_undefined(const fz_plan_t *p, const fz_verdict_t *v, const char *path)
{
    for (int k = 1; k < p->nobj; k++)
        if (v->undefined[k])
            printf("h5fuzz: undefined: %s: %" PRIu64 " elements (never written, no fill value written), "
                   "%" PRIu64 " of them not zero in %s\n",
                   p->obj[k].name, v->undefined[k], v->odd[k], path);
}

/* fz_plan_make's flags from the options */
static int
plan_flags(const options_t *o)
{
    return o->all_ranks ? FZ_PLAN_ALL_RANKS : 0;
}

/* --plan: the digest of the plan on rank 0's stdout; 0, or 1 (out of memory) */
static int
print_plan(const options_t *o, int ranks)
{
    fz_plan_t p;
    if (fz_plan_make(&p, o->seed, ranks, (size_t)o->ops, (int)o->grammar, plan_flags(o)) < 0) {
        fprintf(stderr, "h5fuzz: out of memory\n");
        return 1;
    }
    if (rank0_g)
        printf("plan %016" PRIx64 "\n", fz_plan_digest(&p));
    fz_plan_free(&p);
    return 0;
}

static int
run(const options_t *o, fz_ctx_t *c)
{
    fz_plan_t p;
    int       ranks = o->writer_ranks ? (int)o->writer_ranks : c->size;
    int made = !o->casename ? fz_plan_make(&p, o->seed, ranks, (size_t)o->ops, (int)o->grammar, plan_flags(o))
               : !strcmp(o->casename, "straddle") ? fz_plan_straddle(&p, ranks)
               : !strcmp(o->casename, "snapshot") ? fz_plan_snapshot(&p, ranks)
                                                  : fz_plan_metadata(&p, ranks);
    if (made < 0) {
        fprintf(stderr, "h5fuzz: out of memory\n");
        return 1;
    }
    if (!o->verify_only && fz_execute(&p, c) < 0) {
        if (c->rank == 0)
            fprintf(stderr, "h5fuzz: %s: %s\n", o->path, c->err);
        fz_plan_free(&p);
        return 1;
    }
    long         stale = 0;
    fz_verdict_t v     = {0};
    int          rc    = 0;
    MPI_Allreduce(&c->stale, &stale, 1, MPI_LONG, MPI_SUM, c->comm);
    if (!o->no_verify)
        rc = fz_verify(&p, c, &v);
    if (c->rank == 0) {
        char what[64];
        if (o->casename)
            snprintf(what, sizeof what, "case %s", o->casename);
        else
            snprintf(what, sizeof what, "seed %" PRIu64 " (grammar %ld)", o->seed, o->grammar);
        if (rc < 0)
            fprintf(stderr, "h5fuzz: %s: %s\n", o->path, c->err);
        else
            report_undefined(&p, &v, o->path);
        if (rc == 0 && (v.bad || stale))
            printf("h5fuzz: %s, %d writer ranks, %zu operations, driver %s: FAILED: %ld wrong values, "
                   "objects or attributes in the file, %ld stale values read during the session\n",
                   what, ranks, p.nops, o->driver, v.bad, stale);
        else if (rc == 0)
            printf("h5fuzz: %s, %d writer ranks, %zu operations, driver %s: ok (%s)\n", what, ranks, p.nops,
                   o->driver,
                   o->no_verify     ? "written"
                   : o->verify_only ? "verified"
                                    : "written and verified");
    }
    fz_plan_free(&p);
    return rc < 0 ? 1 : v.bad || stale ? 4 : 0;
}

int
main(int argc, char **argv)
{
    options_t o;
    fz_ctx_t  c = {0};
    int       provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    rank0_g    = c.rank == 0;
    int parsed = parse(argc, argv, &o);
    if (parsed) {
        if (rank0_g)
            usage(parsed > 0 ? stdout : stderr);
        MPI_Finalize();
        return parsed > 0 ? 0 : 2;
    }
    if (o.plan) {
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        int status = print_plan(&o, o.writer_ranks ? (int)o.writer_ranks : size);
        MPI_Finalize();
        return status;
    }
    if (fz_driver_comm(o.driver, &c.comm, c.err, sizeof c.err) < 0) {
        fprintf(stderr, "h5fuzz: %s\n", c.err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_rank(c.comm, &c.rank);
    MPI_Comm_size(c.comm, &c.size);
    c.path    = o.path;
    c.verbose = o.verbose;
    c.fapl    = fz_driver_fapl(o.driver, o.config, c.comm, c.err, sizeof c.err);
    if (c.fapl < 0) {
        if (c.rank == 0)
            fprintf(stderr, "h5fuzz: %s\n", c.err);
        MPI_Finalize();
        return 2;
    }
    int status = run(&o, &c);
    H5Pclose(c.fapl);
    MPI_Finalize();
    return status;
}
