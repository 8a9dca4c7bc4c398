/* Offline replay of an mpisim trace (see ms_replay.h): reads the trace and feeds its events to the
 * driver the co-simulation server uses (libmpisim/driver). */
#define _GNU_SOURCE
#include "replay_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ms_driver.h"
#include <jansson.h>
#include "ms_report.h"
#include "ms_charge.h"
#include "cm_grow.h"

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the replay engine ---------------------------------------------------------------------- */

/* A rank of the trace: where it is in its records and its clock as the records rebuild it.
 * States, synchronising groups, the horizon and the model calls are the driver's, as online. */
typedef struct rrank {
    /* what play() touches per record first, then the window's first fields: one or two lines */
    size_t pc;
    size_t valid_to;             /* its records before this one are validated (ensure_valid) */
    size_t nev;                  /* its records in the trace */
    int64_t clock;               /* the time of its next event: recorded computation, the model's costs */
    int64_t compute;
    uint64_t calls;
    int64_t call_entry;
    int queued;
    int cosim;
    ms_trace_window w;           /* its records in memory: all of them, or a stretch read from the stream */
    size_t block;                /* streamed: records per stretch read (aligned to it) */
    size_t wait_ev;              /* index of the WAIT/PROBE event it blocks in */
    uint64_t unmodelled;
    int finalized;
    int stopped;                  /* its records end at a recorded stop (a signal, the model server) */
    char stop_why[96];
    int64_t fin_t;
    uint64_t *rec_done;          /* the blocking wait's recorded completions (ms_driver_event) */
    size_t rec_done_cap;
    size_t resume_for;           /* rec_resume is of the WAIT/PROBE at resume_for - 1 (0: none yet) */
    int64_t rec_resume;          /* the recorded resume after it, MS_TRACE_UNKNOWN_TIME if none */
    int32_t wait_fn;             /* that WAIT/PROBE's MPI function */
    size_t fin_at;               /* streamed: 1 + index of its last FINALIZE seen (0: none) */
    int64_t fin_rec_t;
} rrank;

/* How replay charges a record's computation. */
typedef enum {
    COMPUTE_AS_RECORDED,         /* the charge the run recorded */
    COMPUTE_NONE,                /* nothing (shim.compute = none) */
    COMPUTE_RECHARGED            /* the raw measured ns under another shim.cpu_factor */
} replay_compute;

typedef struct replay {
    const ms_trace *t;
    const ms_replay_opts *o;
    ms_driver *drv;
    int n;
    rrank *r;
    int *queue;                  /* runnable ranks (FIFO ring of n) */
    size_t qhead, qlen;
    replay_compute compute_mode;
    double cpu_factor, cpu_scale;
    ms_replay_result *res;
    int stopped;
    char stop[1024];
    int invalid;                 /* stopped at a record that fails ms_trace_validate_events: stop says which */
    ms_trace_stream *src;        /* NULL: the trace's records are in memory */
    int read_failed;             /* the stream could not read a stretch: read_err says which */
    char read_err[1024];
    size_t held;                 /* bytes of the ranks' windows */
    struct untimed { char name[64]; uint64_t count; } *untimed;   /* the untimed calls' names */
    size_t nuntimed, capuntimed;
} replay;

/* An untimed call of the recording (its record's text: the name, NUL, the call site). */
static void note_untimed(replay *p, const char *text)
{
    size_t i = 0;
    while (i < p->nuntimed && strncmp(p->untimed[i].name, text, sizeof p->untimed[i].name - 1)) i++;
    if (i == p->nuntimed) {
        if (cm_grow((void **)&p->untimed, &p->capuntimed, p->nuntimed + 1, sizeof *p->untimed, 8) < 0) return;
        snprintf(p->untimed[i].name, sizeof p->untimed[i].name, "%.63s", text);
        p->untimed[i].count = 0;
        p->nuntimed++;
    }
    p->untimed[i].count++;
}

#define REC(r, k) (&(r)->w.ev[(k) - (r)->w.from])
/* a record's side arrays (its list_off is the rank's index) */
#define LISTS(r, e) ((r)->w.lists + ((size_t)(e)->list_off - (r)->w.lists_from))
#define RESULTS(r, e) ((r)->w.results + ((size_t)(e)->list_off - (r)->w.results_from))
#define TEXT(r, e) ((r)->w.text + ((size_t)(e)->list_off - (r)->w.text_from))

/* A streamed rank's stretch: records are read in aligned stretches of this many (the next one asked
 * for as soon as one arrives, so that the child reads while the ranks play), the HDF5 chunk
 * of its events when that is within [STREAM_MIN, STREAM_MAX] (HDF5 inflates a chunk whole: a
 * smaller stretch inflates the same chunk again for each). The writer's chunk is 1024 records. */
#define STREAM_MIN 64
#define STREAM_MAX 8192

static void release(replay *p, int rank)
{
    rrank *r = &p->r[rank];
    if (!p->src) return;
    p->held -= ms_trace_window_bytes(&r->w);
    ms_trace_window_free(&r->w);
}

/* Streamed: read records [k, j] of the rank (and what precedes k in its stretch), validate them.
 * 0, or -1: the replay stops (a record fails validation, or the stream cannot read them). */
