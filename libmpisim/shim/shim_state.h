/* The shim runtime's one process-wide state, shared by the files the runtime is split into
 * (shim.c: lifecycle, clock, the server link and waiting loops; capture.c: trace capture;
 * callsites.c: call-site totals; deferred.c: held-back receives; comms.c: communicators). A
 * preloaded library has no caller to hold a handle, so the state is one struct; everything here
 * is hidden inside libmpisim.so. The pieces that need no MPI and no state (transport.c,
 * reqtable.c) have their own headers and unit tests. */
#ifndef MS_SHIM_STATE_H
#define MS_SHIM_STATE_H

#include "shim.h"
#include "transport.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/types.h>

#define MS_CS_MAX_DEPTH 8
#define MS_MAX_THREADS 256     /* threads of a rank that call MPI (docs/architecture.md "Threads") */

struct ms_thr;

typedef struct ms_state {
    int active;                  /* connected to a server; wrappers do their work */
    int init_entered;            /* MPI_Init or MPI_Init_thread was called (the exit hook's question) */
    int finalized;               /* MPI_Finalize returned */
    int exit_sent;               /* the process's exit code went to the server (report_exit) */
    int exit_pid;                /* the process that registered report_exit (not a fork of it) */
    int rank, size;
    ms_transport tp;             /* to the model server (transport.h) */
    ms_msg_welcome params;
    int64_t compute_ps, mpi_ps;  /* the rank's: the sums over its threads */
    int64_t calib_enter_ns, calib_exit_ns, calib_mono;
    ms_msg_charging ck;          /* baselines and counts, sent at MPI_Finalize */
    struct rp_pair *rp;          /* the cold return path's measurements per pair of call sites */
    int64_t cold_trial_ns[16];   /* the last trials of an empty gap right after a switch */
    int64_t cold_sorted_ns[16], cold_sorted_ticks[16];   /* the same trials (and their ticks), sorted */
    /* the wrapper window (shim.h): the counter's rate against CLOCK_MONOTONIC, and baselines */
    int tsc_invariant;           /* CPUID: the counter runs at one rate, on every CPU */
    uint64_t tsc_ref;            /* the first (counter, CLOCK_MONOTONIC) pair; 0: none yet */
    int64_t tsc_ref_mono, tsc_last_mono;
    double ns_per_tick;          /* measured; 0: not yet */
    int window_on;               /* the stamps are taken (ms_wrapper_window.lock is set) */
    uint64_t calib_enter_tsc, calib_exit_tsc;
    int64_t baseline_ticks;      /* an empty window, measured at start */
    int64_t cold_trial_ticks[16];
    int rp_on;                   /* shim.return_path = measured */
    struct gf_pair *gf;          /* repeatable small gaps: per pair of call sites, which recent gaps were empty */
    uint64_t calls, unmodelled_calls;
    uint64_t next_req;
    int fin_ok;
    ms_rq_table table;           /* by the program's MPI_Request (reqtable.h) */
    ms_rq *free_rqs;
    ms_rq *deferred_head, *deferred_tail;
    int resolve_pending;         /* a RESOLVE came: held-back receives may be postable */
    ms_rq **detached;
    size_t detached_n, detached_cap;
    /* communicators */
    int comm_keyval;
    MPI_Comm progress_comm;      /* private: Iprobe on it only drives progress */
    /* capture */
    int trace_fd;                /* -1: not tracing */
    dev_t trace_dev;             /* the file it must be (a program may close the descriptor and reuse */
    ino_t trace_ino;             /* its number: then it is not written, and reopened) */
    char trace_name[64];         /* rank-R.mstrace in the trace directory */
    char *tr;
    size_t tr_len, tr_cap;
    volatile int tr_flushing;    /* trace_flush is writing: a signal handler does not (it could repeat bytes) */
    volatile int tr_busy;        /* tr is being reallocated: a signal handler leaves it alone */
    volatile int tp_writing;     /* an ms_tp_flush is under way: a signal handler does not write */
    int64_t last_raw_compute_ns;
    int64_t last_trace_flush_ns;
    int64_t progress_mono_ns;    /* when the last PROGRESS went (CLOCK_MONOTONIC) */
    int progress_due;
    int server;                  /* 1: co-simulation; 0: capture only */
    /* call sites */
    int cs_depth;
    /* the open MPI_Pcontrol region: level, start, and the site that opened it */
    int pc_level;
    int64_t pc_start_ps;
    uint64_t pc_pcs[MS_CS_MAX_DEPTH];
    int pc_npcs;
    struct cs_entry *cs;
    size_t cs_cap, cs_used;
    /* local answers (docs/architecture.md "Local answers") */
    int64_t cpu_free;            /* the rank's CPU free time in the model; -1: not known here */
    ms_msg_hint hint;            /* the HINT that came before the RESUME being waited for */
    int hint_new;
    int64_t quiet_until;         /* lookahead: the last negative Test or Iprobe holds until then */
    int64_t quiet_lat;           /* ... or until a post of this rank plus this */
    int quiet_kind;              /* 1: a Test (quiet_mode of quiet_ids); 2: an Iprobe (comm, src, tag) */
    int quiet_mode, quiet_n;
    uint64_t quiet_ids[16];
    uint64_t quiet_comm;
    int quiet_src, quiet_tag;
    uint64_t local_waits, local_probes;   /* answered here */
    /* threads (docs/architecture.md "Threads"): those that called MPI, by slot; the level the
     * program was given; the shim's lock (a mutex under MPI_THREAD_MULTIPLE, held from a call's
     * entry reading to its exit reading and let go while it waits; a spin flag under the lower
     * levels, where two threads inside MPI at once is the program's error, counted) */
    struct ms_thr *thr[MS_MAX_THREADS];
    int nthreads;
    int level;                   /* MPI_THREAD_* given; -1: MPI_Init */
    int mt;                      /* MPI_THREAD_MULTIPLE: the mutex */
    int multi;                   /* a thread beside slot 0 has called MPI: no local answers */
    pthread_mutex_t mutex;
    int busy;                    /* the lower levels' flag */
    uint64_t violations;         /* calls that found another thread inside MPI under a lower level */
    int violation_sent;
    int inside;                  /* threads inside an MPI call now (the lower levels: more than one is an error) */
    int wire_slot, trace_slot;   /* the thread the last message of each stream came from */
    int64_t omp_regions, critical_path_ps;   /* regions and joins charged as their critical path */
} ms_state;

