/* The model server: ranks' reports in, the engine in virtual time, resumes out.
 *
 * Conservative synchronization (DESIGN.md): the engine may process events up to
 *   H = min over running ranks of their last reported clock
 * (ranks not yet connected count as running at 0; blocked, finished and dead ranks do not
 * count). When no rank runs and the engine has nothing left, the job is deadlocked in virtual
 * time and the server says where each rank waits. */
#define _GNU_SOURCE
#include "mpisim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ms_model.h"
#include "ms_host.h"
#include "protocol.h"
#include "report.h"
#include "fn_names_gen.h"


/* RK_UNTIMED: inside an untimed (passthrough) real call; it does not hold the horizon back */
typedef enum { RK_UNCONNECTED = 0, RK_RUNNING, RK_BLOCKED, RK_FINISHED, RK_DEAD, RK_UNTIMED } rank_state;

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

typedef struct unmodelled_count {
    char name[64];
    uint64_t count;
} unmodelled_count;

typedef struct rank_info {
    rank_state state;
    int fd;
    int64_t clock;
    buf in, out;
    int wait_fn;                 /* function blocked in, for reports */
    int wait_flags;
    uint64_t last_coll_comm;
    int held;                    /* resumed by the model, held until its sync group is complete */
    int64_t held_t;
    ms_msg_result held_result;
    int pid;
    char host[64];
    char binding[64];
    ms_msg_finalize fin;
    int finalized;
    char error[MS_TEXT_MAX];
    char callsite_text[MS_TEXT_MAX];
    unmodelled_count *unmodelled;
    size_t n_unmodelled;
    int stalled;                 /* waits in the real MPI and nothing completed for shim.stall_timeout */
    char stall_text[MS_TEXT_MAX];
    double untimed_since;        /* wall time it entered its untimed call */
    char untimed_call[64];
    char untimed_site[MS_SITE_TEXT];
} rank_info;

typedef struct pending_conn {
    int fd;
    buf in;
    double deadline;
} pending_conn;

typedef struct site_total {
    int fn;
    char text[MS_SITE_TEXT];
    uint64_t calls, bytes;
    int64_t time_ps;
    int64_t rank_min_ps, rank_max_ps;   /* one rank's time at the site: least and most over ranks */
    int ranks;
} site_total;

typedef struct comm_size {
    uint64_t id;
    int size;
} comm_size;

struct ms_server {
    const nm_config *cfg;
    nm_topology *topo;
    nm_network *net;
    ms_model *model;
    int nranks;
    rank_info *ranks;
    int listen_fd;
    char secret[MS_SECRET_LEN + 1];
    pending_conn *pending;
    size_t npending, cap_pending;
    comm_size *comms;
    size_t ncomms, cap_comms;
    char **argv;
    int argc;
    ms_msg_welcome welcome;
    int deadlocked;
    int stalled;                 /* the stall watchdog stopped the run (deadlock_text says where) */
    double stall_timeout_s;
    char deadlock_text[8192];
    char stop_reason[MS_TEXT_MAX];
    int stopped;
    int64_t events;
    double wall_start, wall_end;
    uint64_t rejected_connections;
    site_total *sites;
    size_t nsites, cap_sites;
    char machine[512];
    int describing;              /* a deadlock was found; waiting for the ranks to say where */
    int stalling;                /* what was found is a stall (check_stall), not a deadlock */
    int debug;
    double next_debug;
    double describe_deadline;
    char err[512];
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && len) vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static int buf_put(buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return -1;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

static void send_msg(rank_info *r, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (r->fd < 0) return;
    ms_msg_header h = {type, (uint32_t)(alen + blen)};
    buf_put(&r->out, &h, sizeof h);
    if (alen) buf_put(&r->out, a, alen);
    if (blen) buf_put(&r->out, b, blen);
}

static void flush_rank(rank_info *r)
{
    size_t off = 0;
    while (r->fd >= 0 && off < r->out.len) {
        ssize_t w = write(r->fd, r->out.p + off, r->out.len - off);
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

/* ---------------------------------------------------------------------------------------- */

static int comm_members(const ms_server *s, uint64_t id)
{
    if (id == MS_COMM_WORLD_ID) return s->nranks;
    if (id == MS_COMM_SELF_ID) return 1;
    for (size_t i = 0; i < s->ncomms; i++)
        if (s->comms[i].id == id) return s->comms[i].size;
    return -1;
}

/* Wildcard senders the model has decided for this rank: they go out before any resume, and at
 * once otherwise (a peer's real transfer may be waiting for the real receive they allow). */
static void push_resolutions(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    ms_resolution rv[64];
    size_t k;
    while ((k = ms_model_take_resolutions(s->model, rank, rv, 64)) > 0)
        for (size_t i = 0; i < k; i++) {
            ms_msg_resolve m = {rv[i].req, rv[i].bytes, rv[i].source, rv[i].tag};
            send_msg(r, MS_MSG_RESOLVE, &m, sizeof m, NULL, 0);
        }
}

static void resume_rank(ms_server *s, int rank, int64_t t, const ms_msg_result *res, size_t n)
{
    rank_info *r = &s->ranks[rank];
    push_resolutions(s, rank);
    ms_msg_resume rs = {t, (int32_t)n, 0};
    send_msg(r, MS_MSG_RESUME, &rs, sizeof rs, res, sizeof *res * n);
    r->state = RK_RUNNING;
    r->clock = t;
}

/* Communicator creation: all members leave at the time the last one finishes, so that none
 * is inside the real (blocking) creation call while the model still needs its clock. */
static void release_sync_group(ms_server *s, uint64_t comm)
{
    int members = comm_members(s, comm);
    int held = 0;
    int64_t tmax = 0;
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].held && s->ranks[i].last_coll_comm == comm) {
            held++;
            if (s->ranks[i].held_t > tmax) tmax = s->ranks[i].held_t;
        }
    if (held < members) return;
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].held && s->ranks[i].last_coll_comm == comm) {
            s->ranks[i].held = 0;
            ms_msg_result res = s->ranks[i].held_result;
            res.complete_time = tmax;
            resume_rank(s, i, tmax, &res, 1);
        }
}

