/* Reading an HDF5 trace in a child process.
 *
 * HDF5 1.10 trusts what it reads: a damaged file makes it overflow a buffer (H5HG_read copies a
 * global heap object of the size the heap says into a buffer of the size the string's descriptor
 * says), loop without end inside H5Dread, or crash when the library shuts down. None of that can
 * be checked from outside through its API. So the reader runs in a forked child with a time limit;
 * the child sends the trace back through a pipe in a small format of its own, rank by rank as it
 * reads them (it never holds more than one rank's records), which the parent decodes as it
 * arrives (it never holds the bytes of the whole trace beside the trace) with every length checked,
 * and then validates as any trace. A child that crashes, makes no progress for the time limit
 * (a loop inside HDF5 sends nothing; a sound file sends rank after rank, however loaded the
 * machine) or grows past its memory bound is a clear error naming the file, never a crash, a hang
 * or an exhausted machine; the parent allocates no more than that bound either. */
#define _GNU_SOURCE
#include "ms_trace.h"
#include "ms_trace_internal.h"

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

#define BLOB_MAGIC 0x3268736dU   /* "msh2" */
/* The stream: the magic, then frames, each a kind then its fields: META (once, first), RANK (one
 * per rank, in order), then END (the trace is complete) or ERROR (the reader's message). */
enum { FR_META = 1, FR_RANK = 2, FR_END = 3, FR_ERROR = 4 };

/* ---- the child: ms_trace -> bytes ---------------------------------------------------------- */

typedef struct out {
    int fd;
    char buf[1 << 16];
    size_t n;
    int bad;
} out;

static void flush(out *o)
{
    size_t off = 0;
    while (!o->bad && off < o->n) {
        ssize_t w = write(o->fd, o->buf + off, o->n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            o->bad = 1;
            return;
        }
        off += (size_t)w;
    }
    o->n = 0;
}

static void put(out *o, const void *p, size_t len)
{
    const char *c = p;
    while (len && !o->bad) {
        if (o->n == sizeof o->buf) flush(o);
        size_t k = sizeof o->buf - o->n < len ? sizeof o->buf - o->n : len;
        memcpy(o->buf + o->n, c, k);
        o->n += k;
        c += k;
        len -= k;
    }
}

static void put_u64(out *o, uint64_t v) { put(o, &v, sizeof v); }

static void put_arr(out *o, const void *p, size_t n, size_t elem)
{
    put_u64(o, n);
    if (n) put(o, p, n * elem);
}

static void put_str(out *o, const char *s)   /* UINT64_MAX: absent */
{
    if (!s) {
        put_u64(o, UINT64_MAX);
        return;
    }
    put_arr(o, s, strlen(s), 1);
}

static void put_strs(out *o, char *const *v, size_t n)
{
    put_u64(o, v ? n : UINT64_MAX);
    for (size_t i = 0; v && i < n; i++) put_str(o, v[i] ? v[i] : "");
}

static void put_u32(out *o, uint32_t v) { put(o, &v, sizeof v); }

static void send_meta(out *o, const ms_trace *t)
{
    put_u32(o, FR_META);
    put_u64(o, (uint64_t)t->nranks);
    put_arr(o, t->comms, t->ncomms, sizeof *t->comms);
    put_arr(o, t->members, t->nmembers, sizeof *t->members);
    put_strs(o, t->program, (size_t)(t->nprogram > 0 ? t->nprogram : 0));
    put_str(o, t->config_json);
    put_str(o, t->machine);
    put_str(o, t->bindings_json);
    put_str(o, t->mpisim_version);
    put_strs(o, t->fn_names, t->nfn);
}

static void send_rank(out *o, const ms_trace_rank *r, int i)
{
    put_u32(o, FR_RANK);
    put_u64(o, (uint64_t)i);
    int32_t head[5] = {r->rank, r->pid, r->cosim, r->truncated, r->missing};
    put(o, head, sizeof head);
    put_u64(o, (uint64_t)r->start_real_ns);
    put(o, r->hostname, sizeof r->hostname);
    put_arr(o, r->ev, r->nev, sizeof *r->ev);
    put_arr(o, r->lists, r->nlists, sizeof *r->lists);
    put_arr(o, r->results, r->nresults, sizeof *r->results);
    put_arr(o, r->text, r->ntext, 1);
}

static int send_each(void *user, const ms_trace *t, int rank)
{
    out *o = user;
    if (rank < 0) send_meta(o, t);
    else send_rank(o, &t->ranks[rank], rank);
    flush(o);   /* progress the parent sees */
    return o->bad ? -1 : 0;
}

