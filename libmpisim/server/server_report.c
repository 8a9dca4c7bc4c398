/* The run's outcome, its measurement warnings, the JSON report and the summary. */
#define _GNU_SOURCE
#include "server_internal.h"

static int launcher_failed_after_finalize(const ms_server *s)
{
    if (!s->child_done) return 0;
    int code = WIFEXITED(s->child_status) ? WEXITSTATUS(s->child_status)
               : WIFSIGNALED(s->child_status) ? 128 + WTERMSIG(s->child_status) : 0;
    if (!code) return 0;
    for (int i = 0; i < s->nranks; i++)
        if (!s->ranks[i].finalized) return 0;
    return code;
}

/* The first rank whose process exited with a non-zero code of its own after MPI_Finalize (its
 * shim said so): then the launcher's failure is the program's exit code, not the MPI library's
 * shutdown. -1 if none. */
static int exit_after_finalize(const ms_server *s, int *code)
{
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].exit_known && s->ranks[i].exit_after_fin && s->ranks[i].exit_code) {
            *code = s->ranks[i].exit_code;
            return i;
        }
    return -1;
}

/* "MPI_File_open (4 calls), ..." over every rank; the number of distinct calls. */
static size_t untimed_calls(const ms_server *s, char *buf, size_t len)
{
    size_t n = 0;
    for (int i = 0; i < s->nranks; i++) n += s->ranks[i].n_unmodelled;
    if (len) buf[0] = 0;
    if (!n) return 0;
    const char **names = malloc(sizeof *names * n);
    uint64_t *counts = malloc(sizeof *counts * n);
    if (!names || !counts) {
        free(names);
        free(counts);
        snprintf(buf, len, "(out of memory naming them)");
        return 1;
    }
    size_t k = 0;
    for (int i = 0; i < s->nranks; i++)
        for (size_t j = 0; j < s->ranks[i].n_unmodelled; j++) {
            names[k] = s->ranks[i].unmodelled[j].name;
            counts[k++] = s->ranks[i].unmodelled[j].count;
        }
    ms_untimed_text(names, counts, n, buf, len);
    free(names);
    free(counts);
    return n;
}

int ms_server_outcome(const ms_server *s, char *buf, size_t len)
{
    if (s->deadlocked) {
        snprintf(buf, len, "%s", s->deadlock_text);
        return MS_OUTCOME_DEADLOCK;
    }
    if (s->stalled) {
        snprintf(buf, len, "%s", s->deadlock_text);
        return MS_OUTCOME_STALL;
    }
    if (s->stop_reason[0]) {
        snprintf(buf, len, "%s", s->stop_reason);
        return MS_OUTCOME_ERROR;
    }
    /* the ranks that left first (the launcher may end the others after them): by their own word
     * when their shim could say it (exact), else by the look at /proc that found them gone */
    int first_look = 0, nfirst = 0, first_rank = -1, never = 0, first = -1, nexact = 0, first_order = 0;
    for (int i = 0; i < s->nranks; i++) {
        int l = s->ranks[i].left_before_init, o = s->ranks[i].left_order;
        if (l && (!first_look || l < first_look)) first_look = l;
        if (o) nexact++;
        if (o && (!first_order || o < first_order)) {
            first_order = o;
            first_rank = i;
        }
        if (s->drv && ms_driver_state(s->drv, i) == MS_RANK_UNCONNECTED && never++ == 0) first = i;
    }
    if (nexact) {
        nfirst = nexact;   /* for the test below: all of them left on their own */
    } else {
        for (int i = 0; i < s->nranks && first_look; i++)
            if (s->ranks[i].left_before_init == first_look && nfirst++ == 0) first_rank = i;
    }
    /* all ranks leaving together without connecting is a program that does not use MPI (or
     * stops before it): its own exit code is the answer, below */
    if (first_rank >= 0 && !(never == s->nranks && nfirst == s->nranks)) {
        snprintf(buf, len,
                 "rank %d%s exited before MPI_Init (its process was gone before it connected to the model server); "
                 "the others could not start",
                 first_rank, !nexact && nfirst > 1 ? " (and others with it)" : nexact > 1 ? " (and others after it)" : "");
        return MS_OUTCOME_ERROR;
    }
    if (never) {
        snprintf(buf, len,
                 "%d of %d ranks never connected to the model server, the first rank %d (did the program call "
                 "MPI_Init? the launcher's messages may name a rank that left before it)",
                 never, s->nranks, first);
        return MS_OUTCOME_NEVER_CONNECTED;
    }
    /* threads that called MPI at once under a level that forbids it: the real MPI was not prepared
     * for it, and the times are not those of a correct program */
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].violation[0]) {
            int nr = 0;
            for (int j = 0; j < s->nranks; j++) nr += s->ranks[j].violation[0] != 0;
            snprintf(buf, len, "%s: the program asked for a thread level that forbids it (it needs "
                     "MPI_THREAD_MULTIPLE; %d rank(s) did so); its virtual times are not those of a correct program",
                     s->ranks[i].violation, nr);
            return MS_OUTCOME_THREAD_LEVEL;
        }
    /* complete, but calls ran untimed (passthrough, MPI-IO): named, with their counts over the ranks */
    char calls[2048];
    if (untimed_calls(s, calls, sizeof calls)) {
        uint64_t n = 0;
        for (int i = 0; i < s->nranks; i++)
            for (size_t k = 0; k < s->ranks[i].n_unmodelled; k++) n += s->ranks[i].unmodelled[k].count;
        ms_untimed_outcome_text(calls, n, buf, len);
        return MS_OUTCOME_UNTIMED;
    }
    if (len) buf[0] = 0;
    return MS_OUTCOME_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* report */