MS_HIDDEN extern ms_state ms_shim_state;
/* every file of the runtime says S for it, as shim.c always has */
#define S ms_shim_state

/* The thread's two CPU clocks read at one moment (clock_anchor): the task clock (clock_now), which
 * counts the hypervisor's steal, and the CPU-time system call, which does not. */
typedef struct ck_anchor {
    int64_t page_ns;             /* clock_now */
    int64_t cpu_ns;              /* CLOCK_THREAD_CPUTIME_ID */
    int64_t mono_ns;             /* CLOCK_MONOTONIC (0: no anchor) */
} ck_anchor;

/* What each thread that calls MPI has of its own (thread-local, initial-exec: a plain %fs access,
 * as cheap as the process state's): its nesting, its virtual clock (MPI_THREAD_MULTIPLE: each
 * thread of a rank has one, docs/architecture.md "Threads"), its CPU clock and the gap it is in,
 * the call it is in, and the reply it waits for. Other threads reach it through the rank's
 * registry (S.thr), under the shim's lock. */
typedef struct ms_thr {
    int depth;                   /* nesting of wrapped calls (re-entry guard) */
    int slot;                    /* its number in the rank (0: the thread of MPI_Init); -1: none yet */
    int calibrating;             /* clock_calibrate runs: ms_enter/ms_exit only take their readings */
    int parked;                  /* waits outside MPI (ms_thread_park): it rejoins the model first */
    int waiting;                 /* in a loop that waits for the server (DESCRIBE names it) */
    int clock_only;              /* not registered, its clock reads answered from its estimate */
    int born;                    /* birth_ps and its CPU clock's start are set */
    int counted;                 /* its call counts in S.inside (the lower levels' violation test) */
    void *rec;                   /* its record if pthread_create made it (threads.c) */
    int64_t birth_ps;            /* its creator's virtual time when it was created (pthread_create) */
    int64_t adjust_ps;           /* the critical paths of OpenMP regions and joins since its last exit,
                                  * less its own CPU in them: added to its next gap */
    int64_t clock_ps;            /* its virtual clock */
    int64_t compute_ps;          /* its charged computation (the rank's: S.compute_ps) */
    int64_t call_start_ps;
    int64_t last_exit_ns;        /* its clock reading (clock_now) when its last MPI call returned */
    int64_t last_exit_mono_ns;
    ck_anchor an_exit;           /* the clocks paired for the gap that reading starts (0: none) */
    ck_anchor an_last;           /* its latest pairing of them */
    int clock_read;              /* the call being entered is a clock read (ms_read_virtual_clock) */
    /* its CPU clock without a system call (clock_now): a task-clock perf event's page and its
     * ring buffer of switch records */
    volatile struct perf_event_mmap_page *ck_page;   /* NULL: every CPU-clock read is a system call */
    const char *ck_data;         /* the ring buffer (overwrite mode) */
    uint64_t ck_mask;            /* its size - 1 */
    uint64_t ck_head0;           /* data_head while the buffer holds no record yet */
    int ck_fd;
    int64_t ck_origin_ns;        /* thread CPU clock - task clock: the system-call fallback's origin */
    uint32_t ck_seq_now;         /* the page's lock at the last reading (1: read by system call) */
    const void *site;            /* the program's call site of the current MPI call */
    int ck_woken;                /* the current gap follows a switched-out MPI call */
    uint32_t last_exit_seq;      /* ... at the last exit: a different one at entry = switched out */
    int window_exit_ok;          /* the last exit reading was on the perf event's own thread */
    /* the reply it waits for (written by whichever thread reads the server) */
    volatile int resume_ready;
    int64_t resume_t;
    ms_msg_result *results;
    int results_cap, results_n;
    ms_fn_id blocked_fn;
    ms_fn_id cur_fn;             /* the MPI call being handled (stall reports) */
    uint64_t cur_pcs[MS_CS_MAX_DEPTH];
    int cur_npcs;
    void *fortran_site;          /* set by a Fortran binding for the C wrapper it calls */
    uint64_t fortran_tsc;        /* ... and the binding's entry stamp (0: none) */
    int64_t extra_compute_ps;    /* charged as computation at the next call (clock reads) */
    int64_t wtime_last_ps;       /* the clock as the previous clock read left it */
    int64_t wtime_last_compute_ps;   /* ... and the computation charged by then */
    int wtime_empty_run;         /* the previous clock read found nothing between it and the one before */
    uint64_t call_bytes;
} ms_thr;

