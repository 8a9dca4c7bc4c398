/* Topology generators: the testbeds and studied networks of the seeds. Wiring is documented
 * in netmodel/README.md; every generator names hosts H0.. and switches S0.. in order. */
#include "nm_internal.h"
#include "cm_grow.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A place where a host may be attached, in host-number order. */
typedef struct { int sw, port; } slot;

typedef struct gen {
    nm_topology *t;
    const nm_config *cfg;
    slot *slots;
    int nslots;
    size_t cap;
    char *err;
    size_t errlen;
} gen;

static int add_slot(gen *g, int sw, int port)
{
    if (cm_grow((void **)&g->slots, &g->cap, (size_t)g->nslots + 1, sizeof *g->slots, 64) < 0) return -1;
    g->slots[g->nslots].sw = sw;
    g->slots[g->nslots].port = port;
    g->nslots++;
    return 0;
}

static int sw(gen *g, int nports)
{
    int i = nm_topo_add_switch(g->t, NULL, nports);
    if (i < 0) nm_set_err(g->err, g->errlen, "out of memory");
    return i;
}

static int sw_link(gen *g, int a, int ap, int b, int bp)
{
    return nm_topo_add_link(g->t, NM_NODE_SWITCH, a, ap, NM_NODE_SWITCH, b, bp, 0, -1, 0, g->cfg, g->err,
                            g->errlen) < 0 ? -1 : 0;
}

