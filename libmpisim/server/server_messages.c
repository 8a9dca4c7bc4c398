/* Messages to and from the ranks: buffered sends and flushes, the driver's resumes and resolutions
 * going out, and each rank's reports decoded into driver events (handle). */
#define _GNU_SOURCE
#include "server_internal.h"

/* At least `room` free bytes after b->len (a first buffer of first_cap, then doublings); -1 if
 * out of memory. */
int srv_buf_room(buf *b, size_t room, size_t first_cap)
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

int srv_buf_put(buf *b, const void *p, size_t n)
{
    if (srv_buf_room(b, n, 4096) < 0) return -1;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

void srv_send_msg(rank_info *r, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (r->fd < 0 && (!r->shm || r->shm_closed)) return;
    ms_msg_header h = {type, (uint32_t)(alen + blen)};
    srv_buf_put(&r->out, &h, sizeof h);
    if (alen) srv_buf_put(&r->out, a, alen);
    if (blen) srv_buf_put(&r->out, b, blen);
}

/* A shared-memory rank: what fits in its down ring now (the rest on the next turn), then its
 * doorbell. The server never waits for a rank. */
void srv_flush_shm(ms_server *s, int rank)
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

void srv_flush_rank(rank_info *r)
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
void srv_flush_to(ms_server *s, int rank)
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
    if (s->ranks[rank].shm) srv_flush_shm(s, rank);
    else srv_flush_rank(&s->ranks[rank]);
}

int srv_rank_live(const rank_info *r) { return r->fd >= 0 || (r->shm && !r->shm_closed); }

/* ---------------------------------------------------------------------------------------- */

/* A wildcard sender the model decided: at once (a peer's real transfer may be waiting for the
 * real receive it allows); the driver gives them before any resume of the rank. */
void srv_on_resolve(void *user, int rank, const ms_resolution *rv)
{
    ms_server *s = user;
    ms_msg_resolve m = {rv->req, rv->bytes, rv->source, rv->tag};
    srv_send_msg(&s->ranks[rank], MS_MSG_RESOLVE, &m, sizeof m, NULL, 0);
}

static void rank_error(ms_server *s, int rank, const char *text);

void srv_on_resume(void *user, int rank, int thread, int64_t t, const ms_req_result *results, size_t n)
{
    ms_server *s = user;
    rank_info *rt = &s->ranks[rank];
    if (thread > 0 && thread <= rt->nth) rt->th[thread - 1].parked = rt->th[thread - 1].stalled = 0;   /* it rejoined */
    if (!thread) rt->th0.parked = rt->th0.stalled = 0;
    ms_msg_result small[16];
    ms_msg_result *out = n <= 16 ? small : malloc(sizeof *out * n);
    if (!out) {
        rank_error(s, rank, "out of memory for a resume (the rank would wait for ever)");
        srv_stop_run(s);
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
    ms_msg_hint hint = {0, 0, s->local_answers ? ms_driver_cpu_free(s->drv, rank) : -1};
    srv_send_msg(ri, MS_MSG_HINT, &hint, sizeof hint, NULL, 0);
    ri->hint_at = negative && ri->out.len >= sizeof hint ? (long)(ri->out.len - sizeof hint) : -1;
    ri->hint_probe = ri->quiet_ask == 2;
    ri->quiet_ask = 0;
    ms_msg_resume rs = {t, (int32_t)n, thread};
    srv_send_msg(ri, MS_MSG_RESUME, &rs, sizeof rs, out, sizeof *out * n);
    if (out != small) free(out);
}

/* ---------------------------------------------------------------------------------------- */

/* mpisim stops the run: ranks whose processes end from now on were ended by it ("stopped") */
void srv_stop_run(ms_server *s)
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

const char *srv_signal_name(int sig)
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
void srv_take_stop_signal(ms_server *s, pid_t child, int child_done)
{
    if (!s->stop_signal || s->stop_signal_seen) return;
    s->stop_signal_seen = 1;
    int sig = s->stop_signal;
    if (!s->stop_reason[0] && !s->deadlocked && !s->stalled)
        snprintf(s->stop_reason, sizeof s->stop_reason,
                 "ended by %s: the ranks were stopped (each rank's totals, call sites and charging as of its last "
                 "progress message, at most a second old)", srv_signal_name(sig));
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

void srv_rank_gone(ms_server *s, int rank)
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
        srv_stop_run(s);
        return;
    }
    e->thread = s->ranks[rank].cur_thread;
    if (ms_driver_apply(s->drv, rank, e, err, sizeof err) < 0) {
        rank_error(s, rank, err);
        srv_stop_run(s);
    }
}

