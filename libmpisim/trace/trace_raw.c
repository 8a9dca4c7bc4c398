/* Reader of the raw per-rank files the shim writes (trace_raw.h) and of a capture directory. */
#define _GNU_SOURCE
#include "ms_trace.h"
#include "ms_trace_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include "protocol.h"
#include "trace_raw.h"
#include "cm_grow.h"

/* A record's kind is its message type (ms_trace.h): the two lists must agree. */
#define SAME_KIND(k) _Static_assert((int)MS_TRACE_##k == (int)MS_MSG_##k, "trace kind " #k)
SAME_KIND(ISEND);
SAME_KIND(IRECV);
SAME_KIND(ICOLL);
SAME_KIND(COMM_ADD);
SAME_KIND(WAIT);
SAME_KIND(PROBE);
SAME_KIND(FINALIZE);
SAME_KIND(UNMODELLED);
SAME_KIND(CALLSITE);
SAME_KIND(CLOCK);
SAME_KIND(SITE);
SAME_KIND(CANCEL);
SAME_KIND(FREE);
SAME_KIND(RESUME);
SAME_KIND(RESOLVE);
_Static_assert((int)MS_TRACE_CALL == (int)MS_MSG_TR_CALL && (int)MS_TRACE_EXIT == (int)MS_MSG_TR_EXIT &&
                   (int)MS_TRACE_PCONTROL == (int)MS_MSG_TR_PCONTROL, "trace-only record kinds");
_Static_assert(MS_TRACE_FLAG_SYNC == MS_WAIT_FLAG_SYNC && MS_TRACE_FLAG_UNTIMED == MS_WAIT_FLAG_UNTIMED &&
                   MS_TRACE_FLAG_LOCAL == MS_WAIT_FLAG_LOCAL,
               "wait flags");
_Static_assert(MS_TRACE_FLAG_NOTIFY == MS_IRECV_NOTIFY, "receive flags");
_Static_assert(sizeof(ms_trace_result) == sizeof(ms_msg_result), "a recorded result is a wire result");
_Static_assert(MS_TRACE_MAX_BYTES == MS_PROTO_MAX_BYTES && MS_TRACE_MAX_CLOCK_PS == MS_PROTO_MAX_CLOCK_PS,
               "the trace's bounds are the server's");

int ms_trace_fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && len) vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

int ms_trace_grow(void **p, size_t *cap, size_t need, size_t elem) { return cm_grow(p, cap, need, elem, 64); }

/* ---- request id -> event index map ---------------------------------------------------------- */

