/* Topology: building, the text file format (netmodel/README.md), loading and queries. */
#define _XOPEN_SOURCE 700
#include "nm_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define NM_MAX_PORTS 256
#define NM_MAX_NODES 65536
#define NM_MAX_ROUTE_HOPS 64
#define NM_MAX_TOPO_BYTES (16u << 20)
#define NM_MAX_TOKENS 256

/* Grow an array holding n elements so that element n fits: capacities are powers of two,
 * so reallocating when n is 0 or a power of two is enough. */
static int grow(void **p, int n, size_t elem)
{
    if (n != 0 && (n & (n - 1)) != 0) return 0;
    size_t cap = n ? 2 * (size_t)n : 1;
    void *q = realloc(*p, cap * elem);
    if (!q) return -1;
    *p = q;
    return 0;
}

/* ---- building ------------------------------------------------------------------------- */

nm_topology *nm_topo_new(const char *name)
{
    nm_topology *t = calloc(1, sizeof *t);
    if (t) {
        snprintf(t->name, sizeof t->name, "%s", name ? name : "");
        t->updown_root = -1;
        t->route_check_ok = -1;
    }
    return t;
}

int nm_topo_add_host(nm_topology *t, const char *name, int line)
{
    if (t->nhosts >= NM_MAX_NODES) return -1;
    if (grow((void **)&t->hosts, t->nhosts, sizeof *t->hosts) ||
        grow((void **)&t->host_names, t->nhosts, sizeof *t->host_names) ||
        grow((void **)&t->host_line, t->nhosts, sizeof *t->host_line))
        return -1;
    char buf[32];
    if (!name) { snprintf(buf, sizeof buf, "H%d", t->nhosts); name = buf; }
    char *n = nm_strdup(name);
    if (!n) return -1;
    int i = t->nhosts++;
    t->hosts[i].link = -1;
    t->hosts[i].port = 0;
    t->host_names[i] = n;
    t->host_line[i] = line;
    return i;
}

int nm_topo_add_switch(nm_topology *t, const char *name, int nports)
{
    if (t->nswitches >= NM_MAX_NODES || nports < 1 || nports > NM_MAX_PORTS) return -1;
    if (grow((void **)&t->switches, t->nswitches, sizeof *t->switches) ||
        grow((void **)&t->switch_names, t->nswitches, sizeof *t->switch_names))
        return -1;
    char buf[32];
    if (!name) { snprintf(buf, sizeof buf, "S%d", t->nswitches); name = buf; }
    char *n = nm_strdup(name);
    int *pl = malloc((size_t)nports * sizeof *pl);
    if (!n || !pl) { free(n); free(pl); return -1; }
    for (int p = 0; p < nports; p++) pl[p] = -1;
    int i = t->nswitches++;
    t->switches[i].nports = nports;
    t->switches[i].port_link = pl;
    t->switch_names[i] = n;
    return i;
}

void nm_link_derive(nm_link *l)
{
    /* integer picoseconds: durations are computed once here, never accumulated in floating point */
    l->char_ps = (nm_time_t)llround(8e12 / l->rate_bps);
    l->prop_ps = (nm_time_t)llround(l->length_m / l->velocity_mps * 1e12);
    if (l->char_ps < 1) l->char_ps = 1;
}

static int *port_slot(nm_topology *t, int kind, int id, int port)
{
    if (kind == NM_NODE_HOST) {
        if (id < 0 || id >= t->nhosts || port != 0) return NULL;
        return &t->hosts[id].link;
    }
    if (id < 0 || id >= t->nswitches || port < 0 || port >= t->switches[id].nports) return NULL;
    return &t->switches[id].port_link[port];
}

static const char *node_name(const nm_topology *t, int kind, int id)
{
    if (kind == NM_NODE_HOST) return t->host_names ? t->host_names[id] : "host";
    return t->switch_names ? t->switch_names[id] : "switch";
}

