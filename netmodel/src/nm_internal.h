/* Internal structures shared by netmodel's parts (config, topology, routes, engines).
 * Not installed; engines include this, users include netmodel.h only. */
#ifndef NM_INTERNAL_H
#define NM_INTERNAL_H

#include "netmodel.h"

#ifdef __cplusplus
extern "C" {   /* the C++ unit tests include this too */
#endif

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
    int nchannels;                 /* nhops + 1 (+ nitb, below) */
    int *channel;                  /* directed channel indices */
    int *itb_host;                 /* ITB routing: the in-transit hosts in path order (nitb); else NULL */
    /* Added for ITB routing (routes.c). A route with nitb > 0 is ejected at each in-transit host
     * and reinjected from it: its channels run src host -> ... -> switch -> itb host -> switch
     * -> ... -> dst host, so nchannels = nhops + 1 + nitb (nhops still counts route bytes, one
     * per switch traversal; the switch next to an in-transit host is traversed twice). Each
     * in-transit host strips one header byte (the ITB mark, seed 002 Fig. 4) like a switch. */
    int nitb;
} nm_route;

struct nm_topology {
    char name[128];
    int nhosts, nswitches, nlinks;
    nm_host *hosts;
    nm_switch *switches;
    nm_link *links;
    struct nm_routing *rt;         /* the routes (routes.c): given ones, and what computes the others */
    /* Added by topology.c (may be NULL/0 in hand-built topologies): */
    char **host_names;             /* nhosts names ("H0"... for generated topologies) */
    char **switch_names;           /* nswitches names */
    int *host_line;                /* declaring line in a topology file, 0 if generated */
    int route_given_count;         /* routes given explicitly by `route` lines */
    /* Added by routes.c (routing of seed 002): */
    int routing;                   /* NM_ROUTING_* used by nm_routes_compute */
    int updown_root;               /* root switch of the up/down orientation, -1 if none */
    int *sw_level;                 /* BFS level of each switch from the root (NULL: no orientation) */
    int route_check_ok;            /* last nm_routes_check: 1 deadlock-free and legal, 0 not, -1 not run, -2 put off
                                    * (topology.c: nm_topology_routing_info runs it) */
    char route_check_msg[320];     /* its report */
    int *sw_dist;                  /* nswitches^2 minimal inter-switch distances [a*ns+b] (NULL if huge) */
    int *ud_dist;                  /* nswitches^2 shortest legal up/down distances (NULL: no orientation) */
    /* Added by topo_gen.c for the fabrics whose engines route by coordinates (engine_packet.c): */
    int gen_kind;                  /* NM_GEN_* of the generator that built it (0: other) */
    int gen_dims[4];               /* torus radices: avici X,Y,Z; sci R (one per dimension) */
    int gen_ndims;
    int prefer_spread;             /* route_ties = auto spreads ties here (Clos, trunks, parallel links) */
    /* updown balances per (source host, destination switch) unit up to this many units, beyond
     * it one tree per destination switch (0: routes.c's NM_UD_UNITS_MAX; tests set it and route
     * again with nm_routes_compute_as) */
    double ud_unit_limit;
    /* nm_topology_load_progress, while the topology loads (NULL otherwise) */
    nm_progress_fn progress;
    void *progress_user;
};

/* Tell the loader's progress callback, if any, at each hundredth of `total` and at its end
 * (deterministic: by counts, never by a clock). */
static inline void nm_progress_(const nm_topology *t, const char *what, double done, double total)
{
    if (!t->progress || total <= 0) return;
    if (done <= 0 || done >= total || (long long)(100.0 * done / total) != (long long)(100.0 * (done - 1) / total))
        t->progress(t->progress_user, what, done, total);
}

enum { NM_GEN_OTHER = 0, NM_GEN_AVICI = 1, NM_GEN_SCI = 2 };

enum { NM_ROUTING_SHORTEST = 0, NM_ROUTING_UPDOWN = 1, NM_ROUTING_ITB = 2 };

typedef struct nm_routing nm_routing;
/* The route src -> dst: given, or computed on its first use and kept (routes.c). Never NULL: an
 * unroutable pair (or src == dst, or a host out of range) has nhops = -1. The route stays valid
 * and unchanged until the topology is destroyed or its routes are computed again. */
const nm_route *nm_route_get(const nm_topology *t, int src, int dst);