/* Attach hosts H0..H(n-1) to the first n slots. */
static int attach(gen *g, int n)
{
    if (n > g->nslots) {
        nm_set_err(g->err, g->errlen, "topology '%s': has room for %d hosts, %d asked", g->t->name, g->nslots, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int h = nm_topo_add_host(g->t, NULL, 0);
        if (h < 0 || nm_topo_add_link(g->t, NM_NODE_HOST, h, 0, NM_NODE_SWITCH, g->slots[i].sw, g->slots[i].port,
                                      0, -1, 0, g->cfg, g->err, g->errlen) < 0) {
            if (h < 0) nm_set_err(g->err, g->errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Three 8-port switches in a triangle (seed 000 sec 2.1): switch k's port 6 goes to port 7 of
 * switch k+1 (mod 3). `hosts_per[k]` slots on ports 0.. of switch k. Returns first switch. */
static int triangle(gen *g, const int hosts_per[3])
{
    int s0 = g->t->nswitches;
    for (int k = 0; k < 3; k++)
        if (sw(g, 8) < 0) return -1;
    for (int k = 0; k < 3; k++)
        if (sw_link(g, s0 + k, 6, s0 + (k + 1) % 3, 7) < 0) return -1;
    for (int k = 0; k < 3; k++)
        for (int p = 0; p < hosts_per[k]; p++)
            if (add_slot(g, s0 + k, p) < 0) return -1;
    return s0;
}

/* Split "name:a:b:c:d" into name and up to 4 numbers; returns the count of numbers or -1. */
static int split_spec(const char *spec, char *name, size_t namelen, long *args)
{
    const char *colon = strchr(spec, ':');
    size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
    if (nl >= namelen) return -1;
    memcpy(name, spec, nl);
    name[nl] = '\0';
    int n = 0;
    const char *p = colon;
    while (p) {
        p++;
        if (n == 4) return -1;
        const char *q = p;
        long v = 0;
        if (*q < '0' || *q > '9') return -1;
        while (*q >= '0' && *q <= '9') {
            v = v * 10 + (*q - '0');
            if (v > 1000000) return -1;
            q++;
        }
        if (*q != '\0' && *q != ':') return -1;
        args[n++] = v;
        p = *q == ':' ? q : NULL;
    }
    return n;
}

static int gen_crossbar(gen *g, int nports, int nhosts)
{
    int s = sw(g, nports);
    if (s < 0) return -1;
    for (int p = 0; p < nports; p++)
        if (add_slot(g, s, p) < 0) return -1;
    return attach(g, nhosts);
}

static int gen_triangle18(gen *g, int nhosts)
{
    static const int per[3] = {6, 6, 6};
    if (triangle(g, per) < 0) return -1;
    return attach(g, nhosts);
}

/* Six 16-host clusters, each a triangle of 8-port switches A, B, C (seed 000 sec 2.1:
 * "derived from the 18-node system"): A has 5 hosts on ports 0-4 and its port 5 goes up to
 * port c of the central 8-port switch; B has 6 hosts on ports 0-5; C has 5 hosts on ports
 * 0-4 and port 5 spare. Hosts 16c..16c+15 are cluster c's (A's, then B's, then C's). */
static int gen_system96(gen *g, int nhosts)
{
    static const int per[3] = {5, 6, 5};
    int first[6];
    for (int c = 0; c < 6; c++)
        if ((first[c] = triangle(g, per)) < 0) return -1;
    int central = sw(g, 8);
    if (central < 0) return -1;
    for (int c = 0; c < 6; c++)
        if (sw_link(g, first[c], 5, central, c) < 0) return -1;
    return attach(g, nhosts);
}

/* Seed 004 sec 4.1: sixteen 16-port switches. Leaves S0-S7 carry hosts 8i..8i+7 on ports 0-7;
 * leaf i's port 8+j goes to spine S(8+j)'s port i; spine ports 8-15 are left for a second
 * Clos64. Every leaf reaches every other through any spine: full bisection. */
static int gen_clos64(gen *g, int nhosts)
{
    for (int i = 0; i < 16; i++)
        if (sw(g, 16) < 0) return -1;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            if (sw_link(g, i, 8 + j, 8 + j, i) < 0) return -1;
    for (int i = 0; i < 8; i++)
        for (int p = 0; p < 8; p++)
            if (add_slot(g, i, p) < 0) return -1;
    return attach(g, nhosts);
}

/* Seed 004 sec 4.1 minimally connected: S 16-port switches in a line, K hosts on ports 0..K-1;
 * switch i's port K goes to switch i+1's port K+1. */
static int gen_array(gen *g, int S, int K)
{
    for (int i = 0; i < S; i++)
        if (sw(g, 16) < 0) return -1;
    for (int i = 0; i + 1 < S; i++)
        if (sw_link(g, i, K, i + 1, K + 1) < 0) return -1;
    for (int i = 0; i < S; i++)
        for (int p = 0; p < K; p++)
            if (add_slot(g, i, p) < 0) return -1;
    return attach(g, S * K);
}

/* Seed 004 sec 4.1 ring: S 16-port switches, K hosts on ports 0..K-1, L parallel links to each
 * neighbour: switch i's ports K..K+L-1 go to switch i+1's ports K+L..K+2L-1 (mod S). */
static int gen_ring(gen *g, int S, int K, int L)
{
    for (int i = 0; i < S; i++)
        if (sw(g, 16) < 0) return -1;
    for (int i = 0; S > 1 && i < S; i++)
        for (int l = 0; l < L; l++)
            if (sw_link(g, i, K + l, (i + 1) % S, K + L + l) < 0) return -1;
    for (int i = 0; i < S; i++)
        for (int p = 0; p < K; p++)
            if (add_slot(g, i, p) < 0) return -1;
    return attach(g, S * K);
}

/* Seed 002 sec 5.1: an X x Y 2D torus of 16-port switches, K hosts each on ports 0..K-1. Switch
 * (x, y) is S(y*X + x); port K goes to (x+1, y)'s port K+1, port K+2 to (x, y+1)'s port K+3 (all
 * mod X, Y). With express channels (Dally's express cubes, the paper's ref. 5) port K+4 goes to
 * (x+2, y)'s port K+5 and port K+6 to (x, y+2)'s port K+7: second-order neighbours. */
static int gen_torus2d(gen *g, int X, int Y, int K, int express)
{
    int need = K + (express ? 8 : 4);
    int ports = need > 16 ? need : 16;
    for (int i = 0; i < X * Y; i++)
        if (sw(g, ports) < 0) return -1;
    for (int y = 0; y < Y; y++)
        for (int x = 0; x < X; x++) {
            int s = y * X + x;
            if (sw_link(g, s, K, y * X + (x + 1) % X, K + 1) < 0) return -1;
            if (sw_link(g, s, K + 2, ((y + 1) % Y) * X + x, K + 3) < 0) return -1;
            if (express) {
                if (sw_link(g, s, K + 4, y * X + (x + 2) % X, K + 5) < 0) return -1;
                if (sw_link(g, s, K + 6, ((y + 2) % Y) * X + x, K + 7) < 0) return -1;
            }
        }
    for (int i = 0; i < X * Y; i++)
        for (int p = 0; p < K; p++)
            if (add_slot(g, i, p) < 0) return -1;
    return attach(g, X * Y * K);
}

/* Seed 002 sec 5.1 CPLANT (its Fig. 8 is lost; this follows the text): 50 16-port switches with 8
 * hosts each (ports 0-7). Switches S(8g+p), g = 0..5 (six groups), p = 0..7 (position): inside a
 * group a 3-cube plus a link to the farthest switch (p^1, p^2, p^4, p^7 on ports 8-11: port 8+i
 * for the i-th of these). Groups form an incomplete 3-cube with links between farthest groups:
 * group edges 0-1 0-2 0-4 1-3 1-5 2-3 4-5 (cube) and 2-5 3-4 (farthest), each joining the eight
 * pairs of equivalent switches (same p), on ports 12-14 in that edge order. The remaining two
 * switches form an additional group of the same kind: positions 0 and 1 (S48, S49; a cube edge,
 * port 8) and, as every switch does, linked to their equivalent switches in the other groups:
 * S48 to position 0 and S49 to position 1 of groups 0..5 (their ports 9-14, port 15 of those
 * switches). An earlier reading put S48/S49 in the place of cube vertex 110 (positions {0,7} and
 * {3,4} of groups 4, 2, 1); the text says only that the two form a group, and groups are joined
 * through equivalent switches. */
static int gen_cplant(gen *g)
{
    for (int i = 0; i < 50; i++)
        if (sw(g, 16) < 0) return -1;
    static const int nb[4] = {1, 2, 4, 7};
    for (int gr = 0; gr < 6; gr++)
        for (int p = 0; p < 8; p++)
            for (int i = 0; i < 4; i++) {
                int q = p ^ nb[i];
                if (p < q && sw_link(g, 8 * gr + p, 8 + i, 8 * gr + q, 8 + i) < 0) return -1;
            }
    static const int ge[9][2] = {{0, 1}, {0, 2}, {0, 4}, {1, 3}, {1, 5}, {2, 3}, {4, 5}, {2, 5}, {3, 4}};
    int next_port[6] = {12, 12, 12, 12, 12, 12};
    for (int e = 0; e < 9; e++) {
        int a = ge[e][0], b = ge[e][1];
        for (int p = 0; p < 8; p++)
            if (sw_link(g, 8 * a + p, next_port[a], 8 * b + p, next_port[b]) < 0) return -1;
        next_port[a]++;
        next_port[b]++;
    }
    if (sw_link(g, 48, 8, 49, 8) < 0) return -1;
    for (int k = 0; k < 2; k++)
        for (int gr = 0; gr < 6; gr++)
            if (sw_link(g, 48 + k, 9 + gr, 8 * gr + k, 15) < 0) return -1;
    for (int i = 0; i < 50; i++)
        for (int p = 0; p < 8; p++)
            if (add_slot(g, i, p) < 0) return -1;
    return attach(g, 400);
}

/* Seed 002 sec 5.1 random irregular networks: S 8-port switches, 4 hosts each on ports 0-3,
 * ports 4-7 for switches; neighbours joined by a single link; connected. A random spanning tree
 * first (switch order shuffled; each joins a random earlier switch with a free port), then random
 * links between switches with free ports that are not yet neighbours, until no such pair is left.
 * Switch ports are used in the order links are made. Deterministic in SEED. */
static int gen_irregular(gen *g, int S, long seed)
{
    uint64_t st = (uint64_t)seed * 0x9E3779B97F4A7C15ULL + 0x1e6;
    int *deg = calloc((size_t)S, sizeof *deg), *order = malloc((size_t)S * sizeof *order);
    char *adj = calloc((size_t)S * (size_t)S, 1);
    int *cand = malloc((size_t)S * sizeof *cand), *nbr = malloc((size_t)S * 4 * sizeof *nbr);
    int rc = -1;
    if (!deg || !order || !adj || !cand || !nbr) { nm_set_err(g->err, g->errlen, "out of memory"); goto out; }
    for (int i = 0; i < S; i++)
        if (sw(g, 8) < 0) goto out;
#define RND(n) ((int)(rng_next(&st) % (uint64_t)(n)))
    for (int i = 0; i < S; i++) order[i] = i;
    for (int i = S - 1; i > 0; i--) {
        int j = RND(i + 1), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    for (int i = 1; i < S; i++) {
        int nc = 0;
        for (int j = 0; j < i; j++)
            if (deg[order[j]] < 4) cand[nc++] = order[j];
        if (nc == 0) { nm_set_err(g->err, g->errlen, "irregular: no free port for a spanning tree"); goto out; }
        int a = order[i], b = cand[RND(nc)];
        if (sw_link(g, a, 4 + deg[a], b, 4 + deg[b]) < 0) goto out;
        nbr[4 * a + deg[a]++] = b;
        nbr[4 * b + deg[b]++] = a;
        adj[(size_t)a * (size_t)S + (size_t)b] = adj[(size_t)b * (size_t)S + (size_t)a] = 1;
    }
    /* the candidates are the pairs a < b of switches with a free port, not yet neighbours, in
     * (a, b) order; the drawn one is found by counting, not by listing them all (a list per link
     * made 4096 switches take half a minute): the switches with a free port in `fr`, ascending;
     * a switch's neighbours in nbr (at most 4) */
    int nfr = 0;
    for (int a = 0; a < S; a++)
        if (deg[a] < 4) cand[nfr++] = a;
    int *fr = cand;
    for (;;) {
        long nc = 0;
        for (int i = 0; i < nfr; i++) {   /* the free switches after fr[i] that are not its neighbours */
            int a = fr[i], c = nfr - 1 - i;
            for (int j = 0; j < deg[a]; j++) {
                int n = nbr[4 * a + j];
                c -= n > a && deg[n] < 4;
            }
            order[i] = c;
            nc += c;
        }
        if (nc == 0) break;
        long k = (long)(rng_next(&st) % (uint64_t)nc);
        int ia = 0;
        while (k >= order[ia]) k -= order[ia++];
        int a = fr[ia], b = -1;
        for (int j = ia + 1; j < nfr && b < 0; j++)
            if (!adj[(size_t)a * (size_t)S + (size_t)fr[j]] && k-- == 0) b = fr[j];
        if (sw_link(g, a, 4 + deg[a], b, 4 + deg[b]) < 0) goto out;
        nbr[4 * a + deg[a]++] = b;
        nbr[4 * b + deg[b]++] = a;
        adj[(size_t)a * (size_t)S + (size_t)b] = adj[(size_t)b * (size_t)S + (size_t)a] = 1;
        int w = 0;
        for (int i = 0; i < nfr; i++)
            if (deg[fr[i]] < 4) fr[w++] = fr[i];
        nfr = w;
    }
#undef RND
    for (int i = 0; i < S; i++)
        for (int p = 0; p < 4; p++)
            if (add_slot(g, i, p) < 0) goto out;
    rc = attach(g, 4 * S);
out:
    free(deg); free(order); free(adj); free(cand); free(nbr);
    return rc;
}

/* A Clos of 16-port switches for any number of hosts, as Myricom built them (seed 004 sec 4.1's
 * Clos64 is the smallest): leaves carry 8 hosts on ports 0-7 and go up on ports 8-15. Up to 16
 * leaves (128 hosts): 8 spines, leaf i port 8+j to spine j port i. Beyond: pods of 8 leaves and 8
 * middle switches (leaf i of a pod, port 8+j, to middle j's port i; 64 hosts a pod), middle
 * switches up on ports 8-15 to 4Q top switches, Q = the pod count rounded up to 2, 4, 8 or 16:
 * middle a's port 8+u is uplink g = 8a+u, going to top g mod 4Q, port (g div 4Q) Q + pod. Up to
 * 1024 hosts; full bisection at every level. */
static int gen_clos(gen *g, int nhosts)
{
    int leaves = (nhosts + 7) / 8;
    if (leaves <= 1) return gen_crossbar(g, 16, nhosts);
    if (leaves <= 16) {
        for (int i = 0; i < leaves + 8; i++)
            if (sw(g, 16) < 0) return -1;
        for (int i = 0; i < leaves; i++)
            for (int j = 0; j < 8; j++)
                if (sw_link(g, i, 8 + j, leaves + j, i) < 0) return -1;
    } else {
        int pods = (leaves + 7) / 8, q = 2;
        while (q < pods) q *= 2;
        int top = 4 * q, mid0 = pods * 8, top0 = mid0 + pods * 8;
        for (int i = 0; i < top0 + top; i++)
            if (sw(g, 16) < 0) return -1;
        for (int p = 0; p < pods; p++)
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++)
                    if (sw_link(g, p * 8 + i, 8 + j, mid0 + p * 8 + j, i) < 0) return -1;
        for (int p = 0; p < pods; p++)
            for (int a = 0; a < 8; a++)
                for (int u = 0; u < 8; u++) {
                    int up = 8 * a + u;
                    if (sw_link(g, mid0 + p * 8 + a, 8 + u, top0 + up % top, (up / top) * q + p) < 0) return -1;
                }
    }
    for (int i = 0; i < leaves; i++)
        for (int p = 0; p < 8; p++)
            if (add_slot(g, i, p) < 0) return -1;
    g->t->prefer_spread = 1;
    return attach(g, nhosts);
}

/* Beyond 1024 hosts: an 8-ary n-tree of 16-port switches (Petrini and Vanneschi's k-ary n-tree,
 * n = 4 up to 4096 hosts, 5 up to 32768), 8 ports down and 8 up at every level but the top.
 * Switch (l, x), level l = 0 (leaves) .. n-1, x = sum of digits x_i 8^i (i < n-1): its up port
 * 8+u goes to (l+1, x with digit l set to u), arriving on that switch's down port x_l. The leaves
 * below (l, x) are those with x's digits from l up, so a switch is built only where one of the
 * ceil(N/8) leaves needed is below it. Full bisection; shortest paths go up to the nearest common
 * ancestor and down, so they are deadlock-free (checked by the routes like any topology's). */
static int gen_ntree(gen *g, int nhosts)
{
    enum { K = 8 };
    int leaves = (nhosts + K - 1) / K, n = 2, per = K;   /* per: switches per level, 8^(n-1) */
    while ((long)per * K < nhosts) {
        n++;
        per *= K;
    }
    int *id = malloc((size_t)n * (size_t)per * sizeof *id);
    if (!id) {
        nm_set_err(g->err, g->errlen, "out of memory");
        return -1;
    }
    int pw = 1;   /* 8^l */
    for (int l = 0; l < n; l++, pw *= K)
        for (int x = 0; x < per; x++) {
            /* needed: a leaf below, i.e. x with its digits under l cleared is a leaf in use */
            int need = x - x % pw < leaves;
            id[l * per + x] = need ? sw(g, 16) : -2;
            if (id[l * per + x] == -1) {
                free(id);
                return -1;
            }
        }
    pw = 1;
    for (int l = 0; l + 1 < n; l++, pw *= K)
        for (int x = 0; x < per; x++) {
            if (id[l * per + x] < 0) continue;
            int digit = x / pw % K;
            for (int u = 0; u < K; u++) {
                int up = x + (u - digit) * pw;
                if (id[(l + 1) * per + up] >= 0 && sw_link(g, id[l * per + x], K + u, id[(l + 1) * per + up], digit) < 0) {
                    free(id);
                    return -1;
                }
            }
        }
    for (int x = 0; x < leaves; x++)
        for (int p = 0; p < K; p++)
            if (add_slot(g, id[x], p) < 0) {
                free(id);
                return -1;
            }
    free(id);
    g->t->prefer_spread = 1;
    return attach(g, nhosts);
}

/* Beyond 32768 hosts (up to 65536): the 8-ary 5-tree with a top level whose switches use all 16
 * ports downward, as the spine switches of Myricom's large Clos networks do: levels 0-3 as in
 * gen_ntree but with the digit of level 3 running 0..15 (8192 switches a level, 8192 leaves), and
 * 4096 top switches (4, y), y = x0 + 8 x1 + 64 x2 + 512 u: level-3 switch x's up port 8+u goes to
 * top (x0, x1, x2, u), arriving on its down port x3. Full bisection (8192 x 8 links into 4096 x 16
 * ports); only the switches some used leaf is below are built (every top is above every leaf). */
static int gen_ntree_wide(gen *g, int nhosts)
{
    enum { K = 8, PER = 8192, TOPS = 4096 };
    int leaves = (nhosts + K - 1) / K;
    int *id = malloc((size_t)(4 * PER + TOPS) * sizeof *id);
    if (!id) {
        nm_set_err(g->err, g->errlen, "out of memory");
        return -1;
    }
    int rc = -1, pw = 1;   /* 8^l */
    for (int l = 0; l < 4; l++, pw *= K)
        for (int x = 0; x < PER; x++) {
            id[l * PER + x] = x - x % pw < leaves ? sw(g, 16) : -2;
            if (id[l * PER + x] == -1) goto out;
        }
    for (int y = 0; y < TOPS; y++)
        if ((id[4 * PER + y] = sw(g, 16)) < 0) goto out;
    pw = 1;
    for (int l = 0; l < 4; l++, pw *= K)
        for (int x = 0; x < PER; x++) {
            if (id[l * PER + x] < 0) continue;
            int digit = l < 3 ? x / pw % K : x / pw;   /* level 3's digit runs 0..15 */
            for (int u = 0; u < K; u++) {
                int up = l < 3 ? (l + 1) * PER + x + (u - digit) * pw : 4 * PER + x % pw + u * pw;
                if (id[up] >= 0 && sw_link(g, id[l * PER + x], K + u, id[up], digit) < 0) goto out;
            }
        }
    for (int x = 0; x < leaves; x++)
        for (int p = 0; p < K; p++)
            if (add_slot(g, id[x], p) < 0) goto out;
    g->t->prefer_spread = 1;
    rc = attach(g, nhosts);
out:
    free(id);
    return rc;
}

/* Seed 001's conventional Gigabit Ethernet: E edge switches with H hosts each on ports 0..H-1,
 * each joined to one central switch S(E) by T trunked links (edge e's ports H..H+T-1 to the
 * central switch's ports eT..eT+T-1): a loop-free spanning tree; the route ties spread the host
 * pairs over a trunk's links (802.3ad hashes per address pair). E = 1: one switch. */
static int gen_gige_tree(gen *g, int E, int H, int T)
{
    for (int e = 0; e < E; e++)
        if (sw(g, H + (E > 1 ? T : 0)) < 0) return -1;
    if (E > 1) {
        if (sw(g, E * T) < 0) return -1;
        for (int e = 0; e < E; e++)
            for (int k = 0; k < T; k++)
                if (sw_link(g, e, H + k, E, e * T + k) < 0) return -1;
    }
    for (int e = 0; e < E; e++)
        for (int p = 0; p < H; p++)
            if (add_slot(g, e, p) < 0) return -1;
    g->t->prefer_spread = 1;
    return attach(g, E * H);
}

/* Seed 001's Avici router: an X x Y x Z torus of line cards (switches) with K hosts each on ports
 * 0..K-1. Line card (x, y, z) is S(x + X(y + Yz)); port K+2d goes to the next card in dimension d
 * (port K+2d+1 there), wrapping; a dimension of 2 has one link, of 1 none. Host i is on card i/K. */
static int gen_avici(gen *g, int X, int Y, int Z, int K)
{
    int dims[3] = {X, Y, Z}, n = X * Y * Z;
    for (int i = 0; i < n; i++)
        if (sw(g, K + 6) < 0) return -1;
    for (int i = 0; i < n; i++) {
        int c[3] = {i % X, (i / X) % Y, i / (X * Y)};
        for (int d = 0; d < 3; d++) {
            if (dims[d] < 2 || (dims[d] == 2 && c[d] == 1)) continue;
            int nc[3] = {c[0], c[1], c[2]};
            nc[d] = (c[d] + 1) % dims[d];
            int j = nc[0] + X * (nc[1] + Y * nc[2]);
            if (sw_link(g, i, K + 2 * d, j, K + 2 * d + 1) < 0) return -1;
        }
    }
    for (int i = 0; i < n; i++)
        for (int p = 0; p < K; p++)
            if (add_slot(g, i, p) < 0) return -1;
    g->t->gen_kind = NM_GEN_AVICI;
    g->t->gen_ndims = 3;
    for (int d = 0; d < 3; d++) g->t->gen_dims[d] = dims[d];
    return attach(g, n * K);
}

/* Seed 004 sec 3: an R-ary F-cube of unidirectional SCI ringlets (F = 1: one ring), R^F nodes.
 * Node i (coordinates: base-R digits of i, dimension 0 lowest) is a switch whose port d sends to
 * the next node in dimension d (its port F+d); port 2F is its host (host i). The links are
 * full-duplex in the topology; the sci engine uses only the ring direction. */
static int gen_sci_torus(gen *g, int R, int F)
{
    int n = 1;
    for (int d = 0; d < F; d++) n *= R;
    for (int i = 0; i < n; i++)
        if (sw(g, 2 * F + 1) < 0) return -1;
    for (int i = 0; i < n; i++) {
        int m = 1;
        for (int d = 0; d < F; d++, m *= R) {
            int c = (i / m) % R;
            int j = i - c * m + ((c + 1) % R) * m;
            if (sw_link(g, i, d, j, F + d) < 0) return -1;
        }
    }
    for (int i = 0; i < n; i++)
        if (add_slot(g, i, 2 * F) < 0) return -1;
    g->t->gen_kind = NM_GEN_SCI;
    g->t->gen_ndims = F;
    for (int d = 0; d < F && d < 4; d++) g->t->gen_dims[d] = R;
    return attach(g, n);
}

/* ---- the registry (network.topology) ------------------------------------------------------
 * Each generator checks its arguments (n of them in a[]; n = -1: the arguments did not parse)
 * and builds. 0, or -1 with a message naming the spec. */
typedef int (*gen_fn)(gen *g, const char *spec, int n, const long *a);

#define BAD(...) (nm_set_err(g->err, g->errlen, __VA_ARGS__), -1)

static int mk_crossbar(gen *g, const char *spec, int n, const long *a)
{
    if (n != 1 || a[0] < 1 || a[0] > 256) return BAD("topology '%s': expected crossbar:N with 1 <= N <= 256", spec);
    return gen_crossbar(g, (int)a[0], (int)a[0]);
}

static int mk_auto(gen *g, const char *spec, int n, const long *a)
{
    long ports = nm_config_int(g->cfg, "network.switch_ports");
    if (n != 1 || a[0] < 1) return BAD("topology '%s': expected auto:N with N >= 1 (the number of hosts)", spec);
    if (a[0] <= ports && ports <= 256) return gen_crossbar(g, (int)ports, (int)a[0]);
    if (a[0] <= 18) return gen_triangle18(g, (int)a[0]);
    if (a[0] <= 96) return gen_system96(g, (int)a[0]);
    if (a[0] <= 1024) return gen_clos(g, (int)a[0]);
    if (a[0] <= 32768) return gen_ntree(g, (int)a[0]);
    if (a[0] <= 65536) return gen_ntree_wide(g, (int)a[0]);
    return BAD("topology '%s': the default fat tree of 16-port switches holds up to 65536 hosts; name a generator or a "
               "topology file", spec);
}

static int mk_triangle18(gen *g, const char *spec, int n, const long *a)
{
    if (n > 1 || (n == 1 && (a[0] < 1 || a[0] > 18)) || n < 0)
        return BAD("topology '%s': expected triangle18 or triangle18:N with 1 <= N <= 18", spec);
    return gen_triangle18(g, n == 1 ? (int)a[0] : 18);
}

static int mk_system96(gen *g, const char *spec, int n, const long *a)
{
    if (n > 1 || (n == 1 && (a[0] < 1 || a[0] > 96)) || n < 0)
        return BAD("topology '%s': expected system96 or system96:N with 1 <= N <= 96", spec);
    return gen_system96(g, n == 1 ? (int)a[0] : 96);
}

static int mk_clos64(gen *g, const char *spec, int n, const long *a)
{
    if (n > 1 || (n == 1 && (a[0] < 1 || a[0] > 64)) || n < 0)
        return BAD("topology '%s': expected clos64 or clos64:N with 1 <= N <= 64", spec);
    g->t->prefer_spread = 1;
    return gen_clos64(g, n == 1 ? (int)a[0] : 64);
}

static int mk_array(gen *g, const char *spec, int n, const long *a)
{
    if (n != 2 || a[0] < 1 || a[0] > 4096 || a[1] < 1 || a[1] > (a[0] > 1 ? 14 : 16))
        return BAD("topology '%s': expected array:S:K with S >= 1 16-port switches and 1 <= K <= 14 hosts each (2 "
                   "ports go to the neighbours)", spec);
    return gen_array(g, (int)a[0], (int)a[1]);
}

static int mk_ring(gen *g, const char *spec, int n, const long *a)
{
    if (n != 3 || a[0] < 1 || a[0] > 4096 || a[1] < 1 || a[2] < 1 || a[1] + 2 * a[2] > 16)
        return BAD("topology '%s': expected ring:S:K:L with S >= 1 16-port switches, K >= 1 hosts and L >= 1 links "
                   "to each neighbour, K + 2L <= 16", spec);
    if (a[2] > 1) g->t->prefer_spread = 1;
    return gen_ring(g, (int)a[0], (int)a[1], (int)a[2]);
}

static int torus2d_args(gen *g, const char *spec, int n, const long *a, const char *name)
{
    if (n != 3 || a[0] < 1 || a[1] < 1 || a[0] * a[1] > 65536 || a[2] < 1 || a[2] > 248)
        return BAD("topology '%s': expected %s:X:Y:K with an X x Y torus of switches and K >= 1 hosts on each", spec,
                   name);
    return 0;
}

static int mk_torus2d(gen *g, const char *spec, int n, const long *a)
{
    if (torus2d_args(g, spec, n, a, "torus2d") != 0) return -1;
    return gen_torus2d(g, (int)a[0], (int)a[1], (int)a[2], 0);
}

static int mk_torus2d_express(gen *g, const char *spec, int n, const long *a)
{
    if (torus2d_args(g, spec, n, a, "torus2d-express") != 0) return -1;
    return gen_torus2d(g, (int)a[0], (int)a[1], (int)a[2], 1);
}

static int mk_cplant(gen *g, const char *spec, int n, const long *a)
{
    (void)a;
    if (n != 0) return BAD("topology '%s': expected cplant (no arguments)", spec);
    return gen_cplant(g);
}

static int mk_irregular(gen *g, const char *spec, int n, const long *a)
{
    if (n != 2 || a[0] < 2 || a[0] > 4096)
        return BAD("topology '%s': expected irregular:S:SEED with 2 <= S <= 4096 8-port switches", spec);
    return gen_irregular(g, (int)a[0], a[1]);
}

static int mk_clos(gen *g, const char *spec, int n, const long *a)
{
    if (n != 1 || a[0] < 1 || a[0] > 65536) return BAD("topology '%s': expected clos:N with 1 <= N <= 65536 hosts", spec);
    return a[0] <= 1024 ? gen_clos(g, (int)a[0]) : a[0] <= 32768 ? gen_ntree(g, (int)a[0]) : gen_ntree_wide(g, (int)a[0]);
}

static int mk_gige_tree(gen *g, const char *spec, int n, const long *a)
{
    if (n != 3 || a[0] < 1 || a[0] > 256 || a[1] < 1 || a[2] < 1 || a[1] + a[2] > 256 || a[0] * a[2] > 256)
        return BAD("topology '%s': expected gige-tree:E:H:T with E >= 1 edge switches of H >= 1 hosts, each with T >= "
                   "1 trunk links to the central switch (H + T <= 256, E T <= 256)", spec);
    return gen_gige_tree(g, (int)a[0], (int)a[1], (int)a[2]);
}

static int mk_avici(gen *g, const char *spec, int n, const long *a)
{
    if ((n != 3 && n != 4) || a[0] < 1 || a[1] < 1 || a[2] < 1 || a[0] * a[1] * a[2] > 65536 ||
        (n == 4 && (a[3] < 1 || a[3] > 250)))
        return BAD("topology '%s': expected avici:X:Y:Z or avici:X:Y:Z:K, an X x Y x Z torus of line cards with K "
                   "hosts each (default 1)", spec);
    return gen_avici(g, (int)a[0], (int)a[1], (int)a[2], n == 4 ? (int)a[3] : 1);
}

static int mk_sci_torus(gen *g, const char *spec, int n, const long *a)
{
    long nodes = 1;
    for (long d = 0; n == 2 && d < a[1] && nodes <= 65536; d++) nodes *= a[0];
    if (n != 2 || a[0] < 2 || a[1] < 1 || a[1] > 4 || nodes > 65536)
        return BAD("topology '%s': expected sci-torus:R:F, an R-ary F-cube of SCI rings (R >= 2, 1 <= F <= 4, R^F <= "
                   "65536 nodes; F = 1 is a ring)", spec);
    return gen_sci_torus(g, (int)a[0], (int)a[1]);
}

static const struct generator {
    cm_named id;     /* first member: the registry hands out &generators[i].id */
    gen_fn make;
} generators[] = {
    {{"auto", "auto:N", "the default testbed for N hosts: a network.switch_ports crossbar up to that many, "
                        "triangle18 up to 18, system96 up to 96, clos up to 65536"}, mk_auto},
    {{"crossbar", "crossbar:N", "one N-port switch with N hosts (seed 000 sec 3.1)"}, mk_crossbar},
    {{"triangle18", "triangle18[:N]", "three 8-port switches in a triangle, 18 hosts (seed 000 sec 2.1)"},
     mk_triangle18},
    {{"system96", "system96[:N]", "six 16-host triangle clusters joined by one 8-port switch (seed 000 sec 2.1)"}, mk_system96},
    {{"clos64", "clos64[:N]", "a 64-host Clos of sixteen 16-port switches (seed 004 sec 4.1)"}, mk_clos64},
    {{"clos", "clos:N", "a Clos of 16-port switches for up to 65536 hosts (beyond 1024: an 8-ary n-tree)"}, mk_clos},
    {{"array", "array:S:K", "a line of S 16-port switches with K hosts each (seed 004 sec 4.1)"}, mk_array},
    {{"ring", "ring:S:K:L", "a ring of S 16-port switches, K hosts each, L links to each neighbour (seed 004 sec 4.1)"}, mk_ring},
    {{"torus2d", "torus2d:X:Y:K", "an X x Y torus of 16-port switches with K hosts each (seed 002 sec 5.1)"}, mk_torus2d},
    {{"torus2d-express", "torus2d-express:X:Y:K", "torus2d plus express channels to the second-order neighbours (seed 002 sec 5.1)"},
     mk_torus2d_express},
    {{"cplant", "cplant", "the CPlant network: 50 16-port switches, 400 hosts (seed 002 sec 5.1)"}, mk_cplant},
    {{"irregular", "irregular:S:SEED", "S 8-port switches with 4 hosts each, wired at random from SEED (seed 002 sec 5.1)"},
     mk_irregular},
    {{"gige-tree", "gige-tree:E:H:T", "E Gigabit Ethernet edge switches of H hosts, T trunks each to a central "
                                      "switch (seed 001)"}, mk_gige_tree},
    {{"avici", "avici:X:Y:Z[:K]", "an X x Y x Z torus of Avici line cards, K hosts each (seed 001)"}, mk_avici},
    {{"sci-torus", "sci-torus:R:F", "an R-ary F-cube of SCI ringlets (seed 004 sec 3.1); needs network.engine = sci"}, mk_sci_torus},
};

const cm_named *nm_topology_generator_at(size_t i)
{
    return i < sizeof generators / sizeof generators[0] ? &generators[i].id : NULL;
}

int nm_topo_generate(nm_topology *t, const char *spec, const nm_config *cfg, char *err, size_t errlen)
{
    char name[32];
    long a[4] = {0, 0, 0, 0};
    int n = split_spec(spec, name, sizeof name, a);
    /* "crossbar:x" with a bad argument still names a generator (n = -1: its usage is the error) */
    const cm_named *id = cm_registry_find(nm_topology_generator_at, spec);
    if (!id) return 1;
    gen g = {t, cfg, NULL, 0, 0, err, errlen};
    int rc = ((const struct generator *)id)->make(&g, spec, n, a);
    free(g.slots);
    return rc == 0 ? 0 : -1;
}
