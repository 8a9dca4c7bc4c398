/* Source routes (netmodel/README.md, "Routes" and "Routing of seed 002").
 *
 * shortest: BFS over the switch graph toward the destination's switch; at each switch the output
 *   port is one that lies on a shortest path. Ties: network.route_ties = lowest (lowest port) or
 *   spread (candidate (src+dst) mod count). May deadlock on networks with cycles.
 * updown: seed 002 sec 3. Links are oriented by a BFS spanning tree from a root switch (the up
 *   end is the end nearer the root, or the lower switch id at equal depth); a legal route takes
 *   zero or more up links then zero or more down links. Among the legal routes one is chosen per
 *   (source host, destination switch) as GM's simple_routes does (seed 002 sec 5.3): a shortest
 *   path on weighted links, the weight of a channel being a base cost (the mean final load of a
 *   switch channel, so a detour costs about one average link) plus the number of host pairs
 *   already routed over it. Units are routed in an order shuffled by network.seed.
 * itb: seed 002 sec 4. One minimal path per host pair, drawn uniformly among all minimal paths
 *   (network.itb_path = random, default) or among those with the fewest down->up turns
 *   (fewest_itb) with a generator seeded by (network.seed, src, dst); where it turns from a down
 *   link to an up link it is split at that switch: the packet is addressed to a host on that
 *   switch (drawn the same way), which ejects it into its in-transit buffer and reinjects it.
 *
 * Storage at scale: no table over host pairs. A route is a function of its pair that is computed
 * when the pair is first asked for (nm_route_get) and kept in a cache, so a run stores the routes
 * it uses. What the functions need is kept per switch: BFS distances per destination switch
 * (shortest), the balanced up*-down* paths per (source host, destination switch) unit (computed
 * at load, because each unit's choice depends on the load of every unit routed before it: 4096
 * hosts on 256 switches are 1 M units, not 16 M pairs), the ITB path counts per destination
 * switch (itb, computed on first use). Routes given explicitly (topology files) are kept as given.
 *
 * The checker (nm_routes_check) must prove deadlock freedom before the run, for routes that are
 * not computed yet. shortest and updown: every route is a function of a few per-switch tables, so
 * the channel dependencies of every host pair are enumerated from them (each switch path once per
 * unit, the host ends per pair) into a bitmap over (channel, output port), then Kahn's algorithm.
 * itb: every route is split into legal up*-down* segments, and the graph of every legal turn of
 * the orientation is acyclic, so any such routes are deadlock-free; each route's segments are
 * checked when the route is computed. Everything here is deterministic. */
#include "nm_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Switch at the other end of a switch's port, or -1 (host or unconnected). */
static int neighbour_switch(const nm_topology *t, int s, int p)
{
    int l = t->switches[s].port_link[p];
    if (l < 0) return -1;
    const nm_link *L = &t->links[l];
    int from_a = L->a_kind == NM_NODE_SWITCH && L->a_id == s && L->a_port == p;
    int k = from_a ? L->b_kind : L->a_kind, id = from_a ? L->b_id : L->a_id;
    return k == NM_NODE_SWITCH ? id : -1;
}

/* dist[s] = switch hops from s to `target`, -1 if unreachable. */
static void bfs(const nm_topology *t, int target, int *dist, int *queue)
{
    for (int i = 0; i < t->nswitches; i++) dist[i] = -1;
    int head = 0, tail = 0;
    dist[target] = 0;
    queue[tail++] = target;
    while (head < tail) {
        int s = queue[head++];
        for (int p = 0; p < t->switches[s].nports; p++) {
            int n = neighbour_switch(t, s, p);
            if (n >= 0 && dist[n] < 0) {
                dist[n] = dist[s] + 1;
                queue[tail++] = n;
            }
        }
    }
}

int nm_topology_switch_of_host(const nm_topology *t, int h)
{
    if (!t || h < 0 || h >= t->nhosts || t->hosts[h].link < 0) return -1;
    int k, id, port;
    nm_channel_to(t, nm_channel_leaving(t, t->hosts[h].link, NM_NODE_HOST, h), &k, &id, &port);
    return k == NM_NODE_SWITCH ? id : -1;
}

int nm_route_set_itb(nm_route *r, int nhops, const int *out_port, int nchannels, const int *channel, int nitb,
                     const int *itb_host)
{
    int *op = malloc((size_t)(nhops > 0 ? nhops : 1) * sizeof *op);
    int *ch = malloc((size_t)nchannels * sizeof *ch);
    int *ih = nitb > 0 ? malloc((size_t)nitb * sizeof *ih) : NULL;
    if (!op || !ch || (nitb > 0 && !ih)) { free(op); free(ch); free(ih); return -1; }
    if (nhops > 0) memcpy(op, out_port, (size_t)nhops * sizeof *op);
    memcpy(ch, channel, (size_t)nchannels * sizeof *ch);
    if (nitb > 0) memcpy(ih, itb_host, (size_t)nitb * sizeof *ih);
    nm_route_clear(r);
    r->nhops = nhops;
    r->out_port = op;
    r->nchannels = nchannels;
    r->channel = ch;
    r->itb_host = ih;
    r->nitb = nitb;
    return 0;
}

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

static void sgraph_free(sgraph *g)
{
    free(g->off); free(g->ch); free(g->nb); free(g->port); free(g->dist); free(g->hosts_off); free(g->hosts);
    memset(g, 0, sizeof *g);
}

/* dist[s] = switch hops from s to `target` over the graph's edges, -1 if unreachable. */
static void bfs_g(const sgraph *g, int target, int *dist, int *queue)
{
    for (int i = 0; i < g->ns; i++) dist[i] = -1;
    int head = 0, tail = 0;
    dist[target] = 0;
    queue[tail++] = target;
    while (head < tail) {
        int s = queue[head++], ds = dist[s] + 1;
        for (int k = g->off[s]; k < g->off[s + 1]; k++) {
            int n = g->nb[k];
            if (dist[n] < 0) {
                dist[n] = ds;
                queue[tail++] = n;
            }
        }
    }
}

/* with_dist 0: the adjacency and hosts only (dist NULL), for the checker's walk over hosts */
static int sgraph_build(const nm_topology *t, sgraph *g, int with_dist)
{
    int ns = t->nswitches, nh = t->nhosts;
    memset(g, 0, sizeof *g);
    g->ns = ns;
    int total = 0;
    for (int s = 0; s < ns; s++)
        for (int p = 0; p < t->switches[s].nports; p++)
            if (neighbour_switch(t, s, p) >= 0) total++;
    g->off = malloc(((size_t)ns + 1) * sizeof *g->off);
    g->ch = malloc((size_t)(total ? total : 1) * sizeof *g->ch);
    g->nb = malloc((size_t)(total ? total : 1) * sizeof *g->nb);
    g->port = malloc((size_t)(total ? total : 1) * sizeof *g->port);
    g->dist = with_dist ? malloc((size_t)(ns ? ns : 1) * (size_t)(ns ? ns : 1) * sizeof *g->dist) : NULL;
    g->hosts_off = calloc((size_t)ns + 1, sizeof *g->hosts_off);
    g->hosts = malloc((size_t)(nh ? nh : 1) * sizeof *g->hosts);
    int *q = malloc((size_t)(ns ? ns : 1) * sizeof *q);
    if (!g->off || !g->ch || !g->nb || !g->port || (with_dist && !g->dist) || !g->hosts_off || !g->hosts || !q) {
        free(q);
        sgraph_free(g);
        return -1;
    }
    int k = 0;
    for (int s = 0; s < ns; s++) {
        g->off[s] = k;
        for (int p = 0; p < t->switches[s].nports; p++) {
            int n = neighbour_switch(t, s, p);
            if (n < 0) continue;
            g->ch[k] = nm_channel_leaving(t, t->switches[s].port_link[p], NM_NODE_SWITCH, s);
            g->nb[k] = n;
            g->port[k] = p;
            k++;
        }
    }
    g->off[ns] = k;
    for (int s = 0; with_dist && s < ns; s++) bfs_g(g, s, &g->dist[(size_t)s * (size_t)ns], q);
    free(q);
    for (int h = 0; h < nh; h++) {
        int s = nm_topology_switch_of_host(t, h);
        if (s >= 0) g->hosts_off[s + 1]++;
    }
    for (int s = 0; s < ns; s++) g->hosts_off[s + 1] += g->hosts_off[s];
    int *fill = calloc((size_t)ns + 1, sizeof *fill);
    if (!fill) { sgraph_free(g); return -1; }
    for (int h = 0; h < nh; h++) {
        int s = nm_topology_switch_of_host(t, h);
        if (s >= 0) g->hosts[g->hosts_off[s] + fill[s]++] = h;
    }
    free(fill);
    return 0;
}

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

static const nm_route no_route = {-1, NULL, 0, NULL, NULL, 0};

static int ensure_scratch(nm_routing *R, int n)
{
    if (n <= R->scap) return 0;
    int *c = realloc(R->chans, (size_t)n * sizeof *c), *h = c ? realloc(R->itb_hosts, (size_t)n * sizeof *h) : NULL;
    if (c) R->chans = c;
    if (h) R->itb_hosts = h;
    if (!c || !h) return -1;
    R->scap = n;
    return 0;
}

int nm_topo_alloc_routes(nm_topology *t)
{
    if (t->nhosts <= 0) return -1;
    if (t->rt) return 0;
    t->rt = calloc(1, sizeof *t->rt);
    if (!t->rt) return -1;
    t->rt->kind = -1;
    /* a route has at most 2 * (switches + hosts) + 2 channels (itb: each switch crossed at most
     * twice, once more per in-transit host) */
    return ensure_scratch(t->rt, 2 * (t->nswitches + t->nhosts) + 4);
}

static size_t hslot(const nm_routing *R, uint64_t k)
{
    uint64_t h = k * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 17) & (R->cap - 1);
}

static croute *cache_find(const nm_routing *R, uint64_t k)
{
    if (!R->cap) return NULL;
    for (size_t i = hslot(R, k);; i = (i + 1) & (R->cap - 1)) {
        if (R->key[i] == k) return R->val[i];
        if (R->key[i] == 0) return NULL;
    }
}

static int cache_put(nm_routing *R, uint64_t k, croute *v)
{
    if (2 * (R->n + 1) > R->cap) {
        size_t nc = R->cap ? 2 * R->cap : 1024;
        uint64_t *nk = calloc(nc, sizeof *nk);
        croute **nv = malloc(nc * sizeof *nv);
        if (!nk || !nv) { free(nk); free(nv); return -1; }
        uint64_t *ok = R->key;
        croute **ov = R->val;
        size_t oc = R->cap;
        R->key = nk;
        R->val = nv;
        R->cap = nc;
        for (size_t i = 0; i < oc; i++)
            if (ok[i]) {
                size_t j = hslot(R, ok[i]);
                while (R->key[j]) j = (j + 1) & (R->cap - 1);
                R->key[j] = ok[i];
                R->val[j] = ov[i];
            }
        free(ok);
        free(ov);
    }
    size_t i = hslot(R, k);
    while (R->key[i] && R->key[i] != k) i = (i + 1) & (R->cap - 1);
    if (!R->key[i]) R->n++;
    R->key[i] = k;
    R->val[i] = v;
    return 0;
}

static void *arena_alloc(nm_routing *R, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > R->bleft) {
        size_t sz = n > ((size_t)1 << 20) ? n : ((size_t)1 << 20);
        if (R->nblocks == R->bcap) {
            size_t nc = R->bcap ? 2 * R->bcap : 16;
            char **nb = realloc(R->blocks, nc * sizeof *nb);
            if (!nb) return NULL;
            R->blocks = nb;
            R->bcap = nc;
        }
        char *b = malloc(sz);
        if (!b) return NULL;
        R->blocks[R->nblocks++] = b;
        R->bp = b;
        R->bleft = sz;
    }
    void *p = R->bp;
    R->bp += n;
    R->bleft -= n;
    return p;
}

/* Forget the computed routing (keeps given routes): before routes are computed again. */
static void routing_clear(nm_topology *t)
{
    nm_routing *R = t->rt;
    if (!R) return;
    if (R->have_g) sgraph_free(&R->g);
    R->have_g = 0;
    if (R->drow) {
        for (int b = 0; b < t->nswitches; b++) free(R->drow[b]);
        free(R->drow);
        R->drow = NULL;
    }
    R->drow_esz = 0;
    R->drow_bytes = 0;
    free(R->ud_off);
    free(R->ud_path);
    free(R->ud_next);
    free(R->ud_didx);
    free(R->ud_up);
    R->ud_off = NULL;
    R->ud_path = NULL;
    R->ud_next = NULL;
    R->ud_didx = NULL;
    R->ud_up = NULL;
    R->ud_n = R->ud_cap = 0;
    R->ud_state = 0;
    R->ud_dest = 0;
    if (R->itb) {
        for (int b = 0; b < t->nswitches; b++) { free(R->itb[b].P); free(R->itb[b].C); free(R->itb[b].F); }
        free(R->itb);
        R->itb = NULL;
    }
    for (size_t i = 0; i < R->nblocks; i++) free(R->blocks[i]);
    R->nblocks = 0;
    R->bleft = 0;
    R->bp = NULL;
    /* the cache keeps the given routes only */
    R->last_k = 0;
    R->last_c = NULL;
    free(R->key);
    free(R->val);
    R->key = NULL;
    R->val = NULL;
    R->cap = R->n = 0;
    for (size_t i = 0; i < R->ngiven; i++) {
        croute *c = R->given[i];
        (void)cache_put(R, (uint64_t)c->src * (uint64_t)t->nhosts + (uint64_t)c->dst + 1, c);
    }
    R->kind = -1;
    R->bad = 0;
}

void nm_routes_free(nm_topology *t)
{
    nm_routing *R = t->rt;
    if (!R) return;
    routing_clear(t);
    for (size_t i = 0; i < R->ngiven; i++) {
        nm_route_clear(&R->given[i]->r);
        free(R->given[i]);
    }
    free(R->given);
    free(R->blocks);
    free(R->key);
    free(R->val);
    free(R->chans);
    free(R->itb_hosts);
    free(R);
    t->rt = NULL;
}

