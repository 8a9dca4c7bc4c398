/* `mpisim run` and `mpisim trace` (private to cli/): their options, the launch of the program
 * under mpirun with the model server, and the directory of a capture's raw trace files. The parts:
 *   mpisim_main.c  the subcommands, paths beside the executable, the configuration, main
 *   launch.c       run/trace options, the machine, signals, the launch and the serving of a run
 *   trace_dir.c    the raw trace directory of a run: made, described (meta.json), converted, removed
 * Functions shared between the parts carry the prefix launch_. */
#ifndef MPISIM_LAUNCH_H
#define MPISIM_LAUNCH_H

#include "ms_trace.h"
#include "netmodel.h"

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

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

/* long options of run, trace and config without a short form */
enum { O_PROFILE = 256, O_SET, O_ROUTING, O_COMPUTE, O_CPU_FACTOR, O_CPU_FACTOR_SOURCE, O_REPORT, O_TRACE,
       O_TIMELINE, O_MPIRUN, O_MPIRUN_ARG, O_LISTEN, O_BIND, O_SERVER_ADDRESS, O_JSON, O_DESCRIBE,
       O_REPLACE_TRACE };

/* mpisim_main.c */
void launch_usage(FILE *f);

/* launch.c */
int launch_parse_run(int argc, char **argv, run_opts *o, int capture_only);
int launch_machine_summary(char *out, size_t len);
int launch_random_hex(char *out, size_t len);
int launch_and_serve(const run_opts *o_);

/* trace_dir.c */
int launch_write_trace_meta(const trace_dir *td, const run_opts *o, const nm_config *cfg, int with_bindings);
int launch_remove_raw_dir_at(int parent, const char *leaf, const char *shown, char *err, size_t errlen);
void launch_close_trace_dir(trace_dir *td);
int launch_remove_trace_dir(trace_dir *td, char *err, size_t errlen);
int launch_make_trace_dir(const char *trace, int replace, trace_dir *td, char *err, size_t errlen);
int launch_convert_trace(int dir_fd, const char *dir, const char *trace, ms_trace_ends *ends, int *kept,
                         int quiet);

#endif
