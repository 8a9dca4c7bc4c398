/* The one front-end driver of the MPI layer model: see ms_driver.h. */
#include "ms_driver.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_host.h"
#include "cm_hmap.h"   /* the requests a lenient wait leaves out */
#include "cm_grow.h"

/* A lane: a rank's thread 0 (lane = rank) or one of its other threads (lanes nranks..). */
typedef struct drank {
    int rank, thread;
    ms_rank_state state;
    int64_t clock;
    int wait_fn, wait_flags, wait_mode;   /* wait_mode -1: a probe */
    const uint64_t *rec_done;    /* the waiting call's recorded completions (lenient waits) */
    size_t nrec_done;
    uint64_t last_coll_comm;     /* the group a synchronising wait belongs to */
    int64_t held_t;
    ms_req_result held_result;
    char *stall_text;            /* the stall watchdog: where it waits in the real MPI (NULL: not stalled) */
    int exit_known, exit_code;   /* its process exited on its own (exit(), a return from main) with this code */
} drank;

typedef struct comm_size {
    uint64_t id;
    int size;
} comm_size;

struct ms_driver {
    const nm_config *cfg;
    nm_topology *topo;
    nm_network *net;
    ms_model *model;
    int n;                       /* ranks */
    drank *r;                    /* lanes: ranks' thread 0 first (lane = rank), then other threads as seen */
    int nl;
    size_t capl;
    int **tl;                    /* per rank: the lanes of its threads 1.. (NULL: none yet) */
    int *ntl;
    int count[MS_RANK_IDLE + 1];     /* lanes in each state: the horizon and stall tests at no cost per lane */
    int first_dead;              /* the rank that died first (DEAD), or -1 */
    int stopping;                /* ms_driver_stop: ranks that end now were ended by the front end */
    int64_t hmin;                /* least clock of the running ranks, valid unless hstale */
    int hstale;
    comm_size *comms;
    size_t ncomms, cap_comms;
    ms_driver_ops ops;
    void *user;
    const char *const *fn_names;
    size_t nfn;
    int lenient;
    int out_of_memory;           /* a lenient wait's record failed: reported by the next advance */
    int nstalled;                /* lanes with a stall_text */
    /* lenient: requests the model reported complete while the recorded run had not completed them
     * yet, by (rank, id); kept until the call in which the recording completed them, after which
     * the trace never names them again */
    cm_hmap done;
    uint64_t done_peak;
    uint64_t *ids;
    size_t ids_cap;
    ms_driver_log_fn log;
    void *log_user;
    ms_resolution rv[64];
};

#define fail nm_fail   /* message into the caller's buffer, -1 (netmodel.h: one helper for all) */

/* ---- the call log ----------------------------------------------------------------------------- */

