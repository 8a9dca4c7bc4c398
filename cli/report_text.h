/* `mpisim report`: a run report as an mpiP-style text summary (report_text.c). */
#ifndef MPISIM_REPORT_TEXT_H
#define MPISIM_REPORT_TEXT_H
#include <stddef.h>
#include <stdio.h>

/* text: the report's JSON; the `top` call sites with the most virtual time are listed */
int mpisim_report_text(const char *text, size_t len, FILE *out, int top, char *err, size_t errlen);
int mpisim_report_main(int argc, char **argv);

#endif
