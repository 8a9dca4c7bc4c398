/* The model server: the co-simulation's front end. Ranks connect over TCP (with the run's
 * secret), their reports are decoded into driver events, and the driver's resumes and wildcard
 * resolutions go back as messages. Rank states, synchronising groups, the horizon and applying
 * events to the model are the driver's (libmpisim/driver, shared with replay); the server keeps
 * the transport, the authentication, what only a live run has (call sites, unmodelled-call
 * counts, the shim's own figures, the real time the stall watchdog counts: ranks' stall notices and
 * untimed calls, passed to the driver) and the report. When the driver finds the job stuck (a
 * deadlock, or a stall), the server asks the waiting ranks where their programs called from and
 * reports it.
 * This file: the lifecycle (create, configure, listen, the run loop and its watchdogs, destroy).
 * Messages to and from the ranks: server_messages.c; connections, authentication and shared
 * memory: server_transport.c; outcome, warnings and report: server_report.c; all over
 * server_internal.h. */
#define _GNU_SOURCE
#include "server_internal.h"

/* ---------------------------------------------------------------------------------------- */

ms_server *ms_server_create(void)
{
    ms_server *s = calloc(1, sizeof *s);
    if (s) s->listen_fd = -1;
    return s;
}

static int make_secret(char *out)
{
    unsigned char raw[MS_SECRET_LEN / 2];
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, raw, sizeof raw);
    close(fd);
    if (n != (ssize_t)sizeof raw) return -1;
    for (size_t i = 0; i < sizeof raw; i++) sprintf(out + 2 * i, "%02x", raw[i]);
    out[MS_SECRET_LEN] = 0;
    return 0;
}

int ms_server_configure(ms_server *s, const nm_config *cfg, int nranks, int argc, char *const *argv, char *err,
                        size_t errlen)
{
    s->cfg = cfg;
    s->nranks = nranks;
    s->drv = ms_driver_create(cfg, nranks, err, errlen);
    if (!s->drv) return -1;
    static const ms_driver_ops ops = {srv_on_resume, srv_on_resolve};
    ms_driver_set_ops(s->drv, &ops, s);
    ms_driver_set_fn_names(s->drv, ms_fn_names, MS_FN_NAME_COUNT);
    const nm_network *net = ms_driver_network(s->drv);
    const nm_topology *topo = ms_driver_topology(s->drv);
    if (nm_network_may_deadlock(net)) {   /* before the run: it may stop in a network deadlock */
        nm_routing_info ri;
        nm_topology_routing_info(topo, &ri);
        fprintf(stderr, "mpisim: WARNING: routing '%s' on '%s' is not deadlock-free on engine '%s' (%s); "
                "network.routing=auto or updown avoids it\n", ri.routing, nm_topology_name(topo),
                nm_network_engine_name(net), ri.check_message);
    }
    s->ranks = calloc((size_t)nranks, sizeof *s->ranks);
    if (!s->ranks) return fail(err, errlen, "out of memory");
    for (int i = 0; i < nranks; i++) {
        s->ranks[i].fd = -1;
        s->ranks[i].hint_at = -1;
    }
    s->argc = argc;
    s->argv = calloc((size_t)argc + 1, sizeof *s->argv);
    if (!s->argv) return fail(err, errlen, "out of memory");
    for (int i = 0; i < argc; i++)
        if (!(s->argv[i] = strdup(argv[i]))) return fail(err, errlen, "out of memory");
    if (make_secret(s->secret) < 0) return fail(err, errlen, "cannot read /dev/urandom for the run's secret");

    ms_msg_welcome *w = &s->welcome;
    memset(w, 0, sizeof *w);
    w->isend_cost_base_ps = ms_driver_isend_cost(s->drv, 0);
    w->isend_cost_per_byte_ps = ms_driver_isend_cost(s->drv, 1) - w->isend_cost_base_ps;
    w->irecv_cost_base_ps = ms_driver_irecv_cost(s->drv, 0);
    w->irecv_cost_per_byte_ps = ms_driver_irecv_cost(s->drv, 1) - w->irecv_cost_base_ps;
    w->eager_threshold = nm_config_int(cfg, "mpi.eager_threshold");
    const char *cm = nm_config_string(cfg, "shim.compute");
    w->compute_mode = !strcmp(cm, "wall") ? MS_COMPUTE_WALL : !strcmp(cm, "none") ? MS_COMPUTE_NONE : MS_COMPUTE_CPU;
    w->cpu_factor = nm_config_double(cfg, "shim.cpu_factor");
    w->unmodelled_passthrough = !strcmp(nm_config_string(cfg, "shim.unmodelled"), "passthrough");
    w->callsite_depth = (int32_t)nm_config_int(cfg, "shim.callsite_depth");
    w->spin_polls = (int32_t)nm_config_int(cfg, "shim.spin_polls");
    w->spin_oversubscribed = !strcmp(nm_config_string(cfg, "shim.spin_oversubscribed"), "spin");
    w->wtime_stall_ps = nm_config_int(cfg, "shim.wtime_stall");
    w->gap_floor_ps = nm_config_int(cfg, "shim.gap_floor");
    w->gap_noise_ps = nm_config_int(cfg, "shim.gap_noise");
    if (w->gap_floor_ps > w->gap_noise_ps && w->gap_noise_ps > 0)
        return fail(err, errlen, "shim.gap_floor (%lld ps) is more than shim.gap_noise (%lld ps): what an empty interval "
                    "is charged must not exceed what counts as one", (long long)w->gap_floor_ps, (long long)w->gap_noise_ps);
    w->gap_noise_max_ps = nm_config_int(cfg, "shim.gap_noise_max");
    w->clock_read_cost_ps = nm_config_int(cfg, "shim.clock_read_cost");
    w->stall_timeout_ps = nm_config_int(cfg, "shim.stall_timeout");
    w->program_clocks = !strcmp(nm_config_string(cfg, "shim.program_clocks"), "virtual");
    s->stall_timeout_s = (double)w->stall_timeout_ps * 1e-12;
    /* a rank tells of a wait in which nothing completes soon; the server counts the rest of
     * shim.stall_timeout in idle time (watch_stalls) */
    if (w->stall_timeout_ps > (int64_t)(MS_STALL_NOTICE_S * 1e12)) w->stall_timeout_ps = (int64_t)(MS_STALL_NOTICE_S * 1e12);
    gethostname(s->hostname, sizeof s->hostname - 1);
    const char *slots = nm_config_string(cfg, "shim.compute_slots");
    if (!strcmp(slots, "auto")) {
        /* `mpisim run` resolves auto with hwloc; without it, the CPUs this process may use */
        cpu_set_t set;
        w->compute_slots = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    } else {
        char *end;
        long v = strtol(slots, &end, 10);
        if (end == slots || *end || v < 0 || v > 1000000)
            return fail(err, errlen, "shim.compute_slots wants auto, 0 (no gate) or a number of ranks, got '%s'", slots);
        w->compute_slots = (int32_t)v;
    }
    w->compute_slot_timeout_ps = nm_config_int(cfg, "shim.compute_slot_timeout");
    w->return_path = !strcmp(nm_config_string(cfg, "shim.return_path"), "measured");
    s->local_answers = !strcmp(nm_config_string(cfg, "shim.local_answers"), "on");
    int moves = 0;
    double copy = 0;
    if (s->local_answers && ms_driver_local_send(s->drv, &copy, &moves)) {
        w->local_send = 1;
        w->local_copy_ps_per_byte = copy;
    }
    w->recv_moves_cpu = moves;
    w->poll_cost_ps = ms_driver_poll_cost(s->drv);
    return 0;
}

