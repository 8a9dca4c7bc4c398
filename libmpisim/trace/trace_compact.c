/* Compact record streams (HDF5 schema mpisim-trace/2, replay/README.md): a stretch of a rank's
 * records as bytes, each record a kind byte, a mask of the fields that differ from their
 * prediction, and for each such field the difference as a zigzag LEB128 varint. Predictions: the
 * previous record of the same kind within the stretch (its communicator, peer, tag, bytes, call
 * site, function...), and for the running quantities the last one of any record (the clock, the
 * real time, the request id). A stencil's or a fan's record is 6-12 bytes instead of 128, and
 * decoding one costs tens of nanoseconds: the deflated 128-byte records made reading the trace the
 * replay's bound (~0.6 us per record to inflate). A stretch is decoded on its own (predictions
 * start afresh), so a reader can take any one. Decoding trusts nothing: every byte read is bounds
 * checked, a record's varints are at most 10 bytes, the stretch must end exactly with its last
 * record; what the values mean is checked afterwards by ms_trace_validate_*. */
#include "ms_trace.h"
#include "ms_trace_internal.h"

#include <stddef.h>
#include <string.h>

/* Fields in the mask's bit order. */
enum {
    F_FN, F_T, F_COMPUTE, F_RAWC, F_ENTRY, F_EXIT, F_COMPLETE, F_COMM, F_BYTES, F_REQ, F_SITE, F_LOFF, F_LN, F_PEER,
    F_TAG, F_MODE, F_FLAGS, F_MSRC, F_MTAG, F_PAD, F_COUNT
};

/* Where each field lies in a record, and whether it is 64 bits wide. */
static const unsigned short field_off[F_COUNT] = {
    offsetof(ms_trace_event, fn), offsetof(ms_trace_event, t_ps), offsetof(ms_trace_event, compute_ps),
    offsetof(ms_trace_event, raw_compute_ns), offsetof(ms_trace_event, real_entry_ns),
    offsetof(ms_trace_event, real_exit_ns), offsetof(ms_trace_event, complete_ps), offsetof(ms_trace_event, comm),
    offsetof(ms_trace_event, bytes), offsetof(ms_trace_event, req), offsetof(ms_trace_event, callsite),
    offsetof(ms_trace_event, list_off), offsetof(ms_trace_event, list_n), offsetof(ms_trace_event, peer),
    offsetof(ms_trace_event, tag), offsetof(ms_trace_event, mode), offsetof(ms_trace_event, flags),
    offsetof(ms_trace_event, matched_source), offsetof(ms_trace_event, matched_tag), offsetof(ms_trace_event, pad)};
static const unsigned char field_wide[F_COUNT] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};

/* A slot of predictions per kind (kinds beyond the known ones share the last); the class says which
 * side array a kind's list_off runs through: 1 lists, 2 results, 3 text. */
#define SLOTS 20
static const unsigned char slot_tab[128] = {
    [MS_TRACE_ISEND] = 1, [MS_TRACE_IRECV] = 2, [MS_TRACE_ICOLL] = 3, [MS_TRACE_COMM_ADD] = 4, [MS_TRACE_WAIT] = 5,
    [MS_TRACE_PROBE] = 6, [MS_TRACE_FINALIZE] = 7, [MS_TRACE_UNMODELLED] = 8, [MS_TRACE_CALLSITE] = 9,
    [MS_TRACE_CLOCK] = 10, [MS_TRACE_SITE] = 11, [MS_TRACE_CANCEL] = 12, [MS_TRACE_FREE] = 13, [MS_TRACE_CALL] = 14,
    [MS_TRACE_EXIT] = 15, [MS_TRACE_PCONTROL] = 16, [MS_TRACE_RESUME] = 17, [MS_TRACE_RMA] = 18,
    [MS_TRACE_PROC_EXIT] = 19};
static inline int slot_of(int32_t kind) { return kind >= 0 && kind < 128 ? slot_tab[kind] : 0; }   /* 0: others */
static const unsigned char class_of_slot[SLOTS] = {[3] = 1, [5] = 1, [17] = 2, [8] = 3, [9] = 3, [11] = 3};

/* What a record with nothing before it of its kind is predicted to be. */
static const ms_trace_event no_record = {.fn = -1, .complete_ps = MS_TRACE_UNKNOWN_TIME,
                                         .matched_source = MS_TRACE_UNKNOWN, .matched_tag = MS_TRACE_UNKNOWN};

typedef struct pstate {
    const ms_trace_event *prev[SLOTS];  /* the previous record of each kind (in the caller's array) */
    uint64_t t, real, req;              /* the last nonzero clock, real time, request id of any record */
    uint64_t next[4];                   /* where the next list, results and text would start (by class) */
} pstate;

