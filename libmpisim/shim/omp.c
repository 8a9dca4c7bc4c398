/* Hybrid computation: OpenMP parallel regions charged as their critical path
 * (docs/architecture.md "Hybrid computation").
 *
 * A rank's computation between two MPI calls is its thread's CPU time; inside an OpenMP parallel
 * region that would be the forking thread's share alone (plus what it spins at the region's
 * end). GCC's libgomp has no OMPT, so the shim interposes the entry points that start a region:
 * libgomp's GOMP_parallel and its combined forms (GOMP_parallel_loop_*, _sections, _reductions),
 * and LLVM libomp's __kmpc_fork_call. The region's function goes through a trampoline that
 * measures, on every thread of the team, the CPU time it spends in the function (its own task
 * clock, or the CPU-time system call); the forking thread's gap is then charged the region's
 * critical path, the longest thread, instead of its own CPU time over the region. Explicit
 * barriers (GOMP_barrier, __kmpc_barrier and the barriers at the end of worksharing loops and
 * sections) make the critical path go through the latest arrival, and a thread's wait there is
 * not charged. Regions nested in a region's function add their critical path to the thread that
 * forked them. A region in which a thread made an MPI call (other than reading the clock) is
 * charged as the forking thread's CPU time: its threads that call MPI have clocks of their own
 * (threads.c), and such a thread waits idle between regions. */
#define _GNU_SOURCE
#include "shim_state.h"
#include "ms_charge.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct omp_region {
    void (*fn)(void *);          /* libgomp: the outlined function and its data */
    void *data;
    void (*micro)(int32_t *, int32_t *, ...);   /* libomp: the microtask and its arguments */
    int32_t argc;
    void **args;
    ms_thr *forker;              /* the forking thread */
    int64_t fork_ps;             /* its virtual time at the fork */
    ck_anchor fork_an;           /* its clocks paired at the fork (steal) */
    int64_t crit_ps;             /* the longest team thread: its CPU in the function (x cpu_factor) */
    int64_t end_ps;              /* the latest virtual time a team thread ended the function at */
    int any_mpi;                 /* a thread of the team made an MPI call */
    int forker_done;             /* the forking thread ended its share (it waits for the team) ... */
    int64_t forker_end_ps;       /* ... at this virtual time */
    unsigned bar_arrived;        /* explicit barriers: arrivals, the latest arrival per generation */
    int64_t bar_last[2];
    int bar_busy;
} omp_region;

/* the region whose function the calling thread runs now */
__thread omp_region *ms_omp_region __attribute__((tls_model("initial-exec")));
static __thread int64_t tramp_c0;    /* its CPU clock when it entered the function */
static __thread ck_anchor tramp_an;  /* ... and its clocks paired just before (steal) */
static __thread int clock_tried;

static int omp_on(void) { return S.active && S.server && S.params.compute_mode != MS_COMPUTE_NONE; }

/* The calling thread's compute clock (ns), without disturbing the gap the shim measures. */
static int64_t cpu_now(void)
{
    if (!T.ck_page && !clock_tried && T.slot < 0 && S.params.compute_mode == MS_COMPUTE_CPU) {
        clock_tried = 1;   /* a team thread's own task clock, opened once */
        clock_open_page();
    }
    uint32_t seq = T.ck_seq_now;
    int64_t mono, c = clock_now(&mono);
    T.ck_seq_now = seq;
    return c;
}

static int64_t ps_of(int64_t ns) { return ms_charge_ps(ns, S.params.cpu_factor); }

/* The thread's progress in the region's function so far: its CPU since it entered, and what
 * nested regions and barriers added (T.adjust_ps). */
static int64_t progress_ps(void) { return ps_of(clock_unsteal(&tramp_an, cpu_now() - tramp_c0)) + T.adjust_ps; }

/* A measured stretch starts: its clocks paired (the team thread's own clock opened first), then
 * its reading. */
static int64_t stretch_start(ck_anchor *an)
{
    cpu_now();
    clock_anchor(an);
    return cpu_now();
}

static void park_forker(omp_region *R);

/* Team thread side: around the function. Returns the saved state for tramp_end. */
typedef struct tramp_state {
    omp_region *outer;
    int64_t adjust, c0;
    ck_anchor an;
} tramp_state;