static int load(replay *p, int rank, size_t k, size_t j)
{
    rrank *r = &p->r[rank];
    size_t a = k / r->block * r->block, b = (j / r->block + 1) * r->block;
    if (b > r->nev) b = r->nev;
    size_t before = ms_trace_window_bytes(&r->w);
    char err[1024];
    int rc = ms_trace_stream_read(p->src, rank, a, b, &r->w, err, sizeof err);
    p->held += ms_trace_window_bytes(&r->w) - before;
    /* its next stretch, read by the child while the ranks play (the answer waits in the stream) */
    if (rc == 0 && b < r->nev) ms_trace_stream_ask(p->src, rank, b, b + r->block < r->nev ? b + r->block : r->nev);
    size_t held = p->held + ms_trace_stream_bytes(p->src);
    if (held > p->res->trace_bytes_peak) p->res->trace_bytes_peak = held;
    if (rc < 0) {
        if (!p->read_failed) snprintf(p->read_err, sizeof p->read_err, "%s", err);
        if (!p->stopped) snprintf(p->stop, sizeof p->stop, "%s", err);
        p->stopped = p->read_failed = 1;
        return -1;
    }
    if (ms_trace_validate_window(p->t, rank, ms_trace_stream_size(p->src, rank), &r->w, a, b, "trace", p->stop,
                                 sizeof p->stop) < 0) {
        p->stopped = p->invalid = 1;
        return -1;
    }
    if (b > r->valid_to) r->valid_to = b;
    for (size_t i = b; i-- > a && i + 1 > r->fin_at;)   /* the recorded end (report) */
        if (REC(r, i)->kind == MS_TRACE_FINALIZE) {
            r->fin_at = i + 1;
            r->fin_rec_t = REC(r, i)->t_ps;
        }
    return 0;
}

/* Records [k, j] of the rank are in memory: 0, or -1 (stopped). Pointers into its window taken
 * before a call that may read further are stale after it. */
static inline int need(replay *p, int rank, size_t k, size_t j)
{
    rrank *r = &p->r[rank];
    return k >= r->w.from && j < r->w.from + r->w.n ? 0 : load(p, rank, k, j);
}

/* Records are validated a stretch at a time just before they are read (ms_trace_validate_events),
 * not in a pass of their own before the replay: a large trace does not fit in any cache, and one
 * pass over its records instead of two is what the replay's setup time was made of. They are
 * fetched ahead of the reader: a rank plays a few dozen records per turn, last touched many ranks
 * ago. PREFETCH_AHEAD records ahead (two lines each) keeps a few misses in flight without filling
 * the line buffers (32 records at once stalled on them), and the stretch it validates is what has
 * just arrived (16/16/16: 10 % more stencil messages per second than 64/32/0, same run). */
#define VALIDATE_STRETCH 16
#define PREFETCH_RECORDS 16   /* when a rank starts its turn */
#define PREFETCH_AHEAD 16     /* then one record per record played */

static int validate_to(replay *p, int rank, size_t k)
{
    rrank *r = &p->r[rank];
    if (p->src) return need(p, rank, k, k);   /* a stretch is validated as it is read */
    size_t to = r->valid_to + VALIDATE_STRETCH;
    if (to < k + 1) to = k + 1;
    if (ms_trace_validate_events(p->t, rank, r->valid_to, to, "trace", p->stop, sizeof p->stop) < 0) {
        p->stopped = p->invalid = 1;
        return -1;
    }
    r->valid_to = to;
    return 0;
}

/* Record k of the rank may be read: 0, or -1 (the replay stops: the trace is invalid). */
static inline int ensure_valid(replay *p, int rank, size_t k)
{
    return k < p->r[rank].valid_to ? 0 : validate_to(p, rank, k);
}

static void enqueue(replay *p, int rank)
{
    rrank *r = &p->r[rank];
    if (r->queued) return;
    r->queued = 1;
    p->queue[(p->qhead + p->qlen) % (size_t)p->n] = rank;
    p->qlen++;
}

/* The recorded resume after the rank's WAIT/PROBE at wait_ev (co-simulation traces), noted when
 * the rank blocks there: a resume may come while another rank plays, and reading records then
 * could move the window of a rank whose records are in use. */
static void note_resume(replay *p, int rank)
{
    rrank *r = &p->r[rank];
    r->resume_for = r->wait_ev + 1;
    r->rec_resume = MS_TRACE_UNKNOWN_TIME;
    if (!r->cosim || need(p, rank, r->wait_ev, r->wait_ev) < 0) return;
    r->wait_fn = REC(r, r->wait_ev)->fn;
    for (size_t k = r->wait_ev + 1; k < r->nev; k++) {
        if (need(p, rank, r->wait_ev, k) < 0) return;
        const ms_trace_event *e = REC(r, k);
        if (e->kind == MS_TRACE_RESUME) {
            r->rec_resume = e->t_ps;
            return;
        }
        if (e->kind != MS_TRACE_RESOLVE && e->kind != MS_TRACE_CLOCK && e->kind != MS_TRACE_CALLSITE) return;
    }
}