/* Engines implement this table; nm_network dispatches on network.engine. */
typedef struct nm_engine_ops {
    cm_named id;              /* its entry in the engine registry (network.engine) */
    /* 1 if it holds channels while a packet is blocked (wormhole), so that routes with a
     * channel-dependency cycle can deadlock; 0 for engines that queue whole packets */
    int blocks;
    void *(*create)(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen);
    void (*destroy)(void *eng);
    int (*inject)(void *eng, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie);
    nm_time_t (*next_time)(const void *eng);
    int (*run_until)(void *eng, nm_time_t limit);
    nm_time_t (*now)(const void *eng);
    void (*stats)(const void *eng, nm_stats *out);
    size_t (*link_busy)(const void *eng, nm_time_t *busy_ps, size_t max);
    /* nm_network_run_instants; *stop may be lowered by callbacks while it runs. NULL: the
     * network steps the engine one instant at a time with run_until. */
    int (*run_instants)(void *eng, nm_time_t limit, const nm_time_t *stop);
    /* Optional (NULL: none): switch multicast, see nm_network_inject_multicast. */
    int (*has_multicast)(const void *eng);
    int (*inject_multicast)(void *eng, int src, int n, const int *dst, const uint64_t *cookies, uint64_t payload,
                            nm_time_t t);
    /* Optional (NULL: nothing to say): why run_until failed other than by a deadlock, in words
     * that name the keys to change; 1 when written. */
    int (*failure_reason)(const void *eng, char *buf, size_t len);
    /* Optional (NULL: the network injects the packets and holds back all deliveries but the
     * last): nm_network_inject_train, arguments checked. */
    int (*inject_train)(void *eng, int src, int dst, uint64_t payload, uint32_t count, nm_time_t t, nm_time_t period,
                        uint64_t cookie);
    int (*train_cut)(void *eng, int src, uint64_t cookie, uint32_t keep, uint32_t *delivered);
} nm_engine_ops;

/* Engines report deliveries and drops through these (they call the user's callbacks). */
void nm_network_deliver_(nm_network *net, const nm_delivery *d);
void nm_network_drop_(nm_network *net, const nm_delivery *d);

/* ---- helpers shared by the parts (config.c, topology.c, routes.c) ---- */

/* The node at the far end of directed channel c (the receiving side). */
static inline void nm_channel_to(const nm_topology *t, int c, int *kind, int *id, int *port)
{
    const nm_link *l = &t->links[c / 2];
    if ((c & 1) == 0) { *kind = l->b_kind; *id = l->b_id; *port = l->b_port; }
    else              { *kind = l->a_kind; *id = l->a_id; *port = l->a_port; }
}
/* The node at the sending end of directed channel c. */
static inline void nm_channel_from(const nm_topology *t, int c, int *kind, int *id, int *port)
{
    const nm_link *l = &t->links[c / 2];
    if ((c & 1) == 0) { *kind = l->a_kind; *id = l->a_id; *port = l->a_port; }
    else              { *kind = l->b_kind; *id = l->b_id; *port = l->b_port; }
}
/* Directed channel leaving node (kind,id) through `link`. */
static inline int nm_channel_leaving(const nm_topology *t, int link, int kind, int id)
{
    const nm_link *l = &t->links[link];
    return nm_channel_of(link, l->a_kind == kind && l->a_id == id);
}

/* Parse a quantity with optional unit suffix (SI prefixes p n u µ m c k K M G T; IEC Ki Mi Gi Ti
 * for bytes) into `unit` (one of "", "B", "ps", "b/s", "m", "m/s", "Hz"). 0 or -1. */
int nm_parse_quantity(const char *unit, const char *text, double *out);
/* "a bit rate", "a time", ... for error messages. */
const char *nm_unit_noun(const char *unit);
/* Derived integer link timing from rate/length/velocity (char_ps, prop_ps). */
void nm_link_derive(nm_link *l);
/* Myrinet STOP/GO: the characters still arriving on a channel after its receiver crosses the
 * high water mark. The STOP waits for a character in progress on the reverse channel and takes
 * one character time, crosses the cable, and meanwhile the sender's characters in flight and the
 * one it is sending arrive: 2 x propagation / character time (rounded up), plus 3. The engine's
 * overflow check and the configuration's derived slack buffer (config.c) both use it. */
static inline int32_t nm_myrinet_stop_chars(nm_time_t char_ps, nm_time_t prop_ps)
{
    return (int32_t)((2 * prop_ps + char_ps - 1) / char_ps) + 3;
}

/* Topology building (topology.c), used by the file parser and the generators. Each returns
 * the new index, or -1 (out of memory / bad argument, message in err). */
nm_topology *nm_topo_new(const char *name);
int nm_topo_add_host(nm_topology *t, const char *name, int line);
int nm_topo_add_switch(nm_topology *t, const char *name, int nports);
/* Link with rate/length/velocity (<= 0: taken from cfg's network.* defaults). */
int nm_topo_add_link(nm_topology *t, int a_kind, int a_id, int a_port, int b_kind, int b_id, int b_port,
                     double rate_bps, double length_m, double velocity_mps, const nm_config *cfg,
                     char *err, size_t errlen);
/* Generators (topo_gen.c): fills an empty topology for `spec`; 1 if spec is not a generator
 * name, 0 on success, -1 on error. */
int nm_topo_generate(nm_topology *t, const char *spec, const nm_config *cfg, char *err, size_t errlen);
/* The topology language of seed 001 (topo_001.c): nm_topo_is_001 says whether a file's text is
 * in it (its first statement is "S<n>:"); nm_topo_parse_001 builds the topology, allocates the
 * route table and applies the file's routes. 0, or -1 with "FILE:LINE: ..." in err. */
