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

int ms_trace_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > SIZE_MAX / 4 / elem) return -1;
        nc *= 2;
    }
    void *q = realloc(*p, nc * elem);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

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
#ifdef MS_SITE_TEXT
    case MS_MSG_SITE: *lo = *hi = sizeof(ms_msg_site); return 1;
#endif
    default: return 0;
    }
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
        ms_trace_event *e = new_event(r, &sd, h.type);
        if (!e) OOM();
        switch (h.type) {
        case MS_MSG_ISEND: {
            ms_msg_isend m;
            memcpy(&m, p, sizeof m);
            e->t_ps = m.t; e->req = m.req; e->comm = m.comm; e->bytes = m.bytes;
            e->peer = m.dst; e->tag = m.tag; e->mode = m.mode; e->fn = m.fn;
            e->callsite = m.buf;   /* the user's buffer (host model's registration cache) */
            break;
        }
        case MS_MSG_IRECV: {
            ms_msg_irecv m;
            memcpy(&m, p, sizeof m);
            e->t_ps = m.t; e->req = m.req; e->comm = m.comm; e->bytes = m.bytes;
            e->peer = m.src; e->tag = m.tag; e->fn = m.fn; e->flags = m.flags & MS_IRECV_NOTIFY;
            e->callsite = m.buf;   /* as for ISEND */
            break;
        }
        case MS_MSG_CANCEL:
        case MS_MSG_FREE: {
            ms_msg_cancel m;
            memcpy(&m, p, sizeof m);
            e->t_ps = m.t; e->req = m.req; e->fn = m.fn;
            break;
        }
        case MS_MSG_ICOLL: {
            ms_msg_icoll m;
            memcpy(&m, p, sizeof m);
            if (m.ncounts < 0 || (size_t)m.ncounts * 8u != h.length - sizeof m)
                BAD("collective record with %d counts in %u bytes", m.ncounts, h.length);
            e->t_ps = m.t; e->req = m.req; e->comm = m.comm; e->bytes = m.bytes;
            e->mode = m.kind; e->peer = m.root; e->fn = m.fn; e->flags = m.inter_low;
            e->list_off = (int64_t)r->nlists;
            e->list_n = m.ncounts;
            if (ms_trace_grow((void **)&r->lists, &sd.lists_cap, r->nlists + (size_t)m.ncounts, 8) < 0) OOM();
            if (m.ncounts) memcpy(r->lists + r->nlists, p + sizeof m, (size_t)m.ncounts * 8u);
            r->nlists += (size_t)m.ncounts;
            break;
        }
        case MS_MSG_RMA: {
            ms_msg_rma m;
            memcpy(&m, p, sizeof m);
            e->t_ps = m.t; e->req = m.req; e->comm = m.comm; e->bytes = m.bytes; e->peer = m.target;
            e->mode = m.kind; e->fn = m.fn;
            e->callsite = m.result_bytes;   /* RMA records: the result's bytes */
            break;
        }
        case MS_MSG_EXIT: {
            ms_msg_exit m;
            memcpy(&m, p, sizeof m);
            e->mode = m.code;
            e->flags = m.finalized;
            break;
        }
        case MS_MSG_COMM_ADD: {
            ms_msg_comm_add m;
            memcpy(&m, p, sizeof m);
            if (m.size < 1 || (size_t)m.size * 4u != h.length - sizeof m)
                BAD("communicator record of size %d in %u bytes", m.size, h.length);
            e->comm = m.comm;
            e->peer = m.size;
            e->list_n = m.size;
            e->list_off = (int64_t)*nmembers;
            if (ms_trace_grow((void **)members, &sd.members_cap, *nmembers + (size_t)m.size, 4) < 0) OOM();
            memcpy(*members + *nmembers, p + sizeof m, (size_t)m.size * 4u);
            for (int32_t k = 0; k < m.size; k++)
                if ((*members)[*nmembers + (size_t)k] < 0 || (*members)[*nmembers + (size_t)k] >= fh.size)
                    BAD("communicator member %d is not a rank of the job", (*members)[*nmembers + (size_t)k]);
            *nmembers += (size_t)m.size;
            break;
        }
        case MS_MSG_WAIT: {
            ms_msg_wait m;
            memcpy(&m, p, sizeof m);
            if (m.n < 0 || (size_t)m.n * 8u != h.length - sizeof m)
                BAD("wait record with %d requests in %u bytes", m.n, h.length);
            e->t_ps = m.t; e->mode = m.mode; e->fn = m.fn; e->flags = m.flags; e->callsite = m.callsite;
            e->list_off = (int64_t)r->nlists;
            e->list_n = m.n;
            if (ms_trace_grow((void **)&r->lists, &sd.lists_cap, r->nlists + (size_t)m.n, 8) < 0) OOM();
            if (m.n) memcpy(r->lists + r->nlists, p + sizeof m, (size_t)m.n * 8u);
            r->nlists += (size_t)m.n;
            break;
        }
        case MS_MSG_PROBE: {
            ms_msg_probe m;
            memcpy(&m, p, sizeof m);
            e->t_ps = m.t; e->comm = m.comm; e->peer = m.src; e->tag = m.tag; e->mode = m.blocking;
            e->fn = m.fn; e->callsite = m.callsite;
            break;
        }
        case MS_MSG_FINALIZE: {
            ms_msg_finalize m;
            memcpy(&m, p, sizeof m);
            e->t_ps = m.t; e->compute_ps = m.compute_ps; e->raw_compute_ns = m.mpi_ps; e->bytes = m.calls;
            e->req = m.unmodelled_calls;
            break;
        }
        case MS_MSG_UNMODELLED:
        case MS_MSG_CALLSITE: {
            size_t n = strnlen((const char *)p, h.length);
            e->list_off = (int64_t)r->ntext;
            e->list_n = (int32_t)n;
            if (ms_trace_grow((void **)&r->text, &sd.text_cap, r->ntext + n + 1, 1) < 0) OOM();
            memcpy(r->text + r->ntext, p, n);
            r->text[r->ntext + n] = 0;
            r->ntext += n + 1;
            break;
        }
        case MS_MSG_CLOCK: {
            ms_msg_clock m;
            memcpy(&m, p, sizeof m);
            e->t_ps = m.t;
            break;
        }
        case MS_MSG_TR_CALL: {
            ms_msg_tr_call m;
            memcpy(&m, p, sizeof m);
            e->compute_ps = m.compute_ps; e->raw_compute_ns = m.raw_compute_ns; e->real_entry_ns = m.real_entry_ns;
            e->callsite = m.callsite; e->fn = m.fn;
            break;
        }
        case MS_MSG_TR_EXIT: {
            ms_msg_tr_exit m;
            memcpy(&m, p, sizeof m);
            e->real_exit_ns = m.real_exit_ns; e->t_ps = m.clock_ps; e->fn = m.fn; e->mode = m.rc;
            break;
        }
        case MS_MSG_TR_PCONTROL: {
            ms_msg_tr_pcontrol m;
            memcpy(&m, p, sizeof m);
            e->t_ps = m.clock_ps; e->real_entry_ns = m.real_ns; e->mode = m.level;
            break;
        }
        case MS_MSG_RESUME: {
            ms_msg_resume m;
            memcpy(&m, p, sizeof m);
            if (m.n < 0 || (size_t)m.n * sizeof(ms_msg_result) != h.length - sizeof m)
                BAD("resume record with %d results in %u bytes", m.n, h.length);
            e->t_ps = m.t;
            e->mode = m.n;
            e->list_off = (int64_t)r->nresults;
            e->list_n = m.n;
            if (ms_trace_grow((void **)&r->results, &sd.results_cap, r->nresults + (size_t)m.n, sizeof *r->results) < 0)
                OOM();
            for (int32_t k = 0; k < m.n; k++) {
                ms_msg_result x;
                memcpy(&x, p + sizeof m + sizeof x * (size_t)k, sizeof x);
                ms_trace_result *y = &r->results[r->nresults++];
                y->req = x.req; y->complete_time = x.complete_time; y->bytes = x.bytes;
                y->completed = x.completed; y->source = x.source; y->tag = x.tag; y->cancelled = x.cancelled;
            }
            break;
        }
        case MS_MSG_RESOLVE: {
            ms_msg_resolve m;
            memcpy(&m, p, sizeof m);
            e->req = m.req; e->bytes = m.bytes; e->peer = m.source; e->tag = m.tag;
            break;
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
            if (ms_trace_grow((void **)&r->text, &sd.text_cap, r->ntext + n + 1, 1) < 0) OOM();
            memcpy(r->text + r->ntext, m.text, n);
            r->text[r->ntext + n] = 0;
            r->ntext += n + 1;
            break;
        }
#endif
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
static int read_file_at(int dfd, const char *name, const char *shown, size_t bound, char **data, size_t *len,
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
    return read_file_at(AT_FDCWD, path, path, SIZE_MAX / 2, data, len, err, errlen);
}

static int read_raw_at(int dfd, const char *name, const char *shown, ms_trace_rank *r, int32_t *nranks_out,
                       int32_t **members, size_t *nmembers, char *err, size_t errlen)
{
    char *data;
    size_t len;
    if (read_file_at(dfd, name, shown, SIZE_MAX / 2, &data, &len, err, errlen) < 0) return -1;
    int rc = ms_trace_parse_raw(data, len, shown, r, nranks_out, members, nmembers, err, errlen);
    free(data);
    return rc;
}

int ms_trace_read_raw(const char *path, ms_trace_rank *r, int32_t *nranks_out, int32_t **members, size_t *nmembers,
                      char *err, size_t errlen)
{
    return read_raw_at(AT_FDCWD, path, path, r, nranks_out, members, nmembers, err, errlen);
}

/* ---- a capture directory -------------------------------------------------------------------- */

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

/* meta.json is small (the configuration and the program's arguments): a bound against a file
 * that is not one */
#define META_MAX ((size_t)64 << 20)

static int read_meta(int dfd, const char *dir, ms_trace *t, int *nranks, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    struct stat st;
    if (fstatat(dfd, "meta.json", &st, 0) != 0) return 0; /* absent: nothing known */
    char *text;
    size_t len;
    if (read_file_at(dfd, "meta.json", path, META_MAX, &text, &len, err, errlen) < 0) return -1;
    json_error_t jerr;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) {
        free(text);
        return ms_trace_fail(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    }
    int rc = -1;
    if (!json_is_object(j)) {
        ms_trace_fail(err, errlen, "%s: not a JSON object", path);
        goto out;
    }
    const json_t *v;
    if ((v = json_object_get(j, "nranks")) && json_is_number(v)) {
        if (json_number_value(v) < 1 || json_number_value(v) > 1e7) {
            ms_trace_fail(err, errlen, "%s: nranks %g is out of range", path, json_number_value(v));
            goto out;
        }
        *nranks = (int)json_number_value(v);
    }
    if ((v = json_object_get(j, "program")) && json_is_array(v)) {
        t->program = calloc(json_array_size(v) + 1, sizeof *t->program);
        if (!t->program) goto oom;
        for (size_t i = 0; i < json_array_size(v); i++) {
            const json_t *a = json_array_get(v, i);
            t->program[i] = json_is_string(a) ? dup_str(json_string_value(a)) : json_dumps(a, JSON_ENCODE_ANY);
            if (!t->program[i]) goto oom;
            t->nprogram++;
        }
    }
    /* kept as JSON text (the trace stores it so): one line, keys in the file's order */
    if ((v = json_object_get(j, "config")) && json_is_object(v))
        if (!(t->config_json = json_dumps(v, 0))) goto oom;
    if ((v = json_object_get(j, "machine")) && !json_is_null(v))
        if (!(t->machine = json_is_string(v) ? dup_str(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY)))
            goto oom;
    if ((v = json_object_get(j, "bindings")) && !json_is_null(v))
        if (!(t->bindings_json = json_dumps(v, JSON_ENCODE_ANY))) goto oom;
    if ((v = json_object_get(j, "mpisim_version")) && json_is_string(v))
        if (!(t->mpisim_version = dup_str(json_string_value(v)))) goto oom;
    rc = 0;
    goto out;
oom:
    ms_trace_fail(err, errlen, "%s: out of memory", path);
out:
    json_decref(j);
    free(text);
    return rc;
}

/* The shim names them rank-%06d.mstrace; rank-<R>.mstrace is accepted too. -1 if neither exists
 * (path then holds the shim's form). */
static int rank_path(int dfd, int rank, char *name, size_t len, struct stat *st)
{
    snprintf(name, len, "rank-%d.mstrace", rank);
    if (fstatat(dfd, name, st, 0) == 0) return 0;
    snprintf(name, len, "rank-%06d.mstrace", rank);
    return fstatat(dfd, name, st, 0) == 0 ? 0 : -1;
}

/* The job size from the header of any rank file in dir (when meta.json is absent); 0 if none. */
/* A directory stream of dfd (its own descriptor: closedir closes that one). */
static DIR *open_dir_at(int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) close(fd);
    return d;
}

