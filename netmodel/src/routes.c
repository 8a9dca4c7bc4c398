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
 * The checker (nm_routes_check) follows every route and proves the channel dependency graph
 * acyclic. Everything here is deterministic. */
#include "nm_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- shortest ------------------------------------------------------------------------------ */

static int routes_shortest(nm_topology *t, const nm_config *cfg, char *err, size_t errlen)
{
    const char *ties = cfg ? nm_config_string(cfg, "network.route_ties") : "lowest";
    int spread = !strcmp(ties, "spread") || (!strcmp(ties, "auto") && t->prefer_spread);
    int ns = t->nswitches, nh = t->nhosts;
    /* one BFS per switch that has hosts, kept: dist[target*ns + s] */
    int *dist = ns ? malloc((size_t)ns * (size_t)ns * sizeof *dist) : NULL;
    char *done = ns ? calloc((size_t)ns, 1) : NULL;
    int *queue = ns ? malloc((size_t)ns * sizeof *queue) : NULL;
    int *cand = malloc(257 * sizeof *cand);
    int maxhops = ns + 1;
    int *ports = malloc((size_t)maxhops * sizeof *ports);
    int *chans = malloc((size_t)(maxhops + 1) * sizeof *chans);
    int rc = -1;
    if ((ns && (!dist || !done || !queue)) || !cand || !ports || !chans) {
        nm_set_err(err, errlen, "out of memory");
        goto out;
    }
    for (int d = 0; d < nh; d++) {
        int dl = t->hosts[d].link;
        if (dl < 0) continue;
        /* where the destination hangs: a switch (target, tport) or directly a host */
        int dk, did, dport;
        nm_channel_to(t, nm_channel_leaving(t, dl, NM_NODE_HOST, d), &dk, &did, &dport);
        int target = dk == NM_NODE_SWITCH ? did : -1, tport = dport;
        int *D = NULL;
        if (target >= 0) {
            D = &dist[(size_t)target * (size_t)ns];
            if (!done[target]) {
                bfs(t, target, D, queue);
                done[target] = 1;
            }
        }
        for (int s = 0; s < nh; s++) {
            if (s == d) continue;
            nm_route *r = &t->routes[(size_t)s * (size_t)nh + (size_t)d];
            if (r->nhops >= 0) continue;  /* given explicitly */
            int sl = t->hosts[s].link;
            if (sl < 0) continue;
            int c0 = nm_channel_leaving(t, sl, NM_NODE_HOST, s);
            int k, cur, port;
            nm_channel_to(t, c0, &k, &cur, &port);
            chans[0] = c0;
            int h = 0;
            if (k == NM_NODE_HOST) {
                if (cur != d) continue;  /* host-to-host cable to someone else */
            } else {
                if (target < 0 || D[cur] < 0) continue;
                while (1) {
                    int out;
                    if (cur == target) {
                        out = tport;
                    } else {
                        int nc = 0;
                        for (int p = 0; p < t->switches[cur].nports && nc < 257; p++) {
                            int n = neighbour_switch(t, cur, p);
                            if (n >= 0 && D[n] == D[cur] - 1) cand[nc++] = p;
                        }
                        out = cand[spread ? (int)(((unsigned)s + (unsigned)d) % (unsigned)nc) : 0];
                    }
                    ports[h] = out;
                    int l = t->switches[cur].port_link[out];
                    chans[h + 1] = nm_channel_leaving(t, l, NM_NODE_SWITCH, cur);
                    h++;
                    if (cur == target) break;
                    nm_channel_to(t, chans[h], &k, &cur, &port);
                }
            }
            if (nm_route_set(r, h, ports, chans) != 0) {
                nm_set_err(err, errlen, "out of memory");
                goto out;
            }
        }
    }
    rc = 0;
out:
    free(dist);
    free(done);
    free(queue);
    free(cand);
    free(ports);
    free(chans);
    return rc;
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

/* ---- switch graph helpers ------------------------------------------------------------------ */

typedef struct sgraph {
    int ns;
    int *off;      /* ns+1 offsets into ch/nb */
    int *ch;       /* directed switch->switch channels leaving each switch, in port order */
    int *nb;       /* the neighbour each leads to */
    int *dist;     /* dist[target*ns + s] */
    int *hosts_off, *hosts;   /* hosts per switch, in host order */
} sgraph;

static void sgraph_free(sgraph *g)
{
    free(g->off); free(g->ch); free(g->nb); free(g->dist); free(g->hosts_off); free(g->hosts);
    memset(g, 0, sizeof *g);
}

static int sgraph_build(const nm_topology *t, sgraph *g)
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
    g->dist = malloc((size_t)(ns ? ns : 1) * (size_t)(ns ? ns : 1) * sizeof *g->dist);
    g->hosts_off = calloc((size_t)ns + 1, sizeof *g->hosts_off);
    g->hosts = malloc((size_t)(nh ? nh : 1) * sizeof *g->hosts);
    int *q = malloc((size_t)(ns ? ns : 1) * sizeof *q);
    if (!g->off || !g->ch || !g->nb || !g->dist || !g->hosts_off || !g->hosts || !q) {
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
            k++;
        }
    }
    g->off[ns] = k;
    for (int s = 0; s < ns; s++) bfs(t, s, &g->dist[(size_t)s * (size_t)ns], q);
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

