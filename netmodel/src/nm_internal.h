/* Internal structures shared by netmodel's parts (config, topology, routes, engines).
 * Not installed; engines include this, users include netmodel.h only. */
#ifndef NM_INTERNAL_H
#define NM_INTERNAL_H

#include "netmodel.h"

/* A node is a host or a switch. Hosts are numbered 0..nhosts-1 within hosts; switches
 * 0..nswitches-1 within switches. Every node has ports; a port is attached to at most one
 * full-duplex link. A link has two directed channels. */
typedef enum { NM_NODE_HOST = 0, NM_NODE_SWITCH = 1 } nm_node_kind;

typedef struct nm_link {
    int a_kind, a_id, a_port;      /* end A: node kind, id, port number */
    int b_kind, b_id, b_port;      /* end B */
    double rate_bps;               /* data rate, bit/s */
    double length_m;               /* cable length */
    double velocity_mps;           /* propagation velocity */
    /* derived, picoseconds (integer): one character time and the propagation delay */
    nm_time_t char_ps;
    nm_time_t prop_ps;
} nm_link;

/* Directed channel c: link c/2, direction A->B when c is even, B->A when odd. */
static inline int nm_channel_of(int link, int a_to_b) { return 2 * link + (a_to_b ? 0 : 1); }

typedef struct nm_switch {
    int nports;
    int *port_link;                /* link index per port, -1 if unconnected */
} nm_switch;

typedef struct nm_host {
    int link;                      /* the host's single link (-1 if none) */
    int port;                      /* host-side port (always 0) */
} nm_host;

/* A source route: the sequence of directed channels from the source host to the destination
 * host, and the output port taken at each switch (one route byte per switch). */
typedef struct nm_route {
    int nhops;                     /* switches traversed = route bytes */
    int *out_port;                 /* nhops entries */
    int nchannels;                 /* nhops + 1 */
    int *channel;                  /* directed channel indices */
    int *itb_host;                 /* routing extensions (ITB) may use; NULL when unused */
} nm_route;

struct nm_topology {
    char name[128];
    int nhosts, nswitches, nlinks;
    nm_host *hosts;
    nm_switch *switches;
    nm_link *links;
    nm_route *routes;              /* nhosts*nhosts, index src*nhosts+dst; src==dst: nhops=-1 */
};

static inline const nm_route *nm_route_get(const nm_topology *t, int src, int dst)
{
    return &t->routes[(size_t)src * (size_t)t->nhosts + (size_t)dst];
}

/* Engines implement this table; nm_network dispatches on network.engine. */
typedef struct nm_engine_ops {
    const char *name;
    void *(*create)(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen);
    void (*destroy)(void *eng);
    int (*inject)(void *eng, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie);
    nm_time_t (*next_time)(const void *eng);
    int (*run_until)(void *eng, nm_time_t limit);
    nm_time_t (*now)(const void *eng);
    void (*stats)(const void *eng, nm_stats *out);
    size_t (*link_busy)(const void *eng, nm_time_t *busy_ps, size_t max);
} nm_engine_ops;

/* Engines report deliveries and drops through these (they call the user's callbacks). */
void nm_network_deliver_(nm_network *net, const nm_delivery *d);
void nm_network_drop_(nm_network *net, const nm_delivery *d);

extern const nm_engine_ops nm_engine_analytic;
extern const nm_engine_ops nm_engine_myrinet;

#endif