/* Compare a resume with the recorded one (co-simulation traces). */
static void check_resume(replay *p, int rank, int64_t t)
{
    rrank *r = &p->r[rank];
    if (!r->cosim) return;
    if (r->resume_for != r->wait_ev + 1) note_resume(p, rank);   /* not noted yet: resumed before any wait */
    if (r->rec_resume == MS_TRACE_UNKNOWN_TIME) return;
    p->res->resumes_checked++;
    if (r->rec_resume != t) {
        if (!p->res->resumes_differ)
            snprintf(p->res->first_difference, sizeof p->res->first_difference,
                     "rank %d event %zu (%s): recorded resume at %lld ps, replay %lld ps", rank, r->wait_ev,
                     ms_trace_fn_name(p->t, r->wait_fn), (long long)r->rec_resume, (long long)t);
        p->res->resumes_differ++;
    }
}

/* The driver lets a rank go on: it plays again from its resume time. */
static void on_resume(void *user, int rank, int thread, int64_t t, const ms_req_result *results, size_t n)
{
    replay *p = user;
    rrank *r = &p->r[rank];
    (void)thread;   /* traces are of one thread per rank (a run with more is refused: ms_trace.h) */
    (void)results;
    (void)n;
    check_resume(p, rank, t);
    if (t > r->clock) r->clock = t;
    p->res->resumes++;
    enqueue(p, rank);
}

/* The computation before a call, as recorded or rescaled; -1 when it exceeds one gap's bound
 * (MS_TRACE_MAX_GAP_PS: a scale or factor too large for the int64 clock). */
static int64_t compute_of(const replay *p, const ms_trace_event *e)
{
    double d;
    if (p->compute_mode == COMPUTE_NONE) return 0;
    if (p->compute_mode == COMPUTE_RECHARGED) d = ms_charge_ps_exact((double)e->raw_compute_ns, p->cpu_factor);
    else if (p->cpu_scale == 1.0) return e->compute_ps < 0 ? 0 : e->compute_ps;   /* exact, validated */
    else d = (double)e->compute_ps;
    if (p->cpu_scale != 1.0) d *= p->cpu_scale;
    if (!(d > 0)) return 0;
    if (d > (double)MS_TRACE_MAX_GAP_PS) return -1;
    return (int64_t)(d + 0.5);
}

static void stop_at(replay *p, int rank, size_t k, const char *err)
{
    if (p->stopped) return;
    p->stopped = 1;
    snprintf(p->stop, sizeof p->stop, "rank %d event %zu: %.900s", rank, k, err);
}

static void feed(replay *p, int rank, size_t k, const ms_driver_event *ev)
{
    char err[1024];
    if (ms_driver_apply(p->drv, rank, ev, err, sizeof err) < 0) stop_at(p, rank, k, err);
}

static int playing(const replay *p, int rank)
{
    ms_rank_state st = ms_driver_state(p->drv, rank);
    return st == MS_RANK_RUNNING || st == MS_RANK_UNTIMED;
}

/* The event a record stands for, at the rank's clock (fields as the driver names them). */
static inline ms_driver_event event_of(const ms_trace_event *e, int kind, int64_t t)
{
    return (ms_driver_event){.kind = kind, .fn = e->fn, .t = t, .req = e->req, .comm = e->comm, .bytes = e->bytes,
                             .peer = e->peer, .tag = e->tag, .mode = e->mode};
}

/* The request ids the recorded run completed in the WAIT at event k, in the wait's order, for
 * the driver's lenient waits: all of a blocking Wait/Waitall, else those its RESUME's results say
 * (none when the trace has no results: synthetic traces). -1 when out of memory. */
static int recorded_done(replay *p, int rank, size_t k, const uint64_t **ids, size_t *n)
{
    rrank *r = &p->r[rank];
    const ms_trace_event *we = REC(r, k);
    *ids = NULL;
    *n = 0;
    if (we->mode == MS_WAIT_ALL) {
        *ids = LISTS(r, we);
        *n = we->list_n > 0 ? (size_t)we->list_n : 0;
        return 0;
    }
    for (size_t j = k + 1; j < r->nev; j++) {
        if (need(p, rank, k, j) < 0 || ensure_valid(p, rank, j) < 0) return -2;
        const ms_trace_event *e = REC(r, j);
        if (e->kind == MS_TRACE_RESUME) {
            const ms_trace_result *res = RESULTS(r, e);
            size_t m = e->list_n > 0 ? (size_t)e->list_n : 0;
            if (m > r->rec_done_cap) {
                uint64_t *q = realloc(r->rec_done, sizeof *q * m);
                if (!q) return -1;
                r->rec_done = q;
                r->rec_done_cap = m;
            }
            for (size_t i = 0; i < m; i++)
                if (res[i].completed) r->rec_done[(*n)++] = res[i].req;
            *ids = r->rec_done;
            return 0;
        }
        if (e->kind != MS_TRACE_RESOLVE && e->kind != MS_TRACE_CLOCK && e->kind != MS_TRACE_CALLSITE) break;
    }
    return 0;
}

/* `streamed` is a constant in each of play()'s two copies: a trace in memory is one window from
 * record 0, with no stretch to read (its records are found as before this window existed). */
#define RECS(r, k) (streamed ? REC(r, k) : &(r)->w.ev[k])

