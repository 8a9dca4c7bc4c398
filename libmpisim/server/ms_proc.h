/* Progress of a job's processes on this host, from /proc: telling "slow" from "stuck".
 *
 * A watchdog that counts wall time stops a correct run on a loaded machine: a rank that waits
 * for a CPU for a minute has not stopped moving. So the watchdogs (the connect timeout, the stall
 * watchdog) count idle time instead: the part of the wall time in which none of the watched
 * processes was waiting for a CPU (its run-queue delay, /proc/PID/schedstat) and, where CPU use
 * is progress (a starting rank, a program computing before MPI_Init), none was running either.
 * Where a spin is no progress (a rank spinning inside the real MPI on a message that never comes
 * is exactly what the stall watchdog is for), only the waiting for a CPU is taken off.
 *
 * A process stopped by a signal (SIGSTOP, Ctrl-Z: state T) or by a debugger (t) is neither
 * running nor waiting: for these clocks it is idle, and ms_proc_read says so. Processes on other
 * hosts are not seen: with none seen, idle time is wall time, as before. */
#ifndef MS_PROC_H
#define MS_PROC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_proc_sample {
    int pid;
    char state;         /* /proc/PID/stat: R running, S/D sleeping, T stopped, t traced, Z zombie */
    uint64_t cpu_ns;    /* its main thread on a CPU (schedstat; else utime + stime of the process) */
    uint64_t wait_ns;   /* its main thread runnable, waiting for a CPU (0 where schedstat is missing) */
} ms_proc_sample;

/* 0 and *out, or -1 when the process is gone (or not readable). */
int ms_proc_read(int pid, ms_proc_sample *out);

/* 1 when the state is a stop (signal or debugger), 0 otherwise. */
static inline int ms_proc_stopped(char state) { return state == 'T' || state == 't'; }

/* The processes below root (children, their children, ...; root itself first), up to max: their
 * number. From /proc/PID/task/TID/children; 0 when root is gone. */
int ms_proc_tree(int root, int *out, int max);

/* An idle clock over a set of processes that may change from one look to the next. */
typedef struct ms_idle_clock {
    double idle_s;      /* the idle time counted so far */
    double last_wall;   /* the previous look (0: none yet) */
    int n, cap;
    ms_proc_sample *prev;   /* the previous look's samples, by pid */
} ms_idle_clock;

/* Looks at the processes pids[0..n) at wall time `now` (CLOCK_MONOTONIC seconds) and adds to
 * idle_s the time since the previous look less the most any one of them spent waiting for a CPU
 * (and, with cpu_is_progress, running) in it; a process new since the previous look counts its
 * time since it started. With no process readable, the whole interval is idle. A look after a
 * pause longer than max_gap_s (the clock was not needed) counts nothing: it starts again. */
void ms_idle_clock_look(ms_idle_clock *c, const int *pids, int n, int cpu_is_progress, double now,
                        double max_gap_s);
void ms_idle_clock_free(ms_idle_clock *c);

#ifdef __cplusplus
}
#endif

#endif
