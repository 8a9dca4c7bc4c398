/* Topology generators: the testbeds and studied networks of the seeds. Wiring is documented
 * in netmodel/README.md; every generator names hosts H0.. and switches S0.. in order. */
#include "nm_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* A place where a host may be attached, in host-number order. */
typedef struct { int sw, port; } slot;

typedef struct gen {
    nm_topology *t;
    const nm_config *cfg;
    slot *slots;
    int nslots, cap;
    char *err;
    size_t errlen;
} gen;

static int add_slot(gen *g, int sw, int port)
{
    if (g->nslots == g->cap) {
        int nc = g->cap ? 2 * g->cap : 64;
        slot *ns = realloc(g->slots, (size_t)nc * sizeof *ns);
        if (!ns) return -1;
        g->slots = ns;
        g->cap = nc;
    }
    g->slots[g->nslots].sw = sw;
    g->slots[g->nslots].port = port;
    g->nslots++;
    return 0;
}

static int sw(gen *g, int nports)
{
    int i = nm_topo_add_switch(g->t, NULL, nports);
    if (i < 0) set_err(g->err, g->errlen, "out of memory");
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
        set_err(g->err, g->errlen, "topology '%s': has room for %d hosts, %d asked", g->t->name, g->nslots, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int h = nm_topo_add_host(g->t, NULL, 0);
        if (h < 0 || nm_topo_add_link(g->t, NM_NODE_HOST, h, 0, NM_NODE_SWITCH, g->slots[i].sw, g->slots[i].port,
                                      0, -1, 0, g->cfg, g->err, g->errlen) < 0) {
            if (h < 0) set_err(g->err, g->errlen, "out of memory");
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

/* Split "name:a:b:c" into name and up to 3 numbers; returns the count of numbers or -1. */
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
        if (n == 3) return -1;
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

int nm_topo_generate(nm_topology *t, const char *spec, const nm_config *cfg, char *err, size_t errlen)
{
    char name[32];
    long a[3] = {0, 0, 0};
    int n = split_spec(spec, name, sizeof name, a);
    static const char *const known[] = {"crossbar", "auto", "triangle18", "system96", "clos64", "array", "ring"};
    int which = -1;
    for (int i = 0; i < (int)(sizeof known / sizeof known[0]); i++)
        if (!strcmp(name, known[i])) which = i;
    if (which < 0) {
        /* "crossbar:x" with a bad argument still names a generator */
        const char *colon = strchr(spec, ':');
        for (int i = 0; colon && i < (int)(sizeof known / sizeof known[0]); i++)
            if (strlen(known[i]) == (size_t)(colon - spec) && !strncmp(spec, known[i], strlen(known[i]))) which = i;
        if (which < 0) return 1;
        n = -1;
    }
    gen g = {t, cfg, NULL, 0, 0, err, errlen};
    int rc = -1;
    switch (which) {
    case 0: /* crossbar:N */
        if (n != 1 || a[0] < 1 || a[0] > 256) {
            set_err(err, errlen, "topology '%s': expected crossbar:N with 1 <= N <= 256", spec);
            break;
        }
        rc = gen_crossbar(&g, (int)a[0], (int)a[0]);
        break;
    case 1: { /* auto:N — the default testbed of seed 000 for N hosts */
        long ports = nm_config_int(cfg, "network.switch_ports");
        if (n != 1 || a[0] < 1) {
            set_err(err, errlen, "topology '%s': expected auto:N with N >= 1 (the number of hosts)", spec);
            break;
        }
        if (a[0] <= ports && ports <= 256) rc = gen_crossbar(&g, (int)ports, (int)a[0]);
        else if (a[0] <= 18) rc = gen_triangle18(&g, (int)a[0]);
        else if (a[0] <= 96) rc = gen_system96(&g, (int)a[0]);
        else set_err(err, errlen, "topology '%s': no default testbed for more than 96 hosts; name a "
                     "generator or a topology file", spec);
        break;
    }
    case 2: /* triangle18[:N] */
        if (n > 1 || (n == 1 && (a[0] < 1 || a[0] > 18)) || n < 0) {
            set_err(err, errlen, "topology '%s': expected triangle18 or triangle18:N with 1 <= N <= 18", spec);
            break;
        }
        rc = gen_triangle18(&g, n == 1 ? (int)a[0] : 18);
        break;
    case 3: /* system96[:N] */
        if (n > 1 || (n == 1 && (a[0] < 1 || a[0] > 96)) || n < 0) {
            set_err(err, errlen, "topology '%s': expected system96 or system96:N with 1 <= N <= 96", spec);
            break;
        }
        rc = gen_system96(&g, n == 1 ? (int)a[0] : 96);
        break;
    case 4: /* clos64[:N] */
        if (n > 1 || (n == 1 && (a[0] < 1 || a[0] > 64)) || n < 0) {
            set_err(err, errlen, "topology '%s': expected clos64 or clos64:N with 1 <= N <= 64", spec);
            break;
        }
        rc = gen_clos64(&g, n == 1 ? (int)a[0] : 64);
        break;
    case 5: /* array:S:K */
        if (n != 2 || a[0] < 1 || a[0] > 4096 || a[1] < 1 || a[1] > (a[0] > 1 ? 14 : 16)) {
            set_err(err, errlen, "topology '%s': expected array:S:K with S >= 1 16-port switches and "
                    "1 <= K <= 14 hosts each (2 ports go to the neighbours)", spec);
            break;
        }
        rc = gen_array(&g, (int)a[0], (int)a[1]);
        break;
    case 6: /* ring:S:K:L */
        if (n != 3 || a[0] < 1 || a[0] > 4096 || a[1] < 1 || a[2] < 1 || a[1] + 2 * a[2] > 16) {
            set_err(err, errlen, "topology '%s': expected ring:S:K:L with S >= 1 16-port switches, K >= 1 "
                    "hosts and L >= 1 links to each neighbour, K + 2L <= 16", spec);
            break;
        }
        rc = gen_ring(&g, (int)a[0], (int)a[1], (int)a[2]);
        break;
    }
    free(g.slots);
    return rc == 0 ? 0 : -1;
}