const char *ms_server_secret(const ms_server *s) { return s->secret; }

void ms_server_set_call_log(ms_server *s, ms_driver_log_fn fn, void *user)
{
    if (s->drv) ms_driver_set_call_log(s->drv, fn, user);
}

void ms_server_set_machine(ms_server *s, const char *text) { snprintf(s->machine, sizeof s->machine, "%s", text); }


int ms_server_listen(ms_server *s, const char *bind_addr, const char *advertise, char *endpoint, size_t len, char *err,
                     size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int gai = getaddrinfo(bind_addr, "0", &hints, &res);
    if (gai != 0) return fail(err, errlen, "cannot resolve listen address %s: %s", bind_addr, gai_strerror(gai));
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
        freeaddrinfo(res);
        if (fd >= 0) close(fd);
        return fail(err, errlen, "cannot listen on %s: %s", bind_addr, strerror(errno));
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
        close(fd);
        return fail(err, errlen, "cannot set up the listening socket on %s: %s", bind_addr, strerror(errno));
    }
    int port = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                                       : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    s->listen_fd = fd;
    snprintf(endpoint, len, "%s:%d", advertise, port);
    return 0;
}

static void start_describe(ms_server *s)
{
    for (int i = 0; i < s->nranks; i++)
        if (ms_driver_waiting(s->drv, i)) {
            s->ranks[i].callsite_text[0] = 0;
            srv_send_msg(&s->ranks[i], MS_MSG_DESCRIBE, NULL, 0, NULL, 0);
        }
    s->describing = 1;
    s->describe_deadline = wall_now() + 3.0;
}

static int described_all(const ms_server *s)
{
    for (int i = 0; i < s->nranks; i++)
        if (ms_driver_waiting(s->drv, i) && srv_rank_live(&s->ranks[i]) && !s->ranks[i].callsite_text[0]) return 0;
    return 1;
}

static const char *callsite_of(void *user, int rank) { return ((ms_server *)user)->ranks[rank].callsite_text; }

