/* ms_driver: the one front-end driver of the MPI layer model (docs/architecture.md "One driver").
 *
 * Both front ends -- the co-simulation server (live ranks over TCP) and replay (recorded ranks)
 * -- turn what a rank did into an ms_driver_event and hand it here. The driver owns the network
 * and the model built from the configuration, keeps each rank's state and clock, makes every
 * ms_model call, holds the members of a synchronising collective (communicator creation) until
 * the last one is done, and runs the model up to the conservative horizon
 *
 *     H = min over running ranks of their clock
 *
 * (a rank not yet connected counts as running at 0; blocked, held, finished, dead or stopped ranks
 * and ranks inside an untimed call do not count). Front ends differ only in where events come from and
 * where resumes go, so online == offline holds by construction.
 *
 * Threads (MPI_THREAD_MULTIPLE): a rank's thread 0 is the rank; its other threads that call MPI
 * (an event's `thread`) each have a state and a clock of their own, and the horizon is the least
 * clock of every running thread of every rank: a rank with one thread blocked and another running
 * is running. A thread first seen is parked (UNTIMED) until it rejoins (a WAIT with
 * MS_EV_FLAG_REJOIN) at max(its clock, the model's present).
 *
 * No MPI, no sockets, no files, nothing printed, no exit(): errors come back as text. */
#ifndef MS_DRIVER_H
#define MS_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include "ms_model.h"
#include "ms_report.h"
#include "netmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_driver ms_driver;

typedef enum {
    MS_RANK_UNCONNECTED = 0,  /* not yet started: holds the horizon at 0 */
    MS_RANK_RUNNING,          /* computing; its clock bounds the horizon */
    MS_RANK_BLOCKED,          /* in a wait or probe the model has not answered */
    MS_RANK_HELD,             /* answered, held until its synchronising group is complete */
    MS_RANK_UNTIMED,          /* inside an untimed (passthrough) call: does not hold the horizon */
    MS_RANK_FINISHED,         /* MPI_Finalize */
    MS_RANK_DEAD,             /* ended without MPI_Finalize, on its own (crash, kill, end of its records) */
    MS_RANK_STOPPED,          /* ended without MPI_Finalize after another rank died or after the front end
                               * stopped the run (the launcher or mpisim ended it) */
    MS_RANK_IDLE              /* a thread parked until another thread of its rank lets it go on (an OpenMP
                               * worker between regions, a thread joining one that calls MPI): does not
                               * hold the horizon, and counts as waiting in the deadlock test */
} ms_rank_state;

/* What a rank did. Fields a kind does not name are ignored. Times are the rank's virtual clock
 * at the event (picoseconds); a rank's events come in non-decreasing time. */
typedef enum {
    MS_EV_ISEND = 1,   /* req comm peer=dst tag bytes mode=ms_send_mode buf */
    MS_EV_IRECV,       /* req comm peer=src tag bytes flags=MS_EV_FLAG_NOTIFY buf */
    MS_EV_ICOLL,       /* req comm peer=root bytes mode=ms_coll_kind list=counts (v-variants, neighbourhood)
                        * flags=the low group's size of an intercommunicator's collective (0: intra) */
    MS_EV_COMM_ADD,    /* comm members[nmembers] (world ranks) */
    MS_EV_WAIT,        /* mode=ms_wait_mode list=request ids flags fn: blocks until resumed */
    MS_EV_PROBE,       /* comm peer=src tag mode=blocking fn: blocks until resumed */
    MS_EV_CANCEL,      /* req: MPI_Cancel */
    MS_EV_FREE,        /* req: MPI_Request_free of an active send */
    MS_EV_CLOCK,       /* the clock moved without a model event */
    MS_EV_UNTIMED,     /* the rank enters an untimed call: it stops holding the horizon back (a thread:
                        * it waits outside MPI for something the driver does not see) */
    MS_EV_FINALIZE,    /* MPI_Finalize: the rank posts nothing more (nor do its threads) */
    MS_EV_RMA,         /* req comm=the window's peer=target mode=ms_rma_kind bytes bytes_out: a one-sided operation */
    MS_EV_IDLE,        /* a thread parks until another thread of its rank lets it go on (MS_RANK_IDLE) */
    MS_EV_THREAD_END   /* a thread (not thread 0) ends: it posts nothing more */
} ms_event_kind;

