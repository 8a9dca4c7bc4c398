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

/* ---- the child: ms_trace -> bytes ---------------------------------------------------------- */

void guard_flush(out *o)
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

void guard_put(out *o, const void *p, size_t len)
{
    const char *c = p;
    while (len && !o->bad) {
        if (o->n == sizeof o->buf) guard_flush(o);
        size_t k = sizeof o->buf - o->n < len ? sizeof o->buf - o->n : len;
        memcpy(o->buf + o->n, c, k);
        o->n += k;
        c += k;
        len -= k;
    }
}

void guard_put_u64(out *o, uint64_t v) { guard_put(o, &v, sizeof v); }

void guard_put_arr(out *o, const void *p, size_t n, size_t elem)
{
    guard_put_u64(o, n);
    if (n) guard_put(o, p, n * elem);
}

void guard_put_str(out *o, const char *s)   /* UINT64_MAX: absent */
{
    if (!s) {
        guard_put_u64(o, UINT64_MAX);
        return;
    }
    guard_put_arr(o, s, strlen(s), 1);
}

static void put_strs(out *o, char *const *v, size_t n)
{
    guard_put_u64(o, v ? n : UINT64_MAX);
    for (size_t i = 0; v && i < n; i++) guard_put_str(o, v[i] ? v[i] : "");
}

void guard_put_u32(out *o, uint32_t v) { guard_put(o, &v, sizeof v); }

void guard_send_meta(out *o, const ms_trace *t)
{
    guard_put_u32(o, FR_META);
    guard_put_u64(o, (uint64_t)t->nranks);
    guard_put_arr(o, t->comms, t->ncomms, sizeof *t->comms);
    guard_put_arr(o, t->members, t->nmembers, sizeof *t->members);
    put_strs(o, t->program, (size_t)(t->nprogram > 0 ? t->nprogram : 0));
    guard_put_str(o, t->config_json);
    guard_put_str(o, t->machine);
    guard_put_str(o, t->bindings_json);
    guard_put_str(o, t->mpisim_version);
    put_strs(o, t->fn_names, t->nfn);
}

static void send_rank(out *o, const ms_trace_rank *r, int i)
{
    guard_put_u32(o, FR_RANK);
    guard_put_u64(o, (uint64_t)i);
    int32_t head[5] = {r->rank, r->pid, r->cosim, r->truncated, r->missing};
    guard_put(o, head, sizeof head);
    guard_put_u64(o, (uint64_t)r->start_real_ns);
    guard_put(o, r->hostname, sizeof r->hostname);
    guard_put_arr(o, r->ev, r->nev, sizeof *r->ev);
    guard_put_arr(o, r->lists, r->nlists, sizeof *r->lists);
    guard_put_arr(o, r->results, r->nresults, sizeof *r->results);
    guard_put_arr(o, r->text, r->ntext, 1);
}

static int send_each(void *user, const ms_trace *t, int rank)
{
    out *o = user;
    if (rank < 0) guard_send_meta(o, t);
    else send_rank(o, &t->ranks[rank], rank);
    guard_flush(o);   /* progress the parent sees */
    return o->bad ? -1 : 0;
}

/* Present only under a sanitizer: a fault in the child must end the child alone, not run the
 * death callback a fuzzer installed in the parent (which would record the parent as crashed). */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* The child's faults end it (and only it); its stream to the parent, the magic sent first. */
out *guard_child_start(int fd)
{
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(NULL);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) signal(faults[i], SIG_DFL);
    signal(SIGPIPE, SIG_IGN);   /* a parent gone: the write fails and the child ends */
    out *o = calloc(1, sizeof *o);
    if (!o) _exit(3);
    o->fd = fd;
    uint32_t magic = BLOB_MAGIC;
    guard_put(o, &magic, 4);
    return o;
}

void guard_child_read(int fd, const char *path)
{
    out *o = guard_child_start(fd);
    char err[1024] = "";
    ms_trace *t = ms_trace_read_h5_each(path, send_each, o, err, sizeof err);
    if (t) {
        guard_put_u32(o, FR_END);
    } else {
        guard_put_u32(o, FR_ERROR);
        guard_put_str(o, err);
    }
    guard_flush(o);
    /* no exit handlers: HDF5's own shutdown may crash on a damaged file, and the parent's stdio
     * buffers are not ours to flush */
    _exit(0);
}

double guard_mono_s(void)
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
void guard_progress_now(in *b)
{
    b->last = guard_mono_s();
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
        double now = guard_mono_s();
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
        guard_progress_now(b);
        return (size_t)k;
    }
    return 0;
}

int guard_get(in *b, void *dst, size_t n)
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

uint64_t guard_get_u64(in *b)
{
    uint64_t v = 0;
    guard_get(b, &v, sizeof v);
    return v;
}

