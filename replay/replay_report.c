/* The replay's report (ms_replay_write_report). */
#define _GNU_SOURCE
#include "ms_report.h"
#include "replay_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ms_driver.h"
#include <jansson.h>

/* ---- report --------------------------------------------------------------------------------- */

static const char *status_name(int s)
{
    switch (s) {
    case MS_RR_FINALIZED: return "finalized";
    case MS_RR_DIED: return "died";
    case MS_RR_STOPPED: return "stopped";
    case MS_RR_BLOCKED: return "blocked";
    default: return "running";
    }
}

int ms_replay_write_report(FILE *f, const ms_trace *t, const char *trace_path, const nm_config *cfg,
                           const ms_replay_opts *opts, const ms_replay_result *res)
{
    ms_report_head(f, (const char *const *)t->program, t->nprogram, t->nranks, res->topology, res->engine, NULL, cfg);
    fprintf(f, ",\n  \"ranks\": [\n");
    for (int i = 0; i < res->nranks; i++) {
        const ms_replay_rank_result *o = &res->ranks[i];
        ms_report_rank rr = {i, t->ranks[i].pid, t->ranks[i].hostname, NULL, status_name(o->status), o->virtual_end_ps,
                             o->compute_ps, o->mpi_ps, o->calls, o->msgs_sent, o->bytes_sent, o->msgs_recv,
                             o->bytes_recv, o->collectives, o->rma_ops, o->rma_bytes, o->node};
        ms_report_rank_open(f, &rr);
        if (o->unmodelled) fprintf(f, "\"(recorded)\": %llu", (unsigned long long)o->unmodelled);
        fputs("}", f);
        ms_report_rank_node(f, &rr);
        if (o->recorded_end_known) fprintf(f, ", \"recorded_virtual_end_ps\": %lld", (long long)o->recorded_end_ps);
        ms_report_rank_close(f, i + 1 == res->nranks);
    }
    fprintf(f, "  ],\n  ");
    ms_report_summary(f, res->virtual_time_ps, res->msgs_sent, res->bytes_sent, res->wall_s, res->events, 0,
                      res->outcome, res->outcome_text);
    fprintf(f, ",\n  \"replay\": {\"trace\": ");
    ms_report_str(f, trace_path ? trace_path : "");
    fprintf(f, ", \"recorded_mpisim_version\": ");
    ms_report_str(f, t->mpisim_version ? t->mpisim_version : "");
    fprintf(f,
            ", \"cpu_scale\": %.17g, \"wildcards\": \"%s\", \"resumes\": %llu, \"resumes_checked\": %llu, "
            "\"resumes_differ\": %llu",
            opts ? opts->cpu_scale : 1.0, opts && opts->wildcards == MS_WILDCARDS_VIRTUAL ? "virtual" : "recorded",
            (unsigned long long)res->resumes, (unsigned long long)res->resumes_checked,
            (unsigned long long)res->resumes_differ);
    if (res->first_difference[0]) {
        fputs(", \"first_difference\": ", f);
        ms_report_str(f, res->first_difference);
    }
    fprintf(f, ", \"mean_end_ps\": %lld}\n}\n", (long long)res->mean_end_ps);
    return ferror(f) ? -1 : 0;
}
