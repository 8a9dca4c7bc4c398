/* The link to the model server: batching and sending messages (over transport.c), handling the
 * server's, the loops that wait for the model while keeping the real MPI moving, and the
 * reports of point-to-point, one-sided and collective operations. */
#define _GNU_SOURCE
#include "shim_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* transport */

void flush_out(void)
{
    if (!S.server) return;
    S.tp_writing = 1;   /* a signal handler then leaves the connection alone */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    int rc = ms_tp_flush(&S.tp);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    S.tp_writing = 0;
    if (rc < 0) {
        S.active = 0;
        S.server = 0;
        ms_fatal("lost the connection to the model server (%s)", S.tp.shm ? "it ended" : strerror(errno));
    }
}

/* To the server only: what the trace has no use for (stall notices). */
void wire_put(uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (!S.server) return;
    if (__builtin_expect(T.slot != S.wire_slot, 0) && T.slot >= 0 && type != MS_MSG_THREAD) {
        /* the messages that follow are another thread's (docs/architecture.md "Threads") */
        ms_msg_thread th;
        memset(&th, 0, sizeof th);
        th.slot = T.slot;
        th.op = MS_THREAD_SWITCH;
        S.wire_slot = T.slot;
        wire_put(MS_MSG_THREAD, &th, sizeof th, NULL, 0);
    }
    if (type == MS_MSG_THREAD && ((const ms_msg_thread *)a)->op != MS_THREAD_VIOLATION)
        S.wire_slot = ((const ms_msg_thread *)a)->slot;   /* the server's thread from now on */
    if (ms_tp_put(&S.tp, type, a, alen, b, blen) < 0) ms_fatal("out of memory for the report buffer");
    if (S.tp.out_len > (1u << 20)) flush_out();
}

void put_msg(uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    /* A lookahead window holds while the rank posts only sends to others and receives: those do
     * not change the requests it tests or the messages it probes for (a receive can only take a
     * message away; local_send ends it for a send to itself), but their answers come back a
     * latency later. Anything else may change them. */
    if (type == MS_MSG_ISEND || type == MS_MSG_IRECV) {
        /* it may resume a blocked rank, whose reply reaches us no sooner than quiet_lat */
        int64_t end = T.clock_ps + S.quiet_lat;
        if (end < S.quiet_until) S.quiet_until = end;
    } else if (type != MS_MSG_FREE && type < MS_MSG_TR_CALL) {
        S.quiet_until = 0;
    }
    trace_put(type, a, alen, b, blen);
    wire_put(type, a, alen, b, blen);
}

/* The rank's totals as MPI_Finalize and PROGRESS send them; in_call_ps: virtual time of the
 * current MPI call so far (MPI_Finalize's own). */
void shim_totals_into(ms_msg_finalize *f, int64_t in_call_ps)
{
    memset(f, 0, sizeof *f);
    f->t = T.clock_ps;
    f->compute_ps = S.compute_ps;
    f->mpi_ps = S.mpi_ps + in_call_ps;
    f->calls = S.calls;
    f->unmodelled_calls = S.unmodelled_calls;
    f->charging = S.ck;
    shim_gate_stats_into(&f->charging);
    ms_threads_finalize_into(f);
}

/* About once a second of real time: the rank's totals and call sites so far, to the server only,
 * so that a rank killed before MPI_Finalize still has them in the report (outside the gap: the
 * caller is ms_exit, before its reading). */
void shim_send_progress(void)
{
    S.progress_due = 0;
    S.progress_mono_ns = mono_ns();
    if (!S.server) return;
    ms_msg_finalize f;
    shim_totals_into(&f, 0);
    wire_put(MS_MSG_PROGRESS, &f, sizeof f, NULL, 0);
    send_callsites(0);
    flush_out();
}

static void handle_message(uint32_t type, const char *p, uint32_t len);

/* Read whatever the server has sent and act on it, waiting up to wait_us for data. */
static void service_server_us(int64_t wait_us)
{
    long got = ms_tp_read_us(&S.tp, wait_us);
    if (got < 0) {
        S.active = 0;
        S.server = 0;
        ms_fatal("the model server closed the connection (or refused this rank)");
    }
    if (!got) return;
    ms_transport *t = &S.tp;
    size_t off = 0;
    while (t->in_len - off >= sizeof(ms_msg_header)) {
        ms_msg_header h;
        memcpy(&h, t->in + off, sizeof h);
        if (t->in_len - off - sizeof h < h.length) break;
        handle_message(h.type, t->in + off + sizeof h, h.length);
        off += sizeof h + h.length;
    }
    ms_tp_consume(t, off);
}

/* The same, waiting up to wait_ms milliseconds. */
void shim_service_server(int wait_ms) { service_server_us((int64_t)wait_ms * 1000); }