/* Present only under a sanitizer: a fault in the child must end the child alone, not run the
 * death callback a fuzzer installed in the parent (which would record the parent as crashed). */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* The child's faults end it (and only it); its stream to the parent, the magic sent first. */
static out *child_start(int fd)
{
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(NULL);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) signal(faults[i], SIG_DFL);
    signal(SIGPIPE, SIG_IGN);   /* a parent gone: the write fails and the child ends */
    out *o = calloc(1, sizeof *o);
    if (!o) _exit(3);
    o->fd = fd;
    uint32_t magic = BLOB_MAGIC;
    put(o, &magic, 4);
    return o;
}

static void child_read(int fd, const char *path)
{
    out *o = child_start(fd);
    char err[1024] = "";
    ms_trace *t = ms_trace_read_h5_each(path, send_each, o, err, sizeof err);
    if (t) {
        put_u32(o, FR_END);
    } else {
        put_u32(o, FR_ERROR);
        put_str(o, err);
    }
    flush(o);
    /* no exit handlers: HDF5's own shutdown may crash on a damaged file, and the parent's stdio
     * buffers are not ours to flush */
    _exit(0);
}

/* ---- the parent: bytes -> ms_trace, every length checked ----------------------------------- */

/* The stream from the child, read as it comes: a read that waits longer than the limit since the
 * last bytes arrived, a child past its memory bound, or an allocation past the same bound for the
 * parent stops it (timed_out, too_big; bad: the bytes make no sense). */
typedef struct in {
    int fd;
    pid_t pid;
    unsigned char buf[1 << 16];
    size_t len, off;
    int bad, eof, timed_out, too_big, oom;
    double limit, last, mem_limit, allocated, rss_checked;
    /* the limit counts the time since the last progress in which neither the reader nor this
     * process waited for a CPU (a loaded machine makes a sound read slow, not stuck; HDF5 looping
     * on a damaged file runs, and that counts): their run-queue waits then, and the most either
     * has waited since */
    double child_wait0, self_wait0, starved;
} in;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A process's main thread's time waiting for a CPU so far (s; /proc/PID/schedstat), 0 if unknown. */
static double wait_s(pid_t pid)
{
    char p[64], buf[128];
    snprintf(p, sizeof p, "/proc/%d/schedstat", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unsigned long long run = 0, delay = 0;
    if (n <= 0) return 0;
    buf[n] = 0;
    return sscanf(buf, "%llu %llu", &run, &delay) == 2 ? (double)delay * 1e-9 : 0;
}

/* A progress (bytes from the reader, or the start of a wait for them): the limit counts anew. */
static void progress_now(in *b)
{
    b->last = mono_s();
    b->child_wait0 = wait_s(b->pid);
    b->self_wait0 = wait_s(getpid());
    b->starved = 0;
}

static double rss_bytes(pid_t pid)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/statm", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    unsigned long long vm = 0, rss = 0;
    int n = fscanf(f, "%llu %llu", &vm, &rss);
    fclose(f);
    return n == 2 ? (double)rss * (double)sysconf(_SC_PAGESIZE) : 0;
}

/* Up to len bytes into dst (at least one), or 0 when the stream ended or was stopped. */
static size_t pull(in *b, unsigned char *dst, size_t len)
{
    while (!b->bad && !b->eof && !b->timed_out && !b->too_big) {
        double now = mono_s();
        if (now - b->rss_checked >= 0.05) {   /* /proc read at most every 50 ms, not per read */
            b->rss_checked = now;
            if (rss_bytes(b->pid) > b->mem_limit) {
                b->too_big = 1;
                break;
            }
            double cw = wait_s(b->pid) - b->child_wait0, sw = wait_s(getpid()) - b->self_wait0;
            b->starved = cw > sw ? cw : sw;
        }
        double left = b->last + b->limit + b->starved - now;
        if (left <= 0) {
            b->timed_out = 1;
            break;
        }
        struct pollfd pf = {b->fd, POLLIN, 0};
        int n = poll(&pf, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1);
        if (n <= 0) continue;   /* EINTR, or nothing yet */
        ssize_t k = read(b->fd, dst, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            b->eof = 1;
            break;
        }
        progress_now(b);
        return (size_t)k;
    }
    return 0;
}

