/* Reading stretches of records from an HDF5 trace (the guarded stream's child). */
#define _GNU_SOURCE
#include "trace_h5_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- reading stretches of records (the guarded stream's child) ------------------------------ */

/* A rank's group and datasets, kept open for its next stretch: HDF5's chunk cache of an open
 * dataset then spares inflating the same chunk again (a side array's chunk holds the lists of
 * many stretches of records). */
typedef struct open_rank {
    int rank;                     /* -1: free */
    hid_t gr, d[4];               /* events, lists, results, text */
    size_t dims[4];
    unsigned long used;
} open_rank;
#define OPEN_RANKS 8

struct ms_trace_h5 {
    char *path;
    int v2;                       /* schema 2: v (its records read with pread from fd), no /ranks */
    ms_trace_v2 v;
    int fd;
    unsigned char *scratch;
    size_t scap;
    hid_t f, g, et, rt, ct;
    open_rank open[OPEN_RANKS];
    unsigned long clock;
    h5_quiet q;
};

static const char *const rank_datasets[4] = {"events", "lists", "results", "text"};

static void close_rank(open_rank *o)
{
    for (int k = 0; k < 4; k++)
        if (o->d[k] >= 0) H5Dclose(o->d[k]);
    if (o->gr >= 0) H5Gclose(o->gr);
    o->gr = o->d[0] = o->d[1] = o->d[2] = o->d[3] = -1;
    o->rank = -1;
}

/* Rank i's group and datasets, opened in place of the least recently used. */
static open_rank *open_rank_of(ms_trace_h5 *h, int i, char *what, size_t wlen)
{
    open_rank *o = &h->open[0];
    for (int s = 0; s < OPEN_RANKS; s++) {
        if (h->open[s].rank == i) {
            h->open[s].used = ++h->clock;
            return &h->open[s];
        }
        if (h->open[s].used < o->used) o = &h->open[s];
    }
    close_rank(o);
    char name[32];
    snprintf(name, sizeof name, "%d", i);
    o->gr = H5Gopen2(h->g, name, H5P_DEFAULT);
    if (o->gr < 0) {
        snprintf(what, wlen, "no group /ranks/%d", i);
        return NULL;
    }
    for (int k = 0; k < 4; k++) {
        o->d[k] = H5Dopen2(o->gr, rank_datasets[k], H5P_DEFAULT);
        hid_t sp = o->d[k] >= 0 ? H5Dget_space(o->d[k]) : -1;
        hsize_t dims[1];
        int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, dims, NULL) == 1 &&
                 dims[0] <= ((hsize_t)1 << 34);
        if (sp >= 0) H5Sclose(sp);
        if (!ok) {
            snprintf(what, wlen, "cannot read /ranks/%d/%s (truncated or damaged file?)", i, rank_datasets[k]);
            close_rank(o);
            return NULL;
        }
        o->dims[k] = (size_t)dims[0];
    }
    o->rank = i;
    o->used = ++h->clock;
    return o;
}

