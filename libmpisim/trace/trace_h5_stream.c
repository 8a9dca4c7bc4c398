/* An HDF5 trace read stretch by stretch (ms_trace_stream_*): the guarded reader's child
 * (trace_h5_guard.c), kept open and asked for what the replay needs. */
#define _GNU_SOURCE
#include "trace_h5_guard_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- a trace read stretch by stretch: the same child, asked for what the replay needs ---------- */

/* After META: one HEAD per rank, then READY; then for each request (stream_req) one WINDOW or an
 * ERROR. The child keeps the file open between requests; it ends when the parent closes its end. */
enum { FR_HEAD = 5, FR_READY = 6, FR_WINDOW = 7, FR_LAYOUT = 8 };

typedef struct stream_req {
    uint32_t magic;
    int32_t rank;
    uint64_t from, to;
} stream_req;

void guard_send_head(out *o, const ms_trace_rank *r, int i, const ms_trace_rank_size *sz, int text_last)
{
    guard_put_u32(o, FR_HEAD);
    guard_put_u64(o, (uint64_t)i);
    int32_t head[6] = {r->rank, r->pid, r->cosim, r->truncated, r->missing, text_last};
    guard_put(o, head, sizeof head);
    guard_put_u64(o, (uint64_t)r->start_real_ns);
    guard_put(o, r->hostname, sizeof r->hostname);
    uint64_t n[5] = {sz->nev, sz->nlists, sz->nresults, sz->ntext, sz->chunk};
    guard_put(o, n, sizeof n);
}

static void send_window(out *o, int i, const ms_trace_window *w)
{
    guard_put_u32(o, FR_WINDOW);
    guard_put_u64(o, (uint64_t)i);
    guard_put_u64(o, w->from);
    guard_put_arr(o, w->ev, w->n, sizeof *w->ev);
    guard_put_u64(o, w->lists_from);
    guard_put_arr(o, w->lists, w->nlists, sizeof *w->lists);
    guard_put_u64(o, w->results_from);
    guard_put_arr(o, w->results, w->nresults, sizeof *w->results);
    guard_put_u64(o, w->text_from);
    guard_put_arr(o, w->text, w->ntext, 1);
}

