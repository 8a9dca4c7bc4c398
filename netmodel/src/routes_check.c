/* The deadlock checker (nm_routes_check): channel dependencies of every route, then Kahn's
 * algorithm (routes.c explains how each routing's routes are enumerated). */
#include "routes_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    int nitb = 0, n = rt_route_compute(t, R, s, d, &nitb);
    if (n <= 0) return 1;
    int illegal, nhops = n - 1 - nitb;
    const char *why = rt_follow_route(t, s, d, nhops, NULL, n, R->chans, nitb, R->itb_hosts, &illegal);
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
            croute *c = R->ngiven ? rt_cache_find(R, (uint64_t)s * (uint64_t)nh + (uint64_t)id + 1) : NULL;
            if (!c || !c->given) (*nroutes)++;
            continue;
        }
        for (int b = 0; b < ns && rc == 0; b++) {
            int h0 = g->hosts_off[b], h1 = g->hosts_off[b + 1], done = 0;
            for (int i = h0; i < h1; i++) {
                int d = g->hosts[i];
                if (d == s) continue;
                if (R->ngiven) {
                    croute *c = rt_cache_find(R, (uint64_t)s * (uint64_t)nh + (uint64_t)d + 1);
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

/* Dependencies of the routes toward destination switch b pair by pair (sources on the switches
 * src_sw, distances Db toward b): 0, or -1 with msg. */
static int deps_dest_pairwise(nm_topology *t, depset *D, int b, const int *Db, const int *src_sw, int nsrc,
                              const uint8_t *special, char *msg, size_t msglen)
{
    const sgraph *g = &t->rt->g;
    int h0 = g->hosts_off[b], h1 = g->hosts_off[b + 1];
    for (int i = 0; i < nsrc; i++) {
        int a = src_sw[i];
        if (a == b || Db[a] < 0) continue;
        for (int j = g->hosts_off[a]; j < g->hosts_off[a + 1]; j++) {
            int s = g->hosts[j];
            if (special && special[s]) continue;
            for (int e = h0; e < h1; e++)
                if (deps_of_pair(t, D, s, g->hosts[e], msg, msglen) < 0) return -1;
        }
    }
    return 0;
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
            rt_bfs_g(g, b, dist, queue);
            if (rt_row_keep(R, ns, b, dist) != 0) { snprintf(msg, msglen, "out of memory"); goto out; }
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
            if (deps_dest_pairwise(t, D, b, Db, src_sw, nsrc, special, msg, msglen) < 0) goto out;
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
    int *comp = rt_components(t);
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
        const char *why = rt_follow_route(t, gv[i]->src, gv[i]->dst, r->nhops, r->out_port, r->nchannels, r->channel,
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
