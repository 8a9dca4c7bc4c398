/* Packet-level engines for the other fabrics of the seeds: `ethernet` (store-and-forward
 * switches, finite output queues, 802.3x pause), `avici` (a torus of line cards, wormhole inside,
 * store-and-forward at the line cards, contention only at output ports) and `sci` (unidirectional
 * ringlets with bypass, request and echo packets, the B-Link bus between a node's rings).
 *
 * One core serves the three. A packet handed to the network becomes units (Ethernet frames,
 * SCI requests, Avici packets) that follow a path of servers. A server is a transmitter (a link
 * channel, a fabric port, a bus) with a rate, a FIFO queue in two priority classes and, for
 * Ethernet, a pause state. At each step the unit either waits for its tail (store-and-forward)
 * or may start when its head has arrived (cut-through: SCI bypass, the Avici fabric), never
 * finishing before its tail arrived. Times are integer picoseconds; events are ordered by
 * (time, sequence) so runs are bit-reproducible. Rules and keys: netmodel/README.md. */
#include "nm_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_ETHERNET, KIND_AVICI, KIND_SCI };
enum { EV_ARRIVE, EV_DONE, EV_PAUSE };

typedef struct pev {
    nm_time_t time;
    uint64_t seq;
    int type, idx, arg;
} pev;

typedef struct server {
    double bps;                 /* bit rate; the time of b bytes is round(8e12 b / bps) */
    int infinite;               /* a delay, not a queue (no waiting, no contention) */
    int fabric;                 /* carries fbytes (Avici fabric ports, SCI B-Link) */
    int busy, paused;
    int qhead[2], qtail[2];     /* priority 0 (bypass) before 1 (local) */
    int64_t qbytes;             /* bytes waiting */
    int cur_ingress;            /* accounting of the unit in service: ingress channel, or -1 */
    int64_t cur_bytes;
    nm_time_t busy_total;
} server;

typedef struct step {
    int server;
    char cut;                   /* cut-through: may start when the head has arrived */
    char prio;                  /* 0 bypass, 1 local */
    char acct;                  /* Ethernet: counts against its ingress channel's pause budget */
    nm_time_t lat;              /* after this server: cable, switch or node latency */
} step;

typedef struct unit {
    int pkt, kind;              /* kind 0 data, 1 echo (SCI) */
    int stepi;
    int64_t bytes;              /* bytes on the wire at link servers (service) */
    int64_t fbytes;             /* bytes at fabric and bus servers (Avici flits; else = bytes) */
    int64_t tail_bytes;         /* of those, trailing bytes that do not delay reception (IFG) */
    nm_time_t tail;             /* when its tail reaches the current step's server */
    int next;                   /* queue / free-list link */
} unit;

/* A multicast (Ethernet switch multicast): the union of the routes to its destinations as a tree
 * of steps; a frame is copied where the tree branches. Leaves (st.server < 0) are destinations. */
typedef struct mnode {
    step st;
    int parent, child, sibling;
    int dst;                    /* leaf: index in the destination list */
} mnode;

typedef struct mcast {
    mnode *node;
    int nnode, capnode;
    int ndst, dst_left;         /* destinations, and those not yet finished */
    int *dst, *left;            /* per destination: host, frames still to arrive */
    uint64_t *cookie;
    nm_time_t *last;
    char *dropped;
} mcast;

typedef struct packet {
    int src, dst;
    uint64_t payload, cookie;
    nm_time_t inject, last;
    int units_left, echo_left, dropped;
    int npath, necho;           /* steps of the path (and of the echo path, SCI) */
    int next_free;
    mcast *mc;                  /* a multicast (units' stepi is then a tree node), else NULL */
} packet;

typedef struct pengine {
    int kind;
    const nm_topology *topo;
    nm_network *net;
    /* servers: channels first (2 * nlinks), then per-switch servers (avici inj/ej, sci B-Link) */
    server *sv;
    int nsv;
    int *ing_xoff;              /* Ethernet: XOFF sent on the channel (per channel) */
    int64_t *ing_bytes;         /* bytes in a switch that entered through the channel */
    /* parameters */
    int64_t mtu, eth_header, eth_preamble, eth_ifg, eth_min_frame, queue_bytes;
    int pause;
    int64_t pause_high, pause_low;
    nm_time_t switch_latency;
    double fabric_bps;
    int64_t flit_payload, flit_header;
    nm_time_t hop_latency, lc_latency;
    int multicast;              /* ethernet: switches replicate multicast frames */
    int gige;                   /* avici: hosts on GigE (1) or on the fabric (0) */
    int ingress_delay;          /* avici gige: the host's GigE send is a delay, not a queue */
    double gige_bps;            /* avici gige: the hosts' GigE links */
    double blink_bps;
    int64_t sci_payload, sci_overhead, sci_echo, sci_header;
    nm_time_t sci_node_latency;
    /* state */
    nm_time_t now;
    uint64_t seq;
    pev *heap;
    size_t nheap, capheap;
    packet *pk;
    step *paths;                /* maxpath steps per packet, then maxpath for the echo */
    int maxpath;
    int npk, cappk, free_pk;
    unit *un;
    int nun, capun, free_un;
    int running;
    nm_stats st;
} pengine;

/* ---- keys --------------------------------------------------------------------------------- */

