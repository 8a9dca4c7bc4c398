/* Wire protocol between the shim (one connection per rank) and the model server.
 *
 * TCP, so that ranks on other hosts can reach the server. Every message is a fixed header
 * (type, payload length) followed by a payload of fixed-width little-endian fields; the
 * structs below are the payloads. Both ends are built from this header on the same kind of
 * machine (homogeneous clusters); the HELLO carries a protocol version and the struct sizes so
 * that a mismatch is refused, not misread.
 *
 * Rank -> server messages are either asynchronous (reports: the rank goes on) or blocking
 * (WAIT, PROBE: the rank waits for a RESUME). Reports are batched by the shim and flushed
 * before every blocking message, which is all the conservative scheme needs: the server cannot
 * use a report before it knows the rank's later clock anyway.
 */
#ifndef MS_PROTOCOL_H
#define MS_PROTOCOL_H

#include <stdint.h>

#define MS_PROTO_MAGIC 0x6d70736dU   /* "mpsm" */
#define MS_PROTO_VERSION 1U
#define MS_SECRET_LEN 32             /* hex characters */
#define MS_MAX_WAIT_REQS 65536       /* requests in one WAIT (larger arrays are split) */
#define MS_MAX_COLL_COUNTS (1u << 24) /* counts of one v-collective (ICOLL) */
#define MS_MAX_COMM_SIZE (1u << 24)   /* members of one COMM_ADD */
/* What a rank's figures may be (the trace's MS_TRACE_MAX_*, the same values): beyond them the
 * model's int64 picosecond arithmetic could overflow */
#define MS_PROTO_MAX_BYTES (UINT64_C(1) << 36)
#define MS_PROTO_MAX_CLOCK_PS (INT64_C(1) << 62)
#define MS_COMM_WORLD_ID 0ULL        /* the same ids as ms_model.h */
#define MS_COMM_SELF_ID 1ULL
/* Values of payload fields that the model defines (libmpisim/model/ms_model.h, ms_coll.h): the
 * same numbers, MS_WIRE_X for the model's MS_X, so that the shim needs no model header. The server
 * hands them to the driver as they are (tests/driver/test_driver.cpp checks that they agree). */
#define MS_WIRE_ANY_SOURCE (-1)      /* ms_msg_irecv.src, ms_msg_probe.src */
#define MS_WIRE_ANY_TAG (-1)         /* .tag */
#define MS_WIRE_PROC_NULL (-2)       /* a peer, a target */
#define MS_WIRE_COLL_ROOT_NONE (-2)  /* ms_msg_icoll.root at the root group's other members (intercommunicators) */
typedef enum {                       /* ms_msg_wait.mode */
    MS_WIRE_WAIT_ALL = 0, MS_WIRE_WAIT_ANY, MS_WIRE_WAIT_SOME, MS_WIRE_TEST_ALL, MS_WIRE_TEST_ANY, MS_WIRE_TEST_SOME,
    MS_WIRE_TEST_PEEK   /* MPI_Request_get_status: as MS_WIRE_TEST_ALL, but a completed request stays */
} ms_wire_wait_mode;
typedef enum {                       /* ms_msg_isend.mode */
    MS_WIRE_SEND_STANDARD = 0, MS_WIRE_SEND_SYNC, MS_WIRE_SEND_READY, MS_WIRE_SEND_BUFFERED
} ms_wire_send_mode;
typedef enum {                       /* ms_msg_icoll.kind */
    MS_WIRE_COLL_BARRIER = 0, MS_WIRE_COLL_BCAST, MS_WIRE_COLL_REDUCE, MS_WIRE_COLL_ALLREDUCE, MS_WIRE_COLL_GATHER,
    MS_WIRE_COLL_SCATTER, MS_WIRE_COLL_ALLGATHER, MS_WIRE_COLL_ALLTOALL, MS_WIRE_COLL_REDUCE_SCATTER,
    MS_WIRE_COLL_SCAN, MS_WIRE_COLL_EXSCAN, MS_WIRE_COLL_GATHERV, MS_WIRE_COLL_SCATTERV, MS_WIRE_COLL_ALLGATHERV,
    MS_WIRE_COLL_ALLTOALLV, MS_WIRE_COLL_NEIGHBOR, MS_WIRE_COLL_COUNT
} ms_wire_coll_kind;
typedef enum {                       /* ms_msg_rma.kind */
    MS_WIRE_RMA_PUT = 0, MS_WIRE_RMA_GET, MS_WIRE_RMA_ACCUMULATE, MS_WIRE_RMA_GET_ACCUMULATE, MS_WIRE_RMA_FETCH_AND_OP,
    MS_WIRE_RMA_COMPARE_AND_SWAP, MS_WIRE_RMA_LOCK_SHARED, MS_WIRE_RMA_LOCK_EXCLUSIVE, MS_WIRE_RMA_UNLOCK,
    MS_WIRE_RMA_KIND_COUNT
} ms_wire_rma_kind;
/* ms_msg_wait.flags */
#define MS_WAIT_FLAG_SYNC 1          /* all members of the collective leave together (comm creation) */
#define MS_WAIT_FLAG_UNTIMED 2       /* back from an untimed call: resume at once, at the model's time */
#define MS_WAIT_FLAG_LOCAL 4         /* trace only: the shim answered this wait itself, as the model would have
                                      * (docs/architecture.md "Local answers"); replay asks the model and checks */

