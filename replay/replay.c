/* Offline replay of an mpisim trace through the MPI layer model (see ms_replay.h). */
#define _GNU_SOURCE
#include "ms_replay.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpisim.h"
#include "ms_json.h"
#include "ms_model.h"
#include "ms_host.h"
#include "ms_util.h"
#include "protocol.h"
#include "report.h"

#ifndef MPISIM_VERSION
#define MPISIM_VERSION "unknown"
#endif

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && len) vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- configuration -------------------------------------------------------------------------- */

const char *ms_replay_profile_path(void)
{
    static char buf[8192];
    if (nm_config_search_path(buf, sizeof buf) != 0) return NULL;
    return buf;
}

static int apply_set(nm_config *cfg, const char *assign, char *err, size_t errlen)
{
    static const char *shorts[] = {"unmodelled", "compute", "cpu_factor"};
    for (size_t i = 0; i < sizeof shorts / sizeof shorts[0]; i++) {
        size_t n = strlen(shorts[i]);
        if (!strncmp(assign, shorts[i], n) && assign[n] == '=') {
            char full[1024];
            snprintf(full, sizeof full, "shim.%s", assign);
            return nm_config_set(cfg, full, "--set", err, errlen);
        }
    }
    return nm_config_set(cfg, assign, "--set", err, errlen);
}

/* Apply the recorded configuration {"key": {"value": v, ...}, ...} (or {"key": v}). */
static int apply_recorded(nm_config *cfg, const char *json, char *warnings, size_t wlen, char *err, size_t errlen)
{
    char jerr[256];
    ms_json *j = ms_json_parse(json, strlen(json), jerr, sizeof jerr);
    if (!j) return fail(err, errlen, "the trace's recorded configuration: %s", jerr);
    int rc = 0;
    size_t wo = warnings && wlen ? strlen(warnings) : 0;
    for (size_t i = 0; j->type == MS_JSON_OBJ && i < j->n; i++) {
        const char *key = j->keys[i];
        const ms_json *v = &j->items[i];
        if (v->type == MS_JSON_OBJ) v = ms_json_get(v, "value");
        if (!v || (v->type != MS_JSON_STR && v->type != MS_JSON_NUM)) continue;
        if (!nm_config_has(cfg, key)) {
            if (warnings && wo < wlen)
                wo += (size_t)snprintf(warnings + wo, wlen - wo, "%sthe trace's configuration key %s is unknown to "
                                       "this build (ignored)", wo ? "\n" : "", key);
            continue;
        }
        size_t n = strlen(key) + strlen(v->str) + 2;
        char *a = malloc(n);
        if (!a) {
            rc = fail(err, errlen, "out of memory");
            break;
        }
        snprintf(a, n, "%s=%s", key, v->str);
        char e2[512];
        if (nm_config_set(cfg, a, "trace", e2, sizeof e2) < 0) {
            rc = fail(err, errlen, "the trace's recorded configuration: %s", e2);
            free(a);
            break;
        }
        free(a);
    }
    if (rc == 0 && j->type != MS_JSON_OBJ) rc = fail(err, errlen, "the trace's recorded configuration is not an object");
    ms_json_free(j);
    return rc;
}

nm_config *ms_replay_config(const ms_trace *t, const char *profile, const char *const *sets, int nsets,
                            char *warnings, size_t wlen, char *err, size_t errlen)
{
    if (warnings && wlen) warnings[0] = 0;
    nm_config *cfg = nm_config_create();
    if (!cfg) {
        fail(err, errlen, "out of memory");
        return NULL;
    }
    if (ms_register_all_keys(cfg, err, errlen) < 0) goto fail;
    if (profile || !t || !t->config_json) {
        if (nm_config_load_profile(cfg, profile ? profile : "default", ms_replay_profile_path(), err, errlen) < 0)
            goto fail;
    } else if (apply_recorded(cfg, t->config_json, warnings, wlen, err, errlen) < 0) {
        goto fail;
    }
    for (int i = 0; i < nsets; i++)
        if (apply_set(cfg, sets[i], err, errlen) < 0) goto fail;
    return cfg;
fail:
    nm_config_destroy(cfg);
    return NULL;
}