static const nm_key_def packet_keys[] = {
    {"ethernet.mtu", NM_KEY_INT, "B", "1500", "IEEE 802.3 (1500-byte payload; jumbo frames: 9000)",
     "largest frame payload; a packet is sent as ceil(payload / mtu) frames", NULL, NM_KEY_POSITIVE},
    {"ethernet.header_bytes", NM_KEY_INT, "B", "18", "IEEE 802.3 (14-byte MAC header + 4-byte FCS)",
     "frame header and CRC", NULL, NM_KEY_NONNEG},
    {"ethernet.preamble_bytes", NM_KEY_INT, "B", "8", "IEEE 802.3 (7-byte preamble + SFD)",
     "preamble before every frame", NULL, NM_KEY_NONNEG},
    {"ethernet.ifg_bytes", NM_KEY_INT, "B", "12", "IEEE 802.3 (96-bit inter-frame gap)",
     "idle after every frame", NULL, NM_KEY_NONNEG},
    {"ethernet.min_frame", NM_KEY_INT, "B", "64", "IEEE 802.3 (64-byte minimum frame)",
     "shortest frame, header and CRC included (short payloads are padded)", NULL, NM_KEY_NONNEG},
    {"ethernet.queue_bytes", NM_KEY_INT, "B", "262144", "guess (seed 001 gives no buffer size)",
     "output queue of each switch port; a frame that does not fit is dropped", NULL, NM_KEY_POSITIVE},
    {"ethernet.pause", NM_KEY_INT, "", "1", "seed 001 (Gigabit ethernet: 802.3x standard pause)",
     "1: a switch sends PAUSE on an input link whose frames hold more than pause_high bytes in it, "
     "and resumes it below pause_low; 0: frames that do not fit are dropped", NULL, NM_KEY_NONNEG},
    {"ethernet.pause_high", NM_KEY_INT, "B", "65536", "guess (802.3x leaves the thresholds to the switch)",
     "bytes held in a switch from one input link above which that link is paused", NULL, NM_KEY_POSITIVE},
    {"ethernet.pause_low", NM_KEY_INT, "B", "32768", "guess",
     "bytes held from a paused input link below which it is resumed", NULL, NM_KEY_NONNEG},
    {"ethernet.multicast", NM_KEY_INT, "", "0",
     "seed 001 Fan results ('Conventional GigE multicast hardware'); IEEE 802.1D (a multicast frame is "
     "forwarded on the ports of the spanning tree that lead to its group)",
     "1: a multicast (nm_network_inject_multicast, the MPI model's bcast algorithm 'multicast') is sent "
     "once and copied by the switches where the routes to its destinations part; 0: one unicast per "
     "destination", NULL, NM_KEY_NONNEG},
    {"ethernet.switch_latency", NM_KEY_INT, "ps", "0",
     "seed 001 Characterization results ('No conventional switch latency, 10-30 us')",
     "store-and-forward forwarding delay per switch (a frame waits this long after its last bit)", NULL,
     NM_KEY_NONNEG},
    {"avici.fabric_rate", NM_KEY_DOUBLE, "b/s", "20e9", "seed 001 Avici terabit switch router ('Internal 20 Gb/s links')",
     "rate of the fabric links and of a line card's fabric ports", NULL, NM_KEY_POSITIVE},
    {"avici.flit_payload", NM_KEY_INT, "B", "64", "guess (seed 001 gives no flit size)",
     "data bytes per fabric flit", NULL, NM_KEY_POSITIVE},
    {"avici.flit_header", NM_KEY_INT, "B", "8", "guess", "header bytes per fabric flit", NULL, NM_KEY_NONNEG},
    {"avici.hop_latency", NM_KEY_INT, "ps", "75000",
     "seed 001 Characterization results: Avici fabric max - min latency = 0.150 us over 2 more hops (16x4x4)",
     "head latency per fabric hop (wormhole)", NULL, NM_KEY_NONNEG},
    {"avici.linecard_latency", NM_KEY_INT, "ps", "23700",
     "seed 001 Characterization results: min 0.180 us = 2 flit times + 1 hop + 2 x this",
     "latency of a line card between host side and fabric, each way", NULL, NM_KEY_NONNEG},
    {"avici.hosts", NM_KEY_STRING, "", "fabric", "seed 001 (Avici fabric vs Avici GigE)",
     "how hosts attach: fabric (directly, at the fabric rate) or gige (Gigabit Ethernet frames on the "
     "host links; line cards store and forward them)", "fabric|gige", 0},
    {"avici.gige_rate", NM_KEY_DOUBLE, "b/s", "1e9", "seed 001 (Avici GigE: hosts on Gigabit Ethernet line-card ports)",
     "rate of the hosts' links when avici.hosts = gige (network.link_rate is then the rate at which a "
     "host's NIC hands frames to its line card)", NULL, NM_KEY_POSITIVE},
    {"avici.gige_ingress", NM_KEY_STRING, "", "link", "IEEE 802.3 (a host's link sends one frame at a time)",
     "gige hosts: link (the host's frames queue on its GigE link) or delay (each frame reaches the "
     "line card one frame time after it is sent, no queueing: seed 001's interface layer, whose "
     "Avici GigE fan-out of 0.259 ms is 17 times faster than one GigE link allows)", "link|delay", 0},
    {"sci.payload_bytes", NM_KEY_INT, "B", "128", "seed 004 sec 3.1 (PCI-SCI adapter: 128-byte payloads)",
     "data bytes per request packet", NULL, NM_KEY_POSITIVE},
    {"sci.request_overhead", NM_KEY_INT, "B", "48",
     "guess: with echo_bytes = 16, 128 / (128 + 48 + 16) = 66.7 %, seed 004 sec 3.1's efficiency",
     "header, CRC and idle symbols per request packet", NULL, NM_KEY_NONNEG},
    {"sci.echo_bytes", NM_KEY_INT, "B", "16", "guess (SCI echo packets are short; seed 004 sec 3.1 via the 66.7 %)",
     "bytes of the echo packet that returns from the destination to the source", NULL, NM_KEY_NONNEG},
    {"sci.header_bytes", NM_KEY_INT, "B", "16", "guess (SCI request header)",
     "bytes a node receives before a bypassing packet may leave (cut-through)", NULL, NM_KEY_NONNEG},
    {"sci.blink_rate", NM_KEY_DOUBLE, "b/s", "5.12e9", "seed 004 Table 1 (B-Link 64 bit, 80 MHz: 640 MB/s)",
     "rate of the B-Link bus between a node's link controllers and its PCI side", NULL, NM_KEY_POSITIVE},
    {"sci.node_latency", NM_KEY_INT, "ps", "0", "guess (seed 004 models throughput only)",
     "extra head latency through a node's bypass", NULL, NM_KEY_NONNEG},
};

int nm_packet_register_keys(nm_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof packet_keys / sizeof packet_keys[0]; i++)
        if (!nm_config_has(cfg, packet_keys[i].name) && nm_config_register(cfg, &packet_keys[i], 1, err, errlen) != 0)
            return -1;
    return 0;
}

/* ---- heap --------------------------------------------------------------------------------- */

