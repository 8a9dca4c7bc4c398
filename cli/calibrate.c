/* `mpisim calibrate`: a profile of this machine (or of the cluster whose benchmark outputs are
 * given) from microbenchmarks, and the check of that profile by re-running the benchmarks under
 * it. Measuring: calibench (apps/calibench.c) under mpirun, natively; fitting: calib.c; the check:
 * calibench under `mpisim run --profile OUT --compute none`, virtual time against the measured. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>

#include "calib.h"
#include "exit_codes.h"
#include "ms_outfile.h"
#include "nm_cmdline.h"
#include "study.h"

enum { O_OUT = 256, O_FROM, O_FROM_OFF, O_BUDGET, O_HOSTFILE, O_MPIRUN, O_MPIRUN_ARG, O_RPN, O_BASE, O_NO_CHECK,
       O_CSV, O_PLOT, O_KEEP, O_MAX, O_NP_SAMPLES };

static const cm_opt cal_opts[] = {
    {"out", 'o', "FILE.ini", "the profile to write (default host.ini); FILE.csv and FILE.png beside it"},
    {"from", O_FROM, "FILE", "fit from a results file instead of measuring (repeatable): calibench's output, OSU\n"
                             "osu_latency/osu_bw/osu_bibw, IMB-MPI1 PingPong/PingPing, NetPIPE (np.out or its output)"},
    {"from-off-node", O_FROM_OFF, "FILE", "the same, measured between two nodes (read, reported; not fitted yet)"},
    {"budget", O_BUDGET, "SECONDS", "time for the measurements and the check together (default 90): a busy\n"
                                   "machine gets fewer samples, never a longer run"},
    {"max", O_MAX, "BYTES", "largest message measured (default 4M)"},
    {"hostfile", O_HOSTFILE, "FILE", "mpirun's hostfile naming two hosts: also measure between them (reported, not\n"
                                     "fitted yet: off-node messages keep --base's network)"},
    {"mpirun", O_MPIRUN, "PATH", "the mpirun to launch with"},
    {"mpirun-arg", O_MPIRUN_ARG, "ARG", "pass ARG to mpirun (repeatable)"},
    {"ranks-per-node", O_RPN, "N", "host.ranks_per_node of the profile (default: this machine's cores)"},
    {"base", O_BASE, "PROFILE", "the profile included for what was not measured: the network between nodes (default default)"},
    {"no-check", O_NO_CHECK, NULL, "do not re-run the benchmarks under the profile"},
    {"csv", O_CSV, "FILE", "measured and re-run times per size (default: beside --out)"},
    {"plot", O_PLOT, "FILE.png", "measured vs re-run per size (default: beside --out; needs /usr/bin/python3 with matplotlib)"},
    {"keep", O_KEEP, "DIR", "keep the benchmarks' raw outputs in DIR"},
    CM_OPT_HELP,
    CM_OPT_END,
};

static void usage(FILE *f)
{
    fputs("usage: mpisim calibrate [--out host.ini] [--budget SECONDS] [--from FILE]... [options]\n"
          "Measures this machine with calibench (two ranks under mpirun: ping-pong per size and send mode,\n"
          "one- and both-way streams, send and receive call durations, empty calls, reductions, a compute\n"
          "kernel), or reads benchmark outputs (--from); fits the MPI and host parameters piecewise by message\n"
          "size, the protocol switches found in the data; writes a profile for mpisim run --profile, every\n"
          "fitted key with its source; then re-runs the benchmarks under the profile (virtual time) and prints\n"
          "the fit quality per size range. Progress on stderr.\n",
          f);
    cm_cmdline_print_options(cal_opts, f);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void loadavg(char *out, size_t len)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double a = -1, b = -1, c = -1;
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3) a = -1;
        fclose(f);
    }
    if (a >= 0) snprintf(out, len, "%.2f %.2f %.2f", a, b, c);
    else snprintf(out, len, "unknown");
}

static int cores_here(void)
{
    hwloc_topology_t t;
    int n = 0;
    if (hwloc_topology_init(&t) == 0) {
        if (hwloc_topology_load(t) == 0) n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
        hwloc_topology_destroy(t);
    }
    return n > 0 ? n : 1;
}

/* Run argv with stdout into out_path; stderr relayed line by line (prefix; lines starting with
 * "calibench: " shortened). Returns the exit status, -1 if it could not run. */
#define RELAY_TIMED_OUT (-2)
static double now_s(void);
/* As run_relay; at `deadline` (now_s() seconds, 0: none) the child is asked to stop (SIGTERM, which
 * `mpisim run` answers by stopping its ranks and writing what it has), killed 10 s later if it has
 * not; then RELAY_TIMED_OUT. */