/* How the rank measured its computation (docs/architecture.md "Virtual time in a rank") */
/* Every rank's call sites summed per (function, site): totals over the ranks, and the least and
 * most one rank spent there. A rank that never finalized counts with its last PROGRESS's. */
static site_total *gather_sites(const ms_server *s, size_t *n)
{
    site_total *all = NULL;
    size_t cap = 0;
    *n = 0;
    for (int r = 0; r < s->nranks; r++)
        for (size_t k = 0; k < s->ranks[r].nsites; k++) {
            const site_total *m = &s->ranks[r].sites[k];
            size_t i;
            for (i = 0; i < *n; i++)
                if (all[i].fn == m->fn && !strcmp(all[i].text, m->text)) break;
            if (i == *n) {
                if (*n == cap) {
                    cap = cap ? cap * 2 : 64;
                    site_total *q = realloc(all, sizeof *q * cap);
                    if (!q) return all;   /* what fitted */
                    all = q;
                }
                all[i] = *m;
                all[i].calls = all[i].bytes = 0;
                all[i].time_ps = 0;
                all[i].ranks = 0;
                (*n)++;
            }
            all[i].calls += m->calls;
            all[i].bytes += m->bytes;
            /* the ranks' figures, summed without overflow */
            if (__builtin_add_overflow(all[i].time_ps, m->time_ps, &all[i].time_ps))
                all[i].time_ps = m->time_ps < 0 ? INT64_MIN : INT64_MAX;
            if (!all[i].ranks || m->time_ps < all[i].rank_min_ps) all[i].rank_min_ps = m->time_ps;
            if (!all[i].ranks || m->time_ps > all[i].rank_max_ps) all[i].rank_max_ps = m->time_ps;
            all[i].ranks++;
        }
    return all;
}

