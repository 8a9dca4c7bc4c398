/* The host model: nodes, NIC processor, I/O bus, NIC ports, shared memory, send-mode costs.
 * Timing rules and sources: README.md ("Host model"). */
#include "ms_host.h"
#include "ms_model.h"
#include "ms_util.h"
#include "cm_grow.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defaults keep every host cost off, so that a profile without a [host] section is the bare
 * MPI model of README.md's timing contract (seed 000's validated simulator has no host model). */
static const nm_key_def host_keys[] = {
    {"host.ranks_per_node", NM_KEY_INT, "", "1", "project choice (one rank per node, seed 000's testbed)",
     "ranks placed on one node (they share its NIC, bus and memory; messages between them take the "
     "intra-node path)", "1..65536", 0},
    {"host.nodes", NM_KEY_INT, "", "0", "project choice (0: as many nodes as the job needs)",
     "nodes of the machine (each host.ranks_per_node slots); 0: ceil(ranks / ranks_per_node). map_by node "
     "spreads ranks round robin over all of them", "0..65536", 0},
    {"host.map_by", NM_KEY_STRING, "", "slot", "Open MPI's default mapping (--map-by slot)",
     "slot: ranks 0..k-1 on node 0, k..2k-1 on node 1, ... (k = ranks_per_node); node: rank i on node i mod "
     "nodes (round robin, as mpirun --map-by node)", "slot|node", 0},
    {"host.ports", NM_KEY_INT, "", "1", "one port per NIC (seed 000 sec 3.1, M2F-SBus32B)",
     "network ports per NIC; each is one host of the topology, packets go to the port that frees first",
     "1..64", 0},
    {"host.nic_send_cost", NM_KEY_INT, "ps", "0", "0: not modelled (seed 000 eq. 3 has no NIC cost)",
     "NIC processor time per packet sent (Myrinet LANai), before its DMA read", NULL, NM_KEY_NONNEG},
    {"host.nic_recv_cost", NM_KEY_INT, "ps", "0", "0: not modelled (seed 000 eq. 3 has no NIC cost)",
     "NIC processor time per packet received, before its DMA write to host memory", NULL, NM_KEY_NONNEG},
    {"host.dma_setup", NM_KEY_INT, "ps", "0", "0: not modelled",
     "I/O-bus time of starting one DMA transfer (one per packet, either direction)", NULL, NM_KEY_NONNEG},
    {"host.dma_read_rate", NM_KEY_DOUBLE, "b/s", "0", "0: not modelled (infinitely fast bus)",
     "I/O-bus rate of the NIC's DMA reads from host memory (sending)", NULL, NM_KEY_NONNEG},
    {"host.dma_write_rate", NM_KEY_DOUBLE, "b/s", "0", "0: not modelled (infinitely fast bus)",
     "I/O-bus rate of the NIC's DMA writes to host memory (receiving); reads and writes share one bus",
     NULL, NM_KEY_NONNEG},
    {"host.shm_latency", NM_KEY_INT, "ps", "0", "0: not modelled",
     "intra-node (shared memory) transfer latency of a message or control packet", NULL, NM_KEY_NONNEG},
    {"host.shm_copy_rate", NM_KEY_DOUBLE, "b/s", "0", "0: not modelled",
     "rate of one intra-node copy (one CPU copying)", NULL, NM_KEY_NONNEG},
    {"host.shm_memory_rate", NM_KEY_DOUBLE, "b/s", "0", "0: not modelled",
     "a node's memory rate for intra-node copies, shared by all copies on the node", NULL, NM_KEY_NONNEG},
    {"host.shm_cache", NM_KEY_INT, "B", "0", "0: not modelled (every intra-node copy at host.shm_copy_rate)",
     "the largest intra-node message whose copy runs from the CPU caches at host.shm_copy_rate; a larger one "
     "goes at host.shm_uncached_rate (its buffers no longer fit in the cache)", NULL, NM_KEY_NONNEG},
    {"host.shm_uncached_rate", NM_KEY_DOUBLE, "b/s", "0", "0: not modelled (as host.shm_copy_rate)",
     "rate of one intra-node copy of a message larger than host.shm_cache (from and to memory)", NULL,
     NM_KEY_NONNEG},
    {"host.touch_cost_per_page", NM_KEY_INT, "ps", "0", "0: not modelled",
     "host time of the first write to a page of a receive buffer (the operating system's page fault: "
     "allocating, zeroing and mapping it), charged pro rata to a receive for the bytes of its buffer no earlier "
     "receive or registration of that rank touched (plain integer ps per page of host.reg_page bytes; buffers "
     "of unknown address are taken as touched)", NULL, NM_KEY_NONNEG},
    {"host.send_copy_rate", NM_KEY_DOUBLE, "b/s", "0", "0: not modelled (no copy)",
     "rate of the sender's copy of an eager message into the NIC's registered buffers (MPICH-GM sends "
     "eagerly through GM send/receive; rendezvous data goes by zero-copy put), in the send call",
     NULL, NM_KEY_NONNEG},
    {"host.recv_copy_rate", NM_KEY_DOUBLE, "b/s", "0", "0: not modelled (no copy)",
     "rate of the receiver's copy of an eager message out of the registered receive buffers, before the "
     "receive completes", NULL, NM_KEY_NONNEG},
    {"host.reg_cost", NM_KEY_INT, "ps", "0", "0: not modelled (registration free)",
     "host time of registering (pinning) a rendezvous buffer with the NIC, per registration: the sender "
     "registers after its RTS (its data waits for it), the receiver before its CTS", NULL, NM_KEY_NONNEG},
    {"host.reg_cost_per_page", NM_KEY_INT, "ps", "0", "0: not modelled",
     "registration time per page of the buffer, pro rata by its bytes (plain integer ps per page)", NULL,
     NM_KEY_NONNEG},
    {"host.reg_page", NM_KEY_INT, "B", "4096", "the i386/x86-64 page (seed 003's Xeon nodes)",
     "page size of registrations", NULL, NM_KEY_POSITIVE},
    {"host.reg_cache", NM_KEY_INT, "B", "0", "0: no cache (every rendezvous registers and deregisters)",
     "registration cache per rank: a buffer registered before (the same address, at least as long) is found again and "
     "costs nothing; least recently used registrations are dropped beyond this many bytes", NULL, NM_KEY_NONNEG},
    {"host.rndv_handling", NM_KEY_INT, "ps", "0", "0: the NIC reacts to RTS and CTS by itself (seed 000's model)",
     "host time at each turn of a rendezvous (MPICH drives it from the host): the receiver's on top of "
     "mpi.recv_overhead before its CTS goes, the sender's when the CTS comes before its data goes",
     NULL, NM_KEY_NONNEG},
    {"host.rndv_fin", NM_KEY_INT, "", "0", "0: the receive completes when the data is in (seed 000's model)",
     "1: a rendezvous receiver learns that the data is in from a FIN control message its sender sends when "
     "its put has completed (data written by the NIC's remote put, GM's directed send, do not tell the "
     "receiving host); 2: the sender queues the FIN right behind the put's data, which an in-order network "
     "layer delivers after it (GM, seed 003 sec 2); off-node messages only", "0..2", 0},
    {"host.bsend_overhead", NM_KEY_INT, "ps", "0", "0: buffered like standard",
     "extra sender CPU time of MPI_Bsend (copy into the attached buffer, its bookkeeping)", NULL, NM_KEY_NONNEG},
    {"host.bsend_overhead_per_byte", NM_KEY_INT, "ps/B", "0", "0: buffered like standard",
     "extra sender CPU time of MPI_Bsend per byte (plain integer ps per byte)", NULL, NM_KEY_NONNEG},
    {"host.rsend_overhead", NM_KEY_INT, "ps", "0", "0: ready like standard (seed 003 sec 5.1)",
     "extra sender CPU time of MPI_Rsend", NULL, NM_KEY_NONNEG},
    {"host.rndv_progress", NM_KEY_STRING, "", "nic", "project choice: seed 000's model (the NIC answers RTS and CTS by itself)",
     "nic: the turns of a rendezvous (the receiver's CTS, the sender's data) happen as soon as they are due; "
     "in_call: only while the host is inside an MPI call (a host-driven rendezvous such as MPICH-GM's): a turn "
     "due while the rank computes waits for its next MPI call", "nic|in_call", 0},
    {"host.rma_progress", NM_KEY_STRING, "", "nic",
     "project choice: a NIC that does RDMA and atomics itself, as InfiniBand RC under Open MPI's osc/rdma "
     "and osc/ucx (seed 000's NIC answers by itself too)",
     "nic: the target's NIC carries out one-sided operations (put, get, accumulate, atomics, lock requests) "
     "and answers, with no target CPU time; in_call: the target's CPU does each while it is inside an MPI "
     "call (MPICH CH3's active messages, MPI over a NIC without RDMA), one receive overhead, the reduction "
     "and one send overhead, and an operation that arrives while the target computes waits for its next MPI "
     "call", "nic|in_call", 0},
    {"host.sync_protocol", NM_KEY_STRING, "", "eager_ack", "project choice",
     "synchronous sends: eager_ack (eager data, the receiver acknowledges the match) or rendezvous "
     "(RTS/CTS/data at every size)", "eager_ack|rendezvous", 0},
};

