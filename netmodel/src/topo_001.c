/* The topology language of seed 001 (Wyckoff & Chen, slide "Myrinet simulator": "Topology file
 * S2: P16 P17 ... S1.9 S3.8 ...", "Routes p0 p14 b6, p0 p40 9990"). The slides give only these
 * fragments; the meaning mpisim gives them (netmodel/README.md, "Seed 001 topology files"):
 *
 *   S<n>: E0 E1 E2 ...   switch S<n>; entry Ei is what its port i is cabled to:
 *                          P<k>      processor (host) k
 *                          S<m>.<q>  port q of switch S<m> (whose own line must say S<n>.i at q)
 *                          -         nothing
 *   p<a> p<b> DIGITS     the route from processor a to processor b: one hexadecimal digit per
 *                          switch crossed, the output port there ("b6" = port 11, then port 6).
 *
 * '#' starts a comment. Processors must be numbered 0..N-1, each cabled once; they become hosts
 * 0..N-1 named P<k>. A switch has max(entries on its line, network.switch_ports) ports. Pairs
 * without a route line get routes computed by network.routing. */
#define _XOPEN_SOURCE 700
#include "nm_internal.h"
#include "cm_grow.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAXTOK 300

/* Next line of text (NUL-terminated in place, comment removed); NULL at the end. */
static char *next_line(char **p, char *end)
{
    if (*p >= end) return NULL;
    char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
    char *le = nl ? nl : end;
    *le = '\0';
    *p = nl ? nl + 1 : end;
    char *h = strchr(s, '#');
    if (h) *h = '\0';
    return s;
}

static int tokenize(char *s, char **tok, int max)
{
    int n = 0;
    while (*s) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        if (n == max) return -1;
        tok[n++] = s;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (*s) *s++ = '\0';
    }
    return n;
}

/* "<c><digits>" with c in (upper, lower): the number, or -1. */
static long num_after(const char *s, char up, char lo)
{
    if (s[0] != up && s[0] != lo) return -1;
    if (!isdigit((unsigned char)s[1])) return -1;
    char *end;
    long v = strtol(s + 1, &end, 10);
    if (*end || v < 0 || v > 1000000) return -1;
    return v;
}

int nm_topo_is_001(const char *text)
{
    const char *p = text;
    for (;;) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (*p == '#') {
            while (*p && *p != '\n') p++;
            continue;
        }
        break;
    }
    if (*p != 'S' || !isdigit((unsigned char)p[1])) return 0;
    p++;
    while (isdigit((unsigned char)*p)) p++;
    return *p == ':';
}

typedef struct { int line, num, nent; char **ent; } swline;

#define PERR(line, ...)                                                  \
    do {                                                                 \
        char m_[300];                                                    \
        snprintf(m_, sizeof m_, __VA_ARGS__);                            \
        nm_set_err(err, errlen, "%s:%d: %s", path, (line), m_);             \
        goto fail;                                                       \
    } while (0)

typedef struct { int line, a, b, n; int ports[64]; } rline;

/* What the file's lines say: the switch lines and the route lines, in their order. */
typedef struct {
    swline *sw;
    int nsw, maxnum;
    size_t capsw;
    rline *routes;
    int nr;
    size_t capr;
} lines001;

/* A switch line "S<n>: entries..." (tok[0] without its colon yet). */
static int read_switch_line(lines001 *L, char **tok, int n, int line, const char *path, char *err, size_t errlen)
{
    size_t l0 = strlen(tok[0]);
    tok[0][l0 - 1] = '\0';
    long num = num_after(tok[0], 'S', 'S');
    if (num < 0) PERR(line, "expected 'S<number>:', got '%s:'", tok[0]);
    if (n - 1 > 256) PERR(line, "expected at most 256 ports, got %d", n - 1);
    for (int i = 0; i < L->nsw; i++)
        if (L->sw[i].num == num) PERR(line, "switch S%ld is described twice (first on line %d)", num, L->sw[i].line);
    if (cm_grow((void **)&L->sw, &L->capsw, (size_t)L->nsw + 1, sizeof *L->sw, 16) < 0) PERR(line, "out of memory");
    swline *w = &L->sw[L->nsw++];
    w->line = line;
    w->num = (int)num;
    w->nent = n - 1;
    w->ent = malloc((size_t)(n > 1 ? n - 1 : 1) * sizeof *w->ent);
    if (!w->ent) { L->nsw--; PERR(line, "out of memory"); }
    for (int i = 1; i < n; i++) {
        w->ent[i - 1] = strdup(tok[i]);
        if (!w->ent[i - 1]) { w->nent = i - 1; PERR(line, "out of memory"); }
    }
    if ((int)num > L->maxnum) L->maxnum = (int)num;
    return 0;
fail:
    return -1;
}