/* The recorded value of a key, as text ("" if the trace has no configuration or no such key). */
static void recorded_value(const ms_trace *t, const char *key, char *out, size_t len)
{
    out[0] = 0;
    if (!t->config_json) return;
    ms_json *j = ms_json_parse(t->config_json, strlen(t->config_json), NULL, 0);
    if (!j) return;
    const ms_json *v = ms_json_get(j, key);
    if (v && v->type == MS_JSON_OBJ) v = ms_json_get(v, "value");
    if (v && (v->type == MS_JSON_STR || v->type == MS_JSON_NUM)) snprintf(out, len, "%s", v->str);
    ms_json_free(j);
}

/* ---- the replay engine ---------------------------------------------------------------------- */

enum { RS_RUNNABLE = 0, RS_BLOCKED, RS_HELD, RS_DONE, RS_DEAD };

typedef struct rrank {
    const ms_trace_rank *tr;
    size_t pc;
    int64_t clock;
    int state;
    int queued;
    int wait_flags;
    int wait_fn;
    int wait_mode;
    size_t wait_ev;              /* index of the WAIT/PROBE event it blocks in */
    uint64_t last_coll_comm;
    int64_t held_t;
    int64_t compute;
    uint64_t calls, unmodelled;
    int64_t call_entry;
    int finalized;
    int64_t fin_t;
} rrank;

typedef struct replay {
    const ms_trace *t;
    const ms_replay_opts *o;
    ms_model *model;
    nm_network *net;
    nm_topology *topo;
    int n;
    rrank *r;
    int *queue;                  /* runnable ranks (FIFO ring of n) */
    size_t qhead, qlen;
    int compute_mode;            /* 0 as recorded, 1 none, 2 recompute from raw ns with factor */
    double cpu_factor, cpu_scale;
    ms_replay_result *res;
    int stopped;
    char stop[1024];
    ms_resolution rv[64];
    /* requests the model has reported complete, by (rank, id): a capture-only trace may test a
     * request again that completed earlier in the replay's timing than in the real run */
    ms_hmap done;
    uint64_t *ids;
    size_t ids_cap;
} replay;

static void enqueue(replay *p, int rank)
{
    rrank *r = &p->r[rank];
    if (r->queued) return;
    r->queued = 1;
    p->queue[(p->qhead + p->qlen) % (size_t)p->n] = rank;
    p->qlen++;
}

static int comm_size(const replay *p, uint64_t id)
{
    if (id == MS_COMM_WORLD_ID) return p->n;
    if (id == MS_COMM_SELF_ID) return 1;
    for (size_t i = 0; i < p->t->ncomms; i++)
        if (p->t->comms[i].id == id) return p->t->comms[i].size;
    return -1;
}

/* Compare a resume with the recorded one (co-simulation traces). */
static void check_resume(replay *p, int rank, int64_t t)
{
    rrank *r = &p->r[rank];
    const ms_trace_rank *tr = r->tr;
    if (!tr->cosim) return;
    for (size_t k = r->wait_ev + 1; k < tr->nev; k++) {
        const ms_trace_event *e = &tr->ev[k];
        if (e->kind == MS_MSG_RESUME) {
            p->res->resumes_checked++;
            if (e->t_ps != t) {
                if (!p->res->resumes_differ)
                    snprintf(p->res->first_difference, sizeof p->res->first_difference,
                             "rank %d event %zu (%s): recorded resume at %lld ps, replay %lld ps", rank, r->wait_ev,
                             ms_trace_fn_name(p->t, tr->ev[r->wait_ev].fn), (long long)e->t_ps, (long long)t);
                p->res->resumes_differ++;
            }
            return;
        }
        if (e->kind != MS_MSG_RESOLVE && e->kind != MS_MSG_CLOCK && e->kind != MS_MSG_CALLSITE) return;
    }
}

static void resume_rank(replay *p, int rank, int64_t t)
{
    rrank *r = &p->r[rank];
    check_resume(p, rank, t);
    size_t k;
    while ((k = ms_model_take_resolutions(p->model, rank, p->rv, 64)) > 0) (void)k;
    if (t > r->clock) r->clock = t;
    r->state = RS_RUNNABLE;
    p->res->resumes++;
    enqueue(p, rank);
}

