/* bench_replay: replayed MPI messages per second.
 *
 *   bench_replay [-m] [-r N] [ITERS [TOPOLOGY [ROUTING_SET [ENGINES]]]]
 *       (defaults: 200, ring:32:8:4, network.routing=updown, analytic,myrinet)
 *   -m: replay the traces as built in memory, without the HDF5 round trip (for profilers: the
 *       guarded reader's child would run under valgrind too and hit its time limit)
 *   -r N: replay each N times and print the fastest (the figure least disturbed by other jobs on
 *       a shared machine; every repetition must give the same digest)
 *   -s: replay as `mpisim replay` does, reading the records from the HDF5 file as the replay plays
 *       them (ms_replay_run_stream; each repetition opens the file anew: "open" is the time to the
 *       first record, counted in the figures with setup); the digests are the in-memory replay's
 *
 * Builds synthetic 256-rank traces shaped like apps/stencil (2D torus halo exchange, 4 Isend +
 * 4 Irecv + Waitall per iteration, 1 KiB faces) and apps/fan (fan-in/fan-out of 2 KiB), loads them
 * back from HDF5 (as `mpisim replay` does), and replays each through the analytic and the myrinet
 * engine on a 256-host network (default ring:32:8:4: seed 004's ring of 32 16-port switches, 8 hosts
 * each, 4 parallel links, up-down routes; auto has no testbed above 96 hosts).
 * Prints one line per (shape, engine): messages (user point-to-point sends, collectives' included),
 * wall seconds of the replay alone, messages per second, trace events per second. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ms_replay.h"
#include "ms_trace.h"
#include "synth_trace.h"

static const char *g_topology = "ring:32:8:4";
static const char *g_routing = "network.routing=updown";
static const char *g_engines = "analytic,myrinet";

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int wanted(const char *engine)
{
    size_t n = strlen(engine);
    for (const char *p = g_engines; (p = strstr(p, engine)) != NULL; p += n)
        if ((p == g_engines || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

static int g_repeat = 1;

/* A digest of every rank's results: a faster replay must print the same one. */
static uint64_t digest(const ms_replay_result *r)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < r->nranks; i++) {
        const ms_replay_rank_result *o = &r->ranks[i];
        uint64_t v[6] = {(uint64_t)o->virtual_end_ps, (uint64_t)o->mpi_ps, o->msgs_recv, o->bytes_recv, o->calls,
                         (uint64_t)o->status};
        for (int k = 0; k < 6; k++) h = (h ^ v[k]) * 1099511628211ull;
    }
    return h;
}

static int g_stream;
static char g_path[2][256];   /* the shapes' HDF5 files (-s) */