static void pstate_init(pstate *p)
{
    memset(p, 0, sizeof *p);
    for (int s = 0; s < SLOTS; s++) p->prev[s] = &no_record;
}

/* The predicted value of every field of a record of kind `kind` whose previous one of its kind is
 * q (complete_ps: set once t_ps is known, complete_pred). */
static inline void predict(const pstate *p, int cls, const ms_trace_event *q, uint64_t *v)
{
    v[F_FN] = (uint64_t)(int64_t)q->fn;
    v[F_T] = q->t_ps ? p->t : 0;
    v[F_COMPUTE] = (uint64_t)q->compute_ps;
    v[F_RAWC] = (uint64_t)q->raw_compute_ns;
    v[F_ENTRY] = q->real_entry_ns ? p->real : 0;
    v[F_EXIT] = q->real_exit_ns ? p->real : 0;
    v[F_COMPLETE] = 0;
    v[F_COMM] = q->comm;
    v[F_BYTES] = q->bytes;
    v[F_REQ] = q->req ? p->req + 1 : 0;
    v[F_SITE] = q->callsite;
    v[F_LOFF] = cls ? p->next[cls] : (uint64_t)q->list_off;
    v[F_LN] = (uint64_t)(int64_t)q->list_n;
    v[F_PEER] = (uint64_t)(int64_t)q->peer;
    v[F_TAG] = (uint64_t)(int64_t)q->tag;
    v[F_MODE] = (uint64_t)(int64_t)q->mode;
    v[F_FLAGS] = (uint64_t)(int64_t)q->flags;
    v[F_MSRC] = (uint64_t)(int64_t)q->matched_source;
    v[F_MTAG] = (uint64_t)(int64_t)q->matched_tag;
    v[F_PAD] = (uint64_t)(int64_t)q->pad;
}

/* complete_ps follows the record's clock as the previous one of its kind did */
static inline uint64_t complete_pred(const ms_trace_event *q, int64_t t_ps)
{
    if (q->complete_ps == MS_TRACE_UNKNOWN_TIME) return (uint64_t)MS_TRACE_UNKNOWN_TIME;
    return (uint64_t)t_ps + ((uint64_t)q->complete_ps - (uint64_t)q->t_ps);
}

static inline void fields_of(const ms_trace_event *e, uint64_t *v)
{
    v[F_FN] = (uint64_t)(int64_t)e->fn;
    v[F_T] = (uint64_t)e->t_ps;
    v[F_COMPUTE] = (uint64_t)e->compute_ps;
    v[F_RAWC] = (uint64_t)e->raw_compute_ns;
    v[F_ENTRY] = (uint64_t)e->real_entry_ns;
    v[F_EXIT] = (uint64_t)e->real_exit_ns;
    v[F_COMPLETE] = (uint64_t)e->complete_ps;
    v[F_COMM] = e->comm;
    v[F_BYTES] = e->bytes;
    v[F_REQ] = e->req;
    v[F_SITE] = e->callsite;
    v[F_LOFF] = (uint64_t)e->list_off;
    v[F_LN] = (uint64_t)(int64_t)e->list_n;
    v[F_PEER] = (uint64_t)(int64_t)e->peer;
    v[F_TAG] = (uint64_t)(int64_t)e->tag;
    v[F_MODE] = (uint64_t)(int64_t)e->mode;
    v[F_FLAGS] = (uint64_t)(int64_t)e->flags;
    v[F_MSRC] = (uint64_t)(int64_t)e->matched_source;
    v[F_MTAG] = (uint64_t)(int64_t)e->matched_tag;
    v[F_PAD] = (uint64_t)(int64_t)e->pad;
}

/* The running predictions after record e (which stays where it is: the caller's array). */
static inline void advance(pstate *p, int slot, int cls, const ms_trace_event *e)
{
    p->prev[slot] = e;
    if (e->t_ps) p->t = (uint64_t)e->t_ps;
    if (e->real_entry_ns) p->real = (uint64_t)e->real_entry_ns;
    if (e->real_exit_ns) p->real = (uint64_t)e->real_exit_ns;
    if (e->req) p->req = e->req;
    /* a text's NUL follows it */
    p->next[cls] = (uint64_t)e->list_off + (uint64_t)(int64_t)e->list_n + (cls == 3);
}

static inline unsigned char *put_varint(unsigned char *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *o++ = (unsigned char)v;
    return o;
}

static inline uint64_t zig(uint64_t d) { return (d << 1) ^ (uint64_t)((int64_t)d >> 63); }
static inline uint64_t unzig(uint64_t z) { return (z >> 1) ^ (uint64_t)-(int64_t)(z & 1); }