static void on_icoll(ms_server *s, int rank, const char *p, uint32_t len)
{
    ms_msg_icoll m;
    if (len < sizeof m) return;
    memcpy(&m, p, sizeof m);
    if (len < sizeof m + sizeof(uint64_t) * (size_t)m.ncounts) return;
    uint64_t *counts = NULL;
    if (m.ncounts > 0) {
        counts = malloc(sizeof *counts * (size_t)m.ncounts);
        if (!counts) {
            rank_error(s, rank, "out of memory for a collective's counts");
            srv_stop_run(s);
            return;
        }
        memcpy(counts, p + sizeof m, sizeof *counts * (size_t)m.ncounts);
    }
    ms_driver_event e = {.kind = MS_EV_ICOLL, .fn = m.fn, .t = m.t, .req = m.req, .comm = m.comm,
                          .bytes = m.bytes, .peer = m.root, .mode = m.kind, .flags = m.inter_low, .list = counts,
                          .nlist = counts ? (size_t)m.ncounts : 0};
    apply(s, rank, &e);
    free(counts);
}

static void on_comm_add(ms_server *s, int rank, const char *p, uint32_t len)
{
    ms_msg_comm_add m;
    if (len < sizeof m) return;
    memcpy(&m, p, sizeof m);
    if (m.size <= 0 || len < sizeof m + sizeof(int32_t) * (size_t)m.size) return;
    int32_t *w = malloc(sizeof *w * (size_t)m.size);   /* the payload may be unaligned */
    if (!w) {
        rank_error(s, rank, "out of memory for a communicator's members");
        srv_stop_run(s);
        return;
    }
    memcpy(w, p + sizeof m, sizeof *w * (size_t)m.size);
    ms_driver_event e = {.kind = MS_EV_COMM_ADD, .comm = m.comm, .members = w, .nmembers = m.size};
    apply(s, rank, &e);
    free(w);
}

static void on_wait(ms_server *s, int rank, rank_info *r, const char *p, uint32_t len)
{
    ms_msg_wait m;
    if (len < sizeof m) return;
    memcpy(&m, p, sizeof m);
    if (m.n < 0 || len < sizeof m + sizeof(uint64_t) * (size_t)m.n) return;
    uint64_t *ids = malloc(sizeof *ids * (size_t)(m.n ? m.n : 1));
    if (!ids) {
        rank_error(s, rank, "out of memory for a wait's requests");
        srv_stop_run(s);
        return;
    }
    memcpy(ids, p + sizeof m, sizeof *ids * (size_t)m.n);
    s->round_trips++;
    r->quiet_ask = m.mode >= MS_TEST_ALL && m.n <= 16 && !m.flags ? 1 : 0;
    r->quiet_t = m.t;
    r->quiet_n = m.n;
    if (r->quiet_ask) memcpy(r->quiet_ids, ids, sizeof *ids * (size_t)m.n);
    ms_driver_event e = {.kind = MS_EV_WAIT, .fn = m.fn, .t = m.t, .mode = m.mode, .list = ids,
                          .nlist = (size_t)m.n,
                          .flags = ((m.flags & MS_WAIT_FLAG_SYNC) ? MS_EV_FLAG_SYNC : 0) |
                                   ((m.flags & MS_WAIT_FLAG_UNTIMED) ? MS_EV_FLAG_REJOIN : 0)};
    apply(s, rank, &e);
    free(ids);
}