static void on_resume(void *user, int rank, ms_time_t t, const ms_req_result *results, size_t n)
{
    ms_server *s = user;
    rank_info *r = &s->ranks[rank];
    ms_msg_result small[16];
    ms_msg_result *out = n <= 16 ? small : malloc(sizeof *out * n);
    if (!out) return;
    for (size_t i = 0; i < n; i++) {
        out[i].req = results[i].req;
        out[i].complete_time = results[i].complete_time;
        out[i].bytes = results[i].bytes;
        out[i].completed = results[i].completed;
        out[i].source = results[i].source;
        out[i].tag = results[i].tag;
        out[i].cancelled = results[i].cancelled;
    }
    if (r->wait_flags & MS_WAIT_FLAG_SYNC) {
        r->held = 1;
        r->held_t = t;
        r->held_result = out[0];
        r->clock = t;
        release_sync_group(s, r->last_coll_comm);
    } else {
        resume_rank(s, rank, t, out, n);
    }
    if (out != small) free(out);
}

/* ---------------------------------------------------------------------------------------- */

int ms_register_all_keys(nm_config *cfg, char *err, size_t errlen)
{
    static const nm_key_def shim_keys[] = {
        {"shim.compute", NM_KEY_STRING, "", "cpu", "DESIGN.md (virtual time)",
         "what a rank's computation between MPI calls costs: its thread CPU time (cpu), wall time (wall) or "
         "nothing (none)",
         "cpu|wall|none", 0},
        {"shim.cpu_factor", NM_KEY_DOUBLE, "", "1.0", "DESIGN.md (virtual time)",
         "virtual compute time = measured time x this factor (projects a slower or faster processor)", NULL, 0},
        {"shim.callsite_depth", NM_KEY_INT, "", "1", "mpiP (call sites as program frames)",
         "frames of the program's stack that identify a call site in the report (1: the caller; more: "
         "libunwind walks the stack at every call)", NULL, 0},
        {"shim.unmodelled", NM_KEY_STRING, "", "error", "issue 2",
         "an MPI call the model does not time: stop the run (error) or run it untimed and count it "
         "(passthrough)",
         "error|passthrough", 0},
        {"shim.wtime_stall", NM_KEY_INT, "ps", "1000000", "project choice (programs that wait on the clock)",
         "under shim.compute = none, an MPI_Wtime call that finds the clock where the previous one left it "
         "advances it by this much, as computation: a program that spins on MPI_Wtime until time has passed "
         "(timer calibration, timed loops) would otherwise never see it pass; 0 turns this off",
         NULL, NM_KEY_NONNEG},
        {"shim.stall_timeout", NM_KEY_INT, "ps", "60 s",
         "project choice (issue 11: a hang must end in a report; far above any real transfer)",
         "real time after which a rank waiting inside the real MPI (for a transfer the model has already "
         "completed, an untimed call, a request mpisim does not time) with nothing completing counts as "
         "stalled; when every rank is stalled or waits in the model and virtual time cannot move, the run "
         "stops (exit 3) with each rank's call, peer, tag and call site; 0 turns the watchdog off",
         NULL, NM_KEY_NONNEG},
        {"shim.spin_polls", NM_KEY_INT, "", "400", "measured (tests/bench/bench_shim.py: 164 -> 31 us per round trip)",
         "polls without sleeping (yielding the CPU in between) before a waiting rank or the model server "
         "sleeps; 0 sleeps at once, which is kinder to computing ranks when ranks outnumber cores",
         NULL, 0},
    };
    if (nm_config_register(cfg, shim_keys, sizeof shim_keys / sizeof shim_keys[0], err, errlen) < 0) return -1;
    return ms_model_register_keys(cfg, err, errlen);
}

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
    if (nranks < 1) return fail(err, errlen, "the job needs at least one rank");
    const char *topo = nm_config_string(cfg, "network.topology");
    char spec[256];
    int need_hosts = ms_host_topology_hosts(cfg, nranks);   /* nodes x NIC ports */
    if (!topo || !strcmp(topo, "auto")) snprintf(spec, sizeof spec, "auto:%d", need_hosts);
    else snprintf(spec, sizeof spec, "%s", topo);
    s->topo = nm_topology_load(spec, cfg, err, errlen);
    if (!s->topo) return -1;
    if (nm_topology_hosts(s->topo) < need_hosts)
        return fail(err, errlen, "topology %s has %d hosts, the job's %d ranks need %d (host.ranks_per_node, host.ports)",
                    nm_topology_name(s->topo), nm_topology_hosts(s->topo), nranks, need_hosts);
    s->net = nm_network_create(cfg, s->topo, err, errlen);
    if (!s->net) return -1;
    if (nm_network_may_deadlock(s->net)) {   /* before the run: it may stop in a network deadlock */
        nm_routing_info ri;
        nm_topology_routing_info(s->topo, &ri);
        fprintf(stderr, "mpisim: WARNING: routing '%s' on '%s' is not deadlock-free on engine '%s' (%s); "
                "network.routing=auto or updown avoids it\n", ri.routing, nm_topology_name(s->topo),
                nm_network_engine_name(s->net), ri.check_message);
    }
    s->model = ms_model_create(cfg, s->net, nranks, NULL, err, errlen);
    if (!s->model) return -1;
    ms_model_set_resume(s->model, on_resume, s);
    s->ranks = calloc((size_t)nranks, sizeof *s->ranks);
    if (!s->ranks) return fail(err, errlen, "out of memory");
    for (int i = 0; i < nranks; i++) s->ranks[i].fd = -1;
    s->argc = argc;
    s->argv = calloc((size_t)argc + 1, sizeof *s->argv);
    for (int i = 0; i < argc; i++) s->argv[i] = strdup(argv[i]);
    if (make_secret(s->secret) < 0) return fail(err, errlen, "cannot read /dev/urandom for the run's secret");

    ms_msg_welcome *w = &s->welcome;
    memset(w, 0, sizeof *w);
    w->isend_cost_base_ps = ms_model_isend_cost(s->model, 0);
    w->isend_cost_per_byte_ps = ms_model_isend_cost(s->model, 1) - w->isend_cost_base_ps;
    w->irecv_cost_base_ps = ms_model_irecv_cost(s->model, 0);
    w->irecv_cost_per_byte_ps = ms_model_irecv_cost(s->model, 1) - w->irecv_cost_base_ps;
    w->eager_threshold = nm_config_int(cfg, "mpi.eager_threshold");
    const char *cm = nm_config_string(cfg, "shim.compute");
    w->compute_mode = !strcmp(cm, "wall") ? MS_COMPUTE_WALL : !strcmp(cm, "none") ? MS_COMPUTE_NONE : MS_COMPUTE_CPU;
    w->cpu_factor = nm_config_double(cfg, "shim.cpu_factor");
    w->unmodelled_passthrough = !strcmp(nm_config_string(cfg, "shim.unmodelled"), "passthrough");
    w->callsite_depth = (int32_t)nm_config_int(cfg, "shim.callsite_depth");
    w->spin_polls = (int32_t)nm_config_int(cfg, "shim.spin_polls");
    w->wtime_stall_ps = nm_config_int(cfg, "shim.wtime_stall");
    w->stall_timeout_ps = nm_config_int(cfg, "shim.stall_timeout");
    s->stall_timeout_s = (double)w->stall_timeout_ps * 1e-12;
    if (w->spin_polls < 0) return fail(err, errlen, "shim.spin_polls must be >= 0 (got %d)", w->spin_polls);
    return 0;
}