size_t ms_compact_bound(size_t n) { return n * (2 + 4 + (size_t)F_COUNT * 10) + 16; }

size_t ms_compact_encode(const ms_trace_event *ev, size_t n, unsigned char *out)
{
    pstate p;
    pstate_init(&p);
    unsigned char *o = out;
    uint64_t pred[F_COUNT], val[F_COUNT];
    for (size_t i = 0; i < n; i++) {
        const ms_trace_event *e = &ev[i];
        if (e->kind >= 0 && e->kind < 0xFF) *o++ = (unsigned char)e->kind;
        else {   /* never in a valid trace; kept for a faithful copy */
            *o++ = 0xFF;
            o = put_varint(o, zig((uint64_t)(int64_t)e->kind));
        }
        int slot = slot_of(e->kind), cls = class_of_slot[slot];
        const ms_trace_event *q = p.prev[slot];
        predict(&p, cls, q, pred);
        pred[F_COMPLETE] = complete_pred(q, e->t_ps);
        fields_of(e, val);
        uint32_t mask = 0;
        for (int f = 0; f < F_COUNT; f++)
            if (val[f] != pred[f]) mask |= 1u << f;
        o = put_varint(o, mask);
        for (uint32_t m = mask; m; m &= m - 1) {
            int f = __builtin_ctz(m);
            o = put_varint(o, zig(val[f] - pred[f]));
        }
        advance(&p, slot, cls, e);
    }
    return (size_t)(o - out);
}

/* A varint from [*pp, end), at most 10 bytes; -1 past the end or too long. */
static inline int get_varint(const unsigned char **pp, const unsigned char *end, uint64_t *v)
{
    const unsigned char *p = *pp;
    if (__builtin_expect(p < end && !(*p & 0x80), 1)) {   /* most are one byte */
        *v = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t x = 0;
    for (int s = 0; s < 70; s += 7) {
        if (p >= end) return -1;
        unsigned char c = *p++;
        x |= (uint64_t)(c & 0x7F) << s;
        if (!(c & 0x80)) {
            *pp = p;
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* v + d into a 32-bit field: -1 when the sum is not a 32-bit value (damaged) */
static inline int add32(int32_t *f, uint64_t d)
{
    int64_t x = (int64_t)((uint64_t)(int64_t)*f + d);
    if (x != (int32_t)x) return -1;
    *f = (int32_t)x;
    return 0;
}

int ms_compact_decode(const unsigned char *in, size_t len, size_t n, ms_trace_event *ev, size_t *bad_record)
{
    pstate p;
    pstate_init(&p);
    const unsigned char *c = in, *end = in + len;
    size_t i = 0;
    for (; i < n; i++) {
        if (c >= end) goto bad;
        int32_t kind = *c++;
        if (kind == 0xFF) {
            uint64_t z;
            if (get_varint(&c, end, &z) < 0) goto bad;
            int64_t k = (int64_t)unzig(z);
            if (k != (int32_t)k) goto bad;
            kind = (int32_t)k;
        }
        int slot = slot_of(kind), cls = class_of_slot[slot];
        const ms_trace_event *q = p.prev[slot];
        uint64_t mask;
        if (get_varint(&c, end, &mask) < 0 || mask >> F_COUNT) goto bad;
        /* the prediction: the previous record of the kind, the running quantities of any */
        ms_trace_event *e = &ev[i];
        *e = *q;
        e->kind = kind;
        e->t_ps = q->t_ps ? (int64_t)p.t : 0;
        e->real_entry_ns = q->real_entry_ns ? (int64_t)p.real : 0;
        e->real_exit_ns = q->real_exit_ns ? (int64_t)p.real : 0;
        e->req = q->req ? p.req + 1 : 0;
        if (cls) e->list_off = (int64_t)p.next[cls];
        int complete_given = (int)(mask >> F_COMPLETE & 1);
        while (mask) {
            int f = __builtin_ctzll(mask);
            mask &= mask - 1;
            uint64_t z;
            if (get_varint(&c, end, &z) < 0) goto bad;
            uint64_t d = unzig(z);
            if (f == F_COMPLETE) {   /* t_ps is in: it comes first */
                e->complete_ps = (int64_t)(complete_pred(q, e->t_ps) + d);
            } else if (field_wide[f]) {
                uint64_t *x = (uint64_t *)((char *)e + field_off[f]);
                *x += d;
            } else if (add32((int32_t *)((char *)e + field_off[f]), d)) {
                goto bad;
            }
        }
        if (!complete_given) e->complete_ps = (int64_t)complete_pred(q, e->t_ps);
        advance(&p, slot, cls, e);
    }
    *bad_record = n;
    return c == end ? 0 : -1;
bad:
    *bad_record = i;
    return -1;
}
