/* The shim's runtime core: fatal errors, the per-call entry and exit (ms_enter, ms_exit: the hot
 * path, kept with what it calls most), and the request table. The clock is in shim_clock.c, the
 * link to the server and the waits in shim_link.c, start-up, signals and exit in
 * shim_lifecycle.c; trace capture, call sites, deferred receives and communicators are in their
 * own files (shim_state.h). */
#define _GNU_SOURCE
#include "shim_internal.h"
#include "ms_charge.h"

ms_state ms_shim_state = {.tp.fd = -1, .comm_keyval = MPI_KEYVAL_INVALID, .trace_fd = -1};
__thread ms_window ms_wrapper_window;
__thread ms_thr ms_self = {.slot = -1};

int ms_has_server(void) { return S.server; }

/* ---------------------------------------------------------------------------------------- */
/* errors */

void ms_fatal(const char *fmt, ...)
{
    char line[MS_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mpisim: rank %d: %s\n", S.rank, line);
    fflush(stderr);
    ms_msg_text t;
    memset(&t, 0, sizeof t);
    snprintf(t.text, sizeof t.text, "FATAL %.1000s", line);
    /* the trace says why the rank stopped too (a replay names the cause, not only the end) */
    trace_put(MS_MSG_UNMODELLED, &t, strlen(t.text) + 1, NULL, 0);
    trace_flush();
    if (S.server && (S.tp.fd >= 0 || S.tp.shm)) {
        /* tell the server so the run's report says why it stopped */
        S.tp.out_len = 0;   /* a partial batch would garble it */
        if (ms_tp_put(&S.tp, MS_MSG_UNMODELLED, &t, sizeof t, NULL, 0) == 0) ms_tp_flush(&S.tp);
    }
    /* a rank error (mpisim's exit code 4; 3 is a deadlock) */
    PMPI_Abort(MPI_COMM_WORLD, 4);
    _exit(4);
}

int ms_bypass(void) { return !S.active || T.depth > 0; }

void ms_f_callsite(void *ret)
{
    if (!ms_bypass()) T.fortran_site = ret;
}

void ms_f_callsite_at(void *ret, uint64_t entry_tsc)
{
    if (!ms_bypass()) {
        T.fortran_site = ret;
        T.fortran_tsc = entry_tsc;
    }
}

void ms_enter(ms_fn_id fn, void *callsite) { ms_enter_at(fn, callsite, 0); }

void ms_enter_at(ms_fn_id fn, void *callsite, uint64_t entry_tsc)
{
    if (T.depth++ == 0) {
        if (T.fortran_tsc) {   /* called by a generated Fortran binding: its stamp */
            entry_tsc = T.fortran_tsc;
            T.fortran_tsc = 0;
        }
        int64_t d = 0, ps = 0;
        int64_t mono = 0, now = 0;
        int window = 0;
        if (S.params.compute_mode != MS_COMPUTE_NONE) {
            uint64_t exit_tsc = ms_wrapper_window.exit_tsc;
            ms_wrapper_window.exit_tsc = 0;
            /* the wrapper window: not switched out since the exit stamp (the lock unchanged since
             * the exit reading, and even: the kernel not writing it), on the event's own thread */
            if (exit_tsc && entry_tsc > exit_tsc && S.window_on && T.window_exit_ok && T.ck_page) {
                uint32_t lock = *ms_wrapper_window.lock;
                if (lock == ms_wrapper_window.exit_lock && lock == T.last_exit_seq && !(lock & 1)) {
                    int64_t ns = llround((double)(entry_tsc - exit_tsc) * S.ns_per_tick);
                    now = T.last_exit_ns + ns;
                    mono = T.last_exit_mono_ns + ns;
                    T.ck_seq_now = lock;
                    window = 1;
                }
            }
            if (!window) now = clock_now(&mono);
            if (__builtin_expect(T.calibrating, 0)) {
                S.calib_enter_ns = now;
                S.calib_enter_tsc = entry_tsc;
                return;
            }
        }
        /* under the lower levels, a call while another thread is inside MPI is the program's error
         * (clock reads are none: Open MPI's MPI_Wtime is safe from any thread) */
        int clash = 0;
        if (!S.mt && !T.clock_read) {
            T.counted = 1;
            clash = __atomic_fetch_add(&S.inside, 1, __ATOMIC_ACQ_REL) != 0;
            /* counted before the lock: the thread holding it lets it go from now on (wait_ms) */
            if (__builtin_expect(clash, 0)) __atomic_add_fetch(&S.violations, 1, __ATOMIC_RELAXED);
        }
        /* after the reading: waiting for another thread is not computation */
        ms_lock(T.clock_read);
        if (__builtin_expect(clash, 0)) ms_thread_violation();
        int fresh = T.slot < 0;
        if (__builtin_expect(fresh, 0)) {   /* the thread's first MPI call */
            if (!mono) mono = mono_ns();
            T.last_exit_mono_ns = mono;
            ms_thread_register();
        }
        if (S.params.compute_mode != MS_COMPUTE_NONE) {
            if (mono - S.progress_mono_ns > 1000000000LL) S.progress_due = 1;
            d = clock_gap(now, mono, callsite, window);
            ps = ms_charge_ps(d, S.params.cpu_factor);
            if (__builtin_expect(T.adjust_ps != 0, 0)) {   /* OpenMP regions, joins: their critical paths */
                int64_t a = ps + T.adjust_ps < 0 ? -ps : T.adjust_ps;
                ps += a;
                S.critical_path_ps += a;
                T.adjust_ps = 0;
            }
            T.clock_ps += ps;
            S.compute_ps += ps;
            T.compute_ps += ps;
        }
        if (T.slot == 0) ms_gate_leave();   /* after the reading: a hand-off's wake-up is the shim's work */
        if (__builtin_expect(fresh || T.parked, 0)) ms_rejoin(fn);   /* a new thread joins the model */
        if (__builtin_expect(ms_omp_region != NULL, 0) && !T.clock_read) ms_omp_note_mpi();
        /* The clock-read rule (docs/architecture.md "The program's own clocks"). Where nothing
         * moves the clock between two reads (--compute none; under cpu and wall, the reads' cost
         * and the floor both set to 0, where an empty interval is charged 0 or the counter's
         * noise), a program that spins on the clock until time has passed would wait for ever, or
         * until noise moved it (a 2 us spin took 10-25 us and thousands of reads). So a read that
         * finds the clock moved since the previous read by computation alone and by less than a
         * tenth of shim.wtime_stall, right after a read that found the same, advances it by
         * shim.wtime_stall, as computation: {read; work; read} loops alternate an interval with
         * work and an empty one (the next iteration's first read right after the last), which
         * never come two in a row, so an honest interval reads its own length (the first version
         * advanced every empty read: a loop of 0.27 us of work took 1.27 us per iteration). Under
         * cpu and wall each read is charged shim.clock_read_cost, and each gap at least the floor:
         * the clock moves at every read and the rule is off. */
        if (__builtin_expect(T.clock_read, 0)) {
            T.clock_read = 0;
            int64_t moved = T.clock_ps - T.wtime_last_ps;
            int empty = (S.params.compute_mode == MS_COMPUTE_NONE ||
                         (S.params.clock_read_cost_ps <= 0 && (S.params.gap_floor_ps <= 0 || S.params.gap_noise_ps <= 0))) &&
                        moved == T.compute_ps - T.wtime_last_compute_ps && moved < S.params.wtime_stall_ps / 10;
            if (empty && T.wtime_empty_run) T.extra_compute_ps += S.params.wtime_stall_ps;
            T.wtime_empty_run = empty;
        }
        if (T.extra_compute_ps) {
            ps += T.extra_compute_ps;
            T.clock_ps += T.extra_compute_ps;
            S.compute_ps += T.extra_compute_ps;
            T.compute_ps += T.extra_compute_ps;
            T.extra_compute_ps = 0;
        }
        T.call_start_ps = T.clock_ps;
        T.cur_fn = fn;
        S.calls++;
        /* without the clock readings: a look at the clock every 1024 calls */
        if (S.params.compute_mode == MS_COMPUTE_NONE && !(S.calls & 1023) &&
            mono_ns() - S.progress_mono_ns > 1000000000LL)
            S.progress_due = 1;
        T.call_bytes = 0;
        int skip = 0;
        if (T.fortran_site) {   /* the program's call is one frame further out */
            callsite = T.fortran_site;
            T.fortran_site = NULL;
            skip = 1;
        }
        capture_callsite(callsite, skip);
        if (S.rp_on) ms_wp_note(T.site, callsite);
        T.site = callsite;
        if (S.trace_fd >= 0) {
            ms_msg_tr_call c = {ps, d, mono ? mono : mono_ns(), (uint64_t)(uintptr_t)callsite, (int32_t)fn, 0};
            trace_put(MS_MSG_TR_CALL, &c, sizeof c, NULL, 0);
        }
    }
}

void ms_exit(ms_fn_id fn, int rc)
{
    if (--T.depth == 0) {
        if (__builtin_expect(T.calibrating, 0)) {
            S.calib_exit_ns = clock_now(&S.calib_mono);
            return;
        }
        S.mpi_ps += T.clock_ps - T.call_start_ps;
        cs_add((int)fn, T.call_bytes, T.clock_ps - T.call_start_ps);
        if (S.trace_fd >= 0) {
            ms_msg_tr_exit e = {mono_ns(), S.server ? T.clock_ps : 0, (int32_t)fn, rc};
            trace_put(MS_MSG_TR_EXIT, &e, sizeof e, NULL, 0);
            /* bounded loss if the rank is killed: at most half a second of events */
            if (e.real_exit_ns - S.last_trace_flush_ns > 500000000LL) {
                trace_flush();
                S.last_trace_flush_ns = e.real_exit_ns;
            }
        }
        if (S.progress_due) shim_send_progress();
        if (T.counted) {
            T.counted = 0;
            __atomic_fetch_sub(&S.inside, 1, __ATOMIC_RELEASE);
        }
        ms_unlock();
        /* last, so that none of the shim's work falls into the gap */
        if (S.params.compute_mode != MS_COMPUTE_NONE) {
            if (T.slot == 0) {   /* the thread of MPI_Init: the compute gate, the cold return path */
                ms_gate_take(T.clock_ps);   /* may sleep: before the reading, so never charged */
                if (T.ck_page && T.ck_page->lock != T.ck_seq_now) shim_clock_woken(__builtin_return_address(0));
                shim_window_refine(T.last_exit_mono_ns);   /* before the reading: a gap may be measured from it */
            }
            clock_gap_start();
            /* the wrapper's exit stamp follows (ms_window_exit); until it, none */
            ms_wrapper_window.exit_tsc = 0;
            T.window_exit_ok = T.ck_page && T.ck_seq_now != 1;
        }
    }
}

int64_t ms_now(void) { return T.clock_ps; }
void ms_advance(int64_t ps) { T.clock_ps += ps; }
int64_t ms_isend_cost(uint64_t bytes)
{
    return S.params.isend_cost_base_ps + S.params.isend_cost_per_byte_ps * (int64_t)bytes;
}
int64_t ms_irecv_cost(uint64_t bytes)
{
    return S.params.irecv_cost_base_ps + S.params.irecv_cost_per_byte_ps * (int64_t)bytes;
}
int64_t ms_eager_threshold(void) { return S.params.eager_threshold; }
uint64_t ms_next_req_id(void) { return ++S.next_req; }

/* ---------------------------------------------------------------------------------------- */
/* request table */

void ms_rq_index(ms_rq *r)
{
    if (getenv("MPISIM_DEBUG")) {
        ms_rq *o = ms_rq_find(r->user);
        if (o) fprintf(stderr, "mpisim-debug: rank %d: handle %p of request %llu (kind %d) already names request %llu (kind %d)\n", S.rank, (void *)r->user, (unsigned long long)r->id, r->kind, (unsigned long long)o->id, o->kind);
    }
    if (ms_rqt_index(&S.table, r) < 0) ms_fatal("out of memory for the request table");
}

ms_rq *ms_rq_find(MPI_Request user) { return ms_rqt_find(&S.table, user); }

void ms_rq_unindex(ms_rq *r) { ms_rqt_unindex(&S.table, r); }

ms_rq *shim_find_by_id(uint64_t id)
{
    /* RESOLVE names receives that may not be indexed yet (blocking receives): look in the
     * deferred list first, it is short. */
    for (ms_rq *r = S.deferred_head; r; r = r->next_deferred)
        if (r->id == id) return r;
    return ms_rqt_find_id(&S.table, id);
}

ms_rq *ms_rq_new(int kind)
{
    ms_rq *r = S.free_rqs;
    if (r) {
        S.free_rqs = r->next_free;
        void *copy = r->copy;
        size_t cap = r->copy_cap;
        memset(r, 0, sizeof *r);
        r->copy = copy;
        r->copy_cap = cap;
    } else {
        r = calloc(1, sizeof *r);
        if (!r) ms_fatal("out of memory for a request");
    }
    r->kind = kind;
    r->id = ms_next_req_id();
    r->real = MPI_REQUEST_NULL;
    r->user = MPI_REQUEST_NULL;
    return r;
}

void ms_rq_free(ms_rq *r)
{
    r->next_free = S.free_rqs;
    S.free_rqs = r;
}

void ms_detach_send(ms_rq *r)
{
    if (S.detached_n == S.detached_cap) {
        size_t cap = S.detached_cap ? S.detached_cap * 2 : 64;
        ms_rq **d = realloc(S.detached, cap * sizeof *d);
        if (!d) ms_fatal("out of memory");
        S.detached = d;
        S.detached_cap = cap;
    }
    S.detached[S.detached_n++] = r;
}