static void logline(const ms_driver *d, int rank, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logline(const ms_driver *d, int rank, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    d->log(d->log_user, rank, line);
}

/* A list as "[a,b,...]", or "n=N fnv=H" when long (the line stays short, the digest exact). */
static const char *list_text(char *out, size_t len, const uint64_t *v, size_t n)
{
    if (n > 16) {
        uint64_t h = 14695981039346656037ULL;
        for (size_t i = 0; i < n; i++)
            for (int b = 0; b < 64; b += 8) h = (h ^ ((v[i] >> b) & 0xff)) * 1099511628211ULL;
        snprintf(out, len, "n=%zu fnv=%016" PRIx64, n, h);
        return out;
    }
    size_t o = (size_t)snprintf(out, len, "[");
    for (size_t i = 0; i < n && o < len; i++) o += (size_t)snprintf(out + o, len - o, "%s%" PRIu64, i ? "," : "", v[i]);
    if (o < len) snprintf(out + o, len - o, "]");
    return out;
}

static void log_results(const ms_driver *d, int rank, int64_t t, const ms_req_result *res, size_t n)
{
    /* each result folded to one number per field, so that a long wait stays one line */
    uint64_t *v = malloc(sizeof *v * (n * 7 + 1));
    if (!v) return;
    for (size_t i = 0; i < n; i++) {
        v[7 * i] = res[i].req;
        v[7 * i + 1] = (uint64_t)res[i].completed;
        v[7 * i + 2] = (uint64_t)(int64_t)res[i].source;
        v[7 * i + 3] = (uint64_t)(int64_t)res[i].tag;
        v[7 * i + 4] = res[i].bytes;
        v[7 * i + 5] = (uint64_t)res[i].complete_time;
        v[7 * i + 6] = (uint64_t)res[i].cancelled;
    }
    char l[512];
    logline(d, rank, "resume t=%" PRId64 " results=%s", t, list_text(l, sizeof l, v, n * 7));
    free(v);
}

/* ---- ranks, resumes, synchronising groups ------------------------------------------------------ */

static int comm_members(const ms_driver *d, uint64_t id)
{
    if (id == MS_COMM_WORLD) return d->n;
    if (id == MS_COMM_SELF) return 1;
    for (size_t i = 0; i < d->ncomms; i++)
        if (d->comms[i].id == id) return d->comms[i].size;
    return -1;
}

/* Wildcard senders the model has decided for this rank: to the front end before any resume of
 * the rank, and after every step of the model (a peer's real transfer may wait for them). */
static void take_resolutions(ms_driver *d, int rank)
{
    size_t k;
    while ((k = ms_model_take_resolutions(d->model, rank, d->rv, 64)) > 0)
        for (size_t i = 0; i < k; i++) {
            if (d->log)
                logline(d, rank, "resolve req=%" PRIu64 " source=%d tag=%d bytes=%" PRIu64, d->rv[i].req,
                        d->rv[i].source, d->rv[i].tag, d->rv[i].bytes);
            if (d->ops.resolve) d->ops.resolve(d->user, rank, &d->rv[i]);
        }
}

/* Every change of a state or a clock goes through these two, which keep the horizon's minimum
 * (replay resumes one rank at a time among hundreds: no scan of all ranks per resume). */
static void set_state(ms_driver *d, drank *r, ms_rank_state s)
{
    if (r->state == MS_RANK_RUNNING && s != MS_RANK_RUNNING && r->clock == d->hmin) d->hstale = 1;
    if (s == MS_RANK_RUNNING && r->state != MS_RANK_RUNNING && r->clock < d->hmin) d->hmin = r->clock;
    d->count[r->state]--;
    d->count[s]++;
    r->state = s;
    if (!d->count[MS_RANK_RUNNING]) {
        d->hmin = NM_TIME_NEVER;
        d->hstale = 0;
    }
}

static void set_clock(ms_driver *d, drank *r, int64_t t)
{
    if (r->state == MS_RANK_RUNNING) {
        if (t < d->hmin) d->hmin = t;
        else if (r->clock == d->hmin && t != r->clock) d->hstale = 1;
    }
    r->clock = t;
}

static void resume(ms_driver *d, int lane, int64_t t, const ms_req_result *res, size_t n)
{
    drank *r = &d->r[lane];
    int rank = r->rank;
    take_resolutions(d, rank);
    set_clock(d, r, t);   /* the model never resumes a rank before the time it blocked */
    set_state(d, r, MS_RANK_RUNNING);
    if (d->log) {
        if (r->thread) logline(d, rank, "thread %d", r->thread);
        log_results(d, rank, t, res, n);
    }
    if (d->ops.resume) d->ops.resume(d->user, rank, r->thread, t, res, n);
}

/* The lane of a rank's thread, -1 if not seen. */
static int lane_find(const ms_driver *d, int rank, int thread)
{
    if (thread <= 0) return rank;
    return thread <= d->ntl[rank] ? d->tl[rank][thread - 1] : -1;
}

/* The lane of a rank's thread, made (parked, at t) when first seen; -1: out of memory or bad. */
static int lane_get(ms_driver *d, int rank, int thread, int64_t t)
{
    int l = lane_find(d, rank, thread);
    if (l >= 0) return l;
    if (thread < 0 || thread > MS_MODEL_MAX_THREADS) return -1;
    if (thread > d->ntl[rank]) {
        int *v = realloc(d->tl[rank], sizeof *v * (size_t)thread);
        if (!v) return -1;
        for (int i = d->ntl[rank]; i < thread; i++) v[i] = -1;
        d->tl[rank] = v;
        d->ntl[rank] = thread;
    }
    /* capl starts at nranks (>= 1), so `first` is never used */
    if (cm_grow((void **)&d->r, &d->capl, (size_t)d->nl + 1, sizeof *d->r, 1) < 0) return -1;
    l = d->nl++;
    drank *r = &d->r[l];
    memset(r, 0, sizeof *r);
    r->rank = rank;
    r->thread = thread;
    r->wait_fn = -1;
    r->clock = t;
    r->state = MS_RANK_UNTIMED;   /* parked until it rejoins */
    d->count[MS_RANK_UNTIMED]++;
    d->tl[rank][thread - 1] = l;
    return l;
}

/* Communicator creation: all members leave at the time the last one finishes, so that none
 * is inside the real (blocking) creation call while the model still needs its clock. */
static void release_sync_group(ms_driver *d, uint64_t comm)
{
    int members = comm_members(d, comm);
    int held = 0;
    int64_t tmax = 0;
    for (int i = 0; i < d->nl; i++)
        if (d->r[i].state == MS_RANK_HELD && d->r[i].last_coll_comm == comm) {
            held++;
            if (d->r[i].held_t > tmax) tmax = d->r[i].held_t;
        }
    if (held < members) return;
    for (int i = 0; i < d->nl; i++)
        if (d->r[i].state == MS_RANK_HELD && d->r[i].last_coll_comm == comm) {
            ms_req_result res = d->r[i].held_result;
            res.complete_time = tmax;
            resume(d, i, tmax, &res, 1);
        }
}

/* Whether id is among the recorded run's completions of a wait (ids in the wait's order, so
 * *cursor walks them once per call). */
static int recorded_done(const uint64_t *ids, size_t n, uint64_t id, size_t *cursor)
{
    for (size_t j = *cursor; j < n; j++)
        if (ids[j] == id) {
            *cursor = j + 1;
            return 1;
        }
    return 0;
}

static void on_model_resume(void *user, int rank, int thread, ms_time_t t, const ms_req_result *results, size_t n)
{
    ms_driver *d = user;
    int lane = lane_find(d, rank, thread);
    if (lane < 0) return;
    drank *r = &d->r[lane];
    if (r->state != MS_RANK_BLOCKED) return;
    if (d->lenient && r->wait_mode >= 0 && r->wait_mode != MS_TEST_PEEK) {
        size_t cur = 0;
        for (size_t i = 0; i < n; i++)
            if (results[i].completed && results[i].req &&
                !recorded_done(r->rec_done, r->nrec_done, results[i].req, &cur) &&
                cm_hmap_put(&d->done, (uint64_t)rank, results[i].req, (void *)1) != 0)
                d->out_of_memory = 1;
        if (d->done.n > d->done_peak) d->done_peak = d->done.n;
    }
    if (r->wait_flags & MS_EV_FLAG_SYNC) {
        set_state(d, r, MS_RANK_HELD);
        r->held_t = t;
        memset(&r->held_result, 0, sizeof r->held_result);
        if (n) r->held_result = results[0];
        set_clock(d, r, t);
        release_sync_group(d, r->last_coll_comm);
    } else {
        resume(d, lane, t, results, n);
    }
}

/* ---- lifecycle --------------------------------------------------------------------------------- */

ms_driver *ms_driver_create(const nm_config *cfg, int nranks, char *err, size_t errlen)
{
    if (!cfg || nranks < 1) {
        fail(err, errlen, nranks < 1 ? "the job needs at least one rank" : "ms_driver_create: no configuration");
        return NULL;
    }
    ms_driver *d = calloc(1, sizeof *d);
    if (!d) {
        fail(err, errlen, "out of memory");
        return NULL;
    }
    d->cfg = cfg;
    d->n = nranks;
    const char *topo = nm_config_string(cfg, "network.topology");
    char spec[1024];
    int need_hosts = ms_host_topology_hosts(cfg, nranks);   /* nodes x NIC ports */
    if (!topo || !strcmp(topo, "auto")) snprintf(spec, sizeof spec, "auto:%d", need_hosts);
    else snprintf(spec, sizeof spec, "%s", topo);
    d->topo = nm_topology_load(spec, cfg, err, errlen);
    if (!d->topo) goto fail;
    if (nm_topology_hosts(d->topo) < need_hosts) {
        fail(err, errlen, "topology %s has %d hosts, the job's %d ranks need %d (host.ranks_per_node, host.ports)",
             nm_topology_name(d->topo), nm_topology_hosts(d->topo), nranks, need_hosts);
        goto fail;
    }
    d->net = nm_network_create(cfg, d->topo, err, errlen);
    if (!d->net) goto fail;
    d->model = ms_model_create(cfg, d->net, nranks, NULL, err, errlen);
    if (!d->model) goto fail;
    if (nm_config_lookup_error(cfg)) {   /* the model or the host read a key never registered: a code defect */
        fail(err, errlen, "the MPI model: %s", nm_config_lookup_error(cfg));
        goto fail;
    }
    ms_model_set_resume(d->model, on_model_resume, d);
    d->r = calloc((size_t)nranks, sizeof *d->r);
    d->tl = calloc((size_t)nranks, sizeof *d->tl);
    d->ntl = calloc((size_t)nranks, sizeof *d->ntl);
    if (!d->r || !d->tl || !d->ntl) {
        fail(err, errlen, "out of memory");
        goto fail;
    }
    d->nl = nranks;
    d->capl = (size_t)nranks;
    for (int i = 0; i < nranks; i++) {
        d->r[i].wait_fn = -1;
        d->r[i].rank = i;
    }
    d->count[MS_RANK_UNCONNECTED] = nranks;
    d->hmin = NM_TIME_NEVER;
    d->first_dead = -1;
    return d;
fail:
    ms_driver_destroy(d);
    return NULL;
}

void ms_driver_destroy(ms_driver *d)
{
    if (!d) return;
    ms_model_destroy(d->model);
    nm_network_destroy(d->net);
    nm_topology_destroy(d->topo);
    cm_hmap_free(&d->done);
    for (int i = 0; d->r && i < d->nl; i++) free(d->r[i].stall_text);
    for (int i = 0; d->tl && i < d->n; i++) free(d->tl[i]);
    free(d->tl);
    free(d->ntl);
    free(d->ids);
    free(d->comms);
    free(d->r);
    free(d);
}

void ms_driver_set_ops(ms_driver *d, const ms_driver_ops *ops, void *user)
{
    memset(&d->ops, 0, sizeof d->ops);
    if (ops) d->ops = *ops;
    d->user = user;
}

void ms_driver_set_fn_names(ms_driver *d, const char *const *names, size_t n)
{
    d->fn_names = names;
    d->nfn = names ? n : 0;
}

void ms_driver_set_lenient_waits(ms_driver *d, int on) { d->lenient = on != 0; }

void ms_driver_early_done(const ms_driver *d, uint64_t *now, uint64_t *peak)
{
    *now = d->done.n;
    *peak = d->done_peak;
}

void ms_driver_set_call_log(ms_driver *d, ms_driver_log_fn fn, void *user)
{
    d->log = fn;
    d->log_user = user;
}

void ms_driver_connect(ms_driver *d, int rank)
{
    set_clock(d, &d->r[rank], 0);
    set_state(d, &d->r[rank], MS_RANK_RUNNING);
}

static void clear_stall(ms_driver *d, drank *r)
{
    free(r->stall_text);
    r->stall_text = NULL;
    d->nstalled--;
}

void ms_driver_rank_stalled(ms_driver *d, int rank, const char *where) { ms_driver_thread_stalled(d, rank, 0, where); }

void ms_driver_thread_stalled(ms_driver *d, int rank, int thread, const char *where)
{
    int lane = lane_find(d, rank, thread);
    if (lane < 0) return;
    drank *r = &d->r[lane];
    if (r->stall_text) clear_stall(d, r);
    if (!where || !where[0]) return;
    size_t n = strlen(where) + 1;
    r->stall_text = malloc(n);
    if (!r->stall_text) return;   /* out of memory: the watchdog does not see this rank */
    memcpy(r->stall_text, where, n);
    d->nstalled++;
}

static ms_rank_state rank_ended(ms_driver *d, int rank, int from_outside)
{
    drank *r = &d->r[rank];
    if (r->stall_text) clear_stall(d, r);
    if (r->state == MS_RANK_FINISHED || r->state == MS_RANK_DEAD || r->state == MS_RANK_STOPPED) return r->state;
    /* the first rank to end on its own died; Open MPI's launcher then ends the others, and a front
     * end that stops the run ends them too: those did not fail themselves */
    int died = !from_outside && !d->stopping && d->first_dead < 0;
    for (int t = 0; t < d->ntl[rank]; t++) {   /* its threads end with it */
        drank *x = d->tl[rank][t] >= 0 ? &d->r[d->tl[rank][t]] : NULL;
        if (!x || x->state == MS_RANK_FINISHED || x->state == MS_RANK_DEAD || x->state == MS_RANK_STOPPED) continue;
        if (x->stall_text) clear_stall(d, x);
        set_state(d, x, died ? MS_RANK_DEAD : MS_RANK_STOPPED);
    }
    set_state(d, r, died ? MS_RANK_DEAD : MS_RANK_STOPPED);
    if (died) d->first_dead = rank;
    if (d->log) logline(d, rank, "finalize t=%" PRId64 " (gone)", r->clock);
    ms_model_finalize(d->model, rank, r->clock);
    return r->state;
}

ms_rank_state ms_driver_rank_gone(ms_driver *d, int rank) { return rank_ended(d, rank, 0); }

ms_rank_state ms_driver_rank_stopped(ms_driver *d, int rank) { return rank_ended(d, rank, 1); }

int ms_driver_first_dead(const ms_driver *d) { return d->first_dead; }

void ms_driver_rank_exit_code(ms_driver *d, int rank, int code)
{
    d->r[rank].exit_known = 1;
    d->r[rank].exit_code = code;
}

int ms_driver_rank_exited(const ms_driver *d, int rank, int *code)
{
    if (!d->r[rank].exit_known) return 0;
    *code = d->r[rank].exit_code;
    return 1;
}

int ms_driver_gone_text(const ms_driver *d, int rank, char *buf, size_t len)
{
    int code;
    if (ms_driver_rank_exited(d, rank, &code))
        return snprintf(buf, len, "rank %d exited with code %d after MPI_Init without calling MPI_Finalize (the "
                                  "program's own exit, not a crash)", rank, code);
    return snprintf(buf, len, "rank %d ended without MPI_Finalize (crashed or killed)", rank);
}

void ms_driver_absolve(ms_driver *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->r[i].state == MS_RANK_DEAD) set_state(d, &d->r[i], MS_RANK_STOPPED);
    d->first_dead = -1;
}