int nm_topo_add_link(nm_topology *t, int a_kind, int a_id, int a_port, int b_kind, int b_id, int b_port,
                     double rate_bps, double length_m, double velocity_mps, const nm_config *cfg,
                     char *err, size_t errlen)
{
    int *sa = port_slot(t, a_kind, a_id, a_port), *sb = port_slot(t, b_kind, b_id, b_port);
    if (!sa || !sb) { nm_set_err(err, errlen, "no such port"); return -1; }
    if (a_kind == b_kind && a_id == b_id) {
        /* loops would make a channel's direction ambiguous and carry nothing useful */
        nm_set_err(err, errlen, "a link cannot join %s to itself", node_name(t, a_kind, a_id));
        return -1;
    }
    if (*sa >= 0 || *sb >= 0) {
        int busy_kind = *sa >= 0 ? a_kind : b_kind, busy_id = *sa >= 0 ? a_id : b_id;
        int busy_port = *sa >= 0 ? a_port : b_port;
        nm_set_err(err, errlen, "port %s:%d is already connected", node_name(t, busy_kind, busy_id), busy_port);
        return -1;
    }
    /* a NIC's link runs at the rate its NIC streams packets, when a profile says so */
    if (rate_bps <= 0 && cfg && (a_kind == NM_NODE_HOST || b_kind == NM_NODE_HOST) &&
        nm_config_has(cfg, "network.host_link_rate"))
        rate_bps = nm_config_double(cfg, "network.host_link_rate");
    if (rate_bps <= 0) rate_bps = cfg ? nm_config_double(cfg, "network.link_rate") : 1.28e9;
    if (length_m < 0) length_m = cfg ? nm_config_double(cfg, "network.link_length") : 10.0;
    if (velocity_mps <= 0) velocity_mps = cfg ? nm_config_double(cfg, "network.propagation_velocity") : 1.8e8;
    if (!(rate_bps > 0) || !(length_m >= 0) || !(velocity_mps > 0) || !isfinite(rate_bps) ||
        !isfinite(length_m) || !isfinite(velocity_mps) || 8e12 / rate_bps > 9e18 ||
        length_m / velocity_mps * 1e12 > 9e18) {
        nm_set_err(err, errlen, "link rate, length or velocity out of range");
        return -1;
    }
    if (t->nlinks >= 8 * NM_MAX_NODES || grow((void **)&t->links, t->nlinks, sizeof *t->links)) {
        nm_set_err(err, errlen, "out of memory");
        return -1;
    }
    int i = t->nlinks++;
    nm_link *l = &t->links[i];
    l->a_kind = a_kind; l->a_id = a_id; l->a_port = a_port;
    l->b_kind = b_kind; l->b_id = b_id; l->b_port = b_port;
    l->rate_bps = rate_bps;
    l->length_m = length_m;
    l->velocity_mps = velocity_mps;
    nm_link_derive(l);
    *sa = i;
    *sb = i;
    return i;
}

int nm_route_set(nm_route *r, int nhops, const int *out_port, const int *channel)
{
    int *op = malloc((size_t)(nhops > 0 ? nhops : 1) * sizeof *op);
    int *ch = malloc((size_t)(nhops + 1) * sizeof *ch);
    if (!op || !ch) { free(op); free(ch); return -1; }
    if (nhops > 0) memcpy(op, out_port, (size_t)nhops * sizeof *op);
    memcpy(ch, channel, (size_t)(nhops + 1) * sizeof *ch);
    nm_route_clear(r);
    r->nhops = nhops;
    r->out_port = op;
    r->nchannels = nhops + 1;
    r->channel = ch;
    return 0;
}

void nm_route_clear(nm_route *r)
{
    free(r->out_port);
    free(r->channel);
    free(r->itb_host);
    r->out_port = r->channel = r->itb_host = NULL;
    r->nitb = 0;
    r->nhops = -1;
    r->nchannels = 0;
}

void nm_topology_destroy(nm_topology *t)
{
    if (!t) return;
    nm_routes_free(t);
    for (int i = 0; i < t->nswitches; i++) {
        free(t->switches[i].port_link);
        if (t->switch_names) free(t->switch_names[i]);
    }
    for (int i = 0; t->host_names && i < t->nhosts; i++) free(t->host_names[i]);
    free(t->switches);
    free(t->switch_names);
    free(t->hosts);
    free(t->host_names);
    free(t->host_line);
    free(t->links);
    free(t->sw_level);
    free(t->sw_dist);
    free(t->ud_dist);
    free(t);
}

/* ---- the text format -------------------------------------------------------------------- */

typedef struct pending_route {
    int line, src, dst, nports;
    int *ports;
} pending_route;