const char *ms_server_secret(const ms_server *s) { return s->secret; }

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
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    int port = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                                       : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    s->listen_fd = fd;
    snprintf(endpoint, len, "%s:%d", advertise, port);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

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
    if (r->state != RK_FINISHED) {
        if (!r->error[0])
            rank_error(s, rank, s->stopped ? "stopped by mpisim (see the run's outcome)"
                                           : "the rank's process ended without MPI_Finalize (crashed or killed)");
        r->state = RK_DEAD;
        r->held = 0;
        ms_model_finalize(s->model, rank, r->clock);
    }
}

static void model_error(ms_server *s, int rank, const char *what, const char *err)
{
    char line[MS_TEXT_MAX];
    snprintf(line, sizeof line, "model refused %s: %.900s", what, err);
    rank_error(s, rank, line);
    s->stopped = 1;
}

/* One message from a connected rank. */
static void handle(ms_server *s, int rank, uint32_t type, const char *p, uint32_t len)
{
    rank_info *r = &s->ranks[rank];
    char err[512] = "";
    s->events++;
    switch (type) {
    case MS_MSG_ISEND: {
        ms_msg_isend m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        r->clock = m.t;
        if (ms_model_isend(s->model, rank, m.t, m.req, m.comm, m.dst, m.tag, m.bytes, (ms_send_mode)m.mode, err,
                           sizeof err) < 0)
            model_error(s, rank, "a send", err);
        else if (m.buf)
            ms_model_buffer(s->model, rank, m.req, m.buf);
        break;
    }
    case MS_MSG_IRECV: {
        ms_msg_irecv m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        r->clock = m.t;
        if (ms_model_irecv(s->model, rank, m.t, m.req, m.comm, m.src, m.tag, m.bytes, err, sizeof err) < 0)
            model_error(s, rank, "a receive", err);
        else {
            if (m.flags & MS_IRECV_NOTIFY) ms_model_irecv_notify(s->model, rank, m.req);
            if (m.buf) ms_model_buffer(s->model, rank, m.req, m.buf);
        }
        break;
    }
    case MS_MSG_CANCEL:
    case MS_MSG_FREE: {   /* one request: MPI_Cancel, MPI_Request_free */
        ms_msg_cancel m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        r->clock = m.t;
        int cancel = type == MS_MSG_CANCEL;
        if ((cancel ? ms_model_cancel(s->model, rank, m.t, m.req, err, sizeof err)
                    : ms_model_forget(s->model, rank, m.req, err, sizeof err)) < 0)
            model_error(s, rank, cancel ? "a cancel" : "a request free", err);
        break;
    }
    case MS_MSG_ICOLL: {
        ms_msg_icoll m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        if (len < sizeof m + sizeof(uint64_t) * (size_t)m.ncounts) break;
        r->clock = m.t;
        r->last_coll_comm = m.comm;
        uint64_t *counts = NULL;
        if (m.ncounts > 0) {
            counts = malloc(sizeof *counts * (size_t)m.ncounts);
            if (counts) memcpy(counts, p + sizeof m, sizeof *counts * (size_t)m.ncounts);
        }
        ms_coll_args a = {(ms_coll_kind)m.kind, m.root, m.bytes, counts, counts ? (size_t)m.ncounts : 0};
        if (ms_model_icoll(s->model, rank, m.t, m.req, m.comm, &a, err, sizeof err) < 0)
            model_error(s, rank, "a collective", err);
        free(counts);
        break;
    }
    case MS_MSG_COMM_ADD: {
        ms_msg_comm_add m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        if (m.size <= 0 || len < sizeof m + sizeof(int32_t) * (size_t)m.size) break;
        int *w = malloc(sizeof(int) * (size_t)m.size);
        if (!w) break;
        for (int i = 0; i < m.size; i++) {
            int32_t v;
            memcpy(&v, p + sizeof m + sizeof v * (size_t)i, sizeof v);
            w[i] = v;
        }
        if (ms_model_comm_add(s->model, m.comm, m.size, w, err, sizeof err) < 0) model_error(s, rank, "a communicator", err);
        free(w);
        if (comm_members(s, m.comm) < 0) {
            if (s->ncomms == s->cap_comms) {
                s->cap_comms = s->cap_comms ? s->cap_comms * 2 : 16;
                s->comms = realloc(s->comms, sizeof *s->comms * s->cap_comms);
            }
            s->comms[s->ncomms].id = m.comm;
            s->comms[s->ncomms].size = m.size;
            s->ncomms++;
        }
        break;
    }
    case MS_MSG_WAIT: {
        ms_msg_wait m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        if (m.n < 0 || len < sizeof m + sizeof(uint64_t) * (size_t)m.n) break;
        uint64_t *ids = malloc(sizeof *ids * (size_t)(m.n ? m.n : 1));
        if (!ids) break;
        memcpy(ids, p + sizeof m, sizeof *ids * (size_t)m.n);
        if (m.flags & MS_WAIT_FLAG_UNTIMED) {
            /* back from an untimed call: the model may have moved on meanwhile */
            int64_t now = nm_network_now(s->net);
            int64_t t = m.t > now ? m.t : now;
            ms_msg_resume rs = {t, 0, 0};
            send_msg(r, MS_MSG_RESUME, &rs, sizeof rs, NULL, 0);
            r->state = RK_RUNNING;
            r->clock = t;
            free(ids);
            break;
        }
        r->clock = m.t;
        r->state = RK_BLOCKED;
        r->wait_fn = m.fn;
        r->wait_flags = m.flags;
        if (ms_model_wait(s->model, rank, m.t, (ms_wait_mode)m.mode, (size_t)m.n, ids, err, sizeof err) < 0)
            model_error(s, rank, "a wait", err);
        free(ids);
        break;
    }
    case MS_MSG_PROBE: {
        ms_msg_probe m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        r->clock = m.t;
        r->state = RK_BLOCKED;
        r->wait_fn = m.fn;
        r->wait_flags = 0;
        if (ms_model_probe(s->model, rank, m.t, m.comm, m.src, m.tag, m.blocking, err, sizeof err) < 0)
            model_error(s, rank, "a probe", err);
        break;
    }
    case MS_MSG_CLOCK: {
        ms_msg_clock m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        r->clock = m.t;
        break;
    }
    case MS_MSG_FINALIZE: {
        if (len < sizeof r->fin) break;
        memcpy(&r->fin, p, sizeof r->fin);
        r->clock = r->fin.t;
        r->finalized = 1;
        r->state = RK_FINISHED;
        ms_model_finalize(s->model, rank, r->fin.t);
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
            s->stopped = 1;
        } else if (!strncmp(text, "ABORT ", 6)) {
            rank_error(s, rank, text + 6);
        } else {
            count_unmodelled(r, text);
            /* an untimed call: the rank does not hold the model back while it runs it */
            r->state = RK_UNTIMED;
            r->untimed_since = wall_now();
            /* the call's name, then (after its NUL) where the program called it from */
            size_t name_len = strlen(text);
            snprintf(r->untimed_call, sizeof r->untimed_call, "%.63s", text);
            snprintf(r->untimed_site, sizeof r->untimed_site, "%s", name_len + 1 < n ? text + name_len + 1 : "");
        }
        break;
    }
    case MS_MSG_SITE: {
        ms_msg_site m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        m.text[MS_SITE_TEXT - 1] = 0;
        size_t i;
        for (i = 0; i < s->nsites; i++)
            if (s->sites[i].fn == m.fn && !strcmp(s->sites[i].text, m.text)) break;
        if (i == s->nsites) {
            if (s->nsites == s->cap_sites) {
                s->cap_sites = s->cap_sites ? s->cap_sites * 2 : 64;
                site_total *q = realloc(s->sites, sizeof *q * s->cap_sites);
                if (!q) break;
                s->sites = q;
            }
            memset(&s->sites[i], 0, sizeof s->sites[i]);
            s->sites[i].fn = m.fn;
            memcpy(s->sites[i].text, m.text, sizeof m.text);
            s->nsites++;
        }
        s->sites[i].calls += m.calls;
        s->sites[i].bytes += m.bytes;
        s->sites[i].time_ps += m.time_ps;
        if (!s->sites[i].ranks || m.time_ps < s->sites[i].rank_min_ps) s->sites[i].rank_min_ps = m.time_ps;
        if (!s->sites[i].ranks || m.time_ps > s->sites[i].rank_max_ps) s->sites[i].rank_max_ps = m.time_ps;
        s->sites[i].ranks++;
        break;
    }
    case MS_MSG_STALL: {
        size_t n = len < sizeof r->stall_text - 1 ? len : sizeof r->stall_text - 1;
        memcpy(r->stall_text, p, n);
        r->stall_text[n] = 0;
        r->stalled = r->stall_text[0] != 0;
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
    while (r->in.len - off >= sizeof(ms_msg_header)) {
        ms_msg_header h;
        memcpy(&h, r->in.p + off, sizeof h);
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
        if (r->in.cap - r->in.len < 65536) {
            size_t cap = r->in.cap ? r->in.cap * 2 : 131072;
            char *q = realloc(r->in.p, cap);
            if (!q) return;
            r->in.p = q;
            r->in.cap = cap;
        }
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

static void drop_pending(ms_server *s, size_t i, const char *why)
{
    if (why) {
        s->rejected_connections++;
        fprintf(stderr, "mpisim: refused a connection to the model server: %s\n", why);
    }
    if (s->pending[i].fd >= 0 && why) close(s->pending[i].fd);
    free(s->pending[i].in.p);
    s->pending[i] = s->pending[--s->npending];
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
    if (h.type != MS_MSG_HELLO || h.length != sizeof hello || hello.magic != MS_PROTO_MAGIC) {
        drop_pending(s, i, "not an mpisim rank");
        return;
    }
    if (hello.version != MS_PROTO_VERSION || hello.sizes_check != ms_proto_sizes_check()) {
        drop_pending(s, i, "a rank built from another mpisim version");
        return;
    }
    if (!secret_equal(hello.secret, s->secret)) {
        drop_pending(s, i, "wrong secret (a rank of another run?)");
        return;
    }
    if (hello.rank < 0 || hello.rank >= s->nranks || hello.size != s->nranks) {
        drop_pending(s, i, "rank or job size does not match this run");
        return;
    }
    rank_info *r = &s->ranks[hello.rank];
    if (r->state != RK_UNCONNECTED) {
        drop_pending(s, i, "this rank is already connected");
        return;
    }
    r->fd = c->fd;
    r->pid = hello.pid;
    memcpy(r->host, hello.hostname, sizeof r->host);
    r->host[sizeof r->host - 1] = 0;
    memcpy(r->binding, hello.binding, sizeof r->binding);
    r->binding[sizeof r->binding - 1] = 0;
    r->state = RK_RUNNING;
    r->clock = 0;
    send_msg(r, MS_MSG_WELCOME, &s->welcome, sizeof s->welcome, NULL, 0);
    flush_rank(r);
    c->fd = -1;
    drop_pending(s, i, NULL);
}

static void accept_all(ms_server *s)
{
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (s->npending == s->cap_pending) {
            s->cap_pending = s->cap_pending ? s->cap_pending * 2 : 64;
            s->pending = realloc(s->pending, sizeof *s->pending * s->cap_pending);
        }
        pending_conn *c = &s->pending[s->npending++];
        memset(c, 0, sizeof *c);
        c->fd = fd;
        c->deadline = wall_now() + 30.0;
    }
}

static int64_t horizon(const ms_server *s)
{
    int64_t h = NM_TIME_NEVER;
    for (int i = 0; i < s->nranks; i++) {
        const rank_info *r = &s->ranks[i];
        if (r->state == RK_UNCONNECTED) return 0;
        if (r->state == RK_RUNNING && r->clock < h) h = r->clock;
    }
    return h;
}

/* A deadlock: ask every blocked rank where its program called from, report when they said. */
static void start_describe(ms_server *s)
{
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].state == RK_BLOCKED) {
            s->ranks[i].callsite_text[0] = 0;
            send_msg(&s->ranks[i], MS_MSG_DESCRIBE, NULL, 0, NULL, 0);
        }
    s->describing = 1;
    s->describe_deadline = wall_now() + 3.0;
}