typedef enum {
    /* rank -> server */
    MS_MSG_HELLO = 1,      /* ms_msg_hello */
    MS_MSG_ISEND,          /* ms_msg_isend */
    MS_MSG_IRECV,          /* ms_msg_irecv */
    MS_MSG_ICOLL,          /* ms_msg_icoll + counts[] (v-variants) */
    MS_MSG_COMM_ADD,       /* ms_msg_comm_add + world_ranks[] */
    MS_MSG_WAIT,           /* ms_msg_wait + reqs[]           (blocking) */
    MS_MSG_PROBE,          /* ms_msg_probe                   (blocking) */
    MS_MSG_FINALIZE,       /* ms_msg_finalize                (blocking: answered by FIN_OK) */
    MS_MSG_UNMODELLED,     /* ms_msg_text: an unmodelled call, fatal or counted */
    MS_MSG_CALLSITE,       /* ms_msg_text: answer to DESCRIBE */
    MS_MSG_CLOCK,          /* ms_msg_clock: the rank's clock moved (e.g. passthrough calls) */
    MS_MSG_SITE,           /* ms_msg_site: one call site's totals so far (replacing the last ones), sent at
                            * MPI_Finalize and after each PROGRESS */
    MS_MSG_CANCEL,         /* ms_msg_cancel: MPI_Cancel of an active request */
    MS_MSG_FREE,           /* ms_msg_cancel: MPI_Request_free of an active send */
    MS_MSG_STALL,          /* ms_msg_text: waiting in the real MPI, nothing completed for shim.stall_timeout
                            * (where: call, peer, tag, call site); empty text: it moves again */
    MS_MSG_PROGRESS,       /* ms_msg_finalize: the totals so far, about once a second (what the report keeps
                            * of a rank that never reaches MPI_Finalize), then its SITEs */
    MS_MSG_RMA,            /* ms_msg_rma: a one-sided operation (ms_model_rma) */
    MS_MSG_EXIT,           /* ms_msg_exit: the process exits (exit() or a return from main) with this code,
                            * before or after MPI_Finalize (traced when before: the trace is closed after) */
    MS_MSG_FIN_RETURNED,   /* no payload: PMPI_Finalize returned, the program's own code runs again (a rank
                            * that never says so is held in the MPI library's shutdown; never traced) */
    MS_MSG_THREAD = 30,    /* ms_msg_thread: the rank's threads (MPI_THREAD_MULTIPLE; docs/architecture.md
                            * "Threads"): the messages that follow come from thread `slot`, or it parks,
                            * ends, or threads called MPI at once under a level that forbids it */
    /* trace records only (never on the wire): see trace_raw.h */
    MS_MSG_TR_CALL = 32,   /* ms_msg_tr_call: an MPI call begins */
    MS_MSG_TR_EXIT,        /* ms_msg_tr_exit: it returns */
    MS_MSG_TR_PCONTROL,    /* ms_msg_tr_pcontrol: MPI_Pcontrol(level), a region mark */
    /* server -> rank */
    MS_MSG_WELCOME = 64,   /* ms_msg_welcome */
    MS_MSG_RESUME,         /* ms_msg_resume + results[] */
    MS_MSG_RESOLVE,        /* ms_msg_resolve: a wildcard (or MS_IRECV_NOTIFY) receive is matched */
    MS_MSG_DESCRIBE,       /* no payload: say where you are blocked (deadlock report) */
    MS_MSG_ABORT,          /* ms_msg_text: stop the program with this message */
    MS_MSG_FIN_OK,         /* no payload */
    MS_MSG_HINT,           /* ms_msg_hint: comes right before a RESUME, about it (never in the trace) */
} ms_msg_type;

