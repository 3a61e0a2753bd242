/* Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause */
/*
 * h5mf - inspect, verify and reconstruct multifile directories.
 *
 *   h5mf info DIR [--json] [--memory SIZE]  ranks, records, bytes, state, what is incomplete
 *   h5mf verify DIR [--partial]        check every index and data checksum
 *   h5mf merge DIR [-o FILE] [--partial] [--force] [--no-verify] [--memory SIZE] [-q] [--progress-lines]
 *                                      reconstruct the HDF5 file: in place of DIR
 *                                      (atomic replace), or into FILE (DIR kept),
 *                                      after checking every data checksum (unless
 *                                      --no-verify); under mpiexec the ranks share
 *                                      the work
 *   h5mf clean DIR [--remove]          list (remove) the orphans in the directory DIR:
 *                                      head layout directories (NAME.h5mf) that no
 *                                      head beside them names and no writer holds
 * The index is resolved in address windows of at most --memory bytes of records each
 * (default 1G; see mf_merge.h): memory stays bounded whatever the directory holds.
 * Exit status: 0 success, 1 failure (message on stderr), 2 usage error.
 */
#include "mf_head.h"
#include "mf_merge.h"
#include "mf_merge_mpi.h"
#include "mf_replace.h"
#include "vfd_mpi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int         rank_g, size_g;
static const char *head_g    = NULL; /* the head the command was given, whose body is its DIR (mf_head.h) */
static const char *given_g   = NULL; /* that head's path as given: what the output names */
static const char *adopted_g = NULL; /* the body given for a merge in place of its head (adopt_owner) */
static uint64_t    window_records_g = MF_WINDOW_DEFAULT_BYTES / MF_WINDOW_RECORD_BYTES; /* --memory */

/* what the output calls DIR: the head's path as given, or DIR itself */
static const char *
shown(const char *dir)
{
    return head_g ? given_g : dir;
}

/* the most records a window's map holds: --memory's, or the test hook's (windows of a
 * few records); at least 1 (0 would mean the directory loaded whole, mf_merge_job_t) */
static uint64_t
window_records(void)
{
    const char *test = getenv("H5MF_TEST_WINDOW_RECORDS");
    uint64_t    n    = test ? strtoull(test, NULL, 10) : window_records_g;
    return n ? n : 1;
}

/* read the directory for info or verify: counts only, the index resolved later window by window */
static int
scan(mf_dir_t *d, const char *dir, int load_mode, mf_err_t err)
{
    int rc = mf_dir_scan(d, dir, load_mode, err);
    if (rc == 0)
        d->window_records = window_records();
    return rc;
}

/* "512M", "2G", "1048576": bytes; 0 if it is not a size */
static uint64_t
parse_size(const char *s)
{
    char *end;
    errno                  = 0;
    unsigned long long v   = strtoull(s, &end, 10);
    const char        *suf = "KMGT", *at = *end ? strchr(suf, *end) : NULL;
    if (errno || end == s || *s == '-' || (*end && (!at || end[1])))
        return 0;
    for (int k = at ? (int)(at - suf) + 1 : 0; k > 0; k--, v <<= 10)
        if (v > (UINT64_MAX >> 10))
            return 0;
    return v;
}

static void
usage(FILE *out)
{
    fprintf(out, "usage: h5mf info DIR [--json] [--memory SIZE]\n"
                 "       h5mf verify DIR [--partial]\n"
                 "       h5mf merge DIR [-o FILE] [--partial] [--force] [--no-verify] [--memory SIZE] [-q]\n"
                 "                  [--progress-lines]\n"
                 "       h5mf clean DIR [--remove]\n"
                 "\n"
                 "  info     what the directory holds: ranks, records, bytes, completion\n"
                 "  verify   check the metafile, every index record and every data checksum\n"
                 "  merge    reconstruct the ordinary HDF5 file; without -o it atomically replaces DIR\n"
                 "           (run it under mpiexec to share the work among ranks)\n"
                 "  clean    list the orphans in the directory DIR: directories NAME.h5mf of the head\n"
                 "           layout that no head beside them names (its head removed by rm, remove() or\n"
                 "           MPI_File_delete) and no writer holds; --remove deletes them\n"
                 "  --partial  accept a directory whose writer did not close it: use the data of\n"
                 "             every completed flush (merge then needs -o: DIR is kept)\n"
                 "  --force    let -o overwrite an existing FILE\n"
                 "  --no-verify  merge without checking the data checksums first (the check reads\n"
                 "             every byte written once more; h5mf verify does it on its own)\n"
                 "  --memory SIZE  memory for resolving the index, per process (default 1G; K, M, G, T\n"
                 "             suffixes): larger directories are resolved in several passes\n"
                 "  -q         no progress bar\n"
                 "  --progress-lines  progress as lines `h5mf-progress verifying|merging DONE TOTAL`\n"
                 "             on stderr (bytes; for programs that show their own), tty or not\n");
}