static int read_full(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static void child_stream(int fd, const char *path)
{
    out *o = guard_child_start(fd);
    char err[1024] = "";
    ms_trace *t = NULL;
    ms_trace_h5 *h = ms_trace_h5_open(path, &t, err, sizeof err);
    if (h) {
        guard_send_meta(o, t);
        guard_flush(o);
        for (int i = 0; i < t->nranks && h && !o->bad; i++) {
            ms_trace_rank_size sz;
            int last = 0;
            if (ms_trace_h5_head(h, t, i, &sz, &last, err, sizeof err) < 0) {
                ms_trace_h5_close(h);
                h = NULL;
                break;
            }
            guard_send_head(o, &t->ranks[i], i, &sz, last);
            guard_flush(o);   /* progress the parent sees */
        }
    }
    if (!h) {
        guard_put_u32(o, FR_ERROR);
        guard_put_str(o, err);
        guard_flush(o);
        _exit(0);
    }
    const ms_trace_v2 *v2 = ms_trace_h5_v2(h);
    if (v2) {   /* schema 2: where the records lie; the parent reads them itself, the child's work is done */
        guard_put_u32(o, FR_LAYOUT);
        guard_put_u64(o, v2->stretch);
        guard_put(o, v2->at, sizeof v2->at);
        guard_put(o, v2->len, sizeof v2->len);
        guard_put_arr(o, v2->soff, v2->nsoff, sizeof *v2->soff);
        guard_put_arr(o, v2->heads, v2->nheads, sizeof *v2->heads);
    }
    guard_put_u32(o, FR_READY);
    guard_flush(o);
    if (v2) _exit(0);
    ms_trace_window w;
    memset(&w, 0, sizeof w);
    stream_req q;
    while (!o->bad && read_full(fd, &q, sizeof q) == 0 && q.magic == BLOB_MAGIC) {
        if (q.rank < 0 || q.rank >= t->nranks) break;
        if (ms_trace_h5_range(h, q.rank, (size_t)q.from, (size_t)q.to, &w, err, sizeof err) < 0) {
            guard_put_u32(o, FR_ERROR);
            guard_put_str(o, err);
        } else {
            send_window(o, q.rank, &w);
        }
        guard_flush(o);
    }
    _exit(0);   /* as child_read: no exit handlers */
}

/* A request sent to the child, answered in the order sent. */
typedef struct pending {
    int rank;
    size_t from, to;
    int state;                    /* ASKED, then RECEIVED or FAILED (err) */
    int dropped;                  /* nobody will claim it: forgotten once answered */
    char *err;
    ms_trace_window w;
} pending;
enum { ASKED, RECEIVED, FAILED };

struct ms_trace_stream {
    char *path;
    pid_t pid;
    int fd;
    in *b;
    ms_trace *t;                  /* without records */
    ms_trace_rank_size *sizes;
    int broken;                   /* a failed exchange: err says it, the child is gone */
    char err[1024];
    pending *q;                   /* requests not yet claimed, oldest first */
    size_t nq, capq;
    size_t answered;              /* q[0, answered) have their answers */
    size_t held;                  /* bytes of the answers' windows */
    /* schema 2: the records are read from the file here (v2fd), stretch by stretch, with pread */
    int v2;
    ms_trace_v2 v;
    int v2fd;
    unsigned char *scratch;
    size_t scap;
};

/* The child failed or was stopped: why, into s->err (what: the rank and records at stake, or "") */
static void stream_break(ms_trace_stream *s, const char *child_err, const char *what)
{
    in *b = s->b;
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);   /* nothing more is read from it (a child that crashed keeps its status) */
        close(s->fd);
        s->fd = -1;
        int status = 0;
        while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {
        }
        s->pid = -1;
        if (b->timed_out)
            snprintf(s->err, sizeof s->err,
                     "%s: HDF5 did not finish reading it within %.0f s of its last progress (a damaged file can make "
                     "it loop; it was reading %s)", s->path, b->limit, what);
        else if (b->too_big)
            snprintf(s->err, sizeof s->err,
                     "%s: HDF5 used more than %.1f GB reading it (a damaged file can make it allocate without end; "
                     "it was reading %s)", s->path, b->mem_limit * 1e-9, what);
        else if (child_err)
            snprintf(s->err, sizeof s->err, "%.1000s", child_err);
        else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)   /* not ours */
            snprintf(s->err, sizeof s->err, "%s: HDF5 crashed reading it (signal %d, reading %s): the file is damaged",
                     s->path, WTERMSIG(status), what);
        else if (b->oom)
            snprintf(s->err, sizeof s->err, "%s: out of memory reading %s", s->path, what);
        else
            snprintf(s->err, sizeof s->err, "%s: the reader sent damaged data for %s", s->path, what);
    }
    s->broken = 1;
}

static ms_trace_stream *stream_fail(ms_trace_stream *s, char *err, size_t errlen)
{
    ms_trace_fail(err, errlen, "%s", s->err);
    ms_trace_stream_close(s);
    return NULL;
}

/* The FR_LAYOUT frame (schema 2): the records' layout, checked against the file as this process
 * sees it. -1 with s->err set; 0 (b->bad set when the frame makes no sense). */
