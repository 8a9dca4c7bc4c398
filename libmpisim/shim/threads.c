/* Threads of a rank (docs/architecture.md "Threads").
 *
 * Every thread that makes an MPI call (other than reading the clock) gets a slot in its rank and a
 * virtual clock of its own, starting from its creator's virtual time when it was created (a
 * pthread_create seen here) plus its own CPU time since; its messages are named by a THREAD
 * message when the thread sending them changes, and the model blocks it alone in its waits.
 * Under MPI_THREAD_MULTIPLE the shim's lock is a mutex, let go while a thread waits; under the
 * lower levels it is a flag no program should ever find taken, and a call made while another
 * thread is inside MPI is counted and named in the run's outcome (thread_level).
 *
 * A thread that waits for other threads of its rank outside MPI would hold virtual time back for
 * ever (the model cannot know it waits), so where the shim sees such a wait it parks the thread
 * first and lets it go on after it, at the latest of its own time and what it waited for:
 * pthread_join (the joined thread's end), pthread_barrier_wait (the last arrival), and, in omp.c,
 * OpenMP's regions. */
#define _GNU_SOURCE
#include "shim_state.h"
#include "gate.h"
#include "ms_charge.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ---- the lock ---------------------------------------------------------------------------------- */

void ms_lock_contended(int clock_read)
{
    (void)clock_read;
    while (__atomic_exchange_n(&S.busy, 1, __ATOMIC_ACQUIRE)) sched_yield();
}

void ms_lock_pause(int spin)
{
    ms_unlock();
    if (spin) {
        sched_yield();
    } else {
        struct timespec d = {0, 50000};
        nanosleep(&d, NULL);
    }
    ms_lock(1);
}

static const char *level_name(int level)
{
    switch (level) {
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    default: return "MPI_Init: MPI_THREAD_SINGLE";
    }
}

/* Under the lower levels (locked): the call being entered found another thread inside MPI. */
void ms_thread_violation(void)
{
    if (S.violation_sent || !S.server) return;
    S.violation_sent = 1;
    ms_msg_thread m;
    memset(&m, 0, sizeof m);
    m.slot = S.level;
    m.op = MS_THREAD_VIOLATION;
    m.t = T.slot >= 0 ? T.clock_ps : S.thr[0] ? S.thr[0]->clock_ps : 0;
    snprintf(m.why, sizeof m.why, "%s", level_name(S.level));
    wire_put(MS_MSG_THREAD, &m, sizeof m, NULL, 0);
    flush_out();
    fprintf(stderr, "mpisim: rank %d: two threads called MPI at the same time under %s; the run's outcome will be "
                    "thread_level\n", S.rank, level_name(S.level));
}

/* ---- a thread's time ------------------------------------------------------------------------- */