static int described_all(const ms_server *s)
{
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].state == RK_BLOCKED && s->ranks[i].fd >= 0 && !s->ranks[i].callsite_text[0]) return 0;
    return 1;
}

/* The ranks the stall watchdog counts as stuck: waiting in the real MPI with nothing completing
 * for shim.stall_timeout (they said so), or inside an untimed call for that long. -1 when some
 * rank may still move things (it computes, or is not connected yet). */
static int stuck_ranks(const ms_server *s, double now)
{
    int stuck = 0;
    for (int i = 0; i < s->nranks; i++) {
        const rank_info *r = &s->ranks[i];
        switch (r->state) {
        case RK_UNCONNECTED: return -1;
        case RK_RUNNING:
            if (!r->stalled) return -1;
            stuck++;
            break;
        case RK_UNTIMED:
            if (now - r->untimed_since < s->stall_timeout_s) return -1;
            stuck++;
            break;
        case RK_FINISHED:   /* in MPI_Finalize, its detached sends not taken */
            if (r->stalled) stuck++;
            break;
        default: break;     /* blocked in the model, or dead */
        }
    }
    return stuck;
}

/* The stall watchdog (shim.stall_timeout): some ranks wait inside the real MPI and nothing
 * completes there, every other rank waits in the model (or has finished), and virtual time
 * cannot move: nothing ever will. The blocked ranks say where they are, then the run stops as on
 * a deadlock. */
