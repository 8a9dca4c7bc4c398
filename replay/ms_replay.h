/* ms_replay: play a recorded trace through the MPI layer model and a netmodel network, with the
 * driver the live model server uses (libmpisim/driver). No MPI, no printing, no exit().
 *
 * Each rank's clock starts at 0. At TR_CALL the recorded computation (x cpu_scale) is added;
 * ISEND/IRECV/ICOLL/COMM_ADD are posted at the current clock (ISEND then adds
 * ms_model_isend_cost, IRECV ms_model_irecv_cost); WAIT and PROBE block in the model until it
 * resumes the rank (clock = max(clock, resume time)); FINALIZE ends the rank. The driving rule
 * is the server's (H = min clock of running ranks; the model stops after each resume), so a
 * trace recorded during a co-simulation replays to the same times with the same configuration. */
#ifndef MS_REPLAY_H
#define MS_REPLAY_H

#include <stdint.h>
#include <stdio.h>
#include "ms_trace.h"
#include "netmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MS_WILDCARDS_RECORDED = 0, MS_WILDCARDS_VIRTUAL = 1 } ms_wildcard_policy;

typedef struct ms_replay_opts {
    double cpu_scale;              /* multiplies every computation interval (1.0: as recorded) */
    ms_wildcard_policy wildcards;  /* recorded: a wildcard receive/probe takes the recorded sender */
    FILE *timeline;                /* if set: CSV "rank,call,fn,entry_ps,exit_ps" of every MPI call */
    /* if set: every model call and answer, one line each (ms_driver_set_call_log) */
    void (*call_log)(void *user, int rank, const char *line);
    void *call_log_user;
    /* if set: called with ms_replay_result.warning before the replay starts (a routing that may
     * deadlock), so that the user reads it before a long replay rather than after */
    void (*warn)(void *user, const char *text);
    void *warn_user;
} ms_replay_opts;

/* DIED: its records end without MPI_Finalize, the first rank to end so; STOPPED: its records end
 * after another rank's had (the launcher ended it); as the driver's states */
typedef enum { MS_RR_FINALIZED = 0, MS_RR_DIED, MS_RR_BLOCKED, MS_RR_RUNNING, MS_RR_STOPPED } ms_replay_rank_status;

typedef struct ms_replay_rank_result {
    int64_t virtual_end_ps, compute_ps, mpi_ps;
    uint64_t calls, msgs_sent, bytes_sent, msgs_recv, bytes_recv, collectives, unmodelled;
    uint64_t rma_ops, rma_bytes;   /* one-sided operations (ms_driver_report_rank) */
    int status;                    /* ms_replay_rank_status */
    int recorded_end_known;        /* the trace has this rank's FINALIZE with its virtual end */
    int64_t recorded_end_ps;
    int node;                      /* the host model's node of the rank */
} ms_replay_rank_result;

typedef struct ms_replay_result {
    int nranks;
    ms_replay_rank_result *ranks;  /* nranks entries (ms_replay_result_free) */
    int64_t virtual_time_ps;       /* max over ranks of virtual_end_ps */
    int64_t mean_end_ps;
    uint64_t msgs_sent, bytes_sent, events, resumes, collectives;
    double wall_s;                 /* the whole call */
    double setup_s;                /* of which: topology, routes, network and model creation */
    int outcome;                   /* ms_outcome (ms_report.h): 0 ok, 1 deadlock, 2 error, 5 untimed */
    char outcome_text[2048];
    /* comparison with the recorded resumes (co-simulation traces only) */
    uint64_t resumes_checked, resumes_differ;
    char first_difference[512];
    char topology[128], engine[32];
    uint64_t model_errors;
    char warning[512];             /* said before the replay (a routing that may deadlock), or "" */
    /* requests the model completed before the recording did, kept until the recording's
     * completion (most at once, and left at the end) */
    uint64_t early_done_peak, early_done_end;
    /* ms_replay_run_stream: the most bytes of records (with their lists, results and texts) held
     * at once (per rank a stretch of its records and the next one read ahead, none once it has
     * ended) */
    uint64_t trace_bytes_peak;
    int trace_unreadable;          /* 1: the stream could not read some records (outcome_text says which) */
} ms_replay_result;

/* Configuration for a replay: keys of netmodel, [shim] and [mpi]; then the profile (NULL: the
 * trace's recorded configuration, or "default" if it has none: profiles are looked up in
 * nm_config_search_path's path); then the --set assignments (ms_driver_config_set). Recorded keys this build does not know
 * are skipped and named in `warnings` (may be NULL). */
nm_config *ms_replay_config(const ms_trace *t, const char *profile, const char *const *sets, int nsets,
                            char *warnings, size_t wlen, char *err, size_t errlen);

/* The keys whose value in cfg is not the trace's recorded one (a replay under another network):
 * their number, and the first few named in `names` ("a, b, ..."); 0 when the trace records no
 * configuration. */
int ms_replay_config_changes(const ms_trace *t, const nm_config *cfg, char *names, size_t len);

int ms_replay_run(const ms_trace *t, const nm_config *cfg, const ms_replay_opts *opts, ms_replay_result *res,
                  char *err, size_t errlen);
/* The same, reading each rank's records from the stream as it plays them (memory: ranks x a
 * stretch, not the trace's length). A stretch the stream cannot read stops the replay there:
 * outcome 2, its text the stream's error (file, rank, records), the result what was replayed. */
int ms_replay_run_stream(ms_trace_stream *s, const nm_config *cfg, const ms_replay_opts *opts, ms_replay_result *res,
                         char *err, size_t errlen);
void ms_replay_result_free(ms_replay_result *res);

/* The report of a run ("mpisim-report/1", the online run's schema) plus a "replay" object. */
int ms_replay_write_report(FILE *f, const ms_trace *t, const char *trace_path, const nm_config *cfg,
                           const ms_replay_opts *opts, const ms_replay_result *res);

#ifdef __cplusplus
}
#endif
#endif
