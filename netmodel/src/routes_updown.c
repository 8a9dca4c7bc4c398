/* The up/down orientation and updown routes: legal routes balanced on weighted links (routes.c
 * explains them). */
#include "routes_internal.h"
#include "cm_grow.h"
#include "cm_heap.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    rt_bfs(t, root, lvl, q);
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
int rt_auto_root(const nm_topology *t, const int *dist_all)
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

/* A search over (switch, phase) states with an indexed heap (cm_heap.h) ordered by (key, state),
 * key = the distance so far plus a lower bound of what is left (A*; the bound 0 makes it
 * Dijkstra). Every state is in the heap at most once (decrease-key). Arrays are reset lazily by a
 * generation stamp: a unit costs what its search visits, not the size of the network. */
typedef struct { int64_t t; uint64_t k; } udslot;   /* key, state */
#define UD_POS_HOOK(pos, slot, i) ((pos)[(slot).k] = (int)(i))
CM_HEAP_DEFINE_CTX(ud_evq, udslot, 2, int, UD_POS_HOOK)
typedef struct udheap {
    int64_t *dist;
    ud_evq_heap q;     /* room for every state: pushes never grow it */
    int *pos;          /* a state's slot while it is in q (also the hop search's scratch queue) */
    uint32_t *seen, *fin, gen;
} udheap;

