/* The MPI layer model: matching, eager/rendezvous protocols, host overheads, collectives as
 * point-to-point step lists, waits/tests/probes, all in virtual time over a netmodel network.
 * The timing contract is written in README.md next to this file. */
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

/* ---- configuration keys ---------------------------------------------------------------------- */

static const nm_key_def mpi_keys[] = {
    {"mpi.eager_threshold", NM_KEY_INT, "B", "16384",
     "seed 003 section 2 (MPICH-GM: eager protocol below 16K)",
     "messages of fewer bytes go eager, others rendezvous (RTS/CTS, then the data)", NULL, NM_KEY_NONNEG},
    {"mpi.send_overhead", NM_KEY_INT, "ps", "400000",
     "seed 003 section 5.3 (o = 0.8 us send+receive for 1 B, split evenly: o_s = 0.4 us)",
     "host CPU time of one send (o_s), charged to the sender's clock", NULL, NM_KEY_NONNEG},
    {"mpi.recv_overhead", NM_KEY_INT, "ps", "400000",
     "seed 003 section 5.3 (o = 0.8 us send+receive for 1 B, split evenly: o_r = 0.4 us)",
     "host CPU time of one receive (o_r), added to the receive's completion", NULL, NM_KEY_NONNEG},
    {"mpi.send_overhead_per_byte", NM_KEY_INT, "ps/B", "0", "LogGP-style extension; 0 keeps seed 003's constant o",
     "send overhead per message byte (plain integer ps per byte)", NULL, NM_KEY_NONNEG},
    {"mpi.recv_overhead_per_byte", NM_KEY_INT, "ps/B", "0", "LogGP-style extension; 0 keeps seed 003's constant o",
     "receive overhead per message byte (plain integer ps per byte)", NULL, NM_KEY_NONNEG},
    {"mpi.gap", NM_KEY_INT, "ps", "0", "LogP g; not modelled in seed 000's testbed (seed 003 5.3 measured 2.3 us)",
     "minimum interval between the starts of two data messages injected by one host NIC", NULL, NM_KEY_NONNEG},
    {"mpi.packet_payload", NM_KEY_INT, "B", "4096", "GM MTU of 4 KB (seed 003 section 2, GM)",
     "largest payload of one network packet; messages are cut into packets of this size", NULL, NM_KEY_POSITIVE},
    {"mpi.envelope_bytes", NM_KEY_INT, "B", "0", "project choice: 0 keeps seed 000 eq. 3 exact",
     "MPI header bytes carried in a message's first packet", NULL, NM_KEY_NONNEG},
    {"mpi.control_bytes", NM_KEY_INT, "B", "0", "project choice (header-only packets)",
     "payload of rendezvous RTS/CTS and synchronous-send ACK packets", NULL, NM_KEY_NONNEG},
    {"mpi.packet_trains", NM_KEY_INT, "", "1", "project choice (exact: the same results as 0)",
     "1: a message's back-to-back full packets go to the network as one train (nm_network_inject_train) "
     "where the engine runs trains (myrinet), the node has one port and receiving costs nothing; 0: "
     "packet by packet", "0..1", 0},
    {"mpi.poll_cost", NM_KEY_INT, "ps", "100000",
     "project choice: makes polling loops (MPI_Test/MPI_Iprobe) advance in virtual time",
     "modelled cost of one MPI_Test*/MPI_Iprobe call", NULL, NM_KEY_NONNEG},
    {"mpi.reduce_cost_per_byte", NM_KEY_INT, "ps/B", "0", "project choice (0: reductions are free)",
     "arithmetic cost per byte combined in a reduction step (plain integer ps per byte)", NULL, NM_KEY_NONNEG},
    {"mpi.recv_overhead_serial", NM_KEY_INT, "", "0", "0: the timing contract of seed 000's model (receives overlap)",
     "1: a rank's receive overheads o_r(B) take its CPU one after the other and after its send overheads "
     "(one thread runs the MPI library: several messages arriving at once are taken in turn), and so do "
     "the intra-node copies of the rendezvous messages it receives (a single-copy get by the receiver); 0: "
     "each receive completes o_r(B) after its data, whatever else the rank receives", "0..1", 0},
    {"mpi.size_segments", NM_KEY_STRING, "", "", "none: the overheads above hold at every size",
     "piecewise costs by message size, as an MPI library's protocols and a host's caches change them "
     "(fitted by mpisim calibrate): segments 'FROM:OS:OS_PB:OR:OR_PB:COPY_PB[:COPY_SHARED_PB][:ack]' separated by spaces, "
     "FROM in bytes ascending; a message of B >= FROM bytes (up to the next FROM) costs o_s = OS + OS_PB*B "
     "(at least the scalar o_s, which the sender's clock takes at once; the rest is its time in the call "
     "before the send completes) "
     "and o_r = OR + OR_PB*B (ps, ps per byte, decimals allowed), its intra-node copy COPY_PB ps per byte "
     "(-1: host.shm_copy_rate), COPY_SHARED_PB ps per byte for the bytes of a rendezvous received into a buffer "
     "the receiver itself sent from in one of its last 4 rendezvous sends on its node (lines the other core holds; "
     "default: COPY_PB); ':ack': its standard, ready and nonblocking eager sends complete when the "
     "receiver has taken the message (a shared-memory fragment returned to the sender). Below the first "
     "FROM the keys above apply", NULL, 0},
#define COLL_KEY(n, choices)                                                                        \
    {"mpi.coll." n ".algorithm", NM_KEY_STRING, "", "auto", "MPICH 3.x defaults (auto)",           \
     "algorithm of MPI_" n "; auto = MPICH's choice by size and message length", choices, 0}
    COLL_KEY("barrier", "auto|dissemination"),
    COLL_KEY("bcast", "auto|binomial|scatter_doubling_allgather|scatter_ring_allgather|multicast"),
    COLL_KEY("reduce", "auto|binomial|reduce_scatter_gather"),
    COLL_KEY("allreduce", "auto|recursive_doubling|reduce_scatter_allgather"),
    COLL_KEY("gather", "auto|binomial|linear"),
    COLL_KEY("scatter", "auto|binomial|linear"),
    COLL_KEY("allgather", "auto|recursive_doubling|bruck|ring"),
    COLL_KEY("alltoall", "auto|bruck|scattered|pairwise"),
    COLL_KEY("reduce_scatter", "auto|recursive_halving|pairwise"),
    COLL_KEY("scan", "auto|recursive_doubling"),
    COLL_KEY("exscan", "auto|recursive_doubling"),
    COLL_KEY("gatherv", "auto|linear"),
    COLL_KEY("scatterv", "auto|linear"),
    COLL_KEY("allgatherv", "auto|recursive_doubling|bruck|ring"),
    COLL_KEY("alltoallv", "auto|scattered"),
    COLL_KEY("neighbor", "auto|linear"),   /* MPI_Neighbor_* and MPI_Ineighbor_*, every variant */
#undef COLL_KEY
};

int ms_model_register_keys(nm_config *cfg, char *err, size_t errlen)
{
    if (nm_config_register(cfg, mpi_keys, sizeof mpi_keys / sizeof mpi_keys[0], err, errlen) != 0) return -1;
    return ms_host_register_keys(cfg, err, errlen);
}

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
    ms_hmap conns;
    ms_pool connpool;
    ms_resume_fn resume;
    void *user;
    ms_heap heap;
    uint64_t seq0, post_seq;
    ms_hmap reqs, comms, cranks, mqs;   /* reqs: the active requests no rank's window holds */
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
    ms_hmap locks;            /* one-sided locks by (window's context, target world rank): rma_lock */
    int rma_in_call;          /* host.rma_progress = in_call */
};

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
static void model_error(ms_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void model_error(ms_model *m, const char *fmt, ...)
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
static inline ms_time_t rank_cpu(ms_model *m, const ms_req *r, ms_time_t ready, ms_time_t cost);
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
/* how many bytes of [addr, addr + len) were the source of one of rank rs's recent rendezvous
 * sends on its node (the largest overlap with one of them) */
static uint64_t sent_overlap(const rank_state *rs, uint64_t addr, uint64_t len)
{
    uint64_t best = 0;
    if (!addr || !len) return 0;
    for (unsigned i = 0; i < SENT_RING; i++) {
        uint64_t a = rs->sent_at[i], n = rs->sent_len[i];
        if (!a || !n) continue;
        uint64_t lo = a > addr ? a : addr, hi = a + n < addr + len ? a + n : addr + len;
        if (hi > lo && hi - lo > best) best = hi - lo;
    }
    return best;
}
static inline int seg_ack(const ms_model *m, uint64_t b)
{
    const ms_segment *s = m->nseg ? segment_of(m, b) : NULL;
    return s && s->ack;
}

/* Parse mpi.size_segments into m->seg: 0, or -1 with the reason in err. */
static int parse_segments(ms_model *m, const char *text, char *err, size_t errlen)
{
    m->nseg = 0;
    const char *p = text ? text : "";
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) break;
        const char *end = p;
        while (*end && *end != ' ' && *end != '\t' && *end != ',') end++;
        char tok[256];
        size_t len = (size_t)(end - p);
        if (len >= sizeof tok) {
            set_err(err, errlen, "mpi.size_segments: segment '%.40s...' too long", p);
            return -1;
        }
        memcpy(tok, p, len);
        tok[len] = 0;
        p = end;
        if (m->nseg == MS_MAX_SEGMENTS) {
            set_err(err, errlen, "mpi.size_segments: more than %d segments", MS_MAX_SEGMENTS);
            return -1;
        }
        ms_segment sg = {0, 0, 0, 0, 0, -1, -1, 0};
        double v[7];
        int nf = 0;
        char *q = tok, *f;
        while (nf < 8 && (f = q) != NULL) {
            char *colon = strchr(q, ':');
            if (colon) *colon = 0;
            q = colon ? colon + 1 : NULL;
            if (nf >= 6 && !strcmp(f, "ack")) {
                sg.ack = 1;
                nf++;
                break;
            }
            if (nf == 7) {
                set_err(err, errlen, "mpi.size_segments: segment '%s...': expected 'ack' as its last field, got '%s'", tok, f);
                return -1;
            }
            char *e;
            errno = 0;
            v[nf] = strtod(f, &e);
            if (e == f || *e || errno || !isfinite(v[nf])) {
                set_err(err, errlen, "mpi.size_segments: segment %d: field %d '%s' is not a number", m->nseg + 1, nf + 1, f);
                return -1;
            }
            nf++;
        }
        if (q || nf < 6) {
            set_err(err, errlen, "mpi.size_segments: segment %d: expected FROM:OS:OS_PB:OR:OR_PB:COPY_PB[:COPY_SHARED_PB][:ack]",
                    m->nseg + 1);
            return -1;
        }
        if (nf - sg.ack == 7) sg.copy_shared_pb = v[6];
        if (v[0] < 0 || v[0] != floor(v[0]) || v[0] > 1e18) {
            set_err(err, errlen, "mpi.size_segments: segment %d: FROM must be a whole number of bytes", m->nseg + 1);
            return -1;
        }
        sg.from = (uint64_t)v[0];
        sg.os = v[1], sg.os_pb = v[2], sg.or_ = v[3], sg.or_pb = v[4], sg.copy_pb = v[5];
        /* a cost may start below 0 only where its slope lifts it: never negative in its range */
        if (sg.os_pb < 0 || sg.or_pb < 0 || (sg.copy_pb < 0 && sg.copy_pb != -1) ||
            (sg.copy_shared_pb < 0 && sg.copy_shared_pb != -1) ||
            sg.os + sg.os_pb * (double)sg.from < 0 || sg.or_ + sg.or_pb * (double)sg.from < 0) {
            set_err(err, errlen, "mpi.size_segments: segment %d (from %llu B): a cost is negative in its range", m->nseg + 1,
                    (unsigned long long)sg.from);
            return -1;
        }
        if (m->nseg && sg.from <= m->seg[m->nseg - 1].from) {
            set_err(err, errlen, "mpi.size_segments: segment %d: FROM %llu B is not above the previous one", m->nseg + 1,
                    (unsigned long long)sg.from);
            return -1;
        }
        m->seg[m->nseg++] = sg;
    }
    return 0;
}

/* ---- events ---------------------------------------------------------------------------------- */

/* An event's `a` holds its argument (injection kind, resume generation) above 3 bits of type; the
 * rank of post and resume events is the one in their order key. */
#define EV_TYPE_BITS 4
#define EV_TYPE(e) ((uint32_t)((e)->a & ((1u << EV_TYPE_BITS) - 1)))
#define EV_ARG(e) ((e)->a >> EV_TYPE_BITS)
#define EV_RANK(e) ((int)(((e)->order >> RANK_SHIFT) & (uint64_t)(MAX_RANKS - 1)))
static void push_ev(ms_model *m, ms_time_t t, uint64_t order, uint32_t type, int rank, void *p, uint64_t a)
{
    (void)rank;
    ms_event e = {t, order, p, (a << EV_TYPE_BITS) | type};
    if (ms_heap_push(&m->heap, &e) != 0) model_error(m, "out of memory (event queue)");
}
static void push_internal(ms_model *m, ms_time_t t, uint32_t type, void *p, uint64_t a)
{
    push_ev(m, t, (CLS_INTERNAL << 62) | (m->seq0++ & ((1ULL << 62) - 1)), type, -1, p, a);
}
static inline int ev_before(const ms_event *a, const ms_event *b)
{
    return a->t < b->t || (a->t == b->t && a->order < b->order);
}
/* An EV_NIC that takes a packet already in the network as part of a train: ordered with the other
 * events exactly as push_internal's, but kept aside so that the network may run past it. */
static void push_train_nic(ms_model *m, ms_time_t t, int node)
{
    if (m->ntev == m->captev) {
        size_t nc = m->captev ? 2 * m->captev : 8;
        ms_event *nt = realloc(m->tev, nc * sizeof *nt);
        if (!nt) { model_error(m, "out of memory (event queue)"); return; }
        m->tev = nt;
        m->captev = nc;
    }
    ms_event ev = {t, (CLS_INTERNAL << 62) | (m->seq0++ & ((1ULL << 62) - 1)), NULL,
                   ((uint64_t)node << EV_TYPE_BITS) | EV_NIC};
    size_t i = m->ntev++;   /* kept in order: the first is the next */
    while (i > 0 && ev_before(&ev, &m->tev[i - 1])) { m->tev[i] = m->tev[i - 1]; i--; }
    m->tev[i] = ev;
}
/* The earliest train EV_NIC (index in m->tev), -1 if none. */
static inline long tev_first(const ms_model *m) { return m->ntev ? 0 : -1; }
static void tev_remove(ms_model *m, size_t i)
{
    memmove(&m->tev[i], &m->tev[i + 1], (m->ntev - i - 1) * sizeof *m->tev);
    m->ntev--;
}
/* The model's next event, trains' EV_NICs included; *tidx its index in m->tev or -1. */
static const ms_event *next_event(const ms_model *m, long *tidx)
{
    const ms_event *e = ms_heap_top(&m->heap);
    long i = tev_first(m);
    *tidx = -1;
    if (i >= 0 && (!e || ev_before(&m->tev[i], e))) { *tidx = i; return &m->tev[i]; }
    return e;
}
static void pop_event(ms_model *m, long tidx, ms_event *out)
{
    if (tidx < 0) { ms_heap_pop(&m->heap, out); return; }
    *out = m->tev[tidx];
    tev_remove(m, (size_t)tidx);
}
/* How far the network may run: before the model's next event of its own heap, and before the
 * NIC takes its first packet after each train (that one is pushed when the train's last packet is
 * taken, which may come after the network has run past it). */
