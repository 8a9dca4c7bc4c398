/* Private to the MPI layer model (ms_model*.c): its structures, small inline helpers, and the
 * functions its files share (prefix msm_). Not included outside libmpisim/model. */
#ifndef MS_MODEL_INTERNAL_H
#define MS_MODEL_INTERNAL_H

#include "ms_model.h"
#include "ms_coll.h"
#include "ms_host.h"
#include "ms_util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEVER NM_TIME_NEVER
/* ---- internal structures --------------------------------------------------------------------- */

enum { REQ_SEND = 1, REQ_RECV, REQ_COLL, REQ_RMA };
enum { PK_DATA = 0, PK_RTS, PK_CTS, PK_ACK, PK_FIN };   /* 3 bits of a packet's cookie */
#define PK_RMA 5   /* not a packet: a held turn of a one-sided operation at its target (host.rma_progress) */
#define PK_BITS 3
enum { EV_SEND_POST = 1, EV_RECV_POST, EV_COLL_STEP, EV_PROBE, EV_INJECT, EV_RESUME, EV_CANCEL, EV_NIC, EV_PKT, EV_MCAST, EV_PROGRESS,
       EV_RMA_POST };
enum { W_NONE = 0, W_WAIT, W_TEST, W_PROBE, W_IPROBE };

/* Event order classes at equal times: internal model events and posts go before the network's
 * events of that time, observers (resumes: waits, tests, probes) after them. */
#define CLS_INTERNAL 0ULL
#define CLS_POST 1ULL
#define CLS_RESUME 2ULL
#define ORDER_CLASS(o) ((o) >> 62)
#define RANK_SHIFT 38
#define LOW38 ((1ULL << RANK_SHIFT) - 1)
#define MAX_RANKS (1 << 24)

typedef struct ms_mq ms_mq;
typedef struct coll_member coll_member;

typedef struct ms_req {
    uint64_t id;
    int rank;                 /* world rank of the owner */
    uint8_t kind, internal, in_wait, mode;
    uint8_t cancelled;        /* a receive MPI_Cancel took back before any message matched it */
    uint8_t forget;           /* MPI_Request_free: nobody waits; drop it when it completes */
    uint8_t notify;           /* push a resolution when matched, even with source and tag named */
    uint8_t into_sent;        /* a collective's receive into what its member sent before (COPY_SHARED_PB) */
    uint8_t open;             /* a send that waits for its receiver's answer (ACK, CTS): counted in open_sends */
    uint16_t thread;          /* the rank's thread that posted it (its CPU: overheads, registration) */
    uint16_t wthread;         /* while in_wait: the thread waiting for it */
    uint64_t comm;
    int32_t ctx;              /* matching context */
    int peer;                 /* comm rank, MS_ANY_SOURCE or MS_PROC_NULL */
    int peer_world_cache;     /* world rank of peer (-1 for wildcards / PROC_NULL) */
    int64_t tag;
    uint64_t bytes;
    uint64_t buf;             /* the user's buffer address (registration cache), 0 unknown */
    ms_time_t post, done;     /* done = NEVER until decided */
    int m_src;
    int64_t m_tag;
    uint64_t m_bytes;
    uint64_t post_seq;
    ms_mq *mq;                /* posted queue while unmatched */
    struct ms_req *qn, *qp;
    coll_member *cm;
    uint32_t pidx;
} ms_req;

typedef struct ms_msg {
    uint32_t idx;
    int pending;              /* references: awaiting match, scheduled injections, packets in flight */
    int src, dst, sh, dh;     /* world ranks, hosts */
    int32_t ctx;
    int src_c;                /* sender's comm rank */
    int64_t tag;
    uint64_t bytes;
    uint8_t mode, rndv;
    uint8_t copied;           /* intra-node eager: the sender copied it into shared memory in its call */
    uint8_t ack_taken;        /* an ':ack' segment's eager send: completes when the receive has */
    uint8_t fin_in;           /* host.rndv_fin = 2: the FIN came before the put's last packet (other port) */
    uint8_t rma;              /* RMA_OP: a one-sided operation to its target; RMA_RESP: its result back */
    uint8_t rma_kind;         /* ms_rma_kind */
    ms_req *sreq, *rreq;
    ms_time_t local_done;     /* end of the send overhead */
    ms_time_t data_ready;     /* rendezvous: the sender's buffer is registered (its data may go) */
    uint32_t pkts_left;
    ms_time_t arrival;
    ms_mq *mq_src, *mq_any;   /* unexpected queues while unmatched */
    struct ms_msg *sn, *sp, *an, *ap;   /* sn also links messages parked for in-order arrival */
    uint64_t cseq;            /* message start number on its (node, node) connection */
} ms_msg;