static int64_t thread_now(void)
{
    struct timespec ts;
    ms_clock_real(S.params.compute_mode == MS_COMPUTE_WALL ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A thread the shim has not seen yet starts from the thread of MPI_Init's clock. */
static void born(void)
{
    if (T.born) return;
    T.born = 1;
    T.birth_ps = S.thr[0] ? S.thr[0]->clock_ps : 0;
    T.last_exit_ns = thread_now();
}

int64_t ms_thread_vt_now(void)
{
    if (T.slot < 0) born();
    int64_t base = T.slot >= 0 ? T.clock_ps : T.birth_ps;
    if (S.params.compute_mode == MS_COMPUTE_NONE) return base + T.adjust_ps;
    int64_t mono, now = T.slot >= 0 ? clock_now(&mono) : thread_now();
    int64_t d = now - T.last_exit_ns;
    if (d < 0) d = 0;
    return base + ms_charge_ps(d, S.params.cpu_factor) + T.adjust_ps;
}

/* ---- registration ------------------------------------------------------------------------------ */

static pthread_key_t thr_key;
static pthread_once_t thr_once = PTHREAD_ONCE_INIT;
static void thread_gone(void *p);
static void make_key(void) { pthread_key_create(&thr_key, thread_gone); }

/* the records of threads created by pthread_create while the shim is active */
typedef struct thr_rec {
    pthread_t id;
    void *(*fn)(void *);
    void *arg;
    int64_t birth_ps;
    int64_t final_ps;
    int done;                    /* it has ended: final_ps is its virtual time then */
    int slot;                    /* its slot while it has one (-1: it has made no MPI call) */
    int joined;
    struct thr_rec *next;
} thr_rec;

static int recs_busy;
static thr_rec *recs;
static void recs_lock(void)
{
    while (__atomic_exchange_n(&recs_busy, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void recs_unlock(void) { __atomic_store_n(&recs_busy, 0, __ATOMIC_RELEASE); }

void ms_thread_register(void)
{
    born();
    int slot = -1;
    for (int i = 1; i < S.nthreads; i++)   /* the slot of a thread that has ended, if any */
        if (!S.thr[i]) {
            slot = i;
            break;
        }
    if (slot < 0) {
        if (S.nthreads >= MS_MAX_THREADS)
            ms_fatal("more than %d threads of this rank call MPI at once (mpisim's limit)", MS_MAX_THREADS);
        slot = S.nthreads;
    }
    S.thr[slot] = &T;
    if (slot == S.nthreads) __atomic_store_n(&S.nthreads, slot + 1, __ATOMIC_RELEASE);
    T.slot = slot;
    T.clock_ps = T.birth_ps;
    T.wtime_last_ps = -1;
    if (T.rec) ((thr_rec *)T.rec)->slot = slot;
    if (!S.multi) {   /* local answers assume one thread per rank */
        S.multi = 1;
        S.cpu_free = -1;
        S.quiet_until = 0;
        S.quiet_kind = 0;
    }
    if (S.params.compute_mode == MS_COMPUTE_CPU && !T.ck_page) clock_open_page();   /* its own task clock; else the system call */
    pthread_once(&thr_once, make_key);
    if (!pthread_getspecific(thr_key)) pthread_setspecific(thr_key, &T);   /* its end: thread_gone */
    if (S.ck.method == MS_CHARGING_TASK_CLOCK && !T.ck_page) S.ck.page_misses++;
}

/* A thread ends (a key's destructor: after a return or pthread_exit alike). */
static void thread_gone(void *p)
{
    thr_rec *r = p != (void *)&T ? p : T.rec;
    int64_t fin = ms_thread_vt_now();
    if (T.slot > 0 && S.active) {
        ms_lock(1);
        if (S.server) {
            ms_msg_thread m;
            memset(&m, 0, sizeof m);
            m.slot = T.slot;
            m.op = MS_THREAD_END;
            m.t = fin;
            wire_put(MS_MSG_THREAD, &m, sizeof m, NULL, 0);
            flush_out();
        }
        S.thr[T.slot] = NULL;
        ms_unlock();
    }
    if (T.ck_page) {
        munmap((void *)T.ck_page, (size_t)sysconf(_SC_PAGESIZE) * 2);
        close(T.ck_fd);
        T.ck_page = NULL;
    }
    T.slot = -1;
    if (r) {
        r->final_ps = fin;
        r->slot = -1;
        __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    }
}

/* ---- parking ----------------------------------------------------------------------------------- */

int64_t ms_thread_park(int idle, const char *why)
{
    if (T.slot < 0 || !S.active || T.depth) return ms_thread_vt_now();
    ms_lock(1);
    /* what it computed since its last MPI call is charged now, as at a call's entry */
    if (S.params.compute_mode != MS_COMPUTE_NONE) {
        int64_t mono, now = clock_now(&mono);
        int64_t d = clock_gap(now, mono, __builtin_return_address(0), 0);
        int64_t ps = ms_charge_ps(d, S.params.cpu_factor) + T.adjust_ps;
        if (ps < 0) ps = 0;
        S.critical_path_ps += T.adjust_ps;
        T.adjust_ps = 0;
        T.clock_ps += ps;
        S.compute_ps += ps;
        T.compute_ps += ps;
    }
    if (T.slot == 0) ms_gate_leave();
    if (S.server) {
        ms_msg_thread m;
        memset(&m, 0, sizeof m);
        m.slot = T.slot;
        m.op = idle ? MS_THREAD_IDLE : MS_THREAD_PARK;
        m.t = T.clock_ps;
        snprintf(m.why, sizeof m.why, "%s", why);
        wire_put(MS_MSG_THREAD, &m, sizeof m, NULL, 0);
        flush_out();
    }
    T.parked = 1;
    int64_t t = T.clock_ps;
    ms_unlock();
    return t;
}

void ms_thread_unpark(int64_t floor)
{
    if (T.slot < 0 || !T.parked) {
        int64_t now = ms_thread_vt_now();
        if (floor > now) T.adjust_ps += floor - now;   /* its estimate goes on from there */
        return;
    }
    ms_lock(1);
    if (floor > T.clock_ps) {   /* it waited for the critical path: the rank's computation */
        int64_t a = floor - T.clock_ps;
        T.clock_ps = floor;
        S.compute_ps += a;
        T.compute_ps += a;
        S.critical_path_ps += a;
    }
    if (S.server) ms_rejoin(MS_FN_Wtime);
    T.parked = 0;
    ms_unlock();
    if (T.slot == 0 && S.params.compute_mode != MS_COMPUTE_NONE) ms_gate_take(T.clock_ps);
    /* its next gap starts here, measured between readings */
    if (S.params.compute_mode != MS_COMPUTE_NONE) clock_gap_start();
    ms_wrapper_window.exit_tsc = 0;
    T.window_exit_ok = 0;
}

/* ---- reports ------------------------------------------------------------------------------------ */

void ms_thread_describe(char *out, size_t len)
{
    size_t off = 0;
    out[0] = 0;
    for (int i = 0; i < S.nthreads && off + 1 < len; i++) {
        ms_thr *t = S.thr[i];
        if (!t || !t->waiting) continue;
        char where[MS_SITE_TEXT];
        cs_text(t->cur_pcs, t->cur_npcs, where, sizeof where);
        if (i) off += (size_t)snprintf(out + off, len - off, "%sthread %d: ", off ? "; " : "", i);
        else if (off) off += (size_t)snprintf(out + off, len - off, "; ");
        off += (size_t)snprintf(out + off, len - off, "%s called from %s", ms_fn_names[t->blocked_fn], where);
    }
    if (!off) snprintf(out, len, "%s called from an unknown site", ms_fn_names[T.blocked_fn]);
}

void ms_threads_finalize_into(ms_msg_finalize *f)
{
    f->thread_level = S.level;
    f->threads = S.nthreads;
    f->thread_violations = S.violations;
    f->omp_regions = S.omp_regions;
    f->critical_path_ps = S.critical_path_ps;
}

/* ---- pthreads ---------------------------------------------------------------------------------- */

static void *thread_start(void *p)
{
    thr_rec *r = p;
    T.born = 1;
    T.birth_ps = r->birth_ps;
    T.last_exit_ns = thread_now();
    T.rec = r;
    pthread_once(&thr_once, make_key);
    pthread_setspecific(thr_key, r);
    return r->fn(r->arg);
}

static thr_rec *rec_take(pthread_t id)
{
    recs_lock();
    thr_rec **pp = &recs;
    while (*pp && !pthread_equal((*pp)->id, id)) pp = &(*pp)->next;
    thr_rec *r = *pp;
    if (r) *pp = r->next;
    recs_unlock();
    return r;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static create_fn real;
    if (!real) real = (create_fn)(uintptr_t)dlsym(RTLD_NEXT, "pthread_create");
    if (!real) return EAGAIN;
    /* before MPI_Init and after MPI_Finalize threads are no concern of the model's */
    if (!S.active || !S.server) return real(th, attr, fn, arg);
    thr_rec *r = calloc(1, sizeof *r);
    if (!r) return real(th, attr, fn, arg);
    r->fn = fn;
    r->arg = arg;
    r->slot = -1;
    r->birth_ps = ms_thread_vt_now();
    int rc = real(th, attr, thread_start, r);
    if (rc) {
        free(r);
        return rc;
    }
    r->id = *th;
    recs_lock();
    r->next = recs;
    recs = r;
    recs_unlock();
    return 0;
}

typedef int (*join_fn)(pthread_t, void **);

int pthread_join(pthread_t th, void **ret)
{
    static join_fn real;
    if (!real) real = (join_fn)(uintptr_t)dlsym(RTLD_NEXT, "pthread_join");
    if (!real) return EINVAL;
    if (!S.active || !S.server) return real(th, ret);
    recs_lock();
    thr_rec *r = recs;
    while (r && !pthread_equal(r->id, th)) r = r->next;
    int mpi_child = r && r->slot >= 0;
    recs_unlock();
    /* waiting for a thread that calls MPI: released by a thread the model sees (idle); for one
     * that does not: by something the model cannot see */
    ms_thread_park(mpi_child, "pthread_join");
    int rc = real(th, ret);
    r = rc == 0 ? rec_take(th) : NULL;
    int64_t fin = r && __atomic_load_n(&r->done, __ATOMIC_ACQUIRE) ? r->final_ps : -1;
    free(r);
    ms_thread_unpark(fin);
    return rc;
}

/* pthread barriers: the last arrival's virtual time is the one every member goes on from */
typedef struct bar_rec {
    const void *b;
    unsigned count, arrived;
    int64_t last[2];             /* per generation (parity): the latest arrival so far */
    struct bar_rec *next;
} bar_rec;
static bar_rec *bars;

static bar_rec *bar_find(const void *b, int make)
{
    bar_rec *r = bars;
    while (r && r->b != b) r = r->next;
    if (!r && make && (r = calloc(1, sizeof *r))) {
        r->b = b;
        r->next = bars;
        bars = r;
    }
    return r;
}

typedef int (*bar_init_fn)(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned);
typedef int (*bar_fn)(pthread_barrier_t *);

int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr, unsigned count)
{
    static bar_init_fn real;
    if (!real) real = (bar_init_fn)(uintptr_t)dlsym(RTLD_NEXT, "pthread_barrier_init");
    if (!real) return EINVAL;
    int rc = real(b, attr, count);
    if (rc == 0) {
        recs_lock();
        bar_rec *r = bar_find(b, 1);
        if (r) {
            r->count = count;
            r->arrived = 0;
        }
        recs_unlock();
    }
    return rc;
}

int pthread_barrier_destroy(pthread_barrier_t *b)
{
    static bar_fn real;
    if (!real) real = (bar_fn)(uintptr_t)dlsym(RTLD_NEXT, "pthread_barrier_destroy");
    if (!real) return EINVAL;
    recs_lock();
    for (bar_rec **pp = &bars; *pp; pp = &(*pp)->next)
        if ((*pp)->b == b) {
            bar_rec *r = *pp;
            *pp = r->next;
            free(r);
            break;
        }
    recs_unlock();
    return real(b);
}

int pthread_barrier_wait(pthread_barrier_t *b)
{
    static bar_fn real;
    if (!real) real = (bar_fn)(uintptr_t)dlsym(RTLD_NEXT, "pthread_barrier_wait");
    if (!real) return EINVAL;
    if (!S.active || !S.server) return real(b);
    int64_t t = ms_thread_park(0, "pthread_barrier_wait");
    recs_lock();
    bar_rec *r = bar_find(b, 0);
    int g = 0;
    if (r && r->count) {
        g = (int)((r->arrived / r->count) & 1);
        if (r->arrived % r->count == 0 || t > r->last[g]) r->last[g] = t;
        r->arrived++;
    }
    recs_unlock();
    int rc = real(b);
    recs_lock();
    int64_t last = r && r->count ? r->last[g] : -1;
    recs_unlock();
    ms_thread_unpark(last);
    return rc;
}
