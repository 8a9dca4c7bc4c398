/* Reachability, switch distance tables, routing statistics, the routing registry and the
 * computation of a topology's routing (nm_routes_compute_as). */
#include "routes_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Switch connectivity labels, for reachability. */
int *rt_components(const nm_topology *t)
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
                int n = rt_neighbour_switch(t, s, p);
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
    int *comp = rt_components(t);
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
            croute *c = R->ngiven ? rt_cache_find(R, (uint64_t)s * (uint64_t)nh + (uint64_t)d + 1) : NULL;
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
        for (int s = 0; s < ns; s++) rt_bfs(t, s, &d[(size_t)s * (size_t)ns], q);
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
    if (d && q) { rt_bfs(t, b, d, q); r = d[a]; }
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
            s = (int)(rt_splitmix(&rs) % (uint64_t)t->nhosts);
            d = (int)(rt_splitmix(&rs) % (uint64_t)t->nhosts);
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
            if (a >= 0 && b >= 0 && rt_dist_to(t, R, b, &D) == 0) m = dv_at(D, a);
        }
        rview r;
        if (m <= 0 || rt_route_view(t, s, d, &r) < 0) continue;
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
    cm_named id;
    int kind;
} routings[] = {
    {{"auto", "auto", "shortest when its routes cannot deadlock on this engine, else updown"}, -1},
    {{"shortest", "shortest", "BFS over switches (may deadlock on cyclic networks)"}, NM_ROUTING_SHORTEST},
    {{"updown", "updown", "up*/down* with load-balanced route choice as GM simple_routes (seed 002 sec 3)"},
     NM_ROUTING_UPDOWN},
    {{"itb", "itb", "random minimal paths split by in-transit buffers (seed 002 sec 4)"}, NM_ROUTING_ITB},
};

const cm_named *nm_routing_at(size_t i)
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
        rt_bfs_g(g, s0, dist, q);
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
        rt_bfs_g(g, o, dist, q);
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
    rt_routing_clear(t);
    compute_sw_dist(t);
    t->updown_root = -1;
    t->route_check_ok = -1;
    t->route_check_msg[0] = '\0';
    const char *ties = cfg ? nm_config_string(cfg, "network.route_ties") : "lowest";
    R->spread = !strcmp(ties, "spread") || (!strcmp(ties, "auto") && t->prefer_spread);
    R->seed = cfg ? (uint64_t)nm_config_int(cfg, "network.seed") : 1;
    const cm_named *id = cm_registry_find(nm_routing_at, routing);
    int kind = id ? ((const struct routing_entry *)id)->kind : -1;   /* id is the entry's first member */
    if (kind < 0) {
        cm_registry_unknown(nm_routing_at, "network.routing", routing, err, errlen);
        return -1;
    }
    int ns = t->nswitches;
    double nsw = ns;
    /* units of updown per host: each host x the switches with hosts it reaches */
    double units = 0;
    if (kind == NM_ROUTING_UPDOWN) {
        int *comp = rt_components(t);
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
    if (rt_sgraph_build(t, &R->g, all_pairs) != 0) { nm_set_err(err, errlen, "out of memory"); return -1; }
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
    if (t->routing == NM_ROUTING_ITB && rt_itb_path_fewest(cfg, err, errlen, &R->fewest) != 0) return -1;
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
        if (auto_r) root = ns ? rt_auto_root(t, R->g.dist) : -1;
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
        if (rt_ud_compute(t, R) != 0) {
            nm_set_err(err, errlen, "out of memory");
            return -1;
        }
    } else if (t->routing == NM_ROUTING_UPDOWN) {
        int64_t base = R->g.off[ns] ? (int64_t)(pairs_len / R->g.off[ns]) + 1 : 1;
        if (rt_ud_compute_dest(t, R, base) != 0) {
            nm_set_err(err, errlen, "out of memory");
            return -1;
        }
    }
    R->kind = t->routing;
    return 0;
}