static void tramp_begin(omp_region *R, tramp_state *st)
{
    st->outer = ms_omp_region;
    st->adjust = T.adjust_ps;
    st->c0 = tramp_c0;
    st->an = tramp_an;
    ms_omp_region = R;
    T.adjust_ps = 0;
    /* a worker that calls MPI waited idle since its last region: it goes on from the fork */
    if (T.slot >= 0 && &T != R->forker && T.parked) ms_thread_unpark(R->fork_ps);
    tramp_c0 = stretch_start(&tramp_an);
    if (T.slot < 0) {   /* should it call MPI in the function, its clock starts at the fork */
        T.born = 1;
        T.birth_ps = R->fork_ps;
        T.last_exit_ns = tramp_c0;
        T.an_exit = tramp_an;
    }
}

static void atomic_max(int64_t *x, int64_t v)
{
    int64_t cur = __atomic_load_n(x, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(x, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void tramp_end(omp_region *R, const tramp_state *st)
{
    int64_t mine = progress_ps();
    atomic_max(&R->crit_ps, mine);
    atomic_max(&R->end_ps, T.slot >= 0 ? ms_thread_vt_now() : R->fork_ps + mine);
    if (&T == R->forker && T.slot >= 0 && S.server) {
        /* the forking thread now waits for its team (inside libgomp or libomp, unseen): should a
         * thread of the team call MPI, it must not hold virtual time back meanwhile */
        ms_lock(1);
        R->forker_end_ps = ms_thread_vt_now();
        R->forker_done = 1;
        if (R->any_mpi) park_forker(R);
        ms_unlock();
    }
    ms_omp_region = st->outer;
    T.adjust_ps = st->adjust;
    tramp_c0 = st->c0;
    tramp_an = st->an;
    /* a worker that calls MPI waits between regions for the forking thread alone (idle where the
     * model sees that thread) */
    if (T.slot >= 0 && &T != R->forker) ms_thread_park(R->forker->slot >= 0, "OpenMP worker between regions");
}

static void gomp_tramp(void *p)
{
    omp_region *R = p;
    tramp_state st;
    tramp_begin(R, &st);
    R->fn(R->data);
    tramp_end(R, &st);
}

/* Forking thread side. */
static void fork_begin(omp_region *R, int64_t *c0)
{
    R->forker = &T;
    R->fork_ps = ms_thread_vt_now();
    *c0 = stretch_start(&R->fork_an);
}

static void fork_end(omp_region *R, int64_t c0)
{
    /* its CPU over the region, less steal as its gap will be: taken off for the critical path */
    int64_t own = ps_of(clock_unsteal(&R->fork_an, cpu_now() - c0));
    __atomic_add_fetch(&S.omp_regions, 1, __ATOMIC_RELAXED);
    if (T.parked && T.slot >= 0 && R->forker_done) {
        /* parked while it waited for a team that called MPI: it goes on from the latest end of
         * the team's threads (its MPI threads by their own clocks), rejoining the model there */
        ms_lock(1);
        int64_t d = R->forker_end_ps - T.clock_ps;   /* its own part, not charged yet */
        if (d > 0) {
            T.clock_ps += d;
            S.compute_ps += d;
            T.compute_ps += d;
        }
        ms_unlock();
        T.adjust_ps = 0;
        int64_t end = R->end_ps > R->forker_end_ps ? R->end_ps : R->forker_end_ps;
        ms_thread_unpark(end);
        return;
    }
    if (R->any_mpi) return;   /* its MPI threads have clocks of their own: charged as measured */
    int64_t a = R->crit_ps - own;
    T.adjust_ps += a;
    __atomic_add_fetch(&S.critical_path_ps, a, __ATOMIC_RELAXED);
}

/* (locked) The forking thread waits for its team: park it, as its own park would. */
static void park_forker(omp_region *R)
{
    ms_thr *f = R->forker;
    if (f->parked || !S.server) return;
    ms_msg_thread m;
    memset(&m, 0, sizeof m);
    m.slot = f->slot;
    /* not idle: a thread of its team that has not called MPI yet (the model does not see it) may
     * be the one it waits for */
    m.op = MS_THREAD_PARK;
    m.t = R->forker_end_ps;
    snprintf(m.why, sizeof m.why, "OpenMP region's end");
    wire_put(MS_MSG_THREAD, &m, sizeof m, NULL, 0);
    flush_out();
    f->parked = 1;
}

/* (locked) An MPI call inside the region ms_omp_region: its forking thread, if it already waits
 * for the team, must not hold virtual time back (the call may wait for what another rank does). */
void ms_omp_note_mpi(void)
{
    omp_region *R = ms_omp_region;
    R->any_mpi = 1;
    for (omp_region *o = R; o; o = NULL)
        if (o->forker_done && o->forker != &T && o->forker->slot >= 0) park_forker(o);
}

#define REAL(name, type)                                                                                     \
    static type real_##name;                                                                                 \
    if (!real_##name) real_##name = (type)(uintptr_t)dlsym(RTLD_NEXT, #name)

/* ---- libgomp ------------------------------------------------------------------------------------ */

typedef void (*gomp_fn)(void *);
typedef void (*gomp_parallel_t)(gomp_fn, void *, unsigned, unsigned);
typedef unsigned (*gomp_reductions_t)(gomp_fn, void *, unsigned, unsigned);
typedef void (*gomp_loop_t)(gomp_fn, void *, unsigned, long, long, long, long, unsigned);
typedef void (*gomp_loop_rt_t)(gomp_fn, void *, unsigned, long, long, long, unsigned);
typedef void (*gomp_sections_t)(gomp_fn, void *, unsigned, unsigned, unsigned);

void GOMP_parallel(gomp_fn fn, void *data, unsigned nthreads, unsigned flags)
{
    REAL(GOMP_parallel, gomp_parallel_t);
    if (!omp_on()) {
        real_GOMP_parallel(fn, data, nthreads, flags);
        return;
    }
    omp_region R = {.fn = fn, .data = data};
    int64_t c0;
    fork_begin(&R, &c0);
    real_GOMP_parallel(gomp_tramp, &R, nthreads, flags);
    fork_end(&R, c0);
}

unsigned GOMP_parallel_reductions(gomp_fn fn, void *data, unsigned nthreads, unsigned flags)
{
    REAL(GOMP_parallel_reductions, gomp_reductions_t);
    if (!omp_on()) return real_GOMP_parallel_reductions(fn, data, nthreads, flags);
    omp_region R = {.fn = fn, .data = data};
    int64_t c0;
    fork_begin(&R, &c0);
    unsigned r = real_GOMP_parallel_reductions(gomp_tramp, &R, nthreads, flags);
    fork_end(&R, c0);
    return r;
}

void GOMP_parallel_sections(gomp_fn fn, void *data, unsigned nthreads, unsigned count, unsigned flags)
{
    REAL(GOMP_parallel_sections, gomp_sections_t);
    if (!omp_on()) {
        real_GOMP_parallel_sections(fn, data, nthreads, count, flags);
        return;
    }
    omp_region R = {.fn = fn, .data = data};
    int64_t c0;
    fork_begin(&R, &c0);
    real_GOMP_parallel_sections(gomp_tramp, &R, nthreads, count, flags);
    fork_end(&R, c0);
}

#define GOMP_LOOP(name)                                                                                      \
    void name(gomp_fn fn, void *data, unsigned nthreads, long start, long end, long incr, long chunk,       \
              unsigned flags)                                                                                \
    {                                                                                                        \
        REAL(name, gomp_loop_t);                                                                             \
        if (!omp_on()) {                                                                                     \
            real_##name(fn, data, nthreads, start, end, incr, chunk, flags);                                \
            return;                                                                                          \
        }                                                                                                    \
        omp_region R = {.fn = fn, .data = data};                                                             \
        int64_t c0;                                                                                          \
        fork_begin(&R, &c0);                                                                                 \
        real_##name(gomp_tramp, &R, nthreads, start, end, incr, chunk, flags);                               \
        fork_end(&R, c0);                                                                                    \
    }
#define GOMP_LOOP_RT(name)                                                                                   \
    void name(gomp_fn fn, void *data, unsigned nthreads, long start, long end, long incr, unsigned flags)   \
    {                                                                                                        \
        REAL(name, gomp_loop_rt_t);                                                                          \
        if (!omp_on()) {                                                                                     \
            real_##name(fn, data, nthreads, start, end, incr, flags);                                       \
            return;                                                                                          \
        }                                                                                                    \
        omp_region R = {.fn = fn, .data = data};                                                             \
        int64_t c0;                                                                                          \
        fork_begin(&R, &c0);                                                                                 \
        real_##name(gomp_tramp, &R, nthreads, start, end, incr, flags);                                      \
        fork_end(&R, c0);                                                                                    \
    }
GOMP_LOOP(GOMP_parallel_loop_static)
GOMP_LOOP(GOMP_parallel_loop_dynamic)
GOMP_LOOP(GOMP_parallel_loop_guided)
GOMP_LOOP(GOMP_parallel_loop_nonmonotonic_dynamic)
GOMP_LOOP(GOMP_parallel_loop_nonmonotonic_guided)
GOMP_LOOP_RT(GOMP_parallel_loop_runtime)
GOMP_LOOP_RT(GOMP_parallel_loop_nonmonotonic_runtime)
GOMP_LOOP_RT(GOMP_parallel_loop_maybe_nonmonotonic_runtime)

/* An explicit barrier of the team: the thread goes on from the latest arrival, and its wait
 * there (libgomp and libomp spin before they sleep) is not its work. */
static void barrier_around(void (*real)(void *), void *arg)
{
    omp_region *R = ms_omp_region;
    if (!R || !omp_on()) {
        real(arg);
        return;
    }
    static int (*team_size)(void);
    if (!team_size) team_size = (int (*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "omp_get_num_threads");
    unsigned n = team_size ? (unsigned)team_size() : 0;
    int64_t arrive = progress_ps();
    int mpi_thread = T.slot >= 0 && &T != R->forker;
    if (mpi_thread) ms_thread_park(0, "OpenMP barrier");
    int g = 0;
    while (__atomic_exchange_n(&R->bar_busy, 1, __ATOMIC_ACQUIRE)) sched_yield();
    if (n) {
        g = (int)((R->bar_arrived / n) & 1);
        if (R->bar_arrived % n == 0 || arrive > R->bar_last[g]) R->bar_last[g] = arrive;
        R->bar_arrived++;
    }
    __atomic_store_n(&R->bar_busy, 0, __ATOMIC_RELEASE);
    real(arg);
    if (!n) return;
    while (__atomic_exchange_n(&R->bar_busy, 1, __ATOMIC_ACQUIRE)) sched_yield();
    int64_t last = R->bar_last[g];
    __atomic_store_n(&R->bar_busy, 0, __ATOMIC_RELEASE);
    T.adjust_ps += last - progress_ps();   /* from here on, its progress is the latest arrival's */
    if (mpi_thread) ms_thread_unpark(R->fork_ps + last);
}

typedef void (*gomp_void_t)(void);
static void call_void(void *f) { ((gomp_void_t)(uintptr_t)f)(); }

#define GOMP_BARRIER(name)                                                                                   \
    void name(void)                                                                                          \
    {                                                                                                        \
        REAL(name, gomp_void_t);                                                                             \
        barrier_around(call_void, (void *)(uintptr_t)real_##name);                                           \
    }
GOMP_BARRIER(GOMP_barrier)
GOMP_BARRIER(GOMP_loop_end)
GOMP_BARRIER(GOMP_loop_ull_end)
GOMP_BARRIER(GOMP_sections_end)

/* ---- LLVM libomp ----------------------------------------------------------------------------------- */

/* The microtask gets (gtid, btid, args...), every argument a pointer (clang passes each variable
 * the region captures): up to 32 are forwarded (more: the region runs as if no OpenMP were there,
 * without a team: never seen from clang; the shim says so once). */
enum { KMP_MAX_ARGS = 32 };
typedef void (*kmp_micro)(int32_t *, int32_t *, ...);
typedef void (*kmp_fork_t)(void *, int32_t, kmp_micro, ...);

static void call_micro(kmp_micro f, int32_t *g, int32_t *b, int32_t n, void **a)
{
    switch (n) {
    case 0: f(g, b); break;
    case 1: f(g, b, a[0]); break;
    case 2: f(g, b, a[0], a[1]); break;
    case 3: f(g, b, a[0], a[1], a[2]); break;
    case 4: f(g, b, a[0], a[1], a[2], a[3]); break;
    case 5: f(g, b, a[0], a[1], a[2], a[3], a[4]); break;
    case 6: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5]); break;
    case 7: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
    case 8: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break;
    case 9: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break;
    case 10: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); break;
    case 11: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); break;
    case 12: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]); break;
    case 13: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12]); break;
    case 14: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]); break;
    case 15: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14]); break;
    case 16: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]); break;
    case 17: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16]); break;
    case 18: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17]); break;
    case 19: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18]); break;
    case 20: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19]); break;
    case 21: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20]); break;
    case 22: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21]); break;
    case 23: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22]); break;
    case 24: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23]); break;
    case 25: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24]); break;
    case 26: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25]); break;
    case 27: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26]); break;
    case 28: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27]); break;
    case 29: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28]); break;
    case 30: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28], a[29]); break;
    case 31: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28], a[29], a[30]); break;
    case 32: f(g, b, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28], a[29], a[30], a[31]); break;
    default: break;
    }
}

