/* The packet engines' keys, the paths of each fabric (ethernet, avici, sci), create and destroy. */
#include "packet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- paths -------------------------------------------------------------------------------- */

static int add_step(pengine *E, step *path, int *n, int server, int cut, int prio, int acct, nm_time_t lat)
{
    if (*n >= E->maxpath) return -1;
    path[*n] = (step){server, (char)cut, (char)prio, (char)acct, lat};
    (*n)++;
    return 0;
}

int pkt_ethernet_path(pengine *E, int src, int dst, step *path)
{
    const nm_route *r = nm_route_get(E->topo, src, dst);
    int n = 0;
    for (int k = 0; k < r->nchannels; k++) {
        int c = r->channel[k];
        nm_time_t lat = pkt_chan_prop(E, c) + (k + 1 < r->nchannels ? E->switch_latency : 0);
        if (add_step(E, path, &n, c, 0, 1, k > 0, lat) != 0) return -1;
    }
    return n;
}

/* The line card (switch) of a host. */
int pkt_lc_of(const pengine *E, int host) { return nm_topology_switch_of_host(E->topo, host); }

int pkt_avici_path(pengine *E, int src, int dst, step *path)
{
    const nm_topology *t = E->topo;
    const nm_route *r = nm_route_get(t, src, dst);
    int hops = r->nhops > 0 ? r->nhops - 1 : 0;   /* fabric links between the two line cards */
    int ls = pkt_lc_of(E, src), ld = pkt_lc_of(E, dst);
    if (ls < 0 || ld < 0) return -1;
    int ns = t->nswitches, nch = 2 * t->nlinks;
    int n = 0;
    int up = t->hosts[src].link, down = t->hosts[dst].link;
    int c_up = nm_channel_leaving(t, up, NM_NODE_HOST, src);
    int c_down = nm_channel_leaving(t, down, NM_NODE_SWITCH, ld);
    nm_time_t fabric = (nm_time_t)hops * E->hop_latency;
    if (E->gige && add_step(E, path, &n, c_up, 0, 1, 0, pkt_chan_prop(E, c_up) + E->lc_latency) != 0) return -1;
    if (add_step(E, path, &n, nch + ls, 0, 1, 0, fabric) != 0) return -1;
    if (add_step(E, path, &n, nch + ns + ld, 1, 1, 0, E->lc_latency) != 0) return -1;
    if (E->gige && add_step(E, path, &n, c_down, 0, 1, 0, pkt_chan_prop(E, c_down)) != 0) return -1;
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
int pkt_sci_path(pengine *E, int a, int b, step *path)
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
            if (add_step(E, path, &n, c, 1, i == 0 ? 1 : 0, 0, pkt_chan_prop(E, c) + E->sci_node_latency) != 0) return -1;
            cur = sci_next(E, cur, d);
        }
    }
    if (add_step(E, path, &n, nch + b, 0, 1, 0, 0) != 0) return -1;
    return n;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

void pkt_pe_destroy(void *e)
{
    pengine *E = e;
    if (!E) return;
    for (int i = 0; i < E->npk; i++) pkt_mcast_free(E->pk[i].mc);   /* freed packets hold NULL */
    free(E->sv);
    free(E->ing_xoff);
    free(E->ing_bytes);
    free(E->heap.e);
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
        pkt_pe_destroy(E);
        return NULL;
    }
    int nch = 2 * topo->nlinks, ns = topo->nswitches;
    E->nsv = nch + (kind == KIND_AVICI ? 2 * ns : kind == KIND_SCI ? ns : 0);
    E->sv = calloc((size_t)E->nsv, sizeof *E->sv);
    E->ing_xoff = calloc((size_t)nch + 1, sizeof *E->ing_xoff);
    E->ing_bytes = calloc((size_t)nch + 1, sizeof *E->ing_bytes);
    if (!E->sv || !E->ing_xoff || !E->ing_bytes) {
        nm_set_err(err, errlen, "out of memory");
        pkt_pe_destroy(E);
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

void *pkt_eth_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen)
{
    return pe_create(KIND_ETHERNET, cfg, topo, net, err, errlen);
}
void *pkt_avici_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen)
{
    return pe_create(KIND_AVICI, cfg, topo, net, err, errlen);
}
void *pkt_sci_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen)
{
    return pe_create(KIND_SCI, cfg, topo, net, err, errlen);
}

/* Put a unit of `bytes` (of which `tail` trailing idle) on path step 0 at t. */