static int run_relay_until(char *const argv[], const char *out_path, const char *prefix, int quiet, double deadline);
static int run_relay(char *const argv[], const char *out_path, const char *prefix, int quiet)
{
    return run_relay_until(argv, out_path, prefix, quiet, 0);
}
static int run_relay_until(char *const argv[], const char *out_path, const char *prefix, int quiet, double deadline)
{
    int fds[2];
    if (pipe(fds) < 0) return -1;
    int ofd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (ofd < 0) {
        close(fds[0]), close(fds[1]);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]), close(ofd);
        return -1;
    }
    if (pid == 0) {
        dup2(ofd, 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        close(ofd);
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    close(ofd);
    FILE *f = fdopen(fds[0], "r");
    char line[2048];
    int stopped = 0;
    while (f) {
        if (deadline > 0) {
            /* wait for output only until the deadline (a line, once started, is read whole) */
            double left = (stopped ? deadline + 10 : deadline) - now_s();
            struct pollfd pf = {fds[0], POLLIN, 0};
            int pr = left > 0 ? poll(&pf, 1, (int)(left * 1000) + 1) : 0;
            if (pr < 0 && errno == EINTR) continue;
            if (pr == 0) {
                kill(pid, stopped ? SIGKILL : SIGTERM);
                if (stopped++) deadline = 0;   /* killed: read what is left without a limit */
                continue;
            }
        }
        if (!fgets(line, sizeof line, f)) break;
        /* the check run's own summary line (its errors are shown) */
        if (quiet && !strncmp(line, "mpisim: ", 8) && strstr(line, "virtual")) continue;
        const char *l = !strncmp(line, "calibench: ", 11) ? line + 11 : line;
        fprintf(stderr, "%s%s", prefix, l);
        fflush(stderr);
    }
    if (f) fclose(f);
    else close(fds[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    if (stopped) return RELAY_TIMED_OUT;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

typedef struct {
    const char *mpirun;
    const char **margs;
    int nmargs;
    const char *hostfile;
    char calibench[PATH_MAX];
    char mpisim[PATH_MAX + 16];
} launch_t;

/* Copy file `from` to `to` through the output writer (0, or -1 with a message). */
static int copy_out(const char *from, const char *to, const char *what)
{
    FILE *in = fopen(from, "rb");
    if (!in) return -1;
    ms_outfile o;
    char err[PATH_MAX + 256];
    if (ms_outfile_open(&o, to, 0, what, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim calibrate: %s\n", err);
        fclose(in);
        return -1;
    }
    char buf[65536];
    size_t n;
    int bad = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, o.f) != n) bad = 1;
    bad |= ferror(in);
    fclose(in);
    if (bad) {
        ms_outfile_discard(&o);
        return -1;
    }
    if (ms_outfile_commit(&o, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim calibrate: %s\n", err);
        return -1;
    }
    return 0;
}

/* argv for calibench under mpirun (natively) or under mpisim run with a profile */
static int bench_argv(const launch_t *L, const char *profile, const char *report, char **av, int max, char **extra,
                      int nextra)
{
    int k = 0;
    if (profile) {
        av[k++] = (char *)L->mpisim;
        av[k++] = "run";
        av[k++] = "--profile";
        av[k++] = (char *)profile;
        av[k++] = "--compute";
        av[k++] = "none";
        av[k++] = "--report";
        av[k++] = (char *)report;
        if (L->mpirun) av[k++] = "--mpirun", av[k++] = (char *)L->mpirun;
        for (int i = 0; i < L->nmargs; i++) av[k++] = "--mpirun-arg", av[k++] = (char *)L->margs[i];
        av[k++] = "-n";
        av[k++] = "2";
        av[k++] = "--";
    } else {
        av[k++] = (char *)(L->mpirun ? L->mpirun : "mpirun");
        if (geteuid() == 0) av[k++] = "--allow-run-as-root";
        av[k++] = "--oversubscribe";
        av[k++] = "--bind-to";
        av[k++] = "core";
        if (L->hostfile) av[k++] = "--hostfile", av[k++] = (char *)L->hostfile, av[k++] = "--map-by", av[k++] = "node";
        for (int i = 0; i < L->nmargs; i++) av[k++] = (char *)L->margs[i];
        av[k++] = "-n";
        av[k++] = "2";
    }
    av[k++] = (char *)L->calibench;
    for (int i = 0; i < nextra && k < max - 1; i++) av[k++] = extra[i];
    av[k] = NULL;
    return k;
}

static int is_checked_test(cal_test t)
{
    return t == CAL_PINGPONG || t == CAL_STREAM || t == CAL_BOTHWAY || t == CAL_SENDCALL || t == CAL_RECVCALL ||
           t == CAL_FORWARD || t == CAL_COLL;
}

typedef struct {
    char test[16], mode[16];
    int region;
    int n, out;   /* sizes compared; sizes left out as disturbed */
    double med, worst, rms;
} quality_row;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void size_text(double b, char *out, size_t len)
{
    if (b >= 1048576 && fmod(b, 1048576) == 0) snprintf(out, len, "%.0f MiB", b / 1048576);
    else if (b >= 1024 && fmod(b, 1024) == 0) snprintf(out, len, "%.0f KiB", b / 1024);
    else snprintf(out, len, "%.0f B", b);
}

/* sizes of every series, comma-separated, into buf */
static void sizes_list(const cal_data *d, char *buf, size_t len, int pingpong_only)
{
    double s[4096];
    int n = 0;
    for (int i = 0; i < d->ns; i++) {
        if (pingpong_only && d->s[i].test != CAL_PINGPONG) continue;
        if (!is_checked_test(d->s[i].test)) continue;
        for (int j = 0; j < d->s[i].np && n < 4096; j++) {
            int dup = 0;
            for (int k = 0; k < n && !dup; k++) dup = s[k] == d->s[i].p[j].bytes;
            if (!dup) s[n++] = d->s[i].p[j].bytes;
        }
    }
    qsort(s, (size_t)n, sizeof *s, cmp_d);
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < n && off + 24 < len; i++) off += (size_t)snprintf(buf + off, len - off, "%s%.0f", i ? "," : "", s[i]);
}

/* One run of mpisim calibrate: its options, its files, what it measured, fitted and checked. */
typedef struct {
    const char *out, *csv, *plot, *keep, *base;
    const char **from, **from_off, **margs;
    int nfrom, nfrom_off, check;
    long rpn, maxb;
    double budget;
    launch_t L;
    char csvp[PATH_MAX + 8], pngp[PATH_MAX + 8], dir[PATH_MAX + 32], path[PATH_MAX + 64];
    double t_start;
    char load0[64], load1[64], date[32], when[64];
    int ncores, measured;
    cal_data *d, *chk;
    cal_fit f;
    char err[2048];
    size_t ho;   /* the profile header's length so far */
    quality_row rows[512];
    int nrows, failed_regions;
} cal_run;

static char header[1 << 17];   /* the profile's header; the fit-quality table goes in too */

/* The command line: -1 to go on, else the exit code. */
static int parse_args(cal_run *c, int argc, char **argv)
{
    cm_cmdline cl;
    cm_cmdline_init(&cl, "mpisim calibrate", cal_opts, argc, argv, 0);
    const char *v;
    for (int k; (k = cm_cmdline_next(&cl, &v)) != -1;) {
        switch (k) {
        case 'h': usage(stdout); return 0;
        case 'o': c->out = v; break;
        case O_FROM: c->from[c->nfrom++] = v; break;
        case O_FROM_OFF: c->from_off[c->nfrom_off++] = v; break;
        case O_BUDGET:
            if (cm_cmdline_double(&cl, k, v, 5, &c->budget) != 0) return MS_EXIT_USAGE;
            break;
        case O_MAX: {
            /* a byte count with a binary suffix, as calibench takes it: 64k, 4M */
            char *e;
            double x = strtod(v, &e);
            double mul = *e == 'k' || *e == 'K' ? 1024.0 : *e == 'm' || *e == 'M' ? 1048576.0 : *e == 'g' || *e == 'G' ? 1073741824.0 : 1;
            if (mul > 1) e++;
            if (e == v || *e || !(x * mul >= 1024 && x * mul <= 1073741824.0) || x * mul != floor(x * mul))
                return cm_cmdline_bad(&cl, k, v, "expected a byte count from 1k to 1G (suffixes k, M, G: x1024)");
            c->maxb = (long)(x * mul);
            break;
        }
        case O_HOSTFILE: c->L.hostfile = v; break;
        case O_MPIRUN: c->L.mpirun = v; break;
        case O_MPIRUN_ARG: c->margs[c->L.nmargs++] = v; break;
        case O_RPN:
            if (cm_cmdline_long(&cl, k, v, 1, 1 << 20, &c->rpn) != 0) return MS_EXIT_USAGE;
            break;
        case O_BASE: c->base = v; break;
        case O_NO_CHECK: c->check = 0; break;
        case O_CSV: c->csv = v; break;
        case O_PLOT: c->plot = v; break;
        case O_KEEP: c->keep = v; break;
        default: return MS_EXIT_USAGE;
        }
    }
    if (cm_cmdline_operands(&cl, 0, 0, "") < 0) return MS_EXIT_USAGE;
    return -1;
}

/* The base profile, the programs, the output files' names and the scratch directory: -1 to go
 * on, else the exit code. */
static int prepare(cal_run *c)
{
    /* the base profile must load: the written profile includes it */
    char err[2048];
    nm_config *bcfg = mpisim_load_config(c->base, NULL, 0, err, sizeof err);
    if (!bcfg) {
        fprintf(stderr, "mpisim calibrate: --base: %s\n", err);
        return MS_EXIT_USAGE;
    }
    nm_config_destroy(bcfg);
    if (mpisim_find_program("calibench", c->L.calibench, sizeof c->L.calibench) != 0) {
        if (!c->nfrom || c->check) {
            fprintf(stderr, "mpisim calibrate: the benchmark program calibench is not beside the command (build it: "
                            "cmake --build BUILD --target calibench)%s\n",
                    c->nfrom ? "; or pass --no-check" : "");
            return MS_EXIT_USAGE;
        }
    }
    char self[PATH_MAX];
    if (mpisim_self_dir(self, sizeof self) == 0) snprintf(c->L.mpisim, sizeof c->L.mpisim, "%s/mpisim", self);

    /* file names: OUT.csv, OUT.png, the raw outputs in a directory of their own */
    char stem[PATH_MAX];
    snprintf(stem, sizeof stem, "%s", c->out);
    size_t sl = strlen(stem);
    if (sl > 4 && !strcmp(stem + sl - 4, ".ini")) stem[sl - 4] = 0;
    snprintf(c->csvp, sizeof c->csvp, "%s", c->csv ? c->csv : "");
    if (!c->csv) snprintf(c->csvp, sizeof c->csvp, "%s.csv", stem);
    snprintf(c->pngp, sizeof c->pngp, "%s", c->plot ? c->plot : "");
    if (!c->plot) snprintf(c->pngp, sizeof c->pngp, "%s.png", stem);
    if (c->keep) {
        snprintf(c->dir, sizeof c->dir, "%s", c->keep);
        if (mkdir(c->dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "mpisim calibrate: --keep %s: %s\n", c->dir, strerror(errno));
            return MS_EXIT_OUTPUT;
        }
    } else {
        snprintf(c->dir, sizeof c->dir, "%s/mpisim-calibrate-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(c->dir)) {
            fprintf(stderr, "mpisim calibrate: cannot make a scratch directory: %s\n", strerror(errno));
            return MS_EXIT_OUTPUT;
        }
    }
    return -1;
}

/* The start: the time, the load average, the dates, the cores (host.ranks_per_node by default). */
static void note_start(cal_run *c)
{
    c->t_start = now_s();
    loadavg(c->load0, sizeof c->load0);
    time_t tt = time(NULL);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(c->date, sizeof c->date, "%Y-%m-%d", &tm);
    strftime(c->when, sizeof c->when, "%Y-%m-%d %H:%M UTC", &tm);
    int ncores = c->ncores = cores_here();
    if (!c->rpn) c->rpn = ncores;

    {
        double l1 = atof(c->load0);
        if (!c->nfrom && l1 > ncores)
            fprintf(stderr, "mpisim calibrate: the machine is busy (load average %.1f on %d cores): samples spoiled by "
                            "it are left out (the densest third of each size counts) and disturbed sizes measured again; "
                            "a quiet machine gives a better fit\n",
                    l1, ncores);
    }
}

/* --from and --from-off-node files: 0, or the exit code. */
static int read_inputs(cal_run *c)
{
    for (int i = 0; i < c->nfrom; i++) {
        if (cal_read_file(c->d, c->from[i], 0, c->err, sizeof c->err) < 0) {
            fprintf(stderr, "mpisim calibrate: %s\n", c->err);
            return MS_EXIT_USAGE;
        }
        fprintf(stderr, "mpisim calibrate: read %s\n", c->from[i]);
    }
    for (int i = 0; i < c->nfrom_off; i++) {
        if (cal_read_file(c->d, c->from_off[i], 1, c->err, sizeof c->err) < 0) {
            fprintf(stderr, "mpisim calibrate: %s\n", c->err);
            return MS_EXIT_USAGE;
        }
        fprintf(stderr, "mpisim calibrate: read %s (between nodes: reported, not fitted)\n", c->from_off[i]);
    }
    return 0;
}

/* calibench on 2 ranks on this machine (the fit), and between the hostfile's hosts when there is
 * one (reported): 0, or the exit code. */
static int measure(cal_run *c)
{
    cal_data *d = c->d;
    char *path = c->path;
    const size_t path_len = sizeof c->path;
    double meas_budget = c->check ? 0.55 * c->budget : 0.85 * c->budget;
    c->measured = 1;
    char bud[32], mx[32], spread[32];
    snprintf(bud, sizeof bud, "%.1f", meas_budget);
    snprintf(mx, sizeof mx, "%ld", c->maxb);
    /* 12 rounds of 3 samples over half the time: this machine's slow spells (seconds long) then
     * spoil a few rounds, which the fit leaves out by their probes, rather than the whole run */
    snprintf(spread, sizeof spread, "%.1f", fmin(30, 0.5 * meas_budget) * (c->L.hostfile ? 0.7 : 1));
    char *extra[] = {"--budget", bud, "--max", mx, "--samples", "36", "--rounds", "12", "--spread", spread, "--progress"};
    char *av[64];
    /* on one node first (the fit); with a hostfile then between its hosts too */
    const char *hostfile = c->L.hostfile;
    c->L.hostfile = NULL;
    if (hostfile) snprintf(bud, sizeof bud, "%.1f", 0.7 * meas_budget);
    bench_argv(&c->L, NULL, NULL, av, 64, extra, (int)(sizeof extra / sizeof extra[0]));
    snprintf(path, path_len, "%s/calibench.txt", c->dir);
    fprintf(stderr, "mpisim calibrate: measuring with calibench on 2 ranks on this machine (%s s at most; load %s)\n",
            bud, c->load0);
    int st = run_relay(av, path, "  ", 0);
    if (st == 0 && hostfile) {
        char bud2[32], path2[PATH_MAX + 64];
        snprintf(bud2, sizeof bud2, "%.1f", 0.3 * meas_budget);
        char *extra2[] = {"--budget", bud2, "--max", mx, "--tests", "pingpong,stream,bothway", "--modes", "send,isend",
                          "--progress"};
        c->L.hostfile = hostfile;
        bench_argv(&c->L, NULL, NULL, av, 64, extra2, 9);
        c->L.hostfile = NULL;
        snprintf(path2, sizeof path2, "%s/calibench-hosts.txt", c->dir);
        fprintf(stderr, "mpisim calibrate: measuring between the hosts of %s (%s s at most)\n", hostfile, bud2);
        if (run_relay(av, path2, "  ", 0) != 0 || cal_read_file(d, path2, -1, c->err, sizeof c->err) < 0)
            fprintf(stderr, "mpisim calibrate: warning: the run between hosts failed (%s): on one node only\n", path2);
        else if (d->same_host)
            fprintf(stderr, "mpisim calibrate: warning: %s put both ranks on one host: nothing between nodes\n", hostfile);
        else
            fprintf(stderr, "mpisim calibrate: warning: between nodes measured (in the CSV), not fitted: off-node "
                            "messages keep the network of '%s'\n", c->base);
    }
    if (st != 0) {
        fprintf(stderr, "mpisim calibrate: calibench failed (exit %d); its output is in %s\n", st, path);
        c->keep = c->dir;
        return 1;
    }
    if (cal_read_file(d, path, -1, c->err, sizeof c->err) < 0) {
        fprintf(stderr, "mpisim calibrate: %s\n", c->err);
        return 1;
    }
    snprintf(d->inputs, sizeof d->inputs, "calibench (apps/calibench.c) on this machine%s", hostfile ? " and between the hosts of the hostfile" : ", one node");
    return 0;
}

/* What the rounds' probes did to the samples, for the terminal and the profile's header ("" when
 * no round was probed). */
static void rounds_text(const cal_data *d, char *buf, size_t len)
{
    int probed = 0;
    for (int k = 0; k < d->nrounds; k++) probed += d->rounds[k].before_s > 0 && d->rounds[k].after_s > 0;
    buf[0] = 0;
    if (probed < 2) return;
    char pts[256] = "";
    if (d->points_out)
        snprintf(pts, sizeof pts, "; %d sizes with under 3 samples outside them left out (%s%s)", d->points_out,
                 d->points_out_text, d->points_out > 6 ? ", ..." : "");
    if (d->rounds_out == 0)
        snprintf(buf, len, "every one of %d rounds counted (their probes, the ping-pong of 0 B, %.0f-%.0f ns)%s", probed,
                 d->best_probe * 1e9, d->worst_kept_probe * 1e9, pts);
    else
        snprintf(buf, len, "%d of %d rounds left out as taken in a slow spell of the machine (their probe, the ping-pong "
                 "of 0 B, from %.0f ns; the %d kept %.0f-%.0f ns)%s", d->rounds_out, probed, d->best_out_probe * 1e9,
                 probed - d->rounds_out, d->best_probe * 1e9, d->worst_kept_probe * 1e9, pts);
}

/* The fit, and with measurements a second pass at the sizes it wants again: 0, or the exit code. */
static int fit(cal_run *c)
{
    cal_data *d = c->d;
    char rt[640];
    cal_data_estimate(d);
    if (cal_fit_run(d, c->date, &c->f, c->err, sizeof c->err) != 0) {
        fprintf(stderr, "mpisim calibrate: %s\n", c->err);
        return MS_EXIT_USAGE;
    }
    if (c->measured) {
        long sizes[256];
        int nr = cal_refine_sizes(d, &c->f, sizes, 256);
        if (nr > 0) {
            char list[4096] = "", bud[32];
            size_t off = 0;
            for (int i = 0; i < nr && off + 24 < sizeof list; i++) off += (size_t)snprintf(list + off, sizeof list - off, "%s%ld", i ? "," : "", sizes[i]);
            char spread[32];
            snprintf(bud, sizeof bud, "%.1f", 0.12 * c->budget);
            /* spread too: a short pass inside one slow spell would be left out whole */
            snprintf(spread, sizeof spread, "%.1f", 0.06 * c->budget);
            char *extra[] = {"--tests", "pingpong,sendcall,recvcall", "--modes", "send", "--sizes", list, "--budget", bud,
                             "--rounds", "6", "--spread", spread};
            char *av[64];
            bench_argv(&c->L, NULL, NULL, av, 64, extra, (int)(sizeof extra / sizeof extra[0]));
            snprintf(c->path, sizeof c->path, "%s/calibench-refine.txt", c->dir);
            fprintf(stderr, "mpisim calibrate: %d sizes again: inside the breakpoints' brackets and where the first pass "
                            "was disturbed\n", nr);
            char inputs[sizeof d->inputs];
            memcpy(inputs, d->inputs, sizeof inputs);
            int got = run_relay(av, c->path, "  ", 0) == 0 && cal_read_file(d, c->path, -1, c->err, sizeof c->err) > 0;
            /* the scratch file's name is no input a reader of the profile can find */
            snprintf(d->inputs, sizeof d->inputs, "%s%s", inputs, got ? " (and a second pass)" : "");
            if (got) {
                cal_data_estimate(d);
                if (cal_fit_run(d, c->date, &c->f, c->err, sizeof c->err) != 0) {
                    fprintf(stderr, "mpisim calibrate: %s\n", c->err);
                    return MS_EXIT_USAGE;
                }
            } else {
                fprintf(stderr, "mpisim calibrate: warning: the second pass failed (%s): the first pass's fit stands\n", c->path);
            }
        }
    }
    rounds_text(d, rt, sizeof rt);
    if (rt[0]) fprintf(stderr, "mpisim calibrate: %s\n", rt);
    return 0;
}

/* The profile's header: who wrote it, from what, on what; the switch; the fit's warnings. */
static void profile_header(cal_run *c)
{
    char machine[256] = "";
    {
        hwloc_topology_t t;
        if (hwloc_topology_init(&t) == 0) {
            if (hwloc_topology_load(t) == 0) {
                hwloc_obj_t root = hwloc_get_root_obj(t);
                const char *model = hwloc_obj_get_info_by_name(root, "CPUModel");
                if (!model) {
                    hwloc_obj_t pkg = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
                    model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
                }
                snprintf(machine, sizeof machine, "%d cores%s%s", c->ncores, model ? ", " : "", model ? model : "");
            }
            hwloc_topology_destroy(t);
        }
    }
    size_t ho = 0;
    ho += (size_t)snprintf(header + ho, sizeof header - ho,
                           "%s: written by mpisim calibrate on %s from %s.\n"
                           "Measured on: %s; load average at the start %s.\n"
                           "Every fitted key says its source (KEY.source); what was not measured comes from '%s'.\n",
                           c->out, c->when, c->d->inputs[0] ? c->d->inputs : "(nothing)", c->measured ? machine : "(files)",
                           c->load0, c->base);
    const cal_fit *f = &c->f;
    if (f->eager_threshold > 0)
        ho += (size_t)snprintf(header + ho, sizeof header - ho, "Protocol switch (eager -> rendezvous) at %.0f B (located to %.0f B).\n",
                               f->eager_threshold, f->threshold_resolution);
    char rt[640];
    rounds_text(c->d, rt, sizeof rt);
    if (rt[0]) ho += (size_t)snprintf(header + ho, sizeof header - ho, "Samples: %s.\n", rt);
    for (int i = 0; i < f->nwarn; i++) ho += (size_t)snprintf(header + ho, sizeof header - ho, "warning: %s\n", f->warn[i]);
    c->ho = ho;
}

/* The profile, through the project's output writer: no link followed, the old profile kept until
 * the new one is complete (the check reads the first version, then it is written again with the
 * table). 0, or the exit code. */
static int write_profile(cal_run *c)
{
    ms_outfile po;
    char perr[PATH_MAX + 256];
    if (ms_outfile_open(&po, c->out, 0, "the profile", perr, sizeof perr) < 0) {
        fprintf(stderr, "mpisim calibrate: %s\n", perr);
        return MS_EXIT_OUTPUT;
    }
    if (cal_write_profile(&c->f, po.f, header, c->base, (int)c->rpn, c->measured && !c->L.hostfile) != 0) {
        ms_outfile_discard(&po);
        fprintf(stderr, "mpisim calibrate: cannot write the profile %s\n", c->out);
        return MS_EXIT_OUTPUT;
    }
    if (ms_outfile_commit(&po, perr, sizeof perr) < 0) {
        fprintf(stderr, "mpisim calibrate: %s\n", perr);
        return MS_EXIT_OUTPUT;
    }
    return 0;
}

static void print_ranges(const cal_run *c)
{
    const cal_fit *f = &c->f;
    for (int i = 0; i < f->nwarn; i++) fprintf(stderr, "mpisim calibrate: warning: %s\n", f->warn[i]);
    fprintf(stderr, "mpisim calibrate: %d size ranges:", f->nseg);
    for (int j = 0; j < f->nseg; j++) {
        char a[32];
        size_text(f->from[j], a, sizeof a);
        fprintf(stderr, " %s%s%s", a, f->rndv[j] ? " (rendezvous)" : "", f->ack[j] ? " (send waits for the receiver)" : "");
    }
    fprintf(stderr, "; L %.0f ns\n", f->shm_latency * 1e-3);
}

/* The runs of the check. Measured here: the first pass's sizes with calibench's own choice per
 * test (the same sizes as measured: less work than every size everywhere), then the second pass's
 * sizes for its three tests. From files: every size of the files, per window. */
typedef struct { char tests[128], modes[128], sizes[8192]; long window; int all; } check_job;

/* Series sr's test and mode into job j's lists (to, mo: their lengths), each once; coll runs all
 * its modes whatever --modes says (they are not send modes). */
static void job_add(check_job *j, size_t *to, size_t *mo, const cal_series *sr)
{
    if (!strstr(j->tests, cal_test_name(sr->test)))
        *to += (size_t)snprintf(j->tests + *to, sizeof j->tests - *to, "%s%s", *to ? "," : "", cal_test_name(sr->test));
    char m[24], wrapped[140];
    snprintf(m, sizeof m, ",%s,", sr->mode);
    snprintf(wrapped, sizeof wrapped, ",%s,", j->modes);
    if (sr->test != CAL_COLL && !strstr(wrapped, m))
        *mo += (size_t)snprintf(j->modes + *mo, sizeof j->modes - *mo, "%s%s", *mo ? "," : "", sr->mode);
}

static int plan_check(const cal_run *c, check_job *jobs, const char *list)
{
    const cal_data *d = c->d;
    /* the series' windows: calibench's own (the default), or the suites' */
    long windows[4] = {0};
    int nw = 0;
    for (int i = 0; i < d->ns; i++) {
        if (d->s[i].test != CAL_STREAM && d->s[i].test != CAL_BOTHWAY) continue;
        long w = c->measured ? 0 : d->s[i].window;
        int dup = 0;
        for (int k = 0; k < nw; k++) dup |= windows[k] == w;
        if (!dup && nw < 4) windows[nw++] = w;
    }
    if (nw == 0) windows[nw++] = 0;
    int nj = 0;
    if (c->measured) {
        check_job *j = &jobs[nj++];
        memset(j, 0, sizeof *j);
        size_t to = 0, mo = 0, so = 0;
        for (int i = 0; i < d->ns; i++) {
            const cal_series *sr = &d->s[i];
            if (!is_checked_test(sr->test) || sr->off_node) continue;
            job_add(j, &to, &mo, sr);
        }
        so += (size_t)snprintf(j->sizes + so, sizeof j->sizes - so, "0");
        for (long b = 1; b <= c->maxb; b *= 2) so += (size_t)snprintf(j->sizes + so, sizeof j->sizes - so, ",%ld", b);
        /* the second pass's sizes */
        const cal_series *P = cal_find(d, CAL_PINGPONG, "send", 0);
        check_job *k = &jobs[nj];
        memset(k, 0, sizeof *k);
        snprintf(k->tests, sizeof k->tests, "pingpong,sendcall,recvcall");
        snprintf(k->modes, sizeof k->modes, "send");
        k->all = 1;
        size_t ko = 0;
        for (int i = 0; P && i < P->np && ko + 24 < sizeof k->sizes; i++) {
            double b = P->p[i].bytes;
            int pow2 = b == 0 || (b == floor(b) && ((long)b & ((long)b - 1)) == 0);
            if (!pow2) ko += (size_t)snprintf(k->sizes + ko, sizeof k->sizes - ko, "%s%.0f", ko ? "," : "", b);
        }
        if (ko) nj++;
    } else {
        for (int w = 0; w < nw && nj < 6; w++) {
            check_job *j = &jobs[nj];
            memset(j, 0, sizeof *j);
            j->window = windows[w];
            j->all = 1;
            snprintf(j->sizes, sizeof j->sizes, "%s", list);
            size_t to = 0, mo = 0;
            for (int i = 0; i < d->ns; i++) {
                const cal_series *sr = &d->s[i];
                if (!is_checked_test(sr->test) || sr->off_node) continue;
                if ((sr->test == CAL_STREAM || sr->test == CAL_BOTHWAY) && sr->window != windows[w]) continue;
                job_add(j, &to, &mo, sr);
            }
            if (to) nj++;
        }
    }
    return nj;
}

#define CHECK_CUT (-1)

/* The check: the same benchmarks under the profile, in virtual time; the whole run stays within
 * the budget and a little: a check the load slows down is cut (CHECK_CUT). 0, or the exit code. */
static int run_check(cal_run *c)
{
    const cal_data *d = c->d;
    double check_deadline = fmax(c->t_start + c->budget + 15, now_s() + 10);
    double left = c->budget - (now_s() - c->t_start);
    if (left < 0.15 * c->budget) left = 0.15 * c->budget;
    char bud[32], list[8192];
    snprintf(bud, sizeof bud, "%.1f", left);
    sizes_list(d, list, sizeof list, 0);
    c->chk = cal_data_create();
    char report[PATH_MAX + 64];
    snprintf(report, sizeof report, "%s/check-report.json", c->dir);
    static check_job jobs[6];
    int nj = plan_check(c, jobs, list);
    for (int w = 0; w < nj; w++) {
        check_job *j = &jobs[w];
        char wtxt[16];
        snprintf(wtxt, sizeof wtxt, "%ld", j->window);
        char *extra[20];
        int ne = 0;
        extra[ne++] = "--tests", extra[ne++] = j->tests, extra[ne++] = "--modes", extra[ne++] = j->modes;
        extra[ne++] = "--sizes", extra[ne++] = j->sizes, extra[ne++] = "--samples", extra[ne++] = "1";
        if (j->all) extra[ne++] = "--all-sizes";
        /* the program's clocks are virtual under mpisim, and so its budget: a bounded amount of
         * work instead (the model's times do not vary from one operation to the next) */
        extra[ne++] = "--quick";
        extra[ne++] = "--budget", extra[ne++] = bud;
        if (j->window) extra[ne++] = "--window", extra[ne++] = wtxt;
        char *av[96];
        bench_argv(&c->L, c->out, report, av, 96, extra, ne);
        snprintf(c->path, sizeof c->path, "%s/check-%d.txt", c->dir, w);
        fprintf(stderr, "mpisim calibrate: checking (%d of %d): the benchmarks again under %s (virtual time, --compute none)\n",
                w + 1, nj, c->out);
        int st = run_relay_until(av, c->path, "  ", 1, check_deadline);
        if (st == RELAY_TIMED_OUT) {
            fprintf(stderr, "mpisim calibrate: warning: the check did not finish within the budget (%.0f s; load "
                            "average now %s): the profile is written without its fit quality (a busy machine: "
                            "run again, or give a larger --budget)\n",
                    c->budget, (loadavg(c->load1, sizeof c->load1), c->load1));
            return CHECK_CUT;
        }
        if (st != 0 || cal_read_file(c->chk, c->path, 0, c->err, sizeof c->err) < 0) {
            fprintf(stderr, "mpisim calibrate: the check run failed (exit %d): %s\n", st, st ? c->path : c->err);
            c->keep = c->dir;
            return 1;
        }
    }
    return 0;
}

/* Per series and size range of the check: median, worst and rms of the relative error. */
static void fit_quality(cal_run *c)
{
    const cal_data *d = c->d;
    const cal_fit *f = &c->f;
    cal_data_estimate(c->chk);
    for (int i = 0; i < d->ns; i++) {
        const cal_series *s = &d->s[i];
        if (!is_checked_test(s->test) || s->off_node) continue;
        const cal_series *cs = cal_find(c->chk, s->test, s->mode, 0);
        if (!cs) continue;
        double e[CAL_MAX_SEG][256];
        int ne[CAL_MAX_SEG] = {0};
        for (int j = 0; j < s->np; j++) {
            double m = s->p[j].est, p = -1;
            for (int k = 0; k < cs->np; k++)
                if (cs->p[k].bytes == s->p[j].bytes) p = cs->p[k].est;
            if (p < 0 || m <= 0) continue;
            int r = cal_fit_segment_of(f, s->p[j].bytes);
            if (ne[r] < 256) e[r][ne[r]++] = p / m - 1;
        }
        for (int r = 0; r < f->nseg && c->nrows < 512; r++) {
            if (!ne[r]) continue;
            quality_row *q = &c->rows[c->nrows++];
            snprintf(q->test, sizeof q->test, "%s", cal_test_name(s->test));
            snprintf(q->mode, sizeof q->mode, "%s", s->mode);
            q->region = r;
            double a[256], ss = 0;
            for (int k = 0; k < ne[r]; k++) a[k] = fabs(e[r][k]);
            qsort(a, (size_t)ne[r], sizeof a[0], cmp_d);
            double med = ne[r] % 2 ? a[ne[r] / 2] : 0.5 * (a[ne[r] / 2 - 1] + a[ne[r] / 2]);
            /* a measurement far slower than the model where the rest of its range agrees was
             * disturbed (load only adds time): left out of the figures, counted */
            double cut = fmax(0.2, 3 * med);
            int n = 0, out = 0;
            for (int k = 0; k < ne[r]; k++) {
                if (e[r][k] < -cut) {
                    out++;
                    continue;
                }
                a[n++] = fabs(e[r][k]);
                ss += e[r][k] * e[r][k];
            }
            if (!n) {   /* all of them: nothing agrees, they all count */
                n = 0, ss = 0, out = 0;
                for (int k = 0; k < ne[r]; k++) a[n++] = fabs(e[r][k]), ss += e[r][k] * e[r][k];
            }
            qsort(a, (size_t)n, sizeof a[0], cmp_d);
            q->n = n;
            q->out = out;
            q->med = n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
            q->worst = a[n - 1];
            q->rms = sqrt(ss / n);
            c->failed_regions += q->rms > 0.05;
        }
    }
}

/* The fit-quality table, on the terminal and in the profile's header (written again). */
static int print_quality(cal_run *c)
{
    const cal_fit *f = &c->f;
    static char tab[1 << 16];
    size_t to = 0;
    to += (size_t)snprintf(tab + to, sizeof tab - to,
                           "Fit quality: the benchmarks re-run under this profile (virtual time, --compute none) "
                           "against the measured times, per size range (out: sizes measured far slower than the rest "
                           "of their range agrees, disturbed, left out):\n"
                           "%-9s %-6s %-22s %4s %4s %8s %8s %8s\n",
                           "test", "mode", "sizes", "n", "out", "median", "worst", "rms");
    for (int i = 0; i < c->nrows && to + 200 < sizeof tab; i++) {
        const quality_row *q = &c->rows[i];
        char a[32], b[32], range[96];
        size_text(f->from[q->region], a, sizeof a);
        if (q->region + 1 < f->nseg) size_text(f->from[q->region + 1], b, sizeof b);
        snprintf(range, sizeof range, "%s%s%s", a, q->region + 1 < f->nseg ? "..<" : " and up", q->region + 1 < f->nseg ? b : "");
        to += (size_t)snprintf(tab + to, sizeof tab - to, "%-9s %-6s %-22s %4d %4d %7.1f%% %7.1f%% %7.1f%%%s\n", q->test,
                               q->mode, range, q->n, q->out, 100 * q->med, 100 * q->worst, 100 * q->rms,
                               q->rms > 0.05 ? "  over 5 %" : "");
    }
    to += (size_t)snprintf(tab + to, sizeof tab - to, "%d of %d size ranges within 5 %% rms. Load average at the end %s; %.0f s in all.\n",
                           c->nrows - c->failed_regions, c->nrows, c->load1, now_s() - c->t_start);
    fputs(tab, stderr);
    if (c->ho + to + 1 < sizeof header) {
        memcpy(header + c->ho, tab, to + 1);
        c->ho += to;
    }
    return write_profile(c);
}

/* The CSV (and plot): measured and re-run per size. 0, or the exit code. */
static int write_table(cal_run *c)
{
    const cal_data *d = c->d;
    const cal_fit *f = &c->f;
    ms_outfile co;
    char cerr[PATH_MAX + 256];
    if (ms_outfile_open(&co, c->csvp, 0, "the table", cerr, sizeof cerr) < 0) {
        fprintf(stderr, "mpisim calibrate: %s\n", cerr);
        return MS_EXIT_OUTPUT;
    }
    FILE *cf = co.f;
    fprintf(cf, "test,mode,window,off_node,bytes,measured_s,spread,samples,rejected,rerun_s,region,rendezvous\n");
    for (int i = 0; i < d->ns; i++) {
        const cal_series *s = &d->s[i];
        const cal_series *cs = c->chk ? cal_find(c->chk, s->test, s->mode, 0) : NULL;
        for (int j = 0; j < s->np; j++) {
            double p = -1;
            for (int k = 0; cs && k < cs->np; k++)
                if (cs->p[k].bytes == s->p[j].bytes) p = cs->p[k].est;
            int r = cal_fit_segment_of(f, s->p[j].bytes);
            fprintf(cf, "%s,%s,%ld,%d,%.0f,%.6e,%.4f,%d,%d,", cal_test_name(s->test), s->mode, s->window, s->off_node,
                    s->p[j].bytes, s->p[j].est, s->p[j].spread, s->p[j].nv, s->p[j].rejected);
            if (p >= 0) fprintf(cf, "%.6e", p);
            fprintf(cf, ",%d,%d\n", r, f->rndv[r]);
        }
    }
    if (ms_outfile_commit(&co, cerr, sizeof cerr) < 0) {
        fprintf(stderr, "mpisim calibrate: %s\n", cerr);
        return MS_EXIT_OUTPUT;
    }
    char script[PATH_MAX], py[PATH_MAX + 40], msg[64];
    (void)msg;
    if (mpisim_find_data("results", script, sizeof script) == 0 && access("/usr/bin/python3", X_OK) == 0) {
        snprintf(py, sizeof py, "%s/plot_calibration.py", script);
        /* drawn in the scratch directory, then put in place by the output writer */
        char tpng[PATH_MAX + 48];
        snprintf(tpng, sizeof tpng, "%s/plot.png", c->dir);
        char *pav[] = {"/usr/bin/python3", py, c->csvp, tpng, NULL};
        char sink[PATH_MAX + 64];
        snprintf(sink, sizeof sink, "%s/plot.txt", c->dir);
        if (access(py, R_OK) == 0 && run_relay(pav, sink, "  plot: ", 0) == 0 && copy_out(tpng, c->pngp, "the plot") == 0)
            fprintf(stderr, "mpisim calibrate: wrote %s, %s and %s\n", c->out, c->csvp, c->pngp);
        else
            fprintf(stderr, "mpisim calibrate: wrote %s and %s (no plot: results/plot_calibration.py %s %s draws it)\n",
                    c->out, c->csvp, c->csvp, c->pngp);
    } else {
        fprintf(stderr, "mpisim calibrate: wrote %s and %s\n", c->out, c->csvp);
    }
    return 0;
}

int mpisim_calibrate_main(int argc, char **argv)
{
    cal_run *c = calloc(1, sizeof *c);
    if (!c) {
        fprintf(stderr, "mpisim calibrate: out of memory\n");
        return MS_EXIT_USAGE;
    }
    c->out = "host.ini", c->base = "default", c->check = 1, c->maxb = 4L << 20, c->budget = 90;
    c->from = calloc((size_t)argc + 1, sizeof *c->from), c->from_off = calloc((size_t)argc + 1, sizeof *c->from_off);
    c->margs = calloc((size_t)argc + 1, sizeof *c->margs);
    c->L.margs = c->margs;
    int rc;
    if (!c->from || !c->from_off || !c->margs) {
        fprintf(stderr, "mpisim calibrate: out of memory\n");
        rc = MS_EXIT_USAGE;
    } else {
        rc = parse_args(c, argc, argv);
        if (rc < 0) rc = prepare(c);
    }
    if (rc >= 0) {
        free(c->from);
        free(c->from_off);
        free(c->margs);
        free(c);
        return rc;
    }
    note_start(c);
    c->d = cal_data_create();
    rc = read_inputs(c);
    if (!rc && !c->nfrom) rc = measure(c);
    if (!rc) rc = fit(c);
    if (!rc) {
        profile_header(c);
        rc = write_profile(c);
    }
    if (!rc) {
        print_ranges(c);
        int cut = 0;
        if (c->check) rc = run_check(c);
        if (rc == CHECK_CUT) {
            cal_data_destroy(c->chk);
            c->chk = NULL;
            cut = 1;
            rc = 0;
        }
        if (!rc && !cut) {
            if (c->check) fit_quality(c);
            loadavg(c->load1, sizeof c->load1);
            if (c->check) rc = print_quality(c);
        }
        if (!rc) rc = write_table(c);
        if (!rc && c->check && c->failed_regions)
            fprintf(stderr, "mpisim calibrate: warning: %d size ranges are off by more than 5 %% rms (see the table)\n",
                    c->failed_regions);
    }
    if (c->chk) cal_data_destroy(c->chk);
    cal_data_destroy(c->d);
    if (!c->keep) {
        /* the scratch directory: only the files this command wrote */
        const char *names[] = {"calibench.txt", "calibench-refine.txt", "calibench-hosts.txt", "check-0.txt", "check-1.txt",
                               "check-2.txt", "check-3.txt", "check-4.txt", "check-5.txt", "check-report.json", "plot.txt",
                               "plot.png"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            snprintf(c->path, sizeof c->path, "%s/%s", c->dir, names[i]);
            unlink(c->path);
        }
        rmdir(c->dir);
    } else if (rc) {
        fprintf(stderr, "mpisim calibrate: the raw outputs are in %s\n", c->dir);
    }
    free(c->from);
    free(c->from_off);
    free(c->margs);
    free(c);
    return rc;
}
