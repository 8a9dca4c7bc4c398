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
#include "packet_internal.h"
#include "cm_grow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
/* ---- heap (cm_heap.h) -------------------------------------------------------------------- */

static int push(pengine *E, nm_time_t time, int type, int idx, int arg)
{
    pev e = {time, E->seq, type, idx, arg};
    if (pe_evq_push(&E->heap, e) != 0) return -1;
    E->seq++;
    return 0;
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

void pkt_mcast_free(mcast *mc)
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
    pkt_mcast_free(E->pk[i].mc);
    E->pk[i].mc = NULL;
    E->pk[i].next_free = E->free_pk;
    E->free_pk = i;
}

/* Make room for paths of len steps: every packet slot's path moves to the longer stride (a
 * callback's injection may call this, like pkt_alloc's realloc: steps are re-read by index). */
int pkt_paths_fit(pengine *E, int len)
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
    if (cm_grow((void **)&E->un, &E->capun, (size_t)E->nun + 1, sizeof *E->un, 256) < 0) return -1;
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

nm_time_t pkt_chan_prop(const pengine *E, int c) { return E->topo->links[c / 2].prop_ps; }
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
            nm_time_t d = bytes_time(chan_bps(E, in), E->eth_preamble + E->eth_min_frame) + pkt_chan_prop(E, in);
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
            nm_time_t d = bytes_time(chan_bps(E, in), E->eth_preamble + E->eth_min_frame) + pkt_chan_prop(E, in);
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
    if (E->kind == KIND_ETHERNET && pkt_paths_fit(E, nm_route_get(E->topo, src, dst)->nchannels) != 0) return -5;
    int p = pkt_alloc(E);
    if (p < 0) return -5;
    packet *P = &E->pk[p];
    *P = (packet){src, dst, payload, cookie, t, t, 0, 0, 0, 0, 0, -1, NULL};
    step *path = path_of(E, p, 0);
    int n = -1;
    if (E->kind == KIND_ETHERNET) n = pkt_ethernet_path(E, src, dst, path);
    else if (E->kind == KIND_AVICI) n = pkt_avici_path(E, src, dst, path);
    else {
        n = pkt_sci_path(E, pkt_lc_of(E, src), pkt_lc_of(E, dst), path);
        int m = pkt_sci_path(E, pkt_lc_of(E, dst), pkt_lc_of(E, src), path_of(E, p, 1));
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
    if (cm_grow((void **)&mc->node, &mc->capnode, (size_t)mc->nnode + 1, sizeof *mc->node, 16) < 0) return -1;
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
                nm_time_t lat = pkt_chan_prop(E, c) + (k + 1 < r->nchannels ? E->switch_latency : 0);
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
    return E->heap.n ? E->heap.e[0].t : NM_TIME_NEVER;
}

static int pe_run_until(void *e, nm_time_t limit)
{
    pengine *E = e;
    if (E->running) return -1;
    E->running = 1;
    int rc = 0;
    while (E->heap.n && E->heap.e[0].t < limit) {
        pev ev;
        pe_evq_pop(&E->heap, &ev);
        E->now = ev.t;
        E->st.events++;
        if (ev.type == EV_ARRIVE) {
            if (unit_arrive(E, ev.idx, ev.t) != 0) { rc = -1; break; }
        } else if (ev.type == EV_DONE) {
            if (server_done(E, ev.idx, ev.t) != 0) { rc = -1; break; }
        } else {
            server *S = &E->sv[ev.idx];
            S->paused = ev.arg;
            if (!S->paused && !S->busy && server_start(E, ev.idx, ev.t) != 0) { rc = -1; break; }
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
    {"ethernet", "ethernet", "store-and-forward switches with 802.3x pause (seed 001)"}, 0, pkt_eth_create, pkt_pe_destroy, pe_inject, pe_next_time, pe_run_until, pe_now, pe_stats, pe_link_busy,
    .run_instants = NULL, .has_multicast = pe_has_multicast, .inject_multicast = pe_inject_multicast,
};
const nm_engine_ops nm_engine_avici = {
    {"avici", "avici", "torus fabric of line cards (seed 001's Avici router)"}, 0, pkt_avici_create, pkt_pe_destroy, pe_inject, pe_next_time, pe_run_until, pe_now, pe_stats, pe_link_busy,
    .run_instants = NULL, .has_multicast = NULL, .inject_multicast = NULL,
};
const nm_engine_ops nm_engine_sci = {
    {"sci", "sci", "SCI ringlets and k-ary n-cubes of rings (seed 004)"}, 0, pkt_sci_create, pkt_pe_destroy, pe_inject, pe_next_time, pe_run_until, pe_now, pe_stats, pe_link_busy,
    .run_instants = NULL, .has_multicast = NULL, .inject_multicast = NULL,
};
