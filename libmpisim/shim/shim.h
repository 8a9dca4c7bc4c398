/* Internal interface of the shim (libmpisim.so), shared by the hand-written runtime, the
 * handlers and the generated wrappers. The shim lives inside someone else's program: all state
 * is in one process-wide struct (a preloaded library has no caller to hold a handle), nothing
 * is printed on stdout, and the hot path does not allocate. */
#ifndef MS_SHIM_H
#define MS_SHIM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "protocol.h"
#include "reqtable.h"
#include "wrappers_gen.h"

#if defined(__GNUC__)
#define MS_LIKELY(x) __builtin_expect(!!(x), 1)
#define MS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define MS_LIKELY(x) (x)
#define MS_UNLIKELY(x) (x)
#endif

/* Sends above this size that the model sends eagerly go out from a copy: the real MPI may use
 * its own rendezvous for them, and the program must not wait in the real MPI for a receiver
 * that the model has not yet released. Open MPI's shared-memory eager limit is 4 KiB including
 * its header (a 4096-byte payload already goes rendezvous), TCP's 64 KiB. */
#define MS_REAL_EAGER_SAFE 1024

/* The wrappers' entry and exit read the rank's clock: hidden, so that the calls between the two
 * readings bind directly inside the library instead of through the PLT (no cost charged). */
#define MS_HIDDEN __attribute__((visibility("hidden")))
/* Is this call to be passed straight to the real MPI (re-entry, or the shim is not active)? */
MS_HIDDEN int ms_bypass(void);
/* program_clocks.c: the program's clock reads; the shim's own always go to the host's clock */
MS_HIDDEN int ms_clock_real(int clock, struct timespec *ts);   /* clock: a clockid_t */
MS_HIDDEN void ms_program_clocks_start(void);
MS_HIDDEN int64_t ms_read_virtual_clock(ms_fn_id fn, void *callsite, uint64_t entry_tsc);
/* MPI_Wtime called from callsite (the C wrapper's caller, or the Fortran binding's) */
MS_HIDDEN double ms_wtime_from(void *callsite, uint64_t entry_tsc);
MS_HIDDEN int ms_virtual_clock_on(void);
/* a Fortran binding passes its caller's address for the C wrapper it is about to call (and, from
 * a generated binding, its own entry stamp: the wrapper window starts there) */
void ms_f_callsite(void *ret);
void ms_f_callsite_at(void *ret, uint64_t entry_tsc);
MS_HIDDEN void ms_enter(ms_fn_id fn, void *callsite);
MS_HIDDEN void ms_exit(ms_fn_id fn, int rc);

/* The wrapper window (docs/architecture.md "The wrapper window"), per thread (only the thread of
 * MPI_Init sets the lock: others have no stamps). A wrapper reads the time-stamp
 * counter as its first instruction and again as its last before returning, so that a gap between
 * two MPI calls can be measured over the program's code alone rather than over the shim's way
 * out of its exit reading and into its entry reading: after a switch-out that way costs 2-3x
 * what it costs warm (mispredicted returns, cold lines), and it is not the program's. ms_enter_at
 * uses the stamps only when the task-clock page's lock shows that the thread was not switched
 * out since the exit stamp, so the counter's ticks between them are the thread's CPU time. */
typedef struct ms_window {
    const volatile uint32_t *lock;   /* the task-clock page's lock; NULL: no stamps (yet) */
    uint64_t exit_tsc;               /* the last wrapper's exit stamp; 0: none since the exit reading */
    uint32_t exit_lock;              /* the lock at that stamp */
} ms_window;
MS_HIDDEN extern __thread ms_window ms_wrapper_window __attribute__((tls_model("initial-exec")));

/* The stamps are ordered (the SDM's lfence around rdtsc; the kernel's rdtsc_ordered): a bare
 * rdtsc executes out of order, before the program's last instructions have finished and after
 * its next ones have begun, so a latency-bound loop between two stamps (a dependent chain of
 * multiply-adds) read 180 ns for 250 ns of work: the out-of-order window, up to a few hundred
 * cycles, went uncharged at every gap. An entry stamp waits for the program's instructions
 * before it (lfence; rdtsc); an exit stamp holds the program's next ones back (rdtsc; lfence). */
