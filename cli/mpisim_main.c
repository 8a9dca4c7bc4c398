/* mpisim: the command. Subcommands: run, net, study, config, version. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hwloc.h>

#include "ms_driver.h"
#include "ms_server.h"
#include "netmodel.h"
#include "nm_cmdline.h"
#include "study.h"
#ifdef MPISIM_HAVE_NET_TOOL
#include "net_tool.h"
#endif
#include "ms_trace.h"
#include "replay_cli.h"
#include "report_text.h"
#include "timeline.h"

/* The subcommands, for the global usage, "did you mean" and the completion's list. */
static const nm_named subcommands[] = {
    {"run", "run [options] -n N -- PROGRAM [ARGS...]", "co-simulate an MPI program on a modelled network"},
    {"trace", "trace [options] -n N -- PROGRAM [ARGS...]", "capture an MPI program's calls to an HDF5 trace"},
    {"trace-recover", "trace-recover RAW_DIR OUT.h5", "convert the raw files a crashed run left"},
    {"replay", "replay TRACE.h5 [options]", "play a trace through the model, offline"},
    {"sweep", "sweep TRACE.h5 --vary KEY=V1,V2,... [options]", "replay a trace over a grid of configurations"},
    {"net", "net [options]", "network-only runs with synthetic traffic"},
    {"study", "study speedup [options]", "the speedup study of seed 000 sec 4"},
    {"config", "config [options]", "print or describe the resolved configuration"},
    {"timeline", "timeline TRACE.h5 -o FILE.json", "write a Chrome/Perfetto timeline of a trace"},
    {"report", "report [--top N] REPORT.json", "print a report as an mpiP-style text summary"},
    {"version", "version", "print the version"},
};

static const nm_named *subcommand_at(size_t i)
{
    return i < sizeof subcommands / sizeof subcommands[0] ? &subcommands[i] : NULL;
}

static void usage(FILE *f)
{
    fputs("usage: mpisim COMMAND [options] (mpisim COMMAND --help describes each)\n", f);
    const nm_named *c;
    for (size_t i = 0; (c = subcommand_at(i)) != NULL; i++) fprintf(f, "  %-48s %s\n", c->usage, c->help);
    fprintf(f, "Profiles are looked up in $MPISIM_PROFILE_PATH, then %s.\n",
            mpisim_profile_path() ? mpisim_profile_path() : "../share/mpisim/configs beside the command");
}

/* Directory of this executable, to find libmpisim.so (../lib) and the programs (.). */
int mpisim_self_dir(char *out, size_t len)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n < 0) return -1;
    path[n] = 0;
    snprintf(out, len, "%s", dirname(path));
    return 0;
}

#ifndef MPISIM_REL_LIBDIR
#define MPISIM_REL_LIBDIR "../lib"
#endif
#ifndef MPISIM_REL_APPDIR
#define MPISIM_REL_APPDIR "../libexec/mpisim"
#endif

/* name in the first of dirs (relative to this executable's directory) that has it */
static int find_beside_self(const char *const *dirs, size_t ndirs, const char *name, char *out, size_t len)
{
    char self[PATH_MAX];
    if (mpisim_self_dir(self, sizeof self) < 0) return -1;
    for (size_t i = 0; i < ndirs; i++) {
        int n = snprintf(out, len, "%s/%s/%s", self, dirs[i], name);
        if (n > 0 && (size_t)n < len && access(out, R_OK) == 0) return 0;
    }
    return -1;
}

int mpisim_find_shim(char *out, size_t len)
{
    /* installed: the GNU libdir; build tree: build/lib */
    static const char *const dirs[] = {MPISIM_REL_LIBDIR, "../lib"};
    return find_beside_self(dirs, 2, "libmpisim.so", out, len);
}

int mpisim_find_program(const char *name, char *out, size_t len)
{
    /* build tree: beside the command; installed: libexec/mpisim */
    static const char *const dirs[] = {".", MPISIM_REL_APPDIR};
    return find_beside_self(dirs, 2, name, out, len);
}