/* MS_EV_WAIT flags */
#define MS_EV_FLAG_SYNC 1     /* the members of the last collective's communicator leave together */
#define MS_EV_FLAG_REJOIN 2   /* back from an untimed call: goes on at once, at max(t, the network's present) */
/* MS_EV_IRECV flags */
#define MS_EV_FLAG_NOTIFY 1   /* the shim holds the receive back from the real MPI behind an undecided
                               * wildcard: resolve it when the model matches it (ms_model_irecv_notify) */

typedef struct ms_driver_event {
    int kind;                 /* ms_event_kind */
    int fn;                   /* MPI function id, for reports (-1: none) */
    int thread;               /* the rank's thread (0..MS_MODEL_MAX_THREADS) it comes from; 0 unless its threads
                               * call MPI at once */
    int64_t t;
    uint64_t req, comm, bytes;
    int32_t peer, tag, mode, flags;
    uint64_t bytes_out;       /* RMA: the result's bytes (a get's, a fetching atomic's) */
    uint64_t buf;             /* ISEND, IRECV: the user's buffer address, 0 unknown (ms_model_buffer: the host
                               * model's memory registration cache) */
    const uint64_t *list;     /* WAIT: request ids; ICOLL: counts */
    size_t nlist;
    const int32_t *members;   /* COMM_ADD */
    int32_t nmembers;
    /* WAIT under lenient waits (replay): the request ids the recorded run completed in this call,
     * in the wait's order (NULL: unknown, counted as none). Lets the driver forget a request the
     * model completed early once the recording has completed it too; must stay valid until the
     * rank is resumed. */
    const uint64_t *recorded_done;
    size_t nrecorded_done;
} ms_driver_event;

/* Where the driver's answers go. */
typedef struct ms_driver_ops {
    /* The rank goes on at t: its wait or probe returns (`res`, as ms_resume_fn gives them, one
     * per request of the wait), or it rejoins after an untimed call (n = 0). Called from inside
     * ms_driver_advance, or from ms_driver_apply for a rejoin. */
    void (*resume)(void *user, int rank, int thread, int64_t t, const ms_req_result *res, size_t n);
    /* A wildcard receive's (or probe's) sender is decided. NULL: dropped. Every resume of a
     * rank comes after its resolutions. */
    void (*resolve)(void *user, int rank, const ms_resolution *r);
} ms_driver_ops;

/* Register the keys of the MPI model ([mpi], [host]) and of the shim ([shim]) in a netmodel
 * configuration, before profiles are loaded: the keys every front end's configuration has. */
int ms_driver_register_keys(nm_config *cfg, char *err, size_t errlen);
/* One --set assignment "key=value" (origin "--set"); the shim's keys may also be named without
 * their section: unmodelled=, compute=, cpu_factor=. */
int ms_driver_config_set(nm_config *cfg, const char *assign, char *err, size_t errlen);

/* The topology (network.topology, or "auto" sized for nranks and the host model), the network and
 * the model. cfg is read, not owned, and must outlive the driver. Every rank starts UNCONNECTED. */
ms_driver *ms_driver_create(const nm_config *cfg, int nranks, char *err, size_t errlen);
void ms_driver_destroy(ms_driver *d);
void ms_driver_set_ops(ms_driver *d, const ms_driver_ops *ops, void *user);
/* MPI function names by id, for deadlock descriptions (not copied; NULL: "?"). */
void ms_driver_set_fn_names(ms_driver *d, const char *const *names, size_t n);
/* Waits may name requests the model has already reported complete (capture-only traces: the
 * real run finished them later than the model): leave those out instead of refusing the wait. */
void ms_driver_set_lenient_waits(ms_driver *d, int on);
/* Requests a lenient driver holds as completed early: now, and the most at any time. */
void ms_driver_early_done(const ms_driver *d, uint64_t *now, uint64_t *peak);
/* Every ms_model call the driver makes and every answer it passes on, one line each, to fn:
 * rank -1 for calls that belong to no rank (running the model). For tests and diagnosis: two
 * front ends fed the same events give the same lines per rank. NULL: off (the default). */
