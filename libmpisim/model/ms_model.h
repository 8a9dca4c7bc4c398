/* The MPI layer model: MPI semantics in virtual time on top of a netmodel network.
 *
 * One engine for both front ends: the model server feeds it the events live ranks report,
 * replay feeds it recorded events, both through the driver (libmpisim/driver/ms_driver.h), the
 * one caller of the posts and waits below. It knows nothing about sockets, files or the real MPI.
 *
 * Ranks are world ranks 0..nranks-1. Requests are identified per rank by a 64-bit id the caller
 * chooses (the shim uses a per-rank counter). Times are int64 picoseconds. Every post carries the
 * rank's virtual clock at the call; posts of one rank come in non-decreasing time.
 *
 * Driving: the caller posts events, then calls ms_model_run_until(H) with the conservative
 * horizon H (no event with time >= H is processed). A rank that called ms_model_wait() is
 * blocked until the model calls the resume callback for it.
 */
#ifndef MS_MODEL_H
#define MS_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "netmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int64_t ms_time_t;
typedef struct ms_model ms_model;

#define MS_ANY_SOURCE (-1)
#define MS_ANY_TAG (-1)
#define MS_PROC_NULL (-2)

/* Communicator ids: 0 is MPI_COMM_WORLD (identity map), 1 is MPI_COMM_SELF (each rank alone).
 * Others are registered with ms_model_comm_add by every member (same id, same member list). */
#define MS_COMM_WORLD 0ULL
#define MS_COMM_SELF 1ULL

typedef enum { MS_SEND_STANDARD = 0, MS_SEND_SYNC, MS_SEND_READY, MS_SEND_BUFFERED } ms_send_mode;

typedef enum {
    MS_COLL_BARRIER = 0, MS_COLL_BCAST, MS_COLL_REDUCE, MS_COLL_ALLREDUCE, MS_COLL_GATHER,
    MS_COLL_SCATTER, MS_COLL_ALLGATHER, MS_COLL_ALLTOALL, MS_COLL_REDUCE_SCATTER,
    MS_COLL_SCAN, MS_COLL_EXSCAN, MS_COLL_GATHERV, MS_COLL_SCATTERV, MS_COLL_ALLGATHERV,
    MS_COLL_ALLTOALLV, MS_COLL_NEIGHBOR, MS_COLL_COUNT
} ms_coll_kind;

/* Arguments of a collective, as seen by one member. `bytes` is this member's message size in
 * the sense MPICH uses to choose the algorithm (bcast: the buffer; reduce/allreduce/scan: the
 * vector; gather/scatter/allgather/alltoall: one block, i.e. what one rank contributes to one
 * peer). `counts`, for the v-variants only, holds `comm size` per-peer byte counts (NULL
 * otherwise); for gatherv/scatterv they are the root's per-member blocks. */
typedef struct ms_coll_args {
    ms_coll_kind kind;
    int root;                     /* comm rank; ignored where there is no root */
    uint64_t bytes;
    const uint64_t *counts;
    size_t ncounts;               /* entries in counts (checked: a short list is an error) */
    int inter_low;                /* 0; an intercommunicator's collective: the size of its low group */
} ms_coll_args;
/* Count 0 (or a zero-size datatype): as in MPICH, a collective that moves nothing posts nothing
 * and completes at its post time (a barrier excepted; neighbourhood collectives still send their
 * empty messages). MS_COLL_ALLTOALLV: counts are the member's send counts to each peer, then its
 * receive counts from each (2 x size; peers with both zero exchange nothing); a list of size
 * entries (send counts only, older traces) exchanges a message with every peer.
 * Intercommunicators: the communicator is the union of the two groups, the low group's members
 * first (comm ranks 0..inter_low-1), and the collective is MPICH's intercommunicator algorithm
 * (ms_coll.h ms_coll_spec); root is the root's comm rank at every member of the other group and
 * at the root itself (MPI_ROOT), MS_COLL_ROOT_NONE (-2) at the root's group's other members
 * (MPI_PROC_NULL). Lists: gatherv/scatterv the root's count per remote member; allgatherv the
 * receive count per remote member; alltoallv send then receive counts per remote member;
 * reduce_scatter the receive count per member of the own group. */
