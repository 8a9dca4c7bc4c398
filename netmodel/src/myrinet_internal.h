/* The myrinet engine's private header: its state (channels, hosts, worms and their hops, the
 * event heap) and what its parts share. The model itself is explained in engine_myrinet.c; the
 * parts are
 *   engine_myrinet.c   the model, the event heap, character segments, planning, the engine's
 *                      interface (create, destroy, statistics, failure reason, keys)
 *   myrinet_buffers.c  slack buffers and flow control: occupancy, water marks, STOP/GO/BEAT,
 *                      when each buffer's next event happens
 *   myrinet_packets.c  a packet's life: injection, the NIC queue, switch requests and grants,
 *                      delivery, timeouts and drops
 *   myrinet_itb.c      in-transit buffers (ITB routing, seed 002 sec 4)
 *   myrinet_train.c    trains: many back-to-back packets run in a few events
 *   myrinet_run.c      the event loop: dispatch, run_until / run_instants, the watchdog
 * Functions shared between the parts carry the prefix myr_; the small inline accessors below are
 * used by all of them; everything else is static in its file. */
#ifndef MYRINET_INTERNAL_H
#define MYRINET_INTERNAL_H

#include "nm_internal.h"
#include "cm_heap.h"

#include <stdint.h>

enum { CL_CTRL = 0, CL_NORM = 1, CL_ARB = 2, CL_THR = 3 };
enum { CT_STOP = 1, CT_GO = 2, CT_BEAT = 3 };
enum { EK_TX = 0, EK_CQ, EK_HEAD, EK_THR, EK_ARB, EK_PER_CH };
enum { D_TX = 1, D_BUF = 2 };

#define CQ_CAP 16

typedef struct { nm_time_t t0; int32_t k0, n; } mseg;

typedef struct {
    int ch;
    int32_t len, nplan;        /* characters on this hop; planned so far */
    mseg *seg;
    int nseg;
    size_t cap;
    int alo, slo;              /* first segment not yet fully arrived / fully sent before now */
    int32_t alocnt, slocnt;
    nm_time_t avail;           /* earliest start of the first character */
    nm_time_t rb_dep;          /* when the route byte left the switch buffer (request) */
    uint8_t active, done, in_fifo, admitted;
    uint8_t itb, pooled;       /* hop into an in-transit host; holds ITB pool space */
} mhop;

typedef struct {
    uint32_t gen;
    int src, dst, nh, live, qnext;
    const nm_route *rt;
    uint64_t payload, cookie;
    nm_time_t inject, ready, rxdone;
    uint8_t completed, delivered;
    uint8_t cb;                /* makes a delivery callback: a packet, or the last of a train */
    uint32_t train;            /* packets of its train (0: a single packet) */
    uint32_t tid;              /* its train's number (nm_network_train_cut finds the train by it) */
    mhop *hop;
    int caphop;
} mworm;

typedef struct { int w, h; } whref;
typedef struct { nm_time_t t; int type; } mctrl;

typedef struct {
    nm_time_t tau, prop;
    int rev;
    int to_host, from_host;    /* host id at that end or -1 */
    int to_port, from_sw;      /* port number at the receiving end; sending switch or -1 */
    /* transmitter */
    int owner, owner_h;
    int stopped;
    nm_time_t ctrl_end, wake;
    whref *req;
    int nreq, rr_last;
    size_t capreq;
    mctrl cq[CQ_CAP];          /* control characters on the wire toward the receiving end */
    int cqh, cqn;
    /* receiving slack buffer */
    whref *fifo;
    int fh, fn, fcap;
    int stop_sent, over;
    int dirty;
    uint64_t chars_final;
    int nitb;                  /* in-transit packets in this (host) buffer */
} mchan;