static void bench(const char *shape, ms_trace *t, const char *engine)
{
    char err[1024];
    char s0[64], s1[300];
    snprintf(s0, sizeof s0, "network.engine=%s", engine);
    snprintf(s1, sizeof s1, "network.topology=%s", g_topology);
    if (!wanted(engine)) return;
    const char *sets[3] = {s0, s1, g_routing};
    nm_config *cfg = ms_replay_config(t, "default", sets, 3, NULL, 0, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "bench_replay: %s\n", err);
        exit(1);
    }
    ms_replay_opts o = {1.0, MS_WILDCARDS_RECORDED, NULL, NULL, NULL, NULL, NULL};
    ms_replay_result r;
    double cpu = 0, run = 0, open_s = 0, best_open = 0;
    uint64_t digest0 = 0;
    for (int rep = 0; rep < g_repeat; rep++) {
        ms_replay_result x;
        double c0 = cpu_s();
        int rc;
        if (g_stream) {
            struct timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            ms_trace_stream *s = ms_trace_stream_open(g_path[strcmp(shape, "stencil") != 0], err, sizeof err);
            clock_gettime(CLOCK_MONOTONIC, &b);
            open_s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
            if (!s) {
                fprintf(stderr, "bench_replay: %s\n", err);
                exit(1);
            }
            rc = ms_replay_run_stream(s, cfg, &o, &x, err, sizeof err);
            ms_trace_stream_close(s);
            x.setup_s += open_s;   /* the time to the first record is setup */
            x.wall_s += open_s;
        } else {
            rc = ms_replay_run(t, cfg, &o, &x, err, sizeof err);
        }
        double c = cpu_s() - c0;
        if (rc < 0 || x.outcome) {
            fprintf(stderr, "bench_replay: %s %s\n", err, x.outcome_text);
            exit(1);
        }
        uint64_t d = digest(&x);
        if (rep && d != digest0) {
            fprintf(stderr, "bench_replay: %s %s: repetition %d gave another digest\n", shape, engine, rep);
            exit(1);
        }
        digest0 = d;
        if (!rep || x.wall_s - x.setup_s < run) {
            if (rep) ms_replay_result_free(&r);
            r = x;
            run = x.wall_s - x.setup_s;
            cpu = c;
            best_open = open_s;
        } else {
            ms_replay_result_free(&x);
        }
    }
    uint64_t h = digest0;
    printf("%-8s %-9s ranks=%d topology=%s msgs=%llu virtual=%.6f s setup=%.3f s replay=%.3f s msgs_per_s=%.0f "
           "(with setup %.0f; per CPU s with setup %.0f) events_per_s=%.0f digest=%016llx",
           shape, engine, t->nranks, r.topology, (unsigned long long)r.msgs_sent, r.virtual_time_ps * 1e-12, r.setup_s,
           run, r.msgs_sent / run, r.msgs_sent / r.wall_s, r.msgs_sent / cpu, r.events / run,
           (unsigned long long)h);
    if (g_stream)   /* the reader child's CPU is not in this process's */
        printf(" streamed: open=%.3f s records_held_peak=%.1f MB", best_open, r.trace_bytes_peak / 1e6);
    printf("\n");
    fflush(stdout);
    ms_replay_result_free(&r);
    nm_config_destroy(cfg);
}

static int in_memory;

static ms_trace *via_h5(ms_trace *t, const char *name, char *path)
{
    char err[1024];
    if (in_memory) return t;
    snprintf(path, 256, "/tmp/bench_replay_%d_%s.h5", (int)getpid(), name);
    if (ms_trace_write_h5(t, path, err, sizeof err) < 0) {
        fprintf(stderr, "bench_replay: %s\n", err);
        exit(1);
    }
    ms_trace_free(t);
    t = ms_trace_read_h5(path, err, sizeof err);
    if (!g_stream) unlink(path);
    if (!t) {
        fprintf(stderr, "bench_replay: %s\n", err);
        exit(1);
    }
    return t;
}

int main(int argc, char **argv)
{
    for (;;) {
        if (argc > 1 && !strcmp(argv[1], "-m")) {
            in_memory = 1;
            argc--;
            argv++;
        } else if (argc > 1 && !strcmp(argv[1], "-s")) {
            g_stream = 1;
            argc--;
            argv++;
        } else if (argc > 2 && !strcmp(argv[1], "-r")) {
            g_repeat = atoi(argv[2]) > 0 ? atoi(argv[2]) : 1;
            argc -= 2;
            argv += 2;
        } else {
            break;
        }
    }
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    if (argc > 2) g_topology = argv[2];
    if (argc > 3) g_routing = argv[3];
    if (argc > 4) g_engines = argv[4];
    if (g_stream && in_memory) {
        fprintf(stderr, "bench_replay: -s reads the HDF5 file: not with -m\n");
        return 2;
    }
    ms_trace *st = via_h5(synth_stencil(256, iters, 1024, 2000000), "stencil", g_path[0]);
    ms_trace *fan = via_h5(synth_fan(256, iters / 10 > 0 ? iters / 10 : 1, 2048), "fan", g_path[1]);
    bench("stencil", st, "analytic");
    bench("fan", fan, "analytic");
    bench("stencil", st, "myrinet");
    bench("fan", fan, "myrinet");
    ms_trace_free(st);
    ms_trace_free(fan);
    if (g_stream) {
        unlink(g_path[0]);
        unlink(g_path[1]);
    }
    return 0;
}