static int32_t size_from_any_rank(int dfd, const char *dir, int32_t **members, size_t *nmembers, char *err,
                                  size_t errlen)
{
    DIR *d = open_dir_at(dfd);
    if (!d) return 0;
    struct dirent *e;
    int32_t n = 0;
    char path[4096];
    while (!n && (e = readdir(d))) {
        int r;
        char tail[16];
        if (sscanf(e->d_name, "rank-%d.%15s", &r, tail) != 2 || strcmp(tail, "mstrace")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ms_trace_rank rr;
        if (read_raw_at(dfd, e->d_name, path, &rr, &n, members, nmembers, err, errlen) == 0) ms_trace_rank_free(&rr);
        else n = 0;
        *nmembers = 0;
    }
    closedir(d);
    return n;
}

/* How many non-empty rank-<R>.mstrace files dir holds (nothing read). */
static long count_rank_files(int dfd)
{
    DIR *d = open_dir_at(dfd);
    if (!d) return 0;
    struct dirent *e;
    long n = 0;
    while ((e = readdir(d))) {
        int r;
        char tail[16];
        struct stat st;
        if (sscanf(e->d_name, "rank-%d.%15s", &r, tail) == 2 && !strcmp(tail, "mstrace") &&
            fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_size > 0)
            n++;
    }
    closedir(d);
    return n;
}

int ms_trace_missing_ranks(const ms_trace *t, char *buf, size_t len)
{
    int n = 0;
    size_t off = 0;
    if (len) buf[0] = 0;
    for (int i = 0; i < t->nranks; i++)
        if (t->ranks[i].missing) {
            if (off < len) off += (size_t)snprintf(buf + off, len - off, "%s%d", n ? ", " : "", i);
            n++;
        }
    return n;
}

ms_trace *ms_trace_read_dir(const char *dir, char *err, size_t errlen)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        ms_trace_fail(err, errlen, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    ms_trace *t = ms_trace_read_dirfd(dfd, dir, err, errlen);
    close(dfd);
    return t;
}

ms_trace *ms_trace_read_dirfd(int dfd, const char *dir, char *err, size_t errlen)
{
    ms_trace *t = calloc(1, sizeof *t);
    if (!t) {
        ms_trace_fail(err, errlen, "out of memory");
        return NULL;
    }
    int nranks = 0;
    int32_t *members = NULL;
    size_t nmembers = 0;
    char path[4096];
    if (read_meta(dfd, dir, t, &nranks, err, errlen) < 0) goto fail;
    if (nranks < 0) goto fail;   /* read_meta keeps it in 1..1e7 */
    if (nranks > 0 && count_rank_files(dfd) == 0) {
        /* checked before the claim costs a slot and a stat per claimed rank (up to 1e7) */
        ms_trace_fail(err, errlen, "%s: none of the %d ranks left records (every rank-<R>.mstrace missing or empty)",
                      dir, nranks);
        goto fail;
    }
    if (nranks == 0) {
        /* no meta.json: the job size comes from a rank file's header */
        nranks = size_from_any_rank(dfd, dir, &members, &nmembers, err, errlen);
        if (nranks <= 0) {
            ms_trace_fail(err, errlen, "%s: no readable rank-<R>.mstrace and no meta.json (not a trace directory?)",
                          dir);
            goto fail;
        }
    }
    t->nranks = nranks;
    t->ranks = calloc((size_t)nranks, sizeof *t->ranks);
    if (!t->ranks) {
        ms_trace_fail(err, errlen, "out of memory");
        goto fail;
    }
    int present = 0;
    for (int i = 0; i < nranks; i++) {
        struct stat st;
        char name[64];
        if (rank_path(dfd, i, name, sizeof name, &st) < 0 || st.st_size == 0) {
            /* the rank died before writing (or before creating its file): no records */
            t->ranks[i].rank = i;
            t->ranks[i].missing = 1;
            continue;
        }
        present++;
        int32_t n = 0;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (read_raw_at(dfd, name, path, &t->ranks[i], &n, &members, &nmembers, err, errlen) < 0) goto fail;
        if (n != nranks || t->ranks[i].rank != i) {
            ms_trace_fail(err, errlen, "%s: offset 16: the header says rank %d of %d, expected rank %d of %d", path,
                          t->ranks[i].rank, n, i, nranks);
            goto fail;
        }
    }
    if (!present) {
        ms_trace_fail(err, errlen, "%s: none of the %d ranks left records (every rank-<R>.mstrace missing or empty)",
                      dir, nranks);
        goto fail;
    }
    if (ms_trace_build_comms(t, members, nmembers, err, errlen) < 0) goto fail;
    free(members);
    return t;
fail:
    free(members);
    ms_trace_free(t);
    return NULL;
}

/* COMM_ADD events point into the raw member array; gather distinct communicators into
 * t->comms/t->members and point the events at them. */
int ms_trace_build_comms(ms_trace *t, const int32_t *members, size_t nmembers, char *err, size_t errlen)
{
    size_t cap_c = 0, cap_m = 0;
    for (int i = 0; i < t->nranks; i++) {
        ms_trace_rank *r = &t->ranks[i];
        for (size_t k = 0; k < r->nev; k++) {
            ms_trace_event *e = &r->ev[k];
            if (e->kind != MS_MSG_COMM_ADD) continue;
            if (e->list_off < 0 || (size_t)e->list_off + (size_t)e->list_n > nmembers)
                return ms_trace_fail(err, errlen, "rank %d: communicator record out of range", i);
            const int32_t *mem = members + e->list_off;
            size_t c;
            for (c = 0; c < t->ncomms; c++)
                if (t->comms[c].id == e->comm) break;
            if (c < t->ncomms) {
                if (t->comms[c].size != e->list_n ||
                    memcmp(t->members + t->comms[c].offset, mem, sizeof *mem * (size_t)e->list_n))
                    return ms_trace_fail(err, errlen,
                                         "rank %d: communicator %#llx registered with other members than before", i,
                                         (unsigned long long)e->comm);
            } else {
                if (ms_trace_grow((void **)&t->comms, &cap_c, t->ncomms + 1, sizeof *t->comms) < 0 ||
                    ms_trace_grow((void **)&t->members, &cap_m, t->nmembers + (size_t)e->list_n, 4) < 0)
                    return ms_trace_fail(err, errlen, "out of memory");
                ms_trace_comm *cm = &t->comms[t->ncomms++];
                cm->id = e->comm;
                cm->size = e->list_n;
                cm->pad = 0;
                cm->offset = (int64_t)t->nmembers;
                memcpy(t->members + t->nmembers, mem, sizeof *mem * (size_t)e->list_n);
                t->nmembers += (size_t)e->list_n;
            }
            e->list_off = (int64_t)c;
            e->list_n = 1;
        }
    }
    return 0;
}

void ms_trace_free(ms_trace *t)
{
    if (!t) return;
    for (int i = 0; t->ranks && i < t->nranks; i++) ms_trace_rank_free(&t->ranks[i]);
    free(t->ranks);
    free(t->comms);
    free(t->members);
    for (int i = 0; t->program && i < t->nprogram; i++) free(t->program[i]);
    free(t->program);
    free(t->config_json);
    free(t->machine);
    free(t->bindings_json);
    free(t->mpisim_version);
    for (size_t i = 0; t->fn_names && i < t->nfn; i++) free(t->fn_names[i]);
    free(t->fn_names);
    free(t);
}

const char *ms_trace_fn_name(const ms_trace *t, int fn)
{
    if (!t || fn < 0 || (size_t)fn >= t->nfn || !t->fn_names[fn]) return "?";
    return t->fn_names[fn];
}

int ms_trace_set_fn_names(ms_trace *t, const char *const *names, size_t n)
{
    for (size_t i = 0; t->fn_names && i < t->nfn; i++) free(t->fn_names[i]);
    free(t->fn_names);
    t->nfn = 0;
    t->fn_names = calloc(n ? n : 1, sizeof *t->fn_names);
    if (!t->fn_names) return -1;
    for (size_t i = 0; i < n; i++)
        if (!(t->fn_names[i] = dup_str(names[i] ? names[i] : "?"))) return -1;
    t->nfn = n;
    return 0;
}

static int known_kind(int32_t k)
{
    switch (k) {
    case MS_MSG_ISEND: case MS_MSG_IRECV: case MS_MSG_ICOLL: case MS_MSG_COMM_ADD: case MS_MSG_WAIT: case MS_MSG_CANCEL: case MS_MSG_FREE:
    case MS_MSG_PROBE: case MS_MSG_FINALIZE: case MS_MSG_UNMODELLED: case MS_MSG_CALLSITE: case MS_MSG_CLOCK:
    case MS_MSG_TR_CALL: case MS_MSG_TR_EXIT: case MS_MSG_TR_PCONTROL: case MS_MSG_RESUME: case MS_MSG_RESOLVE:
    case MS_MSG_RMA: case MS_MSG_EXIT:
        return 1;
#ifdef MS_SITE_TEXT
    case MS_MSG_SITE:
        return 1;
#endif
    default:
        return 0;
    }
}

/* The records being checked and what they point into: a whole rank in memory, or a window of it
 * (then the side arrays' parts in the window must hold what the records point to). */
typedef struct rec_view {
    const ms_trace_event *ev;     /* record k is ev[k - ev_from] */
    size_t ev_from;
    size_t nlists, nresults, ntext;   /* the rank's sizes */
    const uint64_t *lists;        /* lists[j - lists_from], j in [lists_from, lists_to) */
    size_t lists_from, lists_to, results_from, results_to, text_from, text_to;
} rec_view;

/* Sizes and times a record claims, against what the model can take (MS_TRACE_MAX_*). */
static int check_bounds(const ms_trace *t, const rec_view *v, const ms_trace_event *e, const char *name, int i,
                        size_t k, char *err, size_t errlen)
{
#define fn ms_trace_fn_name(t, e->fn)   /* looked up for a message only (this runs per record) */
    int sized = e->kind == MS_MSG_ISEND || e->kind == MS_MSG_IRECV || e->kind == MS_MSG_ICOLL ||
                e->kind == MS_MSG_RESOLVE || e->kind == MS_MSG_RMA;
    if (e->kind == MS_MSG_RMA && e->callsite > MS_TRACE_MAX_BYTES)
        return ms_trace_fail(err, errlen,
                             "%s: rank %d event %zu (%s): a result of %llu bytes, more than the %llu (64 GiB) a record "
                             "may claim (damaged record?)",
                             name, i, k, fn, (unsigned long long)e->callsite, (unsigned long long)MS_TRACE_MAX_BYTES);
    if (sized && e->bytes > MS_TRACE_MAX_BYTES)
        return ms_trace_fail(err, errlen,
                             "%s: rank %d event %zu (%s): %llu bytes, more than the %llu (64 GiB) a record may claim "
                             "(damaged record?)",
                             name, i, k, fn, (unsigned long long)e->bytes, (unsigned long long)MS_TRACE_MAX_BYTES);
    if (e->kind == MS_MSG_ICOLL)
        for (int32_t c = 0; c < e->list_n; c++) {
            uint64_t b = v->lists[(size_t)e->list_off + (size_t)c - v->lists_from];
            if (b > MS_TRACE_MAX_BYTES)
                return ms_trace_fail(err, errlen,
                                     "%s: rank %d event %zu (%s): block %d of %llu bytes, more than the %llu a record "
                                     "may claim (damaged record?)",
                                     name, i, k, fn, c, (unsigned long long)b, (unsigned long long)MS_TRACE_MAX_BYTES);
        }
    if ((e->kind == MS_MSG_WAIT || e->kind == MS_MSG_RESUME) && e->list_n > MS_MAX_WAIT_REQS)
        return ms_trace_fail(err, errlen, "%s: rank %d event %zu (%s): %d requests, more than the %d one call takes",
                             name, i, k, fn, e->list_n, MS_MAX_WAIT_REQS);
    if (e->kind == MS_MSG_ICOLL && e->list_n > (1 << 24))
        return ms_trace_fail(err, errlen, "%s: rank %d event %zu (%s): %d counts, more than 2^24", name, i, k, fn,
                             e->list_n);
    if (e->kind == MS_MSG_TR_CALL &&
        (e->compute_ps < 0 || e->compute_ps > MS_TRACE_MAX_GAP_PS || e->raw_compute_ns < 0 ||
         e->raw_compute_ns > MS_TRACE_MAX_GAP_PS / 1000))
        return ms_trace_fail(err, errlen,
                             "%s: rank %d event %zu (%s): computation of %lld ps (%lld ns measured), outside 0..2^60 ps "
                             "(damaged record?)",
                             name, i, k, fn, (long long)e->compute_ps, (long long)e->raw_compute_ns);
#undef fn
    return 0;
}

static int validate_view(const ms_trace *t, int i, const rec_view *v, size_t from, size_t to, const char *name,
                         char *err, size_t errlen)
{
    for (size_t k = from; k < to; k++) {
        const ms_trace_event *e = &v->ev[k - v->ev_from];
        /* most records: what the general checks below would find, in fewer steps */
        if (e->kind == MS_MSG_TR_EXIT || e->kind == MS_MSG_CLOCK) continue;
        if ((e->kind == MS_MSG_ISEND || e->kind == MS_MSG_IRECV) && e->bytes <= MS_TRACE_MAX_BYTES) continue;
        if (e->kind == MS_MSG_TR_CALL && e->compute_ps >= 0 && e->compute_ps <= MS_TRACE_MAX_GAP_PS &&
            e->raw_compute_ns >= 0 && e->raw_compute_ns <= MS_TRACE_MAX_GAP_PS / 1000)
            continue;
        if (!known_kind(e->kind))
            return ms_trace_fail(err, errlen, "%s: rank %d event %zu: unknown kind %d", name, i, k, e->kind);
        size_t limit = 0, in_from = 0, in_to = 0;
        int check = 1, text = 0;
        switch (e->kind) {
        case MS_MSG_WAIT: case MS_MSG_ICOLL: limit = v->nlists; in_from = v->lists_from; in_to = v->lists_to; break;
        case MS_MSG_RESUME: limit = v->nresults; in_from = v->results_from; in_to = v->results_to; break;
        case MS_MSG_UNMODELLED: case MS_MSG_CALLSITE:
            limit = v->ntext; in_from = v->text_from; in_to = v->text_to; text = 1; break;
#ifdef MS_SITE_TEXT
        case MS_MSG_SITE: limit = v->ntext; in_from = v->text_from; in_to = v->text_to; text = 1; break;
#endif
        case MS_MSG_COMM_ADD:
            if (e->list_off < 0 || (size_t)e->list_off >= t->ncomms || t->comms[e->list_off].size != e->peer ||
                t->comms[e->list_off].id != e->comm)
                return ms_trace_fail(err, errlen, "%s: rank %d event %zu: communicator index out of range", name, i,
                                     k);
            check = 0;
            break;
        default: check = 0;
        }
        if (check && (e->list_n < 0 || e->list_off < 0 || (uint64_t)e->list_off + (uint64_t)e->list_n > limit))
            return ms_trace_fail(err, errlen, "%s: rank %d event %zu: list [%lld, +%d) out of range", name, i, k,
                                 (long long)e->list_off, e->list_n);
        if ((e->kind == MS_MSG_UNMODELLED || e->kind == MS_MSG_CALLSITE || e->kind == 12) &&
            (size_t)e->list_off + (size_t)e->list_n >= v->ntext)
            return ms_trace_fail(err, errlen, "%s: rank %d event %zu: text out of range", name, i, k);
        /* a window's side arrays must hold what its records point to (a text with its NUL) */
        if (check && e->list_n + text > 0 &&
            ((size_t)e->list_off < in_from || (size_t)e->list_off + (size_t)e->list_n + (size_t)text > in_to))
            return ms_trace_fail(err, errlen, "%s: rank %d event %zu: list [%lld, +%d) not in what the reader sent",
                                 name, i, k, (long long)e->list_off, e->list_n);
        if (e->kind == MS_MSG_ICOLL && e->list_n > 0 && (e->mode < 0 || e->mode > 64))
            return ms_trace_fail(err, errlen, "%s: rank %d event %zu: bad collective kind %d", name, i, k, e->mode);
        if (check_bounds(t, v, e, name, i, k, err, errlen) < 0) return -1;
    }
    return 0;
}

int ms_trace_validate_events(const ms_trace *t, int i, size_t from, size_t to, const char *name, char *err,
                             size_t errlen)
{
    const ms_trace_rank *r = &t->ranks[i];
    if (to > r->nev) to = r->nev;
    rec_view v = {r->ev, 0, r->nlists, r->nresults, r->ntext, r->lists, 0, r->nlists, 0, r->nresults, 0, r->ntext};
    return validate_view(t, i, &v, from, to, name, err, errlen);
}

int ms_trace_validate_window(const ms_trace *t, int i, const ms_trace_rank_size *sz, const ms_trace_window *w,
                             size_t from, size_t to, const char *name, char *err, size_t errlen)
{
    if (from < w->from || to > w->from + w->n || to > sz->nev)
        return ms_trace_fail(err, errlen, "%s: rank %d: records [%zu, %zu) not in what the reader sent", name, i, from,
                             to);
    rec_view v = {w->ev, w->from, sz->nlists, sz->nresults, sz->ntext, w->lists,
                  w->lists_from, w->lists_from + w->nlists, w->results_from, w->results_from + w->nresults,
                  w->text_from, w->text_from + w->ntext};
    return validate_view(t, i, &v, from, to, name, err, errlen);
}

void ms_trace_window_free(ms_trace_window *w)
{
    for (int k = 0; k < 4; k++) free(w->buf[k]);
    memset(w, 0, sizeof *w);
}

void *ms_trace_window_room(ms_trace_window *w, int k, size_t n, size_t elem)
{
    if (n <= w->cap[k]) return w->buf[k];
    /* as asked (a window holds one stretch: no room to grow into), at least 64 elements */
    size_t c = n < 64 ? 64 : n;
    if (c > SIZE_MAX / elem) return NULL;
    void *q = realloc(w->buf[k], c * elem);
    if (!q) return NULL;
    w->buf[k] = q;
    w->cap[k] = c;
    return q;
}

size_t ms_trace_window_bytes(const ms_trace_window *w)
{
    static const size_t elem[4] = {sizeof(ms_trace_event), sizeof(uint64_t), sizeof(ms_trace_result), 1};
    size_t b = 0;
    for (int k = 0; k < 4; k++) b += w->cap[k] * elem[k];
    return b;
}

static int validate_comms(const ms_trace *t, const char *name, char *err, size_t errlen)
{
    if (t->nranks < 1) return ms_trace_fail(err, errlen, "%s: no ranks", name);
    for (size_t c = 0; c < t->ncomms; c++) {
        const ms_trace_comm *cm = &t->comms[c];
        if (cm->size < 1 || cm->offset < 0 || (uint64_t)cm->offset + (uint64_t)cm->size > t->nmembers)
            return ms_trace_fail(err, errlen, "%s: /comms entry %zu out of range", name, c);
        for (int32_t k = 0; k < cm->size; k++) {
            int32_t w = t->members[cm->offset + k];
            if (w < 0 || w >= t->nranks)
                return ms_trace_fail(err, errlen, "%s: /comms entry %zu names rank %d of a %d-rank job", name, c, w,
                                     t->nranks);
        }
    }
    return 0;
}

/* 0: rank i is stored as rank i; part 1: its text is terminated */
static int validate_rank(const ms_trace *t, int i, int part, const char *name, char *err, size_t errlen)
{
    const ms_trace_rank *r = &t->ranks[i];
    if (part == 0 && r->rank != i) return ms_trace_fail(err, errlen, "%s: rank %d is stored as rank %d", name, i, r->rank);
    if (part == 1 && r->ntext && r->text[r->ntext - 1] != 0)
        return ms_trace_fail(err, errlen, "%s: rank %d: text not terminated", name, i);
    return 0;
}

int ms_trace_validate_shape(const ms_trace *t, const char *name, char *err, size_t errlen)
{
    if (validate_comms(t, name, err, errlen) < 0) return -1;
    for (int i = 0; i < t->nranks; i++)
        if (validate_rank(t, i, 0, name, err, errlen) < 0 || validate_rank(t, i, 1, name, err, errlen) < 0) return -1;
    return 0;
}

int ms_trace_validate(const ms_trace *t, const char *name, char *err, size_t errlen)
{
    if (validate_comms(t, name, err, errlen) < 0) return -1;
    for (int i = 0; i < t->nranks; i++)
        if (validate_rank(t, i, 0, name, err, errlen) < 0 ||
            ms_trace_validate_events(t, i, 0, t->ranks[i].nev, name, err, errlen) < 0 ||
            validate_rank(t, i, 1, name, err, errlen) < 0)
            return -1;
    return 0;
}
