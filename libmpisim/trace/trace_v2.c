/* Schema mpisim-trace/2's records, read from the file with pread (replay/README.md): HDF5 says
 * where its contiguous datasets lie (in the guarded reader's child: HDF5 is what a damaged file
 * can make misbehave), and the bytes are then read and decoded here with every offset and length
 * checked against the layout, the file and the rank's sizes. Nothing of HDF5 runs here, so the
 * reader of the records (the replay itself) needs no child: a stretch costs a pread and ~20 ns a
 * record to decode, where inflating the 128-byte records of schema 1 cost ~0.6 us. */
#define _GNU_SOURCE
#include "ms_trace.h"
#include "ms_trace_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ms_trace_v2_free(ms_trace_v2 *v)
{
    if (!v) return;
    free(v->soff);
    free(v->heads);
    memset(v, 0, sizeof *v);
}

static uint64_t nstretch(const ms_trace_v2 *v, uint64_t nev) { return (nev + v->stretch - 1) / v->stretch; }

int ms_trace_v2_check(const ms_trace_v2 *v, int nranks, uint64_t file_size, char *what, size_t wlen)
{
    static const char *const name[4] = {"/records", "/lists", "/results", "/text"};
    static const uint64_t elem[4] = {1, sizeof(uint64_t), sizeof(ms_trace_result), 1};
    if (v->stretch < 1 || v->stretch > (1u << 20)) {
        snprintf(what, wlen, "attribute stretch_records out of range");
        return -1;
    }
    for (int k = 0; k < 4; k++)
        if (v->len[k] && (v->at[k] > file_size || v->len[k] > file_size - v->at[k] || v->len[k] % elem[k])) {
            snprintf(what, wlen, "%s lies outside the file (truncated?)", name[k]);
            return -1;
        }
    if (v->nheads != (size_t)nranks) {
        snprintf(what, wlen, "/rank_heads has %zu rows for %d ranks", v->nheads, nranks);
        return -1;
    }
    if (v->nsoff < 1 || v->soff[0] != 0 || v->soff[v->nsoff - 1] != v->len[0]) {
        snprintf(what, wlen, "/stretches does not span /records");
        return -1;
    }
    for (size_t j = 1; j < v->nsoff; j++)
        if (v->soff[j] < v->soff[j - 1]) {
            snprintf(what, wlen, "/stretches entry %zu goes backwards", j);
            return -1;
        }
    uint64_t next = 0, first[3] = {0, 0, 0};
    for (int i = 0; i < nranks; i++) {
        const ms_trace_v2_head *h = &v->heads[i];
        uint64_t ns = nstretch(v, h->nev);
        uint64_t side[3] = {h->nlists, h->nresults, h->ntext}, at[3] = {h->lists_first, h->results_first, h->text_first};
        if (h->nev > ((uint64_t)1 << 34) || h->first_stretch != next || ns > v->nsoff - 1 - next) {
            snprintf(what, wlen, "/rank_heads row %d: its stretches are out of range", i);
            return -1;
        }
        for (int a = 0; a < 3; a++)
            if (at[a] != first[a] || side[a] > v->len[a + 1] / elem[a + 1] - at[a]) {
                snprintf(what, wlen, "/rank_heads row %d: its %s are out of range", i, name[a + 1]);
                return -1;
            }
        /* a stretch of records takes at least two bytes a record (kind, mask), at most the bound */
        for (uint64_t j = 0; j < ns; j++) {
            uint64_t n = j + 1 < ns ? v->stretch : h->nev - j * v->stretch;
            uint64_t b = v->soff[next + j + 1] - v->soff[next + j];
            if (b < 2 * n || b > ms_compact_bound((size_t)n)) {
                snprintf(what, wlen, "/stretches: rank %d's stretch %llu has %llu bytes for %llu records", i,
                         (unsigned long long)j, (unsigned long long)b, (unsigned long long)n);
                return -1;
            }
        }
        next += ns;
        for (int a = 0; a < 3; a++) first[a] += side[a];
    }
    if (next != v->nsoff - 1) {
        snprintf(what, wlen, "/stretches has %zu entries, the ranks use %llu", v->nsoff - 1, (unsigned long long)next);
        return -1;
    }
    return 0;
}

static int pread_all(int fd, void *buf, size_t n, uint64_t at)
{
    char *c = buf;
    while (n) {
        ssize_t k = pread(fd, c, n, (off_t)at);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
        at += (uint64_t)k;
    }
    return 0;
}