static void write_charging(FILE *f, const ms_msg_charging *c)
{
    static const char *const methods[] = {"none", "task-clock", "syscall", "wall"};
    const char *m = c->method >= 0 && c->method < 4 ? methods[c->method] : "?";
    fprintf(f,
            ", \"charging\": {\"method\": \"%s\", \"baseline_ns\": %lld, \"page_misses\": %llu, \"woken_gaps\": %llu, \"woken_raw_ns\": %lld, \"gaps\": %llu, "
            "\"descheduled_gaps\": %llu, \"cpu_clock_syscalls\": %llu, \"raw_ns\": %lld, \"compensated_ns\": %lld, "
            "\"wall_ns\": %lld, \"descheduled_ns\": %lld, \"woken_charged_ns\": %lld, \"return_comp_ns\": %lld, "
            "\"cold_baseline_ns\": %lld, \"cold_trials\": %llu, \"window_gaps\": %llu, \"window_baseline_ns\": %lld, "
            "\"window_cold_ns\": %lld, \"counter_ghz\": %.6f, \"probes\": %llu, "
            "\"floor_gaps\": %llu, \"floor_added_ns\": %lld, \"floor_dropped_ns\": %lld, "
            "\"stall_gaps\": %llu, \"stall_dropped_ns\": %lld, "
            "\"steal_gaps\": %llu, \"steal_ns\": %lld, \"steal_syscalls\": %llu, "
            "\"gate_slots\": %d, \"gate_waits\": %llu, \"gate_wait_ns\": %lld, \"gate_timeouts\": %llu}",
            m, (long long)c->baseline_ns, (unsigned long long)c->page_misses,
            (unsigned long long)c->woken_gaps, (long long)c->woken_raw_ns, (unsigned long long)c->gaps,
            (unsigned long long)c->descheduled_gaps, (unsigned long long)c->syscalls, (long long)c->raw_ns,
            (long long)c->compensated_ns, (long long)c->wall_ns, (long long)c->descheduled_ns,
            (long long)c->woken_charged_ns, (long long)c->return_comp_ns, (long long)c->cold_baseline_ns,
            (unsigned long long)c->cold_trials, (unsigned long long)c->window_gaps, (long long)c->window_baseline_ns,
            (long long)c->window_cold_ns, c->window_ps_per_tick > 0 ? 1e9 / (double)c->window_ps_per_tick : 0.0,
            (unsigned long long)c->probes,
            (unsigned long long)c->floor_gaps, (long long)c->floor_added_ns, (long long)c->floor_dropped_ns,
            (unsigned long long)c->stall_gaps, (long long)c->stall_dropped_ns, (unsigned long long)c->steal_gaps,
            (long long)c->steal_ns, (unsigned long long)c->steal_syscalls, (int)c->gate_slots,
            (unsigned long long)c->gate_waits, (long long)c->gate_wait_ns, (unsigned long long)c->gate_timeouts);
}

/* Why this run's charged computation may mislead (docs/architecture.md "Warnings"), from the
 * ranks' charging blocks: one line each into buf, separated by '\n'; the number of lines. */