static void report_deadlock(ms_server *s)
{
    if (!ms_driver_stuck(s->drv)) {   /* a stalled rank moved again while the others answered */
        s->describing = 0;
        return;
    }
    int kind = ms_driver_describe_stall(s->drv, s->deadlock_text, sizeof s->deadlock_text, callsite_of, s);
    if (kind == 2)
        snprintf(s->stop_reason, sizeof s->stop_reason, "%.*s", (int)sizeof s->stop_reason - 1, s->deadlock_text);
    else if (kind == 3)
        s->stalled = 1;
    else
        s->deadlocked = 1;
    srv_stop_run(s);
}

/* The stall watchdog's part only the server can see: a rank inside an untimed call (the real MPI)
 * for shim.stall_timeout of idle time. The driver decides whether the job is stuck. */
static void watch_untimed(ms_server *s, double now)
{
    for (int i = 0; s->stall_timeout_s > 0 && i < s->nranks; i++) {
        rank_info *r = &s->ranks[i];
        if (r->untimed_stalled || ms_driver_state(s->drv, i) != MS_RANK_UNTIMED || r->th0.parked ||
            (s->stall_clock.idle_s - r->untimed_idle0 < s->stall_timeout_s &&
             now - r->untimed_since < MS_STALL_WALL_CAP * s->stall_timeout_s))
            continue;
        char text[MS_TEXT_MAX];
        snprintf(text, sizeof text, "inside the untimed call %s for %.0f s (%.0f s of them idle); %s called from %s",
                 r->untimed_call, now - r->untimed_since, s->stall_clock.idle_s - r->untimed_idle0, r->untimed_call,
                 r->untimed_site[0] ? r->untimed_site : "an unknown site");
        ms_driver_rank_stalled(s->drv, i, text);
        r->untimed_stalled = 1;
    }
    /* threads parked outside MPI (a join, a barrier) that long count as stalled too: a thread that
     * waits for another that waits in the model is a deadlock the driver cannot see */
    for (int i = 0; s->stall_timeout_s > 0 && i < s->nranks; i++) {
        rank_info *r = &s->ranks[i];
        for (int t = 0; t <= r->nth; t++) {
            thread_info *ti = t ? &r->th[t - 1] : &r->th0;
            if (!ti->parked || ti->stalled || now - ti->since < s->stall_timeout_s) continue;
            char text[MS_TEXT_MAX];
            snprintf(text, sizeof text, "thread %d has waited outside MPI (%s) for %.0f s", t, ti->why, now - ti->since);
            ms_driver_thread_stalled(s->drv, i, t, text);
            ti->stalled = 1;
        }
    }
}

/* The rank's process, when this host can look at it (it said hello from here). */
static int local_pid(const ms_server *s, const rank_info *r)
{
    return r->pid > 0 && srv_rank_live(r) && (r->shm || !strncmp(r->host, s->hostname, sizeof r->host)) ? r->pid : 0;
}

/* Once a second (ms_server_run): the stall watchdog's clock and the ranks' processes.
 * - While a rank waits in the real MPI with nothing completing (its notice) or is inside an
 *   untimed call, the stall clock counts idle time over the ranks' processes on this host: wall
 *   time less the most any of them waited for a CPU. A rank spinning inside the real MPI on a
 *   message that never comes uses the CPU and is stuck all the same, so running is not progress
 *   here (ms_proc.h); on a loaded machine the count runs slower than the wall clock, so a slow
 *   run is not stopped, and a stuck one still is (its ranks mostly sleep in their waits' backoff,
 *   and a sleeping process waits for no CPU). A wait that lasts MS_STALL_WALL_CAP times
 *   shim.stall_timeout of wall time is a stall however little of it was idle.
 * - A rank whose process is stopped (SIGSTOP, Ctrl-Z: state T; a debugger: t) does not move at
 *   all and cannot say so: after shim.stall_timeout of wall time stopped it is stalled, named.
 *   Continued, it is not. */