nm_route *nm_route_given(nm_topology *t, int src, int dst)
{
    nm_routing *R = t->rt;
    if (!R || src < 0 || dst < 0 || src >= t->nhosts || dst >= t->nhosts || src == dst) return NULL;
    uint64_t k = (uint64_t)src * (uint64_t)t->nhosts + (uint64_t)dst + 1;
    croute *c = cache_find(R, k);
    if (c && c->given) return &c->r;
    if (R->ngiven == R->gcap) {
        size_t nc = R->gcap ? 2 * R->gcap : 16;
        croute **ng = realloc(R->given, nc * sizeof *ng);
        if (!ng) return NULL;
        R->given = ng;
        R->gcap = nc;
    }
    c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->r.nhops = -1;
    c->given = 1;
    c->src = src;
    c->dst = dst;
    if (cache_put(R, k, c) != 0) { free(c); return NULL; }
    R->given[R->ngiven++] = c;
    return &c->r;
}

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

/* Keep the BFS row `dist` toward b in R->drow, in the routing's row width. 0 or -1 (memory). */
static int row_keep(nm_routing *R, int ns, int b, const int *dist)
{
    if (!R->drow && !(R->drow = calloc((size_t)(ns ? ns : 1), sizeof *R->drow))) return -1;
    if (R->drow[b]) return 0;
    int esz = R->drow_esz ? R->drow_esz : 4;
    /* rows beyond a budget (1 GB, or an eighth of this machine's memory) are forgotten all at once
     * and computed again when asked for: 65536 switches of one host each would need 8.6 GB */
    size_t bytes = (size_t)(ns ? ns : 1) * (size_t)esz;
    if (!R->drow_budget) {
        long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        double m = pages > 0 && psize > 0 ? (double)pages * (double)psize / 8 : 1e9;
        R->drow_budget = (size_t)(m < 1e9 ? m : 1e9);
    }
    if (R->drow_bytes + bytes > R->drow_budget) {
        for (int x = 0; x < ns; x++) { free(R->drow[x]); R->drow[x] = NULL; }
        R->drow_bytes = 0;
    }
    R->drow_bytes += bytes;
    void *row = malloc((size_t)(ns ? ns : 1) * (size_t)esz);
    if (!row) return -1;
    for (int x = 0; x < ns; x++) {
        int d = dist[x];
        if (esz == 1) ((uint8_t *)row)[x] = d < 0 ? 0xFF : (uint8_t)d;
        else if (esz == 2) ((uint16_t *)row)[x] = d < 0 ? 0xFFFF : (uint16_t)d;
        else ((int *)row)[x] = d;
    }
    R->drow[b] = row;
    return 0;
}

/* BFS distances of every switch to switch b (a row of t->sw_dist or g.dist, or computed once and
 * kept). 0, or -1 (memory). */
static int dist_to(const nm_topology *t, nm_routing *R, int b, dview *v)
{
    int ns = t->nswitches;
    v->esz = 4;
    if (t->sw_dist) { v->p = &t->sw_dist[(size_t)b * (size_t)ns]; return 0; }   /* symmetric: links are full duplex */
    if (R->have_g && R->g.dist) { v->p = &R->g.dist[(size_t)b * (size_t)ns]; return 0; }
    if (!R->drow || !R->drow[b]) {
        int *d = malloc((size_t)ns * sizeof *d), *q = malloc((size_t)ns * sizeof *q);
        if (d && q) {
            if (R->have_g) bfs_g(&R->g, b, d, q);
            else bfs(t, b, d, q);
        }
        int rc = d && q ? row_keep(R, ns, b, d) : -1;
        free(d);
        free(q);
        if (rc != 0) return -1;
    }
    v->p = R->drow[b];
    v->esz = R->drow_esz ? R->drow_esz : 4;
    return 0;
}

/* ---- shortest ------------------------------------------------------------------------------ */

/* Channels of the shortest route s -> d into chans; their count, or -1 (no route). */
static int route_shortest(const nm_topology *t, nm_routing *R, int s, int d, int *chans)
{
    int dl = t->hosts[d].link, sl = t->hosts[s].link;
    if (dl < 0 || sl < 0) return -1;
    /* where the destination hangs: a switch (target, tport) or directly a host */
    int dk, did, dport;
    nm_channel_to(t, nm_channel_leaving(t, dl, NM_NODE_HOST, d), &dk, &did, &dport);
    int target = dk == NM_NODE_SWITCH ? did : -1, tport = dport;
    int c0 = nm_channel_leaving(t, sl, NM_NODE_HOST, s);
    int k, cur, port;
    nm_channel_to(t, c0, &k, &cur, &port);
    chans[0] = c0;
    if (k == NM_NODE_HOST) return cur == d ? 1 : -1;   /* host-to-host cable */
    if (target < 0) return -1;
    if (cur == target) {   /* both on one switch: no distances needed */
        chans[1] = nm_channel_leaving(t, t->switches[cur].port_link[tport], NM_NODE_SWITCH, cur);
        return 2;
    }
    dview D;
    if (dist_to(t, R, target, &D) != 0 || dv_at(D, cur) < 0) return -1;
    const sgraph *g = R->have_g ? &R->g : NULL;
    int h = 0, cand[257];
    while (1) {
        if (cur == target) {
            chans[h + 1] = nm_channel_leaving(t, t->switches[cur].port_link[tport], NM_NODE_SWITCH, cur);
        } else {
            /* the neighbours one step closer, in port order (g's edges are) */
            int nc = 0, dc = dv_at(D, cur) - 1;
            if (g) {
                for (int e = g->off[cur]; e < g->off[cur + 1] && nc < 257; e++)
                    if (dv_at(D, g->nb[e]) == dc) cand[nc++] = g->ch[e];
            } else {
                for (int p = 0; p < t->switches[cur].nports && nc < 257; p++) {
                    int n = neighbour_switch(t, cur, p);
                    if (n >= 0 && dv_at(D, n) == dc)
                        cand[nc++] = nm_channel_leaving(t, t->switches[cur].port_link[p], NM_NODE_SWITCH, cur);
                }
            }
            chans[h + 1] = cand[R->spread ? (int)(((unsigned)s + (unsigned)d) % (unsigned)nc) : 0];
        }
        h++;
        if (cur == target) break;
        nm_channel_to(t, chans[h], &k, &cur, &port);
    }
    return h + 1;
}

/* ---- up/down orientation ------------------------------------------------------------------- */

int nm_updown_orient(nm_topology *t, int root, char *err, size_t errlen)
{
    int ns = t->nswitches;
    if (root < 0 || root >= ns) {
        nm_set_err(err, errlen, "up*/down* root switch %d does not exist (0..%d)", root, ns - 1);
        return -1;
    }
    int *lvl = malloc((size_t)(ns ? ns : 1) * sizeof *lvl);
    int *q = malloc((size_t)(ns ? ns : 1) * sizeof *q);
    if (!lvl || !q) { free(lvl); free(q); nm_set_err(err, errlen, "out of memory"); return -1; }
    bfs(t, root, lvl, q);
    free(q);
    free(t->sw_level);
    t->sw_level = lvl;
    t->updown_root = root;
    return 0;
}

int nm_channel_is_up(const nm_topology *t, int c)
{
    const nm_link *l = &t->links[c / 2];
    if (!t->sw_level || l->a_kind != NM_NODE_SWITCH || l->b_kind != NM_NODE_SWITCH) return -1;
    int u = (c & 1) ? l->b_id : l->a_id, v = (c & 1) ? l->a_id : l->b_id;   /* u -> v */
    int lu = t->sw_level[u], lv = t->sw_level[v];
    return (lv < lu || (lv == lu && v < u)) ? 1 : 0;
}

/* OpenSM's up/down root rule (osm_ucast_updn.c, updn_find_root_nodes_by_min_hop): a switch whose
 * histogram of hop counts to the hosts has exactly one bar above 90% of the hosts and one above
 * 5%. Lowest such switch; when none, the switch with the least total distance to every host. */
static int auto_root(const nm_topology *t, const int *dist_all)
{
    int ns = t->nswitches, nh = t->nhosts;
    int *hosts_on = calloc((size_t)ns, sizeof *hosts_on);
    int *hist = calloc((size_t)ns + 2, sizeof *hist);
    int best = 0;
    long long best_sum = -1;
    if (!hosts_on || !hist) { free(hosts_on); free(hist); return 0; }
    for (int h = 0; h < nh; h++) {
        int s = nm_topology_switch_of_host(t, h);
        if (s >= 0) hosts_on[s]++;
    }
    int nca = 0;
    for (int s = 0; s < ns; s++) nca += hosts_on[s];
    int chosen = -1;
    for (int s = 0; s < ns && chosen < 0; s++) {
        memset(hist, 0, ((size_t)ns + 2) * sizeof *hist);
        for (int o = 0; o < ns; o++) {
            int d = dist_all[(size_t)o * (size_t)ns + (size_t)s];
            if (d >= 0 && hosts_on[o]) hist[d + 1] += hosts_on[o];   /* hops switch->host: d + 1 */
        }
        int over1 = 0, over2 = 0;
        for (int i = 0; i < ns + 2; i++) {
            if (hist[i] > 0.9 * nca) over1++;
            if (hist[i] > 0.05 * nca) over2++;
        }
        if (over1 == 1 && over2 == 1) chosen = s;
    }
    if (chosen < 0) {
        for (int s = 0; s < ns; s++) {
            long long sum = 0;
            for (int o = 0; o < ns; o++) {
                int d = dist_all[(size_t)o * (size_t)ns + (size_t)s];
                sum += (long long)(d < 0 ? ns : d) * hosts_on[o];
            }
            if (best_sum < 0 || sum < best_sum) { best_sum = sum; best = s; }
        }
        chosen = best;
    }
    free(hosts_on);
    free(hist);
    return chosen;
}

/* ---- updown: legal routes balanced on weighted links (GM simple_routes) --------------------- */

/* A search over (switch, phase) states with an indexed heap ordered by (key, state), key = the
 * distance so far plus a lower bound of what is left (A*; the bound 0 makes it Dijkstra). Every
 * state is in the heap at most once (decrease-key). Arrays are reset lazily by a generation
 * stamp: a unit costs what its search visits, not the size of the network. */
typedef struct udheap {
    int64_t *dist, *key;
    int *heap, *pos;
    uint32_t *seen, *fin, gen;
    int n;
} udheap;

static inline int ud_less(const udheap *H, int a, int b)
{
    return H->key[a] < H->key[b] || (H->key[a] == H->key[b] && a < b);
}
static void ud_up(udheap *H, int i)
{
    int x = H->heap[i];
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!ud_less(H, x, H->heap[p])) break;
        H->heap[i] = H->heap[p];
        H->pos[H->heap[i]] = i;
        i = p;
    }
    H->heap[i] = x;
    H->pos[x] = i;
}
static int ud_pop(udheap *H)
{
    int top = H->heap[0], x = H->heap[--H->n], i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = l;
        if (l >= H->n) break;
        if (r < H->n && ud_less(H, H->heap[r], H->heap[l])) m = r;
        if (!ud_less(H, H->heap[m], x)) break;
        H->heap[i] = H->heap[m];
        H->pos[H->heap[i]] = i;
        i = m;
    }
    if (H->n > 0) {
        H->heap[i] = x;
        H->pos[x] = i;
    }
    return top;
}

#define UD_HOPS_INF 0xFFFFu

/* Legal hop counts from every (switch, phase) state to switch b (phase 0: may still go up, 1: has
 * gone down), by a breadth-first search backwards from b's two states; UD_HOPS_INF where b
 * cannot be reached legally. rin_off/rin list, per switch, the edges (g->ch indices) entering it;
 * esrc gives an edge's source switch. */
static void ud_hops_to(const sgraph *g, const int *up, const int *rin_off, const int *rin, const int *esrc, int b,
                       uint16_t *hops, int *queue)
{
    int nst = 2 * g->ns;
    for (int i = 0; i < nst; i++) hops[i] = UD_HOPS_INF;
    int head = 0, tail = 0;
    hops[2 * b] = hops[2 * b + 1] = 0;
    queue[tail++] = 2 * b;
    queue[tail++] = 2 * b + 1;
    while (head < tail) {
        int v = queue[head++], y = v / 2, phv = v % 2;
        unsigned hv = hops[v] + 1u;
        for (int i = rin_off[y]; i < rin_off[y + 1]; i++) {
            int k = rin[i], x = esrc[k];
            /* the forward step (x, ph) -k-> v is legal: up edges from phase 0 into phase 0, down
             * edges from either phase into phase 1 */
            if ((up[k] == 1) != (phv == 0)) continue;
            for (int ph = 0; ph < (up[k] == 1 ? 1 : 2); ph++) {
                int u = 2 * x + ph;
                if (hops[u] == UD_HOPS_INF) { hops[u] = (uint16_t)(hv < UD_HOPS_INF ? hv : UD_HOPS_INF - 1); queue[tail++] = u; }
            }
        }
    }
}

/* Every (source host, destination switch) unit's balanced legal path, into R->ud_off/ud_path.
 *
 * The path of a unit is GM simple_routes' choice as the project defined it with Dijkstra's
 * algorithm: among the legal paths of least weight, the one whose every state was reached from
 * the predecessor finalized first in (distance, state) order, by that predecessor's first edge of
 * that weight. This depends on the exact distances of the states on least-weight paths only, so
 * it is found here with A* (a channel costs at least `base`, so base x the legal hop count to the
 * destination is a consistent lower bound): the search goes on until every state whose key is at
 * most the destination's distance is finalized, and the path is then rebuilt backwards by that
 * rule. Same paths as the plain search, several times fewer states visited. */
