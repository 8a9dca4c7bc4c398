/* The `analytic` engine: exact, deterministic cut-through with channel reservation.
 *
 * Contract (netmodel/README.md has the derivation and closed forms):
 *   packet on a route of h switches, channels 0..h, payload P; T/C/G = type/CRC/GAP bytes;
 *   d = switch_delay; tau_i = bottleneck character time up to channel i (max of char_ps of
 *   channels 0..i; = tau when all links are equal).
 *   W_i = (h - i) + T + P + C + G characters occupy channel i (route bytes are stripped one
 *   per switch).
 *   head reaches channel 0 at a_0 = max(t, NIC free) + nic_send_cost (the send NIC is serial)
 *   s_i = max(a_i, free_i); free_i = s_i + W_i*tau_i
 *   a_{i+1} = s_i + tau_i + prop_i + d          (one route byte read, cable, switch)
 *   CRC at the destination: e = s_h + prop_h + (T + P + C - 1)*tau_h
 *   delivered at max(e, receive NIC free) + nic_recv_cost (the receive NIC is serial)
 * Uncontended, equal links, no NIC costs: e - t = tau*(P + 4 + h) + sum(prop) + h*d for T=4, C=1:
 * seed 000 eq. 3 for h = 1, d = 0.
 * ITB routes (in-transit hosts, seed 002 sec 4) are consecutive segments: the header byte count
 * h is the number of nodes between source and destination (switches and in-transit hosts, whose
 * ITB mark is stripped like a route byte); the head leaves an in-transit host on its output
 * channel at (first character there) + itb_detect + itb_dma, competing for that channel with the
 * host's own packets; the channel into the host is not held meanwhile (virtual cut-through into
 * the ITB pool, whose size this engine does not model).
 * Events are processed in (time, sequence) order; sequence numbers are given when events are
 * scheduled, so equal times resolve in scheduling order and runs are bit-reproducible. */
#include "nm_internal.h"

#include "cm_heap.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { EV_INJECT, EV_HEAD, EV_ARRIVE, EV_DELIVER };

/* A packet has one pending event at a time: the event is its time and (sequence number, packet)
 * in one word, 16 bytes (the heap moves half the bytes of time, seq, type, packet), its type in
 * the packet. The sequence numbers are unique, so (seq << PKT_BITS | packet) orders as seq. */
#define PKT_BITS 24
#define PKT_MAX (1 << PKT_BITS)
#define SEQ_MAX (UINT64_C(1) << (64 - PKT_BITS))   /* 1.1e12 events: days of a run */
typedef struct ev {
    nm_time_t t;
    uint64_t k;          /* seq << PKT_BITS | packet */
} ev;
static inline int ev_pkt(const ev *e) { return (int)(e->k & (PKT_MAX - 1)); }
CM_HEAP_DEFINE(an_evq, ev, 2, CM_HEAP_NO_HOOK)   /* binary: a replaced top stays near the top */

/* 64 bytes, in a pool aligned to 64: one cache line per packet. */
typedef struct pkt {
    int src, dst;
    int hop;             /* channel index of the next/current head event */
    int h;               /* header bytes: the route's nchannels - 1 */
    int next_free;       /* free-list link */
    int etype;           /* the type of its pending event */
    uint64_t payload, cookie;
    nm_time_t inject;
    nm_time_t tau;       /* bottleneck character time so far */
    const int *chan;     /* the route's channels (the topology is not changed while the engine runs) */
} pkt;
_Static_assert(sizeof(pkt) == 64, "a packet is one cache line");

/* A directed channel's state and the constants of its link that a head needs, side by side: one
 * cache line for a hop instead of one each for the link, its free time and its busy time. */
typedef struct chan {
    nm_time_t free, busy;   /* end of its last reservation; total time reserved */
    nm_time_t char_ps;      /* the link's character time */
    nm_time_t prop_host;    /* the link's propagation delay times 2, plus 1 if the channel leads into a host */
} chan;

typedef struct analytic {
    const nm_topology *topo;
    nm_network *net;
    /* parameters, integer ps / bytes */
    nm_time_t switch_delay, nic_send, nic_recv, timeout, itb_delay;
    int64_t type_bytes, crc_bytes, gap_bytes;
    /* state */
    nm_time_t now;
    uint64_t seq;
    an_evq_heap heap;
    pkt *pk;
    int npk, cappk, free_pk;
    chan *ch;                          /* per directed channel */
    nm_time_t *nic_send_free, *nic_recv_free;  /* per host */
    int running;
    nm_stats st;
} analytic;

/* ---- event heap keyed (time, seq) (cm_heap.h) ------------------------------------------ */

static int heap_push(analytic *A, nm_time_t time, int type, int pkt)
{
    if (A->seq >= SEQ_MAX) return -1;
    ev e = {time, (A->seq << PKT_BITS) | (uint64_t)pkt};
    if (an_evq_push(&A->heap, e) != 0) return -1;
    A->seq++;
    A->pk[pkt].etype = type;
    return 0;
}