static int get(in *b, void *dst, size_t n)
{
    unsigned char *d = dst;
    while (n && !b->bad) {
        if (b->off < b->len) {
            size_t k = b->len - b->off < n ? b->len - b->off : n;
            memcpy(d, b->buf + b->off, k);
            b->off += k;
            d += k;
            n -= k;
        } else if (n >= sizeof b->buf) {   /* a long array: straight into its place */
            size_t k = pull(b, d, n);
            if (!k) b->bad = 1;
            d += k;
            n -= k;
        } else {
            b->off = 0;
            b->len = pull(b, b->buf, sizeof b->buf);
            if (!b->len) b->bad = 1;
        }
    }
    return b->bad ? -1 : 0;
}

static uint64_t get_u64(in *b)
{
    uint64_t v = 0;
    get(b, &v, sizeof v);
    return v;
}

static uint32_t get_u32(in *b)
{
    uint32_t v = 0;
    get(b, &v, sizeof v);
    return v;
}

/* Room for `bytes` more within the memory bound (a damaged stream could name any length). */
static int charge(in *b, double bytes)
{
    if (b->bad || bytes > b->mem_limit - b->allocated) {
        b->bad = 1;
        return -1;
    }
    b->allocated += bytes;
    return 0;
}

static void *get_arr(in *b, size_t *n, size_t elem, int nul)
{
    uint64_t k = get_u64(b);
    *n = 0;
    if (b->bad || charge(b, (double)k * (double)elem + 1) < 0) return NULL;
    if (k == 0 && !nul) return NULL;
    char *p = malloc((size_t)k * elem + (nul ? 1 : 0));
    if (!p) {
        b->bad = b->oom = 1;
        return NULL;
    }
    if (get(b, p, (size_t)k * elem) < 0) {
        free(p);
        return NULL;
    }
    if (nul) p[k] = 0;
    *n = (size_t)k;
    return p;
}

static char *get_str(in *b)
{
    uint64_t k = get_u64(b);
    if (b->bad || k == UINT64_MAX) return NULL;
    if (charge(b, (double)k + 1) < 0) return NULL;
    char *p = malloc((size_t)k + 1);
    if (!p) {
        b->bad = b->oom = 1;
        return NULL;
    }
    if (get(b, p, (size_t)k) < 0) {
        free(p);
        return NULL;
    }
    p[k] = 0;
    return p;
}

static char **get_strs(in *b, size_t *n)
{
    uint64_t k = get_u64(b);
    *n = 0;
    if (b->bad || k == UINT64_MAX) return NULL;
    if (charge(b, ((double)k + 1) * sizeof(char *)) < 0) return NULL;
    char **v = calloc((size_t)k + 1, sizeof *v);
    if (!v) {
        b->bad = b->oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < (size_t)k && !b->bad; i++) {
        v[i] = get_str(b);
        if (!v[i]) b->bad = 1;
        else *n = i + 1;
    }
    return v;
}

/* A META frame after its kind: the trace without records (t->nranks of them, each `extra` more
 * bytes charged for the caller), or NULL (b->bad). */
static ms_trace *decode_meta(in *b, size_t extra)
{
    ms_trace *t = calloc(1, sizeof *t);
    if (!t) {
        b->bad = b->oom = 1;
        return NULL;
    }
    uint64_t nr = get_u64(b);
    if (nr < 1 || nr > 10000000 || charge(b, (double)nr * (double)(sizeof *t->ranks + extra)) < 0) {
        b->bad = 1;
        free(t);
        return NULL;
    }
    t->comms = get_arr(b, &t->ncomms, sizeof *t->comms, 0);
    t->members = get_arr(b, &t->nmembers, sizeof *t->members, 0);
    size_t np = 0;
    t->program = get_strs(b, &np);
    t->nprogram = (int)np;
    t->config_json = get_str(b);
    t->machine = get_str(b);
    t->bindings_json = get_str(b);
    t->mpisim_version = get_str(b);
    t->fn_names = get_strs(b, &t->nfn);
    t->ranks = calloc((size_t)nr, sizeof *t->ranks);
    if (!t->ranks) b->bad = b->oom = 1;
    else t->nranks = (int)nr;
    if (b->bad) {
        ms_trace_free(t);
        return NULL;
    }
    return t;
}

/* A rank's head as send_rank and send_head put it (text_last: send_head's last text byte). */
static void decode_head(in *b, ms_trace_rank *r, int32_t *text_last)
{
    int32_t head[6] = {0, 0, 0, 0, 0, 0};
    get(b, head, (text_last ? 6 : 5) * sizeof *head);
    r->rank = head[0];
    r->pid = head[1];
    r->cosim = head[2];
    r->truncated = head[3];
    r->missing = head[4];
    if (text_last) *text_last = head[5];
    r->start_real_ns = (int64_t)get_u64(b);
    get(b, r->hostname, sizeof r->hostname);
    r->hostname[sizeof r->hostname - 1] = 0;
}