static void call_fork(kmp_fork_t f, void *loc, kmp_micro m, int32_t n, void **a)
{
    switch (n) {
    case 0: f(loc, n, m); break;
    case 1: f(loc, n, m, a[0]); break;
    case 2: f(loc, n, m, a[0], a[1]); break;
    case 3: f(loc, n, m, a[0], a[1], a[2]); break;
    case 4: f(loc, n, m, a[0], a[1], a[2], a[3]); break;
    case 5: f(loc, n, m, a[0], a[1], a[2], a[3], a[4]); break;
    case 6: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5]); break;
    case 7: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
    case 8: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break;
    case 9: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break;
    case 10: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); break;
    case 11: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); break;
    case 12: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]); break;
    case 13: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12]); break;
    case 14: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]); break;
    case 15: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14]); break;
    case 16: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]); break;
    case 17: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16]); break;
    case 18: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17]); break;
    case 19: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18]); break;
    case 20: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19]); break;
    case 21: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20]); break;
    case 22: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21]); break;
    case 23: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22]); break;
    case 24: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23]); break;
    case 25: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24]); break;
    case 26: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25]); break;
    case 27: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26]); break;
    case 28: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27]); break;
    case 29: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28]); break;
    case 30: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28], a[29]); break;
    case 31: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28], a[29], a[30]); break;
    case 32: f(loc, n, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28], a[29], a[30], a[31]); break;
    default: break;
    }
}