/* A call's entry: the computation before it moves the rank's clock. */
static inline void play_call(replay *p, int rank, size_t k, const ms_trace_event *e)
{
    rrank *r = &p->r[rank];
    int64_t c = compute_of(p, e);
    if (c < 0 || r->clock > MS_TRACE_MAX_CLOCK_PS - c) {
        if (!p->stopped)
            snprintf(p->stop, sizeof p->stop,
                     "rank %d event %zu (%s): the virtual clock would pass 2^62 ps (53 days) after a "
                     "computation of %lld ps recorded (times --cpu-scale %g, or shim.cpu_factor): too large",
                     rank, k, ms_trace_fn_name(p->t, e->fn), (long long)e->compute_ps, p->cpu_scale);
        p->stopped = 1;
        return;
    }
    r->clock += c;
    r->compute += c;
    r->calls++;
    r->call_entry = r->clock;
}

/* The WAIT at record k, with the requests the recorded run completed in it: 0 to play on, -1 when
 * the rank stops playing (blocked until the driver resumes it, or the replay stopped). */
static inline __attribute__((always_inline)) int play_wait(replay *p, int rank, size_t k, const int streamed)
{
    rrank *r = &p->r[rank];
    /* the records after it first (they may be read into the window), then what points into it */
    r->wait_ev = k;
    if (r->cosim) note_resume(p, rank);
    const uint64_t *done = NULL;
    size_t ndone = 0;
    int rd = p->stopped ? -2 : recorded_done(p, rank, k, &done, &ndone);
    if (rd < 0) {
        if (rd == -1) stop_at(p, rank, k, "a wait: out of memory");
        return -1;
    }
    const ms_trace_event *e = RECS(r, k);
    ms_driver_event ev = event_of(e, MS_EV_WAIT, r->clock);
    if (e->list_n > 0) {
        ev.list = LISTS(r, e);
        ev.nlist = (size_t)e->list_n;
    }
    ev.flags = ((e->flags & MS_TRACE_FLAG_SYNC) ? MS_EV_FLAG_SYNC : 0) |
               ((e->flags & MS_TRACE_FLAG_UNTIMED) ? MS_EV_FLAG_REJOIN : 0);
    ev.recorded_done = done;
    ev.nrecorded_done = ndone;
    feed(p, rank, k, &ev);
    return playing(p, rank) ? 0 : -1;
}

/* An UNMODELLED record: the rank stopped from outside, a fatal error recorded, or an untimed call. */
static void play_unmodelled(replay *p, int rank, size_t k, const ms_trace_event *e)
{
    rrank *r = &p->r[rank];
    const char *text = TEXT(r, e);
    if (!strncmp(text, "STOP ", 5)) {
        /* the rank was ended from outside and flushed its records: not the one that died */
        r->stopped = 1;
        snprintf(r->stop_why, sizeof r->stop_why, "%.90s", text + 5);
    } else if (!strncmp(text, "FATAL ", 6) || !strncmp(text, "ABORT ", 6)) {
        if (!p->stopped) {
            p->stopped = 1;
            snprintf(p->stop, sizeof p->stop, "rank %d: %.900s (recorded)", rank, text + 6);
        }
    } else {
        r->unmodelled++;
        note_untimed(p, text);
        ms_driver_event ev = event_of(e, MS_EV_UNTIMED, r->clock);
        feed(p, rank, k, &ev);
    }
}

/* The records end without MPI_Finalize: the rank was killed (or its file truncated). */
static void records_ended(replay *p, int rank)
{
    rrank *r = &p->r[rank];
    ms_driver_event ev = {.kind = MS_EV_CLOCK, .t = r->clock};
    feed(p, rank, r->pc, &ev);
    if (r->stopped) ms_driver_rank_stopped(p->drv, rank);
    else ms_driver_rank_gone(p->drv, rank);
    release(p, rank);
}

/* Play one rank until it blocks, finishes or its records end: each record becomes the event the
 * rank reported when it ran, at the clock the records rebuild. */
