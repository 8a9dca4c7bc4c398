/* The model server: the co-simulation's front end. Ranks connect over TCP (with the run's
 * secret), their reports are decoded into driver events, and the driver's resumes and wildcard
 * resolutions go back as messages. Rank states, synchronising groups, the horizon and applying
 * events to the model are the driver's (libmpisim/driver, shared with replay); this file keeps
 * the transport, the authentication, what only a live run has (call sites, unmodelled-call
 * counts, the shim's own figures, the real time the stall watchdog counts: ranks' stall notices and
 * untimed calls, passed to the driver) and the report. When the driver finds the job stuck (a
 * deadlock, or a stall), the server asks the waiting ranks where their programs called from and
 * reports it. */
#define _GNU_SOURCE
#include "ms_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ms_driver.h"
#include "ms_model.h"
#include "protocol.h"
#include "ms_report.h"
#include "ms_shm.h"
#include "ms_proc.h"
#include "fn_names_gen.h"


typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

typedef struct unmodelled_count {
    char name[64];
    uint64_t count;
} unmodelled_count;

typedef struct site_total {
    int fn;
    char text[MS_SITE_TEXT];
    uint64_t calls, bytes;
    int64_t time_ps;
    int64_t rank_min_ps, rank_max_ps;   /* one rank's time at the site: least and most over ranks */
    int ranks;
} site_total;

/* A thread of a rank, beyond thread 0, as the stall watchdog sees it: parked outside MPI. */
typedef struct thread_info {
    int parked;                  /* MS_THREAD_PARK or _IDLE seen, no rejoin since */
    int stalled;                 /* told the driver: parked for shim.stall_timeout */
    double since;
    char why[32];
} thread_info;

typedef struct rank_info {
    int fd;                      /* TCP connection, or -1 */
    int shm;                     /* 1: attached through the shared segment (its slot is the rank's) */
    int shm_closed;              /* its process has gone, or it finished and has its FIN_OK */
    buf in, out;
    int pid;
    char host[64];
    char binding[64];
    ms_msg_finalize fin;
    int finalized;
    int exit_known, exit_code, exit_after_fin;   /* its process's own exit (ms_msg_exit) */
    ms_msg_finalize progress;    /* its totals at its last PROGRESS (a rank that never finalizes) */
    int has_progress;
    site_total *sites;           /* its call sites' totals so far (each SITE replaces its entry) */
    size_t nsites, cap_sites;
    char error[MS_TEXT_MAX];
    char stop_notice[MS_TEXT_MAX];   /* its shim said it is being ended from outside (a signal) */
    char callsite_text[MS_TEXT_MAX];
    int seen, left_before_init;  /* its process was seen on this host / then gone before its hello: */
                                 /* the number of the look that found it gone (1, 2, ...) */
    int left_order;              /* its shim said it ended before MPI_Init: its place among those */
    unmodelled_count *unmodelled;
    size_t n_unmodelled;
    /* the stall watchdog's view of an untimed call (the rank cannot say it is stuck inside it) */
    double untimed_since;        /* wall time it entered its untimed call */
    double untimed_idle0;        /* the stall clock (ms_server.stall_clock) then */
    int untimed_stalled;         /* told the driver: inside it for shim.stall_timeout */
    char untimed_call[64];
    char untimed_site[MS_SITE_TEXT];
    /* the stall watchdog's view of a wait in the real MPI: the shim's notice that nothing has
     * completed for a while (WELCOME's stall_timeout_ps, at most MS_STALL_NOTICE_S), passed on to
     * the driver once the stall clock has counted shim.stall_timeout of idle time since the wait
     * began (a loaded machine's ranks that wait for a CPU are slow, not stuck) */
    char *suspect;               /* its text, NULL: none */
    double suspect_idle0;        /* the stall clock when the wait began */
    double suspect_since;        /* wall time the wait began */
    int suspect_passed;          /* told the driver */
    int suspect_thread;          /* the thread whose wait it is (MPI_THREAD_MULTIPLE) */
    /* a process stopped by a signal or a debugger (state T or t) does not move at all */
    double stopped_since;        /* wall time it was first seen stopped, 0: not stopped */
    int stopped_passed;          /* told the driver: stopped for shim.stall_timeout */
    double cont_at;              /* the run is stopped: SIGCONT sent then (SIGKILL 5 s later if still stopped) */
    /* lookahead (docs/architecture.md "Local answers"): the rank's last Test* or Iprobe, and where
     * the HINT before its negative answer waits in `out` for its quiet_until (flush_to) */
    int quiet_ask;               /* 1: a Test* of quiet_ids, 2: an Iprobe, 0: neither */
    int64_t quiet_t;
    uint64_t quiet_ids[16];
    int quiet_n;
    long hint_at;                /* offset of the HINT's payload in out, -1: none */
    int hint_probe;              /* it answers an Iprobe (else a Test of quiet_ids) */
    /* threads (MPI_THREAD_MULTIPLE): the thread its messages come from now; its others' parks */
    int cur_thread;
    thread_info th0;             /* thread 0 parked (pthread_join, a barrier) */
    thread_info *th;             /* index: thread - 1 */
    int nth;
    char violation[MS_TEXT_MAX]; /* threads called MPI at once under a lower thread level: the first time */
} rank_info;

typedef struct pending_conn {
    int fd;
    buf in;
    double deadline;
} pending_conn;


