/* Progress of a job's processes on this host, from /proc (ms_proc.h). */
#define _GNU_SOURCE
#include "ms_proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first len - 1 bytes of a small /proc file, NUL-terminated: its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0) return -1;
    buf[n] = 0;
    return n;
}

int ms_proc_read(int pid, ms_proc_sample *out)
{
    char path[64], buf[1024];
    memset(out, 0, sizeof *out);
    out->pid = pid;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (pid <= 0 || read_small(path, buf, sizeof buf) < 0) return -1;
    /* "pid (comm) state ppid ... utime stime" (fields 14, 15); comm may hold spaces and ')' */
    const char *rp = strrchr(buf, ')');
    char st = 0;
    unsigned long long utime = 0, stime = 0;
    if (!rp || sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &st, &utime, &stime) < 1)
        return -1;
    out->state = st;
    snprintf(path, sizeof path, "/proc/%d/schedstat", pid);
    unsigned long long run = 0, delay = 0;
    if (read_small(path, buf, sizeof buf) > 0 && sscanf(buf, "%llu %llu", &run, &delay) == 2) {
        out->cpu_ns = run;
        out->wait_ns = delay;
    } else {   /* a kernel without schedstat: CPU time from the ticks, no run-queue delay */
        long hz = sysconf(_SC_CLK_TCK);
        out->cpu_ns = (utime + stime) * (1000000000ULL / (unsigned long long)(hz > 0 ? hz : 100));
    }
    return 0;
}

int ms_proc_tree(int root, int *out, int max)
{
    if (max <= 0 || root <= 0 || kill(root, 0) != 0) return 0;
    int n = 0;
    out[n++] = root;
    /* breadth first: each process's threads' children (a child is listed under the thread that
     * forked it) */
    for (int i = 0; i < n && n < max; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", out[i]);
        DIR *d = opendir(path);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d)) && n < max) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
            char cpath[300], buf[4096];
            snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", out[i], e->d_name);
            if (read_small(cpath, buf, sizeof buf) <= 0) continue;
            for (char *p = buf, *end; n < max; p = end) {
                long c = strtol(p, &end, 10);
                if (end == p) break;
                if (c > 0) out[n++] = (int)c;
            }
        }
        closedir(d);
    }
    return n;
}

static const ms_proc_sample *prev_of(const ms_idle_clock *c, int pid)
{
    for (int i = 0; i < c->n; i++)
        if (c->prev[i].pid == pid) return &c->prev[i];
    return NULL;
}

void ms_idle_clock_look(ms_idle_clock *c, const int *pids, int n, int cpu_is_progress, double now,
                        double max_gap_s)
{
    ms_proc_sample *cur = n > 0 ? calloc((size_t)n, sizeof *cur) : NULL;
    int k = 0;
    double busy = 0;   /* the most any one process ran or waited in the interval, seconds */
    for (int i = 0; cur && i < n; i++) {
        if (ms_proc_read(pids[i], &cur[k]) != 0 || cur[k].state == 'Z') continue;
        const ms_proc_sample *p = prev_of(c, pids[i]);
        uint64_t wait = cur[k].wait_ns - (p && p->wait_ns <= cur[k].wait_ns ? p->wait_ns : 0);
        uint64_t run = cur[k].cpu_ns - (p && p->cpu_ns <= cur[k].cpu_ns ? p->cpu_ns : 0);
        double b = (double)wait * 1e-9 + (cpu_is_progress ? (double)run * 1e-9 : 0);
        if (b > busy) busy = b;
        k++;
    }
    double dt = c->last_wall > 0 ? now - c->last_wall : 0;
    if (dt > 0 && dt <= max_gap_s) c->idle_s += dt > busy ? dt - busy : 0;
    c->last_wall = now;
    free(c->prev);
    c->prev = cur;
    c->n = k;
    c->cap = n;
}

void ms_idle_clock_free(ms_idle_clock *c)
{
    free(c->prev);
    c->prev = NULL;
    c->n = c->cap = 0;
}