static int ud_compute(const nm_topology *t, nm_routing *R)
{
    const sgraph *g = &R->g;
    int ns = t->nswitches, nh = t->nhosts, nst = 2 * ns + 1;
    size_t nch = 2 * (size_t)t->nlinks;
    int64_t *load = calloc(nch ? nch : 1, sizeof *load);
    /* states: switch*2 + phase (0: may still go up, 1: has gone down) */
    udheap H = {malloc((size_t)nst * sizeof(int64_t)), malloc((size_t)nst * sizeof(int64_t)),
                malloc((size_t)nst * sizeof(int)), malloc((size_t)nst * sizeof(int)), calloc((size_t)nst, sizeof(uint32_t)),
                calloc((size_t)nst, sizeof(uint32_t)), 0, 0};
    int nedges = g->off[ns];
    size_t nunit_max = (size_t)(nh ? nh : 1) * (size_t)(ns ? ns : 1);
    int64_t *units = malloc(nunit_max * sizeof *units);
    int *path = malloc((size_t)(2 * ns + 4) * sizeof *path);
    int *up = malloc((size_t)(nedges ? nedges : 1) * sizeof *up);
    int *esrc = malloc((size_t)(nedges ? nedges : 1) * sizeof *esrc);
    int *rin_off = calloc((size_t)ns + 2, sizeof *rin_off);
    int *rin = malloc((size_t)(nedges ? nedges : 1) * sizeof *rin);
    int *hsw = malloc((size_t)(nh ? nh : 1) * sizeof *hsw);
    int *didx = malloc((size_t)(ns ? ns : 1) * sizeof *didx);
    uint16_t *hops = NULL;
    R->ud_off = malloc(nunit_max * sizeof *R->ud_off);
    int rc = -1;
    if (!load || !H.dist || !H.key || !H.heap || !H.pos || !H.seen || !H.fin || !units || !path || !up || !esrc ||
        !rin_off || !rin || !hsw || !didx || !R->ud_off)
        goto out;
    for (size_t i = 0; i < nunit_max; i++) R->ud_off[i] = -1;
    for (int x = 0; x < ns; x++)
        for (int k = g->off[x]; k < g->off[x + 1]; k++) {
            up[k] = nm_channel_is_up(t, g->ch[k]);
            esrc[k] = x;
            rin_off[g->nb[k] + 2]++;
        }
    for (int y = 0; y < ns; y++) rin_off[y + 2] += rin_off[y + 1];
    for (int k = 0; k < nedges; k++) rin[rin_off[g->nb[k] + 1]++] = k;   /* rin_off[y] .. rin_off[y + 1] */
    for (int s = 0; s < nh; s++) hsw[s] = nm_topology_switch_of_host(t, s);
    /* the lower bound's hop counts, per destination switch with hosts (none when too large: the
     * search is then Dijkstra's, same paths) */
    int ndest = 0;
    for (int b = 0; b < ns; b++) didx[b] = g->hosts_off[b + 1] > g->hosts_off[b] ? ndest++ : -1;
    if (nst < (int)UD_HOPS_INF && (double)ndest * nst * sizeof *hops <= 256e6) {
        hops = malloc((size_t)ndest * (size_t)nst * sizeof *hops);
        if (hops)
            for (int b = 0; b < ns; b++)
                if (didx[b] >= 0) ud_hops_to(g, up, rin_off, rin, esrc, b, &hops[(size_t)didx[b] * (size_t)nst], H.heap);
    }
    /* base cost: mean final load of a switch channel */
    double pairs_len = 0;
    size_t nunits = 0;
    for (int s = 0; s < nh; s++) {
        int a = hsw[s];
        if (a < 0) continue;
        for (int b = 0; b < ns; b++) {
            int nb = g->hosts_off[b + 1] - g->hosts_off[b];
            if (nb == 0 || b == a) continue;
            int d = g->dist[(size_t)b * (size_t)ns + (size_t)a];
            if (d < 0) continue;
            pairs_len += (double)d * nb;
            units[nunits++] = (int64_t)s * ns + b;
        }
    }
    int64_t base = nedges ? (int64_t)(pairs_len / nedges) + 1 : 1;
    /* shuffle the units (Fisher-Yates, seeded) */
    uint64_t rs = R->seed * 0x9E3779B97F4A7C15ULL + 0x5eed;
    for (size_t i = nunits; i-- > 1;) {
        size_t j = (size_t)(splitmix(&rs) % (uint64_t)(i + 1));
        int64_t x = units[i]; units[i] = units[j]; units[j] = x;
    }
    for (size_t ui = 0; ui < nunits; ui++) {
        int s = (int)(units[ui] / ns), b = (int)(units[ui] % ns);
        int a = hsw[s];
        int nb = g->hosts_off[b + 1] - g->hosts_off[b];
        const uint16_t *hb = hops ? &hops[(size_t)didx[b] * (size_t)nst] : NULL;
        if (hb && hb[2 * a] == UD_HOPS_INF) continue;   /* no legal route */
        if (++H.gen == 0) {   /* stamps wrapped: clear them */
            memset(H.seen, 0, (size_t)nst * sizeof *H.seen);
            memset(H.fin, 0, (size_t)nst * sizeof *H.fin);
            H.gen = 1;
        }
        const uint32_t gen = H.gen;
        H.n = 0;
        H.dist[2 * a] = 0;
        H.key[2 * a] = hb ? base * hb[2 * a] : 0;
        H.seen[2 * a] = gen;
        H.heap[H.n++] = 2 * a;
        H.pos[2 * a] = 0;
        int64_t cstar = -1;   /* the least distance to b found */
        while (H.n > 0) {
            if (cstar >= 0 && H.key[H.heap[0]] > cstar) break;
            int x = ud_pop(&H);
            H.fin[x] = gen;
            int u = x / 2, ph = x % 2;
            if (u == b) {   /* not expanded: a path through b is never the least */
                if (cstar < 0 || H.dist[x] < cstar) cstar = H.dist[x];
                continue;
            }
            int64_t dx = H.dist[x];
            for (int k = g->off[u]; k < g->off[u + 1]; k++) {
                if (up[k] == 1 && ph == 1) continue;        /* no up after down */
                int vs = 2 * g->nb[k] + (up[k] == 1 ? 0 : 1);
                if (H.fin[vs] == gen) continue;
                int64_t hv = 0;
                if (hb) {
                    if (hb[vs] == UD_HOPS_INF) continue;      /* b is not legally reachable from there */
                    hv = base * hb[vs];
                }
                int64_t nd = dx + base + load[g->ch[k]];
                if (H.seen[vs] != gen) {
                    H.seen[vs] = gen;
                    H.dist[vs] = nd;
                    H.key[vs] = nd + hv;
                    H.heap[H.n] = vs;
                    ud_up(&H, H.n++);
                } else if (nd < H.dist[vs]) {
                    H.dist[vs] = nd;
                    H.key[vs] = nd + hv;
                    ud_up(&H, H.pos[vs]);
                }
            }
        }
        if (cstar < 0) continue;   /* no legal route: the pair is routed as shortest (and fails the check) */
        /* the goal: b's state first in (distance, state) order */
        int goal = H.fin[2 * b] == gen && H.dist[2 * b] == cstar ? 2 * b : 2 * b + 1;
        int np = 0;
        for (int v = goal; v != 2 * a;) {
            int y = v / 2, phv = v % 2, bu = -1, bk = -1;
            for (int i = rin_off[y]; i < rin_off[y + 1]; i++) {
                int k = rin[i], x = esrc[k];
                if ((up[k] == 1) != (phv == 0) || x == b) continue;
                int64_t w = base + load[g->ch[k]];
                for (int ph = 0; ph < (up[k] == 1 ? 1 : 2); ph++) {
                    int st = 2 * x + ph;
                    if (H.fin[st] != gen || H.dist[st] + w != H.dist[v]) continue;
                    if (bu < 0 || H.dist[st] < H.dist[bu] || (H.dist[st] == H.dist[bu] && (st < bu || (st == bu && k < bk)))) {
                        bu = st;
                        bk = k;
                    }
                }
            }
            path[np++] = bk;
            v = bu;
        }
        /* path is reversed: g->ch indices from b back to a */
        for (int i = 0; i < np; i++) load[g->ch[path[i]]] += nb;
        if (R->ud_n + (size_t)np + 1 > R->ud_cap) {
            size_t nc = R->ud_cap ? 2 * R->ud_cap : 4096;
            while (nc < R->ud_n + (size_t)np + 1) nc *= 2;
            int *p = realloc(R->ud_path, nc * sizeof *p);
            if (!p) goto out;
            R->ud_path = p;
            R->ud_cap = nc;
        }
        R->ud_off[units[ui]] = (int64_t)R->ud_n;
        R->ud_path[R->ud_n++] = np;
        for (int i = np - 1; i >= 0; i--) R->ud_path[R->ud_n++] = g->ch[path[i]];
    }
    rc = 0;
out:
    free(load); free(H.dist); free(H.key); free(H.heap); free(H.pos); free(H.seen); free(H.fin);
    free(units); free(path); free(up); free(esrc); free(rin_off); free(rin); free(hsw); free(didx); free(hops);
    R->ud_state = rc == 0 ? 1 : -1;
    return rc;
}
/* up*-down* at scale (R->ud_dest): one tree per destination switch instead of a path per (source
 * host, destination switch) unit, as the switches' tables of seed 002 hold one route per
 * destination and OpenSM's SSSP/DFSSSP routings balance theirs: destinations are taken in an
 * order shuffled by network.seed; toward each, the least-weight legal path from every (switch,
 * phase) state is found by Dijkstra's algorithm backwards from the destination (weights as for
 * units: base + the host pairs already routed over the channel, ties to the lower state), and
 * then every channel of the tree gets the host pairs that cross it (hosts below it x hosts on the
 * destination). Every host of a switch takes the same path to a destination. Cost: destination
 * switches x (states + edges) x log states, not hosts x switches searches. */
static int ud_compute_dest(const nm_topology *t, nm_routing *R, int64_t base)
{
    const sgraph *g = &R->g;
    int ns = t->nswitches, nst = 2 * ns;
    int nedges = g->off[ns];
    size_t nch = 2 * (size_t)t->nlinks;
    int maxdeg = 0;
    for (int x = 0; x < ns; x++)
        if (g->off[x + 1] - g->off[x] > maxdeg) maxdeg = g->off[x + 1] - g->off[x];
    int esz = maxdeg < 0xFF ? 1 : 2;
    int64_t *load = calloc(nch ? nch : 1, sizeof *load), *flow = malloc((size_t)(nst ? nst : 1) * sizeof *flow);
    udheap H = {malloc((size_t)(nst ? nst : 1) * sizeof(int64_t)), NULL, malloc((size_t)(nst ? nst : 1) * sizeof(int)),
                malloc((size_t)(nst ? nst : 1) * sizeof(int)), calloc((size_t)(nst ? nst : 1), sizeof(uint32_t)),
                calloc((size_t)(nst ? nst : 1), sizeof(uint32_t)), 0, 0};
    H.key = H.dist;   /* plain Dijkstra */
    int *nxt = malloc((size_t)(nst ? nst : 1) * sizeof *nxt), *order = malloc((size_t)(nst ? nst : 1) * sizeof *order);
    int *esrc = malloc((size_t)(nedges ? nedges : 1) * sizeof *esrc);
    int *rin_off = calloc((size_t)ns + 2, sizeof *rin_off), *rin = malloc((size_t)(nedges ? nedges : 1) * sizeof *rin);
    int *dests = malloc((size_t)(ns ? ns : 1) * sizeof *dests);
    R->ud_up = malloc((size_t)(nedges ? nedges : 1));
    R->ud_didx = malloc((size_t)(ns ? ns : 1) * sizeof *R->ud_didx);
    int rc = -1, ndest = 0;
    if (!load || !flow || !H.dist || !H.heap || !H.pos || !H.seen || !H.fin || !nxt || !order || !esrc || !rin_off ||
        !rin || !dests || !R->ud_up || !R->ud_didx)
        goto out;
    for (int x = 0; x < ns; x++)
        for (int k = g->off[x]; k < g->off[x + 1]; k++) {
            R->ud_up[k] = (signed char)(nm_channel_is_up(t, g->ch[k]) == 1);
            esrc[k] = x;
            rin_off[g->nb[k] + 2]++;
        }
    for (int y = 0; y < ns; y++) rin_off[y + 2] += rin_off[y + 1];
    for (int k = 0; k < nedges; k++) rin[rin_off[g->nb[k] + 1]++] = k;
    for (int b = 0; b < ns; b++) {
        R->ud_didx[b] = -1;
        if (g->hosts_off[b + 1] > g->hosts_off[b]) { R->ud_didx[b] = ndest; dests[ndest++] = b; }
    }
    R->ud_esz = esz;
    R->ud_next = malloc((size_t)(ndest ? ndest : 1) * (size_t)(nst ? nst : 1) * (size_t)esz);
    if (!R->ud_next) goto out;
    memset(R->ud_next, 0xFF, (size_t)(ndest ? ndest : 1) * (size_t)(nst ? nst : 1) * (size_t)esz);
    uint64_t rs = R->seed * 0x9E3779B97F4A7C15ULL + 0xde57;
    for (int i = ndest; i-- > 1;) {
        int j = (int)(splitmix(&rs) % (uint64_t)(i + 1)), x = dests[i];
        dests[i] = dests[j];
        dests[j] = x;
    }
    for (int di = 0; di < ndest; di++) {
        int b = dests[di];
        int64_t nb = g->hosts_off[b + 1] - g->hosts_off[b];
        nm_progress_(t, "balancing up*/down* routes", di, ndest);
        if (++H.gen == 0) {
            memset(H.seen, 0, (size_t)nst * sizeof *H.seen);
            memset(H.fin, 0, (size_t)nst * sizeof *H.fin);
            H.gen = 1;
        }
        const uint32_t gen = H.gen;
        H.n = 0;
        for (int ph = 0; ph < 2; ph++) {
            int v = 2 * b + ph;
            H.dist[v] = 0;
            H.seen[v] = gen;
            nxt[v] = -1;
            H.heap[H.n] = v;
            ud_up(&H, H.n++);
        }
        int no = 0;
        while (H.n > 0) {
            int v = ud_pop(&H), y = v / 2, phv = v % 2;
            H.fin[v] = gen;
            order[no++] = v;
            int64_t dv = H.dist[v];
            for (int i = rin_off[y]; i < rin_off[y + 1]; i++) {
                int k = rin[i], x = esrc[k], upk = R->ud_up[k];
                /* the step (x, ph) -k-> v is legal: up edges from phase 0 into phase 0, down
                 * edges from either phase into phase 1 */
                if (x == b || upk != (phv == 0)) continue;
                int64_t nd = dv + base + load[g->ch[k]];
                for (int ph = 0; ph < (upk ? 1 : 2); ph++) {
                    int u = 2 * x + ph;
                    if (H.fin[u] == gen) continue;
                    if (H.seen[u] != gen) {
                        H.seen[u] = gen;
                        H.dist[u] = nd;
                        nxt[u] = k;
                        H.heap[H.n] = u;
                        ud_up(&H, H.n++);
                    } else if (nd < H.dist[u]) {
                        H.dist[u] = nd;
                        nxt[u] = k;
                        ud_up(&H, H.pos[u]);
                    }
                }
            }
        }
        /* the tree, and its channels' load: farthest states first, so that a state's flow is
         * complete before it is passed on */
        uint8_t *row8 = (uint8_t *)R->ud_next + (size_t)R->ud_didx[b] * (size_t)nst * (size_t)esz;
        uint16_t *row16 = (uint16_t *)row8;
        for (int i = 0; i < no; i++) {
            int u = order[i];
            flow[u] = (u % 2 == 0 && u / 2 != b) ? (int64_t)(g->hosts_off[u / 2 + 1] - g->hosts_off[u / 2]) : 0;
        }
        for (int i = no; i-- > 0;) {
            int u = order[i], k = nxt[u];
            if (k < 0) continue;
            int rel = k - g->off[u / 2];
            if (esz == 1) row8[u] = (uint8_t)rel;
            else row16[u] = (uint16_t)rel;
            if (!flow[u]) continue;
            int v = 2 * g->nb[k] + (R->ud_up[k] ? 0 : 1);
            flow[v] += flow[u];
            load[g->ch[k]] += flow[u] * nb;
        }
    }
    nm_progress_(t, "balancing up*/down* routes", ndest, ndest);
    R->ud_dest = 1;
    rc = 0;
out:
    free(load); free(flow); free(H.dist); free(H.heap); free(H.pos); free(H.seen); free(H.fin);
    free(nxt); free(order); free(esrc); free(rin_off); free(rin); free(dests);
    R->ud_state = rc == 0 ? 1 : -1;
    return rc;
}

