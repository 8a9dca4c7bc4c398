/* `mpisim net`: network-only runs with synthetic traffic (seed 000 sec 3.1, seed 002 sec 5,
 * seed 003 sec 5.6). Each host has one pending generation event (lazy), offered load is a
 * bit rate per host, packets of a fixed payload; the tool reports accepted throughput, packet
 * latency (inject to delivery), drops and link utilisation over a measurement window. */
#define _POSIX_C_SOURCE 200809L
#include "net_tool.h"

#include "netmodel.h"
#include "nm_internal.h"
#include "nm_cmdline.h"

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
        if (r->nlat == r->caplat) {
            size_t nc = r->caplat ? 2 * r->caplat : 4096;
            nm_time_t *nl = realloc(r->lat, nc * sizeof *nl);
            if (!nl) { r->oom = 1; return; }
            r->lat = nl;
            r->caplat = nc;
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
    nm_named id;   /* first member: the registry hands out &patterns[i].id */
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

static const nm_named *pattern_at(size_t i)
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

static const nm_opt net_opts[] = {
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
    NM_OPT_HELP,
    NM_OPT_END,
};

static void usage(FILE *f, const char *prog)
{
    fprintf(f, "usage: %s [--profile P] [--topology T] [--traffic PATTERN] [options]\n"
               "Network-only runs with synthetic traffic: accepted throughput, packet latency, drops and\n"
               "link utilisation over a measurement window.\n", prog);
    nm_cmdline_print_options(net_opts, f);
    fputs("Routings (every routing is checked for deadlock freedom when it is built):\n", f);
    nm_registry_print(nm_routing_at, f, "  ");
    fputs("Traffic patterns (permutations need a power-of-two number of hosts):\n", f);
    nm_registry_print(pattern_at, f, "  ");
    fputs("Topology generators (or a topology file, format in netmodel/README.md):\n", f);
    nm_registry_print(nm_topology_generator_at, f, "  ");
    fputs("Times take units (e.g. 2ms, 500us); bare numbers are picoseconds. Profiles are looked up in\n"
          "$MPISIM_PROFILE_PATH, then ../share/mpisim/configs beside the executable.\n", f);
}

int nm_net_main(int argc, char **argv, FILE *out, FILE *errout)
{
    const char *prog = argc > 0 ? argv[0] : "net";
    const char *profile = "default", *topo_spec = NULL, *traffic = "uniform", *inter = "uniform", *routing = NULL;
    double load = 160e6;
    long long payload = 64, max_out = 8;
    long long seed = -1;
    nm_time_t warmup = 1000000000LL, measure = 10000000000LL;   /* 1 ms, 10 ms */
    int json = 0, nsets = 0;
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    char err[512] = "";
    int rc = 1;
    nm_config *cfg = NULL;
    nm_topology *topo = NULL;
    nm_network *net = NULL;
    run_state rs = {0};
    int *perm = NULL, *local_cnt = NULL, *local = NULL;
    nm_time_t *next = NULL;
    double *phase_k = NULL;
    nm_time_t *busy0 = NULL, *busy1 = NULL;
    if (!sets) { fprintf(errout, "%s: out of memory\n", prog); return 1; }

    char progname[64];
    snprintf(progname, sizeof progname, "%s%s", strcmp(prog, "net") ? "" : "mpisim ", prog);
    nm_cmdline cl;
    nm_cmdline_init(&cl, progname, net_opts, argc, argv, 0);
    const char *v;
    for (int k; (k = nm_cmdline_next(&cl, &v)) != -1;) {
        double q;
        long l;
        switch (k) {
        case 'h': usage(out, progname); rc = 0; goto done;
        case O_JSON: json = 1; break;
        case O_PROFILE: profile = v; break;
        case O_TOPOLOGY: topo_spec = v; break;
        case O_ROUTING:
            if ((rc = nm_cmdline_choice(&cl, k, nm_routing_at, v)) != 0) goto done;
            routing = v;
            break;
        case O_SET: sets[nsets++] = v; break;
        case O_TRAFFIC: traffic = v; break;
        case O_INTERARRIVAL:
            if (strcmp(v, "uniform") && strcmp(v, "exponential")) {
                rc = nm_cmdline_bad(&cl, k, v, "expected uniform or exponential");
                goto done;
            }
            inter = v;
            break;
        case O_LOAD:
            if (nm_parse_quantity("b/s", v, &load) != 0 || !(load > 0)) {
                rc = nm_cmdline_bad(&cl, k, v, "expected a positive bit rate (e.g. 160Mb/s)");
                goto done;
            }
            break;
        case O_PAYLOAD:
            if (nm_parse_quantity("B", v, &q) != 0 || !(q >= 0) || q > 1e9) {
                rc = nm_cmdline_bad(&cl, k, v, "expected a byte count");
                goto done;
            }
            payload = llround(q);
            break;
        case O_SEED:
            if ((rc = nm_cmdline_long(&cl, k, v, 0, LONG_MAX, &l)) != 0) goto done;
            seed = l;
            break;
        case O_MAXOUT:
            if ((rc = nm_cmdline_long(&cl, k, v, 1, 1000000, &l)) != 0) goto done;
            max_out = l;
            break;
        case O_WARMUP:
        case O_MEASURE: {
            nm_time_t t;
            if (parse_time(v, &t) != 0) {
                rc = nm_cmdline_bad(&cl, k, v, "expected a time (e.g. 2ms)");
                goto done;
            }
            if (k == O_WARMUP) warmup = t;
            else measure = t;
            break;
        }
        default: rc = 2; goto done;
        }
    }
    if (nm_cmdline_operands(&cl, 0, 0, "") < 0) {
        rc = 2;
        goto done;
    }
    if (measure <= 0) { fprintf(errout, "%s: --measure must be positive\n", prog); rc = 2; goto done; }

    cfg = nm_config_create();
    /* a full mpisim profile also describes the MPI layer and the hosts: not this tool's part */
    if (cfg) nm_config_skip_sections(cfg, "mpi|host|shim");
    if (!cfg || nm_myrinet_register_keys(cfg, err, sizeof err) != 0) {
        fprintf(errout, "%s: configuration: %s\n", prog, err[0] ? err : "out of memory");
        goto done;
    }
    static nm_progress_printer progress;   /* long route set-ups say how they go */
    nm_progress_attach(cfg, &progress, prog);
    if (nm_config_load_profile(cfg, profile, NULL, err, sizeof err) != 0) {
        fprintf(errout, "%s: %s\n", prog, err);
        rc = 2;   /* a configuration error (mpisim's README.md "Exit codes") */
        goto done;
    }
    for (int i = 0; i < nsets; i++)
        if (nm_config_set(cfg, sets[i], "--set", err, sizeof err) != 0) {
            fprintf(errout, "%s: %s\n", prog, err);
            rc = 2;
            goto done;
        }
    if (routing) {
        char asg[128];
        snprintf(asg, sizeof asg, "network.routing=%s", routing);
        if (nm_config_set(cfg, asg, "--routing", err, sizeof err) != 0) {
            fprintf(errout, "%s: %s\n", prog, err);
            rc = 2;
            goto done;
        }
    }
    if (!topo_spec) topo_spec = nm_config_string(cfg, "network.topology");
    if (!strcmp(topo_spec, "auto")) topo_spec = "auto:8";
    topo = nm_topology_load(topo_spec, cfg, err, sizeof err);
    if (!topo) { fprintf(errout, "%s: %s\n", prog, err); rc = 2; goto done; }
    nm_routing_info ri;
    nm_topology_routing_info(topo, &ri);
    net = nm_network_create(cfg, topo, err, sizeof err);
    if (!net) { fprintf(errout, "%s: %s\n", prog, err); rc = 2; goto done; }
    if (nm_network_may_deadlock(net))   /* shortest routes on a cyclic wormhole network: say so loudly */
        fprintf(errout, "%s: WARNING: routing '%s' on '%s' is not deadlock-free on engine '%s': %s\n", prog,
                ri.routing, topo_spec, nm_network_engine_name(net), ri.check_message);
    if (seed < 0) seed = nm_config_int(cfg, "network.seed");

    int n = nm_topology_hosts(topo);
    rs.nhosts = n;
    rs.topo = topo;
    rs.outstanding = calloc((size_t)n, sizeof *rs.outstanding);
    perm = malloc((size_t)n * sizeof *perm);
    next = malloc((size_t)n * sizeof *next);
    phase_k = calloc((size_t)n, sizeof *phase_k);
    if (!rs.outstanding || !perm || !next || !phase_k) { fprintf(errout, "%s: out of memory\n", prog); goto done; }
    if (n < 2) {   /* a configuration error: there is no traffic to model */
        fprintf(errout, "%s: topology '%s' has fewer than 2 hosts\n", prog, topo_spec);
        rc = 2;
        goto done;
    }

    /* traffic pattern */
    int kind = TR_UNIFORM, hotspot = -1, local_l = 0;
    double hot_f = 0;
    uint64_t rng = (uint64_t)seed * 0x2545F4914F6CDD1DULL + 12345;
    const struct pattern *pat = (const struct pattern *)nm_registry_find(pattern_at, traffic);
    /* hotspot and local take their argument after ':', the others none */
    if (!pat || (strchr(traffic, ':') != NULL) != (pat->kind == TR_HOTSPOT || pat->kind == TR_LOCAL)) {
        char m[700];
        if (pat) snprintf(m, sizeof m, "--traffic '%s': expected %s", traffic, pat->id.usage);
        else nm_registry_unknown(pattern_at, "--traffic", traffic, m, sizeof m);
        fprintf(errout, "%s: %s\n", prog, m);
        rc = 2;
        goto done;
    }
    if (pat->kind == TR_UNIFORM) kind = TR_UNIFORM;
    else if (pat->kind == TR_HOTSPOT) {
        kind = TR_HOTSPOT;
        hot_f = atof(traffic + 8);
        if (hot_f > 1) hot_f /= 100.0;   /* a percentage */
        if (!(hot_f >= 0 && hot_f <= 1)) { fprintf(errout, "%s: hotspot fraction out of range\n", prog); rc = 2; goto done; }
        hotspot = (int)(splitmix(&rng) % (uint64_t)n);   /* chosen at random (seed 002 sec 5.2) */
    } else if (pat->kind == TR_LOCAL) {
        kind = TR_LOCAL;
        local_l = atoi(traffic + 6);
        local_cnt = calloc((size_t)n + 1, sizeof *local_cnt);
        local = malloc((size_t)n * (size_t)n * sizeof *local);
        if (!local_cnt || !local) { fprintf(errout, "%s: out of memory\n", prog); goto done; }
        for (int s = 0; s < n; s++)
            for (int d = 0; d < n; d++) {
                /* seed 002 sec 5.2: at most l switches away (counting both ends) along the
                 * shortest legal up*-down* path for updown and itb (the same destinations for
                 * both; sec 5.4.2: 0.0008 ITBs per message at l = 3), else the minimal path */
                int links = nm_topology_local_links(topo, s, d);
                if (d != s && links >= 0 && links + 1 <= local_l) local[(size_t)s * n + local_cnt[s]++] = d;
            }
    } else {
        kind = TR_PERM;
        int nb = ilog2_exact(n);
        if (nb < 1) {
            fprintf(errout, "%s: permutation '%s' needs a power-of-two number of hosts (have %d)\n", prog, traffic, n);
            rc = 2;
            goto done;
        }
        for (int s = 0; s < n; s++) perm[s] = pat->perm(s, nb, n);
    }

    /* generators: one pending generation per host; fixed rate has a random phase */
    double period_ps = 8.0 * (double)(payload > 0 ? payload : 1) / load * 1e12;
    int expo = !strcmp(inter, "exponential");
    for (int s = 0; s < n; s++) {
        double u = urand(&rng);
        double first = expo ? -log(u) * period_ps : u * period_ps;
        phase_k[s] = first;
        next[s] = (nm_time_t)llround(first);
    }
    rs.w0 = warmup;
    rs.w1 = warmup + measure;
    nm_network_set_callbacks(net, on_deliver, on_drop, &rs);
    size_t nch = nm_network_link_busy(net, NULL, 0);
    busy0 = calloc(nch + 1, sizeof *busy0);
    busy1 = calloc(nch + 1, sizeof *busy1);
    if (!busy0 || !busy1) { fprintf(errout, "%s: out of memory\n", prog); goto done; }

    uint64_t refused = 0, injected_win = 0, cookie = 0;
    int measured_busy0 = 0, engine_err = 0, rcx;
    struct timespec c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &c0);
    for (;;) {
        int s = 0;
        for (int i = 1; i < n; i++) if (next[i] < next[s]) s = i;
        nm_time_t t = next[s];
        if (!measured_busy0 && t >= warmup) {
            if ((rcx = nm_network_run_until(net, warmup)) < 0) engine_err = engine_err ? engine_err : rcx;
            nm_network_link_busy(net, busy0, nch);
            measured_busy0 = 1;
        }
        if (t >= rs.w1) break;
        if ((rcx = nm_network_run_until(net, t)) < 0) engine_err = engine_err ? engine_err : rcx;
        int d = -1;
        switch (kind) {
        case TR_UNIFORM: d = (int)(splitmix(&rng) % (uint64_t)(n - 1)); if (d >= s) d++; break;
        case TR_HOTSPOT:
            if (s != hotspot && urand(&rng) < hot_f) d = hotspot;
            else { d = (int)(splitmix(&rng) % (uint64_t)(n - 1)); if (d >= s) d++; }
            break;
        case TR_LOCAL:
            if (local_cnt[s] > 0) d = local[(size_t)s * n + splitmix(&rng) % (uint64_t)local_cnt[s]];
            break;
        case TR_PERM: d = perm[s] != s ? perm[s] : -1; break;
        }
        if (d >= 0) {
            if (rs.outstanding[s] >= max_out) refused++;   /* the source NIC is full: source blocks */
            else if (nm_network_inject(net, s, d, (uint64_t)payload, t, cookie++) == 0) {
                rs.outstanding[s]++;
                if (t >= rs.w0) injected_win++;
            }
        }
        if (expo) phase_k[s] += -log(urand(&rng)) * period_ps;
        else phase_k[s] += period_ps;
        next[s] = (nm_time_t)llround(phase_k[s]);
        if (next[s] <= t) next[s] = t + 1;
    }
    if ((rcx = nm_network_run_until(net, rs.w1)) < 0) engine_err = engine_err ? engine_err : rcx;
    nm_network_link_busy(net, busy1, nch);
    if ((rcx = nm_network_run(net)) < 0) engine_err = engine_err ? engine_err : rcx;   /* drain: latency of the last measured packets */
    clock_gettime(CLOCK_MONOTONIC, &c1);
    double wall = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    if (rs.oom) { fprintf(errout, "%s: out of memory\n", prog); goto done; }

    nm_stats st;
    nm_network_stats(net, &st);
    double secs = (double)measure / 1e12;
    double thr_total = (double)rs.win_bytes * 8.0 / secs;
    int senders = 0;
    for (int s = 0; s < n; s++) {
        if (kind == TR_PERM && perm[s] == s) continue;
        if (kind == TR_LOCAL && local_cnt[s] == 0) continue;
        senders++;
    }
    double thr_host = senders ? thr_total / senders : 0;
    double lmean = 0, lmin = 0, lmax = 0, p50 = 0, p99 = 0;
    if (rs.nlat) {
        qsort(rs.lat, rs.nlat, sizeof *rs.lat, cmp_time);
        double sum = 0;
        for (size_t i = 0; i < rs.nlat; i++) sum += (double)rs.lat[i];
        lmean = sum / (double)rs.nlat / 1000.0;
        lmin = (double)rs.lat[0] / 1000.0;
        lmax = (double)rs.lat[rs.nlat - 1] / 1000.0;
        p50 = (double)rs.lat[(size_t)((double)(rs.nlat - 1) * 0.50)] / 1000.0;
        p99 = (double)rs.lat[(size_t)((double)(rs.nlat - 1) * 0.99)] / 1000.0;
    }
    if (json) {
        fprintf(out, "{\"engine\": \"%s\", \"profile\": \"%s\", \"topology\": \"%s\", \"hosts\": %d, "
                     "\"traffic\": \"%s\", \"interarrival\": \"%s\", \"payload_bytes\": %lld, "
                     "\"offered_bps_per_host\": %.6g, \"seed\": %lld, \"warmup_ps\": %lld, \"measure_ps\": %lld,\n",
                nm_network_engine_name(net), profile, nm_topology_name(topo), n, traffic, inter, payload, load,
                seed, (long long)warmup, (long long)measure);
        fprintf(out, " \"senders\": %d, \"packets_injected\": %llu, \"packets_delivered\": %llu, "
                     "\"packets_measured\": %zu, \"refused_at_source\": %llu, \"dropped\": %llu, "
                     "\"dropped_measured\": %llu,\n",
                senders, (unsigned long long)injected_win, (unsigned long long)rs.win_pkts, rs.nlat,
                (unsigned long long)refused, (unsigned long long)rs.dropped, (unsigned long long)rs.dropped_win);
        fprintf(out, " \"throughput_bps_per_host\": %.10g, \"throughput_bps_total\": %.10g,\n", thr_host, thr_total);
        fprintf(out, " \"latency_ns_mean\": %.6f, \"latency_ns_min\": %.6f, \"latency_ns_max\": %.6f, "
                     "\"latency_ns_p50\": %.6f, \"latency_ns_p99\": %.6f,\n", lmean, lmin, lmax, p50, p99);
        fprintf(out, " \"events\": %llu, \"char_hops\": %llu, \"wall_s\": %.6f, \"engine_error\": %d,\n",
                (unsigned long long)st.events, (unsigned long long)st.char_hops, wall, engine_err);
        fprintf(out, " \"switches\": %d, \"throughput_flits_per_ns_per_switch\": %.8g,\n", nm_topology_switches(topo),
                nm_topology_switches(topo) ? (double)rs.win_bytes / ((double)measure / 1000.0) / nm_topology_switches(topo) : 0.0);
        fprintf(out, " \"routing\": \"%s\", \"updown_root\": %d, \"deadlock_free_routes\": %d, "
                     "\"route_check\": \"%s\", \"inter_switch_pairs\": %ld, \"minimal_share\": %.6f, \"mean_links\": %.6f, "
                     "\"mean_min_links\": %.6f, \"itb_per_route\": %.6f,\n",
                ri.routing, ri.updown_root, ri.deadlock_free, ri.deadlock_free ? "acyclic" : "cycle", ri.inter_switch_pairs,
                ri.minimal_share,
                ri.mean_links, ri.mean_min_links, ri.itb_per_route);
        fprintf(out, " \"itb_packets\": %llu, \"itb_host_stored\": %llu, \"itb_dropped\": %llu, "
                     "\"itb_pool_peak_bytes\": %llu, \"deadlocks\": %llu, \"deadlock_time_ps\": %lld,\n",
                (unsigned long long)st.itb_packets, (unsigned long long)st.itb_host_stored,
                (unsigned long long)st.itb_dropped, (unsigned long long)st.itb_pool_peak,
                (unsigned long long)st.deadlocks, (long long)st.deadlock_time);
        fprintf(out, " \"link_utilization\": [");
        for (size_t c = 0; c < nch; c++) {
            const nm_link *l = &topo->links[c / 2];
            int fk = (c & 1) ? l->b_kind : l->a_kind, fi = (c & 1) ? l->b_id : l->a_id;
            int tk = (c & 1) ? l->a_kind : l->b_kind, ti = (c & 1) ? l->a_id : l->b_id;
            fprintf(out, "%s{\"channel\": %zu, \"from\": \"%c%d\", \"to\": \"%c%d\", \"util\": %.6f}",
                    c ? ", " : "", c, fk == NM_NODE_HOST ? 'H' : 'S', fi, tk == NM_NODE_HOST ? 'H' : 'S', ti,
                    (double)(busy1[c] - busy0[c]) / (double)measure);
        }
        fprintf(out, "]}\n");
    } else {
        fprintf(out, "engine %s, profile %s, topology %s (%d hosts), traffic %s, %s interarrival\n",
                nm_network_engine_name(net), profile, nm_topology_name(topo), n, traffic, inter);
        fprintf(out, "payload %lld B, offered %.6g b/s per host, window %.6g us after %.6g us warmup\n",
                payload, load, (double)measure / 1e6, (double)warmup / 1e6);
        fprintf(out, "accepted throughput: %.6g b/s per host (%d senders), %.6g b/s total\n", thr_host, senders,
                thr_total);
        fprintf(out, "packets: %llu injected in window, %llu delivered in window, %llu refused at source, "
                     "%llu dropped (timeout)\n",
                (unsigned long long)injected_win, (unsigned long long)rs.win_pkts, (unsigned long long)refused,
                (unsigned long long)rs.dropped);
        fprintf(out, "latency (ns, %zu packets): mean %.3f min %.3f max %.3f p50 %.3f p99 %.3f\n", rs.nlat, lmean,
                lmin, lmax, p50, p99);
        fprintf(out, "engine: %llu events, %llu character hops, %.3f s wall\n", (unsigned long long)st.events,
                (unsigned long long)st.char_hops, wall);
        fprintf(out, "accepted traffic: %.6g flits/ns/switch (%d switches)\n",
                nm_topology_switches(topo) ? (double)rs.win_bytes / ((double)measure / 1000.0) / nm_topology_switches(topo)
                                           : 0.0, nm_topology_switches(topo));
        fprintf(out, "routing %s", ri.routing);
        if (ri.updown_root >= 0) fprintf(out, " (up*/down* root S%d)", ri.updown_root);
        fprintf(out, ": %s\n", ri.check_message);
        if (ri.inter_switch_pairs)
            fprintf(out, "routes: %.1f%% minimal, %.3f inter-switch links on average (minimal %.3f), %.3f in-transit "
                         "hosts per route\n", 100 * ri.minimal_share, ri.mean_links, ri.mean_min_links, ri.itb_per_route);
        else
            fprintf(out, "routes: every host pair is on one switch (no inter-switch links): all routes minimal\n");
        if (st.itb_packets)
            fprintf(out, "in-transit buffers: %llu ejections, %llu kept in host memory, %llu dropped, pool peak %llu B\n",
                    (unsigned long long)st.itb_packets, (unsigned long long)st.itb_host_stored,
                    (unsigned long long)st.itb_dropped, (unsigned long long)st.itb_pool_peak);
        if (st.deadlocks)
            fprintf(out, "DEADLOCK: %llu time(s) the network had packets in flight and nothing could move (first at "
                         "%.3f us)\n", (unsigned long long)st.deadlocks, (double)st.deadlock_time / 1e6);
        fprintf(out, "link utilisation (directed channels):\n");
        for (size_t c = 0; c < nch; c++) {
            const nm_link *l = &topo->links[c / 2];
            int fk = (c & 1) ? l->b_kind : l->a_kind, fi = (c & 1) ? l->b_id : l->a_id;
            int tk = (c & 1) ? l->a_kind : l->b_kind, ti = (c & 1) ? l->a_id : l->b_id;
            fprintf(out, "  %4zu %c%d -> %c%d  %.4f\n", c, fk == NM_NODE_HOST ? 'H' : 'S', fi,
                    tk == NM_NODE_HOST ? 'H' : 'S', ti, (double)(busy1[c] - busy0[c]) / (double)measure);
        }
        if (engine_err == -3) fprintf(out, "ENGINE ERROR: deadlock (see DEADLOCK above)\n");
        else if (engine_err) {
            char why[600];
            fprintf(out, "ENGINE ERROR: %s\n", nm_network_failure_reason(net, why, sizeof why) ? why
                                                  : "a slack buffer overflowed or memory ran out");
        }
    }
    rc = engine_err ? 1 : 0;
done:
    free(busy0);
    free(busy1);
    free(phase_k);
    free(next);
    free(local);
    free(local_cnt);
    free(perm);
    free(rs.outstanding);
    free(rs.lat);
    nm_network_destroy(net);
    nm_topology_destroy(topo);
    nm_config_destroy(cfg);
    free(sets);
    return rc;
}