int nm_topo_is_001(const char *text);
int nm_topo_parse_001(nm_topology *t, char *text, const char *path, const nm_config *cfg, char *err, size_t errlen);
/* Create the route store (no route yet). 0 or -1 (memory). */
int nm_topo_alloc_routes(nm_topology *t);
/* The slot of an explicitly given route src -> dst (topology files, tests): nhops = -1 when new,
 * >= 0 when one was given before. It replaces the computed route of the pair. NULL: memory or
 * bad hosts. Fill it with nm_route_set / nm_route_set_itb. */
nm_route *nm_route_given(nm_topology *t, int src, int dst);
void nm_routes_free(nm_topology *t);
/* The first host pair (in src, dst order) without a route: 1 and the pair, 0 if none, -1 (memory). */
int nm_routes_first_unreachable(const nm_topology *t, int *src, int *dst);

/* Route storage. nm_route_set copies the arrays; nm_route_clear frees them (nhops = -1). */
int nm_route_set(nm_route *r, int nhops, const int *out_port, const int *channel);
void nm_route_clear(nm_route *r);
/* Set up the routing by network.routing (and network.route_ties, network.seed, ...): routes of
 * pairs not given are computed from it when first asked for. Unreachable pairs have nhops = -1;
 * the caller decides if that is an error (nm_routes_first_unreachable). 0, or -1 with a message. */
int nm_routes_compute(nm_topology *topo, const nm_config *cfg, char *err, size_t errlen);
/* Route with in-transit hosts (nchannels = nhops + 1 + nitb); copies the arrays. */
int nm_route_set_itb(nm_route *r, int nhops, const int *out_port, int nchannels, const int *channel, int nitb,
                     const int *itb_host);
/* Up/down orientation (seed 002 sec 3): BFS levels from `root` into t->sw_level, t->updown_root.
 * 0, or -1 with a message (bad root, disconnected switch graph). */
int nm_updown_orient(nm_topology *t, int root, char *err, size_t errlen);
/* Directed channel c between two switches goes "up" (toward the root: to a lower level, or to the
 * lower switch id on the same level): 1; down: 0; not switch-to-switch or no orientation: -1. */
int nm_channel_is_up(const nm_topology *t, int c);
/* The deadlock checker, for every route a run may use (computed or not yet): every given route
 * is followed (connected, ends where it should, in-transit hosts where it says; with an
 * orientation, every segment between hosts is a legal up/down path); shortest and updown: so is
 * every computed route, and the channel dependency graph of all routes (no dependency across an
 * in-transit host) must be acyclic; itb: the graph of every turn the orientation allows must be
 * acyclic (each itb route is followed when it is computed). Sets t->route_check_ok /
 * route_check_msg; 0 when it passes, -1 otherwise (msg names the first illegal route or a
 * dependency cycle). */
int nm_routes_check(nm_topology *t, char *msg, size_t msglen);
/* The same check with every computed route followed pair by pair (the way it was done before the
 * per-destination enumeration; O(hosts^2 x path length)): for tests, which compare the two. */
int nm_routes_check_pairwise(nm_topology *t, char *msg, size_t msglen);
/* The switch a host's link goes to, or -1 (host-to-host cable / unlinked). */
int nm_topology_switch_of_host(const nm_topology *t, int host);

extern const nm_engine_ops nm_engine_analytic;
/* engine_packet.c: packet-level engines for the other fabrics of the seeds */
extern const nm_engine_ops nm_engine_ethernet;
extern const nm_engine_ops nm_engine_avici;
extern const nm_engine_ops nm_engine_sci;
/* Their keys (sections [ethernet], [avici], [sci]); 0 or -1 with a message. */
int nm_packet_register_keys(nm_config *cfg, char *err, size_t errlen);
/* The engine's `blocks` (nm_engine_ops) by network.engine's name; 1 for an unknown name. */
int nm_engine_blocks(const char *engine);
/* The routing registry's name of an NM_ROUTING_* kind. */
const char *nm_routing_name(int kind);
/* Routes by an explicit routing name (nm_routes_compute reads network.routing). */
int nm_routes_compute_as(nm_topology *topo, const nm_config *cfg, const char *routing, char *err, size_t errlen);
extern const nm_engine_ops nm_engine_myrinet;
/* The myrinet engine's own keys (network.nic_recv_queue, network.myrinet_stepping), registered
 * only if the configuration does not already have them. 0 or -1 with a message. */
int nm_myrinet_register_keys(nm_config *cfg, char *err, size_t errlen);
/* network.c: every engine built in registers the keys only it reads (the functions above). 0 or
 * -1 with a message. */
int nm_engine_register_keys(nm_config *cfg, char *err, size_t errlen);


/* nm_util.c */
void nm_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char *nm_strdup(const char *s);
char *nm_read_all(FILE *f, size_t max, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