/* The edge (index into g's edges) state st takes toward destination switch b in ud_dest mode,
 * or -1. */
static inline int ud_dest_edge(const nm_routing *R, int b, int st)
{
    size_t i = (size_t)R->ud_didx[b] * (size_t)(2 * R->g.ns) + (size_t)st;
    unsigned e = R->ud_esz == 1 ? ((const uint8_t *)R->ud_next)[i] : ((const uint16_t *)R->ud_next)[i];
    if (e == (R->ud_esz == 1 ? 0xFFu : 0xFFFFu)) return -1;
    return R->g.off[st / 2] + (int)e;
}

/* The updown route s -> d: the unit (s, switch of d) between the two host channels. */
static int route_updown(const nm_topology *t, nm_routing *R, int s, int d, int *chans)
{
    int a = nm_topology_switch_of_host(t, s), b = nm_topology_switch_of_host(t, d);
    /* host pairs on one switch, and host-to-host cables, are routed as `shortest` would */
    if (a < 0 || b < 0 || a == b) return route_shortest(t, R, s, d, chans);
    if (R->ud_state == 0) (void)ud_compute(t, R);   /* itb's fallback asks for it on demand */
    if (R->ud_state != 1) return -1;
    if (R->ud_dest) {
        int n = 0, st = 2 * a, limit = 2 * t->nswitches + 2;
        chans[n++] = nm_channel_leaving(t, t->hosts[s].link, NM_NODE_HOST, s);
        while (st / 2 != b) {
            int k = ud_dest_edge(R, b, st);
            if (k < 0 || n > limit) return route_shortest(t, R, s, d, chans);
            chans[n++] = R->g.ch[k];
            st = 2 * R->g.nb[k] + (R->ud_up[k] ? 0 : 1);
        }
        chans[n++] = nm_channel_leaving(t, t->hosts[d].link, NM_NODE_SWITCH, b);
        return n;
    }
    int64_t off = R->ud_off[(size_t)s * (size_t)t->nswitches + (size_t)b];
    if (off < 0) return route_shortest(t, R, s, d, chans);
    int n = 0, np = R->ud_path[off];
    chans[n++] = nm_channel_leaving(t, t->hosts[s].link, NM_NODE_HOST, s);
    for (int i = 0; i < np; i++) chans[n++] = R->ud_path[off + 1 + i];
    chans[n++] = nm_channel_leaving(t, t->hosts[d].link, NM_NODE_SWITCH, b);
    return n;
}

/* ---- itb: minimal paths split at down->up turns ---------------------------------------------- */

/* network.itb_path: random (default; seed 002 sec 4, "randomly selected among all the feasible
 * paths. In the case a nonvalid up*-down* path is chosen ...", and sec 5.5.1, ITB traffic avoiding
 * the root) draws the pair's minimal path uniformly among all minimal paths; fewest_itb (an mpisim
 * variant) uniformly among the minimal paths with the fewest down->up turns, i.e. a legal
 * up*-down* minimal path whenever one exists. Without the key in the configuration, random. */
static int itb_path_fewest(const nm_config *cfg, char *err, size_t errlen, int *fewest)
{
    const char *v = cfg && nm_config_has(cfg, "network.itb_path") ? nm_config_string(cfg, "network.itb_path")
                                                                    : "random";
    if (!strcmp(v, "fewest_itb")) *fewest = 1;
    else if (!strcmp(v, "random")) *fewest = 0;
    else {
        nm_set_err(err, errlen, "network.itb_path '%s' is not one of fewest_itb|random", v);
        return -1;
    }
    return 0;
}

#define ITB_INF 0x3fffffff

/* Toward destination switch b:
 *   P[s]: minimal paths (over channels) from s to b (random);
 *   F[2s+ph], C[2s+ph]: fewest down->up turns on a minimal path from s to b having arrived at s
 *   by a down link (ph = 1) or not (ph = 0; the source switch), and how many minimal paths
 *   have that few (fewest_itb). A turn at a switch without hosts is not allowed (ITB_INF). */
static const itb_dest *itb_dest_get(const nm_topology *t, nm_routing *R, int b)
{
    const sgraph *g = &R->g;
    int ns = t->nswitches;
    if (!R->itb && !(R->itb = calloc((size_t)ns, sizeof *R->itb))) return NULL;
    itb_dest *X = &R->itb[b];
    if (X->P) return X;
    double *P = malloc((size_t)(ns ? ns : 1) * sizeof *P);
    int *F = malloc((size_t)(2 * ns + 2) * sizeof *F);
    double *C = malloc((size_t)(2 * ns + 2) * sizeof *C);
    int *order = malloc((size_t)(ns ? ns : 1) * sizeof *order);
    if (!P || !F || !C || !order) { free(P); free(F); free(C); free(order); return NULL; }
    const int *D = &g->dist[(size_t)b * (size_t)ns];
    /* switches by increasing distance to b (counting sort) */
    int no = 0;
    for (int dd = 0; dd < ns && no < ns; dd++)
        for (int s = 0; s < ns; s++)
            if (D[s] == dd) order[no++] = s;
    for (int s = 0; s < ns; s++) {
        P[s] = 0;
        F[2 * s] = F[2 * s + 1] = ITB_INF;
        C[2 * s] = C[2 * s + 1] = 0;
    }
    P[b] = 1;
    F[2 * b] = F[2 * b + 1] = 0;
    C[2 * b] = C[2 * b + 1] = 1;
    for (int i = 0; i < no; i++) {
        int s = order[i];
        if (s == b) continue;
        int hosts_here = g->hosts_off[s + 1] > g->hosts_off[s];
        double c = 0;
        for (int k = g->off[s]; k < g->off[s + 1]; k++) {
            int n = g->nb[k];
            if (D[n] != D[s] - 1) continue;
            c += P[n];
            int upk = nm_channel_is_up(t, g->ch[k]) == 1, nx = 2 * n + (upk ? 0 : 1);
            if (F[nx] >= ITB_INF) continue;
            for (int ph = 0; ph < 2; ph++) {
                int turn = ph == 1 && upk;
                if (turn && !hosts_here) continue;
                int f = F[nx] + turn;
                if (f < F[2 * s + ph]) { F[2 * s + ph] = f; C[2 * s + ph] = C[nx]; }
                else if (f == F[2 * s + ph]) C[2 * s + ph] += C[nx];
            }
        }
        P[s] = c;
    }
    free(order);
    X->P = P;
    X->F = F;
    X->C = C;
    return X;
}

/* The itb route s -> d (channels into chans, in-transit hosts into itb): its channel count, and
 * *nitb; -1 if none. Pairs with no usable minimal path keep their up/down route. */
static int route_itb(const nm_topology *t, nm_routing *R, int s, int d, int *chans, int *itb, int *nitb_out)
{
    const sgraph *g = &R->g;
    int ns = t->nswitches;
    *nitb_out = 0;
    int a = nm_topology_switch_of_host(t, s), b = nm_topology_switch_of_host(t, d);
    if (a < 0 || b < 0) return route_shortest(t, R, s, d, chans);
    const int *D = &g->dist[(size_t)b * (size_t)ns];
    if (D[a] < 0) return route_shortest(t, R, s, d, chans);
    const itb_dest *X = itb_dest_get(t, R, b);
    if (!X) return -1;
    const double *P = X->P, *C = X->C;
    const int *F = X->F;
    uint64_t rs = R->seed * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)s * 0xD1B54A32D192ED03ULL) ^
                  ((uint64_t)d * 0xABC98388FB8FAC03ULL);
    int n = 0, nitb = 0;
    if (R->fewest && F[2 * a] >= ITB_INF) return route_updown(t, R, s, d, chans);
    /* random: draw a minimal path; if it would need an in-transit host on a switch without hosts
     * (the paper assumes there is none), draw again; after 32 draws the pair keeps its up/down
     * route. fewest_itb: one draw. */
    for (int attempt = 0; attempt < 32; attempt++) {
        int cur = a, last_up = -1, bad = 0;
        n = 0;
        nitb = 0;
        chans[n++] = nm_channel_leaving(t, t->hosts[s].link, NM_NODE_HOST, s);
        while (cur != b) {
            int ph = last_up == 0, pick = -1;
            if (R->fewest) {
                /* next channel among those keeping the fewest turns, with probability
                 * C(next)/C(cur): uniform over the minimal paths with fewest turns */
                double x = (double)(splitmix(&rs) >> 11) * (1.0 / 9007199254740992.0) * C[2 * cur + ph];
                for (int k = g->off[cur]; k < g->off[cur + 1]; k++) {
                    int nb = g->nb[k];
                    if (D[nb] != D[cur] - 1) continue;
                    int upk = nm_channel_is_up(t, g->ch[k]) == 1, nx = 2 * nb + (upk ? 0 : 1);
                    int turn = ph == 1 && upk;
                    if (F[nx] >= ITB_INF || F[nx] + turn != F[2 * cur + ph]) continue;
                    if (turn && g->hosts_off[cur + 1] == g->hosts_off[cur]) continue;
                    pick = k;
                    x -= C[nx];
                    if (x < 0) break;
                }
            } else {
                /* next channel with probability npaths(next)/npaths(cur): uniform over paths */
                double x = (double)(splitmix(&rs) >> 11) * (1.0 / 9007199254740992.0) * P[cur];
                for (int k = g->off[cur]; k < g->off[cur + 1]; k++) {
                    if (D[g->nb[k]] != D[cur] - 1) continue;
                    pick = k;
                    x -= P[g->nb[k]];
                    if (x < 0) break;
                }
            }
            int upk = nm_channel_is_up(t, g->ch[pick]);
            if (upk == 1 && last_up == 0) {
                /* down -> up turn at `cur`: eject into a host there */
                int nhs = g->hosts_off[cur + 1] - g->hosts_off[cur];
                if (nhs == 0) { bad = 1; break; }
                int ih = g->hosts[g->hosts_off[cur] + (int)(splitmix(&rs) % (uint64_t)nhs)];
                int hl = t->hosts[ih].link;
                chans[n++] = nm_channel_leaving(t, hl, NM_NODE_SWITCH, cur);
                chans[n++] = nm_channel_leaving(t, hl, NM_NODE_HOST, ih);
                itb[nitb++] = ih;
            }
            last_up = upk;
            chans[n++] = g->ch[pick];
            cur = g->nb[pick];
        }
        if (!bad) break;
        n = -1;
    }
    if (n < 0) return route_updown(t, R, s, d, chans);
    chans[n++] = nm_channel_leaving(t, t->hosts[d].link, NM_NODE_SWITCH, b);
    *nitb_out = nitb;
    return n;
}

/* The computed route s -> d (s != d, both valid) into R's scratch: channel count or -1. */
static int route_compute(const nm_topology *t, nm_routing *R, int s, int d, int *nitb)
{
    *nitb = 0;
    switch (R->kind) {
    case NM_ROUTING_SHORTEST: return route_shortest(t, R, s, d, R->chans);
    case NM_ROUTING_UPDOWN: return route_updown(t, R, s, d, R->chans);
    case NM_ROUTING_ITB: return route_itb(t, R, s, d, R->chans, R->itb_hosts, nitb);
    default: return -1;
    }
}

/* ---- following a route ---------------------------------------------------------------------- */

/* Follow a route from host s: its channels consecutive, route bytes (when given) matching the
 * ports, in-transit hosts where it says, ending at d; with an orientation every segment between
 * hosts a legal up*-down* path. NULL if it is, else why (*illegal_at set to the channel that goes
 * up after going down, -1 for other reasons). */
