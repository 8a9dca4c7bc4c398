/* `mpisim timeline TRACE.h5 -o FILE.json`: a trace as the Chrome / Perfetto trace-event format
 * (JSON object form, https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
 * one track (thread) per rank, each MPI call a complete slice ("X"), the computation between
 * calls a slice of its own, each point-to-point message a flow arrow ("s" at the send's post,
 * "f" bound to the slice in which its receive completed), MPI_Pcontrol regions as slices on a
 * second track of the rank.
 *
 * Time base: a trace recorded during a co-simulation carries the virtual clock at every call's
 * exit and the computation charged before every call, so slices are in virtual time. A
 * capture-only trace (`mpisim trace`) has no virtual times; its slices are then in the real
 * (CLOCK_MONOTONIC) time of the recording, and the file says so in "otherData". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exit_codes.h"
#include "ms_outfile.h"
#include "ms_trace.h"
#include "netmodel.h"
#include "nm_cmdline.h"
#include "timeline.h"
#include "cm_grow.h"

typedef struct msg_end {
    uint64_t comm;
    int32_t src, dst, tag;   /* world ranks */
    uint64_t seq;            /* order of posting at its rank */
    int64_t t_ps;            /* send: post time; receive: completion time (-1: unknown) */
    int rank;                /* the track it belongs to */
} msg_end;

typedef struct vec {
    msg_end *v;
    size_t n, cap;
} vec;

static int vec_push(vec *a, const msg_end *e)
{
    if (cm_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v, 1024) < 0) return -1;
    a->v[a->n++] = *e;
    return 0;
}

