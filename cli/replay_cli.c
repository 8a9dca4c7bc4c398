/* `mpisim replay` and `mpisim sweep` (see replay_cli.h and replay/README.md); the replay itself is ms_replay (replay/). */
#define _GNU_SOURCE
#include "replay_cli.h"
#include "exit_codes.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ms_replay.h"
#include "ms_outfile.h"
#include "ms_trace.h"
#include "nm_cmdline.h"
#include "cm_grow.h"

/* Everything a subcommand allocates is released when it returns, on every path. */
typedef struct owned {
    void *p;
    void (*fn)(void *);
} owned;
static owned *g_owned;
static size_t g_nowned, g_capowned;

static void *own(void *p, void (*fn)(void *))
{
    if (!p) return NULL;
    if (cm_grow((void **)&g_owned, &g_capowned, g_nowned + 1, sizeof *g_owned, 64) < 0)
        return p; /* leaks at worst */
    g_owned[g_nowned].p = p;
    g_owned[g_nowned].fn = fn;
    g_nowned++;
    return p;
}

static void release_all(void)
{
    while (g_nowned) {
        g_nowned--;
        g_owned[g_nowned].fn(g_owned[g_nowned].p);
    }
    free(g_owned);
    g_owned = NULL;
    g_capowned = 0;
}

static void free_trace(void *p) { ms_trace_free(p); }
static void free_stream(void *p) { ms_trace_stream_close(p); }
static void free_cfg(void *p) { nm_config_destroy(p); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Options shared by replay and sweep. */
typedef struct common_opts {
    const char *trace;
    const char *profile;
    const char **sets;
    int nsets;
    ms_replay_opts ro;
} common_opts;

/* The options of replay and sweep: those both take first, then each one's own. */
enum { O_PROFILE = 256, O_SET, O_ROUTING, O_CPU_SCALE, O_WILDCARDS, O_REPORT, O_TIMELINE, O_VARY, O_MERGE_TIMEOUT };
#define COMMON_OPTS                                                                                                \
    {"profile", O_PROFILE, "NAME|FILE", "use this profile instead of the trace's recorded configuration"},        \
    NM_OPT_SET(O_SET), NM_OPT_ROUTING(O_ROUTING),                                                                   \
    {"cpu-scale", O_CPU_SCALE, "X", "scale the recorded computation by X >= 0 (default 1)"},                      \
    {"wildcards", O_WILDCARDS, "recorded|virtual", "wildcard receives match as recorded, or by virtual time"}

/* One shared option (key k, value v): 1 if consumed, 0 if not ours, -1 on a bad value. */
static int common_opt(const cm_cmdline *c, int k, const char *v, common_opts *o)
{
    switch (k) {
    case O_PROFILE: o->profile = v; return 1;
    case O_SET: o->sets[o->nsets++] = v; return 1;
    case O_ROUTING:   /* the routing is chosen by --routing wherever a network is built */
        return (o->sets[o->nsets++] = nm_cmdline_routing(c, k, v)) ? 1 : -1;
    case O_CPU_SCALE: return cm_cmdline_double(c, k, v, 0, &o->ro.cpu_scale) == 0 ? 1 : -1;
    case O_WILDCARDS:
        if (!strcmp(v, "recorded")) o->ro.wildcards = MS_WILDCARDS_RECORDED;
        else if (!strcmp(v, "virtual")) o->ro.wildcards = MS_WILDCARDS_VIRTUAL;
        else return cm_cmdline_bad(c, k, v, "expected recorded or virtual"), -1;
        return 1;
    }
    return 0;
}

/* The one TRACE operand; -1 (after a message) if there is none or more. */
static int trace_operand(const cm_cmdline *c, char **argv, common_opts *o)
{
    if (cm_cmdline_operands(c, 1, 1, "trace") < 0) return -1;
    o->trace = argv[cm_cmdline_operand(c)];
    return 0;
}

static void print_routings(FILE *f)
{
    fputs("Routings:\n", f);
    cm_registry_print(nm_routing_at, f, "  ");
}

static void print_warnings(const char *cmd, const char *w)
{
    if (!w || !*w) return;
    const char *p = w;
    while (*p) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(stderr, "mpisim %s: warning: %.*s\n", cmd, n, p);
        p += n + (nl ? 1 : 0);
    }
}

/* ---- replay --------------------------------------------------------------------------------- */

static const cm_opt replay_opts[] = {
    COMMON_OPTS,
    {"report", O_REPORT, "FILE|-", "JSON report (default mpisim-replay.json; - for standard output)"},
    {"timeline", O_TIMELINE, "FILE.csv", "every MPI call's virtual entry and exit time per rank"},
    {"quiet", 'q', NULL, "print nothing but errors"},
    CM_OPT_HELP,
    CM_OPT_END,
};