/* Store a route from a list of channels (host -> ... -> host), with in-transit hosts. */
static int store_route(nm_topology *t, nm_route *r, const int *chans, int nch, int nitb, const int *itb)
{
    int ports[nch > 0 ? nch : 1];
    int nh = 0;
    for (int i = 1; i < nch; i++) {
        int k, id, port;
        nm_channel_from(t, chans[i], &k, &id, &port);
        if (k == NM_NODE_SWITCH) ports[nh++] = port;
    }
    return nm_route_set_itb(r, nh, ports, nch, chans, nitb, itb);
}

/* ---- updown: legal routes balanced on weighted links (GM simple_routes) --------------------- */

typedef struct { int64_t key; int node; } hent;

static void hpush(hent *h, int *n, hent e)
{
    int i = (*n)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h[p].key < e.key || (h[p].key == e.key && h[p].node <= e.node)) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}
static hent hpop(hent *h, int *n)
{
    hent top = h[0], last = h[--(*n)];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = -1;
        hent best = last;
        if (l < *n && (h[l].key < best.key || (h[l].key == best.key && h[l].node < best.node))) { m = l; best = h[l]; }
        if (r < *n && (h[r].key < best.key || (h[r].key == best.key && h[r].node < best.node))) { m = r; best = h[r]; }
        if (m < 0) break;
        h[i] = h[m];
        i = m;
    }
    if (*n > 0) h[i] = last;
    return top;
}

