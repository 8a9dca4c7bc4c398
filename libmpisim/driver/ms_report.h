/* The run report (schema mpisim-report/1, README.md "Report"): the parts the model server
 * (after a co-simulation) and replay (after a trace) both write, so that the two stay one format. */
#ifndef MS_REPORT_H
#define MS_REPORT_H
#include <stdint.h>
#include <stdio.h>
#include "netmodel.h"

void ms_report_str(FILE *f, const char *s);   /* a JSON string; NULL as "" */

/* {"schema", "mpisim_version", "program", "nranks", "topology", "engine"[, "machine"], "config"
 * -- machine NULL: not written. Leaves the object open after "config". */
void ms_report_head(FILE *f, const char *const *program, int nprogram, int nranks, const char *topology,
                    const char *engine, const char *machine, const nm_config *cfg);

typedef struct ms_report_rank {
    int rank, pid;
    const char *host, *binding;   /* binding NULL: not written */
    const char *status;
    int64_t end_ps, compute_ps, mpi_ps;
    uint64_t calls, msgs_sent, bytes_sent, msgs_recv, bytes_recv, collectives;
    uint64_t rma_ops, rma_bytes;  /* one-sided operations it started (locks included), their bytes both ways */
    int node;                     /* the host model's node of the rank (host.ranks_per_node, host.map_by); -1: unknown */
} ms_report_rank;
/* One rank's object, open inside "unmodelled": {...: the caller writes the entries, closes it
 * with "}", writes ms_report_rank_node, may add fields, and ends the object with ms_report_rank_close.
 * The counts and the node are the model's: ms_driver_report_rank. */
void ms_report_rank_open(FILE *f, const ms_report_rank *r);
void ms_report_rank_node(FILE *f, const ms_report_rank *r);   /* "node" (none when -1) */
void ms_report_rank_close(FILE *f, int last);

/* A run's or replay's outcome: the report's summary.outcome ("ok", "deadlock", "error", "stall",
 * "untimed", "thread_level") and, through cli/exit_codes.h, the command's exit code. */
typedef enum {
    MS_OUTCOME_OK = 0,
    MS_OUTCOME_DEADLOCK = 1,         /* in virtual time, or the network's (its routing) */
    MS_OUTCOME_ERROR = 2,            /* a rank stopped on an error (unmodelled call, crash, abort), or the model */
    MS_OUTCOME_STALL = 3,            /* the stall watchdog (shim.stall_timeout): nothing moves in the real MPI */
    MS_OUTCOME_NEVER_CONNECTED = 4,  /* ranks never connected (left before MPI_Init, no MPI program) */
    MS_OUTCOME_UNTIMED = 5,          /* complete, but calls ran untimed (passthrough, MPI-IO): the virtual
                                      * times may be wrong (outcome_text names the calls) */
    MS_OUTCOME_THREAD_LEVEL = 6      /* threads of a rank called MPI at once under a thread level that forbids it
                                      * (MPI_THREAD_SINGLE, FUNNELED, SERIALIZED): exit 7 */
} ms_outcome;
/* "ok", "deadlock", "error", "stall", "untimed", "thread_level" */
const char *ms_outcome_name(int outcome);
/* The untimed calls, "MPI_File_open (4 calls), MPI_File_close (4)", into buf from parallel arrays of
 * names and counts, merged by name; returns the number of calls. */
uint64_t ms_untimed_text(const char *const *names, const uint64_t *counts, size_t n, char *buf, size_t len);
/* The outcome text of MS_OUTCOME_UNTIMED, naming them. */
void ms_untimed_outcome_text(const char *calls, uint64_t ncalls, char *buf, size_t len);

/* "summary": {...} (outcome an ms_outcome; text for all but ok). Leaves the report's object open. */
void ms_report_summary(FILE *f, int64_t virtual_time_ps, uint64_t msgs, uint64_t bytes, double wall_s,
                       uint64_t server_messages, uint64_t rejected, int outcome, const char *outcome_text);

#endif
