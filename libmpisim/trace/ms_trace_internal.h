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

#endif