static ms_time_t network_bound(const ms_model *m, ms_time_t bound)
{
    const ms_event *e = ms_heap_top(&m->heap);
    if (e) {
        ms_time_t b = ORDER_CLASS(e->order) == CLS_RESUME ? e->t + 1 : e->t;
        if (b < bound) bound = b;
    }
    for (size_t i = 0; i < m->ntev; i++) {
        const nic_state *ns = &m->nic[EV_ARG(&m->tev[i])];
        if (ns->tr_after < bound) bound = ns->tr_after;
    }
    return bound;
}

static void push_post(ms_model *m, int rank, ms_time_t t, uint32_t type, void *p)
{
    rank_state *rs = &m->ranks[rank];
    push_ev(m, t, (CLS_POST << 62) | ((uint64_t)rank << RANK_SHIFT) | (rs->cnt++ & LOW38), type, rank, p, 0);
}
static void schedule_resume(ms_model *m, int rank, waiter *w, ms_time_t T)
{
    rank_state *rs = &m->ranks[rank];
    if (w->sched != NEVER && T >= w->sched) return;
    w->sched = T;
    w->gen = ++rs->gen;   /* the rank's: one order key per resume, whichever thread */
    push_ev(m, T, (CLS_RESUME << 62) | ((uint64_t)rank << RANK_SHIFT) | (w->gen & LOW38), EV_RESUME, rank,
            w, w->gen);
}

/* ---- communicators --------------------------------------------------------------------------- */

static ms_comm *comm_get(const ms_model *m, uint64_t id)
{
    if (id == MS_COMM_WORLD && m->ncomms > 0) return m->commv[0];   /* created first, in ms_model_create */
    return ms_hmap_get(&m->comms, id, 0);
}

/* comm rank of world rank w in c, -1 if not a member */
static int comm_rank_of(const ms_model *m, const ms_comm *c, int w)
{
    if (c->id == MS_COMM_WORLD) return w >= 0 && w < m->nranks ? w : -1;
    if (c->self) return 0;
    void *v = ms_hmap_get(&m->cranks, (uint64_t)c->idx, (uint64_t)w);
    return v ? (int)((intptr_t)v - 1) : -1;
}
/* world rank of comm rank r in c, seen by world rank `me` */
static int comm_world_of(const ms_comm *c, int r, int me)
{
    if (c->self) return me;
    if (!c->members) return r;
    return c->members[r];
}
static uint64_t *coll_seq_slot(ms_comm *c, int crank, int world)
{
    return c->self || c->id == MS_COMM_WORLD ? &c->coll_seq[world] : &c->coll_seq[crank];
}

static ms_comm *comm_new(ms_model *m, uint64_t id, int size, int self, size_t nseq)
{
    if (m->ncomms == m->capcomms) {
        size_t nc = m->capcomms ? m->capcomms * 2 : 16;
        ms_comm **n = realloc(m->commv, nc * sizeof *n);
        if (!n) return NULL;
        m->commv = n;
        m->capcomms = nc;
    }
    ms_comm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->coll_seq = calloc(nseq ? nseq : 1, sizeof *c->coll_seq);
    if (!c->coll_seq) { free(c); return NULL; }
    c->id = id;
    c->size = size;
    c->self = self;
    c->idx = (int)m->ncomms;
    if (ms_hmap_put(&m->comms, id, 0, c) != 0) {
        free(c->coll_seq);
        free(c);
        return NULL;
    }
    m->commv[m->ncomms++] = c;
    return c;
}