/* Records [j0 * stretch, ...) of rank i, stretches j0 .. j1-1, decoded into ev (room for all).
 * 0, or -1 with err naming the file, the rank and the record. */
static int decode_stretches(int fd, const ms_trace_v2 *v, int i, uint64_t j0, uint64_t j1, ms_trace_event *ev,
                            unsigned char **scratch, size_t *scap, const char *path, char *err, size_t errlen)
{
    const ms_trace_v2_head *h = &v->heads[i];
    const uint64_t *so = v->soff + h->first_stretch;
    uint64_t bytes = so[j1] - so[j0];
    if (bytes > *scap) {
        unsigned char *p = realloc(*scratch, (size_t)bytes);
        if (!p) return ms_trace_fail(err, errlen, "%s: out of memory", path);
        *scratch = p;
        *scap = (size_t)bytes;
    }
    if (bytes && pread_all(fd, *scratch, (size_t)bytes, v->at[0] + so[j0]) < 0)
        return ms_trace_fail(err, errlen, "%s: rank %d: cannot read records [%llu, %llu) (truncated file?)", path, i,
                             (unsigned long long)(j0 * v->stretch),
                             (unsigned long long)(j1 * v->stretch < h->nev ? j1 * v->stretch : h->nev));
    for (uint64_t j = j0; j < j1; j++) {
        uint64_t a = j * v->stretch, n = j + 1 < nstretch(v, h->nev) ? v->stretch : h->nev - a;
        size_t bad = 0;
        if (ms_compact_decode(*scratch + (so[j] - so[j0]), (size_t)(so[j + 1] - so[j]), (size_t)n,
                              ev + (a - j0 * v->stretch), &bad) < 0)
            return ms_trace_fail(err, errlen,
                                 "%s: rank %d: record %llu cannot be decoded (records [%llu, %llu) of rank %d damaged: "
                                 "bytes %llu-%llu of /records)",
                                 path, i, (unsigned long long)(a + bad), (unsigned long long)a,
                                 (unsigned long long)(a + n), i, (unsigned long long)so[j],
                                 (unsigned long long)so[j + 1]);
    }
    return 0;
}

int ms_trace_v2_rank(int fd, const ms_trace_v2 *v, int i, ms_trace_rank *r, const char *path, char *err,
                     size_t errlen)
{
    const ms_trace_v2_head *h = &v->heads[i];
    r->nev = r->nlists = r->nresults = r->ntext = 0;
    r->ev = h->nev ? malloc((size_t)h->nev * sizeof *r->ev) : NULL;
    r->lists = h->nlists ? malloc((size_t)h->nlists * sizeof *r->lists) : NULL;
    r->results = h->nresults ? malloc((size_t)h->nresults * sizeof *r->results) : NULL;
    r->text = h->ntext ? malloc((size_t)h->ntext + 1) : NULL;
    if ((h->nev && !r->ev) || (h->nlists && !r->lists) || (h->nresults && !r->results) || (h->ntext && !r->text))
        return ms_trace_fail(err, errlen, "%s: out of memory", path);
    unsigned char *scratch = NULL;
    size_t scap = 0;
    int rc = decode_stretches(fd, v, i, 0, nstretch(v, h->nev), r->ev, &scratch, &scap, path, err, errlen);
    free(scratch);
    if (rc < 0) return -1;
    r->nev = (size_t)h->nev;
    if ((h->nlists && pread_all(fd, r->lists, (size_t)h->nlists * sizeof *r->lists,
                                v->at[1] + h->lists_first * sizeof *r->lists) < 0) ||
        (h->nresults && pread_all(fd, r->results, (size_t)h->nresults * sizeof *r->results,
                                  v->at[2] + h->results_first * sizeof *r->results) < 0) ||
        (h->ntext && pread_all(fd, r->text, (size_t)h->ntext, v->at[3] + h->text_first) < 0))
        return ms_trace_fail(err, errlen, "%s: rank %d: cannot read its lists, results or text (truncated file?)", path,
                             i);
    r->nlists = (size_t)h->nlists;
    r->nresults = (size_t)h->nresults;
    r->ntext = (size_t)h->ntext;
    if (r->text) r->text[r->ntext] = 0;
    return 0;
}