static inline __attribute__((always_inline)) void play_records(replay *p, int rank, const int streamed)
{
    rrank *r = &p->r[rank];
    const int recorded = p->o->wildcards == MS_WILDCARDS_RECORDED;
    if (!playing(p, rank)) return;   /* queued again while it played (a rejoin resumes at once) */
    /* its next records, asked for together rather than one miss at a time as the loop reaches them */
    size_t w_end = r->w.from + r->w.n;
    if (r->pc >= r->w.from)
        for (size_t k = r->pc, e = r->pc + PREFETCH_RECORDS < w_end ? r->pc + PREFETCH_RECORDS : w_end; k < e; k++)
            for (size_t o = 0; o < sizeof *RECS(r, k); o += 64) __builtin_prefetch((const char *)RECS(r, k) + o);
    while (r->pc < r->nev && !p->stopped) {
        size_t k = r->pc++;
        size_t end = r->w.from + r->w.n;
        if (streamed && __builtin_expect(k >= end, 0)) {   /* its next stretch */
            if (load(p, rank, k, k) < 0) return;
            end = r->w.from + r->w.n;
        }
        if (k + PREFETCH_AHEAD < end) {
            __builtin_prefetch((const char *)RECS(r, k + PREFETCH_AHEAD));
            __builtin_prefetch((const char *)RECS(r, k + PREFETCH_AHEAD) + 64);
        }
        if (ensure_valid(p, rank, k) < 0) return;
        const ms_trace_event *e = RECS(r, k);
        ms_driver_event ev;
        p->res->events++;
        switch (e->kind) {
        case MS_TRACE_CALL:
            play_call(p, rank, k, e);
            break;
        case MS_TRACE_EXIT:
            if (p->o->timeline)
                fprintf(p->o->timeline, "%d,%llu,%s,%lld,%lld\n", rank, (unsigned long long)r->calls,
                        ms_trace_fn_name(p->t, e->fn), (long long)r->call_entry, (long long)r->clock);
            break;
        case MS_TRACE_ISEND:
            ev = event_of(e, MS_EV_ISEND, r->clock);
            ev.buf = e->callsite;   /* the user's buffer (ms_trace_event) */
            feed(p, rank, k, &ev);
            r->clock += ms_driver_isend_cost(p->drv, e->bytes);
            break;
        case MS_TRACE_IRECV:
            ev = event_of(e, MS_EV_IRECV, r->clock);
            ev.buf = e->callsite;
            ev.flags = (e->flags & MS_TRACE_FLAG_NOTIFY) ? MS_EV_FLAG_NOTIFY : 0;
            if (recorded && (ev.peer == MS_ANY_SOURCE || ev.tag == MS_ANY_TAG) && e->matched_source >= 0) {
                ev.peer = e->matched_source;
                ev.tag = e->matched_tag;
            }
            feed(p, rank, k, &ev);
            r->clock += ms_driver_irecv_cost(p->drv, e->bytes);
            break;
        case MS_TRACE_CANCEL:
        case MS_TRACE_FREE:
            ev = event_of(e, e->kind == MS_TRACE_CANCEL ? MS_EV_CANCEL : MS_EV_FREE, r->clock);
            feed(p, rank, k, &ev);
            break;
        case MS_TRACE_RMA:
            ev = event_of(e, MS_EV_RMA, r->clock);
            ev.bytes_out = e->callsite;   /* the result's bytes (ms_trace_event) */
            feed(p, rank, k, &ev);
            r->clock += ms_driver_isend_cost(p->drv, e->bytes);   /* as the shim charged it */
            break;
        case MS_TRACE_ICOLL:
            ev = event_of(e, MS_EV_ICOLL, r->clock);
            ev.flags = e->flags;   /* an intercommunicator's low group */
            if (e->list_n > 0) {
                ev.list = LISTS(r, e);
                ev.nlist = (size_t)e->list_n;
            }
            feed(p, rank, k, &ev);
            break;
        case MS_TRACE_COMM_ADD: {
            const ms_trace_comm *c = &p->t->comms[e->list_off];
            ev = event_of(e, MS_EV_COMM_ADD, r->clock);
            ev.comm = c->id;
            ev.members = p->t->members + c->offset;
            ev.nmembers = c->size;
            feed(p, rank, k, &ev);
            break;
        }
        case MS_TRACE_WAIT:
            if (play_wait(p, rank, k, streamed) < 0) return;   /* blocked until the driver resumes it */
            break;
        case MS_TRACE_PROBE:
            r->wait_ev = k;
            if (r->cosim) note_resume(p, rank);
            if (p->stopped) return;
            e = RECS(r, k);
            ev = event_of(e, MS_EV_PROBE, r->clock);
            if (recorded && (ev.peer == MS_ANY_SOURCE || ev.tag == MS_ANY_TAG) && e->matched_source >= 0) {
                ev.peer = e->matched_source;
                ev.tag = e->matched_tag;
            }
            feed(p, rank, k, &ev);
            if (!playing(p, rank)) return;
            break;
        case MS_TRACE_FINALIZE:
            r->finalized = 1;
            r->fin_t = r->clock;
            ev = event_of(e, MS_EV_FINALIZE, r->clock);
            feed(p, rank, k, &ev);
            release(p, rank);   /* streamed: what follows is read again when it is checked at the end */
            return;
        case MS_TRACE_UNMODELLED:
            play_unmodelled(p, rank, k, e);
            break;
        case MS_TRACE_PROC_EXIT:   /* the process exited on its own, without MPI_Finalize, with this code */
            ms_driver_rank_exit_code(p->drv, rank, e->mode);
            break;
        default: /* CLOCK, RESUME, RESOLVE, CALLSITE, SITE, PCONTROL: the recording's, not inputs */
            break;
        }
    }
    if (r->pc >= r->nev && playing(p, rank)) records_ended(p, rank);
}
#undef RECS

__attribute__((noinline)) static void play(replay *p, int rank)
{
    if (p->src) play_records(p, rank, 1);
    else play_records(p, rank, 0);
}