/* A route line "p<a> p<b> PORTDIGITS". */
static int read_route_line(lines001 *L, char **tok, int n, int line, const char *path, char *err, size_t errlen)
{
    if (n != 3) PERR(line, "expected a route 'p<a> p<b> PORTDIGITS', got %d fields", n);
    long a = num_after(tok[0], 'P', 'p'), b = num_after(tok[1], 'P', 'p');
    if (a < 0) PERR(line, "expected a processor 'p<number>', got '%s'", tok[0]);
    if (b < 0) PERR(line, "expected a processor 'p<number>', got '%s'", tok[1]);
    size_t nd = strlen(tok[2]);
    if (nd > 64) PERR(line, "expected at most 64 route digits, got %zu", nd);
    if (cm_grow((void **)&L->routes, &L->capr, (size_t)L->nr + 1, sizeof *L->routes, 16) < 0)
        PERR(line, "out of memory");
    rline *r = &L->routes[L->nr++];
    r->line = line;
    r->a = (int)a;
    r->b = (int)b;
    r->n = (int)nd;
    for (size_t i = 0; i < nd; i++) {
        char c = (char)tolower((unsigned char)tok[2][i]);
        if (c >= '0' && c <= '9') r->ports[i] = c - '0';
        else if (c >= 'a' && c <= 'f') r->ports[i] = 10 + c - 'a';
        else PERR(line, "expected hexadecimal port digits (0-9, a-f), got '%s'", tok[2]);
    }
    return 0;
fail:
    return -1;
}

static int read_lines(lines001 *L, char *text, const char *path, char *err, size_t errlen)
{
    char *p = text, *end = text + strlen(text);
    char *tok[MAXTOK];
    int line = 0;
    char *s;
    while ((s = next_line(&p, end)) != NULL) {
        line++;
        int n = tokenize(s, tok, MAXTOK);
        if (n < 0) PERR(line, "expected at most %d fields on a line", MAXTOK);
        if (n == 0) continue;
        size_t l0 = strlen(tok[0]);
        if (tok[0][0] == 'S' && l0 > 1 && tok[0][l0 - 1] == ':') {
            if (read_switch_line(L, tok, n, line, path, err, errlen) < 0) return -1;
        } else if (tok[0][0] == 'p' || tok[0][0] == 'P') {
            if (read_route_line(L, tok, n, line, path, err, errlen) < 0) return -1;
        } else {
            PERR(line, "expected 'S<n>: ports...' or a route 'p<a> p<b> digits', got '%s'", tok[0]);
        }
    }
    if (L->nsw == 0) PERR(line > 0 ? line : 1, "expected at least one 'S<n>:' line");
    return 0;
fail:
    return -1;
}

/* nm_topo_add_link's message has no file and line: add them. */
static int link_failed(const char *path, char *err, size_t errlen)
{
    char m[400];
    snprintf(m, sizeof m, "%s", err);
    nm_set_err(err, errlen, "%s: %s", path, m);
    return -1;
}

/* Entry e of switch i, "S<m>.<q>": a link to port q of switch S<m>, whose line must name this
 * port back; each link is added once, from the side with the smaller (switch, port). */
