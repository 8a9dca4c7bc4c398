/* `mpisim study speedup`: the matrix-multiply validation of seed 000 section 3.2 — execution
 * time, speedup and parallel efficiency for P ranks and N x N matrices — run under the
 * co-simulation, printed as a table, written as CSV (and a plot when Debian's matplotlib is
 * there). */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "exit_codes.h"
#include "ms_outfile.h"
#include "nm_cmdline.h"
#include "study.h"

#ifndef MPISIM_REL_APPDIR
#define MPISIM_REL_APPDIR "../libexec/mpisim"
#endif

/* Seed 000's testbed (170 MHz UltraSPARC, MPI on the BullDog MCP) per int32 multiply-add of
 * matmul, communication excluded, fitted on the 2-node curve alone: the testbed's 2-node mean
 * over N = 32..144 is 95.80 ms (sec 4.2: 0.87 ms = 0.90 % below the simulation's), the model's
 * 2-node communication alone averages 0.459 ms on seed000-sbus (--compute none), and a rank of
 * two computes N^3/2 multiply-adds, 518,144 on average: (95.80 - 0.459) ms / 518,144 = 184.0 ns.
 * results/seed000_validation.py repeats the fit with measured computation. */
#define SEED000_NS_PER_MAC 184.0

/* The matrix size and repetitions of the calibration run: matmul itself at P = 1 (its loop,
 * types and access pattern, nothing else), the fastest repetition of several runs counting. */
enum { CAL_N = 144, CAL_REPEAT = 15, CAL_RUNS = 3 };

/* A point runs again (up to 3K runs) until its two fastest runs agree within this, and a point
 * modelled under SMALL_POINT_S always 3K times (below). */
#define CONFIRM 0.02
/* A run whose rank 0 computed at more than this times the calibrated rate does not count. */
#define SLOW_RUN 1.10
#define SLOW_MIN_MACS 100000.0
#define SMALL_POINT_S 0.010
/* A fastest run whose rank 0 was charged less than this share of its multiply-adds at the
 * calibrated rate was not charged its computation in full: such a time cannot be right (seen:
 * P = 4, N = 32, 0.2 ms against 2.2 ms, 741 %: a rank's few microseconds of work in a new pair of
 * call sites charged shim.gap_floor, docs/architecture.md "Repeatable small gaps"). */
#define UNCHARGED_SHARE 0.5
/* A speedup above P is allowed this much (beside the noise of the runs) before it is called
 * impossible: on the host a rank's smaller share of the matrices can compute faster per
 * multiply-add in the caches, and the study charges the host's CPU time (assumed: the P = 1 and
 * P = 2 runs of N = 32 here differ by 2-5 % in rate between runs). */
#define SUPERLINEAR_MARGIN 0.10
/* the most a point's runs' spread is allowed to widen that margin: a point whose runs spread
 * more (its fastest uncharged, the others not) must not hide behind the spread */
#define NOISE_CAP 0.10

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;
    const char *p = s;
    while (*p && n < max) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0) return -1;
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

static int parse_range(const char *s, int *out, int max)
{
    int a, b, step;
    if (sscanf(s, "%d:%d:%d", &a, &b, &step) == 3 && a > 0 && b >= a && step > 0) {
        int n = 0;
        for (int v = a; v <= b && n < max; v += step) out[n++] = v;
        return n;
    }
    return parse_list(s, out, max);
}

/* Run `argv` (no shell: values go to the program as they are), its stdout and stderr read
 * line by line into `out` (the last `outlen` bytes kept); its exit status, or -1. */