typedef struct ms_msg_header {
    uint32_t type;
    uint32_t length;       /* payload bytes following the header */
} ms_msg_header;

typedef struct ms_msg_hello {
    uint32_t magic, version;
    int32_t rank, size;
    int32_t pid;
    uint32_t sizes_check;  /* sizeof of the payload structs, folded, to refuse mismatches */
    char secret[MS_SECRET_LEN];
    char hostname[64];
    char binding[64];      /* the CPUs this rank may run on, as a list ("0-1", "3") */
} ms_msg_hello;

typedef struct ms_msg_welcome {
    /* model costs the shim applies locally (the same functions as the model's) */
    int64_t isend_cost_base_ps, isend_cost_per_byte_ps;
    int64_t irecv_cost_base_ps, irecv_cost_per_byte_ps;
    int64_t eager_threshold;     /* bytes: below this the model sends eagerly */
    int32_t compute_mode;        /* ms_compute_mode */
    int32_t unmodelled_passthrough;
    double cpu_factor;           /* virtual compute = measured * cpu_factor */
    int64_t fixed_compute_ps;    /* for compute mode "fixed": cost charged per interval */
    int32_t callsite_depth;      /* frames of the program's stack that name a call site */
    int32_t spin_polls;          /* polls without sleeping before a waiting loop sleeps */
    int64_t wtime_stall_ps;      /* compute none: what an MPI_Wtime call that finds the clock unmoved adds */
    int32_t compute_slots;       /* the compute gate: ranks of a host computing at once (0: no gate) */
    int32_t return_path;         /* 1: take the cold return path's measured excess off switched gaps */
    int64_t compute_slot_timeout_ps;   /* a wait for a slot with no release for this long gives up */
    int64_t stall_timeout_ps;    /* real time a wait in the real MPI may see nothing complete before it tells the server (which judges; 0: never) */
    int32_t program_clocks;      /* 1: the program's gettimeofday/clock_gettime read virtual time */
    int32_t spin_oversubscribed; /* 1: wait loops spin even where the host's ranks outnumber its cores
                                  * (shim.spin_oversubscribed = spin); 0: there they sleep at once */
    /* Local completion of eager standard sends (docs/architecture.md "Local answers"): the model
     * completes one at max(t, the rank's CPU free) + isend cost + copy(bytes), copy = llround(
     * local_copy_ps_per_byte * bytes) (0 when the rate is 0), the same for every peer but the rank
     * itself. 0: not computable in the shim (copies that depend on the peer's node or on other
     * ranks' copies). */
    int32_t local_send;
    int32_t recv_moves_cpu;      /* host registration costs: a rendezvous receive's match moves the CPU */
    double local_copy_ps_per_byte;
    int64_t poll_cost_ps;        /* mpi.poll_cost: what a Test or Iprobe answered locally costs */
    /* Repeatable small gaps (docs/architecture.md "Repeatable small gaps"): a gap measured at or
     * below gap_noise, or one of up to gap_noise_max between a pair of call sites whose recent
     * gaps mostly were, is charged gap_floor (as measured ns, before cpu_factor); gap_noise 0:
     * every gap as measured */
    int64_t gap_floor_ps, gap_noise_ps, gap_noise_max_ps;
    int64_t clock_read_cost_ps;  /* computation a virtual clock read is charged (compute cpu, wall) */
} ms_msg_welcome;

#define MS_DEFAULT_SPIN_POLLS 400

typedef enum { MS_COMPUTE_CPU = 0, MS_COMPUTE_WALL = 1, MS_COMPUTE_NONE = 2 } ms_compute_mode;

typedef struct ms_msg_isend {
    int64_t t;
    uint64_t req, comm, bytes;
    int32_t dst, tag, mode, fn;
    uint64_t buf;            /* the user's buffer address (host model: registration cache), 0 unknown */
} ms_msg_isend;

/* ms_msg_irecv.flags */
#define MS_IRECV_NOTIFY 1            /* the shim holds this receive back from the real MPI: say when it is matched */

typedef struct ms_msg_irecv {
    int64_t t;
    uint64_t req, comm, bytes;
    int32_t src, tag, fn, flags;   /* MS_IRECV_* */
    uint64_t buf;            /* the user's buffer address, 0 unknown */
} ms_msg_irecv;