static const char *follow_route(const nm_topology *t, int s, int d, int nhops, const int *out_port, int nchannels,
                                const int *channel, int nitb, const int *itb_host, int *illegal_at)
{
    size_t nch = 2 * (size_t)t->nlinks;
    int k, id, port, pk = NM_NODE_HOST, pid = s, itbi = 0, hops = 0, last_up = -1;
    *illegal_at = -1;
    if (nchannels != nhops + 1 + nitb || nchannels < 1) return "inconsistent lengths";
    for (int i = 0; i < nchannels; i++) {
        int c = channel[i];
        if (c < 0 || (size_t)c >= nch) return "channel out of range";
        nm_channel_from(t, c, &k, &id, &port);
        if (k != pk || id != pid) return "channels not consecutive";
        if (k == NM_NODE_SWITCH) {
            if (hops >= nhops || (out_port && out_port[hops] != port)) return "route byte does not match";
            hops++;
        }
        int u = nm_channel_is_up(t, c);
        if (u == 1 && last_up == 0) {
            *illegal_at = c;
            return "is not a legal up*/down* path";
        }
        if (u >= 0) last_up = u;
        nm_channel_to(t, c, &pk, &pid, &port);
        if (pk == NM_NODE_HOST && i + 1 < nchannels) {
            if (itbi >= nitb || !itb_host || itb_host[itbi] != pid) return "passes a host that is not its in-transit host";
            itbi++;
            last_up = -1;   /* the in-transit buffer starts a new up*-down* segment */
        }
    }
    if (pk != NM_NODE_HOST || pid != d) return "does not end at its destination";
    if (itbi != nitb || hops != nhops) return "inconsistent in-transit hosts or route bytes";
    return NULL;
}

/* ---- the cache ------------------------------------------------------------------------------ */

const nm_route *nm_route_get(const nm_topology *t, int src, int dst)
{
    nm_routing *R = t->rt;
    if (!R || src < 0 || dst < 0 || src >= t->nhosts || dst >= t->nhosts || src == dst) return &no_route;
    uint64_t k = (uint64_t)src * (uint64_t)t->nhosts + (uint64_t)dst + 1;
    if (k == R->last_k) return &R->last_c->r;
    croute *c = cache_find(R, k);
    if (c) {
        R->last_k = k;
        R->last_c = c;
        return &c->r;
    }
    int nitb = 0, n = route_compute(t, R, src, dst, &nitb);
    int nhops = 0;
    for (int i = 1; i < n; i++) {
        int kk, id, port;
        nm_channel_from(t, R->chans[i], &kk, &id, &port);
        if (kk == NM_NODE_SWITCH) nhops++;
    }
    if (n > 0 && R->kind == NM_ROUTING_ITB) {
        /* the load-time check proved every legal route safe; that this one is legal is checked now */
        int illegal;
        if (follow_route(t, src, dst, nhops, NULL, n, R->chans, nitb, R->itb_hosts, &illegal)) {
            R->bad++;   /* the checker's promise does not cover it: refuse the route */
            n = -1;
        }
    }
    size_t words = n > 0 ? (size_t)nhops + (size_t)n + (size_t)nitb : 0;
    c = arena_alloc(R, sizeof *c + words * sizeof(int));
    if (!c) return &no_route;
    memset(c, 0, sizeof *c);
    c->src = src;
    c->dst = dst;
    c->r.nhops = -1;
    if (n > 0) {
        int *w = (int *)(c + 1);
        c->r.nhops = nhops;
        c->r.nchannels = n;
        c->r.nitb = nitb;
        c->r.out_port = w;
        c->r.channel = w + nhops;
        c->r.itb_host = nitb ? w + nhops + n : NULL;
        memcpy(c->r.channel, R->chans, (size_t)n * sizeof(int));
        if (nitb) memcpy(c->r.itb_host, R->itb_hosts, (size_t)nitb * sizeof(int));
        int h = 0;
        for (int i = 1; i < n; i++) {
            int kk, id, port;
            nm_channel_from(t, R->chans[i], &kk, &id, &port);
            if (kk == NM_NODE_SWITCH) c->r.out_port[h++] = port;
        }
    }
    if (cache_put(R, k, c) != 0) return &no_route;
    R->last_k = k;
    R->last_c = c;
    return &c->r;
}

/* A route without storing it (statistics over every pair): given, or computed into scratch. */
typedef struct rview { int nhops, nchannels, nitb; const int *channel; } rview;
static int route_view(const nm_topology *t, int s, int d, rview *v)
{
    nm_routing *R = t->rt;
    uint64_t k = (uint64_t)s * (uint64_t)t->nhosts + (uint64_t)d + 1;
    croute *c = cache_find(R, k);
    if (c) {
        v->nhops = c->r.nhops;
        v->nchannels = c->r.nchannels;
        v->nitb = c->r.nitb;
        v->channel = c->r.channel;
        return c->r.nhops;
    }
    int nitb, n = route_compute(t, R, s, d, &nitb);
    v->nhops = -1;
    if (n <= 0) return -1;
    v->nchannels = n;
    v->nitb = nitb;
    v->channel = R->chans;
    v->nhops = n - 1 - nitb;
    return v->nhops;
}

/* Switch connectivity labels, for reachability. */
static int *components(const nm_topology *t)
{
    int ns = t->nswitches;
    int *comp = malloc((size_t)(ns ? ns : 1) * sizeof *comp), *q = malloc((size_t)(ns ? ns : 1) * sizeof *q);
    if (!comp || !q) { free(comp); free(q); return NULL; }
    for (int s = 0; s < ns; s++) comp[s] = -1;
    for (int s0 = 0; s0 < ns; s0++) {
        if (comp[s0] >= 0) continue;
        int h = 0, tl = 0;
        comp[s0] = s0;
        q[tl++] = s0;
        while (h < tl) {
            int s = q[h++];
            for (int p = 0; p < t->switches[s].nports; p++) {
                int n = neighbour_switch(t, s, p);
                if (n >= 0 && comp[n] < 0) { comp[n] = s0; q[tl++] = n; }
            }
        }
    }
    free(q);
    return comp;
}

int nm_routes_first_unreachable(const nm_topology *t, int *src, int *dst)
{
    nm_routing *R = t->rt;
    if (!R) return -1;
    int nh = t->nhosts;
    int *comp = components(t);
    int *sw = malloc((size_t)nh * sizeof *sw), *peer = malloc((size_t)nh * sizeof *peer);
    int rc = -1;
    if (!comp || !sw || !peer) goto out;
    for (int h = 0; h < nh; h++) {
        sw[h] = nm_topology_switch_of_host(t, h);
        peer[h] = -1;
        if (sw[h] < 0 && t->hosts[h].link >= 0) {   /* host-to-host cable */
            int k, id, port;
            nm_channel_to(t, nm_channel_leaving(t, t->hosts[h].link, NM_NODE_HOST, h), &k, &id, &port);
            peer[h] = id;
        }
    }
    rc = 0;
    /* the usual case, in O(hosts): every host on a switch, all of them in one component */
    int one = 1;
    for (int h = 0; h < nh && one; h++) one = sw[h] >= 0 && comp[sw[h]] == comp[sw[0]];
    if (one) goto out;
    for (int s = 0; s < nh && !rc; s++)
        for (int d = 0; d < nh; d++) {
            if (s == d) continue;
            int ok = sw[s] >= 0 ? (sw[d] >= 0 && comp[sw[s]] == comp[sw[d]]) : peer[s] == d;
            if (ok) continue;
            croute *c = R->ngiven ? cache_find(R, (uint64_t)s * (uint64_t)nh + (uint64_t)d + 1) : NULL;
            if (c && c->r.nhops >= 0) continue;
            *src = s;
            *dst = d;
            rc = 1;
            break;
        }
out:
    free(comp); free(sw); free(peer);
    return rc;
}

/* All-pairs switch distances for statistics and local traffic (skipped above 2048 switches). */
static void compute_sw_dist(nm_topology *t)
{
    int ns = t->nswitches;
    free(t->sw_dist);
    t->sw_dist = NULL;
    if (ns <= 0 || ns > 2048) return;
    int *d = malloc((size_t)ns * (size_t)ns * sizeof *d), *q = malloc((size_t)ns * sizeof *q);
    if (d && q)
        for (int s = 0; s < ns; s++) bfs(t, s, &d[(size_t)s * (size_t)ns], q);
    free(q);
    if (d && q) t->sw_dist = d;
    else free(d);
}

int nm_topology_min_links(const nm_topology *t, int src, int dst)
{
    if (!t || src < 0 || dst < 0 || src >= t->nhosts || dst >= t->nhosts) return -1;
    int a = nm_topology_switch_of_host(t, src), b = nm_topology_switch_of_host(t, dst);
    if (a < 0 || b < 0) return -1;
    if (t->sw_dist) return t->sw_dist[(size_t)a * (size_t)t->nswitches + (size_t)b];
    int *d = malloc((size_t)t->nswitches * sizeof *d), *q = malloc((size_t)t->nswitches * sizeof *q);
    int r = -1;
    if (d && q) { bfs(t, b, d, q); r = d[a]; }
    free(d);
    free(q);
    return r;
}

/* Shortest legal up/down distances between all switches: BFS over (switch, gone-down) states. */
static void compute_ud_dist(nm_topology *t, const sgraph *g)
{
    int ns = t->nswitches;
    free(t->ud_dist);
    t->ud_dist = NULL;
    if (ns <= 0 || ns > 2048 || !t->sw_level) return;
    int *d = malloc((size_t)ns * (size_t)ns * sizeof *d), *st = malloc((size_t)(2 * ns) * sizeof *st);
    int *q = malloc((size_t)(2 * ns) * sizeof *q);
    if (!d || !st || !q) { free(d); free(st); free(q); return; }
    for (int a = 0; a < ns; a++) {
        for (int i = 0; i < 2 * ns; i++) st[i] = -1;
        int h = 0, tl = 0;
        st[2 * a] = 0;
        q[tl++] = 2 * a;
        while (h < tl) {
            int x = q[h++], u = x / 2, ph = x % 2;
            for (int k = g->off[u]; k < g->off[u + 1]; k++) {
                int up = nm_channel_is_up(t, g->ch[k]) == 1;
                if (up && ph) continue;
                int y = 2 * g->nb[k] + (up ? 0 : 1);
                if (st[y] < 0) { st[y] = st[x] + 1; q[tl++] = y; }
            }
        }
        for (int b = 0; b < ns; b++) {
            int x = st[2 * b], y = st[2 * b + 1];
            d[(size_t)a * (size_t)ns + (size_t)b] = x < 0 ? y : (y < 0 ? x : (x < y ? x : y));
        }
    }
    free(st);
    free(q);
    t->ud_dist = d;
}

int nm_topology_local_links(const nm_topology *t, int src, int dst)
{
    if (!t || !t->ud_dist) return nm_topology_min_links(t, src, dst);
    int a = nm_topology_switch_of_host(t, src), b = nm_topology_switch_of_host(t, dst);
    if (a < 0 || b < 0) return -1;
    return t->ud_dist[(size_t)a * (size_t)t->nswitches + (size_t)b];
}

int nm_topology_routing_info(const nm_topology *t, nm_routing_info *o)
{
    if (!t || !o) return -1;
    memset(o, 0, sizeof *o);
    if (t->route_check_ok == -2 && t->rt) {   /* deferred at load (topology.c): run it now */
        char m[320];
        (void)nm_routes_check((nm_topology *)t, m, sizeof m);
    }
    o->routing = nm_routing_name(t->routing);
    o->updown_root = t->updown_root;
    o->deadlock_free = t->route_check_ok == 1;
    o->check_message = t->route_check_msg;
    if (!t->rt) return 0;
    nm_routing *R = t->rt;
    double n = 0, minimal = 0, links = 0, mlinks = 0, itb = 0;
    /* every pair up to 2^22 of them (2048 hosts); beyond, 2^20 pairs drawn by a fixed sequence
     * (a 65536-host network has 4.3e9 pairs; all 1.7e7 pairs of a 4096-host torus took 51 s) */
    double npairs = (double)t->nhosts * (t->nhosts - 1);
    int sample = npairs > 4194304.0;
    uint64_t rs = 0x5eedULL;
    long long steps = sample ? 1048576LL : (long long)t->nhosts * t->nhosts;
    for (long long i = 0; i < steps; i++) {
        int s, d;
        if (sample) {
            s = (int)(splitmix(&rs) % (uint64_t)t->nhosts);
            d = (int)(splitmix(&rs) % (uint64_t)t->nhosts);
        } else {
            s = (int)(i / t->nhosts);
            d = (int)(i % t->nhosts);
        }
        if (s == d) continue;
        int m = -1;
        if (t->sw_dist) m = nm_topology_min_links(t, s, d);
        else {
            int a = nm_topology_switch_of_host(t, s), b = nm_topology_switch_of_host(t, d);
            dview D;
            if (a >= 0 && b >= 0 && dist_to(t, R, b, &D) == 0) m = dv_at(D, a);
        }
        rview r;
        if (m <= 0 || route_view(t, s, d, &r) < 0) continue;
        int l = 0;
        for (int k = 0; k < r.nchannels; k++) {
            const nm_link *L = &t->links[r.channel[k] / 2];
            if (L->a_kind == NM_NODE_SWITCH && L->b_kind == NM_NODE_SWITCH) l++;
        }
        n++;
        links += l;
        mlinks += m;
        minimal += l == m;
        itb += r.nitb;
    }
    o->inter_switch_pairs = (long)n;
    o->minimal_share = 1.0;   /* no pair on different switches: every route is within one switch */
    if (n > 0) {
        o->minimal_share = minimal / n;
        o->mean_links = links / n;
        o->mean_min_links = mlinks / n;
        o->itb_per_route = itb / n;
    }
    o->pairs = n;
    o->sampled = sample;
    return 0;
}

/* The routing registry (network.routing). `kind` is the NM_ROUTING_* it builds; auto is decided
 * by topology.c (shortest, then updown if shortest routes could deadlock on the engine). */