static inline int pev_less(const pev *a, const pev *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static int push(pengine *E, nm_time_t time, int type, int idx, int arg)
{
    if (E->nheap == E->capheap) {
        size_t nc = E->capheap ? 2 * E->capheap : 256;
        pev *nh = realloc(E->heap, nc * sizeof *nh);
        if (!nh) return -1;
        E->heap = nh;
        E->capheap = nc;
    }
    pev e = {time, E->seq++, type, idx, arg};
    size_t i = E->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!pev_less(&e, &E->heap[p])) break;
        E->heap[i] = E->heap[p];
        i = p;
    }
    E->heap[i] = e;
    return 0;
}

static pev pop(pengine *E)
{
    pev top = E->heap[0];
    pev x = E->heap[--E->nheap];
    size_t n = E->nheap, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && pev_less(&E->heap[c + 1], &E->heap[c])) c++;
        if (!pev_less(&E->heap[c], &x)) break;
        E->heap[i] = E->heap[c];
        i = c;
    }
    if (n) E->heap[i] = x;
    return top;
}

/* ---- pools -------------------------------------------------------------------------------- */

static int pkt_alloc(pengine *E)
{
    if (E->free_pk >= 0) {
        int i = E->free_pk;
        E->free_pk = E->pk[i].next_free;
        return i;
    }
    if (E->npk == E->cappk) {
        int nc = E->cappk ? 2 * E->cappk : 64;
        packet *np = realloc(E->pk, (size_t)nc * sizeof *np);
        if (!np) return -1;
        E->pk = np;
        step *ns = realloc(E->paths, (size_t)nc * 2 * (size_t)E->maxpath * sizeof *ns);
        if (!ns) return -1;
        E->paths = ns;
        E->cappk = nc;
    }
    return E->npk++;
}

static void mcast_free(mcast *mc)
{
    if (!mc) return;
    free(mc->node);
    free(mc->dst);
    free(mc->left);
    free(mc->cookie);
    free(mc->last);
    free(mc->dropped);
    free(mc);
}

static void pkt_free(pengine *E, int i)
{
    mcast_free(E->pk[i].mc);
    E->pk[i].mc = NULL;
    E->pk[i].next_free = E->free_pk;
    E->free_pk = i;
}

/* Make room for paths of len steps: every packet slot's path moves to the longer stride (a
 * callback's injection may call this, like pkt_alloc's realloc: steps are re-read by index). */
static int paths_fit(pengine *E, int len)
{
    if (len <= E->maxpath) return 0;
    size_t slots = 2 * (size_t)E->cappk;
    if (slots) {
        step *ns = malloc(slots * (size_t)len * sizeof *ns);
        if (!ns) return -1;
        for (size_t i = 0; i < slots; i++)
            memcpy(ns + i * (size_t)len, E->paths + i * (size_t)E->maxpath, (size_t)E->maxpath * sizeof *ns);
        free(E->paths);
        E->paths = ns;
    }
    E->maxpath = len;
    return 0;
}

static step *path_of(pengine *E, int p, int echo)
{
    return &E->paths[((size_t)p * 2 + (size_t)echo) * (size_t)E->maxpath];
}

static int unit_alloc(pengine *E)
{
    if (E->free_un >= 0) {
        int i = E->free_un;
        E->free_un = E->un[i].next;
        return i;
    }
    if (E->nun == E->capun) {
        int nc = E->capun ? 2 * E->capun : 256;
        unit *nu = realloc(E->un, (size_t)nc * sizeof *nu);
        if (!nu) return -1;
        E->un = nu;
        E->capun = nc;
    }
    return E->nun++;
}

static void unit_free(pengine *E, int u)
{
    E->un[u].next = E->free_un;
    E->free_un = u;
}

/* ---- timing ------------------------------------------------------------------------------- */

static inline nm_time_t bytes_time(double bps, int64_t bytes)
{
    return (nm_time_t)llround((double)bytes * 8e12 / bps);
}

static int64_t frame_wire(const pengine *E, int64_t payload)
{
    int64_t f = payload + E->eth_header;
    if (f < E->eth_min_frame) f = E->eth_min_frame;
    return E->eth_preamble + f + E->eth_ifg;
}

/* Fabric bytes of `bytes` carried in flits. */
static int64_t flit_bytes(const pengine *E, int64_t bytes)
{
    int64_t n = (bytes + E->flit_payload - 1) / E->flit_payload;
    if (n < 1) n = 1;
    return n * (E->flit_payload + E->flit_header);
}

static nm_time_t chan_prop(const pengine *E, int c) { return E->topo->links[c / 2].prop_ps; }
static double chan_bps(const pengine *E, int c) { return E->sv[c].bps; }

/* ---- the core ----------------------------------------------------------------------------- */

static void packet_unit_done(pengine *E, int p, nm_time_t t, int dropped);
static int launch(pengine *E, int p, int kind, int64_t bytes, int64_t fbytes, int64_t tail, nm_time_t t);

static inline int64_t unit_size(const server *S, const unit *U) { return S->fabric ? U->fbytes : U->bytes; }

/* Server s carries `size` bytes of a unit that came in through `ingress` (or -1) until `end`: a
 * delay server only gives back the bytes' count in the switch, a queueing one is busy until then. */
static inline int occupy(pengine *E, int s, int64_t size, int ingress, nm_time_t end)
{
    server *S = &E->sv[s];
    if (S->infinite) {
        if (ingress >= 0) E->ing_bytes[ingress] -= size;
        return 0;
    }
    S->busy = 1;
    S->cur_ingress = ingress;
    S->cur_bytes = size;
    return push(E, end, EV_DONE, s, 0);
}

/* A multicast frame on server s from t: store-and-forward (the ethernet engine), then one copy
 * per branch of the tree below its node. */