typedef struct ms_msg_cancel {
    int64_t t;
    uint64_t req;
    int32_t fn, pad;
} ms_msg_cancel;

typedef struct ms_msg_icoll {
    int64_t t;
    uint64_t req, comm, bytes;
    int32_t kind, root, ncounts, fn;
    int32_t inter_low, pad;      /* an intercommunicator's: the size of its low group (ms_coll_args) */
} ms_msg_icoll;

typedef struct ms_msg_rma {
    int64_t t;
    uint64_t req, comm, bytes, result_bytes;   /* comm: the window's communicator */
    int32_t target, kind, fn, pad;             /* kind: ms_wire_rma_kind */
} ms_msg_rma;

typedef struct ms_msg_exit {
    int32_t code;                /* the process's exit status (exit's argument) */
    int32_t finalized;           /* 1: after MPI_Finalize */
} ms_msg_exit;

typedef struct ms_msg_comm_add {
    uint64_t comm;
    int32_t size, pad;
} ms_msg_comm_add;

typedef struct ms_msg_wait {
    int64_t t;
    int32_t mode, n;
    int32_t fn, flags;      /* MPI function (for reports); MS_WAIT_FLAG_* */
    uint64_t callsite;      /* return address inside the program, for reports */
} ms_msg_wait;

typedef struct ms_msg_probe {
    int64_t t;
    uint64_t comm;
    int32_t src, tag, blocking, fn;
    uint64_t callsite;
} ms_msg_probe;

typedef struct ms_msg_clock {
    int64_t t;
} ms_msg_clock;

/* How a rank measured its computation (docs/architecture.md "Virtual time in a rank"). */
typedef enum {
    MS_CHARGING_NONE = 0,        /* compute mode none: nothing measured */
    MS_CHARGING_TASK_CLOCK = 1,  /* task-clock perf event: its page and switch records, no system call */
    MS_CHARGING_SYSCALL = 2,     /* every read a CLOCK_THREAD_CPUTIME_ID system call */
    MS_CHARGING_WALL = 3         /* compute mode wall */
} ms_charging_method;

typedef struct ms_msg_charging {
    int32_t method;              /* ms_charging_method */
    int32_t gate_slots;          /* the host's compute-gate slots at the end (0: no gate) */
    int64_t baseline_ns;         /* subtracted from each gap: an empty gap's charge, measured at start */
    uint64_t page_misses;        /* task-clock readings that fell back to the system call */
    uint64_t woken_gaps;         /* gaps after an MPI call during which the thread was switched out */
    int64_t woken_raw_ns;        /* their raw_ns */
    uint64_t gaps;               /* computation intervals (between MPI calls) charged */
    uint64_t descheduled_gaps;   /* of which the thread was scheduled out at least once */
    uint64_t syscalls;           /* CPU-clock system calls made */
    int64_t raw_ns;              /* the gaps as measured, before the baselines */
    int64_t compensated_ns;      /* taken off: the baselines and the cold return path's excess */
    int64_t wall_ns;             /* CLOCK_MONOTONIC time of the gaps */
    int64_t descheduled_ns;      /* wall time in gaps during which the thread did not run */
    uint64_t gate_waits;         /* returns to the program that waited for a compute slot */
    int64_t gate_wait_ns;        /* wall time of those waits (not charged) */
    uint64_t gate_timeouts;      /* waits that gave up and widened the gate */
    int64_t woken_charged_ns;    /* charged for the gaps after a switched-out call (after all compensation) */
    int64_t return_comp_ns;      /* taken off those gaps as the cold return path's measured penalty */
    int64_t cold_baseline_ns;    /* an empty gap's charge right after a switch (recent trials' median) */
    uint64_t cold_trials;        /* such trials taken (one per switched-out call) */
    uint64_t window_gaps;        /* gaps measured between the wrappers' counter stamps (shim.h) */
    int64_t window_baseline_ns;  /* an empty wrapper window's charge, measured at start */
    int64_t window_cold_ns;      /* ... right after a switch (recent trials' median) */
    int64_t window_ps_per_tick;  /* the counter's measured period, in 1e-6 ps (0: no window) */
    uint64_t probes;             /* gaps after a switch whose next wrapper was probed (warm_path.c) */
    uint64_t floor_gaps;         /* gaps charged shim.gap_floor ("Repeatable small gaps") */
    int64_t floor_added_ns;      /* ... the floor minus what they measured, for those measured below it */
    int64_t floor_dropped_ns;    /* ... what they measured above it (noise of an empty pair of call sites) */
    uint64_t stall_gaps;         /* of the floor's gaps, those above shim.gap_noise_max taken for a stall */
    int64_t stall_dropped_ns;    /* ... what they measured above the floor (in floor_dropped_ns too) */
    uint64_t steal_gaps;         /* gaps the hypervisor's steal was taken off (in compensated_ns too) */
    int64_t steal_ns;            /* ... what was taken off: the task clock beyond the thread's CPU time */
    uint64_t steal_syscalls;     /* CPU-time system calls that measured it (clock_anchor; not in syscalls) */
} ms_msg_charging;