static int cable_switch_port(nm_topology *t, const lines001 *L, const int *swidx, int i, int e, const char *path,
                             const nm_config *cfg, char *err, size_t errlen)
{
    const swline *sw = L->sw;
    const char *en = sw[i].ent[e];
    const char *dot = strchr(en, '.');
    long m = -1, q = -1;
    if (en[0] == 'S' && dot) {
        char b[32];
        size_t l = (size_t)(dot - en);
        if (l < sizeof b) {
            memcpy(b, en, l);
            b[l] = '\0';
            m = num_after(b, 'S', 'S');
            char *qe;
            q = strtol(dot + 1, &qe, 10);
            if (!isdigit((unsigned char)dot[1]) || *qe) q = -1;
        }
    }
    if (m < 0 || q < 0) PERR(sw[i].line, "expected P<k>, S<m>.<port> or '-' for port %d, got '%s'", e, en);
    if (m > L->maxnum || swidx[m] < 0) PERR(sw[i].line, "port %d: switch S%ld has no 'S%ld:' line", e, m, m);
    int j = swidx[m];
    if (q >= t->switches[j].nports) PERR(sw[i].line, "port %d: S%ld has no port %ld", e, m, q);
    /* the other side must name this port back */
    char want[48];
    snprintf(want, sizeof want, "S%d.%d", sw[i].num, e);
    if (q >= sw[j].nent || strcmp(sw[j].ent[q], want) != 0)
        PERR(sw[i].line, "port %d says %s, but S%ld's line has '%s' at port %ld (expected %s)", e, en, m,
             q < sw[j].nent ? sw[j].ent[q] : "(nothing)", q, want);
    if (j == i && q == e) PERR(sw[i].line, "port %d is cabled to itself", e);
    if (i < j || (i == j && e < q))
        if (nm_topo_add_link(t, NM_NODE_SWITCH, i, e, NM_NODE_SWITCH, j, (int)q, 0, -1, 0, cfg, err, errlen) < 0)
            return link_failed(path, err, errlen);
    return 0;
fail:
    return -1;
}

/* The switches (in line order, swidx[]: by number), their cables, then the processors as hosts
 * 0..nproc-1 on the switch port each is cabled to. */
static int build_fabric(nm_topology *t, const lines001 *L, int *swidx, long *nproc_out, const char *path,
                        const nm_config *cfg, char *err, size_t errlen)
{
    const swline *sw = L->sw;
    int rc = -1, *host_sw = NULL, *host_port = NULL;
    int defports = cfg ? (int)nm_config_int(cfg, "network.switch_ports") : 8;
    long nproc = 0;
    for (int i = 0; i <= L->maxnum; i++) swidx[i] = -1;
    for (int i = 0; i < L->nsw; i++) {
        char name[32];
        snprintf(name, sizeof name, "S%d", sw[i].num);
        int np = sw[i].nent > defports ? sw[i].nent : defports;
        if (np > 256) np = 256;
        if (nm_topo_add_switch(t, name, np) != i) PERR(sw[i].line, "too many switches or out of memory");
        swidx[sw[i].num] = i;
    }
    /* processors: count and check numbering */
    for (int i = 0; i < L->nsw; i++)
        for (int e = 0; e < sw[i].nent; e++) {
            long k = num_after(sw[i].ent[e], 'P', 'p');
            if (k >= 0 && k + 1 > nproc) nproc = k + 1;
        }
    if (nproc == 0) PERR(sw[0].line, "expected at least one processor 'P<k>'");
    host_sw = malloc((size_t)nproc * sizeof *host_sw);
    host_port = malloc((size_t)nproc * sizeof *host_port);
    if (!host_sw || !host_port) PERR(1, "out of memory");
    for (long k = 0; k < nproc; k++) host_sw[k] = -1;
    for (int i = 0; i < L->nsw; i++)
        for (int e = 0; e < sw[i].nent; e++) {
            const char *en = sw[i].ent[e];
            long k = num_after(en, 'P', 'p');
            if (k >= 0) {
                if (host_sw[k] >= 0)
                    PERR(sw[i].line, "processor P%ld is cabled twice (also to S%d port %d)", k, sw[host_sw[k]].num,
                         host_port[k]);
                host_sw[k] = i;
                host_port[k] = e;
            } else if (strcmp(en, "-") != 0 && cable_switch_port(t, L, swidx, i, e, path, cfg, err, errlen) < 0) {
                goto fail;
            }
        }
    for (long k = 0; k < nproc; k++) {
        if (host_sw[k] < 0) PERR(sw[0].line, "processors are numbered 0..%ld but P%ld is not cabled", nproc - 1, k);
        char name[32];
        snprintf(name, sizeof name, "P%ld", k);
        int h = nm_topo_add_host(t, name, sw[host_sw[k]].line);
        if (h != (int)k) PERR(sw[host_sw[k]].line, "too many hosts or out of memory");
        if (nm_topo_add_link(t, NM_NODE_HOST, h, 0, NM_NODE_SWITCH, host_sw[k], host_port[k], 0, -1, 0, cfg, err,
                             errlen) < 0) {
            link_failed(path, err, errlen);
            goto fail;
        }
    }
    *nproc_out = nproc;
    rc = 0;
fail:
    free(host_sw);
    free(host_port);
    return rc;
}

