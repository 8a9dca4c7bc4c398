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
#include "launch.h"

/* The subcommands, for the global usage, "did you mean" and the completion's list. */
static const cm_named subcommands[] = {
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

static const cm_named *subcommand_at(size_t i)
{
    return i < sizeof subcommands / sizeof subcommands[0] ? &subcommands[i] : NULL;
}

void launch_usage(FILE *f)
{
    fputs("usage: mpisim COMMAND [options] (mpisim COMMAND --help describes each)\n", f);
    const cm_named *c;
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

static int cmd_trace(int argc, char **argv);

static int cmd_run(int argc, char **argv)
{
    run_opts o;
    if (launch_parse_run(argc, argv, &o, 0) < 0) return 2;
    return launch_and_serve(&o);
}

/* mpisim trace [--output F.h5] [--profile P] [--set k=v] [--compute M] -n N -- PROGRAM ARGS */
static int cmd_trace(int argc, char **argv)
{
    run_opts o;
    if (launch_parse_run(argc, argv, &o, 1) < 0) return 2;
    if (!o.trace) o.trace = "mpisim-trace.h5";
    return launch_and_serve(&o);
}

/* Cores of which this process may run on at least one hardware thread: its cpuset (hwloc's
 * topology) and its affinity mask, which taskset, numactl or a batch system's binding narrow
 * without a cpuset, and which mpirun and the ranks inherit. */
static const cm_opt config_opts[] = {
    NM_OPT_PROFILE(O_PROFILE),
    NM_OPT_SET(O_SET),
    {"json", O_JSON, NULL, "write it as the reports carry it"},
    {"describe", O_DESCRIBE, NULL, "print each key's (or the KEY operand's) help, type, unit, default and source"},
    CM_OPT_HELP,
    CM_OPT_END,
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
    cm_cmdline c;
    cm_cmdline_init(&c, "mpisim config", config_opts, argc, argv, 0);
    const char *v;
    for (int k; (k = cm_cmdline_next(&c, &v)) != -1;) {
        switch (k) {
        case O_PROFILE: profile = v; break;
        case O_SET: sets[nsets++] = v; break;
        case O_JSON: json = 1; break;
        case O_DESCRIBE: describe = 1; break;
        case 'h':
            printf("usage: mpisim config [--profile NAME|FILE] [--set KEY=VALUE]... [--json | --describe [KEY]]\n"
                   "Prints the resolved configuration: every key's value, unit and source (the default's\n"
                   "citation, file:line of a profile, or --set).\n");
            cm_cmdline_print_options(config_opts, stdout);
            free(sets);
            return 0;
        default: free(sets); return 2;
        }
    }
    if (cm_cmdline_operands(&c, 0, describe, "KEY") < 0) {
        free(sets);
        return 2;
    }
    if (describe && cm_cmdline_operand(&c) < argc) describe_key = argv[cm_cmdline_operand(&c)];
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
        launch_usage(stderr);
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
        int rc = launch_convert_trace(dfd, argv[2], argv[3], &ends, &kept, 0);   /* a partial trace is converted: 0 */
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
        launch_usage(stdout);
        return 0;
    }
    const char *s = cm_registry_suggest(subcommand_at, cmd);
    fprintf(stderr, "mpisim: unknown command '%s'%s%s%s\n", cmd, s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
    launch_usage(stderr);
    return 2;
}
