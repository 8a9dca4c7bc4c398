/* mpisim: the command. Subcommands: run, net, study, config, version. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>

#include "ms_driver.h"
#include "ms_server.h"
#include "exit_codes.h"
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
    int replace_trace;      /* --replace-trace: an existing F.h5.raw may be replaced */
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
       O_TIMELINE, O_MPIRUN, O_MPIRUN_ARG, O_LISTEN, O_BIND, O_SERVER_ADDRESS, O_JSON, O_DESCRIBE,
       O_REPLACE_TRACE };

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
    {"replace-trace", O_REPLACE_TRACE, NULL, "replace the FILE.h5.raw directory a run that did not finish left"},
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
    if (!o->sets || !o->mpirun_args) {
        fprintf(stderr, "mpisim run: out of memory\n");
        return -1;
    }
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
        case O_REPLACE_TRACE: o->replace_trace = 1; break;
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
    /* written beside and renamed over: never through a link, never into another's file */
    char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    snprintf(tmp, sizeof tmp, "%s/meta.json.tmp", dir);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return -1;
    }
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
            int bfd = open(bpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            FILE *b = bfd >= 0 ? fdopen(bfd, "r") : NULL;
            if (bfd >= 0 && !b) close(bfd);
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
    if (fclose(f) != 0) {
        unlink(tmp);
        return -1;
    }
    return rename(tmp, path);
}

/* The names mpisim and the shim write in a raw trace directory. */
static int raw_trace_name(const char *n)
{
    size_t len = strlen(n);
    if (!strcmp(n, "meta.json") || !strcmp(n, "meta.json.tmp")) return 1;
    if (strncmp(n, "rank-", 5)) return 0;
    size_t d = strspn(n + 5, "0123456789");
    return d > 0 && (!strcmp(n + 5 + d, ".mstrace") || !strcmp(n + 5 + d, ".binding")) && 5 + d < len;
}

/* Remove a raw trace directory: only the names mpisim writes (a link is removed, never
 * followed); anything else in it (a subdirectory, another file) is left and named. */
static int remove_raw_dir(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(dir, &st) != 0) return errno == ENOENT ? 0 : (snprintf(err, errlen, "%s: %s", dir, strerror(errno)), -1);
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory (a link or a file): remove it yourself", dir);
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        snprintf(err, errlen, "cannot open %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat es;
        if (!raw_trace_name(e->d_name) || fstatat(fd, e->d_name, &es, AT_SYMLINK_NOFOLLOW) != 0 ||
            S_ISDIR(es.st_mode)) {
            snprintf(err, errlen, "%s holds %s, which mpisim did not write: remove the directory yourself", dir,
                     e->d_name);
            rc = -1;
        } else if (unlinkat(fd, e->d_name, 0) != 0) {
            snprintf(err, errlen, "cannot remove %s/%s: %s", dir, e->d_name, strerror(errno));
            rc = -1;
        }
    }
    closedir(d);
    if (rc == 0 && rmdir(dir) != 0) {
        snprintf(err, errlen, "cannot remove %s: %s", dir, strerror(errno));
        rc = -1;
    }
    return rc;
}

/* The ranks' raw files go to a directory this run creates (mkdir fails if the name exists), so
 * no other user can have planted links in it and no earlier run's rank files are mixed in. An
 * existing one (a run that did not finish) is replaced only with --replace-trace. */