/* State x is reached with key `key`: into the heap, or moved up in it (a lower key). */
static void ud_push(udheap *H, int x, int64_t key) { (void)ud_evq_push_ctx(&H->q, (udslot){key, (uint64_t)x}, H->pos); }
static void ud_lower(udheap *H, int x, int64_t key) { ud_evq_update_at_ctx(&H->q, (size_t)H->pos[x], (udslot){key, (uint64_t)x}, H->pos); }
static int ud_pop(udheap *H)
{
    udslot top;
    ud_evq_pop_ctx(&H->q, &top, H->pos);
    return (int)top.k;
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

/* One unit's search: the least weighted legal distance from state 2a (source switch a, may still
 * go up) to destination switch b (hb: the lower bound's hop counts toward b, or NULL), the
 * states it settled left in H for the walk back; -1: no legal route. */
static int64_t ud_search(const sgraph *g, udheap *H, const int *up, const int64_t *load, const uint16_t *hb,
                         int64_t base, int nst, int a, int b)
{
    if (++H->gen == 0) {   /* stamps wrapped: clear them */
        memset(H->seen, 0, (size_t)nst * sizeof *H->seen);
        memset(H->fin, 0, (size_t)nst * sizeof *H->fin);
        H->gen = 1;
    }
    const uint32_t gen = H->gen;
    H->q.n = 0;
    H->dist[2 * a] = 0;
    H->seen[2 * a] = gen;
    ud_push(H, 2 * a, hb ? base * hb[2 * a] : 0);
    int64_t cstar = -1;   /* the least distance to b found */
    while (H->q.n > 0) {
        if (cstar >= 0 && H->q.e[0].t > cstar) break;
        int x = ud_pop(H);
        H->fin[x] = gen;
        int u = x / 2, ph = x % 2;
        if (u == b) {   /* not expanded: a path through b is never the least */
            if (cstar < 0 || H->dist[x] < cstar) cstar = H->dist[x];
            continue;
        }
        int64_t dx = H->dist[x];
        for (int k = g->off[u]; k < g->off[u + 1]; k++) {
            if (up[k] == 1 && ph == 1) continue;        /* no up after down */
            int vs = 2 * g->nb[k] + (up[k] == 1 ? 0 : 1);
            if (H->fin[vs] == gen) continue;
            int64_t hv = 0;
            if (hb) {
                if (hb[vs] == UD_HOPS_INF) continue;      /* b is not legally reachable from there */
                hv = base * hb[vs];
            }
            int64_t nd = dx + base + load[g->ch[k]];
            if (H->seen[vs] != gen) {
                H->seen[vs] = gen;
                H->dist[vs] = nd;
                ud_push(H, vs, nd + hv);
            } else if (nd < H->dist[vs]) {
                H->dist[vs] = nd;
                ud_lower(H, vs, nd + hv);
            }
        }
    }
    return cstar;
}

/* The least path of ud_search's, walked back from b to a (ties: the lower state, then the lower
 * edge) into path as g's edge indices from b back to a; their count. */
static int ud_walk_back(const sgraph *g, const udheap *H, const int *up, const int *rin_off, const int *rin,
                        const int *esrc, const int64_t *load, int64_t base, int a, int b, int64_t cstar, int *path)
{
    const uint32_t gen = H->gen;
    /* the goal: b's state first in (distance, state) order */
    int goal = H->fin[2 * b] == gen && H->dist[2 * b] == cstar ? 2 * b : 2 * b + 1;
    int np = 0;
    for (int v = goal; v != 2 * a;) {
        int y = v / 2, phv = v % 2, bu = -1, bk = -1;
        for (int i = rin_off[y]; i < rin_off[y + 1]; i++) {
            int k = rin[i], x = esrc[k];
            if ((up[k] == 1) != (phv == 0) || x == b) continue;
            int64_t w = base + load[g->ch[k]];
            for (int ph = 0; ph < (up[k] == 1 ? 1 : 2); ph++) {
                int st = 2 * x + ph;
                if (H->fin[st] != gen || H->dist[st] + w != H->dist[v]) continue;
                if (bu < 0 || H->dist[st] < H->dist[bu] || (H->dist[st] == H->dist[bu] && (st < bu || (st == bu && k < bk)))) {
                    bu = st;
                    bk = k;
                }
            }
        }
        path[np++] = bk;
        v = bu;
    }
    return np;
}

/* Destination switch b's tree (plain Dijkstra over (switch, phase) states toward b on the
 * weighted links): each state's edge toward b into nxt (-1: none), the states settled in order
 * of distance into order; their count. */
static int ud_dest_tree(const sgraph *g, udheap *H, const signed char *edge_up, const int *rin_off, const int *rin,
                        const int *esrc, const int64_t *load, int64_t base, int nst, int b, int *nxt, int *order)
{
    if (++H->gen == 0) {
        memset(H->seen, 0, (size_t)nst * sizeof *H->seen);
        memset(H->fin, 0, (size_t)nst * sizeof *H->fin);
        H->gen = 1;
    }
    const uint32_t gen = H->gen;
    H->q.n = 0;
    for (int ph = 0; ph < 2; ph++) {
        int v = 2 * b + ph;
        H->dist[v] = 0;
        H->seen[v] = gen;
        nxt[v] = -1;
        ud_push(H, v, 0);
    }
    int no = 0;
    while (H->q.n > 0) {
        int v = ud_pop(H), y = v / 2, phv = v % 2;
        H->fin[v] = gen;
        order[no++] = v;
        int64_t dv = H->dist[v];
        for (int i = rin_off[y]; i < rin_off[y + 1]; i++) {
            int k = rin[i], x = esrc[k], upk = edge_up[k];
            /* the step (x, ph) -k-> v is legal: up edges from phase 0 into phase 0, down
             * edges from either phase into phase 1 */
            if (x == b || upk != (phv == 0)) continue;
            int64_t nd = dv + base + load[g->ch[k]];
            for (int ph = 0; ph < (upk ? 1 : 2); ph++) {
                int u = 2 * x + ph;
                if (H->fin[u] == gen) continue;
                if (H->seen[u] != gen) {
                    H->seen[u] = gen;
                    H->dist[u] = nd;
                    nxt[u] = k;
                    ud_push(H, u, nd);
                } else if (nd < H->dist[u]) {
                    H->dist[u] = nd;
                    nxt[u] = k;
                    ud_lower(H, u, nd);
                }
            }
        }
    }
    return no;
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
int rt_ud_compute(const nm_topology *t, nm_routing *R)
{
    const sgraph *g = &R->g;
    int ns = t->nswitches, nh = t->nhosts, nst = 2 * ns + 1;
    size_t nch = 2 * (size_t)t->nlinks;
    int64_t *load = calloc(nch ? nch : 1, sizeof *load);
    /* states: switch*2 + phase (0: may still go up, 1: has gone down) */
    udheap H = {malloc((size_t)nst * sizeof(int64_t)), {malloc((size_t)nst * sizeof(udslot)), 0, (size_t)nst},
                malloc((size_t)nst * sizeof(int)), calloc((size_t)nst, sizeof(uint32_t)), calloc((size_t)nst, sizeof(uint32_t)), 0};
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
    if (!load || !H.dist || !H.q.e || !H.pos || !H.seen || !H.fin || !units || !path || !up || !esrc ||
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
                if (didx[b] >= 0) ud_hops_to(g, up, rin_off, rin, esrc, b, &hops[(size_t)didx[b] * (size_t)nst], H.pos);
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
        size_t j = (size_t)(rt_splitmix(&rs) % (uint64_t)(i + 1));
        int64_t x = units[i]; units[i] = units[j]; units[j] = x;
    }
    for (size_t ui = 0; ui < nunits; ui++) {
        int s = (int)(units[ui] / ns), b = (int)(units[ui] % ns);
        int a = hsw[s];
        int nb = g->hosts_off[b + 1] - g->hosts_off[b];
        const uint16_t *hb = hops ? &hops[(size_t)didx[b] * (size_t)nst] : NULL;
        if (hb && hb[2 * a] == UD_HOPS_INF) continue;   /* no legal route */
        int64_t cstar = ud_search(g, &H, up, load, hb, base, nst, a, b);
        if (cstar < 0) continue;   /* no legal route: the pair is routed as shortest (and fails the check) */
        int np = ud_walk_back(g, &H, up, rin_off, rin, esrc, load, base, a, b, cstar, path);
        /* path is reversed: g->ch indices from b back to a */
        for (int i = 0; i < np; i++) load[g->ch[path[i]]] += nb;
        if (cm_grow((void **)&R->ud_path, &R->ud_cap, R->ud_n + (size_t)np + 1, sizeof *R->ud_path, 4096) < 0) goto out;
        R->ud_off[units[ui]] = (int64_t)R->ud_n;
        R->ud_path[R->ud_n++] = np;
        for (int i = np - 1; i >= 0; i--) R->ud_path[R->ud_n++] = g->ch[path[i]];
    }
    rc = 0;
out:
    free(load); free(H.dist); free(H.q.e); free(H.pos); free(H.seen); free(H.fin);
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
int rt_ud_compute_dest(const nm_topology *t, nm_routing *R, int64_t base)
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
    size_t nst1 = (size_t)(nst ? nst : 1);
    udheap H = {malloc(nst1 * sizeof(int64_t)), {malloc(nst1 * sizeof(udslot)), 0, nst1}, malloc(nst1 * sizeof(int)),
                calloc(nst1, sizeof(uint32_t)), calloc(nst1, sizeof(uint32_t)), 0};
    int *nxt = malloc((size_t)(nst ? nst : 1) * sizeof *nxt), *order = malloc((size_t)(nst ? nst : 1) * sizeof *order);
    int *esrc = malloc((size_t)(nedges ? nedges : 1) * sizeof *esrc);
    int *rin_off = calloc((size_t)ns + 2, sizeof *rin_off), *rin = malloc((size_t)(nedges ? nedges : 1) * sizeof *rin);
    int *dests = malloc((size_t)(ns ? ns : 1) * sizeof *dests);
    R->ud_up = malloc((size_t)(nedges ? nedges : 1));
    R->ud_didx = malloc((size_t)(ns ? ns : 1) * sizeof *R->ud_didx);
    int rc = -1, ndest = 0;
    if (!load || !flow || !H.dist || !H.q.e || !H.pos || !H.seen || !H.fin || !nxt || !order || !esrc || !rin_off ||
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
        int j = (int)(rt_splitmix(&rs) % (uint64_t)(i + 1)), x = dests[i];
        dests[i] = dests[j];
        dests[j] = x;
    }
    for (int di = 0; di < ndest; di++) {
        int b = dests[di];
        int64_t nb = g->hosts_off[b + 1] - g->hosts_off[b];
        nm_progress_(t, "balancing up*/down* routes", di, ndest);
        int no = ud_dest_tree(g, &H, R->ud_up, rin_off, rin, esrc, load, base, nst, b, nxt, order);
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
    free(load); free(flow); free(H.dist); free(H.q.e); free(H.pos); free(H.seen); free(H.fin);
    free(nxt); free(order); free(esrc); free(rin_off); free(rin); free(dests);
    R->ud_state = rc == 0 ? 1 : -1;
    return rc;
}

/* The updown route s -> d: the unit (s, switch of d) between the two host channels. */
int rt_route_updown(const nm_topology *t, nm_routing *R, int s, int d, int *chans)
{
    int a = nm_topology_switch_of_host(t, s), b = nm_topology_switch_of_host(t, d);
    /* host pairs on one switch, and host-to-host cables, are routed as `shortest` would */
    if (a < 0 || b < 0 || a == b) return rt_route_shortest(t, R, s, d, chans);
    if (R->ud_state == 0) (void)rt_ud_compute(t, R);   /* itb's fallback asks for it on demand */
    if (R->ud_state != 1) return -1;
    if (R->ud_dest) {
        int n = 0, st = 2 * a, limit = 2 * t->nswitches + 2;
        chans[n++] = nm_channel_leaving(t, t->hosts[s].link, NM_NODE_HOST, s);
        while (st / 2 != b) {
            int k = ud_dest_edge(R, b, st);
            if (k < 0 || n > limit) return rt_route_shortest(t, R, s, d, chans);
            chans[n++] = R->g.ch[k];
            st = 2 * R->g.nb[k] + (R->ud_up[k] ? 0 : 1);
        }
        chans[n++] = nm_channel_leaving(t, t->hosts[d].link, NM_NODE_SWITCH, b);
        return n;
    }
    int64_t off = R->ud_off[(size_t)s * (size_t)t->nswitches + (size_t)b];
    if (off < 0) return rt_route_shortest(t, R, s, d, chans);
    int n = 0, np = R->ud_path[off];
    chans[n++] = nm_channel_leaving(t, t->hosts[s].link, NM_NODE_HOST, s);
    for (int i = 0; i < np; i++) chans[n++] = R->ud_path[off + 1 + i];
    chans[n++] = nm_channel_leaving(t, t->hosts[d].link, NM_NODE_SWITCH, b);
    return n;
}