static void watch_stalls(ms_server *s, double now)
{
    int need = 0, n = 0;
    if (s->proc_cap < s->nranks + 1) {
        int *q = realloc(s->proc_pids, sizeof *q * (size_t)(s->nranks + 64));
        if (!q) return;
        s->proc_pids = q;
        s->proc_cap = s->nranks + 64;
    }
    for (int i = 0; i < s->nranks; i++) {
        rank_info *r = &s->ranks[i];
        int pid = local_pid(s, r);
        if (r->suspect || ms_driver_state(s->drv, i) == MS_RANK_UNTIMED) need = 1;
        if (pid) s->proc_pids[n++] = pid;
    }
    if (need) ms_idle_clock_look(&s->stall_clock, s->proc_pids, n, 0, now, 5 * MS_PROC_LOOK_S);
    for (int i = 0; s->stall_timeout_s > 0 && i < s->nranks; i++) {
        rank_info *r = &s->ranks[i];
        if (!srv_rank_live(r)) continue;
        if (r->suspect && !r->suspect_passed && !r->stopped_passed &&
            (s->stall_clock.idle_s - r->suspect_idle0 >= s->stall_timeout_s ||
             now - r->suspect_since >= MS_STALL_WALL_CAP * s->stall_timeout_s)) {
            ms_driver_thread_stalled(s->drv, i, r->suspect_thread, r->suspect);
            r->suspect_passed = 1;
        }
        ms_rank_state st = ms_driver_state(s->drv, i);
        int pid = local_pid(s, r);
        ms_proc_sample ps;
        int stopped = pid && (st == MS_RANK_RUNNING || st == MS_RANK_UNTIMED) && ms_proc_read(pid, &ps) == 0 &&
                      ms_proc_stopped(ps.state);
        if (!stopped) {
            if (r->stopped_passed) {   /* continued: it moves again (a wait's notice, if any, counts anew) */
                ms_driver_rank_stalled(s->drv, i, "");
                r->suspect_passed = 0;
            }
            r->stopped_since = 0;
            r->stopped_passed = 0;
            continue;
        }
        if (r->stopped_since == 0) r->stopped_since = now;
        if (r->stopped_passed || now - r->stopped_since < s->stall_timeout_s) continue;
        char text[MS_TEXT_MAX];
        snprintf(text, sizeof text,
                 "its process %d is stopped (state %c: %s) and has not moved for %.0f s%s%s", pid, ps.state,
                 ps.state == 't' ? "held by a debugger" : "SIGSTOP or Ctrl-Z; SIGCONT resumes it",
                 now - r->stopped_since, r->suspect ? "; before it stopped: " : "", r->suspect ? r->suspect : "");
        ms_driver_rank_stalled(s->drv, i, text);
        r->stopped_passed = 1;
    }
}

/* The run is being stopped (by mpisim, or the launcher was signalled): a rank whose process is
 * stopped would hold the launcher's end for ever (its SIGTERM waits for a SIGCONT): it is
 * continued, to take the ABORT as the others do, and killed if still stopped 5 s later. */
static void release_stopped(ms_server *s, double now)
{
    for (int i = 0; i < s->nranks; i++) {
        rank_info *r = &s->ranks[i];
        int pid = local_pid(s, r);
        ms_proc_sample ps;
        if (!pid || r->cont_at < 0 || ms_proc_read(pid, &ps) != 0 || !ms_proc_stopped(ps.state)) continue;
        if (r->cont_at == 0) {
            kill(pid, SIGCONT);
            r->cont_at = now;
        } else if (now - r->cont_at > 5.0) {
            kill(pid, SIGKILL);
            r->cont_at = -1;
        }
    }
}

static void advance_engine(ms_server *s)
{
    char err[MS_TEXT_MAX];
    int rc = ms_driver_advance(s->drv, err, sizeof err);
    if (rc < 0) {
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", err);
        srv_stop_run(s);
    } else if (rc == 1 && !s->describing) {
        start_describe(s);
    } else if (rc == 2) {   /* the network deadlocked: a deadlock too (exit 3), explained by the driver */
        s->deadlocked = 1;
        snprintf(s->deadlock_text, sizeof s->deadlock_text, "%s", err);
        srv_stop_run(s);
    }
}

/* Checked on every pass of the poll loop: a count, not a look at each rank */
static int connected_all(const ms_server *s) { return s->nconnected >= s->nranks; }

/* While ranks have not connected: which of their processes exist, by a look at this host's
 * /proc once a second (children of the launcher whose environment says
 * OMPI_COMM_WORLD_RANK=R; Open MPI). A rank seen and then gone before its hello left before
 * MPI_Init: the run names it. Ranks on other hosts are not seen, and nothing is said of them. */
static void watch_unconnected(ms_server *s, pid_t launcher)
{
    DIR *d = opendir("/proc");
    if (!d) return;
    char *alive = calloc((size_t)s->nranks, 1);
    if (!alive) {
        closedir(d);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], stat[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[n] = 0;
        const char *rp = strrchr(stat, ')');   /* "pid (comm) state ppid ..." */
        int ppid = -1;
        char st = 0;
        if (!rp || sscanf(rp + 1, " %c %d", &st, &ppid) != 2 || ppid != (int)launcher || st == 'Z') continue;
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        f = fopen(path, "r");
        if (!f) continue;
        static char env[65536];
        n = fread(env, 1, sizeof env - 1, f);
        fclose(f);
        env[n] = 0;
        for (size_t i = 0; i < n; i += strlen(env + i) + 1) {
            int r;
            if (sscanf(env + i, "OMPI_COMM_WORLD_RANK=%d", &r) == 1 && r >= 0 && r < s->nranks) alive[r] = 1;
        }
    }
    closedir(d);
    s->watches++;
    for (int r = 0; r < s->nranks; r++) {
        rank_info *ri = &s->ranks[r];
        if (ms_driver_state(s->drv, r) != MS_RANK_UNCONNECTED) continue;
        if (alive[r]) ri->seen = 1;
        else if (ri->seen && !ri->left_before_init) ri->left_before_init = s->watches;
    }
    free(alive);
}

/* The ranks whose shim said, in their slot of the shared segment, that their process ended
 * before MPI_Init (ms_tp_note_left_early), with their order. */