static const struct routing_entry {
    nm_named id;
    int kind;
} routings[] = {
    {{"auto", "auto", "shortest when its routes cannot deadlock on this engine, else updown"}, -1},
    {{"shortest", "shortest", "BFS over switches (may deadlock on cyclic networks)"}, NM_ROUTING_SHORTEST},
    {{"updown", "updown", "up*/down* with load-balanced route choice as GM simple_routes (seed 002 sec 3)"},
     NM_ROUTING_UPDOWN},
    {{"itb", "itb", "random minimal paths split by in-transit buffers (seed 002 sec 4)"}, NM_ROUTING_ITB},
};

const nm_named *nm_routing_at(size_t i)
{
    return i < sizeof routings / sizeof routings[0] ? &routings[i].id : NULL;
}

const char *nm_routing_name(int kind)
{
    for (size_t i = 0; i < sizeof routings / sizeof routings[0]; i++)
        if (routings[i].kind == kind) return routings[i].id.name;
    return "shortest";
}

int nm_routes_compute(nm_topology *t, const nm_config *cfg, char *err, size_t errlen)
{
    const char *routing = cfg ? nm_config_string(cfg, "network.routing") : "shortest";
    /* auto starts as shortest; topology.c falls back to updown when the checker fails */
    return nm_routes_compute_as(t, cfg, !strcmp(routing, "auto") ? "shortest" : routing, err, errlen);
}

/* What a routing may cost before it starts: memory beyond half of this machine's would end in the
 * kernel's OOM killer, and more than NM_ROUTE_MAX_STEPS search steps in a run that seems never to
 * end (a project choice: about 12 minutes at the 3.7e-8 s per step measured for up*-down*,
 * docs/architecture.md "Speed and scale"). Both estimates are deterministic (counts, not clocks),
 * so a topology loads or is refused the same way every time on a machine. 0, or -1 and why. */
#define NM_ROUTE_MAX_STEPS 2e10
static int affordable(const nm_topology *t, const char *routing, const char *what, double bytes, double steps,
                      char *err, size_t errlen)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    double budget = pages > 0 && psize > 0 ? 0.5 * (double)pages * (double)psize : 8e9;
    if (bytes <= budget && steps <= NM_ROUTE_MAX_STEPS) return 0;
    nm_set_err(err, errlen,
               "routing '%s' on %d hosts and %d switches is too large to set up: %s would need %s%.1f GB of memory "
               "(half of this machine's is %.1f GB) and about %.2g search steps (at most %.0e); network.routing=itb "
               "computes routes per destination switch when first used, shortest per pair",
               routing, t->nhosts, t->nswitches, what, bytes > budget ? "at least " : "", bytes * 1e-9, budget * 1e-9,
               steps, NM_ROUTE_MAX_STEPS);
    return -1;
}

/* updown's units: a balanced path per (source host, destination switch), all computed at load,
 * each by a search over up to 2 x switches + 1 states; its paths are at least as long as the
 * shortest ones. */
static int updown_affordable(const nm_topology *t, const sgraph *g, char *err, size_t errlen)
{
    int ns = t->nswitches;
    double units = 0, words = 0;
    for (int a = 0; a < ns; a++) {
        int na = g->hosts_off[a + 1] - g->hosts_off[a];
        if (!na) continue;
        for (int b = 0; b < ns; b++) {
            int d = g->dist[(size_t)b * (size_t)ns + (size_t)a];
            if (b == a || d < 0 || g->hosts_off[b + 1] == g->hosts_off[b]) continue;
            units += na;
            words += (double)na * (d + 1);
        }
    }
    double bytes = (double)t->nhosts * ns * 8.0 + units * 8.0 + words * 4.0;
    char what[160];
    snprintf(what, sizeof what, "balancing a path for each of its %.3g (source host, destination switch) pairs", units);
    return affordable(t, "updown", what, bytes, units * (2.0 * ns + 1), err, errlen);
}

/* The farthest any switch is from the first switch of its component, over all components: twice
 * it bounds every distance. */
static int max_eccentricity(const sgraph *g)
{
    int ns = g->ns, worst = 0;
    int *dist = malloc((size_t)(ns ? ns : 1) * sizeof *dist), *q = malloc((size_t)(ns ? ns : 1) * sizeof *q);
    char *done = calloc((size_t)(ns ? ns : 1), 1);
    if (!dist || !q || !done) { free(dist); free(q); free(done); return ns; }
    for (int s0 = 0; s0 < ns; s0++) {
        if (done[s0]) continue;
        bfs_g(g, s0, dist, q);
        for (int s = 0; s < ns; s++)
            if (dist[s] >= 0) {
                done[s] = 1;
                if (dist[s] > worst) worst = dist[s];
            }
    }
    free(dist); free(q); free(done);
    return worst;
}

/* Without the all-pairs table: one BFS from each switch with hosts (distances are symmetric).
 * want_root: auto_root's choice, from each switch's histogram of hop counts to the hosts and its
 * total distance, accumulated as the searches come (same root). pairs_len: the sum over host pairs
 * on different switches of their switch distance (up*-down*'s base cost). 0, or -1 (memory). */
static int host_bfs_pass(const nm_topology *t, const sgraph *g, int want_root, int *root, double *pairs_len)
{
    int ns = g->ns;
    int width = 2 * max_eccentricity(g) + 3;
    if (width > ns + 2) width = ns + 2;
    int *dist = malloc((size_t)(ns ? ns : 1) * sizeof *dist), *q = malloc((size_t)(ns ? ns : 1) * sizeof *q);
    uint32_t *hist = want_root ? calloc((size_t)(ns ? ns : 1) * (size_t)width, sizeof *hist) : NULL;
    long long *sum = want_root ? calloc((size_t)(ns ? ns : 1), sizeof *sum) : NULL;
    int rc = -1, nca = g->hosts_off[ns], nsrc = 0, done = 0;
    if (!dist || !q || (want_root && (!hist || !sum))) goto out;
    for (int o = 0; o < ns; o++) nsrc += g->hosts_off[o + 1] > g->hosts_off[o];
    *pairs_len = 0;
    for (int o = 0; o < ns; o++) {
        int ho = g->hosts_off[o + 1] - g->hosts_off[o];
        if (!ho) continue;
        nm_progress_(t, "distances from the switches with hosts", done++, nsrc);
        bfs_g(g, o, dist, q);
        for (int s = 0; s < ns; s++) {
            int d = dist[s], hs = g->hosts_off[s + 1] - g->hosts_off[s];
            if (d > 0) *pairs_len += (double)hs * ho * d;
            if (!want_root) continue;
            if (d >= 0) hist[(size_t)s * (size_t)width + (size_t)d + 1] += (uint32_t)ho;   /* hops switch->host: d + 1 */
            sum[s] += (long long)(d < 0 ? ns : d) * ho;
        }
    }
    nm_progress_(t, "distances from the switches with hosts", nsrc, nsrc);
    if (want_root) {
        int chosen = -1, best = 0;
        for (int s = 0; s < ns && chosen < 0; s++) {
            int over1 = 0, over2 = 0;
            for (int i = 0; i < width; i++) {
                uint32_t h = hist[(size_t)s * (size_t)width + (size_t)i];
                if (h > 0.9 * nca) over1++;
                if (h > 0.05 * nca) over2++;
            }
            if (over1 == 1 && over2 == 1) chosen = s;
        }
        if (chosen < 0) {
            for (int s = 1; s < ns; s++)
                if (sum[s] < sum[best]) best = s;
            chosen = best;
        }
        *root = chosen;
    }
    rc = 0;
out:
    free(dist); free(q); free(hist); free(sum);
    return rc;
}

/* updown balances a path per (source host, destination switch) unit while there are at most this
 * many units (torus2d:32:16:8 has 2.1 M, routed in ~10 s of CPU); beyond, one tree per destination
 * switch (ud_compute_dest). The topologies of the seeds and the tests are far below. */
#define NM_UD_UNITS_MAX 4194304.0

int nm_routes_compute_as(nm_topology *t, const nm_config *cfg, const char *routing, char *err, size_t errlen)
{
    if (!t->rt && nm_topo_alloc_routes(t) != 0) { nm_set_err(err, errlen, "out of memory"); return -1; }
    nm_routing *R = t->rt;
    routing_clear(t);
    compute_sw_dist(t);
    t->updown_root = -1;
    t->route_check_ok = -1;
    t->route_check_msg[0] = '\0';
    const char *ties = cfg ? nm_config_string(cfg, "network.route_ties") : "lowest";
    R->spread = !strcmp(ties, "spread") || (!strcmp(ties, "auto") && t->prefer_spread);
    R->seed = cfg ? (uint64_t)nm_config_int(cfg, "network.seed") : 1;
    const nm_named *id = nm_registry_find(nm_routing_at, routing);
    int kind = id ? ((const struct routing_entry *)id)->kind : -1;   /* id is the entry's first member */
    if (kind < 0) {
        nm_registry_unknown(nm_routing_at, "network.routing", routing, err, errlen);
        return -1;
    }
    int ns = t->nswitches;
    double nsw = ns;
    /* units of updown per host: each host x the switches with hosts it reaches */
    double units = 0;
    if (kind == NM_ROUTING_UPDOWN) {
        int *comp = components(t);
        double *hosts_in = calloc((size_t)(ns ? ns : 1), sizeof *hosts_in), *sw_in = calloc((size_t)(ns ? ns : 1), sizeof *sw_in);
        if (!comp || !hosts_in || !sw_in) { free(comp); free(hosts_in); free(sw_in); nm_set_err(err, errlen, "out of memory"); return -1; }
        for (int x = 0; x < ns; x++) {
            int hx = 0;
            for (int p = 0; p < t->switches[x].nports; p++) {
                int l = t->switches[x].port_link[p];
                if (l >= 0 && (t->links[l].a_kind == NM_NODE_HOST || t->links[l].b_kind == NM_NODE_HOST)) hx++;
            }
            hosts_in[comp[x]] += hx;
            sw_in[comp[x]] += hx > 0;
        }
        for (int c = 0; c < ns; c++) units += hosts_in[c] * (sw_in[c] > 0 ? sw_in[c] - 1 : 0);
        free(comp); free(hosts_in); free(sw_in);
    }
    double unit_limit = t->ud_unit_limit != 0 ? t->ud_unit_limit : NM_UD_UNITS_MAX;
    int all_pairs = kind == NM_ROUTING_ITB || (kind == NM_ROUTING_UPDOWN && units <= unit_limit);
    if (all_pairs && affordable(t, routing, "the distances between all switch pairs", nsw * nsw * 4.0,
                                nsw * (nsw + 2.0 * t->nlinks), err, errlen) != 0)
        return -1;
    if (sgraph_build(t, &R->g, all_pairs) != 0) { nm_set_err(err, errlen, "out of memory"); return -1; }
    R->have_g = 1;
    if (!t->sw_dist && !R->g.dist) {
        /* distance rows toward destination switches, as narrow as the network's diameter allows */
        int diam = 2 * max_eccentricity(&R->g);
        R->drow_esz = diam < 0xFF ? 1 : diam < 0xFFFF ? 2 : 4;
    }
    if (kind == NM_ROUTING_SHORTEST) {
        t->routing = NM_ROUTING_SHORTEST;
        R->kind = NM_ROUTING_SHORTEST;
        return 0;
    }
    t->routing = kind;
    if (t->routing == NM_ROUTING_ITB && itb_path_fewest(cfg, err, errlen, &R->fewest) != 0) return -1;
    const char *rootv = cfg && nm_config_has(cfg, "network.updown_root") ? nm_config_string(cfg, "network.updown_root")
                                                                          : "auto";
    int root = -1, auto_r = !strcmp(rootv, "auto");
    if (!auto_r) {
        char *end;
        long v = strtol(rootv, &end, 10);
        if (*rootv == '\0' || *end != '\0' || v < 0 || v >= t->nswitches) {
            nm_set_err(err, errlen, "network.updown_root '%s': expected auto or a switch number 0..%d", rootv,
                    t->nswitches - 1);
            return -1;
        }
        root = (int)v;
    }
    double pairs_len = 0;
    if (R->g.dist) {
        if (auto_r) root = ns ? auto_root(t, R->g.dist) : -1;
    } else {
        /* updown at scale: a tree per destination switch, whose table every switch holds */
        int maxdeg = 0, ndest = 0;
        for (int x = 0; x < ns; x++) {
            if (R->g.off[x + 1] - R->g.off[x] > maxdeg) maxdeg = R->g.off[x + 1] - R->g.off[x];
            ndest += R->g.hosts_off[x + 1] > R->g.hosts_off[x];
        }
        double nst = 2.0 * ns, logn = 1;
        while ((double)(1 << (int)logn) < nst && logn < 30) logn++;
        char what[200];
        snprintf(what, sizeof what, "balancing a route tree toward each of its %d destination switches", ndest);
        if (affordable(t, routing, what, ndest * nst * (maxdeg < 0xFF ? 1.0 : 2.0) + 80.0 * nst + 16.0 * t->nlinks,
                       ndest * (nst * logn + 3.0 * R->g.off[ns] + 2.0 * t->nlinks), err, errlen) != 0)
            return -1;
        if (host_bfs_pass(t, &R->g, auto_r && ns, &root, &pairs_len) != 0) { nm_set_err(err, errlen, "out of memory"); return -1; }
    }
    if (t->nswitches > 0) {
        if (nm_updown_orient(t, root, err, errlen) != 0) return -1;
        for (int s = 0; s < t->nswitches; s++)
            if (t->sw_level[s] < 0) {
                nm_set_err(err, errlen, "routing '%s': switch %d is not connected to the root switch %d", routing, s,
                        root);
                return -1;
            }
    }
    compute_ud_dist(t, &R->g);
    /* updown's units are balanced against each other: all of them now. itb routes each pair on
     * its own, when asked (its fallback computes the units then). */
    if (t->routing == NM_ROUTING_UPDOWN && R->g.dist) {
        if (updown_affordable(t, &R->g, err, errlen) != 0) return -1;
        if (ud_compute(t, R) != 0) {
            nm_set_err(err, errlen, "out of memory");
            return -1;
        }
    } else if (t->routing == NM_ROUTING_UPDOWN) {
        int64_t base = R->g.off[ns] ? (int64_t)(pairs_len / R->g.off[ns]) + 1 : 1;
        if (ud_compute_dest(t, R, base) != 0) {
            nm_set_err(err, errlen, "out of memory");
            return -1;
        }
    }
    R->kind = t->routing;
    return 0;
}

