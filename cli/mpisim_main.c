/* mpisim: the command. Its subcommands are the table `subcommands` below (run, trace,
 * trace-recover, replay, sweep, net, study, calibrate, config, timeline, report, version). */
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
#include "ms_proc.h"
#include "exit_codes.h"
#include "netmodel.h"
#include "nm_cmdline.h"
#include "study.h"
#ifdef MPISIM_HAVE_NET_TOOL
#include "net_tool.h"
#endif
#include "ms_outfile.h"
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
    {"study", "study speedup [options]", "the speedup study of seed 000 sec 3.2 (matmul)"},
    {"calibrate", "calibrate [--out host.ini] [options]", "fit a profile of this machine (or of benchmark outputs)"},
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
        if (n > 0 && (size_t)n < len && access(out, R_OK) == 0) {
            char canon[PATH_MAX];   /* bin/../libexec/mpisim/matmul as the reports name it: plainly */
            if (realpath(out, canon) && strlen(canon) < len) snprintf(out, len, "%s", canon);
            return 0;
        }
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
    int listen_given;       /* --listen: ranks elsewhere connect by TCP */
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

/* `mpisim trace`: run's options without those of the model server, which a capture does not
 * start (no report, no listen address): their values would go nowhere */
static const nm_opt trace_opts_table[] = {
    {"np", 'n', "N", "number of ranks (required)"},
    NM_OPT_PROFILE(O_PROFILE),
    NM_OPT_SET(O_SET),
    NM_OPT_ROUTING(O_ROUTING),
    {"compute", O_COMPUTE, "cpu|wall|none", "how computation between MPI calls is measured (shim.compute)"},
    {"cpu-factor", O_CPU_FACTOR, "X", "scale the host's compute time by X (shim.cpu_factor, recorded for replay)"},
    {"cpu-factor-source", O_CPU_FACTOR_SOURCE, "TEXT", "where --cpu-factor came from, recorded as its origin"},
    {"output", 'o', "FILE.h5", "the HDF5 trace (default mpisim-trace.h5)"},
    {"trace", 'o', "FILE.h5", "the same as --output"},
    {"replace-trace", O_REPLACE_TRACE, NULL, "replace the FILE.h5.raw directory a run that did not finish left"},
    {"timeline", O_TIMELINE, "FILE.json", "also write a Chrome/Perfetto timeline (in the recording's real time)"},
    {"mpirun", O_MPIRUN, "PATH", "the mpirun to launch with"},
    {"mpirun-arg", O_MPIRUN_ARG, "ARG", "pass ARG to mpirun (repeatable)"},
    {"bind", O_BIND, "none|core|socket", "mpirun's --bind-to for the ranks"},
    {"report", O_REPORT, "FILE", NULL},   /* refused with the way to a report */
    NM_OPT_HELP,
    NM_OPT_END,
};

