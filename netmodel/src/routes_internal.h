/* The routing's private header: the route store (struct nm_routing), the switch graph, and what
 * the parts of the routing share. The routings themselves are explained in routes.c; the parts are
 *   routes.c            the route store: switch graph, route cache and blocks, distance rows,
 *                       following a route, nm_route_get
 *   routes_algorithms.c shortest and itb routes, and the dispatch to the routing in use
 *   routes_updown.c     the up/down orientation and the balanced up*-down* routes (updown)
 *   routes_compute.c    reachability, distance tables, statistics, the routing registry and
 *                       nm_routes_compute_as
 *   routes_check.c      the deadlock checker (nm_routes_check)
 * Functions shared between the parts carry the prefix rt_; everything else is static in its file. */
#ifndef ROUTES_INTERNAL_H
#define ROUTES_INTERNAL_H

#include "nm_internal.h"

#include <stddef.h>
#include <stdint.h>

/* ---- switch graph helpers ------------------------------------------------------------------ */

typedef struct sgraph {
    int ns;
    int *off;      /* ns+1 offsets into ch/nb */
    int *ch;       /* directed switch->switch channels leaving each switch, in port order */
    int *nb;       /* the neighbour each leads to */
    int *port;     /* the port it leaves by */
    int *dist;     /* dist[target*ns + s] (NULL unless built with_dist) */
    int *hosts_off, *hosts;   /* hosts per switch, in host order */
} sgraph;
/* ---- the route store ------------------------------------------------------------------------ */

/* A stored route: computed ones live in blocks (their arrays right behind them), given ones are
 * allocated one by one (nm_route_set may replace their arrays). */
typedef struct croute {
    nm_route r;
    int given;
    int src, dst;
} croute;

typedef struct itb_dest {        /* itb: path counts toward one destination switch (routes_itb) */
    double *P, *C;
    int *F;
} itb_dest;

struct nm_routing {
    int kind;                    /* NM_ROUTING_*, -1 until nm_routes_compute */
    int spread, fewest;          /* network.route_ties, network.itb_path */
    uint64_t seed;               /* network.seed */
    int have_g;
    sgraph g;                    /* the switch graph (g.dist only for updown per host and itb) */
    /* without t->sw_dist or g.dist: BFS distances toward each destination switch, one row of
     * `drow_esz`-byte entries per switch (all ones: unreachable), kept once computed */
    void **drow;
    int drow_esz;
    size_t drow_bytes, drow_budget;
    /* updown: per (source host, destination switch) unit, its switch-to-switch channels as
     * [count, channels...] at ud_off[s * ns + b] in ud_path; -1: no unit. At scale (ud_dest):
     * per destination switch b, for every (switch, phase) state the edge it takes toward b, as
     * an index among its switch's edges (`ud_esz` bytes, all ones: none) at row ud_didx[b] */
    int ud_state;                /* 0 not computed, 1 computed, -1 out of memory */
    int ud_dest;                 /* 1: one tree per destination switch (ud_next), 0: per unit */
    int64_t *ud_off;
    int *ud_path;
    size_t ud_n, ud_cap;
    void *ud_next;
    int ud_esz;
    int *ud_didx;
    signed char *ud_up;          /* per edge of g: 1 up, 0 down */
    itb_dest *itb;               /* per destination switch, on demand */
    /* the cache: pair (src * nhosts + dst + 1) -> route */
    uint64_t *key;
    croute **val;
    size_t cap, n;
    /* the last pair asked for: the network and its engine ask for a packet's route one after the
     * other, and a pair's packets come in runs */
    uint64_t last_k;
    croute *last_c;
    char **blocks;
    size_t nblocks, bcap, bleft;
    char *bp;
    croute **given;
    size_t ngiven, gcap;
    uint64_t bad;                /* computed routes that failed their check (never expected) */
    int *chans, *itb_hosts;      /* scratch for one route */
    int scap;
};

/* A row of distances toward one destination switch, whatever its storage. */
typedef struct dview {
    const void *p;
    int esz;   /* bytes per entry: 1 or 2 (all ones: unreachable), 4 (int, -1) */
} dview;

static inline int dv_at(dview v, int x)
{
    if (v.esz == 1) {
        unsigned d = ((const uint8_t *)v.p)[x];
        return d == 0xFFu ? -1 : (int)d;
    }
    if (v.esz == 2) {
        unsigned d = ((const uint16_t *)v.p)[x];
        return d == 0xFFFFu ? -1 : (int)d;
    }
    return ((const int *)v.p)[x];
}

/* A route without storing it (statistics over every pair): given, or computed into scratch. */
typedef struct rview { int nhops, nchannels, nitb; const int *channel; } rview;

/* The edge (index into g's edges) state st takes toward destination switch b in ud_dest mode,
 * or -1. */
static inline int ud_dest_edge(const nm_routing *R, int b, int st)
{
    size_t i = (size_t)R->ud_didx[b] * (size_t)(2 * R->g.ns) + (size_t)st;
    unsigned e = R->ud_esz == 1 ? ((const uint8_t *)R->ud_next)[i] : ((const uint16_t *)R->ud_next)[i];
    if (e == (R->ud_esz == 1 ? 0xFFu : 0xFFFFu)) return -1;
    return R->g.off[st / 2] + (int)e;
}

/* small helpers of every part (inline: the route functions call them per step) */
static inline uint64_t rt_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Switch at the other end of a switch's port, or -1 (host or unconnected). */
static inline int rt_neighbour_switch(const nm_topology *t, int s, int p)
{
    int l = t->switches[s].port_link[p];
    if (l < 0) return -1;
    const nm_link *L = &t->links[l];
    int from_a = L->a_kind == NM_NODE_SWITCH && L->a_id == s && L->a_port == p;
    int k = from_a ? L->b_kind : L->a_kind, id = from_a ? L->b_id : L->a_id;
    return k == NM_NODE_SWITCH ? id : -1;
}

/* routes.c */
void rt_bfs(const nm_topology *t, int target, int *dist, int *queue);
void rt_bfs_g(const sgraph *g, int target, int *dist, int *queue);
int rt_sgraph_build(const nm_topology *t, sgraph *g, int with_dist);
croute *rt_cache_find(const nm_routing *R, uint64_t k);
void rt_routing_clear(nm_topology *t);
int rt_row_keep(nm_routing *R, int ns, int b, const int *dist);
int rt_dist_to(const nm_topology *t, nm_routing *R, int b, dview *v);
const char *rt_follow_route(const nm_topology *t, int s, int d, int nhops, const int *out_port,
                            int nchannels, const int *channel, int nitb, const int *itb_host, int *illegal_at);
int rt_route_view(const nm_topology *t, int s, int d, rview *v);

/* routes_algorithms.c */
int rt_route_shortest(const nm_topology *t, nm_routing *R, int s, int d, int *chans);
int rt_itb_path_fewest(const nm_config *cfg, char *err, size_t errlen, int *fewest);
int rt_route_compute(const nm_topology *t, nm_routing *R, int s, int d, int *nitb);

/* routes_updown.c */
int rt_auto_root(const nm_topology *t, const int *dist_all);
int rt_ud_compute(const nm_topology *t, nm_routing *R);
int rt_ud_compute_dest(const nm_topology *t, nm_routing *R, int64_t base);
int rt_route_updown(const nm_topology *t, nm_routing *R, int s, int d, int *chans);

/* routes_compute.c */
int *rt_components(const nm_topology *t);

#endif