ms_trace_h5 *ms_trace_h5_open(const char *path, ms_trace **out, char *err, size_t errlen)
{
    *out = NULL;
    ms_trace_h5 *h = calloc(1, sizeof *h);
    char what[320] = "";
    if (!h || !(h->path = strdup(path))) {
        free(h);
        ms_trace_fail(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    quiet_on(&h->q);
    h->et = th5_event_type();
    h->rt = th5_result_type();
    h->ct = th5_comm_type();
    h->g = -1;
    h->fd = -1;
    for (int k = 0; k < OPEN_RANKS; k++) {
        h->open[k].gr = h->open[k].d[0] = h->open[k].d[1] = h->open[k].d[2] = h->open[k].d[3] = -1;
        h->open[k].rank = -1;
    }
    int version = 0;
    ms_trace *t = th5_read_meta(path, h->ct, &h->f, &version, what, sizeof what);
    int ok = t != NULL;
    if (ok && version == 2) {
        h->v2 = 1;
        ok = th5_read_v2_layout(path, h->f, t->nranks, &h->v, what, sizeof what) == 0;
        if (ok && (h->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            snprintf(what, sizeof what, "cannot open it again");
            ok = 0;
        }
    } else if (ok && (h->g = H5Gopen2(h->f, "ranks", H5P_DEFAULT)) < 0) {
        snprintf(what, sizeof what, "no group /ranks");
        ok = 0;
    }
    if (!ok) {
        ms_trace_fail(err, errlen, "%s: %s", path, what);
        ms_trace_free(t);
        ms_trace_h5_close(h);
        return NULL;
    }
    *out = t;
    return h;
}

static int read_slab(hid_t d, hid_t type, size_t from, size_t n, void *buf)
{
    if (!n) return 0;
    hsize_t start[1] = {from}, count[1] = {n};
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, count, NULL);
    int rc = fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
                     H5Dread(d, type, ms, fs, H5P_DEFAULT, buf) >= 0
                 ? 0
                 : -1;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

const ms_trace_v2 *ms_trace_h5_v2(const ms_trace_h5 *h) { return h->v2 ? &h->v : NULL; }

int ms_trace_h5_head(ms_trace_h5 *h, ms_trace *t, int i, ms_trace_rank_size *sz, int *text_last, char *err,
                     size_t errlen)
{
    char what[160] = "";
    if (h->v2) {
        const ms_trace_v2_head *hd = &h->v.heads[i];
        th5_head_to_rank(hd, &t->ranks[i]);
        memset(sz, 0, sizeof *sz);
        sz->nev = (size_t)hd->nev;
        sz->nlists = (size_t)hd->nlists;
        sz->nresults = (size_t)hd->nresults;
        sz->ntext = (size_t)hd->ntext;
        sz->chunk = (size_t)h->v.stretch;
        *text_last = ms_trace_v2_text_terminated(h->fd, &h->v, i) ? 0 : 1;
        return 0;
    }
    open_rank *o = open_rank_of(h, i, what, sizeof what);
    if (!o) return ms_trace_fail(err, errlen, "%s: %s", h->path, what);
    th5_read_rank_head(o->gr, &t->ranks[i]);
    memset(sz, 0, sizeof *sz);
    sz->nev = o->dims[0];
    sz->nlists = o->dims[1];
    sz->nresults = o->dims[2];
    sz->ntext = o->dims[3];
    hsize_t chunk[1] = {0};
    hid_t pl = H5Dget_create_plist(o->d[0]);
    if (pl >= 0 && H5Pget_layout(pl) == H5D_CHUNKED && H5Pget_chunk(pl, 1, chunk) == 1) sz->chunk = (size_t)chunk[0];
    if (pl >= 0) H5Pclose(pl);
    char last = 0;
    if (sz->ntext && read_slab(o->d[3], H5T_NATIVE_CHAR, sz->ntext - 1, 1, &last) < 0)
        return ms_trace_fail(err, errlen, "%s: cannot read /ranks/%d/text (truncated or damaged file?)", h->path, i);
    *text_last = last;
    return 0;
}

/* [lo, hi) of a side array that the records' (list_off, list_n) point into, within n */
static void hull(size_t *lo, size_t *hi, int64_t off, int64_t len, size_t n)
{
    if (off < 0 || len < 0 || (uint64_t)off >= n) return;   /* out of range: validation says so */
    uint64_t end = (uint64_t)off + (uint64_t)len;
    if (end > n) end = n;
    if ((size_t)off < *lo) *lo = (size_t)off;
    if ((size_t)end > *hi) *hi = (size_t)end;
}

static void *room(ms_trace_window *w, int k, size_t n, size_t elem)
{
    return ms_trace_window_room(w, k, n + 1, elem);
}

int ms_trace_h5_range(ms_trace_h5 *h, int i, size_t from, size_t to, ms_trace_window *w, char *err, size_t errlen)
{
    char what[160] = "";
    if (h->v2) return ms_trace_v2_window(h->fd, &h->v, i, from, to, w, &h->scratch, &h->scap, h->path, err, errlen);
    open_rank *o = open_rank_of(h, i, what, sizeof what);
    if (!o) return ms_trace_fail(err, errlen, "%s: %s", h->path, what);
    const size_t *dims = o->dims;
    if (from > to || to > dims[0])
        return ms_trace_fail(err, errlen, "%s: records [%zu, %zu) of rank %d asked for, it has %zu", h->path, from, to,
                             i, dims[0]);
    size_t n = to - from;
    ms_trace_event *ev = room(w, 0, n, sizeof *ev);
    if (!ev) return ms_trace_fail(err, errlen, "%s: out of memory", h->path);
    if (read_slab(o->d[0], h->et, from, n, ev) < 0)
        return ms_trace_fail(err, errlen,
                             "%s: cannot read records [%zu, %zu) of rank %d in /ranks/%d/events (truncated or damaged "
                             "file?)",
                             h->path, from, to, i, i);
    size_t lo[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX}, hi[3] = {0, 0, 0};
    for (size_t k = 0; k < n; k++) {
        const ms_trace_event *e = &ev[k];
        switch (e->kind) {
        case MS_TRACE_WAIT: case MS_TRACE_ICOLL: hull(&lo[0], &hi[0], e->list_off, e->list_n, dims[1]); break;
        case MS_TRACE_RESUME: hull(&lo[1], &hi[1], e->list_off, e->list_n, dims[2]); break;
        case MS_TRACE_UNMODELLED: case MS_TRACE_CALLSITE: case MS_TRACE_SITE:   /* with its terminating NUL */
            hull(&lo[2], &hi[2], e->list_off, (int64_t)e->list_n + 1, dims[3]);
            break;
        default: break;
        }
    }
    size_t elem[3] = {sizeof(uint64_t), sizeof(ms_trace_result), 1};
    hid_t type[3] = {H5T_NATIVE_UINT64, h->rt, H5T_NATIVE_CHAR};
    for (int a = 0; a < 3; a++) {
        if (lo[a] >= hi[a]) lo[a] = hi[a] = 0;
        void *p = room(w, a + 1, hi[a] - lo[a], elem[a]);
        if (!p) return ms_trace_fail(err, errlen, "%s: out of memory", h->path);
        if (read_slab(o->d[a + 1], type[a], lo[a], hi[a] - lo[a], p) < 0)
            return ms_trace_fail(err, errlen,
                                 "%s: cannot read [%zu, %zu) of /ranks/%d/%s for records [%zu, %zu) (truncated or "
                                 "damaged file?)",
                                 h->path, lo[a], hi[a], i, rank_datasets[a + 1], from, to);
    }
    w->from = from;
    w->n = n;
    w->ev = ev;
    w->lists_from = lo[0];
    w->nlists = hi[0] - lo[0];
    w->lists = w->buf[1];
    w->results_from = lo[1];
    w->nresults = hi[1] - lo[1];
    w->results = w->buf[2];
    w->text_from = lo[2];
    w->ntext = hi[2] - lo[2];
    ((char *)w->buf[3])[w->ntext] = 0;
    w->text = w->buf[3];
    return 0;
}

void ms_trace_h5_close(ms_trace_h5 *h)
{
    if (!h) return;
    ms_trace_v2_free(&h->v);
    if (h->fd >= 0) close(h->fd);
    free(h->scratch);
    for (int k = 0; k < OPEN_RANKS; k++) close_rank(&h->open[k]);
    if (h->g >= 0) H5Gclose(h->g);
    if (h->f >= 0) H5Fclose(h->f);
    H5Tclose(h->et);
    H5Tclose(h->rt);
    H5Tclose(h->ct);
    quiet_off(&h->q);
    free(h->path);
    free(h);
}

ms_trace *ms_trace_read_h5_direct(const char *path, char *err, size_t errlen)
{
    return ms_trace_read_h5_each(path, NULL, NULL, err, errlen);
}
