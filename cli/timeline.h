/* `mpisim timeline`: traces as Chrome / Perfetto trace-event JSON (timeline.c). */
#ifndef MPISIM_TIMELINE_H
#define MPISIM_TIMELINE_H
#include <stdio.h>

struct ms_trace;
int mpisim_timeline_write(const struct ms_trace *t, FILE *out, char *err, size_t errlen);
/* 0; -1 the trace could not be read; -2 the output could not be written (err says why) */
int mpisim_timeline_file(const char *trace_path, const char *out_path, char *err, size_t errlen);
int mpisim_timeline_main(int argc, char **argv);

#endif