#ifndef MPISIM_REL_DATADIR
#define MPISIM_REL_DATADIR "../share/mpisim"
#endif

int mpisim_find_data(const char *name, char *out, size_t len)
{
    static const char *const dirs[] = {MPISIM_REL_DATADIR};
    return find_beside_self(dirs, 1, name, out, len);
}

const char *mpisim_profile_path(void)
{
    static char buf[PATH_MAX * 2];
    if (nm_config_search_path(buf, sizeof buf) != 0) return NULL;
    return buf;
}

typedef struct run_opts {
    const char *profile;
    const char **sets;
    int nsets;
    const char *compute;
    const char *cpu_factor;
    const char *cpu_factor_source;   /* where --cpu-factor came from, recorded as its origin */
    const char *report;
    const char *mpirun;
    const char **mpirun_args;
    int nmpirun_args;
    const char *listen;
    const char *advertise;
    int nranks;
    char **prog;
    int nprog;
    const char *trace;      /* HDF5 trace to write (run --trace, or trace --output) */
    const char *timeline;   /* run --timeline: Chrome/Perfetto JSON, made from the trace */
    const char *bind;       /* --bind none|core|socket: mpirun's --bind-to */
    int capture_only;       /* `mpisim trace`: no model server */
} run_opts;

nm_config *mpisim_load_config(const char *profile, const char **sets, int nsets, char *err, size_t errlen)
{
    nm_config *cfg = nm_config_create();
    if (!cfg) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (ms_driver_register_keys(cfg, err, errlen) < 0 ||
        nm_config_load_profile(cfg, profile ? profile : "default", mpisim_profile_path(), err, errlen) < 0) {
        nm_config_destroy(cfg);
        return NULL;
    }
    for (int i = 0; i < nsets; i++)
        if (ms_driver_config_set(cfg, sets[i], err, errlen) < 0) {
            nm_config_destroy(cfg);
            return NULL;
        }
    return cfg;
}

enum { O_PROFILE = 256, O_SET, O_ROUTING, O_COMPUTE, O_CPU_FACTOR, O_CPU_FACTOR_SOURCE, O_REPORT, O_TRACE,
       O_TIMELINE, O_MPIRUN, O_MPIRUN_ARG, O_LISTEN, O_BIND, O_SERVER_ADDRESS, O_JSON, O_DESCRIBE };

static const nm_opt run_opts_table[] = {
    {"np", 'n', "N", "number of ranks (required)"},
    NM_OPT_PROFILE(O_PROFILE),
    NM_OPT_SET(O_SET),
    NM_OPT_ROUTING(O_ROUTING),
    {"compute", O_COMPUTE, "cpu|wall|none", "how computation between MPI calls is charged (shim.compute)"},
    {"cpu-factor", O_CPU_FACTOR, "X", "scale the host's compute time by X (shim.cpu_factor)"},
    {"cpu-factor-source", O_CPU_FACTOR_SOURCE, "TEXT", "where --cpu-factor came from, recorded as its origin"},
    {"report", O_REPORT, "FILE|-", "JSON report (default mpisim-report.json)"},
    {"trace", 'o', "FILE.h5", "also capture an HDF5 trace (trace: default mpisim-trace.h5); -o, --output too"},
    {"output", 'o', "FILE.h5", "the same as --trace"},
    {"timeline", O_TIMELINE, "FILE.json", "write a Chrome/Perfetto timeline of the run"},
    {"mpirun", O_MPIRUN, "PATH", "the mpirun to launch with"},
    {"mpirun-arg", O_MPIRUN_ARG, "ARG", "pass ARG to mpirun (repeatable)"},
    {"listen", O_LISTEN, "ADDR", "address the model server listens on (default 127.0.0.1)"},
    {"server-address", O_SERVER_ADDRESS, "HOST", "address the ranks connect to (default: the listen address)"},
    {"bind", O_BIND, "none|core|socket", "mpirun's --bind-to for the ranks"},
    NM_OPT_HELP,
    NM_OPT_END,
};

