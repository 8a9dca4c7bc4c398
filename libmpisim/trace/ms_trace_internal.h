/* Shared internals of ms_trace (not installed). */
#ifndef MS_TRACE_INTERNAL_H
#define MS_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "ms_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

int ms_trace_fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ms_trace_grow(void **p, size_t *cap, size_t need, size_t elem);
int ms_trace_derive(ms_trace_rank *r);
void ms_trace_rank_free(ms_trace_rank *r);
int ms_trace_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen);
int ms_trace_build_comms(ms_trace *t, const int32_t *members, size_t nmembers, char *err, size_t errlen);

/* ms_trace_read_h5_direct, handing the trace on as it is read: each(user, t, -1) once the metadata
 * and the rank count are in t, then each(user, t, i) for every rank i, whose arrays are freed when
 * it returns (the reader never holds more than one rank's records). A negative return stops the
 * read. Returns t without its records, or NULL; not validated (the receiver validates what it
 * rebuilds). */
typedef int (*ms_trace_each_fn)(void *user, const ms_trace *t, int rank);
ms_trace *ms_trace_read_h5_each(const char *path, ms_trace_each_fn each, void *user, char *err, size_t errlen);

/* The HDF5 side of ms_trace_stream (what its child runs; also tests): the file open, its metadata
 * read into *t (ranks without records), then rank heads and stretches of records on demand. */
typedef struct ms_trace_h5 ms_trace_h5;
ms_trace_h5 *ms_trace_h5_open(const char *path, ms_trace **t, char *err, size_t errlen);
/* rank i's head into t->ranks[i], its sizes, the last byte of its text (0 when it has none) */
int ms_trace_h5_head(ms_trace_h5 *h, ms_trace *t, int i, ms_trace_rank_size *sz, int *text_last, char *err,
                     size_t errlen);
/* records [from, to) of rank i and the [lo, hi) of each side array they point into */
int ms_trace_h5_range(ms_trace_h5 *h, int i, size_t from, size_t to, ms_trace_window *w, char *err, size_t errlen);
void ms_trace_h5_close(ms_trace_h5 *h);
/* buffer k of a window with room for n elements (its capacity exactly n: a window does not grow) */
void *ms_trace_window_room(ms_trace_window *w, int k, size_t n, size_t elem);

/* ---- schema mpisim-trace/2 (trace_v2.c, trace_h5.c) ---- */
#define MS_TRACE_SCHEMA_V1 "mpisim-trace/1"
/* records per stretch the writer makes (a reader can take any stretch on its own) */
#define MS_TRACE_STRETCH 128
/* A row of /rank_heads: the rank's attributes, sizes and where its data lie (its stretches in
 * /stretches from first_stretch, its side arrays from *_first elements in /lists, /results, /text). */
typedef struct ms_trace_v2_head {
    int32_t rank, pid, cosim, truncated, missing, pad;
    int64_t start_real_ns;
    char hostname[64];
    uint64_t nev, nlists, nresults, ntext;
    uint64_t first_stretch, lists_first, results_first, text_first;
} ms_trace_v2_head;
/* What a reader of a schema 2 file needs besides its metadata: where the contiguous datasets
 * /records, /lists, /results, /text lie in the file (at: byte offset, len: bytes), the byte offset
 * of every stretch in /records (nsoff = stretches + 1, the last = len[0]), the ranks' heads. */
typedef struct ms_trace_v2 {
    uint64_t stretch;
    uint64_t at[4], len[4];
    uint64_t *soff;
    size_t nsoff;
    ms_trace_v2_head *heads;
    size_t nheads;
} ms_trace_v2;
void ms_trace_v2_free(ms_trace_v2 *v);
/* Every offset, length and count consistent, within the file: 0, or -1 with what is wrong. */
int ms_trace_v2_check(const ms_trace_v2 *v, int nranks, uint64_t file_size, char *what, size_t wlen);
/* A checked layout's rank i read whole from fd into r's arrays (its head fields untouched). */
int ms_trace_v2_rank(int fd, const ms_trace_v2 *v, int i, ms_trace_rank *r, const char *path, char *err,
                     size_t errlen);
/* Records [from, to) of rank i and the parts of its side arrays they point into, as a streamed
 * window (scratch: a byte buffer the caller keeps between calls). */
int ms_trace_v2_window(int fd, const ms_trace_v2 *v, int i, size_t from, size_t to, ms_trace_window *w,
                       unsigned char **scratch, size_t *scap, const char *path, char *err, size_t errlen);
/* 1 when rank i's text ends in a NUL (or it has none) */
int ms_trace_v2_text_terminated(int fd, const ms_trace_v2 *v, int i);
/* The open file's schema 2 layout (NULL: a schema 1 file). */
const ms_trace_v2 *ms_trace_h5_v2(const ms_trace_h5 *h);
/* A trace in schema 1 (what older versions wrote; tests of reading old traces). */
int ms_trace_write_h5_v1(const ms_trace *t, const char *path, char *err, size_t errlen);

/* Compact record streams (trace_compact.c, schema mpisim-trace/2): n records into at most
 * ms_compact_bound(n) bytes; back, exactly n records from exactly len bytes: 0, or -1 with
 * *bad_record the record that could not be decoded (n: bytes left over). */
size_t ms_compact_bound(size_t n);
size_t ms_compact_encode(const ms_trace_event *ev, size_t n, unsigned char *out);
int ms_compact_decode(const unsigned char *in, size_t len, size_t n, ms_trace_event *ev, size_t *bad_record);

/* A file read whole relative to a directory descriptor, at most `bound` bytes (trace_raw.c; the
 * capture directory's meta file and raw rank files, trace_capture.c). */
int ms_trace_read_file_at(int dfd, const char *name, const char *shown, size_t bound, char **data, size_t *len,
                          char *err, size_t errlen);
/* One raw rank file relative to a directory descriptor, parsed into r. */
int ms_trace_read_raw_at(int dfd, const char *name, const char *shown, ms_trace_rank *r, int32_t *nranks_out,
                         int32_t **members, size_t *nmembers, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
