/* The command line of every tool (each `mpisim` subcommand, netmodel's tool): one table of
 * options per tool, parsed with getopt_long, which also prints that tool's --help, names the option
 * in every bad-value message and answers an unknown option with "did you mean". Usage errors exit 2
 * (the caller returns cm_cmdline's 2). */
#ifndef CM_CMDLINE_H
#define CM_CMDLINE_H

#include <getopt.h>
#include <stdio.h>

#include "cm_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cm_opt {
    const char *name;     /* long name without "--"; NULL ends the table */
    int key;              /* a letter: also the short option -<letter>; else a number >= 256 */
    const char *arg;      /* placeholder of its value ("FILE"), NULL for a flag */
    const char *help;     /* what it does (lines after the first indented by the caller's \n); NULL: not
                             listed in --help (an option accepted only to be refused with a reason) */
} cm_opt;

#define CM_OPT_HELP {"help", 'h', NULL, "show this help and exit"}
#define CM_OPT_END {NULL, 0, NULL, NULL}

#define CM_CMDLINE_MAX 48

typedef struct cm_cmdline {
    const char *prog;     /* "mpisim replay": how messages begin */
    const cm_opt *opts;
    int argc;
    char **argv;
    struct option lo[CM_CMDLINE_MAX + 1];
    char so[3 * CM_CMDLINE_MAX + 4];
} cm_cmdline;

/* argv[0] is the subcommand's name (getopt starts at argv[1]). stop_at_operand: options end at
 * the first operand (a program and its arguments follow); else operands may stand anywhere and
 * are moved to the end. -1 if the table is larger than CM_CMDLINE_MAX. */
int cm_cmdline_init(cm_cmdline *c, const char *prog, const cm_opt *opts, int argc, char **argv, int stop_at_operand);
/* The next option's key with *val its value (NULL for a flag); -1 after the last option, when
 * the operands are argv[cm_cmdline_operand(c)..argc-1]; '?' after a usage error (printed on
 * stderr: an unknown option with "did you mean", or a missing value). */
int cm_cmdline_next(cm_cmdline *c, const char **val);
int cm_cmdline_operand(const cm_cmdline *c);
/* The options table for --help: "  -n, --np N   help". */
void cm_cmdline_print_options(const cm_opt *opts, FILE *out);
/* "PROG: --NAME 'VAL': MESSAGE" on stderr; returns 2 (a usage error). */
int cm_cmdline_bad(const cm_cmdline *c, int key, const char *val, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A value that must name an entry of a registry (netmodel's routings for --routing): 0, or 2 after
 * "PROG: --NAME 'VAL' is not one of a, b, c (did you mean 'x'?)". */
int cm_cmdline_choice(const cm_cmdline *c, int key, cm_registry r, const char *val);
/* The operands argv[first..argc-1] of a subcommand that takes from min to max of them (what:
 * "trace", for the messages): their count, or -1 after a message naming the first extra one or
 * saying what is missing. */
int cm_cmdline_operands(const cm_cmdline *c, int min, int max, const char *what);
/* Parse a whole number in [lo, hi] given to option key: 0, or 2 after cm_cmdline_bad. */
int cm_cmdline_long(const cm_cmdline *c, int key, const char *val, long lo, long hi, long *out);
/* Parse a number >= lo given to option key: 0, or 2 after cm_cmdline_bad. */
int cm_cmdline_double(const cm_cmdline *c, int key, const char *val, double lo, double *out);

#ifdef __cplusplus
}
#endif
#endif