static int stream_layout(ms_trace_stream *s, const char *path)
{
    in *b = s->b;
    const ms_trace *t = s->t;
    ms_trace_v2 *v = &s->v;
    s->v2 = 1;
    v->stretch = guard_get_u64(b);
    guard_get(b, v->at, sizeof v->at);
    guard_get(b, v->len, sizeof v->len);
    v->soff = guard_get_arr(b, &v->nsoff, sizeof *v->soff, 0);
    v->heads = guard_get_arr(b, &v->nheads, sizeof *v->heads, 0);
    if (b->bad) return 0;
    /* checked here against the file as this process sees it: it reads the records */
    struct stat st;
    char what[300];
    if ((s->v2fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(s->v2fd, &st) != 0) {
        snprintf(s->err, sizeof s->err, "%s: cannot open it: %s", path, strerror(errno));
        return -1;
    }
    if (ms_trace_v2_check(v, t->nranks, (uint64_t)st.st_size, what, sizeof what) < 0) {
        snprintf(s->err, sizeof s->err, "%.700s: %s", path, what);
        return -1;
    }
    for (int i = 0; i < t->nranks; i++) {   /* the sizes are the layout's */
        ms_trace_rank_size *sz = &s->sizes[i];
        const ms_trace_v2_head *h = &v->heads[i];
        if (sz->nev != h->nev || sz->nlists != h->nlists || sz->nresults != h->nresults ||
            sz->ntext != h->ntext) {
            b->bad = 1;
            break;
        }
        sz->chunk = (size_t)(v->stretch < h->nev ? v->stretch : h->nev);
    }
    return 0;
}

ms_trace_stream *ms_trace_stream_open(const char *path, char *err, size_t errlen)
{
    ms_trace_stream *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path)) || !(s->b = calloc(1, sizeof *s->b))) {
        if (s) free(s->path);
        free(s);
        ms_trace_fail(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    s->pid = -1;
    s->fd = -1;
    s->v2fd = -1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(s->err, sizeof s->err, "%s: cannot create a socket pair: %s", path, strerror(errno));
        return stream_fail(s, err, errlen);
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        snprintf(s->err, sizeof s->err, "%s: cannot fork the reader: %s", path, strerror(errno));
        return stream_fail(s, err, errlen);
    }
    if (pid == 0) {
        close(sv[0]);
        child_stream(sv[1], path);
    }
    close(sv[1]);
    s->pid = pid;
    s->fd = sv[0];
    in *b = s->b;
    b->fd = s->fd;
    b->pid = pid;
    b->limit = ms_trace_read_limit_s(path);
    guard_progress_now(b);
    b->mem_limit = guard_read_limit_bytes(path);
    char *child_err = NULL;
    uint32_t kind = guard_get_u32(b) == BLOB_MAGIC ? guard_get_u32(b) : 0;
    if (kind == FR_META) {
        ms_trace *t = s->t = guard_decode_meta(b, sizeof *s->sizes);
        if (t && !(s->sizes = calloc((size_t)t->nranks, sizeof *s->sizes))) b->bad = b->oom = 1;
        for (int next = 0; !b->bad;) {
            kind = guard_get_u32(b);
            if (kind == FR_HEAD && next < t->nranks) {
                if (guard_get_u64(b) != (uint64_t)next) {
                    b->bad = 1;
                    break;
                }
                int32_t text_last = 0;
                guard_decode_head(b, &t->ranks[next], &text_last);
                uint64_t n[5] = {0, 0, 0, 0, 0};
                guard_get(b, n, sizeof n);
                ms_trace_rank_size *sz = &s->sizes[next];
                if (n[0] > ((uint64_t)1 << 34) || n[1] > ((uint64_t)1 << 34) || n[2] > ((uint64_t)1 << 34) ||
                    n[3] > ((uint64_t)1 << 30)) {
                    b->bad = 1;
                    break;
                }
                sz->nev = (size_t)n[0];
                sz->nlists = (size_t)n[1];
                sz->nresults = (size_t)n[2];
                sz->ntext = (size_t)n[3];
                sz->chunk = n[4] < sz->nev ? (size_t)n[4] : sz->nev;
                if (!b->bad && sz->ntext && text_last != 0) {   /* ms_trace_validate's check of the text */
                    char text_err[600];
                    snprintf(text_err, sizeof text_err, "%.500s: rank %d: text not terminated", path, next);
                    stream_break(s, text_err, "");
                    return stream_fail(s, err, errlen);
                }
                next++;
            } else if (kind == FR_LAYOUT && next == t->nranks && !s->v2) {
                if (stream_layout(s, path) < 0) return stream_fail(s, err, errlen);
            } else if (kind == FR_READY && next == t->nranks) {
                break;
            } else if (kind == FR_ERROR) {
                child_err = guard_get_str(b);
                if (!child_err) b->bad = 1;
                break;
            } else {
                b->bad = 1;
            }
        }
    } else if (kind == FR_ERROR) {
        child_err = guard_get_str(b);
        if (!child_err) b->bad = 1;
    } else {
        b->bad = 1;
    }
    if (b->bad || child_err || b->timed_out || b->too_big) {
        stream_break(s, child_err, "its metadata");
        free(child_err);
        return stream_fail(s, err, errlen);
    }
    if (ms_trace_validate_shape(s->t, path, s->err, sizeof s->err) < 0) return stream_fail(s, err, errlen);
    return s;
}

const ms_trace *ms_trace_stream_trace(const ms_trace_stream *s) { return s->t; }
const ms_trace_rank_size *ms_trace_stream_size(const ms_trace_stream *s, int rank) { return &s->sizes[rank]; }
const char *ms_trace_stream_path(const ms_trace_stream *s) { return s->path; }

/* An array of the window's buffer k: its length (at most max) and its elements, straight into place. */
static int get_window_arr(in *b, ms_trace_window *w, int k, size_t elem, size_t max, size_t *n)
{
    uint64_t m = guard_get_u64(b);
    if (b->bad || m > max || (double)m * (double)elem > b->mem_limit) {
        b->bad = 1;
        return -1;
    }
    if (!ms_trace_window_room(w, k, (size_t)m + 1, elem)) {
        b->bad = b->oom = 1;
        return -1;
    }
    *n = (size_t)m;
    return m ? guard_get(b, w->buf[k], (size_t)m * elem) : 0;
}