static void release_sync_group(replay *p, uint64_t comm)
{
    int members = comm_size(p, comm);
    int held = 0;
    int64_t tmax = 0;
    for (int i = 0; i < p->n; i++)
        if (p->r[i].state == RS_HELD && p->r[i].last_coll_comm == comm) {
            held++;
            if (p->r[i].held_t > tmax) tmax = p->r[i].held_t;
        }
    if (held < members) return;
    for (int i = 0; i < p->n; i++)
        if (p->r[i].state == RS_HELD && p->r[i].last_coll_comm == comm) resume_rank(p, i, tmax);
}

static void model_failed(replay *p, int rank, size_t k, const char *what, const char *err);

static void on_resume(void *user, int rank, ms_time_t t, const ms_req_result *results, size_t n)
{
    replay *p = user;
    rrank *r = &p->r[rank];
    if (r->state != RS_BLOCKED) return;
    if (r->wait_mode != MS_TEST_PEEK)
        for (size_t i = 0; i < n; i++)
            if (results[i].completed && results[i].req &&
                ms_hmap_put(&p->done, (uint64_t)rank, results[i].req, (void *)1) != 0)
                model_failed(p, rank, r->wait_ev, "a wait", "out of memory");
    if (r->wait_flags & MS_WAIT_FLAG_SYNC) {
        r->state = RS_HELD;
        r->held_t = t;
        r->clock = t > r->clock ? t : r->clock;
        release_sync_group(p, r->last_coll_comm);
    } else {
        resume_rank(p, rank, t);
    }
}

static int64_t compute_of(const replay *p, const ms_trace_event *e)
{
    int64_t c;
    if (p->compute_mode == 1) return 0;
    if (p->compute_mode == 2) c = (int64_t)((double)e->raw_compute_ns * 1000.0 * p->cpu_factor + 0.5);
    else c = e->compute_ps;
    if (p->cpu_scale != 1.0) c = (int64_t)((double)c * p->cpu_scale + 0.5);
    return c < 0 ? 0 : c;
}

static void model_failed(replay *p, int rank, size_t k, const char *what, const char *err)
{
    if (p->stopped) return;
    p->stopped = 1;
    snprintf(p->stop, sizeof p->stop, "rank %d event %zu: the model refused %s: %.900s", rank, k, what, err);
}