/* MS_COLL_NEIGHBOR (MPI_Neighbor_* and MPI_Ineighbor_*, any variant): this member's lists,
 * counts = {indegree, outdegree, in-neighbour comm ranks [indegree], bytes received from each
 * [indegree], out-neighbour comm ranks [outdegree], bytes sent to each [outdegree]}; MPI_PROC_NULL
 * neighbours are left out by the caller. Played as MPICH does: every receive and send posted at
 * once, complete when all are. */

typedef enum {
    MS_WAIT_ALL = 0, MS_WAIT_ANY, MS_WAIT_SOME, MS_TEST_ALL, MS_TEST_ANY, MS_TEST_SOME,
    MS_TEST_PEEK   /* MPI_Request_get_status: as MS_TEST_ALL, but a completed request stays */
} ms_wait_mode;

/* What the model says about one request when a rank resumes. */
typedef struct ms_req_result {
    uint64_t req;
    int completed;                /* 1 if complete by the resume time */
    int source;                   /* comm rank that matched (receives), else -1 */
    int tag;                      /* matched tag (receives), else -1 */
    uint64_t bytes;               /* bytes received (receives) or sent */
    ms_time_t complete_time;      /* when it completed in the model */
    int cancelled;                /* completed by a successful MPI_Cancel (no message received) */
} ms_req_result;

/* A wildcard receive (or probe) of `rank` whose sender has been decided. Every resume of a rank
 * is preceded by these notices so that the shim can post the real receive for exactly that
 * source and tag, in posting order. */
typedef struct ms_resolution {
    uint64_t req;
    int source;                   /* comm rank */
    int tag;
    uint64_t bytes;
} ms_resolution;

/* The model resumes a blocked rank at time `t` (the time its MPI call returns). `results` has
 * one entry per request given to ms_model_wait, in the same order (for probes: one entry with
 * the probe's finding; completed = 0 means "nothing there" for Iprobe). */
typedef void (*ms_resume_fn)(void *user, int rank, ms_time_t t, const ms_req_result *results, size_t n);

/* Create over an existing network (the model does not own it). rank_to_host maps each world
 * rank to a host of the topology (NULL: rank i on host i). Registers its configuration keys
 * (section [mpi]) in cfg via ms_model_register_keys() before the profile is loaded. */
int ms_model_register_keys(nm_config *cfg, char *err, size_t errlen);
ms_model *ms_model_create(const nm_config *cfg, nm_network *net, int nranks, const int *rank_to_host,
                          char *err, size_t errlen);
void ms_model_destroy(ms_model *m);
void ms_model_set_resume(ms_model *m, ms_resume_fn fn, void *user);

int ms_model_comm_add(ms_model *m, uint64_t comm, int size, const int *world_ranks, char *err, size_t errlen);

/* Host CPU cost of the call itself, added by the caller to the rank's clock before it goes on
 * (an Isend returns after its send overhead). Same functions used live and in replay. */
ms_time_t ms_model_isend_cost(const ms_model *m, uint64_t bytes);
ms_time_t ms_model_irecv_cost(const ms_model *m, uint64_t bytes);

/* Nonblocking posts: the rank goes on. dst/src/root are comm ranks. Return 0 or negative error
 * (message in err). MS_PROC_NULL peers complete at once. */
int ms_model_isend(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, int dst, int tag,
                   uint64_t bytes, ms_send_mode mode, char *err, size_t errlen);
int ms_model_irecv(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, int src, int tag,
                   uint64_t bytes, char *err, size_t errlen);
int ms_model_icoll(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm,
                   const ms_coll_args *args, char *err, size_t errlen);
/* One-sided communication (README.md "One-sided communication"). An operation of `rank` on the
 * window whose group is communicator `comm` (the window's own: every member registers it), to
 * `target` (a comm rank; MS_PROC_NULL: complete at once), carrying `bytes` to the target and
 * `result_bytes` back (a get's data, the old value of a fetching atomic). It is an RDMA transfer
 * on the network and host model: the origin's CPU spends the send overhead of `bytes` (what
 * ms_model_isend_cost says, added by the caller to the rank's clock); the target's NIC writes it,
 * or reads what a get asks for, and answers with no target CPU (host.rma_progress = nic), or the
 * target's CPU does it inside an MPI call (in_call); request `req` completes when the answer (an
 * acknowledgement, or the result) is back at the origin plus the receive overhead of a zero-byte
 * message (the origin takes the completion). Between ranks of one node the origin's CPU does the
 * operation itself through shared memory. Lock requests and unlocks are operations too: a lock of
 * (window, target) is granted in the order its requests reach the target, shared ones together,
 * an exclusive one alone; the request completes when the grant is back. */