/* Send a request; 0, or -1 (the stream broke). */
static int send_request(ms_trace_stream *s, int rank, size_t from, size_t to)
{
    if (s->nq == s->capq) {
        size_t cap = s->capq ? 2 * s->capq : 16;
        pending *q = realloc(s->q, cap * sizeof *q);
        if (!q) {
            char msg[600];
            snprintf(msg, sizeof msg, "%.500s: out of memory", s->path);
            stream_break(s, msg, "");
            return -1;
        }
        s->q = q;
        s->capq = cap;
    }
    stream_req req = {BLOB_MAGIC, rank, from, to};
    const char *c = (const char *)&req;
    for (size_t off = 0; off < sizeof req;) {
        ssize_t k = send(s->fd, c + off, sizeof req - off, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {   /* the child is gone: what its end says of it */
            s->b->eof = 1;
            char what[96];
            snprintf(what, sizeof what, "records [%zu, %zu) of rank %d", from, to, rank);
            stream_break(s, NULL, what);
            return -1;
        }
        off += (size_t)k;
    }
    pending *p = &s->q[s->nq++];
    memset(p, 0, sizeof *p);
    p->rank = rank;
    p->from = from;
    p->to = to;
    return 0;
}

/* The answer to the oldest request without one; 0, or -1 (the stream broke). An error the child
 * reports for that request (HDF5 cannot read those records) is that request's, not the stream's. */
static int receive_answer(ms_trace_stream *s)
{
    pending *p = &s->q[s->answered];
    const ms_trace_rank_size *sz = &s->sizes[p->rank];
    in *b = s->b;
    guard_progress_now(b);   /* the time limit counts from the wait (the child works on the requests in order) */
    char *child_err = NULL;
    char what[96];
    snprintf(what, sizeof what, "records [%zu, %zu) of rank %d", p->from, p->to, p->rank);
    uint32_t kind = guard_get_u32(b);
    ms_trace_window *w = &p->w;
    size_t before = ms_trace_window_bytes(w);
    if (kind == FR_WINDOW) {
        size_t n = 0;
        if (guard_get_u64(b) != (uint64_t)p->rank || guard_get_u64(b) != (uint64_t)p->from ||
            get_window_arr(b, w, 0, sizeof(ms_trace_event), p->to - p->from, &n) < 0 || n != p->to - p->from)
            b->bad = 1;
        /* each side array's part: [lo, lo + m) within the rank's */
        size_t lo[3] = {0, 0, 0}, m[3] = {0, 0, 0}, total[3] = {sz->nlists, sz->nresults, sz->ntext};
        static const size_t elem[3] = {sizeof(uint64_t), sizeof(ms_trace_result), 1};
        for (int a = 0; a < 3 && !b->bad; a++) {
            lo[a] = (size_t)guard_get_u64(b);
            if (lo[a] > total[a] || get_window_arr(b, w, a + 1, elem[a], total[a] - lo[a], &m[a]) < 0) b->bad = 1;
        }
        s->held += ms_trace_window_bytes(w) - before;
        if (!b->bad) {
            w->from = p->from;
            w->n = n;
            w->ev = w->buf[0];
            w->lists = w->buf[1];
            w->lists_from = lo[0];
            w->nlists = m[0];
            w->results = w->buf[2];
            w->results_from = lo[1];
            w->nresults = m[1];
            w->text = w->buf[3];
            w->text_from = lo[2];
            w->ntext = m[2];
            ((char *)w->buf[3])[m[2]] = 0;
            p->state = RECEIVED;
        }
    } else if (kind == FR_ERROR) {
        child_err = guard_get_str(b);
        if (child_err) {
            p->state = FAILED;
            p->err = child_err;
            child_err = NULL;
        } else {
            b->bad = 1;
        }
    } else {
        b->bad = 1;
    }
    if (p->state == ASKED) {
        stream_break(s, child_err, what);
        free(child_err);
        return -1;
    }
    s->answered++;
    return 0;
}

/* Forget request i (claimed or dropped and answered). */
static void remove_request(ms_trace_stream *s, size_t i)
{
    pending *p = &s->q[i];
    s->held -= ms_trace_window_bytes(&p->w);
    ms_trace_window_free(&p->w);
    free(p->err);
    memmove(p, p + 1, (s->nq - i - 1) * sizeof *p);
    s->nq--;
    if (i < s->answered) s->answered--;
}

static int check_range(ms_trace_stream *s, int rank, size_t from, size_t to, char *err, size_t errlen)
{
    if (rank < 0 || rank >= s->t->nranks || from > to || to > s->sizes[rank].nev)
        return ms_trace_fail(err, errlen, "%s: rank %d: records [%zu, %zu) asked for, it has %zu", s->path, rank, from,
                             to, rank >= 0 && rank < s->t->nranks ? s->sizes[rank].nev : 0);
    return 0;
}

/* The unclaimed request for exactly these records, or -1; requests for other records of the rank
 * are dropped (the reader went elsewhere). */
static long find_request(ms_trace_stream *s, int rank, size_t from, size_t to)
{
    long at = -1;
    for (size_t i = 0; i < s->nq; i++) {
        pending *p = &s->q[i];
        if (p->rank != rank || p->dropped) continue;
        if (p->from == from && p->to == to && at < 0) at = (long)i;
        else p->dropped = 1;
    }
    /* answered dropped requests hold memory for nobody */
    for (size_t i = s->answered; i-- > 0;)
        if (s->q[i].dropped) {
            remove_request(s, i);
            if (at > (long)i) at--;
        }
    return at;
}

int ms_trace_stream_ask(ms_trace_stream *s, int rank, size_t from, size_t to)
{
    char err[256];
    if (s->broken || check_range(s, rank, from, to, err, sizeof err) < 0) return -1;
    if (s->v2) return 0;   /* read when wanted: a pread and a decode */
    if (find_request(s, rank, from, to) >= 0) return 0;
    return send_request(s, rank, from, to);
}

int ms_trace_stream_read(ms_trace_stream *s, int rank, size_t from, size_t to, ms_trace_window *w, char *err,
                         size_t errlen)
{
    if (check_range(s, rank, from, to, err, errlen) < 0) return -1;
    if (s->v2) {
        if (s->broken) {
            w->n = 0;
            return ms_trace_fail(err, errlen, "%s", s->err);
        }
        int rc = ms_trace_v2_window(s->v2fd, &s->v, rank, from, to, w, &s->scratch, &s->scap, s->path, err, errlen);
        if (rc < 0) w->n = 0;
        return rc;
    }
    long at = s->broken ? -1 : find_request(s, rank, from, to);
    if (!s->broken && at < 0) {
        if (send_request(s, rank, from, to) == 0) at = (long)s->nq - 1;
    }
    while (!s->broken && s->answered <= (size_t)at) {
        if (receive_answer(s) < 0) break;
        /* answers nobody will claim are forgotten as they come */
        while (s->answered > 0 && s->answered - 1 != (size_t)at && s->q[s->answered - 1].dropped) {
            remove_request(s, s->answered - 1);
            at--;
        }
    }
    if (s->broken) {
        w->n = 0;   /* nothing of it is to be used */
        return ms_trace_fail(err, errlen, "%s", s->err);
    }
    pending *p = &s->q[at];
    int rc = 0;
    if (p->state == FAILED) {
        w->n = 0;
        rc = ms_trace_fail(err, errlen, "%s", p->err);
    } else {   /* the answer's buffers become the caller's, the caller's are freed with the request */
        ms_trace_window t = *w;
        *w = p->w;
        p->w = t;
        s->held -= ms_trace_window_bytes(w);
        s->held += ms_trace_window_bytes(&p->w);
    }
    remove_request(s, (size_t)at);
    return rc;
}

size_t ms_trace_stream_bytes(const ms_trace_stream *s) { return s->held; }

void ms_trace_stream_close(ms_trace_stream *s)
{
    if (!s) return;
    if (s->pid > 0) {
        close(s->fd);   /* the child reads the end of its requests and leaves */
        s->fd = -1;
        double t0 = guard_mono_s();
        int status;
        pid_t w;
        while ((w = waitpid(s->pid, &status, WNOHANG)) == 0 && guard_mono_s() - t0 < 2.0) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        if (w == 0) {
            kill(s->pid, SIGKILL);
            while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {
            }
        }
    } else if (s->fd >= 0) {
        close(s->fd);
    }
    while (s->nq) remove_request(s, s->nq - 1);
    free(s->q);
    ms_trace_v2_free(&s->v);
    if (s->v2fd >= 0) close(s->v2fd);
    free(s->scratch);
    ms_trace_free(s->t);
    free(s->sizes);
    free(s->b);
    free(s->path);
    free(s);
}