static void handle_message(uint32_t type, const char *p, uint32_t len)
{
    switch (type) {
    case MS_MSG_RESUME: {
        trace_put(type, p, len, NULL, 0);
        ms_msg_resume rs;
        memcpy(&rs, p, sizeof rs);
        /* the thread whose wait it answers (whichever thread reads it) */
        ms_thr *w = rs.thread >= 0 && rs.thread < S.nthreads ? S.thr[rs.thread] : NULL;
        if (!w) ms_fatal("the model server resumed thread %d, which is not waiting", rs.thread);
        if (rs.n > w->results_cap) {
            ms_msg_result *q = realloc(w->results, sizeof *q * (size_t)rs.n);
            if (!q) ms_fatal("out of memory");
            w->results = q;
            w->results_cap = rs.n;
        }
        memcpy(w->results, p + sizeof rs, sizeof(ms_msg_result) * (size_t)rs.n);
        w->results_n = rs.n;
        w->resume_t = rs.t;
        w->resume_ready = 1;
        /* local answers hold for a rank of one thread only */
        S.cpu_free = S.hint_new && !S.multi ? S.hint.cpu_free : -1;
        S.quiet_until = S.hint_new && !S.multi ? S.hint.quiet_until : 0;
        S.quiet_lat = S.hint_new && !S.multi ? S.hint.quiet_lat : 0;
        S.hint_new = 0;
        break;
    }
    case MS_MSG_RESOLVE: {
        trace_put(type, p, len, NULL, 0);
        ms_msg_resolve rv;
        memcpy(&rv, p, sizeof rv);
        ms_rq *r = shim_find_by_id(rv.req);
        if (r && !r->resolved) {
            r->resolved = 1;
            r->src = rv.source - r->roff;   /* the program's rank (an intercommunicator's remote rank) */
            r->tag = rv.tag;
        }
        if (r) {
            r->matched = 1;
            S.resolve_pending = 1;   /* the waiting loop posts it: a peer's real send may wait for it */
        }
        break;
    }
    case MS_MSG_DESCRIBE: {
        ms_msg_text t;
        memset(&t, 0, sizeof t);
        ms_thread_describe(t.text, sizeof t.text);
        put_msg(MS_MSG_CALLSITE, &t, sizeof t, NULL, 0);
        flush_out();
        break;
    }
    case MS_MSG_ABORT: {
        ms_msg_text t;
        memset(&t, 0, sizeof t);
        memcpy(&t, p, len < sizeof t ? len : sizeof t);
        t.text[MS_TEXT_MAX - 1] = 0;
        t.text[strcspn(t.text, "\n")] = 0; /* the details are in the server's summary */
        /* mpisim says why once, in its summary after the launcher has ended: no line per rank
         * (16 of them at -n 16), and no MPI_ABORT banner of Open MPI's after it. ORTE's help
         * messages from this process are turned off (orte_execute_quiet, what mpirun -q sets)
         * only now that mpisim stops it, so that the program's own MPI errors still print. */
        if (getenv("MPISIM_DEBUG")) {
            fprintf(stderr, "mpisim: rank %d stopped by the model server: %s\n", S.rank, t.text);
            fflush(stderr);
        } else {
            bool *quiet = dlsym(RTLD_DEFAULT, "orte_execute_quiet");
            if (quiet) *quiet = true;
        }
        S.active = 0;
        /* what it recorded stays, and its trace says it was stopped (a replay blames no one for it) */
        char why[200];
        snprintf(why, sizeof why, "stopped by the model server: %.160s", t.text);
        trace_stop(why);
        PMPI_Abort(MPI_COMM_WORLD, 4);
        _exit(4);
    }
    case MS_MSG_FIN_OK:
        S.fin_ok = 1;
        break;
    case MS_MSG_HINT:   /* about the RESUME that follows; not traced (replay asks the model itself) */
        if (len >= sizeof S.hint) {
            memcpy(&S.hint, p, sizeof S.hint);
            S.hint_new = 1;
        }
        break;
    default:
        ms_fatal("unexpected message %u from the model server", type);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* real MPI progress */

void ms_progress(void)
{
    int flag;
    /* Nothing is ever sent on progress_comm: the probe only runs the real MPI's progress engine,
     * without the request bookkeeping Testsome would need. */
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, S.progress_comm, &flag, MPI_STATUS_IGNORE);
    /* finish detached sends as their receivers take them */
    for (size_t i = 0; i < S.detached_n;) {
        ms_rq *r = S.detached[i];
        PMPI_Test(&r->real, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            ms_rq_free(r);
            S.detached[i] = S.detached[--S.detached_n];
        } else {
            i++;
        }
    }
}

/* shim.spin_oversubscribed = sleep (the default): where this host's ranks outnumber the cores they may use
 * (the compute gate's count of them, else the host's CPUs) more than MS_SPIN_RANKS_PER_CORE
 * times, waiting loops sleep at once. The
 * yields of many waiting ranks only take the CPU from those that work and from the model server,
 * and the lockstep of a conservative horizon makes every rank wait for the slowest to be
 * scheduled (bench_cosim_wall.py --only many: the 16-rank stencil on 2 cores 11.4-12.1 s
 * spinning, 3.9-4.6 s sleeping). The ranks of this host: Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE
 * (MPICH's MPI_LOCALNRANKS); without either, nothing changes. */
/* Ranks per core up to which waiting ranks spin all the same: at 2 per core (HPCC on 4 ranks, 2
 * cores, load 15-19) sleeping took 13.8 s against 9.4 s spinning, while at 8 per core the 16-rank
 * stencil took 3.0 s sleeping against 5.1 s spinning (bench_cosim_wall.py; the 16-rank matmul, a
 * master and workers with long computations, went the other way at that load: 5.2 s against 3.7,
 * until waits in the real MPI kicked their peer, ms_real_wait_step). A choice between measured
 * cases, not a derivation. */
#define MS_SPIN_RANKS_PER_CORE 4
void shim_spin_where_cores_allow(void)
{
    if (S.params.spin_oversubscribed || S.params.spin_polls <= 0) return;
    const char *e = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!e) e = getenv("MPI_LOCALNRANKS");
    long local = e ? strtol(e, NULL, 10) : 0;
    long cores = S.params.compute_slots > 0 ? S.params.compute_slots : sysconf(_SC_NPROCESSORS_ONLN);
    if (local > 0 && cores > 0 && local > MS_SPIN_RANKS_PER_CORE * cores) S.params.spin_polls = 0;
}