/* [lo, hi) of a side array that the records' (list_off, list_n) point into, within n */
static void hull(uint64_t *lo, uint64_t *hi, int64_t off, int64_t len, uint64_t n)
{
    if (off < 0 || len < 0 || (uint64_t)off >= n) return;   /* out of range: validation says so */
    uint64_t end = (uint64_t)off + (uint64_t)len;
    if (end > n) end = n;
    if ((uint64_t)off < *lo) *lo = (uint64_t)off;
    if (end > *hi) *hi = end;
}

int ms_trace_v2_window(int fd, const ms_trace_v2 *v, int i, size_t from, size_t to, ms_trace_window *w,
                       unsigned char **scratch, size_t *scap, const char *path, char *err, size_t errlen)
{
    const ms_trace_v2_head *h = &v->heads[i];
    if (from > to || to > h->nev)
        return ms_trace_fail(err, errlen, "%s: records [%zu, %zu) of rank %d asked for, it has %llu", path, from, to, i,
                             (unsigned long long)h->nev);
    w->n = 0;
    if (from == to) {
        w->from = from;
        w->ev = NULL;
        w->nlists = w->nresults = w->ntext = 0;
        return 0;
    }
    uint64_t j0 = from / v->stretch, j1 = (to - 1) / v->stretch + 1;
    size_t first = (size_t)(j0 * v->stretch), span = (size_t)((j1 * v->stretch < h->nev ? j1 * v->stretch : h->nev) - first);
    ms_trace_event *ev = ms_trace_window_room(w, 0, span, sizeof *ev);
    if (!ev) return ms_trace_fail(err, errlen, "%s: out of memory", path);
    if (decode_stretches(fd, v, i, j0, j1, ev, scratch, scap, path, err, errlen) < 0) return -1;
    ev += from - first;
    size_t n = to - from;
    uint64_t lo[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX}, hi[3] = {0, 0, 0};
    uint64_t tot[3] = {h->nlists, h->nresults, h->ntext};
    for (size_t k = 0; k < n; k++) {
        const ms_trace_event *e = &ev[k];
        switch (e->kind) {
        case MS_TRACE_WAIT: case MS_TRACE_ICOLL: hull(&lo[0], &hi[0], e->list_off, e->list_n, tot[0]); break;
        case MS_TRACE_RESUME: hull(&lo[1], &hi[1], e->list_off, e->list_n, tot[1]); break;
        case MS_TRACE_UNMODELLED: case MS_TRACE_CALLSITE: case MS_TRACE_SITE:   /* with its terminating NUL */
            hull(&lo[2], &hi[2], e->list_off, (int64_t)e->list_n + 1, tot[2]);
            break;
        default: break;
        }
    }
    static const size_t elem[3] = {sizeof(uint64_t), sizeof(ms_trace_result), 1};
    uint64_t first_el[3] = {h->lists_first, h->results_first, h->text_first};
    for (int a = 0; a < 3; a++) {
        if (lo[a] >= hi[a]) lo[a] = hi[a] = 0;
        size_t m = (size_t)(hi[a] - lo[a]);
        void *p = ms_trace_window_room(w, a + 1, m + 1, elem[a]);
        if (!p) return ms_trace_fail(err, errlen, "%s: out of memory", path);
        if (m && pread_all(fd, p, m * elem[a], v->at[a + 1] + (first_el[a] + lo[a]) * elem[a]) < 0)
            return ms_trace_fail(err, errlen, "%s: rank %d: cannot read what records [%zu, %zu) point into (truncated "
                                 "file?)", path, i, from, to);
    }
    w->from = from;
    w->n = n;
    w->ev = ev;
    w->lists = w->buf[1];
    w->lists_from = (size_t)lo[0];
    w->nlists = (size_t)(hi[0] - lo[0]);
    w->results = w->buf[2];
    w->results_from = (size_t)lo[1];
    w->nresults = (size_t)(hi[1] - lo[1]);
    w->text = w->buf[3];
    w->text_from = (size_t)lo[2];
    w->ntext = (size_t)(hi[2] - lo[2]);
    ((char *)w->buf[3])[w->ntext] = 0;
    return 0;
}

int ms_trace_v2_text_terminated(int fd, const ms_trace_v2 *v, int i)
{
    const ms_trace_v2_head *h = &v->heads[i];
    if (!h->ntext) return 1;
    char last = 1;
    if (pread_all(fd, &last, 1, v->at[3] + h->text_first + h->ntext - 1) < 0) return 0;
    return last == 0;
}