static void note_early_exits(ms_server *s)
{
    if (!s->shm) return;
    for (int i = 0; i < s->nranks; i++) {
        ms_shm_slot *sl = ms_shm_slot_at(s->shm, i);
        /* a slot claimed after all was a child process's (ms_tp_attach_shm) */
        int left = !s->ranks[i].shm && __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == MS_SLOT_LEFT_EARLY;
        s->ranks[i].left_order = left ? (int)__atomic_load_n(&sl->left_order, __ATOMIC_ACQUIRE) : 0;
    }
}

/* No rank has connected for shim.connect_timeout of idle time (the launcher's processes on this
 * host neither ran nor waited for a CPU: a startup on a loaded machine is slow, not stuck; a rank
 * computing before MPI_Init is not stuck either) while some never did: say which (and whose
 * process is gone, when this host can tell) and end the launcher, whose ranks would otherwise
 * wait in MPI_Init for ever. */
static void connect_timed_out(ms_server *s, pid_t launcher)
{
    size_t off = 0;
    int missing = 0, gone = 0;
    char list[512] = "", gone_list[512] = "";
    size_t lo = 0, go = 0;
    if (launcher > 0) watch_unconnected(s, launcher);
    note_early_exits(s);
    for (int i = 0; i < s->nranks; i++) {
        if (ms_driver_state(s->drv, i) != MS_RANK_UNCONNECTED) continue;
        if (missing++ < 16 && lo < sizeof list) lo += (size_t)snprintf(list + lo, sizeof list - lo, "%s%d", lo ? ", " : "", i);
        if ((s->ranks[i].left_before_init || s->ranks[i].left_order) && gone++ < 16 && go < sizeof gone_list)
            go += (size_t)snprintf(gone_list + go, sizeof gone_list - go, "%s%d", go ? ", " : "", i);
    }
    if (!missing) return;
    if (gone)
        off += (size_t)snprintf(s->stop_reason + off, sizeof s->stop_reason - off,
                                "rank%s %s%s exited before MPI_Init (its process is gone); ", gone > 1 ? "s" : "",
                                gone_list, gone > 16 ? ", ..." : "");
    snprintf(s->stop_reason + off, sizeof s->stop_reason - off,
             "%d rank%s never connected to the model server within %.0f s (shim.connect_timeout, counted while "
             "the job's processes on this host neither ran nor waited for a CPU; %.0f s of wall time): %s%s; the run "
             "was stopped",
             missing, missing > 1 ? "s" : "", s->connect_timeout_s, wall_now() - s->last_connect, list,
             missing > 16 ? ", ..." : "");
    srv_stop_run(s);
    if (launcher > 0) {
        kill(launcher, SIGTERM);
        s->kill_launcher_at = wall_now();
    }
}

/* The launcher's end, looked for at most once a millisecond: a waitpid per pass was one of the
 * server's two system calls per model round trip (bench_shim.py). */
static void reap_launcher(ms_server *s, pid_t child, int *child_done, int *child_status, double *next_reap)
{
    if (*child_done || wall_now() < *next_reap) return;
    *next_reap = wall_now() + 0.001;
    int st;
    pid_t w = waitpid(child, &st, WNOHANG);
    if (w == child) {
        *child_done = 1;
        s->child_done = 1;
        s->child_status = st;
        if (child_status) *child_status = st;
    }
}

void ms_server_say_lingering(int inside, const char *complete)
{
    if (inside)
        fprintf(stderr, "mpisim: every rank has finalized or gone, but %d %s still inside MPI_Finalize (the MPI "
                        "library's shutdown) and the launcher running after %.0f s; ending it (the %s is complete)\n",
                inside, inside == 1 ? "is" : "are", MS_LAUNCHER_GRACE_S, complete);
    else
        fprintf(stderr, "mpisim: every rank has left, but the launcher is still running after %.0f s; ending it\n",
                MS_LAUNCHER_GRACE_S);
}

/* Every rank has gone, or has finalized and is still inside PMPI_Finalize, but the launcher has
 * not ended: Open MPI can hang in its own shutdown (seen under --enable-recovery with a dead peer:
 * the ranks idle in PMPI_Finalize's fence for ever). Nothing is left to model, so after a generous
 * grace the launcher is asked to end (SIGKILL 5 s later), rather than mpisim waiting for ever. A
 * rank whose PMPI_Finalize returned runs the program's own code, however long: it is let be. */
static void end_lingering_launcher(ms_server *s, pid_t child, int live, int inside)
{
    if (live > inside) {   /* some rank is running, its own code or MPI's */
        if (s->kill_launcher_at == 0) s->shutdown_since = 0;
        return;
    }
    if (s->shutdown_since == 0) s->shutdown_since = wall_now();
    else if (s->kill_launcher_at == 0 && wall_now() > s->shutdown_since + MS_LAUNCHER_GRACE_S) {
        ms_server_say_lingering(inside, "report");
        kill(child, SIGTERM);
        s->kill_launcher_at = wall_now();
    }
}