static int serve_mcast(pengine *E, int s, int u, nm_time_t t)
{
    server *S = &E->sv[s];
    int64_t size = unit_size(S, &E->un[u]);
    mcast *mc = E->pk[E->un[u].pkt].mc;
    const mnode *nd = &mc->node[E->un[u].stepi];
    nm_time_t svc = bytes_time(S->bps, size);
    nm_time_t end = t + svc;
    nm_time_t rx_end = end - bytes_time(S->bps, E->un[u].tail_bytes);
    if (rx_end < t) rx_end = t;
    S->busy_total += end - t;
    if (s < 2 * E->topo->nlinks) E->st.char_hops += (uint64_t)size;
    int ingress = nd->st.acct && nd->parent >= 0 ? mc->node[nd->parent].st.server : -1;
    nm_time_t arrive = rx_end + nd->st.lat;
    int first = nd->child;
    for (int c = mc->node[first].sibling; c >= 0; c = mc->node[c].sibling) {
        int v = unit_alloc(E);   /* may move E->un */
        if (v < 0) return -1;
        E->un[v] = E->un[u];
        E->un[v].stepi = c;
        E->un[v].tail = arrive;
        if (push(E, arrive, EV_ARRIVE, v, 0) != 0) return -1;
    }
    E->un[u].stepi = first;
    E->un[u].tail = arrive;
    if (push(E, arrive, EV_ARRIVE, u, 0) != 0) return -1;
    return occupy(E, s, size, ingress, end);
}

static void mcast_done(pengine *E, int p, int node, nm_time_t t, int dropped);

/* Serve unit u (already out of any queue) on server s from t. */
static int serve(pengine *E, int s, int u, nm_time_t t)
{
    server *S = &E->sv[s];
    unit *U = &E->un[u];
    packet *P = &E->pk[U->pkt];
    if (P->mc) return serve_mcast(E, s, u, t);
    const step *path = path_of(E, U->pkt, U->kind);
    const step *st = &path[U->stepi];
    int npath = U->kind ? P->necho : P->npath;
    int64_t size = unit_size(S, U);
    nm_time_t svc = bytes_time(S->bps, size);
    nm_time_t end = t + svc;
    if (end < U->tail) end = U->tail;   /* cut-through: never ahead of its own tail */
    nm_time_t rx_end = S->fabric ? end : end - bytes_time(S->bps, U->tail_bytes);
    if (rx_end < t) rx_end = t;
    S->busy_total += end - t;
    if (s < 2 * E->topo->nlinks) E->st.char_hops += (uint64_t)size;
    int ingress = st->acct && U->stepi > 0 ? path[U->stepi - 1].server : -1;
    /* when it reaches the next step: its tail, or its head when that step is cut-through */
    nm_time_t tail_next = rx_end + st->lat;
    nm_time_t arrive = tail_next;
    if (U->stepi + 1 < npath && path[U->stepi + 1].cut) {
        int64_t hb = E->kind == KIND_SCI ? E->sci_header : E->flit_payload + E->flit_header;
        if (hb > size) hb = size;
        nm_time_t head = t + bytes_time(S->bps, hb) + st->lat;
        if (head < arrive) arrive = head;
    }
    U->tail = tail_next;
    U->stepi++;
    if (push(E, arrive, EV_ARRIVE, u, 0) != 0) return -1;
    return occupy(E, s, size, ingress, end);
}

/* Serve the first waiting unit of server s at t. */
static int server_start(pengine *E, int s, nm_time_t t)
{
    server *S = &E->sv[s];
    int pr = S->qhead[0] >= 0 ? 0 : 1;
    int u = S->qhead[pr];
    if (u < 0) return 0;
    unit *U = &E->un[u];
    S->qhead[pr] = U->next;
    if (S->qhead[pr] < 0) S->qtail[pr] = -1;
    S->qbytes -= unit_size(S, U);
    return serve(E, s, u, t);
}

/* Queue unit u, whose step is st (ingress: the server it came from, or -1), at st's server. Inlined
 * into the hot unicast path (a call there cost 5 % of the sci engine's instructions). */
static inline __attribute__((always_inline)) int enqueue(pengine *E, int u, const step *st, int ingress, nm_time_t t);

/* A multicast frame reaches tree node stepi: a destination, or a server to queue at. */
static int mcast_arrive(pengine *E, int u, nm_time_t t)
{
    unit *U = &E->un[u];
    int p = U->pkt;
    mcast *mc = E->pk[p].mc;
    const mnode *nd = &mc->node[U->stepi];
    if (nd->st.server < 0) {
        int node = U->stepi;
        unit_free(E, u);
        mcast_done(E, p, node, t, 0);
        return 0;
    }
    int ingress = nd->parent >= 0 ? mc->node[nd->parent].st.server : -1;
    return enqueue(E, u, &nd->st, nd->st.acct ? ingress : -1, t);
}

/* Unit u reaches step u->stepi of its path at t (its head if the step is cut-through, else its
 * tail). */
static int unit_arrive(pengine *E, int u, nm_time_t t)
{
    unit *U = &E->un[u];
    packet *P = &E->pk[U->pkt];
    if (P->mc) return mcast_arrive(E, u, t);
    int npath = U->kind ? P->necho : P->npath;
    if (U->stepi == npath) {   /* wholly at the destination */
        int p = U->pkt, kind = U->kind;
        unit_free(E, u);
        if (kind == 0) {
            if (P->necho > 0) {   /* SCI: the echo returns to the source */
                P->echo_left++;
                if (launch(E, p, 1, E->sci_echo, E->sci_echo, 0, t) != 0) return -1;
            }
            packet_unit_done(E, p, t, 0);
        } else if (--P->echo_left == 0 && P->units_left == 0) {
            pkt_free(E, p);
        }
        return 0;
    }
    const step *st = &path_of(E, U->pkt, U->kind)[U->stepi];
    int ingress = st->acct && U->stepi > 0 ? path_of(E, U->pkt, U->kind)[U->stepi - 1].server : -1;
    return enqueue(E, u, st, ingress, t);
}