static void run_usage(FILE *f, int capture_only)
{
    if (capture_only)
        fputs("usage: mpisim trace [options] -n N [--] PROGRAM [ARGS...]\n"
              "Runs the program under Open MPI with the shim preloaded and records every MPI call to an HDF5\n"
              "trace (--output, default mpisim-trace.h5), without the model: replay it with mpisim replay.\n", f);
    else
        fputs("usage: mpisim run [options] -n N [--] PROGRAM [ARGS...]\n"
              "Runs the program under Open MPI with the shim preloaded while the model server says how long\n"
              "it would have taken on the modelled network (virtual time); writes a JSON report.\n", f);
    nm_cmdline_print_options(run_opts_table, f);
    fputs("Routings:\n", f);
    nm_registry_print(nm_routing_at, f, "  ");
    fputs("Options end at the first operand (or --): the program and its own arguments follow.\n", f);
}

static int parse_run(int argc, char **argv, run_opts *o, int capture_only)
{
    memset(o, 0, sizeof *o);
    o->capture_only = capture_only;
    o->sets = calloc((size_t)argc + 2, sizeof *o->sets);
    o->mpirun_args = calloc((size_t)argc + 1, sizeof *o->mpirun_args);
    o->report = "mpisim-report.json";
    o->listen = "127.0.0.1";
    o->advertise = NULL;
    nm_cmdline c;
    nm_cmdline_init(&c, capture_only ? "mpisim trace" : "mpisim run", run_opts_table, argc, argv, 1);
    const char *v;
    for (int k; (k = nm_cmdline_next(&c, &v)) != -1;) {
        long n;
        switch (k) {
        case 'h': run_usage(stdout, capture_only); exit(0);
        case 'n':
            if (nm_cmdline_long(&c, k, v, 1, 1000000, &n) != 0) return -1;
            o->nranks = (int)n;
            break;
        case O_PROFILE: o->profile = v; break;
        case O_SET: o->sets[o->nsets++] = v; break;
        case O_ROUTING:
            if (!(o->sets[o->nsets++] = nm_cmdline_routing(&c, k, v))) return -1;
            break;
        case O_COMPUTE: o->compute = v; break;
        case O_CPU_FACTOR: o->cpu_factor = v; break;
        case O_CPU_FACTOR_SOURCE: o->cpu_factor_source = v; break;
        case O_REPORT: o->report = v; break;
        case 'o': o->trace = v; break;
        case O_TIMELINE: o->timeline = v; break;
        case O_MPIRUN: o->mpirun = v; break;
        case O_MPIRUN_ARG: o->mpirun_args[o->nmpirun_args++] = v; break;
        case O_LISTEN: o->listen = v; break;
        case O_BIND:
            if (strcmp(v, "none") && strcmp(v, "core") && strcmp(v, "socket"))
                return nm_cmdline_bad(&c, k, v, "expected none, core or socket"), -1;
            o->bind = v;
            break;
        case O_SERVER_ADDRESS: o->advertise = v; break;
        default: return -1;
        }
    }
    int first = nm_cmdline_operand(&c);   /* the program and its arguments */
    o->prog = argv + first;
    o->nprog = argc - first;
    if (!o->nprog) {
        fprintf(stderr, "%s: no program given (mpisim %s -n N -- PROGRAM [ARGS...])\n", c.prog,
                capture_only ? "trace" : "run");
        return -1;
    }
    if (!o->nranks) {
        fprintf(stderr, "%s: say how many ranks with -n N\n", c.prog);
        return -1;
    }
    return 0;
}

/* meta.json beside the ranks' raw trace files: what the HDF5 trace records about the run */
static int machine_summary(char *out, size_t len);