/* Host NIC send queues (ms_host.h does the timing): packets leave one at a time, responses (CTS,
 * ACK) first, then message starts (eager data, RTS) in posting order, then rendezvous data. A
 * response thus waits for one packet, not for a whole message going the other way. */
enum { NQ_RESP = 0, NQ_START, NQ_BULK, NQ_COUNT };
/* Eager messages of one multicast bcast step (equal sizes, one sender): their data goes out as one
 * switch multicast per packet (nm_network_inject_multicast). */
typedef struct mc_group {
    uint32_t n;
    int *dst;                 /* destination hosts of the current packet */
    uint64_t *cookie;
    uint32_t msg[];
} mc_group;

typedef struct nic_job {
    uint32_t msg;
    uint8_t kind;
    uint32_t left;            /* packets still to send */
    uint64_t off;             /* bytes already sent (data) */
    mc_group *grp;            /* a multicast: msg is its first message */
} nic_job;
typedef struct nic_queue {
    nic_job *v;
    size_t head, n, cap;
} nic_queue;
typedef struct nic_state {
    nic_queue q[NQ_COUNT];
    int busy;                 /* an EV_NIC is scheduled */
    /* A packet train in the network (docs/architecture.md "Packet trains"): the next tr_n -
     * tr_taken packets of the head job of q[tr_cls] are in it already; the EV_NICs that take them
     * wait in m->tev, which the network may run past, and only check that the NIC's timing is the
     * one the train was injected with. A job pushed ahead of it cuts the train. */
    uint8_t tr_on, tr_cls;
    uint32_t tr_msg, tr_n, tr_taken;
    int tr_from;
    uint64_t tr_cookie;
    ms_time_t tr_w0, tr_period, tr_after;   /* wire times w0 + i period; the NIC's take after it */
} nic_state;
/* Message starts of one (sender node, receiver node) pair, for in-order arrival when packets
 * spread over several ports and may overtake each other (GM delivers in order per connection). */
typedef struct ms_conn {
    uint64_t sent, next;      /* starts numbered at the sender; next expected at the receiver */
    struct ms_msg *parked;    /* arrived out of order, by cseq */
    uint32_t pidx;
} ms_conn;

struct ms_mq {                /* per (context, receiver, source or ANY) */
    uint64_t k1, k2;
    ms_req *ph, *pt;          /* posted receives, posting order */
    ms_msg *uh, *ut;          /* unexpected messages, arrival order (s-links or a-links) */
    uint32_t pidx;
    int any;
};

typedef struct ms_comm {
    uint64_t id;
    int size, idx, self;
    int *members;             /* NULL for world and self */
    uint64_t *coll_seq;       /* per member (world: per rank; self: per world rank) */
} ms_comm;

struct coll_member {
    ms_req *req;
    int rank, crank;
    ms_comm *comm;
    int32_t ctx;
    int64_t tag;
    ms_coll_kind kind;
    ms_coll_plan plan;
    size_t step;
    uint32_t pending;
    ms_time_t step_start, step_max;
};

/* One thread of a rank as the model sees it: what it is blocked in, and its CPU. A rank has one
 * (thread 0) unless its threads call MPI at once (MPI_THREAD_MULTIPLE: ms_model_set_thread), each
 * then blocking in its own wait or probe and paying its own overheads on its own CPU, while
 * matching, requests and the node stay the rank's. */