typedef enum {
    MS_RMA_PUT = 0, MS_RMA_GET, MS_RMA_ACCUMULATE, MS_RMA_GET_ACCUMULATE, MS_RMA_FETCH_AND_OP,
    MS_RMA_COMPARE_AND_SWAP, MS_RMA_LOCK_SHARED, MS_RMA_LOCK_EXCLUSIVE, MS_RMA_UNLOCK, MS_RMA_KIND_COUNT
} ms_rma_kind;
int ms_model_rma(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, int target, ms_rma_kind kind,
                 uint64_t bytes, uint64_t result_bytes, char *err, size_t errlen);
const char *ms_model_rma_name(ms_rma_kind kind);   /* "MPI_Put", ..., "lock (exclusive)", "unlock" */
/* MPI_Cancel of an active request at time t. A receive no message has matched by t (in virtual
 * time) is taken back: it completes at t with `cancelled` set and nothing received; otherwise
 * it completes normally. Sends are never taken back (the standard lets a cancel fail). */
int ms_model_cancel(ms_model *m, int rank, ms_time_t t, uint64_t req, char *err, size_t errlen);
/* MPI_Request_free of an active send: nobody will wait for it; the model drops it when it
 * completes (at once if it has). The send still happens. Receives and collectives: an error. */
int ms_model_forget(ms_model *m, int rank, uint64_t req, char *err, size_t errlen);

/* Block the rank until the requests complete (WAIT_*), or answer at once for the rank's time
 * (TEST_*: the answer is for time t, plus the modelled poll cost). Completed requests are
 * forgotten after the resume. */
int ms_model_wait(ms_model *m, int rank, ms_time_t t, ms_wait_mode mode, size_t n, const uint64_t *reqs,
                  char *err, size_t errlen);
/* Probe (blocking = 1) or Iprobe (blocking = 0) for (src, tag) on comm. */
int ms_model_probe(ms_model *m, int rank, ms_time_t t, uint64_t comm, int src, int tag, int blocking,
                   char *err, size_t errlen);
/* The rank has finished (MPI_Finalize, or it died): it will post nothing more. */
int ms_model_finalize(ms_model *m, int rank, ms_time_t t);

size_t ms_model_take_resolutions(ms_model *m, int rank, ms_resolution *out, size_t max);
/* Addition: the `req` of a resolution made by a wildcard MPI_Probe/MPI_Iprobe (which has no
 * request); source/tag/bytes are those of the probe's result. */
#define MS_RESOLUTION_PROBE UINT64_MAX
/* The receive `req` of `rank` (just posted with ms_model_irecv) also gets a resolution when it is
 * matched, although it names its source and tag: the shim holds it back from the real MPI behind
 * an undecided wildcard and posts it once the model has matched it (the driver's
 * MS_EV_FLAG_NOTIFY). Returns 0, or -1 if no such receive is active. */
int ms_model_irecv_notify(ms_model *m, int rank, uint64_t req);
/* The user buffer of a send or receive `req` of `rank` just posted, for the host model's memory
 * registration cache (host.reg_cache; the driver's event field `buf`). Requests without one count
 * as an unknown buffer, taken as reused. Returns 0, or -1 if no such send or receive is active. */
int ms_model_buffer(ms_model *m, int rank, uint64_t req, uint64_t addr);

/* Conservative driving. */
ms_time_t ms_model_next_time(const ms_model *m);       /* NM_TIME_NEVER when nothing pending */
int ms_model_run_until(ms_model *m, ms_time_t limit);  /* process every event with time < limit */
/* The model's present time: the latest instant it has processed (its own events and the
 * network's). A rank may post from this time on, never before it. */
