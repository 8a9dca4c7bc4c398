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
#include <stdint.h>
#include <sys/types.h>

#define MS_CS_MAX_DEPTH 8

typedef struct ms_state {
    int active;                  /* connected to a server; wrappers do their work */
    int init_entered;            /* MPI_Init or MPI_Init_thread was called (the exit hook's question) */
    int finalized;               /* MPI_Finalize returned */
    int exit_sent;               /* the process's exit code went to the server (report_exit) */
    int exit_pid;                /* the process that registered report_exit (not a fork of it) */
    int depth;                   /* nesting of wrapped calls (re-entry guard) */
    int rank, size;
    ms_transport tp;             /* to the model server (transport.h) */
    ms_msg_welcome params;
    int64_t clock_ps;
    int64_t compute_ps, mpi_ps;
    int64_t call_start_ps;
    int64_t last_exit_ns;        /* the rank's clock reading (clock_now) when its last MPI call returned */
    int calibrating;             /* clock_calibrate runs: ms_enter/ms_exit only take their readings */
    int clock_read;              /* the call being entered is a clock read (ms_read_virtual_clock) */
    int64_t calib_enter_ns, calib_exit_ns, calib_mono;
    int64_t last_exit_mono_ns;
    /* the thread's CPU clock without a system call (clock_now): a task-clock perf event's page
     * and its ring buffer of switch records */
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
    ms_msg_charging ck;          /* baselines and counts, sent at MPI_Finalize */
    struct rp_pair *rp;          /* the cold return path's measurements per pair of call sites */
    int64_t cold_trial_ns[16];   /* the last trials of an empty gap right after a switch */
    /* the wrapper window (shim.h): the counter's rate against CLOCK_MONOTONIC, and baselines */
    int tsc_invariant;           /* CPUID: the counter runs at one rate, on every CPU */
    uint64_t tsc_ref;            /* the first (counter, CLOCK_MONOTONIC) pair; 0: none yet */
    int64_t tsc_ref_mono, tsc_last_mono;
    double ns_per_tick;          /* measured; 0: not yet */
    int window_on;               /* the stamps are taken (ms_wrapper_window.lock is set) */
    int window_exit_ok;          /* the last exit reading was on the perf event's own thread */
    uint64_t calib_enter_tsc, calib_exit_tsc;
    int64_t baseline_ticks;      /* an empty window, measured at start */
    int64_t cold_trial_ticks[16];
    int rp_on;                   /* shim.return_path = measured */
    uint64_t calls, unmodelled_calls;
    uint64_t next_req;
    /* the reply a blocked rank waits for */
    int resume_ready;
    int64_t resume_t;
    ms_msg_result *results;
    int results_cap, results_n;
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
    ms_fn_id blocked_fn;
    ms_fn_id cur_fn;             /* the MPI call being handled (stall reports) */
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
    uint64_t cur_pcs[MS_CS_MAX_DEPTH];
    int cur_npcs;
    /* the open MPI_Pcontrol region: level, start, and the site that opened it */
    int pc_level;
    int64_t pc_start_ps;
    uint64_t pc_pcs[MS_CS_MAX_DEPTH];
    int pc_npcs;
    void *fortran_site;          /* set by a Fortran binding for the C wrapper it calls */
    uint64_t fortran_tsc;        /* ... and the binding's entry stamp (0: none) */
    int64_t extra_compute_ps;    /* charged as computation at the next call (MPI_Wtime stalls) */
    int64_t wtime_last_ps;       /* the clock as the previous MPI_Wtime left it */
    int64_t wtime_last_compute_ps;   /* ... and the computation charged by then */
    uint64_t call_bytes;
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
} ms_state;

typedef struct cs_entry {
    uint64_t key;
    uint64_t pcs[MS_CS_MAX_DEPTH];
    int npcs, fn;
    uint64_t calls, bytes;
    int64_t time_ps;
} cs_entry;

MS_HIDDEN extern ms_state ms_shim_state;
/* every file of the runtime says S for it, as shim.c always has */
#define S ms_shim_state

/* Hidden helpers one file of the runtime defines and another calls (their names kept from when
 * they were static in shim.c; hidden, they never meet the program's symbols). */
/* capture.c */
MS_HIDDEN int64_t mono_ns(void);
MS_HIDDEN void trace_flush(void);
MS_HIDDEN void trace_put(uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
MS_HIDDEN void trace_open(void);
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
MS_HIDDEN void put_msg(uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
MS_HIDDEN void wire_put(uint32_t type, const void *a, size_t alen, const void *b, size_t blen);   /* server only */
MS_HIDDEN void cpu_list(char *out, size_t len);

#endif