typedef struct waiter {
    int thread;
    int blocked;
    int wkind;
    ms_wait_mode wmode;
    ms_time_t wt, wmax, sched;
    uint64_t gen;
    size_t wn, wcap, nundet;
    ms_req **wreqs;
    ms_req_result *res;
    size_t rescap;
    /* probe */
    int32_t pctx;
    uint64_t pcomm;
    int psrc;
    int64_t ptag;
    int parmed, pfound, pf_src;
    int64_t pf_tag;
    uint64_t pf_bytes;
    ms_time_t pf_time;
    ms_time_t cpu_free;       /* when its CPU is free: the end of its last send overhead or registration */
} waiter;

typedef struct rank_state {
    int host;
    ms_time_t copy_free;      /* its CPU copies rendezvous data into its buffer until (intra-node) */
    uint64_t cnt;             /* per-rank sequence for post/resume ordering */
    int finalized;
    uint64_t gen;             /* resumes scheduled (each waiter's has its own number) */
    waiter w0;                /* thread 0 */
    waiter **wx;              /* threads 1..nwx (NULL: not seen yet) */
    int nwx, cur;             /* ... and the thread the posts and waits come from now */
    ms_req **win;             /* active requests by id modulo REQ_WIN (req_find), allocated at the first */
    /* turns waiting for this host to enter the MPI library (host.rndv_progress, host.rma_progress =
     * in_call): (message index << PK_BITS) | kind, PK_CTS to send, PK_DATA to start, PK_RMA to do */
    uint64_t *turns;
    size_t nturns, capturns;
    int progress_pending;     /* an EV_PROGRESS of this rank is queued */
    ms_time_t fin_t;          /* when it called MPI_Finalize (which makes progress until the end) */
    /* lookahead (ms_model_quiet_until) and local sends (ms_model_cpu_free) */
    uint32_t open_sends;      /* sends, user or internal, waiting for an answer from their receiver */
    uint32_t active_recvs, active_colls;   /* the program's receives and collectives the model holds */
    ms_time_t unexp_first;    /* first message that went unexpected here since the last Iprobe answer */
    /* wildcard resolutions not yet taken */
    ms_resolution *resol;
    size_t rhead, rn, rcap;
    ms_rank_stats st;
    /* the buffers of its last rendezvous sends on its node, which the receiver's core copied
     * straight from them (a receive into one of them writes lines that core holds) */
#define SENT_RING 4
    uint64_t sent_at[SENT_RING], sent_len[SENT_RING];
    unsigned sent_next;
} rank_state;

/* One segment of mpi.size_segments: the costs of messages of `from` bytes and more. */
#define MS_MAX_SEGMENTS 16
typedef struct ms_segment {
    uint64_t from;
    double os, os_pb, or_, or_pb, copy_pb;   /* ps, ps per byte; copy_pb < 0: host.shm_copy_rate */
    double copy_shared_pb;   /* the copy into lines another core holds (< 0: copy_pb) */
    int ack;
} ms_segment;

struct ms_model {
    /* parameters */
    int64_t eager_thr, o_s, o_r, o_s_pb, o_r_pb, gap, pkt_payload, env_bytes, ctl_bytes, poll, red_pb;
    int64_t or_unexp, or_unexp_pb;   /* an eager receive posted after its message arrived: more o_r */
    int64_t coll_call[MS_COLL_COUNT];   /* a collective call's own path on each member (ps; by kind) */
    ms_segment seg[MS_MAX_SEGMENTS];
    int nseg;
    int recv_serial;          /* mpi.recv_overhead_serial */
    int coll_alg[MS_COLL_COUNT];
    nm_network *net;
    int nranks, nhosts;
    rank_state *ranks;
    ms_time_t *nic_free;
    ms_host *host;
    nic_state *nic;           /* per node */
    int ports;
    cm_hmap conns;
    ms_pool connpool;
    ms_resume_fn resume;
    void *user;
    ms_heap heap;
    uint64_t seq0, post_seq;
    cm_hmap reqs, comms, cranks, mqs;   /* reqs: the active requests no rank's window holds */
    size_t nreqs;                       /* active user requests */
    size_t mq_limit;          /* match queues kept (empty ones too) before a sweep of the empty ones */
    int tn_valid;             /* in ms_model_run_until: tn_cache = nm_network_next_time (no inject or run since) */
    ms_time_t tn_cache;
    ms_pool msgs, reqpool, mqpool;
    ms_comm **commv;
    size_t ncomms, capcomms;
    ms_time_t now, stop;
    int in_run, in_cb;
    uint64_t errors, clamped;
    char last_err[768];
    mc_group *mc_collect;     /* while a multicast bcast step posts its sends: its eager messages */
    ms_time_t mc_tinj;
    int mc_ok;                /* the network multicasts (nm_network_has_multicast) */
    int trains_ok;            /* mpi.packet_trains, and the network and hosts allow them */
    ms_event *tev;            /* EV_NICs of trains (nic_state), at most one per node */
    size_t ntev, captev;
    cm_hmap locks;            /* one-sided locks by (window's context, target world rank): rma_lock */
    int rma_in_call;          /* host.rma_progress = in_call */
};