static inline uint64_t ms_tsc(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_ia32_lfence();
    return __builtin_ia32_rdtsc();
#else
    return 0;   /* no stamps: every gap is measured between the shim's readings */
#endif
}

static inline uint64_t ms_tsc_exit(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t t = __builtin_ia32_rdtsc();
    __builtin_ia32_lfence();
    return t;
#else
    return 0;
#endif
}

/* The wrapper's last act: its exit stamp (the lock first: a switch after it shows at entry). */
static inline void ms_window_exit(void)
{
    const volatile uint32_t *lock = ms_wrapper_window.lock;
    if (lock) {
        ms_wrapper_window.exit_lock = *lock;
        ms_wrapper_window.exit_tsc = ms_tsc_exit();
    }
}

/* Set while the warm path probes the way into the next wrapper (warm_path.c): a generated
 * wrapper entered then, on this thread, returns at once, before anything else. */
MS_HIDDEN extern __thread int ms_probing __attribute__((tls_model("initial-exec")));
/* the generated Fortran bindings (gen_fortran.py), probed like the C wrappers */
MS_HIDDEN extern void (*const ms_fortran_entries[])(void);
MS_HIDDEN extern const int ms_fortran_entry_count;

/* ms_enter with the wrapper's entry stamp (ms_tsc() as its first instruction; 0: none). */
MS_HIDDEN void ms_enter_at(ms_fn_id fn, void *callsite, uint64_t entry_tsc);
/* Is a model server attached (co-simulation), or only a trace being captured? */
int ms_has_server(void);
void ms_trace_resolution(const ms_rq *r);
void ms_unmodelled(ms_fn_id fn);
void ms_unmodelled_done(ms_fn_id fn);
void ms_passthrough(ms_fn_id fn);

/* Clock and costs. */
int64_t ms_now(void);                   /* the rank's virtual clock, ps */
void ms_advance(int64_t ps);
int64_t ms_isend_cost(uint64_t bytes);
int64_t ms_irecv_cost(uint64_t bytes);
int64_t ms_eager_threshold(void);

/* Communicators known to the model. */
uint64_t ms_comm_id(MPI_Comm comm);     /* registers new communicators lazily is NOT allowed: */
/* An intercommunicator's layout in the model's union of its groups (comms.c): the low group's
 * size, this rank's group's first union rank and size, the remote group's, this rank's union rank. */
typedef struct ms_inter {
    int nlow, loff, lsize, roff, rsize, urank;
} ms_inter;
int ms_comm_inter(MPI_Comm comm, ms_inter *x);   /* 1: an intercommunicator (*x filled); 0: intra */
/* The model id and the remote group's offset (0 for an intracommunicator): a remote rank r of
 * an intercommunicator is rank roff + r of the model's communicator. */
uint64_t ms_comm_id_x(MPI_Comm comm, int *roff, int *inter);
void ms_comm_register_intercomm(MPI_Comm inter, int tag);   /* after MPI_Intercomm_create */
int ms_comm_register(MPI_Comm parent, MPI_Comm newcomm); /* call after every creation */
/* MPI_Comm_create_group: the new communicator's id, registered with the model before the real
 * call (only the group's members call it); then ms_comm_attach on the result */
uint64_t ms_comm_prepare_group(MPI_Comm parent, MPI_Group group, int tag);
void ms_comm_attach(MPI_Comm comm, uint64_t id);

/* Requests. */
ms_rq *ms_rq_new(int kind);
void ms_rq_free(ms_rq *r);
ms_rq *ms_rq_find(MPI_Request user);
void ms_rq_index(ms_rq *r);             /* make r findable by r->user */
void ms_rq_unindex(ms_rq *r);
uint64_t ms_next_req_id(void);

/* Reports to the server (buffered) and blocking exchanges. */
/* to_self: the destination is the rank itself (no local completion; ends a lookahead window) */
void ms_report_isend(ms_rq *r, int dst, int tag, uint64_t bytes, int mode, int to_self, ms_fn_id fn);
void ms_report_irecv(ms_rq *r, int src, int tag, uint64_t bytes, ms_fn_id fn);
/* What the model and the trace get for a user buffer (bufid.c): an identity that does not depend
 * on where malloc put it; 0: unknown. */