static int
fail(const char *msg)
{
    if (rank_g == 0)
        fprintf(stderr, "h5mf: %s\n", msg);
    return 1;
}

/* all ranks agree (vfd_agree); 0 if every rank is ok, else 1 with the lowest failing
 * rank's message said (by rank 0) */
static int
agree(int ok, mf_err_t msg)
{
    return vfd_agree(MPI_COMM_WORLD, ok, msg, MF_ERRMSG_SIZE) < 0 ? fail(msg) : 0;
}

typedef struct {
    double      t0, last;
    int         enabled;
    uint64_t    kill_after; /* test hook H5MF_TEST_KILL_AFTER_BYTES: die mid-merge (crash tests) */
    const char *what;       /* "verifying" or "merging" (NULL) */
    int         lines;      /* --progress-lines: "h5mf-progress WHAT DONE TOTAL" lines for programs */
} progress_t;

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void
progress(uint64_t done, uint64_t total, void *arg)
{
    progress_t *p    = arg;
    const char *what = p->what ? p->what : "merging";
    double      t    = now();
    if (p->kill_after && !p->what && done >= p->kill_after) {
        fprintf(stderr, "h5mf: killed after %" PRIu64 " bytes (H5MF_TEST_KILL_AFTER_BYTES)\n", done);
        raise(SIGKILL);
    }
    if (done > total) /* totals of a scanned directory are bounds */
        done = total;
    if (!p->enabled || (t - p->last < 0.2 && done < total))
        return;
    p->last = t;
    if (p->lines) {
        fprintf(stderr, "h5mf-progress %s %" PRIu64 " %" PRIu64 "\n", what, done, total);
        return;
    }
    double frac  = total ? (double)done / (double)total : 1.0;
    int    width = 30, fill = (int)(frac * width);
    double rate = (double)done / (t - p->t0 + 1e-9) / (1 << 20);
    fprintf(stderr, "\r  %-9s [%.*s%*s] %5.1f%% %8.1f MiB/s", what, fill, "##############################",
            width - fill, "", 100 * frac, rate);
    if (done >= total)
        fputc('\n', stderr);
}

