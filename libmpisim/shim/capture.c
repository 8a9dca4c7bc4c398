/* Trace capture (split from shim.c): whole records appended to a per-rank file (trace_raw.h). */
#define _GNU_SOURCE
#include "shim_state.h"
#include "trace_raw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t mono_ns(void)
{
    struct timespec ts;
    ms_clock_real(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The descriptor still names the rank's trace file: a program may close it and reuse its number
 * for a file of its own (4.9 MB of records went into a program's output so); async-signal-safe. */
static int trace_fd_ours(void)
{
    struct stat st;
    return S.trace_fd >= 0 && fstat(S.trace_fd, &st) == 0 && st.st_dev == S.trace_dev && st.st_ino == S.trace_ino;
}

/* The trace directory at `dir`, checked to be the one mpisim made for this run: this user's, for
 * nobody else, holding mpisim.id with the run's token (MPISIM_TRACE_ID). A directory put in its
 * place (another user's link, a rename of a component of the path) is refused. -1 and why. */
static int trace_dir_open(const char *dir, char *why, size_t len)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (dfd < 0) return snprintf(why, len, "%s", strerror(errno)), -1;
    if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        close(dfd);
        return snprintf(why, len, "it is not this user's private directory (replaced by another user's?)"), -1;
    }
    const char *token = getenv("MPISIM_TRACE_ID");
    if (token && *token) {
        char got[64] = "";
        int ifd = openat(dfd, "mpisim.id", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t n = ifd >= 0 ? read(ifd, got, sizeof got - 1) : -1;
        if (ifd >= 0) close(ifd);
        if (n < 0 || (got[n > 0 ? n : 0] = 0, strcmp(got, token))) {
            close(dfd);
            return snprintf(why, len, "it is not the directory this run made (swapped for another?)"), -1;
        }
    }
    return dfd;
}

/* The descriptor was taken: the rank's own file again, by its path in the run's directory. */
static int trace_reopen(void)
{
    const char *dir = getenv("MPISIM_TRACE_DIR");
    char why[256];
    int dfd = dir ? trace_dir_open(dir, why, sizeof why) : -1;
    if (dfd < 0) return -1;
    int fd = openat(dfd, S.trace_name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    close(dfd);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != S.trace_dev || st.st_ino != S.trace_ino) {
        if (fd >= 0) close(fd);
        return -1;
    }
    S.trace_fd = fd;
    return 0;
}

void trace_flush(void)
{
    if (S.trace_fd >= 0 && S.tr_len && !trace_fd_ours()) {
        int old = S.trace_fd;
        S.trace_fd = -1;   /* the number is the program's now: never written, never closed */
        if (trace_reopen() == 0)
            fprintf(stderr, "mpisim: rank %d: the program closed the trace's descriptor %d; the trace goes on in "
                            "descriptor %d\n", S.rank, old, S.trace_fd);
        else
            fprintf(stderr, "mpisim: rank %d: the program closed the trace's descriptor %d and the trace file "
                            "cannot be opened again; tracing stops\n", S.rank, old);
    }
    size_t off = 0;
    S.tr_flushing = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    while (S.trace_fd >= 0 && off < S.tr_len) {
        ssize_t w = write(S.trace_fd, S.tr + off, S.tr_len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            /* a full disk must not kill the program: stop tracing, say so once (mpisim finds the
             * rank's records end before MPI_Finalize: the trace is incomplete, exit code 5) */
            fprintf(stderr, "mpisim: rank %d: writing the trace failed (%s); tracing stops\n", S.rank,
                    w < 0 ? strerror(errno) : "nothing written");
            close(S.trace_fd);
            S.trace_fd = -1;
            break;
        }
        off += (size_t)w;
    }
    S.tr_len = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    S.tr_flushing = 0;
}

void trace_flush_now(void)
{
    if (S.trace_fd < 0 || S.tr_busy || S.tr_flushing || !trace_fd_ours()) return;
    size_t off = 0, len = S.tr_len;   /* whole records only: tr_len moves after each copy */
    while (off < len) {
        ssize_t w = write(S.trace_fd, S.tr + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        off += (size_t)w;
    }
    S.tr_len = 0;
}

void trace_stop(const char *why)
{
    if (S.trace_fd < 0) return;
    trace_flush_now();
    if (S.tr_len || !trace_fd_ours()) return;   /* the records before it could not go: nothing after them */
    struct {
        ms_msg_header h;
        char text[200];
    } rec;
    size_t n = 0;
    static const char stop[] = "STOP ";
    memcpy(rec.text, stop, sizeof stop - 1);
    n = sizeof stop - 1;
    for (const char *p = why; *p && n < sizeof rec.text - 1; p++) rec.text[n++] = *p;
    rec.text[n++] = 0;
    rec.h.type = MS_MSG_UNMODELLED;
    rec.h.length = (uint32_t)n;
    ssize_t w = write(S.trace_fd, &rec, sizeof rec.h + n);
    (void)w;
}

void trace_put(uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (S.trace_fd < 0) return;
    if (__builtin_expect(T.slot != S.trace_slot, 0) && T.slot >= 0 && type < MS_MSG_WELCOME) {
        /* the records that follow are another thread's (docs/architecture.md "Threads") */
        ms_msg_thread th;
        memset(&th, 0, sizeof th);
        th.slot = T.slot;
        th.op = MS_THREAD_SWITCH;
        S.trace_slot = T.slot;
        trace_put(MS_MSG_THREAD, &th, sizeof th, NULL, 0);
    }
    ms_msg_header h = {type, (uint32_t)(alen + blen)};
    size_t need = sizeof h + alen + blen;
    if (S.tr_len + need > S.tr_cap) {
        size_t cap = S.tr_cap ? S.tr_cap : 2 * MS_TRACE_FLUSH_BYTES;
        while (cap < S.tr_len + need) cap *= 2;
        S.tr_busy = 1;   /* a signal handler must not read a buffer realloc may move */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        char *p = realloc(S.tr, cap);
        if (p) {
            S.tr = p;
            S.tr_cap = cap;
        }
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        S.tr_busy = 0;
        if (!p) {
            S.trace_fd = -1;
            return;
        }
    }
    memcpy(S.tr + S.tr_len, &h, sizeof h);
    if (alen) memcpy(S.tr + S.tr_len + sizeof h, a, alen);
    if (blen) memcpy(S.tr + S.tr_len + sizeof h + alen, b, blen);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);   /* the record is whole before the length covers it */
    S.tr_len += need;
    if (S.tr_len >= MS_TRACE_FLUSH_BYTES) trace_flush();
}


void trace_open(void)
{
    const char *dir = getenv("MPISIM_TRACE_DIR");
    if (!dir || !*dir) return;
    char why[256];
    int dfd = trace_dir_open(dir, why, sizeof why);
    if (dfd < 0) ms_fatal("cannot create the trace in %s: %s", dir, why);
    snprintf(S.trace_name, sizeof S.trace_name, "rank-%06d.mstrace", S.rank);
    /* a new file in the directory mpisim created for this run: never an existing one, never
     * through a link (another user's, or an earlier run's file) */
    S.trace_fd = openat(dfd, S.trace_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (S.trace_fd < 0)
        ms_fatal("cannot create the trace %s/%s: %s%s", dir, S.trace_name, strerror(errno),
                 errno == EEXIST ? " (the trace directory must be new: mpisim creates one per run)" : "");
    struct stat st;
    if (fstat(S.trace_fd, &st) != 0) ms_fatal("cannot create the trace %s/%s: %s", dir, S.trace_name, strerror(errno));
    S.trace_dev = st.st_dev;
    S.trace_ino = st.st_ino;
    ms_trace_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MS_TRACE_MAGIC, 8);
    h.version = MS_PROTO_VERSION;
    h.sizes_check = ms_proto_sizes_check();
    h.rank = S.rank;
    h.size = S.size;
    h.pid = (int32_t)getpid();
    h.cosim = S.server;
    h.start_real_ns = mono_ns();
    gethostname(h.hostname, sizeof h.hostname - 1);
    ssize_t w = write(S.trace_fd, &h, sizeof h);
    if (w != (ssize_t)sizeof h) ms_fatal("cannot write the trace header to %s/%s", dir, S.trace_name);
    /* the rank's CPU binding, for the trace's record of the machine */
    char bname[64];
    snprintf(bname, sizeof bname, "rank-%06d.binding", S.rank);
    int bfd = openat(dfd, bname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    close(dfd);
    FILE *b = bfd >= 0 ? fdopen(bfd, "w") : NULL;
    if (bfd >= 0 && !b) close(bfd);
    if (b) {
        char list[128];
        cpu_list(list, sizeof list);
        fprintf(b, "%s\n", list);
        fclose(b);
    }
}

void trace_mark_finalizing(int inside)
{
    const char *dir = getenv("MPISIM_TRACE_DIR");
    char why[256], name[64];
    int dfd = dir && *dir ? trace_dir_open(dir, why, sizeof why) : -1;
    if (dfd < 0) return;   /* no directory of this run's: nothing to tell (the rule is off) */
    snprintf(name, sizeof name, "rank-%06d.fin", S.rank);
    if (inside) {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) close(fd);
    } else {
        unlinkat(dfd, name, 0);
    }
    close(dfd);
}

/* Capture only: what the model would have answered, from the real MPI (times 0). */
void ms_trace_resolution(const ms_rq *r)
{
    if (S.trace_fd < 0 || r->kind != MS_RQ_RECV) return;
    int count = 0;
    PMPI_Get_count(&r->status, MPI_BYTE, &count);
    /* the model's ranks: an intercommunicator's remote rank r is its union's roff + r */
    ms_msg_resolve m = {r->id, (uint64_t)(count < 0 ? 0 : count), r->status.MPI_SOURCE + r->roff, r->status.MPI_TAG};
    trace_put(MS_MSG_RESOLVE, &m, sizeof m, NULL, 0);
}
