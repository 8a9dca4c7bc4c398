/* Trace capture (split from shim.c): whole records appended to a per-rank file (trace_raw.h). */
#define _GNU_SOURCE
#include "shim_state.h"
#include "trace_raw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t mono_ns(void)
{
    struct timespec ts;
    ms_clock_real(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void trace_flush(void)
{
    size_t off = 0;
    while (S.trace_fd >= 0 && off < S.tr_len) {
        ssize_t w = write(S.trace_fd, S.tr + off, S.tr_len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            /* a full disk must not kill the program: stop tracing, say so once */
            fprintf(stderr, "mpisim: rank %d: writing the trace failed (%s); tracing stops\n", S.rank,
                    strerror(errno));
            close(S.trace_fd);
            S.trace_fd = -1;
            break;
        }
        off += (size_t)w;
    }
    S.tr_len = 0;
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
        char *p = realloc(S.tr, cap);
        if (!p) {
            S.trace_fd = -1;
            return;
        }
        S.tr = p;
        S.tr_cap = cap;
    }
    memcpy(S.tr + S.tr_len, &h, sizeof h);
    if (alen) memcpy(S.tr + S.tr_len + sizeof h, a, alen);
    if (blen) memcpy(S.tr + S.tr_len + sizeof h + alen, b, blen);
    S.tr_len += need;
    if (S.tr_len >= MS_TRACE_FLUSH_BYTES) trace_flush();
}


void trace_open(void)
{
    const char *dir = getenv("MPISIM_TRACE_DIR");
    if (!dir || !*dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%06d.mstrace", dir, S.rank);
    /* a new file in the directory mpisim created for this run: never an existing one, never
     * through a link (another user's, or an earlier run's file) */
    S.trace_fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (S.trace_fd < 0)
        ms_fatal("cannot create the trace %s: %s%s", path, strerror(errno),
                 errno == EEXIST ? " (the trace directory must be new: mpisim creates one per run)" : "");
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
    if (w != (ssize_t)sizeof h) ms_fatal("cannot write the trace header to %s", path);
    /* the rank's CPU binding, for the trace's record of the machine */
    snprintf(path, sizeof path, "%s/rank-%06d.binding", dir, S.rank);
    int bfd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *b = bfd >= 0 ? fdopen(bfd, "w") : NULL;
    if (bfd >= 0 && !b) close(bfd);
    if (b) {
        char list[128];
        cpu_list(list, sizeof list);
        fprintf(b, "%s\n", list);
        fclose(b);
    }
}

/* Capture only: what the model would have answered, from the real MPI (times 0). */
void ms_trace_resolution(const ms_rq *r)
{
    if (S.trace_fd < 0 || r->kind != MS_RQ_RECV) return;
    int count = 0;
    PMPI_Get_count(&r->status, MPI_BYTE, &count);
    ms_msg_resolve m = {r->id, (uint64_t)(count < 0 ? 0 : count), r->status.MPI_SOURCE, r->status.MPI_TAG};
    trace_put(MS_MSG_RESOLVE, &m, sizeof m, NULL, 0);
}