static int make_trace_dir(const char *trace, int replace, char *dir, size_t len, char *err, size_t errlen)
{
    snprintf(dir, len, "%s.raw", trace);
    if (mkdir(dir, 0700) == 0) return 0;
    if (errno != EEXIST) {
        snprintf(err, errlen, "cannot create the trace directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!replace) {
        snprintf(err, errlen,
                 "%s exists (left by a run that did not finish?): convert it with mpisim trace-recover %s OUT.h5, "
                 "remove it, or pass --replace-trace to have this run replace it",
                 dir, dir);
        return -1;
    }
    if (remove_raw_dir(dir, err, errlen) < 0) return -1;
    if (mkdir(dir, 0700) == 0) return 0;
    snprintf(err, errlen, "cannot create the trace directory %s: %s", dir, strerror(errno));
    return -1;
}

/* remove_raw: the run made `dir` itself (trace-recover's is the user's, and stays) */
static int finish_trace(const char *dir, const char *trace, int remove_raw)
{
    char err[1024];
    int rc = ms_trace_convert(dir, trace, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "mpisim: the raw trace stays in %s: %s\n", dir, err);
        return rc;   /* -1 reading the raw files, -2 writing the trace */
    }
    if (rc > 0) {
        /* kept: the raw files are what the ranks wrote, should someone want to look */
        fprintf(stderr, "mpisim: trace %s is partial: %s; they are in it without records (a replay says 'partial "
                        "trace'); the raw files stay in %s\n", trace, err, dir);
        return 0;
    }
    fprintf(stderr, "mpisim: trace %s\n", trace);
    /* everything is in the HDF5 file now: the raw files would only be in the next run's way */
    if (remove_raw && remove_raw_dir(dir, err, sizeof err) < 0) fprintf(stderr, "mpisim: warning: %s\n", err);
    return 0;
}

static int cmd_trace(int argc, char **argv);

/* Capture only (no model server to say who connected): each rank creates its raw file in
 * MPI_Init. When some have not after shim.connect_timeout without a new one appearing, the ranks
 * wait in MPI_Init for one that never comes: name the missing ranks and end the launcher. -1 then. */
static int capture_wait(pid_t pid, int *status, const char *dir, int nranks, double timeout_s)
{
    struct timespec ts0;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    double last = (double)ts0.tv_sec + ts0.tv_nsec * 1e-9, killed_at = 0;
    int seen = 0, stalled = 0;
    for (;;) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) return stalled ? -1 : 0;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double now = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
        if (seen < nranks && !stalled) {
            int n = 0;
            char missing[256] = "";
            size_t off = 0;
            for (int r = 0; r < nranks; r++) {
                char path[PATH_MAX + 64];
                snprintf(path, sizeof path, "%s/rank-%06d.mstrace", dir, r);
                if (access(path, F_OK) == 0) n++;
                else if (off < sizeof missing - 16) off += (size_t)snprintf(missing + off, sizeof missing - off, "%s%d", off ? ", " : "", r);
            }
            if (n > seen) {
                seen = n;
                last = now;
            } else if (now - last > timeout_s) {
                fprintf(stderr,
                        "mpisim: %d of %d ranks did not reach MPI_Init within %.0f s (shim.connect_timeout): %s%s; "
                        "stopping the run\n",
                        nranks - n, nranks, timeout_s, missing, off >= sizeof missing - 16 ? ", ..." : "");
                kill(pid, SIGTERM);
                killed_at = now;
                stalled = 1;
            }
        }
        if (stalled && killed_at > 0 && now - killed_at > 5.0) {
            kill(pid, SIGKILL);
            killed_at = -1;
        }
        usleep(100000);
    }
}

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

/* Cores of which this process may run on at least one hardware thread: its cpuset (hwloc's
 * topology) and its affinity mask, which taskset, numactl or a batch system's binding narrow
 * without a cpuset, and which mpirun and the ranks inherit. */
static int usable_cores(hwloc_topology_t t, int cores)
{
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    int n = 0;
    if (bound && hwloc_get_cpubind(t, bound, HWLOC_CPUBIND_PROCESS) == 0) {
        for (int i = 0; i < cores; i++) {
            hwloc_obj_t c = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)i);
            n += c && hwloc_bitmap_intersects(c->cpuset, bound);
        }
    }
    hwloc_bitmap_free(bound);
    return n > 0 ? n : cores;
}

/* The real machine, by hwloc: "host H: N cores, M hardware threads, CPU model". Returns the
 * cores this process may use (usable_cores). */
