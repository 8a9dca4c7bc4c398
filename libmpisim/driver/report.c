/* Shared pieces of the run report: see report.h. */
#include "ms_report.h"

#include <string.h>

void ms_report_str(FILE *f, const char *s) { nm_json_write_string(f, s); }

void ms_report_head(FILE *f, const char *const *program, int nprogram, int nranks, const char *topology,
                    const char *engine, const char *machine, const nm_config *cfg)
{
    fprintf(f, "{\n  \"schema\": \"mpisim-report/1\",\n  \"mpisim_version\": ");
    ms_report_str(f, MPISIM_VERSION);
    fprintf(f, ",\n  \"program\": [");
    for (int i = 0; i < nprogram; i++) {
        if (i) fputs(", ", f);
        ms_report_str(f, program[i]);
    }
    fprintf(f, "],\n  \"nranks\": %d,\n  \"topology\": ", nranks);
    ms_report_str(f, topology);
    fprintf(f, ",\n  \"engine\": ");
    ms_report_str(f, engine);
    if (machine) {
        fprintf(f, ",\n  \"machine\": ");
        ms_report_str(f, machine);
    }
    fprintf(f, ",\n  \"config\": ");
    nm_config_write_json(cfg, f, 2);
}

void ms_report_rank_open(FILE *f, const ms_report_rank *r)
{
    fprintf(f, "    {\"rank\": %d, \"host\": ", r->rank);
    ms_report_str(f, r->host);
    if (r->binding) {
        fputs(", \"binding\": ", f);
        ms_report_str(f, r->binding);
    }
    fprintf(f,
            ", \"pid\": %d, \"status\": \"%s\", \"virtual_end_ps\": %lld, \"compute_ps\": %lld, "
            "\"mpi_ps\": %lld, \"mpi_percent\": %.2f, \"calls\": %llu, \"msgs_sent\": %llu, \"bytes_sent\": %llu, \"msgs_recv\": %llu, "
            "\"bytes_recv\": %llu, \"collectives\": %llu, \"rma_ops\": %llu, \"rma_bytes\": %llu, \"unmodelled\": {",
            r->pid, r->status, (long long)r->end_ps, (long long)r->compute_ps, (long long)r->mpi_ps,
            /* mpiP's MPI%: time in MPI over the rank's whole (here virtual) time */
            r->end_ps > 0 ? 100.0 * (double)r->mpi_ps / (double)r->end_ps : 0.0, (unsigned long long)r->calls, (unsigned long long)r->msgs_sent, (unsigned long long)r->bytes_sent,
            (unsigned long long)r->msgs_recv, (unsigned long long)r->bytes_recv, (unsigned long long)r->collectives,
            (unsigned long long)r->rma_ops, (unsigned long long)r->rma_bytes);
}

void ms_report_rank_node(FILE *f, const ms_report_rank *r)
{
    if (r->node >= 0) fprintf(f, ", \"node\": %d", r->node);
}

void ms_report_rank_close(FILE *f, int last) { fprintf(f, "}%s\n", last ? "" : ","); }

const char *ms_outcome_name(int outcome)
{
    switch (outcome) {
    case MS_OUTCOME_OK: return "ok";
    case MS_OUTCOME_DEADLOCK: return "deadlock";
    case MS_OUTCOME_STALL: return "stall";
    case MS_OUTCOME_UNTIMED: return "untimed";
    case MS_OUTCOME_THREAD_LEVEL: return "thread_level";
    default: return "error";
    }
}

uint64_t ms_untimed_text(const char *const *names, const uint64_t *counts, size_t n, char *buf, size_t len)
{
    uint64_t total = 0;
    size_t off = 0;
    if (len) buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        total += counts[i];
        size_t j = 0;
        while (j < i && strcmp(names[j], names[i])) j++;
        if (j < i) continue;   /* counted with its first occurrence */
        uint64_t c = 0;
        for (size_t k = i; k < n; k++)
            if (!strcmp(names[k], names[i])) c += counts[k];
        if (off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s (%llu call%s)", off ? ", " : "", names[i],
                                    (unsigned long long)c, c == 1 ? "" : "s");
    }
    return total;
}

void ms_untimed_outcome_text(const char *calls, uint64_t ncalls, char *buf, size_t len)
{
    snprintf(buf, len,
             "%llu untimed call%s could have affected virtual time (the rank left the model while each ran and "
             "rejoined at the model's present time): %s",
             (unsigned long long)ncalls, ncalls == 1 ? "" : "s", calls);
}

void ms_report_summary(FILE *f, int64_t virtual_time_ps, uint64_t msgs, uint64_t bytes, double wall_s,
                       uint64_t server_messages, uint64_t rejected, int outcome, const char *outcome_text)
{
    fprintf(f,
            "\"summary\": {\"virtual_time_ps\": %lld, \"msgs_sent\": %llu, \"bytes_sent\": %llu, "
            "\"wall_s\": %.3f, \"server_messages\": %llu, \"rejected_connections\": %llu, \"outcome\": \"%s\"",
            (long long)virtual_time_ps, (unsigned long long)msgs, (unsigned long long)bytes, wall_s,
            (unsigned long long)server_messages, (unsigned long long)rejected, ms_outcome_name(outcome));
    if (outcome) {
        fputs(", \"outcome_text\": ", f);
        ms_report_str(f, outcome_text);
    }
    fputc('}', f);
}