/* Each recorded rank's player, connected to the driver and queued: 0, or -1 (out of memory). */
static int setup_ranks(replay *p, char *err, size_t errlen)
{
    p->r = calloc((size_t)p->n, sizeof *p->r);
    p->queue = calloc((size_t)p->n, sizeof *p->queue);
    p->res->ranks = calloc((size_t)p->n, sizeof *p->res->ranks);
    if (!p->r || !p->queue || !p->res->ranks) {
        fail(err, errlen, "out of memory");
        return -1;
    }
    p->res->nranks = p->n;
    for (int i = 0; i < p->n; i++) {
        rrank *r = &p->r[i];
        const ms_trace_rank *tr = &p->t->ranks[i];
        r->cosim = tr->cosim;
        if (p->src) {   /* its records are read as it plays them */
            const ms_trace_rank_size *sz = ms_trace_stream_size(p->src, i);
            r->nev = sz->nev;
            r->block = sz->chunk < STREAM_MIN ? STREAM_MIN : sz->chunk > STREAM_MAX ? STREAM_MAX : sz->chunk;
        } else {     /* all of them in memory: one window */
            r->nev = tr->nev;
            r->w.n = tr->nev;
            r->w.ev = tr->ev;
            r->w.lists = tr->lists;
            r->w.nlists = tr->nlists;
            r->w.results = tr->results;
            r->w.nresults = tr->nresults;
            r->w.text = tr->text;
            r->w.ntext = tr->ntext;
        }
        ms_driver_connect(p->drv, i);
        enqueue(p, i);
    }
    return 0;
}

/* Every recorded rank plays until it blocks; then the driver runs the model (no rank runs, so
 * the horizon is unbounded) until it resumes one. 1 when the outcome is a rank that ended without
 * MPI_Finalize. */
static int play_all(replay *p)
{
    int dead_cause = 0;
    for (;;) {
        while (p->qlen && !p->stopped) {
            int i = p->queue[p->qhead];
            p->qhead = (p->qhead + 1) % (size_t)p->n;
            p->qlen--;
            p->r[i].queued = 0;
            play(p, i);
        }
        if (p->stopped || !ms_driver_any_waiting(p->drv)) break;
        char aerr[1024];
        int a = ms_driver_advance(p->drv, aerr, sizeof aerr);
        if (a < 0) {
            p->stopped = 1;
            snprintf(p->stop, sizeof p->stop, "%s", aerr);
        } else if (a == 1) {
            p->res->outcome = ms_driver_describe_stall(p->drv, p->res->outcome_text, sizeof p->res->outcome_text, NULL, NULL);
            dead_cause = p->res->outcome == 2;
            /* the others wait for a rank whose recording was stopped from outside (a signal, mpisim):
             * not the program's deadlock, a trace that ends there */
            for (int i = 0; p->res->outcome == 1 && i < p->n; i++)
                if (p->r[i].stopped && ms_driver_state(p->drv, i) == MS_RANK_STOPPED) {
                    char text[sizeof p->res->outcome_text];
                    snprintf(text, sizeof text,
                             "partial trace: the recording was stopped before MPI_Finalize (rank %d: %s at %.6f us); "
                             "the other ranks wait for what it did not record\n  %.1400s", i, p->r[i].stop_why,
                             p->r[i].clock * 1e-6, p->res->outcome_text);
                    snprintf(p->res->outcome_text, sizeof p->res->outcome_text, "%s", text);
                    p->res->outcome = 2;
                }
            break;
        } else if (a == 2) {   /* the network deadlocked: a deadlock, as online */
            p->res->outcome = 1;
            snprintf(p->res->outcome_text, sizeof p->res->outcome_text, "%s", aerr);
            break;
        } else if (!p->qlen && ms_driver_next_time(p->drv) == NM_TIME_NEVER) {
            /* cannot happen: with nothing pending and no rank resumed the driver reports a stall */
            p->stopped = 1;
            snprintf(p->stop, sizeof p->stop, "the model resumed no rank and has nothing pending");
        }
        /* else: the model stopped at a resume it holds (a synchronising group): run it again */
    }
    return dead_cause;
}

/* The replay's outcome once it has stopped: a stop, an unreadable trace, a dead or stopped rank,
 * model errors, untimed calls. */