/* length of the valid UTF-8 sequence at s (1..4), or 0 if the bytes there are not one */
static int
utf8_len(const unsigned char *s)
{
    int n = s[0] < 0x80             ? 1
            : (s[0] & 0xE0) == 0xC0 ? 2
            : (s[0] & 0xF0) == 0xE0 ? 3
            : (s[0] & 0xF8) == 0xF0 ? 4
                                    : 0;
    if (n == 2 && s[0] < 0xC2)
        return 0; /* overlong */
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* a path as a JSON string: quotes, backslashes and control characters escaped; a byte
 * that is not UTF-8 as the lone surrogate U+DC80..U+DCFF, Python's convention for such
 * names (json.loads then os.fsencode gives back the exact bytes) */
static void
json_string(FILE *out, const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    fputc('"', out);
    while (*s) {
        int n = utf8_len(s);
        if (*s == '"' || *s == '\\')
            fprintf(out, "\\%c", *s);
        else if (*s < 0x20)
            fprintf(out, "\\u%04x", *s);
        else if (n == 0)
            fprintf(out, "\\udc%02x", *s);
        else
            fwrite(s, 1, (size_t)n, out);
        s += n ? n : 1;
    }
    fputc('"', out);
}

static int
cmd_info(const char *dir, int json)
{
    mf_dir_t d;
    mf_err_t err;
    uint64_t extents;
    if (scan(&d, dir, MF_LOAD_ANY, err) < 0)
        return fail(err);
    if (mf_dir_extents(&d, &extents, err) < 0) {
        mf_dir_free(&d);
        return fail(err);
    }
    uint64_t records = 0, bytes = 0, dropped = 0, torn = 0;
    for (unsigned r = 0; r < d.meta.ranks; r++) {
        records += d.ranks[r].n;
        bytes += d.ranks[r].bytes;
        dropped += d.ranks[r].dropped;
        torn += d.ranks[r].torn;
    }
    int complete = d.meta.state == MF_STATE_COMPLETE;
    if (rank_g == 0 && json) {
        printf("{\"path\": ");
        json_string(stdout, shown(dir));
        printf(", \"format\": %" PRIu32 ", \"ranks\": %" PRIu32 ", \"state\": \"%s\", "
               "\"committed_epochs\": %" PRIu32 ", \"eoa\": %" PRIu64 ", \"records\": %" PRIu64
               ", \"bytes\": %" PRIu64 ", \"uncommitted_records\": %" PRIu64 ", \"torn_indexes\": %" PRIu64
               ", \"extents\": %" PRIu64 ", \"reconstructed_size\": %" PRIu64
               ", \"damaged\": %s, \"per_rank\": [",
               d.meta.version, d.meta.ranks, complete ? "complete" : "writing", d.meta.committed, d.meta.eoa,
               records, bytes, dropped, torn, extents, d.size, *d.problem ? "true" : "false");
        for (unsigned r = 0; r < d.meta.ranks; r++)
            printf("%s{\"rank\": %u, \"records\": %" PRIu64 ", \"bytes\": %" PRIu64
                   ", \"data_size\": %" PRIu64 ", \"uncommitted_records\": %" PRIu64 ", \"torn\": %" PRIu64
                   "}",
                   r ? ", " : "", r, d.ranks[r].n, d.ranks[r].bytes, d.ranks[r].data_size, d.ranks[r].dropped,
                   d.ranks[r].torn);
        printf("]}\n");
    }
    else if (rank_g == 0) {
        printf("%s: multifile format %" PRIu32 ", %" PRIu32 " ranks, %s, %" PRIu32 " committed epochs\n",
               shown(dir), d.meta.version, d.meta.ranks,
               complete ? "complete" : "INCOMPLETE (the writer did not close it)", d.meta.committed);
        printf("  %-6s %10s %14s %14s %12s %s\n", "rank", "records", "bytes", "data file", "uncommitted",
               "index");
        for (unsigned r = 0; r < d.meta.ranks; r++)
            printf("  %-6u %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %12" PRIu64 " %s\n", r, d.ranks[r].n,
                   d.ranks[r].bytes, d.ranks[r].data_size, d.ranks[r].dropped,
                   d.ranks[r].torn ? "ends in a partial record" : "ok");
        printf("  total: %" PRIu64 " records, %" PRIu64 " bytes written; reconstructed file: %" PRIu64
               " bytes in %" PRIu64 " extents\n",
               records, bytes, d.size, extents);
        if (!complete)
            printf("  %" PRIu64 " records after the last completed flush would be left out by "
                   "`h5mf merge --partial -o FILE`\n",
                   dropped);
        if (*d.problem)
            printf("  DAMAGED: %s\n", d.problem);
        if (!head_g && mf_body_state(dir) == MF_BODY_ORPHAN)
            printf("  an orphan: the directory of a head layout file whose head is gone (nothing reads "
                   "it; `h5mf clean --remove` deletes it)\n");
    }
    mf_dir_free(&d);
    return 0;
}

static int
cmd_verify(const char *dir, int partial)
{
    mf_dir_t d;
    mf_err_t err = "";
    int      ok  = scan(&d, dir, partial ? MF_LOAD_PARTIAL : MF_LOAD_COMPLETE, err) == 0;
    if (agree(ok, err))
        return 1;
    ok = mf_verify_part(&d, (unsigned)rank_g, (unsigned)size_g, NULL, NULL, err) == 0;
    if (agree(ok, err) == 0 && rank_g == 0) {
        uint64_t records = 0, bytes = 0;
        for (unsigned r = 0; r < d.meta.ranks; r++) {
            records += d.ranks[r].n;
            bytes += d.ranks[r].bytes;
        }
        printf("%s: ok: %" PRIu32 " ranks, %" PRIu64 " records, %" PRIu64 " bytes, checksums %s\n",
               shown(dir), d.meta.ranks, records, bytes,
               d.ranks[0].checksums ? "verified" : "not recorded (checksums=off)");
    }
    mf_dir_free(&d);
    return ok ? 0 : 1;
}

/* does the path `out` name the directory `dir` or something inside it? (its parent
 * resolved, since `out` itself need not exist yet) */
static int
inside(const char *dir, const char *out)
{
    char d[PATH_MAX], where[PATH_MAX], parent[PATH_MAX], p[PATH_MAX], o[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s", out);
    char *slash = strrchr(p, '/'), *base = slash ? slash + 1 : p;
    snprintf(where, sizeof where, "%s", !slash ? "." : slash == p ? "/" : (*slash = '\0', p));
    if (!realpath(dir, d) || !realpath(where, parent))
        return 0; /* nothing to compare: the write reports what is missing */
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        snprintf(o, sizeof o, "%s/%s", parent, base);
    else
        snprintf(o, sizeof o, "%s%s%s", parent, strcmp(parent, "/") ? "/" : "", base);
    char resolved[PATH_MAX];
    if (realpath(o, resolved)) /* an existing entry: compare what it is */
        snprintf(o, sizeof o, "%s", resolved);
    size_t n = strlen(d);
    return !strncmp(o, d, n) && (o[n] == '\0' || o[n] == '/');
}

/* the directory -o FILE goes into exists (else -1 with errno, its path in parent) */
static int
parent_dir(const char *out, char *parent, size_t n)
{
    struct stat st;
    snprintf(parent, n, "%s", out);
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, n, ".");
    else if (slash == parent)
        parent[1] = '\0'; /* "/x": the root */
    else
        *slash = '\0';
    if (stat(parent, &st) < 0)
        return -1;
    return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
}

/* -o FILE, checked before any work: not inside DIR, not a directory, device, FIFO or
 * socket, in a directory that exists, not there already unless --force; 0, or 1 with
 * the reason said */
static int
check_output(const char *dir, const char *out, int force)
{
    mf_err_t    err;
    char        parent[PATH_MAX];
    struct stat st;
    if (inside(dir, out))
        snprintf(err, sizeof err,
                 "%s: inside the directory %s being merged: the output must be written elsewhere", out, dir);
    else if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(err, sizeof err, "%s: is a directory (-o names the file to write)", out);
    else if (lstat(out, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) /* even with --force */
        snprintf(err, sizeof err, "%s: not a regular file (a device, FIFO or socket is never replaced)", out);
    else if (!force && lstat(out, &st) == 0) /* a link too, even one that points nowhere */
        snprintf(err, sizeof err, "%s: exists (use --force to overwrite it)", out);
    else if (parent_dir(out, parent, sizeof parent) < 0)
        snprintf(err, sizeof err, "%s: cannot be created: %s: %s", out, parent, strerror(errno));
    else
        return 0;
    return fail(err);
}

/* rank 0's line on a merge done: what, from what, and the time of each step */
static void
report_merge(const mf_merge_done_t *m, const char *dir, const char *out, int verify)
{
    printf("%s: reconstructed %s (%" PRIu64 " bytes from %" PRIu64 " bytes of %" PRIu64
           " records, %d process%s, "
           "%.2f s: load %.2f s, verify %s%.2f s, write %.2f s)\n",
           shown(dir), out ? out : shown(dir), m->size, m->bytes, m->records, size_g, size_g > 1 ? "es" : "",
           m->load + m->verify + m->write, m->load,
           !verify        ? "skipped "
           : m->checksums ? ""
                          : "(no checksums) ",
           m->verify, m->write);
}

/* progress of the writing, after the verification's */
static void
progress_write(uint64_t done, uint64_t total, void *arg)
{
    progress_t *p = arg;
    if (p->what) { /* the first call of the writing */
        p->what = NULL;
        p->t0   = now();
        p->last = 0;
    }
    progress(done, total, arg);
}

static int
cmd_merge(const char *dir, const char *out, int partial, int force, int verify, int quiet, int lines)
{
    mf_err_t err = "";
    if (partial && !out)
        return fail(
            "--partial needs -o FILE: the directory keeps the records after the last completed flush");
    if (out && check_output(dir, out, force))
        return 1;
    const char     *kill_after = getenv("H5MF_TEST_KILL_AFTER_BYTES");
    progress_t      p          = {now(),
                                  0,
                                  rank_g == 0 && (lines || (!quiet && isatty(2))),
                    kill_after ? strtoull(kill_after, NULL, 10) : 0,
                                  "verifying",
                                  lines};
    mf_merge_job_t  job        = {.comm           = MPI_COMM_WORLD,
                                  .dir            = dir,
                                  .head           = head_g,
                                  .out            = out,
                                  .load_mode      = partial ? MF_LOAD_PARTIAL : MF_LOAD_COMPLETE,
                                  .window_records = window_records(),
                                  .verify         = verify,
                                  .verify_cb      = progress,
                                  .write_cb       = progress_write,
                                  .arg            = &p};
    mf_merge_done_t done;
    if (mf_merge_run(&job, &done, err) < 0)
        return fail(err);
    if (rank_g != 0) /* the message is rank 0's; the status every rank's */
        return done.left;
    report_merge(&done, dir, out, verify);
    if (adopted_g)
        fprintf(stderr, "h5mf: %s is the directory of the head %s: merged in place of the head\n", adopted_g,
                given_g);
    return done.left ? fail(err) : 0;
}

/* the command line's options */
typedef struct {
    const char *out;
    int         partial, force, json, quiet, verify, lines, remove;
} args_t;

/* the options into a; -1 to go on, else the exit status (usage printed by rank 0) */
static int
parse_options(int argc, char **argv, args_t *a)
{
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"partial", no_argument, 0, 'p'},
                                         {"force", no_argument, 0, 'f'},
                                         {"json", no_argument, 0, 'j'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {"no-verify", no_argument, 0, 'n'},
                                         {"memory", required_argument, 0, 'm'},
                                         {"progress-lines", no_argument, 0, 'P'},
                                         {"remove", no_argument, 0, 'r'},
                                         {0, 0, 0, 0}};
    int                        c;
    *a = (args_t){.verify = 1};
    while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (c) {
            case 'o':
                a->out = optarg;
                break;
            case 'p':
                a->partial = 1;
                break;
            case 'f':
                a->force = 1;
                break;
            case 'j':
                a->json = 1;
                break;
            case 'q':
                a->quiet = 1;
                break;
            case 'n':
                a->verify = 0;
                break;
            case 'P':
                a->lines = 1;
                break;
            case 'r':
                a->remove = 1;
                break;
            case 'm': {
                uint64_t bytes = parse_size(optarg);
                if (bytes < (1u << 20)) {
                    if (rank_g == 0)
                        fprintf(stderr, "h5mf: --memory %s: not a size of at least 1M (e.g. 512M, 4G)\n",
                                optarg);
                    return 2;
                }
                window_records_g = bytes / MF_WINDOW_RECORD_BYTES;
                break;
            }
            case 'h':
                if (rank_g == 0)
                    usage(stdout);
                return 0;
            default:
                if (rank_g == 0)
                    usage(stderr);
                return 2;
        }
    }
    if (argc - optind != 2) {
        if (rank_g == 0)
            usage(stderr);
        return 2;
    }
    return -1;
}