static int machine_summary(char *out, size_t len)
{
    hwloc_topology_t t;
    int cores = 0, usable = 0;
    out[0] = 0;
    if (hwloc_topology_init(&t) < 0) return 0;
    if (hwloc_topology_load(t) == 0) {
        cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
        usable = usable_cores(t, cores);
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
        char mask[64] = "";
        if (usable < cores) snprintf(mask, sizeof mask, " (%d in this run's affinity mask)", usable);
        snprintf(out, len, "host %s: %d package(s), %d cores%s, %d hardware threads%s%s (hwloc %s)", host, pkgs,
                 cores, mask, pus, model ? ", " : "", model ? model : "", HWLOC_VERSION);
    }
    hwloc_topology_destroy(t);
    return usable;
}


/* A run that stops before its launcher starts: the model server goes with its shared segment
 * (ms_server_destroy unlinks it), which would otherwise stay in /dev/shm until a later run's
 * sweep (10 minutes; seen after a refused --trace directory). */
static int abandon_run(ms_server *s, int code)
{
    if (s) ms_server_destroy(s);
    return code;
}

/* The launcher of the running program, for forward_signal (a handler has no other way to it). */
static volatile pid_t forward_to_launcher;

static volatile sig_atomic_t forwarded_signal;

static void forward_signal(int sig)
{
    forwarded_signal = sig;
    if (forward_to_launcher > 0) kill(forward_to_launcher, sig == SIGHUP ? SIGTERM : sig);
}

/* len - 1 random hex digits into out (NUL-terminated); -1 when /dev/urandom cannot be read. */
static int random_hex(char *out, size_t len)
{
    unsigned char raw[32];
    size_t n = (len - 1) / 2;
    out[0] = 0;
    if (n > sizeof raw) n = sizeof raw;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t got = read(fd, raw, n);
    close(fd);
    if (got != (ssize_t)n) return -1;
    for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}
/* Shared segments an mpisim killed with SIGKILL left in /dev/shm: the server's "mpisim-PID-HEX"
 * and the compute gate's "mpisim-gate-PIDxHEX", ours, whose mpisim is gone (the PID does not
 * exist), and older than any run's set-up (10 min: both names go once every rank has attached,
 * and a PID of another PID namespace sharing /dev/shm looks gone). */
