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
#include "routes_internal.h"
#include "cm_grow.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* dist[s] = switch hops from s to `target`, -1 if unreachable. */
void rt_bfs(const nm_topology *t, int target, int *dist, int *queue)
{
    for (int i = 0; i < t->nswitches; i++) dist[i] = -1;
    int head = 0, tail = 0;
    dist[target] = 0;
    queue[tail++] = target;
    while (head < tail) {
        int s = queue[head++];
        for (int p = 0; p < t->switches[s].nports; p++) {
            int n = rt_neighbour_switch(t, s, p);
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

static void sgraph_free(sgraph *g)
{
    free(g->off); free(g->ch); free(g->nb); free(g->port); free(g->dist); free(g->hosts_off); free(g->hosts);
    memset(g, 0, sizeof *g);
}

/* dist[s] = switch hops from s to `target` over the graph's edges, -1 if unreachable. */
void rt_bfs_g(const sgraph *g, int target, int *dist, int *queue)
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
int rt_sgraph_build(const nm_topology *t, sgraph *g, int with_dist)
{
    int ns = t->nswitches, nh = t->nhosts;
    memset(g, 0, sizeof *g);
    g->ns = ns;
    int total = 0;
    for (int s = 0; s < ns; s++)
        for (int p = 0; p < t->switches[s].nports; p++)
            if (rt_neighbour_switch(t, s, p) >= 0) total++;
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
            int n = rt_neighbour_switch(t, s, p);
            if (n < 0) continue;
            g->ch[k] = nm_channel_leaving(t, t->switches[s].port_link[p], NM_NODE_SWITCH, s);
            g->nb[k] = n;
            g->port[k] = p;
            k++;
        }
    }
    g->off[ns] = k;
    for (int s = 0; with_dist && s < ns; s++) rt_bfs_g(g, s, &g->dist[(size_t)s * (size_t)ns], q);
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

croute *rt_cache_find(const nm_routing *R, uint64_t k)
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
        if (cm_grow((void **)&R->blocks, &R->bcap, R->nblocks + 1, sizeof *R->blocks, 16) < 0) return NULL;
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
void rt_routing_clear(nm_topology *t)
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
    rt_routing_clear(t);
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
    croute *c = rt_cache_find(R, k);
    if (c && c->given) return &c->r;
    if (cm_grow((void **)&R->given, &R->gcap, R->ngiven + 1, sizeof *R->given, 16) < 0) return NULL;
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

/* Keep the BFS row `dist` toward b in R->drow, in the routing's row width. 0 or -1 (memory). */
int rt_row_keep(nm_routing *R, int ns, int b, const int *dist)
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
int rt_dist_to(const nm_topology *t, nm_routing *R, int b, dview *v)
{
    int ns = t->nswitches;
    v->esz = 4;
    if (t->sw_dist) { v->p = &t->sw_dist[(size_t)b * (size_t)ns]; return 0; }   /* symmetric: links are full duplex */
    if (R->have_g && R->g.dist) { v->p = &R->g.dist[(size_t)b * (size_t)ns]; return 0; }
    if (!R->drow || !R->drow[b]) {
        int *d = malloc((size_t)ns * sizeof *d), *q = malloc((size_t)ns * sizeof *q);
        if (d && q) {
            if (R->have_g) rt_bfs_g(&R->g, b, d, q);
            else rt_bfs(t, b, d, q);
        }
        int rc = d && q ? rt_row_keep(R, ns, b, d) : -1;
        free(d);
        free(q);
        if (rc != 0) return -1;
    }
    v->p = R->drow[b];
    v->esz = R->drow_esz ? R->drow_esz : 4;
    return 0;
}

/* ---- following a route ---------------------------------------------------------------------- */

/* Follow a route from host s: its channels consecutive, route bytes (when given) matching the
 * ports, in-transit hosts where it says, ending at d; with an orientation every segment between
 * hosts a legal up*-down* path. NULL if it is, else why (*illegal_at set to the channel that goes
 * up after going down, -1 for other reasons). */
const char *rt_follow_route(const nm_topology *t, int s, int d, int nhops, const int *out_port, int nchannels,
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
    croute *c = rt_cache_find(R, k);
    if (c) {
        R->last_k = k;
        R->last_c = c;
        return &c->r;
    }
    int nitb = 0, n = rt_route_compute(t, R, src, dst, &nitb);
    int nhops = 0;
    for (int i = 1; i < n; i++) {
        int kk, id, port;
        nm_channel_from(t, R->chans[i], &kk, &id, &port);
        if (kk == NM_NODE_SWITCH) nhops++;
    }
    if (n > 0 && R->kind == NM_ROUTING_ITB) {
        /* the load-time check proved every legal route safe; that this one is legal is checked now */
        int illegal;
        if (rt_follow_route(t, src, dst, nhops, NULL, n, R->chans, nitb, R->itb_hosts, &illegal)) {
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

int rt_route_view(const nm_topology *t, int s, int d, rview *v)
{
    nm_routing *R = t->rt;
    uint64_t k = (uint64_t)s * (uint64_t)t->nhosts + (uint64_t)d + 1;
    croute *c = rt_cache_find(R, k);
    if (c) {
        v->nhops = c->r.nhops;
        v->nchannels = c->r.nchannels;
        v->nitb = c->r.nitb;
        v->channel = c->r.channel;
        return c->r.nhops;
    }
    int nitb, n = rt_route_compute(t, R, s, d, &nitb);
    v->nhops = -1;
    if (n <= 0) return -1;
    v->nchannels = n;
    v->nitb = nitb;
    v->channel = R->chans;
    v->nhops = n - 1 - nitb;
    return v->nhops;
}