/* a head given for DIR: *dir becomes its body (head_g the head); -1 to go on, else the
 * exit status (the reason printed): a damaged head, a head without its body */
static int
resolve_head(const char **dir, char body[PATH_MAX])
{
    static char real[PATH_MAX]; /* the head itself: a merge in place never replaces a link to it */
    uint64_t    run = 0;
    mf_meta_t   meta;
    mf_err_t    err = "", why = "";
    int         h = *dir && **dir ? mf_head_read(*dir, body, PATH_MAX, &run, err) : 0;
    if (h == 1 && (!mf_is_multifile(body) || mf_meta_read(body, &meta, why) < 0))
        snprintf(err, sizeof err,
                 "%s: the head of a multifile file, but its directory %s is not there: a head moved away "
                 "from its directory, or the directory removed %.300s",
                 *dir, body, why);
    else if (h == 1 && meta.run != run)
        snprintf(err, sizeof err,
                 "%s: names the directory %s of run %016" PRIx64 ", which now holds run %016" PRIx64
                 ": the directory belongs to another file",
                 *dir, body, run, meta.run);
    if (h < 0 || (h == 1 && *err)) {
        if (rank_g == 0)
            fprintf(stderr, "h5mf: %s\n", err);
        return 1;
    }
    if (h == 1) {
        given_g = *dir;
        head_g  = realpath(*dir, real) ? real : *dir;
        *dir    = body;
    }
    return -1;
}