static inline void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
static inline void model_error(ms_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void model_error(ms_model *m, const char *fmt, ...)
{
    m->errors++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->last_err, sizeof m->last_err, fmt, ap);
    va_end(ap);
}

static inline ms_time_t tmax(ms_time_t a, ms_time_t b) { return a > b ? a : b; }
static inline waiter *wt_of(rank_state *rs, int thread)
{
    return thread > 0 && thread <= rs->nwx && rs->wx[thread - 1] ? rs->wx[thread - 1] : &rs->w0;
}
static inline waiter *wt_cur(rank_state *rs) { return wt_of(rs, rs->cur); }
/* the rank's waiters: thread i = 0..nwx (NULL for a thread not seen yet) */
static inline waiter *wt_at(rank_state *rs, int i) { return i == 0 ? &rs->w0 : rs->wx[i - 1]; }
/* The segment of mpi.size_segments a message of b bytes falls in, or NULL (the scalar keys). */
static inline const ms_segment *segment_of(const ms_model *m, uint64_t b)
{
    for (int i = m->nseg - 1; i >= 0; i--)
        if (b >= m->seg[i].from) return &m->seg[i];
    return NULL;
}
static inline ms_time_t seg_cost(double c, double pb, uint64_t b)
{
    double v = c + pb * (double)b;
    return v > 0 ? (ms_time_t)llround(v) : 0;
}
/* The send overhead the caller adds to its clock (ms_model_isend_cost): the scalar keys, linear
 * in the size, which the shim also computes by itself; a segment's larger o_s(B) is the rest of
 * the sender's time in the call (seg_send_extra), like a copy: the send completes after it. */
static inline ms_time_t os_cost(const ms_model *m, uint64_t b) { return m->o_s + (ms_time_t)b * m->o_s_pb; }
static inline ms_time_t seg_send_extra(const ms_model *m, uint64_t b)
{
    const ms_segment *s = m->nseg ? segment_of(m, b) : NULL;
    if (!s) return 0;
    ms_time_t c = seg_cost(s->os, s->os_pb, b) - os_cost(m, b);
    return c > 0 ? c : 0;
}
static inline ms_time_t or_cost(const ms_model *m, uint64_t b)
{
    const ms_segment *s = m->nseg ? segment_of(m, b) : NULL;
    return s ? seg_cost(s->or_, s->or_pb, b) : m->o_r + (ms_time_t)b * m->o_r_pb;
}
/* the intra-node copy of b bytes: the segment's rate, else host.shm_copy_rate (-1) */
static inline ms_time_t seg_copy(const ms_model *m, uint64_t b)
{
    const ms_segment *s = m->nseg ? segment_of(m, b) : NULL;
    return s && s->copy_pb >= 0 ? seg_cost(0, s->copy_pb, b) : -1;
}
/* the same when `shared` of its b bytes go into lines another core holds (the receive buffer was
 * the source of a rendezvous that core copied): those at COPY_SHARED_PB */
