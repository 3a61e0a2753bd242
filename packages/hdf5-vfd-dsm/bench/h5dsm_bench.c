/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * h5dsm-bench - the experiments of Soumagne, Biddiscombe, Esnard (EuroMPI 2011) at the
 * scale of the machine, against the limit measured in the same run.
 *
 *   mpiexec -n N h5dsm-bench [--servers S] [--size BYTES] [--blocks LIST] [--repeat R] [--csv FILE]
 *
 * The first S ranks of MPI_COMM_WORLD host a DSM of --size bytes each (L = S x size),
 * the other N - S ranks write HDF5 files into it through the DSM driver (MPMD coupling
 * by role: one program, both sides).
 *   limit        raw MPI_Put between the same processes: each client puts its share of
 *                L (client k to server k mod S; shared lock, puts of m bytes, unlock),
 *                m from 1 KiB to 4 MiB (an OSU-style sweep, each size the median of
 *                --repeat after a warm-up); the best median is the limit
 *   one-dataset  one 1-D dataset of about L bytes (the file fills the DSM), each client
 *                writing its hyperslab collectively, for linear and for block-cyclic and
 *                random-block with each block size of --blocks (mask, whose window is
 *                sized to the file, is linear when the file fills the DSM)
 *   ten-datasets ten datasets whose sizes (1 : 2 : ... : 10) sum to about L, same
 *                distributions
 * Each file is written --repeat times (time steps); its DSM write bandwidth (bytes of the
 * H5Dwrite calls / their time, barrier to barrier) is the median of the writes after the
 * first (the first, into fresh memory, is slower: printed apart), printed with its
 * ratio to the limit and the spread (the least and the most of those writes); rows go
 * to --csv too. The summaries name the distribution with the best median and give the
 * spread of its ratios.
 */
#include "H5FDdsm.h"
#include "dsm_distribution.h"
#include "dsm_files.h"

#include <getopt.h>
#include <hdf5.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BLOCKS 32
#define SLACK      (1u << 20) /* room for the file's metadata */
#define MAX_REPEAT 1000

/* a rate over repeated runs: the median, the least and the most */
typedef struct {
    double median, lo, hi;
} stat_t;

static int
by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the statistics of v[0..n-1] (1 <= n <= MAX_REPEAT; v is sorted in place) */
static stat_t
stat_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    stat_t s = {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[0], v[n - 1]};
    return s;
}

typedef struct {
    int      servers;
    int      repeat; /* files per distribution */
    uint64_t size;   /* per server */
    uint64_t blocks[MAX_BLOCKS];
    int      nblocks;
    FILE    *csv;
} bench_t;

static int g_rank, g_size;