/* rank 0: the head that names DIR, a directory given for a merge in place, in head
 * (PATH_MAX); 0 to adopt it, -1 to go on (no head, or not a multifile directory: the
 * scan says what it is), 1 to refuse (the reason printed): a link, a damaged head or
 * several name it, an orphan body, its parent unreadable */
static int
find_owner(const char *dir, char *head)
{
    struct stat st;
    char        trimmed[PATH_MAX];
    mf_meta_t   meta;
    mf_err_t    why;
    int         intact = 0, damaged = 0;
    snprintf(trimmed, sizeof trimmed, "%s", dir);
    for (size_t n = strlen(trimmed); n > 1 && trimmed[n - 1] == '/';)
        trimmed[--n] = '\0';
    const char *no = NULL;
    if (lstat(trimmed, &st) == 0 && S_ISLNK(st.st_mode))
        no = "a symbolic link: a merge in place replaces the directory itself; give its own path";
    else if (!mf_is_multifile(dir) || mf_meta_read(dir, &meta, why) < 0)
        return -1;
    else if (mf_head_find(dir, meta.run, head, PATH_MAX, &intact, &damaged) < 0)
        no = "its directory cannot be read for the head that names it";
    else if (damaged)
        no = "named by a head whose first bytes or slot were overwritten";
    else if (intact > 1)
        no = "named by more than one head (copies of it): merge the one to replace by its name";
    else if (!intact && mf_check_in_place(trimmed, why) < 0)
        return fprintf(stderr, "h5mf: %s\n", why), 1;
    if (no)
        fprintf(stderr, "h5mf: %s: %s; or write the file elsewhere with -o FILE\n", dir, no);
    return no ? 1 : intact == 1 ? 0 : -1;
}

