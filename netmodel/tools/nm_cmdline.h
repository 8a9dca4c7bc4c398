/* The command line of every `mpisim` subcommand (and of netmodel's tool): one table of options
 * per subcommand, parsed with getopt_long, which also prints that subcommand's --help, names the
 * option in every bad-value message and answers an unknown option with "did you mean". Usage
 * errors exit 2 (the caller returns nm_cmdline's 2). */
#ifndef NM_CMDLINE_H
#define NM_CMDLINE_H

#include <getopt.h>
#include <stdio.h>

#include "netmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nm_opt {
    const char *name;     /* long name without "--"; NULL ends the table */
    int key;              /* a letter: also the short option -<letter>; else a number >= 256 */
    const char *arg;      /* placeholder of its value ("FILE"), NULL for a flag */
    const char *help;     /* what it does (lines after the first indented by the caller's \n); NULL: not
                             listed in --help (an option accepted only to be refused with a reason) */
} nm_opt;

/* The options most subcommands share, worded once. */
#define NM_OPT_PROFILE(k) {"profile", (k), "NAME|FILE", "named profile or INI file (default: default)"}
#define NM_OPT_SET(k) {"set", (k), "KEY=VALUE", "override one configuration key (repeatable; mpisim config --describe)"}
#define NM_OPT_ROUTING(k) {"routing", (k), "ROUTING", "route computation, network.routing (see Routings)"}
#define NM_OPT_HELP {"help", 'h', NULL, "show this help and exit"}
#define NM_OPT_END {NULL, 0, NULL, NULL}

#define NM_CMDLINE_MAX 48

typedef struct nm_cmdline {
    const char *prog;     /* "mpisim replay": how messages begin */
    const nm_opt *opts;
    int argc;
    char **argv;
    struct option lo[NM_CMDLINE_MAX + 1];
    char so[3 * NM_CMDLINE_MAX + 4];
} nm_cmdline;

/* argv[0] is the subcommand's name (getopt starts at argv[1]). stop_at_operand: options end at
 * the first operand (a program and its arguments follow); else operands may stand anywhere and
 * are moved to the end. -1 if the table is larger than NM_CMDLINE_MAX. */
int nm_cmdline_init(nm_cmdline *c, const char *prog, const nm_opt *opts, int argc, char **argv, int stop_at_operand);
/* The next option's key with *val its value (NULL for a flag); -1 after the last option, when
 * the operands are argv[nm_cmdline_operand(c)..argc-1]; '?' after a usage error (printed on
 * stderr: an unknown option with "did you mean", or a missing value). */
int nm_cmdline_next(nm_cmdline *c, const char **val);
int nm_cmdline_operand(const nm_cmdline *c);
/* The options table for --help: "  -n, --np N   help". */
void nm_cmdline_print_options(const nm_opt *opts, FILE *out);
/* "PROG: --NAME 'VAL': MESSAGE" on stderr; returns 2 (a usage error). */
int nm_cmdline_bad(const nm_cmdline *c, int key, const char *val, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A value that must name an entry of a registry (--routing: nm_routing_at): 0, or 2 after
 * "PROG: --NAME 'VAL' is not one of a, b, c (did you mean 'x'?)". */
int nm_cmdline_choice(const nm_cmdline *c, int key, nm_registry r, const char *val);
/* --routing V as the assignment "network.routing=V" for a --set list, after checking V against
 * the routing registry (NULL and the registry's message otherwise). The text lives in one buffer
 * per process: a later --routing replaces an earlier one, as it would win anyway. */
const char *nm_cmdline_routing(const nm_cmdline *c, int key, const char *val);
/* The operands argv[first..argc-1] of a subcommand that takes from min to max of them (what:
 * "trace", for the messages): their count, or -1 after a message naming the first extra one or
 * saying what is missing. */
int nm_cmdline_operands(const nm_cmdline *c, int min, int max, const char *what);
/* Parse a whole number in [lo, hi] given to option key: 0, or 2 after nm_cmdline_bad. */
int nm_cmdline_long(const nm_cmdline *c, int key, const char *val, long lo, long hi, long *out);
/* Parse a number >= lo given to option key: 0, or 2 after nm_cmdline_bad. */
int nm_cmdline_double(const nm_cmdline *c, int key, const char *val, double lo, double *out);

/* The front ends' progress printer for long set-ups (nm_config_set_progress): silent for the
 * first 2 s of a stage, then one line on stderr at most every 2 s ("PROG: routes: checking the
 * routes for deadlocks: 37% (3031 of 8192)"), and the stage's end once a line was printed. */
typedef struct nm_progress_printer {
    const char *prog;
    char what[96];
    double start, last;   /* CLOCK_MONOTONIC seconds; last 0: nothing printed for this stage */
} nm_progress_printer;
void nm_progress_print(void *printer, const char *what, double done, double total);
/* Attach a printer (zero it, set prog) to cfg. */
void nm_progress_attach(nm_config *cfg, nm_progress_printer *p, const char *prog);

#ifdef __cplusplus
}
#endif
#endif