static void kmp_tramp(int32_t *g, int32_t *b, omp_region *R)
{
    tramp_state st;
    tramp_begin(R, &st);
    call_micro(R->micro, g, b, R->argc, R->args);
    tramp_end(R, &st);
}

void __kmpc_fork_call(void *loc, int32_t argc, kmp_micro micro, ...)
{
    REAL(__kmpc_fork_call, kmp_fork_t);
    void *a[KMP_MAX_ARGS];
    va_list ap;
    va_start(ap, micro);
    for (int32_t i = 0; i < argc && i < KMP_MAX_ARGS; i++) a[i] = va_arg(ap, void *);
    va_end(ap);
    if (argc > KMP_MAX_ARGS || argc < 0) {
        /* cannot be forwarded: run the region on this thread alone (a team of one is a valid
         * OpenMP execution), said once */
        static int said;
        if (!said++)
            fprintf(stderr, "mpisim: an OpenMP region with %d captured variables (more than %d) runs on one thread\n",
                    argc, KMP_MAX_ARGS);
        int32_t g = 0, b = 0;
        call_micro(micro, &g, &b, KMP_MAX_ARGS, a);
        return;
    }
    if (!omp_on()) {
        call_fork(real___kmpc_fork_call, loc, micro, argc, a);
        return;
    }
    omp_region R = {.micro = micro, .argc = argc, .args = a};
    int64_t c0;
    fork_begin(&R, &c0);
    real___kmpc_fork_call(loc, 1, (kmp_micro)(uintptr_t)kmp_tramp, &R);
    fork_end(&R, c0);
}

typedef void (*kmp_barrier_t)(void *, int32_t);
static kmp_barrier_t real_kmp_barrier;
static __thread void *kmp_bar_loc;
static __thread int32_t kmp_bar_gtid;
static void call_kmp_barrier(void *unused)
{
    (void)unused;
    real_kmp_barrier(kmp_bar_loc, kmp_bar_gtid);
}

void __kmpc_barrier(void *loc, int32_t gtid)
{
    if (!real_kmp_barrier) real_kmp_barrier = (kmp_barrier_t)(uintptr_t)dlsym(RTLD_NEXT, "__kmpc_barrier");
    kmp_bar_loc = loc;
    kmp_bar_gtid = gtid;
    barrier_around(call_kmp_barrier, NULL);
}