int ms_host_register_keys(nm_config *cfg, char *err, size_t errlen)
{
    return nm_config_register(cfg, host_keys, sizeof host_keys / sizeof host_keys[0], err, errlen);
}

typedef struct node_state {
    int64_t bus_free;          /* the I/O bus (its DMA engine) is busy until */
    int64_t proc_free;         /* the NIC's processor (LANai: sends and receives) is busy until */
    int64_t mem_free;          /* intra-node copies hold the memory until */
    int64_t *port_free;        /* each port's wire is busy until (payload+framing, route bytes aside) */
    int64_t *port_char_ps;     /* each port's link: ps per character (0: not paced) */
} node_state;

/* A registration in a rank's cache: its page range, LRU links (pool indices, UINT32_MAX = none). */
typedef struct reg_entry {
    uint64_t addr, bytes;      /* the registered buffer */
    uint32_t prev, next, idx;
    int rank;
} reg_entry;
/* A rank's touched memory: disjoint byte ranges [s, e), sorted. */
typedef struct span { uint64_t s, e; } span;
typedef struct span_set { span *v; size_t n, cap; } span_set;
#define REG_NONE UINT32_MAX
typedef struct reg_lru {
    uint32_t head, tail;       /* head: most recently used */
    uint64_t bytes;
} reg_lru;