static void run_usage(FILE *f, int capture_only)
{
    if (capture_only)
        fputs("usage: mpisim trace [options] -n N [--] PROGRAM [ARGS...]\n"
              "Runs the program under Open MPI with the shim preloaded and records every MPI call to an HDF5\n"
              "trace (--output, default mpisim-trace.h5), without the model: replay it with mpisim replay\n"
              "(which writes the report: mpisim replay F.h5 --report R.json).\n", f);
    else
        fputs("usage: mpisim run [options] -n N [--] PROGRAM [ARGS...]\n"
              "Runs the program under Open MPI with the shim preloaded while the model server says how long\n"
              "it would have taken on the modelled network (virtual time); writes a JSON report.\n", f);
    nm_cmdline_print_options(capture_only ? trace_opts_table : run_opts_table, f);
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
    nm_cmdline_init(&c, capture_only ? "mpisim trace" : "mpisim run", capture_only ? trace_opts_table : run_opts_table,
                    argc, argv, 1);
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
        case O_REPORT:
            if (capture_only) {   /* a capture runs no model: the replay writes the report */
                fprintf(stderr, "mpisim trace: --report: a capture runs no model and writes no report; replay the "
                                "trace for one (mpisim replay F.h5 --report R.json), or co-simulate and capture at "
                                "once (mpisim run --trace F.h5 --report R.json)\n");
                return -1;
            }
            o->report = v;
            break;
        case 'o': o->trace = v; break;
        case O_REPLACE_TRACE: o->replace_trace = 1; break;
        case O_TIMELINE: o->timeline = v; break;
        case O_MPIRUN: o->mpirun = v; break;
        case O_MPIRUN_ARG: o->mpirun_args[o->nmpirun_args++] = v; break;
        case O_LISTEN:
            o->listen = v;
            o->listen_given = 1;
            break;
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

static int machine_summary(char *out, size_t len);
static int random_hex(char *out, size_t len);
/* A signal that ends the run (SIGTERM, SIGHUP, SIGINT): the first one, whether it came from the
 * terminal (Ctrl-C: the launcher, in the same process group, got it too), and the server to tell. */
static volatile sig_atomic_t stop_signal, stop_signal_from_tty;
static ms_server *volatile stop_server;


/* The directory a run makes for its ranks' raw trace files (F.h5.raw), held open from the moment
 * it is made: everything mpisim writes, reads or removes there goes through these descriptors, so
 * a name swapped meanwhile (another user's link in place of the directory) leads nowhere else. The
 * ranks find it by its absolute path (their working directory may differ: --wdir, a chdir before
 * MPI_Init) and check it is this one by the token in its "mpisim.id" before they create their
 * files in it (O_CREAT|O_EXCL|O_NOFOLLOW). */
typedef struct trace_dir {
    int parent;                /* the directory holding it, or -1 */
    int fd;                    /* the raw directory, or -1 */
    char leaf[256];            /* its name in parent */
    char shown[PATH_MAX + 8];  /* as the user named it (messages) */
    char abs[PATH_MAX + 8];    /* absolute, for the ranks */
    char token[40];            /* for the ranks' check (MPISIM_TRACE_ID) */
} trace_dir;

#define TRACE_ID_FILE "mpisim.id"

/* meta.json beside the ranks' raw files: what the HDF5 trace records about the run. Written
 * before the launch (so that a crash leaves it) and again after, with the ranks' bindings. */
static int write_trace_meta(const trace_dir *td, const run_opts *o, const nm_config *cfg, int with_bindings)
{
    /* written beside and renamed over: never through a link, never into another's file */
    unlinkat(td->fd, "meta.json.tmp", 0);
    int fd = openat(td->fd, "meta.json.tmp", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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
            char bname[64], line[256] = "";
            snprintf(bname, sizeof bname, "rank-%06d.binding", r);
            int bfd = openat(td->fd, bname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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
        int e = errno;
        unlinkat(td->fd, "meta.json.tmp", 0);
        errno = e;
        return -1;
    }
    return renameat(td->fd, "meta.json.tmp", td->fd, "meta.json");
}

/* The names mpisim and the shim write in a raw trace directory. */
static int raw_trace_name(const char *n)
{
    size_t len = strlen(n);
    if (!strcmp(n, "meta.json") || !strcmp(n, "meta.json.tmp") || !strcmp(n, TRACE_ID_FILE)) return 1;
    if (strncmp(n, "rank-", 5)) return 0;
    size_t d = strspn(n + 5, "0123456789");
    return d > 0 && (!strcmp(n + 5 + d, ".mstrace") || !strcmp(n + 5 + d, ".binding")) && 5 + d < len;
}

/* Remove the raw trace directory `leaf` of `parent`: only the names mpisim writes (a link is
 * removed, never followed); anything else in it (a subdirectory, another file) is left and named
 * (`shown` names the directory in messages). */
static int remove_raw_dir_at(int parent, const char *leaf, const char *shown, char *err, size_t errlen)
{
    struct stat st;
    if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : (snprintf(err, errlen, "%s: %s", shown, strerror(errno)), -1);
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory (a link or a file): remove it yourself", shown);
        return -1;
    }
    int fd = openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        snprintf(err, errlen, "cannot open %s: %s", shown, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat es;
        if (!raw_trace_name(e->d_name) || fstatat(fd, e->d_name, &es, AT_SYMLINK_NOFOLLOW) != 0 ||
            S_ISDIR(es.st_mode)) {
            snprintf(err, errlen, "%s holds %s, which mpisim did not write: remove the directory yourself", shown,
                     e->d_name);
            rc = -1;
        } else if (unlinkat(fd, e->d_name, 0) != 0) {
            snprintf(err, errlen, "cannot remove %s/%s: %s", shown, e->d_name, strerror(errno));
            rc = -1;
        }
    }
    closedir(d);
    if (rc == 0 && unlinkat(parent, leaf, AT_REMOVEDIR) != 0) {
        snprintf(err, errlen, "cannot remove %s: %s", shown, strerror(errno));
        rc = -1;
    }
    return rc;
}

static void close_trace_dir(trace_dir *td)
{
    if (td->fd >= 0) close(td->fd);
    if (td->parent >= 0) close(td->parent);
    td->fd = td->parent = -1;
}

/* The run is done with it: removed (only what mpisim wrote in it) and closed. */
static int remove_trace_dir(trace_dir *td, char *err, size_t errlen)
{
    int rc = td->parent >= 0 ? remove_raw_dir_at(td->parent, td->leaf, td->shown, err, errlen) : 0;
    close_trace_dir(td);
    return rc;
}

/* The ranks' raw files go to a directory this run creates (mkdir fails if the name exists), so
 * no other user can have planted links in it and no earlier run's rank files are mixed in. An
 * existing one (a run that did not finish) is replaced only with --replace-trace. */
static int make_trace_dir(const char *trace, int replace, trace_dir *td, char *err, size_t errlen)
{
    memset(td, 0, sizeof *td);
    td->fd = -1;
    snprintf(td->shown, sizeof td->shown, "%s.raw", trace);
    td->parent = ms_open_parent_dir(td->shown, td->leaf, sizeof td->leaf, err, errlen);
    if (td->parent < 0) return -2;   /* an output that cannot be written (no such directory, ...) */
    if (mkdirat(td->parent, td->leaf, 0700) != 0) {
        if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create the trace directory %.900s: %s", td->shown, strerror(errno));
            close_trace_dir(td);
            return -2;
        }
        if (!replace) {
            snprintf(err, errlen,
                     "%.400s exists (left by a run that did not finish?): convert it with mpisim trace-recover %.400s OUT.h5, "
                     "remove it, or pass --replace-trace to have this run replace it",
                     td->shown, td->shown);
            goto fail;
        }
        if (remove_raw_dir_at(td->parent, td->leaf, td->shown, err, errlen) < 0) goto fail;
        if (mkdirat(td->parent, td->leaf, 0700) != 0) {
            snprintf(err, errlen, "cannot create the trace directory %.900s: %s", td->shown, strerror(errno));
            goto fail;
        }
    }
    td->fd = openat(td->parent, td->leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (td->fd < 0 || fstat(td->fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        /* swapped between the mkdir and the open: not the directory this run made */
        snprintf(err, errlen, "the trace directory %.900s was replaced as it was made (another user's?)", td->shown);
        if (td->fd >= 0) close(td->fd);
        td->fd = -1;
        goto fail;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", td->fd);
    ssize_t n = readlink(proc, td->abs, sizeof td->abs - 1);
    if (n > 0 && td->abs[0] == '/') td->abs[n] = 0;
    else if (!realpath(td->shown, td->abs)) snprintf(td->abs, sizeof td->abs, "%s", td->shown);
    int ifd = -1;
    if (random_hex(td->token, 33) < 0 ||
        (ifd = openat(td->fd, TRACE_ID_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0 ||
        write(ifd, td->token, strlen(td->token)) != (ssize_t)strlen(td->token) || close(ifd) != 0) {
        snprintf(err, errlen, "cannot write %.900s/%s: %s", td->shown, TRACE_ID_FILE, strerror(errno));
        if (ifd >= 0) close(ifd);
        char e2[256];
        remove_trace_dir(td, e2, sizeof e2);
        return -2;
    }
    return 0;
fail:
    close_trace_dir(td);
    return -1;
}

/* The raw files -> HDF5, from the held directory (trace-recover's own directory otherwise:
 * dir_fd, named dir). 0 converted (partial or not: *ends says), -1 the raw files could not be
 * read, -2 the trace could not be written; what happened is said on stderr. *kept: the raw files
 * stay (partial: they are what the ranks wrote, should someone want to look). */
static int convert_trace(int dir_fd, const char *dir, const char *trace, ms_trace_ends *ends, int *kept, int quiet)
{
    char err[1024];
    *kept = 1;
    int rc = ms_trace_convert_at(dir_fd, dir, trace, ends, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "mpisim: the raw trace stays in %s: %s\n", dir, err);
        return rc;   /* -1 reading the raw files, -2 writing the trace */
    }
    if (rc > 0) {
        fprintf(stderr, "mpisim: trace %s is partial: %s (a replay says 'partial trace'); the raw files stay in %s\n",
                trace, err, dir);
        return 0;
    }
    if (!quiet) fprintf(stderr, "mpisim: trace %s\n", trace);
    *kept = 0;
    return 0;
}

static int cmd_trace(int argc, char **argv);

/* Capture only (no model server to say who connected): each rank creates its raw file in
 * MPI_Init. When some have not after shim.connect_timeout of idle time (the launcher's processes
 * on this host neither ran nor waited for a CPU: ms_proc.h) without a new one appearing, the
 * ranks wait in MPI_Init for one that never comes: name the missing ranks and end the launcher.
 * -1 then. */
static int capture_wait(pid_t pid, int *status, const trace_dir *td, int nranks, double timeout_s)
{
    struct timespec ts0;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    double last = (double)ts0.tv_sec + ts0.tv_nsec * 1e-9, killed_at = 0, signal_at = 0, next_look = 0;
    int seen = 0, stalled = 0, cap = 2 * nranks + 64;
    int *tree = malloc(sizeof *tree * (size_t)cap);
    ms_idle_clock idle = {0};
    for (;;) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) {
            free(tree);
            ms_idle_clock_free(&idle);
            return stalled ? -1 : 0;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double now = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
        if (seen < nranks && !stalled) {
            int n = 0;
            char missing[256] = "";
            size_t off = 0;
            for (int r = 0; r < nranks; r++) {
                char name[64];
                struct stat st;
                snprintf(name, sizeof name, "rank-%06d.mstrace", r);
                if (fstatat(td->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) n++;
                else if (off < sizeof missing - 16) off += (size_t)snprintf(missing + off, sizeof missing - off, "%s%d", off ? ", " : "", r);
            }
            if (now >= next_look) {   /* the launcher's processes, once a second */
                next_look = now + 1.0;
                ms_idle_clock_look(&idle, tree, tree ? ms_proc_tree(pid, tree, cap) : 0, 1, now, 5.0);
            }
            if (n > seen) {
                seen = n;
                last = now;
                idle.idle_s = 0;
            } else if (idle.idle_s > timeout_s) {
                fprintf(stderr,
                        "mpisim: %d of %d ranks did not reach MPI_Init within %.0f s (shim.connect_timeout, counted "
                        "while the job's processes on this host neither ran nor waited for a CPU; %.0f s of wall "
                        "time): %s%s; stopping the run\n",
                        nranks - n, nranks, timeout_s, now - last, missing, off >= sizeof missing - 16 ? ", ..." : "");
                kill(pid, SIGTERM);
                killed_at = now;
                stalled = 1;
            }
        }
        /* a signal that ends the run reaches the launcher a second later, unless it came from the
         * terminal (the launcher got it too: two make Open MPI kill the ranks before they flush) */
        if (stop_signal && !signal_at) signal_at = stop_signal_from_tty ? -1 : now + 1.0;
        if (signal_at > 0 && now >= signal_at) {
            signal_at = -1;
            kill(pid, SIGTERM);
            if (!killed_at) killed_at = now;
        }
        if (killed_at > 0 && now - killed_at > 5.0) {
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


static void on_stop_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (stop_signal) return;
    stop_signal_from_tty = si && si->si_code == SI_KERNEL;
    stop_signal = sig;
    if (stop_server) ms_server_request_stop(stop_server, sig, !stop_signal_from_tty);
}

static const char *stop_signal_name(int sig)
{
    return sig == SIGHUP ? "SIGHUP" : sig == SIGINT ? "SIGINT" : "SIGTERM";
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

static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Whether `prog` can be run as the launcher would run it (execvp: a name without '/' is looked
 * up in PATH). Only where the launcher runs it here as given: mpirun options that place it on
 * other hosts or in another directory (--host, --hostfile, --wdir, --preload-binary, ...) leave it
 * to the launcher. 0, or -1 with the reason in why. */
static int check_program(const run_opts *o, char *why, size_t len)
{
    static const char *const elsewhere[] = {"--host", "-host", "-H", "--hostfile", "-hostfile", "--machinefile",
                                            "-machinefile", "--default-hostfile", "--wdir", "-wdir", "-wd",
                                            "--preload-binary", "-preload-binary", "-s", "--prefix", "-prefix",
                                            "--app", "-app", NULL};
    for (int i = 0; i < o->nmpirun_args; i++)
        for (const char *const *e = elsewhere; *e; e++)
            if (!strncmp(o->mpirun_args[i], *e, strlen(*e)) &&
                (o->mpirun_args[i][strlen(*e)] == 0 || o->mpirun_args[i][strlen(*e)] == '='))
                return 0;
    const char *p = o->prog[0];
    if (!*p) return snprintf(why, len, "an empty program name"), -1;
    if (strchr(p, '/')) {
        struct stat st;
        if (stat(p, &st) != 0) return snprintf(why, len, "%s: %s", p, strerror(errno)), -1;
        if (S_ISDIR(st.st_mode)) return snprintf(why, len, "%s is a directory", p), -1;
        if (access(p, X_OK) != 0) return snprintf(why, len, "%s is not executable: %s", p, strerror(errno)), -1;
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    int found_noexec = 0;
    for (const char *q = path; *q;) {
        const char *c = strchr(q, ':');
        size_t n = c ? (size_t)(c - q) : strlen(q);
        char cand[PATH_MAX];
        if ((size_t)snprintf(cand, sizeof cand, "%.*s%s%s", (int)n, q, n ? "/" : "", p) < sizeof cand) {
            struct stat st;
            if (stat(cand, &st) == 0 && !S_ISDIR(st.st_mode)) {
                if (access(cand, X_OK) == 0) return 0;
                found_noexec = 1;
            }
        }
        q += n + (c ? 1 : 0);
        if (!c) break;
    }
    struct stat st;
    int here = !found_noexec && stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
    snprintf(why, len,
             found_noexec ? "%s is not executable (found in PATH)"
             : here       ? "%s: no such program (not in PATH; one is in this directory: run it as ./%s)"
                          : "%s: no such program (not in PATH)",
             p, p);
    return -1;
}

/* The host the ranks connect to: --server-address, else the listen address itself unless it is
 * a wildcard (0.0.0.0, ::), whose ranks elsewhere reach this host by its name. */
static void advertised_host(const run_opts *o, char *host, size_t len)
{
    if (o->advertise) snprintf(host, len, "%s", o->advertise);
    else if (!strcmp(o->listen, "0.0.0.0") || !strcmp(o->listen, "::") || !strcmp(o->listen, "*")) {
        if (gethostname(host, len) != 0) snprintf(host, len, "127.0.0.1");
        host[len - 1] = 0;
    } else snprintf(host, len, "%s", o->listen);
}

/* The private directory beside the timeline for the trace it is drawn from (never a name the user
 * may have: X.json.trace.h5 was overwritten), removed with what is in it. */
typedef struct timeline_tmp {
    int parent;
    char leaf[320];
    char dir[PATH_MAX + 64];
    char trace[PATH_MAX + 96];
} timeline_tmp;

static int timeline_tmp_make(timeline_tmp *tt, const char *timeline, char *err, size_t errlen)
{
    char leaf[256], hex[17];
    tt->parent = ms_open_parent_dir(timeline, leaf, sizeof leaf, err, errlen);
    if (tt->parent < 0) return -1;
    if (random_hex(hex, sizeof hex) < 0) snprintf(hex, sizeof hex, "%d", (int)getpid());
    snprintf(tt->leaf, sizeof tt->leaf, ".%.200s.mpisim-%s", leaf, hex);
    if (mkdirat(tt->parent, tt->leaf, 0700) != 0) {
        snprintf(err, errlen, "cannot create a directory beside %s for its trace: %s", timeline, strerror(errno));
        close(tt->parent);
        tt->parent = -1;
        return -1;
    }
    const char *slash = strrchr(timeline, '/');
    snprintf(tt->dir, sizeof tt->dir, "%.*s%s", slash ? (int)(slash - timeline + 1) : 0, timeline, tt->leaf);
    snprintf(tt->trace, sizeof tt->trace, "%s/trace.h5", tt->dir);
    return 0;
}

static void timeline_tmp_remove(timeline_tmp *tt)
{
    if (tt->parent < 0) return;
    int fd = openat(tt->parent, tt->leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        char e[512];
        unlinkat(fd, "trace.h5", 0);
        remove_raw_dir_at(fd, "trace.h5.raw", "the timeline's trace", e, sizeof e);
        close(fd);
    }
    unlinkat(tt->parent, tt->leaf, AT_REMOVEDIR);
    close(tt->parent);
    tt->parent = -1;
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
    /* mpisim's own word for a program that cannot run, not the launcher's (exit 132, 127, ...) */
    if (check_program(&o, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim: cannot run the program: %s\n", err);
        nm_config_destroy(cfg);
        return MS_EXIT_USAGE;
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
    char endpoint[512] = "none", shm_name[64] = "", gate_token[48] = "";
    if (!o.capture_only) {
        s = ms_server_create();
        /* The model's network for many hosts takes a while (routes, and the check that they cannot
         * deadlock, over every pair of hosts: 2048 hosts ~5 s, 4096 ~30 s on this 2-core machine,
         * growing ~N^2.5): said, never a silent wait (Ctrl-C ends it) */
        double t_setup = mono_seconds();
        if (o.nranks >= 1024)
            fprintf(stderr, "mpisim: setting up the model of %d hosts (routes and their deadlock check take a while "
                            "at this size)...\n", o.nranks);
        if (!s || ms_server_configure(s, cfg, o.nranks, o.nprog, o.prog, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return abandon_run(s, 2);
        }
        if (mono_seconds() - t_setup > 2.0)
            fprintf(stderr, "mpisim: the model of %d hosts was set up in %.1f s\n", o.nranks, mono_seconds() - t_setup);
        /* ranks on this host attach to the shared segment; those elsewhere (--listen) use TCP. The
         * listener is opened only where a rank may need it: no other local user's connection can
         * reach a run that does not listen */
        int need_tcp = strcmp(nm_config_string(cfg, "shim.transport"), "shm") || o.listen_given || o.advertise;
        if (!strcmp(nm_config_string(cfg, "shim.transport"), "shm") &&
            ms_server_shm(s, shm_name, sizeof shm_name, err, sizeof err) < 0) {
            /* a full /dev/shm: the run goes on over TCP rather than failing (or crashing later) */
            fprintf(stderr, "mpisim: warning: %s; the ranks connect by TCP instead\n", err);
            need_tcp = 1;
        }
        if (need_tcp) {
            char host[256];
            advertised_host(&o, host, sizeof host);
            if (ms_server_listen(s, o.listen, host, endpoint, sizeof endpoint, err, sizeof err) < 0) {
                fprintf(stderr, "mpisim: %s\n", err);
                return abandon_run(s, 2);
            }
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
    trace_dir td = {.parent = -1, .fd = -1};
    timeline_tmp tt = {.parent = -1};
    if (o.timeline && !o.trace) {   /* the timeline is drawn from a trace kept only until then */
        if (timeline_tmp_make(&tt, o.timeline, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: the timeline: %s\n", err);
            return abandon_run(s, MS_EXIT_OUTPUT);
        }
        o.trace = tt.trace;
    }
    if (o.trace) {
        int mrc = make_trace_dir(o.trace, o.replace_trace, &td, err, sizeof err);
        if (mrc < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            timeline_tmp_remove(&tt);
            return abandon_run(s, mrc == -2 ? MS_EXIT_OUTPUT : MS_EXIT_USAGE);
        }
        if (write_trace_meta(&td, &o, cfg, 0) < 0) {
            /* a full disk: the directory goes, so that the next run is not refused by it */
            fprintf(stderr, "mpisim: cannot write %s/meta.json: %s\n", td.shown, strerror(errno));
            remove_trace_dir(&td, err, sizeof err);
            timeline_tmp_remove(&tt);
            return abandon_run(s, MS_EXIT_OUTPUT);
        }
    }
    char shim[PATH_MAX + 64];
    const char *shim_env = getenv("MPISIM_SHIM");
    if (shim_env) snprintf(shim, sizeof shim, "%s", shim_env);
    else if (mpisim_find_shim(shim, sizeof shim) != 0) snprintf(shim, sizeof shim, "libmpisim.so beside the command");
    if (access(shim, R_OK) != 0) {
        fprintf(stderr, "mpisim: the shim %s is missing (set MPISIM_SHIM)\n", shim);
        if (o.trace) remove_trace_dir(&td, err, sizeof err);
        timeline_tmp_remove(&tt);
        return abandon_run(s, 2);
    }
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%d", o.nranks);
    const char **av = calloc((size_t)(o.nmpirun_args + o.nprog + 40), sizeof *av);
    if (!av) {
        fprintf(stderr, "mpisim: out of memory\n");
        return abandon_run(s, MS_EXIT_NO_MEMORY);
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
        av[k++] = "-x";
        av[k++] = "MPISIM_GAPS";
    }
    if (o.trace) {
        av[k++] = "-x";
        av[k++] = "MPISIM_TRACE_DIR";
        av[k++] = "-x";
        av[k++] = "MPISIM_TRACE_ID";
    }
    if (o.bind) {
        av[k++] = "--bind-to";
        av[k++] = o.bind;
    }
    for (int i = 0; i < o.nmpirun_args; i++) av[k++] = o.mpirun_args[i];
    for (int i = 0; i < o.nprog; i++) av[k++] = o.prog[i];
    av[k] = NULL;

    /* Signals that end the run (a batch system's time limit, a closed terminal, Ctrl-C or kill
     * -INT) stop it with its report: ranks ending from then on were stopped, and the launcher ends
     * them (it gets the signal too, a second later, unless the terminal gave it its own) */
    stop_server = s;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_stop_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "mpisim: fork failed: %s\n", strerror(errno));
        return abandon_run(s, 2);
    }
    if (pid == 0) {
        /* the program gets the signal dispositions it would have had without mpisim */
        signal(SIGPIPE, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGINT, SIG_DFL);
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
            /* OpenMP threads that spin while they wait (libgomp's and libomp's default, for a
             * while) take the CPU the ranks and the model server need when ranks share cores; their
             * waits are not charged (docs/architecture.md "Hybrid computation"), so only the run's
             * wall time changes: 3 ranks of 2 threads on 2 cores took 7.6 s spinning, 1.3 s not.
             * An explicit setting of the user wins. */
            setenv("OMP_WAIT_POLICY", "passive", 0);
        } else {
            setenv("MPISIM_COMPUTE", nm_config_string(cfg, "shim.compute"), 1);
            setenv("MPISIM_RETURN_PATH", nm_config_string(cfg, "shim.return_path"), 1);
            /* repeatable small gaps: floor, noise, noise max (ps) */
            char v[96];
            snprintf(v, sizeof v, "%lld,%lld,%lld", (long long)nm_config_int(cfg, "shim.gap_floor"),
                     (long long)nm_config_int(cfg, "shim.gap_noise"), (long long)nm_config_int(cfg, "shim.gap_noise_max"));
            setenv("MPISIM_GAPS", v, 1);
        }
        if (o.trace) {
            setenv("MPISIM_TRACE_DIR", td.abs, 1);   /* absolute: the ranks' directory may differ */
            setenv("MPISIM_TRACE_ID", td.token, 1);
        }
        execvp(av[0], (char *const *)av);
        fprintf(stderr, "mpisim: cannot run %s: %s\n", av[0], strerror(errno));
        _exit(127);
    }
    int status = 0, stalled_start = 0;
    int rc;
    if (s) {
        if (stop_signal) ms_server_request_stop(s, stop_signal, !stop_signal_from_tty);   /* before the fork */
        if (ms_server_run(s, pid, &status, err, sizeof err) < 0) fprintf(stderr, "mpisim: %s\n", err);
    } else if (capture_wait(pid, &status, &td, o.nranks,
                            (double)nm_config_int(cfg, "shim.connect_timeout") * 1e-12) < 0) {
        stalled_start = 1;
    }
    stop_server = NULL;
    /* the exit code (README.md "Exit codes"): mpisim's own findings first (the launcher's code
     * then only says that mpisim stopped the ranks), else a report or trace that could not be
     * written, else the program's own code */
    if (stop_signal && !s)   /* with a model server, its outcome says so */
        fprintf(stderr, "mpisim: ended by %s: the ranks were stopped%s\n", stop_signal_name(stop_signal),
                o.trace ? "; the trace keeps what each rank recorded up to then" : "");
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    int launcher_rc = rc;
    int output_failed = 0, finalized_all = 0;
    if (stalled_start || (!s && stop_signal)) rc = MS_EXIT_RANK_ERROR;
    if (s) {
        char outcome[256];
        int oc = ms_server_outcome(s, outcome, sizeof outcome);
        finalized_all = oc == MS_OUTCOME_OK || oc == MS_OUTCOME_UNTIMED || oc == MS_OUTCOME_THREAD_LEVEL;
        /* ranks that never connected, while the program returned a code of its own: that code
         * is the program's answer (a program that is no MPI program, or stops before MPI_Init).
         * Otherwise mpisim's findings win: a deadlock or stall, or an error, means the ranks were
         * stopped by mpisim, and the launcher's code only says so */
        /* untimed calls: 6 in place of 0; a code of the program's own stands (the report says untimed) */
        if (oc && !((oc == MS_OUTCOME_NEVER_CONNECTED || oc == MS_OUTCOME_UNTIMED) && rc != 0))
            rc = ms_exit_code_of_outcome(oc);
        /* never through a link (ms_outfile); "-": standard output, after the program's own */
        const char *written = NULL;
        if (o.report) {
            ms_outfile out;
            char oerr[1024];
            if (ms_outfile_open(&out, o.report, MS_OUT_STDOUT, "the report", oerr, sizeof oerr) < 0) {
                fprintf(stderr, "mpisim: %s\n", oerr);
                output_failed = 1;
            } else if (ms_server_write_report(s, out.f) < 0) {
                ms_outfile_discard(&out);
                fprintf(stderr, "mpisim: cannot write the report %s: %s\n", o.report, strerror(errno));
                output_failed = 1;
            } else if (ms_outfile_commit(&out, oerr, sizeof oerr) < 0) {
                fprintf(stderr, "mpisim: %s\n", oerr);
                output_failed = 1;
            } else if (strcmp(o.report, "-")) {
                written = o.report;   /* the summary names it only when it is there */
            }
        }
        ms_server_write_summary(s, stderr, written);
        ms_server_destroy(s);
    }
    if (o.trace) {
        if (write_trace_meta(&td, &o, cfg, 1) != 0)
            fprintf(stderr, "mpisim: cannot write %s/meta.json: %s\n", td.shown, strerror(errno));
        ms_trace_ends ends;
        int kept = 1;
        int crc = convert_trace(td.fd, td.shown, o.trace, &ends, &kept, o.trace == tt.trace);
        if (crc < 0) {
            output_failed = 1;
        } else if (s) {
            /* every rank reached MPI_Finalize, and yet some rank's records end before it: its
             * trace writing failed (a full disk, a descriptor the program closed; the rank said
             * why). The trace is not complete: an output that could not be written */
            if (finalized_all && ends.unfinished) {
                fprintf(stderr, "mpisim: the trace is incomplete: the records of rank(s) %s end before MPI_Finalize, "
                                "although they reached it (their trace writing failed; see their messages)\n",
                        ends.unfinished_list);
                output_failed = 1;
            }
        } else if (!stalled_start && !stop_signal) {
            /* capture only: the trace is all mpisim knows of the ranks (README.md "Exit codes") */
            if (ends.error_rank >= 0) {
                fprintf(stderr, "mpisim: rank %d: %s\n", ends.error_rank, ends.error);
                rc = MS_EXIT_RANK_ERROR;
            } else if (ends.unfinished && launcher_rc != 0) {
                if (ends.died >= 0)
                    fprintf(stderr, "mpisim: rank %d ended without MPI_Finalize (crashed or killed)%s%s%s\n", ends.died,
                            ends.unfinished > 1 ? "; the records of ranks " : "",
                            ends.unfinished > 1 ? ends.unfinished_list : "",
                            ends.unfinished > 1 ? " end before MPI_Finalize (the launcher ends the job when a rank dies)" : "");
                else
                    fprintf(stderr, "mpisim: the records of rank(s) %s end without MPI_Finalize (%s)\n",
                            ends.unfinished_list, ends.stop[0] ? ends.stop : "stopped");
                rc = MS_EXIT_RANK_ERROR;
            } else if (ends.unfinished || ends.missing) {
                fprintf(stderr, "mpisim: the trace is incomplete: the records of rank(s) %s%s%s end before "
                                "MPI_Finalize although the program ended normally (their trace writing failed; see "
                                "their messages)\n",
                        ends.unfinished_list, ends.missing && ends.unfinished ? ", " : "", ends.missing_list);
                output_failed = 1;
            }
        }
        /* converted whole, nothing is left to recover from it; the timeline's own trace goes anyway */
        if ((!kept || o.trace == tt.trace) && remove_trace_dir(&td, err, sizeof err) < 0)
            fprintf(stderr, "mpisim: warning: %s\n", err);
        close_trace_dir(&td);
    }
    if (o.timeline) {
        char terr[2048];
        if (mpisim_timeline_file(o.trace, o.timeline, terr, sizeof terr) != 0) {
            fprintf(stderr, "mpisim: timeline: %s\n", terr);
            output_failed = 1;
        } else {
            fprintf(stderr, "mpisim: timeline %s\n", o.timeline);
        }
        timeline_tmp_remove(&tt);
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
        return MS_EXIT_NO_MEMORY;
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
    /* a reader that went away (a closed stderr pipe, a rank's socket) is a write error here, never
     * the end of mpisim and of the run's report; the program it runs gets the default back */
    signal(SIGPIPE, SIG_IGN);
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
        int dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
            fprintf(stderr, "mpisim: %s: %s\n", argv[2], strerror(errno));
            return MS_EXIT_USAGE;
        }
        ms_trace_ends ends;
        int kept;
        int rc = convert_trace(dfd, argv[2], argv[3], &ends, &kept, 0);   /* a partial trace is converted: 0 */
        close(dfd);
        return rc == -2 ? MS_EXIT_OUTPUT : rc < 0 ? MS_EXIT_USAGE : 0;
    }
    if (!strcmp(cmd, "replay")) return mpisim_replay_main(sc, sv);
    if (!strcmp(cmd, "sweep")) return mpisim_sweep_main(sc, sv);
    if (!strcmp(cmd, "study")) return mpisim_study_main(sc, sv);
    if (!strcmp(cmd, "calibrate")) return mpisim_calibrate_main(sc, sv);
    if (!strcmp(cmd, "timeline")) return mpisim_timeline_main(sc, sv);
    if (!strcmp(cmd, "report")) return mpisim_report_main(sc, sv);
#ifdef MPISIM_HAVE_NET_TOOL
    if (!strcmp(cmd, "net")) return nm_net_main(sc, sv, stdout, stderr);
#endif
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            printf("usage: mpisim version\nPrints mpisim's version (also: mpisim --version).\n");
            return 0;
        }
        if (argc > 2) {
            fprintf(stderr, "mpisim version: takes no arguments (got '%s')\nusage: mpisim version\n", argv[2]);
            return MS_EXIT_USAGE;
        }
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
