/* Exit codes of the mpisim command: one table for run, trace, replay and sweep (README.md "Exit
 * codes"; otherwise the program's own code). */
#ifndef MPISIM_EXIT_CODES_H
#define MPISIM_EXIT_CODES_H

#define MS_EXIT_USAGE 2        /* usage or configuration error, unreadable input */
#define MS_EXIT_DEADLOCK 3     /* virtual-time deadlock, or the network's (a stall) */
#define MS_EXIT_RANK_ERROR 4   /* a rank stopped on an error (or the model stopped the run) */
#define MS_EXIT_OUTPUT 5       /* a report, trace, timeline or table could not be written */

/* The exit code for an outcome of ms_server_outcome or a replay (0 ok, 1 deadlock, else an error;
 * 0: the program's own code stands). */
static inline int ms_exit_code_of_outcome(int outcome)
{
    return outcome == 1 ? MS_EXIT_DEADLOCK : outcome ? MS_EXIT_RANK_ERROR : 0;
}

#endif
