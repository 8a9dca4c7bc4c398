/* bench_packet: speed of the packet-level engines (netmodel/src/engine_packet.c). For each engine,
 * saturating uniform traffic on the network its seed profile uses: ethernet on gige-tree:4:64:6
 * (seed 001's conventional GigE, 256 hosts), avici on avici:16:4:4 with GigE hosts (seed 001's
 * Avici GigE, 256 hosts) and sci on sci-torus:4:2 (seed 004, 16 nodes). Every host keeps 4
 * packets outstanding to uniformly random destinations. Prints events per second of wall time,
 * packets per second and peak RSS.
 * Usage: bench_packet [-t simulated_ms] [-p payload_bytes] [ethernet|avici|sci...] */
#define _POSIX_C_SOURCE 200809L
#include "netmodel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_util.h"

typedef struct { int *out; } state;

static void on_deliver(void *u, const nm_delivery *d) { ((state *)u)->out[d->src_host]--; }

static long rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int bench(const char *engine, const char *topo_spec, const char *const *sets, int payload, double sim_ms)
{
    char err[512];
    nm_config *cfg = nm_config_create();
    char kv[128];
    snprintf(kv, sizeof kv, "network.engine=%s", engine);
    if (!cfg || nm_config_set(cfg, kv, "bench", err, sizeof err) != 0) {
        fprintf(stderr, "config: %s\n", cfg ? err : "out of memory");
        return 1;
    }
    for (int i = 0; sets[i]; i++)
        if (nm_config_set(cfg, sets[i], "bench", err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 1; }
    nm_topology *topo = nm_topology_load(topo_spec, cfg, err, sizeof err);
    nm_network *net = topo ? nm_network_create(cfg, topo, err, sizeof err) : NULL;
    if (!net) { fprintf(stderr, "%s\n", err); return 1; }
    int n = nm_topology_hosts(topo);
    state st = {calloc((size_t)n, sizeof(int))};
    nm_network_set_callbacks(net, on_deliver, NULL, &st);
    uint64_t rng = 88172645463325252ULL;
    nm_time_t end = (nm_time_t)(sim_ms * 1e9), step = 1000000, t = 0;   /* refill every 1 us */
    double w0 = now_us() * 1e-6;
    while (t < end) {
        for (int s = 0; s < n; s++)
            while (st.out[s] < 4) {
                rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
                int d = (int)(rng % (uint64_t)(n - 1));
                if (d >= s) d++;
                if (nm_network_inject(net, s, d, (uint64_t)payload, t, 0) != 0) return 1;
                st.out[s]++;
            }
        t += step;
        if (nm_network_run_until(net, t) < 0) { fprintf(stderr, "engine error\n"); return 1; }
    }
    double wall = now_us() * 1e-6 - w0;
    nm_stats s;
    nm_network_stats(net, &s);
    printf("%-8s %-18s payload %5d B: %7.2f ms simulated in %6.3f s: %6.2f M events/s, %6.3f M packets/s, "
           "%.0f Mb/s per host accepted, peak RSS %ld KB\n",
           engine, topo_spec, payload, sim_ms, wall, (double)s.events / wall / 1e6,
           (double)s.packets_delivered / wall / 1e6, (double)s.payload_bytes_delivered * 8 / (sim_ms * 1e-3) / n / 1e6,
           rss_kb());
    free(st.out);
    nm_network_destroy(net);
    nm_topology_destroy(topo);
    nm_config_destroy(cfg);
    return 0;
}

int main(int argc, char **argv)
{
    double sim_ms = 20.0;
    int payload = 2048, want[3] = {0, 0, 0}, any = 0;
    static const char *const names[3] = {"ethernet", "avici", "sci"};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) sim_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) payload = atoi(argv[++i]);
        else {
            int k = -1;
            for (int j = 0; j < 3; j++)
                if (!strcmp(argv[i], names[j])) k = j;
            if (k < 0) {
                fprintf(stderr, "usage: bench_packet [-t simulated_ms] [-p payload_bytes] [ethernet|avici|sci...]\n");
                return 2;
            }
            want[k] = any = 1;
        }
    }
    static const char *const eth[] = {"network.link_rate=1Gb/s", "ethernet.queue_bytes=1MiB", NULL};
    static const char *const avi[] = {"network.link_rate=20Gb/s", "avici.hosts=gige", "avici.gige_ingress=delay", NULL};
    static const char *const sci[] = {"network.link_rate=667MB/s", "sci.blink_rate=640MB/s", NULL};
    if ((!any || want[0]) && bench("ethernet", "gige-tree:4:64:6", eth, payload, sim_ms) != 0) return 1;
    if ((!any || want[1]) && bench("avici", "avici:16:4:4", avi, payload, sim_ms) != 0) return 1;
    if ((!any || want[2]) && bench("sci", "sci-torus:4:2", sci, payload, sim_ms) != 0) return 1;
    return 0;
}