uint32_t guard_get_u32(in *b)
{
    uint32_t v = 0;
    guard_get(b, &v, sizeof v);
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

void *guard_get_arr(in *b, size_t *n, size_t elem, int nul)
{
    uint64_t k = guard_get_u64(b);
    *n = 0;
    if (b->bad || charge(b, (double)k * (double)elem + 1) < 0) return NULL;
    if (k == 0 && !nul) return NULL;
    char *p = malloc((size_t)k * elem + (nul ? 1 : 0));
    if (!p) {
        b->bad = b->oom = 1;
        return NULL;
    }
    if (guard_get(b, p, (size_t)k * elem) < 0) {
        free(p);
        return NULL;
    }
    if (nul) p[k] = 0;
    *n = (size_t)k;
    return p;
}

char *guard_get_str(in *b)
{
    uint64_t k = guard_get_u64(b);
    if (b->bad || k == UINT64_MAX) return NULL;
    if (charge(b, (double)k + 1) < 0) return NULL;
    char *p = malloc((size_t)k + 1);
    if (!p) {
        b->bad = b->oom = 1;
        return NULL;
    }
    if (guard_get(b, p, (size_t)k) < 0) {
        free(p);
        return NULL;
    }
    p[k] = 0;
    return p;
}

static char **get_strs(in *b, size_t *n)
{
    uint64_t k = guard_get_u64(b);
    *n = 0;
    if (b->bad || k == UINT64_MAX) return NULL;
    if (charge(b, ((double)k + 1) * sizeof(char *)) < 0) return NULL;
    char **v = calloc((size_t)k + 1, sizeof *v);
    if (!v) {
        b->bad = b->oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < (size_t)k && !b->bad; i++) {
        v[i] = guard_get_str(b);
        if (!v[i]) b->bad = 1;
        else *n = i + 1;
    }
    return v;
}

/* A META frame after its kind: the trace without records (t->nranks of them, each `extra` more
 * bytes charged for the caller), or NULL (b->bad). */
ms_trace *guard_decode_meta(in *b, size_t extra)
{
    ms_trace *t = calloc(1, sizeof *t);
    if (!t) {
        b->bad = b->oom = 1;
        return NULL;
    }
    uint64_t nr = guard_get_u64(b);
    if (nr < 1 || nr > 10000000 || charge(b, (double)nr * (double)(sizeof *t->ranks + extra)) < 0) {
        b->bad = 1;
        free(t);
        return NULL;
    }
    t->comms = guard_get_arr(b, &t->ncomms, sizeof *t->comms, 0);
    t->members = guard_get_arr(b, &t->nmembers, sizeof *t->members, 0);
    size_t np = 0;
    t->program = get_strs(b, &np);
    t->nprogram = (int)np;
    t->config_json = guard_get_str(b);
    t->machine = guard_get_str(b);
    t->bindings_json = guard_get_str(b);
    t->mpisim_version = guard_get_str(b);
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
void guard_decode_head(in *b, ms_trace_rank *r, int32_t *text_last)
{
    int32_t head[6] = {0, 0, 0, 0, 0, 0};
    guard_get(b, head, (text_last ? 6 : 5) * sizeof *head);
    r->rank = head[0];
    r->pid = head[1];
    r->cosim = head[2];
    r->truncated = head[3];
    r->missing = head[4];
    if (text_last) *text_last = head[5];
    r->start_real_ns = (int64_t)guard_get_u64(b);
    guard_get(b, r->hostname, sizeof r->hostname);
    r->hostname[sizeof r->hostname - 1] = 0;
}

/* The trace as the child sends it; NULL when the stream is damaged, stopped or ends early, or
 * when the child reports an error (*child_err, to free). */
ms_trace *guard_decode(in *b, char **child_err)
{
    *child_err = NULL;
    uint32_t kind = guard_get_u32(b) == BLOB_MAGIC ? guard_get_u32(b) : 0;
    if (kind == FR_ERROR) {   /* failed before any rank (not HDF5, not a trace, no metadata) */
        *child_err = guard_get_str(b);
        if (!*child_err) b->bad = 1;
        return NULL;
    }
    if (kind != FR_META) {
        b->bad = 1;
        return NULL;
    }
    ms_trace *t = guard_decode_meta(b, 0);
    if (!t) return NULL;
    int next = 0;
    while (!b->bad) {
        kind = guard_get_u32(b);
        if (kind == FR_RANK && next < t->nranks) {
            if (guard_get_u64(b) != (uint64_t)next) {
                b->bad = 1;
                break;
            }
            ms_trace_rank *r = &t->ranks[next++];
            guard_decode_head(b, r, NULL);
            r->ev = guard_get_arr(b, &r->nev, sizeof *r->ev, 0);
            r->lists = guard_get_arr(b, &r->nlists, sizeof *r->lists, 0);
            r->results = guard_get_arr(b, &r->nresults, sizeof *r->results, 0);
            r->text = guard_get_arr(b, &r->ntext, 1, 0);
        } else if (kind == FR_END && next == t->nranks) {
            unsigned char extra;
            if (b->off < b->len || pull(b, &extra, 1)) b->bad = 1;   /* nothing may follow */
            if (b->eof) break;
            b->bad = 1;
        } else if (kind == FR_ERROR) {
            *child_err = guard_get_str(b);
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
double guard_read_limit_bytes(const char *path)
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
        guard_child_read(fds[1], path);
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
    guard_progress_now(b);
    b->mem_limit = guard_read_limit_bytes(path);
    char *child_err = NULL;
    ms_trace *t = guard_decode(b, &child_err);
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