/* Waiting loops poll without sleeping for shim.spin_polls rounds, yielding the CPU between
 * polls, then sleep up to 1 ms per poll: the server's answer usually comes within microseconds,
 * and a sleeping CPU of a virtual machine takes tens of them to wake (bench_shim: 164 -> 31 us
 * per ping-pong round trip). Over shared memory a quarter of the rounds: the server's doorbell
 * wakes a sleeping rank as soon as its answer is written (a futex, no poll timeout to wait out),
 * so spinning longer only takes the CPU from the server and the other ranks (bench_shim.py on 2
 * cores: 100 rounds 26 us, 400 rounds 25-34 us, 25 rounds 63-85 us per round trip). */
static int backoff_ms(unsigned spins)
{
    if (S.tp.shm) {
        if (spins >= (unsigned)S.params.spin_polls / 4u) return 1;
        if (spins) sched_yield();
        return 0;
    }
    if (spins < (unsigned)S.params.spin_polls) {
        if (spins) sched_yield();
        return 0;
    }
    return 1;
}

/* The same, from a loop that holds the shim's lock: where other threads may need it, never
 * block on the server with it, but let it go for the yield or the sleep (then read at once). */
int shim_wait_ms(unsigned spins)
{
    if (__builtin_expect(S.nthreads <= 1 && !__atomic_load_n(&S.violations, __ATOMIC_RELAXED), 1)) {
        /* MPI_THREAD_MULTIPLE with one thread so far: another may make its first call any time;
         * it gets the lock between two reads (a read blocks 1 ms at most) */
        if (S.mt && spins) ms_lock_pause(1);
        return backoff_ms(spins);
    }
    unsigned polls = S.tp.shm ? (unsigned)S.params.spin_polls / 4u : (unsigned)S.params.spin_polls;
    if (spins) ms_lock_pause(spins < polls);
    return 0;
}

/* Send what is batched and wait for the server's RESUME, keeping the real MPI moving. */
static void await_resume(ms_fn_id fn)
{
    T.resume_ready = 0;
    flush_out();
    T.blocked_fn = fn;
    T.waiting = 1;
    for (unsigned spins = 0; !T.resume_ready; spins++) {
        shim_service_server(shim_wait_ms(spins));
        /* a receive the model matched goes to the real MPI now: its sender may already sit in
         * its real send, which the model has completed, holding the horizon (a hang otherwise) */
        if (S.resolve_pending) ms_post_deferred();
        if (!T.resume_ready) ms_progress();
    }
    T.waiting = 0;
    T.clock_ps = T.resume_t > T.clock_ps ? T.resume_t : T.clock_ps;
}

void shim_wait_for(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn)
{
    shim_wait_common(mode, n, reqs, results, fn, 0, NULL);
}

void shim_wait_sync(ms_rq *r, ms_fn_id fn)
{
    ms_msg_result res;
    shim_wait_common(0, 1, &r, &res, fn, MS_WAIT_FLAG_SYNC, NULL);
}

int shim_wait_around(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn,
                         int (*real)(void *arg), void *arg)
{
    real_call rc = {real, arg, MPI_SUCCESS};
    shim_wait_common(mode, n, reqs, results, fn, 0, &rc);
    return rc.rc;
}