static void
die(const char *msg, const char *what)
{
    if (g_rank == 0)
        fprintf(stderr, "h5dsm-bench: %s%s (see --help)\n", msg, what ? what : "");
    fflush(NULL);
    usleep(1000000); /* on a loaded node MPICH can lose what was written 0.3 s before */
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* ---------------------------------------------------------------- the limit */

/* every client puts its share of L to one server in messages of m bytes; MB/s */
static double
put_rate(const bench_t *b, MPI_Win win, int is_server, MPI_Comm clients, uint64_t total, size_t m,
         const char *buf)
{
    int    nclients = g_size - b->servers;
    double t        = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (!is_server) {
        int      k = g_rank - b->servers, target = k % b->servers;
        int      peers = (nclients - target + b->servers - 1) / b->servers; /* clients on that server */
        uint64_t share = total / (uint64_t)nclients;
        uint64_t base  = (uint64_t)(k / b->servers) * (b->size / (uint64_t)peers);
        if (share > b->size / (uint64_t)peers)
            share = b->size / (uint64_t)peers;
        MPI_Barrier(clients);
        double t0 = MPI_Wtime();
        MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
        for (uint64_t off = 0; off < share; off += m) {
            int n = (int)(share - off < m ? share - off : m);
            MPI_Put(buf + off, n, MPI_BYTE, target, (MPI_Aint)(base + off), n, MPI_BYTE, win);
        }
        MPI_Win_unlock(target, win);
        MPI_Barrier(clients);
        t = MPI_Wtime() - t0;
    }
    double tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    uint64_t moved = (total / (uint64_t)nclients) * (uint64_t)nclients;
    return tmax > 0 ? (double)moved / 1e6 / tmax : 0.0;
}

static stat_t
measure_limit(const bench_t *b, int is_server, MPI_Comm clients, uint64_t total)
{
    char   *local = NULL, *buf = NULL;
    MPI_Win win;
    MPI_Win_allocate(is_server ? (MPI_Aint)b->size : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &local, &win);
    if (!is_server) {
        buf = malloc(b->size);
        if (!buf)
            die("no memory for the put buffer", NULL);
        memset(buf, 0x5a, b->size);
    }
    stat_t best   = {0, 0, 0};
    size_t best_m = 0;
    for (size_t m = 1024; m <= (4u << 20); m *= 2) {
        put_rate(b, win, is_server, clients, total, m, buf); /* warm-up */
        double x[MAX_REPEAT];
        for (int k = 0; k < b->repeat; k++)
            x[k] = put_rate(b, win, is_server, clients, total, m, buf);
        stat_t r = stat_of(x, b->repeat); /* the median of --repeat, as for the DSM writes */
        if (g_rank == 0) {
            printf("h5dsm-bench: limit MPI_Put, messages of %8zu bytes: %10.1f MB/s  (%.1f - %.1f)\n", m,
                   r.median, r.lo, r.hi);
            if (b->csv)
                fprintf(b->csv, "limit,MPI_Put,%zu,%" PRIu64 ",%.1f,,,%.1f,%.1f\n", m, total, r.median, r.lo,
                        r.hi);
        }
        if (r.median > best.median)
            best = r, best_m = m;
    }
    if (g_rank == 0) {
        printf("h5dsm-bench: limit MPI_Put: %.1f MB/s (messages of %zu bytes)\n", best.median, best_m);
        printf("h5dsm-bench: spread limit MPI_Put: %.1f - %.1f MB/s\n", best.lo, best.hi);
    }
    free(buf);
    MPI_Win_free(&win);
    return best;
}

/* ---------------------------------------------------------------- DSM writes */

/* clients: one file of ndsets datasets summing to about L bytes; MB/s of the writes */
static double
write_file(const bench_t *b, MPI_Comm clients, int ndsets, double *buf, uint64_t *bytes_out)
{
    int      crank, nclients;
    uint64_t L       = (uint64_t)b->servers * b->size;
    uint64_t payload = L > 2 * SLACK ? L - SLACK : L / 2;
    uint64_t units   = (uint64_t)ndsets * (uint64_t)(ndsets + 1) / 2; /* 1 : 2 : ... : ndsets */
    MPI_Comm_rank(clients, &crank);
    MPI_Comm_size(clients, &nclients);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_dsm(fapl, clients, NULL);
    hid_t f = H5Fcreate("h5dsm-bench.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (f < 0)
        die("cannot create the file in the DSM", NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
    double   t       = 0;
    uint64_t written = 0;
    for (int d = 0; d < ndsets; d++) {
        char    name[32];
        hsize_t n     = (hsize_t)(payload / units * (uint64_t)(d + 1) / 8);
        hsize_t share = n / (hsize_t)nclients, first = share * (hsize_t)crank;
        hsize_t count = crank == nclients - 1 ? n - first : share;
        snprintf(name, sizeof name, "data_%02d", d);
        hid_t space = H5Screate_simple(1, &n, NULL);
        hid_t ds    = H5Dcreate2(f, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        if (ds < 0)
            die("cannot create a dataset in the DSM", NULL);
        for (hsize_t i = 0; i < count; i++)
            buf[i] = (double)(first + i); /* count <= the caller's n: shares of at most L */
        hid_t mem = H5Screate_simple(1, &count, NULL);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &first, NULL, &count, NULL);
        MPI_Barrier(clients);
        double t0 = MPI_Wtime();
        if (H5Dwrite(ds, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf) < 0)
            die("a write into the DSM failed", NULL);
        MPI_Barrier(clients);
        t += MPI_Wtime() - t0;
        written += n * 8;
        H5Sclose(mem);
        H5Sclose(space);
        H5Dclose(ds);
    }
    H5Pclose(dcpl);
    H5Pclose(dxpl);
    if (H5Fclose(f) < 0)
        die("cannot close the file in the DSM", NULL);
    H5Pclose(fapl);
    *bytes_out = written;
    return (double)written / 1e6 / t;
}

/* one experiment on one distribution: the servers host, the clients write the file
 * --repeat times (time steps into the same DSM); the first write is reported apart
 * (it pays for touching fresh memory in the MPI library), the median of the others
 * stands, with their spread */
static stat_t
run_one(const bench_t *b, int is_server, const char *dist, int ndsets, double limit, const char *experiment)
{
    char     err[1024];
    double   rate[4] = {0, 0, 0, 0}; /* first, median, least, most of the later writes */
    uint64_t bytes   = 0;
    if (is_server) {
        h5dsm_host_t *host = NULL;
        if (h5dsm_host_start(&host, dist, b->size, NULL, err, sizeof err) < 0)
            die(err, NULL);
        if (h5dsm_host_serve(host, NULL, NULL) < 0)
            die("serving the clients failed", NULL);
        h5dsm_host_stop(host);
    }
    else {
        MPI_Comm clients;
        int      nclients;
        if (H5FD_dsm_mpmd_clients(&clients) < 0)
            die("cannot join the servers", NULL);
        MPI_Comm_size(clients, &nclients);
        size_t  n   = (size_t)((uint64_t)b->servers * b->size / (uint64_t)nclients / 8 + 16);
        double *buf = malloc(n * sizeof *buf);
        if (!buf)
            die("no memory for the data", NULL);
        double x[MAX_REPEAT];
        for (int r = 0; r < b->repeat; r++)
            x[r] = write_file(b, clients, ndsets, buf, &bytes);
        rate[0] = x[0];
        /* the writes after the first (all of them when there is one) */
        stat_t st = b->repeat > 1 ? stat_of(x + 1, b->repeat - 1) : stat_of(x, 1);
        rate[1] = st.median, rate[2] = st.lo, rate[3] = st.hi;
        free(buf);
        MPI_Comm_free(&clients);
        H5FD_dsm_disconnect();
    }
    /* the result travels from the first client to rank 0 */
    MPI_Bcast(rate, 4, MPI_DOUBLE, b->servers, MPI_COMM_WORLD);
    MPI_Bcast(&bytes, 1, MPI_UINT64_T, b->servers, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf(
            "h5dsm-bench: %s %-24s %10.1f MB/s  ratio to MPI_Put %.3f  (first write %.1f MB/s; later writes "
            "%.1f - %.1f)\n",
            experiment, dist, rate[1], limit > 0 ? rate[1] / limit : 0.0, rate[0], rate[2], rate[3]);
        if (b->csv)
            fprintf(b->csv, "%s,%s,,%" PRIu64 ",%.1f,%.4f,%.1f,%.1f,%.1f\n", experiment, dist, bytes, rate[1],
                    limit > 0 ? rate[1] / limit : 0.0, rate[0], rate[2], rate[3]);
        fflush(stdout);
    }
    stat_t st = {rate[1], rate[2], rate[3]};
    return st;
}

static void
usage(void)
{
    printf(
        "usage: mpiexec -n N h5dsm-bench [--servers S] [--size BYTES] [--blocks LIST] [--repeat R] [--csv "
        "FILE]\n"
        "  --servers S     the first S ranks host the DSM (default 1; N - S >= 1 clients)\n"
        "  --size BYTES    bytes each server hosts (default 64m; k, m, g suffixes)\n"
        "  --blocks LIST   block sizes of block-cyclic and random-block (default 1k,4k,16k,64k,256k,1m,4m)\n"
        "  --repeat R      files written per distribution (time steps; default 3): the median of\n"
        "                  those after the first counts, with their spread (also puts per size)\n"
        "  --csv FILE      rows: "
        "experiment,distribution,message_bytes,bytes,MB_per_s,ratio,first_MB_per_s,min_MB_per_s,max_MB_per_"
        "s\n");
}

/* the command line into b (blocks and csv as given); 1 after --help, 0 to run */
static int
parse_options(int argc, char **argv, bench_t *b, const char **blocks, const char **csv)
{
    static const struct option opts[] = {{"servers", required_argument, 0, 's'},
                                         {"size", required_argument, 0, 'z'},
                                         {"blocks", required_argument, 0, 'b'},
                                         {"csv", required_argument, 0, 'c'},
                                         {"repeat", required_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    opterr                            = 0;
    for (int c; (c = getopt_long(argc, argv, "s:z:b:c:r:h", opts, NULL)) != -1;) {
        const char *end = NULL;
        switch (c) {
            case 's':
                b->servers = atoi(optarg);
                break;
            case 'z':
                b->size = dsm_parse_size(optarg, &end);
                if (!b->size || *end)
                    die("--size must be a positive size (k, m, g suffixes), got ", optarg);
                break;
            case 'b':
                *blocks = optarg;
                break;
            case 'c':
                *csv = optarg;
                break;
            case 'r':
                b->repeat = atoi(optarg);
                if (b->repeat < 1 || b->repeat > MAX_REPEAT)
                    die("--repeat must be an integer from 1 to 1000, got ", optarg);
                break;
            case 'h':
                if (g_rank == 0)
                    usage();
                return 1;
            default:
                die("unknown option or missing value: ", argv[optind - 1]);
        }
    }
    if (b->servers < 1 || b->servers >= g_size)
        die("need 1 <= --servers < ranks (at least one client)", NULL);
    return 0;
}

/* --blocks: a comma-separated list of sizes up to --size */
static void
parse_blocks(bench_t *b, const char *blocks)
{
    char copy[512], *save = NULL;
    snprintf(copy, sizeof copy, "%s", blocks);
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char *end = NULL;
        uint64_t    s   = dsm_parse_size(t, &end);
        if (!s || *end || s > b->size || b->nblocks == MAX_BLOCKS)
            die("--blocks: each a size up to --size, at most 32, got ", t);
        b->blocks[b->nblocks++] = s;
    }
}

static void
print_header(const bench_t *b, uint64_t L)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int  len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    printf("h5dsm-bench: %d server(s) x %" PRIu64 " bytes = %" PRIu64
           " bytes, %d client(s); %s; HDF5 %d.%d.%d\n",
           b->servers, b->size, L, g_size - b->servers, lib, H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE);
}

/* ratio a / b, 0 when b is 0 */
static double
ratio(double a, double b)
{
    return b > 0 ? a / b : 0.0;
}

/* the summary of one experiment (rank 0): the best median and the spread of its ratios */
static void
print_summary(const char *experiment, stat_t lin, stat_t block, const char *block_dist, double limit)
{
    stat_t best = lin.median >= block.median ? lin : block;
    printf("h5dsm-bench: summary %s: best %.1f MB/s = %.3f of MPI_Put (%s); linear %.1f MB/s, best block "
           "distribution %s %.1f MB/s = %.3f x linear\n",
           experiment, best.median, ratio(best.median, limit),
           lin.median >= block.median ? "linear" : block_dist, lin.median, block_dist, block.median,
           ratio(block.median, lin.median));
    printf("h5dsm-bench: spread %s: best %.1f - %.1f MB/s = %.3f - %.3f of MPI_Put; best block %.3f - %.3f x "
           "linear\n",
           experiment, best.lo, best.hi, ratio(best.lo, limit), ratio(best.hi, limit),
           ratio(block.lo, lin.hi), ratio(block.hi, lin.lo));
}

/* the paper's two experiments (one dataset, ten datasets) on every distribution and
 * block size, and the summary lines of each */
static void
run_experiments(const bench_t *b, int is_server, double limit)
{
    const char *experiments[2] = {"one-dataset", "ten-datasets"};
    stat_t      best_lin[2] = {{0, 0, 0}, {0, 0, 0}}, best_block[2] = {{0, 0, 0}, {0, 0, 0}};
    char        best_block_dist[2][64] = {"", ""};
    for (int e = 0; e < 2; e++) {
        int ndsets  = e == 0 ? 1 : 10;
        best_lin[e] = run_one(b, is_server, "linear", ndsets, limit, experiments[e]);
        for (int kind = 0; kind < 2; kind++)
            for (int i = 0; i < b->nblocks; i++) {
                char dist[64];
                snprintf(dist, sizeof dist, "%s:%" PRIu64, kind ? "random-block" : "block-cyclic",
                         b->blocks[i]);
                stat_t r = run_one(b, is_server, dist, ndsets, limit, experiments[e]);
                if (r.median > best_block[e].median) {
                    best_block[e] = r;
                    snprintf(best_block_dist[e], sizeof best_block_dist[e], "%s", dist);
                }
            }
    }
    for (int e = 0; e < 2 && g_rank == 0; e++)
        print_summary(experiments[e], best_lin[e], best_block[e], best_block_dist[e], limit);
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    bench_t     b      = {.servers = 1, .repeat = 3, .size = 64u << 20};
    const char *blocks = "1k,4k,16k,64k,256k,1m,4m", *csv = NULL;
    if (parse_options(argc, argv, &b, &blocks, &csv)) {
        MPI_Finalize();
        return 0;
    }
    parse_blocks(&b, blocks);
    if (g_rank == 0 && csv && !(b.csv = dsm_create_new(csv))) /* never through a planted link */
        die("cannot write the CSV file ", csv);
    if (b.csv)
        fprintf(b.csv,
                "experiment,distribution,message_bytes,bytes,MB_per_s,ratio,first_MB_per_s,min_MB_per_s,"
                "max_MB_per_s\n");

    int      is_server = g_rank < b.servers;
    MPI_Comm side;
    MPI_Comm_split(MPI_COMM_WORLD, is_server, g_rank, &side);
    uint64_t L = (uint64_t)b.servers * b.size;
    if (g_rank == 0)
        print_header(&b, L);
    stat_t limit = measure_limit(&b, is_server, side, L > SLACK ? L - SLACK : L);
    run_experiments(&b, is_server, limit.median);
    if (b.csv)
        fclose(b.csv);
    MPI_Comm_free(&side);
    MPI_Finalize();
    return 0;
}