MS_HIDDEN extern __thread ms_thr ms_self __attribute__((tls_model("initial-exec")));
/* every file of the runtime says T for the calling thread's own state */
#define T ms_self

/* omp.c: the OpenMP region whose function the calling thread runs (NULL: none) */
struct omp_region;
MS_HIDDEN extern __thread struct omp_region *ms_omp_region __attribute__((tls_model("initial-exec")));
MS_HIDDEN void ms_omp_note_mpi(void);   /* an MPI call inside it */

/* The shim's lock (threads.c). */
MS_HIDDEN void ms_lock_contended(int clock_read);
static inline void ms_lock(int clock_read)
{
    if (S.mt) pthread_mutex_lock(&S.mutex);
    else if (__atomic_exchange_n(&S.busy, 1, __ATOMIC_ACQUIRE)) ms_lock_contended(clock_read);
}
static inline void ms_unlock(void)
{
    if (S.mt) pthread_mutex_unlock(&S.mutex);
    else __atomic_store_n(&S.busy, 0, __ATOMIC_RELEASE);
}
/* In a waiting loop: let other threads in for a moment (spin: yield; else sleep about 50 us). */
MS_HIDDEN void ms_lock_pause(int spin);

typedef struct cs_entry {
    uint64_t key;
    uint64_t pcs[MS_CS_MAX_DEPTH];
    int npcs, fn;
    uint64_t calls, bytes;
    int64_t time_ps;
} cs_entry;