ms_time_t ms_model_now(const ms_model *m);

/* ---- Local answers (docs/architecture.md "Local answers") --------------------------------
 * What the shim may answer itself, exactly as the model would. */
/* When `rank`'s CPU is free in the model (the end of its last send overhead), if only the
 * rank's own posts can move it from now on; -1 otherwise (collectives outstanding, or receives
 * outstanding under host registration costs). */
ms_time_t ms_model_cpu_free(const ms_model *m, int rank);
/* Whether an eager standard send to another rank completes at max(t, cpu free) + send overhead
 * + llround(*copy_ps_per_byte * bytes) (0 for a rate of 0) for every pair of ranks; 0 when the
 * copy depends on the pair or on other ranks' copies (host.shm_memory_rate on shared nodes).
 * *recv_moves_cpu: a receive's match may move the CPU (host registration costs). */
int ms_model_local_send(const ms_model *m, double *copy_ps_per_byte, int *recv_moves_cpu);
/* Lookahead: `rank` was told at t that none of `reqs` had completed (a Test*), or (probe) that
 * no message matched its Iprobe. Returns a time before which the same question gets the same
 * answer whatever is pending in the model, provided that ranks (itself included) act no earlier
 * than the caller's bounds plus *lat: the least delay between a rank's action (a post, a resume)
 * and a change it can make to those requests or that probe's messages (a send overhead for
 * receives and probes; 0 when `rank` has a send waiting for its receiver's answer among them).
 * t or less: no promise. Not while the model runs. */
ms_time_t ms_model_quiet_until(const ms_model *m, int rank, ms_time_t t, const uint64_t *reqs, size_t n,
                               int probe, ms_time_t *lat);

/* Per-rank accounting and diagnostics. */
typedef struct ms_rank_stats {
    uint64_t msgs_sent, bytes_sent, msgs_recv, bytes_recv;   /* user point-to-point + collectives' */
    uint64_t coll_calls;
    uint64_t rma_ops, rma_bytes;   /* one-sided operations it started (locks included) and their bytes both ways */
} ms_rank_stats;
void ms_model_rank_stats(const ms_model *m, int rank, ms_rank_stats *out);
int ms_model_rank_blocked(const ms_model *m, int rank);
/* Requests the model holds (posted and not yet reported complete or freed): leak checks. */
size_t ms_model_active_requests(const ms_model *m);
/* The node of the host model a rank sits on (host.ranks_per_node, host.map_by); -1: no such rank. */
int ms_model_rank_node(const ms_model *m, int rank);
/* One line describing what a blocked rank waits for (deadlock reports). */
int ms_model_describe_wait(const ms_model *m, int rank, char *buf, size_t len);

/* ---- Parameters, errors and diagnostics ------------------------------------------------- */

/* The [mpi] parameters in force (for the shim's WELCOME, reports and run records). */
typedef struct ms_model_params {
    int64_t eager_threshold;                        /* B */
    int64_t send_overhead, send_overhead_per_byte;  /* ps, ps/B */
    int64_t recv_overhead, recv_overhead_per_byte;  /* ps, ps/B */
    int64_t gap;                                    /* ps */
    int64_t packet_payload, envelope_bytes, control_bytes;   /* B */
    int64_t poll_cost;                              /* ps */
    int64_t reduce_cost_per_byte;                   /* ps/B */
} ms_model_params;
void ms_model_get_params(const ms_model *m, ms_model_params *out);
/* Errors met while running (a failed injection, a dropped packet, out of memory): NULL when
 * none; otherwise the last message, and the count in *count if given. The model keeps going
 * (a failed packet is delivered at once) so the caller decides whether to abort. */
const char *ms_model_last_error(const ms_model *m, uint64_t *count);
/* Injections moved later to the network's current time (only possible with zero send/receive
 * overheads; see README.md). 0 in any normal configuration. */
uint64_t ms_model_clamped_injections(const ms_model *m);
/* Name of the algorithm this model plays for a collective of this size/message ("binomial"...). */
const char *ms_model_coll_algorithm(const ms_model *m, ms_coll_kind kind, int size, uint64_t bytes,
                                    const uint64_t *counts);

#ifdef __cplusplus
}
#endif
#endif