/* The trace as the child sends it; NULL when the stream is damaged, stopped or ends early, or
 * when the child reports an error (*child_err, to free). */
static ms_trace *decode(in *b, char **child_err)
{
    *child_err = NULL;
    uint32_t kind = get_u32(b) == BLOB_MAGIC ? get_u32(b) : 0;
    if (kind == FR_ERROR) {   /* failed before any rank (not HDF5, not a trace, no metadata) */
        *child_err = get_str(b);
        if (!*child_err) b->bad = 1;
        return NULL;
    }
    if (kind != FR_META) {
        b->bad = 1;
        return NULL;
    }
    ms_trace *t = decode_meta(b, 0);
    if (!t) return NULL;
    int next = 0;
    while (!b->bad) {
        kind = get_u32(b);
        if (kind == FR_RANK && next < t->nranks) {
            if (get_u64(b) != (uint64_t)next) {
                b->bad = 1;
                break;
            }
            ms_trace_rank *r = &t->ranks[next++];
            decode_head(b, r, NULL);
            r->ev = get_arr(b, &r->nev, sizeof *r->ev, 0);
            r->lists = get_arr(b, &r->nlists, sizeof *r->lists, 0);
            r->results = get_arr(b, &r->nresults, sizeof *r->results, 0);
            r->text = get_arr(b, &r->ntext, 1, 0);
        } else if (kind == FR_END && next == t->nranks) {
            unsigned char extra;
            if (b->off < b->len || pull(b, &extra, 1)) b->bad = 1;   /* nothing may follow */
            if (b->eof) break;
            b->bad = 1;
        } else if (kind == FR_ERROR) {
            *child_err = get_str(b);
            if (!*child_err) b->bad = 1;
            break;
        } else {
            b->bad = 1;
        }
    }
    if (b->bad || *child_err) {
        ms_trace_free(t);
        return NULL;
    }
    return t;
}

/* Memory the child may use: a damaged file can also make HDF5 allocate without end (350 MB/s
 * seen). A sound trace's deflated data grows some ten times in memory: 64 times the file and
 * 1 GB at least leave room for that. The parent's allocations for what the child sends are held
 * to the same bound. */
static double read_limit_bytes(const char *path)
{
    struct stat st;
    double size = stat(path, &st) == 0 ? (double)st.st_size : 0;
    return 1e9 + 64.0 * size;
}

double ms_trace_read_limit_s(const char *path)
{
    /* a damaged file can make HDF5 loop: give it what a sound file of this size needs (deflated
     * data read at well over 10 MB/s) plus a margin since the last bytes it sent, then stop it;
     * counted while neither the reader nor its parent waited for a CPU (pull) */
    struct stat st;
    double size = stat(path, &st) == 0 ? (double)st.st_size : 0;
    return 10.0 + size / 10e6;
}