/* The routes the file gives, each walked from its source host port by port to check it. */
static int set_given_routes(nm_topology *t, const lines001 *L, long nproc, const char *path, char *err, size_t errlen)
{
    if (nm_topo_alloc_routes(t) != 0) PERR(1, "out of memory");
    for (int i = 0; i < L->nr; i++) {
        const rline *r = &L->routes[i];
        if (r->a >= nproc || r->b >= nproc) PERR(r->line, "route names processor %d, but there are %ld", r->a >= nproc ? r->a : r->b, nproc);
        if (r->a == r->b) PERR(r->line, "route from p%d to itself", r->a);
        int ch[66], kind = NM_NODE_HOST, id = r->a, port, link = t->hosts[r->a].link;
        for (int h = 0;; h++) {
            ch[h] = nm_channel_leaving(t, link, kind, id);
            nm_channel_to(t, ch[h], &kind, &id, &port);
            if (kind == NM_NODE_HOST) {
                if (h < r->n) PERR(r->line, "route reaches P%d after %d of its %d ports", id, h, r->n);
                if (id != r->b) PERR(r->line, "route ends at P%d, not p%d", id, r->b);
                break;
            }
            if (h >= r->n) PERR(r->line, "route stops at switch %s: expected another port digit", t->switch_names[id]);
            int pp = r->ports[h];
            if (pp >= t->switches[id].nports || t->switches[id].port_link[pp] < 0)
                PERR(r->line, "route digit %d: port %d of switch %s is not cabled", h + 1, pp, t->switch_names[id]);
            link = t->switches[id].port_link[pp];
        }
        nm_route *rt = nm_route_given(t, r->a, r->b);
        if (!rt) PERR(r->line, "out of memory");
        if (rt->nhops >= 0) PERR(r->line, "route p%d p%d is given twice", r->a, r->b);
        if (nm_route_set(rt, r->n, r->ports, ch) != 0) PERR(r->line, "out of memory");
        t->route_given_count++;
    }
    return 0;
fail:
    return -1;
}

int nm_topo_parse_001(nm_topology *t, char *text, const char *path, const nm_config *cfg, char *err, size_t errlen)
{
    lines001 L = {.maxnum = -1};
    int rc = -1, *swidx = NULL;
    long nproc = 0;
    if (read_lines(&L, text, path, err, errlen) < 0) goto done;
    swidx = malloc((size_t)(L.maxnum + 1) * sizeof *swidx);
    if (!swidx) {
        nm_set_err(err, errlen, "%s:%d: %s", path, 1, "out of memory");
        goto done;
    }
    if (build_fabric(t, &L, swidx, &nproc, path, cfg, err, errlen) < 0) goto done;
    if (set_given_routes(t, &L, nproc, path, err, errlen) < 0) goto done;
    rc = 0;
done:
    for (int i = 0; i < L.nsw; i++) {
        for (int e = 0; e < L.sw[i].nent; e++) free(L.sw[i].ent[e]);
        free(L.sw[i].ent);
    }
    free(L.sw);
    free(L.routes);
    free(swidx);
    return rc;
}