struct ms_host {
    int nranks, nodes, ports, sync_rndv, rndv_fin, rndv_in_call, rma_in_call;
    int64_t rndv_handling;
    int *node_of;              /* per rank */
    node_state *n;
    int64_t *port_free_all, *port_char_ps_all;
    int64_t c_tx, c_rx, dma_setup, shm_lat, bsend, bsend_pb, rsend;
    double read_ps_pb, write_ps_pb, shm_copy_ps_pb, shm_mem_ps_pb;   /* ps per byte, 0 = free */
    int64_t framing;           /* characters a packet adds on the host link: type+CRC+GAP */
    double send_copy_ps_pb, recv_copy_ps_pb;
    int64_t reg_cost, reg_pp, reg_page;
    uint64_t reg_cache;
    uint64_t shm_cache;        /* largest intra-node message copied in cache (0: all) */
    double shm_uncached_ps_pb; /* ps per byte beyond it (0: as shm_copy_ps_pb) */
    int64_t touch_pp;          /* first write to a receive buffer's page */
    span_set *touched;         /* per rank: the bytes it has received into or registered */
    cm_hmap regs;              /* (rank, first page) -> reg_entry */
    ms_pool regpool;
    reg_lru *lru;              /* per rank */
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

/* ps per byte of a rate in bit/s; 0 (not modelled) stays 0 */
static double ps_per_byte(const nm_config *cfg, const char *k)
{
    double r = nm_config_double(cfg, k);
    return r > 0 ? 8e12 / r : 0.0;
}

/* Where ranks live: the [host] keys read once, for the topology's size and the mapping. */
typedef struct host_layout {
    int64_t ranks_per_node, nodes, ports;
    int by_node;               /* host.map_by = node (else slot) */
} host_layout;

static host_layout read_layout(const nm_config *cfg, int nranks)
{
    host_layout L = {nm_config_int(cfg, "host.ranks_per_node"), nm_config_int(cfg, "host.nodes"),
                     nm_config_int(cfg, "host.ports"), !strcmp(nm_config_string(cfg, "host.map_by"), "node")};
    if (L.ranks_per_node < 1) L.ranks_per_node = 1;
    if (L.nodes <= 0) L.nodes = (nranks + L.ranks_per_node - 1) / L.ranks_per_node;   /* as many as needed */
    return L;
}

int ms_host_topology_hosts(const nm_config *cfg, int nranks)
{
    host_layout L = read_layout(cfg, nranks);
    return (int)(L.nodes * (L.ports < 1 ? 1 : L.ports));
}

ms_host *ms_host_create(const nm_config *cfg, int nranks, const int *rank_to_node, char *err, size_t errlen)
{
    ms_host *h = calloc(1, sizeof *h);
    if (!h) { set_err(err, errlen, "out of memory"); return NULL; }
    h->nranks = nranks;
    host_layout L = read_layout(cfg, nranks);
    if (L.ports < 1 || L.ports > 64) {
        set_err(err, errlen, "host.ports = %lld: want 1..64", (long long)L.ports);
        free(h);
        return NULL;
    }
    h->ports = (int)L.ports;
    h->node_of = calloc((size_t)nranks, sizeof *h->node_of);
    if (!h->node_of) goto oom;
    int maxn = -1;
    if (rank_to_node) {
        for (int r = 0; r < nranks; r++) {
            if (rank_to_node[r] < 0) {
                set_err(err, errlen, "rank %d mapped to node %d", r, rank_to_node[r]);
                ms_host_destroy(h);
                return NULL;
            }
            h->node_of[r] = rank_to_node[r];
            if (rank_to_node[r] > maxn) maxn = rank_to_node[r];
        }
        h->nodes = maxn + 1;
    } else {
        int rpn = (int)L.ranks_per_node;
        if ((int64_t)nranks > L.nodes * rpn) {
            set_err(err, errlen, "%d ranks do not fit on host.nodes = %lld nodes of host.ranks_per_node = %d", nranks,
                    (long long)L.nodes, rpn);
            ms_host_destroy(h);
            return NULL;
        }
        h->nodes = (int)L.nodes;
        int by_node = L.by_node;
        for (int r = 0; r < nranks; r++) h->node_of[r] = by_node ? r % h->nodes : r / rpn;
    }
    h->n = calloc((size_t)h->nodes, sizeof *h->n);
    h->port_free_all = calloc((size_t)h->nodes * (size_t)h->ports, sizeof *h->port_free_all);
    h->port_char_ps_all = calloc((size_t)h->nodes * (size_t)h->ports, sizeof *h->port_char_ps_all);
    if (!h->n || !h->port_free_all || !h->port_char_ps_all) goto oom;
    for (int i = 0; i < h->nodes; i++) {
        h->n[i].port_free = h->port_free_all + (size_t)i * (size_t)h->ports;
        h->n[i].port_char_ps = h->port_char_ps_all + (size_t)i * (size_t)h->ports;
    }
    h->c_tx = nm_config_int(cfg, "host.nic_send_cost");
    h->c_rx = nm_config_int(cfg, "host.nic_recv_cost");
    h->dma_setup = nm_config_int(cfg, "host.dma_setup");
    h->read_ps_pb = ps_per_byte(cfg, "host.dma_read_rate");
    h->write_ps_pb = ps_per_byte(cfg, "host.dma_write_rate");
    h->shm_lat = nm_config_int(cfg, "host.shm_latency");
    h->shm_copy_ps_pb = ps_per_byte(cfg, "host.shm_copy_rate");
    h->shm_mem_ps_pb = ps_per_byte(cfg, "host.shm_memory_rate");
    h->shm_cache = (uint64_t)nm_config_int(cfg, "host.shm_cache");
    h->shm_uncached_ps_pb = ps_per_byte(cfg, "host.shm_uncached_rate");
    h->touch_pp = nm_config_int(cfg, "host.touch_cost_per_page");
    h->touched = calloc((size_t)nranks, sizeof *h->touched);
    if (!h->touched) goto oom;
    h->send_copy_ps_pb = ps_per_byte(cfg, "host.send_copy_rate");
    h->recv_copy_ps_pb = ps_per_byte(cfg, "host.recv_copy_rate");
    h->reg_cost = nm_config_int(cfg, "host.reg_cost");
    h->reg_pp = nm_config_int(cfg, "host.reg_cost_per_page");
    h->reg_page = nm_config_int(cfg, "host.reg_page");
    if (h->reg_page < 1) h->reg_page = 4096;
    h->reg_cache = (uint64_t)nm_config_int(cfg, "host.reg_cache");
    ms_pool_init(&h->regpool, sizeof(reg_entry));
    h->lru = malloc((size_t)nranks * sizeof *h->lru);
    if (!h->lru) goto oom;
    for (int r = 0; r < nranks; r++) h->lru[r] = (reg_lru){REG_NONE, REG_NONE, 0};
    h->bsend = nm_config_int(cfg, "host.bsend_overhead");
    h->bsend_pb = nm_config_int(cfg, "host.bsend_overhead_per_byte");
    h->rsend = nm_config_int(cfg, "host.rsend_overhead");
    const char *sp = nm_config_string(cfg, "host.sync_protocol");
    h->sync_rndv = sp && !strcmp(sp, "rendezvous");
    h->rndv_fin = (int)nm_config_int(cfg, "host.rndv_fin");
    const char *rp = nm_config_string(cfg, "host.rndv_progress");
    h->rndv_in_call = rp && !strcmp(rp, "in_call");
    const char *ra = nm_config_string(cfg, "host.rma_progress");
    h->rma_in_call = ra && !strcmp(ra, "in_call");
    h->rndv_handling = nm_config_int(cfg, "host.rndv_handling");
    /* the ports' link rates come from the network (ms_host_pace_ports) */
    h->framing = nm_config_int(cfg, "network.type_bytes") + nm_config_int(cfg, "network.crc_bytes") +
                 nm_config_int(cfg, "network.gap_bytes");
    return h;
oom:
    set_err(err, errlen, "out of memory");
    ms_host_destroy(h);
    return NULL;
}

void ms_host_destroy(ms_host *h)
{
    if (!h) return;
    free(h->node_of);
    free(h->n);
    free(h->port_free_all);
    free(h->port_char_ps_all);
    cm_hmap_free(&h->regs);
    if (h->touched)
        for (int r = 0; r < h->nranks; r++) free(h->touched[r].v);
    free(h->touched);
    ms_pool_free(&h->regpool);
    free(h->lru);
    free(h);
}

/* Port pacing: a packet holds its port for its payload and framing characters at the rate of the
 * port's link in the topology. The route bytes (one per switch) are left out and the character
 * time rounded down, so the NIC never paces slower than the network engine's link: the network's
 * own serialisation, not this estimate, gives the delivery times (README.md: timing contract). */
void ms_host_pace_ports(ms_host *h, const nm_network *net)
{
    for (int node = 0; node < h->nodes; node++)
        for (int p = 0; p < h->ports; p++) {
            double rate = nm_network_host_link_rate(net, ms_host_port_host(h, node, p));
            h->n[node].port_char_ps[p] = rate > 0 ? (int64_t)floor(8e12 / rate) : 0;
        }
}

int ms_host_nodes(const ms_host *h) { return h->nodes; }
int ms_host_ports(const ms_host *h) { return h->ports; }
int ms_host_node_of(const ms_host *h, int rank) { return h->node_of[rank]; }
int ms_host_port_host(const ms_host *h, int node, int port) { return node * h->ports + port; }
int ms_host_node_of_host(const ms_host *h, int topo_host) { return topo_host / h->ports; }

static inline int64_t i64max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t bytes_ps(double ps_pb, uint64_t b) { return ps_pb > 0 ? (int64_t)llround(ps_pb * (double)b) : 0; }

/* One DMA transfer over node n's bus, not before t: returns its end. */
static int64_t bus_transfer(ms_host *h, node_state *n, double ps_pb, uint64_t bytes, int64_t t)
{
    int64_t d = h->dma_setup + bytes_ps(ps_pb, bytes);
    if (d == 0) return t;
    int64_t s = i64max(t, n->bus_free);
    n->bus_free = s + d;
    return s + d;
}

int64_t ms_host_tx_packet(ms_host *h, int node, uint64_t payload, int64_t t, int64_t *wire_at, int *port)
{
    node_state *n = &h->n[node];
    /* The NIC's processor prepares the packet, then hands it to the DMA engine and is free for the
     * next one while the DMA runs: a stream of packets goes at the pace of the slowest stage
     * (processor, bus, port), one packet's latency is the sum of the stages. */
    int64_t proc_end = i64max(t, n->proc_free) + h->c_tx;
    n->proc_free = proc_end;
    int64_t dma_len = h->dma_setup + bytes_ps(h->read_ps_pb, payload);
    int64_t dma_end = bus_transfer(h, n, h->read_ps_pb, payload, proc_end);
    int p = 0;
    for (int i = 1; i < h->ports; i++)
        if (n->port_free[i] < n->port_free[p]) p = i;
    int64_t w = i64max(dma_end, n->port_free[p]);
    n->port_free[p] = w + ((int64_t)payload + h->framing) * n->port_char_ps[p];
    *wire_at = w;
    *port = p;
    int64_t first_free = n->port_free[0];
    for (int i = 1; i < h->ports; i++)
        if (n->port_free[i] < first_free) first_free = n->port_free[i];
    /* The next packet is taken once the processor is free and this one's DMA has started (one
     * packet per stage), and not before its own DMA could end as a port frees: the NIC queue, not
     * the pipeline, holds what waits, so a control packet queued later waits for a packet or two,
     * not for a whole message going the other way. */
    int64_t next = i64max(proc_end, dma_end - dma_len);
    return i64max(next, first_free - (h->c_tx + dma_len));
}

uint32_t ms_host_tx_run(ms_host *h, int node, uint64_t payload, int64_t t, uint32_t max, int64_t *wire0,
                        int64_t *period, int64_t *after)
{
    if (h->ports != 1 || max == 0) return 0;
    node_state *n = &h->n[node];
    node_state saved = *n;
    int64_t port0 = n->port_free[0];
    uint32_t k = 0;
    int64_t first = 0, step = 0, take = t;
    for (; k < max; k++) {
        int64_t w;
        int p;
        int64_t next = ms_host_tx_packet(h, node, payload, take, &w, &p);
        if (k == 0) first = w;
        else if (k == 1) step = w - first;
        else if (w != first + (int64_t)k * step) break;   /* packet k is not in the run */
        take = next;
    }
    *n = saved;
    n->port_free[0] = port0;
    *wire0 = first;
    *period = step;
    *after = take;
    return k;
}

int ms_host_rx_stateless(const ms_host *h) { return h->c_rx == 0 && h->dma_setup == 0 && h->write_ps_pb == 0; }

int64_t ms_host_rx_packet(ms_host *h, int node, uint64_t payload, int64_t d)
{
    if (h->c_rx == 0 && h->dma_setup == 0 && h->write_ps_pb == 0) return d;
    node_state *n = &h->n[node];
    /* the same processor handles receives: then the DMA engine writes the packet to memory */
    int64_t s = i64max(d, n->proc_free) + h->c_rx;
    n->proc_free = s;
    return bus_transfer(h, n, h->write_ps_pb, payload, s);
}

int64_t ms_host_tx_nic_ack(ms_host *h, int node, uint64_t payload, int64_t t, int64_t *wire_at, int *port)
{
    node_state *n = &h->n[node];
    int p = 0;
    for (int i = 1; i < h->ports; i++)
        if (n->port_free[i] < n->port_free[p]) p = i;
    int64_t w = i64max(t, n->port_free[p]);
    n->port_free[p] = w + ((int64_t)payload + h->framing) * n->port_char_ps[p];
    *wire_at = w;
    *port = p;
    return t;
}

int64_t ms_host_rx_nic_ack(ms_host *h, int node, uint64_t payload, int64_t d)
{
    return bus_transfer(h, &h->n[node], h->write_ps_pb, payload, d);
}

int64_t ms_host_shm_copy(ms_host *h, int node, uint64_t bytes, int64_t t)
{
    return ms_host_shm_copy_ps(h, node, bytes, -1, t);
}

int64_t ms_host_shm_latency(const ms_host *h) { return h->shm_lat; }

int64_t ms_host_shm_copy_ps(ms_host *h, int node, uint64_t bytes, int64_t copy_ps, int64_t t)
{
    /* a message beyond the cache is copied from and to memory, at the slower rate */
    double ps_pb = h->shm_cache && bytes > h->shm_cache && h->shm_uncached_ps_pb > 0 ? h->shm_uncached_ps_pb
                                                                                      : h->shm_copy_ps_pb;
    int64_t copy_end = t + (copy_ps >= 0 ? copy_ps : bytes_ps(ps_pb, bytes));
    int64_t mem = bytes_ps(h->shm_mem_ps_pb, bytes);
    if (mem > 0) {   /* copies on one node share its memory bandwidth */
        node_state *n = &h->n[node];
        int64_t s = i64max(t, n->mem_free);
        n->mem_free = s + mem;
        copy_end = i64max(copy_end, s + mem);
    }
    return copy_end;
}

int64_t ms_host_shm_transfer(ms_host *h, int node, uint64_t bytes, int64_t t)
{
    return ms_host_shm_copy(h, node, bytes, t) + h->shm_lat;
}

/* Costs per page are charged pro rata, per byte of the buffer: where a buffer starts within its
 * page (so how many pages it spans, and which of them other buffers share) depends on everything
 * the process allocated before it, the shim's own allocations among them, which differ from run to
 * run; the virtual time must not. Relative positions do not change, so the bytes a buffer shares
 * with earlier ones, and the expected page count bytes / page, are the same in every run. */
static int64_t per_page(const ms_host *h, uint64_t bytes, int64_t cost_per_page)
{
    return (int64_t)llround((double)bytes * (double)cost_per_page / (double)h->reg_page);
}

/* Marks [a, a + len) in s; returns how many of its bytes were not in s before (0 on no memory: the
 * cost is then not charged again). */
static uint64_t span_add(span_set *s, uint64_t a, uint64_t len)
{
    uint64_t b = a + len, fresh = len;
    /* the first span that ends after a (one that ends at a stays beside the new one: harmless) */
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid].e <= a) lo = mid + 1;
        else hi = mid;
    }
    size_t k = lo, m = lo;
    uint64_t ns = a, ne = b;
    for (; m < s->n && s->v[m].s <= b; m++) {   /* spans overlapping or adjacent: merged */
        uint64_t os = s->v[m].s > a ? s->v[m].s : a, oe = s->v[m].e < b ? s->v[m].e : b;
        if (oe > os) fresh -= oe - os;
        if (s->v[m].s < ns) ns = s->v[m].s;
        if (s->v[m].e > ne) ne = s->v[m].e;
    }
    if (m == k) {   /* no span merged: insert one */
        if (cm_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v, 16) < 0) return 0;
        memmove(s->v + k + 1, s->v + k, (s->n - k) * sizeof *s->v);
        s->n++;
    } else if (m > k + 1) {   /* several merged into one */
        memmove(s->v + k + 1, s->v + m, (s->n - m) * sizeof *s->v);
        s->n -= m - k - 1;
    }
    s->v[k] = (span){ns, ne};
    return fresh;
}

