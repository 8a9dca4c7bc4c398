/* Shortest and itb routes, and the dispatch to the routing in use (routes.c explains them). */
#include "routes_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- shortest ------------------------------------------------------------------------------ */

/* Channels of the shortest route s -> d into chans; their count, or -1 (no route). */
int rt_route_shortest(const nm_topology *t, nm_routing *R, int s, int d, int *chans)
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
    if (rt_dist_to(t, R, target, &D) != 0 || dv_at(D, cur) < 0) return -1;
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
                    int n = rt_neighbour_switch(t, cur, p);
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

/* ---- itb: minimal paths split at down->up turns ---------------------------------------------- */

/* network.itb_path: random (default; seed 002 sec 4, "randomly selected among all the feasible
 * paths. In the case a nonvalid up*-down* path is chosen ...", and sec 5.5.1, ITB traffic avoiding
 * the root) draws the pair's minimal path uniformly among all minimal paths; fewest_itb (an mpisim
 * variant) uniformly among the minimal paths with the fewest down->up turns, i.e. a legal
 * up*-down* minimal path whenever one exists. Without the key in the configuration, random. */
int rt_itb_path_fewest(const nm_config *cfg, char *err, size_t errlen, int *fewest)
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
    if (a < 0 || b < 0) return rt_route_shortest(t, R, s, d, chans);
    const int *D = &g->dist[(size_t)b * (size_t)ns];
    if (D[a] < 0) return rt_route_shortest(t, R, s, d, chans);
    const itb_dest *X = itb_dest_get(t, R, b);
    if (!X) return -1;
    const double *P = X->P, *C = X->C;
    const int *F = X->F;
    uint64_t rs = R->seed * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)s * 0xD1B54A32D192ED03ULL) ^
                  ((uint64_t)d * 0xABC98388FB8FAC03ULL);
    int n = 0, nitb = 0;
    if (R->fewest && F[2 * a] >= ITB_INF) return rt_route_updown(t, R, s, d, chans);
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
                double x = (double)(rt_splitmix(&rs) >> 11) * (1.0 / 9007199254740992.0) * C[2 * cur + ph];
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
                double x = (double)(rt_splitmix(&rs) >> 11) * (1.0 / 9007199254740992.0) * P[cur];
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
                int ih = g->hosts[g->hosts_off[cur] + (int)(rt_splitmix(&rs) % (uint64_t)nhs)];
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
    if (n < 0) return rt_route_updown(t, R, s, d, chans);
    chans[n++] = nm_channel_leaving(t, t->hosts[d].link, NM_NODE_SWITCH, b);
    *nitb_out = nitb;
    return n;
}

/* The computed route s -> d (s != d, both valid) into R's scratch: channel count or -1. */
int rt_route_compute(const nm_topology *t, nm_routing *R, int s, int d, int *nitb)
{
    *nitb = 0;
    switch (R->kind) {
    case NM_ROUTING_SHORTEST: return rt_route_shortest(t, R, s, d, R->chans);
    case NM_ROUTING_UPDOWN: return rt_route_updown(t, R, s, d, R->chans);
    case NM_ROUTING_ITB: return route_itb(t, R, s, d, R->chans, R->itb_hosts, nitb);
    default: return -1;
    }
}