static void check_stall(ms_server *s)
{
    if (s->stall_timeout_s <= 0 || s->stopped || s->describing) return;
    if (stuck_ranks(s, wall_now()) <= 0 || ms_model_next_time(s->model) < horizon(s)) return;
    s->stalling = 1;
    start_describe(s);
}

static void report_deadlock(ms_server *s)
{
    size_t off = 0;
    if (s->stalling && stuck_ranks(s, wall_now()) <= 0) {   /* it moved again while the ranks answered */
        s->stalling = s->describing = 0;
        return;
    }
    /* ranks that died leave the others waiting for them: that is the cause, not a deadlock */
    int dead = -1;
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].state == RK_DEAD) {
            dead = i;
            break;
        }
    if (dead >= 0)
        off += (size_t)snprintf(s->deadlock_text + off, sizeof s->deadlock_text - off,
                                "rank %d ended without MPI_Finalize (crashed or killed) at %.6f us; the other ranks "
                                "wait for it",
                                dead, s->ranks[dead].clock * 1e-6);
    else if (s->stalling)
        off += (size_t)snprintf(s->deadlock_text + off, sizeof s->deadlock_text - off,
                                "stall: ranks wait inside the real MPI and nothing has completed there for %g s "
                                "(shim.stall_timeout), while the others wait in the model and virtual time "
                                "cannot move",
                                s->stall_timeout_s);
    else
        off += (size_t)snprintf(s->deadlock_text + off, sizeof s->deadlock_text - off,
                                "deadlock in virtual time: every rank waits and nothing is in flight");
    double now = wall_now();
    for (int i = 0; i < s->nranks && off < sizeof s->deadlock_text; i++) {
        rank_info *r = &s->ranks[i];
        if (s->stalling && r->stalled && (r->state == RK_RUNNING || r->state == RK_FINISHED)) {
            off += (size_t)snprintf(s->deadlock_text + off, sizeof s->deadlock_text - off,
                                    "\n  rank %d at %.6f us: %s", i, r->clock * 1e-6, r->stall_text);
            continue;
        }
        if (s->stalling && r->state == RK_UNTIMED) {
            off += (size_t)snprintf(s->deadlock_text + off, sizeof s->deadlock_text - off,
                                    "\n  rank %d at %.6f us: inside the untimed call %s for %.0f s; %s called from %s", i,
                                    r->clock * 1e-6, r->untimed_call, now - r->untimed_since, r->untimed_call,
                                    r->untimed_site[0] ? r->untimed_site : "an unknown site");
            continue;
        }
        if (r->state != RK_BLOCKED) continue;
        char what[512] = "";
        ms_model_describe_wait(s->model, i, what, sizeof what);
        off += (size_t)snprintf(s->deadlock_text + off, sizeof s->deadlock_text - off,
                                "\n  rank %d at %.6f us in %s%s%s; %s", i, r->clock * 1e-6,
                                (r->wait_fn >= 0 && (size_t)r->wait_fn < MS_FN_NAME_COUNT) ? ms_fn_name_table[r->wait_fn] : "?",
                                what[0] ? ": " : "", what,
                                r->callsite_text[0] ? r->callsite_text : "call site unknown");
    }
    if (dead >= 0) {
        snprintf(s->stop_reason, sizeof s->stop_reason, "%.*s", (int)sizeof s->stop_reason - 1, s->deadlock_text);
        s->stopped = 1;
        return;
    }
    s->deadlocked = !s->stalling;
    s->stalled = s->stalling;
    s->stopped = 1;
}