void ms_driver_stop(ms_driver *d) { d->stopping = 1; }

/* ---- events ------------------------------------------------------------------------------------ */

static int refused(char *err, size_t errlen, const char *what, const char *merr)
{
    return fail(err, errlen, "the model refused %s: %.900s", what, merr);
}

/* The requests of a wait, without those the model already reported complete (lenient waits). */
static const uint64_t *wait_ids(ms_driver *d, int rank, const ms_driver_event *e, size_t *n)
{
    *n = e->nlist;
    if (!d->lenient || !d->done.n) return e->list;
    if (e->nlist > d->ids_cap) {
        uint64_t *q = realloc(d->ids, sizeof *q * e->nlist);
        if (!q) return NULL;
        d->ids = q;
        d->ids_cap = e->nlist;
    }
    size_t k = 0, cur = 0;
    for (size_t i = 0; i < e->nlist; i++) {
        if (!cm_hmap_get(&d->done, (uint64_t)rank, e->list[i])) d->ids[k++] = e->list[i];
        else if (recorded_done(e->recorded_done, e->nrecorded_done, e->list[i], &cur))
            cm_hmap_del(&d->done, (uint64_t)rank, e->list[i]);
    }
    *n = k;
    return d->ids;
}

/* A new communicator: the model's, and its size for the driver's own checks. */
static int apply_comm_add(ms_driver *d, int rank, const ms_driver_event *e, char *err, size_t errlen)
{
    char merr[512], l[512];
    merr[0] = 0;
    if (e->nmembers < 0 || (e->nmembers && !e->members)) return fail(err, errlen, "a communicator without members");
    int small[64] = {0};
    int *w = e->nmembers <= 64 ? small : malloc(sizeof(int) * (size_t)e->nmembers);
    if (!w) return refused(err, errlen, "a communicator", "out of memory");
    for (int32_t i = 0; i < e->nmembers; i++) w[i] = e->members[i];
    if (d->log) {
        uint64_t *v = malloc(sizeof *v * ((size_t)e->nmembers + 1));
        for (int32_t i = 0; v && i < e->nmembers; i++) v[i] = (uint64_t)(int64_t)e->members[i];
        logline(d, rank, "comm_add comm=%" PRIu64 " members=%s", e->comm,
                v ? list_text(l, sizeof l, v, (size_t)e->nmembers) : "?");
        free(v);
    }
    int rc = ms_model_comm_add(d->model, e->comm, e->nmembers, w, merr, sizeof merr);
    if (w != small) free(w);
    if (comm_members(d, e->comm) < 0) {
        if (cm_grow((void **)&d->comms, &d->cap_comms, d->ncomms + 1, sizeof *d->comms, 16) < 0)
            return refused(err, errlen, "a communicator", "out of memory");
        d->comms[d->ncomms].id = e->comm;
        d->comms[d->ncomms].size = e->nmembers;
        d->ncomms++;
    }
    return rc < 0 ? refused(err, errlen, "a communicator", merr) : 0;
}