/* meta.json beside the ranks' raw files: what the HDF5 trace records about the run. Written
 * before the launch (so that a crash leaves it) and again after, with the ranks' bindings. */
static int write_trace_meta(const char *dir, const run_opts *o, const nm_config *cfg, int with_bindings)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\"mpisim_version\": \"%s\", \"nranks\": %d, \"capture_only\": %s, \"program\": [", MPISIM_VERSION,
            o->nranks, o->capture_only ? "true" : "false");
    for (int i = 0; i < o->nprog; i++) {
        if (i) fputs(", ", f);
        nm_json_write_string(f, o->prog[i]);
    }
    fputs("], \"config\": ", f);
    nm_config_write_json(cfg, f, 0);
    char machine[512];
    machine_summary(machine, sizeof machine);
    fprintf(f, ", \"machine\": ");
    nm_json_write_string(f, machine);
    if (with_bindings) {
        /* each rank left its CPU binding beside its records (rank-R.binding) */
        fputs(", \"bindings\": [", f);
        for (int r = 0; r < o->nranks; r++) {
            char bpath[PATH_MAX + 64], line[256] = "";
            snprintf(bpath, sizeof bpath, "%s/rank-%06d.binding", dir, r);
            FILE *b = fopen(bpath, "r");
            if (b) {
                if (!fgets(line, sizeof line, b)) line[0] = 0;
                fclose(b);
                line[strcspn(line, "\n")] = 0;
            }
            if (r) fputs(", ", f);
            nm_json_write_string(f, line);
        }
        fputs("]", f);
    }
    fputs("}\n", f);
    return fclose(f);
}

static int make_trace_dir(const char *trace, char *dir, size_t len)
{
    snprintf(dir, len, "%s.raw", trace);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) return -1;
    return 0;
}

