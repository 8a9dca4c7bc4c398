/* Private to the model server (server*.c): the server's state, per-rank records, and the functions
 * its files share (prefix srv_). */
#ifndef MS_SERVER_INTERNAL_H
#define MS_SERVER_INTERNAL_H

#include "ms_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ms_driver.h"
#include "protocol.h"
#include "ms_report.h"
#include "ms_shm.h"
#include "ms_proc.h"
#include "ms_fn_names_gen.h"


typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

typedef struct unmodelled_count {
    char name[64];
    uint64_t count;
} unmodelled_count;

typedef struct site_total {
    int fn;
    char text[MS_SITE_TEXT];
    uint64_t calls, bytes;
    int64_t time_ps;
    int64_t rank_min_ps, rank_max_ps;   /* one rank's time at the site: least and most over ranks */
    int ranks;
} site_total;

/* A thread of a rank, beyond thread 0, as the stall watchdog sees it: parked outside MPI. */
typedef struct thread_info {
    int parked;                  /* MS_THREAD_PARK or _IDLE seen, no rejoin since */
    int stalled;                 /* told the driver: parked for shim.stall_timeout */
    double since;
    char why[32];
} thread_info;

typedef struct rank_info {
    int fd;                      /* TCP connection, or -1 */
    int shm;                     /* 1: attached through the shared segment (its slot is the rank's) */
    int shm_closed;              /* its process has gone, or it finished and has its FIN_OK */
    buf in, out;
    int pid;
    char host[64];
    char binding[64];
    ms_msg_finalize fin;
    int finalized;
    int fin_returned;            /* its PMPI_Finalize has returned (MS_MSG_FIN_RETURNED) */
    int exit_known, exit_code, exit_after_fin;   /* its process's own exit (ms_msg_exit) */
    ms_msg_finalize progress;    /* its totals at its last PROGRESS (a rank that never finalizes) */
    int has_progress;
    site_total *sites;           /* its call sites' totals so far (each SITE replaces its entry) */
    size_t nsites, cap_sites;
    char error[MS_TEXT_MAX];
    char stop_notice[MS_TEXT_MAX];   /* its shim said it is being ended from outside (a signal) */
    char callsite_text[MS_TEXT_MAX];
    int seen, left_before_init;  /* its process was seen on this host / then gone before its hello: */
                                 /* the number of the look that found it gone (1, 2, ...) */
    int left_order;              /* its shim said it ended before MPI_Init: its place among those */
    unmodelled_count *unmodelled;
    size_t n_unmodelled;
    /* the stall watchdog's view of an untimed call (the rank cannot say it is stuck inside it) */
    double untimed_since;        /* wall time it entered its untimed call */
    double untimed_idle0;        /* the stall clock (ms_server.stall_clock) then */
    int untimed_stalled;         /* told the driver: inside it for shim.stall_timeout */
    char untimed_call[64];
    char untimed_site[MS_SITE_TEXT];
    /* the stall watchdog's view of a wait in the real MPI: the shim's notice that nothing has
     * completed for a while (WELCOME's stall_timeout_ps, at most MS_STALL_NOTICE_S), passed on to
     * the driver once the stall clock has counted shim.stall_timeout of idle time since the wait
     * began (a loaded machine's ranks that wait for a CPU are slow, not stuck) */
    char *suspect;               /* its text, NULL: none */
    double suspect_idle0;        /* the stall clock when the wait began */
    double suspect_since;        /* wall time the wait began */
    int suspect_passed;          /* told the driver */
    int suspect_thread;          /* the thread whose wait it is (MPI_THREAD_MULTIPLE) */
    /* a process stopped by a signal or a debugger (state T or t) does not move at all */
    double stopped_since;        /* wall time it was first seen stopped, 0: not stopped */
    int stopped_passed;          /* told the driver: stopped for shim.stall_timeout */
    double cont_at;              /* the run is stopped: SIGCONT sent then (SIGKILL 5 s later if still stopped) */
    /* lookahead (docs/architecture.md "Local answers"): the rank's last Test* or Iprobe, and where
     * the HINT before its negative answer waits in `out` for its quiet_until (flush_to) */
    int quiet_ask;               /* 1: a Test* of quiet_ids, 2: an Iprobe, 0: neither */
    int64_t quiet_t;
    uint64_t quiet_ids[16];
    int quiet_n;
    long hint_at;                /* offset of the HINT's payload in out, -1: none */
    int hint_probe;              /* it answers an Iprobe (else a Test of quiet_ids) */
    /* threads (MPI_THREAD_MULTIPLE): the thread its messages come from now; its others' parks */
    int cur_thread;
    thread_info th0;             /* thread 0 parked (pthread_join, a barrier) */
    thread_info *th;             /* index: thread - 1 */
    int nth;
    char violation[MS_TEXT_MAX]; /* threads called MPI at once under a lower thread level: the first time */
} rank_info;

typedef struct pending_conn {
    int fd;
    buf in;
    double deadline;
} pending_conn;