/* A wait (or a rejoin after an untimed call): the rank blocks until the model resumes it. */
static int apply_wait(ms_driver *d, int rank, int lane, const ms_driver_event *e, char *err, size_t errlen)
{
    drank *r = &d->r[lane];
    char merr[512], l[512];
    merr[0] = 0;
    if (e->flags & MS_EV_FLAG_REJOIN) {
        /* back from an untimed call: the model may have moved on meanwhile (the rank did not
         * hold the horizon). It goes on at the model's time, which runs ahead of the network's
         * (posts, collective steps and resumes are the model's own events), and at least at
         * the network's next instant, so that its first send is not clamped. */
        int64_t now = ms_model_now(d->model), net = nm_network_now(d->net);
        if (net > now) now = net;
        if (d->log) logline(d, rank, "rejoin t=%" PRId64, e->t);
        resume(d, lane, e->t > now ? e->t : now, NULL, 0);
        return 0;
    }
    set_clock(d, r, e->t);
    set_state(d, r, MS_RANK_BLOCKED);
    r->wait_fn = e->fn;
    r->wait_flags = e->flags;
    r->wait_mode = e->mode;
    r->rec_done = e->recorded_done;
    r->nrec_done = e->recorded_done ? e->nrecorded_done : 0;
    size_t n;
    const uint64_t *ids = wait_ids(d, rank, e, &n);
    if (!ids && n) return refused(err, errlen, "a wait", "out of memory");
    if (d->log)
        logline(d, rank, "wait t=%" PRId64 " mode=%d flags=%d reqs=%s", e->t, e->mode, e->flags,
                list_text(l, sizeof l, ids, n));
    if (ms_model_wait(d->model, rank, e->t, (ms_wait_mode)e->mode, n, ids, merr, sizeof merr) < 0)
        return refused(err, errlen, "a wait", merr);
    return 0;
}