/* A stopped run that aborts its ranks: each is told why, once. */
static void send_aborts(ms_server *s)
{
    char text[MS_TEXT_MAX];
    if (s->deadlocked || s->stalled) snprintf(text, sizeof text, "%.*s", (int)sizeof text - 1, s->deadlock_text);
    else snprintf(text, sizeof text, "%s", s->stop_reason[0] ? s->stop_reason : "stopped");
    ms_msg_text t;
    memset(&t, 0, sizeof t);
    /* the first line of the deadlock, stall or error (the shim prints up to the newline); the
     * rest is in the report */
    snprintf(t.text, sizeof t.text, "%.*s", (int)sizeof t.text - 1, text);
    for (int i = 0; i < s->nranks; i++) {
        srv_send_msg(&s->ranks[i], MS_MSG_ABORT, &t, sizeof t, NULL, 0);
        srv_flush_to(s, i);
    }
}

/* The sockets to poll: the listener, the ranks' connections, the pending ones (who[]: -1, the
 * rank, -2 - the pending index). The number of them, or -1 (out of memory; both arrays freed). */
static long poll_set(ms_server *s, struct pollfd **pfds, int **who, size_t *cap, char *err, size_t errlen)
{
    size_t nf = 0;
    if (s->npending + (size_t)s->nranks + 1 > *cap) {
        size_t nc = s->npending + (size_t)s->nranks + 65;
        struct pollfd *np = realloc(*pfds, sizeof **pfds * nc);
        if (np) *pfds = np;
        int *nw = np ? realloc(*who, sizeof **who * nc) : NULL;
        if (nw) *who = nw;
        if (!np || !nw) {
            free(*pfds);
            free(*who);
            return fail(err, errlen, "out of memory for %zu connections", nc);
        }
        *cap = nc;
    }
    struct pollfd *p = *pfds;
    int *w = *who;
    /* a resting listen socket (see accept_all) is polled for nothing */
    p[nf] = (struct pollfd){s->listen_fd, (short)(wall_now() >= s->accept_resume ? POLLIN : 0), 0};
    w[nf++] = -1;
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].fd >= 0) {
            p[nf] = (struct pollfd){s->ranks[i].fd, POLLIN, 0};
            w[nf++] = i;
        }
    for (size_t i = 0; i < s->npending; i++) {
        p[nf] = (struct pollfd){s->pending[i].fd, POLLIN, 0};
        w[nf++] = -2 - (int)i;
    }
    return (long)nf;
}

enum { POLL_FAILED = -2 };   /* poll(2) itself returns -1 when interrupted */

/* Poll again rather than sleep: within shim.spin_polls idle passes while a rank waits for an answer
 * (both transports). */
static inline int spin_now(const ms_server *s, unsigned idle_polls)
{
    return idle_polls < (unsigned)s->welcome.spin_polls && ms_driver_any_waiting(s->drv);
}

/* Ranks on this host write their rings and ring one doorbell: read what they wrote; while a rank
 * waits for an answer, poll again (yielding the CPU to the ranks) for shim.spin_polls rounds
 * after the last traffic, since the report it needs usually follows within microseconds and a
 * sleeping server costs a futex wake-up per message (on this project's virtual machine a
 * blocking round trip took 40-56 us sleeping, 7 us spinning: bench_shim.py); then, or while
 * every rank computes, sleep on the doorbell (a futex; 1 ms at most while a TCP connection is
 * open, whose sockets are polled between). The sockets ready, or POLL_FAILED. */
static int wait_shm(ms_server *s, struct pollfd *pfds, size_t nf, int idle_ms, unsigned *idle_polls, char *err,
                    size_t errlen)
{
    ms_shm_header *hdr = s->shm;
    uint32_t seen = ms_bell_seq(&hdr->server_bell);
    int got = srv_read_shm(s);
    /* sockets only when there are any: the listener (TCP) or connections (pending or a
     * rank's); a poll of nothing was a system call per pass */
    int sockets = nf > 1 || s->listen_fd >= 0;
    int n = sockets ? poll(pfds, nf, 0) : 0;
    if (n < 0 && errno != EINTR) {
        fail(err, errlen, "poll failed: %s", strerror(errno));
        return POLL_FAILED;
    }
    if (got || n > 0) {
        *idle_polls = 0;
    } else if (spin_now(s, *idle_polls)) {
        (*idle_polls)++;
        sched_yield();
    } else {
        int tcp_open = nf > 1;
        s->shm_waits++;
        ms_bell_wait(&hdr->server_bell, seen, (int64_t)(tcp_open ? 1 : idle_ms) * 1000000, NULL, NULL);
        if (tcp_open) n = poll(pfds, nf, 0);
        srv_read_shm(s);
    }
    double t = wall_now();
    if (t >= s->next_pid_check) {
        s->next_pid_check = t + 0.05;
        srv_check_shm_pids(s, 0);
    }
    return n;
}