int ms_server_measurement_warnings(const ms_server *s, char *buf, size_t len)
{
    double gaps = 0, woken = 0, raw = 0, woken_raw = 0, wall = 0, desched = 0, misses = 0, base = 0;
    double timeouts = 0, charged = 0, woken_charged = 0, rcomp = 0, stalls = 0, stall_ns = 0;
    double steal = 0;
    double stall_share = 0;   /* the largest share of a rank's virtual time the stall rule did not charge */
    int n = 0, syscall_ranks = 0, slots1 = 0;
    for (int i = 0; i < s->nranks; i++) {
        const ms_msg_charging *c = &s->ranks[i].fin.charging;
        if (!s->ranks[i].finalized || c->method == MS_CHARGING_NONE) continue;
        n++;
        gaps += (double)c->gaps;
        woken += (double)c->woken_gaps;
        raw += (double)c->raw_ns;
        woken_raw += (double)c->woken_raw_ns;
        wall += (double)c->wall_ns;
        desched += (double)c->descheduled_ns;
        misses += (double)c->page_misses;
        if (c->baseline_ns > base) base = (double)c->baseline_ns;
        if (c->method == MS_CHARGING_SYSCALL) syscall_ranks++;
        timeouts += (double)c->gate_timeouts;
        charged += (double)c->raw_ns - (double)c->compensated_ns;   /* a rank's figures: no int64 overflow */
        woken_charged += (double)c->woken_charged_ns;
        rcomp += (double)c->return_comp_ns;
        stalls += (double)c->stall_gaps;
        stall_ns += (double)c->stall_dropped_ns;
        steal += (double)c->steal_ns;
        double t_ns = (double)s->ranks[i].fin.t / 1e3;
        if (t_ns > 0 && (double)c->stall_dropped_ns / t_ns > stall_share) stall_share = (double)c->stall_dropped_ns / t_ns;
        if (c->gate_slots > slots1) slots1 = c->gate_slots;
    }
    int k = 0;
    size_t off = 0;
    if (len) buf[0] = '\0';
#define WARN(...)                                                                                                  \
    do {                                                                                                           \
        if (off < len) off += (size_t)snprintf(buf + off, len - off, __VA_ARGS__);                                \
        if (off < len) off += (size_t)snprintf(buf + off, len - off, "\n");                                        \
        k++;                                                                                                       \
    } while (0)
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].violation[0])
            WARN("%s under a thread level that forbids it (the run's outcome is thread_level): the shim made "
                 "them take turns, but the real MPI was not prepared for it", s->ranks[i].violation);
    if (!n) return k;
    if (wall > 0 && desched / wall > 0.25)
        WARN("the ranks were switched out during %.0f %% of the wall time of their computation: more runnable "
             "threads than cores (ranks, the model server, other jobs); CPU time is charged, but a shared core's "
             "caches and the hypervisor's share make it less reliable",
             100 * desched / wall);
    /* gaps after a switched-out MPI call start on cold caches: compare their mean with the others',
     * and say how much of the charge they are (docs/architecture.md "The cold return path") */
    double share = charged > 0 ? 100 * woken_charged / charged : 0;
    if (gaps - woken >= 10 && woken >= 10 && raw > 0) {
        double excess = woken_raw / woken - (raw - woken_raw) / (gaps - woken);
        if (excess > 0 && excess * woken / raw > 0.05)
            WARN("%.0f of %.0f computation intervals followed an MPI call during which the rank was switched out; "
                 "they took %.0f ns more on average than the others (cold caches), %.0f %% of all computation "
                 "measured; %.0f %% of the computation charged followed a switch (the cold return path's measured "
                 "excess took %.0f us off it)",
                 woken, gaps, excess, 100 * excess * woken / raw, share, rcomp / 1e3);
    } else if (woken >= 10 && woken > 0.9 * gaps && share > 5 && woken_charged / woken < 20000)
        /* short intervals (under 20 us on average): a cold start of ~1 us is more than 5 % of each */
        WARN("%.0f of %.0f computation intervals followed an MPI call during which the rank was switched out, too "
             "few did not to measure what the cold caches cost them: %.0f %% of the computation charged followed a "
             "switch, its cold start charged as computation (%.0f ns per interval charged on average)",
             woken, gaps, share, woken_charged / woken);
    /* the stall rule ("Repeatable small gaps") drops what it takes for the machine's stalls: rare
     * real work between call sites that otherwise do nothing is dropped with them. Said where it
     * could have moved a rank's end by 1 % (an empty loop's stalls beside a CPU-bound job: well
     * under that; tests/shim/progs/rare_work.c's 28 us every 100th iteration: 14 %) */
    if (stalls > 0 && stall_share > 0.01)
        WARN("%.0f interval(s) between call sites that otherwise do nothing measured over shim.gap_noise_max "
             "and were taken for stalls of the machine, charged shim.gap_floor: %.1f us not charged, up to "
             "%.1f %% of a rank's virtual time; rare real work there is lost with them "
             "(shim.gap_noise_max = 0 charges every interval over shim.gap_noise as measured)",
             stalls, stall_ns / 1e3, 100 * stall_share);
    /* steal is left out (docs/architecture.md "Steal"), but a machine whose hypervisor takes a tenth
     * of the time is one where the rest of the measurement (caches, clock rates) is shared too */
    if (raw > 0 && steal / raw > 0.1)
        WARN("the hypervisor ran other guests during %.0f %% of the ranks' computation as measured (steal, %.1f ms): "
             "left out of the charge, as the kernel's CPU-time clock leaves it out; the machine is shared",
             100 * steal / raw, steal / 1e6);
    if (base > 100)
        WARN("a clock reading costs up to %.0f ns (charging baseline): every interval's share of it is estimated, "
             "not measured", base);
    if (timeouts > 0)
        WARN("%.0f wait(s) for a compute slot gave up after shim.compute_slot_timeout with no rank leaving "
             "computation (the ranks holding the slots seemed to wait outside MPI: shared memory, files, untimed "
             "windows); the gate widened to %d slots, and ranks computing together beyond the cores make the "
             "charged CPU time less reliable",
             timeouts, slots1);
    if (syscall_ranks)
        WARN("%d rank(s) read their CPU time by a system call (no perf events: perf_event_paranoid, a container's "
             "seccomp?): short intervals are charged imprecisely", syscall_ranks);
    if (gaps > 0 && misses / gaps > 0.01)
        WARN("%.0f %% of the CPU-time readings fell back to a system call", 100 * misses / gaps);
#undef WARN
    return k;
}