typedef struct ms_msg_finalize {
    int64_t t;               /* virtual end */
    int64_t compute_ps;      /* charged computation */
    int64_t mpi_ps;          /* virtual time inside MPI calls */
    uint64_t calls;          /* MPI calls made (wrapped) */
    uint64_t unmodelled_calls;
    ms_msg_charging charging;
    int32_t thread_level;    /* MPI_THREAD_* the program was given (-1: MPI_Init) */
    int32_t threads;         /* its threads that called MPI */
    uint64_t thread_violations;   /* calls made while another thread was inside MPI, under a lower level */
    int64_t omp_regions;     /* OpenMP parallel regions charged as their critical path ("Hybrid computation") */
    int64_t critical_path_ps;    /* what those regions and the joins of threads added to its threads' clocks
                                  * beyond their own CPU time in them (negative: took off) */
} ms_msg_finalize;

typedef struct ms_msg_result {
    uint64_t req;
    int64_t complete_time;
    uint64_t bytes;
    int32_t completed, source, tag;
    int32_t cancelled;           /* completed by MPI_Cancel: nothing received */
} ms_msg_result;

typedef struct ms_msg_resume {
    int64_t t;
    int32_t n;
    int32_t thread;          /* the rank's thread it resumes (the one whose WAIT or PROBE it answers) */
} ms_msg_resume;

/* ms_msg_thread.op */
enum {
    MS_THREAD_SWITCH = 0,    /* the rank's messages from now on are thread `slot`'s (a thread first seen is
                              * parked until it rejoins: a WAIT with MS_WAIT_FLAG_UNTIMED) */
    MS_THREAD_PARK = 1,      /* thread `slot` waits outside MPI at t (why: in what) and holds nothing back
                              * until it rejoins */
    MS_THREAD_IDLE = 2,      /* ... for another thread of its rank alone (an OpenMP worker between regions,
                              * a join of a thread that calls MPI): counts as waiting in the deadlock test */
    MS_THREAD_END = 3,       /* thread `slot` ended at t */
    MS_THREAD_VIOLATION = 4  /* threads called MPI at once under thread level `slot` (MPI_THREAD_SINGLE,
                              * FUNNELED, SERIALIZED: why names it), the first time */
};
typedef struct ms_msg_thread {
    int32_t slot, op;
    int64_t t;
    char why[32];
} ms_msg_thread;

/* What the model lets the rank answer itself after the RESUME that follows (never traced):
 * quiet_until: no request of the wait it answers (or, for an Iprobe, no message it looks for)
 * changes before this time, whatever the other ranks do (0: none); a send or receive the rank
 * posts at p shortens it to p + quiet_lat, anything else it posts ends it;
 * cpu_free: when the rank's CPU is free in the model (its send overheads) at the resume; exact
 * until the rank posts again, unless it has collectives or (with registration costs) receives
 * outstanding. */
typedef struct ms_msg_hint {
    int64_t quiet_until, quiet_lat;
    int64_t cpu_free;
} ms_msg_hint;

typedef struct ms_msg_resolve {
    uint64_t req, bytes;
    int32_t source, tag;
} ms_msg_resolve;

typedef struct ms_msg_tr_call {
    int64_t compute_ps;      /* computation charged since the previous call (after cpu_factor) */
    int64_t raw_compute_ns;  /* the same, as measured (before cpu_factor) */
    int64_t real_entry_ns;   /* CLOCK_MONOTONIC at entry */
    uint64_t callsite;       /* return address into the program */
    int32_t fn;              /* ms_fn_id (names: ms_fn_names_gen.h) */
    int32_t pad;
} ms_msg_tr_call;

