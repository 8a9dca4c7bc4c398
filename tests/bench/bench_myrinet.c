/* bench_myrinet: speed of the character-level myrinet engine.
 *
 * Saturating traffic: 8 hosts on one 8x8 crossbar (crossbar:8, seed 000 Table 2 parameters),
 * every host keeps its NIC queue topped up to a few packets with uniformly random destinations.
 * Prints simulated character hops (one character crossing one link) per second of wall time and
 * per second of CPU time, events per second and peak RSS.
 *
 * Long messages (-l): one 1 MiB MPI message as the MPI model sends it (256 packets of 4 KiB plus
 * the envelope, all handed to the NIC at once), alone in the network, repeated; prints the
 * engine's wall and CPU time per message and its events, on crossbar:8 (one switch) and along a
 * line of five switches, and a digest of every delivery time (a faster engine must print the
 * same one).
 *
 * Usage: bench_myrinet [payload_bytes...] [-t simulated_ms] [-l [messages]] */
#define _DEFAULT_SOURCE
#include "netmodel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

typedef struct { int out[8]; } state;

static void on_deliver(void *u, const nm_delivery *d) { ((state *)u)->out[d->src_host]--; }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static long rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int bench(int payload, double sim_ms)
{
    char err[512];
    nm_config *cfg = nm_config_create();
    if (!cfg || nm_config_set(cfg, "network.engine=myrinet", "bench", err, sizeof err) != 0) {
        fprintf(stderr, "config: %s\n", cfg ? err : "out of memory");
        return 1;
    }
    nm_topology *topo = nm_topology_load("crossbar:8", cfg, err, sizeof err);
    nm_network *net = topo ? nm_network_create(cfg, topo, err, sizeof err) : NULL;
    if (!net) { fprintf(stderr, "%s\n", err); return 1; }
    state st = {{0}};
    nm_network_set_callbacks(net, on_deliver, NULL, &st);
    uint64_t rng = 88172645463325252ULL;
    nm_time_t end = (nm_time_t)(sim_ms * 1e9), step = (nm_time_t)(payload + 7) * 6250, t = 0;
    long rss_quarter = 0;
    double w0 = now_s(), c0 = cpu_s();
    while (t < end) {
        for (int s = 0; s < 8; s++)
            while (st.out[s] < 4) {
                rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
                int d = (int)(rng % 7);
                if (d >= s) d++;
                if (nm_network_inject(net, s, d, (uint64_t)payload, t, 0) != 0) return 1;
                st.out[s]++;
            }
        t += step;
        if (nm_network_run_until(net, t) < 0) { fprintf(stderr, "engine error\n"); return 1; }
        if (!rss_quarter && t >= end / 4) rss_quarter = rss_kb();
    }
    double wall = now_s() - w0, cpu = cpu_s() - c0;
    nm_stats s;
    nm_network_stats(net, &s);
    printf("payload %5d B: %8.3f ms simulated in %6.3f s: %7.1f M char-hops/s (%.1f M per CPU s), %6.2f M events/s, "
           "%.1f char-hops/event, %.0f Mb/s per host accepted, peak RSS %ld KB (%ld KB at 1/4)\n",
           payload, sim_ms, wall, (double)s.char_hops / wall / 1e6, (double)s.char_hops / cpu / 1e6,
           (double)s.events / wall / 1e6,
           (double)s.char_hops / (double)(s.events ? s.events : 1),
           (double)s.payload_bytes_delivered * 8 / (sim_ms * 1e-3) / 8 / 1e6, rss_kb(), rss_quarter);
    nm_network_destroy(net);
    nm_topology_destroy(topo);
    nm_config_destroy(cfg);
    return 0;
}

typedef struct { uint64_t digest, last_digest; int delivered; } lstate;
static uint64_t fnv(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }
static void on_long(void *u, const nm_delivery *d)
{
    lstate *l = u;
    l->digest = fnv(l->digest, (uint64_t)d->deliver_time);
    if (d->train || d->cookie == 255) l->last_digest = fnv(l->last_digest, (uint64_t)d->deliver_time);
    l->delivered += d->train ? (int)d->train : 1;
}

typedef struct { double wall, events; uint64_t last_digest, stats_digest; } lresult;

/* One 1 MiB message at a time from host 0 to the last host: 256 packets (train = 0) or one train
 * of 256 packets (train = 1), which must give the same last delivery times and statistics. */