/* ---- the checker ---------------------------------------------------------------------------- */

static const char *node_str(const nm_topology *t, int kind, int id, char *buf, size_t n)
{
    const char *nm = kind == NM_NODE_HOST ? (t->host_names ? t->host_names[id] : NULL)
                                          : (t->switch_names ? t->switch_names[id] : NULL);
    if (nm) snprintf(buf, n, "%s", nm);
    else snprintf(buf, n, "%c%d", kind == NM_NODE_HOST ? 'H' : 'S', id);
    return buf;
}

/* Channel dependencies as a bitmap over (channel c entering a switch, output port there). Only
 * channels between two switches: a channel leaving a host has no dependency into it (nothing is
 * routed into a host and on, but across an in-transit buffer, which breaks the dependency) and a
 * channel entering a host none out of it, so neither can lie on a cycle; the proof is the same over
 * the switch-to-switch channels alone, and costs what the switches and links do, not the hosts. */
typedef struct depset {
    uint64_t *bits;
    size_t nch;
    int maxp;
} depset;

static inline void dep_set(depset *D, int c, int port)
{
    size_t i = (size_t)c * (size_t)D->maxp + (size_t)port;
    D->bits[i >> 6] |= (uint64_t)1 << (i & 63);
}

static void dep_add(const nm_topology *t, depset *D, int c, int c2)
{
    int k, id, port;
    nm_channel_from(t, c, &k, &id, &port);
    if (k == NM_NODE_HOST) return;   /* from a host: no channel depends into it */
    nm_channel_to(t, c, &k, &id, &port);
    if (k == NM_NODE_HOST) return;   /* an in-transit buffer breaks the dependency */
    nm_channel_to(t, c2, &k, &id, &port);
    if (k == NM_NODE_HOST) return;   /* into a host: nothing depends on it */
    nm_channel_from(t, c2, &k, &id, &port);
    dep_set(D, c, port);
}

static int cmp_given(const void *a, const void *b)
{
    const croute *x = *(const croute *const *)a, *y = *(const croute *const *)b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    return (x->dst > y->dst) - (x->dst < y->dst);
}

static int check_fail(nm_topology *t, char *msg, size_t msglen, int s, int d, const char *why, int illegal_at)
{
    char b1[64], b2[64];
    if (illegal_at >= 0) {
        int fk, fi, fp, tk, ti, tp;
        char b3[64], b4[64];
        nm_channel_from(t, illegal_at, &fk, &fi, &fp);
        nm_channel_to(t, illegal_at, &tk, &ti, &tp);
        snprintf(msg, msglen, "route %s -> %s is not a legal up*/down* path: it goes up after going down (at %s -> %s)",
                 node_str(t, NM_NODE_HOST, s, b1, sizeof b1), node_str(t, NM_NODE_HOST, d, b2, sizeof b2),
                 node_str(t, fk, fi, b3, sizeof b3), node_str(t, tk, ti, b4, sizeof b4));
    } else {
        snprintf(msg, msglen, "route %s -> %s: %s", node_str(t, NM_NODE_HOST, s, b1, sizeof b1),
                 node_str(t, NM_NODE_HOST, d, b2, sizeof b2), why);
    }
    t->route_check_ok = 0;
    snprintf(t->route_check_msg, sizeof t->route_check_msg, "%s", msg);
    return -1;
}

/* One computed route s -> d, followed and its dependencies added. 0, 1 when there is none
 * (unreachable: nm_routes_first_unreachable reports it), -1 with the message set. */
static int deps_of_pair(nm_topology *t, depset *D, int s, int d, char *msg, size_t msglen)
{
    nm_routing *R = t->rt;
    int nitb = 0, n = route_compute(t, R, s, d, &nitb);
    if (n <= 0) return 1;
    int illegal, nhops = n - 1 - nitb;
    const char *why = follow_route(t, s, d, nhops, NULL, n, R->chans, nitb, R->itb_hosts, &illegal);
    if (why) return check_fail(t, msg, msglen, s, d, why, illegal);
    for (int j = 0; j + 1 < n; j++) dep_add(t, D, R->chans[j], R->chans[j + 1]);
    return 0;
}

/* Dependencies of the computed routes from the sources `only` marks (NULL: all), pair by pair,
 * except that a unit's switch path is followed once for all hosts of its destination switch when
 * the route does not depend on the destination host (updown per unit; shortest with lowest ties).
 * Pairs with a given route are left to those. Counts the routes. 0, or -1 with the message set. */
static int deps_pairs(nm_topology *t, depset *D, size_t *nroutes, const uint8_t *only, char *msg, size_t msglen)
{
    nm_routing *R = t->rt;
    const sgraph *g = &R->g;
    int nh = t->nhosts, ns = t->nswitches;
    /* a shortest route with spread ties depends on src + dst: no sharing between destinations */
    int per_dst = R->kind == NM_ROUTING_SHORTEST && R->spread;
    int rc = 0;
    for (int s = 0; s < nh && rc == 0; s++) {
        if (t->hosts[s].link < 0 || (only && !only[s])) continue;
        int a = nm_topology_switch_of_host(t, s);
        if (a < 0) {   /* host-to-host cable: one route of one channel, no dependency */
            int k, id, port;
            nm_channel_to(t, nm_channel_leaving(t, t->hosts[s].link, NM_NODE_HOST, s), &k, &id, &port);
            croute *c = R->ngiven ? cache_find(R, (uint64_t)s * (uint64_t)nh + (uint64_t)id + 1) : NULL;
            if (!c || !c->given) (*nroutes)++;
            continue;
        }
        for (int b = 0; b < ns && rc == 0; b++) {
            int h0 = g->hosts_off[b], h1 = g->hosts_off[b + 1], done = 0;
            for (int i = h0; i < h1; i++) {
                int d = g->hosts[i];
                if (d == s) continue;
                if (R->ngiven) {
                    croute *c = cache_find(R, (uint64_t)s * (uint64_t)nh + (uint64_t)d + 1);
                    if (c && c->given) continue;
                }
                if (!done || per_dst) {
                    int r = deps_of_pair(t, D, s, d, msg, msglen);
                    if (r < 0) { rc = -1; break; }
                    if (r > 0) break;   /* unreachable */
                    done = 1;
                }
                (*nroutes)++;
            }
        }
    }
    return rc;
}

/* Sources with a given route to some host: their computed routes are enumerated pair by pair
 * (deps_pairs), the others per destination switch. NULL when there is none (or memory). */
static uint8_t *sources_with_given(const nm_topology *t)
{
    nm_routing *R = t->rt;
    if (!R->ngiven) return NULL;
    uint8_t *m = calloc((size_t)t->nhosts, 1);
    if (m)
        for (size_t i = 0; i < R->ngiven; i++)
            if (R->given[i]->r.nhops >= 0) m[R->given[i]->src] = 1;
    return m;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) { uint64_t r = a % b; a = b; b = r; }
    return a;
}

/* Residues (x + y) mod m of x in a, y in b (bit masks over 0..m-1, m <= 64). */
static uint64_t residue_sums(uint64_t a, uint64_t b, int m)
{
    uint64_t full = m == 64 ? ~(uint64_t)0 : (((uint64_t)1 << m) - 1), r = 0;
    for (int y = 0; y < m; y++) {
        if (!(b >> y & 1)) continue;
        r |= y == 0 ? a : ((a << y) | (a >> (m - y))) & full;
    }
    return r;
}

/* shortest (no orientation): per destination switch b. The route s -> d leaves each switch x on
 * the `(s + d) mod nc`-th (spread) or first (lowest) of its nc neighbours one step closer to b,
 * in port order. With M a multiple of every nc met, the path from a switch depends on that switch
 * and r = (s + d) mod M only; so for each residue r present the paths from all source switches
 * form a tree, whose branches are followed once (memo by switch), O(switches + edges) per
 * destination and residue instead of O(hosts x path length) per destination. M grows (and the
 * destination starts again) when a switch has a count that does not divide it; beyond 64 the
 * destination's pairs are followed one by one. Host pairs on one switch use no switch-to-switch
 * channel. The routes of `special` sources are left to deps_pairs. */
static int deps_shortest_dest(nm_topology *t, depset *D, size_t *nroutes, const uint8_t *special, char *msg,
                              size_t msglen)
{
    nm_routing *R = t->rt;
    const sgraph *g = &R->g;
    int ns = t->nswitches, nh = t->nhosts, rc = -1;
    int *dist = malloc((size_t)(ns ? ns : 1) * sizeof *dist), *queue = malloc((size_t)(ns ? ns : 1) * sizeof *queue);
    int *cfirst = malloc((size_t)(ns ? ns : 1) * sizeof *cfirst), *cnum = malloc((size_t)(ns ? ns : 1) * sizeof *cnum);
    int *cand = malloc((size_t)(g->off[ns] ? g->off[ns] : 1) * sizeof *cand);
    uint32_t *cvis = calloc((size_t)(ns ? ns : 1), sizeof *cvis), *seen = calloc((size_t)(ns ? ns : 1), sizeof *seen);
    uint64_t *amask = malloc((size_t)(ns ? ns : 1) * sizeof *amask), *cls = malloc((size_t)(ns ? ns : 1) * sizeof *cls);
    int *cnt = calloc((size_t)(ns ? ns : 1), sizeof *cnt), *src_sw = malloc((size_t)(ns ? ns : 1) * sizeof *src_sw);
    if (!dist || !queue || !cfirst || !cnum || !cand || !cvis || !seen || !amask || !cls || !cnt || !src_sw) {
        snprintf(msg, msglen, "out of memory");
        goto out;
    }
    int nsrc = 0, ndest = 0;
    for (int x = 0; x < ns; x++) {
        for (int i = g->hosts_off[x]; i < g->hosts_off[x + 1]; i++) cnt[x] += !(special && special[g->hosts[i]]);
        if (cnt[x]) src_sw[nsrc++] = x;
        ndest += g->hosts_off[x + 1] > g->hosts_off[x];
    }
    int M = 1, curM = 0, ncand = 0;
    uint64_t cur_b = 0;
    uint32_t bgen = 0, gen = 0;
    int di = 0;
    for (int b = 0; b < ns; b++) {
        int h0 = g->hosts_off[b], h1 = g->hosts_off[b + 1], hb = h1 - h0;
        if (!hb) continue;
        nm_progress_(t, "checking the routes for deadlocks", di++, ndest);
        const int *Db = dist;
        if (t->sw_dist) Db = &t->sw_dist[(size_t)b * (size_t)ns];
        else {
            bfs_g(g, b, dist, queue);
            if (row_keep(R, ns, b, dist) != 0) { snprintf(msg, msglen, "out of memory"); goto out; }
        }
        /* routes between hosts of b: no switch-to-switch channel */
        *nroutes += (size_t)cnt[b] * (size_t)(hb - 1);
        for (int i = 0; i < nsrc; i++) {
            int a = src_sw[i];
            if (a != b && Db[a] >= 0) *nroutes += (size_t)cnt[a] * (size_t)hb;
        }
        if (++bgen == 0) { memset(cvis, 0, (size_t)ns * sizeof *cvis); bgen = 1; }
        ncand = 0;
    restart:
        if (R->spread && M > 64) {
            /* too many residues: b's pairs one by one */
            for (int i = 0; i < nsrc; i++) {
                int a = src_sw[i];
                if (a == b || Db[a] < 0) continue;
                for (int j = g->hosts_off[a]; j < g->hosts_off[a + 1]; j++) {
                    int s = g->hosts[j];
                    if (special && special[s]) continue;
                    for (int e = h0; e < h1; e++)
                        if (deps_of_pair(t, D, s, g->hosts[e], msg, msglen) < 0) goto out;
                }
            }
            M = 1;
            continue;
        }
        uint64_t bmask = 0;
        for (int e = h0; e < h1; e++) bmask |= (uint64_t)1 << ((unsigned)g->hosts[e] % (unsigned)M);
        if (M != curM) {
            for (int i = 0; i < nsrc; i++) {
                int a = src_sw[i];
                amask[a] = 0;
                for (int j = g->hosts_off[a]; j < g->hosts_off[a + 1]; j++) {
                    int s = g->hosts[j];
                    if (!(special && special[s])) amask[a] |= (uint64_t)1 << ((unsigned)s % (unsigned)M);
                }
            }
            curM = M;
            cur_b = 0;
        }
        if (bmask != cur_b) {
            for (int i = 0; i < nsrc; i++) cls[src_sw[i]] = residue_sums(amask[src_sw[i]], bmask, M);
            cur_b = bmask;
        }
        for (int r = 0; r < M; r++) {
            if (++gen == 0) { memset(seen, 0, (size_t)ns * sizeof *seen); gen = 1; }
            for (int i = 0; i < nsrc; i++) {
                int x = src_sw[i];
                if (x == b || Db[x] < 0 || !(cls[x] >> r & 1) || seen[x] == gen) continue;
                int kx = -1;
                for (;;) {
                    if (cvis[x] != bgen) {   /* x's neighbours one step closer to b, in port order */
                        cvis[x] = bgen;
                        cfirst[x] = ncand;
                        for (int e = g->off[x]; e < g->off[x + 1]; e++)
                            if (Db[g->nb[e]] == Db[x] - 1) {
                                cand[ncand++] = e;
                                if (!R->spread) break;
                            }
                        cnum[x] = ncand - cfirst[x];
                        if (R->spread && M % cnum[x] != 0) {
                            uint64_t m = (uint64_t)M / gcd_u64((uint64_t)M, (uint64_t)cnum[x]) * (uint64_t)cnum[x];
                            M = m > 64 ? 65 : (int)m;
                            goto restart;
                        }
                    }
                    int c = cnum[x];   /* mostly 1 or a power of two: no division */
                    int k = cand[cfirst[x] + (c == 1 ? 0 : (c & (c - 1)) == 0 ? r & (c - 1) : r % c)];
                    if (kx >= 0) dep_set(D, g->ch[kx], g->port[k]);
                    if (seen[x] == gen) break;   /* the rest of the branch is in already */
                    seen[x] = gen;
                    kx = k;
                    x = g->nb[k];
                    if (x == b) break;
                }
            }
        }
    }
    nm_progress_(t, "checking the routes for deadlocks", ndest, ndest);
    /* host-to-host cables: one channel, no dependency */
    for (int s = 0; s < nh; s++)
        if (t->hosts[s].link >= 0 && nm_topology_switch_of_host(t, s) < 0 && !(special && special[s])) (*nroutes)++;
    rc = 0;
out:
    free(dist); free(queue); free(cfirst); free(cnum); free(cand); free(cvis); free(seen); free(amask); free(cls);
    free(cnt); free(src_sw);
    return rc;
}