static void set_outcome(replay *p, int dead_cause)
{
    if (p->stopped && p->res->outcome == 0) {
        p->res->outcome = 2;
        snprintf(p->res->outcome_text, sizeof p->res->outcome_text, "%s", p->stop);
    }
    p->res->trace_unreadable = p->read_failed;
    if (p->read_failed) {   /* said whatever else stopped the replay; what it played is in the result */
        size_t o = strlen(p->res->outcome_text);
        snprintf(p->res->outcome_text + o, sizeof p->res->outcome_text - o, "%s%s%s",
                 strcmp(p->res->outcome_text, p->read_err) ? "\n  " : "", strcmp(p->res->outcome_text, p->read_err) ? p->read_err : "",
                 "\n  the trace could not be read further: the result holds what was replayed up to that point");
    }
    /* a rank that ended without MPI_Finalize (killed, its file cut or missing): the replay played
     * what exists, and that is not a complete run, whether or not the others waited for it (the
     * driver's stall text above says so when they did; the live server says the same) */
    int dead = ms_driver_first_dead(p->drv);
    if (dead >= 0 && p->res->outcome == 0) {
        p->res->outcome = 2;
        dead_cause = 1;
        int o = ms_driver_gone_text(p->drv, dead, p->res->outcome_text, sizeof p->res->outcome_text);
        if (o >= 0 && (size_t)o < sizeof p->res->outcome_text)
            snprintf(p->res->outcome_text + o, sizeof p->res->outcome_text - (size_t)o, " at %.6f us", p->r[dead].clock * 1e-6);
    }
    if (dead < 0 && p->res->outcome == 0) {
        /* no rank died, but the recording was stopped from outside (a signal, mpisim) before some
         * ranks reached MPI_Finalize: not a complete run either */
        for (int i = 0; i < p->n; i++)
            if (ms_driver_state(p->drv, i) == MS_RANK_STOPPED && p->r[i].stopped) {
                p->res->outcome = 2;
                snprintf(p->res->outcome_text, sizeof p->res->outcome_text,
                         "partial trace: the recording was stopped before MPI_Finalize (rank %d: %s) at %.6f us", i,
                         p->r[i].stop_why, p->r[i].clock * 1e-6);
                break;
            }
    }
    if (dead_cause) {   /* what the trace says of it */
        size_t o = strlen(p->res->outcome_text);
        char missing[256];
        int nm = ms_trace_missing_ranks(p->t, missing, sizeof missing);
        snprintf(p->res->outcome_text + o, sizeof p->res->outcome_text - o,
                 "\n  partial trace: the records of rank %d end without MPI_Finalize%s%s%s", dead,
                 p->t->ranks[dead].missing ? " (it left no records)" : p->t->ranks[dead].truncated ? " (its file was cut)" : "",
                 nm ? "; ranks without records: " : "", nm ? missing : "");
    }
    const char *me = ms_driver_model_error(p->drv, &p->res->model_errors);
    if (me && p->res->outcome == 0) {
        p->res->outcome = 2;
        snprintf(p->res->outcome_text, sizeof p->res->outcome_text, "the model reported %llu errors, the last: %s",
                 (unsigned long long)p->res->model_errors, me);
    }
    if (p->res->outcome == 0 && p->nuntimed) {   /* complete, but calls ran untimed in the recording */
        const char **names = malloc(sizeof *names * p->nuntimed);
        uint64_t *counts = malloc(sizeof *counts * p->nuntimed);
        char calls[1536] = "(out of memory naming them)";
        uint64_t ncalls = 0;
        for (size_t i = 0; names && counts && i < p->nuntimed; i++) {
            names[i] = p->untimed[i].name;
            counts[i] = p->untimed[i].count;
        }
        if (names && counts) ncalls = ms_untimed_text(names, counts, p->nuntimed, calls, sizeof calls);
        free(names);
        free(counts);
        p->res->outcome = MS_OUTCOME_UNTIMED;
        ms_untimed_outcome_text(calls, ncalls, p->res->outcome_text, sizeof p->res->outcome_text);
    }
}

/* Each rank's result, and the totals over them. */
static void rank_results(replay *p)
{
    double sum = 0;
    for (int i = 0; i < p->n; i++) {
        rrank *r = &p->r[i];
        ms_replay_rank_result *o = &p->res->ranks[i];
        ms_report_rank rr;
        memset(&rr, 0, sizeof rr);
        ms_driver_report_rank(p->drv, i, &rr);
        o->virtual_end_ps = r->finalized ? r->fin_t : r->clock;
        o->compute_ps = r->compute;
        o->mpi_ps = o->virtual_end_ps - r->compute;
        o->calls = r->calls;
        o->msgs_sent = rr.msgs_sent;
        o->bytes_sent = rr.bytes_sent;
        o->msgs_recv = rr.msgs_recv;
        o->bytes_recv = rr.bytes_recv;
        o->collectives = rr.collectives;
        o->rma_ops = rr.rma_ops;
        o->rma_bytes = rr.rma_bytes;
        o->node = rr.node;
        o->unmodelled = r->unmodelled;
        ms_rank_state s = ms_driver_state(p->drv, i);
        o->status = s == MS_RANK_FINISHED ? MS_RR_FINALIZED
                    : s == MS_RANK_DEAD ? MS_RR_DIED
                    : s == MS_RANK_STOPPED ? MS_RR_STOPPED
                    : ms_driver_waiting(p->drv, i) ? MS_RR_BLOCKED : MS_RR_RUNNING;
        if (p->src) {
            o->recorded_end_known = r->fin_at && r->cosim;
            o->recorded_end_ps = r->fin_at ? r->fin_rec_t : 0;
        } else {
            for (size_t k = r->nev; k-- > 0;)
                if (r->w.ev[k].kind == MS_TRACE_FINALIZE) {
                    o->recorded_end_known = r->cosim;
                    o->recorded_end_ps = r->w.ev[k].t_ps;
                    break;
                }
        }
        if (o->virtual_end_ps > p->res->virtual_time_ps) p->res->virtual_time_ps = o->virtual_end_ps;
        sum += (double)o->virtual_end_ps;
        p->res->msgs_sent += rr.msgs_sent;
        p->res->bytes_sent += rr.bytes_sent;
        p->res->collectives += rr.collectives;
    }
    p->res->mean_end_ps = (int64_t)llround(sum / p->n);
}