static void advance_engine(ms_server *s)
{
    /* the model stops early after resuming a rank (that rank may post from its resume time
     * on); go again with the new horizon while it has work below it */
    for (int guard = 0; guard < 1000000; guard++) {
        int64_t h = horizon(s);
        int64_t next = ms_model_next_time(s->model);
        if (ms_model_run_until(s->model, h) < 0) {
            nm_stats st;
            nm_network_stats(s->net, &st);
            nm_routing_info ri;
            nm_topology_routing_info(s->topo, &ri);
            if (st.deadlocks)
                snprintf(s->stop_reason, sizeof s->stop_reason,
                         "the network deadlocked at virtual time %.3f us: routing '%s' on '%s' is not deadlock-free "
                         "(%s); run with network.routing=auto or updown", (double)st.deadlock_time * 1e-6,
                         ri.routing, nm_topology_name(s->topo), ri.check_message);
            else {
                const char *why = ms_model_last_error(s->model, NULL);
                snprintf(s->stop_reason, sizeof s->stop_reason, "the network engine '%s' failed: %s",
                         nm_network_engine_name(s->net), why ? why : "no reason given");
            }
            s->stopped = 1;
            return;
        }
        for (int i = 0; i < s->nranks; i++)
            if (s->ranks[i].fd >= 0) push_resolutions(s, i);
        int64_t h2 = horizon(s), next2 = ms_model_next_time(s->model);
        if (next2 >= h2) break;
        if (h2 == h && next2 == next) break; /* no progress possible now */
    }
    int connected_all = 1, running = 0, blocked = 0;
    for (int i = 0; i < s->nranks; i++) {
        rank_state st = s->ranks[i].state;
        if (st == RK_UNCONNECTED) connected_all = 0;
        if (st == RK_RUNNING || st == RK_UNTIMED) running++;
        if (st == RK_BLOCKED) blocked++;
    }
    if (connected_all && !running && blocked && ms_model_next_time(s->model) == NM_TIME_NEVER && !s->describing)
        start_describe(s);
}

