/* Validating a trace: each record's bounds and references, windows of records, communicators
 * and ranks. */
#define _GNU_SOURCE
#include "ms_trace.h"
#include "ms_trace_internal.h"
#include "trace_raw.h"

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
