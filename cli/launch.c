/* `mpisim run` and `mpisim trace`: their options, the machine, signals, and the launch of the
 * program under mpirun with the model server serving its ranks (launch_and_serve). */
#define _GNU_SOURCE
#include "launch.h"

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
#include "trace_raw.h"
#include "replay_cli.h"
#include "report_text.h"
#include "timeline.h"

static const cm_opt run_opts_table[] = {
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
    CM_OPT_HELP,
    CM_OPT_END,
};

/* `mpisim trace`: run's options without those of the model server, which a capture does not
 * start (no report, no listen address): their values would go nowhere */
static const cm_opt trace_opts_table[] = {
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
    CM_OPT_HELP,
    CM_OPT_END,
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
    cm_cmdline_print_options(capture_only ? trace_opts_table : run_opts_table, f);
    fputs("Routings:\n", f);
    cm_registry_print(nm_routing_at, f, "  ");
    fputs("Options end at the first operand (or --): the program and its own arguments follow.\n", f);
}

int launch_parse_run(int argc, char **argv, run_opts *o, int capture_only)
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
    cm_cmdline c;
    cm_cmdline_init(&c, capture_only ? "mpisim trace" : "mpisim run", capture_only ? trace_opts_table : run_opts_table,
                    argc, argv, 1);
    const char *v;
    for (int k; (k = cm_cmdline_next(&c, &v)) != -1;) {
        long n;
        switch (k) {
        case 'h': run_usage(stdout, capture_only); exit(0);
        case 'n':
            if (cm_cmdline_long(&c, k, v, 1, 1000000, &n) != 0) return -1;
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
                return cm_cmdline_bad(&c, k, v, "expected none, core or socket"), -1;
            o->bind = v;
            break;
        case O_SERVER_ADDRESS: o->advertise = v; break;
        default: return -1;
        }
    }
    int first = cm_cmdline_operand(&c);   /* the program and its arguments */
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

/* A signal that ends the run (SIGTERM, SIGHUP, SIGINT): the first one, whether it came from the
 * terminal (Ctrl-C: the launcher, in the same process group, got it too), and the server to tell. */
static volatile sig_atomic_t stop_signal, stop_signal_from_tty;
static ms_server *volatile stop_server;

/* Capture only: the server's rule for a launcher that outlives its ranks (server.c,
 * end_lingering_launcher), from what the ranks leave in the trace directory. A rank's process is
 * the pid in its raw file's header (on this host only: a rank elsewhere cannot be seen, and the
 * rule is off); it is held in the MPI library's shutdown while its rank-R.fin exists (the shim
 * makes it before PMPI_Finalize and removes it once that returned). Every rank gone or held for
 * MS_LAUNCHER_GRACE_S: the launcher is asked to end; 1 then. */
typedef struct linger_watch {
    int *pid;          /* per rank: 0 not read yet, -1 not seen from here */
    double since;      /* every rank gone or held since (0: not so) */
    char host[64];
} linger_watch;