static void on_probe(ms_server *s, int rank, rank_info *r, const char *p, uint32_t len)
{
    ms_msg_probe m;
    if (len < sizeof m) return;
    memcpy(&m, p, sizeof m);
    s->round_trips++;
    r->quiet_ask = m.blocking || m.src == MS_PROC_NULL ? 0 : 2;
    r->quiet_t = m.t;
    r->quiet_n = 0;
    ms_driver_event e = {.kind = MS_EV_PROBE, .fn = m.fn, .t = m.t, .comm = m.comm, .peer = m.src, .tag = m.tag,
                         .mode = m.blocking};
    apply(s, rank, &e);
}

static void on_unmodelled(ms_server *s, int rank, rank_info *r, const char *p, uint32_t len)
{
    char text[MS_TEXT_MAX];
    size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
    memcpy(text, p, n);
    text[n] = 0;
    if (!strncmp(text, "FATAL ", 6)) {
        rank_error(s, rank, text + 6);
        srv_stop_run(s);
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
        ms_driver_event e = {.kind = MS_EV_UNTIMED, .fn = -1};
        apply(s, rank, &e);
    }
}

static void on_site(rank_info *r, const char *p, uint32_t len)
{
    ms_msg_site m;
    if (len < sizeof m) return;
    memcpy(&m, p, sizeof m);
    m.text[MS_SITE_TEXT - 1] = 0;
    size_t i;
    for (i = 0; i < r->nsites; i++)
        if (r->sites[i].fn == m.fn && !strcmp(r->sites[i].text, m.text)) break;
    if (i == r->nsites) {
        if (r->nsites == r->cap_sites) {
            size_t cap = r->cap_sites ? r->cap_sites * 2 : 16;
            site_total *q = realloc(r->sites, sizeof *q * cap);
            if (!q) return;
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
}

static void on_stall(ms_server *s, int rank, rank_info *r, const char *p, uint32_t len)
{
    char text[MS_TEXT_MAX];
    size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
    memcpy(text, p, n);
    text[n] = 0;
    /* one suspect per rank, with the thread it came from: another thread moving says nothing
     * about it, a new notice replaces it */
    if (!text[0] && r->suspect && r->suspect_thread != r->cur_thread) return;
    if (r->suspect_passed && !r->stopped_passed) ms_driver_thread_stalled(s->drv, rank, r->suspect_thread, "");
    free(r->suspect);
    r->suspect = NULL;
    r->suspect_passed = 0;
    if (!text[0]) return;
    /* the driver hears of it once the stall clock has counted shim.stall_timeout since the
     * wait began, which the shim has seen for its notice time already */
    r->suspect = strdup(text);
    r->suspect_thread = r->cur_thread;
    r->suspect_idle0 = s->stall_clock.idle_s - (double)s->welcome.stall_timeout_ps * 1e-12;
    r->suspect_since = wall_now() - (double)s->welcome.stall_timeout_ps * 1e-12;
    s->next_proc_look = 0;   /* look now */
}

static void on_thread(ms_server *s, int rank, rank_info *r, const char *p, uint32_t len)
{
    ms_msg_thread m;
    if (len < sizeof m) return;
    memcpy(&m, p, sizeof m);
    m.why[sizeof m.why - 1] = 0;
    if (m.op == MS_THREAD_VIOLATION) {
        if (!r->violation[0])
            snprintf(r->violation, sizeof r->violation, "threads of rank %d called MPI at the same time at %.6f us "
                     "(%s)", rank, (double)m.t * 1e-6, m.why);
        return;
    }
    if (m.slot < 0 || m.slot > MS_MODEL_MAX_THREADS || m.op < MS_THREAD_SWITCH || m.op > MS_THREAD_END) {
        rank_error(s, rank, "named a thread or a thread operation out of range (protocol mismatch?)");
        srv_stop_run(s);
        return;
    }
    r->cur_thread = m.slot;
    if (m.op == MS_THREAD_SWITCH) return;
    if (m.slot && m.slot > r->nth) {
        thread_info *q = realloc(r->th, sizeof *q * (size_t)m.slot);
        if (!q) {
            rank_error(s, rank, "out of memory for its threads");
            srv_stop_run(s);
            return;
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
    ms_driver_event e = {.kind = m.op == MS_THREAD_PARK ? MS_EV_UNTIMED : m.op == MS_THREAD_IDLE ? MS_EV_IDLE
                         : MS_EV_THREAD_END, .t = m.t};
    apply(s, rank, &e);
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
    case MS_MSG_ICOLL:
        on_icoll(s, rank, p, len);
        break;
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
    case MS_MSG_FIN_RETURNED:
        r->fin_returned = 1;
        break;
    case MS_MSG_RMA: {
        ms_msg_rma m;
        if (len < sizeof m) break;
        memcpy(&m, p, sizeof m);
        e = (ms_driver_event){.kind = MS_EV_RMA, .fn = m.fn, .t = m.t, .req = m.req, .comm = m.comm,
                              .bytes = m.bytes, .bytes_out = m.result_bytes, .peer = m.target, .mode = m.kind};
        apply(s, rank, &e);
        break;
    }
    case MS_MSG_COMM_ADD:
        on_comm_add(s, rank, p, len);
        break;
    case MS_MSG_WAIT:
        on_wait(s, rank, r, p, len);
        break;
    case MS_MSG_PROBE:
        on_probe(s, rank, r, p, len);
        break;
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
        srv_send_msg(r, MS_MSG_FIN_OK, NULL, 0, NULL, 0);
        break;
    }
    case MS_MSG_UNMODELLED:
        on_unmodelled(s, rank, r, p, len);
        break;
    case MS_MSG_SITE:
        on_site(r, p, len);
        break;
    case MS_MSG_PROGRESS: {
        if (len < sizeof r->progress) break;
        memcpy(&r->progress, p, sizeof r->progress);
        r->has_progress = 1;
        break;
    }
    case MS_MSG_STALL:   /* the stall watchdog: where it waits in the real MPI; empty: it moves again */
        on_stall(s, rank, r, p, len);
        break;
    case MS_MSG_THREAD:
        on_thread(s, rank, r, p, len);
        break;
    case MS_MSG_CALLSITE: {
        size_t n = len < sizeof r->callsite_text - 1 ? len : sizeof r->callsite_text - 1;
        memcpy(r->callsite_text, p, n);
        r->callsite_text[n] = 0;
        break;
    }
    default:
        rank_error(s, rank, "sent a message the server does not know (protocol mismatch?)");
        srv_rank_gone(s, rank);
    }
}

/* Handle every complete message in the rank's input buffer; keep a partial one. */
void srv_drain_input(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    size_t off = 0;
    while (r->in.len - off >= sizeof(ms_msg_header) && srv_rank_live(r)) {
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
            srv_rank_gone(s, rank);
            return;
        }
        if (r->in.len - off < sizeof h + h.length) break;
        handle(s, rank, h.type, r->in.p + off + sizeof h, h.length);
        off += sizeof h + h.length;
    }
    memmove(r->in.p, r->in.p + off, r->in.len - off);
    r->in.len -= off;
}

void srv_read_rank(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    for (;;) {
        if (srv_buf_room(&r->in, 65536, 131072) < 0) return;
        ssize_t n = read(r->fd, r->in.p + r->in.len, r->in.cap - r->in.len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n <= 0) {
            /* process what arrived before the close */
            srv_drain_input(s, rank);
            r->in.len = 0;
            srv_rank_gone(s, rank);
            return;
        }
        r->in.len += (size_t)n;
        if (r->in.len < r->in.cap) break;
    }
    srv_drain_input(s, rank);
}