int64_t ms_host_touch(ms_host *h, int rank, uint64_t addr, uint64_t bytes)
{
    if (h->touch_pp == 0 || addr == 0 || bytes == 0 || rank < 0 || rank >= h->nranks) return 0;
    return per_page(h, span_add(&h->touched[rank], addr, bytes), h->touch_pp);
}

int64_t ms_host_mode_cost(const ms_host *h, int mode, uint64_t bytes, int intra)
{
    (void)intra;
    switch (mode) {
    case MS_SEND_BUFFERED: return h->bsend + (int64_t)bytes * h->bsend_pb;
    case MS_SEND_READY: return h->rsend;
    default: return 0;
    }
}

int ms_host_sync_rendezvous(const ms_host *h) { return h->sync_rndv; }
int ms_host_rndv_fin(const ms_host *h) { return h->rndv_fin; }
int ms_host_rndv_in_call(const ms_host *h) { return h->rndv_in_call; }
int ms_host_rma_in_call(const ms_host *h) { return h->rma_in_call; }
int64_t ms_host_rndv_handling(const ms_host *h) { return h->rndv_handling; }

int ms_host_registers(const ms_host *h) { return h->reg_cost != 0 || h->reg_pp != 0; }
void ms_host_copy_costs(const ms_host *h, double *send_copy, double *shm_copy, double *shm_memory)
{
    *send_copy = h->send_copy_ps_pb;
    *shm_copy = h->shm_copy_ps_pb;
    *shm_memory = h->shm_mem_ps_pb;
}
int64_t ms_host_send_copy(const ms_host *h, uint64_t bytes) { return bytes_ps(h->send_copy_ps_pb, bytes); }
int64_t ms_host_recv_copy(const ms_host *h, uint64_t bytes) { return bytes_ps(h->recv_copy_ps_pb, bytes); }