typedef struct ms_msg_tr_pcontrol {
    int64_t clock_ps;        /* the virtual clock at the call (co-simulation), else 0 */
    int64_t real_ns;         /* CLOCK_MONOTONIC at the call */
    int32_t level, pad;      /* MPI_Pcontrol's level: > 0 opens a region, 0 closes it */
} ms_msg_tr_pcontrol;

typedef struct ms_msg_tr_exit {
    int64_t real_exit_ns;    /* CLOCK_MONOTONIC at exit */
    int64_t clock_ps;        /* the virtual clock at exit (co-simulation), else 0 */
    int32_t fn, rc;          /* function and its return code */
} ms_msg_tr_exit;

/* Per call site totals (mpiP's view): the MPI function, the program's frames that called it. */
#define MS_SITE_TEXT 480
typedef struct ms_msg_site {
    int32_t fn, depth;
    uint64_t calls, bytes;
    int64_t time_ps;         /* virtual time spent inside those calls */
    uint64_t pc0;            /* innermost return address (raw) */
    char text[MS_SITE_TEXT]; /* "symbol+0xoff (module+0xoff) < caller..." */
} ms_msg_site;

/* Text payloads (errors, call sites) are NUL-terminated and at most this long. */
#define MS_TEXT_MAX 1024
typedef struct ms_msg_text {
    char text[MS_TEXT_MAX];
} ms_msg_text;

static inline uint32_t ms_proto_sizes_check(void)
{
    return (uint32_t)(sizeof(ms_msg_hello) * 1u + sizeof(ms_msg_welcome) * 3u + sizeof(ms_msg_isend) * 5u +
                      sizeof(ms_msg_irecv) * 7u + sizeof(ms_msg_icoll) * 11u + sizeof(ms_msg_wait) * 13u +
                      sizeof(ms_msg_result) * 17u + sizeof(ms_msg_resume) * 19u + sizeof(ms_msg_finalize) * 23u +
                      sizeof(ms_msg_probe) * 29u + sizeof(ms_msg_resolve) * 31u + sizeof(ms_msg_site) * 37u +
                      sizeof(ms_msg_cancel) * 41u + sizeof(ms_msg_hint) * 43u + sizeof(ms_msg_rma) * 47u +
                      sizeof(ms_msg_exit) * 53u + sizeof(ms_msg_thread) * 59u);
}

/* The payload lengths a message from a rank may have, [lo, hi]; 0 for a type no rank sends (the
 * server refuses it: a length beyond them is never buffered). */
static inline int ms_proto_rank_msg_bounds(uint32_t type, uint32_t *lo, uint32_t *hi)
{
    switch (type) {
    case MS_MSG_ISEND: *lo = *hi = sizeof(ms_msg_isend); return 1;
    case MS_MSG_IRECV: *lo = *hi = sizeof(ms_msg_irecv); return 1;
    case MS_MSG_CANCEL:
    case MS_MSG_FREE: *lo = *hi = sizeof(ms_msg_cancel); return 1;
    case MS_MSG_ICOLL: *lo = sizeof(ms_msg_icoll); *hi = *lo + 8u * MS_MAX_COLL_COUNTS; return 1;
    case MS_MSG_COMM_ADD: *lo = sizeof(ms_msg_comm_add); *hi = *lo + 4u * MS_MAX_COMM_SIZE; return 1;
    case MS_MSG_WAIT: *lo = sizeof(ms_msg_wait); *hi = *lo + 8u * MS_MAX_WAIT_REQS; return 1;
    case MS_MSG_PROBE: *lo = *hi = sizeof(ms_msg_probe); return 1;
    case MS_MSG_RMA: *lo = *hi = sizeof(ms_msg_rma); return 1;
    case MS_MSG_EXIT: *lo = *hi = sizeof(ms_msg_exit); return 1;
    case MS_MSG_FIN_RETURNED: *lo = *hi = 0; return 1;
    case MS_MSG_THREAD: *lo = *hi = sizeof(ms_msg_thread); return 1;
    case MS_MSG_FINALIZE:
    case MS_MSG_PROGRESS: *lo = *hi = sizeof(ms_msg_finalize); return 1;
    case MS_MSG_UNMODELLED:
    case MS_MSG_CALLSITE:
    case MS_MSG_STALL: *lo = 0; *hi = sizeof(ms_msg_text); return 1;
    case MS_MSG_CLOCK: *lo = *hi = sizeof(ms_msg_clock); return 1;
    case MS_MSG_SITE: *lo = *hi = sizeof(ms_msg_site); return 1;
    default: return 0;
    }
}

#endif