static void apply_finalize(ms_driver *d, int rank, drank *r, const ms_driver_event *e)
{
    set_clock(d, r, e->t);
    set_state(d, r, MS_RANK_FINISHED);
    for (int t = 0; t < d->ntl[rank]; t++)   /* its threads post nothing after it */
        if (d->tl[rank][t] >= 0 && d->r[d->tl[rank][t]].state != MS_RANK_FINISHED) {
            if (d->r[d->tl[rank][t]].stall_text) clear_stall(d, &d->r[d->tl[rank][t]]);
            set_state(d, &d->r[d->tl[rank][t]], MS_RANK_FINISHED);
        }
    if (d->log) logline(d, rank, "finalize t=%" PRId64, e->t);
    ms_model_finalize(d->model, rank, e->t);
}

int ms_driver_apply(ms_driver *d, int rank, const ms_driver_event *e, char *err, size_t errlen)
{
    int lane = rank;
    if (e->thread || d->ntl[rank]) {   /* MPI_THREAD_MULTIPLE: the thread's own lane and the model's waiter */
        lane = lane_get(d, rank, e->thread, e->t);
        if (lane < 0) return fail(err, errlen, "rank %d: thread %d: too many threads or out of memory", rank, e->thread);
        if (ms_model_set_thread(d->model, rank, e->thread) < 0)
            return fail(err, errlen, "rank %d: thread %d: too many threads or out of memory", rank, e->thread);
        if (d->log && e->thread) logline(d, rank, "thread %d", e->thread);
    }
    drank *r = &d->r[lane];
    char merr[512], l[512];   /* not cleared: this is the path of every event */
    merr[0] = 0;
    if (r->stall_text) clear_stall(d, r);   /* it moves */
    switch (e->kind) {
    case MS_EV_ISEND:
        set_clock(d, r, e->t);
        if (d->log)
            logline(d, rank, "isend t=%" PRId64 " req=%" PRIu64 " comm=%" PRIu64 " dst=%d tag=%d bytes=%" PRIu64
                    " mode=%d buf=%" PRIx64, e->t, e->req, e->comm, e->peer, e->tag, e->bytes, e->mode, e->buf);
        if (ms_model_isend(d->model, rank, e->t, e->req, e->comm, e->peer, e->tag, e->bytes, (ms_send_mode)e->mode,
                           merr, sizeof merr) < 0)
            return refused(err, errlen, "a send", merr);
        /* a send the model completed at once (to MPI_PROC_NULL) has no buffer to register */
        if (e->buf) ms_model_buffer(d->model, rank, e->req, e->buf);
        return 0;
    case MS_EV_IRECV:
        set_clock(d, r, e->t);
        if (d->log)
            logline(d, rank, "irecv t=%" PRId64 " req=%" PRIu64 " comm=%" PRIu64 " src=%d tag=%d bytes=%" PRIu64
                    " notify=%d buf=%" PRIx64, e->t, e->req, e->comm, e->peer, e->tag, e->bytes,
                    (e->flags & MS_EV_FLAG_NOTIFY) != 0, e->buf);
        if (ms_model_irecv(d->model, rank, e->t, e->req, e->comm, e->peer, e->tag, e->bytes, merr, sizeof merr) < 0)
            return refused(err, errlen, "a receive", merr);
        if ((e->flags & MS_EV_FLAG_NOTIFY) && ms_model_irecv_notify(d->model, rank, e->req) < 0)
            return refused(err, errlen, "a receive", "no such receive to notify");
        if (e->buf) ms_model_buffer(d->model, rank, e->req, e->buf);
        return 0;
    case MS_EV_RMA:
        set_clock(d, r, e->t);
        if (d->log)
            logline(d, rank, "rma t=%" PRId64 " req=%" PRIu64 " comm=%" PRIu64 " target=%d kind=%d bytes=%" PRIu64
                    " out=%" PRIu64, e->t, e->req, e->comm, e->peer, e->mode, e->bytes, e->bytes_out);
        if (ms_model_rma(d->model, rank, e->t, e->req, e->comm, e->peer, (ms_rma_kind)e->mode, e->bytes, e->bytes_out,
                         merr, sizeof merr) < 0)
            return refused(err, errlen, "a one-sided operation", merr);
        return 0;
    case MS_EV_CANCEL:
        set_clock(d, r, e->t);
        if (d->log) logline(d, rank, "cancel t=%" PRId64 " req=%" PRIu64, e->t, e->req);
        if (ms_model_cancel(d->model, rank, e->t, e->req, merr, sizeof merr) < 0)
            return refused(err, errlen, "a cancel", merr);
        return 0;
    case MS_EV_FREE:
        set_clock(d, r, e->t);
        if (d->log) logline(d, rank, "forget req=%" PRIu64, e->req);
        if (ms_model_forget(d->model, rank, e->req, merr, sizeof merr) < 0)
            return refused(err, errlen, "a request free", merr);
        return 0;
    case MS_EV_ICOLL: {
        set_clock(d, r, e->t);
        r->last_coll_comm = e->comm;
        ms_coll_args a = {(ms_coll_kind)e->mode, e->peer, e->bytes, e->nlist ? e->list : NULL, e->nlist ? e->nlist : 0,
                          e->flags};
        if (d->log)
            logline(d, rank, "icoll t=%" PRId64 " req=%" PRIu64 " comm=%" PRIu64 " kind=%d root=%d bytes=%" PRIu64 " counts=%s inter=%d",
                    e->t, e->req, e->comm, e->mode, e->peer, e->bytes, list_text(l, sizeof l, e->list, e->nlist),
                    e->flags);
        if (ms_model_icoll(d->model, rank, e->t, e->req, e->comm, &a, merr, sizeof merr) < 0)
            return refused(err, errlen, "a collective", merr);
        return 0;
    }
    case MS_EV_COMM_ADD:
        return apply_comm_add(d, rank, e, err, errlen);
    case MS_EV_WAIT:
        return apply_wait(d, rank, lane, e, err, errlen);
    case MS_EV_PROBE:
        set_clock(d, r, e->t);
        set_state(d, r, MS_RANK_BLOCKED);
        r->wait_fn = e->fn;
        r->wait_flags = 0;
        r->wait_mode = -1;
        if (d->log)
            logline(d, rank, "probe t=%" PRId64 " comm=%" PRIu64 " src=%d tag=%d blocking=%d", e->t, e->comm, e->peer,
                    e->tag, e->mode);
        if (ms_model_probe(d->model, rank, e->t, e->comm, e->peer, e->tag, e->mode, merr, sizeof merr) < 0)
            return refused(err, errlen, "a probe", merr);
        return 0;
    case MS_EV_CLOCK:
        set_clock(d, r, e->t);
        return 0;
    case MS_EV_UNTIMED:
        set_state(d, r, MS_RANK_UNTIMED);
        return 0;
    case MS_EV_IDLE:
        set_clock(d, r, e->t);
        set_state(d, r, MS_RANK_IDLE);
        return 0;
    case MS_EV_THREAD_END:
        if (!e->thread) return fail(err, errlen, "rank %d: thread 0 cannot end before MPI_Finalize", rank);
        set_clock(d, r, e->t);
        set_state(d, r, MS_RANK_FINISHED);
        return 0;
    case MS_EV_FINALIZE:
        apply_finalize(d, rank, r, e);
        return 0;
    default:
        return fail(err, errlen, "an event of unknown kind %d", e->kind);
    }
}