struct ms_server {
    const nm_config *cfg;
    ms_driver *drv;              /* the network, the model, rank states and clocks */
    int nranks;
    rank_info *ranks;
    int listen_fd;
    char secret[MS_SECRET_LEN + 1];
    pending_conn *pending;
    size_t npending, cap_pending;
    char **argv;
    int argc;
    ms_msg_welcome welcome;
    int deadlocked;              /* in virtual time, or the network's (its routing) */
    int stalled;                 /* the stall watchdog stopped the run (deadlock_text says where) */
    double stall_timeout_s;
    char deadlock_text[8192];
    int child_done, child_status;   /* the launcher's wait status */
    char stop_reason[MS_TEXT_MAX];
    int stopped;
    int abort_ranks;             /* with stopped: the ranks are sent ABORT (not when a signal ends the run:
                                  * the launcher ends them, and each flushes its trace as it goes) */
    volatile sig_atomic_t stop_signal;    /* ms_server_request_stop: the signal, once */
    volatile sig_atomic_t stop_forward;   /* ... to be passed to the launcher (it did not get it itself) */
    int stop_signal_seen;
    double forward_at;           /* when to pass it on, if the launcher is still there */
    int64_t events;
    int local_answers;           /* shim.local_answers: local sends and lookahead windows */
    uint64_t round_trips;        /* WAIT and PROBE messages: model round trips */
    uint64_t quiet_hints, quiet_given;   /* negative Test/Iprobe answers; those with a window */
    double wall_start, wall_end;
    uint64_t rejected_connections;
    int nconnected;              /* ranks that said hello (each at most once) */
    double accept_resume;        /* accept failed (no file descriptors): the listen socket rests until then */
    double last_connect;         /* wall time of the run's start or of the last rank's hello */
    double connect_timeout_s;    /* shim.connect_timeout */
    double kill_launcher_at;     /* the launcher was asked to end (connect timeout): SIGKILL after a grace */
    double ranks_gone_at;        /* every rank connected and has gone (finalized, died), launcher still running */
    double next_watch;           /* next look at the unconnected ranks' processes */
    /* idle time, not wall time (ms_proc.h): the connect timeout's clock over the launcher's
     * processes (running counts as progress) and the stall watchdog's over the ranks' (only
     * waiting for a CPU does: a spin is no progress) */
    ms_idle_clock connect_clock, stall_clock;
    double next_proc_look, next_connect_look;
    int *proc_pids;
    int proc_cap;
    char hostname[64];
    int watches;
    double accept_backoff;
    char machine[512];
    int describing;              /* a deadlock was found; waiting for the ranks to say where */
    int debug;
    double next_debug;
    double describe_deadline;
    char err[512];
    /* the shared-memory transport (ms_shm.h): ranks on this host */
    void *shm;
    size_t shm_bytes;
    char shm_name[64];
    int shm_unlinked;
    int tcp_ranks, shm_ranks;    /* connected through each */
    double next_pid_check;
    uint64_t shm_waits, shm_wakes;   /* the server's futex sleeps (report: transport) */
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define fail nm_fail   /* message into the caller's buffer, -1 (netmodel.h: one helper for all) */

/* How soon a rank waiting in the real MPI with nothing completing tells the server (at most; a
 * smaller shim.stall_timeout is used as it is): the server then counts shim.stall_timeout of idle
 * time from the wait's start before it calls it a stall (watch_stalls). */
#define MS_STALL_NOTICE_S 2.0
/* A wait that sees nothing complete for this many times shim.stall_timeout of wall time is a stall
 * however little of it was idle: a rank spinning inside the real MPI on a message that never
 * comes, on a machine so loaded that it always waits for a CPU, would otherwise never be found. */
#define MS_STALL_WALL_CAP 10.0
/* Looks at the job's processes in /proc (idle clocks, stopped processes): once a second. */
#define MS_PROC_LOOK_S 1.0

/* At least `room` free bytes after b->len (a first buffer of first_cap, then doublings); -1 if
 * out of memory. */
static int buf_room(buf *b, size_t room, size_t first_cap)
{
    if (b->cap - b->len >= room) return 0;
    size_t cap = b->cap ? b->cap : first_cap;
    while (cap - b->len < room) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

static int buf_put(buf *b, const void *p, size_t n)
{
    if (buf_room(b, n, 4096) < 0) return -1;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

static void send_msg(rank_info *r, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (r->fd < 0 && (!r->shm || r->shm_closed)) return;
    ms_msg_header h = {type, (uint32_t)(alen + blen)};
    buf_put(&r->out, &h, sizeof h);
    if (alen) buf_put(&r->out, a, alen);
    if (blen) buf_put(&r->out, b, blen);
}

/* A shared-memory rank: what fits in its down ring now (the rest on the next turn), then its
 * doorbell. The server never waits for a rank. */
static void flush_shm(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    r->hint_at = -1;   /* a HINT not yet filled in goes as it is: no promise */
    if (!r->out.len) return;
    if (r->shm_closed) {
        r->out.len = 0;
        return;
    }
    ms_shm_slot *sl = ms_shm_slot_at(s->shm, rank);
    size_t w = ms_ring_write(s->shm, &sl->down, r->out.p, r->out.len);
    if (!w) return;
    memmove(r->out.p, r->out.p + w, r->out.len - w);
    r->out.len -= w;
    ms_bell_ring(&sl->rank_bell);
}

static void flush_rank(rank_info *r)
{
    r->hint_at = -1;
    size_t off = 0;
    while (r->fd >= 0 && off < r->out.len) {
        /* a rank gone: EPIPE, never a SIGPIPE that would end mpisim */
        ssize_t w = send(r->fd, r->out.p + off, r->out.len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) {
            struct pollfd p = {r->fd, POLLOUT, 0};
            poll(&p, 1, 100);
            continue;
        }
        if (w <= 0) break; /* the rank is gone; its socket's close will be seen on read */
        off += (size_t)w;
    }
    r->out.len = 0;
}

/* Whatever the rank's transport: what is batched for it goes out now (or as its ring drains). */
static void flush_to(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    if (r->hint_at >= 0) {
        /* after the model has run: the promise covers what it did after the answer too */
        int64_t q[2];
        q[0] = ms_driver_quiet_until(s->drv, rank, r->quiet_t, r->quiet_ids, (size_t)r->quiet_n,
                                     r->hint_probe, &q[1]);
        if ((size_t)r->hint_at + sizeof q <= r->out.len) memcpy(r->out.p + r->hint_at, q, sizeof q);
        r->hint_at = -1;
        s->quiet_hints++;
        if (q[0] > r->quiet_t) s->quiet_given++;
    }
    if (s->ranks[rank].shm) flush_shm(s, rank);
    else flush_rank(&s->ranks[rank]);
}

static int rank_live(const rank_info *r) { return r->fd >= 0 || (r->shm && !r->shm_closed); }

/* ---------------------------------------------------------------------------------------- */

/* A wildcard sender the model decided: at once (a peer's real transfer may be waiting for the
 * real receive it allows); the driver gives them before any resume of the rank. */
static void on_resolve(void *user, int rank, const ms_resolution *rv)
{
    ms_server *s = user;
    ms_msg_resolve m = {rv->req, rv->bytes, rv->source, rv->tag};
    send_msg(&s->ranks[rank], MS_MSG_RESOLVE, &m, sizeof m, NULL, 0);
}

static void rank_error(ms_server *s, int rank, const char *text);
static void stop_run(ms_server *s);

static void on_resume(void *user, int rank, int thread, int64_t t, const ms_req_result *results, size_t n)
{
    ms_server *s = user;
    rank_info *rt = &s->ranks[rank];
    if (thread > 0 && thread <= rt->nth) rt->th[thread - 1].parked = rt->th[thread - 1].stalled = 0;   /* it rejoined */
    if (!thread) rt->th0.parked = rt->th0.stalled = 0;
    ms_msg_result small[16];
    ms_msg_result *out = n <= 16 ? small : malloc(sizeof *out * n);
    if (!out) {
        rank_error(s, rank, "out of memory for a resume (the rank would wait for ever)");
        stop_run(s);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        out[i].req = results[i].req;
        out[i].complete_time = results[i].complete_time;
        out[i].bytes = results[i].bytes;
        out[i].completed = results[i].completed;
        out[i].source = results[i].source;
        out[i].tag = results[i].tag;
        out[i].cancelled = results[i].cancelled;
    }
    rank_info *ri = &s->ranks[rank];
    int negative = ri->quiet_ask != 0 && s->local_answers;
    for (size_t i = 0; i < n && negative; i++)
        if (results[i].completed) negative = 0;
    ms_msg_hint hint = {0, 0, s->local_answers ? ms_model_cpu_free(ms_driver_model(s->drv), rank) : -1};
    send_msg(ri, MS_MSG_HINT, &hint, sizeof hint, NULL, 0);
    ri->hint_at = negative && ri->out.len >= sizeof hint ? (long)(ri->out.len - sizeof hint) : -1;
    ri->hint_probe = ri->quiet_ask == 2;
    ri->quiet_ask = 0;
    ms_msg_resume rs = {t, (int32_t)n, thread};
    send_msg(ri, MS_MSG_RESUME, &rs, sizeof rs, out, sizeof *out * n);
    if (out != small) free(out);
}

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
    static const ms_driver_ops ops = {on_resume, on_resolve};
    ms_driver_set_ops(s->drv, &ops, s);
    ms_driver_set_fn_names(s->drv, ms_fn_name_table, MS_FN_NAME_COUNT);
    const nm_network *net = ms_driver_network(s->drv);
    const nm_topology *topo = ms_driver_topology(s->drv);
    if (nm_network_may_deadlock(net)) {   /* before the run: it may stop in a network deadlock */
        nm_routing_info ri;
        nm_topology_routing_info(topo, &ri);
        fprintf(stderr, "mpisim: WARNING: routing '%s' on '%s' is not deadlock-free on engine '%s' (%s); "
                "network.routing=auto or updown avoids it\n", ri.routing, nm_topology_name(topo),
                nm_network_engine_name(net), ri.check_message);
    }
    const ms_model *model = ms_driver_model(s->drv);
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
    w->isend_cost_base_ps = ms_model_isend_cost(model, 0);
    w->isend_cost_per_byte_ps = ms_model_isend_cost(model, 1) - w->isend_cost_base_ps;
    w->irecv_cost_base_ps = ms_model_irecv_cost(model, 0);
    w->irecv_cost_per_byte_ps = ms_model_irecv_cost(model, 1) - w->irecv_cost_base_ps;
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
    if (s->local_answers && ms_model_local_send(model, &copy, &moves)) {
        w->local_send = 1;
        w->local_copy_ps_per_byte = copy;
    }
    w->recv_moves_cpu = moves;
    ms_model_params mp;
    ms_model_get_params(model, &mp);
    w->poll_cost_ps = mp.poll_cost;
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

/* ---------------------------------------------------------------------------------------- */

/* mpisim stops the run: ranks whose processes end from now on were ended by it ("stopped") */
static void stop_run(ms_server *s)
{
    if (!s->stopped) s->abort_ranks = 1;
    s->stopped = 1;
    ms_driver_stop(s->drv);
}

void ms_server_request_stop(ms_server *s, int sig, int forward)
{
    if (s->stop_signal) return;
    s->stop_forward = forward;
    s->stop_signal = sig;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    default: return "a signal";
    }
}

/* A signal ends the run (ms_server_request_stop): the ranks ending from now on were stopped, and
 * the launcher, which ends them, gets the signal a second later unless it got it itself (Ctrl-C
 * reaches the whole process group; two signals make Open MPI kill the ranks at once, before they
 * flush their traces). */
static void take_stop_signal(ms_server *s, pid_t child, int child_done)
{
    if (!s->stop_signal || s->stop_signal_seen) return;
    s->stop_signal_seen = 1;
    int sig = s->stop_signal;
    if (!s->stop_reason[0] && !s->deadlocked && !s->stalled)
        snprintf(s->stop_reason, sizeof s->stop_reason,
                 "ended by %s: the ranks were stopped (each rank's totals, call sites and charging as of its last "
                 "progress message, at most a second old)", signal_name(sig));
    if (!s->stopped) s->abort_ranks = 0;
    s->stopped = 1;
    ms_driver_stop(s->drv);
    if (s->stop_forward && !child_done && child > 0) s->forward_at = wall_now() + 1.0;
}

static void rank_error(ms_server *s, int rank, const char *text)
{
    rank_info *r = &s->ranks[rank];
    if (!r->error[0]) snprintf(r->error, sizeof r->error, "%.1000s", text);
    if (!s->stop_reason[0]) snprintf(s->stop_reason, sizeof s->stop_reason, "rank %d: %.1000s", rank, text);
}

static void count_unmodelled(rank_info *r, const char *name)
{
    for (size_t i = 0; i < r->n_unmodelled; i++)
        if (!strcmp(r->unmodelled[i].name, name)) {
            r->unmodelled[i].count++;
            return;
        }
    unmodelled_count *u = realloc(r->unmodelled, sizeof *u * (r->n_unmodelled + 1));
    if (!u) return;
    r->unmodelled = u;
    snprintf(u[r->n_unmodelled].name, sizeof u[0].name, "%.63s", name);
    u[r->n_unmodelled].count = 1;
    r->n_unmodelled++;
}

static void rank_gone(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    free(r->suspect);   /* the driver forgets a stall of a rank that has gone; so does the watch */
    r->suspect = NULL;
    if (r->shm) {
        r->shm_closed = 1;
        r->out.len = 0;
    }
    if (ms_driver_state(s->drv, rank) != MS_RANK_FINISHED && ms_driver_state(s->drv, rank) != MS_RANK_DEAD &&
        ms_driver_state(s->drv, rank) != MS_RANK_STOPPED) {
        /* the driver tells a rank that died (the first to end on its own) from those the launcher
         * or mpisim ended after it ("stopped"); the error says which */
        ms_rank_state st = r->stop_notice[0] ? ms_driver_rank_stopped(s->drv, rank) : ms_driver_rank_gone(s->drv, rank);
        char why[MS_TEXT_MAX];
        if (r->stop_notice[0] && ms_driver_first_dead(s->drv) >= 0)
            snprintf(why, sizeof why,
                     "the rank's process was %.900s after rank %d died (the launcher ends the job when a rank dies)",
                     r->stop_notice, ms_driver_first_dead(s->drv));
        else if (r->stop_notice[0])
            snprintf(why, sizeof why, "stopped: the rank's process was %.900s", r->stop_notice);
        else if (st == MS_RANK_DEAD && r->exit_known)
            snprintf(why, sizeof why, "the rank's process exited with code %d after MPI_Init without calling "
                                      "MPI_Finalize (the program's own exit, not a crash)", r->exit_code);
        else if (st == MS_RANK_DEAD)
            snprintf(why, sizeof why, "the rank's process ended without MPI_Finalize (crashed or killed)");
        else if (s->stopped)
            snprintf(why, sizeof why, "stopped by mpisim (see the run's outcome)");
        else
            snprintf(why, sizeof why,
                     "the rank's process ended without MPI_Finalize after rank %d died (the launcher ends the job "
                     "when a rank dies)",
                     ms_driver_first_dead(s->drv));
        if (!r->error[0]) rank_error(s, rank, why);
    }
}

/* Apply a decoded event, as from the thread the rank's messages come from now; a refusal by the
 * model stops the run, and so do figures beyond what the model's arithmetic holds (a rank's clock
 * past 2^62 ps, a message past 64 GiB: the bounds a trace is checked against too). */
static void apply(ms_server *s, int rank, ms_driver_event *e)
{
    char err[1024];
    if (e->t < 0 || e->t > MS_PROTO_MAX_CLOCK_PS || e->bytes > MS_PROTO_MAX_BYTES) {
        snprintf(err, sizeof err, "sent a clock of %lld ps or a size of %llu bytes, beyond the model's bounds",
                 (long long)e->t, (unsigned long long)e->bytes);
        rank_error(s, rank, err);
        stop_run(s);
        return;
    }
    e->thread = s->ranks[rank].cur_thread;
    if (ms_driver_apply(s->drv, rank, e, err, sizeof err) < 0) {
        rank_error(s, rank, err);
        stop_run(s);
    }
}

/* One message from a connected rank: the events go to the driver, decoded from the wire. */
static void handle(ms_server *s, int rank, uint32_t type, const char *p, uint32_t len)
{
    rank_info *r = &s->ranks[rank];
    ms_driver_event e;
    memset(&e, 0, sizeof e);
    e.fn = -1;
    s->events++;
    switch (type) {
    case MS_MSG_ISEND: {
        ms_msg_isend m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        e = (ms_driver_event){.kind = MS_EV_ISEND, .fn = m.fn, .t = m.t, .req = m.req, .comm = m.comm,
                              .bytes = m.bytes, .peer = m.dst, .tag = m.tag, .mode = m.mode, .buf = m.buf};
        apply(s, rank, &e);
        break;
    }
    case MS_MSG_IRECV: {
        ms_msg_irecv m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        e = (ms_driver_event){.kind = MS_EV_IRECV, .fn = m.fn, .t = m.t, .req = m.req, .comm = m.comm,
                              .bytes = m.bytes, .peer = m.src, .tag = m.tag, .buf = m.buf,
                              .flags = (m.flags & MS_IRECV_NOTIFY) ? MS_EV_FLAG_NOTIFY : 0};
        apply(s, rank, &e);
        break;
    }
    case MS_MSG_CANCEL:
    case MS_MSG_FREE: {   /* one request: MPI_Cancel, MPI_Request_free */
        ms_msg_cancel m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        e = (ms_driver_event){.kind = type == MS_MSG_CANCEL ? MS_EV_CANCEL : MS_EV_FREE, .fn = m.fn, .t = m.t,
                              .req = m.req};
        apply(s, rank, &e);
        break;
    }
    case MS_MSG_ICOLL: {
        ms_msg_icoll m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        if (len < sizeof m + sizeof(uint64_t) * (size_t)m.ncounts) break;
        uint64_t *counts = NULL;
        if (m.ncounts > 0) {
            counts = malloc(sizeof *counts * (size_t)m.ncounts);
            if (!counts) {
                rank_error(s, rank, "out of memory for a collective's counts");
                stop_run(s);
                break;
            }
            memcpy(counts, p + sizeof m, sizeof *counts * (size_t)m.ncounts);
        }
        e = (ms_driver_event){.kind = MS_EV_ICOLL, .fn = m.fn, .t = m.t, .req = m.req, .comm = m.comm,
                              .bytes = m.bytes, .peer = m.root, .mode = m.kind, .flags = m.inter_low, .list = counts,
                              .nlist = counts ? (size_t)m.ncounts : 0};
        apply(s, rank, &e);
        free(counts);
        break;
    }
    case MS_MSG_EXIT: {   /* its process exits with this code (before its process is seen gone) */
        ms_msg_exit m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        r->exit_known = 1;
        r->exit_code = m.code;
        r->exit_after_fin = m.finalized != 0;
        if (!m.finalized) ms_driver_rank_exit_code(s->drv, rank, m.code);
        break;
    }
    case MS_MSG_RMA: {
        ms_msg_rma m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        e = (ms_driver_event){.kind = MS_EV_RMA, .fn = m.fn, .t = m.t, .req = m.req, .comm = m.comm,
                              .bytes = m.bytes, .bytes_out = m.result_bytes, .peer = m.target, .mode = m.kind};
        apply(s, rank, &e);
        break;
    }
    case MS_MSG_COMM_ADD: {
        ms_msg_comm_add m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        if (m.size <= 0 || len < sizeof m + sizeof(int32_t) * (size_t)m.size) break;
        int32_t *w = malloc(sizeof *w * (size_t)m.size);   /* the payload may be unaligned */
        if (!w) {
            rank_error(s, rank, "out of memory for a communicator's members");
            stop_run(s);
            break;
        }
        memcpy(w, p + sizeof m, sizeof *w * (size_t)m.size);
        e = (ms_driver_event){.kind = MS_EV_COMM_ADD, .comm = m.comm, .members = w, .nmembers = m.size};
        apply(s, rank, &e);
        free(w);
        break;
    }
    case MS_MSG_WAIT: {
        ms_msg_wait m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        if (m.n < 0 || len < sizeof m + sizeof(uint64_t) * (size_t)m.n) break;
        uint64_t *ids = malloc(sizeof *ids * (size_t)(m.n ? m.n : 1));
        if (!ids) {
            rank_error(s, rank, "out of memory for a wait's requests");
            stop_run(s);
            break;
        }
        memcpy(ids, p + sizeof m, sizeof *ids * (size_t)m.n);
        s->round_trips++;
        r->quiet_ask = m.mode >= MS_TEST_ALL && m.n <= 16 && !m.flags ? 1 : 0;
        r->quiet_t = m.t;
        r->quiet_n = m.n;
        if (r->quiet_ask) memcpy(r->quiet_ids, ids, sizeof *ids * (size_t)m.n);
        e = (ms_driver_event){.kind = MS_EV_WAIT, .fn = m.fn, .t = m.t, .mode = m.mode, .list = ids,
                              .nlist = (size_t)m.n,
                              .flags = ((m.flags & MS_WAIT_FLAG_SYNC) ? MS_EV_FLAG_SYNC : 0) |
                                       ((m.flags & MS_WAIT_FLAG_UNTIMED) ? MS_EV_FLAG_REJOIN : 0)};
        apply(s, rank, &e);
        free(ids);
        break;
    }
    case MS_MSG_PROBE: {
        ms_msg_probe m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        s->round_trips++;
        r->quiet_ask = m.blocking || m.src == MS_PROC_NULL ? 0 : 2;
        r->quiet_t = m.t;
        r->quiet_n = 0;
        e = (ms_driver_event){.kind = MS_EV_PROBE, .fn = m.fn, .t = m.t, .comm = m.comm, .peer = m.src, .tag = m.tag,
                              .mode = m.blocking};
        apply(s, rank, &e);
        break;
    }
    case MS_MSG_CLOCK: {
        ms_msg_clock m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        e = (ms_driver_event){.kind = MS_EV_CLOCK, .t = m.t};
        apply(s, rank, &e);
        break;
    }
    case MS_MSG_FINALIZE: {
        if (len < sizeof r->fin) break;
        memcpy(&r->fin, p, sizeof r->fin);
        r->finalized = 1;
        e = (ms_driver_event){.kind = MS_EV_FINALIZE, .t = r->fin.t};
        apply(s, rank, &e);
        send_msg(r, MS_MSG_FIN_OK, NULL, 0, NULL, 0);
        break;
    }
    case MS_MSG_UNMODELLED: {
        char text[MS_TEXT_MAX];
        size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
        memcpy(text, p, n);
        text[n] = 0;
        if (!strncmp(text, "FATAL ", 6)) {
            rank_error(s, rank, text + 6);
            stop_run(s);
        } else if (!strncmp(text, "ABORT ", 6)) {
            rank_error(s, rank, text + 6);
        } else if (!strncmp(text, "STOP ", 5)) {
            /* its shim is being ended from outside (the launcher's SIGTERM after another rank
             * died, a batch system's): when its process goes, it did not fail itself */
            snprintf(r->stop_notice, sizeof r->stop_notice, "%.1000s", text + 5);
        } else {
            count_unmodelled(r, text);
            /* the call's name, then (after its NUL) where the program called it from: what the
             * stall watchdog says if the rank stays inside it */
            size_t name_len = strlen(text);
            snprintf(r->untimed_call, sizeof r->untimed_call, "%.63s", text);
            snprintf(r->untimed_site, sizeof r->untimed_site, "%s", name_len + 1 < n ? text + name_len + 1 : "");
            r->untimed_since = wall_now();
            r->untimed_idle0 = s->stall_clock.idle_s;
            r->untimed_stalled = 0;
            /* an untimed call: the rank does not hold the model back while it runs it */
            e.kind = MS_EV_UNTIMED;
            apply(s, rank, &e);
        }
        break;
    }
    case MS_MSG_SITE: {
        ms_msg_site m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        m.text[MS_SITE_TEXT - 1] = 0;
        size_t i;
        for (i = 0; i < r->nsites; i++)
            if (r->sites[i].fn == m.fn && !strcmp(r->sites[i].text, m.text)) break;
        if (i == r->nsites) {
            if (r->nsites == r->cap_sites) {
                size_t cap = r->cap_sites ? r->cap_sites * 2 : 16;
                site_total *q = realloc(r->sites, sizeof *q * cap);
                if (!q) break;
                r->sites = q;
                r->cap_sites = cap;
            }
            memset(&r->sites[i], 0, sizeof r->sites[i]);
            r->sites[i].fn = m.fn;
            memcpy(r->sites[i].text, m.text, sizeof m.text);
            r->nsites++;
        }
        /* totals so far: the newest replaces */
        r->sites[i].calls = m.calls;
        r->sites[i].bytes = m.bytes;
        r->sites[i].time_ps = m.time_ps;
        break;
    }
    case MS_MSG_PROGRESS: {
        if (len < sizeof r->progress) break;
        memcpy(&r->progress, p, sizeof r->progress);
        r->has_progress = 1;
        break;
    }
    case MS_MSG_STALL: {   /* the stall watchdog: where it waits in the real MPI; empty: it moves again */
        char text[MS_TEXT_MAX];
        size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
        memcpy(text, p, n);
        text[n] = 0;
        /* one suspect per rank, with the thread it came from: another thread moving says nothing
         * about it, a new notice replaces it */
        if (!text[0] && r->suspect && r->suspect_thread != r->cur_thread) break;
        if (r->suspect_passed && !r->stopped_passed) ms_driver_thread_stalled(s->drv, rank, r->suspect_thread, "");
        free(r->suspect);
        r->suspect = NULL;
        r->suspect_passed = 0;
        if (!text[0]) break;
        /* the driver hears of it once the stall clock has counted shim.stall_timeout since the
         * wait began, which the shim has seen for its notice time already */
        r->suspect = strdup(text);
        r->suspect_thread = r->cur_thread;
        r->suspect_idle0 = s->stall_clock.idle_s - (double)s->welcome.stall_timeout_ps * 1e-12;
        r->suspect_since = wall_now() - (double)s->welcome.stall_timeout_ps * 1e-12;
        s->next_proc_look = 0;   /* look now */
        break;
    }
    case MS_MSG_THREAD: {
        ms_msg_thread m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        m.why[sizeof m.why - 1] = 0;
        if (m.op == MS_THREAD_VIOLATION) {
            if (!r->violation[0])
                snprintf(r->violation, sizeof r->violation, "threads of rank %d called MPI at the same time at %.6f us "
                         "(%s)", rank, (double)m.t * 1e-6, m.why);
            break;
        }
        if (m.slot < 0 || m.slot > MS_MODEL_MAX_THREADS || m.op < MS_THREAD_SWITCH || m.op > MS_THREAD_END) {
            rank_error(s, rank, "named a thread or a thread operation out of range (protocol mismatch?)");
            stop_run(s);
            break;
        }
        r->cur_thread = m.slot;
        if (m.op == MS_THREAD_SWITCH) break;
        if (m.slot && m.slot > r->nth) {
            thread_info *q = realloc(r->th, sizeof *q * (size_t)m.slot);
            if (!q) {
                rank_error(s, rank, "out of memory for its threads");
                stop_run(s);
                break;
            }
            memset(q + r->nth, 0, sizeof *q * (size_t)(m.slot - r->nth));
            r->th = q;
            r->nth = m.slot;
        }
        thread_info *ti = m.slot ? &r->th[m.slot - 1] : &r->th0;
        if (m.op == MS_THREAD_PARK || m.op == MS_THREAD_IDLE) {
            ti->parked = 1;
            ti->stalled = 0;
            ti->since = wall_now();
            snprintf(ti->why, sizeof ti->why, "%s", m.why);
        } else {
            ti->parked = 0;
        }
        e = (ms_driver_event){.kind = m.op == MS_THREAD_PARK ? MS_EV_UNTIMED : m.op == MS_THREAD_IDLE ? MS_EV_IDLE
                                      : MS_EV_THREAD_END, .t = m.t};
        apply(s, rank, &e);
        break;
    }
    case MS_MSG_CALLSITE: {
        size_t n = len < sizeof r->callsite_text - 1 ? len : sizeof r->callsite_text - 1;
        memcpy(r->callsite_text, p, n);
        r->callsite_text[n] = 0;
        break;
    }
    default:
        rank_error(s, rank, "sent a message the server does not know (protocol mismatch?)");
        rank_gone(s, rank);
    }
}

/* Handle every complete message in the rank's input buffer; keep a partial one. */
static void drain_input(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    size_t off = 0;
    while (r->in.len - off >= sizeof(ms_msg_header) && rank_live(r)) {
        ms_msg_header h;
        memcpy(&h, r->in.p + off, sizeof h);
        uint32_t lo, hi;
        if (!ms_proto_rank_msg_bounds(h.type, &lo, &hi) || h.length < lo || h.length > hi) {
            /* never buffered: a length any rank could declare would otherwise be waited for */
            char why[256];
            snprintf(why, sizeof why, "sent a message of type %u with %u bytes, which no message of the protocol "
                     "has (protocol mismatch, or not mpisim's shim)", h.type, h.length);
            rank_error(s, rank, why);
            r->in.len = 0;
            rank_gone(s, rank);
            return;
        }
        if (r->in.len - off < sizeof h + h.length) break;
        handle(s, rank, h.type, r->in.p + off + sizeof h, h.length);
        off += sizeof h + h.length;
    }
    memmove(r->in.p, r->in.p + off, r->in.len - off);
    r->in.len -= off;
}

static void read_rank(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    for (;;) {
        if (buf_room(&r->in, 65536, 131072) < 0) return;
        ssize_t n = read(r->fd, r->in.p + r->in.len, r->in.cap - r->in.len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n <= 0) {
            /* process what arrived before the close */
            drain_input(s, rank);
            r->in.len = 0;
            rank_gone(s, rank);
            return;
        }
        r->in.len += (size_t)n;
        if (r->in.len < r->in.cap) break;
    }
    drain_input(s, rank);
}

static int secret_equal(const char *a, const char *b)
{
    unsigned char d = 0;
    for (int i = 0; i < MS_SECRET_LEN; i++) d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* Connections that have not said hello yet: at most this many at once (the oldest goes first,
 * it had the longest), each for at most MS_HELLO_DEADLINE_S. A rank says hello right after it
 * connects, so a few seconds cover oversubscribed nodes; strangers cannot hold the server's
 * descriptors or its poll loop for long. */
#define MS_HELLO_DEADLINE_S 5.0
static size_t pending_limit(const ms_server *s) { return (size_t)(s->nranks < 64 ? 64 : s->nranks); }

static void drop_pending(ms_server *s, size_t i, const char *why)
{
    if (why) {
        /* the first few are named; all are counted in the report (rejected_connections) */
        if (s->rejected_connections++ < 5)
            fprintf(stderr, "mpisim: refused a connection to the model server: %s%s\n", why,
                    s->rejected_connections == 5 ? " (further refusals are only counted in the report)" : "");
    }
    if (s->pending[i].fd >= 0 && why) close(s->pending[i].fd);
    free(s->pending[i].in.p);
    s->pending[i] = s->pending[--s->npending];
}

/* Whether a HELLO may join this run (NULL) or why not. */
static const char *check_hello(ms_server *s, const ms_msg_header *h, const ms_msg_hello *hello)
{
    if (h->type != MS_MSG_HELLO || h->length != sizeof *hello || hello->magic != MS_PROTO_MAGIC)
        return "not an mpisim rank";
    if (hello->version != MS_PROTO_VERSION || hello->sizes_check != ms_proto_sizes_check())
        return "a rank built from another mpisim version";
    if (!secret_equal(hello->secret, s->secret)) return "wrong secret (a rank of another run?)";
    if (hello->rank < 0 || hello->rank >= s->nranks || hello->size != s->nranks)
        return "rank or job size does not match this run";
    if (ms_driver_state(s->drv, hello->rank) != MS_RANK_UNCONNECTED) return "this rank is already connected";
    return NULL;
}

/* Every rank has attached (either way): nobody else may open the segment by its name. */
static void all_attached(ms_server *s)
{
    if (!s->shm || s->shm_unlinked || s->tcp_ranks + s->shm_ranks < s->nranks) return;
    shm_unlink(s->shm_name);
    s->shm_unlinked = 1;
}

static void accept_rank(ms_server *s, rank_info *r, const ms_msg_hello *hello)
{
    r->pid = hello->pid;
    memcpy(r->host, hello->hostname, sizeof r->host);
    r->host[sizeof r->host - 1] = 0;
    memcpy(r->binding, hello->binding, sizeof r->binding);
    r->binding[sizeof r->binding - 1] = 0;
    ms_driver_connect(s->drv, hello->rank);
    s->nconnected++;
    s->last_connect = wall_now();
    s->connect_clock.idle_s = 0;   /* a rank connected: the startup moves */
    send_msg(r, MS_MSG_WELCOME, &s->welcome, sizeof s->welcome, NULL, 0);
}

/* A connection that has not yet said who it is. */
static void read_pending(ms_server *s, size_t i)
{
    pending_conn *c = &s->pending[i];
    char tmp[sizeof(ms_msg_header) + sizeof(ms_msg_hello)];
    ssize_t n = read(c->fd, tmp, sizeof tmp - c->in.len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
        drop_pending(s, i, "closed before introducing itself");
        return;
    }
    buf_put(&c->in, tmp, (size_t)n);
    if (c->in.len < sizeof tmp) return;
    ms_msg_header h;
    ms_msg_hello hello;
    memcpy(&h, c->in.p, sizeof h);
    memcpy(&hello, c->in.p + sizeof h, sizeof hello);
    const char *why = check_hello(s, &h, &hello);
    if (why) {
        drop_pending(s, i, why);
        return;
    }
    rank_info *r = &s->ranks[hello.rank];
    r->fd = c->fd;
    accept_rank(s, r, &hello);
    flush_rank(r);
    s->tcp_ranks++;
    c->fd = -1;
    drop_pending(s, i, NULL);
    all_attached(s);
}

/* ---- the shared-memory transport ---------------------------------------------------------- */

/* Slot `rank` has bytes up (a HELLO from a rank attaching, or messages of an attached rank), or
 * its rank left. */
static void read_shm_rank(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    ms_shm_slot *sl = ms_shm_slot_at(s->shm, rank);
    uint32_t state = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
    if (r->shm_closed || state == MS_SLOT_REFUSED) return;
    for (;;) {
        if (buf_room(&r->in, 65536, 131072) < 0) return;
        size_t n = ms_ring_read(s->shm, &sl->up, r->in.p + r->in.len, r->in.cap - r->in.len);
        r->in.len += n;
        if (n == 0 || r->in.len < r->in.cap) break;
    }
    if (!r->shm) {
        /* authenticated as a TCP connection is: the slot says which rank it is, the HELLO must agree */
        ms_msg_header h;
        ms_msg_hello hello;
        if (r->in.len < sizeof h + sizeof hello) return;
        memcpy(&h, r->in.p, sizeof h);
        memcpy(&hello, r->in.p + sizeof h, sizeof hello);
        const char *why = check_hello(s, &h, &hello);
        if (!why && (hello.rank != rank || r->fd >= 0)) why = "its slot in the shared segment is another rank's";
        if (why) {
            s->rejected_connections++;
            fprintf(stderr, "mpisim: refused a rank attaching through shared memory: %s\n", why);
            __atomic_store_n(&sl->state, MS_SLOT_REFUSED, __ATOMIC_RELEASE);
            ms_bell_ring(&sl->rank_bell);
            r->in.len = 0;
            return;
        }
        r->shm = 1;
        s->shm_ranks++;
        memmove(r->in.p, r->in.p + sizeof h + sizeof hello, r->in.len - sizeof h - sizeof hello);
        r->in.len -= sizeof h + sizeof hello;
        accept_rank(s, r, &hello);
        flush_shm(s, rank);
        all_attached(s);
    }
    drain_input(s, rank);
    if (state == MS_SLOT_CLOSED) {   /* read after the state: what it wrote before it left is in */
        r->in.len = 0;
        rank_gone(s, rank);
    }
}

/* Read every slot written since the last look; how many there were. */
static int read_shm(ms_server *s)
{
    int got = 0;
    for (int w = 0; w < ms_shm_dirty_words(s->nranks); w++) {
        uint64_t bits = ms_shm_take_dirty(s->shm, w);
        while (bits) {
            int b = __builtin_ctzll(bits);
            bits &= bits - 1;
            read_shm_rank(s, w * 64 + b);
            got++;
        }
    }
    return got;
}

/* A rank attached through shared memory has no socket whose close says it died: look at its
 * process now and then (it runs on this host, in this PID namespace). */
static void check_shm_pids(ms_server *s, int launcher_done)
{
    for (int i = 0; i < s->nranks; i++) {
        rank_info *r = &s->ranks[i];
        if (!r->shm || r->shm_closed) continue;
        if (launcher_done || ms_shm_pid_gone(r->pid)) {
            read_shm_rank(s, i);   /* what it wrote before it went */
            if (!r->shm_closed) rank_gone(s, i);
        }
    }
}

int ms_server_shm(ms_server *s, char *name, size_t len, char *err, size_t errlen)
{
    /* The name is visible to every user in /dev/shm, so it carries a token of its own, not the
     * secret the ranks present (which stays in their environment); mode 0600 keeps other users
     * out, and the name goes once every rank has attached. */
    unsigned char raw[8];
    int rfd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (rfd < 0 || read(rfd, raw, sizeof raw) != (ssize_t)sizeof raw) {
        if (rfd >= 0) close(rfd);
        return fail(err, errlen, "cannot read /dev/urandom for the shared segment's name");
    }
    close(rfd);
    int o = snprintf(s->shm_name, sizeof s->shm_name, "/mpisim-%d-", (int)getpid());
    for (size_t i = 0; i < sizeof raw; i++) o += snprintf(s->shm_name + o, sizeof s->shm_name - (size_t)o, "%02x", raw[i]);
    int fd = shm_open(s->shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return fail(err, errlen, "cannot create the shared segment %s: %s", s->shm_name, strerror(errno));
    s->shm_bytes = ms_shm_bytes(s->nranks);
    /* every page allocated now: a sparse segment on a tmpfs someone fills meanwhile gives SIGBUS at
     * the first write of a ring (mpisim and the ranks died so, "Bus error", no report) */
    int e = fchmod(fd, 0600) < 0 ? errno : posix_fallocate(fd, 0, (off_t)s->shm_bytes);
    if (e) {
        close(fd);
        shm_unlink(s->shm_name);
        return fail(err, errlen, "cannot allocate the shared segment (%zu KiB for %d ranks) in /dev/shm: %s",
                    s->shm_bytes >> 10, s->nranks, strerror(e));
    }
    void *base = mmap(NULL, s->shm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        shm_unlink(s->shm_name);
        return fail(err, errlen, "cannot map the shared segment: %s", strerror(errno));
    }
    ms_shm_init(base, s->nranks);
    ((ms_shm_header *)base)->server_pid = (int32_t)getpid();
    s->shm = base;
    snprintf(name, len, "%s", s->shm_name);
    return 0;
}

static void drop_oldest_pending(ms_server *s, const char *why)
{
    size_t old = 0;
    for (size_t i = 1; i < s->npending; i++)
        if (s->pending[i].deadline < s->pending[old].deadline) old = i;
    if (s->npending) drop_pending(s, old, why);
}

static void accept_all(ms_server *s)
{
    for (int k = 0; k < 256; k++) {   /* a bounded batch: the ranks' traffic goes on meanwhile */
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* out of descriptors: the listen socket stays readable, and polling it again at
                 * once would spin. Free one (the oldest stranger) and rest the socket a while,
                 * longer each time it happens again */
                drop_oldest_pending(s, "no file descriptors left for new connections");
                s->accept_backoff = s->accept_backoff > 0 ? s->accept_backoff * 2 : 0.01;
                if (s->accept_backoff > 1.0) s->accept_backoff = 1.0;
                s->accept_resume = wall_now() + s->accept_backoff;
            }
            return;
        }
        s->accept_backoff = 0;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (s->npending >= pending_limit(s)) drop_oldest_pending(s, "too many connections that have not said hello");
        if (s->npending == s->cap_pending) {
            size_t nc = s->cap_pending ? s->cap_pending * 2 : 64;
            pending_conn *q = realloc(s->pending, sizeof *q * nc);
            if (!q) {
                close(fd);
                s->rejected_connections++;
                continue;
            }
            s->pending = q;
            s->cap_pending = nc;
        }
        pending_conn *c = &s->pending[s->npending++];
        memset(c, 0, sizeof *c);
        c->fd = fd;
        c->deadline = wall_now() + MS_HELLO_DEADLINE_S;
    }
}

/* A deadlock: ask every waiting rank where its program called from, report when they said. */
static void start_describe(ms_server *s)
{
    for (int i = 0; i < s->nranks; i++)
        if (ms_driver_waiting(s->drv, i)) {
            s->ranks[i].callsite_text[0] = 0;
            send_msg(&s->ranks[i], MS_MSG_DESCRIBE, NULL, 0, NULL, 0);
        }
    s->describing = 1;
    s->describe_deadline = wall_now() + 3.0;
}

static int described_all(const ms_server *s)
{
    for (int i = 0; i < s->nranks; i++)
        if (ms_driver_waiting(s->drv, i) && rank_live(&s->ranks[i]) && !s->ranks[i].callsite_text[0]) return 0;
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
    stop_run(s);
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
    return r->pid > 0 && rank_live(r) && (r->shm || !strncmp(r->host, s->hostname, sizeof r->host)) ? r->pid : 0;
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
        if (!rank_live(r)) continue;
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
        stop_run(s);
    } else if (rc == 1 && !s->describing) {
        start_describe(s);
    } else if (rc == 2) {   /* the network deadlocked: a deadlock too (exit 3), explained by the driver */
        s->deadlocked = 1;
        snprintf(s->deadlock_text, sizeof s->deadlock_text, "%s", err);
        stop_run(s);
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
    stop_run(s);
    if (launcher > 0) {
        kill(launcher, SIGTERM);
        s->kill_launcher_at = wall_now();
    }
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
        /* the launcher's end, looked for at most once a millisecond: a waitpid per pass was one
         * of the server's two system calls per model round trip (bench_shim.py) */
        if (!child_done && wall_now() >= next_reap) {
            next_reap = wall_now() + 0.001;
            int st;
            pid_t w = waitpid(child, &st, WNOHANG);
            if (w == child) {
                child_done = 1;
                s->child_done = 1;
                s->child_status = st;
                if (child_status) *child_status = st;
            }
        }
        int live = 0;
        for (int i = 0; i < s->nranks; i++)
            if (rank_live(&s->ranks[i])) live++;
        if (child_done && !live) break;
        /* every rank has gone but the launcher has not: Open MPI can hang in its own shutdown (seen
         * under --enable-recovery with a dead peer, ranks inside PMPI_Finalize). Nothing is left to
         * model, so after a generous grace the launcher is asked to end (SIGKILL 5 s later), rather
         * than mpisim waiting for ever and leaving it behind when someone kills mpisim */
        if (!child_done && !live && child > 0 && connected_all(s)) {
            if (s->ranks_gone_at == 0) s->ranks_gone_at = wall_now();
            else if (s->kill_launcher_at == 0 && wall_now() > s->ranks_gone_at + 60.0) {
                fprintf(stderr, "mpisim: every rank has left, but the launcher is still running after 60 s; "
                                "ending it\n");
                kill(child, SIGTERM);
                s->kill_launcher_at = wall_now();
            }
        }

        take_stop_signal(s, child, child_done);
        if (s->forward_at > 0 && wall_now() >= s->forward_at) {
            s->forward_at = 0;
            if (!child_done) {
                kill(child, SIGTERM);
                s->kill_launcher_at = wall_now();   /* SIGKILL if it does not end (below) */
            }
        }
        if (s->stopped && s->abort_ranks && !aborted_sent) {
            char text[MS_TEXT_MAX];
            if (s->deadlocked || s->stalled) snprintf(text, sizeof text, "%.*s", (int)sizeof text - 1, s->deadlock_text);
            else snprintf(text, sizeof text, "%s", s->stop_reason[0] ? s->stop_reason : "stopped");
            ms_msg_text t;
            memset(&t, 0, sizeof t);
            /* the first line of the deadlock, stall or error (the shim prints up to the newline); the
             * rest is in the report */
            snprintf(t.text, sizeof t.text, "%.*s", (int)sizeof t.text - 1, text);
            for (int i = 0; i < s->nranks; i++) {
                send_msg(&s->ranks[i], MS_MSG_ABORT, &t, sizeof t, NULL, 0);
                flush_to(s, i);
            }
            aborted_sent = 1;
        }

        size_t nf = 0;
        if (s->npending + (size_t)s->nranks + 1 > nfds_cap) {
            size_t nc = s->npending + (size_t)s->nranks + 65;
            struct pollfd *np = realloc(pfds, sizeof *pfds * nc);
            if (np) pfds = np;
            int *nw = np ? realloc(who, sizeof *who * nc) : NULL;
            if (nw) who = nw;
            if (!np || !nw) {
                free(pfds);
                free(who);
                return fail(err, errlen, "out of memory for %zu connections", nc);
            }
            nfds_cap = nc;
        }
        /* a resting listen socket (see accept_all) is polled for nothing */
        pfds[nf] = (struct pollfd){s->listen_fd, (short)(wall_now() >= s->accept_resume ? POLLIN : 0), 0};
        who[nf++] = -1;
        for (int i = 0; i < s->nranks; i++)
            if (s->ranks[i].fd >= 0) {
                pfds[nf] = (struct pollfd){s->ranks[i].fd, POLLIN, 0};
                who[nf++] = i;
            }
        for (size_t i = 0; i < s->npending; i++) {
            pfds[nf] = (struct pollfd){s->pending[i].fd, POLLIN, 0};
            who[nf++] = -2 - (int)i;
        }
        int idle_ms = child_done ? 200 : 20;
        int n;
        if (s->shm) {
            /* Ranks on this host write their rings and ring one doorbell: read what they wrote,
             * then sleep on the doorbell (a futex; 1 ms at most while a TCP connection is open,
             * whose sockets are polled between). The server does not spin: the waiting ranks do,
             * briefly, and with more processes than cores a spinning server only delays the
             * report it waits for (bench_shim.py: spinning 400 rounds gave no faster round trip
             * and twice the context switches). */
            ms_shm_header *hdr = s->shm;
            uint32_t seen = ms_bell_seq(&hdr->server_bell);
            int got = read_shm(s);
            /* sockets only when there are any: the listener (TCP) or connections (pending or a
             * rank's); a poll of nothing was a system call per pass */
            int sockets = nf > 1 || s->listen_fd >= 0;
            n = sockets ? poll(pfds, nf, 0) : 0;
            if (n < 0 && errno != EINTR) return fail(err, errlen, "poll failed: %s", strerror(errno));
            if (!got && n <= 0) {
                int tcp_open = nf > 1;
                s->shm_waits++;
                ms_bell_wait(&hdr->server_bell, seen, (int64_t)(tcp_open ? 1 : idle_ms) * 1000000, NULL, NULL);
                if (tcp_open) n = poll(pfds, nf, 0);
                read_shm(s);
            }
            double t = wall_now();
            if (t >= s->next_pid_check) {
                s->next_pid_check = t + 0.05;
                check_shm_pids(s, 0);
            }
        } else {
            /* Just after traffic, while a rank waits for an answer, poll without sleeping (yielding
             * the CPU to the ranks) for a while: the report it needs usually follows within
             * microseconds, and waking a sleeping CPU costs tens of them on a virtual machine. While
             * every rank computes, sleep: spinning beside them would slow the computation whose CPU
             * time is being measured. */
            int spin = idle_polls < (unsigned)s->welcome.spin_polls && ms_driver_any_waiting(s->drv);
            n = poll(pfds, nf, spin ? 0 : idle_ms);
            if (n < 0 && errno != EINTR) return fail(err, errlen, "poll failed: %s", strerror(errno));
            if (n > 0) idle_polls = 0;
            else if (spin && idle_polls++ < (unsigned)s->welcome.spin_polls) sched_yield();
        }
        if (n > 0) {
            /* pending connections first (indices shift when one is dropped: go backwards) */
            for (size_t k = nf; k-- > 0;)
                if (who[k] <= -2 && (pfds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                    read_pending(s, (size_t)(-2 - who[k]));
            if (pfds[0].revents & POLLIN) accept_all(s);
            for (size_t k = 1; k < nf; k++)
                if (who[k] >= 0 && (pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) read_rank(s, who[k]);
        }
        double now = wall_now();
        for (size_t i = s->npending; i-- > 0;)
            if (now > s->pending[i].deadline) drop_pending(s, i, "did not say hello within 5 s");
        /* only while ranks are missing, once a second: the launcher's processes in /proc, far too
         * costly for every pass of the loop (hpcc's run took 5x longer when it looked at /proc
         * every pass); their idle time is the connect timeout's clock */
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
        if (s->debug && now > s->next_debug) {
            /* MPISIM_DEBUG: the server's view once a second, to diagnose a stuck run */
            s->next_debug = now + 1.0;
            fprintf(stderr, "mpisim-debug: H=%lld next=%lld net_now=%lld", (long long)ms_driver_horizon(s->drv),
                    (long long)ms_model_next_time(ms_driver_model(s->drv)),
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
        for (int i = 0; i < s->nranks; i++) flush_to(s, i);
    }
    if (s->shm) check_shm_pids(s, 1);
    note_early_exits(s);
    /* The launcher was killed (mpirun never dies of a signal on its own; mpisim's own SIGKILL comes
     * only after it stopped the run): its ranks went because of it, none died on its own */
    if (s->child_done && WIFSIGNALED(s->child_status) && !s->stopped) {
        int all = 1;
        for (int i = 0; i < s->nranks; i++) all &= s->ranks[i].finalized;
        if (!all) {
            ms_driver_absolve(s->drv);
            snprintf(s->stop_reason, sizeof s->stop_reason,
                     "the launcher was killed by %s before every rank reached MPI_Finalize: the ranks were stopped",
                     signal_name(WTERMSIG(s->child_status)));
            for (int i = 0; i < s->nranks; i++)
                if (!s->ranks[i].finalized && ms_driver_state(s->drv, i) == MS_RANK_STOPPED)
                    snprintf(s->ranks[i].error, sizeof s->ranks[i].error, "stopped: the launcher was killed by %s",
                             signal_name(WTERMSIG(s->child_status)));
        }
    }
    s->wall_end = wall_now();
    free(pfds);
    free(who);
    return 0;
}

/* The launcher's exit code when it failed although every rank finalized (Open MPI's own
 * shutdown: "exiting improperly" at high oversubscription); 0 otherwise. */
static int launcher_failed_after_finalize(const ms_server *s)
{
    if (!s->child_done) return 0;
    int code = WIFEXITED(s->child_status) ? WEXITSTATUS(s->child_status)
               : WIFSIGNALED(s->child_status) ? 128 + WTERMSIG(s->child_status) : 0;
    if (!code) return 0;
    for (int i = 0; i < s->nranks; i++)
        if (!s->ranks[i].finalized) return 0;
    return code;
}

/* The first rank whose process exited with a non-zero code of its own after MPI_Finalize (its
 * shim said so): then the launcher's failure is the program's exit code, not the MPI library's
 * shutdown. -1 if none. */
static int exit_after_finalize(const ms_server *s, int *code)
{
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].exit_known && s->ranks[i].exit_after_fin && s->ranks[i].exit_code) {
            *code = s->ranks[i].exit_code;
            return i;
        }
    return -1;
}

/* "MPI_File_open (4 calls), ..." over every rank; the number of distinct calls. */
static size_t untimed_calls(const ms_server *s, char *buf, size_t len)
{
    size_t n = 0;
    for (int i = 0; i < s->nranks; i++) n += s->ranks[i].n_unmodelled;
    if (len) buf[0] = 0;
    if (!n) return 0;
    const char **names = malloc(sizeof *names * n);
    uint64_t *counts = malloc(sizeof *counts * n);
    if (!names || !counts) {
        free(names);
        free(counts);
        snprintf(buf, len, "(out of memory naming them)");
        return 1;
    }
    size_t k = 0;
    for (int i = 0; i < s->nranks; i++)
        for (size_t j = 0; j < s->ranks[i].n_unmodelled; j++) {
            names[k] = s->ranks[i].unmodelled[j].name;
            counts[k++] = s->ranks[i].unmodelled[j].count;
        }
    ms_untimed_text(names, counts, n, buf, len);
    free(names);
    free(counts);
    return n;
}

int ms_server_outcome(const ms_server *s, char *buf, size_t len)
{
    if (s->deadlocked) {
        snprintf(buf, len, "%s", s->deadlock_text);
        return MS_OUTCOME_DEADLOCK;
    }
    if (s->stalled) {
        snprintf(buf, len, "%s", s->deadlock_text);
        return MS_OUTCOME_STALL;
    }
    if (s->stop_reason[0]) {
        snprintf(buf, len, "%s", s->stop_reason);
        return MS_OUTCOME_ERROR;
    }
    /* the ranks that left first (the launcher may end the others after them): by their own word
     * when their shim could say it (exact), else by the look at /proc that found them gone */
    int first_look = 0, nfirst = 0, first_rank = -1, never = 0, first = -1, nexact = 0, first_order = 0;
    for (int i = 0; i < s->nranks; i++) {
        int l = s->ranks[i].left_before_init, o = s->ranks[i].left_order;
        if (l && (!first_look || l < first_look)) first_look = l;
        if (o) nexact++;
        if (o && (!first_order || o < first_order)) {
            first_order = o;
            first_rank = i;
        }
        if (s->drv && ms_driver_state(s->drv, i) == MS_RANK_UNCONNECTED && never++ == 0) first = i;
    }
    if (nexact) {
        nfirst = nexact;   /* for the test below: all of them left on their own */
    } else {
        for (int i = 0; i < s->nranks && first_look; i++)
            if (s->ranks[i].left_before_init == first_look && nfirst++ == 0) first_rank = i;
    }
    /* all ranks leaving together without connecting is a program that does not use MPI (or
     * stops before it): its own exit code is the answer, below */
    if (first_rank >= 0 && !(never == s->nranks && nfirst == s->nranks)) {
        snprintf(buf, len,
                 "rank %d%s exited before MPI_Init (its process was gone before it connected to the model server); "
                 "the others could not start",
                 first_rank, !nexact && nfirst > 1 ? " (and others with it)" : nexact > 1 ? " (and others after it)" : "");
        return MS_OUTCOME_ERROR;
    }
    if (never) {
        snprintf(buf, len,
                 "%d of %d ranks never connected to the model server, the first rank %d (did the program call "
                 "MPI_Init? the launcher's messages may name a rank that left before it)",
                 never, s->nranks, first);
        return MS_OUTCOME_NEVER_CONNECTED;
    }
    /* threads that called MPI at once under a level that forbids it: the real MPI was not prepared
     * for it, and the times are not those of a correct program */
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].violation[0]) {
            int nr = 0;
            for (int j = 0; j < s->nranks; j++) nr += s->ranks[j].violation[0] != 0;
            snprintf(buf, len, "%s: the program asked for a thread level that forbids it (it needs "
                     "MPI_THREAD_MULTIPLE; %d rank(s) did so); its virtual times are not those of a correct program",
                     s->ranks[i].violation, nr);
            return MS_OUTCOME_THREAD_LEVEL;
        }
    /* complete, but calls ran untimed (passthrough, MPI-IO): named, with their counts over the ranks */
    char calls[2048];
    if (untimed_calls(s, calls, sizeof calls)) {
        uint64_t n = 0;
        for (int i = 0; i < s->nranks; i++)
            for (size_t k = 0; k < s->ranks[i].n_unmodelled; k++) n += s->ranks[i].unmodelled[k].count;
        ms_untimed_outcome_text(calls, n, buf, len);
        return MS_OUTCOME_UNTIMED;
    }
    if (len) buf[0] = 0;
    return MS_OUTCOME_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* report */

/* How the rank measured its computation (docs/architecture.md "Virtual time in a rank") */
/* Every rank's call sites summed per (function, site): totals over the ranks, and the least and
 * most one rank spent there. A rank that never finalized counts with its last PROGRESS's. */
static site_total *gather_sites(const ms_server *s, size_t *n)
{
    site_total *all = NULL;
    size_t cap = 0;
    *n = 0;
    for (int r = 0; r < s->nranks; r++)
        for (size_t k = 0; k < s->ranks[r].nsites; k++) {
            const site_total *m = &s->ranks[r].sites[k];
            size_t i;
            for (i = 0; i < *n; i++)
                if (all[i].fn == m->fn && !strcmp(all[i].text, m->text)) break;
            if (i == *n) {
                if (*n == cap) {
                    cap = cap ? cap * 2 : 64;
                    site_total *q = realloc(all, sizeof *q * cap);
                    if (!q) return all;   /* what fitted */
                    all = q;
                }
                all[i] = *m;
                all[i].calls = all[i].bytes = 0;
                all[i].time_ps = 0;
                all[i].ranks = 0;
                (*n)++;
            }
            all[i].calls += m->calls;
            all[i].bytes += m->bytes;
            /* the ranks' figures, summed without overflow */
            if (__builtin_add_overflow(all[i].time_ps, m->time_ps, &all[i].time_ps))
                all[i].time_ps = m->time_ps < 0 ? INT64_MIN : INT64_MAX;
            if (!all[i].ranks || m->time_ps < all[i].rank_min_ps) all[i].rank_min_ps = m->time_ps;
            if (!all[i].ranks || m->time_ps > all[i].rank_max_ps) all[i].rank_max_ps = m->time_ps;
            all[i].ranks++;
        }
    return all;
}

static void write_charging(FILE *f, const ms_msg_charging *c)
{
    static const char *const methods[] = {"none", "task-clock", "syscall", "wall"};
    const char *m = c->method >= 0 && c->method < 4 ? methods[c->method] : "?";
    fprintf(f,
            ", \"charging\": {\"method\": \"%s\", \"baseline_ns\": %lld, \"page_misses\": %llu, \"woken_gaps\": %llu, \"woken_raw_ns\": %lld, \"gaps\": %llu, "
            "\"descheduled_gaps\": %llu, \"cpu_clock_syscalls\": %llu, \"raw_ns\": %lld, \"compensated_ns\": %lld, "
            "\"wall_ns\": %lld, \"descheduled_ns\": %lld, \"woken_charged_ns\": %lld, \"return_comp_ns\": %lld, "
            "\"cold_baseline_ns\": %lld, \"cold_trials\": %llu, \"window_gaps\": %llu, \"window_baseline_ns\": %lld, "
            "\"window_cold_ns\": %lld, \"counter_ghz\": %.6f, \"probes\": %llu, "
            "\"floor_gaps\": %llu, \"floor_added_ns\": %lld, \"floor_dropped_ns\": %lld, "
            "\"stall_gaps\": %llu, \"stall_dropped_ns\": %lld, "
            "\"gate_slots\": %d, \"gate_waits\": %llu, \"gate_wait_ns\": %lld, \"gate_timeouts\": %llu}",
            m, (long long)c->baseline_ns, (unsigned long long)c->page_misses,
            (unsigned long long)c->woken_gaps, (long long)c->woken_raw_ns, (unsigned long long)c->gaps,
            (unsigned long long)c->descheduled_gaps, (unsigned long long)c->syscalls, (long long)c->raw_ns,
            (long long)c->compensated_ns, (long long)c->wall_ns, (long long)c->descheduled_ns,
            (long long)c->woken_charged_ns, (long long)c->return_comp_ns, (long long)c->cold_baseline_ns,
            (unsigned long long)c->cold_trials, (unsigned long long)c->window_gaps, (long long)c->window_baseline_ns,
            (long long)c->window_cold_ns, c->window_ps_per_tick > 0 ? 1e9 / (double)c->window_ps_per_tick : 0.0,
            (unsigned long long)c->probes,
            (unsigned long long)c->floor_gaps, (long long)c->floor_added_ns, (long long)c->floor_dropped_ns,
            (unsigned long long)c->stall_gaps, (long long)c->stall_dropped_ns, (int)c->gate_slots,
            (unsigned long long)c->gate_waits, (long long)c->gate_wait_ns, (unsigned long long)c->gate_timeouts);
}

/* Why this run's charged computation may mislead (docs/architecture.md "Warnings"), from the
 * ranks' charging blocks: one line each into buf, separated by '\n'; the number of lines. */
int ms_server_measurement_warnings(const ms_server *s, char *buf, size_t len)
{
    double gaps = 0, woken = 0, raw = 0, woken_raw = 0, wall = 0, desched = 0, misses = 0, base = 0;
    double timeouts = 0, charged = 0, woken_charged = 0, rcomp = 0, stalls = 0, stall_ns = 0;
    double stall_share = 0;   /* the largest share of a rank's virtual time the stall rule did not charge */
    int n = 0, syscall_ranks = 0, slots1 = 0;
    for (int i = 0; i < s->nranks; i++) {
        const ms_msg_charging *c = &s->ranks[i].fin.charging;
        if (!s->ranks[i].finalized || c->method == MS_CHARGING_NONE) continue;
        n++;
        gaps += (double)c->gaps;
        woken += (double)c->woken_gaps;
        raw += (double)c->raw_ns;
        woken_raw += (double)c->woken_raw_ns;
        wall += (double)c->wall_ns;
        desched += (double)c->descheduled_ns;
        misses += (double)c->page_misses;
        if (c->baseline_ns > base) base = (double)c->baseline_ns;
        if (c->method == MS_CHARGING_SYSCALL) syscall_ranks++;
        timeouts += (double)c->gate_timeouts;
        charged += (double)c->raw_ns - (double)c->compensated_ns;   /* a rank's figures: no int64 overflow */
        woken_charged += (double)c->woken_charged_ns;
        rcomp += (double)c->return_comp_ns;
        stalls += (double)c->stall_gaps;
        stall_ns += (double)c->stall_dropped_ns;
        double t_ns = (double)s->ranks[i].fin.t / 1e3;
        if (t_ns > 0 && (double)c->stall_dropped_ns / t_ns > stall_share) stall_share = (double)c->stall_dropped_ns / t_ns;
        if (c->gate_slots > slots1) slots1 = c->gate_slots;
    }
    int k = 0;
    size_t off = 0;
    if (len) buf[0] = '\0';
#define WARN(...)                                                                                                  \
    do {                                                                                                           \
        if (off < len) off += (size_t)snprintf(buf + off, len - off, __VA_ARGS__);                                \
        if (off < len) off += (size_t)snprintf(buf + off, len - off, "\n");                                        \
        k++;                                                                                                       \
    } while (0)
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].violation[0])
            WARN("%s under a thread level that forbids it (the run's outcome is thread_level): the shim made "
                 "them take turns, but the real MPI was not prepared for it", s->ranks[i].violation);
    if (!n) return k;
    if (wall > 0 && desched / wall > 0.25)
        WARN("the ranks were switched out during %.0f %% of the wall time of their computation: more runnable "
             "threads than cores (ranks, the model server, other jobs); CPU time is charged, but a shared core's "
             "caches and the hypervisor's share make it less reliable",
             100 * desched / wall);
    /* gaps after a switched-out MPI call start on cold caches: compare their mean with the others',
     * and say how much of the charge they are (docs/architecture.md "The cold return path") */
    double share = charged > 0 ? 100 * woken_charged / charged : 0;
    if (gaps - woken >= 10 && woken >= 10 && raw > 0) {
        double excess = woken_raw / woken - (raw - woken_raw) / (gaps - woken);
        if (excess > 0 && excess * woken / raw > 0.05)
            WARN("%.0f of %.0f computation intervals followed an MPI call during which the rank was switched out; "
                 "they took %.0f ns more on average than the others (cold caches), %.0f %% of all computation "
                 "measured; %.0f %% of the computation charged followed a switch (the cold return path's measured "
                 "excess took %.0f us off it)",
                 woken, gaps, excess, 100 * excess * woken / raw, share, rcomp / 1e3);
    } else if (woken >= 10 && woken > 0.9 * gaps && share > 5 && woken_charged / woken < 20000)
        /* short intervals (under 20 us on average): a cold start of ~1 us is more than 5 % of each */
        WARN("%.0f of %.0f computation intervals followed an MPI call during which the rank was switched out, too "
             "few did not to measure what the cold caches cost them: %.0f %% of the computation charged followed a "
             "switch, its cold start charged as computation (%.0f ns per interval charged on average)",
             woken, gaps, share, woken_charged / woken);
    /* the stall rule ("Repeatable small gaps") drops what it takes for the machine's stalls: rare
     * real work between call sites that otherwise do nothing is dropped with them. Said where it
     * could have moved a rank's end by 1 % (an empty loop's stalls beside a CPU-bound job: well
     * under that; tests/shim/progs/rare_work.c's 28 us every 100th iteration: 14 %) */
    if (stalls > 0 && stall_share > 0.01)
        WARN("%.0f interval(s) between call sites that otherwise do nothing measured over shim.gap_noise_max "
             "and were taken for stalls of the machine, charged shim.gap_floor: %.1f us not charged, up to "
             "%.1f %% of a rank's virtual time; rare real work there is lost with them "
             "(shim.gap_noise_max = 0 charges every interval over shim.gap_noise as measured)",
             stalls, stall_ns / 1e3, 100 * stall_share);
    if (base > 100)
        WARN("a clock reading costs up to %.0f ns (charging baseline): every interval's share of it is estimated, "
             "not measured", base);
    if (timeouts > 0)
        WARN("%.0f wait(s) for a compute slot gave up after shim.compute_slot_timeout with no rank leaving "
             "computation (the ranks holding the slots seemed to wait outside MPI: shared memory, files, untimed "
             "windows); the gate widened to %d slots, and ranks computing together beyond the cores make the "
             "charged CPU time less reliable",
             timeouts, slots1);
    if (syscall_ranks)
        WARN("%d rank(s) read their CPU time by a system call (no perf events: perf_event_paranoid, a container's "
             "seccomp?): short intervals are charged imprecisely", syscall_ranks);
    if (gaps > 0 && misses / gaps > 0.01)
        WARN("%.0f %% of the CPU-time readings fell back to a system call", 100 * misses / gaps);
#undef WARN
    return k;
}

int ms_server_write_report(const ms_server *s, FILE *f)
{
    ms_report_head(f, (const char *const *)s->argv, s->argc, s->nranks,
                   s->drv ? nm_topology_name(ms_driver_topology(s->drv)) : "",
                   s->drv ? nm_network_engine_name(ms_driver_network(s->drv)) : "", s->machine, s->cfg);
    int64_t vmax = 0;
    uint64_t msgs = 0, bytes = 0;
    fprintf(f, ",\n  \"ranks\": [\n");
    for (int i = 0; i < s->nranks; i++) {
        const rank_info *r = &s->ranks[i];
        ms_rank_stats st;
        memset(&st, 0, sizeof st);
        if (s->drv) ms_model_rank_stats(ms_driver_model(s->drv), i, &st);
        int64_t end = r->finalized ? r->fin.t : s->drv ? ms_driver_clock(s->drv, i) : 0;
        if (end > vmax) vmax = end;
        msgs += st.msgs_sent;
        bytes += st.bytes_sent;
        const char *state = s->drv ? ms_driver_state_name(ms_driver_state(s->drv, i)) : "never_connected";
        /* a rank that never finalized: its totals at its last PROGRESS (a second old at most) */
        const ms_msg_finalize *fin = r->finalized || !r->has_progress ? &r->fin : &r->progress;
        ms_report_rank rr = {i, r->pid, r->host, r->binding, state, end, fin->compute_ps, fin->mpi_ps,
                             fin->calls, st.msgs_sent, st.bytes_sent, st.msgs_recv, st.bytes_recv, st.coll_calls,
                             st.rma_ops, st.rma_bytes};
        ms_report_rank_open(f, &rr);
        for (size_t k = 0; k < r->n_unmodelled; k++) {
            if (k) fputs(", ", f);
            ms_report_str(f, r->unmodelled[k].name);
            fprintf(f, ": %llu", (unsigned long long)r->unmodelled[k].count);
        }
        fputs("}", f);
        /* where the host model placed it (host.ranks_per_node, host.map_by); "host" is the real one */
        if (s->drv) fprintf(f, ", \"node\": %d", ms_model_rank_node(ms_driver_model(s->drv), i));
        if (r->finalized || r->has_progress) {
            write_charging(f, &fin->charging);
            /* its threads: the level it was given, how many called MPI, calls made while another was
             * inside MPI under a lower level; OpenMP regions and joins charged as critical paths */
            static const char *const levels[] = {"single", "funneled", "serialized", "multiple"};
            fprintf(f, ", \"threads\": {\"level\": \"%s\", \"mpi_threads\": %d, \"violations\": %llu, "
                    "\"omp_regions\": %lld, \"critical_path_ps\": %lld}",
                    fin->thread_level >= 0 && fin->thread_level < 4 ? levels[fin->thread_level] : "mpi_init",
                    fin->threads, (unsigned long long)fin->thread_violations, (long long)fin->omp_regions,
                    (long long)fin->critical_path_ps);
        }
        if (!r->finalized && r->has_progress)
            fprintf(f, ", \"totals_as_of_ps\": %lld", (long long)r->progress.t);
        if (r->error[0]) {
            fputs(", \"error\": ", f);
            ms_report_str(f, r->error);
        }
        ms_report_rank_close(f, i + 1 == s->nranks);
    }
    fprintf(f, "  ],\n  \"measurement_warnings\": [");
    char warn[4096];
    int nw = ms_server_measurement_warnings(s, warn, sizeof warn);
    for (char *line = warn, *nl; nw > 0 && (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        fputs(line == warn ? "\n    " : ",\n    ", f);
        ms_report_str(f, line);
    }
    fprintf(f, "%s],\n  \"callsites\": [", nw > 0 ? "\n  " : "");
    /* most virtual time first, as mpiP sorts */
    size_t nsites = 0;
    site_total *sites = gather_sites(s, &nsites);
    size_t *order = malloc(sizeof *order * (nsites ? nsites : 1));
    for (size_t i = 0; order && i < nsites; i++) order[i] = i;
    for (size_t i = 1; order && i < nsites; i++)
        for (size_t j = i; j > 0 && sites[order[j]].time_ps > sites[order[j - 1]].time_ps; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (size_t k = 0; order && k < nsites; k++) {
        const site_total *t = &sites[order[k]];
        fprintf(f, "%s\n    {\"call\": ", k ? "," : "");
        ms_report_str(f, (t->fn >= 0 && (size_t)t->fn < MS_FN_NAME_COUNT) ? ms_fn_name_table[t->fn] : "?");
        fputs(", \"site\": ", f);
        ms_report_str(f, t->text);
        fprintf(f,
                ", \"calls\": %llu, \"bytes\": %llu, \"time_ps\": %lld, \"ranks\": %d, \"rank_min_ps\": %lld, "
                "\"rank_max_ps\": %lld}",
                (unsigned long long)t->calls, (unsigned long long)t->bytes, (long long)t->time_ps, t->ranks,
                (long long)t->rank_min_ps, (long long)t->rank_max_ps);
    }
    free(order);
    free(sites);
    fprintf(f, "%s],\n  ", nsites ? "\n  " : "");
    char outcome[8192];
    int oc = ms_server_outcome(s, outcome, sizeof outcome);
    ms_report_summary(f, vmax, msgs, bytes, s->wall_end - s->wall_start, (uint64_t)s->events, s->rejected_connections,
                      oc, outcome);
    fprintf(f, ",\n  \"lookahead\": {\"model_round_trips\": %llu, \"negative_polls\": %llu, \"windows\": %llu}",
            (unsigned long long)s->round_trips, (unsigned long long)s->quiet_hints,
            (unsigned long long)s->quiet_given);
    if (s->child_done) {
        int lf = launcher_failed_after_finalize(s);
        fprintf(f, ",\n  \"launcher\": {\"exit_code\": %d",
                WIFEXITED(s->child_status) ? WEXITSTATUS(s->child_status) : 128 + WTERMSIG(s->child_status));
        int code = 0, who = lf ? exit_after_finalize(s, &code) : -1;
        if (who >= 0)
            fprintf(f, ", \"note\": \"every rank reached MPI_Finalize; rank %d then exited with code %d: the program's "
                       "own exit code\"", who, code);
        else if (lf)
            fputs(", \"note\": \"every rank reached MPI_Finalize before the launcher failed: the model's results "
                  "are complete; the failure is in the MPI library's shutdown\"", f);
        fputc('}', f);
    }
    fprintf(f, "\n}\n");
    return ferror(f) ? -1 : 0;
}

int ms_server_write_summary(const ms_server *s, FILE *f, const char *report_path)
{
    int64_t vmax = 0;
    uint64_t msgs = 0, bytes = 0, unmod = 0;
    for (int i = 0; i < s->nranks; i++) {
        const rank_info *r = &s->ranks[i];
        ms_rank_stats st;
        memset(&st, 0, sizeof st);
        ms_model_rank_stats(ms_driver_model(s->drv), i, &st);
        int64_t end = r->finalized ? r->fin.t : ms_driver_clock(s->drv, i);
        if (end > vmax) vmax = end;
        msgs += st.msgs_sent;
        bytes += st.bytes_sent;
        for (size_t k = 0; k < r->n_unmodelled; k++) unmod += r->unmodelled[k].count;
    }
    fprintf(f, "mpisim: %d ranks on %s (%s engine): virtual time %.9f s, %llu messages, %llu bytes; wall %.2f s",
            s->nranks, nm_topology_name(ms_driver_topology(s->drv)), nm_network_engine_name(ms_driver_network(s->drv)),
            vmax * 1e-12,
            (unsigned long long)msgs, (unsigned long long)bytes, s->wall_end - s->wall_start);
    if (unmod) fprintf(f, "; %llu unmodelled calls ran untimed", (unsigned long long)unmod);
    if (report_path) fprintf(f, "; report %s", report_path);
    fputc('\n', f);
    char outcome[8192];
    int code = 0, who = exit_after_finalize(s, &code);
    if (ms_server_outcome(s, outcome, sizeof outcome)) fprintf(f, "mpisim: %s\n", outcome);
    else if (who >= 0 && launcher_failed_after_finalize(s))
        fprintf(f, "mpisim: every rank reached MPI_Finalize and the model's results are complete (outcome ok); "
                   "rank %d then exited with code %d: the exit code is the program's own\n", who, code);
    else if (launcher_failed_after_finalize(s))
        fprintf(f, "mpisim: every rank reached MPI_Finalize and the model's results are complete (outcome ok); the "
                   "launcher exited with %d afterwards, in the MPI library's own shutdown: believe the report's "
                   "numbers; the exit code is the launcher's\n",
                launcher_failed_after_finalize(s));
    char warn[4096];
    if (ms_server_measurement_warnings(s, warn, sizeof warn) > 0)
        for (char *line = warn, *nl; (nl = strchr(line, '\n')); line = nl + 1)
            fprintf(f, "mpisim: warning: %.*s\n", (int)(nl - line), line);
    return 0;
}

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