static int cmp_key(const void *pa, const void *pb)
{
    const msg_end *a = pa, *b = pb;
    if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
    if (a->tag != b->tag) return a->tag < b->tag ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* world rank of `r` in communicator `comm` as seen by world rank `self`; -1 if unknown */
static int32_t world_rank(const ms_trace *t, uint64_t comm, int32_t r, int self)
{
    if (r < 0) return -1;
    if (comm == 0) return r < t->nranks ? r : -1;
    if (comm == 1) return r == 0 ? self : -1;
    for (size_t i = 0; i < t->ncomms; i++)
        if (t->comms[i].id == comm) {
            if (r >= t->comms[i].size || t->comms[i].offset < 0 ||
                (size_t)t->comms[i].offset + (size_t)t->comms[i].size > t->nmembers)
                return -1;
            return t->members[t->comms[i].offset + r];
        }
    return -1;
}

/* picoseconds as the format's microseconds, exactly (6 decimals) */
static void put_us(FILE *f, int64_t ps)
{
    if (ps < 0) {
        fputc('-', f);
        ps = -ps;
    }
    fprintf(f, "%lld.%06lld", (long long)(ps / 1000000), (long long)(ps % 1000000));
}

static void slice(FILE *f, int *first, int rank, int tid_off, const char *name, const char *cat, int64_t t0,
                  int64_t t1, uint64_t bytes)
{
    fprintf(f, "%s\n{\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"name\":", *first ? "" : ",", 2 * rank + tid_off);
    nm_json_write_string(f, name);
    fprintf(f, ",\"cat\":\"%s\",\"ts\":", cat);
    put_us(f, t0);
    fputs(",\"dur\":", f);
    put_us(f, t1 > t0 ? t1 - t0 : 0);
    if (bytes) fprintf(f, ",\"args\":{\"bytes\":%llu}", (unsigned long long)bytes);
    fputc('}', f);
    *first = 0;
}

/* The trace's metadata, the process and one thread (track) per rank. */
static void write_header(const ms_trace *t, FILE *f, int virtual_time)
{
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"mpisim timeline\",\"time_base\":", f);
    nm_json_write_string(f, virtual_time ? "virtual (co-simulation)" : "real time of a capture-only recording");
    if (t->nprogram > 0) {
        fputs(",\"program\":", f);
        nm_json_write_string(f, t->program[0]);
    }
    fprintf(f, ",\"nranks\":%d},\n\"traceEvents\":[", t->nranks);
    fprintf(f, "\n{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":");
    nm_json_write_string(f, t->nprogram > 0 ? t->program[0] : "MPI program");
    fputs("}}", f);
    for (int r = 0; r < t->nranks; r++) {
        fprintf(f, ",\n{\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"rank %d\"}}",
                2 * r, r);
        fprintf(f, ",\n{\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
                2 * r, 2 * r);
    }
}

/* A flow from each send to the receive that matched it. */
static void write_flows(FILE *f, vec *sends, vec *recvs)
{
    /* MPI's non-overtaking rule: on one (communicator, source, destination, tag), the k-th send
     * is received by the k-th receive that matched that source and tag */
    qsort(sends->v, sends->n, sizeof *sends->v, cmp_key);
    qsort(recvs->v, recvs->n, sizeof *recvs->v, cmp_key);
    size_t a = 0, b = 0;
    uint64_t flow = 0;
    while (a < sends->n && b < recvs->n) {
        msg_end ka = sends->v[a], kb = recvs->v[b];
        ka.seq = kb.seq = 0;
        int c = cmp_key(&ka, &kb);
        if (c < 0) { a++; continue; }
        if (c > 0) { b++; continue; }
        const msg_end *s = &sends->v[a++], *q = &recvs->v[b++];
        if (q->t_ps < 0) continue;
        flow++;
        fprintf(f, ",\n{\"ph\":\"s\",\"pid\":0,\"tid\":%d,\"id\":%llu,\"name\":\"message\",\"cat\":\"msg\",\"ts\":",
                2 * s->src, (unsigned long long)flow);
        put_us(f, s->t_ps);
        fprintf(f, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"pid\":0,\"tid\":%d,\"id\":%llu,\"name\":\"message\",\"cat\":\"msg\",\"ts\":",
                2 * q->dst, (unsigned long long)flow);
        put_us(f, q->t_ps);
        fputc('}', f);
    }
}

int mpisim_timeline_write(const ms_trace *t, FILE *f, char *err, size_t errlen)
{
    int virtual_time = t->nranks > 0;
    for (int r = 0; r < t->nranks; r++)
        if (!t->ranks[r].cosim) virtual_time = 0;
    int64_t real0 = INT64_MAX;
    if (!virtual_time)
        for (int r = 0; r < t->nranks; r++)
            for (size_t i = 0; i < t->ranks[r].nev; i++) {
                const ms_trace_event *e = &t->ranks[r].ev[i];
                if (e->kind == MS_TRACE_CALL && e->real_entry_ns < real0) real0 = e->real_entry_ns;
            }
    if (real0 == INT64_MAX) real0 = 0;

    vec sends = {0}, recvs = {0};
    int rc = -1, first = 0;   /* the header wrote the first event */
    write_header(t, f, virtual_time);

    for (int r = 0; r < t->nranks; r++) {
        const ms_trace_rank *R = &t->ranks[r];
        int64_t last_exit = 0, entry = 0, pc_start = -1;
        int in_call = 0, pc_level = 0;
        int32_t call_fn = -1;
        uint64_t call_bytes = 0, seq = 0;   /* seq: posting order of the rank's sends */
        size_t recv_first = recvs.n;   /* this rank's receives, for the completion lookup */
        for (size_t i = 0; i < R->nev; i++) {
            const ms_trace_event *e = &R->ev[i];
            switch (e->kind) {
            case MS_TRACE_CALL:
                if (virtual_time) entry = last_exit + (e->compute_ps > 0 ? e->compute_ps : 0);
                else entry = (e->real_entry_ns - real0) * 1000;
                if (entry > last_exit) slice(f, &first, r, 0, "compute", "compute", last_exit, entry, 0);
                in_call = 1;
                call_fn = e->fn;
                call_bytes = 0;
                break;
            case MS_TRACE_EXIT: {
                int64_t exit_t = virtual_time ? e->t_ps : (e->real_exit_ns - real0) * 1000;
                if (exit_t < entry) exit_t = entry;
                if (in_call) slice(f, &first, r, 0, ms_trace_fn_name(t, call_fn), "mpi", entry, exit_t, call_bytes);
                /* receives completed inside this call without a recorded time end at its exit */
                for (size_t k = recv_first; k < recvs.n; k++)
                    if (recvs.v[k].t_ps == -2) recvs.v[k].t_ps = exit_t;
                last_exit = exit_t;
                in_call = 0;
                break;
            }
            case MS_TRACE_ISEND: {
                call_bytes += e->bytes;
                msg_end m = {e->comm, r, world_rank(t, e->comm, e->peer, r), e->tag, seq++,
                             virtual_time ? e->t_ps : entry, r};
                if (m.dst >= 0 && vec_push(&sends, &m) < 0) goto oom;
                break;
            }
            case MS_TRACE_IRECV: {
                call_bytes += e->bytes;
                int32_t src = e->matched_source != MS_TRACE_UNKNOWN ? e->matched_source : e->peer;
                int32_t tag = e->matched_tag != MS_TRACE_UNKNOWN ? e->matched_tag : e->tag;
                /* seq holds the request until the rank is done, to find its completion */
                msg_end m = {e->comm, world_rank(t, e->comm, src, r), r, tag, e->req, -1, r};
                if (virtual_time && e->complete_ps != MS_TRACE_UNKNOWN_TIME) m.t_ps = e->complete_ps;
                if (m.src >= 0 && tag >= 0 && vec_push(&recvs, &m) < 0) goto oom;
                break;
            }
            case MS_TRACE_ICOLL:
                call_bytes += e->bytes;
                break;
            case MS_TRACE_RESUME:
                /* completion of the receives this resume reports: their recorded time, or the end
                 * of the call that completed them (marked -2, filled at TR_EXIT) */
                for (int32_t k = 0; k < e->list_n; k++) {
                    if (e->list_off < 0 || (size_t)(e->list_off + k) >= R->nresults) break;
                    const ms_trace_result *res = &R->results[e->list_off + k];
                    if (!res->completed) continue;
                    for (size_t q = recv_first; q < recvs.n; q++)
                        if (recvs.v[q].seq == res->req && recvs.v[q].t_ps == -1) {
                            recvs.v[q].t_ps = virtual_time ? res->complete_time : -2;
                            break;
                        }
                }
                break;
            case MS_TRACE_PCONTROL: {
                /* MPI_Pcontrol(level): a region runs from a positive level to the next level 0 */
                int64_t at = virtual_time ? e->t_ps : (e->real_entry_ns - real0) * 1000;
                if (e->mode > 0 && pc_level <= 0) pc_start = at;
                if (e->mode <= 0 && pc_level > 0 && pc_start >= 0) {
                    char name[48];
                    snprintf(name, sizeof name, "Pcontrol level %d", pc_level);
                    slice(f, &first, r, 1, name, "pcontrol", pc_start, at, 0);
                    pc_start = -1;
                }
                pc_level = e->mode;
                break;
            }
            default:
                break;
            }
        }
        if (pc_level > 0 && pc_start >= 0) {
            char name[48];
            snprintf(name, sizeof name, "Pcontrol level %d", pc_level);
            slice(f, &first, r, 1, name, "pcontrol", pc_start, last_exit, 0);
        }
        /* back to the posting order for the pairing */
        uint64_t s2 = 0;
        for (size_t k = recv_first; k < recvs.n; k++) recvs.v[k].seq = s2++;
    }

    write_flows(f, &sends, &recvs);
    fputs("\n]}\n", f);
    rc = ferror(f) ? -1 : 0;
    if (rc) snprintf(err, errlen, "write error: %s", strerror(errno));
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    free(sends.v);
    free(recvs.v);
    return rc;
}

int mpisim_timeline_file(const char *trace_path, const char *out_path, char *err, size_t errlen)
{
    char e2[1024] = "";
    ms_trace *t = ms_trace_read_h5(trace_path, e2, sizeof e2);
    if (!t) {
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    /* never through a link; complete, or not in place at all (ms_outfile) */
    ms_outfile out;
    if (ms_outfile_open(&out, out_path, MS_OUT_STDOUT, NULL, err, errlen) < 0) {
        ms_trace_free(t);
        return -2;
    }
    int rc = mpisim_timeline_write(t, out.f, e2, sizeof e2);
    ms_trace_free(t);
    if (rc) {
        ms_outfile_discard(&out);
        snprintf(err, errlen, "%s: %s", out_path, e2);
        return -2;
    }
    return ms_outfile_commit(&out, err, errlen) < 0 ? -2 : 0;
}

static const cm_opt timeline_opts[] = {
    {"output", 'o', "FILE.json", "where the timeline goes (required; - for standard output)"},
    CM_OPT_HELP,
    CM_OPT_END,
};

int mpisim_timeline_main(int argc, char **argv)
{
    const char *trace = NULL, *out = NULL;
    cm_cmdline c;
    cm_cmdline_init(&c, "mpisim timeline", timeline_opts, argc, argv, 0);
    const char *v;
    for (int k; (k = cm_cmdline_next(&c, &v)) != -1;) {
        if (k == 'o') out = v;
        else if (k == 'h') {
            printf("usage: mpisim timeline TRACE.h5 -o FILE.json\n"
                   "Writes the trace in the Chrome/Perfetto trace-event format (open it in ui.perfetto.dev\n"
                   "or chrome://tracing): one track per rank, MPI calls and computation as slices,\n"
                   "point-to-point messages as flow arrows, MPI_Pcontrol regions on a second track.\n"
                   "Times are virtual for traces recorded in a co-simulation (mpisim run --trace), real\n"
                   "for capture-only ones (mpisim trace).\n");
            cm_cmdline_print_options(timeline_opts, stdout);
            return 0;
        } else return 2;
    }
    if (cm_cmdline_operands(&c, 1, 1, "trace") < 0) return 2;
    trace = argv[cm_cmdline_operand(&c)];
    if (!out) {
        fprintf(stderr, "mpisim timeline: say where the timeline goes with -o FILE.json (- for standard output)\n");
        return 2;
    }
    char err[2048];
    int rc = mpisim_timeline_file(trace, out, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "mpisim timeline: %s\n", err);
        return rc == -2 ? MS_EXIT_OUTPUT : MS_EXIT_USAGE;   /* README.md "Exit codes" */
    }
    return 0;
}