/* Replace the root (the event being processed) by the packet's next event: one sift-down instead of
 * a pop and a push. The event gets its sequence number now, as a push would give it, so the order of
 * all events is the one of pop-then-push. */
static void heap_replace_top(analytic *A, nm_time_t time, int type, int pkt)
{
    /* past SEQ_MAX the numbers would wrap into the packet bits: an_run_* fails first */
    ev e = {time, (A->seq++ << PKT_BITS) | (uint64_t)pkt};
    A->pk[pkt].etype = type;
    an_evq_replace_top(&A->heap, e);
}

/* ---- packets ---------------------------------------------------------------------------- */

static int pkt_alloc(analytic *A)
{
    if (A->free_pk >= 0) {
        int i = A->free_pk;
        A->free_pk = A->pk[i].next_free;
        return i;
    }
    if (A->npk >= PKT_MAX) return -1;   /* packets in flight: their index must fit beside seq */
    if (A->npk == A->cappk) {
        int nc = A->cappk ? 2 * A->cappk : 256;
        pkt *np = aligned_alloc(64, (size_t)nc * sizeof *np);   /* sizeof(pkt) = 64 */
        if (!np) return -1;
        if (A->npk) memcpy(np, A->pk, (size_t)A->npk * sizeof(pkt));
        free(A->pk);
        A->pk = np;
        A->cappk = nc;
    }
    return A->npk++;
}

static void pkt_free(analytic *A, int i)
{
    A->pk[i].next_free = A->free_pk;
    A->free_pk = i;
}

/* ---- engine ops ------------------------------------------------------------------------- */

static void an_destroy(void *e)
{
    analytic *A = e;
    if (!A) return;
    free(A->heap.e);
    free(A->pk);
    free(A->ch);
    free(A->nic_send_free);
    free(A->nic_recv_free);
    free(A);
}