static inline ms_time_t seg_copy_shared(const ms_model *m, uint64_t b, uint64_t shared)
{
    const ms_segment *s = m->nseg ? segment_of(m, b) : NULL;
    if (!s || s->copy_pb < 0) return -1;
    if (!shared || s->copy_shared_pb < 0) return seg_cost(0, s->copy_pb, b);
    if (shared > b) shared = b;
    return seg_cost(0, s->copy_pb, b - shared) + seg_cost(0, s->copy_shared_pb, shared);
}
static inline int seg_ack(const ms_model *m, uint64_t b)
{
    const ms_segment *s = m->nseg ? segment_of(m, b) : NULL;
    return s && s->ack;
}


/* An event's `a` holds its argument (injection kind, resume generation) above 3 bits of type; the
 * rank of post and resume events is the one in their order key. */
#define EV_TYPE_BITS 4
#define EV_TYPE(e) ((uint32_t)((e)->a & ((1u << EV_TYPE_BITS) - 1)))
#define EV_ARG(e) ((e)->a >> EV_TYPE_BITS)
#define EV_RANK(e) ((int)(((e)->k >> RANK_SHIFT) & (uint64_t)(MAX_RANKS - 1)))
#define REQ_WIN 64
#define MQ_LIMIT_MIN 4096
enum { RMA_NONE = 0, RMA_OP, RMA_RESP };
/* A lock of one window at one target: its holders, and the requests waiting, in the order they
 * reached the target (shared ones queued behind a waiting exclusive one, so that none starves). */
typedef struct lock_wait {
    ms_req *r;                /* the origin's request */
    ms_msg *g;                /* its message (off-node: the grant goes back as its ACK); NULL on one node */
    int excl, origin;
} lock_wait;
typedef struct rma_lock {
    int excl;                 /* world rank holding it exclusively, -1: none */
    uint32_t shared;          /* shared holders */
    lock_wait *q;
    size_t head, n, cap;
} rma_lock;

/* ms_model_events.c */
void msm_push_internal(ms_model *m, ms_time_t t, uint32_t type, void *p, uint64_t a);
void msm_push_train_nic(ms_model *m, ms_time_t t, int node);
void msm_tev_remove(ms_model *m, size_t i);
const ms_event *msm_next_event(const ms_model *m, long *tidx);
void msm_pop_event(ms_model *m, long tidx, ms_event *out);
ms_time_t msm_network_bound(const ms_model *m, ms_time_t bound);
void msm_push_post(ms_model *m, int rank, ms_time_t t, uint32_t type, void *p);
void msm_schedule_resume(ms_model *m, int rank, waiter *w, ms_time_t T);
void msm_determine(ms_model *m, ms_req *r, ms_time_t T);
void msm_process(ms_model *m, const ms_event *e);
void msm_on_deliver(void *user, const nm_delivery *d);
void msm_on_drop(void *user, const nm_delivery *d);

/* ms_model_match.c */
ms_comm *msm_comm_get(const ms_model *m, uint64_t id);
int msm_comm_rank_of(const ms_model *m, const ms_comm *c, int w);
int msm_comm_world_of(const ms_comm *c, int r, int me);
uint64_t *msm_coll_seq_slot(ms_comm *c, int crank, int world);
ms_comm *msm_comm_new(ms_model *m, uint64_t id, int size, int self, size_t nseq);
ms_req *msm_req_new(ms_model *m);
void msm_req_free(ms_model *m, ms_req *r);
ms_req *msm_req_find(const ms_model *m, int rank, uint64_t id);
int msm_req_index(ms_model *m, int rank, ms_req *r);
void msm_req_unindex(ms_model *m, ms_req *r);
ms_mq *msm_mq_find(const ms_model *m, int32_t ctx, int dst, int src);
ms_mq *msm_mq_get(ms_model *m, int32_t ctx, int dst, int src);
void msm_mq_sweep(ms_model *m);
void msm_posted_append(ms_mq *q, ms_req *r);
void msm_posted_unlink(ms_model *m, ms_req *r);
void msm_unexp_unlink(ms_model *m, ms_msg *g);
ms_msg *msm_unexp_find_in(const ms_mq *q, int src, int64_t tag);
ms_msg *msm_unexp_find(const ms_model *m, int32_t ctx, int dst, int src, int64_t tag);
ms_msg *msm_msg_new(ms_model *m);
void msm_msg_unref(ms_model *m, ms_msg *g);
void msm_push_resolution(ms_model *m, int rank, uint64_t req, int src, int64_t tag, uint64_t bytes);
void msm_schedule_inject(ms_model *m, ms_msg *g, int kind, ms_time_t t);
void msm_rndv_send_cts(ms_model *m, ms_msg *g, ms_req *r, ms_time_t t);
void msm_rndv_send_data(ms_model *m, ms_msg *g, ms_time_t t);
void msm_match(ms_model *m, ms_msg *g, ms_req *r, ms_time_t mt, int in_call);
void msm_arrival(ms_model *m, ms_msg *g, ms_time_t d);
ms_conn *msm_conn_get(ms_model *m, int sn, int dn);
void msm_start_arrived(ms_model *m, ms_msg *g, ms_time_t d);

