/* Source routes. `shortest`: BFS over the switch graph toward the destination's switch; at
 * each switch the output port is one that lies on a shortest path. Ties: network.route_ties
 * = lowest (lowest port number, hence lowest neighbour for single links) or spread (candidate
 * (src+dst) mod count, so parallel links and Clos spines share the load). Deterministic.
 * up*down* and ITB routing (seed 002) belong here later, behind nm_routes_compute. */
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

int nm_routes_compute(nm_topology *t, const nm_config *cfg, char *err, size_t errlen)
{
    const char *routing = cfg ? nm_config_string(cfg, "network.routing") : "shortest";
    if (strcmp(routing, "shortest") != 0) {
        set_err(err, errlen, "network.routing '%s' is not implemented yet (only 'shortest')", routing);
        return -1;
    }
    const char *ties = cfg ? nm_config_string(cfg, "network.route_ties") : "lowest";
    int spread = !strcmp(ties, "spread");
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
        set_err(err, errlen, "out of memory");
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
                set_err(err, errlen, "out of memory");
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