static inline __attribute__((always_inline)) int enqueue(pengine *E, int u, const step *st, int ingress, nm_time_t t)
{
    unit *U = &E->un[u];
    int s = st->server;
    server *S = &E->sv[s];
    if (S->infinite) return serve(E, s, u, t);
    int64_t size = unit_size(S, U);
    if (st->acct && E->queue_bytes > 0 && S->qbytes + size > E->queue_bytes) {
        /* tail drop at a full output queue */
        int p = U->pkt, node = U->stepi;
        unit_free(E, u);
        if (E->pk[p].mc) mcast_done(E, p, node, t, 1);
        else packet_unit_done(E, p, t, 1);
        return 0;
    }
    if (ingress >= 0) {
        int in = ingress;
        E->ing_bytes[in] += size;
        if (E->pause && !E->ing_xoff[in] && E->ing_bytes[in] > E->pause_high) {
            E->ing_xoff[in] = 1;
            /* a 64-byte PAUSE frame crosses the input link back to its transmitter */
            nm_time_t d = bytes_time(chan_bps(E, in), E->eth_preamble + E->eth_min_frame) + chan_prop(E, in);
            if (push(E, t + d, EV_PAUSE, in, 1) != 0) return -1;
        }
    }
    U->next = -1;
    int pr = st->prio;
    if (S->qtail[pr] >= 0) E->un[S->qtail[pr]].next = u;
    else S->qhead[pr] = u;
    S->qtail[pr] = u;
    S->qbytes += size;
    if (!S->busy && !S->paused) return server_start(E, s, t);
    return 0;
}

static int server_done(pengine *E, int s, nm_time_t t)
{
    server *S = &E->sv[s];
    S->busy = 0;
    int in = S->cur_ingress;
    if (in >= 0) {
        E->ing_bytes[in] -= S->cur_bytes;
        if (E->pause && E->ing_xoff[in] && E->ing_bytes[in] < E->pause_low) {
            E->ing_xoff[in] = 0;
            nm_time_t d = bytes_time(chan_bps(E, in), E->eth_preamble + E->eth_min_frame) + chan_prop(E, in);
            if (push(E, t + d, EV_PAUSE, in, 0) != 0) return -1;
        }
        S->cur_ingress = -1;
    }
    return S->paused ? 0 : server_start(E, s, t);
}

/* A multicast frame is done at tree node `node`: delivered there (a leaf), or dropped there (every
 * destination below it loses it). A destination whose frames are all in is delivered or dropped;
 * the packet is freed when every destination is. */
static void mcast_done(pengine *E, int p, int node, nm_time_t t, int dropped)
{
    mcast *mc = E->pk[p].mc;
    /* walk the subtree of `node` (a leaf is its own subtree) */
    int x = node;
    for (;;) {
        const mnode *nd = &mc->node[x];
        if (nd->st.server < 0) {
            int i = nd->dst;
            if (dropped) mc->dropped[i] = 1;
            if (t > mc->last[i]) mc->last[i] = t;
            if (--mc->left[i] == 0) {
                nm_delivery d = {E->pk[p].src, mc->dst[i], E->pk[p].payload, E->pk[p].inject, mc->last[i],
                                 mc->cookie[i], 0};
                if (mc->dropped[i]) {
                    E->st.packets_dropped++;
                    nm_network_drop_(E->net, &d);
                } else {
                    E->st.packets_delivered++;
                    E->st.payload_bytes_delivered += E->pk[p].payload;
                    nm_network_deliver_(E->net, &d);
                }
                mc = E->pk[p].mc;   /* the callback may have injected and moved the pool */
                mc->dst_left--;
            }
        }
        /* next node in preorder within the subtree */
        if (mc->node[x].child >= 0 && mc->node[x].st.server >= 0) {
            x = mc->node[x].child;
            continue;
        }
        while (x != node && mc->node[x].sibling < 0) x = mc->node[x].parent;
        if (x == node) break;
        x = mc->node[x].sibling;
    }
    if (mc->dst_left == 0) pkt_free(E, p);
}

static void packet_unit_done(pengine *E, int p, nm_time_t t, int dropped)
{
    packet *P = &E->pk[p];
    if (dropped) P->dropped = 1;
    if (t > P->last) P->last = t;
    if (--P->units_left > 0) return;
    nm_delivery d = {P->src, P->dst, P->payload, P->inject, P->last, P->cookie, 0};
    if (P->dropped) {
        E->st.packets_dropped++;
        nm_network_drop_(E->net, &d);
    } else {
        E->st.packets_delivered++;
        E->st.payload_bytes_delivered += P->payload;
        nm_network_deliver_(E->net, &d);
    }
    /* echoes still travelling keep the packet: they use its echo path (the callback may have
     * injected and moved the pool) */
    if (E->pk[p].echo_left == 0) pkt_free(E, p);
}

/* ---- paths -------------------------------------------------------------------------------- */

static int add_step(pengine *E, step *path, int *n, int server, int cut, int prio, int acct, nm_time_t lat)
{
    if (*n >= E->maxpath) return -1;
    path[*n] = (step){server, (char)cut, (char)prio, (char)acct, lat};
    (*n)++;
    return 0;
}

static int ethernet_path(pengine *E, int src, int dst, step *path)
{
    const nm_route *r = nm_route_get(E->topo, src, dst);
    int n = 0;
    for (int k = 0; k < r->nchannels; k++) {
        int c = r->channel[k];
        nm_time_t lat = chan_prop(E, c) + (k + 1 < r->nchannels ? E->switch_latency : 0);
        if (add_step(E, path, &n, c, 0, 1, k > 0, lat) != 0) return -1;
    }
    return n;
}

/* The line card (switch) of a host. */
static int lc_of(const pengine *E, int host) { return nm_topology_switch_of_host(E->topo, host); }

static int avici_path(pengine *E, int src, int dst, step *path)
{
    const nm_topology *t = E->topo;
    const nm_route *r = nm_route_get(t, src, dst);
    int hops = r->nhops > 0 ? r->nhops - 1 : 0;   /* fabric links between the two line cards */
    int ls = lc_of(E, src), ld = lc_of(E, dst);
    if (ls < 0 || ld < 0) return -1;
    int ns = t->nswitches, nch = 2 * t->nlinks;
    int n = 0;
    int up = t->hosts[src].link, down = t->hosts[dst].link;
    int c_up = nm_channel_leaving(t, up, NM_NODE_HOST, src);
    int c_down = nm_channel_leaving(t, down, NM_NODE_SWITCH, ld);
    nm_time_t fabric = (nm_time_t)hops * E->hop_latency;
    if (E->gige && add_step(E, path, &n, c_up, 0, 1, 0, chan_prop(E, c_up) + E->lc_latency) != 0) return -1;
    if (add_step(E, path, &n, nch + ls, 0, 1, 0, fabric) != 0) return -1;
    if (add_step(E, path, &n, nch + ns + ld, 1, 1, 0, E->lc_latency) != 0) return -1;
    if (E->gige && add_step(E, path, &n, c_down, 0, 1, 0, chan_prop(E, c_down)) != 0) return -1;
    return n;
}