/* ms_model_protocol.c */
ms_time_t msm_rank_call_from(const ms_model *m, int rank);
void msm_rndv_progress(ms_model *m, int rank, ms_time_t t);
void msm_do_turn(ms_model *m, ms_msg *g, int kind, ms_time_t t);
void msm_hold_turn(ms_model *m, int rank, ms_msg *g, int kind, ms_time_t t, ms_time_t from);
void msm_rndv_turn(ms_model *m, int rank, ms_msg *g, int kind, ms_time_t t, int in_call);
void msm_rndv_enter_call(ms_model *m, int rank, ms_time_t t);
void msm_packet_done(ms_model *m, ms_msg *g, int k, ms_time_t d);
void msm_packet_done_at(ms_model *m, ms_msg *g, int k, ms_time_t T, ms_time_t now);
int msm_nic_push(nic_queue *q, const nic_job *j);
int msm_nic_ack(const ms_model *m, const ms_msg *g, int k);
void msm_do_nic(ms_model *m, int node, ms_time_t t);
void msm_train_cut(ms_model *m, int node);
void msm_do_inject(ms_model *m, ms_msg *g, int k, ms_time_t t);
void msm_do_send(ms_model *m, ms_req *r, ms_time_t t);
void msm_do_recv(ms_model *m, ms_req *r, ms_time_t t);
void msm_do_cancel(ms_model *m, ms_req *r, ms_time_t t);

/* ms_model_rma.c */
int msm_rma_fetches(int k);
void msm_rma_handle(ms_model *m, ms_msg *g, ms_time_t t);
void msm_rma_data_in(ms_model *m, ms_msg *g, ms_time_t d);
void msm_do_rma(ms_model *m, ms_req *r, ms_time_t t);

/* ms_model_collsteps.c */
void msm_mc_group_free(mc_group *c);
void msm_do_mcast(ms_model *m, mc_group *c, ms_time_t t);
void msm_coll_step_start(ms_model *m, coll_member *cm, ms_time_t s);
void msm_coll_op_done(ms_model *m, coll_member *cm, ms_time_t T);

/* A receive r's overhead of `cost` from `ready` on its thread's CPU: at once (the timing contract),
 * or after what that CPU has to do already (mpi.recv_overhead_serial). Its end. */
static inline ms_time_t rank_cpu(ms_model *m, const ms_req *r, ms_time_t ready, ms_time_t cost)
{
    if (!m->recv_serial) return ready + cost;
    waiter *w = wt_of(&m->ranks[r->rank], r->thread);
    ms_time_t s = tmax(ready, w->cpu_free);
    w->cpu_free = s + cost;
    return s + cost;
}
/* The earliest train EV_NIC (index in m->tev), -1 if none. */
static inline long tev_first(const ms_model *m) { return m->ntev ? 0 : -1; }
static inline ms_msg *msg_at(const ms_model *m, uint32_t idx) { return ms_pool_at(&m->msgs, idx); }

#endif