static int run(const ms_trace *t, ms_trace_stream *src, const nm_config *cfg, const ms_replay_opts *opts,
               ms_replay_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    ms_replay_opts defaults = {1.0, MS_WILDCARDS_RECORDED, NULL, NULL, NULL, NULL, NULL};
    if (!opts) opts = &defaults;
    replay p;
    memset(&p, 0, sizeof p);
    p.t = t;
    p.src = src;
    p.o = opts;
    p.n = t->nranks;
    p.res = res;
    p.cpu_scale = opts->cpu_scale >= 0 ? opts->cpu_scale : 1.0;
    int rc = -1;
    double w0 = wall_now();
    if (ms_trace_validate_shape(t, "trace", err, errlen) < 0) return -1;   /* the records as they are read */

    /* computation: as recorded, unless the configuration changes shim.compute / shim.cpu_factor */
    char rec[64];
    const char *cm = nm_config_string(cfg, "shim.compute");
    replay_recorded_value(t, "shim.compute", rec, sizeof rec);
    if (cm && !strcmp(cm, "none") && strcmp(rec, "none")) p.compute_mode = COMPUTE_NONE;
    replay_recorded_value(t, "shim.cpu_factor", rec, sizeof rec);
    p.cpu_factor = nm_config_double(cfg, "shim.cpu_factor");
    if (p.compute_mode == COMPUTE_AS_RECORDED && rec[0] && strtod(rec, NULL) != p.cpu_factor)
        p.compute_mode = COMPUTE_RECHARGED;

    p.drv = ms_driver_create(cfg, p.n, err, errlen);
    if (!p.drv) goto out;
    static const ms_driver_ops ops = {on_resume, NULL};
    ms_driver_set_ops(p.drv, &ops, &p);
    ms_driver_set_fn_names(p.drv, (const char *const *)t->fn_names, t->nfn);
    /* a capture-only trace may test a request again after the replay's model reported it
     * complete (the real run finished it later) */
    ms_driver_set_lenient_waits(p.drv, 1);
    if (opts->call_log) ms_driver_set_call_log(p.drv, opts->call_log, opts->call_log_user);
    if (nm_network_may_deadlock(ms_driver_network(p.drv))) {   /* said before the replay, as mpisim run and net say it */
        const nm_topology *topo = ms_driver_topology(p.drv);
        nm_routing_info ri;
        nm_topology_routing_info(topo, &ri);
        snprintf(res->warning, sizeof res->warning,
                 "routing '%s' on '%s' is not deadlock-free on engine '%s' (%s); the replay may stop in a network "
                 "deadlock (network.routing=auto or updown avoid it)",
                 ri.routing, nm_topology_name(topo), nm_network_engine_name(ms_driver_network(p.drv)), ri.check_message);
        if (opts->warn) opts->warn(opts->warn_user, res->warning);
    }
    if (opts->timeline) fprintf(opts->timeline, "rank,call,fn,entry_ps,exit_ps\n");
    snprintf(res->topology, sizeof res->topology, "%s", nm_topology_name(ms_driver_topology(p.drv)));
    snprintf(res->engine, sizeof res->engine, "%s", nm_network_engine_name(ms_driver_network(p.drv)));
    if (setup_ranks(&p, err, errlen) < 0) goto out;
    res->setup_s = wall_now() - w0;

    int dead_cause = play_all(&p);
    /* the records no rank reached (a deadlock, a stop, records after MPI_Finalize): an invalid
     * trace is an error wherever its fault is */
    for (int i = 0; i < p.n && !p.invalid && !p.read_failed; i++) {
        rrank *r = &p.r[i];
        if (!src && r->valid_to < r->nev) validate_to(&p, i, r->nev - 1);
        while (src && r->valid_to < r->nev && load(&p, i, r->valid_to, r->valid_to) == 0) {   /* stretch by stretch */
        }
        release(&p, i);
    }
    if (p.invalid) {   /* as ms_trace_validate before the replay would have said, with no result */
        fail(err, errlen, "%s", p.stop);
        goto out;
    }
    set_outcome(&p, dead_cause);
    rank_results(&p);
    ms_driver_early_done(p.drv, &res->early_done_end, &res->early_done_peak);
    rc = 0;
out:
    res->wall_s = wall_now() - w0;
    if (p.r)
        for (int i = 0; i < p.n; i++) {
            free(p.r[i].rec_done);
            release(&p, i);
        }
    free(p.r);
    free(p.queue);
    free(p.untimed);
    ms_driver_destroy(p.drv);
    if (rc < 0) ms_replay_result_free(res);
    return rc;
}

int ms_replay_run(const ms_trace *t, const nm_config *cfg, const ms_replay_opts *opts, ms_replay_result *res,
                  char *err, size_t errlen)
{
    return run(t, NULL, cfg, opts, res, err, errlen);
}

int ms_replay_run_stream(ms_trace_stream *s, const nm_config *cfg, const ms_replay_opts *opts, ms_replay_result *res,
                         char *err, size_t errlen)
{
    return run(ms_trace_stream_trace(s), s, cfg, opts, res, err, errlen);
}

void ms_replay_result_free(ms_replay_result *res)
{
    if (!res) return;
    free(res->ranks);
    res->ranks = NULL;
    res->nranks = 0;
}