/* SCI node n's coordinate in dimension d, and the channel of its ring output in d. */
static int sci_coord(const pengine *E, int n, int d)
{
    int r = E->topo->gen_dims[0];
    for (int i = 0; i < d; i++) n /= r;
    return n % r;
}

static int sci_next(const pengine *E, int n, int d)
{
    int r = E->topo->gen_dims[0], m = 1;
    for (int i = 0; i < d; i++) m *= r;
    int c = sci_coord(E, n, d);
    return n - c * m + ((c + 1) % r) * m;
}

static int sci_ring_channel(const pengine *E, int n, int d)
{
    const nm_topology *t = E->topo;
    int link = t->switches[n].port_link[d];
    return link < 0 ? -1 : nm_channel_leaving(t, link, NM_NODE_SWITCH, n);
}

/* Dimension-order path on the unidirectional rings: B-Link at the source, the rings of every
 * dimension in which the coordinates differ (B-Link between dimensions), B-Link at the end. */
static int sci_path(pengine *E, int a, int b, step *path)
{
    int F = E->topo->gen_ndims, R = E->topo->gen_dims[0];
    int nch = 2 * E->topo->nlinks;
    int n = 0, cur = a;
    if (add_step(E, path, &n, nch + a, 0, 1, 0, 0) != 0) return -1;
    int first = 1;
    for (int d = 0; d < F; d++) {
        int k = (sci_coord(E, b, d) - sci_coord(E, cur, d) + R) % R;
        if (!k) continue;
        if (!first && add_step(E, path, &n, nch + cur, 0, 1, 0, 0) != 0) return -1;
        first = 0;
        for (int i = 0; i < k; i++) {
            int c = sci_ring_channel(E, cur, d);
            if (c < 0) return -1;
            /* leaving the node it was injected at: local; passing through: bypass */
            if (add_step(E, path, &n, c, 1, i == 0 ? 1 : 0, 0, chan_prop(E, c) + E->sci_node_latency) != 0) return -1;
            cur = sci_next(E, cur, d);
        }
    }
    if (add_step(E, path, &n, nch + b, 0, 1, 0, 0) != 0) return -1;
    return n;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static void pe_destroy(void *e)
{
    pengine *E = e;
    if (!E) return;
    for (int i = 0; i < E->npk; i++) mcast_free(E->pk[i].mc);   /* freed packets hold NULL */
    free(E->sv);
    free(E->ing_xoff);
    free(E->ing_bytes);
    free(E->heap);
    free(E->pk);
    free(E->paths);
    free(E->un);
    free(E);
}

/* Ethernet forwards on a loop-free spanning tree (802.1D; seed 001 "Spanning tree => no mesh"):
 * the switch graph, with parallel links between two switches counted once (a trunk, 802.3ad),
 * must be a forest. 0, or -1 with the first link that closes a loop. */
static int ethernet_tree_check(const nm_topology *t, char *err, size_t errlen)
{
    int ns = t->nswitches, rc = 0;
    int *up = malloc((size_t)(ns > 0 ? ns : 1) * sizeof *up);
    if (!up) return -1;
    for (int i = 0; i < ns; i++) up[i] = i;
    for (int l = 0; l < t->nlinks && rc == 0; l++) {
        const nm_link *L = &t->links[l];
        if (L->a_kind != NM_NODE_SWITCH || L->b_kind != NM_NODE_SWITCH) continue;
        int a = L->a_id, b = L->b_id, trunk = 0;
        for (int k = 0; k < l && !trunk; k++) {   /* an earlier link between the same two switches */
            const nm_link *K = &t->links[k];
            trunk = K->a_kind == NM_NODE_SWITCH && K->b_kind == NM_NODE_SWITCH &&
                    ((K->a_id == a && K->b_id == b) || (K->a_id == b && K->b_id == a));
        }
        if (trunk) continue;
        int ra = a, rb = b;
        while (up[ra] != ra) ra = up[ra];
        while (up[rb] != rb) rb = up[rb];
        if (ra == rb) {
            nm_set_err(err, errlen, "network.engine 'ethernet' forwards on a loop-free spanning tree, but topology '%s' "
                       "has a loop of switches closed by the link %s - %s (parallel links between two switches are a "
                       "trunk and allowed)", t->name, t->switch_names[a], t->switch_names[b]);
            rc = -1;
        }
        up[ra] = rb;
    }
    free(up);
    return rc;
}

static void *pe_create(int kind, const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen)
{
    if (kind == KIND_ETHERNET && ethernet_tree_check(topo, err, errlen) != 0) return NULL;
    if (kind == KIND_SCI && topo->gen_kind != NM_GEN_SCI) {
        nm_set_err(err, errlen, "network.engine 'sci' needs a topology from the sci-torus:R:F generator (got '%s')",
                   topo->name);
        return NULL;
    }
    pengine *E = calloc(1, sizeof *E);
    if (!E) {
        nm_set_err(err, errlen, "out of memory");
        return NULL;
    }
    E->kind = kind;
    E->topo = topo;
    E->net = net;
    E->free_pk = E->free_un = -1;
#define KI(k) nm_config_int(cfg, k)
    E->mtu = KI("ethernet.mtu");
    E->eth_header = KI("ethernet.header_bytes");
    E->eth_preamble = KI("ethernet.preamble_bytes");
    E->eth_ifg = KI("ethernet.ifg_bytes");
    E->eth_min_frame = KI("ethernet.min_frame");
    E->queue_bytes = kind == KIND_ETHERNET ? KI("ethernet.queue_bytes") : 0;
    E->pause = kind == KIND_ETHERNET && KI("ethernet.pause");
    E->pause_high = KI("ethernet.pause_high");
    E->pause_low = KI("ethernet.pause_low");
    E->switch_latency = KI("ethernet.switch_latency");
    E->multicast = kind == KIND_ETHERNET && KI("ethernet.multicast");
    E->fabric_bps = nm_config_double(cfg, "avici.fabric_rate");
    E->flit_payload = KI("avici.flit_payload");
    E->flit_header = KI("avici.flit_header");
    E->hop_latency = KI("avici.hop_latency");
    E->lc_latency = KI("avici.linecard_latency");
    E->gige = !strcmp(nm_config_string(cfg, "avici.hosts"), "gige");
    E->ingress_delay = !strcmp(nm_config_string(cfg, "avici.gige_ingress"), "delay");
    E->gige_bps = nm_config_double(cfg, "avici.gige_rate");
    E->blink_bps = nm_config_double(cfg, "sci.blink_rate");
    E->sci_payload = KI("sci.payload_bytes");
    E->sci_overhead = KI("sci.request_overhead");
    E->sci_echo = KI("sci.echo_bytes");
    E->sci_header = KI("sci.header_bytes");
    E->sci_node_latency = KI("sci.node_latency");
#undef KI
    if (E->pause && E->pause_low > E->pause_high) {
        nm_set_err(err, errlen, "ethernet.pause_low (%lld B) must not exceed ethernet.pause_high (%lld B)",
                   (long long)E->pause_low, (long long)E->pause_high);
        pe_destroy(E);
        return NULL;
    }
    int nch = 2 * topo->nlinks, ns = topo->nswitches;
    E->nsv = nch + (kind == KIND_AVICI ? 2 * ns : kind == KIND_SCI ? ns : 0);
    E->sv = calloc((size_t)E->nsv, sizeof *E->sv);
    E->ing_xoff = calloc((size_t)nch + 1, sizeof *E->ing_xoff);
    E->ing_bytes = calloc((size_t)nch + 1, sizeof *E->ing_bytes);
    if (!E->sv || !E->ing_xoff || !E->ing_bytes) {
        nm_set_err(err, errlen, "out of memory");
        pe_destroy(E);
        return NULL;
    }
    for (int s = 0; s < E->nsv; s++) {
        server *S = &E->sv[s];
        S->qhead[0] = S->qhead[1] = S->qtail[0] = S->qtail[1] = -1;
        S->cur_ingress = -1;
        if (s < nch) S->bps = topo->links[s / 2].rate_bps;
        else S->bps = kind == KIND_AVICI ? E->fabric_bps : E->blink_bps;
        S->fabric = s >= nch;
    }
    if (kind == KIND_AVICI && E->gige)   /* GigE host ports, both ways */
        for (int h = 0; h < topo->nhosts; h++) {
            int l = topo->hosts[h].link;
            if (l < 0) continue;
            E->sv[2 * l].bps = E->sv[2 * l + 1].bps = E->gige_bps;
            if (E->ingress_delay) E->sv[nm_channel_leaving(topo, l, NM_NODE_HOST, h)].infinite = 1;
        }
    /* steps per path: avici's are at most 4, SCI's the ring walk; ethernet's grow to the longest
     * route injected so far (paths_fit), so that creating a 4096-host network does not compute
     * every pair's route */
    E->maxpath = kind == KIND_SCI ? topo->gen_ndims * (topo->gen_dims[0] + 1) + 2 : 4;
    return E;
}

static void *eth_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen)
{
    return pe_create(KIND_ETHERNET, cfg, topo, net, err, errlen);
}
static void *avici_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen)
{
    return pe_create(KIND_AVICI, cfg, topo, net, err, errlen);
}
static void *sci_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen)
{
    return pe_create(KIND_SCI, cfg, topo, net, err, errlen);
}