/* Hidden helpers one file of the runtime defines and another calls (their names kept from when
 * they were static in shim.c; hidden, they never meet the program's symbols). */
/* capture.c */
MS_HIDDEN int64_t mono_ns(void);
MS_HIDDEN void trace_flush(void);
MS_HIDDEN void trace_put(uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
MS_HIDDEN void trace_open(void);
/* Capture only (no model server): rank-R.fin in the trace directory while the rank is inside
 * PMPI_Finalize (1 before it, 0 once it returned), so that `mpisim trace` can tell ranks held in
 * the MPI library's shutdown from ranks running the program's own code. */
MS_HIDDEN void trace_mark_finalizing(int inside);
/* The rank is ended from outside (a signal, the model server's ABORT): its records so far, then
 * an UNMODELLED record "STOP <why>", written now. Async-signal-safe. */
MS_HIDDEN void trace_stop(const char *why);
/* What is buffered, written now, async-signal-safe (no stop record: a crash). */
MS_HIDDEN void trace_flush_now(void);
/* callsites.c */
MS_HIDDEN void cs_add(int fn, uint64_t bytes, int64_t time_ps);
MS_HIDDEN void cs_text(const uint64_t *pcs, int n, char *out, size_t len);
MS_HIDDEN void capture_callsite(void *ret, int skip);
MS_HIDDEN void send_callsites(int also_trace);   /* 0: to the server only (PROGRESS) */
/* comms.c */
MS_HIDDEN int comm_attr_delete(MPI_Comm comm, int keyval, void *attr, void *extra);
/* shim.c */
MS_HIDDEN int64_t clock_now(int64_t *mono);
MS_HIDDEN int clock_open_page(void);
MS_HIDDEN int64_t clock_gap(int64_t now, int64_t mono, const void *site, int window);
MS_HIDDEN void clock_gap_start(void);
MS_HIDDEN void clock_anchor(ck_anchor *a);
MS_HIDDEN int64_t clock_unsteal(const ck_anchor *from, int64_t raw_ns);
MS_HIDDEN void flush_out(void);
MS_HIDDEN void ms_rejoin(ms_fn_id fn);                /* a WAIT with MS_WAIT_FLAG_UNTIMED, answered */
/* threads.c */
MS_HIDDEN void ms_thread_register(void);            /* the calling thread's first MPI call (locked) */
MS_HIDDEN int64_t ms_thread_vt_now(void);            /* its virtual time now: clock + its gap so far */
MS_HIDDEN void ms_thread_describe(char *out, size_t len);   /* DESCRIBE: where each waiting thread is */
MS_HIDDEN void ms_threads_finalize_into(ms_msg_finalize *f);
MS_HIDDEN void ms_thread_violation(void);           /* (locked) a call found another thread inside MPI */
/* The calling thread waits outside MPI for other threads (idle: for ones the model sees): what it
 * computed is charged, and it stops holding virtual time back; returns its virtual time. Then it
 * goes on at the latest of that and `floor` (-1: none), rejoining the model. */
MS_HIDDEN int64_t ms_thread_park(int idle, const char *why);
MS_HIDDEN void ms_thread_unpark(int64_t floor);
/* put_msg and wire_put name the thread a message comes from when it changes */
MS_HIDDEN void put_msg(uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
MS_HIDDEN void wire_put(uint32_t type, const void *a, size_t alen, const void *b, size_t blen);   /* server only */
MS_HIDDEN void cpu_list(char *out, size_t len);

#endif