struct ms_server {
    const nm_config *cfg;
    ms_driver *drv;              /* the network, the model, rank states and clocks */
    int nranks;
    rank_info *ranks;
    int listen_fd;
    char secret[MS_SECRET_LEN + 1];
    pending_conn *pending;
    size_t npending, cap_pending;
    char **argv;
    int argc;
    ms_msg_welcome welcome;
    int deadlocked;              /* in virtual time, or the network's (its routing) */
    int stalled;                 /* the stall watchdog stopped the run (deadlock_text says where) */
    double stall_timeout_s;
    char deadlock_text[8192];
    int child_done, child_status;   /* the launcher's wait status */
    char stop_reason[MS_TEXT_MAX];
    int stopped;
    int abort_ranks;             /* with stopped: the ranks are sent ABORT (not when a signal ends the run:
                                  * the launcher ends them, and each flushes its trace as it goes) */
    volatile sig_atomic_t stop_signal;    /* ms_server_request_stop: the signal, once */
    volatile sig_atomic_t stop_forward;   /* ... to be passed to the launcher (it did not get it itself) */
    int stop_signal_seen;
    double forward_at;           /* when to pass it on, if the launcher is still there */
    int64_t events;
    int local_answers;           /* shim.local_answers: local sends and lookahead windows */
    uint64_t round_trips;        /* WAIT and PROBE messages: model round trips */
    uint64_t quiet_hints, quiet_given;   /* negative Test/Iprobe answers; those with a window */
    double wall_start, wall_end;
    uint64_t rejected_connections;
    int nconnected;              /* ranks that said hello (each at most once) */
    double accept_resume;        /* accept failed (no file descriptors): the listen socket rests until then */
    double last_connect;         /* wall time of the run's start or of the last rank's hello */
    double connect_timeout_s;    /* shim.connect_timeout */
    double kill_launcher_at;     /* the launcher was asked to end (connect timeout): SIGKILL after a grace */
    double shutdown_since;       /* every rank has gone or is held in PMPI_Finalize since, launcher running */
    double next_watch;           /* next look at the unconnected ranks' processes */
    /* idle time, not wall time (ms_proc.h): the connect timeout's clock over the launcher's
     * processes (running counts as progress) and the stall watchdog's over the ranks' (only
     * waiting for a CPU does: a spin is no progress) */
    ms_idle_clock connect_clock, stall_clock;
    double next_proc_look, next_connect_look;
    int *proc_pids;
    int proc_cap;
    char hostname[64];
    int watches;
    double accept_backoff;
    char machine[512];
    int describing;              /* a deadlock was found; waiting for the ranks to say where */
    int debug;
    double next_debug;
    double describe_deadline;
    char err[512];
    /* the shared-memory transport (ms_shm.h): ranks on this host */
    void *shm;
    size_t shm_bytes;
    char shm_name[64];
    int shm_unlinked;
    int tcp_ranks, shm_ranks;    /* connected through each */
    double next_pid_check;
    uint64_t shm_waits, shm_wakes;   /* the server's futex sleeps (report: transport) */
};

static inline double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define fail nm_fail   /* message into the caller's buffer, -1 (netmodel.h: one helper for all) */

/* How soon a rank waiting in the real MPI with nothing completing tells the server (at most; a
 * smaller shim.stall_timeout is used as it is): the server then counts shim.stall_timeout of idle
 * time from the wait's start before it calls it a stall (watch_stalls). */
#define MS_STALL_NOTICE_S 2.0
/* A wait that sees nothing complete for this many times shim.stall_timeout of wall time is a stall
 * however little of it was idle: a rank spinning inside the real MPI on a message that never
 * comes, on a machine so loaded that it always waits for a CPU, would otherwise never be found. */
#define MS_STALL_WALL_CAP 10.0
/* Looks at the job's processes in /proc (idle clocks, stopped processes): once a second. */
#define MS_PROC_LOOK_S 1.0


/* server_messages.c */
int srv_buf_room(buf *b, size_t room, size_t first_cap);
int srv_buf_put(buf *b, const void *p, size_t n);
void srv_send_msg(rank_info *r, uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
void srv_flush_shm(ms_server *s, int rank);
void srv_flush_rank(rank_info *r);
void srv_flush_to(ms_server *s, int rank);
int srv_rank_live(const rank_info *r);
void srv_on_resolve(void *user, int rank, const ms_resolution *rv);
void srv_on_resume(void *user, int rank, int thread, int64_t t, const ms_req_result *results, size_t n);
void srv_stop_run(ms_server *s);
const char *srv_signal_name(int sig);
void srv_take_stop_signal(ms_server *s, pid_t child, int child_done);
void srv_rank_gone(ms_server *s, int rank);
void srv_drain_input(ms_server *s, int rank);
void srv_read_rank(ms_server *s, int rank);

/* server_transport.c */
void srv_drop_pending(ms_server *s, size_t i, const char *why);
void srv_read_pending(ms_server *s, size_t i);
int srv_read_shm(ms_server *s);
void srv_check_shm_pids(ms_server *s, int launcher_done);
void srv_accept_all(ms_server *s);

#endif