/* a merge in place of a head's body given as DIR: the head is what it replaces, as if
 * the head were given (the body turned into a file would leave the head naming
 * nothing); -1 to go on, else the exit status */
static int
adopt_owner(const char *dir)
{
    static char head[PATH_MAX], real[PATH_MAX];
    int         rc = rank_g == 0 ? find_owner(dir, head) : -1;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc == 0 && rank_g == 0) { /* only rank 0 replaces (put_in_place) */
        given_g   = head;
        head_g    = realpath(head, real) ? real : head;
        adopted_g = dir;
    }
    return rc == 1 ? 1 : -1;
}

/* the paths a command names: -1 to go on, else the exit status (the reason printed) */
static int
check_paths(const char *cmd, const char *dir, const char *out)
{
    struct stat st;
    int         known = !strcmp(cmd, "info") || !strcmp(cmd, "verify") || !strcmp(cmd, "merge");
    const char *empty = (known || !strcmp(cmd, "clean")) && !*dir ? "DIR" : out && !*out ? "-o FILE" : NULL;
    if (empty) { /* not "/metafile", nor a file made in "." */
        if (rank_g == 0)
            fprintf(stderr, "h5mf: %s: the path is empty\n", empty);
        return 2;
    }
    if (known && stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        /* what a careless second merge, or a merge of the wrong path, finds */
        int hdf5 = S_ISREG(st.st_mode) && mf_is_hdf5(dir);
        if (hdf5 && rank_g == 0 && !strcmp(cmd, "merge")) /* what a merge killed after its swap left */
            mf_remove_stale(dir);
        if (rank_g == 0)
            fprintf(hdf5 ? stdout : stderr, "%s%s: %s\n", hdf5 ? "" : "h5mf: ", dir,
                    hdf5 ? "an ordinary HDF5 file, already merged: nothing to do"
                         : "neither a multifile directory nor an HDF5 file");
        return hdf5 ? 0 : 1;
    }
    return -1;
}