typedef struct {
    int ch_out, ch_in;
    int qhead, qtail;
    nm_time_t base_ready;              /* ready time of the last packet started */
    int slots;
    int *rxq;
    int rxh, rxn, rxcap;
    nm_time_t rx_last;
    /* in-transit buffer: packets waiting to be reinjected (FIFO), pool use, local priority */
    struct mtq { int w, h; nm_time_t ready; } *tq;
    int tqh, tqn, tqcap;
    int nq, it_run;            /* local packets queued; in-transit sent in a row while local waited */
    int64_t itb_used;
    struct mtrain *tr;         /* the last packet start of a train from here, for myr_train_jump */
} mhost;

typedef struct { int w; uint32_t gen; nm_time_t dl; } mtout;
typedef struct { nm_time_t t; uint64_t k; int ent; } hslot;
/* the event heap of entities (cm_heap.h), indexed: pos[ent] is ent's slot, -1 when unscheduled */
#define MYR_POS_HOOK(pos, slot, i) ((pos)[(slot).ent] = (int)(i))
CM_HEAP_DEFINE_CTX(myr_evq, hslot, 2, int, MYR_POS_HOOK)

typedef struct {
    const nm_topology *topo;
    nm_network *net;
    nm_time_t now;
    int stepping;
    nm_time_t D, timeout, beat, send_cost, recv_cost;
    int32_t H, L, S, type_b, crc_b, gap_b;
    int rxcap;
    int nch, nhost;
    mchan *ch;
    mhost *host;
    mworm *w;
    int nw, freew;
    size_t capw;
    /* the event heap of entities */
    int nent;
    myr_evq_heap heap;
    int *pos;
    uint64_t seq;
    mtout *to;
    size_t toh, ton, tocap;
    int *dirty;
    int ndirty;
    nm_time_t next_beat;
    nm_stats st;
    uint64_t overflow, oom;
    /* the first overflow, for nm_network_failure_reason: its channel (-1: none yet), when, and
     * how full the buffer was (-1: a control queue) */
    int fail_ch;
    nm_time_t fail_t;
    int32_t fail_occ;
    /* ITB parameters (network.itb_*) and the watchdog */
    nm_time_t itb_delay, itb_host_cost;
    int64_t itb_pool;
    int itb_drop, itb_local_q;
    int64_t nlive;
    int stuck;
    /* trains (myr_train_jump): the host whose train started a packet in this event, whether that
     * start followed the previous packet's tail on the host's channel; scratch buffers */
    int tr_host, tr_tail;
    uint32_t ntrains;
    uint64_t ncb;
    int64_t *sbuf;
    size_t sn, scap;
    int *tw;
    int ntw;
    size_t captw;
} meng;

/* ---------------------------------------------------------------- shared functions */

/* engine_myrinet.c: the event heap */
void myr_sched(meng *e, int ent, nm_time_t t, int cl);
void myr_hremove(meng *e, int ent);

/* engine_myrinet.c: segments and planning */
int32_t myr_cnt_upto(mhop *hp, nm_time_t tau, nm_time_t t, int *lo, int32_t *locnt, nm_time_t lim);
void myr_seg_cut_time(mhop *hp, nm_time_t tcut, nm_time_t tau);
void myr_plan(meng *e, int c);
void myr_hop_changed(meng *e, int wi, int h, int32_t kmin);

/* myrinet_buffers.c */
int myr_fifo_push(meng *e, int c, int w, int h);
void myr_fifo_remove(meng *e, int c, int w, int h);
void myr_flush_dirty(meng *e);
void myr_send_ctrl(meng *e, int c, int type);
void myr_cq_event(meng *e, int c);
void myr_thr_event(meng *e, int c);

/* myrinet_packets.c */
int myr_inject_one(meng *e, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie, uint32_t train,
                   int cb);
int myr_inject(void *p, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie);
void myr_host_try_start(meng *e, int hid);
void myr_worm_free(meng *e, int wi);
void myr_drop_worm(meng *e, int wi);
void myr_tail_done(meng *e, int c);
void myr_arbitrate(meng *e, int c);
void myr_head_event(meng *e, int c);
void myr_nicrx_event(meng *e, int hid);
void myr_timeout_event(meng *e);