typedef void (*ms_driver_log_fn)(void *user, int rank, const char *line);
void ms_driver_set_call_log(ms_driver *d, ms_driver_log_fn fn, void *user);

/* The rank has started: RUNNING at clock 0. */
void ms_driver_connect(ms_driver *d, int rank);
/* Apply one event of a rank. 0, or -1 when the model refused it ("the model refused a send:
 * ..." in err); the driver's state stays consistent either way. */
int ms_driver_apply(ms_driver *d, int rank, const ms_driver_event *e, char *err, size_t errlen);
/* The rank ended without MPI_Finalize (crash, kill, end of its records): the model finalizes it
 * at its clock and it is never resumed again (a message meant for it must not make it running:
 * it would hold the horizon at its clock for ever). The first rank to end so is DEAD; ranks that
 * end after a rank died (the launcher ends the job) or after ms_driver_stop are STOPPED. No effect
 * on a finished, dead or stopped rank. Returns the rank's state afterwards. */
ms_rank_state ms_driver_rank_gone(ms_driver *d, int rank);
/* The same for a rank known to have been ended from outside (its shim or its records say so: a
 * signal from the launcher or the batch system, the model server's stop): STOPPED, never DEAD. */
ms_rank_state ms_driver_rank_stopped(ms_driver *d, int rank);
/* The rank that died first (DEAD), or -1. */
int ms_driver_first_dead(const ms_driver *d);
/* The rank's process exited on its own (exit(), a return from main) with this code, as its shim
 * said (or its trace records): a rank that then ends without MPI_Finalize ended by the program's
 * choice, not in a crash, and the texts say so. */
void ms_driver_rank_exit_code(ms_driver *d, int rank, int code);
int ms_driver_rank_exited(const ms_driver *d, int rank, int *code);   /* 1 and *code when known */
/* "rank R exited with code C after MPI_Init without calling MPI_Finalize (...)" when the code is
 * known, else "rank R ended without MPI_Finalize (crashed or killed)"; snprintf's return. */
int ms_driver_gone_text(const ms_driver *d, int rank, char *buf, size_t len);

/* It turned out that no rank died on its own (the launcher itself was killed, which ends every
 * rank): a DEAD rank becomes STOPPED. */
void ms_driver_absolve(ms_driver *d);
/* The front end stops the run (an error, a deadlock, a timeout): ranks that end from now on were
 * ended by it, not on their own (STOPPED). Nothing else changes. */
void ms_driver_stop(ms_driver *d);

/* The stall watchdog (shim.stall_timeout): the rank has waited inside the real MPI with nothing
 * completing there for that long (`where`: its call, peer, tag and call site, as one line), or has
 * been inside an untimed call for that long; NULL or "": it moves again (so does any event of the
 * rank). Only a live run has real time: replay never calls this. The stop it may lead to comes
 * from ms_driver_advance, as for a deadlock. */
void ms_driver_rank_stalled(ms_driver *d, int rank, const char *where);
/* The same for one thread of the rank (a thread parked outside MPI for that long counts too). */
void ms_driver_thread_stalled(ms_driver *d, int rank, int thread, const char *where);

/* Run the model up to the horizon, again after each resume while it has work below the new one.
 * 0: nothing more to do now; 1: stuck, which ms_driver_stuck says (a deadlock, ranks waiting for
 * a dead one, or a stall); 2: the network deadlocked (the routing is not deadlock-free; err says
 * when, which routing and the channel cycle, nm_network_deadlock_reason): a deadlock too, in the
 * network instead of the program; -1: the network engine failed (its own message in err). */
int ms_driver_advance(ms_driver *d, char *err, size_t errlen);
/* Whether the job cannot move (every rank connected): either every connected rank waits or has
 * ended, some rank waits, and the model has nothing pending (a deadlock, or ranks waiting for a
 * dead one); or some rank is stalled (ms_driver_rank_stalled), every other rank that is not
 * waiting or ended is stalled too, and the model has nothing to do before the horizon. A front end
 * that takes time to report a stall asks again before stopping: a stalled rank may have moved. */