/* Put a unit of `bytes` (of which `tail` trailing idle) on path step 0 at t. */
static int launch(pengine *E, int p, int kind, int64_t bytes, int64_t fbytes, int64_t tail, nm_time_t t)
{
    int u = unit_alloc(E);
    if (u < 0) return -1;
    E->un[u] = (unit){p, kind, 0, bytes, fbytes, tail, t, -1};
    return push(E, t, EV_ARRIVE, u, 0);
}

static int pe_inject(void *e, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie)
{
    pengine *E = e;
    if (E->kind == KIND_ETHERNET && paths_fit(E, nm_route_get(E->topo, src, dst)->nchannels) != 0) return -5;
    int p = pkt_alloc(E);
    if (p < 0) return -5;
    packet *P = &E->pk[p];
    *P = (packet){src, dst, payload, cookie, t, t, 0, 0, 0, 0, 0, -1, NULL};
    step *path = path_of(E, p, 0);
    int n = -1;
    if (E->kind == KIND_ETHERNET) n = ethernet_path(E, src, dst, path);
    else if (E->kind == KIND_AVICI) n = avici_path(E, src, dst, path);
    else {
        n = sci_path(E, lc_of(E, src), lc_of(E, dst), path);
        int m = sci_path(E, lc_of(E, dst), lc_of(E, src), path_of(E, p, 1));
        if (m < 0) n = -1;
        P->necho = m;
    }
    if (n < 0) {
        pkt_free(E, p);
        return -6;
    }
    P->npath = n;
    E->st.packets_injected++;
    int64_t left = (int64_t)payload;
    int rc = 0;
    if (E->kind == KIND_ETHERNET || (E->kind == KIND_AVICI && E->gige)) {
        do {
            int64_t f = left < E->mtu ? left : E->mtu;
            left -= f;
            P->units_left++;
            /* on GigE links the whole frame; inside the Avici fabric its header, data and CRC
             * in flits */
            int64_t wire = frame_wire(E, f);
            int64_t fab = E->kind == KIND_AVICI ? flit_bytes(E, wire - E->eth_preamble - E->eth_ifg) : wire;
            rc |= launch(E, p, 0, wire, fab, E->eth_ifg, t);
        } while (left > 0);
    } else if (E->kind == KIND_AVICI) {
        P->units_left = 1;
        int64_t fab = flit_bytes(E, left);
        rc |= launch(E, p, 0, fab, fab, 0, t + E->lc_latency);
    } else {
        do {
            int64_t f = left < E->sci_payload ? left : E->sci_payload;
            left -= f;
            P->units_left++;
            rc |= launch(E, p, 0, f + E->sci_overhead, f + E->sci_overhead, 0, t);
        } while (left > 0);
    }
    return rc ? -5 : 0;
}