/* Capture only, a blocking call whose requests are not all complete: wait for them in the real
 * MPI's own blocking call (MPI_Waitall, Waitany, Waitsome over the real requests still pending)
 * rather than polling with MPI_Test and sleeps: what the program costs natively, and on an
 * oversubscribed machine the polling ranks took CPU from the ones they waited for. */
static void wait_real_block(int all, int any, int n, ms_rq *const *reqs)
{
    MPI_Request hs_small[16];
    MPI_Status st_small[16];
    int map_small[16], idx_small[16];
    MPI_Request *hs = hs_small;
    MPI_Status *st = st_small;
    int *map = map_small, *idx = idx_small;
    if (n > 16) {
        hs = malloc(sizeof *hs * (size_t)n);
        st = malloc(sizeof *st * (size_t)n);
        map = malloc(sizeof *map * (size_t)n);
        idx = malloc(sizeof *idx * (size_t)n);
        if (!hs || !st || !map || !idx) ms_fatal("out of memory");
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (reqs[i]->real_posted && !reqs[i]->real_done) {
            hs[k] = reqs[i]->real;
            map[k++] = i;
        }
    if (k && all) {
        PMPI_Waitall(k, hs, st);
        for (int j = 0; j < k; j++) {
            ms_rq *r = reqs[map[j]];
            r->status = st[j];
            r->real_done = 1;
        }
    } else if (k && any) {
        int j = MPI_UNDEFINED;
        PMPI_Waitany(k, hs, &j, st);
        if (j != MPI_UNDEFINED && j >= 0 && j < k) {
            reqs[map[j]]->status = st[0];
            reqs[map[j]]->real_done = 1;
        }
    } else if (k) {
        int out = 0;
        PMPI_Waitsome(k, hs, &out, idx, st);
        for (int j = 0; out != MPI_UNDEFINED && j < out; j++)
            if (idx[j] >= 0 && idx[j] < k) {
                reqs[map[idx[j]]]->status = st[j];
                reqs[map[idx[j]]]->real_done = 1;
            }
    }
    for (int j = 0; j < k; j++) reqs[map[j]]->real = hs[j];   /* completed ones: MPI_REQUEST_NULL */
    if (hs != hs_small) {
        free(hs);
        free(st);
        free(map);
        free(idx);
    }
}

/* Capture only: the real MPI decides; the trace gets what it said (RESUME with time 0). */
static void wait_real(int mode, int n, ms_rq *const *reqs, ms_msg_result *results)
{
    int is_test = mode >= MS_WIRE_TEST_ALL;
    int any = mode == MS_WIRE_WAIT_ANY || mode == MS_WIRE_TEST_ANY, some = mode == MS_WIRE_WAIT_SOME || mode == MS_WIRE_TEST_SOME;
    int all = !any && !some;
    int done = 0;
    for (unsigned spins = 0;; spins++) {
        for (int i = 0; i < n; i++) {
            ms_rq *r = reqs[i];
            if (r->real_done || !r->real_posted) continue;
            int flag = 0;
            PMPI_Test(&r->real, &flag, &r->status);
            if (flag) r->real_done = 1;
        }
        done = 0;
        for (int i = 0; i < n; i++) done += reqs[i]->real_done || !reqs[i]->real_posted;
        if (is_test || (all && done == n) || (!all && done > 0)) break;
        if (S.mt || S.nthreads > 1 || S.violations) {
            /* other threads may need the lock: poll, letting it go between reads */
            ms_lock_pause(spins <= 64);
            continue;
        }
        if (spins == 0) {   /* a blocking call: block in the real MPI (the next pass finds them done) */
            wait_real_block(all, any, n, reqs);
            continue;
        }
        if (spins > 64) usleep(50);
    }
    int first = -1;
    for (int i = 0; i < n; i++) {
        ms_rq *r = reqs[i];
        int c = r->real_done || !r->real_posted;
        if (all && is_test && done != n) c = 0;
        if (any && c) {
            if (first >= 0) c = 0;
            else first = i;
        }
        memset(&results[i], 0, sizeof results[i]);
        results[i].req = r->id;
        results[i].completed = c;
        results[i].source = -1;
        results[i].tag = -1;
        int cancelled = 0;
        if (c && r->kind == MS_RQ_RECV && r->real_posted) PMPI_Test_cancelled(&r->status, &cancelled);
        results[i].cancelled = cancelled;
        if (c && r->kind == MS_RQ_RECV && r->real_posted && !cancelled) {
            int count = 0;
            PMPI_Get_count(&r->status, MPI_BYTE, &count);
            results[i].source = r->status.MPI_SOURCE + r->roff;   /* the model's rank, as a co-simulation records it */
            results[i].tag = r->status.MPI_TAG;
            results[i].bytes = (uint64_t)(count < 0 ? 0 : count);
            r->resolved = 1;
            ms_trace_resolution(r);
        }
        if (c) r->model_done = 1;
    }
    ms_msg_resume rs = {0, n, 0};
    trace_put(MS_MSG_RESUME, &rs, sizeof rs, results, sizeof *results * (size_t)n);
}

/* A local answer makes no round trip, so none of the waiting loop's chores: now and then read the
 * server (an abort, decisions that release held-back receives) and drive the real MPI (a peer's
 * real transfer may need it); detached sends at every answer, a program that only sends would
 * otherwise keep their copies. */
static void local_chores(void)
{
    if (((S.local_waits + S.local_probes) & 63) == 0) {
        shim_service_server(0);
        if (S.resolve_pending) ms_post_deferred();
        ms_progress();
    } else if (S.detached_n) {
        ms_progress();
    }
}

/* Answer a wait here when the model's answer is known (docs/architecture.md "Local answers"):
 * every request's completion time is (local sends), or, for a Test of the same requests as the
 * last negative one, before its lookahead window ends, the others cannot complete. The answer is
 * the model's do_resume, and the trace gets the WAIT (flagged) and the RESUME the server would
 * have sent, so that replay asks the model and checks it. Returns 1 if answered. */
static int wait_local(ms_msg_wait *w, int n, ms_rq *const *reqs, const uint64_t *ids, ms_msg_result *results)
{
    int mode = w->mode, is_test = mode >= MS_WIRE_TEST_ALL;
    if (!S.server || w->flags || n <= 0) return 0;
    int known = 0;
    for (int i = 0; i < n; i++) known += reqs[i]->local_known;
    if (known < n) {
        /* the window: same mode, same requests as the Test it was given with */
        if (!is_test || S.quiet_kind != 1 || T.clock_ps >= S.quiet_until || mode != S.quiet_mode ||
            n != S.quiet_n || memcmp(ids, S.quiet_ids, sizeof *ids * (size_t)n))
            return 0;
    }
    /* ms_model_events.c do_resume: a test answers for its time, a wait resumes when it is satisfied */
    const int64_t never = INT64_MAX;
    int64_t t = T.clock_ps, R = t, at = t, first = never, last = t;
    for (int i = 0; i < n; i++) {
        int64_t d = reqs[i]->local_known ? reqs[i]->local_done : never;
        if (d < first) first = d;
        if (d > last) last = d;
    }
    if (is_test) R = t + S.params.poll_cost_ps;
    else if (mode == MS_WIRE_WAIT_ALL) R = at = last;
    else R = at = first > t ? first : t;
    int all = 1;
    int best = n;
    for (int i = 0; i < n; i++) {
        int64_t d = reqs[i]->local_known ? reqs[i]->local_done : never;
        if (d > at) all = 0;
        else if (best == n || d < reqs[best]->local_done) best = i;
    }
    for (int i = 0; i < n; i++) {
        ms_rq *r = reqs[i];
        int64_t d = r->local_known ? r->local_done : never;
        int c;
        switch (mode) {
        case MS_WIRE_WAIT_ALL: case MS_WIRE_TEST_ALL: case MS_WIRE_TEST_PEEK: c = all; break;
        case MS_WIRE_WAIT_ANY: case MS_WIRE_TEST_ANY: c = i == best; break;
        default: c = d <= at; break;
        }
        ms_msg_result *o = &results[i];
        memset(o, 0, sizeof *o);
        o->req = r->id;
        o->completed = c;
        o->source = -1;
        o->tag = -1;
        o->bytes = r->model_bytes;
        o->complete_time = c ? d : never;
        if (c) {
            r->model_done = 1;
            r->model_forgotten = mode != MS_WIRE_TEST_PEEK;
            /* the model still holds it: it drops a freed send once complete (never traced) */
            if (r->model_forgotten) {
                ms_msg_cancel m = {0};
                m.t = t;
                m.req = r->id;
                m.fn = w->fn;
                wire_put(MS_MSG_FREE, &m, sizeof m, NULL, 0);
            }
        }
    }
    w->flags |= MS_WAIT_FLAG_LOCAL;
    trace_put(MS_MSG_WAIT, w, sizeof *w, ids, sizeof *ids * (size_t)n);
    ms_msg_resume rs = {R, n, 0};
    trace_put(MS_MSG_RESUME, &rs, sizeof rs, results, sizeof *results * (size_t)n);
    if (R > T.clock_ps) T.clock_ps = R;
    S.local_waits++;
    local_chores();
    return 1;
}

void shim_wait_common(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn, int flags,
                        real_call *real)
{
    ms_msg_wait w = {0};
    w.flags = flags;
    w.t = T.clock_ps;
    w.mode = mode;
    w.n = n;
    w.fn = (int32_t)fn;
    w.callsite = T.cur_pcs[0];
    uint64_t ids_small[16] = {0};
    uint64_t *ids = n <= 16 ? ids_small : malloc(sizeof *ids * (size_t)n);
    if (!ids) ms_fatal("out of memory");
    for (int i = 0; i < n; i++) ids[i] = reqs[i]->id;
    if (wait_local(&w, n, reqs, ids, results)) {
        if (ids != ids_small) free(ids);
        if (real) real->rc = real->fn(real->arg);
        return;
    }
    put_msg(MS_MSG_WAIT, &w, sizeof w, ids, sizeof *ids * (size_t)n);
    S.quiet_kind = 0;
    if (S.server && mode >= MS_WIRE_TEST_ALL && !flags && n <= 16) {
        /* what a lookahead window given with a negative answer will hold for */
        S.quiet_kind = 1;
        S.quiet_mode = mode;
        S.quiet_n = n;
        memcpy(S.quiet_ids, ids, sizeof *ids * (size_t)n);
    }
    if (ids != ids_small) free(ids);
    if (!S.server) {
        if (real) real->rc = real->fn(real->arg);
        wait_real(mode, n, reqs, results);
        return;
    }
    if (real) {
        /* the model holds the rank from here: the real call may wait for any rank */
        flush_out();
        T.blocked_fn = fn;
        /* MPI_THREAD_MULTIPLE: the real call may wait for another thread of the rank, which needs
         * the lock meanwhile (whoever reads the server sets this thread's RESUME) */
        if (S.mt) ms_unlock();
        real->rc = real->fn(real->arg);
        if (S.mt) ms_lock(1);
    }
    await_resume(fn);
    if (T.results_n != n) ms_fatal("model answered %d results for %d requests", T.results_n, n);
    for (int i = 0; i < n; i++) {
        results[i] = T.results[i];
        if (T.results[i].completed) {
            reqs[i]->model_done = 1;
            reqs[i]->model_forgotten = mode != MS_WIRE_TEST_PEEK;
            if (T.results[i].cancelled) {
                reqs[i]->model_cancelled = 1;
                reqs[i]->resolved = 1;   /* decided: it no longer holds later receives back */
            } else if (reqs[i]->kind == MS_RQ_RECV) {
                reqs[i]->matched = 1;
                if (!reqs[i]->resolved) {
                    reqs[i]->resolved = 1;
                    reqs[i]->src = T.results[i].source - reqs[i]->roff;
                    reqs[i]->tag = T.results[i].tag;
                }
            }
        }
    }
}

void ms_block_probe(MPI_Comm mcomm, int src, int tag, int blocking, ms_msg_result *result, ms_fn_id fn)
{
    int roff = 0, inter = 0;
    uint64_t comm = ms_comm_id_x(mcomm, &roff, &inter);
    int user_src = src;
    if (src >= 0) src += roff;   /* an intercommunicator's remote rank, in the model's union */
    ms_msg_probe pr = {0};
    pr.t = T.clock_ps;
    pr.comm = comm;
    pr.src = src;
    pr.tag = tag;
    pr.blocking = blocking;
    pr.fn = (int32_t)fn;
    pr.callsite = T.cur_pcs[0];
    if (S.server && !blocking && S.quiet_kind == 2 && T.clock_ps < S.quiet_until && S.quiet_comm == comm &&
        S.quiet_src == src && S.quiet_tag == tag) {
        /* inside the lookahead window of the same Iprobe's negative answer: the same answer
         * (the model's do_resume for W_IPROBE), traced as if the server had given it */
        trace_put(MS_MSG_PROBE, &pr, sizeof pr, NULL, 0);
        memset(result, 0, sizeof *result);
        result->source = -1;
        result->tag = -1;
        result->complete_time = INT64_MAX;
        ms_msg_resume rs = {T.clock_ps + S.params.poll_cost_ps, 1, 0};
        trace_put(MS_MSG_RESUME, &rs, sizeof rs, result, sizeof *result);
        T.clock_ps = rs.t;
        S.local_probes++;
        local_chores();
        return;
    }
    put_msg(MS_MSG_PROBE, &pr, sizeof pr, NULL, 0);
    S.quiet_kind = 0;
    if (S.server && !blocking) {
        S.quiet_kind = 2;
        S.quiet_comm = comm;
        S.quiet_src = src;
        S.quiet_tag = tag;
    }
    if (!S.server) {
        MPI_Status st;
        int flag = 1;
        if (blocking) PMPI_Probe(user_src, tag, mcomm, &st);
        else PMPI_Iprobe(user_src, tag, mcomm, &flag, &st);
        memset(result, 0, sizeof *result);
        result->completed = flag;
        result->source = flag ? st.MPI_SOURCE + roff : -1;   /* traced in the model's ranks */
        result->tag = flag ? st.MPI_TAG : -1;
        if (flag) {
            int count = 0;
            PMPI_Get_count(&st, MPI_BYTE, &count);
            result->bytes = (uint64_t)(count < 0 ? 0 : count);
        }
        ms_msg_resume rs = {0, 1, 0};
        trace_put(MS_MSG_RESUME, &rs, sizeof rs, result, sizeof *result);
        if (flag) result->source -= roff;
        return;
    }
    await_resume(fn);
    *result = T.results[0];
    if (inter && result->source >= 0) result->source -= roff;   /* the program's (remote) rank */
}

int ms_real_complete(ms_rq *r)
{
    if (r->real_done || !r->real_posted) return MPI_SUCCESS;
    int flag = 0;
    ms_real_wait w = {0};
    for (;;) {
        int rc = PMPI_Test(&r->real, &flag, &r->status);
        if (rc != MPI_SUCCESS) {
            ms_real_wait_end(&w);
            return rc;
        }
        if (flag) break;
        ms_real_wait_step(&w, r);
    }
    ms_real_wait_end(&w);
    r->real_done = 1;
    return MPI_SUCCESS;
}

/* What a stalled wait tells the server: the call, the peer and tag, the call site. */
static void stall_text(const ms_rq *r, char *out, size_t len)
{
    char where[MS_SITE_TEXT], what[160];
    cs_text(T.cur_pcs, T.cur_npcs, where, sizeof where);
    if (!r)
        snprintf(what, sizeof what, "a request mpisim does not time");
    else if (r->kind == MS_RQ_SEND)
        snprintf(what, sizeof what, "its send to rank %d tag %d (request %llu)", r->src, r->tag,
                 (unsigned long long)r->id);
    else if (r->kind == MS_RQ_RECV)
        snprintf(what, sizeof what, "its receive from rank %d tag %d (request %llu)", r->src, r->tag,
                 (unsigned long long)r->id);
    else
        snprintf(what, sizeof what, "its collective (request %llu)", (unsigned long long)r->id);
    snprintf(out, len, "%s waits in the real MPI for %s; %s called from %s", ms_fn_names[T.cur_fn], what,
             ms_fn_names[T.cur_fn], where);
}

/* A sleep of a loop that waits in the real MPI (between two drives of its progress), us */
#define MS_REAL_WAIT_SLEEP_US 100
void ms_real_wait_step(ms_real_wait *w, const ms_rq *r)
{
    unsigned spins = w->spins++;
    /* reports a local answer left batched (a send the model completed without a round trip) may
     * be what the peer this waits for needs: the model must see them */
    if (spins == 0 && S.server && S.tp.out_len) flush_out();
    /* What this waits for comes from the real MPI, which rings no doorbell: a sleep on the
     * server's one wakes only for the server, so it is short here (the 16-rank matmul, whose
     * ranks wait in their real bcasts and scatters, took twice as long with waits that sleep,
     * bench_cosim_wall.py --only many, with 1 ms) */
    if (S.server) service_server_us(shim_wait_ms(spins) ? MS_REAL_WAIT_SLEEP_US : 0);
    /* The peer may sleep in its wait for the server while its real MPI holds the rest of this
     * transfer (Open MPI's rendezvous needs both sides' progress), and the model cannot resume
     * it while this rank holds the horizon here: kick it (a world rank; other communicators'
     * peers are not at hand) */
    if (S.server && S.tp.shm && r && (r->kind == MS_RQ_SEND || r->kind == MS_RQ_RECV) &&
        r->comm_id == MS_COMM_WORLD_ID && r->src >= 0)
        ms_tp_kick(&S.tp, r->src);
    else if (S.mt || S.nthreads > 1 || S.violations) ms_lock_pause(spins <= 64);
    else if (spins > 64) usleep(50);
    if (S.resolve_pending) ms_post_deferred();
    ms_progress();
    if (!S.server || S.params.stall_timeout_ps <= 0 || w->stalled || (spins & 63)) return;
    int64_t now = mono_ns();
    if (spins == 0) {
        w->since_ns = now;
    } else if ((now - w->since_ns) * 1000 >= S.params.stall_timeout_ps) {
        /* nothing completed for shim.stall_timeout: the server decides whether the job is stuck */
        ms_msg_text t;
        memset(&t, 0, sizeof t);
        stall_text(r, t.text, sizeof t.text);
        wire_put(MS_MSG_STALL, &t, sizeof t, NULL, 0);
        flush_out();
        w->stalled = 1;
    }
}

void ms_real_wait_end(ms_real_wait *w)
{
    if (!w->stalled) return;
    ms_msg_text t;   /* empty: it moves again */
    memset(&t, 0, sizeof t);
    wire_put(MS_MSG_STALL, &t, sizeof t, NULL, 0);
    flush_out();
    w->stalled = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* reports */

/* An eager standard send to another rank completes in the model at max(t, its CPU free) + send
 * overhead + copy (ms_model_local_send, told in the WELCOME), and only the rank's own posts move
 * its CPU while the last HINT said so: the shim knows the answer of any wait for it. */
static void local_send(ms_rq *r, int to_self, uint64_t bytes, int mode)
{
    if (!S.server) return;
    if (mode == MS_WIRE_SEND_STANDARD && !to_self && r->src != MPI_PROC_NULL && S.params.local_send && S.cpu_free >= 0 &&
        (int64_t)bytes < S.params.eager_threshold) {
        double pb = S.params.local_copy_ps_per_byte;
        int64_t copy = pb > 0 ? (int64_t)llround(pb * (double)bytes) : 0;   /* ms_host.c bytes_ps */
        int64_t start = T.clock_ps > S.cpu_free ? T.clock_ps : S.cpu_free;
        r->local_known = 1;
        r->local_done = start + ms_isend_cost(bytes) + copy;
        S.cpu_free = r->local_done;
    } else if (r->src != MPI_PROC_NULL) {
        S.cpu_free = -1;   /* moved in ways the shim does not follow (modes, rendezvous, itself) */
    }
    if (to_self) S.quiet_until = 0;   /* it may be the message a receive or probe waits for */
}

void ms_report_isend(ms_rq *r, int dst, int tag, uint64_t bytes, int mode, int to_self, ms_fn_id fn)
{
    r->model_bytes = bytes;
    local_send(r, to_self, bytes, mode);
    ms_msg_isend m = {0};
    m.t = T.clock_ps;
    m.req = r->id;
    m.comm = r->comm_id;
    m.bytes = bytes;
    m.dst = dst;
    m.tag = tag;
    m.mode = mode;
    m.fn = (int32_t)fn;
    m.buf = ms_buffer_identity(r->buf, bytes);
    T.call_bytes += bytes;
    put_msg(MS_MSG_ISEND, &m, sizeof m, NULL, 0);
}

void ms_report_irecv(ms_rq *r, int src, int tag, uint64_t bytes, ms_fn_id fn)
{
    r->model_bytes = bytes;
    if (S.params.recv_moves_cpu) S.cpu_free = -1;   /* a rendezvous match registers its buffer */
    ms_msg_irecv m = {0};
    m.t = T.clock_ps;
    m.req = r->id;
    m.comm = r->comm_id;
    m.bytes = bytes;
    m.src = src;
    m.tag = tag;
    m.fn = (int32_t)fn;
    m.flags = r->notify ? MS_IRECV_NOTIFY : 0;
    m.buf = ms_buffer_identity(r->buf, bytes);
    T.call_bytes += bytes;
    put_msg(MS_MSG_IRECV, &m, sizeof m, NULL, 0);
}

static void report_request_op(uint32_t type, const ms_rq *r, ms_fn_id fn)
{
    ms_msg_cancel m = {0};
    m.t = T.clock_ps;
    m.req = r->id;
    m.fn = (int32_t)fn;
    put_msg(type, &m, sizeof m, NULL, 0);
}
void ms_report_cancel(const ms_rq *r, ms_fn_id fn) { report_request_op(MS_MSG_CANCEL, r, fn); }
void ms_report_free(const ms_rq *r, ms_fn_id fn) { report_request_op(MS_MSG_FREE, r, fn); }

void ms_report_rma(uint64_t id, uint64_t win_comm, int target, int kind, uint64_t bytes, uint64_t result_bytes,
                   ms_fn_id fn)
{
    S.cpu_free = -1;   /* moved by the operation in ways the shim does not follow (copies on a node) */
    ms_msg_rma m = {0};
    m.t = T.clock_ps;
    m.req = id;
    m.comm = win_comm;
    m.bytes = bytes;
    m.result_bytes = result_bytes;
    m.target = target;
    m.kind = kind;
    m.fn = (int32_t)fn;
    T.call_bytes += bytes + result_bytes;
    put_msg(MS_MSG_RMA, &m, sizeof m, NULL, 0);
}

void ms_report_icoll(ms_rq *r, int kind, int root, uint64_t bytes, const uint64_t *counts, int ncounts,
                     ms_fn_id fn)
{
    ms_report_icoll_inter(r, kind, root, bytes, counts, ncounts, 0, fn);
}

void ms_report_icoll_inter(ms_rq *r, int kind, int root, uint64_t bytes, const uint64_t *counts, int ncounts,
                           int inter_low, ms_fn_id fn)
{
    r->model_bytes = bytes;
    S.cpu_free = -1;   /* its steps send at times other ranks decide */
    ms_msg_icoll m = {0};
    m.t = T.clock_ps;
    m.req = r->id;
    m.comm = r->comm_id;
    m.bytes = bytes;
    m.kind = kind;
    m.root = root;
    m.ncounts = counts ? ncounts : 0;
    m.fn = (int32_t)fn;
    m.inter_low = inter_low;
    T.call_bytes += bytes;
    put_msg(MS_MSG_ICOLL, &m, sizeof m, counts, counts ? sizeof *counts * (size_t)ncounts : 0);
}
