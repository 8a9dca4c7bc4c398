/* Exit codes of the mpisim command: one table for run, trace, replay and sweep (README.md "Exit
 * codes"; otherwise the program's own code). */
#ifndef MPISIM_EXIT_CODES_H
#define MPISIM_EXIT_CODES_H

#include "ms_report.h"

#define MS_EXIT_NO_MEMORY 1    /* mpisim itself ran out of memory */
#define MS_EXIT_USAGE 2        /* usage or configuration error, unreadable input */
#define MS_EXIT_DEADLOCK 3     /* virtual-time deadlock, the network's, or the stall watchdog's */
#define MS_EXIT_RANK_ERROR 4   /* a rank stopped on an error (or the model stopped the run) */
#define MS_EXIT_OUTPUT 5       /* a report, trace, timeline or table could not be written */
#define MS_EXIT_UNTIMED 6      /* complete, but untimed calls could have affected virtual time (outcome untimed) */
#define MS_EXIT_THREAD_LEVEL 7 /* threads called MPI at once under a thread level that forbids it */
#define MS_EXIT_SUPERLINEAR 8  /* mpisim study: a speedup above its process count beyond the runs' noise */
#define MS_EXIT_SLOW_HOST 9    /* mpisim study: a point computed at a slow host's rate (every run slower than the
                                * calibration, or rank 0 slower than the one-rank run) */

/* The exit code for an ms_outcome of ms_server_outcome or a replay (0: the program's own code
 * stands). A stall is the watchdog's deadlock: exit 3 as well. Untimed: 6 (a program's own
 * non-zero code, and 5, take precedence over it: see the callers). Thread level: 7. */
static inline int ms_exit_code_of_outcome(int outcome)
{
    return outcome == MS_OUTCOME_DEADLOCK || outcome == MS_OUTCOME_STALL ? MS_EXIT_DEADLOCK
           : outcome == MS_OUTCOME_UNTIMED                                ? MS_EXIT_UNTIMED
           : outcome == MS_OUTCOME_THREAD_LEVEL                           ? MS_EXIT_THREAD_LEVEL
           : outcome != MS_OUTCOME_OK                                     ? MS_EXIT_RANK_ERROR
                                                                          : 0;
}

#endif