/* Play one rank until it blocks, finishes or its records end. */
__attribute__((noinline)) static void play(replay *p, int rank)
{
    rrank *r = &p->r[rank];
    const ms_trace_rank *tr = r->tr;
    const int recorded = p->o->wildcards == MS_WILDCARDS_RECORDED;
    char err[512];
    while (r->pc < tr->nev && !p->stopped) {
        size_t k = r->pc++;
        const ms_trace_event *e = &tr->ev[k];
        p->res->events++;
        switch (e->kind) {
        case MS_MSG_TR_CALL: {
            int64_t c = compute_of(p, e);
            r->clock += c;
            r->compute += c;
            r->calls++;
            r->call_entry = r->clock;
            break;
        }
        case MS_MSG_TR_EXIT:
            if (p->o->timeline)
                fprintf(p->o->timeline, "%d,%llu,%s,%lld,%lld\n", rank, (unsigned long long)r->calls,
                        ms_trace_fn_name(p->t, e->fn), (long long)r->call_entry, (long long)r->clock);
            break;
        case MS_MSG_ISEND:
            if (ms_model_isend(p->model, rank, r->clock, e->req, e->comm, e->peer, e->tag, e->bytes,
                               (ms_send_mode)e->mode, err, sizeof err) < 0)
                model_failed(p, rank, k, "a send", err);
            else if (e->callsite)
                ms_model_buffer(p->model, rank, e->req, e->callsite);
            r->clock += ms_model_isend_cost(p->model, e->bytes);
            break;
        case MS_MSG_IRECV: {
            int src = e->peer, tag = e->tag;
            if (recorded && (src == MS_ANY_SOURCE || tag == MS_ANY_TAG) && e->matched_source >= 0) {
                src = e->matched_source;
                tag = e->matched_tag;
            }
            if (ms_model_irecv(p->model, rank, r->clock, e->req, e->comm, src, tag, e->bytes, err, sizeof err) < 0)
                model_failed(p, rank, k, "a receive", err);
            else if (e->callsite)
                ms_model_buffer(p->model, rank, e->req, e->callsite);
            r->clock += ms_model_irecv_cost(p->model, e->bytes);
            break;
        }
        case MS_MSG_CANCEL:
            if (ms_model_cancel(p->model, rank, r->clock, e->req, err, sizeof err) < 0)
                model_failed(p, rank, k, "a cancel", err);
            break;
        case MS_MSG_FREE:
            if (ms_model_forget(p->model, rank, e->req, err, sizeof err) < 0)
                model_failed(p, rank, k, "a request free", err);
            break;
        case MS_MSG_ICOLL: {
            ms_coll_args a = {(ms_coll_kind)e->mode, e->peer, e->bytes, e->list_n > 0 ? tr->lists + e->list_off : NULL,
                              e->list_n > 0 ? (size_t)e->list_n : 0};
            r->last_coll_comm = e->comm;
            if (ms_model_icoll(p->model, rank, r->clock, e->req, e->comm, &a, err, sizeof err) < 0)
                model_failed(p, rank, k, "a collective", err);
            break;
        }
        case MS_MSG_COMM_ADD: {
            const ms_trace_comm *c = &p->t->comms[e->list_off];
            const int32_t *m32 = p->t->members + c->offset;
            int small[64];
            int *w = c->size <= 64 ? small : malloc(sizeof(int) * (size_t)c->size);
            if (!w) {
                model_failed(p, rank, k, "a communicator", "out of memory");
                break;
            }
            for (int32_t i = 0; i < c->size; i++) w[i] = m32[i];
            if (ms_model_comm_add(p->model, c->id, c->size, w, err, sizeof err) < 0)
                model_failed(p, rank, k, "a communicator", err);
            if (w != small) free(w);
            break;
        }
        case MS_MSG_WAIT: {
            r->state = RS_BLOCKED;
            r->wait_flags = e->flags;
            r->wait_fn = e->fn;
            r->wait_mode = e->mode;
            r->wait_ev = k;
            /* leave out what the model has already reported complete (see replay.done) */
            const uint64_t *ids = tr->lists + e->list_off;
            size_t n = 0;
            if ((size_t)e->list_n > p->ids_cap) {
                uint64_t *q = realloc(p->ids, sizeof *q * (size_t)e->list_n);
                if (!q) {
                    model_failed(p, rank, k, "a wait", "out of memory");
                    return;
                }
                p->ids = q;
                p->ids_cap = (size_t)e->list_n;
            }
            for (int32_t i = 0; i < e->list_n; i++)
                if (!ms_hmap_get(&p->done, (uint64_t)rank, ids[i])) p->ids[n++] = ids[i];
            if (ms_model_wait(p->model, rank, r->clock, (ms_wait_mode)e->mode, n, p->ids, err, sizeof err) < 0)
                model_failed(p, rank, k, "a wait", err);
            if (r->state == RS_BLOCKED || r->state == RS_HELD) return;
            break;
        }
        case MS_MSG_PROBE: {
            int src = e->peer, tag = e->tag;
            if (recorded && (src == MS_ANY_SOURCE || tag == MS_ANY_TAG) && e->matched_source >= 0) {
                src = e->matched_source;
                tag = e->matched_tag;
            }
            r->state = RS_BLOCKED;
            r->wait_flags = 0;
            r->wait_fn = e->fn;
            r->wait_ev = k;
            if (ms_model_probe(p->model, rank, r->clock, e->comm, src, tag, e->mode, err, sizeof err) < 0)
                model_failed(p, rank, k, "a probe", err);
            if (r->state == RS_BLOCKED) return;
            break;
        }
        case MS_MSG_FINALIZE:
            r->finalized = 1;
            r->fin_t = r->clock;
            r->state = RS_DONE;
            ms_model_finalize(p->model, rank, r->clock);
            return;
        case MS_MSG_UNMODELLED: {
            const char *text = tr->text + e->list_off;
            if (!strncmp(text, "FATAL ", 6) || !strncmp(text, "ABORT ", 6)) {
                if (!p->stopped) {
                    p->stopped = 1;
                    snprintf(p->stop, sizeof p->stop, "rank %d: %.900s (recorded)", rank, text + 6);
                }
            } else {
                r->unmodelled++;
            }
            break;
        }
        default: /* TR_EXIT, CLOCK, RESUME, RESOLVE, CALLSITE: the recording's, not inputs */
            break;
        }
    }
    if (r->pc >= tr->nev && r->state == RS_RUNNABLE) {
        /* the records end without MPI_Finalize: the rank was killed (or its file truncated) */
        r->state = RS_DEAD;
        ms_model_finalize(p->model, rank, r->clock);
    }
}

