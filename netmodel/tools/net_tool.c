/* `mpisim net`: network-only runs with synthetic traffic (seed 000 sec 3.1, seed 002 sec 5,
 * seed 003 sec 5.6). Each host has one pending generation event (lazy), offered load is a
 * bit rate per host, packets of a fixed payload; the tool reports accepted throughput, packet
 * latency (inject to delivery), drops and link utilisation over a measurement window. */
#define _POSIX_C_SOURCE 200809L
#include "net_tool.h"

#include "netmodel.h"
#include "nm_internal.h"
#include "nm_cmdline.h"
#include "cm_grow.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TR_UNIFORM, TR_HOTSPOT, TR_LOCAL, TR_PERM };

typedef struct {
    int nhosts;
    const nm_topology *topo;
    int *outstanding;
    nm_time_t w0, w1;            /* measurement window */
    uint64_t win_bytes, win_pkts;
    nm_time_t *lat;
    size_t nlat, caplat;
    uint64_t dropped, dropped_win;
    int oom;
} run_state;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double urand(uint64_t *s) { return ((splitmix(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

static void on_deliver(void *u, const nm_delivery *d)
{
    run_state *r = u;
    r->outstanding[d->src_host]--;
    if (d->deliver_time >= r->w0 && d->deliver_time < r->w1) {
        r->win_bytes += d->payload_bytes;
        r->win_pkts++;
    }
    if (d->inject_time >= r->w0 && d->inject_time < r->w1) {
        if (cm_grow((void **)&r->lat, &r->caplat, r->nlat + 1, sizeof *r->lat, 4096) < 0) {
            r->oom = 1;
            return;
        }
        r->lat[r->nlat++] = d->deliver_time - d->inject_time;
    }
}
static void on_drop(void *u, const nm_delivery *d)
{
    run_state *r = u;
    r->outstanding[d->src_host]--;
    r->dropped++;
    if (d->inject_time >= r->w0 && d->inject_time < r->w1) r->dropped_win++;
}

static int cmp_time(const void *a, const void *b)
{
    nm_time_t x = *(const nm_time_t *)a, y = *(const nm_time_t *)b;
    return (x > y) - (x < y);
}

static int ilog2_exact(int n)
{
    int b = 0;
    while ((1 << b) < n) b++;
    return (1 << b) == n ? b : -1;
}
static int bit(int x, int i) { return (x >> i) & 1; }

/* Permutations (seed 003 sec 5.6.2; seed 002 sec 5.2 for bit-reversal) on n-bit host numbers;
 * single-stage variants use the highest stage. */
static int p_bit_reversal(int s, int nb, int n)
{
    (void)n;
    int d = 0;
    for (int i = 0; i < nb; i++) d |= bit(s, i) << (nb - 1 - i);
    return d;
}
static int p_complement(int s, int nb, int n) { (void)n; return (~s) & ((1 << nb) - 1); }
static int p_butterfly(int s, int nb, int n)   /* swap the highest and the lowest bit */
{
    (void)n;
    return (s & ~(1 | (1 << (nb - 1)))) | bit(s, 0) << (nb - 1) | bit(s, nb - 1);
}
static int p_transpose(int s, int nb, int n)   /* swap the two halves of the address */
{
    (void)n;
    int h = nb / 2;
    return ((s & ((1 << h) - 1)) << (nb - h)) | (s >> h);
}
static int p_shuffle(int s, int nb, int n) { (void)n; return ((s << 1) | bit(s, nb - 1)) & ((1 << nb) - 1); }
static int p_baseline(int s, int nb, int n) { (void)n; return (s >> 1) | (bit(s, 0) << (nb - 1)); }
static int p_cube(int s, int nb, int n) { (void)n; return s ^ (1 << (nb - 1)); }
static int p_neighbor(int s, int nb, int n)
{
    (void)nb;
    int d = s ^ 1;
    return d >= n ? s : d;
}

/* The traffic pattern registry (--traffic). */
static const struct pattern {
    cm_named id;   /* first member: the registry hands out &patterns[i].id */
    int kind;
    int (*perm)(int s, int nb, int nhosts);
} patterns[] = {
    {{"uniform", "uniform", "every other host with equal probability"}, TR_UNIFORM, NULL},
    {{"hotspot", "hotspot:F", "a fraction F (or F %) of the packets to one host chosen at random (seed 002 sec 5.2)"},
     TR_HOTSPOT, NULL},
    {{"local", "local:L", "hosts at most L switches away, along up*/down* paths for updown and itb (seed 002 sec 5.2)"},
     TR_LOCAL, NULL},
    {{"bit-reversal", "bit-reversal", "destination = the source's bits reversed (seed 002 sec 5.2)"}, TR_PERM,
     p_bit_reversal},
    {{"butterfly", "butterfly", "swap the highest and the lowest bit (seed 003 sec 5.6.2)"}, TR_PERM, p_butterfly},
    {{"complement", "complement", "every bit complemented (seed 003 sec 5.6.2)"}, TR_PERM, p_complement},
    {{"matrix-transpose", "matrix-transpose", "swap the two halves of the address (seed 003 sec 5.6.2)"}, TR_PERM,
     p_transpose},
    {{"transpose", "transpose", "same as matrix-transpose"}, TR_PERM, p_transpose},
    {{"perfect-shuffle", "perfect-shuffle", "rotate the address left by one (seed 003 sec 5.6.2)"}, TR_PERM,
     p_shuffle},
    {{"shuffle", "shuffle", "same as perfect-shuffle"}, TR_PERM, p_shuffle},
    {{"baseline", "baseline", "rotate the address right by one (seed 003 sec 5.6.2)"}, TR_PERM, p_baseline},
    {{"cube", "cube", "complement the highest bit (seed 003 sec 5.6.2)"}, TR_PERM, p_cube},
    {{"neighbor", "neighbor", "complement the lowest bit"}, TR_PERM, p_neighbor},
};

static const cm_named *pattern_at(size_t i)
{
    return i < sizeof patterns / sizeof patterns[0] ? &patterns[i].id : NULL;
}

static int parse_time(const char *text, nm_time_t *out)
{
    double v;
    if (nm_parse_quantity("ps", text, &v) != 0 || !(v >= 0) || v > 9e18) return -1;
    *out = (nm_time_t)llround(v);
    return 0;
}

enum { O_PROFILE = 256, O_TOPOLOGY, O_ROUTING, O_SET, O_TRAFFIC, O_INTERARRIVAL, O_LOAD, O_PAYLOAD, O_SEED,
       O_MAXOUT, O_WARMUP, O_MEASURE, O_JSON };

static const cm_opt net_opts[] = {
    NM_OPT_PROFILE(O_PROFILE),
    {"topology", O_TOPOLOGY, "SPEC", "generator or topology file (default: the profile's network.topology)"},
    NM_OPT_ROUTING(O_ROUTING),
    NM_OPT_SET(O_SET),
    {"traffic", O_TRAFFIC, "PATTERN", "destination pattern (below; default uniform)"},
    {"interarrival", O_INTERARRIVAL, "uniform|exponential", "gaps between a host's packets (default uniform)"},
    {"load", O_LOAD, "RATE", "offered load per host, a bit rate (default 160 Mb/s)"},
    {"payload", O_PAYLOAD, "BYTES", "payload of every packet (default 64)"},
    {"seed", O_SEED, "S", "seed of the traffic (default: network.seed)"},
    {"max-outstanding", O_MAXOUT, "N", "packets a host may have in the network (default 8)"},
    {"warmup", O_WARMUP, "TIME", "time before the measurement window (default 1 ms)"},
    {"measure", O_MEASURE, "TIME", "length of the measurement window (default 10 ms)"},
    {"json", O_JSON, NULL, "write the results as JSON"},
    CM_OPT_HELP,
    CM_OPT_END,
};

static void usage(FILE *f, const char *prog)
{
    fprintf(f, "usage: %s [--profile P] [--topology T] [--traffic PATTERN] [options]\n"
               "Network-only runs with synthetic traffic: accepted throughput, packet latency, drops and\n"
               "link utilisation over a measurement window.\n", prog);
    cm_cmdline_print_options(net_opts, f);
    fputs("Routings (every routing is checked for deadlock freedom when it is built):\n", f);
    cm_registry_print(nm_routing_at, f, "  ");
    fputs("Traffic patterns (permutations need a power-of-two number of hosts):\n", f);
    cm_registry_print(pattern_at, f, "  ");
    fputs("Topology generators (or a topology file, format in netmodel/README.md):\n", f);
    cm_registry_print(nm_topology_generator_at, f, "  ");
    fputs("Times take units (e.g. 2ms, 500us); bare numbers are picoseconds. Profiles are looked up in\n"
          "$MPISIM_PROFILE_PATH, then ../share/mpisim/configs beside the executable.\n", f);
}

/* One `mpisim net` run: its options, the network, the traffic and what was measured. */
typedef struct {
    const char *prog, *profile, *topo_spec, *traffic, *inter, *routing;
    double load;
    long long payload, max_out, seed;
    nm_time_t warmup, measure;
    int json, nsets;
    const char **sets;
    nm_config *cfg;
    nm_topology *topo;
    nm_network *net;
    nm_routing_info ri;
    int n;
    /* the traffic pattern and the generators */
    int kind, hotspot, local_l;
    double hot_f;
    uint64_t rng;
    int *perm, *local_cnt, *local;
    nm_time_t *next;
    double *phase_k;
    /* what was measured */
    run_state rs;
    nm_time_t *busy0, *busy1;
    size_t nch;
    uint64_t refused, injected_win;
    int engine_err;
    double wall;
} net_run;

/* The options into r; -1 to go on, else the exit code (0 after --help). */
static int parse_options(net_run *r, int argc, char **argv, const char *progname, FILE *out)
{
    cm_cmdline cl;
    cm_cmdline_init(&cl, progname, net_opts, argc, argv, 0);
    const char *v;
    int rc;
    for (int k; (k = cm_cmdline_next(&cl, &v)) != -1;) {
        double q;
        long l;
        switch (k) {
        case 'h': usage(out, progname); return 0;
        case O_JSON: r->json = 1; break;
        case O_PROFILE: r->profile = v; break;
        case O_TOPOLOGY: r->topo_spec = v; break;
        case O_ROUTING:
            if ((rc = cm_cmdline_choice(&cl, k, nm_routing_at, v)) != 0) return rc;
            r->routing = v;
            break;
        case O_SET: r->sets[r->nsets++] = v; break;
        case O_TRAFFIC: r->traffic = v; break;
        case O_INTERARRIVAL:
            if (strcmp(v, "uniform") && strcmp(v, "exponential"))
                return cm_cmdline_bad(&cl, k, v, "expected uniform or exponential");
            r->inter = v;
            break;
        case O_LOAD:
            if (nm_parse_quantity("b/s", v, &r->load) != 0 || !(r->load > 0))
                return cm_cmdline_bad(&cl, k, v, "expected a positive bit rate (e.g. 160Mb/s)");
            break;
        case O_PAYLOAD:
            if (nm_parse_quantity("B", v, &q) != 0 || !(q >= 0) || q > 1e9)
                return cm_cmdline_bad(&cl, k, v, "expected a byte count");
            r->payload = llround(q);
            break;
        case O_SEED:
            if ((rc = cm_cmdline_long(&cl, k, v, 0, LONG_MAX, &l)) != 0) return rc;
            r->seed = l;
            break;
        case O_MAXOUT:
            if ((rc = cm_cmdline_long(&cl, k, v, 1, 1000000, &l)) != 0) return rc;
            r->max_out = l;
            break;
        case O_WARMUP:
        case O_MEASURE: {
            nm_time_t t;
            if (parse_time(v, &t) != 0) return cm_cmdline_bad(&cl, k, v, "expected a time (e.g. 2ms)");
            if (k == O_WARMUP) r->warmup = t;
            else r->measure = t;
            break;
        }
        default: return 2;
        }
    }
    if (cm_cmdline_operands(&cl, 0, 0, "") < 0) return 2;
    return -1;
}

/* The configuration (profile, --set, --routing), the topology and the network; 0, or the exit
 * code with the message said. */
static int load_network(net_run *r, FILE *errout)
{
    const char *prog = r->prog;
    char err[512] = "";
    r->cfg = nm_config_create();
    /* a full mpisim profile also describes the MPI layer and the hosts: not this tool's part */
    if (r->cfg) nm_config_skip_sections(r->cfg, "mpi|host|shim");
    if (!r->cfg || nm_myrinet_register_keys(r->cfg, err, sizeof err) != 0) {
        fprintf(errout, "%s: configuration: %s\n", prog, err[0] ? err : "out of memory");
        return 1;
    }
    static nm_progress_printer progress;   /* long route set-ups say how they go */
    nm_progress_attach(r->cfg, &progress, prog);
    if (nm_config_load_profile(r->cfg, r->profile, NULL, err, sizeof err) != 0) {
        fprintf(errout, "%s: %s\n", prog, err);
        return 2;   /* a configuration error (mpisim's README.md "Exit codes") */
    }
    for (int i = 0; i < r->nsets; i++)
        if (nm_config_set(r->cfg, r->sets[i], "--set", err, sizeof err) != 0) {
            fprintf(errout, "%s: %s\n", prog, err);
            return 2;
        }
    if (r->routing) {
        char asg[128];
        snprintf(asg, sizeof asg, "network.routing=%s", r->routing);
        if (nm_config_set(r->cfg, asg, "--routing", err, sizeof err) != 0) {
            fprintf(errout, "%s: %s\n", prog, err);
            return 2;
        }
    }
    if (!r->topo_spec) r->topo_spec = nm_config_string(r->cfg, "network.topology");
    if (!strcmp(r->topo_spec, "auto")) r->topo_spec = "auto:8";
    r->topo = nm_topology_load(r->topo_spec, r->cfg, err, sizeof err);
    if (!r->topo) { fprintf(errout, "%s: %s\n", prog, err); return 2; }
    nm_topology_routing_info(r->topo, &r->ri);
    r->net = nm_network_create(r->cfg, r->topo, err, sizeof err);
    if (!r->net) { fprintf(errout, "%s: %s\n", prog, err); return 2; }
    if (nm_network_may_deadlock(r->net))   /* shortest routes on a cyclic wormhole network: say so loudly */
        fprintf(errout, "%s: WARNING: routing '%s' on '%s' is not deadlock-free on engine '%s': %s\n", prog,
                r->ri.routing, r->topo_spec, nm_network_engine_name(r->net), r->ri.check_message);
    if (r->seed < 0) r->seed = nm_config_int(r->cfg, "network.seed");
    return 0;
}

/* The traffic pattern (--traffic) on the topology's n hosts: destinations of the local and
 * permutation patterns, the hot spot; 0, or the exit code with the message said. */
static int setup_traffic(net_run *r, FILE *errout)
{
    const char *prog = r->prog, *traffic = r->traffic;
    int n = r->n;
    r->kind = TR_UNIFORM;
    r->hotspot = -1;
    r->rng = (uint64_t)r->seed * 0x2545F4914F6CDD1DULL + 12345;
    const struct pattern *pat = (const struct pattern *)cm_registry_find(pattern_at, traffic);
    /* hotspot and local take their argument after ':', the others none */
    if (!pat || (strchr(traffic, ':') != NULL) != (pat->kind == TR_HOTSPOT || pat->kind == TR_LOCAL)) {
        char m[700];
        if (pat) snprintf(m, sizeof m, "--traffic '%s': expected %s", traffic, pat->id.usage);
        else cm_registry_unknown(pattern_at, "--traffic", traffic, m, sizeof m);
        fprintf(errout, "%s: %s\n", prog, m);
        return 2;
    }
    if (pat->kind == TR_UNIFORM) r->kind = TR_UNIFORM;
    else if (pat->kind == TR_HOTSPOT) {
        r->kind = TR_HOTSPOT;
        r->hot_f = atof(traffic + 8);
        if (r->hot_f > 1) r->hot_f /= 100.0;   /* a percentage */
        if (!(r->hot_f >= 0 && r->hot_f <= 1)) { fprintf(errout, "%s: hotspot fraction out of range\n", prog); return 2; }
        r->hotspot = (int)(splitmix(&r->rng) % (uint64_t)n);   /* chosen at random (seed 002 sec 5.2) */
    } else if (pat->kind == TR_LOCAL) {
        r->kind = TR_LOCAL;
        r->local_l = atoi(traffic + 6);
        r->local_cnt = calloc((size_t)n + 1, sizeof *r->local_cnt);
        r->local = malloc((size_t)n * (size_t)n * sizeof *r->local);
        if (!r->local_cnt || !r->local) { fprintf(errout, "%s: out of memory\n", prog); return 1; }
        for (int s = 0; s < n; s++)
            for (int d = 0; d < n; d++) {
                /* seed 002 sec 5.2: at most l switches away (counting both ends) along the
                 * shortest legal up*-down* path for updown and itb (the same destinations for
                 * both; sec 5.4.2: 0.0008 ITBs per message at l = 3), else the minimal path */
                int links = nm_topology_local_links(r->topo, s, d);
                if (d != s && links >= 0 && links + 1 <= r->local_l) r->local[(size_t)s * n + r->local_cnt[s]++] = d;
            }
    } else {
        r->kind = TR_PERM;
        int nb = ilog2_exact(n);
        if (nb < 1) {
            fprintf(errout, "%s: permutation '%s' needs a power-of-two number of hosts (have %d)\n", prog, traffic, n);
            return 2;
        }
        for (int s = 0; s < n; s++) r->perm[s] = pat->perm(s, nb, n);
    }
    return 0;
}

/* Host s's next destination under the pattern, or -1 for none. */
static int next_destination(net_run *r, int s)
{
    int n = r->n, d = -1;
    switch (r->kind) {
    case TR_UNIFORM: d = (int)(splitmix(&r->rng) % (uint64_t)(n - 1)); if (d >= s) d++; break;
    case TR_HOTSPOT:
        if (s != r->hotspot && urand(&r->rng) < r->hot_f) d = r->hotspot;
        else { d = (int)(splitmix(&r->rng) % (uint64_t)(n - 1)); if (d >= s) d++; }
        break;
    case TR_LOCAL:
        if (r->local_cnt[s] > 0) d = r->local[(size_t)s * n + splitmix(&r->rng) % (uint64_t)r->local_cnt[s]];
        break;
    case TR_PERM: d = r->perm[s] != s ? r->perm[s] : -1; break;
    }
    return d;
}

/* The generators (one pending generation per host; fixed rate has a random phase) over warmup and
 * the window, then the drain; 0, or 1 when memory ran out (said). */
static int run_traffic(net_run *r, FILE *errout)
{
    int n = r->n;
    nm_network *net = r->net;
    run_state *rs = &r->rs;
    double period_ps = 8.0 * (double)(r->payload > 0 ? r->payload : 1) / r->load * 1e12;
    int expo = !strcmp(r->inter, "exponential");
    for (int s = 0; s < n; s++) {
        double u = urand(&r->rng);
        double first = expo ? -log(u) * period_ps : u * period_ps;
        r->phase_k[s] = first;
        r->next[s] = (nm_time_t)llround(first);
    }
    rs->w0 = r->warmup;
    rs->w1 = r->warmup + r->measure;
    nm_network_set_callbacks(net, on_deliver, on_drop, rs);
    r->nch = nm_network_link_busy(net, NULL, 0);
    r->busy0 = calloc(r->nch + 1, sizeof *r->busy0);
    r->busy1 = calloc(r->nch + 1, sizeof *r->busy1);
    if (!r->busy0 || !r->busy1) { fprintf(errout, "%s: out of memory\n", r->prog); return 1; }

    uint64_t cookie = 0;
    int measured_busy0 = 0, rcx;
    struct timespec c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &c0);
#define KEEP_ERR(call) do { if ((rcx = (call)) < 0) r->engine_err = r->engine_err ? r->engine_err : rcx; } while (0)
    for (;;) {
        int s = 0;
        for (int i = 1; i < n; i++) if (r->next[i] < r->next[s]) s = i;
        nm_time_t t = r->next[s];
        if (!measured_busy0 && t >= r->warmup) {
            KEEP_ERR(nm_network_run_until(net, r->warmup));
            nm_network_link_busy(net, r->busy0, r->nch);
            measured_busy0 = 1;
        }
        if (t >= rs->w1) break;
        KEEP_ERR(nm_network_run_until(net, t));
        int d = next_destination(r, s);
        if (d >= 0) {
            if (rs->outstanding[s] >= r->max_out) r->refused++;   /* the source NIC is full: source blocks */
            else if (nm_network_inject(net, s, d, (uint64_t)r->payload, t, cookie++) == 0) {
                rs->outstanding[s]++;
                if (t >= rs->w0) r->injected_win++;
            }
        }
        if (expo) r->phase_k[s] += -log(urand(&r->rng)) * period_ps;
        else r->phase_k[s] += period_ps;
        r->next[s] = (nm_time_t)llround(r->phase_k[s]);
        if (r->next[s] <= t) r->next[s] = t + 1;
    }
    KEEP_ERR(nm_network_run_until(net, rs->w1));
    nm_network_link_busy(net, r->busy1, r->nch);
    KEEP_ERR(nm_network_run(net));   /* drain: latency of the last measured packets */
#undef KEEP_ERR
    clock_gettime(CLOCK_MONOTONIC, &c1);
    r->wall = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    if (rs->oom) { fprintf(errout, "%s: out of memory\n", r->prog); return 1; }
    return 0;
}

/* What the run measured, as printed. */
typedef struct {
    nm_stats st;
    double thr_total, thr_host, lmean, lmin, lmax, p50, p99, flits;
    int senders;
} net_summary;

static void summarize(net_run *r, net_summary *m)
{
    run_state *rs = &r->rs;
    nm_network_stats(r->net, &m->st);
    double secs = (double)r->measure / 1e12;
    m->thr_total = (double)rs->win_bytes * 8.0 / secs;
    m->senders = 0;
    for (int s = 0; s < r->n; s++) {
        if (r->kind == TR_PERM && r->perm[s] == s) continue;
        if (r->kind == TR_LOCAL && r->local_cnt[s] == 0) continue;
        m->senders++;
    }
    m->thr_host = m->senders ? m->thr_total / m->senders : 0;
    m->lmean = m->lmin = m->lmax = m->p50 = m->p99 = 0;
    if (rs->nlat) {
        qsort(rs->lat, rs->nlat, sizeof *rs->lat, cmp_time);
        double sum = 0;
        for (size_t i = 0; i < rs->nlat; i++) sum += (double)rs->lat[i];
        m->lmean = sum / (double)rs->nlat / 1000.0;
        m->lmin = (double)rs->lat[0] / 1000.0;
        m->lmax = (double)rs->lat[rs->nlat - 1] / 1000.0;
        m->p50 = (double)rs->lat[(size_t)((double)(rs->nlat - 1) * 0.50)] / 1000.0;
        m->p99 = (double)rs->lat[(size_t)((double)(rs->nlat - 1) * 0.99)] / 1000.0;
    }
    int sw = nm_topology_switches(r->topo);
    m->flits = sw ? (double)rs->win_bytes / ((double)r->measure / 1000.0) / sw : 0.0;
}

/* Directed channel c's ends: kinds ('H' or 'S') and ids. */
static void channel_ends(const nm_topology *topo, size_t c, char *fk, int *fi, char *tk, int *ti)
{
    const nm_link *l = &topo->links[c / 2];
    *fk = ((c & 1) ? l->b_kind : l->a_kind) == NM_NODE_HOST ? 'H' : 'S';
    *fi = (c & 1) ? l->b_id : l->a_id;
    *tk = ((c & 1) ? l->a_kind : l->b_kind) == NM_NODE_HOST ? 'H' : 'S';
    *ti = (c & 1) ? l->a_id : l->b_id;
}

static void print_json(const net_run *r, const net_summary *m, FILE *out)
{
    const run_state *rs = &r->rs;
    const nm_routing_info *ri = &r->ri;
    const nm_stats *st = &m->st;
    fprintf(out, "{\"engine\": \"%s\", \"profile\": \"%s\", \"topology\": \"%s\", \"hosts\": %d, "
                 "\"traffic\": \"%s\", \"interarrival\": \"%s\", \"payload_bytes\": %lld, "
                 "\"offered_bps_per_host\": %.6g, \"seed\": %lld, \"warmup_ps\": %lld, \"measure_ps\": %lld,\n",
            nm_network_engine_name(r->net), r->profile, nm_topology_name(r->topo), r->n, r->traffic, r->inter,
            r->payload, r->load, r->seed, (long long)r->warmup, (long long)r->measure);
    fprintf(out, " \"senders\": %d, \"packets_injected\": %llu, \"packets_delivered\": %llu, "
                 "\"packets_measured\": %zu, \"refused_at_source\": %llu, \"dropped\": %llu, "
                 "\"dropped_measured\": %llu,\n",
            m->senders, (unsigned long long)r->injected_win, (unsigned long long)rs->win_pkts, rs->nlat,
            (unsigned long long)r->refused, (unsigned long long)rs->dropped, (unsigned long long)rs->dropped_win);
    fprintf(out, " \"throughput_bps_per_host\": %.10g, \"throughput_bps_total\": %.10g,\n", m->thr_host, m->thr_total);
    fprintf(out, " \"latency_ns_mean\": %.6f, \"latency_ns_min\": %.6f, \"latency_ns_max\": %.6f, "
                 "\"latency_ns_p50\": %.6f, \"latency_ns_p99\": %.6f,\n", m->lmean, m->lmin, m->lmax, m->p50, m->p99);
    fprintf(out, " \"events\": %llu, \"char_hops\": %llu, \"wall_s\": %.6f, \"engine_error\": %d,\n",
            (unsigned long long)st->events, (unsigned long long)st->char_hops, r->wall, r->engine_err);
    fprintf(out, " \"switches\": %d, \"throughput_flits_per_ns_per_switch\": %.8g,\n", nm_topology_switches(r->topo),
            m->flits);
    fprintf(out, " \"routing\": \"%s\", \"updown_root\": %d, \"deadlock_free_routes\": %d, "
                 "\"route_check\": \"%s\", \"inter_switch_pairs\": %ld, \"minimal_share\": %.6f, \"mean_links\": %.6f, "
                 "\"mean_min_links\": %.6f, \"itb_per_route\": %.6f,\n",
            ri->routing, ri->updown_root, ri->deadlock_free, ri->deadlock_free ? "acyclic" : "cycle",
            ri->inter_switch_pairs, ri->minimal_share, ri->mean_links, ri->mean_min_links, ri->itb_per_route);
    fprintf(out, " \"itb_packets\": %llu, \"itb_host_stored\": %llu, \"itb_dropped\": %llu, "
                 "\"itb_pool_peak_bytes\": %llu, \"deadlocks\": %llu, \"deadlock_time_ps\": %lld,\n",
            (unsigned long long)st->itb_packets, (unsigned long long)st->itb_host_stored,
            (unsigned long long)st->itb_dropped, (unsigned long long)st->itb_pool_peak,
            (unsigned long long)st->deadlocks, (long long)st->deadlock_time);
    fprintf(out, " \"link_utilization\": [");
    for (size_t c = 0; c < r->nch; c++) {
        char fk, tk;
        int fi, ti;
        channel_ends(r->topo, c, &fk, &fi, &tk, &ti);
        fprintf(out, "%s{\"channel\": %zu, \"from\": \"%c%d\", \"to\": \"%c%d\", \"util\": %.6f}", c ? ", " : "", c,
                fk, fi, tk, ti, (double)(r->busy1[c] - r->busy0[c]) / (double)r->measure);
    }
    fprintf(out, "]}\n");
}

static void print_text(const net_run *r, const net_summary *m, FILE *out)
{
    const run_state *rs = &r->rs;
    const nm_routing_info *ri = &r->ri;
    const nm_stats *st = &m->st;
    fprintf(out, "engine %s, profile %s, topology %s (%d hosts), traffic %s, %s interarrival\n",
            nm_network_engine_name(r->net), r->profile, nm_topology_name(r->topo), r->n, r->traffic, r->inter);
    fprintf(out, "payload %lld B, offered %.6g b/s per host, window %.6g us after %.6g us warmup\n", r->payload,
            r->load, (double)r->measure / 1e6, (double)r->warmup / 1e6);
    fprintf(out, "accepted throughput: %.6g b/s per host (%d senders), %.6g b/s total\n", m->thr_host, m->senders,
            m->thr_total);
    fprintf(out, "packets: %llu injected in window, %llu delivered in window, %llu refused at source, "
                 "%llu dropped (timeout)\n",
            (unsigned long long)r->injected_win, (unsigned long long)rs->win_pkts, (unsigned long long)r->refused,
            (unsigned long long)rs->dropped);
    fprintf(out, "latency (ns, %zu packets): mean %.3f min %.3f max %.3f p50 %.3f p99 %.3f\n", rs->nlat, m->lmean,
            m->lmin, m->lmax, m->p50, m->p99);
    fprintf(out, "engine: %llu events, %llu character hops, %.3f s wall\n", (unsigned long long)st->events,
            (unsigned long long)st->char_hops, r->wall);
    fprintf(out, "accepted traffic: %.6g flits/ns/switch (%d switches)\n", m->flits, nm_topology_switches(r->topo));
    fprintf(out, "routing %s", ri->routing);
    if (ri->updown_root >= 0) fprintf(out, " (up*/down* root S%d)", ri->updown_root);
    fprintf(out, ": %s\n", ri->check_message);
    if (ri->inter_switch_pairs)
        fprintf(out, "routes: %.1f%% minimal, %.3f inter-switch links on average (minimal %.3f), %.3f in-transit "
                     "hosts per route\n", 100 * ri->minimal_share, ri->mean_links, ri->mean_min_links, ri->itb_per_route);
    else
        fprintf(out, "routes: every host pair is on one switch (no inter-switch links): all routes minimal\n");
    if (st->itb_packets)
        fprintf(out, "in-transit buffers: %llu ejections, %llu kept in host memory, %llu dropped, pool peak %llu B\n",
                (unsigned long long)st->itb_packets, (unsigned long long)st->itb_host_stored,
                (unsigned long long)st->itb_dropped, (unsigned long long)st->itb_pool_peak);
    if (st->deadlocks)
        fprintf(out, "DEADLOCK: %llu time(s) the network had packets in flight and nothing could move (first at "
                     "%.3f us)\n", (unsigned long long)st->deadlocks, (double)st->deadlock_time / 1e6);
    fprintf(out, "link utilisation (directed channels):\n");
    for (size_t c = 0; c < r->nch; c++) {
        char fk, tk;
        int fi, ti;
        channel_ends(r->topo, c, &fk, &fi, &tk, &ti);
        fprintf(out, "  %4zu %c%d -> %c%d  %.4f\n", c, fk, fi, tk, ti,
                (double)(r->busy1[c] - r->busy0[c]) / (double)r->measure);
    }
    if (r->engine_err == -3) fprintf(out, "ENGINE ERROR: deadlock (see DEADLOCK above)\n");
    else if (r->engine_err) {
        char why[600];
        fprintf(out, "ENGINE ERROR: %s\n", nm_network_failure_reason(r->net, why, sizeof why) ? why
                                              : "a slack buffer overflowed or memory ran out");
    }
}

static void net_run_free(net_run *r)
{
    free(r->busy0);
    free(r->busy1);
    free(r->phase_k);
    free(r->next);
    free(r->local);
    free(r->local_cnt);
    free(r->perm);
    free(r->rs.outstanding);
    free(r->rs.lat);
    nm_network_destroy(r->net);
    nm_topology_destroy(r->topo);
    nm_config_destroy(r->cfg);
    free(r->sets);
}

/* The run once the network is there: the per-host arrays and the traffic pattern, the run, the
 * results; the exit code. */
static int run_and_print(net_run *r, FILE *out, FILE *errout)
{
    int n = nm_topology_hosts(r->topo);
    r->n = n;
    r->rs.nhosts = n;
    r->rs.topo = r->topo;
    r->rs.outstanding = calloc((size_t)n, sizeof *r->rs.outstanding);
    r->perm = malloc((size_t)n * sizeof *r->perm);
    r->next = malloc((size_t)n * sizeof *r->next);
    r->phase_k = calloc((size_t)n, sizeof *r->phase_k);
    if (!r->rs.outstanding || !r->perm || !r->next || !r->phase_k) {
        fprintf(errout, "%s: out of memory\n", r->prog);
        return 1;
    }
    if (n < 2) {   /* a configuration error: there is no traffic to model */
        fprintf(errout, "%s: topology '%s' has fewer than 2 hosts\n", r->prog, r->topo_spec);
        return 2;
    }
    int rc = setup_traffic(r, errout);
    if (rc == 0) rc = run_traffic(r, errout);
    if (rc != 0) return rc;
    net_summary m;
    summarize(r, &m);
    if (r->json) print_json(r, &m, out);
    else print_text(r, &m, out);
    return r->engine_err ? 1 : 0;
}

int nm_net_main(int argc, char **argv, FILE *out, FILE *errout)
{
    net_run r = {0};
    r.prog = argc > 0 ? argv[0] : "net";
    r.profile = "default";
    r.traffic = "uniform";
    r.inter = "uniform";
    r.load = 160e6;
    r.payload = 64;
    r.max_out = 8;
    r.seed = -1;
    r.warmup = 1000000000LL;    /* 1 ms */
    r.measure = 10000000000LL;  /* 10 ms */
    r.sets = calloc((size_t)argc + 1, sizeof *r.sets);
    if (!r.sets) { fprintf(errout, "%s: out of memory\n", r.prog); return 1; }
    char progname[64];
    snprintf(progname, sizeof progname, "%s%s", strcmp(r.prog, "net") ? "" : "mpisim ", r.prog);
    int rc = parse_options(&r, argc, argv, progname, out);
    if (rc < 0 && r.measure <= 0) {
        fprintf(errout, "%s: --measure must be positive\n", r.prog);
        rc = 2;
    }
    if (rc < 0 && (rc = load_network(&r, errout)) == 0) rc = run_and_print(&r, out, errout);
    net_run_free(&r);
    return rc;
}