static int run_captured(char *const argv[], char *out, size_t outlen)
{
    int fds[2];
    if (pipe(fds) < 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        fprintf(stderr, "mpisim study: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    size_t used = 0;
    if (outlen) out[0] = '\0';
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (used + n + 1 > outlen) {   /* keep the end: the result line and the last errors */
            size_t drop = used + n + 1 - outlen;
            if (drop > used) drop = used;
            memmove(out, out + drop, used - drop);
            used -= drop;
        }
        if (n + 1 <= outlen) {
            memcpy(out + used, line, n + 1);
            used += n;
        }
    }
    if (f) fclose(f);
    else close(fds[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

typedef struct study_opts {
    const char *mpisim;          /* this command */
    const char *matmul;          /* the study's program (mpisim_find_program: beside it, or libexec) */
    const char *profile;
    const char **sets;
    int nsets;
    const char *compute;
    const char *distribute;      /* matmul's --distribute; NULL: its default */
    double cpu_factor;           /* <= 0: the profile's */
    const char *cpu_factor_source;
} study_opts;

/* Run matmul once under `mpisim run`; the fastest repetition's time (virtual seconds) or < 0,
 * and in *compute rank 0's computation in that repetition (virtual seconds; < 0 if not said). */
static double run_point(const study_opts *o, int p, int n, int repeat, const char *report, double *compute)
{
    *compute = -1;
    char np[16], ns[16], reps[16], factor[64];
    snprintf(np, sizeof np, "%d", p);
    snprintf(ns, sizeof ns, "%d", n);
    snprintf(reps, sizeof reps, "%d", repeat);
    const char **argv = calloc((size_t)(2 * o->nsets + 24), sizeof *argv);
    if (!argv) return -1;
    int k = 0;
    argv[k++] = o->mpisim;
    argv[k++] = "run";
    argv[k++] = "--report";
    argv[k++] = report;
    argv[k++] = "--compute";
    argv[k++] = o->compute;
    if (o->cpu_factor > 0) {
        snprintf(factor, sizeof factor, "%.9g", o->cpu_factor);
        argv[k++] = "--cpu-factor";
        argv[k++] = factor;
        if (o->cpu_factor_source) {
            argv[k++] = "--cpu-factor-source";
            argv[k++] = o->cpu_factor_source;
        }
    }
    if (o->profile) {
        argv[k++] = "--profile";
        argv[k++] = o->profile;
    }
    for (int i = 0; i < o->nsets; i++) {
        argv[k++] = "--set";
        argv[k++] = o->sets[i];
    }
    argv[k++] = "-n";
    argv[k++] = np;
    argv[k++] = "--";
    argv[k++] = o->matmul;
    argv[k++] = ns;
    argv[k++] = "--repeat";
    argv[k++] = reps;
    if (o->distribute) {
        argv[k++] = "--distribute";
        argv[k++] = o->distribute;
    }
    argv[k] = NULL;
    static char out[16384];
    int st = run_captured((char *const *)argv, out, sizeof out);
    free(argv);
    const char *q = strstr(out, "time_min_s=");
    double t = q ? strtod(q + 11, NULL) : -1;
    if (st != 0 || !strstr(out, "check=ok") || t < 0) {
        const char *last = strstr(out, "mpisim:");
        fprintf(stderr, "mpisim study: P=%d N=%d failed (exit %d)%s%s", p, n, st, last ? ": " : "\n", last ? last : "");
        return -1;
    }
    const char *cq = strstr(out, "compute_s=");
    if (cq) *compute = strtod(cq + 10, NULL);
    return t;
}

/* Repetitions of one point, the fastest counting: the first pays for first-touch page faults,
 * which the CPU factor would blow up as if they were the testbed's arithmetic; small matrices
 * compute for microseconds here, where a stray cache miss or interrupt is a large share, so they
 * repeat more: 5 (144/N)^3 times, 5 to 50. */
static int repetitions(int n)
{
    double reps = ceil(5.0 * pow(144.0 / n, 3.0));
    return reps < 5 ? 5 : reps > 50 ? 50 : (int)reps;
}

/* The slowest of ranks 1..p-1 of a matmul run, in this machine's ns per multiply-add of their
 * charged computation (the report's compute_ps over all repetitions: between their calls they
 * only multiply their rows), and which rank; -1 when the report cannot say (no ranks, too little
 * work to measure a rate). */
static double slowest_other_rank(const char *report, int p, int n, int reps, double cpu_factor, int *which)
{
    json_t *root = json_load_file(report, 0, NULL);
    json_t *ranks = root ? json_object_get(root, "ranks") : NULL;
    double worst = -1;
    size_t k;
    json_t *r;
    json_array_foreach(ranks, k, r) {
        json_int_t rank = json_integer_value(json_object_get(r, "rank"));
        double comp_ps = json_number_value(json_object_get(r, "compute_ps"));
        if (rank < 1 || rank >= p || comp_ps <= 0) continue;
        double rows = n / p + (rank < n % p ? 1 : 0), macs = rows * n * n;
        /* as rank 0's: a share computing for microseconds between two calls has no rate to trust */
        if (macs < SLOW_MIN_MACS || cpu_factor <= 0) continue;
        double ns = comp_ps * 1e-3 / cpu_factor / (macs * reps);
        if (ns > worst) worst = ns, *which = (int)rank;
    }
    json_decref(root);
    return worst;
}

/* This machine's CPU time per multiply-add of matmul: its own P = 1 run at factor 1, the
 * fastest of CAL_RUNS x CAL_REPEAT repetitions of N = CAL_N (a loaded machine only slows a
 * repetition down). */
static double calibrate_ns_per_mac(const study_opts *o, const char *out)
{
    study_opts c = *o;
    c.compute = "cpu";
    c.cpu_factor = 1.0;
    c.cpu_factor_source = "study calibration run";
    char report[PATH_MAX + 64];
    snprintf(report, sizeof report, "%s/report-calibration.json", out);
    double best = -1;
    for (int r = 0; r < CAL_RUNS; r++) {
        double ignored, t = run_point(&c, 1, CAL_N, CAL_REPEAT, report, &ignored);
        if (t > 0 && (best < 0 || t < best)) best = t;
    }
    return best > 0 ? best * 1e9 / ((double)CAL_N * CAL_N * CAL_N) : -1;
}

/* A factor file: the factor on its first line, its source on the second (written by a study in
 * its output folder as cpu_factor.txt, to be reused with --cpu-factor FILE). */
static int read_factor_file(const char *path, double *factor, char *source, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int ok = fgets(line, sizeof line, f) != NULL;
    char *end;
    *factor = ok ? strtod(line, &end) : 0;
    if (!ok || end == line || !isfinite(*factor) || *factor <= 0) {   /* NaN, inf: no factor */
        fclose(f);
        return -2;
    }
    source[0] = '\0';
    if (fgets(source, (int)len, f)) source[strcspn(source, "\n")] = '\0';
    fclose(f);
    return 0;
}

enum { O_PROFILE = 256, O_SET, O_ROUTING, O_COMPUTE, O_OUT, O_CPU_FACTOR, O_RUNS, O_PROCS, O_SIZES, O_DISTRIBUTE,
       O_PROGRAM };
static const cm_opt study_options[] = {
    NM_OPT_PROFILE(O_PROFILE),
    NM_OPT_SET(O_SET),
    NM_OPT_ROUTING(O_ROUTING),
    {"procs", O_PROCS, "1,2,4,8,16", "the process counts"},
    {"sizes", O_SIZES, "FIRST:LAST:STEP", "the matrix sizes, or a list (default 32:144:16)"},
    {"distribute", O_DISTRIBUTE, "collective|p2p",
     "how matmul sends A and B^T: MPI_Send each (default, seed 000 sec 3.2) or MPI_Scatterv + MPI_Bcast (apps/README.md)"},
    {"compute", O_COMPUTE, "cpu|wall|none", "how computation is charged (default cpu)"},
    {"cpu-factor", O_CPU_FACTOR, "calibrate|X|FILE|profile",
     "calibrate (default): seed 000's testbed time per multiply-add over this machine's,\n"
     "measured with matmul's own P = 1 run, written to DIR/cpu_factor.txt; FILE: reuse such\n"
     "a file; X: a number; profile: the profile's shim.cpu_factor"},
    {"runs", O_RUNS, "K", "run the grid K times in a row, each point's fastest run counting; then again, up to 3K runs\n"
     "in all, the points whose two fastest runs differ by more than 2 %, and always 3K times the\n"
     "one-rank points and those under 10 ms (default 3: about 250 runs for the default grid)"},
    {"out", O_OUT, "DIR", "where the table, plot and runs go (default mpisim-speedup)"},
    {"program", O_PROGRAM, "PATH", "an MPI program in place of matmul: it takes matmul's arguments (N --repeat R\n"
     "[--distribute D]) and prints its result line (time_min_s=, compute_s=, check=ok; apps/README.md)"},
    CM_OPT_HELP,
    CM_OPT_END,
};

static void usage(FILE *f)
{
    fprintf(f, "usage: mpisim study speedup [options]\n"
               "The speedup study of seed 000 sec 3.2 (results: sec 4.2): matmul co-simulated over a grid of\n"
               "process counts and matrix sizes; the testbed's time per multiply-add is %.0f ns.\n", SEED000_NS_PER_MAC);
    cm_cmdline_print_options(study_options, f);
    fputs("Routings:\n", f);
    cm_registry_print(nm_routing_at, f, "  ");
}

/* One `mpisim study speedup`: its options, the configuration, the CPU factor and the grid's
 * times (t[i * ns + j]: P = procs[i], N = sizes[j]; < 0: failed). */
typedef struct {
    study_opts o;
    const char *outdir, *cpu_factor_arg;
    int runs;
    int procs[64], sizes[256];
    int np, ns;
    nm_config *cfg;
    char self[PATH_MAX], matmul[PATH_MAX], out[PATH_MAX];
    double cpu_factor, here;   /* the factor (<= 0: the profile's); this machine's ns per multiply-add */
    char source[1200];         /* where the factor came from, recorded in every report's configuration */
    char csv_path[PATH_MAX + 64], cfg_path[PATH_MAX + 64];
    const char *program;       /* --program: in place of matmul */
    double *t;
    double *t2;                /* each point's second fastest run (0: none) */
    double *rate;              /* rank 0's ns per multiply-add in each point's fastest run (0: not known) */
    double *slow_best;         /* the fastest of each point's slow runs (0: none) */
    double *slow;              /* that run's slowest rank's rate over the calibrated one; after the grid, 0
                                * unless the point stands on slow runs only */
} study_run;

/* The options into s; -1 to go on, else the exit code (0 after --help). */
static int parse_study_options(study_run *s, int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "speedup")) {
        fprintf(stderr, "mpisim study: name the study: speedup (the only one)\n");
        usage(stderr);
        return 2;
    }
    study_opts *o = &s->o;
    o->compute = "cpu";
    s->cpu_factor_arg = "calibrate";
    s->runs = 3;   /* one slow spell of a shared machine would otherwise decide a point */
    o->sets = calloc((size_t)argc + 2, sizeof *o->sets);
    /* Every interval over shim.gap_noise charged as measured (a --set of the user's comes later
     * and wins): matmul's ranks compute between their calls, and the floor's prior for a new
     * pair of call sites ("Repeatable small gaps") would take a rank's first few microseconds of
     * work for noise; with the fastest repetition counting, P = 4, N = 32 then showed 741 %. */
    if (o->sets) o->sets[o->nsets++] = "shim.gap_noise_max=0";
    s->np = parse_list("1,2,4,8,16", s->procs, 64);
    s->ns = parse_range("32:144:16", s->sizes, 256);
    cm_cmdline c;
    cm_cmdline_init(&c, "mpisim study speedup", study_options, argc - 1, argv + 1, 0);
    const char *v;
    for (int k; (k = cm_cmdline_next(&c, &v)) != -1;) {
        long n;
        switch (k) {
        case 'h': usage(stdout); return 0;
        case O_PROFILE: o->profile = v; break;
        case O_SET: o->sets[o->nsets++] = v; break;
        case O_ROUTING:
            if (!(o->sets[o->nsets++] = nm_cmdline_routing(&c, k, v))) return 2;
            break;
        case O_COMPUTE: o->compute = v; break;
        case O_DISTRIBUTE:
            if (strcmp(v, "collective") && strcmp(v, "p2p")) return cm_cmdline_bad(&c, k, v, "expected collective or p2p");
            o->distribute = v;
            break;
        case O_OUT: s->outdir = v; break;
        case O_PROGRAM: s->program = v; break;
        case O_CPU_FACTOR: s->cpu_factor_arg = v; break;
        case O_RUNS:
            if (cm_cmdline_long(&c, k, v, 1, 20, &n) != 0) return 2;
            s->runs = (int)n;
            break;
        case O_PROCS:
            if ((s->np = parse_list(v, s->procs, 64)) <= 0) return cm_cmdline_bad(&c, k, v, "expected a list like 1,2,4");
            break;
        case O_SIZES:
            if ((s->ns = parse_range(v, s->sizes, 256)) <= 0)
                return cm_cmdline_bad(&c, k, v, "expected FIRST:LAST:STEP or a list");
            break;
        default: return 2;
        }
    }
    if (cm_cmdline_operands(&c, 0, 0, "") < 0) return 2;
    return -1;
}

/* Before 40 runs: the configuration, this command and matmul, the output folder; -1 to go on,
 * else the exit code. */
static int prepare_study(study_run *s)
{
    char err[1024];
    s->cfg = mpisim_load_config(s->o.profile, s->o.sets, s->o.nsets, err, sizeof err);
    if (!s->cfg) {
        fprintf(stderr, "mpisim: %s\n", err);
        return 2;
    }
    /* the command itself, and matmul where the build tree (beside it) or an installed tree
     * (libexec/mpisim) keeps it */
    ssize_t sn = readlink("/proc/self/exe", s->self, sizeof s->self - 1);
    if (sn < 0) {
        fprintf(stderr, "mpisim study: cannot find this command (/proc/self/exe): %s\n", strerror(errno));
        return 2;
    }
    s->self[sn] = 0;
    if (s->program) {
        if (access(s->program, X_OK) != 0) {
            fprintf(stderr, "mpisim study: --program %s: %s\n", s->program, strerror(errno));
            return 2;
        }
        snprintf(s->matmul, sizeof s->matmul, "%s", s->program);
    } else if (mpisim_find_program("matmul", s->matmul, sizeof s->matmul) != 0) {
        char dir[PATH_MAX] = "?";
        mpisim_self_dir(dir, sizeof dir);
        fprintf(stderr, "mpisim study: the study's program matmul is neither beside this command (%s) nor in its "
                        "libexec directory (%s/" MPISIM_REL_APPDIR "): build or install the apps\n", dir, dir);
        return 2;
    }
    s->o.mpisim = s->self;
    s->o.matmul = s->matmul;
    if (s->outdir) snprintf(s->out, sizeof s->out, "%s", s->outdir);
    else snprintf(s->out, sizeof s->out, "mpisim-speedup");   /* never over the checkout's committed results */
    if (mkdir(s->out, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "mpisim study: cannot create %s: %s\n", s->out, strerror(errno));
        return 2;
    }
    return -1;
}

/* The CPU factor (--cpu-factor) and where it came from; -1 to go on, else the exit code. */
static int choose_cpu_factor(study_run *s)
{
    const char *arg = s->cpu_factor_arg;
    s->cpu_factor = -1;
    s->here = -1;
    if (!strcmp(arg, "calibrate")) {
        s->here = calibrate_ns_per_mac(&s->o, s->out);
        if (s->here <= 0) {
            fprintf(stderr, "mpisim study: the calibration run (matmul, P = 1, N = %d) failed\n", CAL_N);
            return 1;
        }
        s->cpu_factor = SEED000_NS_PER_MAC / s->here;
        snprintf(s->source, sizeof s->source,
                 "calibrated: seed 000 testbed %.1f ns per multiply-add (fitted on the 2-node curve of sec 4.2, "
                 "results/seed000_validation.md) / this machine's %.4f ns (matmul P=1 N=%d, fastest of %d)",
                 SEED000_NS_PER_MAC, s->here, CAL_N, CAL_RUNS * CAL_REPEAT);
        fprintf(stderr, "mpisim study: this machine %.4f ns per multiply-add, testbed %.1f ns: cpu factor %.2f\n",
                s->here, SEED000_NS_PER_MAC, s->cpu_factor);
    } else if (!strcmp(arg, "profile")) {
        s->cpu_factor = -1;
    } else {
        char *end;
        s->cpu_factor = strtod(arg, &end);
        if (end != arg && *end == '\0' && isfinite(s->cpu_factor) && s->cpu_factor > 0) {
            snprintf(s->source, sizeof s->source, "--cpu-factor");
        } else {
            int rc = read_factor_file(arg, &s->cpu_factor, s->source, sizeof s->source);
            if (rc < 0) {
                fprintf(stderr, "mpisim study: --cpu-factor wants calibrate, profile, a positive number or a file "
                                "written by a study (cpu_factor.txt): '%s' %s\n",
                        arg, rc == -1 ? "cannot be read" : "has no factor on its first line");
                return 2;
            }
            fprintf(stderr, "mpisim study: cpu factor %.9g from %s\n", s->cpu_factor, arg);
        }
    }
    return -1;
}

/* A grid attempt's files: the factor (cpu_factor.txt, also into the configuration) and the
 * configuration (config.json); -1 to go on, else the exit code. */
static int write_attempt_files(study_run *s)
{
    char err[1024], fac_path[PATH_MAX + 64];
    if (s->cpu_factor > 0) {
        snprintf(fac_path, sizeof fac_path, "%s/cpu_factor.txt", s->out);
        ms_outfile ff;
        if (ms_outfile_open(&ff, fac_path, 0, NULL, err, sizeof err) < 0 ||
            (fprintf(ff.f, "%.9g\n%s\n", s->cpu_factor, s->source), ms_outfile_commit(&ff, err, sizeof err) < 0)) {
            fprintf(stderr, "mpisim study: %s\n", err);
            return MS_EXIT_OUTPUT;
        }
        char set[128];
        snprintf(set, sizeof set, "shim.cpu_factor=%.9g", s->cpu_factor);
        if (nm_config_set(s->cfg, set, s->source, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return 2;
        }
    }
    snprintf(s->csv_path, sizeof s->csv_path, "%s/speedup.csv", s->out);
    snprintf(s->cfg_path, sizeof s->cfg_path, "%s/config.json", s->out);
    ms_outfile cf;
    if (ms_outfile_open(&cf, s->cfg_path, 0, NULL, err, sizeof err) < 0 ||
        (nm_config_write_json(s->cfg, cf.f, 0), ms_outfile_commit(&cf, err, sizeof err) < 0)) {
        fprintf(stderr, "mpisim study: %s\n", err);
        return MS_EXIT_OUTPUT;
    }
    return -1;
}

/* Point (i, j) in pass `run`: its time into best / next (the fastest and second fastest so far),
 * or, for a run of a slow machine, into slow_best. */
static void run_grid_point(study_run *s, int i, int j, int run, double *best, double *next, double *slow_best,
                           double *slow_ratio)
{
    char report[PATH_MAX + 64];
    int runs = s->runs, p = s->procs[i], n = s->sizes[j];
    double cpu_factor = s->cpu_factor, here = s->here;
    snprintf(report, sizeof report, "%s/report-P%d-N%d%s.json", s->out, p, n,
             runs > 1 && run == 0 ? "" : runs > 1 ? "-again" : "");
    double comp, v = run_point(&s->o, p, n, repetitions(n), report, &comp);
    /* Rank 0 computes rows0 x n x n multiply-adds in the repetition: at more than
     * SLOW_RUN x the calibrated rate the machine was slow for this run (minutes-long
     * spells were seen: every run of a point 1.6-1.8x), so it counts only when no run
     * of the point was at the calibrated rate */
    long rows0 = n / p + (n % p ? 1 : 0);
    double rate = comp > 0 && cpu_factor > 0 ? comp / cpu_factor * 1e9 / ((double)rows0 * n * n) : -1;
    double nominal = here > 0 ? here : cpu_factor > 0 ? SEED000_NS_PER_MAC / cpu_factor : -1;
    /* only where rank 0 computes long enough (>= SLOW_MIN_MACS, ~30 us here) for its
     * rate to be the kernel's and not its cold start's */
    int slow_run = v >= 0 && rate > 0 && nominal > 0 && rate > SLOW_RUN * nominal &&
                   (double)rows0 * n * n >= SLOW_MIN_MACS;
    int slow_rank = 0;
    if (!slow_run && v >= 0 && nominal > 0 && !s->program && p > 1) {
        /* the point's time waits for its slowest rank: the others' rows count as much as rank 0's
         * (one vCPU can be slow while the other is not) */
        double worst = slowest_other_rank(report, p, n, repetitions(n), cpu_factor, &slow_rank);
        if (worst > SLOW_RUN * nominal) slow_run = 1, rate = worst;
        else slow_rank = 0;
    }
    if (slow_run) {
        fprintf(stderr, "  P=%-3d N=%-4d time %.6f ms: rank %d computed at %.4f ns per multiply-add, "
                "%.2fx the calibration: the machine was slow, the run counts only if no other does\n",
                p, n, v * 1e3, slow_rank, rate, rate / nominal);
        if (!*slow_best || *slow_best > v) *slow_best = v, *slow_ratio = rate / nominal;
        if (run == 0) *best = -1;
        return;
    }
    if (run == 0 || (v >= 0 && (*best < 0 || v < *best))) {
        if (run > 0) *next = *best;
        *best = v;
        /* how fast rank 0 computed, where its work is known (matmul's own; not --program's) */
        s->rate[i * s->ns + j] = !s->program && v >= 0 && rate > 0 ? rate : 0;
    } else if (v >= 0 && (*next <= 0 || v < *next)) {
        *next = v;
    }
    fprintf(stderr, "  P=%-3d N=%-4d time %.6f ms\n", p, n, v * 1e3);
}

/* The grid's passes into s->t.
 * A point's time is the fastest of its repetitions; with --runs K, the fastest of K runs of the
 * whole grid, one after the other (a slow spell of a shared machine lasts longer than a run, so
 * repetitions within one run do not escape it).
 * A point's fastest run must be confirmed: one run's process can compute at 1.6x its usual CPU
 * time for its whole life (raw == wall, never switched out; about 1 process in 5 here, on either
 * vCPU, with or without address randomization: the host's), and a point is the fastest of its
 * runs. So after K passes, a point whose two fastest runs differ by more than CONFIRM runs again
 * in further passes, up to 3K runs. The one-rank points (their time divides into every efficiency
 * of the column) and the small ones (under SMALL_POINT_S: their ranks compute for microseconds,
 * and their fastest runs spread continuously, 3.35-3.69 ms at P = 2, N = 32) always run 3K
 * times. */
static void run_grid(study_run *s)
{
    int np = s->np, ns = s->ns, runs = s->runs;
    double *t = s->t;
    memset(t, 0, (size_t)(np * ns) * sizeof *t);
    fprintf(stderr, "mpisim study speedup: %d process counts x %d sizes, compute=%s\n", np, ns, s->o.compute);
    int max_runs = runs > 1 ? 3 * runs : 1;
    double *second = s->t2;   /* second fastest so far */
    memset(second, 0, (size_t)(np * ns) * sizeof *second);
    double *slow_best = s->slow_best;   /* runs of a slow machine */
    memset(slow_best, 0, (size_t)(np * ns) * sizeof *slow_best);
    memset(s->slow, 0, (size_t)(np * ns) * sizeof *s->slow);
    for (int run = 0; run < max_runs; run++)
        for (int j = 0; j < ns; j++)
            for (int i = 0; i < np; i++) {
                double *best = &t[i * ns + j], *next = &second[i * ns + j];
                int confirmed = *best > 0 && *next > 0 && *next <= *best * (1 + CONFIRM);
                int small = s->procs[i] == 1 || (*best > 0 && *best < SMALL_POINT_S);
                if (run >= runs && !small && confirmed) continue;
                run_grid_point(s, i, j, run, best, next, &slow_best[i * ns + j], &s->slow[i * ns + j]);
            }
    for (int k = 0; k < np * ns; k++)
        if (t[k] < 0 && slow_best[k] > 0) {
            t[k] = slow_best[k];
            fprintf(stderr, "mpisim study: warning: P=%d N=%d: every run computed at a slow rate; its time is the "
                            "fastest of them and overstated\n", s->procs[k / ns], s->sizes[k % ns]);
        } else {
            s->slow[k] = 0;   /* a run at the calibrated rate counted */
        }
}

/* Point k's rank 0 was charged under UNCHARGED_SHARE of the calibrated rate: print_study refuses it */
static int point_uncharged(const study_run *s, int k)
{
    return s->rate[k] > 0 && s->here > 0 && s->rate[k] < UNCHARGED_SHARE * s->here;
}

static int any_uncharged(const study_run *s)
{
    for (int k = 0; k < s->np * s->ns; k++)
        if (s->t[k] > 0 && point_uncharged(s, k)) return 1;
    return 0;
}

/* The calibration can fall into a slow spell of the machine (here once: 0.4109 ns per
 * multiply-add for all 45 of its repetitions, against 0.295 in the study's own one-rank runs a
 * minute later, a factor 28 % low for every point; once 0.5929 against 0.295 at N = 32, and the
 * point refused as not charged in full). The grid's one-rank N = CAL_N point is the calibration's
 * own configuration: when it shows the machine 3 % faster than the calibration did, the factor is
 * taken from it and the grid runs once more. A grid without that point is checked so only when one
 * of its points would be refused against the calibrated rate: the calibration runs again first (a
 * refusal must stand on the machine's rate, not on a slow spell of it). Returns 1 for once more. */
static int calibration_was_slow(study_run *s)
{
    int np = s->np, ns = s->ns, b1 = -1, jc = -1;
    for (int i = 0; i < np; i++)
        if (s->procs[i] == 1) b1 = i;
    for (int j = 0; j < ns; j++)
        if (s->sizes[j] == CAL_N) jc = j;
    double here = s->here;
    int again = 0;   /* seen by running the calibration again, not by the grid */
    double seen = here > 0 && b1 >= 0 && jc >= 0 && s->t[b1 * ns + jc] > 0
                      ? s->t[b1 * ns + jc] / s->cpu_factor * 1e9 / ((double)CAL_N * CAL_N * CAL_N)
                      : -1;
    if (seen < 0 && here > 0 && any_uncharged(s)) {
        fprintf(stderr, "mpisim study: a point was charged under %.0f %% of the calibrated rate: the calibration "
                        "runs again before it is refused\n", UNCHARGED_SHARE * 100);
        seen = calibrate_ns_per_mac(&s->o, s->out);
        again = 1;
    }
    if (!(seen > 0 && seen < 0.97 * here)) return 0;
    fprintf(stderr,
            "mpisim study: the calibration ran slow (%.4f ns per multiply-add; %s N = %d: %.4f): the grid again "
            "with cpu factor %.2f\n",
            here, again ? "run again," : "the grid's one-rank", CAL_N, seen, SEED000_NS_PER_MAC / seen);
    s->here = seen;
    s->cpu_factor = SEED000_NS_PER_MAC / s->here;
    snprintf(s->source, sizeof s->source,
             "calibrated: seed 000 testbed %.1f ns per multiply-add (fitted on the 2-node curve of sec 4.2, "
             "results/seed000_validation.md) / this machine's %.4f ns (matmul P=1 N=%d, fastest of %s: the "
             "calibration run had met a slow spell)",
             SEED000_NS_PER_MAC, s->here, CAL_N, again ? "a second calibration" : "its study's runs");
    return 1;
}

/* How much point k's time may be understated by a lucky run: it is the fastest of its runs, the
 * spread of its two fastest (0 with one run). */
static double run_noise(const study_run *s, int k)
{
    double a = s->t[k], b = s->t2[k];
    double d = a > 0 && b > a ? b / a - 1 : 0;
    return d < NOISE_CAP ? d : NOISE_CAP;
}

/* How much faster rank 0 of point (i, j) computed per multiply-add than the one-rank point of its
 * size (base), where both rates are measured and point (i, j)'s is at least CACHE_RATE_FLOOR of
 * this machine's calibrated rate (so its computation was charged in full): a share of the matrices
 * that fits the host's caches better computes faster, and the speedup may exceed P by as much
 * (beside two CPU-bound jobs N = 64 ran at 0.42-0.44 ns per multiply-add on one rank in seven runs
 * and 0.39 on two: 112 %). 1 where that does not hold. */
#define CACHE_RATE_FLOOR 0.9
static double cache_factor(const study_run *s, int base, int i, int j)
{
    if (base < 0 || s->program) return 1.0;
    double r1 = s->rate[base * s->ns + j], rp = s->rate[i * s->ns + j];
    if (!(r1 > 0 && rp > 0 && s->here > 0) || rp < CACHE_RATE_FLOOR * s->here || r1 <= rp) return 1.0;
    return r1 / rp;
}

/* Point (i, j)'s speedup above its P beyond the caches and its runs' noise (print_study's test). */
static int point_over(const study_run *s, int i, int j, double *tol_out)
{
    int ns = s->ns, base = -1;
    for (int b = 0; b < s->np; b++)
        if (s->procs[b] == 1) base = b;
    double tp = s->t[i * ns + j], t1 = base >= 0 ? s->t[base * ns + j] : -1;
    double tol = SUPERLINEAR_MARGIN + (base >= 0 ? run_noise(s, base * ns + j) : 0) + run_noise(s, i * ns + j);
    if (tol_out) *tol_out = tol;
    /* matmul's rank 0 computing under SLOW_MIN_MACS (~30 us here) in the one-rank run: its rate
     * there is its cold start's, not the kernel's (beside two CPU-bound jobs the one-rank N = 32
     * ran 0.67 ns per multiply-add in seven runs, P = 2 0.38: 147 %); marked, not refused */
    if (!s->program && (double)s->sizes[j] * s->sizes[j] * s->sizes[j] < SLOW_MIN_MACS) return 0;
    double limit = s->procs[i] * cache_factor(s, base, i, j);
    return s->procs[i] > 1 && t1 > 0 && tp > 0 && t1 / tp > limit * (1 + tol);
}

/* A speedup above P is first taken for a slow spell of the one-rank run (a process can compute
 * at 1.5-2x its usual CPU time for its whole life: P = 2, N = 32 at 127 % with --runs 1 beside two
 * CPU-bound jobs): the one-rank point of such a point runs again, up to RECHECK_RUNS more times,
 * until the point is within bounds; one that stays above is refused (print_study). */
#define RECHECK_RUNS 6
static void recheck_superlinear(study_run *s)
{
    int np = s->np, ns = s->ns, base = -1;
    for (int b = 0; b < np; b++)
        if (s->procs[b] == 1) base = b;
    if (base < 0) return;
    double dummy = 0;
    for (int extra = 0; extra < RECHECK_RUNS; extra++) {
        int any = 0;
        for (int j = 0; j < ns; j++) {
            int over = 0;
            for (int i = 0; i < np; i++) over |= point_over(s, i, j, NULL);
            if (!over) continue;
            any = 1;
            fprintf(stderr, "mpisim study: N=%d: a speedup above P: its one-rank point runs again (%d of %d)\n",
                    s->sizes[j], extra + 1, RECHECK_RUNS);
            /* the one-rank run only: another run of the point could only make it faster */
            int k = base * ns + j;
            double held = s->t[k], ratio = 0;
            if (s->slow[k] > 0) s->t[k] = -1;   /* a point standing on slow runs: a run at the calibrated rate replaces them */
            run_grid_point(s, base, j, 1 + extra, &s->t[k], &s->t2[k], &dummy, &ratio);
            if (s->t[k] < 0) s->t[k] = held;
            else s->slow[k] = 0;
        }
        if (!any) return;
    }
}

/* The table on stdout, the CSV, the plot when Debian's matplotlib is there; the exit code.
 * A speedup above P cannot be right for work divided P ways with communication added (seed 000
 * sec 4.2: every curve below P): a point whose speedup exceeds P by more than CONFIRM plus the
 * noise of its own runs and of the one-rank point it divides (run_noise) is marked in the table
 * and the CSV, named on stderr, and the study ends with outcome superlinear (exit 8). Seen before:
 * P = 2, N = 32 at 143 % under --compute cpu on a loaded machine, exit 0. */
static int print_study(study_run *s)
{
    char err[1024];
    int np = s->np, ns = s->ns;
    const double *t = s->t;
    ms_outfile csv_out;
    if (ms_outfile_open(&csv_out, s->csv_path, 0, NULL, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim study: %s\n", err);
        return MS_EXIT_OUTPUT;
    }
    FILE *csv = csv_out.f;
    fprintf(csv, "P,N,time_s,speedup,efficiency,superlinear,slow_host\n");
    printf("Matrix multiply on the modelled network (seed 000 section 3.2), profile %s, compute %s",
           s->o.profile ? s->o.profile : "default", s->o.compute);
    if (s->cpu_factor > 0) printf(" x %.2f (%s)", s->cpu_factor, s->source);
    if (s->program) printf(", program %s%s%s\n", s->program, s->o.distribute ? " --distribute " : "",
                           s->o.distribute ? s->o.distribute : "");
    else printf(", matmul --distribute %s\n", s->o.distribute ? s->o.distribute : "p2p");
    printf("%6s %6s %14s %9s %11s\n", "P", "N", "time (ms)", "speedup", "efficiency");
    int failures = 0, superlinear = 0, slow_points = 0;
    for (int i = 0; i < np; i++)
        for (int j = 0; j < ns; j++) {
            double tp = t[i * ns + j];
            int base = -1;
            for (int b = 0; b < np; b++)
                if (s->procs[b] == 1) base = b;
            double t1 = base >= 0 ? t[base * ns + j] : -1;
            if (tp < 0) {
                failures++;
                printf("%6d %6d %14s %9s %11s\n", s->procs[i], s->sizes[j], "failed", "-", "-");
                continue;
            }
            double sp = t1 > 0 ? t1 / tp : 0, eff = sp / s->procs[i];
            double tol;
            int over = point_over(s, i, j, &tol);
            double rate = s->rate[i * ns + j], nominal = s->here;
            /* the one-rank point's too: it divides into the column's every efficiency */
            int uncharged = point_uncharged(s, i * ns + j);
            printf("%6d %6d %14.6f %9.3f %10.1f%%", s->procs[i], s->sizes[j], tp * 1e3, sp, eff * 100);
            if (over) printf("  superlinear: speedup above P beyond %.1f %% (caches and noise)", tol * 100);
            else if (s->procs[i] > 1 && t1 > 0 && sp > s->procs[i] * (1 + tol) && cache_factor(s, base, i, j) > 1.0)
                printf("  (above P: rank 0 computed at %.3f ns per multiply-add, the one-rank run at %.3f: this "
                       "host's caches)", s->rate[i * ns + j], s->rate[base * ns + j]);
            else if (s->procs[i] > 1 && t1 > 0 && sp > s->procs[i] * (1 + tol))
                printf("  (above P: the one-rank run computes too briefly for its rate to be trusted)");
            else if (s->procs[i] > 1 && t1 > 0 && sp > s->procs[i]) printf("  (above P, within %.1f %%: caches, noise)", tol * 100);
            if (uncharged) printf("  computation not charged in full: rank 0 at %.3f ns per multiply-add", rate);
            /* only against this machine's own calibration: a factor given by hand says nothing of
             * this machine's rate */
            int slow = s->here > 0 && s->slow[i * ns + j] > 0;
            /* a point's rank 0 computes a share of the one-rank point's work, in less memory: per
             * multiply-add it is never slower on one machine. Slower by more than SLOW_RUN, the
             * host changed speed between the two runs, and the efficiency compares its speeds */
            double r1 = base >= 0 ? s->rate[base * ns + j] : 0;
            long rows0 = s->sizes[j] / s->procs[i] + (s->sizes[j] % s->procs[i] ? 1 : 0);
            double n2 = (double)s->sizes[j] * s->sizes[j];
            int drift = !slow && s->here > 0 && s->procs[i] > 1 && rate > 0 && r1 > 0 && rate > SLOW_RUN * r1 &&
                        rows0 * n2 >= SLOW_MIN_MACS && s->sizes[j] * n2 >= SLOW_MIN_MACS;   /* rates, not cold starts */
            if (slow) {
                printf("  slow host: every run computed at over %.2fx the calibrated rate (the counted one at %.2fx): "
                       "overstated", SLOW_RUN, s->slow[i * ns + j]);
            } else if (drift) {
                printf("  slow host: rank 0 computed at %.3f ns per multiply-add, the one-rank run at %.3f: the host "
                       "changed speed between them", rate, r1);
            }
            slow_points += slow || drift;
            slow |= drift;
            printf("\n");
            fprintf(csv, "%d,%d,%.12e,%.6f,%.6f,%d,%d\n", s->procs[i], s->sizes[j], tp, sp, eff, over || uncharged,
                    slow);
            if (over) {
                superlinear++;
                fprintf(stderr, "mpisim study: P=%d N=%d: speedup %.3f exceeds P = %d by more than the host's caches and "
                                "the noise of its runs and of the one-rank point's can give (%.1f %%): a time that "
                                "cannot be right\n",
                        s->procs[i], s->sizes[j], sp, s->procs[i], tol * 100);
            }
            if (uncharged) {
                superlinear += !over;
                fprintf(stderr, "mpisim study: P=%d N=%d: rank 0 was charged %.3f ns per multiply-add in the fastest "
                                "run, under %.0f %% of this machine's %.4f: its computation was not charged in full "
                                "(a few microseconds between two calls can be taken for noise: docs/architecture.md, "
                                "\"Repeatable small gaps\"); a time that cannot be right\n",
                        s->procs[i], s->sizes[j], rate, UNCHARGED_SHARE * 100, nominal);
            }
        }
    if (ms_outfile_commit(&csv_out, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim study: %s\n", err);
        return MS_EXIT_OUTPUT;
    }
    if (superlinear)
        printf("Outcome: superlinear: %d point%s with a speedup above P beyond the caches and the noise of their runs, "
               "or whose computation was not charged in full; their times (or their one-rank points') cannot be "
               "right\n", superlinear, superlinear > 1 ? "s" : "");
    if (slow_points)
        printf("Outcome: slow host: %d point%s whose every run computed at over %.2fx this machine's calibrated rate, "
               "or whose rank 0 computed at over %.2fx the one-rank run's (a slow spell of the host: on a shared "
               "virtual machine its cores change speed by 2x within minutes): %s computation, charged as the CPU "
               "time it took, is overstated; run the study again on a quieter machine\n",
               slow_points, slow_points > 1 ? "s" : "", SLOW_RUN, SLOW_RUN, slow_points > 1 ? "their" : "its");
    printf("CSV: %s\n", s->csv_path);
    /* the plot is drawn by the results/ script with Debian's matplotlib, when it is there */
    char script[PATH_MAX], plot_py[PATH_MAX + 32], png[PATH_MAX + 32], msg[1024];
    snprintf(plot_py, sizeof plot_py, "%s/plot_speedup.py", mpisim_find_data("results", script, sizeof script) == 0 ? script : ".");
    snprintf(png, sizeof png, "%s/speedup.png", s->out);
    char *const plot[] = {"/usr/bin/python3", plot_py, s->csv_path, png, NULL};
    if (access("/usr/bin/python3", X_OK) == 0 && run_captured(plot, msg, sizeof msg) == 0) printf("Plot: %s\n", png);
    return failures ? 1 : superlinear ? MS_EXIT_SUPERLINEAR : slow_points ? MS_EXIT_SLOW_HOST : 0;
}

/* parse -> validate (configuration, programs, output folder, CPU factor) -> run the grid (again
 * when the calibration met a slow spell) -> print */
static int study_speedup(study_run *s, int argc, char **argv)
{
    int rc = parse_study_options(s, argc, argv);
    if (rc < 0) rc = prepare_study(s);
    if (rc < 0) rc = choose_cpu_factor(s);
    if (rc >= 0) return rc;
    s->t = calloc((size_t)(s->np * s->ns), sizeof *s->t);
    s->t2 = calloc((size_t)(s->np * s->ns), sizeof *s->t2);
    s->rate = calloc((size_t)(s->np * s->ns), sizeof *s->rate);
    s->slow = calloc((size_t)(s->np * s->ns), sizeof *s->slow);
    s->slow_best = calloc((size_t)(s->np * s->ns), sizeof *s->slow_best);
    if (!s->t || !s->t2 || !s->rate || !s->slow || !s->slow_best) {
        fprintf(stderr, "mpisim study: out of memory\n");
        return MS_EXIT_NO_MEMORY;
    }
    for (int attempt = 0;; attempt++) {
        s->o.cpu_factor = s->cpu_factor;
        s->o.cpu_factor_source = s->cpu_factor > 0 ? s->source : NULL;
        if ((rc = write_attempt_files(s)) >= 0) return rc;
        run_grid(s);
        if (attempt == 0 && calibration_was_slow(s)) continue;
        recheck_superlinear(s);
        break;
    }
    nm_config_destroy(s->cfg);
    s->cfg = NULL;
    return print_study(s);
}

int mpisim_study_main(int argc, char **argv)
{
    study_run s = {0};
    int rc = study_speedup(&s, argc, argv);
    nm_config_destroy(s.cfg);
    free(s.t);
    free(s.t2);
    free(s.rate);
    free(s.slow);
    free(s.slow_best);
    free(s.o.sets);
    return rc;
}