static int finish_trace(const char *dir, const char *trace)
{
    char err[1024];
    if (ms_trace_convert(dir, trace, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim: the raw trace stays in %s: %s\n", dir, err);
        return -1;
    }
    fprintf(stderr, "mpisim: trace %s\n", trace);
    return 0;
}

static int cmd_trace(int argc, char **argv);

static int launch_and_serve(const run_opts *o);

static int cmd_run(int argc, char **argv)
{
    run_opts o;
    if (parse_run(argc, argv, &o, 0) < 0) return 2;
    return launch_and_serve(&o);
}

/* mpisim trace [--output F.h5] [--profile P] [--set k=v] [--compute M] -n N -- PROGRAM ARGS */
static int cmd_trace(int argc, char **argv)
{
    run_opts o;
    if (parse_run(argc, argv, &o, 1) < 0) return 2;
    if (!o.trace) o.trace = "mpisim-trace.h5";
    return launch_and_serve(&o);
}

/* The real machine, by hwloc: "host H: N cores, M hardware threads, CPU model". */
static int machine_summary(char *out, size_t len)
{
    hwloc_topology_t t;
    int cores = 0;
    out[0] = 0;
    if (hwloc_topology_init(&t) < 0) return 0;
    if (hwloc_topology_load(t) == 0) {
        cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
        int pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
        int pkgs = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
        hwloc_obj_t root = hwloc_get_root_obj(t);
        const char *model = hwloc_obj_get_info_by_name(root, "CPUModel");
        if (!model) {
            hwloc_obj_t pkg = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
            model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
        }
        char host[128] = "";
        gethostname(host, sizeof host - 1);
        snprintf(out, len, "host %s: %d package(s), %d cores, %d hardware threads%s%s (hwloc %s)", host, pkgs, cores,
                 pus, model ? ", " : "", model ? model : "", HWLOC_VERSION);
    }
    hwloc_topology_destroy(t);
    return cores;
}

static int launch_and_serve(const run_opts *o_)
{
    run_opts o = *o_;
    char err[1024];
    char cfs[64];
    int nsets = o.nsets;
    if (o.compute) {
        static char buf[64];
        snprintf(buf, sizeof buf, "shim.compute=%s", o.compute);
        o.sets[nsets++] = buf;
    }
    if (o.cpu_factor) {
        snprintf(cfs, sizeof cfs, "shim.cpu_factor=%s", o.cpu_factor);
        o.sets[nsets++] = cfs;
    }
    nm_config *cfg = mpisim_load_config(o.profile, o.sets, nsets, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "mpisim: %s\n", err);
        return 2;
    }
    /* a calibrated factor keeps its provenance in the resolved configuration of every report */
    if (o.cpu_factor && o.cpu_factor_source && nm_config_set(cfg, cfs, o.cpu_factor_source, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim: %s\n", err);
        return 2;
    }
    char machine[512];
    int cores = machine_summary(machine, sizeof machine);
    /* the compute gate's auto: the cores hwloc says this job may use (its cpuset) */
    static char slots_set[64], slots_origin[64];
    if (cores > 0 && !strcmp(nm_config_string(cfg, "shim.compute_slots"), "auto")) {
        snprintf(slots_set, sizeof slots_set, "shim.compute_slots=%d", cores);
        snprintf(slots_origin, sizeof slots_origin, "auto: hwloc, the cores this job may use");
        if (nm_config_set(cfg, slots_set, slots_origin, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return 2;
        }
    }
    ms_server *s = NULL;
    char endpoint[512] = "";
    if (!o.capture_only) {
        s = ms_server_create();
        if (!s || ms_server_configure(s, cfg, o.nranks, o.nprog, o.prog, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return 2;
        }
        char host[256] = "127.0.0.1";
        if (o.advertise) snprintf(host, sizeof host, "%s", o.advertise);
        else if (strcmp(o.listen, "127.0.0.1") && strcmp(o.listen, "localhost")) gethostname(host, sizeof host);
        if (ms_server_listen(s, o.listen, host, endpoint, sizeof endpoint, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return 2;
        }
    }
    if (s) ms_server_set_machine(s, machine);
    if (cores > 0 && o.nranks > cores && (!o.mpirun_args || !o.nmpirun_args) &&
        strcmp(nm_config_string(cfg, "shim.compute"), "none") != 0)   /* none: nothing to charge */
        fprintf(stderr, "mpisim: %d ranks share %d cores: %s\n", o.nranks, cores,
                !strcmp(nm_config_string(cfg, "shim.compute"), "wall")
                    ? "--compute wall will charge waiting for a core as computation"
                    : "computation is charged as each rank's CPU time, so results hold; the run takes longer");
    char trace_dir[PATH_MAX + 8] = "", timeline_trace[PATH_MAX];
    if (o.timeline && !o.trace) {   /* the timeline is drawn from a trace kept only until then */
        snprintf(timeline_trace, sizeof timeline_trace, "%s.trace.h5", o.timeline);
        o.trace = timeline_trace;
    }
    if (o.trace) {
        if (make_trace_dir(o.trace, trace_dir, sizeof trace_dir) < 0 || write_trace_meta(trace_dir, &o, cfg, 0) < 0) {
            fprintf(stderr, "mpisim: cannot create the trace directory %s: %s\n", trace_dir, strerror(errno));
            return 2;
        }
    }
    char shim[PATH_MAX + 64];
    const char *shim_env = getenv("MPISIM_SHIM");
    if (shim_env) snprintf(shim, sizeof shim, "%s", shim_env);
    else if (mpisim_find_shim(shim, sizeof shim) != 0) snprintf(shim, sizeof shim, "libmpisim.so beside the command");
    if (access(shim, R_OK) != 0) {
        fprintf(stderr, "mpisim: the shim %s is missing (set MPISIM_SHIM)\n", shim);
        return 2;
    }
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%d", o.nranks);
    const char **av = calloc((size_t)(o.nmpirun_args + o.nprog + 40), sizeof *av);
    int k = 0;
    av[k++] = o.mpirun ? o.mpirun : "mpirun";
    if (geteuid() == 0) av[k++] = "--allow-run-as-root";
    av[k++] = "--oversubscribe";
    av[k++] = "-n";
    av[k++] = nbuf;
    /* the secret travels in the environment, never on a command line others can read */
    av[k++] = "-x";
    av[k++] = "LD_PRELOAD";
    if (!o.capture_only) {
        av[k++] = "-x";
        av[k++] = "MPISIM_SERVER";
        av[k++] = "-x";
        av[k++] = "MPISIM_SECRET";
    } else {
        av[k++] = "-x";
        av[k++] = "MPISIM_COMPUTE";
        av[k++] = "-x";
        av[k++] = "MPISIM_RETURN_PATH";
    }
    if (o.trace) {
        av[k++] = "-x";
        av[k++] = "MPISIM_TRACE_DIR";
    }
    if (o.bind) {
        av[k++] = "--bind-to";
        av[k++] = o.bind;
    }
    for (int i = 0; i < o.nmpirun_args; i++) av[k++] = o.mpirun_args[i];
    for (int i = 0; i < o.nprog; i++) av[k++] = o.prog[i];
    av[k] = NULL;

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "mpisim: fork failed: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        setenv("LD_PRELOAD", shim, 1);
        if (!o.capture_only) {
            setenv("MPISIM_SERVER", endpoint, 1);
            setenv("MPISIM_SECRET", ms_server_secret(s), 1);
        } else {
            setenv("MPISIM_COMPUTE", nm_config_string(cfg, "shim.compute"), 1);
            setenv("MPISIM_RETURN_PATH", nm_config_string(cfg, "shim.return_path"), 1);
        }
        if (o.trace) setenv("MPISIM_TRACE_DIR", trace_dir, 1);
        execvp(av[0], (char *const *)av);
        fprintf(stderr, "mpisim: cannot run %s: %s\n", av[0], strerror(errno));
        _exit(127);
    }
    /* the launcher forwards Ctrl-C to the ranks; we wait for them to go */
    signal(SIGINT, SIG_IGN);
    int status = 0;
    int rc;
    if (s) {
        if (ms_server_run(s, pid, &status, err, sizeof err) < 0) fprintf(stderr, "mpisim: %s\n", err);
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (s) {
        char outcome[256];
        int oc = ms_server_outcome(s, outcome, sizeof outcome);
        /* a deadlock or a stall: the ranks were stopped by us (their launcher's code is ours) */
        if (oc == 1 || oc == 3) rc = 3;
        else if (oc && rc == 0) rc = 4;
        if (o.report && strcmp(o.report, "-")) {
            FILE *f = fopen(o.report, "w");
            if (!f) fprintf(stderr, "mpisim: cannot write the report %s: %s\n", o.report, strerror(errno));
            else {
                ms_server_write_report(s, f);
                fclose(f);
            }
        }
        ms_server_write_summary(s, stderr, o.report);
        ms_server_destroy(s);
    }
    if (o.trace) write_trace_meta(trace_dir, &o, cfg, 1);
    if (o.trace && finish_trace(trace_dir, o.trace) < 0 && rc == 0) rc = 4;
    if (o.timeline) {
        char terr[2048];
        if (mpisim_timeline_file(o.trace, o.timeline, terr, sizeof terr) != 0) {
            fprintf(stderr, "mpisim: timeline: %s\n", terr);
            if (rc == 0) rc = 4;
        } else {
            fprintf(stderr, "mpisim: timeline %s\n", o.timeline);
        }
        if (o.trace == timeline_trace) unlink(timeline_trace);
    }
    nm_config_destroy(cfg);
    free(av);
    free(o.sets);
    free(o.mpirun_args);
    return rc;
}

static const nm_opt config_opts[] = {
    NM_OPT_PROFILE(O_PROFILE),
    NM_OPT_SET(O_SET),
    {"json", O_JSON, NULL, "write it as the reports carry it"},
    {"describe", O_DESCRIBE, NULL, "print each key's (or the KEY operand's) help, type, unit, default and source"},
    NM_OPT_HELP,
    NM_OPT_END,
};

static int cmd_config(int argc, char **argv)
{
    const char *profile = NULL;
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    int nsets = 0, json = 0, describe = 0;
    const char *describe_key = NULL;
    nm_cmdline c;
    nm_cmdline_init(&c, "mpisim config", config_opts, argc, argv, 0);
    const char *v;
    for (int k; (k = nm_cmdline_next(&c, &v)) != -1;) {
        switch (k) {
        case O_PROFILE: profile = v; break;
        case O_SET: sets[nsets++] = v; break;
        case O_JSON: json = 1; break;
        case O_DESCRIBE: describe = 1; break;
        case 'h':
            printf("usage: mpisim config [--profile NAME|FILE] [--set KEY=VALUE]... [--json | --describe [KEY]]\n"
                   "Prints the resolved configuration: every key's value, unit and source (the default's\n"
                   "citation, file:line of a profile, or --set).\n");
            nm_cmdline_print_options(config_opts, stdout);
            free(sets);
            return 0;
        default: free(sets); return 2;
        }
    }
    if (nm_cmdline_operands(&c, 0, describe, "KEY") < 0) {
        free(sets);
        return 2;
    }
    if (describe && nm_cmdline_operand(&c) < argc) describe_key = argv[nm_cmdline_operand(&c)];
    char err[1024];
    nm_config *cfg = mpisim_load_config(profile, sets, nsets, err, sizeof err);
    free(sets);
    if (!cfg) {
        fprintf(stderr, "mpisim: %s\n", err);
        return 2;
    }
    int rc = 0;
    if (describe) {
        if (nm_config_describe(cfg, describe_key, stdout, err, sizeof err) != 0) {
            fprintf(stderr, "mpisim config: %s\n", err);
            rc = 2;
        }
    } else if (json) nm_config_write_json(cfg, stdout, 0);
    else nm_config_write_text(cfg, stdout);
    nm_config_destroy(cfg);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    /* each subcommand gets argv[0] = its name, as getopt_long expects */
    int sc = argc - 1;
    char **sv = argv + 1;
    if (!strcmp(cmd, "run")) return cmd_run(sc, sv);
    if (!strcmp(cmd, "config")) return cmd_config(sc, sv);
    if (!strcmp(cmd, "trace")) return cmd_trace(sc, sv);
    if (!strcmp(cmd, "trace-recover")) {
        if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            printf("usage: mpisim trace-recover RAW_DIR OUT.h5\n"
                   "Converts the raw per-rank files a run left in RAW_DIR (F.h5.raw, after a crash) into an\n"
                   "HDF5 trace.\n");
            return 0;
        }
        if (argc != 4) {
            fprintf(stderr, "usage: mpisim trace-recover RAW_DIR OUT.h5\n");
            return 2;
        }
        return finish_trace(argv[2], argv[3]) < 0 ? 1 : 0;
    }
    if (!strcmp(cmd, "replay")) return mpisim_replay_main(sc, sv);
    if (!strcmp(cmd, "sweep")) return mpisim_sweep_main(sc, sv);
    if (!strcmp(cmd, "study")) return mpisim_study_main(sc, sv);
    if (!strcmp(cmd, "timeline")) return mpisim_timeline_main(sc, sv);
    if (!strcmp(cmd, "report")) return mpisim_report_main(sc, sv);
#ifdef MPISIM_HAVE_NET_TOOL
    if (!strcmp(cmd, "net")) return nm_net_main(sc, sv, stdout, stderr);
#endif
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("mpisim %s\n", MPISIM_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    const char *s = nm_registry_suggest(subcommand_at, cmd);
    fprintf(stderr, "mpisim: unknown command '%s'%s%s%s\n", cmd, s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
    usage(stderr);
    return 2;
}