int ms_server_write_report(const ms_server *s, FILE *f)
{
    ms_report_head(f, (const char *const *)s->argv, s->argc, s->nranks,
                   s->drv ? nm_topology_name(ms_driver_topology(s->drv)) : "",
                   s->drv ? nm_network_engine_name(ms_driver_network(s->drv)) : "", s->machine, s->cfg);
    int64_t vmax = 0;
    uint64_t msgs = 0, bytes = 0;
    fprintf(f, ",\n  \"ranks\": [\n");
    for (int i = 0; i < s->nranks; i++) {
        const rank_info *r = &s->ranks[i];
        int64_t end = r->finalized ? r->fin.t : s->drv ? ms_driver_clock(s->drv, i) : 0;
        if (end > vmax) vmax = end;
        const char *state = s->drv ? ms_driver_state_name(ms_driver_state(s->drv, i)) : "never_connected";
        /* a rank that never finalized: its totals at its last PROGRESS (a second old at most) */
        const ms_msg_finalize *fin = r->finalized || !r->has_progress ? &r->fin : &r->progress;
        ms_report_rank rr = {i, r->pid, r->host, r->binding, state, end, fin->compute_ps, fin->mpi_ps,
                             fin->calls, .node = -1};
        if (s->drv) ms_driver_report_rank(s->drv, i, &rr);
        msgs += rr.msgs_sent;
        bytes += rr.bytes_sent;
        ms_report_rank_open(f, &rr);
        for (size_t k = 0; k < r->n_unmodelled; k++) {
            if (k) fputs(", ", f);
            ms_report_str(f, r->unmodelled[k].name);
            fprintf(f, ": %llu", (unsigned long long)r->unmodelled[k].count);
        }
        fputs("}", f);
        /* where the host model placed it (host.ranks_per_node, host.map_by); "host" is the real one */
        ms_report_rank_node(f, &rr);
        if (r->finalized || r->has_progress) {
            write_charging(f, &fin->charging);
            /* its threads: the level it was given, how many called MPI, calls made while another was
             * inside MPI under a lower level; OpenMP regions and joins charged as critical paths */
            static const char *const levels[] = {"single", "funneled", "serialized", "multiple"};
            fprintf(f, ", \"threads\": {\"level\": \"%s\", \"mpi_threads\": %d, \"violations\": %llu, "
                    "\"omp_regions\": %lld, \"critical_path_ps\": %lld}",
                    fin->thread_level >= 0 && fin->thread_level < 4 ? levels[fin->thread_level] : "mpi_init",
                    fin->threads, (unsigned long long)fin->thread_violations, (long long)fin->omp_regions,
                    (long long)fin->critical_path_ps);
        }
        if (!r->finalized && r->has_progress)
            fprintf(f, ", \"totals_as_of_ps\": %lld", (long long)r->progress.t);
        if (r->error[0]) {
            fputs(", \"error\": ", f);
            ms_report_str(f, r->error);
        }
        ms_report_rank_close(f, i + 1 == s->nranks);
    }
    fprintf(f, "  ],\n  \"measurement_warnings\": [");
    char warn[4096];
    int nw = ms_server_measurement_warnings(s, warn, sizeof warn);
    for (char *line = warn, *nl; nw > 0 && (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        fputs(line == warn ? "\n    " : ",\n    ", f);
        ms_report_str(f, line);
    }
    fprintf(f, "%s],\n  \"callsites\": [", nw > 0 ? "\n  " : "");
    /* most virtual time first, as mpiP sorts */
    size_t nsites = 0;
    site_total *sites = gather_sites(s, &nsites);
    size_t *order = malloc(sizeof *order * (nsites ? nsites : 1));
    for (size_t i = 0; order && i < nsites; i++) order[i] = i;
    for (size_t i = 1; order && i < nsites; i++)
        for (size_t j = i; j > 0 && sites[order[j]].time_ps > sites[order[j - 1]].time_ps; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (size_t k = 0; order && k < nsites; k++) {
        const site_total *t = &sites[order[k]];
        fprintf(f, "%s\n    {\"call\": ", k ? "," : "");
        ms_report_str(f, (t->fn >= 0 && (size_t)t->fn < MS_FN_NAME_COUNT) ? ms_fn_names[t->fn] : "?");
        fputs(", \"site\": ", f);
        ms_report_str(f, t->text);
        fprintf(f,
                ", \"calls\": %llu, \"bytes\": %llu, \"time_ps\": %lld, \"ranks\": %d, \"rank_min_ps\": %lld, "
                "\"rank_max_ps\": %lld}",
                (unsigned long long)t->calls, (unsigned long long)t->bytes, (long long)t->time_ps, t->ranks,
                (long long)t->rank_min_ps, (long long)t->rank_max_ps);
    }
    free(order);
    free(sites);
    fprintf(f, "%s],\n  ", nsites ? "\n  " : "");
    char outcome[8192];
    int oc = ms_server_outcome(s, outcome, sizeof outcome);
    ms_report_summary(f, vmax, msgs, bytes, s->wall_end - s->wall_start, (uint64_t)s->events, s->rejected_connections,
                      oc, outcome);
    fprintf(f, ",\n  \"lookahead\": {\"model_round_trips\": %llu, \"negative_polls\": %llu, \"windows\": %llu}",
            (unsigned long long)s->round_trips, (unsigned long long)s->quiet_hints,
            (unsigned long long)s->quiet_given);
    if (s->child_done) {
        int lf = launcher_failed_after_finalize(s);
        fprintf(f, ",\n  \"launcher\": {\"exit_code\": %d",
                WIFEXITED(s->child_status) ? WEXITSTATUS(s->child_status) : 128 + WTERMSIG(s->child_status));
        int code = 0, who = lf ? exit_after_finalize(s, &code) : -1;
        if (who >= 0)
            fprintf(f, ", \"note\": \"every rank reached MPI_Finalize; rank %d then exited with code %d: the program's "
                       "own exit code\"", who, code);
        else if (lf)
            fputs(", \"note\": \"every rank reached MPI_Finalize before the launcher failed: the model's results "
                  "are complete; the failure is in the MPI library's shutdown\"", f);
        fputc('}', f);
    }
    fprintf(f, "\n}\n");
    return ferror(f) ? -1 : 0;
}

int ms_server_write_summary(const ms_server *s, FILE *f, const char *report_path)
{
    int64_t vmax = 0;
    uint64_t msgs = 0, bytes = 0, unmod = 0;
    for (int i = 0; i < s->nranks; i++) {
        const rank_info *r = &s->ranks[i];
        ms_report_rank rr;
        memset(&rr, 0, sizeof rr);
        ms_driver_report_rank(s->drv, i, &rr);
        int64_t end = r->finalized ? r->fin.t : ms_driver_clock(s->drv, i);
        if (end > vmax) vmax = end;
        msgs += rr.msgs_sent;
        bytes += rr.bytes_sent;
        for (size_t k = 0; k < r->n_unmodelled; k++) unmod += r->unmodelled[k].count;
    }
    fprintf(f, "mpisim: %d ranks on %s (%s engine): virtual time %.9f s, %llu messages, %llu bytes; wall %.2f s",
            s->nranks, nm_topology_name(ms_driver_topology(s->drv)), nm_network_engine_name(ms_driver_network(s->drv)),
            vmax * 1e-12,
            (unsigned long long)msgs, (unsigned long long)bytes, s->wall_end - s->wall_start);
    if (unmod) fprintf(f, "; %llu unmodelled calls ran untimed", (unsigned long long)unmod);
    if (report_path) fprintf(f, "; report %s", report_path);
    fputc('\n', f);
    char outcome[8192];
    int code = 0, who = exit_after_finalize(s, &code);
    if (ms_server_outcome(s, outcome, sizeof outcome)) fprintf(f, "mpisim: %s\n", outcome);
    else if (who >= 0 && launcher_failed_after_finalize(s))
        fprintf(f, "mpisim: every rank reached MPI_Finalize and the model's results are complete (outcome ok); "
                   "rank %d then exited with code %d: the exit code is the program's own\n", who, code);
    else if (launcher_failed_after_finalize(s))
        fprintf(f, "mpisim: every rank reached MPI_Finalize and the model's results are complete (outcome ok); the "
                   "launcher exited with %d afterwards, in the MPI library's own shutdown: believe the report's "
                   "numbers; the exit code is the launcher's\n",
                launcher_failed_after_finalize(s));
    char warn[4096];
    if (ms_server_measurement_warnings(s, warn, sizeof warn) > 0)
        for (char *line = warn, *nl; (nl = strchr(line, '\n')); line = nl + 1)
            fprintf(f, "mpisim: warning: %.*s\n", (int)(nl - line), line);
    return 0;
}