static void sweep_stale_segments(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d) return;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *p = e->d_name;
        if (strncmp(p, "mpisim-", 7)) continue;
        p += 7;
        if (!strncmp(p, "gate-", 5)) p += 5;
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p || (*end != '-' && *end != 'x') || pid <= 0 || pid > INT_MAX) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || now - st.st_mtime < 600)
            continue;
        char name[NAME_MAX + 2];
        snprintf(name, sizeof name, "/%s", e->d_name);
        shm_unlink(name);
    }
    closedir(d);
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
    static nm_progress_printer progress;   /* long route set-ups (many ranks) say how they go */
    nm_progress_attach(cfg, &progress, "mpisim");
    /* a calibrated factor keeps its provenance in the resolved configuration of every report */
    if (o.cpu_factor && o.cpu_factor_source && nm_config_set(cfg, cfs, o.cpu_factor_source, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim: %s\n", err);
        return 2;
    }
    char machine[512];
    int cores = machine_summary(machine, sizeof machine);
    /* the compute gate's auto: the cores this job may use (its cpuset and affinity mask) */
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
    char endpoint[512] = "", shm_name[64] = "", gate_token[48] = "";
    if (!o.capture_only) {
        s = ms_server_create();
        if (!s || ms_server_configure(s, cfg, o.nranks, o.nprog, o.prog, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return abandon_run(s, 2);
        }
        char host[256] = "127.0.0.1";
        if (o.advertise) snprintf(host, sizeof host, "%s", o.advertise);
        else if (strcmp(o.listen, "127.0.0.1") && strcmp(o.listen, "localhost")) gethostname(host, sizeof host);
        if (ms_server_listen(s, o.listen, host, endpoint, sizeof endpoint, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return abandon_run(s, 2);
        }
        /* ranks on this host attach to the shared segment; those elsewhere (--listen) use TCP */
        if (!strcmp(nm_config_string(cfg, "shim.transport"), "shm") &&
            ms_server_shm(s, shm_name, sizeof shm_name, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return abandon_run(s, 2);
        }
        /* the compute gate's segments are named by a token of their own: a name in /dev/shm is
         * visible to every user, the secret must not be */
        sweep_stale_segments();
        /* the mpisim's PID first, so that a sweep can tell a dead run's gate */
        int o_pid = snprintf(gate_token, sizeof gate_token, "%dx", (int)getpid());
        if (random_hex(gate_token + o_pid, sizeof gate_token - (size_t)o_pid) < 0) {
            gate_token[0] = 0;
            fprintf(stderr, "mpisim: warning: cannot read /dev/urandom; the run has no compute gate\n");
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
        if (make_trace_dir(o.trace, o.replace_trace, trace_dir, sizeof trace_dir, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return abandon_run(s, MS_EXIT_USAGE);
        }
        if (write_trace_meta(trace_dir, &o, cfg, 0) < 0) {
            fprintf(stderr, "mpisim: cannot write %s/meta.json: %s\n", trace_dir, strerror(errno));
            return abandon_run(s, MS_EXIT_OUTPUT);
        }
    }
    char shim[PATH_MAX + 64];
    const char *shim_env = getenv("MPISIM_SHIM");
    if (shim_env) snprintf(shim, sizeof shim, "%s", shim_env);
    else if (mpisim_find_shim(shim, sizeof shim) != 0) snprintf(shim, sizeof shim, "libmpisim.so beside the command");
    if (access(shim, R_OK) != 0) {
        fprintf(stderr, "mpisim: the shim %s is missing (set MPISIM_SHIM)\n", shim);
        return abandon_run(s, 2);
    }
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%d", o.nranks);
    const char **av = calloc((size_t)(o.nmpirun_args + o.nprog + 40), sizeof *av);
    if (!av) {
        fprintf(stderr, "mpisim: out of memory\n");
        return abandon_run(s, MS_EXIT_USAGE);
    }
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
        if (shm_name[0]) {
            av[k++] = "-x";
            av[k++] = "MPISIM_SHM";
        }
        if (gate_token[0]) {
            av[k++] = "-x";
            av[k++] = "MPISIM_GATE";
        }
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
        return abandon_run(s, 2);
    }
    if (pid == 0) {
        setenv("LD_PRELOAD", shim, 1);
        if (!o.capture_only) {
            setenv("MPISIM_SERVER", endpoint, 1);
            setenv("MPISIM_SECRET", ms_server_secret(s), 1);
            if (shm_name[0]) setenv("MPISIM_SHM", shm_name, 1);
            if (gate_token[0]) setenv("MPISIM_GATE", gate_token, 1);
            /* The real MPI_Bcast under the model: Open MPI's libnbc forwards it along a binomial
             * tree or a chain, so a rank's real data can wait on a rank the model still holds in
             * an earlier call, while the first rank, resumed by the model, holds the horizon
             * waiting in its real bcast (a stall: matmul on 8 ranks, 1 run in 3). Linear, the
             * real data comes from the root alone, which has entered before the model lets any
             * member finish. The model's own algorithm (mpi.coll.bcast.algorithm) is not this.
             * An explicit setting of the user wins. */
            setenv("OMPI_MCA_coll_libnbc_ibcast_algorithm", "1", 0);
        } else {
            setenv("MPISIM_COMPUTE", nm_config_string(cfg, "shim.compute"), 1);
            setenv("MPISIM_RETURN_PATH", nm_config_string(cfg, "shim.return_path"), 1);
        }
        if (o.trace) setenv("MPISIM_TRACE_DIR", trace_dir, 1);
        execvp(av[0], (char *const *)av);
        fprintf(stderr, "mpisim: cannot run %s: %s\n", av[0], strerror(errno));
        _exit(127);
    }
    /* the launcher forwards Ctrl-C to the ranks; we wait for them to go. A SIGTERM or SIGHUP
     * (a batch system's time limit, a closed terminal) goes to the launcher too, so that the run
     * still ends with its report and leaves no shared segment behind */
    signal(SIGINT, SIG_IGN);
    forward_to_launcher = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int status = 0, stalled_start = 0;
    int rc;
    if (s) {
        if (ms_server_run(s, pid, &status, err, sizeof err) < 0) fprintf(stderr, "mpisim: %s\n", err);
    } else if (capture_wait(pid, &status, trace_dir, o.nranks,
                            (double)nm_config_int(cfg, "shim.connect_timeout") * 1e-12) < 0) {
        stalled_start = 1;
    }
    /* the exit code (README.md "Exit codes"): mpisim's own findings first (the launcher's code
     * then only says that mpisim stopped the ranks), else a report or trace that could not be
     * written, else the program's own code */
    if (forwarded_signal)
        fprintf(stderr, "mpisim: ended by %s: the ranks were stopped; the report keeps what the model recorded "
                        "(each rank's call sites and charging as of its last progress, at most a second old)\n",
                forwarded_signal == SIGHUP ? "SIGHUP" : "SIGTERM");
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    int output_failed = 0;
    if (stalled_start) rc = MS_EXIT_RANK_ERROR;
    if (s) {
        char outcome[256];
        int oc = ms_server_outcome(s, outcome, sizeof outcome);
        /* ranks that never connected, while the program returned a code of its own: that code
         * is the program's answer (a program that is no MPI program, or stops before MPI_Init).
         * Otherwise mpisim's findings win: a deadlock or stall, or an error, means the ranks were
         * stopped by mpisim, and the launcher's code only says so */
        if (oc && !(oc == MS_OUTCOME_NEVER_CONNECTED && rc != 0)) rc = ms_exit_code_of_outcome(oc);
        const char *written = o.report;
        if (o.report && strcmp(o.report, "-")) {
            FILE *f = fopen(o.report, "w");
            if (!f) {
                fprintf(stderr, "mpisim: cannot write the report %s: %s\n", o.report, strerror(errno));
                output_failed = 1;
                written = NULL;
            } else {
                int bad = ms_server_write_report(s, f) < 0;
                if (fclose(f) != 0 || bad) {
                    fprintf(stderr, "mpisim: the report %s is incomplete: %s\n", o.report, strerror(errno));
                    output_failed = 1;
                }
            }
        }
        ms_server_write_summary(s, stderr, written);
        ms_server_destroy(s);
    }
    if (o.trace && write_trace_meta(trace_dir, &o, cfg, 1) != 0)
        fprintf(stderr, "mpisim: cannot write %s/meta.json: %s\n", trace_dir, strerror(errno));
    if (o.trace && finish_trace(trace_dir, o.trace, 1) < 0) output_failed = 1;
    else if (o.trace && remove_raw_dir(trace_dir, err, sizeof err) < 0)   /* converted: not needed */
        fprintf(stderr, "mpisim: %s\n", err);
    if (o.timeline) {
        char terr[2048];
        if (mpisim_timeline_file(o.trace, o.timeline, terr, sizeof terr) != 0) {
            fprintf(stderr, "mpisim: timeline: %s\n", terr);
            output_failed = 1;
        } else {
            fprintf(stderr, "mpisim: timeline %s\n", o.timeline);
        }
        if (o.trace == timeline_trace) unlink(timeline_trace);
    }
    if (output_failed && rc != MS_EXIT_DEADLOCK && rc != MS_EXIT_RANK_ERROR) rc = MS_EXIT_OUTPUT;
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
    if (!sets) {
        fprintf(stderr, "mpisim config: out of memory\n");
        return MS_EXIT_USAGE;
    }
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
            return MS_EXIT_USAGE;
        }
        int rc = finish_trace(argv[2], argv[3], 0);   /* a partial trace is converted: 0 */
        return rc == -2 ? MS_EXIT_OUTPUT : rc < 0 ? MS_EXIT_USAGE : 0;
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