/* ---- driving ----------------------------------------------------------------------------------- */

static int64_t least_running_clock(const ms_driver *d)
{
    int64_t h = NM_TIME_NEVER;
    for (int i = 0; d->count[MS_RANK_RUNNING] && i < d->nl; i++)
        if (d->r[i].state == MS_RANK_RUNNING && d->r[i].clock < h) h = d->r[i].clock;
    return h;
}

static int64_t horizon(ms_driver *d)
{
    if (d->count[MS_RANK_UNCONNECTED]) return 0;
    if (d->hstale) {
        d->hmin = least_running_clock(d);
        d->hstale = 0;
    }
    return d->hmin;
}

int64_t ms_driver_horizon(const ms_driver *d)
{
    return d->count[MS_RANK_UNCONNECTED] ? 0 : least_running_clock(d);
}

int64_t ms_driver_quiet_until(const ms_driver *d, int rank, int64_t t, const uint64_t *reqs, size_t n, int probe,
                              int64_t *lat)
{
    *lat = 0;
    if (rank < 0 || rank >= d->n || d->r[rank].state != MS_RANK_RUNNING) return t;
    if (d->ntl[rank]) return t;   /* its other threads' posts are not its own to bound */
    int64_t q = ms_model_quiet_until(d->model, rank, t, reqs, n, probe, lat);
    if (q <= t) return t;
    /* what the other ranks may still do: post from their clock on (a running or held rank), from
     * the model's present (one back from an untimed call, ms_model_now), from 0 (not yet
     * started); a blocked rank acts after its resume, which a pending model event brings */
    int64_t now = ms_model_now(d->model);
    for (int i = 0; i < d->nl && q > t; i++) {
        if (i == rank) continue;   /* its own posts: the shim shortens the window (*lat) */
        int64_t from;
        switch (d->r[i].state) {
        case MS_RANK_RUNNING: case MS_RANK_HELD: from = d->r[i].clock; break;
        case MS_RANK_UNTIMED: case MS_RANK_IDLE: from = now > d->r[i].clock ? now : d->r[i].clock; break;
        case MS_RANK_UNCONNECTED: from = 0; break;
        default: continue;
        }
        if (from + *lat < q) q = from + *lat;
    }
    return q > t ? q : t;
}