typedef struct parse_ctx {
    const char *path;
    nm_topology *t;
    const nm_config *cfg;
    char *err;
    size_t errlen;
    pending_route *routes;
    int nroutes;
    /* the declared names, hashed (a scan per endpoint made a 10^4-host file quadratic to read):
     * open addressing, 0 empty, host id + 1, or -(switch id + 1) */
    int *names;
    size_t names_cap, names_n;
} parse_ctx;

static size_t name_hash(const char *s)
{
    size_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static const char *slot_name(const nm_topology *t, int v)
{
    return v > 0 ? t->host_names[v - 1] : t->switch_names[-v - 1];
}

static int find_node(const parse_ctx *c, const char *name, int *kind, int *id)
{
    if (!c->names_cap) return -1;
    for (size_t i = name_hash(name) & (c->names_cap - 1);; i = (i + 1) & (c->names_cap - 1)) {
        int v = c->names[i];
        if (!v) return -1;
        if (!strcmp(slot_name(c->t, v), name)) {
            *kind = v > 0 ? NM_NODE_HOST : NM_NODE_SWITCH;
            *id = v > 0 ? v - 1 : -v - 1;
            return 0;
        }
    }
}

/* Index a node just declared (its name is new). 0, or -1 out of memory. */
static int index_node(parse_ctx *c, int kind, int id)
{
    if (2 * (c->names_n + 1) > c->names_cap) {
        size_t cap = c->names_cap ? 2 * c->names_cap : 1024;
        int *q = calloc(cap, sizeof *q);
        if (!q) return -1;
        for (size_t i = 0; i < c->names_cap; i++) {
            int v = c->names[i];
            if (!v) continue;
            size_t j = name_hash(slot_name(c->t, v)) & (cap - 1);
            while (q[j]) j = (j + 1) & (cap - 1);
            q[j] = v;
        }
        free(c->names);
        c->names = q;
        c->names_cap = cap;
    }
    int v = kind == NM_NODE_HOST ? id + 1 : -id - 1;
    size_t j = name_hash(slot_name(c->t, v)) & (c->names_cap - 1);
    while (c->names[j]) j = (j + 1) & (c->names_cap - 1);
    c->names[j] = v;
    c->names_n++;
    return 0;
}

static int valid_name(const char *s)
{
    if (!*s || strlen(s) > 64) return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

/* Whole decimal integer in [lo, hi]. */
static int parse_int(const char *s, long lo, long hi, long *out)
{
    if (!*s) return -1;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return -1;
    if (strlen(s) > 9) return -1;
    long v = strtol(s, NULL, 10);
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

#define PERR(line, ...)                                                                      \
    do {                                                                                     \
        char m_[400];                                                                        \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                \
        nm_set_err(c->err, c->errlen, "%s:%d: %s", c->path, (line), m_);                         \
        return -1;                                                                           \
    } while (0)

/* "NAME:PORT" of a declared node. */
static int parse_endpoint(parse_ctx *c, int line, const char *tok, int *kind, int *id, int *port)
{
    const char *colon = strrchr(tok, ':');
    if (!colon || colon == tok) PERR(line, "expected NODE:PORT, got '%s'", tok);
    char name[80];
    if ((size_t)(colon - tok) >= sizeof name) PERR(line, "expected NODE:PORT, got '%s'", tok);
    memcpy(name, tok, (size_t)(colon - tok));
    name[colon - tok] = '\0';
    if (find_node(c, name, kind, id) != 0)
        PERR(line, "expected a declared host or switch, got '%s'", name);
    long p;
    long hi = *kind == NM_NODE_HOST ? 0 : c->t->switches[*id].nports - 1;
    if (parse_int(colon + 1, 0, hi, &p) != 0)
        PERR(line, "expected a port of %s (0..%ld), got '%s'", name, hi, colon + 1);
    *port = (int)p;
    return 0;
}

static int parse_line(parse_ctx *c, int line, char **tok, int ntok)
{
    nm_topology *t = c->t;
    const char *kw = tok[0];
    int k, id;
    if (!strcmp(kw, "host")) {
        if (ntok < 2) PERR(line, "expected a host name, got end of line");
        if (!valid_name(tok[1])) PERR(line, "expected a name of letters, digits, '_', '-', '.', got '%s'", tok[1]);
        if (ntok > 2) PERR(line, "expected end of line, got '%s'", tok[2]);
        if (find_node(c, tok[1], &k, &id) == 0) PERR(line, "expected a new name, got '%s' (already declared)", tok[1]);
        int h = nm_topo_add_host(t, tok[1], line);
        if (h < 0 || index_node(c, NM_NODE_HOST, h) != 0) PERR(line, "too many hosts or out of memory");
        return 0;
    }
    if (!strcmp(kw, "switch")) {
        if (ntok < 2) PERR(line, "expected a switch name, got end of line");
        if (!valid_name(tok[1])) PERR(line, "expected a name of letters, digits, '_', '-', '.', got '%s'", tok[1]);
        if (find_node(c, tok[1], &k, &id) == 0) PERR(line, "expected a new name, got '%s' (already declared)", tok[1]);
        long ports = c->cfg ? (long)nm_config_int(c->cfg, "network.switch_ports") : 8;
        if (ntok >= 3) {
            if (strcmp(tok[2], "ports") != 0) PERR(line, "expected 'ports', got '%s'", tok[2]);
            if (ntok < 4) PERR(line, "expected a port count, got end of line");
            if (parse_int(tok[3], 1, NM_MAX_PORTS, &ports) != 0)
                PERR(line, "expected a port count 1..%d, got '%s'", NM_MAX_PORTS, tok[3]);
            if (ntok > 4) PERR(line, "expected end of line, got '%s'", tok[4]);
        }
        if (ports < 1 || ports > NM_MAX_PORTS) PERR(line, "expected network.switch_ports 1..%d", NM_MAX_PORTS);
        int sw = nm_topo_add_switch(t, tok[1], (int)ports);
        if (sw < 0 || index_node(c, NM_NODE_SWITCH, sw) != 0) PERR(line, "too many switches or out of memory");
        return 0;
    }
    if (!strcmp(kw, "link")) {
        if (ntok < 3) PERR(line, "expected 'link NODE:PORT NODE:PORT', got %s", ntok < 2 ? "end of line" : "one endpoint");
        int ak, ai, ap, bk, bi, bp;
        if (parse_endpoint(c, line, tok[1], &ak, &ai, &ap) || parse_endpoint(c, line, tok[2], &bk, &bi, &bp))
            return -1;
        double rate = 0, len = -1, vel = 0;
        for (int i = 3; i < ntok; i++) {
            const char *eq = strchr(tok[i], '=');
            const char *unit = NULL;
            double *dst = NULL;
            if (eq && !strncmp(tok[i], "rate=", 5)) { unit = "b/s"; dst = &rate; }
            else if (eq && !strncmp(tok[i], "length=", 7)) { unit = "m"; dst = &len; }
            else if (eq && !strncmp(tok[i], "velocity=", 9)) { unit = "m/s"; dst = &vel; }
            else PERR(line, "expected rate=, length= or velocity=, got '%s'", tok[i]);
            double v;
            if (nm_parse_quantity(unit, eq + 1, &v) != 0 || !(v >= 0) || (dst != &len && !(v > 0)))
                PERR(line, "expected %s in %s, got '%s'", nm_unit_noun(unit), unit, eq + 1);
            *dst = v;
        }
        char m[200];
        if (nm_topo_add_link(t, ak, ai, ap, bk, bi, bp, rate, len, vel, c->cfg, m, sizeof m) < 0)
            PERR(line, "%s", m);
        return 0;
    }
    if (!strcmp(kw, "route")) {
        if (ntok < 3) PERR(line, "expected 'route SRC DST PORT...', got end of line");
        int sk, si, dk, di;
        if (find_node(c, tok[1], &sk, &si) != 0 || sk != NM_NODE_HOST)
            PERR(line, "expected a declared host, got '%s'", tok[1]);
        if (find_node(c, tok[2], &dk, &di) != 0 || dk != NM_NODE_HOST)
            PERR(line, "expected a declared host, got '%s'", tok[2]);
        if (si == di) PERR(line, "expected two different hosts, got '%s' twice", tok[1]);
        if (ntok - 3 > NM_MAX_ROUTE_HOPS) PERR(line, "expected at most %d route ports", NM_MAX_ROUTE_HOPS);
        if (grow((void **)&c->routes, c->nroutes, sizeof *c->routes)) PERR(line, "out of memory");
        pending_route *r = &c->routes[c->nroutes];
        r->line = line;
        r->src = si;
        r->dst = di;
        r->nports = ntok - 3;
        r->ports = malloc((size_t)(r->nports > 0 ? r->nports : 1) * sizeof *r->ports);
        if (!r->ports) PERR(line, "out of memory");
        c->nroutes++;
        for (int i = 0; i < r->nports; i++) {
            long p;
            if (parse_int(tok[3 + i], 0, NM_MAX_PORTS - 1, &p) != 0)
                PERR(line, "expected an output port number, got '%s'", tok[3 + i]);
            r->ports[i] = (int)p;
        }
        return 0;
    }
    PERR(line, "expected 'host', 'switch', 'link' or 'route', got '%s'", kw);
}

/* Follow an explicit route from its source; it must end at its destination. */
static int apply_route(parse_ctx *c, const pending_route *r)
{
    nm_topology *t = c->t;
    int line = r->line;
    int ch[NM_MAX_ROUTE_HOPS + 1];
    int link = t->hosts[r->src].link;
    if (link < 0) PERR(line, "expected a connected source host, got '%s'", t->host_names[r->src]);
    int kind = NM_NODE_HOST, id = r->src, port;
    for (int i = 0;; i++) {
        ch[i] = nm_channel_leaving(t, link, kind, id);
        nm_channel_to(t, ch[i], &kind, &id, &port);
        if (kind == NM_NODE_HOST) {
            if (i < r->nports)
                PERR(line, "expected the route to use %d ports, but it reaches host '%s' after %d", r->nports,
                     t->host_names[id], i);
            if (id != r->dst)
                PERR(line, "expected the route to end at host '%s', got host '%s'", t->host_names[r->dst],
                     t->host_names[id]);
            break;
        }
        if (i >= r->nports)
            PERR(line, "expected another route port, the route stops at switch '%s'", t->switch_names[id]);
        int p = r->ports[i];
        if (p >= t->switches[id].nports || t->switches[id].port_link[p] < 0)
            PERR(line, "expected a connected port of switch '%s', got %d", t->switch_names[id], p);
        link = t->switches[id].port_link[p];
    }
    nm_route *rt = nm_route_given(t, r->src, r->dst);
    if (!rt) PERR(line, "out of memory");
    if (rt->nhops >= 0) PERR(line, "expected one route per host pair, '%s' to '%s' is given twice",
                             t->host_names[r->src], t->host_names[r->dst]);
    if (nm_route_set(rt, r->nports, r->ports, ch) != 0) PERR(line, "out of memory");
    t->route_given_count++;
    return 0;
}

static int check_routes(nm_topology *t, const char *path, char *err, size_t errlen)
{
    int s, d, r = nm_routes_first_unreachable(t, &s, &d);
    if (r < 0) {
        nm_set_err(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (r == 0) return 0;
    if (t->host_line && t->host_line[s] > 0)
        nm_set_err(err, errlen, "%s:%d: host '%s' cannot reach host '%s'", path, t->host_line[s], t->host_names[s],
                   t->host_names[d]);
    else
        nm_set_err(err, errlen, "%s: host '%s' cannot reach host '%s'", path, t->host_names[s], t->host_names[d]);
    return -1;
}

/* The deadlock checker on every routing built (routes.c, nm_routes_check). For updown and itb a
 * failure is an error; shortest routes on networks with cycles may deadlock, which is recorded in
 * t->route_check_ok / route_check_msg for the caller to report. */
static int run_checker(nm_topology *t, const nm_config *cfg, const char *what, char *err, size_t errlen)
{
    char m[320];
    if (t->routing == NM_ROUTING_SHORTEST && cfg && !nm_engine_blocks(nm_config_string(cfg, "network.engine"))) {
        /* on an engine that queues whole packets shortest routes cannot deadlock: the verdict is
         * only reported, so a check costing more than ~10^9 steps (destination switches x switch
         * graph: 65536 switches of one host each take minutes) waits until it is asked for */
        double ndest = 0, edges = 0;
        for (int x = 0; x < t->nswitches; x++)
            for (int p = 0; p < t->switches[x].nports; p++) {
                int l = t->switches[x].port_link[p];
                if (l < 0) continue;
                int host = t->links[l].a_kind == NM_NODE_HOST || t->links[l].b_kind == NM_NODE_HOST;
                edges += !host;
                if (host) { ndest++; break; }
            }
        if (ndest * (t->nswitches + edges) > 1e9) {
            t->route_check_ok = -2;
            snprintf(t->route_check_msg, sizeof t->route_check_msg, "not checked yet (engine '%s' queues whole "
                     "packets: its routes cannot deadlock)", nm_config_string(cfg, "network.engine"));
            return 0;
        }
    }
    if (nm_routes_check(t, m, sizeof m) == 0 || t->routing == NM_ROUTING_SHORTEST) return 0;
    nm_set_err(err, errlen, "%s: routing '%s' failed the deadlock checker: %s", what,
            nm_routing_name(t->routing), m);
    return -1;
}

/* network.routing = auto: shortest routes unless they can deadlock on the chosen engine (a
 * wormhole engine and a channel-dependency cycle), then up*-down* (deadlock-free by
 * construction). Routes given in a file are kept as given, so such files are left alone. */
static int auto_routing(nm_topology *t, const nm_config *cfg, const char *what, char *err, size_t errlen)
{
    if (!cfg || strcmp(nm_config_string(cfg, "network.routing"), "auto") != 0) return 0;
    if (t->route_check_ok != 0 || t->route_given_count > 0) return 0;
    if (!nm_engine_blocks(nm_config_string(cfg, "network.engine"))) return 0;
    char m[400];
    if (nm_routes_compute_as(t, cfg, "updown", m, sizeof m) != 0) {
        nm_set_err(err, errlen, "%s: %s", what, m);
        return -1;
    }
    if (check_routes(t, what, err, errlen) != 0) return -1;
    return run_checker(t, cfg, what, err, errlen);
}

static nm_topology *parse_file(const char *path, const nm_config *cfg, nm_progress_fn progress, void *user, char *err,
                               size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        nm_set_err(err, errlen, "topology '%s': not a generator name, and cannot open it as a file: %s", path,
                strerror(errno));
        return NULL;
    }
    size_t len = 0;
    char *buf = nm_read_all(f, NM_MAX_TOPO_BYTES, &len);
    fclose(f);
    if (!buf) { nm_set_err(err, errlen, "out of memory"); return NULL; }
    if (len > NM_MAX_TOPO_BYTES) {
        free(buf);
        nm_set_err(err, errlen, "%s:1: file larger than %u bytes", path, NM_MAX_TOPO_BYTES);
        return NULL;
    }
    buf[len] = '\0';
    parse_ctx ctx = {path, nm_topo_new(path), cfg, err, errlen, NULL, 0, NULL, 0, 0};
    parse_ctx *c = &ctx;
    int ok = ctx.t != NULL;
    if (!ok) nm_set_err(err, errlen, "out of memory");
    else { ctx.t->progress = progress; ctx.t->progress_user = user; }
    int line = 0;
    char *p = buf, *end = buf + len;
    int fmt001 = ok ? nm_topo_is_001(buf) : 0;
    if (fmt001) {
        /* the topology language of seed 001 (topo_001.c): builds nodes, links and its routes */
        ok = nm_topo_parse_001(ctx.t, buf, path, cfg, err, errlen) == 0;
        p = end;
    }
    while (ok && p < end) {
        line++;
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        if (memchr(p, '\0', (size_t)(le - p))) {
            nm_set_err(err, errlen, "%s:%d: expected text, got a NUL byte", path, line);
            ok = 0;
            break;
        }
        *le = '\0';
        char *hash = strchr(p, '#');
        if (hash) *hash = '\0';
        char *tok[NM_MAX_TOKENS];
        int ntok = 0;
        char *s = p;
        while (*s) {
            while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v') s++;
            if (!*s) break;
            if (ntok == NM_MAX_TOKENS) {
                nm_set_err(err, errlen, "%s:%d: expected at most %d fields on a line", path, line, NM_MAX_TOKENS);
                ok = 0;
                break;
            }
            tok[ntok++] = s;
            while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\f' && *s != '\v') s++;
            if (*s) *s++ = '\0';
        }
        if (ok && ntok > 0 && parse_line(c, line, tok, ntok) != 0) ok = 0;
        p = nl ? nl + 1 : end;
    }
    if (ok && !fmt001 && ctx.t->nhosts == 0) {
        nm_set_err(err, errlen, "%s:%d: expected at least one 'host' line, got none", path, line > 0 ? line : 1);
        ok = 0;
    }
    for (int i = 0; ok && !fmt001 && i < ctx.t->nhosts; i++) {
        if (ctx.t->hosts[i].link < 0) {
            nm_set_err(err, errlen, "%s:%d: expected a 'link' for host '%s', got none", path, ctx.t->host_line[i],
                    ctx.t->host_names[i]);
            ok = 0;
        }
    }
    if (ok && !fmt001 && nm_topo_alloc_routes(ctx.t) != 0) { nm_set_err(err, errlen, "out of memory"); ok = 0; }
    for (int i = 0; ok && i < ctx.nroutes; i++)
        if (apply_route(c, &ctx.routes[i]) != 0) ok = 0;
    if (ok) {
        char m[400];
        if (nm_routes_compute(ctx.t, cfg, m, sizeof m) != 0) {
            nm_set_err(err, errlen, "%s:1: %s", path, m);
            ok = 0;
        }
    }
    if (ok && check_routes(ctx.t, path, err, errlen) != 0) ok = 0;
    if (ok && run_checker(ctx.t, cfg, path, err, errlen) != 0) ok = 0;
    if (ok && auto_routing(ctx.t, cfg, path, err, errlen) != 0) ok = 0;
    for (int i = 0; i < ctx.nroutes; i++) free(ctx.routes[i].ports);
    free(ctx.routes);
    free(ctx.names);
    free(buf);
    if (!ok) {
        nm_topology_destroy(ctx.t);
        return NULL;
    }
    ctx.t->progress = NULL;
    ctx.t->progress_user = NULL;
    return ctx.t;
}

/* ---- public ----------------------------------------------------------------------------- */

nm_topology *nm_topology_load(const char *spec, const nm_config *cfg, char *err, size_t errlen)
{
    return nm_topology_load_progress(spec, cfg, NULL, NULL, err, errlen);
}

nm_topology *nm_topology_load_progress(const char *spec, const nm_config *cfg, nm_progress_fn progress, void *user,
                                       char *err, size_t errlen)
{
    if (!spec || !*spec) {
        nm_set_err(err, errlen, "topology: no generator or file named");
        return NULL;
    }
    nm_config *own = NULL;
    if (!cfg) {
        /* defaults stand in for a missing configuration */
        own = nm_config_create();
        if (!own) { nm_set_err(err, errlen, "out of memory"); return NULL; }
        cfg = own;
    }
    nm_topology *t = nm_topo_new(spec);
    if (!t) {
        nm_config_destroy(own);
        nm_set_err(err, errlen, "out of memory");
        return NULL;
    }
    if (!progress) progress = nm_config_progress(cfg, &user);
    t->progress = progress;
    t->progress_user = user;
    int g = nm_topo_generate(t, spec, cfg, err, errlen);
    if (g == 1) {
        nm_topology_destroy(t);
        t = parse_file(spec, cfg, progress, user, err, errlen);
    } else if (g == 0) {
        char m[400];
        if (nm_topo_alloc_routes(t) != 0) {
            nm_set_err(err, errlen, "out of memory");
            g = -1;
        } else if (nm_routes_compute(t, cfg, m, sizeof m) != 0) {
            nm_set_err(err, errlen, "topology '%s': %s", spec, m);
            g = -1;
        } else if (check_routes(t, spec, err, errlen) != 0) {
            g = -1;
        } else if (run_checker(t, cfg, spec, err, errlen) != 0) {
            g = -1;
        } else if (auto_routing(t, cfg, spec, err, errlen) != 0) {
            g = -1;
        }
        if (g != 0) {
            nm_topology_destroy(t);
            t = NULL;
        } else {
            t->progress = NULL;
            t->progress_user = NULL;
        }
    } else {
        nm_topology_destroy(t);
        t = NULL;
    }
    if (t && nm_config_lookup_error(cfg)) {   /* a typo in netmodel's code, never a silent 0 */
        nm_set_err(err, errlen, "topology '%s': %s", spec, nm_config_lookup_error(cfg));
        nm_topology_destroy(t);
        t = NULL;
    }
    nm_config_destroy(own);
    return t;
}

int nm_topology_hosts(const nm_topology *t) { return t ? t->nhosts : 0; }
int nm_topology_switches(const nm_topology *t) { return t ? t->nswitches : 0; }
int nm_topology_links(const nm_topology *t) { return t ? t->nlinks : 0; }
const char *nm_topology_name(const nm_topology *t) { return t ? t->name : ""; }

int nm_topology_route_hops(const nm_topology *t, int src, int dst)
{
    if (!t || !t->rt || src < 0 || dst < 0 || src >= t->nhosts || dst >= t->nhosts) return -1;
    return nm_route_get(t, src, dst)->nhops;
}
