/* bench_routes: route set-up at scale (docs/performance.md, "Routes at scale").
 *
 *   bench_routes [-p PROFILE] [-t LIMIT_S] [-s KEY=VALUE]... [SPEC...]
 *       (defaults: profile default, limit 600 s, specs auto:4096 torus2d:32:16:8 torus2d:64:64:1
 *        irregular:1024:1 auto:8192 auto:65536)
 *
 * Loads each topology as the front ends do (nm_topology_load: generator, routes, deadlock check,
 * routing statistics) in a child process of its own, so that each figure has its own peak memory
 * and a case over the limit is stopped without losing the others. Prints one line per spec: hosts,
 * switches, wall seconds of the load (what a replay or run waits for) and of the routing statistics
 * after it (what mpisim-net adds), CPU seconds of both, the child's peak RSS, the routing and the checker's
 * verdict. Only public netmodel calls that older builds have too, so the same source builds
 * against an older libnetmodel for ratios against the previous build (bench_ratios.py). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "netmodel.h"

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct line {
    int ok, hosts, switches, deadlock_free;
    double wall, cpu, stats_wall;
    char routing[32], msg[200];
} line;

static void load_one(const char *profile, const char *spec, char **sets, int nsets, line *o)
{
    char err[1024];
    nm_config *cfg = nm_config_create();
    if (cfg) nm_config_skip_sections(cfg, "mpi|host|shim");   /* as mpisim-net: the network's keys only */
    if (!cfg || nm_config_load_profile(cfg, profile, NULL, err, sizeof err) < 0) {
        snprintf(o->msg, sizeof o->msg, "%.190s", cfg ? err : "out of memory");
        return;
    }
    for (int i = 0; i < nsets; i++)
        if (nm_config_set(cfg, sets[i], "bench_routes", err, sizeof err) < 0) {
            snprintf(o->msg, sizeof o->msg, "%.190s", err);
            return;
        }
    double t0 = mono_s();
    nm_topology *t = nm_topology_load(spec, cfg, err, sizeof err);
    o->wall = mono_s() - t0;
    if (!t) {
        snprintf(o->msg, sizeof o->msg, "%.190s", err);
        return;
    }
    nm_routing_info ri;
    t0 = mono_s();   /* the routing statistics (mpisim-net prints them; not part of the set-up) */
    nm_topology_routing_info(t, &ri);
    o->stats_wall = mono_s() - t0;
    o->ok = 1;
    o->hosts = nm_topology_hosts(t);
    o->switches = nm_topology_switches(t);
    o->deadlock_free = ri.deadlock_free;
    snprintf(o->routing, sizeof o->routing, "%s", ri.routing ? ri.routing : "?");
    snprintf(o->msg, sizeof o->msg, "%.190s", ri.check_message ? ri.check_message : "");
    nm_topology_destroy(t);
    nm_config_destroy(cfg);
}

int main(int argc, char **argv)
{
    const char *profile = "default";
    double limit = 600;
    char *sets[32];
    int nsets = 0, opt;
    while ((opt = getopt(argc, argv, "p:t:s:")) != -1) {
        if (opt == 'p') profile = optarg;
        else if (opt == 't') limit = atof(optarg);
        else if (opt == 's' && nsets < 32) sets[nsets++] = optarg;
        else {
            fprintf(stderr, "usage: bench_routes [-p PROFILE] [-t LIMIT_S] [-s KEY=VALUE]... [SPEC...]\n");
            return 2;
        }
    }
    static char *defaults[] = {"auto:4096", "torus2d:32:16:8", "torus2d:64:64:1", "irregular:1024:1", "auto:8192",
                               "auto:65536"};
    char **specs = optind < argc ? argv + optind : defaults;
    int nspecs = optind < argc ? argc - optind : (int)(sizeof defaults / sizeof *defaults);
    int fails = 0;
    for (int i = 0; i < nspecs; i++) {
        int fds[2];
        if (pipe(fds) < 0) return 1;
        fflush(NULL);
        double t0 = mono_s();
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            alarm((unsigned)(limit + 0.5));
            line o = {0};
            load_one(profile, specs[i], sets, nsets, &o);
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            o.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                    1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
            ssize_t w = write(fds[1], &o, sizeof o);
            _exit(w == (ssize_t)sizeof o ? 0 : 1);
        }
        close(fds[1]);
        line o = {0};
        ssize_t n = read(fds[0], &o, sizeof o);
        close(fds[0]);
        int st = 0;
        struct rusage ru;
        wait4(pid, &st, 0, &ru);
        double wall = mono_s() - t0;
        double rss_mb = (double)ru.ru_maxrss / 1024.0;
        if (n != (ssize_t)sizeof o || !WIFEXITED(st)) {
            printf("%-20s STOPPED after %.1f s (limit %.0f s; %s) peak_rss=%.0f MB\n", specs[i], wall, limit,
                   WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "no result", rss_mb);
            fails++;
            continue;
        }
        if (!o.ok) {
            printf("%-20s FAILED: %s\n", specs[i], o.msg);
            fails++;
            continue;
        }
        printf("%-20s hosts=%d switches=%d load_wall=%.2f s stats_wall=%.2f s cpu=%.2f s peak_rss=%.0f MB routing=%s "
               "deadlock_free=%d (%s)\n",
               specs[i], o.hosts, o.switches, o.wall, o.stats_wall, o.cpu, rss_mb, o.routing, o.deadlock_free, o.msg);
        fflush(stdout);
    }
    return fails ? 1 : 0;
}