static int engine_failed(ms_driver *d, char *err, size_t errlen)
{
    /* a network deadlock (the routing's): netmodel words it (routing, topology, the checker's
     * cycle, what to use instead), and it is a deadlock like the program's (2) */
    char none[1];
    if (nm_network_deadlock_reason(d->net, err && errlen ? err : none, err && errlen ? errlen : sizeof none)) return 2;
    const char *why = ms_model_last_error(d->model, NULL);
    return fail(err, errlen, "the network engine '%s' failed: %s", nm_network_engine_name(d->net),
                why ? why : "no reason given");
}

int ms_driver_advance(ms_driver *d, char *err, size_t errlen)
{
    /* the model stops early after resuming a rank (that rank may post from its resume time
     * on); go again with the new horizon while it has work below it */
    for (int guard = 0; guard < 1000000; guard++) {
        int64_t h = horizon(d);
        int64_t next = ms_model_next_time(d->model);
        if (d->log && next < h) logline(d, -1, "run_until %" PRId64, h);
        if (ms_model_run_until(d->model, h) < 0) return engine_failed(d, err, errlen);
        if (d->out_of_memory) return fail(err, errlen, "out of memory (recording completed requests)");
        /* decided senders go out at once when someone waits for them (the server); else they
         * are taken before the rank's resume */
        for (int i = 0; d->ops.resolve && i < d->n; i++) take_resolutions(d, i);
        int64_t h2 = horizon(d), next2 = ms_model_next_time(d->model);
        if (next2 >= h2) break;
        if (h2 == h && next2 == next) break; /* no progress possible now */
    }
    return ms_driver_stuck(d);
}

int ms_driver_stuck(const ms_driver *d)
{
    if (d->count[MS_RANK_UNCONNECTED]) return 0;
    int running = d->count[MS_RANK_RUNNING] + d->count[MS_RANK_UNTIMED];
    if (!running && ms_driver_any_waiting(d) && ms_model_next_time(d->model) == NM_TIME_NEVER) return 1;
    if (!d->nstalled) return 0;
    /* the stall watchdog: ranks wait inside the real MPI where nothing completes, the others wait in
     * the model or have ended, and the model has nothing to do below the horizon the stalled ranks
     * hold: nothing will ever move (a stalled rank that moves again clears its stall) */
    for (int i = 0; i < d->nl; i++)
        if ((d->r[i].state == MS_RANK_RUNNING || d->r[i].state == MS_RANK_UNTIMED) && !d->r[i].stall_text) return 0;
    return ms_model_next_time(d->model) >= least_running_clock(d);
}

static const char *fn_name(const ms_driver *d, int fn)
{
    return fn >= 0 && (size_t)fn < d->nfn && d->fn_names[fn] ? d->fn_names[fn] : "?";
}