static int mc_node(mcast *mc, step st, int parent, int dst)
{
    if (mc->nnode == mc->capnode) {
        int nc = mc->capnode ? 2 * mc->capnode : 16;
        mnode *nn = realloc(mc->node, (size_t)nc * sizeof *nn);
        if (!nn) return -1;
        mc->node = nn;
        mc->capnode = nc;
    }
    int x = mc->nnode++;
    mc->node[x] = (mnode){st, parent, -1, -1, dst};
    if (parent >= 0) {   /* append as the parent's last child */
        int *c = &mc->node[parent].child;
        while (*c >= 0) c = &mc->node[*c].sibling;
        *c = x;
    }
    return x;
}

static int pe_has_multicast(const void *e) { return ((const pengine *)e)->multicast; }

/* One multicast packet from src to dst[0..n-1]: the union of their routes (a tree: the switches
 * forward on the spanning tree) carries each frame once per branch. */
static int pe_inject_multicast(void *e, int src, int n, const int *dst, const uint64_t *cookies, uint64_t payload,
                               nm_time_t t)
{
    pengine *E = e;
    if (!E->multicast || n < 1) return -7;
    int p = pkt_alloc(E);
    if (p < 0) return -5;
    packet *P = &E->pk[p];
    *P = (packet){src, dst[0], payload, cookies[0], t, t, 0, 0, 0, 0, 0, -1, NULL};
    mcast *mc = calloc(1, sizeof *mc);
    int frames = (int)(payload ? (payload + (uint64_t)E->mtu - 1) / (uint64_t)E->mtu : 1);
    if (mc) {
        mc->ndst = mc->dst_left = n;
        mc->dst = malloc((size_t)n * sizeof *mc->dst);
        mc->left = malloc((size_t)n * sizeof *mc->left);
        mc->cookie = malloc((size_t)n * sizeof *mc->cookie);
        mc->last = malloc((size_t)n * sizeof *mc->last);
        mc->dropped = calloc((size_t)n, 1);
    }
    P->mc = mc;
    if (!mc || !mc->dst || !mc->left || !mc->cookie || !mc->last || !mc->dropped) {
        pkt_free(E, p);
        return -5;
    }
    for (int i = 0; i < n; i++) {
        mc->dst[i] = dst[i];
        mc->left[i] = frames;
        mc->cookie[i] = cookies[i];
        mc->last[i] = t;
        const nm_route *r = nm_route_get(E->topo, src, dst[i]);
        int cur = -1;
        for (int k = 0; k < r->nchannels; k++) {
            int c = r->channel[k], x = -1;
            for (int y = cur >= 0 ? mc->node[cur].child : (mc->nnode ? 0 : -1); y >= 0; y = mc->node[y].sibling)
                if (mc->node[y].st.server == c) x = y;
            if (x < 0) {
                nm_time_t lat = chan_prop(E, c) + (k + 1 < r->nchannels ? E->switch_latency : 0);
                x = mc_node(mc, (step){c, 0, 1, (char)(k > 0), lat}, cur, -1);
                if (x < 0) { pkt_free(E, p); return -5; }
            }
            cur = x;
        }
        if (cur < 0 || mc_node(mc, (step){-1, 0, 0, 0, 0}, cur, i) < 0) {
            pkt_free(E, p);
            return -6;
        }
    }
    E->st.packets_injected += (uint64_t)n;
    int64_t left = (int64_t)payload;
    int rc = 0;
    do {
        int64_t f = left < E->mtu ? left : E->mtu;
        left -= f;
        rc |= launch(E, p, 0, frame_wire(E, f), frame_wire(E, f), E->eth_ifg, t);
    } while (left > 0);
    return rc ? -5 : 0;
}

static nm_time_t pe_next_time(const void *e)
{
    const pengine *E = e;
    return E->nheap ? E->heap[0].time : NM_TIME_NEVER;
}

static int pe_run_until(void *e, nm_time_t limit)
{
    pengine *E = e;
    if (E->running) return -1;
    E->running = 1;
    int rc = 0;
    while (E->nheap && E->heap[0].time < limit) {
        pev ev = pop(E);
        E->now = ev.time;
        E->st.events++;
        if (ev.type == EV_ARRIVE) {
            if (unit_arrive(E, ev.idx, ev.time) != 0) { rc = -1; break; }
        } else if (ev.type == EV_DONE) {
            if (server_done(E, ev.idx, ev.time) != 0) { rc = -1; break; }
        } else {
            server *S = &E->sv[ev.idx];
            S->paused = ev.arg;
            if (!S->paused && !S->busy && server_start(E, ev.idx, ev.time) != 0) { rc = -1; break; }
        }
    }
    if (rc == 0 && limit != NM_TIME_NEVER && limit > E->now) E->now = limit;
    E->running = 0;
    return rc;
}

static nm_time_t pe_now(const void *e) { return ((const pengine *)e)->now; }
static void pe_stats(const void *e, nm_stats *out) { *out = ((const pengine *)e)->st; }

static size_t pe_link_busy(const void *e, nm_time_t *busy, size_t max)
{
    const pengine *E = e;
    size_t n = 2 * (size_t)E->topo->nlinks;
    for (size_t i = 0; busy && i < n && i < max; i++) busy[i] = E->sv[i].busy_total;
    return n;
}

/* run_instants NULL: nm_network_run_instants steps these engines one instant at a time */
const nm_engine_ops nm_engine_ethernet = {
    {"ethernet", "ethernet", "store-and-forward switches with 802.3x pause (seed 001)"}, 0, eth_create, pe_destroy, pe_inject, pe_next_time, pe_run_until, pe_now, pe_stats, pe_link_busy,
    .run_instants = NULL, .has_multicast = pe_has_multicast, .inject_multicast = pe_inject_multicast,
};
const nm_engine_ops nm_engine_avici = {
    {"avici", "avici", "torus fabric of line cards (seed 001's Avici router)"}, 0, avici_create, pe_destroy, pe_inject, pe_next_time, pe_run_until, pe_now, pe_stats, pe_link_busy,
    .run_instants = NULL, .has_multicast = NULL, .inject_multicast = NULL,
};
const nm_engine_ops nm_engine_sci = {
    {"sci", "sci", "SCI ringlets and k-ary n-cubes of rings (seed 004)"}, 0, sci_create, pe_destroy, pe_inject, pe_next_time, pe_run_until, pe_now, pe_stats, pe_link_busy,
    .run_instants = NULL, .has_multicast = NULL, .inject_multicast = NULL,
};