/* h5mf clean: every NAME.h5mf directory in dir, by what it is; the orphans listed or
 * removed (rank 0; the others wait) */
static int
cmd_clean(const char *dir, int remove)
{
    int            rc = 0, orphans = 0, busy = 0;
    DIR           *d = rank_g == 0 ? opendir(dir) : NULL;
    struct dirent *e;
    if (rank_g == 0 && !d) {
        fprintf(stderr, "h5mf: %s: cannot read the directory: %s\n", dir, strerror(errno));
        rc = 1;
    }
    while (d && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name), k = strlen(MF_HEAD_SUFFIX);
        char   body[PATH_MAX];
        if (n <= k || strcmp(e->d_name + n - k, MF_HEAD_SUFFIX) != 0)
            continue;
        snprintf(body, sizeof body, "%s/%s", dir, e->d_name);
        int state = mf_body_state(body);
        busy += state == MF_BODY_BUSY;
        if (state != MF_BODY_ORPHAN)
            continue;
        orphans++;
        if (!remove)
            printf("orphan: %s\n", body);
        else if (mf_remove_orphan(body) == 0)
            printf("removed: %s\n", body);
        else {
            fprintf(stderr, "h5mf: %s: cannot remove: %s\n", body, strerror(errno));
            rc = 1;
        }
    }
    if (d) {
        closedir(d);
        printf("%s: %d orphan(s)%s%s\n", dir, orphans, remove ? " removed" : "",
               busy ? " (directories being written are not orphans)" : "");
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}

static int
run(const char *cmd, const char *dir, const args_t *a)
{
    if (!strcmp(cmd, "clean"))
        return cmd_clean(dir, a->remove);
    if (!strcmp(cmd, "info"))
        return cmd_info(dir, a->json);
    if (!strcmp(cmd, "verify"))
        return cmd_verify(dir, a->partial);
    if (!strcmp(cmd, "merge"))
        return cmd_merge(dir, a->out, a->partial, a->force, a->verify, a->quiet, a->lines);
    if (rank_g == 0) {
        fprintf(stderr, "h5mf: unknown command '%s'\n", cmd);
        usage(stderr);
    }
    return 2;
}

/* MPI_Init with what the MPI library prints while it starts sent to stderr: h5mf's stdout
 * is read by programs (`info --json`), and a library may print there (Intel MPI, started
 * without srun in a Slurm job of several tasks: "MPI startup(): PMI server not found") */
static void
init_mpi(int *argc, char ***argv)
{
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    if (saved >= 0)
        dup2(STDERR_FILENO, STDOUT_FILENO);
    MPI_Init(argc, argv);
    fflush(stdout);
    if (saved >= 0) {
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
}

int
main(int argc, char **argv)
{
    args_t a;
    init_mpi(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_g);
    MPI_Comm_size(MPI_COMM_WORLD, &size_g);
    int         rc  = parse_options(argc, argv, &a);
    const char *dir = rc < 0 ? argv[optind + 1] : NULL;
    char        body[PATH_MAX];
    if (rc < 0 && a.remove && strcmp(argv[optind], "clean") != 0) {
        if (rank_g == 0)
            fprintf(stderr, "h5mf: --remove is an option of clean only\n");
        rc = 2;
    }
    if (rc < 0 && strcmp(argv[optind], "clean") != 0) /* clean takes a plain directory */
        rc = resolve_head(&dir, body);
    if (rc < 0 && !strcmp(argv[optind], "merge") && !a.out && !head_g) /* a body given, not its head */
        rc = adopt_owner(dir);
    if (rc < 0)
        rc = check_paths(argv[optind], dir, a.out);
    if (rc < 0)
        rc = run(argv[optind], dir, &a);
    MPI_Finalize();
    return rc;
}