static int linger_look(linger_watch *lw, const trace_dir *td, int nranks, double now)
{
    int held = 0, running = 0;
    for (int r = 0; r < nranks; r++) {
        char name[64];
        if (lw->pid[r] == 0) {
            ms_trace_file_header h;
            snprintf(name, sizeof name, "rank-%06d.mstrace", r);
            int fd = openat(td->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            ssize_t n = fd >= 0 ? pread(fd, &h, sizeof h, 0) : -1;
            if (fd >= 0) close(fd);
            if (n != (ssize_t)sizeof h) {   /* not written yet: look again */
                running++;
                continue;
            }
            h.hostname[sizeof h.hostname - 1] = 0;
            lw->pid[r] = h.pid > 0 && !strcmp(h.hostname, lw->host) ? h.pid : -1;
        }
        if (lw->pid[r] < 0) return lw->since = 0, 0;
        ms_proc_sample ps;
        if (ms_proc_read(lw->pid[r], &ps) < 0 || ps.state == 'Z') continue;   /* gone */
        struct stat st;
        snprintf(name, sizeof name, "rank-%06d.fin", r);
        if (fstatat(td->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) held++;
        else running++;
    }
    if (running) return lw->since = 0, 0;
    if (lw->since == 0) lw->since = now;
    if (now - lw->since <= MS_LAUNCHER_GRACE_S) return 0;
    ms_server_say_lingering(held, "trace");
    return 1;
}

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
    linger_watch lw = {calloc((size_t)nranks, sizeof *lw.pid), 0, ""};
    gethostname(lw.host, sizeof lw.host - 1);
    for (;;) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) {
            free(lw.pid);
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
        } else if (seen == nranks && !killed_at && lw.pid && now >= next_look) {   /* once a second */
            next_look = now + 1.0;
            if (linger_look(&lw, td, nranks, now)) {
                kill(pid, SIGTERM);
                killed_at = now;
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
int launch_machine_summary(char *out, size_t len)
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
int launch_random_hex(char *out, size_t len)
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
    if (launch_random_hex(hex, sizeof hex) < 0) snprintf(hex, sizeof hex, "%d", (int)getpid());
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
        launch_remove_raw_dir_at(fd, "trace.h5.raw", "the timeline's trace", e, sizeof e);
        close(fd);
    }
    unlinkat(tt->parent, tt->leaf, AT_REMOVEDIR);
    close(tt->parent);
    tt->parent = -1;
}

/* The model server of a run (not capture only): configured, its shared segment or listener
 * opened, the compute gate's token drawn. 0, or -1 said on stderr (*sp: the server to abandon). */
static int serve_setup(const run_opts *o, nm_config *cfg, ms_server **sp, char *endpoint, size_t endpoint_len,
                       char *shm_name, size_t shm_len, char *gate_token, size_t gate_len)
{
    char err[1024];
    ms_server *s = *sp = ms_server_create();
    /* The model's network for many hosts takes a while (routes, and the check that they cannot
     * deadlock, over every pair of hosts: 2048 hosts ~5 s, 4096 ~30 s on this 2-core machine,
     * growing ~N^2.5): said, never a silent wait (Ctrl-C ends it) */
    double t_setup = mono_seconds();
    if (o->nranks >= 1024)
        fprintf(stderr, "mpisim: setting up the model of %d hosts (routes and their deadlock check take a while "
                        "at this size)...\n", o->nranks);
    if (!s || ms_server_configure(s, cfg, o->nranks, o->nprog, o->prog, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim: %s\n", err);
        return -1;
    }
    if (mono_seconds() - t_setup > 2.0)
        fprintf(stderr, "mpisim: the model of %d hosts was set up in %.1f s\n", o->nranks, mono_seconds() - t_setup);
    /* ranks on this host attach to the shared segment; those elsewhere (--listen) use TCP. The
     * listener is opened only where a rank may need it: no other local user's connection can
     * reach a run that does not listen */
    int need_tcp = strcmp(nm_config_string(cfg, "shim.transport"), "shm") || o->listen_given || o->advertise;
    if (!strcmp(nm_config_string(cfg, "shim.transport"), "shm") &&
        ms_server_shm(s, shm_name, shm_len, err, sizeof err) < 0) {
        /* a full /dev/shm: the run goes on over TCP rather than failing (or crashing later) */
        fprintf(stderr, "mpisim: warning: %s; the ranks connect by TCP instead\n", err);
        need_tcp = 1;
    }
    if (need_tcp) {
        char host[256];
        advertised_host(o, host, sizeof host);
        if (ms_server_listen(s, o->listen, host, endpoint, endpoint_len, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            return -1;
        }
    }
    /* the compute gate's segments are named by a token of their own: a name in /dev/shm is
     * visible to every user, the secret must not be */
    sweep_stale_segments();
    /* the mpisim's PID first, so that a sweep can tell a dead run's gate */
    int o_pid = snprintf(gate_token, gate_len, "%dx", (int)getpid());
    if (launch_random_hex(gate_token + o_pid, gate_len - (size_t)o_pid) < 0) {
        gate_token[0] = 0;
        fprintf(stderr, "mpisim: warning: cannot read /dev/urandom; the run has no compute gate\n");
    }
    return 0;
}

/* mpirun's command line into av (room for the arguments and 40 more): the ranks' environment
 * passed by name, never by value (the secret travels in the environment, never on a command line
 * others can read). */
static void mpirun_argv(const run_opts *o, const char *nranks, const char *shm_name, const char *gate_token,
                        const char **av)
{
    int k = 0;
    av[k++] = o->mpirun ? o->mpirun : "mpirun";
    if (geteuid() == 0) av[k++] = "--allow-run-as-root";
    av[k++] = "--oversubscribe";
    av[k++] = "-n";
    av[k++] = nranks;
    av[k++] = "-x";
    av[k++] = "LD_PRELOAD";
    if (!o->capture_only) {
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
    if (o->trace) {
        av[k++] = "-x";
        av[k++] = "MPISIM_TRACE_DIR";
        av[k++] = "-x";
        av[k++] = "MPISIM_TRACE_ID";
    }
    if (o->bind) {
        av[k++] = "--bind-to";
        av[k++] = o->bind;
    }
    for (int i = 0; i < o->nmpirun_args; i++) av[k++] = o->mpirun_args[i];
    for (int i = 0; i < o->nprog; i++) av[k++] = o->prog[i];
    av[k] = NULL;
}

/* The forked child: the program's environment, then mpirun (never returns). */
static void exec_launcher(const run_opts *o, const nm_config *cfg, ms_server *s, const char *shim, const char *endpoint,
                          const char *shm_name, const char *gate_token, const trace_dir *td, const char **av)
{
    /* the program gets the signal dispositions it would have had without mpisim */
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    setenv("LD_PRELOAD", shim, 1);
    if (!o->capture_only) {
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
    if (o->trace) {
        setenv("MPISIM_TRACE_DIR", td->abs, 1);   /* absolute: the ranks' directory may differ */
        setenv("MPISIM_TRACE_ID", td->token, 1);
    }
    execvp(av[0], (char *const *)av);
    fprintf(stderr, "mpisim: cannot run %s: %s\n", av[0], strerror(errno));
    _exit(127);
}

/* The run's report, when asked for (--report): 1 when it could not be written; *written_out: its
 * name, when it is a file that is there. */
static int write_report(const run_opts *o, ms_server *s, const char **written_out)
{
    int failed = 0;
    /* never through a link (ms_outfile); "-": standard output, after the program's own */
    const char *written = NULL;
    if (o->report) {
        ms_outfile out;
        char oerr[1024];
        if (ms_outfile_open(&out, o->report, MS_OUT_STDOUT, "the report", oerr, sizeof oerr) < 0) {
            fprintf(stderr, "mpisim: %s\n", oerr);
            failed = 1;
        } else if (ms_server_write_report(s, out.f) < 0) {
            ms_outfile_discard(&out);
            fprintf(stderr, "mpisim: cannot write the report %s: %s\n", o->report, strerror(errno));
            failed = 1;
        } else if (ms_outfile_commit(&out, oerr, sizeof oerr) < 0) {
            fprintf(stderr, "mpisim: %s\n", oerr);
            failed = 1;
        } else if (strcmp(o->report, "-")) {
            written = o->report;   /* the summary names it only when it is there */
        }
    }
    *written_out = written;
    return failed;
}

/* After the run: the trace's meta.json with the bindings, the conversion into the HDF5 trace,
 * and what the trace says of the ranks (capture only: all mpisim knows of them; *rc set then).
 * 1 when the trace is not complete or could not be written. */
static int finish_trace(const run_opts *o, const nm_config *cfg, trace_dir *td, const timeline_tmp *tt, int served,
                        int finalized_all, int stalled_start, int launcher_rc, int *rc)
{
    int failed = 0;
    char err[1024];
    if (launch_write_trace_meta(td, o, cfg, 1) != 0)
        fprintf(stderr, "mpisim: cannot write %s/meta.json: %s\n", td->shown, strerror(errno));
    ms_trace_ends ends;
    int kept = 1;
    int crc = launch_convert_trace(td->fd, td->shown, o->trace, &ends, &kept, o->trace == tt->trace);
    if (crc < 0) {
        failed = 1;
    } else if (served) {
        /* every rank reached MPI_Finalize, and yet some rank's records end before it: its
         * trace writing failed (a full disk, a descriptor the program closed; the rank said
         * why). The trace is not complete: an output that could not be written */
        if (finalized_all && ends.unfinished) {
            fprintf(stderr, "mpisim: the trace is incomplete: the records of rank(s) %s end before MPI_Finalize, "
                            "although they reached it (their trace writing failed; see their messages)\n",
                    ends.unfinished_list);
            failed = 1;
        }
    } else if (!stalled_start && !stop_signal) {
        /* capture only: the trace is all mpisim knows of the ranks (README.md "Exit codes") */
        if (ends.error_rank >= 0) {
            fprintf(stderr, "mpisim: rank %d: %s\n", ends.error_rank, ends.error);
            *rc = MS_EXIT_RANK_ERROR;
        } else if (ends.unfinished && launcher_rc != 0) {
            if (ends.died >= 0)
                fprintf(stderr, "mpisim: rank %d ended without MPI_Finalize (crashed or killed)%s%s%s\n", ends.died,
                        ends.unfinished > 1 ? "; the records of ranks " : "",
                        ends.unfinished > 1 ? ends.unfinished_list : "",
                        ends.unfinished > 1 ? " end before MPI_Finalize (the launcher ends the job when a rank dies)" : "");
            else
                fprintf(stderr, "mpisim: the records of rank(s) %s end without MPI_Finalize (%s)\n",
                        ends.unfinished_list, ends.stop[0] ? ends.stop : "stopped");
            *rc = MS_EXIT_RANK_ERROR;
        } else if (ends.unfinished || ends.missing) {
            fprintf(stderr, "mpisim: the trace is incomplete: the records of rank(s) %s%s%s end before "
                            "MPI_Finalize although the program ended normally (their trace writing failed; see "
                            "their messages)\n",
                    ends.unfinished_list, ends.missing && ends.unfinished ? ", " : "", ends.missing_list);
            failed = 1;
        }
    }
    /* converted whole, nothing is left to recover from it; the timeline's own trace goes anyway */
    if ((!kept || o->trace == tt->trace) && launch_remove_trace_dir(td, err, sizeof err) < 0)
        fprintf(stderr, "mpisim: warning: %s\n", err);
    launch_close_trace_dir(td);
    return failed;
}

/* The run's configuration: the profile with --set, --compute and --cpu-factor (its source kept as
 * its origin); NULL said on stderr. */
static nm_config *run_config(run_opts *o)
{
    char err[1024];
    static char cfs[64];
    int nsets = o->nsets;
    if (o->compute) {
        static char buf[64];
        snprintf(buf, sizeof buf, "shim.compute=%s", o->compute);
        o->sets[nsets++] = buf;
    }
    if (o->cpu_factor) {
        snprintf(cfs, sizeof cfs, "shim.cpu_factor=%s", o->cpu_factor);
        o->sets[nsets++] = cfs;
    }
    nm_config *cfg = mpisim_load_config(o->profile, o->sets, nsets, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "mpisim: %s\n", err);
        return NULL;
    }
    static nm_progress_printer progress;   /* long route set-ups (many ranks) say how they go */
    nm_progress_attach(cfg, &progress, "mpisim");
    /* a calibrated factor keeps its provenance in the resolved configuration of every report */
    if (o->cpu_factor && o->cpu_factor_source && nm_config_set(cfg, cfs, o->cpu_factor_source, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim: %s\n", err);
        return NULL;
    }
    return cfg;
}

/* The outputs the ranks write into, made before the launch: the raw trace directory and its
 * meta.json (o->trace), or the timeline's temporary trace. 0, or the exit code, said on stderr. */
static int prepare_trace(run_opts *o, const nm_config *cfg, trace_dir *td, timeline_tmp *tt)
{
    char err[1024];
    if (o->timeline && !o->trace) {   /* the timeline is drawn from a trace kept only until then */
        if (timeline_tmp_make(tt, o->timeline, err, sizeof err) < 0) {
            fprintf(stderr, "mpisim: the timeline: %s\n", err);
            return MS_EXIT_OUTPUT;
        }
        o->trace = tt->trace;
    }
    if (o->trace) {
        int mrc = launch_make_trace_dir(o->trace, o->replace_trace, td, err, sizeof err);
        if (mrc < 0) {
            fprintf(stderr, "mpisim: %s\n", err);
            timeline_tmp_remove(tt);
            return mrc == -2 ? MS_EXIT_OUTPUT : MS_EXIT_USAGE;
        }
        if (launch_write_trace_meta(td, o, cfg, 0) < 0) {
            /* a full disk: the directory goes, so that the next run is not refused by it */
            fprintf(stderr, "mpisim: cannot write %s/meta.json: %s\n", td->shown, strerror(errno));
            launch_remove_trace_dir(td, err, sizeof err);
            timeline_tmp_remove(tt);
            return MS_EXIT_OUTPUT;
        }
    }
    return 0;
}

/* Signals that end the run (a batch system's time limit, a closed terminal, Ctrl-C or kill
 * -INT) stop it with its report: ranks ending from then on were stopped, and the launcher ends
 * them (it gets the signal too, a second later, unless the terminal gave it its own) */
static void catch_stop_signals(ms_server *s)
{
    stop_server = s;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_stop_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* The timeline (--timeline) drawn from the run's trace: 1 when it could not be written. */
static int write_timeline(const run_opts *o, timeline_tmp *tt)
{
    int failed = 0;
    char terr[2048];
    if (mpisim_timeline_file(o->trace, o->timeline, terr, sizeof terr) != 0) {
        fprintf(stderr, "mpisim: timeline: %s\n", terr);
        failed = 1;
    } else {
        fprintf(stderr, "mpisim: timeline %s\n", o->timeline);
    }
    timeline_tmp_remove(tt);
    return failed;
}

int launch_and_serve(const run_opts *o_)
{
    run_opts o = *o_;
    char err[1024];
    nm_config *cfg = run_config(&o);
    if (!cfg) return 2;
    /* mpisim's own word for a program that cannot run, not the launcher's (exit 132, 127, ...) */
    if (check_program(&o, err, sizeof err) < 0) {
        fprintf(stderr, "mpisim: cannot run the program: %s\n", err);
        nm_config_destroy(cfg);
        return MS_EXIT_USAGE;
    }
    char machine[512];
    int cores = launch_machine_summary(machine, sizeof machine);
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
    if (!o.capture_only &&
        serve_setup(&o, cfg, &s, endpoint, sizeof endpoint, shm_name, sizeof shm_name, gate_token, sizeof gate_token) < 0)
        return abandon_run(s, 2);
    if (s) ms_server_set_machine(s, machine);
    if (cores > 0 && o.nranks > cores && (!o.mpirun_args || !o.nmpirun_args) &&
        strcmp(nm_config_string(cfg, "shim.compute"), "none") != 0)   /* none: nothing to charge */
        fprintf(stderr, "mpisim: %d ranks share %d cores: %s\n", o.nranks, cores,
                !strcmp(nm_config_string(cfg, "shim.compute"), "wall")
                    ? "--compute wall will charge waiting for a core as computation"
                    : "computation is charged as each rank's CPU time, so results hold; the run takes longer");
    trace_dir td = {.parent = -1, .fd = -1};
    timeline_tmp tt = {.parent = -1};
    int prc = prepare_trace(&o, cfg, &td, &tt);
    if (prc) return abandon_run(s, prc);
    char shim[PATH_MAX + 64];
    const char *shim_env = getenv("MPISIM_SHIM");
    if (shim_env) snprintf(shim, sizeof shim, "%s", shim_env);
    else if (mpisim_find_shim(shim, sizeof shim) != 0) snprintf(shim, sizeof shim, "libmpisim.so beside the command");
    if (access(shim, R_OK) != 0) {
        fprintf(stderr, "mpisim: the shim %s is missing (set MPISIM_SHIM)\n", shim);
        if (o.trace) launch_remove_trace_dir(&td, err, sizeof err);
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
    mpirun_argv(&o, nbuf, shm_name, gate_token, av);

    catch_stop_signals(s);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "mpisim: fork failed: %s\n", strerror(errno));
        return abandon_run(s, 2);
    }
    if (pid == 0) exec_launcher(&o, cfg, s, shim, endpoint, shm_name, gate_token, &td, av);
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
        const char *written = NULL;
        if (write_report(&o, s, &written)) output_failed = 1;
        ms_server_write_summary(s, stderr, written);
        ms_server_destroy(s);
    }
    if (o.trace && finish_trace(&o, cfg, &td, &tt, s != NULL, finalized_all, stalled_start, launcher_rc, &rc))
        output_failed = 1;
    if (o.timeline && write_timeline(&o, &tt)) output_failed = 1;
    if (output_failed && rc != MS_EXIT_DEADLOCK && rc != MS_EXIT_RANK_ERROR) rc = MS_EXIT_OUTPUT;
    nm_config_destroy(cfg);
    free(av);
    free(o.sets);
    free(o.mpirun_args);
    return rc;
}
