/* The host model: nodes, NIC processor, I/O bus, NIC ports, shared memory, send-mode costs.
 * Timing rules and sources: README.md ("Host model"). */
#include "ms_host.h"
#include "ms_model.h"

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
    {"host.map_by", NM_KEY_STRING, "", "slot", "Open MPI's default mapping (--map-by slot)",
     "slot: ranks 0..k-1 on node 0, k..2k-1 on node 1, ...; node: rank i on node i mod nodes", "slot|node", 0},
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
    {"host.bsend_overhead", NM_KEY_INT, "ps", "0", "0: buffered like standard",
     "extra sender CPU time of MPI_Bsend (copy into the attached buffer, its bookkeeping)", NULL, NM_KEY_NONNEG},
    {"host.bsend_overhead_per_byte", NM_KEY_INT, "ps/B", "0", "0: buffered like standard",
     "extra sender CPU time of MPI_Bsend per byte (plain integer ps per byte)", NULL, NM_KEY_NONNEG},
    {"host.rsend_overhead", NM_KEY_INT, "ps", "0", "0: ready like standard (seed 003 sec 5.1)",
     "extra sender CPU time of MPI_Rsend", NULL, NM_KEY_NONNEG},
    {"host.sync_protocol", NM_KEY_STRING, "", "eager_ack", "project choice",
     "synchronous sends: eager_ack (eager data, the receiver acknowledges the match) or rendezvous "
     "(RTS/CTS/data at every size)", "eager_ack|rendezvous", 0},
};

int ms_host_register_keys(nm_config *cfg, char *err, size_t errlen)
{
    return nm_config_register(cfg, host_keys, sizeof host_keys / sizeof host_keys[0], err, errlen);
}

typedef struct node_state {
    int64_t bus_free;          /* the I/O bus is busy until */
    int64_t rx_free;           /* the NIC's receive processing is busy until */
    int64_t mem_free;          /* intra-node copies hold the memory until */
    int64_t *port_free;        /* each port's wire is busy until (payload+framing, route bytes aside) */
} node_state;

