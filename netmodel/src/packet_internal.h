/* The packet engines' private header: their state (servers, units, packets, multicast trees, the
 * event heap) and what the parts share. The engines are explained in engine_packet.c; the parts are
 *   engine_packet.c  the event heap, pools, timing, the core (servers and units), injection and
 *                    the event loop
 *   packet_setup.c   the keys, the paths of each fabric (ethernet, avici, sci), create and destroy
 * Functions shared between the parts carry the prefix pkt_; everything else is static in its file. */
#ifndef PACKET_INTERNAL_H
#define PACKET_INTERNAL_H

#include "nm_internal.h"
#include "cm_heap.h"

#include <stddef.h>
#include <stdint.h>

enum { KIND_ETHERNET, KIND_AVICI, KIND_SCI };
enum { EV_ARRIVE, EV_DONE, EV_PAUSE };

typedef struct pev {
    nm_time_t t;
    uint64_t k;                 /* the sequence number: equal times in scheduling order */
    int type, idx, arg;
} pev;
CM_HEAP_DEFINE(pe_evq, pev, 2, CM_HEAP_NO_HOOK)

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
    int nnode;
    size_t capnode;
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
    pe_evq_heap heap;
    packet *pk;
    step *paths;                /* maxpath steps per packet, then maxpath for the echo */
    int maxpath;
    int npk, cappk, free_pk;
    unit *un;
    int nun, free_un;
    size_t capun;
    int running;
    nm_stats st;
} pengine;

/* engine_packet.c */
void pkt_mcast_free(mcast *mc);
int pkt_paths_fit(pengine *E, int len);
nm_time_t pkt_chan_prop(const pengine *E, int c);

/* packet_setup.c */
int pkt_ethernet_path(pengine *E, int src, int dst, step *path);
int pkt_lc_of(const pengine *E, int host);
int pkt_avici_path(pengine *E, int src, int dst, step *path);
int pkt_sci_path(pengine *E, int a, int b, step *path);
void pkt_pe_destroy(void *e);
void *pkt_eth_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err,
                     size_t errlen);
void *pkt_avici_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err,
                       size_t errlen);
void *pkt_sci_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err,
                     size_t errlen);

#endif