/* myrinet_itb.c */
int myr_itb_turn(meng *e, int hid);
int myr_itb_detect(meng *e, int c);
void myr_itb_unqueue(meng *e, int hid, int wi);

/* myrinet_train.c */
int myr_train_jump(meng *e, int hid, nm_time_t lim);
void myr_train_free(struct mtrain *tr);
int myr_inject_train(void *p, int src, int dst, uint64_t payload, uint32_t count, nm_time_t t, nm_time_t period,
                     uint64_t cookie);
int myr_train_cut(void *p, int src, uint64_t cookie, uint32_t keep, uint32_t *delivered);

/* myrinet_run.c */
nm_time_t myr_next_time(const void *p);
int myr_run_until(void *p, nm_time_t limit);
int myr_run_instants(void *p, nm_time_t limit, const nm_time_t *stop);

/* ---------------------------------------------------------------- small inline accessors */

#define UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline nm_time_t tmax(nm_time_t a, nm_time_t b) { return a > b ? a : b; }
static inline nm_time_t tmin(nm_time_t a, nm_time_t b) { return a < b ? a : b; }

static inline int ent_ch(int c, int k) { return c * EK_PER_CH + k; }
static inline int ent_nictx(const meng *e, int h) { return e->nch * EK_PER_CH + 2 * h; }
static inline int ent_nicrx(const meng *e, int h) { return e->nch * EK_PER_CH + 2 * h + 1; }
static inline int ent_timeout(const meng *e) { return e->nch * EK_PER_CH + 2 * e->nhost; }
static inline int ent_beat(const meng *e) { return ent_timeout(e) + 1; }

static inline nm_time_t seg_end(const mseg *s, nm_time_t tau) { return s->t0 + (nm_time_t)s->n * tau; }
static inline int32_t sent_by(const meng *e, mhop *hp, nm_time_t t)
{
    const mchan *x = &e->ch[hp->ch];
    return myr_cnt_upto(hp, x->tau, t, &hp->slo, &hp->slocnt, e->now);
}
static inline int32_t arrived_by(const meng *e, mhop *hp, nm_time_t t)
{
    const mchan *x = &e->ch[hp->ch];
    nm_time_t d = x->tau + x->prop;
    return myr_cnt_upto(hp, x->tau, t - d, &hp->alo, &hp->alocnt, e->now - d);
}

/* Segment of hop hp holding character k; when character k starts and when it has arrived
 * (NM_TIME_NEVER: not planned yet). */
static inline int seg_index(const mhop *hp, int32_t k)
{
    for (int i = hp->nseg - 1; i >= 0; i--)
        if (hp->seg[i].k0 <= k) return i;
    return -1;
}
static inline nm_time_t start_of(const meng *e, const mhop *hp, int32_t k)
{
    if (k < 0 || k >= hp->nplan) return NM_TIME_NEVER;
    const mseg *s = &hp->seg[seg_index(hp, k)];
    return s->t0 + (nm_time_t)(k - s->k0) * e->ch[hp->ch].tau;
}
static inline nm_time_t arrival_of(const meng *e, const mhop *hp, int32_t k)
{
    nm_time_t s = start_of(e, hp, k);
    if (s == NM_TIME_NEVER) return s;
    return s + e->ch[hp->ch].tau + e->ch[hp->ch].prop;
}

static inline void mark(meng *e, int c, int what)
{
    if (c < 0) return;
    mchan *x = &e->ch[c];
    if (!x->dirty) e->dirty[e->ndirty++] = c;
    x->dirty |= what;
}
static inline whref *fifo_at(mchan *x, int i) { return &x->fifo[(x->fh + i) & (x->fcap - 1)]; }

static inline int32_t end_index(const meng *e, const mhop *hp)
{
    /* index of the last CRC character on this hop: the packet is complete when it arrives */
    return hp->len - e->gap_b - 1;
}

#endif