static int routes_updown(nm_topology *t, const nm_config *cfg, const sgraph *g, char *err, size_t errlen)
{
    int ns = t->nswitches, nh = t->nhosts;
    uint64_t seed = cfg ? (uint64_t)nm_config_int(cfg, "network.seed") : 1;
    size_t nch = 2 * (size_t)t->nlinks;
    int64_t *load = calloc(nch ? nch : 1, sizeof *load);
    /* states: switch*2 + phase (0: may still go up, 1: has gone down) */
    int64_t *dist = malloc((size_t)(2 * ns + 1) * sizeof *dist);
    int *prev = malloc((size_t)(2 * ns + 1) * sizeof *prev);     /* index into g->ch of the edge taken */
    int *pstate = malloc((size_t)(2 * ns + 1) * sizeof *pstate);
    char *fin = malloc((size_t)(2 * ns + 1));
    int nedges = g->off[ns];
    hent *heap = malloc((size_t)(2 * nedges + 2 * ns + 4) * sizeof *heap);
    int *units = malloc((size_t)(nh ? nh : 1) * (size_t)(ns ? ns : 1) * sizeof *units);
    int *path = malloc((size_t)(2 * ns + 4) * sizeof *path);
    int *chans = malloc((size_t)(2 * ns + 8) * sizeof *chans);
    int *up = malloc((size_t)(nedges ? nedges : 1) * sizeof *up);
    int rc = -1;
    if (!load || !dist || !prev || !pstate || !fin || !heap || !units || !path || !chans || !up) {
        nm_set_err(err, errlen, "out of memory");
        goto out;
    }
    for (int e = 0; e < nedges; e++) up[e] = nm_channel_is_up(t, g->ch[e]);
    /* base cost: mean final load of a switch channel */
    double pairs_len = 0;
    int nunits = 0;
    for (int s = 0; s < nh; s++) {
        int a = nm_topology_switch_of_host(t, s);
        if (a < 0) continue;
        for (int b = 0; b < ns; b++) {
            int nb = g->hosts_off[b + 1] - g->hosts_off[b];
            if (nb == 0 || b == a) continue;
            int d = g->dist[(size_t)b * (size_t)ns + (size_t)a];
            if (d < 0) continue;
            pairs_len += (double)d * nb;
            units[nunits++] = s * ns + b;
        }
    }
    int64_t base = nedges ? (int64_t)(pairs_len / nedges) + 1 : 1;
    /* shuffle the units (Fisher-Yates, seeded) */
    uint64_t rs = seed * 0x9E3779B97F4A7C15ULL + 0x5eed;
    for (int i = nunits - 1; i > 0; i--) {
        int j = (int)(splitmix(&rs) % (uint64_t)(i + 1));
        int x = units[i]; units[i] = units[j]; units[j] = x;
    }
    for (int ui = 0; ui < nunits; ui++) {
        int s = units[ui] / ns, b = units[ui] % ns;
        int a = nm_topology_switch_of_host(t, s);
        int nb = g->hosts_off[b + 1] - g->hosts_off[b];
        /* Dijkstra over (switch, phase) */
        for (int i = 0; i < 2 * ns; i++) { dist[i] = INT64_MAX; fin[i] = 0; prev[i] = -1; }
        int hn = 0;
        dist[2 * a] = 0;
        hpush(heap, &hn, (hent){0, 2 * a});
        int goal = -1;
        while (hn > 0) {
            hent e = hpop(heap, &hn);
            if (fin[e.node]) continue;
            fin[e.node] = 1;
            int u = e.node / 2, ph = e.node % 2;
            if (u == b) { goal = e.node; break; }
            for (int k = g->off[u]; k < g->off[u + 1]; k++) {
                if (up[k] == 1 && ph == 1) continue;        /* no up after down */
                int v = g->nb[k], vs = 2 * v + (up[k] == 1 ? 0 : 1);
                if (fin[vs]) continue;
                int64_t nd = e.key + base + load[g->ch[k]];
                if (nd < dist[vs]) {
                    dist[vs] = nd;
                    prev[vs] = k;
                    pstate[vs] = e.node;
                    hpush(heap, &hn, (hent){nd, vs});
                }
            }
        }
        if (goal < 0) continue;   /* no legal route: the pair stays unrouted (reported by the caller) */
        int np = 0;
        for (int st = goal; st != 2 * a; st = pstate[st]) path[np++] = prev[st];
        /* path is reversed: g->ch indices from b back to a */
        for (int i = 0; i < np; i++) load[g->ch[path[i]]] += nb;
        for (int di = g->hosts_off[b]; di < g->hosts_off[b + 1]; di++) {
            int d = g->hosts[di];
            nm_route *r = &t->routes[(size_t)s * (size_t)nh + (size_t)d];
            if (r->nhops >= 0) continue;
            int n = 0;
            chans[n++] = nm_channel_leaving(t, t->hosts[s].link, NM_NODE_HOST, s);
            for (int i = np - 1; i >= 0; i--) chans[n++] = g->ch[path[i]];
            chans[n++] = nm_channel_leaving(t, t->hosts[d].link, NM_NODE_SWITCH, b);
            if (store_route(t, r, chans, n, 0, NULL) != 0) { nm_set_err(err, errlen, "out of memory"); goto out; }
        }
    }
    rc = 0;
out:
    free(load); free(dist); free(prev); free(pstate); free(fin); free(heap); free(units); free(path);
    free(chans); free(up);
    return rc;
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

static int routes_itb(nm_topology *t, const nm_config *cfg, const sgraph *g, char *err, size_t errlen)
{
    int ns = t->nswitches, nh = t->nhosts;
    uint64_t seed = cfg ? (uint64_t)nm_config_int(cfg, "network.seed") : 1;
    int fewest = 0;
    if (itb_path_fewest(cfg, err, errlen, &fewest) != 0) return -1;
    /* toward one destination switch b:
     *   P[s]: minimal paths (over channels) from s to b (random);
     *   F[2s+ph], C[2s+ph]: fewest down->up turns on a minimal path from s to b having arrived at s
     *   by a down link (ph = 1) or not (ph = 0; the source switch), and how many minimal paths
     *   have that few (fewest_itb). A turn at a switch without hosts is not allowed (ITB_INF). */
    double *P = malloc((size_t)(ns ? ns : 1) * sizeof *P);
    int *F = malloc((size_t)(2 * ns + 2) * sizeof *F);
    double *C = malloc((size_t)(2 * ns + 2) * sizeof *C);
    int *order = malloc((size_t)(ns ? ns : 1) * sizeof *order);
    int *chans = malloc((size_t)(4 * ns + 8) * sizeof *chans);
    int *itb = malloc((size_t)(2 * ns + 2) * sizeof *itb);
    int rc = -1;
    long fallback = 0;
    if (!P || !F || !C || !order || !chans || !itb) { nm_set_err(err, errlen, "out of memory"); goto out; }
    for (int b = 0; b < ns; b++) {
        if (g->hosts_off[b + 1] == g->hosts_off[b]) continue;
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
        for (int di = g->hosts_off[b]; di < g->hosts_off[b + 1]; di++) {
            int d = g->hosts[di];
            for (int s = 0; s < nh; s++) {
                if (d == s) continue;
                int a = nm_topology_switch_of_host(t, s);
                if (a < 0) continue;
                nm_route *r = &t->routes[(size_t)s * (size_t)nh + (size_t)d];
                if (r->nhops >= 0) continue;
                if (D[a] < 0) continue;
                uint64_t rs = seed * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)s * 0xD1B54A32D192ED03ULL) ^
                              ((uint64_t)d * 0xABC98388FB8FAC03ULL);
                int n = 0, nitb = 0;
                if (fewest && F[2 * a] >= ITB_INF) { fallback++; continue; }
                /* random: draw a minimal path; if it would need an in-transit host on a switch
                 * without hosts (the paper assumes there is none), draw again; after 32 draws the
                 * pair keeps its up/down route (filled below). fewest_itb: one draw. */
                for (int attempt = 0; attempt < 32; attempt++) {
                    int cur = a, last_up = -1, bad = 0;
                    n = 0;
                    nitb = 0;
                    chans[n++] = nm_channel_leaving(t, t->hosts[s].link, NM_NODE_HOST, s);
                    while (cur != b) {
                        int ph = last_up == 0, pick = -1;
                        if (fewest) {
                            /* next channel among those keeping the fewest turns, with probability
                             * C(next)/C(cur): uniform over the minimal paths with fewest turns */
                            double x = (double)(splitmix(&rs) >> 11) * (1.0 / 9007199254740992.0) *
                                       C[2 * cur + ph];
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
                            /* next channel with probability npaths(next)/npaths(cur): uniform over
                             * paths */
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
                if (n < 0) { fallback++; continue; }
                chans[n++] = nm_channel_leaving(t, t->hosts[d].link, NM_NODE_SWITCH, b);
                if (store_route(t, r, chans, n, nitb, itb) != 0) { nm_set_err(err, errlen, "out of memory"); goto out; }
            }
        }
    }
    /* pairs with no usable minimal path keep an up/down route */
    rc = fallback ? routes_updown(t, cfg, g, err, errlen) : 0;
out:
    free(P); free(F); free(C); free(order); free(chans); free(itb);
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
    o->routing = t->routing == NM_ROUTING_ITB ? "itb" : t->routing == NM_ROUTING_UPDOWN ? "updown" : "shortest";
    o->updown_root = t->updown_root;
    o->deadlock_free = t->route_check_ok == 1;
    o->check_message = t->route_check_msg;
    double n = 0, minimal = 0, links = 0, mlinks = 0, itb = 0;
    for (int s = 0; s < t->nhosts; s++)
        for (int d = 0; d < t->nhosts; d++) {
            if (s == d) continue;
            int m = nm_topology_min_links(t, s, d);
            const nm_route *r = nm_route_get(t, s, d);
            if (m <= 0 || r->nhops < 0) continue;
            int l = 0;
            for (int i = 0; i < r->nchannels; i++) {
                const nm_link *L = &t->links[r->channel[i] / 2];
                if (L->a_kind == NM_NODE_SWITCH && L->b_kind == NM_NODE_SWITCH) l++;
            }
            n++;
            links += l;
            mlinks += m;
            minimal += l == m;
            itb += r->nitb;
        }
    if (n > 0) {
        o->minimal_share = minimal / n;
        o->mean_links = links / n;
        o->mean_min_links = mlinks / n;
        o->itb_per_route = itb / n;
    }
    return 0;
}

int nm_routes_compute(nm_topology *t, const nm_config *cfg, char *err, size_t errlen)
{
    const char *routing = cfg ? nm_config_string(cfg, "network.routing") : "shortest";
    /* auto starts as shortest; topology.c falls back to updown when the checker fails */
    return nm_routes_compute_as(t, cfg, !strcmp(routing, "auto") ? "shortest" : routing, err, errlen);
}

int nm_routes_compute_as(nm_topology *t, const nm_config *cfg, const char *routing, char *err, size_t errlen)
{
    compute_sw_dist(t);
    t->updown_root = -1;
    t->route_check_ok = -1;
    t->route_check_msg[0] = '\0';
    if (!strcmp(routing, "shortest")) {
        t->routing = NM_ROUTING_SHORTEST;
        return routes_shortest(t, cfg, err, errlen);
    }
    if (strcmp(routing, "updown") && strcmp(routing, "itb")) {
        nm_set_err(err, errlen, "network.routing '%s' is not one of shortest|updown|itb", routing);
        return -1;
    }
    t->routing = !strcmp(routing, "itb") ? NM_ROUTING_ITB : NM_ROUTING_UPDOWN;
    sgraph g;
    if (sgraph_build(t, &g) != 0) { nm_set_err(err, errlen, "out of memory"); return -1; }
    int rc = -1;
    const char *rootv = cfg && nm_config_has(cfg, "network.updown_root") ? nm_config_string(cfg, "network.updown_root")
                                                                          : "auto";
    int root;
    if (!strcmp(rootv, "auto")) {
        root = t->nswitches ? auto_root(t, g.dist) : -1;
    } else {
        char *end;
        long v = strtol(rootv, &end, 10);
        if (*rootv == '\0' || *end != '\0' || v < 0 || v >= t->nswitches) {
            nm_set_err(err, errlen, "network.updown_root '%s': expected auto or a switch number 0..%d", rootv,
                    t->nswitches - 1);
            goto out;
        }
        root = (int)v;
    }
    if (t->nswitches > 0) {
        if (nm_updown_orient(t, root, err, errlen) != 0) goto out;
        for (int s = 0; s < t->nswitches; s++)
            if (t->sw_level[s] < 0) {
                nm_set_err(err, errlen, "routing '%s': switch %d is not connected to the root switch %d", routing, s,
                        root);
                goto out;
            }
    }
    compute_ud_dist(t, &g);
    rc = t->routing == NM_ROUTING_ITB ? routes_itb(t, cfg, &g, err, errlen) : routes_updown(t, cfg, &g, err, errlen);
    /* host pairs on one switch, and host-to-host cables, are routed as `shortest` would */
    if (rc == 0) rc = routes_shortest(t, cfg, err, errlen);
out:
    sgraph_free(&g);
    return rc;
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

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int nm_routes_check(nm_topology *t, char *msg, size_t msglen)
{
    int nh = t->nhosts;
    size_t nch = 2 * (size_t)t->nlinks;
    char b1[64], b2[64];
    /* 1. follow every route */
    size_t nroutes = 0, ndep_raw = 0;
    for (int s = 0; s < nh; s++)
        for (int d = 0; d < nh; d++) {
            if (s == d) continue;
            const nm_route *r = nm_route_get(t, s, d);
            if (r->nhops < 0) continue;
            nroutes++;
            const char *why = NULL;
            int k, id, port, pk = NM_NODE_HOST, pid = s, itbi = 0, hops = 0, last_up = -1;
            if (r->nchannels != r->nhops + 1 + r->nitb || r->nchannels < 1) why = "inconsistent lengths";
            for (int i = 0; !why && i < r->nchannels; i++) {
                int c = r->channel[i];
                if (c < 0 || (size_t)c >= nch) { why = "channel out of range"; break; }
                nm_channel_from(t, c, &k, &id, &port);
                if (k != pk || id != pid) { why = "channels not consecutive"; break; }
                if (k == NM_NODE_SWITCH) {
                    if (hops >= r->nhops || r->out_port[hops] != port) { why = "route byte does not match"; break; }
                    hops++;
                }
                int u = nm_channel_is_up(t, c);
                if (u == 1 && last_up == 0) {
                    int fk, fi, fp, tk, ti, tp;
                    char b3[64], b4[64];
                    nm_channel_from(t, c, &fk, &fi, &fp);
                    nm_channel_to(t, c, &tk, &ti, &tp);
                    snprintf(msg, msglen, "route %s -> %s is not a legal up*/down* path: it goes up after going "
                             "down (at %s -> %s)", node_str(t, NM_NODE_HOST, s, b1, sizeof b1),
                             node_str(t, NM_NODE_HOST, d, b2, sizeof b2), node_str(t, fk, fi, b3, sizeof b3),
                             node_str(t, tk, ti, b4, sizeof b4));
                    t->route_check_ok = 0;
                    snprintf(t->route_check_msg, sizeof t->route_check_msg, "%s", msg);
                    return -1;
                }
                if (u >= 0) last_up = u;
                nm_channel_to(t, c, &pk, &pid, &port);
                if (pk == NM_NODE_HOST && i + 1 < r->nchannels) {
                    if (itbi >= r->nitb || r->itb_host[itbi] != pid) { why = "passes a host that is not its in-transit host"; break; }
                    itbi++;
                    last_up = -1;   /* the in-transit buffer starts a new up*-down* segment */
                }
            }
            if (!why && (pk != NM_NODE_HOST || pid != d)) why = "does not end at its destination";
            if (!why && (itbi != r->nitb || hops != r->nhops)) why = "inconsistent in-transit hosts or route bytes";
            if (why) {
                snprintf(msg, msglen, "route %s -> %s: %s", node_str(t, NM_NODE_HOST, s, b1, sizeof b1),
                         node_str(t, NM_NODE_HOST, d, b2, sizeof b2), why);
                t->route_check_ok = 0;
                snprintf(t->route_check_msg, sizeof t->route_check_msg, "%s", msg);
                return -1;
            }
            ndep_raw += (size_t)(r->nchannels - 1);
        }
    /* 2. the channel dependency graph: c -> c' when a route holds c while requesting c' */
    uint64_t *dep = malloc((ndep_raw ? ndep_raw : 1) * sizeof *dep);
    size_t nd = 0;
    if (!dep) { snprintf(msg, msglen, "out of memory"); return -1; }
    for (int s = 0; s < nh; s++)
        for (int d = 0; d < nh; d++) {
            if (s == d) continue;
            const nm_route *r = nm_route_get(t, s, d);
            for (int i = 0; i + 1 < r->nchannels; i++) {
                int k, id, port;
                nm_channel_to(t, r->channel[i], &k, &id, &port);
                if (k == NM_NODE_HOST) continue;   /* an in-transit buffer breaks the dependency */
                dep[nd++] = ((uint64_t)(uint32_t)r->channel[i] << 32) | (uint32_t)r->channel[i + 1];
            }
        }
    qsort(dep, nd, sizeof *dep, cmp_u64);
    size_t nu = 0;
    for (size_t i = 0; i < nd; i++)
        if (nu == 0 || dep[i] != dep[nu - 1]) dep[nu++] = dep[i];
    /* Kahn's algorithm on the CSR graph */
    int *off = calloc(nch + 1, sizeof *off), *indeg = calloc(nch + 1, sizeof *indeg);
    int *q = malloc((nch + 1) * sizeof *q);
    if (!off || !indeg || !q) {
        free(dep); free(off); free(indeg); free(q);
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < nu; i++) { off[(dep[i] >> 32) + 1]++; indeg[(uint32_t)dep[i]]++; }
    for (size_t c = 0; c < nch; c++) off[c + 1] += off[c];
    int head = 0, tail = 0;
    for (size_t c = 0; c < nch; c++) if (indeg[c] == 0) q[tail++] = (int)c;
    while (head < tail) {
        int c = q[head++];
        for (int i = off[c]; i < off[c + 1]; i++) {
            int v = (int)(uint32_t)dep[i];
            if (--indeg[v] == 0) q[tail++] = v;
        }
    }
    int rc = 0;
    if ((size_t)tail < nch) {
        /* Every channel left has a predecessor left: walk backwards until a channel repeats; the
         * walk from there is a cycle (printed in dependency order). */
        int *pred = malloc(nch * sizeof *pred), *cyc = malloc((nch + 1) * sizeof *cyc);
        int *seen = calloc(nch, sizeof *seen);
        if (pred && cyc && seen) {
            for (size_t c = 0; c < nch; c++) pred[c] = -1;
            for (size_t i = 0; i < nu; i++) {
                int a = (int)(dep[i] >> 32), v = (int)(uint32_t)dep[i];
                if (indeg[a] > 0 && indeg[v] > 0 && pred[v] < 0) pred[v] = a;
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
    } else {
        snprintf(msg, msglen, "deadlock-free: %zu routes legal%s, channel dependency graph acyclic (%zu channels, "
                 "%zu dependencies)", nroutes, t->sw_level ? " (up*/down* segments)" : "", nch, nu);
    }
    t->route_check_ok = rc == 0;
    snprintf(t->route_check_msg, sizeof t->route_check_msg, "%s", msg);
    free(dep); free(off); free(indeg); free(q);
    return rc;
}