int ms_driver_stuck(const ms_driver *d);
int64_t ms_driver_horizon(const ms_driver *d);
/* The text of a stall: "deadlock in virtual time: ..." (returns 1); when a rank died, "rank R
 * ended without MPI_Finalize ...; the other ranks wait for it" (returns 2); when ranks are stalled
 * in the real MPI, "stall: ..." (returns 3); then one line per stalled rank (clock, where it said it
 * is) and per waiting rank (clock, MPI function, what the model says it waits for and, if site is
 * given, "; " and site(user, rank) or "call site unknown"). */
int ms_driver_describe_stall(const ms_driver *d, char *buf, size_t len,
                             const char *(*site)(void *user, int rank), void *user);

/* Lookahead (docs/architecture.md "Local answers"): `rank`, just resumed, was told at t that
 * none of the requests `reqs` had completed (its Test*), or (probe) that no message matched its
 * Iprobe. Until the returned time the model would answer the same question the same way, unless
 * the rank itself posts: the pending model events, the requests' own completion times and the
 * other ranks' clocks, plus *lat (the least delay of a rank's influence on them), bound it. A post
 * of the rank itself at p (which may resume a blocked rank) shortens it to p + *lat at most; a
 * post that may change the requests or messages themselves (a cancel, a send to itself, a
 * collective) ends it. t: no promise. Call between ms_driver_advance calls, not from a callback. */
int64_t ms_driver_quiet_until(const ms_driver *d, int rank, int64_t t, const uint64_t *reqs, size_t n, int probe,
                              int64_t *lat);

int ms_driver_nranks(const ms_driver *d);
/* Threads of the rank the driver has seen (1: only thread 0). */
int ms_driver_threads(const ms_driver *d, int rank);
/* Queries of a rank are those of its thread 0. */
ms_rank_state ms_driver_state(const ms_driver *d, int rank);
ms_rank_state ms_driver_thread_state(const ms_driver *d, int rank, int thread);
int64_t ms_driver_thread_clock(const ms_driver *d, int rank, int thread);
/* "never_connected", "running", "blocked" (also held), "untimed", "finalized", "died", "stopped", "idle" */
const char *ms_driver_state_name(ms_rank_state s);
int64_t ms_driver_clock(const ms_driver *d, int rank);
int ms_driver_waiting(const ms_driver *d, int rank);     /* BLOCKED or HELD */
int ms_driver_any_waiting(const ms_driver *d);
int ms_driver_wait_fn(const ms_driver *d, int rank);     /* MPI function of its last wait or probe */

/* What the front ends ask of the model (they make no ms_model call themselves). */
/* The host CPU cost of posting a send or a receive of `bytes` (ms_model_isend_cost): what the shim
 * adds to the rank's clock (its WELCOME says how), and replay with it. */
int64_t ms_driver_isend_cost(const ms_driver *d, uint64_t bytes);
int64_t ms_driver_irecv_cost(const ms_driver *d, uint64_t bytes);
/* The rest of the WELCOME: what a Test or Iprobe answered by the shim costs (mpi.poll_cost), and
 * whether the shim may complete eager standard sends itself (ms_model_local_send). */
int64_t ms_driver_poll_cost(const ms_driver *d);
int ms_driver_local_send(const ms_driver *d, double *copy_ps_per_byte, int *recv_moves_cpu);
/* When the rank's CPU is free in the model, or -1 (ms_model_cpu_free). */
int64_t ms_driver_cpu_free(const ms_driver *d, int rank);
/* The model's next pending event (NM_TIME_NEVER: none) and its present time. */
int64_t ms_driver_next_time(const ms_driver *d);
int64_t ms_driver_now(const ms_driver *d);
/* Errors the model met while running: NULL if none, else the last one, and the count in *count if
 * given (ms_model_last_error). */
const char *ms_driver_model_error(const ms_driver *d, uint64_t *count);
/* The model's part of the rank's report object (ms_report.h): messages and bytes both ways,
 * collectives, one-sided operations, and the node the host model placed it on; the caller fills
 * the rest. */
void ms_driver_report_rank(const ms_driver *d, int rank, ms_report_rank *r);

nm_network *ms_driver_network(const ms_driver *d);
const nm_topology *ms_driver_topology(const ms_driver *d);

#ifdef __cplusplus
}
#endif
#endif
