/* The host under the MPI layer model: what lies between an MPI call and the wire.
 *
 * Nodes (with one or more ranks each), the NIC's processor (per-packet costs, e.g. Myrinet's
 * LANai), the node's I/O bus (DMA reads for sends, DMA writes for receives, one bus shared by
 * both), one or more NIC ports (packets spread over them), the intra-node shared-memory path and
 * the host CPU costs of the send modes. Keys: section [host]; documentation and sources:
 * README.md next to this file ("Host model").
 *
 * The module is timing only: it keeps each node's resources (when the NIC processor and the bus
 * are free) and answers "when is this packet on the wire / in host memory". The MPI model
 * (ms_model*.c) owns the events and decides what to send.
 */
#ifndef MS_HOST_H
#define MS_HOST_H

#include <stdint.h>
#include "netmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_host ms_host;

int ms_host_register_keys(nm_config *cfg, char *err, size_t errlen);

/* Hosts of the topology a job of nranks needs: nodes x ports (one topology host per NIC port). */
int ms_host_topology_hosts(const nm_config *cfg, int nranks);

/* rank_to_node: NULL to map by the [host] keys (ranks_per_node, map_by). */
ms_host *ms_host_create(const nm_config *cfg, int nranks, const int *rank_to_node, char *err, size_t errlen);
void ms_host_destroy(ms_host *h);
/* Paces each NIC port at the rate of its link in the network's topology (without: ports not paced). */
void ms_host_pace_ports(ms_host *h, const nm_network *net);

int ms_host_nodes(const ms_host *h);
int ms_host_ports(const ms_host *h);
int ms_host_node_of(const ms_host *h, int rank);
/* Topology host of a node's port, and the node of a topology host. */
int ms_host_port_host(const ms_host *h, int node, int port);
int ms_host_node_of_host(const ms_host *h, int topo_host);

/* NIC send side: the NIC of `node` takes a packet of `payload` bytes at t: its processor's
 * per-packet cost, then the DMA read of the payload over the node's bus (reserved here), then the
 * port that frees first (*port) takes it at *wire_at. Returns when the NIC can take its next
 * packet: when this one's DMA is done and a port will be free (so that the NIC queue, not the
 * port, holds what waits, and a control packet queued later waits behind one packet at most). */
int64_t ms_host_tx_packet(ms_host *h, int node, uint64_t payload, int64_t t, int64_t *wire_at, int *port);
/* The NIC send side's answer for a run of up to `max` packets of `payload` bytes taken back to back
 * from t (each taken when ms_host_tx_packet said the NIC takes the next), with nothing else using
 * the node's NIC, bus or ports in between: how many of them go on the wire at *wire0 + i * *period
 * (one port only; 0 with several), and *after: when the NIC takes the packet after them. The node's
 * state is left as it was. */
uint32_t ms_host_tx_run(ms_host *h, int node, uint64_t payload, int64_t t, uint32_t max, int64_t *wire0,
                        int64_t *period, int64_t *after);
/* 1 when receiving holds no state (no NIC receive cost, DMA setup or write rate): then
 * ms_host_rx_packet(.., d) is d and the order of receives does not matter. */
int ms_host_rx_stateless(const ms_host *h);
/* NIC receive side: a packet of `payload` bytes delivered to `node` at d is in host memory at
 * the returned time (LANai cost and DMA write, FIFO per node, bus shared with sends). */
int64_t ms_host_rx_packet(ms_host *h, int node, uint64_t payload, int64_t d);
/* An acknowledgement the NIC itself generates (a one-sided put's or accumulate's, carried out by
 * the target's NIC): the transport's per-packet acknowledgement (GM's reliable delivery, seed 003
 * sec 2; InfiniBand RC's), whose processor work host.nic_send_cost and nic_recv_cost already hold
 * (they are fitted from streams and ping-pongs whose every packet was acknowledged). Sending: only
 * the port (*port, at *wire_at), no processor cost and no DMA read of host memory; returns when the
 * NIC takes its next packet (at once). Receiving: the DMA write of the completion into host memory
 * (host.dma_setup + payload), no processor cost; returns when it is there. */