int ms_model_comm_add(ms_model *m, uint64_t comm, int size, const int *world_ranks, char *err, size_t errlen)
{
    if (!m) return -1;
    if (comm == MS_COMM_WORLD || comm == MS_COMM_SELF) {
        set_err(err, errlen, "communicator id %" PRIu64 " is reserved (world/self)", comm);
        return -1;
    }
    if (size < 1 || !world_ranks) {
        set_err(err, errlen, "communicator %" PRIu64 ": bad size %d", comm, size);
        return -1;
    }
    ms_comm *c = comm_get(m, comm);
    if (c) {
        if (c->size != size || memcmp(c->members, world_ranks, (size_t)size * sizeof(int)) != 0) {
            set_err(err, errlen, "communicator %" PRIu64 " registered again with a different member list", comm);
            return -1;
        }
        return 0;
    }
    for (int i = 0; i < size; i++) {
        if (world_ranks[i] < 0 || world_ranks[i] >= m->nranks) {
            set_err(err, errlen, "communicator %" PRIu64 ": member %d is world rank %d (of %d)", comm, i,
                    world_ranks[i], m->nranks);
            return -1;
        }
    }
    c = comm_new(m, comm, size, 0, (size_t)size);
    if (!c) { set_err(err, errlen, "out of memory"); return -1; }
    c->members = malloc((size_t)size * sizeof(int));
    if (!c->members) { set_err(err, errlen, "out of memory"); return -1; }
    memcpy(c->members, world_ranks, (size_t)size * sizeof(int));
    for (int i = 0; i < size; i++) {
        if (ms_hmap_get(&m->cranks, (uint64_t)c->idx, (uint64_t)world_ranks[i])) {
            set_err(err, errlen, "communicator %" PRIu64 ": world rank %d listed twice", comm, world_ranks[i]);
            /* leave the comm registered but unusable members are harmless; report the error */
            return -1;
        }
        if (ms_hmap_put(&m->cranks, (uint64_t)c->idx, (uint64_t)world_ranks[i], (void *)(intptr_t)(i + 1)) != 0) {
            set_err(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* ---- requests -------------------------------------------------------------------------------- */

static ms_req *req_new(ms_model *m)
{
    uint32_t idx;
    ms_req *r = ms_pool_alloc(&m->reqpool, &idx);
    if (!r) return NULL;
    r->pidx = idx;
    r->done = NEVER;
    return r;
}
static void req_free(ms_model *m, ms_req *r)
{
    if (!r->internal && r->rank >= 0 && r->rank < m->nranks) {
        rank_state *rs = &m->ranks[r->rank];
        if (r->kind == REQ_RECV) rs->active_recvs--;
        else if (r->kind == REQ_COLL) rs->active_colls--;
    }
    ms_pool_release(&m->reqpool, r->pidx);
}

/* Active user requests by (rank, id). A rank's ids come from one counter (the shim's, the trace's)
 * and few are in flight at once, so nearly all of them sit in a small window per rank at their id
 * modulo REQ_WIN: a lookup is one load and a compare, where the hash map took a hash, a probe and,
 * for a removal, a shift of the probe chain. An id whose place is taken (by an older request still
 * active) goes to the hash map. */
#define REQ_WIN 64
static ms_req *req_find(const ms_model *m, int rank, uint64_t id)
{
    ms_req **w = m->ranks[rank].win;
    ms_req *r = w ? w[id & (REQ_WIN - 1)] : NULL;
    if (r && r->id == id) return r;
    return m->reqs.n ? ms_hmap_get(&m->reqs, (uint64_t)rank, id) : NULL;
}
static int req_index(ms_model *m, int rank, ms_req *r)
{
    rank_state *rs = &m->ranks[rank];
    if (!rs->win && !(rs->win = calloc(REQ_WIN, sizeof *rs->win))) return -1;
    ms_req **slot = &rs->win[r->id & (REQ_WIN - 1)];
    if (!*slot) *slot = r;
    else if (ms_hmap_put(&m->reqs, (uint64_t)rank, r->id, r) != 0) return -1;
    m->nreqs++;
    return 0;
}
static void req_unindex(ms_model *m, ms_req *r)
{
    ms_req **slot = &m->ranks[r->rank].win[r->id & (REQ_WIN - 1)];
    if (*slot == r) *slot = NULL;
    else ms_hmap_del(&m->reqs, (uint64_t)r->rank, r->id);
    m->nreqs--;
}

/* ---- match queues ---------------------------------------------------------------------------- */

static uint64_t mq_k2(int dst, int src) { return ((uint64_t)(uint32_t)dst << 32) | (uint32_t)(src + 2); }

static ms_mq *mq_find(const ms_model *m, int32_t ctx, int dst, int src)
{
    return ms_hmap_get(&m->mqs, (uint64_t)ctx, mq_k2(dst, src));
}
static ms_mq *mq_get(ms_model *m, int32_t ctx, int dst, int src)
{
    ms_mq *q = mq_find(m, ctx, dst, src);
    if (q) return q;
    uint32_t idx;
    q = ms_pool_alloc(&m->mqpool, &idx);
    if (!q) return NULL;
    q->pidx = idx;
    q->k1 = (uint64_t)ctx;
    q->k2 = mq_k2(dst, src);
    q->any = src == MS_ANY_SOURCE;
    if (ms_hmap_put(&m->mqs, q->k1, q->k2, q) != 0) {
        ms_pool_release(&m->mqpool, idx);
        return NULL;
    }
    return q;
}
/* A queue that became empty stays in the map (and in the pool): the same (context, receiver,
 * source) is usually used again soon, and creating it again costs a hash insertion and a deletion.
 * An empty queue is found like an absent one is not (no posted receive, no unexpected message).
 * mq_sweep removes the empty ones when the map grows past mq_limit; it runs only where no queue
 * pointer is held (at the top of the driving loop). */
static void mq_maybe_release(ms_model *m, ms_mq *q)
{
    (void)m;
    (void)q;
}
#define MQ_LIMIT_MIN 4096
static void mq_sweep(ms_model *m)
{
    size_t n = 0;
    ms_mq **empty = malloc(m->mqs.n * sizeof *empty);
    if (empty) {
        for (size_t i = 0; i < m->mqs.cap; i++) {
            ms_mq *q = m->mqs.s[i].v;
            if (q && !q->ph && !q->uh) empty[n++] = q;
        }
        for (size_t i = 0; i < n; i++) {
            ms_hmap_del(&m->mqs, empty[i]->k1, empty[i]->k2);
            ms_pool_release(&m->mqpool, empty[i]->pidx);
        }
        free(empty);
    }
    m->mq_limit = 2 * m->mqs.n > MQ_LIMIT_MIN ? 2 * m->mqs.n : MQ_LIMIT_MIN;
}
static void posted_append(ms_mq *q, ms_req *r)
{
    r->mq = q;
    r->qn = NULL;
    r->qp = q->pt;
    if (q->pt) q->pt->qn = r;
    else q->ph = r;
    q->pt = r;
}
static void posted_unlink(ms_model *m, ms_req *r)
{
    ms_mq *q = r->mq;
    if (r->qp) r->qp->qn = r->qn;
    else q->ph = r->qn;
    if (r->qn) r->qn->qp = r->qp;
    else q->pt = r->qp;
    r->mq = NULL;
    r->qn = r->qp = NULL;
    mq_maybe_release(m, q);
}
static void unexp_append(ms_mq *qs, ms_mq *qa, ms_msg *g)
{
    g->mq_src = qs;
    g->sn = NULL;
    g->sp = qs->ut;
    if (qs->ut) qs->ut->sn = g;
    else qs->uh = g;
    qs->ut = g;
    g->mq_any = qa;
    g->an = NULL;
    g->ap = qa->ut;
    if (qa->ut) qa->ut->an = g;
    else qa->uh = g;
    qa->ut = g;
}
static void unexp_unlink(ms_model *m, ms_msg *g)
{
    ms_mq *qs = g->mq_src, *qa = g->mq_any;
    if (g->sp) g->sp->sn = g->sn;
    else qs->uh = g->sn;
    if (g->sn) g->sn->sp = g->sp;
    else qs->ut = g->sp;
    if (g->ap) g->ap->an = g->an;
    else qa->uh = g->an;
    if (g->an) g->an->ap = g->ap;
    else qa->ut = g->ap;
    g->mq_src = g->mq_any = NULL;
    g->sn = g->sp = g->an = g->ap = NULL;
    mq_maybe_release(m, qs);
    mq_maybe_release(m, qa);
}
static int tag_ok(int64_t want, int64_t have) { return want == MS_ANY_TAG || want == have; }

/* Earliest-arrived unexpected message of queue q (that of src) with tag, or NULL. */
static ms_msg *unexp_find_in(const ms_mq *q, int src, int64_t tag)
{
    if (!q) return NULL;
    if (src == MS_ANY_SOURCE) {
        for (ms_msg *g = q->uh; g; g = g->an)
            if (tag_ok(tag, g->tag)) return g;
    } else {
        for (ms_msg *g = q->uh; g; g = g->sn)
            if (tag_ok(tag, g->tag)) return g;
    }
    return NULL;
}

/* Earliest-arrived unexpected message for (ctx, dst, src, tag), or NULL. */
static ms_msg *unexp_find(const ms_model *m, int32_t ctx, int dst, int src, int64_t tag)
{
    return unexp_find_in(mq_find(m, ctx, dst, src), src, tag);
}

/* ---- messages -------------------------------------------------------------------------------- */

static ms_msg *msg_at(const ms_model *m, uint32_t idx) { return ms_pool_at(&m->msgs, idx); }
/* A zeroed message with its index (packet cookies name it), or NULL with the error recorded. */
static ms_msg *msg_new(ms_model *m)
{
    uint32_t idx;
    ms_msg *g = ms_pool_alloc(&m->msgs, &idx);
    if (!g || idx > (UINT32_MAX >> PK_BITS)) {
        model_error(m, "out of memory (messages)");
        return NULL;
    }
    g->idx = idx;
    return g;
}
static void msg_unref(ms_model *m, ms_msg *g)
{
    if (--g->pending == 0) ms_pool_release(&m->msgs, g->idx);
}

static void determine(ms_model *m, ms_req *r, ms_time_t T);

static void push_resolution(ms_model *m, int rank, uint64_t req, int src, int64_t tag, uint64_t bytes)
{
    rank_state *rs = &m->ranks[rank];
    if (rs->rhead > 0 && rs->rhead == rs->rn) rs->rhead = rs->rn = 0;
    if (rs->rn == rs->rcap) {
        size_t nc = rs->rcap ? rs->rcap * 2 : 8;
        ms_resolution *n = realloc(rs->resol, nc * sizeof *n);
        if (!n) { model_error(m, "out of memory (resolutions)"); return; }
        rs->resol = n;
        rs->rcap = nc;
    }
    ms_resolution *x = &rs->resol[rs->rn++];
    x->req = req;
    x->source = src;
    x->tag = (int)tag;
    x->bytes = bytes;
}

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

static void schedule_inject(ms_model *m, ms_msg *g, int kind, ms_time_t t)
{
    g->pending++;
    push_internal(m, t, EV_INJECT, g, (uint64_t)kind);
}

static void rndv_turn(ms_model *m, int rank, ms_msg *g, int kind, ms_time_t t, int in_call);
static void rma_data_in(ms_model *m, ms_msg *g, ms_time_t d);
static void rma_handle(ms_model *m, ms_msg *g, ms_time_t t);
static void do_turn(ms_model *m, ms_msg *g, int kind, ms_time_t t);

/* The receiver of rendezvous message g, matched by r, says "send" (CTS) from t: it registers its
 * buffer (host model) first. */
static void rndv_send_cts(ms_model *m, ms_msg *g, ms_req *r, ms_time_t t)
{
    int off_node = g->sh != g->dh;
    int big = (int64_t)g->bytes >= m->eager_thr;
    ms_time_t reg = off_node && big && !r->internal ? ms_host_register(m->host, r->rank, r->buf, r->bytes) : 0;
    ms_time_t cts = t + or_cost(m, 0) + ms_host_rndv_handling(m->host);
    if (reg) {   /* the receiving thread's CPU registers its buffers one after the other */
        waiter *rw = wt_of(&m->ranks[r->rank], r->thread);
        cts = tmax(cts, rw->cpu_free) + reg;
        rw->cpu_free = cts;
    }
    schedule_inject(m, g, PK_CTS, cts);
}

/* The sender of rendezvous message g, told by the CTS, starts its data (and FIN) from t. */
static void rndv_send_data(ms_model *m, ms_msg *g, ms_time_t t)
{
    ms_time_t go = tmax(t + ms_host_rndv_handling(m->host), g->data_ready);
    schedule_inject(m, g, PK_DATA, go);
    /* GM delivers in order (seed 003 sec 2): the FIN may follow the put without waiting for it */
    if (g->sh != g->dh && ms_host_rndv_fin(m->host) == 2) schedule_inject(m, g, PK_FIN, go);
}

/* A receive r meets message g at match time mt; in_call: the receiving rank is inside an MPI call
 * then (its own post made the match). */
static void match(ms_model *m, ms_msg *g, ms_req *r, ms_time_t mt, int in_call)
{
    r->m_src = g->src_c;
    r->m_tag = g->tag;
    r->m_bytes = g->bytes;
    if (!r->internal && (r->peer == MS_ANY_SOURCE || r->tag == MS_ANY_TAG || r->notify))
        push_resolution(m, r->rank, r->id, g->src_c, g->tag, g->bytes);
    rank_state *rd = &m->ranks[g->dst];
    rd->st.msgs_recv++;
    rd->st.bytes_recv += g->bytes;
    int off_node = g->sh != g->dh;
    if (!g->rndv) {
        if (g->mode == MS_SEND_SYNC) schedule_inject(m, g, PK_ACK, mt);
        /* eager data is copied out of the registered receive buffers (host model), writing the
         * buffer's pages for the first time if the rank never received into them */
        ms_time_t touch = r->internal ? 0 : ms_host_touch(m->host, r->rank, r->buf, g->bytes);
        ms_time_t done = rank_cpu(m, r, mt, or_cost(m, g->bytes) + (off_node ? ms_host_recv_copy(m->host, g->bytes) : 0) + touch);
        if (g->ack_taken) schedule_inject(m, g, PK_ACK, done);   /* the fragment goes back once emptied */
        determine(m, r, done);
    } else {
        g->rreq = r;
        rndv_turn(m, r->rank, g, PK_CTS, mt, in_call);
    }
    msg_unref(m, g);   /* the "awaiting match" reference */
}

/* Message g has arrived at its receiver at time d (eager: last data packet; rendezvous: RTS). */
static void arrival(ms_model *m, ms_msg *g, ms_time_t d)
{
    g->arrival = d;
    ms_mq *qs = mq_find(m, g->ctx, g->dst, g->src_c), *qa = mq_find(m, g->ctx, g->dst, MS_ANY_SOURCE);
    ms_req *r1 = NULL, *r2 = NULL;
    if (qs)
        for (ms_req *r = qs->ph; r; r = r->qn)
            if (tag_ok(r->tag, g->tag)) { r1 = r; break; }
    if (qa)
        for (ms_req *r = qa->ph; r; r = r->qn)
            if (tag_ok(r->tag, g->tag)) { r2 = r; break; }
    ms_req *r = r1;
    if (r2 && (!r || r2->post_seq < r->post_seq)) r = r2;
    if (r) {
        posted_unlink(m, r);
        match(m, g, r, tmax(d, r->post), 0);
        return;
    }
    if (!qs) qs = mq_get(m, g->ctx, g->dst, g->src_c);   /* found above, or made now */
    if (!qa) qa = mq_get(m, g->ctx, g->dst, MS_ANY_SOURCE);
    if (!qs || !qa) { model_error(m, "out of memory (match queues)"); return; }
    unexp_append(qs, qa, g);
    rank_state *rs = &m->ranks[g->dst];
    if (rs->unexp_first == NEVER) rs->unexp_first = d;
    for (int i = 0; i <= rs->nwx; i++) {   /* every thread whose MPI_Probe it matches sees it */
        waiter *w = wt_at(rs, i);
        if (!w || !w->parmed || w->pctx != g->ctx || !(w->psrc == MS_ANY_SOURCE || w->psrc == g->src_c) ||
            !tag_ok(w->ptag, g->tag))
            continue;
        w->parmed = 0;
        w->pfound = 1;
        w->pf_src = g->src_c;
        w->pf_tag = g->tag;
        w->pf_bytes = g->bytes;
        w->pf_time = d;
        if (w->psrc == MS_ANY_SOURCE || w->ptag == MS_ANY_TAG)
            push_resolution(m, g->dst, MS_RESOLUTION_PROBE, g->src_c, g->tag, g->bytes);
        schedule_resume(m, g->dst, w, d);
    }
}

static ms_conn *conn_get(ms_model *m, int sn, int dn)
{
    ms_conn *c = ms_hmap_get(&m->conns, (uint64_t)sn, (uint64_t)dn);
    if (c) return c;
    uint32_t idx;
    c = ms_pool_alloc(&m->connpool, &idx);
    if (!c) return NULL;
    c->pidx = idx;
    if (ms_hmap_put(&m->conns, (uint64_t)sn, (uint64_t)dn, c) != 0) {
        ms_pool_release(&m->connpool, idx);
        return NULL;
    }
    return c;
}

/* Message g's start (eager: all its data; rendezvous: the RTS) is at its receiver at d. With
 * several ports a later start can get there first: it waits for the earlier ones (in order per
 * connection, as GM delivers), so that MPI's non-overtaking holds. */
static void start_arrived(ms_model *m, ms_msg *g, ms_time_t d)
{
    if (m->ports == 1 || g->sh == g->dh) {
        arrival(m, g, d);
        return;
    }
    ms_conn *c = conn_get(m, g->sh, g->dh);
    if (!c) { model_error(m, "out of memory (connections)"); arrival(m, g, d); return; }
    if (g->cseq != c->next) {
        ms_msg **pp = &c->parked;
        while (*pp && (*pp)->cseq < g->cseq) pp = &(*pp)->sn;
        g->sn = *pp;
        *pp = g;
        g->pending++;   /* held while parked */
        return;
    }
    arrival(m, g, d);
    c->next++;
    while (c->parked && c->parked->cseq == c->next) {
        ms_msg *p = c->parked;
        c->parked = p->sn;
        p->sn = NULL;
        arrival(m, p, d);
        c->next++;
        msg_unref(m, p);
    }
}

/* ---- host-driven rendezvous (host.rndv_progress = in_call) ------------------------------------ */

/* When `rank` is known to be inside an MPI call from: a wait, test or probe it is blocked in, or
 * MPI_Finalize; NEVER while it runs its own code (its next call is not known yet). */
static ms_time_t rank_call_from(const ms_model *m, int rank)
{
    rank_state *rs = &m->ranks[rank];
    ms_time_t from = NEVER;
    for (int i = 0; i <= rs->nwx; i++) {
        const waiter *w = wt_at(rs, i);
        if (w && w->blocked && w->wt < from) from = w->wt;
    }
    if (from != NEVER) return from;
    if (rs->finalized) return rs->fin_t;
    return NEVER;
}

/* `rank`'s next entry into the MPI library is at t (a post, a wait, a probe): the turns it holds
 * happen then. */
static void rndv_progress(ms_model *m, int rank, ms_time_t t)
{
    rank_state *rs = &m->ranks[rank];
    for (size_t i = 0; i < rs->nturns; i++) {   /* a turn only schedules injections: the list stays put */
        ms_msg *g = msg_at(m, (uint32_t)(rs->turns[i] >> PK_BITS));
        do_turn(m, g, (int)(rs->turns[i] & ((1u << PK_BITS) - 1)), t);
        msg_unref(m, g);
    }
    rs->nturns = 0;
}

/* A turn of rendezvous g (PK_CTS: the receiver says "send"; PK_DATA: the sender starts its data)
 * is due at t on `rank`'s host. MPICH-GM drives its rendezvous from the host (seed 003 sec 5.5: the
 * overlap drops at the protocol switch): under host.rndv_progress = in_call the turn waits for the
 * rank to be inside an MPI call. */
/* A turn happens at t: the receiver's CTS, the sender's data, or (PK_RMA) a one-sided operation at
 * its target. */
static void do_turn(ms_model *m, ms_msg *g, int kind, ms_time_t t)
{
    if (kind == PK_CTS) rndv_send_cts(m, g, g->rreq, t);
    else if (kind == PK_RMA) rma_handle(m, g, t);
    else rndv_send_data(m, g, t);
}

/* `rank` holds turn (g, kind), due at t, until its next entry into the MPI library (`from` when it
 * is in a call entered later than t). Out of memory: the turn happens now. */
static void hold_turn(ms_model *m, int rank, ms_msg *g, int kind, ms_time_t t, ms_time_t from)
{
    rank_state *rs = &m->ranks[rank];
    if (rs->nturns == rs->capturns) {
        size_t nc = rs->capturns ? 2 * rs->capturns : 8;
        uint64_t *n = realloc(rs->turns, nc * sizeof *n);
        if (!n) {
            model_error(m, "out of memory (held turns)");
            do_turn(m, g, kind, t);
            return;
        }
        rs->turns = n;
        rs->capturns = nc;
    }
    g->pending++;   /* held by the turn */
    rs->turns[rs->nturns++] = ((uint64_t)g->idx << PK_BITS) | (uint64_t)kind;
    /* in a call entered later than t: that call is its next entry (unless a post of its still
     * queued comes first, which makes progress itself) */
    if (from != NEVER && !rs->progress_pending) {
        rs->progress_pending = 1;
        push_post(m, rank, from, EV_PROGRESS, NULL);
    }
}

static void rndv_turn(ms_model *m, int rank, ms_msg *g, int kind, ms_time_t t, int in_call)
{
    ms_time_t from = rank_call_from(m, rank);
    if (in_call || !ms_host_rndv_in_call(m->host) || from <= t) do_turn(m, g, kind, t);
    else hold_turn(m, rank, g, kind, t, from);
}

/* A rank enters a wait, test or probe at t (API call): its held turns happen then, by an event in
 * its posting order (never an internal one: the order must not depend on how calls interleave). */
static void rndv_enter_call(ms_model *m, int rank, ms_time_t t)
{
    rank_state *rs = &m->ranks[rank];
    if (rs->nturns && !rs->progress_pending) {
        rs->progress_pending = 1;
        push_post(m, rank, t, EV_PROGRESS, NULL);
    }
}

/* The receive r of rendezvous message g learns at d that its data is in. */
static void rndv_recv_done(ms_model *m, ms_msg *g, ms_req *r, ms_time_t d)
{
    /* a synchronous send below the eager threshold: the data came through the bounce buffers */
    ms_time_t copy = g->sh != g->dh && (int64_t)g->bytes < m->eager_thr ? ms_host_recv_copy(m->host, g->bytes) : 0;
    /* a FIN is one more turn the receiving host handles */
    ms_time_t fin = g->sh != g->dh && ms_host_rndv_fin(m->host) ? ms_host_rndv_handling(m->host) : 0;
    /* the NIC's put wrote pages the receiver never touched (none if its registration pinned them) */
    ms_time_t touch = g->sh != g->dh && !r->internal ? ms_host_touch(m->host, r->rank, r->buf, g->bytes) : 0;
    determine(m, r, rank_cpu(m, r, tmax(d, r->post) + fin, or_cost(m, g->bytes) + copy + touch));
}

/* A packet of kind k of message g reached its destination at time d. */
static void packet_done(ms_model *m, ms_msg *g, int k, ms_time_t d)
{
    switch (k) {
    case PK_DATA:
        if (--g->pkts_left > 0) break;
        if (g->rma) {
            rma_data_in(m, g, d);
        } else if (!g->rndv) {
            start_arrived(m, g, d);
        } else {
            ms_req *s = g->sreq, *r = g->rreq;
            g->sreq = NULL;
            if (s) determine(m, s, tmax(d, g->local_done));
            int fin = g->sh != g->dh ? ms_host_rndv_fin(m->host) : 0;
            if (fin == 1) {
                /* the put's data is in, but only the sender's FIN tells the receiver (host model) */
                schedule_inject(m, g, PK_FIN, d);
                break;
            }
            if (fin == 2 && !g->fin_in) break;   /* the FIN, queued behind the data, tells it */
            g->rreq = NULL;
            if (r) rndv_recv_done(m, g, r, d);
        }
        break;
    case PK_FIN: {
        if (ms_host_rndv_fin(m->host) == 2 && g->pkts_left > 0) {
            /* it overtook the put's last packet on another port: the data completes the receive */
            g->fin_in = 1;
            break;
        }
        ms_req *r = g->rreq;
        g->rreq = NULL;
        if (r) rndv_recv_done(m, g, r, d);
        break;
    }
    case PK_RTS:
        start_arrived(m, g, d);
        break;
    case PK_CTS:
        /* the sender's NIC puts the data on the wire as soon as the CTS is in (a zero-delay
         * reaction, injected from inside the delivery callback) and its buffer is registered; a
         * host-driven rendezvous waits for the sender to be in an MPI call (rndv_turn) */
        rndv_turn(m, g->src, g, PK_DATA, d, 0);
        break;
    case PK_ACK: {
        ms_req *s = g->sreq;
        g->sreq = NULL;
        /* a one-sided operation's acknowledgement (or lock grant): the origin takes the completion */
        if (s) determine(m, s, g->rma ? d + or_cost(m, 0) : tmax(d, g->local_done));
        break;
    }
    }
    msg_unref(m, g);
}

static void net_inject(ms_model *m, ms_msg *g, int k, uint64_t payload, ms_time_t t, int port)
{
    int fn = (k == PK_CTS || k == PK_ACK) ? g->dh : g->sh;   /* FIN goes with the data */
    int tn = (k == PK_CTS || k == PK_ACK) ? g->sh : g->dh;
    /* the packet leaves by `port` and enters the receiving NIC by the same-numbered port */
    int from = ms_host_port_host(m->host, fn, port), to = ms_host_port_host(m->host, tn, port);
    ms_time_t now = nm_network_now(m->net);
    if (t < now) {   /* only with zero overheads right after a resume; see README */
        m->clamped++;
        t = now;
    }
    m->tn_valid = 0;
    int rc = nm_network_inject(m->net, from, to, payload, t, ((uint64_t)g->idx << PK_BITS) | (uint64_t)k);
    if (rc < 0) {
        model_error(m, "nm_network_inject(host %d -> host %d, %" PRIu64 " B, t=%" PRId64 ") failed (%d)", from, to,
                    payload, t, rc);
        /* deliver at once so that the model does not hang */
        g->pending++;
        packet_done(m, g, k, t);
    }
}

static void mc_group_free(mc_group *c);

/* One data packet of every message of a multicast group, sent as one network multicast. */
static void net_inject_mcast(ms_model *m, mc_group *c, uint64_t payload, ms_time_t t, int port)
{
    ms_msg *g0 = msg_at(m, c->msg[0]);
    int from = ms_host_port_host(m->host, g0->sh, port);
    for (uint32_t i = 0; i < c->n; i++) {
        ms_msg *g = msg_at(m, c->msg[i]);
        g->pending++;
        c->dst[i] = ms_host_port_host(m->host, g->dh, port);
        c->cookie[i] = ((uint64_t)g->idx << PK_BITS) | (uint64_t)PK_DATA;
    }
    ms_time_t now = nm_network_now(m->net);
    if (t < now) {
        m->clamped++;
        t = now;
    }
    m->tn_valid = 0;
    int rc = nm_network_inject_multicast(m->net, from, (int)c->n, c->dst, c->cookie, payload, t);
    if (rc < 0) {
        model_error(m, "nm_network_inject_multicast(host %d -> %u hosts, %" PRIu64 " B, t=%" PRId64 ") failed (%d)",
                    from, c->n, payload, t, rc);
        for (uint32_t i = 0; i < c->n; i++) packet_done(m, msg_at(m, c->msg[i]), PK_DATA, t);
    }
}

/* Packet (g, k) is complete at its receiver at T >= now: at once, or by an EV_PKT event. The
 * caller holds a reference for it, which packet_done releases. */
static void packet_done_at(ms_model *m, ms_msg *g, int k, ms_time_t T, ms_time_t now)
{
    if (T <= now) packet_done(m, g, k, now);
    else push_internal(m, T, EV_PKT, g, (uint64_t)k);
}

static int nic_push(nic_queue *q, const nic_job *j)
{
    if (q->n == q->cap) {
        size_t nc = q->cap ? q->cap * 2 : 16;
        nic_job *v = malloc(nc * sizeof *v);
        if (!v) return -1;
        for (size_t i = 0; i < q->n; i++) v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v;
        q->head = 0;
        q->cap = nc;
    }
    q->v[(q->head + q->n) % q->cap] = *j;
    q->n++;
    return 0;
}

enum { RMA_NONE = 0, RMA_OP, RMA_RESP };

/* Packet (g, k) is an acknowledgement the target's NIC generates itself (ms_host_tx_nic_ack): a
 * put's or accumulate's, carried out by the NIC (host.rma_progress = nic); a lock's grant is the
 * answer of an atomic on the lock, sent as the NIC sends a fetch's result. */
static int nic_ack(const ms_model *m, const ms_msg *g, int k)
{
    return k == PK_ACK && g->rma == RMA_OP && !m->rma_in_call &&
           (g->rma_kind == MS_RMA_PUT || g->rma_kind == MS_RMA_ACCUMULATE);
}

/* The NIC of `node` takes its next packet at t (EV_NIC). */
static void do_nic(ms_model *m, int node, ms_time_t t)
{
    nic_state *ns = &m->nic[node];
    nic_queue *q = NULL;
    for (int i = 0; i < NQ_COUNT && !q; i++)
        if (ns->q[i].n) q = &ns->q[i];
    if (!q) { ns->busy = 0; return; }
    nic_job *j = &q->v[q->head];
    ms_msg *g = msg_at(m, j->msg);
    uint64_t payload = (uint64_t)m->ctl_bytes;
    if (j->kind == PK_DATA) {
        uint64_t total = g->bytes + (uint64_t)m->env_bytes, pp = (uint64_t)m->pkt_payload;
        payload = total - j->off < pp ? total - j->off : pp;
        j->off += payload;
    }
    int port = 0;
    mc_group *c = j->grp;
    uint64_t pp = (uint64_t)m->pkt_payload;
    if (!ns->tr_on && m->trains_ok && j->kind == PK_DATA && !c && payload == pp && j->left >= 2) {
        /* the job's next full packets as one train, when the NIC sends them periodically */
        uint64_t rest = g->bytes + (uint64_t)m->env_bytes - (j->off - payload);
        uint32_t full = (uint32_t)(rest / pp < j->left ? rest / pp : j->left);
        ms_time_t w0, per, after;
        uint32_t n = full >= 2 ? ms_host_tx_run(m->host, node, pp, t, full, &w0, &per, &after) : 0;
        if (n >= 2 && w0 >= nm_network_now(m->net)) {
            int from = ms_host_port_host(m->host, g->sh, 0), to = ms_host_port_host(m->host, g->dh, 0);
            uint64_t cookie = ((uint64_t)g->idx << PK_BITS) | (uint64_t)PK_DATA;
            m->tn_valid = 0;
            if (nm_network_inject_train(m->net, from, to, pp, n, w0, per, cookie) == 0) {
                ns->tr_on = 1;
                ns->tr_cls = (uint8_t)(q - ns->q);
                ns->tr_msg = j->msg;
                ns->tr_n = n;
                ns->tr_taken = 0;
                ns->tr_from = from;
                ns->tr_cookie = cookie;
                ns->tr_w0 = w0;
                ns->tr_period = per;
                ns->tr_after = after;
            }
        }
    }
    ms_time_t wire = t, next = nic_ack(m, g, j->kind) ? ms_host_tx_nic_ack(m->host, node, payload, t, &wire, &port)
                                                      : ms_host_tx_packet(m->host, node, payload, t, &wire, &port);
    int train_next = 0;
    if (ns->tr_on) {
        /* a packet of the train: in the network already, at the time the train was given */
        if (j->msg != ns->tr_msg || j->kind != PK_DATA || c || q != &ns->q[ns->tr_cls] || payload != pp ||
            wire != ns->tr_w0 + (ms_time_t)ns->tr_taken * ns->tr_period)
            model_error(m, "packet train of node %d out of step (a defect)", node);
        g->pending++;
        if (++ns->tr_taken == ns->tr_n) ns->tr_on = 0;
        train_next = ns->tr_on;
    } else if (c) {
        net_inject_mcast(m, c, payload, wire, port);
    } else {
        g->pending++;
        net_inject(m, g, j->kind, payload, wire, port);
    }
    if (--j->left == 0) {
        q->head = (q->head + 1) % q->cap;
        q->n--;
        /* the scheduled-injection references, held by the job */
        if (c) {
            for (uint32_t i = 0; i < c->n; i++) msg_unref(m, msg_at(m, c->msg[i]));
            mc_group_free(c);
        } else {
            msg_unref(m, g);
        }
    }
    if (train_next) push_train_nic(m, next, node);
    else push_internal(m, next, EV_NIC, NULL, (uint64_t)node);
}

/* A job was queued on node's NIC ahead of its train's job: the NIC takes it before the train's
 * next packet, so the train keeps the packets taken so far; its next EV_NIC becomes ordinary. The
 * network has not run to the withdrawn packets' times (it stops before this event's time or at
 * this delivery's). */
static void train_cut(ms_model *m, int node)
{
    nic_state *ns = &m->nic[node];
    if (!ns->tr_on) return;
    ns->tr_on = 0;
    uint32_t delivered = 0;
    m->tn_valid = 0;
    if (nm_network_train_cut(m->net, ns->tr_from, ns->tr_cookie, ns->tr_taken, &delivered) != 0)
        model_error(m, "could not cut the packet train of node %d (a defect)", node);
    /* kept packets the network delivered without a callback: none is the message's last */
    ms_msg *g = msg_at(m, ns->tr_msg);
    for (uint32_t i = 0; i < delivered && g; i++) packet_done(m, g, PK_DATA, m->now);
    for (size_t i = 0; i < m->ntev; i++)
        if ((int)EV_ARG(&m->tev[i]) == node) {
            ms_event ev = m->tev[i];
            tev_remove(m, i);
            if (ms_heap_push(&m->heap, &ev) != 0) model_error(m, "out of memory (event queue)");
            break;
        }
}

static void do_inject(ms_model *m, ms_msg *g, int k, ms_time_t t)
{
    if (g->sh == g->dh) {
        /* same node (or a message to self): the intra-node path, no network */
        if (k == PK_DATA) g->pkts_left = 1;
        g->pending++;
        uint64_t b = k == PK_DATA && !g->copied ? g->bytes : 0;
        ms_time_t done;
        if (b) {
            /* rendezvous data: the receiver's CPU copies it into its buffer (Open MPI's single-copy
             * get), one copy after the other, and writes the buffer's pages it never received into
             * before; with mpi.recv_overhead_serial the copy also waits for what that CPU has queued
             * and keeps it busy */
            rank_state *rd = &m->ranks[g->dst];
            waiter *rw = g->rreq ? wt_of(rd, g->rreq->thread) : &rd->w0;   /* the receiving thread's CPU */
            ms_time_t s = tmax(t, m->recv_serial ? rw->cpu_free : rd->copy_free);
            /* bytes landing in lines the other core holds (a buffer this rank sent from) */
            uint64_t shared = !g->rreq || g->src == g->dst ? 0
                              : g->rreq->into_sent ? b
                                                   : sent_overlap(rd, g->rreq->buf, b);
            ms_time_t end = ms_host_shm_copy_ps(m->host, g->sh, b, seg_copy_shared(m, b, shared), s);
            if (g->rreq && !g->rreq->internal) end += ms_host_touch(m->host, g->dst, g->rreq->buf, b);
            rd->copy_free = end;
            if (m->recv_serial) rw->cpu_free = end;
            done = end + ms_host_shm_latency(m->host);
        } else {
            done = ms_host_shm_transfer(m->host, g->sh, 0, t);
        }
        packet_done_at(m, g, k, done, t);
        msg_unref(m, g);   /* the scheduled-injection reference */
        return;
    }
    int node = (k == PK_CTS || k == PK_ACK) ? g->dh : g->sh;
    nic_job j = {g->idx, (uint8_t)k, 1, 0, NULL};
    int cls = NQ_RESP;
    if (k == PK_DATA) {
        uint64_t total = g->bytes + (uint64_t)m->env_bytes, pp = (uint64_t)m->pkt_payload;
        uint64_t npk = total ? (total + pp - 1) / pp : 1;
        g->pkts_left = (uint32_t)npk;
        j.left = (uint32_t)npk;
        cls = g->rndv ? NQ_BULK : NQ_START;
    } else if (k == PK_RTS) {
        cls = NQ_START;
    } else if (k == PK_FIN && ms_host_rndv_fin(m->host) == 2) {
        cls = NQ_BULK;   /* behind its put's data */
    }
    if (cls == NQ_START && m->ports > 1 && !g->rma) {   /* one-sided operations are not matched: no order */
        ms_conn *c = conn_get(m, g->sh, g->dh);
        if (c) g->cseq = c->sent++;
    }
    if (nic_push(&m->nic[node].q[cls], &j) != 0) {
        model_error(m, "out of memory (NIC queue)");
        msg_unref(m, g);
        return;
    }
    nic_state *ns = &m->nic[node];
    if (ns->tr_on && cls < ns->tr_cls) train_cut(m, node);
    if (!ns->busy) {
        ns->busy = 1;
        do_nic(m, node, t);
    }
}

/* ---- posts ----------------------------------------------------------------------------------- */

static void do_send(ms_model *m, ms_req *r, ms_time_t t)
{
    if (r->peer == MS_PROC_NULL) {
        determine(m, r, t);
        return;
    }
    rank_state *rs = &m->ranks[r->rank];
    waiter *ws = wt_of(rs, r->thread);
    int intra = rs->host == m->ranks[r->peer_world_cache].host;
    int eager = (int64_t)r->bytes < m->eager_thr && !(r->mode == MS_SEND_SYNC && ms_host_sync_rendezvous(m->host));
    ms_time_t start = tmax(t, ws->cpu_free);
    ms_time_t ldone = start + os_cost(m, r->bytes) + seg_send_extra(m, r->bytes) +
                      ms_host_mode_cost(m->host, r->mode, r->bytes, intra);
    /* host model: an eager message is copied into the NIC's registered buffers in the call; a
     * rendezvous buffer is registered after the RTS has gone (the data waits for it) */
    int big = (int64_t)r->bytes >= m->eager_thr;   /* else a synchronous handshake: data through the bounce buffers */
    if (!intra && !big) ldone += ms_host_send_copy(m->host, r->bytes);
    /* on one node the sender copies an eager message into shared memory itself, in its call */
    int copy_in = intra && eager && r->peer_world_cache != r->rank;
    if (copy_in) ldone = ms_host_shm_copy_ps(m->host, rs->host, r->bytes, seg_copy(m, r->bytes), ldone);
    ms_time_t reg = !intra && big && !r->internal ? ms_host_register(m->host, r->rank, r->buf, r->bytes) : 0;
    ws->cpu_free = ldone + reg;
    if (intra && !eager && r->buf && r->bytes && r->peer_world_cache != r->rank) {
        rs->sent_at[rs->sent_next % SENT_RING] = r->buf;
        rs->sent_len[rs->sent_next % SENT_RING] = r->bytes;
        rs->sent_next++;
    }
    rs->st.msgs_sent++;
    rs->st.bytes_sent += r->bytes;
    ms_msg *g = msg_new(m);
    if (!g) {
        determine(m, r, ldone);
        return;
    }
    g->pending = 1;
    g->src = r->rank;
    g->dst = r->peer_world_cache;
    g->sh = rs->host;
    g->dh = m->ranks[g->dst].host;
    g->ctx = r->ctx;
    g->src_c = r->m_src;   /* sender's own comm rank, stashed at post */
    g->tag = r->tag;
    g->bytes = r->bytes;
    g->mode = r->mode;
    g->local_done = ldone;
    g->copied = (uint8_t)copy_in;
    g->ack_taken = (uint8_t)(eager && r->mode != MS_SEND_SYNC && r->mode != MS_SEND_BUFFERED && seg_ack(m, r->bytes) &&
                             r->peer_world_cache != r->rank);
    g->fin_in = 0;
    g->data_ready = ldone + reg;
    /* Every message start (eager data or RTS) takes the host NIC in order, at least mpi.gap
     * after the previous start: messages of one host leave in posting order (non-overtaking). */
    ms_time_t tinj = ldone;
    if (g->sh != g->dh) {
        tinj = tmax(ldone, m->nic_free[g->sh]);
        m->nic_free[g->sh] = tinj + m->gap;
    }
    if (eager) {
        mc_group *c = m->mc_collect;
        if (c && g->sh != g->dh) {   /* a multicast step: injected with the others (coll_step_start) */
            if (c->n == 0) m->mc_tinj = tinj;
            g->pending++;
            c->msg[c->n++] = g->idx;
        } else {
            schedule_inject(m, g, PK_DATA, tinj);
        }
        if (r->mode == MS_SEND_SYNC || g->ack_taken) {
            g->sreq = r;
            r->open = 1;
            rs->open_sends++;
        } else {
            determine(m, r, ldone);
        }
    } else {
        g->rndv = 1;
        g->sreq = r;
        r->open = 1;
        rs->open_sends++;
        schedule_inject(m, g, PK_RTS, tinj);
    }
}

static void do_recv(ms_model *m, ms_req *r, ms_time_t t)
{
    if (r->peer == MS_PROC_NULL) {
        r->m_src = MS_PROC_NULL;
        r->m_tag = MS_ANY_TAG;
        r->m_bytes = 0;
        determine(m, r, t);
        return;
    }
    ms_mq *q = mq_find(m, r->ctx, r->rank, r->peer);   /* one lookup for the search and the post */
    ms_msg *g = unexp_find_in(q, r->peer, r->tag);
    if (g) {
        unexp_unlink(m, g);
        match(m, g, r, tmax(t, g->arrival), 1);
        return;
    }
    if (!q) q = mq_get(m, r->ctx, r->rank, r->peer);
    if (!q) { model_error(m, "out of memory (match queues)"); return; }
    r->post_seq = m->post_seq++;
    posted_append(q, r);
}

/* MPI_Cancel of receive r at time t, in the owner's posting order: it succeeds if no message has
 * matched r by then (r still waits in its posted queue); otherwise r completes normally. */
static void do_cancel(ms_model *m, ms_req *r, ms_time_t t)
{
    if (!r->mq || r->done != NEVER) return;
    posted_unlink(m, r);
    r->cancelled = 1;
    r->m_src = -1;
    r->m_tag = -1;
    r->m_bytes = 0;
    determine(m, r, t);
}

/* ---- one-sided communication (README.md "One-sided communication") ---------------------------- */

static const char *const rma_names[MS_RMA_KIND_COUNT] = {
    "MPI_Put", "MPI_Get", "MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op", "MPI_Compare_and_swap",
    "lock (shared)", "lock (exclusive)", "unlock"};

const char *ms_model_rma_name(ms_rma_kind kind) { return (unsigned)kind < MS_RMA_KIND_COUNT ? rma_names[kind] : "?"; }

/* a result comes back (else an acknowledgement) */
static int rma_fetches(int k)
{
    return k == MS_RMA_GET || k == MS_RMA_GET_ACCUMULATE || k == MS_RMA_FETCH_AND_OP || k == MS_RMA_COMPARE_AND_SWAP;
}
/* the target combines what arrives with what it holds (mpi.reduce_cost_per_byte) */
static int rma_reduces(int k)
{
    return k == MS_RMA_ACCUMULATE || k == MS_RMA_GET_ACCUMULATE || k == MS_RMA_FETCH_AND_OP ||
           k == MS_RMA_COMPARE_AND_SWAP;
}

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

static rma_lock *lock_get(ms_model *m, int32_t ctx, int target)
{
    rma_lock *l = ms_hmap_get(&m->locks, (uint64_t)(uint32_t)ctx, (uint64_t)target);
    if (l) return l;
    l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->excl = -1;
    if (ms_hmap_put(&m->locks, (uint64_t)(uint32_t)ctx, (uint64_t)target, l) != 0) {
        free(l);
        return NULL;
    }
    return l;
}

/* The grant (or an unlock's acknowledgement) leaves the target at t. */
static void lock_answer(ms_model *m, ms_req *r, ms_msg *g, ms_time_t t)
{
    if (g) schedule_inject(m, g, PK_ACK, t);
    else determine(m, r, t);
}

static int lock_free_for(const rma_lock *l, int excl)
{
    return excl ? l->excl < 0 && l->shared == 0 : l->excl < 0;
}

/* Waiting requests that can have the lock now, in order, at t. */
static void lock_grant_waiting(ms_model *m, rma_lock *l, ms_time_t t)
{
    while (l->n) {
        lock_wait *w = &l->q[l->head];
        if (!lock_free_for(l, w->excl)) break;
        if (w->excl) l->excl = w->origin;
        else l->shared++;
        lock_wait x = *w;
        l->head = (l->head + 1) % l->cap;
        l->n--;
        lock_answer(m, x.r, x.g, t);
        if (x.g) msg_unref(m, x.g);   /* the reference held while it waited */
    }
}

/* A lock request or an unlock of `origin` at the target's lock, handled at t. Returns 1 if the
 * request waits (g, if any, keeps its reference). */
static int lock_op(ms_model *m, int32_t ctx, int target, int origin, int kind, ms_req *r, ms_msg *g, ms_time_t t)
{
    rma_lock *l = lock_get(m, ctx, target);
    if (!l) {
        model_error(m, "out of memory (one-sided locks)");
        lock_answer(m, r, g, t);
        return 0;
    }
    if (kind == MS_RMA_UNLOCK) {
        if (l->excl == origin) l->excl = -1;
        else if (l->shared) l->shared--;
        else model_error(m, "rank %d unlocks a window at rank %d it holds no lock of", origin, target);
        lock_answer(m, r, g, t);
        lock_grant_waiting(m, l, t);
        return 0;
    }
    int excl = kind == MS_RMA_LOCK_EXCLUSIVE;
    if (!l->n && lock_free_for(l, excl)) {
        if (excl) l->excl = origin;
        else l->shared++;
        lock_answer(m, r, g, t);
        return 0;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 8;
        lock_wait *q = malloc(nc * sizeof *q);
        if (!q) {
            model_error(m, "out of memory (one-sided locks)");
            lock_answer(m, r, g, t);
            return 0;
        }
        for (size_t i = 0; i < l->n; i++) q[i] = l->q[(l->head + i) % l->cap];
        free(l->q);
        l->q = q;
        l->head = 0;
        l->cap = nc;
    }
    l->q[(l->head + l->n) % l->cap] = (lock_wait){r, g, excl, origin};
    l->n++;
    return 1;
}

/* Operation g (RMA_OP) is handled at its target at t: by the NIC, or (host.rma_progress = in_call)
 * by the target's CPU, which then spends a receive overhead, the reduction and the overhead of
 * sending the answer. The answer goes back: the result (a message of its own), else an ACK. */
static void rma_handle(ms_model *m, ms_msg *g, ms_time_t t)
{
    int kind = g->rma_kind;
    ms_req *r = g->sreq;
    uint64_t res = r ? r->m_bytes : 0;
    ms_time_t red = rma_reduces(kind) ? (ms_time_t)g->bytes * m->red_pb : 0;
    ms_time_t done = t + red;
    if (m->rma_in_call) {
        waiter *rt = &m->ranks[g->dst].w0;   /* the target's progress is its thread 0's */
        ms_time_t start = tmax(t, rt->cpu_free);
        done = start + or_cost(m, kind <= MS_RMA_COMPARE_AND_SWAP ? g->bytes : 0) + red + os_cost(m, res);
        rt->cpu_free = done;
    }
    if (kind >= MS_RMA_LOCK_SHARED) {
        g->sreq = r;   /* the ACK completes it, now or at the grant */
        if (lock_op(m, g->ctx, g->dst, g->src, kind, r, g, done)) return;   /* waits: keeps its reference */
    } else if (!rma_fetches(kind)) {
        schedule_inject(m, g, PK_ACK, done);
    } else {
        /* the result: a message of its own from the target to the origin */
        ms_msg *q = msg_new(m);
        if (!q) {
            g->sreq = NULL;
            if (r) determine(m, r, done);
        } else {
            q->pending = 0;
            q->src = g->dst;
            q->dst = g->src;
            q->sh = g->dh;
            q->dh = g->sh;
            q->ctx = g->ctx;
            q->bytes = res;
            q->rma = RMA_RESP;
            q->rma_kind = (uint8_t)kind;
            q->sreq = r;
            g->sreq = NULL;
            ms_time_t tinj = tmax(done, m->nic_free[q->sh]);   /* a message start of the target's NIC */
            m->nic_free[q->sh] = tinj + m->gap;
            schedule_inject(m, q, PK_DATA, tinj);
        }
    }
    msg_unref(m, g);   /* the "awaiting handling" reference */
}

/* The last packet of g is in the memory of its destination at d. */
static void rma_data_in(ms_model *m, ms_msg *g, ms_time_t d)
{
    if (g->rma == RMA_RESP) {
        ms_req *r = g->sreq;
        g->sreq = NULL;
        if (r) determine(m, r, d + or_cost(m, 0));
        return;
    }
    /* at the target: its NIC does it now; its CPU when it is inside an MPI call (as the turns of a
     * host-driven rendezvous: rndv_turn) */
    ms_time_t from = rank_call_from(m, g->dst);
    if (!m->rma_in_call || from <= d) rma_handle(m, g, d);
    else hold_turn(m, g->dst, g, PK_RMA, d, from);
}

/* Origin r starts its operation at t. */
static void do_rma(ms_model *m, ms_req *r, ms_time_t t)
{
    if (r->peer == MS_PROC_NULL) {
        determine(m, r, t);
        return;
    }
    rank_state *rs = &m->ranks[r->rank];
    waiter *ws = wt_of(rs, r->thread);
    int kind = r->mode, target = r->peer_world_cache;
    ms_time_t start = tmax(t, ws->cpu_free);
    ms_time_t ldone = start + os_cost(m, r->bytes);
    ws->cpu_free = ldone;
    rs->st.rma_ops++;
    rs->st.rma_bytes += r->bytes + r->m_bytes;
    r->open = 1;   /* it waits for the target's answer (lookahead: no latency can be promised) */
    rs->open_sends++;
    if (rs->host == m->ranks[target].host) {
        /* one node: the origin's CPU does it through shared memory (a single copy; locks are
         * atomics on the window's memory) */
        if (kind >= MS_RMA_LOCK_SHARED) {
            lock_op(m, r->ctx, target, r->rank, kind, r, NULL, ldone);
            return;
        }
        ms_time_t done = ms_host_shm_copy(m->host, rs->host, r->bytes + r->m_bytes, ldone);
        if (rma_reduces(kind)) done += (ms_time_t)r->bytes * m->red_pb;
        ws->cpu_free = done;
        determine(m, r, done);
        return;
    }
    ms_msg *g = msg_new(m);
    if (!g) {
        determine(m, r, ldone);
        return;
    }
    g->pending = 1;   /* until the target has handled it */
    g->src = r->rank;
    g->dst = target;
    g->sh = rs->host;
    g->dh = m->ranks[target].host;
    g->ctx = r->ctx;
    g->src_c = r->m_src;
    g->bytes = kind >= MS_RMA_LOCK_SHARED || kind == MS_RMA_GET ? (uint64_t)m->ctl_bytes : r->bytes;
    g->rma = RMA_OP;
    g->rma_kind = (uint8_t)kind;
    g->sreq = r;
    g->local_done = ldone;
    /* a message start of the origin's NIC, in posting order with its other messages */
    ms_time_t tinj = tmax(ldone, m->nic_free[g->sh]);
    m->nic_free[g->sh] = tinj + m->gap;
    schedule_inject(m, g, PK_DATA, tinj);
}

/* ---- collectives ----------------------------------------------------------------------------- */

static void coll_finish_step(ms_model *m, coll_member *cm);

static void mc_group_free(mc_group *c)
{
    if (!c) return;
    free(c->dst);
    free(c->cookie);
    free(c);
}

/* A multicast step's messages take their sender's NIC as one job (EV_MCAST). */
static void do_mcast(ms_model *m, mc_group *c, ms_time_t t)
{
    ms_msg *g = msg_at(m, c->msg[0]);
    uint64_t total = g->bytes + (uint64_t)m->env_bytes, pp = (uint64_t)m->pkt_payload;
    uint32_t npk = (uint32_t)(total ? (total + pp - 1) / pp : 1);
    for (uint32_t i = 0; i < c->n; i++) msg_at(m, c->msg[i])->pkts_left = npk;
    nic_job j = {g->idx, PK_DATA, npk, 0, c};
    int node = g->sh;
    if (nic_push(&m->nic[node].q[NQ_START], &j) != 0) {
        model_error(m, "out of memory (NIC queue)");
        for (uint32_t i = 0; i < c->n; i++) msg_unref(m, msg_at(m, c->msg[i]));
        mc_group_free(c);
        return;
    }
    nic_state *ns = &m->nic[node];
    if (ns->tr_on && NQ_START < ns->tr_cls) train_cut(m, node);
    if (!ns->busy) {
        ns->busy = 1;
        do_nic(m, node, t);
    }
}

static void coll_step_start(ms_model *m, coll_member *cm, ms_time_t s)
{
    cm->step_start = s;
    cm->step_max = s;
    if (cm->step >= cm->plan.nsteps) {
        ms_req *u = cm->req;
        u->cm = NULL;
        ms_coll_plan_free(&cm->plan);
        free(cm);
        determine(m, u, s);
        return;
    }
    const ms_coll_step *st = &cm->plan.steps[cm->step];
    if (st->copy_bytes) {
        /* a local copy on the member's CPU before it posts the step: one core copying, as a
         * rendezvous's single copy of that size does (the segment's COPY_PB) */
        ms_time_t c = seg_copy(m, st->copy_bytes);
        if (c < 0) {
            double sc, shm, mem;
            ms_host_copy_costs(m->host, &sc, &shm, &mem);
            c = (ms_time_t)(shm * (double)st->copy_bytes);
        }
        rank_state *rs = &m->ranks[cm->rank];
        waiter *w = wt_of(rs, cm->req->thread);   /* the calling thread's CPU */
        s = tmax(s, w->cpu_free) + c;
        w->cpu_free = s;
        cm->step_max = s;
    }
    cm->pending = (uint32_t)st->nops + 1;
    /* the root's step of a multicast bcast on a network that multicasts: collect its eager sends */
    if (m->mc_ok && cm->kind == MS_COLL_BCAST && st->nops > 1 &&
        !strcmp(ms_coll_algorithm_name(MS_COLL_BCAST, cm->plan.alg), "multicast")) {
        m->mc_collect = calloc(1, sizeof(mc_group) + st->nops * sizeof(uint32_t));
        if (m->mc_collect) {
            m->mc_collect->dst = malloc(st->nops * sizeof(int));
            m->mc_collect->cookie = malloc(st->nops * sizeof(uint64_t));
            if (!m->mc_collect->dst || !m->mc_collect->cookie) {
                free(m->mc_collect->dst);
                free(m->mc_collect->cookie);
                free(m->mc_collect);
                m->mc_collect = NULL;
            }
        }
    }
    for (size_t i = 0; i < st->nops; i++) {
        const ms_coll_op *op = &cm->plan.ops[st->first_op + i];
        ms_req *r = req_new(m);
        if (!r) { model_error(m, "out of memory (requests)"); cm->pending--; continue; }
        r->rank = cm->rank;
        r->thread = cm->req ? cm->req->thread : 0;   /* the calling thread's CPU */
        r->kind = op->is_send ? REQ_SEND : REQ_RECV;
        r->internal = 1;
        r->mode = MS_SEND_STANDARD;
        r->comm = cm->comm->id;
        r->ctx = cm->ctx;
        r->peer = op->peer;
        r->peer_world_cache = comm_world_of(cm->comm, op->peer, cm->rank);
        r->tag = cm->tag;
        r->bytes = op->bytes;
        r->post = s;
        r->cm = cm;
        r->into_sent = (uint8_t)(op->into_sent != 0);
        if (op->is_send) {
            r->m_src = cm->crank;
            do_send(m, r, s);
        } else {
            do_recv(m, r, s);
        }
    }
    mc_group *c = m->mc_collect;
    m->mc_collect = NULL;
    if (c && c->n > 0) push_internal(m, m->mc_tinj, EV_MCAST, c, 0);
    else if (c) mc_group_free(c);
    if (--cm->pending == 0) coll_finish_step(m, cm);
}

static void coll_finish_step(ms_model *m, coll_member *cm)
{
    const ms_coll_step *st = &cm->plan.steps[cm->step];
    ms_time_t end = cm->step_max + (ms_time_t)st->reduce_bytes * m->red_pb;
    cm->step++;
    push_internal(m, end, EV_COLL_STEP, cm, 0);
}

static void coll_op_done(ms_model *m, coll_member *cm, ms_time_t T)
{
    if (T > cm->step_max) cm->step_max = T;
    if (--cm->pending == 0) coll_finish_step(m, cm);
}

/* ---- completion and waits -------------------------------------------------------------------- */

static void determine(ms_model *m, ms_req *r, ms_time_t T)
{
    r->done = T;
    if (r->open) {
        r->open = 0;
        m->ranks[r->rank].open_sends--;
    }
    if (r->internal) {
        coll_member *cm = r->cm;
        req_free(m, r);
        coll_op_done(m, cm, T);
        return;
    }
    if (r->forget) {   /* freed by the program: nobody will ask */
        req_unindex(m, r);
        req_free(m, r);
        return;
    }
    if (!r->in_wait) return;
    waiter *w = wt_of(&m->ranks[r->rank], r->wthread);
    if (w->wkind != W_WAIT) return;
    if (w->wmode == MS_WAIT_ALL) {
        if (T > w->wmax) w->wmax = T;
        if (--w->nundet == 0) schedule_resume(m, r->rank, w, tmax(w->wt, w->wmax));
    } else {
        schedule_resume(m, r->rank, w, tmax(w->wt, T));
    }
}

static void fill_result(ms_req_result *o, const ms_req *r, int completed)
{
    o->req = r->id;
    o->completed = completed;
    o->source = -1;
    o->tag = -1;
    o->bytes = r->bytes;
    o->complete_time = completed ? r->done : NEVER;
    o->cancelled = completed && r->cancelled;
    if (completed && r->kind == REQ_RECV && !r->cancelled) {
        o->source = r->m_src;
        o->tag = (int)r->m_tag;
        o->bytes = r->m_bytes;
    }
}

static void do_resume(ms_model *m, int rank, waiter *w, uint64_t gen, ms_time_t T)
{
    rank_state *rs = &m->ranks[rank];
    if (!w->blocked || (w->gen & (UINT64_MAX >> EV_TYPE_BITS)) != gen) return;
    size_t n = w->wn, nres = n ? n : 1;
    if (w->rescap < nres) {
        ms_req_result *nr = realloc(w->res, nres * sizeof *nr);
        if (!nr) { model_error(m, "out of memory (results)"); return; }
        w->res = nr;
        w->rescap = nres;
    }
    ms_req_result *res = w->res;
    ms_time_t R = T;
    size_t nout = n;
    if (w->wkind == W_WAIT || w->wkind == W_TEST) {
        ms_time_t at = T;   /* completed means done <= at */
        if (w->wkind == W_TEST) R = T + m->poll;
        int all = 1;
        size_t best = n;
        for (size_t i = 0; i < n; i++) {
            ms_req *r = w->wreqs[i];
            if (r->done > at) all = 0;
            else if (best == n || r->done < w->wreqs[best]->done) best = i;
        }
        for (size_t i = 0; i < n; i++) {
            ms_req *r = w->wreqs[i];
            int c;
            switch (w->wmode) {
            case MS_WAIT_ALL: case MS_TEST_ALL: case MS_TEST_PEEK: c = all; break;
            case MS_WAIT_ANY: case MS_TEST_ANY: c = i == best; break;
            default: c = r->done <= at; break;
            }
            fill_result(&res[i], r, c);
        }
        for (size_t i = 0; i < n; i++) {
            ms_req *r = w->wreqs[i];
            r->in_wait = 0;
            if (res[i].completed && w->wmode != MS_TEST_PEEK) {
                req_unindex(m, r);
                req_free(m, r);
            }
        }
    } else {
        /* probes: one result */
        nout = 1;
        memset(&res[0], 0, sizeof res[0]);
        res[0].req = 0;
        res[0].source = -1;
        res[0].tag = -1;
        res[0].complete_time = NEVER;
        if (w->wkind == W_IPROBE) {
            R = T + m->poll;
            rs->unexp_first = NEVER;
            if (!w->pfound && w->psrc != MS_PROC_NULL) {
                ms_msg *g = unexp_find(m, w->pctx, rank, w->psrc, w->ptag);
                if (g) {
                    w->pfound = 1;
                    w->pf_src = g->src_c;
                    w->pf_tag = g->tag;
                    w->pf_bytes = g->bytes;
                    w->pf_time = g->arrival;
                    if (w->psrc == MS_ANY_SOURCE || w->ptag == MS_ANY_TAG)
                        push_resolution(m, rank, MS_RESOLUTION_PROBE, g->src_c, g->tag, g->bytes);
                }
            }
        }
        if (w->pfound) {
            res[0].completed = 1;
            res[0].source = w->pf_src;
            res[0].tag = (int)w->pf_tag;
            res[0].bytes = w->pf_bytes;
            res[0].complete_time = w->pf_time;
        }
        w->parmed = 0;
        w->pfound = 0;
    }
    w->blocked = 0;
    w->wkind = W_NONE;
    w->wn = 0;
    w->sched = NEVER;
    if (R < m->stop) m->stop = R;   /* the resumed rank may post events from R on */
    if (m->resume) m->resume(m->user, rank, w->thread, R, res, nout);
}

static void do_probe_check(ms_model *m, int rank, waiter *w, ms_time_t t)
{
    if (!w->blocked || w->wkind != W_PROBE) return;
    ms_msg *g = unexp_find(m, w->pctx, rank, w->psrc, w->ptag);
    if (g) {
        w->pfound = 1;
        w->pf_src = g->src_c;
        w->pf_tag = g->tag;
        w->pf_bytes = g->bytes;
        w->pf_time = g->arrival;
        if (w->psrc == MS_ANY_SOURCE || w->ptag == MS_ANY_TAG)
            push_resolution(m, rank, MS_RESOLUTION_PROBE, g->src_c, g->tag, g->bytes);
        schedule_resume(m, rank, w, t);
    } else {
        w->parmed = 1;
    }
}

/* ---- driving --------------------------------------------------------------------------------- */

static void process(ms_model *m, const ms_event *e)
{
    if (ORDER_CLASS(e->order) == CLS_POST) {   /* the rank is inside an MPI call at e->t */
        rank_state *rs = &m->ranks[EV_RANK(e)];
        if (EV_TYPE(e) == EV_PROGRESS) rs->progress_pending = 0;
        if (rs->nturns) rndv_progress(m, EV_RANK(e), e->t);
    }
    switch (EV_TYPE(e)) {
    case EV_SEND_POST: do_send(m, e->p, e->t); break;
    case EV_RECV_POST: do_recv(m, e->p, e->t); break;
    case EV_COLL_STEP: coll_step_start(m, e->p, e->t); break;
    case EV_PROBE: do_probe_check(m, EV_RANK(e), e->p, e->t); break;
    case EV_INJECT: do_inject(m, e->p, (int)EV_ARG(e), e->t); break;
    case EV_RESUME: do_resume(m, EV_RANK(e), e->p, EV_ARG(e), e->t); break;
    case EV_CANCEL: do_cancel(m, e->p, e->t); break;
    case EV_NIC: do_nic(m, (int)EV_ARG(e), e->t); break;
    case EV_PKT: packet_done(m, e->p, (int)EV_ARG(e), e->t); break;
    case EV_MCAST: do_mcast(m, e->p, e->t); break;
    case EV_RMA_POST: do_rma(m, e->p, e->t); break;
    default: break;
    }
}

static void on_deliver(void *user, const nm_delivery *d)
{
    ms_model *m = user;
    ms_msg *g = msg_at(m, (uint32_t)(d->cookie >> PK_BITS));
    if (!g) { model_error(m, "delivery with unknown cookie %" PRIu64, d->cookie); return; }
    int was = m->in_cb;
    m->in_cb = 1;
    /* Trains' EV_NICs due by now come first: packet by packet, the network would have stopped for
     * them (ms_model_run_until). */
    for (long ti; (ti = tev_first(m)) >= 0 && m->tev[ti].t <= d->deliver_time;) {
        ms_event ev;
        pop_event(m, ti, &ev);
        process(m, &ev);
    }
    /* the receiving NIC processes the packet and writes it to host memory */
    int node = ms_host_node_of_host(m->host, d->dst_host);
    int kind = (int)(d->cookie & ((1u << PK_BITS) - 1));
    ms_time_t in_mem = nic_ack(m, g, kind) ? ms_host_rx_nic_ack(m->host, node, d->payload_bytes, d->deliver_time)
                                           : ms_host_rx_packet(m->host, node, d->payload_bytes, d->deliver_time);
    /* a train's earlier packets, delivered unseen (receiving holds no state: see trains_ok) */
    for (uint32_t i = 1; i < d->train; i++) packet_done(m, g, kind, d->deliver_time);
    packet_done_at(m, g, kind, in_mem, d->deliver_time);
    /* Zero-delay reactions (a CTS making the data go, an ACK at match time, a collective step
     * starting when a receive completes) are processed now, while the network is at this time. */
    for (;;) {
        long ti;
        const ms_event *e = next_event(m, &ti);
        if (!e || e->t > d->deliver_time || ORDER_CLASS(e->order) == CLS_RESUME) break;
        ms_event ev;
        pop_event(m, ti, &ev);
        process(m, &ev);
    }
    /* the network runs ahead only to the model's next event (see ms_model_run_until) */
    ms_time_t b = network_bound(m, NEVER);
    if (b != NEVER) nm_network_stop_before(m->net, b);
    m->in_cb = was;
}

static void on_drop(void *user, const nm_delivery *d)
{
    ms_model *m = user;
    model_error(m, "packet dropped by the network (host %d -> host %d, cookie %" PRIu64 "); delivered anyway",
                d->src_host, d->dst_host, d->cookie);
    on_deliver(user, d);
}

ms_time_t ms_model_next_time(const ms_model *m)
{
    if (!m) return NEVER;
    long ti;
    const ms_event *e = next_event(m, &ti);
    ms_time_t tm = e ? e->t : NEVER, tn = nm_network_next_time(m->net);
    return tm < tn ? tm : tn;
}

ms_time_t ms_model_now(const ms_model *m) { return m ? m->now : 0; }

/* ---- local answers (docs/architecture.md "Local answers") ------------------------------------ */

ms_time_t ms_model_cpu_free(const ms_model *m, int rank)
{
    if (!m || rank < 0 || rank >= m->nranks) return -1;
    const rank_state *rs = &m->ranks[rank];
    /* what else moves it: a collective's steps, and with registration costs a rendezvous receive's
     * match (the receiver registers its buffer on its CPU), at times other ranks decide; with
     * several threads, which thread's CPU a post uses */
    if (rs->active_colls || (rs->active_recvs && ms_host_registers(m->host)) || rs->nwx) return -1;
    /* host-driven rendezvous: every entry into the library (a post too) may run held turns on
     * this host's CPU, at times the model alone knows */
    if (ms_host_rndv_in_call(m->host)) return -1;
    /* one-sided operations the target's CPU handles move it at times their origins decide */
    if (m->rma_in_call) return -1;
    return rs->w0.cpu_free;
}

int ms_model_local_send(const ms_model *m, double *copy_ps_per_byte, int *recv_moves_cpu)
{
    if (!m || m->nseg || m->recv_serial) return 0;   /* costs by size range, receives on the CPU: the shim does not know them */
    *recv_moves_cpu = ms_host_registers(m->host);
    double send_copy, shm_copy, shm_mem;
    ms_host_copy_costs(m->host, &send_copy, &shm_copy, &shm_mem);
    int intra = 0, inter = 0;   /* two ranks on one node; on two nodes */
    int *seen = calloc((size_t)m->nhosts, sizeof *seen);
    if (!seen) return 0;
    for (int r = 0; r < m->nranks; r++) {
        int h = m->ranks[r].host;
        if (h >= 0 && h < m->nhosts && seen[h]++) intra = 1;
        if (h != m->ranks[0].host) inter = 1;
    }
    free(seen);
    /* on one node the sender copies into shared memory, and the node's memory rate makes that
     * copy wait for other ranks' copies */
    if (intra && shm_mem > 0) return 0;
    if (intra && inter && send_copy != shm_copy) return 0;
    *copy_ps_per_byte = inter ? send_copy : shm_copy;
    return 1;
}

/* The least delay between another rank's next action (a post, or its resume) and a change of
 * `rank`'s requests or unexpected messages: its message's data or RTS leaves after the send
 * overhead; only a send of `rank` waiting for an answer (synchronous ACK, rendezvous CTS) can be
 * answered by a receive posted elsewhere at once, with no overhead in between. */
static ms_time_t influence_latency(const ms_model *m, int rank)
{
    return m->ranks[rank].open_sends ? 0 : m->o_s;
}

ms_time_t ms_model_quiet_until(const ms_model *m, int rank, ms_time_t t, const uint64_t *reqs, size_t n,
                               int probe, ms_time_t *lat_out)
{
    *lat_out = 0;
    if (!m || rank < 0 || rank >= m->nranks || m->in_run) return t;
    /* host-driven rendezvous: a test is an entry into the library, which runs the rank's held
     * turns; the model must see every one */
    if (ms_host_rndv_in_call(m->host) || m->rma_in_call) return t;
    const rank_state *rs = &m->ranks[rank];
    if (rs->nwx) return t;   /* several threads: another one's posts are not the caller's to bound */
    ms_time_t q = NEVER;
    /* receives (and probes) change only when a message or its RTS arrives: a send overhead after
     * its post; anything else the rank waits for may be one of its sends that waits for an answer */
    ms_time_t lat = m->o_s;
    for (size_t i = 0; i < n; i++) {
        const ms_req *r = req_find(m, rank, reqs[i]);
        if (!r) return t;                             /* gone: nothing to promise */
        if (r->done != NEVER && r->done > t && r->done < q) q = r->done;   /* decided: completes then */
        if (r->kind != REQ_RECV) lat = influence_latency(m, rank);
    }
    if (probe && rs->unexp_first < q) q = rs->unexp_first;
    ms_time_t tn = nm_network_next_time(m->net);
    if (tn < q) q = tn;
    long ti = tev_first(m);
    if (ti >= 0 && m->tev[ti].t < q) q = m->tev[ti].t;   /* internal events, as the heap's below */
    /* Pending events: the model's own (injections, NIC, packets, collective steps) may act on the
     * rank at their time; a post or a resume is another rank's action, felt a latency later. The
     * heap is walked from its top, skipping subtrees that start too late to matter. */
    *lat_out = lat;
    const ms_heap *h = &m->heap;
    size_t stack[128], sp = 0;
    if (h->n) stack[sp++] = 0;
    while (sp) {
        size_t i = stack[--sp];
        const ms_event *e = &h->e[i];
        if (e->t >= q) continue;   /* children are no earlier */
        uint64_t cls = ORDER_CLASS(e->order);
        ms_time_t b = cls == CLS_INTERNAL ? e->t : e->t + lat;
        if (b < q) q = b;
        for (size_t c = MS_HEAP_ARITY * i + 1; c <= MS_HEAP_ARITY * i + MS_HEAP_ARITY && c < h->n; c++) {
            if (sp == sizeof stack / sizeof stack[0]) return q < h->e[0].t ? q : h->e[0].t;   /* too deep: the next event */
            stack[sp++] = c;
        }
    }
    return q;
}

int ms_model_run_until(ms_model *m, ms_time_t limit)
{
    if (!m || m->in_run) return -1;
    m->in_run = 1;
    m->stop = limit;
    int rc = 0;
    m->tn_valid = 0;
    for (;;) {
        if (m->mqs.n > m->mq_limit) mq_sweep(m);
        long ti;
        const ms_event *e = next_event(m, &ti);
        if (!m->tn_valid) {
            m->tn_cache = nm_network_next_time(m->net);
            m->tn_valid = 1;
        }
        ms_time_t tm = e ? e->t : NEVER, tn = m->tn_cache;
        if (e && tm < m->stop && (ORDER_CLASS(e->order) == CLS_RESUME ? tm < tn : tm <= tn)) {
            ms_event ev;
            pop_event(m, ti, &ev);
            if (ev.t > m->now) m->now = ev.t;
            process(m, &ev);
            continue;
        }
        if (tn != NEVER && tn < m->stop) {
            /* The network's instants before the model's next event, in one call: the model would
             * take none of them in between. A network event at the time of a model event comes
             * after it, except after a resume (a resumed rank acts after what happened at its
             * resume time). Deliveries that add model events lower the bound (on_deliver). */
            /* (trains' EV_NICs aside: they take packets already in the network) */
            ms_time_t bound = network_bound(m, m->stop);
            m->tn_valid = 0;
            int nrc = nm_network_run_instants(m->net, bound);
            ms_time_t last = nm_network_now(m->net) - 1;   /* the last instant processed */
            if (last > m->now) m->now = last;
            if (nrc < 0) {
                char why[600];
                if (nm_network_failure_reason(m->net, why, sizeof why)) model_error(m, "%s", why);
                else model_error(m, "nm_network_run_until failed at t=%" PRId64, last);
                rc = -1;
                break;
            }
            continue;
        }
        break;
    }
    m->in_run = 0;
    return rc;
}

/* ---- public API ------------------------------------------------------------------------------ */

ms_model *ms_model_create(const nm_config *cfg, nm_network *net, int nranks, const int *rank_to_host, char *err,
                          size_t errlen)
{
    if (!cfg || !net || nranks < 1 || nranks >= MAX_RANKS) {
        set_err(err, errlen, "ms_model_create: need a configuration, a network and 1..%d ranks", MAX_RANKS - 1);
        return NULL;
    }
    if (!nm_config_has(cfg, "mpi.eager_threshold")) {
        set_err(err, errlen, "ms_model_create: the [mpi] keys are not registered (call ms_model_register_keys)");
        return NULL;
    }
    ms_model *m = calloc(1, sizeof *m);
    if (!m) { set_err(err, errlen, "out of memory"); return NULL; }
    m->eager_thr = nm_config_int(cfg, "mpi.eager_threshold");
    m->o_s = nm_config_int(cfg, "mpi.send_overhead");
    m->o_r = nm_config_int(cfg, "mpi.recv_overhead");
    m->o_s_pb = nm_config_int(cfg, "mpi.send_overhead_per_byte");
    m->o_r_pb = nm_config_int(cfg, "mpi.recv_overhead_per_byte");
    m->gap = nm_config_int(cfg, "mpi.gap");
    m->pkt_payload = nm_config_int(cfg, "mpi.packet_payload");
    m->env_bytes = nm_config_int(cfg, "mpi.envelope_bytes");
    m->ctl_bytes = nm_config_int(cfg, "mpi.control_bytes");
    m->poll = nm_config_int(cfg, "mpi.poll_cost");
    m->red_pb = nm_config_int(cfg, "mpi.reduce_cost_per_byte");
    if (m->pkt_payload < 1) m->pkt_payload = 1;
    m->recv_serial = nm_config_has(cfg, "mpi.recv_overhead_serial") ? (int)nm_config_int(cfg, "mpi.recv_overhead_serial") : 0;
    if (parse_segments(m, nm_config_has(cfg, "mpi.size_segments") ? nm_config_string(cfg, "mpi.size_segments") : "",
                       err, errlen) != 0) {
        free(m);
        return NULL;
    }
    for (int k = 0; k < MS_COLL_COUNT; k++) {
        char key[64];
        snprintf(key, sizeof key, "mpi.coll.%s.algorithm", ms_coll_kind_name((ms_coll_kind)k));
        const char *v = nm_config_has(cfg, key) ? nm_config_string(cfg, key) : "auto";
        int a = ms_coll_algorithm_lookup((ms_coll_kind)k, v);
        if (a < 0) {
            set_err(err, errlen, "%s: unknown algorithm '%s' (one of %s)", key, v,
                    ms_coll_algorithm_choices((ms_coll_kind)k));
            free(m);
            return NULL;
        }
        m->coll_alg[k] = a;
    }
    m->net = net;
    m->nranks = nranks;
    m->ranks = calloc((size_t)nranks, sizeof *m->ranks);
    if (!m->ranks) goto oom;
    /* ranks live on nodes (the host model); each node's NIC ports are hosts of the topology */
    m->host = ms_host_create(cfg, nranks, rank_to_host, err, errlen);
    if (!m->host) {
        ms_model_destroy(m);
        return NULL;
    }
    for (int r = 0; r < nranks; r++) {
        m->ranks[r].host = ms_host_node_of(m->host, r);
        m->ranks[r].w0.sched = NEVER;
        m->ranks[r].unexp_first = NEVER;
    }
    m->nhosts = ms_host_nodes(m->host);
    m->ports = ms_host_ports(m->host);
    m->mc_ok = nm_network_has_multicast(net) && m->ports == 1;
    m->trains_ok = nm_config_int(cfg, "mpi.packet_trains") && nm_network_has_trains(net) && m->ports == 1 &&
                   ms_host_rx_stateless(m->host);
    m->rma_in_call = ms_host_rma_in_call(m->host);
    m->nic_free = calloc((size_t)m->nhosts, sizeof *m->nic_free);
    m->nic = calloc((size_t)m->nhosts, sizeof *m->nic);
    if (!m->nic_free || !m->nic) goto oom;
    ms_pool_init(&m->connpool, sizeof(ms_conn));
    ms_pool_init(&m->msgs, sizeof(ms_msg));
    ms_pool_init(&m->reqpool, sizeof(ms_req));
    ms_pool_init(&m->mqpool, sizeof(ms_mq));
    m->mq_limit = MQ_LIMIT_MIN;
    if (!comm_new(m, MS_COMM_WORLD, nranks, 0, (size_t)nranks)) goto oom;
    ms_comm *self = comm_new(m, MS_COMM_SELF, 1, 1, (size_t)nranks);
    if (!self) goto oom;
    nm_network_set_callbacks(net, on_deliver, on_drop, m);
    return m;
oom:
    set_err(err, errlen, "out of memory");
    ms_model_destroy(m);
    return NULL;
}

void ms_model_destroy(ms_model *m)
{
    if (!m) return;
    if (m->net) nm_network_set_callbacks(m->net, NULL, NULL, NULL);
    /* collective member states still running */
    for (size_t i = 0; i < m->reqs.cap; i++) {
        ms_req *r = m->reqs.s ? m->reqs.s[i].v : NULL;
        if (r && r->kind == REQ_COLL && r->cm) {
            ms_coll_plan_free(&r->cm->plan);
            free(r->cm);
        }
    }
    for (int k = 0; m->ranks && k < m->nranks; k++)
        for (size_t i = 0; m->ranks[k].win && i < REQ_WIN; i++) {
            ms_req *r = m->ranks[k].win[i];
            if (r && r->kind == REQ_COLL && r->cm) {
                ms_coll_plan_free(&r->cm->plan);
                free(r->cm);
            }
        }
    for (size_t i = 0; i < m->ncomms; i++) {
        free(m->commv[i]->members);
        free(m->commv[i]->coll_seq);
        free(m->commv[i]);
    }
    free(m->commv);
    if (m->ranks) {
        for (int r = 0; r < m->nranks; r++) {
            rank_state *rs = &m->ranks[r];
            for (int i = 0; i <= rs->nwx; i++) {
                waiter *w = wt_at(rs, i);
                if (!w) continue;
                free(w->wreqs);
                free(w->res);
                if (i) free(w);
            }
            free(rs->wx);
            free(m->ranks[r].win);
            free(m->ranks[r].resol);
            free(m->ranks[r].turns);
        }
    }
    free(m->ranks);
    free(m->nic_free);
    if (m->nic) {
        for (int i = 0; i < m->nhosts; i++)
            for (int q = 0; q < NQ_COUNT; q++) {
                nic_queue *nq = &m->nic[i].q[q];
                for (size_t k = 0; k < nq->n; k++) mc_group_free(nq->v[(nq->head + k) % nq->cap].grp);
                free(nq->v);
            }
    }
    free(m->nic);
    ms_host_destroy(m->host);
    ms_hmap_free(&m->conns);
    ms_pool_free(&m->connpool);
    ms_heap_free(&m->heap);
    free(m->tev);
    ms_hmap_free(&m->reqs);
    ms_hmap_free(&m->comms);
    ms_hmap_free(&m->cranks);
    ms_hmap_free(&m->mqs);
    for (size_t i = 0; i < m->locks.cap; i++) {
        rma_lock *l = m->locks.s ? m->locks.s[i].v : NULL;
        if (l) free(l->q);
        free(l);
    }
    ms_hmap_free(&m->locks);
    ms_pool_free(&m->msgs);
    ms_pool_free(&m->reqpool);
    ms_pool_free(&m->mqpool);
    free(m);
}

void ms_model_set_resume(ms_model *m, ms_resume_fn fn, void *user)
{
    if (!m) return;
    m->resume = fn;
    m->user = user;
}

ms_time_t ms_model_isend_cost(const ms_model *m, uint64_t bytes) { return m ? os_cost(m, bytes) : 0; }
ms_time_t ms_model_irecv_cost(const ms_model *m, uint64_t bytes)
{
    (void)m;
    (void)bytes;
    return 0;
}

/* Common checks of a post: rank, time, comm membership, request id. */
/* A rank may act (verb: "posts", "waits", "cancels") if it exists, is neither finished nor
 * blocked, and its time is not behind the model's. */
static int check_rank(ms_model *m, int rank, ms_time_t t, const char *verb, char *err, size_t errlen)
{
    if (!m || rank < 0 || rank >= m->nranks) {
        set_err(err, errlen, "bad rank %d", rank);
        return -1;
    }
    rank_state *rs = &m->ranks[rank];
    if (rs->finalized || wt_cur(rs)->blocked) {
        if (rs->cur)
            set_err(err, errlen, "rank %d thread %d %s %s", rank, rs->cur, verb,
                    rs->finalized ? "after MPI_Finalize" : "while blocked");
        else
            set_err(err, errlen, "rank %d %s %s", rank, verb, rs->finalized ? "after MPI_Finalize" : "while blocked");
        return -1;
    }
    if (t < m->now) {
        set_err(err, errlen, "rank %d %s at t=%" PRId64 " ps, before the model's time %" PRId64 " ps", rank, verb, t,
                m->now);
        return -1;
    }
    return 0;
}

static int check_post(ms_model *m, int rank, ms_time_t t, uint64_t comm, uint64_t req, ms_comm **c_out,
                      int *crank_out, char *err, size_t errlen)
{
    if (check_rank(m, rank, t, "posts", err, errlen)) return -1;
    ms_comm *c = comm_get(m, comm);
    if (!c) {
        set_err(err, errlen, "rank %d: unknown communicator %" PRIu64, rank, comm);
        return -1;
    }
    int cr = comm_rank_of(m, c, rank);
    if (cr < 0) {
        set_err(err, errlen, "rank %d is not a member of communicator %" PRIu64, rank, comm);
        return -1;
    }
    if (req_find(m, rank, req)) {
        set_err(err, errlen, "rank %d: request %" PRIu64 " is already active", rank, req);
        return -1;
    }
    *c_out = c;
    *crank_out = cr;
    return 0;
}

static ms_req *new_user_req(ms_model *m, int rank, uint64_t id, char *err, size_t errlen)
{
    ms_req *r = req_new(m);
    if (r) {
        r->id = id;
        r->rank = rank;
        r->thread = (uint16_t)m->ranks[rank].cur;
    }
    if (!r || req_index(m, rank, r) != 0) {
        if (r) req_free(m, r);
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    return r;
}

int ms_model_isend(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, int dst, int tag,
                   uint64_t bytes, ms_send_mode mode, char *err, size_t errlen)
{
    ms_comm *c;
    int cr;
    if (check_post(m, rank, t, comm, req, &c, &cr, err, errlen)) return -1;
    if (dst != MS_PROC_NULL && (dst < 0 || dst >= c->size)) {
        set_err(err, errlen, "rank %d: send to rank %d of communicator %" PRIu64 " (size %d)", rank, dst, comm, c->size);
        return -1;
    }
    if (tag < 0) {
        set_err(err, errlen, "rank %d: send with tag %d", rank, tag);
        return -1;
    }
    if ((unsigned)mode > MS_SEND_BUFFERED) {
        set_err(err, errlen, "rank %d: bad send mode %d", rank, (int)mode);
        return -1;
    }
    ms_req *r = new_user_req(m, rank, req, err, errlen);
    if (!r) return -1;
    r->kind = REQ_SEND;
    r->mode = (uint8_t)mode;
    r->comm = comm;
    r->ctx = c->idx * 2;
    r->peer = dst;
    r->peer_world_cache = dst == MS_PROC_NULL ? -1 : comm_world_of(c, dst, rank);
    r->tag = tag;
    r->bytes = bytes;
    r->post = t;
    r->m_src = cr;
    push_post(m, rank, t, EV_SEND_POST, r);
    return 0;
}

int ms_model_irecv(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, int src, int tag,
                   uint64_t bytes, char *err, size_t errlen)
{
    ms_comm *c;
    int cr;
    if (check_post(m, rank, t, comm, req, &c, &cr, err, errlen)) return -1;
    if (src != MS_PROC_NULL && src != MS_ANY_SOURCE && (src < 0 || src >= c->size)) {
        set_err(err, errlen, "rank %d: receive from rank %d of communicator %" PRIu64 " (size %d)", rank, src, comm,
                c->size);
        return -1;
    }
    if (tag < 0 && tag != MS_ANY_TAG) {
        set_err(err, errlen, "rank %d: receive with tag %d", rank, tag);
        return -1;
    }
    ms_req *r = new_user_req(m, rank, req, err, errlen);
    if (!r) return -1;
    r->kind = REQ_RECV;
    m->ranks[rank].active_recvs++;
    r->comm = comm;
    r->ctx = c->idx * 2;
    r->peer = src;
    r->peer_world_cache = (src >= 0) ? comm_world_of(c, src, rank) : -1;
    r->tag = tag;
    r->bytes = bytes;
    r->post = t;
    r->m_src = -1;
    r->m_tag = -1;
    push_post(m, rank, t, EV_RECV_POST, r);
    return 0;
}

int ms_model_rma(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, int target, ms_rma_kind kind,
                 uint64_t bytes, uint64_t result_bytes, char *err, size_t errlen)
{
    ms_comm *c;
    int cr;
    if (check_post(m, rank, t, comm, req, &c, &cr, err, errlen)) return -1;
    if (target != MS_PROC_NULL && (target < 0 || target >= c->size)) {
        set_err(err, errlen, "rank %d: one-sided operation to rank %d of window communicator %" PRIu64 " (size %d)",
                rank, target, comm, c->size);
        return -1;
    }
    if ((unsigned)kind >= MS_RMA_KIND_COUNT) {
        set_err(err, errlen, "rank %d: one-sided operation of unknown kind %d", rank, (int)kind);
        return -1;
    }
    ms_req *r = new_user_req(m, rank, req, err, errlen);
    if (!r) return -1;
    r->kind = REQ_RMA;
    r->mode = (uint8_t)kind;
    r->comm = comm;
    r->ctx = c->idx * 2;          /* names the window: its locks */
    r->peer = target;
    r->peer_world_cache = target == MS_PROC_NULL ? -1 : comm_world_of(c, target, rank);
    r->tag = -1;
    r->bytes = kind >= MS_RMA_LOCK_SHARED ? 0 : bytes;
    r->m_bytes = rma_fetches(kind) ? result_bytes : 0;
    r->m_src = cr;
    r->post = t;
    push_post(m, rank, t, EV_RMA_POST, r);
    return 0;
}

int ms_model_buffer(ms_model *m, int rank, uint64_t req, uint64_t addr)
{
    if (!m || rank < 0 || rank >= m->nranks) return -1;
    ms_req *r = req_find(m, rank, req);
    if (!r || (r->kind != REQ_SEND && r->kind != REQ_RECV)) return -1;
    r->buf = addr;
    return 0;
}

int ms_model_irecv_notify(ms_model *m, int rank, uint64_t req)
{
    if (!m || rank < 0 || rank >= m->nranks) return -1;
    ms_req *r = req_find(m, rank, req);
    if (!r || r->kind != REQ_RECV) return -1;
    r->notify = 1;
    return 0;
}

int ms_model_forget(ms_model *m, int rank, uint64_t req, char *err, size_t errlen)
{
    if (!m || rank < 0 || rank >= m->nranks) {
        set_err(err, errlen, "bad rank %d", rank);
        return -1;
    }
    ms_req *r = req_find(m, rank, req);
    if (!r || r->in_wait) {
        set_err(err, errlen, "rank %d: MPI_Request_free of request %" PRIu64 ", which is %s", rank, req,
                r ? "being waited for" : "not active");
        return -1;
    }
    if (r->kind != REQ_SEND) {
        set_err(err, errlen, "rank %d: MPI_Request_free of an active receive or collective is not modelled", rank);
        return -1;
    }
    if (r->done != NEVER) {   /* already complete: forget it now */
        req_unindex(m, r);
        req_free(m, r);
    } else {
        r->forget = 1;
    }
    return 0;
}

int ms_model_cancel(ms_model *m, int rank, ms_time_t t, uint64_t req, char *err, size_t errlen)
{
    if (check_rank(m, rank, t, "cancels", err, errlen)) return -1;
    ms_req *r = req_find(m, rank, req);
    if (!r) {
        set_err(err, errlen, "rank %d: MPI_Cancel of request %" PRIu64 ", which is not active", rank, req);
        return -1;
    }
    if (r->kind != REQ_RECV) return 0;   /* a send that has started is not taken back: the cancel fails */
    push_post(m, rank, t, EV_CANCEL, r);
    return 0;
}

int ms_model_icoll(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, const ms_coll_args *args,
                   char *err, size_t errlen)
{
    ms_comm *c;
    int cr;
    if (check_post(m, rank, t, comm, req, &c, &cr, err, errlen)) return -1;
    if (!args || (unsigned)args->kind >= MS_COLL_COUNT) {
        set_err(err, errlen, "rank %d: bad collective", rank);
        return -1;
    }
    int v = args->kind == MS_COLL_GATHERV || args->kind == MS_COLL_SCATTERV || args->kind == MS_COLL_ALLGATHERV ||
            args->kind == MS_COLL_ALLTOALLV;
    const uint64_t *counts = (v || args->kind == MS_COLL_REDUCE_SCATTER || args->kind == MS_COLL_NEIGHBOR)
                                 ? args->counts : NULL;
    /* the lists must be as long as they say (they come from a rank or a trace) */
    int short_list = 0;
    if (args->kind == MS_COLL_NEIGHBOR)
        short_list = !counts || args->ncounts < 2 || counts[0] > args->ncounts || counts[1] > args->ncounts ||
                     args->ncounts != 2 + 2 * (counts[0] + counts[1]);
    else if (!args->inter_low && counts && args->ncounts < (size_t)c->size && (v || args->kind == MS_COLL_REDUCE_SCATTER))
        short_list = 1;
    if (short_list) {
        set_err(err, errlen, "rank %d: %s on communicator %" PRIu64 " (size %d): %zu counts do not fit", rank,
                ms_coll_mpi_name(args->kind), comm, c->size, args->ncounts);
        return -1;
    }
    if (args->inter_low < 0 || args->inter_low >= c->size) {
        set_err(err, errlen, "rank %d: %s on communicator %" PRIu64 " (size %d): low group of %d", rank,
                ms_coll_mpi_name(args->kind), comm, c->size, args->inter_low);
        return -1;
    }
    coll_member *cm = calloc(1, sizeof *cm);
    if (!cm) { set_err(err, errlen, "out of memory"); return -1; }
    /* gatherv/scatterv: only the root's counts describe the blocks */
    if ((args->kind == MS_COLL_GATHERV || args->kind == MS_COLL_SCATTERV) && cr != args->root) counts = NULL;
    ms_coll_spec spec = {args->kind, m->coll_alg[args->kind], c->size, cr, args->root, args->bytes, counts,
                         counts ? args->ncounts : 0, args->inter_low};
    if (ms_coll_generate_spec(&cm->plan, &spec) != 0) {
        ms_coll_plan_free(&cm->plan);
        free(cm);
        set_err(err, errlen, "rank %d: %s on communicator %" PRIu64 " (size %d, root %d): bad arguments", rank,
                ms_coll_mpi_name(args->kind), comm, c->size, args->root);
        return -1;
    }
    ms_req *r = new_user_req(m, rank, req, err, errlen);
    if (!r) {
        ms_coll_plan_free(&cm->plan);
        free(cm);
        return -1;
    }
    r->kind = REQ_COLL;
    m->ranks[rank].active_colls++;
    r->comm = comm;
    r->ctx = c->idx * 2 + 1;
    r->peer = -1;
    r->tag = -1;
    r->bytes = args->bytes;
    r->post = t;
    r->cm = cm;
    cm->req = r;
    cm->rank = rank;
    cm->crank = cr;
    cm->comm = c;
    cm->ctx = c->idx * 2 + 1;
    cm->kind = args->kind;
    uint64_t *seq = coll_seq_slot(c, cr, rank);
    cm->tag = (int64_t)((*seq)++);
    m->ranks[rank].st.coll_calls++;
    push_post(m, rank, t, EV_COLL_STEP, cm);
    return 0;
}

static int check_block(ms_model *m, int rank, ms_time_t t, char *err, size_t errlen)
{
    return check_rank(m, rank, t, "waits", err, errlen);
}

int ms_model_wait(ms_model *m, int rank, ms_time_t t, ms_wait_mode mode, size_t n, const uint64_t *reqs, char *err,
                  size_t errlen)
{
    if (check_block(m, rank, t, err, errlen)) return -1;
    if ((unsigned)mode > MS_TEST_PEEK || (n && !reqs)) {
        set_err(err, errlen, "rank %d: bad wait", rank);
        return -1;
    }
    rank_state *rs = &m->ranks[rank];
    waiter *w = wt_cur(rs);
    if (w->wcap < n) {
        ms_req **nw = realloc(w->wreqs, n * sizeof *nw);
        if (!nw) { set_err(err, errlen, "out of memory"); return -1; }
        w->wreqs = nw;
        w->wcap = n;
    }
    for (size_t i = 0; i < n; i++) {
        ms_req *r = req_find(m, rank, reqs[i]);
        if (!r || r->in_wait) {
            for (size_t j = 0; j < i; j++) w->wreqs[j]->in_wait = 0;
            set_err(err, errlen, "rank %d: request %" PRIu64 " is %s", rank, reqs[i],
                    r ? "listed twice in one wait" : "not active (unknown or already completed)");
            return -1;
        }
        r->in_wait = 1;
        r->wthread = (uint16_t)w->thread;
        w->wreqs[i] = r;
    }
    w->wn = n;
    w->wmode = mode;
    w->wt = t;
    w->blocked = 1;
    rndv_enter_call(m, rank, t);
    w->sched = NEVER;
    if (mode >= MS_TEST_ALL) {
        w->wkind = W_TEST;
        for (size_t i = 0; i < n; i++) w->wreqs[i]->in_wait = 0;
        schedule_resume(m, rank, w, t);
        return 0;
    }
    w->wkind = W_WAIT;
    w->nundet = 0;
    w->wmax = t;
    ms_time_t first = NEVER;
    for (size_t i = 0; i < n; i++) {
        ms_req *r = w->wreqs[i];
        if (r->done == NEVER) w->nundet++;
        else {
            if (r->done > w->wmax) w->wmax = r->done;
            if (r->done < first) first = r->done;
        }
    }
    if (n == 0) schedule_resume(m, rank, w, t);
    else if (mode == MS_WAIT_ALL) {
        if (w->nundet == 0) schedule_resume(m, rank, w, w->wmax);
    } else if (first != NEVER) {
        schedule_resume(m, rank, w, tmax(t, first));
    }
    return 0;
}

int ms_model_probe(ms_model *m, int rank, ms_time_t t, uint64_t comm, int src, int tag, int blocking, char *err,
                   size_t errlen)
{
    if (check_block(m, rank, t, err, errlen)) return -1;
    ms_comm *c = comm_get(m, comm);
    if (!c || comm_rank_of(m, c, rank) < 0) {
        set_err(err, errlen, "rank %d: probe on unknown communicator %" PRIu64, rank, comm);
        return -1;
    }
    if (src != MS_ANY_SOURCE && src != MS_PROC_NULL && (src < 0 || src >= c->size)) {
        set_err(err, errlen, "rank %d: probe for rank %d of communicator %" PRIu64 " (size %d)", rank, src, comm,
                c->size);
        return -1;
    }
    rank_state *rs = &m->ranks[rank];
    waiter *w = wt_cur(rs);
    w->pctx = c->idx * 2;
    w->pcomm = comm;
    w->psrc = src;
    w->ptag = tag;
    w->parmed = 0;
    w->pfound = 0;
    w->wn = 0;
    w->wt = t;
    w->blocked = 1;
    w->sched = NEVER;
    w->wkind = blocking ? W_PROBE : W_IPROBE;
    rndv_enter_call(m, rank, t);
    if (src == MS_PROC_NULL) {
        w->pfound = 1;
        w->pf_src = MS_PROC_NULL;
        w->pf_tag = MS_ANY_TAG;
        w->pf_bytes = 0;
        w->pf_time = t;
        schedule_resume(m, rank, w, t);
    } else if (blocking) {
        push_post(m, rank, t, EV_PROBE, w);
    } else {
        schedule_resume(m, rank, w, t);
    }
    return 0;
}

int ms_model_finalize(ms_model *m, int rank, ms_time_t t)
{
    if (!m || rank < 0 || rank >= m->nranks) return -1;
    m->ranks[rank].finalized = 1;
    m->ranks[rank].fin_t = t;
    rndv_enter_call(m, rank, t);   /* MPI_Finalize makes progress */
    return 0;
}

size_t ms_model_take_resolutions(ms_model *m, int rank, ms_resolution *out, size_t max)
{
    if (!m || rank < 0 || rank >= m->nranks) return 0;
    rank_state *rs = &m->ranks[rank];
    size_t k = 0;
    while (k < max && rs->rhead < rs->rn) out[k++] = rs->resol[rs->rhead++];
    if (rs->rhead == rs->rn) rs->rhead = rs->rn = 0;
    return k;
}

int ms_model_rank_node(const ms_model *m, int rank)
{
    return m && rank >= 0 && rank < m->nranks ? m->ranks[rank].host : -1;
}

void ms_model_rank_stats(const ms_model *m, int rank, ms_rank_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (m && rank >= 0 && rank < m->nranks) *out = m->ranks[rank].st;
}

size_t ms_model_active_requests(const ms_model *m) { return m ? m->nreqs : 0; }

int ms_model_rank_blocked(const ms_model *m, int rank)
{
    if (!m || rank < 0 || rank >= m->nranks) return 0;
    rank_state *rs = &m->ranks[rank];
    for (int i = 0; i <= rs->nwx; i++)
        if (wt_at(rs, i) && wt_at(rs, i)->blocked) return 1;
    return 0;
}

int ms_model_set_thread(ms_model *m, int rank, int thread)
{
    if (!m || rank < 0 || rank >= m->nranks || thread < 0 || thread > MS_MODEL_MAX_THREADS) return -1;
    rank_state *rs = &m->ranks[rank];
    if (thread > rs->nwx) {
        waiter **x = realloc(rs->wx, sizeof *x * (size_t)thread);
        if (!x) return -1;
        for (int i = rs->nwx; i < thread; i++) x[i] = NULL;
        rs->wx = x;
        rs->nwx = thread;
    }
    if (thread && !rs->wx[thread - 1]) {
        waiter *w = calloc(1, sizeof *w);
        if (!w) return -1;
        w->thread = thread;
        w->sched = NEVER;
        w->cpu_free = 0;
        rs->wx[thread - 1] = w;
    }
    rs->cur = thread;
    return 0;
}

static void describe_req(const ms_model *m, const ms_req *r, char *buf, size_t len)
{
    char peer[48], tag[32];
    double us = (double)r->post / 1e6;
    if (r->kind == REQ_COLL) {
        const coll_member *cm = r->cm;
        if (cm)
            snprintf(buf, len, "%s on comm %" PRIu64 " (step %zu of %zu, entered at %.3f us)",
                     ms_coll_mpi_name(cm->kind), r->comm, cm->step + 1, cm->plan.nsteps, us);
        else
            snprintf(buf, len, "collective on comm %" PRIu64 " (entered at %.3f us)", r->comm, us);
        return;
    }
    if (r->kind == REQ_RMA) {
        snprintf(buf, len, "%s to rank %d (world %d) of window communicator %" PRIu64 " (%" PRIu64 " B, posted at %.3f us)",
                 ms_model_rma_name((ms_rma_kind)r->mode), r->peer, r->peer_world_cache, r->comm, r->bytes, us);
        return;
    }
    if (r->peer == MS_ANY_SOURCE) snprintf(peer, sizeof peer, "any source");
    else if (r->peer == MS_PROC_NULL) snprintf(peer, sizeof peer, "MPI_PROC_NULL");
    else if (r->comm != MS_COMM_WORLD && r->peer_world_cache >= 0)
        snprintf(peer, sizeof peer, "rank %d (world %d)", r->peer, r->peer_world_cache);
    else snprintf(peer, sizeof peer, "rank %d", r->peer);
    if (r->tag == MS_ANY_TAG) snprintf(tag, sizeof tag, "any tag");
    else snprintf(tag, sizeof tag, "tag %" PRId64, r->tag);
    if (r->kind == REQ_RECV)
        snprintf(buf, len, "recv from %s %s comm %" PRIu64 " (posted at %.3f us)", peer, tag, r->comm, us);
    else
        snprintf(buf, len, "%ssend to %s %s comm %" PRIu64 " (%" PRIu64 " B, posted at %.3f us)",
                 r->mode == MS_SEND_SYNC ? "synchronous " : "", peer, tag, r->comm, r->bytes, us);
    (void)m;
}

int ms_model_describe_wait(const ms_model *m, int rank, char *buf, size_t len)
{
    if (!m || rank < 0 || rank >= m->nranks || !buf || len == 0) return -1;
    const waiter *w = wt_cur(&m->ranks[rank]);
    if (!w->blocked) {
        snprintf(buf, len, "not blocked");
        return 0;
    }
    if (w->wkind == W_PROBE || w->wkind == W_IPROBE) {
        char src[32], tag[32];
        if (w->psrc == MS_ANY_SOURCE) snprintf(src, sizeof src, "any source");
        else snprintf(src, sizeof src, "rank %d", w->psrc);
        if (w->ptag == MS_ANY_TAG) snprintf(tag, sizeof tag, "any tag");
        else snprintf(tag, sizeof tag, "tag %" PRId64, w->ptag);
        snprintf(buf, len, "%s for %s %s comm %" PRIu64 " (since %.3f us)",
                 w->wkind == W_PROBE ? "MPI_Probe" : "MPI_Iprobe", src, tag, w->pcomm, (double)w->wt / 1e6);
        return 0;
    }
    static const char *const names[] = {"MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Testall",
                                        "MPI_Testany", "MPI_Testsome", "MPI_Request_get_status"};
    const char *fn = w->wn == 1 && w->wmode == MS_WAIT_ALL ? "MPI_Wait"
                     : w->wn == 1 && w->wmode == MS_TEST_ALL ? "MPI_Test" : names[w->wmode];
    size_t pending = 0, first = w->wn;
    for (size_t i = 0; i < w->wn; i++)
        if (w->wreqs[i]->done == NEVER) {
            if (first == w->wn) first = i;
            pending++;
        }
    if (first == w->wn) {
        snprintf(buf, len, "%s (%zu requests, all complete; resuming)", fn, w->wn);
        return 0;
    }
    char d[200];
    describe_req(m, w->wreqs[first], d, sizeof d);
    if (pending > 1) snprintf(buf, len, "%s on %s; %zu of %zu requests pending", fn, d, pending, w->wn);
    else snprintf(buf, len, "%s on %s", fn, d);
    return 0;
}

void ms_model_get_params(const ms_model *m, ms_model_params *out)
{
    if (!m || !out) return;
    out->eager_threshold = m->eager_thr;
    out->send_overhead = m->o_s;
    out->send_overhead_per_byte = m->o_s_pb;
    out->recv_overhead = m->o_r;
    out->recv_overhead_per_byte = m->o_r_pb;
    out->gap = m->gap;
    out->packet_payload = m->pkt_payload;
    out->envelope_bytes = m->env_bytes;
    out->control_bytes = m->ctl_bytes;
    out->poll_cost = m->poll;
    out->reduce_cost_per_byte = m->red_pb;
}

const char *ms_model_last_error(const ms_model *m, uint64_t *count)
{
    if (!m) return NULL;
    if (count) *count = m->errors;
    return m->errors ? m->last_err : NULL;
}

uint64_t ms_model_clamped_injections(const ms_model *m) { return m ? m->clamped : 0; }

const char *ms_model_coll_algorithm(const ms_model *m, ms_coll_kind kind, int size, uint64_t bytes,
                                    const uint64_t *counts)
{
    if (!m || (unsigned)kind >= MS_COLL_COUNT || size < 1) return NULL;
    int a = m->coll_alg[kind];
    ms_coll_plan p = {0};
    if (ms_coll_generate(&p, kind, a, size, 0, 0, bytes, counts) != 0) {
        ms_coll_plan_free(&p);
        return NULL;
    }
    a = p.alg;
    ms_coll_plan_free(&p);
    return ms_coll_algorithm_name(kind, a);
}