static const char *state_name(const rank_info *r);

static int any_blocked(const ms_server *s)
{
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].state == RK_BLOCKED) return 1;
    return 0;
}

int ms_server_run(ms_server *s, pid_t child, int *child_status, char *err, size_t errlen)
{
    s->wall_start = wall_now();
    s->debug = getenv("MPISIM_DEBUG") != NULL;
    int child_done = child < 0;
    size_t nfds_cap = (size_t)s->nranks + 1 + 64;
    unsigned idle_polls = 0;
    struct pollfd *pfds = malloc(sizeof *pfds * nfds_cap);
    int *who = malloc(sizeof *who * nfds_cap);
    if (!pfds || !who) return fail(err, errlen, "out of memory");
    int aborted_sent = 0;
    for (;;) {
        if (!child_done) {
            int st;
            pid_t w = waitpid(child, &st, WNOHANG);
            if (w == child) {
                child_done = 1;
                if (child_status) *child_status = st;
            }
        }
        int live = 0;
        for (int i = 0; i < s->nranks; i++)
            if (s->ranks[i].fd >= 0) live++;
        if (child_done && !live) break;
        if (child_done && live == 0 && s->npending == 0) break;

        if (s->stopped && !aborted_sent) {
            char text[MS_TEXT_MAX];
            if (s->deadlocked || s->stalled) snprintf(text, sizeof text, "%.*s", (int)sizeof text - 1, s->deadlock_text);
            else snprintf(text, sizeof text, "%s", s->stop_reason[0] ? s->stop_reason : "stopped");
            ms_msg_text t;
            memset(&t, 0, sizeof t);
            snprintf(t.text, sizeof t.text, "%.*s", (int)sizeof t.text - 1,
                     s->deadlocked ? "deadlock in virtual time (see the mpisim report)"
                     : s->stalled  ? "stalled in the real MPI (see the mpisim report)"
                                   : text);
            for (int i = 0; i < s->nranks; i++) {
                send_msg(&s->ranks[i], MS_MSG_ABORT, &t, sizeof t, NULL, 0);
                flush_rank(&s->ranks[i]);
            }
            aborted_sent = 1;
        }

        size_t nf = 0;
        if (s->npending + (size_t)s->nranks + 1 > nfds_cap) {
            nfds_cap = s->npending + (size_t)s->nranks + 65;
            pfds = realloc(pfds, sizeof *pfds * nfds_cap);
            who = realloc(who, sizeof *who * nfds_cap);
        }
        pfds[nf] = (struct pollfd){s->listen_fd, POLLIN, 0};
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
        /* Just after traffic, while a rank waits for an answer, poll without sleeping (yielding
         * the CPU to the ranks) for a while: the report it needs usually follows within
         * microseconds, and waking a sleeping CPU costs tens of them on a virtual machine. While
         * every rank computes, sleep: spinning beside them would slow the computation whose CPU
         * time is being measured. */
        int spin = idle_polls < (unsigned)s->welcome.spin_polls && any_blocked(s);
        int n = poll(pfds, nf, spin ? 0 : child_done ? 200 : 20);
        if (n < 0 && errno != EINTR) return fail(err, errlen, "poll failed: %s", strerror(errno));
        if (n > 0) idle_polls = 0;
        else if (spin && idle_polls++ < (unsigned)s->welcome.spin_polls) sched_yield();
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
            if (now > s->pending[i].deadline) drop_pending(s, i, "did not introduce itself within 30 s");
        if (s->debug && now > s->next_debug) {
            /* MPISIM_DEBUG: the server's view once a second, to diagnose a stuck run */
            s->next_debug = now + 1.0;
            fprintf(stderr, "mpisim-debug: H=%lld next=%lld net_now=%lld", (long long)horizon(s),
                    (long long)ms_model_next_time(s->model), (long long)nm_network_now(s->net));
            for (int i = 0; i < s->nranks; i++)
                fprintf(stderr, " | r%d %s t=%lld", i, state_name(&s->ranks[i]), (long long)s->ranks[i].clock);
            fputc('\n', stderr);
        }
        if (s->describing && !s->stopped && (described_all(s) || wall_now() > s->describe_deadline)) report_deadlock(s);
        if (!s->stopped && !s->describing) advance_engine(s);
        check_stall(s);
        for (int i = 0; i < s->nranks; i++) flush_rank(&s->ranks[i]);
    }
    s->wall_end = wall_now();
    free(pfds);
    free(who);
    return 0;
}

int ms_server_outcome(const ms_server *s, char *buf, size_t len)
{
    if (s->deadlocked) {
        snprintf(buf, len, "%s", s->deadlock_text);
        return 1;
    }
    if (s->stalled) {
        snprintf(buf, len, "%s", s->deadlock_text);
        return 3;
    }
    if (s->stop_reason[0]) {
        snprintf(buf, len, "%s", s->stop_reason);
        return 2;
    }
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i].state == RK_UNCONNECTED) {
            snprintf(buf, len, "rank %d never connected to the model server (did the program call MPI_Init?)", i);
            return 2;
        }
    if (len) buf[0] = 0;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* report */

static const char *state_name(const rank_info *r)
{
    switch (r->state) {
    case RK_FINISHED: return "finalized";
    case RK_DEAD: return "died";
    case RK_BLOCKED: return "blocked";
    case RK_RUNNING: return "running";
    case RK_UNTIMED: return "untimed";
    default: return "never_connected";
    }
}