/* updown at scale (ud_dest): per destination switch, the tree's branches from every source switch
 * followed once (memo by state), each step checked legal (no up after down). */
static int deps_updown_dest(nm_topology *t, depset *D, size_t *nroutes, const uint8_t *special, char *msg,
                            size_t msglen)
{
    nm_routing *R = t->rt;
    const sgraph *g = &R->g;
    int ns = t->nswitches, nh = t->nhosts, nst = 2 * ns, rc = -1;
    uint32_t *seen = calloc((size_t)(nst ? nst : 1), sizeof *seen), gen = 0;
    int *cnt = calloc((size_t)(ns ? ns : 1), sizeof *cnt), *src_sw = malloc((size_t)(ns ? ns : 1) * sizeof *src_sw);
    int *comp = components(t);
    if (!seen || !cnt || !src_sw || !comp) { snprintf(msg, msglen, "out of memory"); goto out; }
    int nsrc = 0, ndest = 0, di = 0;
    for (int x = 0; x < ns; x++) {
        for (int i = g->hosts_off[x]; i < g->hosts_off[x + 1]; i++) cnt[x] += !(special && special[g->hosts[i]]);
        if (cnt[x]) src_sw[nsrc++] = x;
        ndest += g->hosts_off[x + 1] > g->hosts_off[x];
    }
    for (int b = 0; b < ns; b++) {
        int h0 = g->hosts_off[b], h1 = g->hosts_off[b + 1], hb = h1 - h0;
        if (!hb) continue;
        nm_progress_(t, "checking the routes for deadlocks", di++, ndest);
        *nroutes += (size_t)cnt[b] * (size_t)(hb - 1);
        if (++gen == 0) { memset(seen, 0, (size_t)nst * sizeof *seen); gen = 1; }
        for (int i = 0; i < nsrc; i++) {
            int a = src_sw[i];
            if (a == b || comp[a] != comp[b]) continue;
            *nroutes += (size_t)cnt[a] * (size_t)hb;
            int st = 2 * a, kx = -1, steps = 0;
            if (ud_dest_edge(R, b, st) < 0) {
                /* no tree path (never expected): the pairs' fallback routes, followed */
                for (int j = g->hosts_off[a]; j < g->hosts_off[a + 1]; j++)
                    if (!(special && special[g->hosts[j]]))
                        for (int e = h0; e < h1; e++)
                            if (deps_of_pair(t, D, g->hosts[j], g->hosts[e], msg, msglen) < 0) goto out;
                continue;
            }
            while (st / 2 != b) {
                int k = ud_dest_edge(R, b, st);
                if (k < 0 || ++steps > nst) {
                    int s = -1;
                    for (int j = g->hosts_off[a]; j < g->hosts_off[a + 1] && s < 0; j++)
                        if (!(special && special[g->hosts[j]])) s = g->hosts[j];
                    check_fail(t, msg, msglen, s, g->hosts[h0], "does not end at its destination", -1);
                    goto out;
                }
                if (kx >= 0) dep_set(D, g->ch[kx], g->port[k]);
                if (st % 2 == 1 && R->ud_up[k]) {
                    int s = -1;
                    for (int j = g->hosts_off[a]; j < g->hosts_off[a + 1] && s < 0; j++)
                        if (!(special && special[g->hosts[j]])) s = g->hosts[j];
                    check_fail(t, msg, msglen, s, g->hosts[h0], NULL, g->ch[k]);
                    goto out;
                }
                if (seen[st] == gen) break;
                seen[st] = gen;
                kx = k;
                st = 2 * g->nb[k] + (R->ud_up[k] ? 0 : 1);
            }
        }
    }
    nm_progress_(t, "checking the routes for deadlocks", ndest, ndest);
    for (int s = 0; s < nh; s++)
        if (t->hosts[s].link >= 0 && nm_topology_switch_of_host(t, s) < 0 && !(special && special[s])) (*nroutes)++;
    rc = 0;
out:
    free(seen); free(cnt); free(src_sw); free(comp);
    return rc;
}

/* Dependencies of every computed route (shortest, updown), each route followed; counts them. 0, or
 * -1 with the message set. */
static int deps_of_computed(nm_topology *t, depset *D, size_t *nroutes, int pairwise, char *msg, size_t msglen)
{
    nm_routing *R = t->rt;
    int dest = !pairwise && ((R->kind == NM_ROUTING_SHORTEST && !t->sw_level) || (R->kind == NM_ROUTING_UPDOWN && R->ud_dest));
    if (!dest) return deps_pairs(t, D, nroutes, NULL, msg, msglen);
    uint8_t *special = sources_with_given(t);
    if (R->ngiven && !special) { snprintf(msg, msglen, "out of memory"); return -1; }
    int rc = R->kind == NM_ROUTING_SHORTEST ? deps_shortest_dest(t, D, nroutes, special, msg, msglen)
                                            : deps_updown_dest(t, D, nroutes, special, msg, msglen);
    if (rc == 0 && special) rc = deps_pairs(t, D, nroutes, special, msg, msglen);
    free(special);
    return rc;
}

/* itb: every turn the orientation allows (into a switch, out of it, not down then up). */
static void deps_of_legal_turns(const nm_topology *t, depset *D)
{
    for (int x = 0; x < t->nswitches; x++) {
        const nm_switch *S = &t->switches[x];
        for (int pi = 0; pi < S->nports; pi++) {
            if (S->port_link[pi] < 0) continue;
            int cin = nm_channel_leaving(t, S->port_link[pi], NM_NODE_SWITCH, x) ^ 1;
            int uin = nm_channel_is_up(t, cin);
            for (int po = 0; po < S->nports; po++) {
                if (S->port_link[po] < 0) continue;
                int cout = nm_channel_leaving(t, S->port_link[po], NM_NODE_SWITCH, x);
                if (uin == 0 && nm_channel_is_up(t, cout) == 1) continue;
                dep_add(t, D, cin, cout);
            }
        }
    }
}

static int routes_check(nm_topology *t, int pairwise, char *msg, size_t msglen);

int nm_routes_check(nm_topology *t, char *msg, size_t msglen) { return routes_check(t, 0, msg, msglen); }

int nm_routes_check_pairwise(nm_topology *t, char *msg, size_t msglen) { return routes_check(t, 1, msg, msglen); }

static int routes_check(nm_topology *t, int pairwise, char *msg, size_t msglen)
{
    nm_routing *R = t->rt;
    size_t nch = 2 * (size_t)t->nlinks;
    char b1[64], b2[64];
    if (!R) { snprintf(msg, msglen, "no routes"); return -1; }
    depset D = {NULL, nch, 1};
    for (int x = 0; x < t->nswitches; x++)
        if (t->switches[x].nports > D.maxp) D.maxp = t->switches[x].nports;
    size_t nbits = nch * (size_t)D.maxp, nsw = 0;
    for (int l = 0; l < t->nlinks; l++) nsw += 2 * (t->links[l].a_kind == NM_NODE_SWITCH && t->links[l].b_kind == NM_NODE_SWITCH);
    D.bits = calloc((nbits + 63) / 64 + 1, sizeof *D.bits);
    if (!D.bits) { snprintf(msg, msglen, "out of memory"); return -1; }
    /* 1. the given routes, in pair order */
    size_t nroutes = 0;
    croute **gv = R->ngiven ? malloc(R->ngiven * sizeof *gv) : NULL;
    if (R->ngiven && !gv) { free(D.bits); snprintf(msg, msglen, "out of memory"); return -1; }
    if (R->ngiven) memcpy(gv, R->given, R->ngiven * sizeof *gv);
    if (R->ngiven) qsort(gv, R->ngiven, sizeof *gv, cmp_given);
    int rc = 0;
    for (size_t i = 0; i < R->ngiven && rc == 0; i++) {
        const nm_route *r = &gv[i]->r;
        if (r->nhops < 0) continue;
        nroutes++;
        int illegal;
        const char *why = follow_route(t, gv[i]->src, gv[i]->dst, r->nhops, r->out_port, r->nchannels, r->channel,
                                       r->nitb, r->itb_host, &illegal);
        if (why) { rc = check_fail(t, msg, msglen, gv[i]->src, gv[i]->dst, why, illegal); break; }
        for (int j = 0; j + 1 < r->nchannels; j++) dep_add(t, &D, r->channel[j], r->channel[j + 1]);
    }
    free(gv);
    /* 2. the computed ones: their dependencies, or (itb) those of every legal turn */
    int turns = R->kind == NM_ROUTING_ITB;
    if (rc == 0) {
        if (turns) deps_of_legal_turns(t, &D);
        else rc = deps_of_computed(t, &D, &nroutes, pairwise, msg, msglen);
    }
    if (rc != 0) { free(D.bits); return -1; }
    /* 3. Kahn's algorithm on the CSR graph (edges in (channel, port) order) */
    size_t nu = 0;
    for (size_t w = 0; w < (nbits + 63) / 64; w++) nu += (size_t)__builtin_popcountll(D.bits[w]);
    int *off = calloc(nch + 1, sizeof *off), *indeg = calloc(nch + 1, sizeof *indeg);
    int *q = malloc((nch + 1) * sizeof *q), *to = malloc((nu ? nu : 1) * sizeof *to);
    if (!off || !indeg || !q || !to) {
        free(D.bits); free(off); free(indeg); free(q); free(to);
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    size_t e = 0;
    for (size_t c = 0; c < nch; c++) {
        off[c] = (int)e;
        int k, x, port;
        nm_channel_to(t, (int)c, &k, &x, &port);
        if (k != NM_NODE_SWITCH) continue;
        for (int p = 0; p < D.maxp; p++) {
            size_t i = c * (size_t)D.maxp + (size_t)p;
            if (!(D.bits[i >> 6] >> (i & 63) & 1)) continue;
            int c2 = nm_channel_leaving(t, t->switches[x].port_link[p], NM_NODE_SWITCH, x);
            to[e++] = c2;
            indeg[c2]++;
        }
    }
    off[nch] = (int)e;
    int head = 0, tail = 0;
    for (size_t c = 0; c < nch; c++) if (indeg[c] == 0) q[tail++] = (int)c;
    while (head < tail) {
        int c = q[head++];
        for (int i = off[c]; i < off[c + 1]; i++)
            if (--indeg[to[i]] == 0) q[tail++] = to[i];
    }
    if ((size_t)tail < nch) {
        /* Every channel left has a predecessor left: walk backwards until a channel repeats; the
         * walk from there is a cycle (printed in dependency order). */
        int *pred = malloc(nch * sizeof *pred), *cyc = malloc((nch + 1) * sizeof *cyc);
        int *seen = calloc(nch, sizeof *seen);
        if (pred && cyc && seen) {
            for (size_t c = 0; c < nch; c++) pred[c] = -1;
            for (size_t a = 0; a < nch; a++)
                for (int i = off[a]; i < off[a + 1]; i++) {
                    int v = to[i];
                    if (indeg[a] > 0 && indeg[v] > 0 && pred[v] < 0) pred[v] = (int)a;
                }
            int c = -1;
            for (size_t x = 0; x < nch && c < 0; x++) if (indeg[x] > 0) c = (int)x;
            while (!seen[c]) { seen[c] = 1; c = pred[c]; }
            int n = 0, c0 = c;
            do { cyc[n++] = c; c = pred[c]; } while (c != c0 && n < (int)nch);
            size_t m = (size_t)snprintf(msg, msglen, "channel dependency cycle of %d channels (routes may "
                                        "deadlock):", n);
            for (int i = n - 1; i >= 0 && m < msglen; i--) {
                int fk, fi, fp, tk, ti, tp;
                nm_channel_from(t, cyc[i], &fk, &fi, &fp);
                nm_channel_to(t, cyc[i], &tk, &ti, &tp);
                m += (size_t)snprintf(msg + m, msglen - m, " %s->%s", node_str(t, fk, fi, b1, sizeof b1),
                                      node_str(t, tk, ti, b2, sizeof b2));
            }
        } else {
            snprintf(msg, msglen, "channel dependency cycle (routes may deadlock)");
        }
        free(pred); free(cyc); free(seen);
        rc = -1;
    } else if (turns) {
        snprintf(msg, msglen, "deadlock-free: every route is legal up*/down* segments between in-transit hosts "
                 "(each checked when computed%s), and the graph of every legal turn is acyclic (%zu switch-to-switch "
                 "channels, %zu dependencies)", R->ngiven ? "; given routes now" : "", nsw, nu);
    } else {
        snprintf(msg, msglen, "deadlock-free: %zu routes legal%s, channel dependency graph acyclic (%zu "
                 "switch-to-switch channels, %zu dependencies)", nroutes, t->sw_level ? " (up*/down* segments)" : "",
                 nsw, nu);
    }
    t->route_check_ok = rc == 0;
    snprintf(t->route_check_msg, sizeof t->route_check_msg, "%s", msg);
    free(D.bits); free(off); free(indeg); free(q); free(to);
    return rc;
}
