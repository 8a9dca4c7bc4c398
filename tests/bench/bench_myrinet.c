/* bench_myrinet: speed of the character-level myrinet engine. 8 hosts on one 8x8 crossbar
 * (crossbar:8, seed 000 Table 2 parameters), saturating uniform traffic: every host keeps its
 * NIC queue topped up to a few packets with uniformly random destinations. Prints simulated
 * character hops (one character crossing one link) per second of wall time, events per second
 * and peak RSS. Usage: bench_myrinet [payload_bytes...] [-t simulated_ms] */
#define _POSIX_C_SOURCE 200809L
#include "netmodel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct { int out[8]; } state;

static void on_deliver(void *u, const nm_delivery *d) { ((state *)u)->out[d->src_host]--; }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
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
    double w0 = now_s();
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
    double wall = now_s() - w0;
    nm_stats s;
    nm_network_stats(net, &s);
    printf("payload %5d B: %8.3f ms simulated in %6.3f s: %7.1f M char-hops/s, %6.2f M events/s, "
           "%.1f char-hops/event, %.0f Mb/s per host accepted, peak RSS %ld KB (%ld KB at 1/4)\n",
           payload, sim_ms, wall, (double)s.char_hops / wall / 1e6, (double)s.events / wall / 1e6,
           (double)s.char_hops / (double)(s.events ? s.events : 1),
           (double)s.payload_bytes_delivered * 8 / (sim_ms * 1e-3) / 8 / 1e6, rss_kb(), rss_quarter);
    nm_network_destroy(net);
    nm_topology_destroy(topo);
    nm_config_destroy(cfg);
    return 0;
}

int main(int argc, char **argv)
{
    int payloads[16], np = 0;
    double sim_ms = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) sim_ms = atof(argv[++i]);
        else if (np < 16) payloads[np++] = atoi(argv[i]);
    }
    if (np == 0) { payloads[np++] = 64; payloads[np++] = 1024; payloads[np++] = 8192; }
    for (int i = 0; i < np; i++) {
        /* 300 ms of simulated time per payload unless told otherwise */
        double ms = sim_ms > 0 ? sim_ms : 300.0;
        if (bench(payloads[i], ms) != 0) return 1;
    }
    return 0;
}