int ms_driver_describe_stall(const ms_driver *d, char *buf, size_t len, const char *(*site)(void *user, int rank),
                             void *user)
{
    if (!len) return 1;
    size_t off = 0;
    /* ranks that died leave the others waiting for them: that is the cause, not a deadlock */
    int dead = d->first_dead;
    if (dead >= 0) {
        off += (size_t)ms_driver_gone_text(d, dead, buf + off, len - off);
        if (off < len)
            off += (size_t)snprintf(buf + off, len - off, " at %.6f us; the other ranks wait for it", d->r[dead].clock * 1e-6);
    }
    else if (d->nstalled)
        off += (size_t)snprintf(buf + off, len - off,
                                "stall: ranks wait inside the real MPI and nothing has completed there for %g s "
                                "(shim.stall_timeout), while the others wait in the model or have ended and virtual "
                                "time cannot move",
                                nm_config_has(d->cfg, "shim.stall_timeout")
                                    ? (double)nm_config_int(d->cfg, "shim.stall_timeout") * 1e-12 : 0.0);
    else
        off += (size_t)snprintf(buf + off, len - off, "deadlock in virtual time: every rank waits and nothing is in flight");
    for (int i = 0; i < d->nl && off < len; i++) {
        const drank *r = &d->r[i];
        char who[48];
        if (r->thread) snprintf(who, sizeof who, "rank %d thread %d", r->rank, r->thread);
        else snprintf(who, sizeof who, "rank %d", r->rank);
        if (r->stall_text) {
            off += (size_t)snprintf(buf + off, len - off, "\n  %s at %.6f us: %s", who, r->clock * 1e-6, r->stall_text);
            continue;
        }
        if (r->state == MS_RANK_IDLE) {
            off += (size_t)snprintf(buf + off, len - off, "\n  %s at %.6f us waits outside MPI for another thread of its "
                                    "rank", who, r->clock * 1e-6);
            continue;
        }
        if (r->state != MS_RANK_BLOCKED && r->state != MS_RANK_HELD) continue;
        char what[512] = "";
        if (d->ntl[r->rank]) ms_model_set_thread(d->model, r->rank, r->thread);
        ms_model_describe_wait(d->model, r->rank, what, sizeof what);
        /* the call sites: the rank's answer (the shim names each blocked thread's) */
        const char *s = site && !r->thread ? site(user, r->rank) : NULL;
        off += (size_t)snprintf(buf + off, len - off, "\n  %s at %.6f us in %s%s%s%s%s", who, r->clock * 1e-6,
                                fn_name(d, r->wait_fn), what[0] ? ": " : "", what, site && !r->thread ? "; " : "",
                                site && !r->thread ? (s && s[0] ? s : "call site unknown") : "");
    }
    return dead >= 0 ? 2 : d->nstalled ? 3 : 1;
}

/* ---- queries ----------------------------------------------------------------------------------- */

int ms_driver_nranks(const ms_driver *d) { return d->n; }
int ms_driver_threads(const ms_driver *d, int rank) { return 1 + d->ntl[rank]; }
ms_rank_state ms_driver_state(const ms_driver *d, int rank) { return d->r[rank].state; }
int64_t ms_driver_thread_clock(const ms_driver *d, int rank, int thread)
{
    int l = lane_find(d, rank, thread);
    return l < 0 ? 0 : d->r[l].clock;
}

ms_rank_state ms_driver_thread_state(const ms_driver *d, int rank, int thread)
{
    int l = lane_find(d, rank, thread);
    return l < 0 ? MS_RANK_UNCONNECTED : d->r[l].state;
}
int64_t ms_driver_clock(const ms_driver *d, int rank) { return d->r[rank].clock; }
int ms_driver_wait_fn(const ms_driver *d, int rank) { return d->r[rank].wait_fn; }
int64_t ms_driver_isend_cost(const ms_driver *d, uint64_t bytes) { return ms_model_isend_cost(d->model, bytes); }
int64_t ms_driver_irecv_cost(const ms_driver *d, uint64_t bytes) { return ms_model_irecv_cost(d->model, bytes); }
int64_t ms_driver_poll_cost(const ms_driver *d)
{
    ms_model_params mp;
    ms_model_get_params(d->model, &mp);
    return mp.poll_cost;
}
int ms_driver_local_send(const ms_driver *d, double *copy_ps_per_byte, int *recv_moves_cpu)
{
    return ms_model_local_send(d->model, copy_ps_per_byte, recv_moves_cpu);
}
int64_t ms_driver_cpu_free(const ms_driver *d, int rank) { return ms_model_cpu_free(d->model, rank); }
int64_t ms_driver_next_time(const ms_driver *d) { return ms_model_next_time(d->model); }
int64_t ms_driver_now(const ms_driver *d) { return ms_model_now(d->model); }
const char *ms_driver_model_error(const ms_driver *d, uint64_t *count) { return ms_model_last_error(d->model, count); }

void ms_driver_report_rank(const ms_driver *d, int rank, ms_report_rank *r)
{
    ms_rank_stats st;
    memset(&st, 0, sizeof st);
    ms_model_rank_stats(d->model, rank, &st);
    r->msgs_sent = st.msgs_sent;
    r->bytes_sent = st.bytes_sent;
    r->msgs_recv = st.msgs_recv;
    r->bytes_recv = st.bytes_recv;
    r->collectives = st.coll_calls;
    r->rma_ops = st.rma_ops;
    r->rma_bytes = st.rma_bytes;
    r->node = ms_model_rank_node(d->model, rank);
}

nm_network *ms_driver_network(const ms_driver *d) { return d->net; }
const nm_topology *ms_driver_topology(const ms_driver *d) { return d->topo; }

int ms_driver_waiting(const ms_driver *d, int rank)
{
    return d->r[rank].state == MS_RANK_BLOCKED || d->r[rank].state == MS_RANK_HELD;
}

int ms_driver_any_waiting(const ms_driver *d) { return d->count[MS_RANK_BLOCKED] + d->count[MS_RANK_HELD] > 0; }

const char *ms_driver_state_name(ms_rank_state s)
{
    switch (s) {
    case MS_RANK_FINISHED: return "finalized";
    case MS_RANK_DEAD: return "died";
    case MS_RANK_STOPPED: return "stopped";
    case MS_RANK_BLOCKED:
    case MS_RANK_HELD: return "blocked";
    case MS_RANK_RUNNING: return "running";
    case MS_RANK_UNTIMED: return "untimed";
    case MS_RANK_IDLE: return "idle";
    default: return "never_connected";
    }
}