/* Just after traffic, while a rank waits for an answer, poll without sleeping (yielding the CPU
 * to the ranks) for a while: the report it needs usually follows within microseconds, and waking
 * a sleeping CPU costs tens of them on a virtual machine. While every rank computes, sleep:
 * spinning beside them would slow the computation whose CPU time is being measured. The sockets
 * ready, or POLL_FAILED. */
static int wait_sockets(ms_server *s, struct pollfd *pfds, size_t nf, int idle_ms, unsigned *idle_polls, char *err,
                        size_t errlen)
{
    int spin = spin_now(s, *idle_polls);
    int n = poll(pfds, nf, spin ? 0 : idle_ms);
    if (n < 0 && errno != EINTR) {
        fail(err, errlen, "poll failed: %s", strerror(errno));
        return POLL_FAILED;
    }
    if (n > 0) *idle_polls = 0;
    else if (spin) {
        (*idle_polls)++;
        sched_yield();
    }
    return n;
}

/* What the sockets that are ready bring: pending connections first (indices shift when one is
 * dropped: go backwards), new connections, the ranks' messages. */
static void read_ready(ms_server *s, const struct pollfd *pfds, const int *who, size_t nf)
{
    for (size_t k = nf; k-- > 0;)
        if (who[k] <= -2 && (pfds[k].revents & (POLLIN | POLLHUP | POLLERR)))
            srv_read_pending(s, (size_t)(-2 - who[k]));
    if (pfds[0].revents & POLLIN) srv_accept_all(s);
    for (size_t k = 1; k < nf; k++)
        if (who[k] >= 0 && (pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) srv_read_rank(s, who[k]);
}

/* While ranks are missing: connections that never said hello dropped; once a second the
 * launcher's processes in /proc, far too costly for every pass of the loop (hpcc's run took 5x
 * longer when it looked at /proc every pass), whose idle time is the connect timeout's clock; and
 * a launcher that did not end on SIGTERM killed. */
static void watch_startup(ms_server *s, pid_t child, int child_done, double now)
{
    for (size_t i = s->npending; i-- > 0;)
        if (now > s->pending[i].deadline) srv_drop_pending(s, i, "did not say hello within 5 s");
    if (!s->stopped && !connected_all(s) && !child_done && now >= s->next_connect_look) {
        s->next_connect_look = now + MS_PROC_LOOK_S;
        int cap = 2 * s->nranks + 64, *tree = malloc(sizeof *tree * (size_t)cap);
        int nt = tree && child > 0 ? ms_proc_tree(child, tree, cap) : 0;
        ms_idle_clock_look(&s->connect_clock, tree, nt, 1, now, 5 * MS_PROC_LOOK_S);
        free(tree);
        if (s->connect_clock.idle_s > s->connect_timeout_s) connect_timed_out(s, child);
    }
    if (!child_done && child > 0 && now > s->next_watch && !connected_all(s)) {
        s->next_watch = now + 1.0;
        watch_unconnected(s, child);
    }
    if (s->kill_launcher_at > 0 && !child_done && now > s->kill_launcher_at + 5.0) {
        kill(child, SIGKILL);   /* it did not end on SIGTERM */
        s->kill_launcher_at = -1;
    }
}

/* The launcher was killed (mpirun never dies of a signal on its own; mpisim's own SIGKILL comes
 * only after it stopped the run): its ranks went because of it, none died on its own. */
static void absolve_if_launcher_killed(ms_server *s)
{
    if (!(s->child_done && WIFSIGNALED(s->child_status) && !s->stopped)) return;
    int all = 1;
    for (int i = 0; i < s->nranks; i++) all &= s->ranks[i].finalized;
    if (all) return;
    ms_driver_absolve(s->drv);
    snprintf(s->stop_reason, sizeof s->stop_reason,
             "the launcher was killed by %s before every rank reached MPI_Finalize: the ranks were stopped",
             srv_signal_name(WTERMSIG(s->child_status)));
    for (int i = 0; i < s->nranks; i++)
        if (!s->ranks[i].finalized && ms_driver_state(s->drv, i) == MS_RANK_STOPPED)
            snprintf(s->ranks[i].error, sizeof s->ranks[i].error, "stopped: the launcher was killed by %s",
                     srv_signal_name(WTERMSIG(s->child_status)));
}

int ms_server_run(ms_server *s, pid_t child, int *child_status, char *err, size_t errlen)
{
    s->wall_start = wall_now();
    s->last_connect = s->wall_start;
    s->connect_timeout_s = s->cfg ? (double)nm_config_int(s->cfg, "shim.connect_timeout") * 1e-12 : 60.0;
    if (!(s->connect_timeout_s > 0)) s->connect_timeout_s = 60.0;
    s->debug = getenv("MPISIM_DEBUG") != NULL;
    int child_done = child < 0;
    size_t nfds_cap = (size_t)s->nranks + 1 + 64;
    unsigned idle_polls = 0;
    struct pollfd *pfds = malloc(sizeof *pfds * nfds_cap);
    int *who = malloc(sizeof *who * nfds_cap);
    if (!pfds || !who) return fail(err, errlen, "out of memory");
    int aborted_sent = 0;
    double next_reap = 0;
    for (;;) {
        reap_launcher(s, child, &child_done, child_status, &next_reap);
        int live = 0, inside = 0;   /* inside: finalized, still in PMPI_Finalize */
        for (int i = 0; i < s->nranks; i++)
            if (srv_rank_live(&s->ranks[i])) {
                live++;
                inside += s->ranks[i].finalized && !s->ranks[i].fin_returned;
            }
        if (child_done && !live) break;
        if (!child_done && child > 0 && connected_all(s)) end_lingering_launcher(s, child, live, inside);

        srv_take_stop_signal(s, child, child_done);
        if (s->forward_at > 0 && wall_now() >= s->forward_at) {
            s->forward_at = 0;
            if (!child_done) {
                kill(child, SIGTERM);
                s->kill_launcher_at = wall_now();   /* SIGKILL if it does not end (below) */
            }
        }
        if (s->stopped && s->abort_ranks && !aborted_sent) {
            send_aborts(s);
            aborted_sent = 1;
        }

        long set = poll_set(s, &pfds, &who, &nfds_cap, err, errlen);
        if (set < 0) return -1;
        size_t nf = (size_t)set;
        int idle_ms = child_done ? 200 : 20;
        int n = s->shm ? wait_shm(s, pfds, nf, idle_ms, &idle_polls, err, errlen)
                       : wait_sockets(s, pfds, nf, idle_ms, &idle_polls, err, errlen);
        if (n == POLL_FAILED) return -1;
        if (n > 0) read_ready(s, pfds, who, nf);
        double now = wall_now();
        watch_startup(s, child, child_done, now);
        if (s->debug && now > s->next_debug) {
            /* MPISIM_DEBUG: the server's view once a second, to diagnose a stuck run */
            s->next_debug = now + 1.0;
            fprintf(stderr, "mpisim-debug: H=%lld next=%lld net_now=%lld", (long long)ms_driver_horizon(s->drv),
                    (long long)ms_driver_next_time(s->drv),
                    (long long)nm_network_now(ms_driver_network(s->drv)));
            for (int i = 0; i < s->nranks; i++) {
                fprintf(stderr, " | r%d %s t=%lld", i, ms_driver_state_name(ms_driver_state(s->drv, i)),
                        (long long)ms_driver_clock(s->drv, i));
                for (int t = 1; t < ms_driver_threads(s->drv, i); t++)
                    fprintf(stderr, " r%d.%d %s t=%lld", i, t,
                            ms_driver_state_name(ms_driver_thread_state(s->drv, i, t)),
                            (long long)ms_driver_thread_clock(s->drv, i, t));
            }
            fputc('\n', stderr);
        }
        if (s->describing && !s->stopped && (described_all(s) || wall_now() > s->describe_deadline)) report_deadlock(s);
        if (now >= s->next_proc_look) {
            s->next_proc_look = now + MS_PROC_LOOK_S;
            if (!s->stopped) watch_stalls(s, now);
            if (s->stopped || s->stop_signal) release_stopped(s, now);   /* a stopped rank would hold the launcher's end */
        }
        if (!s->stopped && !s->describing) {
            watch_untimed(s, now);
            advance_engine(s);
        }
        for (int i = 0; i < s->nranks; i++) srv_flush_to(s, i);
    }
    if (s->shm) srv_check_shm_pids(s, 1);
    note_early_exits(s);
    absolve_if_launcher_killed(s);
    s->wall_end = wall_now();
    free(pfds);
    free(who);
    return 0;
}

/* The launcher's exit code when it failed although every rank finalized (Open MPI's own
 * shutdown: "exiting improperly" at high oversubscription); 0 otherwise. */
void ms_server_destroy(ms_server *s)
{
    if (!s) return;
    for (int i = 0; s->ranks && i < s->nranks; i++) {
        if (s->ranks[i].fd >= 0) close(s->ranks[i].fd);
        free(s->ranks[i].in.p);
        free(s->ranks[i].out.p);
        free(s->ranks[i].unmodelled);
        free(s->ranks[i].sites);
        free(s->ranks[i].th);
        free(s->ranks[i].suspect);
    }
    ms_idle_clock_free(&s->connect_clock);
    ms_idle_clock_free(&s->stall_clock);
    free(s->proc_pids);
    for (size_t i = 0; i < s->npending; i++) {
        close(s->pending[i].fd);
        free(s->pending[i].in.p);
    }
    free(s->pending);
    free(s->ranks);
    for (int i = 0; s->argv && i < s->argc; i++) free(s->argv[i]);
    free(s->argv);
    if (s->listen_fd >= 0) close(s->listen_fd);
    if (s->shm) {
        if (!s->shm_unlinked) shm_unlink(s->shm_name);
        munmap(s->shm, s->shm_bytes);
    }
    ms_driver_destroy(s->drv);
    free(s);
}