static int bench_long(const char *topology, int messages, int train, lresult *res)
{
    char err[512];
    nm_config *cfg = nm_config_create();
    if (!cfg || nm_config_set(cfg, "network.engine=myrinet", "bench", err, sizeof err) != 0) {
        fprintf(stderr, "config: %s\n", cfg ? err : "out of memory");
        return 1;
    }
    nm_topology *topo = nm_topology_load(topology, cfg, err, sizeof err);
    nm_network *net = topo ? nm_network_create(cfg, topo, err, sizeof err) : NULL;
    if (!net) { fprintf(stderr, "%s\n", err); return 1; }
    lstate st = {1469598103934665603ull, 1469598103934665603ull, 0};
    nm_network_set_callbacks(net, on_long, NULL, &st);
    int dst = nm_topology_hosts(topo) - 1;
    const int packets = 256, payload = 4096 + 8;   /* mpi.packet_payload, plus the envelope */
    double w0 = now_s(), c0 = cpu_s();
    for (int m = 0; m < messages; m++) {
        nm_time_t t = nm_network_now(net);
        if (train) {
            if (nm_network_inject_train(net, 0, dst, (uint64_t)payload, packets, t, 0, 255) != 0) return 1;
        } else {
            for (int k = 0; k < packets; k++)
                if (nm_network_inject(net, 0, dst, (uint64_t)payload, t, (uint64_t)k) != 0) return 1;
        }
        if (nm_network_run(net) < 0) { fprintf(stderr, "engine error\n"); return 1; }
    }
    double wall = now_s() - w0, cpu = cpu_s() - c0;
    nm_stats s;
    nm_network_stats(net, &s);
    uint64_t sd = fnv(fnv(fnv(1469598103934665603ull, s.char_hops), s.packets_delivered), s.payload_bytes_delivered);
    nm_time_t busy[64];
    size_t nb = nm_network_link_busy(net, busy, 64);
    for (size_t i = 0; i < nb && i < 64; i++) sd = fnv(sd, (uint64_t)busy[i]);
    printf("1 MiB message, %-10s (%d switches), %-7s: %.3f ms wall, %.3f ms CPU, %.0f events per message "
           "(%d messages), digest %016llx, last packets %016llx, stats %016llx\n",
           strchr(topology, '/') ? "line of 5" : topology, nm_topology_route_hops(topo, 0, dst), train ? "train" : "packets",
           wall * 1e3 / messages, cpu * 1e3 / messages, (double)s.events / messages, messages,
           (unsigned long long)(train ? 0 : st.digest), (unsigned long long)st.last_digest, (unsigned long long)sd);
    *res = (lresult){wall, (double)s.events / messages, st.last_digest, sd};
    nm_network_destroy(net);
    nm_topology_destroy(topo);
    nm_config_destroy(cfg);
    return st.delivered == messages * packets ? 0 : 1;
}

int main(int argc, char **argv)
{
    int payloads[16], np = 0, longm = 0;
    double sim_ms = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) sim_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "-l")) longm = i + 1 < argc && atoi(argv[i + 1]) > 0 ? atoi(argv[++i]) : 20;
        else if (np < 16) payloads[np++] = atoi(argv[i]);
    }
    if (longm) {
        /* a line of five 4-port switches, host A at one end, host B at the other */
        char line[256];
        snprintf(line, sizeof line, "%s/bench_myrinet_XXXXXX", P_tmpdir);
        int fd = mkstemp(line);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) return 1;
        fputs("switch S0 ports 4\nswitch S1 ports 4\nswitch S2 ports 4\nswitch S3 ports 4\nswitch S4 ports 4\n"
              "host A\nhost B\nlink A:0 S0:0\nlink S0:1 S1:0\nlink S1:1 S2:0\nlink S2:1 S3:0\nlink S3:1 S4:0\n"
              "link B:0 S4:1\n", f);
        fclose(f);
        int rc = 0;
        const char *topos[2] = {"crossbar:8", line};
        for (int i = 0; i < 2 && !rc; i++) {
            lresult p, tr;
            rc = bench_long(topos[i], longm, 0, &p) || bench_long(topos[i], longm, 1, &tr);
            if (rc) break;
            int same = p.last_digest == tr.last_digest && p.stats_digest == tr.stats_digest;
            printf("  train: %.0f events per message (packets %.0f), wall time ratio train/packets %.3f, %s\n", tr.events,
                   p.events, tr.wall / p.wall, same ? "identical" : "DIFFERENT (defect)");
            if (!same) rc = 1;
        }
        remove(line);
        return rc;
    }
    if (np == 0) { payloads[np++] = 64; payloads[np++] = 1024; payloads[np++] = 8192; }
    for (int i = 0; i < np; i++) {
        /* 300 ms of simulated time per payload unless told otherwise */
        double ms = sim_ms > 0 ? sim_ms : 300.0;
        if (bench(payloads[i], ms) != 0) return 1;
    }
    return 0;
}