static reg_entry *reg_at(const ms_host *h, uint32_t i) { return i == REG_NONE ? NULL : ms_pool_at(&h->regpool, i); }

static void lru_unlink(ms_host *h, reg_lru *l, reg_entry *e)
{
    if (e->prev != REG_NONE) reg_at(h, e->prev)->next = e->next;
    else l->head = e->next;
    if (e->next != REG_NONE) reg_at(h, e->next)->prev = e->prev;
    else l->tail = e->prev;
    e->prev = e->next = REG_NONE;
}

static void lru_push_front(ms_host *h, reg_lru *l, reg_entry *e)
{
    e->prev = REG_NONE;
    e->next = l->head;
    if (l->head != REG_NONE) reg_at(h, l->head)->prev = e->idx;
    l->head = e->idx;
    if (l->tail == REG_NONE) l->tail = e->idx;
}

static void reg_drop(ms_host *h, reg_lru *l, reg_entry *e)
{
    lru_unlink(h, l, e);
    l->bytes -= e->bytes;
    cm_hmap_del(&h->regs, (uint64_t)e->rank, e->addr);
    ms_pool_release(&h->regpool, e->idx);
}

int64_t ms_host_register(ms_host *h, int rank, uint64_t addr, uint64_t bytes)
{
    if ((h->reg_cost == 0 && h->reg_pp == 0) || bytes == 0 || rank < 0 || rank >= h->nranks) return 0;
    int64_t cost = h->reg_cost + per_page(h, bytes, h->reg_pp);
    /* pinning faults the pages in: a later receive into them does not touch them first */
    if (h->touch_pp && addr) span_add(&h->touched[rank], addr, bytes);
    if (h->reg_cache == 0) return cost;   /* registered and deregistered around every transfer */
    if (addr == 0) return 0;              /* buffer unknown (collective steps, old traces): taken as reused */
    reg_lru *l = &h->lru[rank];
    reg_entry *e = cm_hmap_get(&h->regs, (uint64_t)rank, addr);
    if (e && e->bytes >= bytes) {         /* found: most recently used now */
        lru_unlink(h, l, e);
        lru_push_front(h, l, e);
        return 0;
    }
    if (e) reg_drop(h, l, e);             /* a shorter registration of the same buffer: replaced */
    while (l->tail != REG_NONE && l->bytes + bytes > h->reg_cache) reg_drop(h, l, reg_at(h, l->tail));
    if (bytes > h->reg_cache) return cost; /* larger than the cache: registered for this transfer only */
    uint32_t idx;
    e = ms_pool_alloc(&h->regpool, &idx);
    if (!e || cm_hmap_put(&h->regs, (uint64_t)rank, addr, e) != 0) {
        if (e) ms_pool_release(&h->regpool, idx);
        return cost;                      /* out of memory: not cached, still correct in time */
    }
    *e = (reg_entry){addr, bytes, REG_NONE, REG_NONE, idx, rank};
    lru_push_front(h, l, e);
    l->bytes += bytes;
    return cost;
}