uint64_t ms_buffer_identity(const void *buf, uint64_t bytes);
void ms_report_cancel(const ms_rq *r, ms_fn_id fn);
void ms_report_free(const ms_rq *r, ms_fn_id fn);
/* In- and out-degree of comm's process topology; returns its kind (MPI_CART, ...) or -1 if none. */
int ms_topo_degrees(MPI_Comm comm, int *nin, int *nout);   /* the model forgets it once complete */
/* A message the real MPI delivered to a receive the model cancelled is kept, and given to the
 * next receive posted for its source and tag (which the model matches it to). */
void ms_stash_keep(const ms_rq *cancelled);
int ms_post_real_recv(ms_rq *r);         /* PMPI_Irecv, or from the stash */
void ms_report_icoll(ms_rq *r, int kind, int root, uint64_t bytes, const uint64_t *counts, int ncounts,
                     ms_fn_id fn);
/* An intercommunicator's collective, on the model's union of its groups (ms_coll_args.inter_low). */
void ms_report_icoll_inter(ms_rq *r, int kind, int root, uint64_t bytes, const uint64_t *counts, int ncounts,
                           int inter_low, ms_fn_id fn);
/* Block in the model until the requests complete (mode: ms_wire_wait_mode, protocol.h).
 * On return the clock is the resume time and results[i] tells about reqs[i]. */
void shim_wait_for(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn);
/* The same, for a collective whose members must all leave at the same virtual time. */
void shim_wait_sync(ms_rq *r, ms_fn_id fn);
/* shim_wait_for around a real blocking call: real(arg) runs once the WAIT has gone to the
 * server (the model holds the rank, which no longer holds the horizon back) and before the
 * resume is awaited, so that a real call waiting for other ranks never waits on a rank that the
 * model cannot move while this one holds its clock (docs/architecture.md "Keeping the real MPI
 * moving"). Returns what real returned. */
int shim_wait_around(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn,
                         int (*real)(void *arg), void *arg);
/* A one-sided operation (ms_model_rma): request id, the window's communicator, target, kind. */
void ms_report_rma(uint64_t id, uint64_t win_comm, int target, int kind, uint64_t bytes, uint64_t result_bytes,
                   ms_fn_id fn);
/* handlers.c: bytes of count elements of dt; the program's handle for r (the real request, or a
 * generalized request standing in for it) */
uint64_t ms_type_bytes(MPI_Datatype dt, int count);
void ms_give_handle(ms_rq *r, MPI_Request *request);
/* rma.c: a completed MPI_Rput... request leaves its window's list; a freed one becomes one of the
 * window's operations, which its next synchronisation completes */
void ms_rma_request_done(ms_rq *r);
void ms_rma_request_freed(ms_rq *r);
/* comms.c: the model communicator of a new window on comm (its group, an id of its own) */
uint64_t ms_comm_register_window(MPI_Comm comm);
void ms_block_probe(MPI_Comm comm, int src, int tag, int blocking, ms_msg_result *result, ms_fn_id fn);

/* Real-MPI side. */
void ms_post_deferred(void);            /* post every held-back receive the model has matched */
int ms_real_complete(ms_rq *r);         /* finish the real operation, keeping the server served */
void ms_progress(void);                 /* drive the real MPI's progress once */
/* Must a receive of (src, tag) on comm be held back from the real MPI? Yes when an earlier
 * held-back receive on comm could take the same message (the real MPI would match in posting
 * order what the model may match otherwise). */
int ms_recv_must_defer(uint64_t comm_id, int src, int tag);
void ms_defer_recv(ms_rq *r);
/* Every loop that waits for the real MPI calls ms_real_wait_step once per round: it reads the
 * server (decisions that release held-back receives a peer's transfer may need, an abort), posts
 * the receives they release, drives the real MPI, and keeps the stall watchdog
 * (shim.stall_timeout): a wait that sees nothing complete for that long tells the server where it
 * is (call, peer, tag, call site). Zero the state before the loop; call ms_real_wait_end after. */
typedef struct ms_real_wait {
    unsigned spins;
    int64_t since_ns;
    int stalled;
} ms_real_wait;
void ms_real_wait_step(ms_real_wait *w, const ms_rq *r);
void ms_real_wait_end(ms_real_wait *w);
void ms_detach_send(ms_rq *r);          /* the program is done with it; the shim completes it */

/* Fatal errors inside the program: one line on stderr, then abort the MPI job. */
void ms_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