struct ms_host {
    int nranks, nodes, ports, sync_rndv;
    int *node_of;              /* per rank */
    node_state *n;
    int64_t *port_free_all;
    int64_t c_tx, c_rx, dma_setup, shm_lat, bsend, bsend_pb, rsend;
    double read_ps_pb, write_ps_pb, shm_copy_ps_pb, shm_mem_ps_pb;   /* ps per byte, 0 = free */
    int64_t wire_ps_pb, framing;   /* host link: ps per character, type+CRC+GAP characters */
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

static int64_t cfg_int(const nm_config *cfg, const char *k, int64_t dflt)
{
    return nm_config_has(cfg, k) ? nm_config_int(cfg, k) : dflt;
}
/* ps per byte of a rate in bit/s; 0 (not modelled) stays 0 */
static double ps_per_byte(const nm_config *cfg, const char *k)
{
    double r = nm_config_has(cfg, k) ? nm_config_double(cfg, k) : 0.0;
    return r > 0 ? 8e12 / r : 0.0;
}

int ms_host_topology_hosts(const nm_config *cfg, int nranks)
{
    int64_t rpn = cfg_int(cfg, "host.ranks_per_node", 1), ports = cfg_int(cfg, "host.ports", 1);
    if (rpn < 1) rpn = 1;
    if (ports < 1) ports = 1;
    int64_t nodes = (nranks + rpn - 1) / rpn;
    return (int)(nodes * ports);
}

ms_host *ms_host_create(const nm_config *cfg, int nranks, const int *rank_to_node, char *err, size_t errlen)
{
    ms_host *h = calloc(1, sizeof *h);
    if (!h) { set_err(err, errlen, "out of memory"); return NULL; }
    h->nranks = nranks;
    h->ports = (int)cfg_int(cfg, "host.ports", 1);
    if (h->ports < 1 || h->ports > 64) {
        set_err(err, errlen, "host.ports = %d: want 1..64", h->ports);
        free(h);
        return NULL;
    }
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
        int rpn = (int)cfg_int(cfg, "host.ranks_per_node", 1);
        if (rpn < 1) rpn = 1;
        h->nodes = (nranks + rpn - 1) / rpn;
        const char *by = nm_config_has(cfg, "host.map_by") ? nm_config_string(cfg, "host.map_by") : "slot";
        int by_node = by && !strcmp(by, "node");
        for (int r = 0; r < nranks; r++) h->node_of[r] = by_node ? r % h->nodes : r / rpn;
    }
    h->n = calloc((size_t)h->nodes, sizeof *h->n);
    h->port_free_all = calloc((size_t)h->nodes * (size_t)h->ports, sizeof *h->port_free_all);
    if (!h->n || !h->port_free_all) goto oom;
    for (int i = 0; i < h->nodes; i++) h->n[i].port_free = h->port_free_all + (size_t)i * (size_t)h->ports;
    h->c_tx = cfg_int(cfg, "host.nic_send_cost", 0);
    h->c_rx = cfg_int(cfg, "host.nic_recv_cost", 0);
    h->dma_setup = cfg_int(cfg, "host.dma_setup", 0);
    h->read_ps_pb = ps_per_byte(cfg, "host.dma_read_rate");
    h->write_ps_pb = ps_per_byte(cfg, "host.dma_write_rate");
    h->shm_lat = cfg_int(cfg, "host.shm_latency", 0);
    h->shm_copy_ps_pb = ps_per_byte(cfg, "host.shm_copy_rate");
    h->shm_mem_ps_pb = ps_per_byte(cfg, "host.shm_memory_rate");
    h->bsend = cfg_int(cfg, "host.bsend_overhead", 0);
    h->bsend_pb = cfg_int(cfg, "host.bsend_overhead_per_byte", 0);
    h->rsend = cfg_int(cfg, "host.rsend_overhead", 0);
    const char *sp = nm_config_has(cfg, "host.sync_protocol") ? nm_config_string(cfg, "host.sync_protocol") : "";
    h->sync_rndv = sp && !strcmp(sp, "rendezvous");
    /* Port pacing: a packet holds its port for its payload and framing characters. The route
     * bytes (one per switch) are left out and the character time rounded down, so the NIC never
     * paces slower than the network engine's link: the network's own serialisation, not this
     * estimate, gives the delivery times (README.md: timing contract). */
    double rate = nm_config_has(cfg, "network.link_rate") ? nm_config_double(cfg, "network.link_rate") : 0.0;
    h->wire_ps_pb = rate > 0 ? (int64_t)floor(8e12 / rate) : 0;
    h->framing = cfg_int(cfg, "network.type_bytes", 4) + cfg_int(cfg, "network.crc_bytes", 1) +
                 cfg_int(cfg, "network.gap_bytes", 1);
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
    free(h);
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
    int64_t dma_end = bus_transfer(h, n, h->read_ps_pb, payload, t + h->c_tx);
    int p = 0;
    for (int i = 1; i < h->ports; i++)
        if (n->port_free[i] < n->port_free[p]) p = i;
    int64_t w = i64max(dma_end, n->port_free[p]);
    n->port_free[p] = w + ((int64_t)payload + h->framing) * h->wire_ps_pb;
    *wire_at = w;
    *port = p;
    int64_t first_free = n->port_free[0];
    for (int i = 1; i < h->ports; i++)
        if (n->port_free[i] < first_free) first_free = n->port_free[i];
    /* the next packet's processing may overlap this one's wire time; it is taken when its own
     * DMA could end as a port frees, i.e. the NIC holds at most one packet per port ahead */
    int64_t next = i64max(w, first_free - (h->c_tx + h->dma_setup + bytes_ps(h->read_ps_pb, payload)));
    return i64max(next, dma_end);
}

int64_t ms_host_rx_packet(ms_host *h, int node, uint64_t payload, int64_t d)
{
    if (h->c_rx == 0 && h->dma_setup == 0 && h->write_ps_pb == 0) return d;
    node_state *n = &h->n[node];
    int64_t s = i64max(d, n->rx_free) + h->c_rx;
    int64_t end = bus_transfer(h, n, h->write_ps_pb, payload, s);
    n->rx_free = end;
    return end;
}

int64_t ms_host_shm_transfer(ms_host *h, int node, uint64_t bytes, int64_t t)
{
    int64_t copy_end = t + bytes_ps(h->shm_copy_ps_pb, bytes);
    int64_t mem = bytes_ps(h->shm_mem_ps_pb, bytes);
    if (mem > 0) {   /* copies on one node share its memory bandwidth */
        node_state *n = &h->n[node];
        int64_t s = i64max(t, n->mem_free);
        n->mem_free = s + mem;
        copy_end = i64max(copy_end, s + mem);
    }
    return copy_end + h->shm_lat;
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