static void replay_usage(FILE *f)
{
    fprintf(f, "usage: mpisim replay TRACE.h5 [options]\n"
               "Plays a trace (mpisim trace / run --trace) through the model. The configuration is the\n"
               "trace's recorded one unless --profile names another; --set overrides keys.\n");
    cm_cmdline_print_options(replay_opts, f);
    print_routings(f);
}

static void warn_now(void *user, const char *text)
{
    (void)user;
    fprintf(stderr, "mpisim replay: WARNING: %s\n", text);
}

static int replay_main(int argc, char **argv)
{
    common_opts o;
    memset(&o, 0, sizeof o);
    o.ro.cpu_scale = 1.0;
    o.sets = own(calloc((size_t)argc + 1, sizeof *o.sets), free);
    const char *report = "mpisim-replay.json", *timeline = NULL;
    int quiet = 0;
    cm_cmdline c;
    cm_cmdline_init(&c, "mpisim replay", replay_opts, argc, argv, 0);
    const char *v;
    for (int k; (k = cm_cmdline_next(&c, &v)) != -1;) {
        int used = common_opt(&c, k, v, &o);
        if (used < 0) return 2;
        if (used) continue;
        switch (k) {
        case O_REPORT: report = v; break;
        case O_TIMELINE: timeline = v; break;
        case 'q': quiet = 1; break;
        case 'h': replay_usage(stdout); return 0;
        default: return 2;
        }
    }
    if (trace_operand(&c, argv, &o) != 0) return 2;
    char err[2048], warn[4096];
    /* the records are read as the replay plays them (memory: ranks x a stretch of records) */
    ms_trace_stream *src = own(ms_trace_stream_open(o.trace, err, sizeof err), free_stream);
    if (!src) {
        fprintf(stderr, "mpisim replay: %s\n", err);
        return 2;
    }
    const ms_trace *t = ms_trace_stream_trace(src);
    nm_config *cfg = own(ms_replay_config(t, o.profile, o.sets, o.nsets, warn, sizeof warn, err, sizeof err), free_cfg);
    if (!cfg) {
        if (!strncmp(err, "the trace's", 11)) fprintf(stderr, "mpisim replay: %s: %s\n", o.trace, err);
        else fprintf(stderr, "mpisim replay: %s\n", err);
        return 2;
    }
    print_warnings("replay", warn);
    static nm_progress_printer progress;   /* long route set-ups say how they go */
    nm_progress_attach(cfg, &progress, "mpisim replay");
    ms_replay_result res;
    /* outputs never through a link, complete or not at all (ms_outfile) */
    ms_outfile tl_out;
    if (timeline) {
        if (ms_outfile_open(&tl_out, timeline, MS_OUT_STDOUT, "the timeline", err, sizeof err) < 0) {
            fprintf(stderr, "mpisim replay: %s\n", err);
            return MS_EXIT_OUTPUT;
        }
        o.ro.timeline = tl_out.f;
    }
    o.ro.warn = warn_now;   /* before the replay starts */
    int run_rc = ms_replay_run_stream(src, cfg, &o.ro, &res, err, sizeof err);
    int timeline_bad = 0;
    if (timeline && run_rc < 0) ms_outfile_discard(&tl_out);
    else if (timeline && ms_outfile_commit(&tl_out, warn, sizeof warn) < 0) {
        fprintf(stderr, "mpisim replay: %s\n", warn);   /* a full disk: /dev/full */
        timeline_bad = 1;
    }
    if (run_rc < 0) {
        fprintf(stderr, "mpisim replay: %s\n", err);
        return 2;
    }
    /* exit codes as mpisim run's (README.md "Exit codes"); a trace damaged in its records is an
     * unreadable input, reported with what was replayed before the damage */
    int rc = res.trace_unreadable ? MS_EXIT_USAGE : ms_exit_code_of_outcome(res.outcome);
    ms_outfile rep_out;
    int report_written = 0;
    if (ms_outfile_open(&rep_out, report, MS_OUT_STDOUT, "the report", err, sizeof err) < 0) {
        fprintf(stderr, "mpisim replay: %s\n", err);
    } else if (ms_replay_write_report(rep_out.f, t, o.trace, cfg, &o.ro, &res) < 0) {
        fprintf(stderr, "mpisim replay: cannot write the report %s: %s\n", report, strerror(errno));
        ms_outfile_discard(&rep_out);
    } else if (ms_outfile_commit(&rep_out, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim replay: %s\n", err);
    } else {
        report_written = 1;
    }
    if ((!report_written || timeline_bad) && (!rc || rc == MS_EXIT_UNTIMED)) rc = MS_EXIT_OUTPUT;
    int named = report_written && strcmp(report, "-");
    if (!quiet) {
        fprintf(stderr,
                "mpisim replay: %d ranks on %s (%s engine): virtual time %.9f s, %llu messages, %llu bytes; "
                "wall %.2f s",
                res.nranks, res.topology, res.engine, res.virtual_time_ps * 1e-12, (unsigned long long)res.msgs_sent,
                (unsigned long long)res.bytes_sent, res.wall_s);
        if (named) fprintf(stderr, "; report %s", report);
        fputc('\n', stderr);
        /* the recorded resume times check a replay against its co-simulation; under another
         * configuration or computation scale they are expected to move */
        char changed[256];
        int nchanged = ms_replay_config_changes(t, cfg, changed, sizeof changed);
        if (res.resumes_checked && res.resumes_differ && (nchanged || o.ro.cpu_scale != 1.0))
            fprintf(stderr, "mpisim replay: %llu of %llu resume times moved from the co-simulation's, as expected: "
                            "%s%s%s%s%s\n",
                    (unsigned long long)res.resumes_differ, (unsigned long long)res.resumes_checked,
                    nchanged ? "the configuration is not the capture's (" : "", nchanged ? changed : "",
                    nchanged ? ")" : "", nchanged && o.ro.cpu_scale != 1.0 ? " and " : "",
                    o.ro.cpu_scale != 1.0 ? "the computation is scaled (--cpu-scale)" : "");
        else if (res.resumes_checked)
            fprintf(stderr, "mpisim replay: %llu of %llu recorded resume times differ%s%s\n",
                    (unsigned long long)res.resumes_differ, (unsigned long long)res.resumes_checked,
                    res.resumes_differ ? "; first: "
                                       : " (replay reproduces the co-simulation)",
                    res.first_difference);
    }
    int died = 0;
    for (int i = 0; i < res.nranks; i++) died += res.ranks[i].status == MS_RR_DIED || res.ranks[i].status == MS_RR_STOPPED;
    if (died && !quiet)
        fprintf(stderr, "mpisim replay: %d rank(s) stop without MPI_Finalize in the trace (killed, or records lost "
                        "after the last flush)\n", died);
    if (res.outcome) fprintf(stderr, "mpisim replay: %s\n", res.outcome_text);
    ms_replay_result_free(&res);
    return rc;
}

int mpisim_replay_main(int argc, char **argv)
{
    int rc = replay_main(argc, argv);
    release_all();
    return rc;
}

/* ---- sweep ---------------------------------------------------------------------------------- */

typedef struct vary {
    char *key;
    char **values;
    int n;
} vary;

static const cm_opt sweep_opts[] = {
    COMMON_OPTS,
    {"vary", O_VARY, "KEY=V1,V2,...", "values of one key (repeatable; the key cpu_scale varies --cpu-scale)"},
    {"jobs", 'j', "J", "worker processes (default: the cores)"},
    {"out", 'o', "FILE.csv", "the table (default: standard output)"},
    {"merge-timeout", O_MERGE_TIMEOUT, "S", "under mpirun: how long rank 0 waits for the others' parts"},
    CM_OPT_HELP,
    CM_OPT_END,
};

static void sweep_usage(FILE *f)
{
    fprintf(f,
            "usage: mpisim sweep TRACE.h5 --vary KEY=V1,V2,... [--vary KEY2=...]... [options]\n"
            "Replays every combination of the varied values in J worker processes and writes one CSV row\n"
            "per point. Under `mpirun -n K mpisim sweep ...` the points are divided among the K ranks, each\n"
            "writes FILE.csv.part<R>, and rank 0 merges them into FILE.csv (FILE must be on a shared file\n"
            "system).\n");
    cm_cmdline_print_options(sweep_opts, f);
    print_routings(f);
}

static int csv_field(char *out, size_t len, const char *s)
{
    if (!strpbrk(s, ",\"\n")) return snprintf(out, len, "%s", s);
    size_t o = 0;
    if (o < len) out[o++] = '"';
    for (; *s && o + 2 < len; s++) {
        if (*s == '"') out[o++] = '"';
        out[o++] = *s == '\n' ? ' ' : *s;
    }
    if (o < len) out[o++] = '"';
    if (o < len) out[o] = 0;
    else if (len) out[len - 1] = 0;
    return (int)o;
}

/* Values of point p (the first --vary is the slowest-changing). */
static void point_values(const vary *v, int nv, long p, int *idx)
{
    for (int k = nv - 1; k >= 0; k--) {
        idx[k] = (int)(p % v[k].n);
        p /= v[k].n;
    }
}

static int is_scale_key(const char *k) { return !strcmp(k, "cpu_scale") || !strcmp(k, "replay.cpu_scale"); }

typedef struct sweep {
    common_opts o;
    vary *v;
    int nv;
    long npoints;
    ms_trace *t;
} sweep;

/* Build the configuration and options of point p. */
static nm_config *point_config(const sweep *s, long p, ms_replay_opts *ro, char *err, size_t errlen)
{
    int idx[64];
    point_values(s->v, s->nv, p, idx);
    const char **sets = calloc((size_t)(s->o.nsets + s->nv + 1), sizeof *sets);
    char **owned = calloc((size_t)s->nv + 1, sizeof *owned);
    if (!sets || !owned) {
        free(sets);
        free(owned);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *ro = s->o.ro;
    int n = 0, oom = 0;
    for (int i = 0; i < s->o.nsets; i++) sets[n++] = s->o.sets[i];
    for (int k = 0; k < s->nv; k++) {
        const char *val = s->v[k].values[idx[k]];
        if (is_scale_key(s->v[k].key)) {
            ro->cpu_scale = strtod(val, NULL);
            continue;
        }
        size_t len = strlen(s->v[k].key) + strlen(val) + 2;
        owned[k] = malloc(len);
        if (!owned[k]) {
            oom = 1;
            continue;
        }
        snprintf(owned[k], len, "%s=%s", s->v[k].key, val);
        sets[n++] = owned[k];
    }
    nm_config *cfg = oom ? NULL : ms_replay_config(s->t, s->o.profile, sets, n, NULL, 0, err, errlen);
    if (oom) snprintf(err, errlen, "out of memory");
    static nm_progress_printer progress;   /* long route set-ups say how they go */
    if (cfg) nm_progress_attach(cfg, &progress, "mpisim sweep");
    for (int k = 0; k < s->nv; k++) free(owned[k]);
    free(owned);
    free(sets);
    return cfg;
}

#define ROW_MAX 3500 /* one row is written to a pipe in one write() (< PIPE_BUF) */

/* One CSV row (without the varied values' prefix: "point,<values>," is added by format_row). */
static void run_point(const sweep *s, long p, char *row, size_t len)
{
    char err[1024];
    ms_replay_opts ro;
    int idx[64];
    point_values(s->v, s->nv, p, idx);
    size_t o = (size_t)snprintf(row, len, "%ld", p);
    for (int k = 0; k < s->nv; k++) {
        char f[512];
        csv_field(f, sizeof f, s->v[k].values[idx[k]]);
        o += (size_t)snprintf(row + o, len - o, ",%s", f);
    }
    nm_config *cfg = point_config(s, p, &ro, err, sizeof err);
    ms_replay_result res;
    memset(&res, 0, sizeof res);
    int rc = cfg ? ms_replay_run(s->t, cfg, &ro, &res, err, sizeof err) : -1;
    if (rc < 0) {
        char f[1100];
        csv_field(f, sizeof f, err);
        snprintf(row + o, len - o, ",error,,,,,,,,,,%s\n", f);
    } else {
        int64_t maxc = 0, maxm = 0;
        int argmax = 0;
        for (int i = 0; i < res.nranks; i++) {
            if (res.ranks[i].virtual_end_ps > res.ranks[argmax].virtual_end_ps) argmax = i;
            if (res.ranks[i].compute_ps > maxc) maxc = res.ranks[i].compute_ps;
            if (res.ranks[i].mpi_ps > maxm) maxm = res.ranks[i].mpi_ps;
        }
        char f[1100] = "";
        if (res.outcome) csv_field(f, sizeof f, res.outcome_text);
        snprintf(row + o, len - o, ",%s,%.12e,%lld,%lld,%d,%lld,%lld,%llu,%llu,%llu,%.3f,%s\n",
                 ms_outcome_name(res.outcome), res.virtual_time_ps * 1e-12,
                 (long long)res.virtual_time_ps, (long long)res.mean_end_ps, argmax, (long long)maxc, (long long)maxm,
                 (unsigned long long)res.msgs_sent, (unsigned long long)res.bytes_sent,
                 (unsigned long long)res.collectives, res.wall_s, f);
    }
    size_t rl = strlen(row);
    if (rl + 1 >= len) row[len - 2] = '\n';
    ms_replay_result_free(&res);
    nm_config_destroy(cfg);
}

/* Whether a point's row says outcome untimed (the trace's untimed calls: every point's). */
static int rows_untimed(char *const *rows, long n)
{
    for (long i = 0; i < n; i++)
        if (rows[i] && strstr(rows[i], ",untimed,")) return 1;
    return 0;
}

static void header(const sweep *s, FILE *f)
{
    fprintf(f, "point");
    for (int k = 0; k < s->nv; k++) fprintf(f, ",%s", s->v[k].key);
    fprintf(f, ",outcome,virtual_time_s,virtual_time_ps,mean_end_ps,slowest_rank,max_compute_ps,max_mpi_ps,"
               "msgs_sent,bytes_sent,collectives,wall_s,error\n");
}

static void progress(int tty, long done, long total, double t0)
{
    if (!tty) return;
    int w = 30, fill = total ? (int)(w * done / total) : w;
    fprintf(stderr, "\rmpisim sweep: [%.*s%*s] %ld/%ld points, %.1f s", fill, "##############################",
            w - fill, "", done, total, now_s() - t0);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* A sweep worker as the parent sees it. */
typedef struct worker {
    pid_t pid;
    int cmd, res;        /* parent's ends */
    long busy;           /* index into mine, -1 idle */
    char buf[ROW_MAX * 2];
    size_t len;
} worker;

/* The workers' pipes closed, each worker waited for. */
static void workers_end(worker *w, int jobs)
{
    for (int j = 0; j < jobs; j++) {
        if (w[j].cmd >= 0) close(w[j].cmd);
        if (w[j].res >= 0) close(w[j].res);
        int st;
        waitpid(w[j].pid, &st, 0);
    }
}

/* A sweep worker (a forked child): each point index read from cmd run, its row written to res
 * behind the index and a tab; ends at the end of cmd. */
static void worker_main(const sweep *s, const long *mine, long nmine, int cmd, int res)
{
    long i;
    char row[ROW_MAX];
    while (read(cmd, &i, sizeof i) == (ssize_t)sizeof i) {
        if (i < 0 || i >= nmine) break;
        run_point(s, mine[i], row, sizeof row);
        size_t n = strlen(row);
        char msg[ROW_MAX + 32];
        int h = snprintf(msg, sizeof msg, "%ld\t", i);
        memcpy(msg + h, row, n);
        if (write(res, msg, (size_t)h + n) < 0) break;
    }
    _exit(0);
}

/* The row of a point whose worker died (malloc'd; NULL: out of memory). */
static char *died_row(const sweep *s, long point)
{
    char *row = malloc(ROW_MAX);
    if (!row) return NULL;
    int idx[64];
    point_values(s->v, s->nv, point, idx);
    size_t o = (size_t)snprintf(row, ROW_MAX, "%ld", point);
    for (int k = 0; k < s->nv; k++) o += (size_t)snprintf(row + o, ROW_MAX - o, ",%s", s->v[k].values[idx[k]]);
    snprintf(row + o, ROW_MAX - o, ",error,,,,,,,,,,the worker process died\n");
    return row;
}

/* Run the given points with `jobs` forked workers; rows[i] receives point mine[i]'s row. */
static int run_points(const sweep *s, const long *mine, long nmine, int jobs, char **rows, int tty)
{
    double t0 = now_s();
    if (jobs > nmine) jobs = (int)(nmine ? nmine : 1);
    worker *w = calloc((size_t)jobs, sizeof *w);
    if (!w) return -1;
    fflush(NULL);
    for (int j = 0; j < jobs; j++) {
        int c[2], r[2];
        if (pipe(c) < 0 || pipe(r) < 0) return -1;
        pid_t pid = fork();
        if (pid < 0) return -1;
        if (pid == 0) {
            close(c[1]);
            close(r[0]);
            for (int k = 0; k < j; k++) {
                close(w[k].cmd);
                close(w[k].res);
            }
            worker_main(s, mine, nmine, c[0], r[1]);
        }
        close(c[0]);
        close(r[1]);
        w[j].pid = pid;
        w[j].cmd = c[1];
        w[j].res = r[0];
        w[j].busy = -1;
    }
    long next = 0, done = 0;
    for (int j = 0; j < jobs && next < nmine; j++) {
        w[j].busy = next;
        if (write(w[j].cmd, &next, sizeof next) < 0) w[j].busy = -1;
        next++;
    }
    progress(tty, 0, nmine, t0);
    struct pollfd *pf = calloc((size_t)jobs, sizeof *pf);
    if (!pf) return -1;
    while (done < nmine) {
        int np = 0;
        for (int j = 0; j < jobs; j++) {
            pf[j].fd = w[j].res;
            pf[j].events = POLLIN;
            pf[j].revents = 0;
            if (w[j].res >= 0) np++;
        }
        if (!np) break;
        if (poll(pf, (nfds_t)jobs, 1000) < 0 && errno != EINTR) break;
        for (int j = 0; j < jobs; j++) {
            if (w[j].res < 0 || !(pf[j].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = read(w[j].res, w[j].buf + w[j].len, sizeof w[j].buf - w[j].len - 1);
            if (n <= 0) {
                /* the worker died: its point gets an error row */
                close(w[j].res);
                w[j].res = -1;
                if (w[j].busy >= 0) {
                    long i = w[j].busy;
                    if (!(rows[i] = died_row(s, mine[i]))) return -1;
                    done++;
                    w[j].busy = -1;
                    /* hand its remaining work to the others: they pick up `next` as they finish */
                }
                continue;
            }
            w[j].len += (size_t)n;
            w[j].buf[w[j].len] = 0;
            char *nl;
            while ((nl = memchr(w[j].buf, '\n', w[j].len))) {
                size_t linelen = (size_t)(nl - w[j].buf) + 1;
                long i = strtol(w[j].buf, NULL, 10);
                char *tab = memchr(w[j].buf, '\t', linelen);
                if (tab && i >= 0 && i < nmine && !rows[i]) {
                    size_t rl = linelen - (size_t)(tab + 1 - w[j].buf);
                    rows[i] = malloc(rl + 1);
                    if (!rows[i]) return -1;
                    memcpy(rows[i], tab + 1, rl);
                    rows[i][rl] = 0;
                    done++;
                }
                memmove(w[j].buf, w[j].buf + linelen, w[j].len - linelen);
                w[j].len -= linelen;
                w[j].busy = -1;
                if (next < nmine) {
                    w[j].busy = next;
                    if (write(w[j].cmd, &next, sizeof next) < 0) w[j].busy = -1;
                    next++;
                }
                progress(tty, done, nmine, t0);
            }
            if (w[j].busy < 0 && w[j].cmd >= 0) {
                close(w[j].cmd);
                w[j].cmd = -1;
            }
        }
        /* points left while every worker is gone: run them here */
        int alive = 0;
        for (int j = 0; j < jobs; j++) alive += w[j].res >= 0;
        while (!alive && next < nmine) {
            rows[next] = malloc(ROW_MAX);
            if (!rows[next]) return -1;
            run_point(s, mine[next], rows[next], ROW_MAX);
            next++;
            done++;
            progress(tty, done, nmine, t0);
        }
    }
    workers_end(w, jobs);
    free(pf);
    free(w);
    return done == nmine ? 0 : -1;
}

static int env_int(const char *const *names, int *out)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v) {
            *out = atoi(v);
            return 1;
        }
    }
    return 0;
}

/* Every point's configuration checked before starting (a typo fails at once, naming the point):
 * 0, or -1 said on stderr. */
static int check_points(sweep *s)
{
    char err[2048], warn[4096];
    nm_config *base = ms_replay_config(s->t, s->o.profile, s->o.sets, s->o.nsets, warn, sizeof warn, err, sizeof err);
    if (!base) {
        fprintf(stderr, "mpisim sweep: %s\n", err);
        return -1;
    }
    nm_config_destroy(base);
    print_warnings("sweep", warn);
    for (long p = 0; p < s->npoints; p++) {
        ms_replay_opts ro;
        nm_config *c = point_config(s, p, &ro, err, sizeof err);
        if (!c) {
            fprintf(stderr, "mpisim sweep: point %ld: %s\n", p, err);
            return -1;
        }
        nm_config_destroy(c);
    }
    return 0;
}

/* Rank 0 of a sweep under mpirun: every part of this run (token) waited for, then merged in point
 * order into out; the parts removed. The exit code (rc < 0: points of this rank did not finish). */
static int merge_parts(const sweep *s, const char *out, const char *token, int K, double merge_timeout, int rc)
{
    char part[4096], err[2048];
    /* rank 0: wait for every part of this run, then merge them in point order */
    char **all = own(calloc((size_t)s->npoints, sizeof *all), free);
    double deadline = now_s() + merge_timeout;
    for (int q = 0; q < K; q++) {
        snprintf(part, sizeof part, "%s.part%d", out, q);
        char want[300];
        snprintf(want, sizeof want, "%s rank=%d\n", token, q);
        for (;;) {
            FILE *pf = fopen(part, "r");
            char line[ROW_MAX + 64];
            if (pf && fgets(line, sizeof line, pf) && !strcmp(line, want)) {
                while (fgets(line, sizeof line, pf)) {
                    long p = strtol(line, NULL, 10);
                    if (p >= 0 && p < s->npoints && !all[p]) all[p] = own(strdup(line), free);
                }
                fclose(pf);
                break;
            }
            if (pf) fclose(pf);
            if (now_s() > deadline) {
                fprintf(stderr, "mpisim sweep: gave up waiting for %s (--merge-timeout)\n", part);
                return MS_EXIT_RANK_ERROR;
            }
            usleep(100000);
        }
    }
    ms_outfile tout;
    if (ms_outfile_open(&tout, out, MS_OUT_STDOUT, "the table", err, sizeof err) < 0) {
        fprintf(stderr, "mpisim sweep: %s\n", err);
        return MS_EXIT_OUTPUT;
    }
    header(s, tout.f);
    long missing = 0;
    for (long p = 0; p < s->npoints; p++) {
        if (all[p]) fputs(all[p], tout.f);
        else missing++;
    }
    if (ms_outfile_commit(&tout, err, sizeof err) < 0) {   /* a full disk: the table is not complete */
        fprintf(stderr, "mpisim sweep: %s\n", err);
        return MS_EXIT_OUTPUT;
    }
    for (int q = 0; q < K; q++) {
        snprintf(part, sizeof part, "%s.part%d", out, q);
        unlink(part);
    }
    fprintf(stderr, "mpisim sweep: merged %d parts, %ld points -> %s\n", K, s->npoints - missing, out);
    if (missing || rc < 0) return MS_EXIT_RANK_ERROR;   /* points whose rows are missing */
    return rows_untimed(all, s->npoints) ? MS_EXIT_UNTIMED : 0;
}

/* This rank's part of a sweep under mpirun (rank R): OUT.partR, behind the run's token. 0, or the
 * exit code. */
static int write_part(const char *out, const char *token, int R, int K, char **rows, long nmine, double wall)
{
    char part[4096], err[2048];
    snprintf(part, sizeof part, "%s.part%d", out, R);
    ms_outfile pout;
    if (ms_outfile_open(&pout, part, 0, "the table's part", err, sizeof err) < 0) {
        fprintf(stderr, "mpisim sweep: %s\n", err);
        return MS_EXIT_OUTPUT;
    }
    fprintf(pout.f, "%s rank=%d\n", token, R);
    for (long i = 0; i < nmine; i++)
        if (rows[i]) fputs(rows[i], pout.f);
    if (ms_outfile_commit(&pout, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim sweep: %s\n", err);
        return MS_EXIT_OUTPUT;
    }
    fprintf(stderr, "mpisim sweep: rank %d of %d: %ld points in %.2f s -> %s\n", R, K, nmine, wall, part);
    return 0;
}

/* The table of a sweep in one process: to out, or standard output. 0, or the exit code. */
static int write_table(const sweep *s, const char *out, char **rows, long nmine)
{
    char err[2048];
    ms_outfile tout;
    if (ms_outfile_open(&tout, out ? out : "-", MS_OUT_STDOUT, "the table", err, sizeof err) < 0) {
        fprintf(stderr, "mpisim sweep: %s\n", err);
        return MS_EXIT_OUTPUT;
    }
    header(s, tout.f);
    for (long i = 0; i < nmine; i++)
        if (rows[i]) fputs(rows[i], tout.f);
    if (ms_outfile_commit(&tout, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim sweep: %s\n", err);
        return MS_EXIT_OUTPUT;
    }
    return 0;
}

/* Under mpirun: this process's rank R of K, and L ranks on its host (1 of 1 otherwise). 0, or -1
 * said on stderr. */
static int mpirun_share(const char *out, int *R, int *K, int *L)
{
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", NULL};
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL};
    static const char *const lsize_vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", NULL};
    if (env_int(size_vars, K) && *K > 1) {
        env_int(rank_vars, R);
        env_int(lsize_vars, L);
        if (*R < 0 || *R >= *K) {
            fprintf(stderr, "mpisim sweep: rank %d of %d from the environment makes no sense\n", *R, *K);
            return -1;
        }
        if (!out) {
            fprintf(stderr, "mpisim sweep: under mpirun, --out FILE (on a shared file system) is needed\n");
            return -1;
        }
    } else {
        *K = 1;
    }
    return 0;
}

static int sweep_main(int argc, char **argv)
{
    sweep s;
    memset(&s, 0, sizeof s);
    s.o.ro.cpu_scale = 1.0;
    s.o.sets = own(calloc((size_t)argc + 1, sizeof *s.o.sets), free);
    s.v = own(calloc((size_t)argc + 1, sizeof *s.v), free);
    const char *out = NULL;
    int jobs = 0;
    double merge_timeout = 86400;
    cm_cmdline c;
    cm_cmdline_init(&c, "mpisim sweep", sweep_opts, argc, argv, 0);
    const char *v;
    for (int k; (k = cm_cmdline_next(&c, &v)) != -1;) {
        int used = common_opt(&c, k, v, &s.o);
        if (used < 0) return 2;
        if (used) continue;
        long n;
        switch (k) {
        case 'h': sweep_usage(stdout); return 0;
        case O_VARY: {
            char *spec = own(strdup(v), free);
            char *eq = spec ? strchr(spec, '=') : NULL;
            if (!eq || eq == spec || !eq[1]) return cm_cmdline_bad(&c, k, v, "expected KEY=V1,V2,...");
            *eq = 0;
            vary *w = &s.v[s.nv++];
            w->key = spec;
            w->values = own(calloc(strlen(eq + 1) + 1, sizeof *w->values), free);
            for (char *tok = strtok(eq + 1, ","); tok; tok = strtok(NULL, ",")) w->values[w->n++] = tok;
            if (!w->n) return cm_cmdline_bad(&c, k, v, "no values");
            break;
        }
        case 'j':
            if (cm_cmdline_long(&c, k, v, 1, 4096, &n) != 0) return 2;
            jobs = (int)n;
            break;
        case 'o': out = v; break;
        case O_MERGE_TIMEOUT:
            if (cm_cmdline_double(&c, k, v, 0, &merge_timeout) != 0) return 2;
            break;
        default: return 2;
        }
    }
    if (trace_operand(&c, argv, &s.o) != 0) return 2;
    if (!s.nv) {
        fprintf(stderr, "mpisim sweep: say what to vary with --vary KEY=V1,V2,...; see mpisim sweep --help\n");
        return 2;
    }

    if (s.nv > 64) {
        fprintf(stderr, "mpisim sweep: at most 64 --vary keys\n");
        return 2;
    }
    s.npoints = 1;
    for (int k = 0; k < s.nv; k++) {
        s.npoints *= s.v[k].n;
        if (s.npoints > 10000000) {
            fprintf(stderr, "mpisim sweep: more than 10 million points\n");
            return 2;
        }
    }
    char err[2048];
    s.t = own(ms_trace_read_h5(s.o.trace, err, sizeof err), free_trace);
    if (!s.t) {
        fprintf(stderr, "mpisim sweep: %s\n", err);
        return 2;
    }
    if (check_points(&s) < 0) return 2;

    /* under mpirun: this process's share of the points */
    int R = 0, K = 1, L = 1;
    if (mpirun_share(out, &R, &K, &L) < 0) return 2;
    long nmine = 0;
    long *mine = own(calloc((size_t)s.npoints, sizeof *mine), free);
    for (long p = R; p < s.npoints; p += K) mine[nmine++] = p;
    if (!jobs) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = (int)(nc > 0 ? nc : 1) / (L > 0 ? L : 1);
        if (jobs < 1) jobs = 1;
    }
    int tty = isatty(2) && K == 1;
    char **rows = own(calloc((size_t)(nmine ? nmine : 1), sizeof *rows), free);
    double t0 = now_s();
    int rc = nmine ? run_points(&s, mine, nmine, jobs, rows, tty) : 0;
    for (long i = 0; i < nmine; i++) own(rows[i], free);
    double wall = now_s() - t0;
    if (rc < 0) fprintf(stderr, "mpisim sweep: some points did not finish\n");

    /* run token: parts of another run are never merged */
    char token[256];
    const char *ns = getenv("PMIX_NAMESPACE");
    if (!ns) ns = getenv("OMPI_MCA_ess_base_jobid");
    unsigned long h = 5381;
    for (int i = 0; i < argc; i++)
        for (const char *c = argv[i]; *c; c++) h = h * 33 + (unsigned char)*c;
    snprintf(token, sizeof token, "# mpisim-sweep-part job=%s args=%lx size=%d", ns ? ns : "-", h, K);

    if (K > 1) {
        int prc = write_part(out, token, R, K, rows, nmine, wall);
        if (prc) return prc;
        if (R != 0) return rc < 0 ? MS_EXIT_RANK_ERROR : 0;
        return merge_parts(&s, out, token, K, merge_timeout, rc);
    }

    int trc = write_table(&s, out, rows, nmine);
    if (trc) return trc;
    fprintf(stderr, "mpisim sweep: %ld points (%d jobs) in %.2f s, %.1f points/s%s%s\n", nmine, jobs, wall,
            wall > 0 ? nmine / wall : 0.0, out ? " -> " : "", out ? out : "");
    if (rc < 0) return MS_EXIT_RANK_ERROR;   /* points that could not be replayed */
    return rows_untimed(rows, nmine) ? MS_EXIT_UNTIMED : 0;
}

int mpisim_sweep_main(int argc, char **argv)
{
    int rc = sweep_main(argc, argv);
    release_all();
    return rc;
}