typedef struct req_map {
    uint64_t *keys;
    size_t *vals;   /* index + 1; 0 = empty */
    size_t cap, used;
} req_map;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static int map_put(req_map *m, uint64_t key, size_t val)
{
    if ((m->used + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        uint64_t *k = calloc(nc, sizeof *k);
        size_t *v = calloc(nc, sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->vals[i]) {
                size_t j = mix(m->keys[i]) & (nc - 1);
                while (v[j]) j = (j + 1) & (nc - 1);
                k[j] = m->keys[i];
                v[j] = m->vals[i];
            }
        free(m->keys);
        free(m->vals);
        m->keys = k;
        m->vals = v;
        m->cap = nc;
    }
    size_t j = mix(key) & (m->cap - 1);
    while (m->vals[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
    if (!m->vals[j]) m->used++;
    m->keys[j] = key;
    m->vals[j] = val + 1;
    return 0;
}

static size_t map_get(const req_map *m, uint64_t key)   /* index + 1, 0 if absent */
{
    if (!m->cap) return 0;
    size_t j = mix(key) & (m->cap - 1);
    while (m->vals[j]) {
        if (m->keys[j] == key) return m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

static void map_free(req_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* Fill matched_source/matched_tag/complete_ps from RESOLVE and RESUME records. */
int ms_trace_derive(ms_trace_rank *r)
{
    req_map m = {0};
    for (size_t i = 0; i < r->nev; i++) {
        ms_trace_event *e = &r->ev[i];
        if (e->kind == MS_MSG_ISEND || e->kind == MS_MSG_IRECV || e->kind == MS_MSG_ICOLL)
            if (map_put(&m, e->req, i) < 0) {
                map_free(&m);
                return -1;
            }
    }
    size_t last_block = SIZE_MAX;   /* the WAIT or PROBE the next RESUME answers */
    for (size_t i = 0; i < r->nev; i++) {
        ms_trace_event *e = &r->ev[i];
        if (e->kind == MS_MSG_WAIT || e->kind == MS_MSG_PROBE) last_block = i;
        if (e->kind == MS_MSG_RESOLVE) {
            ms_trace_event *t = NULL;
            if (e->req == UINT64_MAX) {
                if (last_block != SIZE_MAX && r->ev[last_block].kind == MS_MSG_PROBE) t = &r->ev[last_block];
            } else {
                size_t k = map_get(&m, e->req);
                if (k && r->ev[k - 1].kind == MS_MSG_IRECV) t = &r->ev[k - 1];
            }
            if (t) {
                t->matched_source = e->peer;
                t->matched_tag = e->tag;
            }
        }
        if (e->kind == MS_MSG_RESUME && last_block != SIZE_MAX) {
            ms_trace_event *b = &r->ev[last_block];
            for (int32_t k = 0; k < e->list_n; k++) {
                const ms_trace_result *res = &r->results[e->list_off + k];
                if (b->kind == MS_MSG_PROBE) {
                    if (res->completed) {
                        b->matched_source = res->source;
                        b->matched_tag = res->tag;
                    }
                    continue;
                }
                if (!res->completed) continue;
                size_t j = map_get(&m, res->req);
                if (!j) continue;
                ms_trace_event *t = &r->ev[j - 1];
                t->complete_ps = res->complete_time;
                if (t->kind == MS_MSG_IRECV && t->matched_source == MS_TRACE_UNKNOWN) {
                    t->matched_source = res->source;
                    t->matched_tag = res->tag;
                }
            }
            last_block = SIZE_MAX;
        }
    }
    map_free(&m);
    return 0;
}

int ms_trace_derive_matches(ms_trace *t)
{
    for (int i = 0; i < t->nranks; i++) {
        ms_trace_rank *r = &t->ranks[i];
        for (size_t k = 0; k < r->nev; k++) {
            ms_trace_event *e = &r->ev[k];
            if (e->kind == MS_MSG_IRECV || e->kind == MS_MSG_PROBE) e->matched_source = e->matched_tag = MS_TRACE_UNKNOWN;
            if (e->kind == MS_MSG_ISEND || e->kind == MS_MSG_IRECV || e->kind == MS_MSG_ICOLL)
                e->complete_ps = MS_TRACE_UNKNOWN_TIME;
        }
        if (ms_trace_derive(r) < 0) return -1;
    }
    return 0;
}

/* ---- one raw file --------------------------------------------------------------------------- */

typedef struct side {
    size_t ev_cap, lists_cap, results_cap, text_cap, members_cap;
} side;

static ms_trace_event *new_event(ms_trace_rank *r, side *sd, uint32_t kind)
{
    if (ms_trace_grow((void **)&r->ev, &sd->ev_cap, r->nev + 1, sizeof *r->ev) < 0) return NULL;
    ms_trace_event *e = &r->ev[r->nev++];
    memset(e, 0, sizeof *e);
    e->kind = (int32_t)kind;
    e->fn = -1;
    e->matched_source = MS_TRACE_UNKNOWN;
    e->matched_tag = MS_TRACE_UNKNOWN;
    e->complete_ps = MS_TRACE_UNKNOWN_TIME;
    return e;
}

/* Allowed payload lengths of a record type: [lo, hi]; 0 if the type is unknown. */
static int length_bounds(uint32_t type, size_t *lo, size_t *hi)
{
    switch (type) {
    case MS_MSG_ISEND: *lo = *hi = sizeof(ms_msg_isend); return 1;
    case MS_MSG_IRECV: *lo = *hi = sizeof(ms_msg_irecv); return 1;
    case MS_MSG_CANCEL:
    case MS_MSG_FREE: *lo = *hi = sizeof(ms_msg_cancel); return 1;
    case MS_MSG_ICOLL: *lo = sizeof(ms_msg_icoll); *hi = *lo + 8u * MS_MAX_COLL_COUNTS; return 1;
    case MS_MSG_RMA: *lo = *hi = sizeof(ms_msg_rma); return 1;
    case MS_MSG_EXIT: *lo = *hi = sizeof(ms_msg_exit); return 1;
    case MS_MSG_COMM_ADD: *lo = sizeof(ms_msg_comm_add); *hi = *lo + 4u * MS_MAX_COMM_SIZE; return 1;
    case MS_MSG_WAIT: *lo = sizeof(ms_msg_wait); *hi = *lo + 8u * MS_MAX_WAIT_REQS; return 1;
    case MS_MSG_PROBE: *lo = *hi = sizeof(ms_msg_probe); return 1;
    case MS_MSG_FINALIZE: *lo = *hi = sizeof(ms_msg_finalize); return 1;
    case MS_MSG_UNMODELLED:
    case MS_MSG_CALLSITE: *lo = 0; *hi = MS_TEXT_MAX; return 1;
    case MS_MSG_CLOCK: *lo = *hi = sizeof(ms_msg_clock); return 1;
    case MS_MSG_TR_CALL: *lo = *hi = sizeof(ms_msg_tr_call); return 1;
    case MS_MSG_TR_EXIT: *lo = *hi = sizeof(ms_msg_tr_exit); return 1;
    case MS_MSG_TR_PCONTROL: *lo = *hi = sizeof(ms_msg_tr_pcontrol); return 1;
    case MS_MSG_RESUME: *lo = sizeof(ms_msg_resume); *hi = *lo + sizeof(ms_msg_result) * MS_MAX_WAIT_REQS; return 1;
    case MS_MSG_RESOLVE: *lo = *hi = sizeof(ms_msg_resolve); return 1;
    case MS_MSG_THREAD: *lo = *hi = sizeof(ms_msg_thread); return 1;
#ifdef MS_SITE_TEXT
    case MS_MSG_SITE: *lo = *hi = sizeof(ms_msg_site); return 1;
#endif
    default: return 0;
    }
}

/* A record of fixed fields into e (p: its payload, of the length its type allows): 1, or 0 when
 * the type is not one of them. */
static int decode_fixed(ms_trace_event *e, uint32_t type, const unsigned char *p)
{
    switch (type) {
    case MS_MSG_ISEND: {
        ms_msg_isend m;
        memcpy(&m, p, sizeof m);
        e->t_ps = m.t; e->req = m.req; e->comm = m.comm; e->bytes = m.bytes;
        e->peer = m.dst; e->tag = m.tag; e->mode = m.mode; e->fn = m.fn;
        e->callsite = m.buf;   /* the user's buffer (host model's registration cache) */
        return 1;
    }
    case MS_MSG_IRECV: {
        ms_msg_irecv m;
        memcpy(&m, p, sizeof m);
        e->t_ps = m.t; e->req = m.req; e->comm = m.comm; e->bytes = m.bytes;
        e->peer = m.src; e->tag = m.tag; e->fn = m.fn; e->flags = m.flags & MS_IRECV_NOTIFY;
        e->callsite = m.buf;   /* as for ISEND */
        return 1;
    }
    case MS_MSG_CANCEL:
    case MS_MSG_FREE: {
        ms_msg_cancel m;
        memcpy(&m, p, sizeof m);
        e->t_ps = m.t; e->req = m.req; e->fn = m.fn;
        return 1;
    }
    case MS_MSG_RMA: {
        ms_msg_rma m;
        memcpy(&m, p, sizeof m);
        e->t_ps = m.t; e->req = m.req; e->comm = m.comm; e->bytes = m.bytes; e->peer = m.target;
        e->mode = m.kind; e->fn = m.fn;
        e->callsite = m.result_bytes;   /* RMA records: the result's bytes */
        return 1;
    }
    case MS_MSG_EXIT: {
        ms_msg_exit m;
        memcpy(&m, p, sizeof m);
        e->mode = m.code;
        e->flags = m.finalized;
        return 1;
    }
    case MS_MSG_PROBE: {
        ms_msg_probe m;
        memcpy(&m, p, sizeof m);
        e->t_ps = m.t; e->comm = m.comm; e->peer = m.src; e->tag = m.tag; e->mode = m.blocking;
        e->fn = m.fn; e->callsite = m.callsite;
        return 1;
    }
    case MS_MSG_FINALIZE: {
        ms_msg_finalize m;
        memcpy(&m, p, sizeof m);
        e->t_ps = m.t; e->compute_ps = m.compute_ps; e->raw_compute_ns = m.mpi_ps; e->bytes = m.calls;
        e->req = m.unmodelled_calls;
        return 1;
    }
    case MS_MSG_CLOCK: {
        ms_msg_clock m;
        memcpy(&m, p, sizeof m);
        e->t_ps = m.t;
        return 1;
    }
    case MS_MSG_TR_CALL: {
        ms_msg_tr_call m;
        memcpy(&m, p, sizeof m);
        e->compute_ps = m.compute_ps; e->raw_compute_ns = m.raw_compute_ns; e->real_entry_ns = m.real_entry_ns;
        e->callsite = m.callsite; e->fn = m.fn;
        return 1;
    }
    case MS_MSG_TR_EXIT: {
        ms_msg_tr_exit m;
        memcpy(&m, p, sizeof m);
        e->real_exit_ns = m.real_exit_ns; e->t_ps = m.clock_ps; e->fn = m.fn; e->mode = m.rc;
        return 1;
    }
    case MS_MSG_TR_PCONTROL: {
        ms_msg_tr_pcontrol m;
        memcpy(&m, p, sizeof m);
        e->t_ps = m.clock_ps; e->real_entry_ns = m.real_ns; e->mode = m.level;
        return 1;
    }
    case MS_MSG_RESOLVE: {
        ms_msg_resolve m;
        memcpy(&m, p, sizeof m);
        e->req = m.req; e->bytes = m.bytes; e->peer = m.source; e->tag = m.tag;
        return 1;
    }
    }
    return 0;
}

/* A record with lists (counts, members, requests, results, text) into e and r's side arrays: 0,
 * or -1 with what is wrong in why. */
static int decode_listed(ms_trace_rank *r, side *sd, ms_trace_event *e, const ms_msg_header *h, const unsigned char *p,
                         int32_t nranks, int32_t **members, size_t *nmembers, char *why, size_t whylen)
{
#define FAIL(...)                                                                                                  \
    do {                                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                                        \
        return -1;                                                                                                 \
    } while (0)
    switch (h->type) {
    case MS_MSG_ICOLL: {
        ms_msg_icoll m;
        memcpy(&m, p, sizeof m);
        if (m.ncounts < 0 || (size_t)m.ncounts * 8u != h->length - sizeof m)
            FAIL("collective record with %d counts in %u bytes", m.ncounts, h->length);
        e->t_ps = m.t; e->req = m.req; e->comm = m.comm; e->bytes = m.bytes;
        e->mode = m.kind; e->peer = m.root; e->fn = m.fn; e->flags = m.inter_low;
        e->list_off = (int64_t)r->nlists;
        e->list_n = m.ncounts;
        if (ms_trace_grow((void **)&r->lists, &sd->lists_cap, r->nlists + (size_t)m.ncounts, 8) < 0) FAIL("out of memory");
        if (m.ncounts) memcpy(r->lists + r->nlists, p + sizeof m, (size_t)m.ncounts * 8u);
        r->nlists += (size_t)m.ncounts;
        return 0;
    }
    case MS_MSG_COMM_ADD: {
        ms_msg_comm_add m;
        memcpy(&m, p, sizeof m);
        if (m.size < 1 || (size_t)m.size * 4u != h->length - sizeof m)
            FAIL("communicator record of size %d in %u bytes", m.size, h->length);
        e->comm = m.comm;
        e->peer = m.size;
        e->list_n = m.size;
        e->list_off = (int64_t)*nmembers;
        if (ms_trace_grow((void **)members, &sd->members_cap, *nmembers + (size_t)m.size, 4) < 0) FAIL("out of memory");
        memcpy(*members + *nmembers, p + sizeof m, (size_t)m.size * 4u);
        for (int32_t k = 0; k < m.size; k++)
            if ((*members)[*nmembers + (size_t)k] < 0 || (*members)[*nmembers + (size_t)k] >= nranks)
                FAIL("communicator member %d is not a rank of the job", (*members)[*nmembers + (size_t)k]);
        *nmembers += (size_t)m.size;
        return 0;
    }
    case MS_MSG_WAIT: {
        ms_msg_wait m;
        memcpy(&m, p, sizeof m);
        if (m.n < 0 || (size_t)m.n * 8u != h->length - sizeof m)
            FAIL("wait record with %d requests in %u bytes", m.n, h->length);
        e->t_ps = m.t; e->mode = m.mode; e->fn = m.fn; e->flags = m.flags; e->callsite = m.callsite;
        e->list_off = (int64_t)r->nlists;
        e->list_n = m.n;
        if (ms_trace_grow((void **)&r->lists, &sd->lists_cap, r->nlists + (size_t)m.n, 8) < 0) FAIL("out of memory");
        if (m.n) memcpy(r->lists + r->nlists, p + sizeof m, (size_t)m.n * 8u);
        r->nlists += (size_t)m.n;
        return 0;
    }
    case MS_MSG_UNMODELLED:
    case MS_MSG_CALLSITE: {
        size_t n = strnlen((const char *)p, h->length);
        e->list_off = (int64_t)r->ntext;
        e->list_n = (int32_t)n;
        if (ms_trace_grow((void **)&r->text, &sd->text_cap, r->ntext + n + 1, 1) < 0) FAIL("out of memory");
        memcpy(r->text + r->ntext, p, n);
        r->text[r->ntext + n] = 0;
        r->ntext += n + 1;
        return 0;
    }
    case MS_MSG_RESUME: {
        ms_msg_resume m;
        memcpy(&m, p, sizeof m);
        if (m.n < 0 || (size_t)m.n * sizeof(ms_msg_result) != h->length - sizeof m)
            FAIL("resume record with %d results in %u bytes", m.n, h->length);
        e->t_ps = m.t;
        e->mode = m.n;
        e->list_off = (int64_t)r->nresults;
        e->list_n = m.n;
        if (ms_trace_grow((void **)&r->results, &sd->results_cap, r->nresults + (size_t)m.n, sizeof *r->results) < 0)
            FAIL("out of memory");
        for (int32_t k = 0; k < m.n; k++) {
            ms_msg_result x;
            memcpy(&x, p + sizeof m + sizeof x * (size_t)k, sizeof x);
            ms_trace_result *y = &r->results[r->nresults++];
            y->req = x.req; y->complete_time = x.complete_time; y->bytes = x.bytes;
            y->completed = x.completed; y->source = x.source; y->tag = x.tag; y->cancelled = x.cancelled;
        }
        return 0;
    }
#ifdef MS_SITE_TEXT
    case MS_MSG_SITE: {
        /* per call site totals at MPI_Finalize: fn, mode = depth, req = calls, bytes, t_ps = time,
         * callsite = innermost pc, text = the frames */
        ms_msg_site m;
        memcpy(&m, p, sizeof m);
        e->fn = m.fn; e->mode = m.depth; e->req = m.calls; e->bytes = m.bytes; e->t_ps = m.time_ps;
        e->callsite = m.pc0;
        size_t n = strnlen(m.text, sizeof m.text);
        e->list_off = (int64_t)r->ntext;
        e->list_n = (int32_t)n;
        if (ms_trace_grow((void **)&r->text, &sd->text_cap, r->ntext + n + 1, 1) < 0) FAIL("out of memory");
        memcpy(r->text + r->ntext, m.text, n);
        r->text[r->ntext + n] = 0;
        r->ntext += n + 1;
        return 0;
    }
#endif
    }
#undef FAIL
    return 0;
}

int ms_trace_parse_raw(const void *data, size_t len, const char *name, ms_trace_rank *r, int32_t *nranks_out,
                       int32_t **members, size_t *nmembers, char *err, size_t errlen)
{
    const unsigned char *d = data;
    memset(r, 0, sizeof *r);
    side sd = {0};
    sd.members_cap = *nmembers; /* the caller's array may hold more: grow from its length */
    ms_trace_file_header fh;
    if (len < sizeof fh)
        return ms_trace_fail(err, errlen, "%s: offset 0: %zu bytes, too short for the %zu-byte header%s", name, len,
                             sizeof fh, len == 0 ? " (the rank wrote nothing)" : "");
    memcpy(&fh, d, sizeof fh);
    if (memcmp(fh.magic, MS_TRACE_MAGIC, 8))
        return ms_trace_fail(err, errlen, "%s: offset 0: not an mpisim raw trace (bad magic)", name);
    if (fh.version != MS_PROTO_VERSION)
        return ms_trace_fail(err, errlen, "%s: offset 8: written with protocol version %u, this build reads %u", name,
                             fh.version, MS_PROTO_VERSION);
    if (fh.sizes_check != ms_proto_sizes_check())
        return ms_trace_fail(err, errlen, "%s: offset 12: written by a build with other record layouts", name);
    if (fh.size < 1 || fh.rank < 0 || fh.rank >= fh.size)
        return ms_trace_fail(err, errlen, "%s: offset 16: bad rank %d of %d", name, fh.rank, fh.size);
    r->rank = fh.rank;
    r->pid = fh.pid;
    r->cosim = fh.cosim ? 1 : 0;
    r->start_real_ns = fh.start_real_ns;
    memcpy(r->hostname, fh.hostname, sizeof r->hostname);
    r->hostname[sizeof r->hostname - 1] = 0;
    if (nranks_out) *nranks_out = fh.size;

    size_t off = sizeof fh;
#define BAD(...)                                                                                                   \
    do {                                                                                                           \
        char _m[256];                                                                                              \
        snprintf(_m, sizeof _m, __VA_ARGS__);                                                                      \
        ms_trace_fail(err, errlen, "%s: offset %zu: %s", name, off, _m);                                           \
        goto fail;                                                                                                 \
    } while (0)
#define OOM() BAD("out of memory")
    while (off < len) {
        if (len - off < sizeof(ms_msg_header)) {
            r->truncated = 1;
            break;
        }
        ms_msg_header h;
        memcpy(&h, d + off, sizeof h);
        size_t lo, hi;
        if (!length_bounds(h.type, &lo, &hi)) BAD("unknown record type %u (corrupt file?)", h.type);
        if (h.length < lo || h.length > hi)
            BAD("record type %u has length %u (expected %zu..%zu)", h.type, h.length, lo, hi);
        if (len - off - sizeof h < h.length) {
            r->truncated = 1;
            break;
        }
        const unsigned char *p = d + off + sizeof h;
        if (h.type == MS_MSG_THREAD) {
            /* several threads of the rank called MPI (MPI_THREAD_MULTIPLE): replay follows one
             * thread per rank, so such a trace is refused rather than played wrong */
            ms_msg_thread th;
            memcpy(&th, p, sizeof th);
            if (th.slot != 0)
                BAD("the rank's MPI calls come from several threads (thread %d): traces of multi-threaded ranks "
                    "cannot be replayed yet (docs/architecture.md \"Threads\")", th.slot);
            off += sizeof h + h.length;
            continue;
        }
        ms_trace_event *e = new_event(r, &sd, h.type);
        if (!e) OOM();
        if (!decode_fixed(e, h.type, p)) {
            char why[256];
            if (decode_listed(r, &sd, e, &h, p, fh.size, members, nmembers, why, sizeof why) < 0) BAD("%s", why);
        }
        off += sizeof h + h.length;
    }
#undef BAD
#undef OOM
    if (ms_trace_derive(r) < 0) {
        ms_trace_fail(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    return 0;
fail:
    ms_trace_rank_free(r);
    return -1;
}

void ms_trace_rank_free(ms_trace_rank *r)
{
    free(r->ev);
    free(r->lists);
    free(r->results);
    free(r->text);
    memset(r, 0, sizeof *r);
}

/* The whole file `name` in dfd (AT_FDCWD: a path), at most `bound` bytes; messages name `shown`. */
int ms_trace_read_file_at(int dfd, const char *name, const char *shown, size_t bound, char **data, size_t *len,
                          char *err, size_t errlen)
{
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) close(fd);
        return ms_trace_fail(err, errlen, "%s: %s", shown, strerror(e));
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    int too_big = 0;
    while (buf) {
        if (n == cap) {
            if (cap >= bound) {
                too_big = fgetc(f) != EOF;
                break;
            }
            size_t nc = cap * 2 < bound ? cap * 2 : bound;
            char *b = realloc(buf, nc + 1);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap = nc;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) return ms_trace_fail(err, errlen, "%s: out of memory", shown);
    if (bad || too_big) {
        free(buf);
        if (too_big) return ms_trace_fail(err, errlen, "%s: larger than %zu MiB (not a trace file?)", shown, bound >> 20);
        return ms_trace_fail(err, errlen, "%s: read error", shown);
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

int ms_trace_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    return ms_trace_read_file_at(AT_FDCWD, path, path, SIZE_MAX / 2, data, len, err, errlen);
}

int ms_trace_read_raw_at(int dfd, const char *name, const char *shown, ms_trace_rank *r, int32_t *nranks_out,
                         int32_t **members, size_t *nmembers, char *err, size_t errlen)
{
    char *data;
    size_t len;
    if (ms_trace_read_file_at(dfd, name, shown, SIZE_MAX / 2, &data, &len, err, errlen) < 0) return -1;
    int rc = ms_trace_parse_raw(data, len, shown, r, nranks_out, members, nmembers, err, errlen);
    free(data);
    return rc;
}

int ms_trace_read_raw(const char *path, ms_trace_rank *r, int32_t *nranks_out, int32_t **members, size_t *nmembers,
                      char *err, size_t errlen)
{
    return ms_trace_read_raw_at(AT_FDCWD, path, path, r, nranks_out, members, nmembers, err, errlen);
}
