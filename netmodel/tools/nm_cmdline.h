/* netmodel's part of the command line (common's cm_cmdline.h parses it): the options about
 * profiles and routes that most `mpisim` subcommands and netmodel's tool share, worded once,
 * --routing checked against the routing registry, and the progress printer of long set-ups. */
#ifndef NM_CMDLINE_H
#define NM_CMDLINE_H

#include "cm_cmdline.h"
#include "netmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The options most subcommands share, worded once. */
#define NM_OPT_PROFILE(k) {"profile", (k), "NAME|FILE", "named profile or INI file (default: default)"}
#define NM_OPT_SET(k) {"set", (k), "KEY=VALUE", "override one configuration key (repeatable; mpisim config --describe)"}
#define NM_OPT_ROUTING(k) {"routing", (k), "ROUTING", "route computation, network.routing (see Routings)"}

/* --routing V as the assignment "network.routing=V" for a --set list, after checking V against
 * the routing registry (NULL and the registry's message otherwise). The text lives in one buffer
 * per process: a later --routing replaces an earlier one, as it would win anyway. */
const char *nm_cmdline_routing(const cm_cmdline *c, int key, const char *val);

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