/* How the rank measured its computation (docs/architecture.md "Virtual time in a rank") */
static void write_charging(FILE *f, const ms_msg_charging *c)
{
    static const char *const methods[] = {"none", "perf-page", "syscall", "wall"};
    const char *m = c->method >= 0 && c->method < 4 ? methods[c->method] : "?";
    fprintf(f,
            ", \"charging\": {\"method\": \"%s\", \"baseline_ns\": %lld, \"baseline_syscall_ns\": %lld, \"gaps\": %llu, "
            "\"descheduled_gaps\": %llu, \"cpu_clock_syscalls\": %llu, \"raw_ns\": %lld, \"compensated_ns\": %lld, "
            "\"wall_ns\": %lld, \"descheduled_ns\": %lld}",
            m, (long long)c->baseline_ns, (long long)c->baseline_syscall_ns, (unsigned long long)c->gaps,
            (unsigned long long)c->descheduled_gaps, (unsigned long long)c->syscalls, (long long)c->raw_ns,
            (long long)c->compensated_ns, (long long)c->wall_ns, (long long)c->descheduled_ns);
}

int ms_server_write_report(const ms_server *s, FILE *f)
{
    ms_report_head(f, (const char *const *)s->argv, s->argc, s->nranks, s->topo ? nm_topology_name(s->topo) : "",
                   s->net ? nm_network_engine_name(s->net) : "", s->machine, s->cfg);
    int64_t vmax = 0;
    uint64_t msgs = 0, bytes = 0;
    fprintf(f, ",\n  \"ranks\": [\n");
    for (int i = 0; i < s->nranks; i++) {
        const rank_info *r = &s->ranks[i];
        ms_rank_stats st;
        memset(&st, 0, sizeof st);
        if (s->model) ms_model_rank_stats(s->model, i, &st);
        int64_t end = r->finalized ? r->fin.t : r->clock;
        if (end > vmax) vmax = end;
        msgs += st.msgs_sent;
        bytes += st.bytes_sent;
        ms_report_rank rr = {i, r->pid, r->host, r->binding, state_name(r), end, r->fin.compute_ps, r->fin.mpi_ps,
                             r->fin.calls, st.msgs_sent, st.bytes_sent, st.msgs_recv, st.bytes_recv, st.coll_calls};
        ms_report_rank_open(f, &rr);
        for (size_t k = 0; k < r->n_unmodelled; k++) {
            if (k) fputs(", ", f);
            ms_report_str(f, r->unmodelled[k].name);
            fprintf(f, ": %llu", (unsigned long long)r->unmodelled[k].count);
        }
        fputs("}", f);
        /* where the host model placed it (host.ranks_per_node, host.map_by); "host" is the real one */
        if (s->model) fprintf(f, ", \"node\": %d", ms_model_rank_node(s->model, i));
        if (r->finalized) write_charging(f, &r->fin.charging);
        if (r->error[0]) {
            fputs(", \"error\": ", f);
            ms_report_str(f, r->error);
        }
        ms_report_rank_close(f, i + 1 == s->nranks);
    }
    fprintf(f, "  ],\n  \"callsites\": [");
    /* most virtual time first, as mpiP sorts */
    size_t *order = malloc(sizeof *order * (s->nsites ? s->nsites : 1));
    for (size_t i = 0; order && i < s->nsites; i++) order[i] = i;
    for (size_t i = 1; order && i < s->nsites; i++)
        for (size_t j = i; j > 0 && s->sites[order[j]].time_ps > s->sites[order[j - 1]].time_ps; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (size_t k = 0; order && k < s->nsites; k++) {
        const site_total *t = &s->sites[order[k]];
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
    fprintf(f, "%s],\n  ", s->nsites ? "\n  " : "");
    char outcome[8192];
    int oc = ms_server_outcome(s, outcome, sizeof outcome);
    ms_report_summary(f, vmax, msgs, bytes, s->wall_end - s->wall_start, (uint64_t)s->events, s->rejected_connections,
                      oc, outcome);
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
        ms_model_rank_stats(s->model, i, &st);
        int64_t end = r->finalized ? r->fin.t : r->clock;
        if (end > vmax) vmax = end;
        msgs += st.msgs_sent;
        bytes += st.bytes_sent;
        for (size_t k = 0; k < r->n_unmodelled; k++) unmod += r->unmodelled[k].count;
    }
    fprintf(f, "mpisim: %d ranks on %s (%s engine): virtual time %.9f s, %llu messages, %llu bytes; wall %.2f s",
            s->nranks, nm_topology_name(s->topo), nm_network_engine_name(s->net), vmax * 1e-12,
            (unsigned long long)msgs, (unsigned long long)bytes, s->wall_end - s->wall_start);
    if (unmod) fprintf(f, "; %llu unmodelled calls ran untimed", (unsigned long long)unmod);
    if (report_path) fprintf(f, "; report %s", report_path);
    fputc('\n', f);
    char outcome[8192];
    if (ms_server_outcome(s, outcome, sizeof outcome)) fprintf(f, "mpisim: %s\n", outcome);
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
    }
    for (size_t i = 0; i < s->npending; i++) {
        close(s->pending[i].fd);
        free(s->pending[i].in.p);
    }
    free(s->pending);
    free(s->sites);
    free(s->ranks);
    free(s->comms);
    for (int i = 0; s->argv && i < s->argc; i++) free(s->argv[i]);
    free(s->argv);
    if (s->listen_fd >= 0) close(s->listen_fd);
    ms_model_destroy(s->model);
    nm_network_destroy(s->net);
    nm_topology_destroy(s->topo);
    free(s);
}