static void *an_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen)
{
    analytic *A = calloc(1, sizeof *A);
    if (!A) { nm_set_err(err, errlen, "out of memory"); return NULL; }
    A->topo = topo;
    A->net = net;
    A->switch_delay = nm_config_int(cfg, "network.switch_delay");
    A->nic_send = nm_config_int(cfg, "network.nic_send_cost");
    A->nic_recv = nm_config_int(cfg, "network.nic_recv_cost");
    A->timeout = nm_config_int(cfg, "network.timeout");
    A->itb_delay = nm_config_int(cfg, "network.itb_detect") + nm_config_int(cfg, "network.itb_dma");
    A->type_bytes = nm_config_int(cfg, "network.type_bytes");
    A->crc_bytes = nm_config_int(cfg, "network.crc_bytes");
    A->gap_bytes = nm_config_int(cfg, "network.gap_bytes");
    A->free_pk = -1;
    size_t nch = 2 * (size_t)topo->nlinks, nh = (size_t)topo->nhosts;
    A->ch = calloc(nch ? nch : 1, sizeof *A->ch);
    A->nic_send_free = calloc(nh ? nh : 1, sizeof *A->nic_send_free);
    A->nic_recv_free = calloc(nh ? nh : 1, sizeof *A->nic_recv_free);
    if (!A->ch || !A->nic_send_free || !A->nic_recv_free) {
        an_destroy(A);
        nm_set_err(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t c = 0; c < nch; c++) {
        const nm_link *L = &topo->links[c / 2];
        int to_host = (c & 1) ? L->a_kind == NM_NODE_HOST : L->b_kind == NM_NODE_HOST;
        A->ch[c].char_ps = L->char_ps;
        A->ch[c].prop_host = 2 * L->prop_ps + to_host;
    }
    return A;
}

static int an_inject(void *e, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie)
{
    analytic *A = e;
    const nm_topology *T = A->topo;
    if (src < 0 || dst < 0 || src >= T->nhosts || dst >= T->nhosts || src == dst) return -2;
    const nm_route *r = nm_route_get(T, src, dst);
    if (r->nhops < 0) return -3;
    if (t < A->now) return -4;
    if (payload > ((uint64_t)1 << 40)) return -5;  /* keeps W*tau far from int64 overflow */
    int i = pkt_alloc(A);
    if (i < 0) return -6;
    pkt *p = &A->pk[i];
    p->src = src;
    p->dst = dst;
    p->payload = payload;
    p->cookie = cookie;
    p->inject = t;
    p->hop = 0;
    p->tau = 0;
    p->h = r->nchannels - 1;
    p->chan = r->channel;
    if (heap_push(A, t, EV_INJECT, i) != 0) {
        pkt_free(A, i);
        return -6;
    }
    A->st.packets_injected++;
    return 0;
}

static nm_time_t an_next_time(const void *e)
{
    const analytic *A = e;
    return A->heap.n ? A->heap.e[0].t : NM_TIME_NEVER;
}

static nm_time_t tmax(nm_time_t a, nm_time_t b) { return a > b ? a : b; }

/* Process the event E at the root of the heap: it is replaced by the packet's next event, or removed
 * (delivery; then the user's callbacks run, which may inject). */
static int process(analytic *A, const ev *E)
{
    int i = ev_pkt(E);
    pkt *p = &A->pk[i];
    if (A->seq >= SEQ_MAX) return -1;   /* the next sequence number would not fit */
    switch (p->etype) {
    case EV_INJECT: {
        nm_time_t a0 = tmax(E->t, A->nic_send_free[p->src]) + A->nic_send;
        A->nic_send_free[p->src] = a0;
        heap_replace_top(A, a0, EV_HEAD, i);
        return 0;
    }
    case EV_HEAD: {
        int c = p->chan[p->hop];
        chan *C = &A->ch[c];
        p->tau = tmax(p->tau, C->char_ps);
        int64_t h = p->h;   /* header bytes: switches (+ in-transit hosts) */
        int64_t body = A->type_bytes + (int64_t)p->payload + A->crc_bytes;
        int64_t W = (h - p->hop) + body + A->gap_bytes;
        nm_time_t s = tmax(E->t, C->free);
        C->free = s + W * p->tau;
        C->busy += W * p->tau;
        A->st.char_hops += (uint64_t)(W - A->gap_bytes);
        nm_time_t prop = C->prop_host >> 1;
        if (p->hop < h) {
            p->hop++;
            if (C->prop_host & 1) {   /* in-transit host: detect, program the DMA, reinject */
                A->st.itb_packets++;
                heap_replace_top(A, s + p->tau + prop + A->itb_delay, EV_HEAD, i);
                return 0;
            }
            heap_replace_top(A, s + p->tau + prop + A->switch_delay, EV_HEAD, i);
            return 0;
        }
        nm_time_t last = body > 0 ? body - 1 : 0;
        heap_replace_top(A, s + prop + last * p->tau, EV_ARRIVE, i);
        return 0;
    }
    case EV_ARRIVE: {
        nm_time_t dl = tmax(E->t, A->nic_recv_free[p->dst]) + A->nic_recv;
        A->nic_recv_free[p->dst] = dl;
        if (dl > E->t) {
            heap_replace_top(A, dl, EV_DELIVER, i);
            return 0;
        }
        __attribute__((fallthrough));  /* no receive cost: deliver now */
    }
    case EV_DELIVER: {
        nm_delivery d = {p->src, p->dst, p->payload, p->inject, E->t, p->cookie, 0};
        an_evq_pop(&A->heap, NULL);  /* before the callback, which may inject */
        pkt_free(A, i);   /* before the callback, which may inject and move the pool */
        if (A->timeout > 0 && d.deliver_time - d.inject_time > A->timeout) {
            A->st.packets_dropped++;
            nm_network_drop_(A->net, &d);
        } else {
            A->st.packets_delivered++;
            A->st.payload_bytes_delivered += d.payload_bytes;
            nm_network_deliver_(A->net, &d);
        }
        return 0;
    }
    }
    an_evq_pop(&A->heap, NULL);
    return -1;
}

static int an_run_until(void *e, nm_time_t limit)
{
    analytic *A = e;
    if (A->running) return -1;  /* no re-entry from a callback */
    A->running = 1;
    int rc = 0;
    while (A->heap.n && A->heap.e[0].t < limit) {
        ev E = A->heap.e[0];   /* stays at the root until process() replaces or removes it */
        A->now = E.t;  /* never backwards: heap order and injections at >= now */
        A->st.events++;
        if (process(A, &E) != 0) { rc = -1; break; }
    }
    if (rc == 0 && limit != NM_TIME_NEVER && limit > A->now) A->now = limit;
    A->running = 0;
    return rc;
}

/* nm_network_run_instants: the same events in the same order as run_until(t + 1) per instant t. */
static int an_run_instants(void *e, nm_time_t limit, const nm_time_t *stop)
{
    analytic *A = e;
    if (A->running) return -1;
    A->running = 1;
    int rc = 0, any = 0;
    nm_time_t last = 0;
    while (A->heap.n) {
        nm_time_t t = A->heap.e[0].t;
        if (t >= limit || t >= *stop) break;
        ev E = A->heap.e[0];
        A->now = t;
        last = t;
        any = 1;
        A->st.events++;
        if (process(A, &E) != 0) { rc = -1; break; }
    }
    if (rc == 0 && any && last + 1 > A->now) A->now = last + 1;
    A->running = 0;
    return rc;
}

static nm_time_t an_now(const void *e) { return ((const analytic *)e)->now; }

static void an_stats(const void *e, nm_stats *out) { *out = ((const analytic *)e)->st; }

static size_t an_link_busy(const void *e, nm_time_t *busy, size_t max)
{
    const analytic *A = e;
    size_t n = 2 * (size_t)A->topo->nlinks;
    for (size_t c = 0; busy && c < n && c < max; c++) busy[c] = A->ch[c].busy;
    return n;
}

const nm_engine_ops nm_engine_analytic = {
    {"analytic", "analytic", "closed-form, cut-through with channel reservation"}, 1, an_create, an_destroy, an_inject, an_next_time, an_run_until, an_now, an_stats, an_link_busy,
    .run_instants = an_run_instants,
};