int64_t ms_host_tx_nic_ack(ms_host *h, int node, uint64_t payload, int64_t t, int64_t *wire_at, int *port);
int64_t ms_host_rx_nic_ack(ms_host *h, int node, uint64_t payload, int64_t d);
/* Intra-node (shared memory) transfer of `bytes` between two ranks of `node`, starting at t:
 * returns when it is in the receiver's memory (one CPU's copy rate; all copies of the node share
 * its memory rate; then the latency). */
int64_t ms_host_shm_transfer(ms_host *h, int node, uint64_t bytes, int64_t t);
/* The copy alone (a sender copying an eager message into shared memory in its call): its end. A
 * message larger than host.shm_cache is copied at host.shm_uncached_rate. */
int64_t ms_host_shm_copy(ms_host *h, int node, uint64_t bytes, int64_t t);
/* The same with the copy's own duration copy_ps (mpi.size_segments' rate; < 0: host.shm_copy_rate's
 * or, beyond host.shm_cache, host.shm_uncached_rate). */
int64_t ms_host_shm_copy_ps(ms_host *h, int node, uint64_t bytes, int64_t copy_ps, int64_t t);
/* host.shm_latency */
int64_t ms_host_shm_latency(const ms_host *h);
/* The first write of `rank` to the pages of its receive buffer [addr, addr + bytes): the host time
 * of those it never received into (nor registered) before, which count as touched from now on
 * (host.touch_cost_per_page; 0 when off or addr is 0). */
int64_t ms_host_touch(ms_host *h, int rank, uint64_t addr, uint64_t bytes);
/* Extra host CPU time of a send mode (0 standard, MS_SEND_* of ms_model.h) for `bytes`, on top
 * of mpi.send_overhead; intra: both ranks on one node. */
int64_t ms_host_mode_cost(const ms_host *h, int mode, uint64_t bytes, int intra);
/* Synchronous sends use the rendezvous protocol at every size (host.sync_protocol). */
int ms_host_sync_rendezvous(const ms_host *h);
/* A rendezvous receive completes when the sender's FIN arrives, not with the data (host.rndv_fin):
 * 0 no FIN, 1 the FIN follows the put's completion, 2 it is queued right behind the put's data. */
int ms_host_rndv_fin(const ms_host *h);
/* The turns of a rendezvous happen only while the host is inside an MPI call (host.rndv_progress). */
int ms_host_rndv_in_call(const ms_host *h);
/* One-sided operations are done by the target's CPU inside its MPI calls, not by its NIC (host.rma_progress). */
int ms_host_rma_in_call(const ms_host *h);
/* Host time at each turn of a rendezvous: before the CTS, and after it before the data (host.rndv_handling). */
int64_t ms_host_rndv_handling(const ms_host *h);
/* Host CPU time of copying an eager message into the NIC's registered send buffers, and out of
 * the registered receive buffers (host.send_copy_rate, host.recv_copy_rate). */
int64_t ms_host_send_copy(const ms_host *h, uint64_t bytes);
int64_t ms_host_recv_copy(const ms_host *h, uint64_t bytes);
/* Registering `rank`'s rendezvous buffer [addr, addr + bytes) with the NIC: its host time, 0 when
 * the rank's registration cache holds that page range (which becomes the most recently used).
 * addr 0: the buffer is unknown (taken as cached when there is a cache). */
int64_t ms_host_register(ms_host *h, int rank, uint64_t addr, uint64_t bytes);

/* Whether buffer registration costs anything (host.reg_cost, host.reg_cost_per_page). */
int ms_host_registers(const ms_host *h);
/* ps per byte of the sender's eager copy, of one intra-node copy, of the node's memory (0: free). */
void ms_host_copy_costs(const ms_host *h, double *send_copy, double *shm_copy, double *shm_memory);

#ifdef __cplusplus
}
#endif
#endif