int ms_replay_run(const ms_trace *t, const nm_config *cfg, const ms_replay_opts *opts, ms_replay_result *res,
                  char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    ms_replay_opts defaults = {1.0, MS_WILDCARDS_RECORDED, NULL};
    if (!opts) opts = &defaults;
    replay p;
    memset(&p, 0, sizeof p);
    p.t = t;
    p.o = opts;
    p.n = t->nranks;
    p.res = res;
    p.cpu_scale = opts->cpu_scale >= 0 ? opts->cpu_scale : 1.0;
    int rc = -1;
    double w0 = wall_now();
    if (ms_trace_validate(t, "trace", err, errlen) < 0) return -1;

    /* computation: as recorded, unless the configuration changes shim.compute / shim.cpu_factor */
    char rec[64];
    const char *cm = nm_config_string(cfg, "shim.compute");
    recorded_value(t, "shim.compute", rec, sizeof rec);
    if (cm && !strcmp(cm, "none") && strcmp(rec, "none")) p.compute_mode = 1;
    recorded_value(t, "shim.cpu_factor", rec, sizeof rec);
    p.cpu_factor = nm_config_double(cfg, "shim.cpu_factor");
    if (p.compute_mode == 0 && rec[0] && strtod(rec, NULL) != p.cpu_factor) p.compute_mode = 2;

    const char *topo = nm_config_string(cfg, "network.topology");
    char spec[1024];
    int need_hosts = ms_host_topology_hosts(cfg, p.n);   /* nodes x NIC ports */
    if (!topo || !strcmp(topo, "auto")) snprintf(spec, sizeof spec, "auto:%d", need_hosts);
    else snprintf(spec, sizeof spec, "%s", topo);
    p.topo = nm_topology_load(spec, cfg, err, errlen);
    if (!p.topo) goto out;
    if (nm_topology_hosts(p.topo) < need_hosts) {
        fail(err, errlen, "topology %s has %d hosts, the trace's %d ranks need %d (host.ranks_per_node, host.ports)",
             nm_topology_name(p.topo), nm_topology_hosts(p.topo), p.n, need_hosts);
        goto out;
    }
    p.net = nm_network_create(cfg, p.topo, err, errlen);
    if (!p.net) goto out;
    p.model = ms_model_create(cfg, p.net, p.n, NULL, err, errlen);
    if (!p.model) goto out;
    ms_model_set_resume(p.model, on_resume, &p);
    if (opts->timeline) fprintf(opts->timeline, "rank,call,fn,entry_ps,exit_ps\n");
    snprintf(res->topology, sizeof res->topology, "%s", nm_topology_name(p.topo));
    snprintf(res->engine, sizeof res->engine, "%s", nm_network_engine_name(p.net));
    p.r = calloc((size_t)p.n, sizeof *p.r);
    p.queue = calloc((size_t)p.n, sizeof *p.queue);
    res->ranks = calloc((size_t)p.n, sizeof *res->ranks);
    if (!p.r || !p.queue || !res->ranks) {
        fail(err, errlen, "out of memory");
        goto out;
    }
    res->nranks = p.n;
    for (int i = 0; i < p.n; i++) {
        p.r[i].tr = &t->ranks[i];
        enqueue(&p, i);
    }
    res->setup_s = wall_now() - w0;

    for (;;) {
        while (p.qlen && !p.stopped) {
            int i = p.queue[p.qhead];
            p.qhead = (p.qhead + 1) % (size_t)p.n;
            p.qlen--;
            p.r[i].queued = 0;
            play(&p, i);
        }
        if (p.stopped) break;
        /* every rank is blocked, held or finished: H = min clock of running ranks = never */
        int blocked = 0;
        for (int i = 0; i < p.n && !blocked; i++) blocked = p.r[i].state == RS_BLOCKED || p.r[i].state == RS_HELD;
        if (!blocked) break;
        if (ms_model_next_time(p.model) == NM_TIME_NEVER) {
            size_t off = (size_t)snprintf(res->outcome_text, sizeof res->outcome_text,
                                          "deadlock in virtual time: every rank waits and nothing is in flight");
            for (int i = 0; i < p.n && off < sizeof res->outcome_text; i++) {
                if (p.r[i].state != RS_BLOCKED && p.r[i].state != RS_HELD) continue;
                char what[256] = "";
                ms_model_describe_wait(p.model, i, what, sizeof what);
                off += (size_t)snprintf(res->outcome_text + off, sizeof res->outcome_text - off,
                                        "\n  rank %d at %.6f us in %s%s%s", i, p.r[i].clock * 1e-6,
                                        ms_trace_fn_name(t, p.r[i].wait_fn), what[0] ? ": " : "", what);
            }
            res->outcome = 1;
            break;
        }
        if (ms_model_run_until(p.model, NM_TIME_NEVER) < 0) {
            p.stopped = 1;
            snprintf(p.stop, sizeof p.stop, "the engine failed");
        }
    }
    if (p.stopped && res->outcome == 0) {
        res->outcome = 2;
        snprintf(res->outcome_text, sizeof res->outcome_text, "%s", p.stop);
    }
    const char *me = ms_model_last_error(p.model, &res->model_errors);
    if (me && res->outcome == 0) {
        res->outcome = 2;
        snprintf(res->outcome_text, sizeof res->outcome_text, "the model reported %llu errors, the last: %s",
                 (unsigned long long)res->model_errors, me);
    }
    double sum = 0;
    for (int i = 0; i < p.n; i++) {
        rrank *r = &p.r[i];
        ms_replay_rank_result *o = &res->ranks[i];
        ms_rank_stats st;
        memset(&st, 0, sizeof st);
        ms_model_rank_stats(p.model, i, &st);
        o->virtual_end_ps = r->finalized ? r->fin_t : r->clock;
        o->compute_ps = r->compute;
        o->mpi_ps = o->virtual_end_ps - r->compute;
        o->calls = r->calls;
        o->msgs_sent = st.msgs_sent;
        o->bytes_sent = st.bytes_sent;
        o->msgs_recv = st.msgs_recv;
        o->bytes_recv = st.bytes_recv;
        o->collectives = st.coll_calls;
        o->node = ms_model_rank_node(p.model, i);
        o->unmodelled = r->unmodelled;
        o->status = r->state == RS_DONE ? MS_RR_FINALIZED
                    : r->state == RS_DEAD ? MS_RR_DIED
                    : (r->state == RS_BLOCKED || r->state == RS_HELD) ? MS_RR_BLOCKED : MS_RR_RUNNING;
        for (size_t k = r->tr->nev; k-- > 0;)
            if (r->tr->ev[k].kind == MS_MSG_FINALIZE) {
                o->recorded_end_known = r->tr->cosim;
                o->recorded_end_ps = r->tr->ev[k].t_ps;
                break;
            }
        if (o->virtual_end_ps > res->virtual_time_ps) res->virtual_time_ps = o->virtual_end_ps;
        sum += (double)o->virtual_end_ps;
        res->msgs_sent += st.msgs_sent;
        res->bytes_sent += st.bytes_sent;
        res->collectives += st.coll_calls;
    }
    res->mean_end_ps = (int64_t)llround(sum / p.n);
    rc = 0;
out:
    res->wall_s = wall_now() - w0;
    free(p.r);
    free(p.queue);
    free(p.ids);
    ms_hmap_free(&p.done);
    ms_model_destroy(p.model);
    nm_network_destroy(p.net);
    nm_topology_destroy(p.topo);
    if (rc < 0) ms_replay_result_free(res);
    return rc;
}

void ms_replay_result_free(ms_replay_result *res)
{
    if (!res) return;
    free(res->ranks);
    res->ranks = NULL;
    res->nranks = 0;
}

/* ---- report --------------------------------------------------------------------------------- */

static const char *status_name(int s)
{
    switch (s) {
    case MS_RR_FINALIZED: return "finalized";
    case MS_RR_DIED: return "died";
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
                             o->bytes_recv, o->collectives};
        ms_report_rank_open(f, &rr);
        if (o->unmodelled) fprintf(f, "\"(recorded)\": %llu", (unsigned long long)o->unmodelled);
        fputs("}", f);
        fprintf(f, ", \"node\": %d", o->node);
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
