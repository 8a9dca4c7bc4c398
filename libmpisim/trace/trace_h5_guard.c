/* Reading an HDF5 trace in a child process.
 *
 * HDF5 1.10 trusts what it reads: a damaged file makes it overflow a buffer (H5HG_read copies a
 * global heap object of the size the heap says into a buffer of the size the string's descriptor
 * says), loop without end inside H5Dread, or crash when the library shuts down. None of that can
 * be checked from outside through its API. So the reader runs in a forked child with a time limit;
 * the child sends the trace back through a pipe in a small format of its own, which the parent
 * decodes with every length checked and then validates as any trace. A child that crashes, does
 * not finish in time or grows past its memory bound is a clear error naming the file, never a
 * crash, a hang or an exhausted machine. */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOB_MAGIC 0x3168736dU   /* "msh1" */

/* ---- the child: ms_trace -> bytes ---------------------------------------------------------- */

typedef struct out {
    int fd;
    char buf[1 << 16];
    size_t n;
    int bad;
} out;

static void put(out *o, const void *p, size_t len)
{
    const char *c = p;
    while (len && !o->bad) {
        if (o->n == sizeof o->buf) {
            size_t off = 0;
            while (off < o->n) {
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

static void send_trace(out *o, const ms_trace *t)
{
    put_u64(o, (uint64_t)t->nranks);
    put_arr(o, t->comms, t->ncomms, sizeof *t->comms);
    put_arr(o, t->members, t->nmembers, sizeof *t->members);
    put_strs(o, t->program, (size_t)(t->nprogram > 0 ? t->nprogram : 0));
    put_str(o, t->config_json);
    put_str(o, t->machine);
    put_str(o, t->bindings_json);
    put_str(o, t->mpisim_version);
    put_strs(o, t->fn_names, t->nfn);
    for (int i = 0; i < t->nranks; i++) {
        const ms_trace_rank *r = &t->ranks[i];
        int32_t head[5] = {r->rank, r->pid, r->cosim, r->truncated, r->missing};
        put(o, head, sizeof head);
        put_u64(o, (uint64_t)r->start_real_ns);
        put(o, r->hostname, sizeof r->hostname);
        put_arr(o, r->ev, r->nev, sizeof *r->ev);
        put_arr(o, r->lists, r->nlists, sizeof *r->lists);
        put_arr(o, r->results, r->nresults, sizeof *r->results);
        put_arr(o, r->text, r->ntext, 1);
    }
}

/* Present only under a sanitizer: a fault in the child must end the child alone, not run the
 * death callback a fuzzer installed in the parent (which would record the parent as crashed). */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void child_read(int fd, const char *path)
{
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(NULL);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) signal(faults[i], SIG_DFL);
    out *o = calloc(1, sizeof *o);
    if (!o) _exit(3);
    o->fd = fd;
    char err[1024] = "";
    ms_trace *t = ms_trace_read_h5_direct(path, err, sizeof err);
    uint32_t magic = BLOB_MAGIC, ok = t != NULL;
    put(o, &magic, 4);
    put(o, &ok, 4);
    if (t) send_trace(o, t);
    else put_str(o, err);
    /* flush what is left (put flushes only a full buffer) */
    size_t off = 0;
    while (!o->bad && off < o->n) {
        ssize_t w = write(fd, o->buf + off, o->n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    /* no exit handlers: HDF5's own shutdown may crash on a damaged file, and the parent's stdio
     * buffers are not ours to flush */
    _exit(0);
}

/* ---- the parent: bytes -> ms_trace, every length checked ----------------------------------- */

typedef struct in {
    const unsigned char *p;
    size_t len, off;
    int bad;
} in;

static int get(in *b, void *dst, size_t n)
{
    if (b->bad || b->len - b->off < n) {
        b->bad = 1;
        return -1;
    }
    memcpy(dst, b->p + b->off, n);
    b->off += n;
    return 0;
}

static uint64_t get_u64(in *b)
{
    uint64_t v = 0;
    get(b, &v, sizeof v);
    return v;
}

static void *get_arr(in *b, size_t *n, size_t elem, int nul)
{
    uint64_t k = get_u64(b);
    *n = 0;
    if (b->bad || k > (b->len - b->off) / elem) {
        b->bad = 1;
        return NULL;
    }
    if (k == 0 && !nul) return NULL;
    char *p = malloc((size_t)k * elem + (nul ? 1 : 0));
    if (!p) {
        b->bad = 1;
        return NULL;
    }
    get(b, p, (size_t)k * elem);
    if (nul) p[k] = 0;
    *n = (size_t)k;
    return p;
}

static char *get_str(in *b)
{
    uint64_t k;
    if (get(b, &k, sizeof k) < 0) return NULL;
    if (k == UINT64_MAX) return NULL;
    b->off -= sizeof k;
    size_t n;
    return get_arr(b, &n, 1, 1);
}

static char **get_strs(in *b, size_t *n)
{
    uint64_t k = get_u64(b);
    *n = 0;
    if (b->bad || k == UINT64_MAX) return NULL;
    if (k > (b->len - b->off) / 8) {
        b->bad = 1;
        return NULL;
    }
    char **v = calloc((size_t)k + 1, sizeof *v);
    if (!v) {
        b->bad = 1;
        return NULL;
    }
    for (size_t i = 0; i < (size_t)k && !b->bad; i++) {
        v[i] = get_str(b);
        if (!v[i]) b->bad = 1;
        else *n = i + 1;
    }
    return v;
}

static ms_trace *decode(in *b)
{
    ms_trace *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    uint64_t nr = get_u64(b);
    if (nr < 1 || nr > 10000000 || nr > b->len / 64) {
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
    if (!t->ranks) b->bad = 1;
    else t->nranks = (int)nr;
    for (int i = 0; i < t->nranks && !b->bad; i++) {
        ms_trace_rank *r = &t->ranks[i];
        int32_t head[5] = {0, 0, 0, 0, 0};
        get(b, head, sizeof head);
        r->rank = head[0];
        r->pid = head[1];
        r->cosim = head[2];
        r->truncated = head[3];
        r->missing = head[4];
        r->start_real_ns = (int64_t)get_u64(b);
        get(b, r->hostname, sizeof r->hostname);
        r->hostname[sizeof r->hostname - 1] = 0;
        r->ev = get_arr(b, &r->nev, sizeof *r->ev, 0);
        r->lists = get_arr(b, &r->nlists, sizeof *r->lists, 0);
        r->results = get_arr(b, &r->nresults, sizeof *r->results, 0);
        r->text = get_arr(b, &r->ntext, 1, 0);
    }
    if (b->bad || b->off != b->len) {
        ms_trace_free(t);
        return NULL;
    }
    return t;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Memory the child may use: a damaged file can also make HDF5 allocate without end (350 MB/s
 * seen). A sound trace's deflated data grows some ten times in memory: 64 times the file and
 * 1 GB at least leave room for that. */
static double read_limit_bytes(const char *path)
{
    struct stat st;
    double size = stat(path, &st) == 0 ? (double)st.st_size : 0;
    return 1e9 + 64.0 * size;
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

double ms_trace_read_limit_s(const char *path)
{
    /* a damaged file can make HDF5 loop: give it what a sound file of this size needs (deflated
     * data read at well over 10 MB/s) plus a margin, then stop it */
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
    double limit = ms_trace_read_limit_s(path), deadline = mono_s() + limit, mem_limit = read_limit_bytes(path);
    unsigned char *data = NULL;
    size_t len = 0, cap = 0;
    int timed_out = 0, oom = 0, too_big = 0;
    for (;;) {
        double left = deadline - mono_s();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        if (rss_bytes(pid) > mem_limit) {
            too_big = 1;
            break;
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int n = poll(&pf, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) continue;
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 1 << 16;
            unsigned char *q = realloc(data, nc);
            if (!q) {
                oom = 1;
                break;
            }
            data = q;
            cap = nc;
        }
        ssize_t k = read(fds[0], data + len, cap - len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        len += (size_t)k;
    }
    close(fds[0]);
    if (timed_out || oom || too_big) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ms_trace *t = NULL;
    if (timed_out)
        ms_trace_fail(err, errlen, "%s: HDF5 did not finish reading it within %.0f s (a damaged file can make it loop)",
                      path, limit);
    else if (too_big)
        ms_trace_fail(err, errlen,
                      "%s: HDF5 used more than %.1f GB reading it (a damaged file can make it allocate without end)",
                      path, mem_limit * 1e-9);
    else if (oom)
        ms_trace_fail(err, errlen, "%s: out of memory", path);
    else if (WIFSIGNALED(status))
        ms_trace_fail(err, errlen, "%s: HDF5 crashed reading it (signal %d): the file is damaged", path,
                      WTERMSIG(status));
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || len < 8)
        ms_trace_fail(err, errlen, "%s: the reader failed (exit status %d): the file is damaged?", path,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    else {
        in b = {data, len, 0, 0};
        uint32_t magic = 0, ok = 0;
        get(&b, &magic, 4);
        get(&b, &ok, 4);
        if (magic != BLOB_MAGIC) {
            ms_trace_fail(err, errlen, "%s: the reader sent nothing readable", path);
        } else if (!ok) {
            char *e = get_str(&b);
            ms_trace_fail(err, errlen, "%s", e ? e : "unreadable");
            free(e);
        } else if (!(t = decode(&b))) {
            ms_trace_fail(err, errlen, "%s: the reader sent a damaged trace", path);
        } else if (ms_trace_validate(t, path, err, errlen) < 0) {
            ms_trace_free(t);
            t = NULL;
        }
    }
    free(data);
    return t;
}
