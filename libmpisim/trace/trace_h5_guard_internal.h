/* What the two parts of the guarded HDF5 reader share: the child's stream format, the writer of
 * that stream (out) and its checked reader (in). The parts are
 *   trace_h5_guard.c   the child process, the stream's writer and reader, a whole trace read
 *                      (ms_trace_read_h5)
 *   trace_h5_stream.c  a trace read stretch by stretch from the same child (ms_trace_stream_*)
 * Functions shared between the parts carry the prefix guard_; everything else is static in its
 * file. */
#ifndef TRACE_H5_GUARD_INTERNAL_H
#define TRACE_H5_GUARD_INTERNAL_H

#include "ms_trace.h"
#include "ms_trace_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BLOB_MAGIC 0x3268736dU   /* "msh2" */
/* The stream: the magic, then frames, each a kind then its fields: META (once, first), RANK (one
 * per rank, in order), then END (the trace is complete) or ERROR (the reader's message). */
enum { FR_META = 1, FR_RANK = 2, FR_END = 3, FR_ERROR = 4 };

typedef struct out {
    int fd;
    char buf[1 << 16];
    size_t n;
    int bad;
} out;

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

/* trace_h5_guard.c */
void guard_flush(out *o);
void guard_put(out *o, const void *p, size_t len);
void guard_put_u64(out *o, uint64_t v);
void guard_put_arr(out *o, const void *p, size_t n, size_t elem);
void guard_put_str(out *o, const char *s); /* UINT64_MAX: absent */
void guard_put_u32(out *o, uint32_t v);
void guard_send_meta(out *o, const ms_trace *t);
out *guard_child_start(int fd);
void guard_child_read(int fd, const char *path);
double guard_mono_s(void);
void guard_progress_now(in *b);
int guard_get(in *b, void *dst, size_t n);
uint64_t guard_get_u64(in *b);
uint32_t guard_get_u32(in *b);
void *guard_get_arr(in *b, size_t *n, size_t elem, int nul);
char *guard_get_str(in *b);
ms_trace *guard_decode_meta(in *b, size_t extra);
void guard_decode_head(in *b, ms_trace_rank *r, int32_t *text_last);
ms_trace *guard_decode(in *b, char **child_err);
double guard_read_limit_bytes(const char *path);

/* trace_h5_stream.c */
void guard_send_head(out *o, const ms_trace_rank *r, int i, const ms_trace_rank_size *sz, int text_last);

#endif