ms_trace *ms_trace_read_h5(const char *path, char *err, size_t errlen)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        ms_trace_fail(err, errlen, "%s: cannot create a pipe: %s", path, strerror(errno));
        return NULL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        ms_trace_fail(err, errlen, "%s: cannot fork the reader: %s", path, strerror(errno));
        return NULL;
    }
    if (pid == 0) {
        close(fds[0]);
        child_read(fds[1], path);
    }
    close(fds[1]);
    in *b = calloc(1, sizeof *b);
    if (!b) {
        close(fds[0]);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        ms_trace_fail(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    b->fd = fds[0];
    b->pid = pid;
    b->limit = ms_trace_read_limit_s(path);
    progress_now(b);
    b->mem_limit = read_limit_bytes(path);
    char *child_err = NULL;
    ms_trace *t = decode(b, &child_err);
    close(fds[0]);
    if (b->timed_out || b->too_big || (!t && !child_err)) kill(pid, SIGKILL);   /* a stream we stopped or
                                                                                 * could not read: end it */
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int killed_by_us = b->timed_out || b->too_big || (!t && !child_err && b->bad && !b->eof);
    if (b->timed_out)
        ms_trace_fail(err, errlen,
                      "%s: HDF5 did not finish reading it within %.0f s of its last progress (a damaged file can make "
                      "it loop)", path, b->limit);
    else if (b->too_big)
        ms_trace_fail(err, errlen,
                      "%s: HDF5 used more than %.1f GB reading it (a damaged file can make it allocate without end)",
                      path, b->mem_limit * 1e-9);
    else if (!killed_by_us && WIFSIGNALED(status))
        ms_trace_fail(err, errlen, "%s: HDF5 crashed reading it (signal %d): the file is damaged", path,
                      WTERMSIG(status));
    else if (!killed_by_us && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
        ms_trace_fail(err, errlen, "%s: the reader failed (exit status %d): the file is damaged?", path,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    else if (child_err)
        ms_trace_fail(err, errlen, "%s", child_err);
    else if (!t && b->oom)
        ms_trace_fail(err, errlen, "%s: out of memory", path);
    else if (!t)
        ms_trace_fail(err, errlen, "%s: the reader sent a damaged trace", path);
    if ((b->timed_out || b->too_big || child_err || !WIFEXITED(status) || WEXITSTATUS(status) != 0) && t) {
        ms_trace_free(t);
        t = NULL;
    }
    if (t && ms_trace_validate(t, path, err, errlen) < 0) {
        ms_trace_free(t);
        t = NULL;
    }
    free(child_err);
    free(b);
    return t;
}

/* ---- a trace read stretch by stretch: the same child, asked for what the replay needs ---------- */

/* After META: one HEAD per rank, then READY; then for each request (stream_req) one WINDOW or an
 * ERROR. The child keeps the file open between requests; it ends when the parent closes its end. */
enum { FR_HEAD = 5, FR_READY = 6, FR_WINDOW = 7, FR_LAYOUT = 8 };

typedef struct stream_req {
    uint32_t magic;
    int32_t rank;
    uint64_t from, to;
} stream_req;

static void send_head(out *o, const ms_trace_rank *r, int i, const ms_trace_rank_size *sz, int text_last)
{
    put_u32(o, FR_HEAD);
    put_u64(o, (uint64_t)i);
    int32_t head[6] = {r->rank, r->pid, r->cosim, r->truncated, r->missing, text_last};
    put(o, head, sizeof head);
    put_u64(o, (uint64_t)r->start_real_ns);
    put(o, r->hostname, sizeof r->hostname);
    uint64_t n[5] = {sz->nev, sz->nlists, sz->nresults, sz->ntext, sz->chunk};
    put(o, n, sizeof n);
}

static void send_window(out *o, int i, const ms_trace_window *w)
{
    put_u32(o, FR_WINDOW);
    put_u64(o, (uint64_t)i);
    put_u64(o, w->from);
    put_arr(o, w->ev, w->n, sizeof *w->ev);
    put_u64(o, w->lists_from);
    put_arr(o, w->lists, w->nlists, sizeof *w->lists);
    put_u64(o, w->results_from);
    put_arr(o, w->results, w->nresults, sizeof *w->results);
    put_u64(o, w->text_from);
    put_arr(o, w->text, w->ntext, 1);
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
    out *o = child_start(fd);
    char err[1024] = "";
    ms_trace *t = NULL;
    ms_trace_h5 *h = ms_trace_h5_open(path, &t, err, sizeof err);
    if (h) {
        send_meta(o, t);
        flush(o);
        for (int i = 0; i < t->nranks && h && !o->bad; i++) {
            ms_trace_rank_size sz;
            int last = 0;
            if (ms_trace_h5_head(h, t, i, &sz, &last, err, sizeof err) < 0) {
                ms_trace_h5_close(h);
                h = NULL;
                break;
            }
            send_head(o, &t->ranks[i], i, &sz, last);
            flush(o);   /* progress the parent sees */
        }
    }
    if (!h) {
        put_u32(o, FR_ERROR);
        put_str(o, err);
        flush(o);
        _exit(0);
    }
    const ms_trace_v2 *v2 = ms_trace_h5_v2(h);
    if (v2) {   /* schema 2: where the records lie; the parent reads them itself, the child's work is done */
        put_u32(o, FR_LAYOUT);
        put_u64(o, v2->stretch);
        put(o, v2->at, sizeof v2->at);
        put(o, v2->len, sizeof v2->len);
        put_arr(o, v2->soff, v2->nsoff, sizeof *v2->soff);
        put_arr(o, v2->heads, v2->nheads, sizeof *v2->heads);
    }
    put_u32(o, FR_READY);
    flush(o);
    if (v2) _exit(0);
    ms_trace_window w;
    memset(&w, 0, sizeof w);
    stream_req q;
    while (!o->bad && read_full(fd, &q, sizeof q) == 0 && q.magic == BLOB_MAGIC) {
        if (q.rank < 0 || q.rank >= t->nranks) break;
        if (ms_trace_h5_range(h, q.rank, (size_t)q.from, (size_t)q.to, &w, err, sizeof err) < 0) {
            put_u32(o, FR_ERROR);
            put_str(o, err);
        } else {
            send_window(o, q.rank, &w);
        }
        flush(o);
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
    progress_now(b);
    b->mem_limit = read_limit_bytes(path);
    char *child_err = NULL;
    uint32_t kind = get_u32(b) == BLOB_MAGIC ? get_u32(b) : 0;
    if (kind == FR_META) {
        ms_trace *t = s->t = decode_meta(b, sizeof *s->sizes);
        if (t && !(s->sizes = calloc((size_t)t->nranks, sizeof *s->sizes))) b->bad = b->oom = 1;
        for (int next = 0; !b->bad;) {
            kind = get_u32(b);
            if (kind == FR_HEAD && next < t->nranks) {
                if (get_u64(b) != (uint64_t)next) {
                    b->bad = 1;
                    break;
                }
                int32_t text_last = 0;
                decode_head(b, &t->ranks[next], &text_last);
                uint64_t n[5] = {0, 0, 0, 0, 0};
                get(b, n, sizeof n);
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
                ms_trace_v2 *v = &s->v;
                s->v2 = 1;
                v->stretch = get_u64(b);
                get(b, v->at, sizeof v->at);
                get(b, v->len, sizeof v->len);
                v->soff = get_arr(b, &v->nsoff, sizeof *v->soff, 0);
                v->heads = get_arr(b, &v->nheads, sizeof *v->heads, 0);
                if (b->bad) break;
                /* checked here against the file as this process sees it: it reads the records */
                struct stat st;
                char what[300];
                if ((s->v2fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(s->v2fd, &st) != 0) {
                    snprintf(s->err, sizeof s->err, "%s: cannot open it: %s", path, strerror(errno));
                    return stream_fail(s, err, errlen);
                }
                if (ms_trace_v2_check(v, t->nranks, (uint64_t)st.st_size, what, sizeof what) < 0) {
                    snprintf(s->err, sizeof s->err, "%.700s: %s", path, what);
                    return stream_fail(s, err, errlen);
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
            } else if (kind == FR_READY && next == t->nranks) {
                break;
            } else if (kind == FR_ERROR) {
                child_err = get_str(b);
                if (!child_err) b->bad = 1;
                break;
            } else {
                b->bad = 1;
            }
        }
    } else if (kind == FR_ERROR) {
        child_err = get_str(b);
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
    uint64_t m = get_u64(b);
    if (b->bad || m > max || (double)m * (double)elem > b->mem_limit) {
        b->bad = 1;
        return -1;
    }
    if (!ms_trace_window_room(w, k, (size_t)m + 1, elem)) {
        b->bad = b->oom = 1;
        return -1;
    }
    *n = (size_t)m;
    return m ? get(b, w->buf[k], (size_t)m * elem) : 0;
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
    progress_now(b);   /* the time limit counts from the wait (the child works on the requests in order) */
    char *child_err = NULL;
    char what[96];
    snprintf(what, sizeof what, "records [%zu, %zu) of rank %d", p->from, p->to, p->rank);
    uint32_t kind = get_u32(b);
    ms_trace_window *w = &p->w;
    size_t before = ms_trace_window_bytes(w);
    if (kind == FR_WINDOW) {
        size_t n = 0;
        if (get_u64(b) != (uint64_t)p->rank || get_u64(b) != (uint64_t)p->from ||
            get_window_arr(b, w, 0, sizeof(ms_trace_event), p->to - p->from, &n) < 0 || n != p->to - p->from)
            b->bad = 1;
        /* each side array's part: [lo, lo + m) within the rank's */
        size_t lo[3] = {0, 0, 0}, m[3] = {0, 0, 0}, total[3] = {sz->nlists, sz->nresults, sz->ntext};
        static const size_t elem[3] = {sizeof(uint64_t), sizeof(ms_trace_result), 1};
        for (int a = 0; a < 3 && !b->bad; a++) {
            lo[a] = (size_t)get_u64(b);
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
        child_err = get_str(b);
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
        double t0 = mono_s();
        int status;
        pid_t w;
        while ((w = waitpid(s->pid, &status, WNOHANG)) == 0 && mono_s() - t0 < 2.0) {
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
