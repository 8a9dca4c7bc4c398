/* Shared internals of ms_trace (not installed). */
#ifndef MS_TRACE_INTERNAL_H
#define MS_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "ms_trace.h"

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

#endif
