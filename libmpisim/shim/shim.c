/* The shim's runtime: lifecycle, virtual clock, the link to the model server (batching and
 * handling its messages over transport.c), requests, and the loops that wait for the model while
 * keeping the real MPI moving. Trace capture, call sites, deferred receives and communicators are
 * in their own files (shim_state.h). */
#define _GNU_SOURCE
#include "ms_model.h"   /* the wait modes */
#include "shim_state.h"
#include "warm_path.h"
#include "gate.h"
#include "trace_raw.h"

#include <dlfcn.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>



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

/* ---------------------------------------------------------------------------------------- */
/* clock: what a rank is charged between two MPI calls (docs/architecture.md "Virtual time in a
 * rank"). The thread's CPU time, read without a system call: CLOCK_THREAD_CPUTIME_ID is a system
 * call of 0.7-4 us on the virtual machines we run on, CLOCK_MONOTONIC a vDSO read of ~26 ns.
 * A task-clock perf event on the thread (its count is the thread's on-CPU time) with
 * context-switch records: at every schedule-in the kernel writes the count so far into the
 * event's mmap page (bumping the page's lock) and appends a switch-in record stamped with
 * CLOCK_MONOTONIC to the event's ring buffer (overwrite mode: the newest record is always there).
 * Since that switch-in the thread has run without a break, so its CPU time now is
 *     count at the switch-in + (CLOCK_MONOTONIC now - time of the switch-in record).
 * The skew between the two kernel stamps is the same at every switch and cancels in a gap. */

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    ms_clock_real(CLOCK_THREAD_CPUTIME_ID, &ts);
    S.ck.syscalls++;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define CK_BARRIER() __asm__ __volatile__("" ::: "memory")
enum { CK_DATA_PAGES = 1 };


/* One consistent reading of the task clock from the page; 0 if the page cannot give one now. */
static int clock_read_page(int64_t *cpu, int64_t *mono, uint32_t *seq)
{
    volatile struct perf_event_mmap_page *pg = T.ck_page;
    for (int tries = 0; tries < 8; tries++) {
        uint32_t l0 = pg->lock;
        CK_BARRIER();
        uint64_t count = pg->offset;
        uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
        const struct perf_event_header *h = (const void *)(T.ck_data + (head & T.ck_mask));
        uint16_t type = h->type, misc = h->misc;
        uint64_t t_in;
        memcpy(&t_in, (const char *)h + sizeof *h, sizeof t_in);
        int64_t m = mono_ns();
        CK_BARRIER();
        uint32_t l1 = pg->lock;
        if (l0 != l1 || (l0 & 1)) continue;   /* scheduled in (or the kernel writing) meanwhile */
        /* we run, so the newest record is the switch-in that started this stretch */
        if (type != PERF_RECORD_SWITCH || (misc & PERF_RECORD_MISC_SWITCH_OUT) || head == T.ck_head0) return 0;
        *cpu = (int64_t)count + (m - (int64_t)t_in);
        *mono = m;
        *seq = l1;
        return 1;
    }
    return 0;
}

/* The calling thread's compute clock in ns; *mono gets CLOCK_MONOTONIC at the same moment. */
int64_t clock_now(int64_t *mono)
{
    if (S.params.compute_mode == MS_COMPUTE_WALL) return *mono = mono_ns();
    if (T.ck_page) {
        int64_t c;
        uint32_t seq;
        if (clock_read_page(&c, mono, &seq)) {
            T.ck_seq_now = seq;
            return c;
        }
        S.ck.page_misses++;
    }
    /* no page (none allowed, or this thread has none yet): the system call, on the page's origin */
    int64_t c = thread_cpu_ns() - T.ck_origin_ns;
    *mono = mono_ns();
    T.ck_seq_now = 1;
    return c;
}

/* Open the task-clock event with switch records on this thread; 0 on success. Checked, not
 * trusted: after a sleep the page must hold a switch-in record and a new count, or it does not
 * do what clock_now needs (another kernel). */
int clock_open_page(void)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.context_switch = 1;
    a.sample_id_all = 1;
    a.sample_type = PERF_SAMPLE_TIME;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.write_backward = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return -1;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = pg * (1 + CK_DATA_PAGES);
    void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);   /* read-only: overwrite mode */
    if (map == MAP_FAILED) {
        close(fd);
        return -1;
    }
    T.ck_page = map;
    T.ck_data = (const char *)map + pg;
    T.ck_mask = pg * CK_DATA_PAGES - 1;
    T.ck_fd = fd;
    T.ck_head0 = T.ck_page->data_head;
    for (int tries = 0; tries < 3; tries++) {
        usleep(50);
        int64_t c, m;
        uint32_t seq;
        if (clock_read_page(&c, &m, &seq)) {
            T.ck_head0 = (uint64_t)-1;   /* from now on any head is a record */
            T.ck_origin_ns = thread_cpu_ns() - c;
            return 0;
        }
    }
    munmap(map, len);
    close(fd);
    T.ck_page = NULL;
    return -1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A calibration trial's wrapper, shaped as the generated ones (gen_wrappers.py): bypass check,
 * ms_enter, ms_exit. While T.calibrating, ms_enter and ms_exit take their readings on their
 * usual paths and return at once, so a trial's gap is the way an empty gap takes. */
static __attribute__((noinline)) int calib_wrapper(int x)
{
    uint64_t entry_tsc = ms_tsc();
    if (ms_bypass()) return x;
    ms_enter_at(MS_FN_Wtime, __builtin_return_address(0), entry_tsc);
    ms_exit(MS_FN_Wtime, x);
    S.calib_exit_tsc = ms_tsc();
    return x;
}
static int (*volatile calib_wrapper_fn)(int) = calib_wrapper;   /* called like a PLT call */

/* Insert x into the sorted v[0..*k) (room for one more; the callers keep at most 16). */
static void sorted_insert(int64_t *v, int *k, int64_t x)
{
    int j = (*k)++;
    while (j > 0 && v[j - 1] > x) {
        v[j] = v[j - 1];
        j--;
    }
    v[j] = x;
}

/* Replace `old` (one of the sorted v[0..k)) by x, keeping v sorted: the window of the last
 * trials moves by one without sorting it again at every call (2 x 16 insertions were 1,500 of
 * the 2,500 instructions of clock_woken, callgrind). */
static void sorted_replace(int64_t *v, int k, int64_t old, int64_t x)
{
    int j = 0;
    while (j < k - 1 && v[j] != old) j++;
    for (; j + 1 < k && v[j + 1] < x; j++) v[j] = v[j + 1];   /* x goes later: close the gap upwards */
    for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];        /* or earlier */
    v[j] = x;
}

/* Called at the end of an MPI call during which the thread was switched out: whatever ran
 * meanwhile left the caches and TLBs cold, and the way back into the program and into the next
 * wrapper pays for it inside the next gap (measured beside a CPU-bound job: an empty gap took
 * 150-290 ns instead of 30-60). Before the gap starts: touch the lines the way back is known to
 * use (warm_path.c: the wrapper's return, the program's code to its next call, that call's PLT
 * stub and GOT slot, the next wrapper's entry), and go the shim's own part of it once, as a
 * calibration trial does (the bypass test and ms_enter up to its reading). */
static void clock_woken(const void *wrapper_ret)
{
    S.ck.woken_gaps++;
    T.ck_woken = 1;
    if (!S.rp_on) return;   /* shim.return_path = off: charged as it comes */
    S.ck.probes += (uint64_t)ms_wp_touch(T.site, wrapper_ret);
    T.calibrating = 1;
    int64_t exit_side = S.calib_exit_ns = clock_now(&S.calib_mono);
    uint32_t seq = T.ck_seq_now;
    uint64_t exit_tsc = ms_tsc();
    calib_wrapper_fn(0);
    T.calibrating = 0;
    if (T.ck_seq_now == seq && seq != 1) {   /* not switched out during the trial, nor read by system call */
        enum { N = sizeof S.cold_trial_ns / sizeof S.cold_trial_ns[0] };
        uint64_t c = S.ck.cold_trials++;
        int i = (int)(c % N), k = N;   /* k: trials in the window once this one is in */
        int64_t ns = S.calib_enter_ns - exit_side, ticks = (int64_t)(S.calib_enter_tsc - exit_tsc);
        if (c < N) {
            int kt = (int)c;
            k = (int)c;
            sorted_insert(S.cold_sorted_ns, &k, ns);
            sorted_insert(S.cold_sorted_ticks, &kt, ticks);
        } else {
            sorted_replace(S.cold_sorted_ns, N, S.cold_trial_ns[i], ns);
            sorted_replace(S.cold_sorted_ticks, N, S.cold_trial_ticks[i], ticks);
        }
        S.cold_trial_ns[i] = ns;
        S.cold_trial_ticks[i] = ticks;
        S.ck.cold_baseline_ns = S.cold_sorted_ns[k / 2];
        if (S.ns_per_tick > 0) S.ck.window_cold_ns = llround((double)S.cold_sorted_ticks[k / 2] * S.ns_per_tick);
    }
}

/* The compensation, measured at start as TAU and Score-P measure their overheads: the charge of
 * an empty gap, from an exit-side reading back out of ms_exit and the wrapper, through the
 * caller's loop and an indirect call into the next wrapper, ms_bypass and ms_enter, to the
 * enter-side reading (the median of many trials). Everything a real gap holds except the
 * program's own work: 30 ns for the two readings alone, 60-75 ns for the whole way here. */
static void clock_calibrate(void)
{
    enum { FAST = 255 };
    int64_t d[FAST], dt[FAST];
    T.calibrating = 1;
    S.calib_exit_ns = clock_now(&S.calib_mono);
    S.calib_exit_tsc = ms_tsc();
    for (int i = 0; i < FAST; i++) {
        int64_t exit_side = S.calib_exit_ns;
        uint64_t exit_tsc = S.calib_exit_tsc;
        calib_wrapper_fn(i);
        d[i] = S.calib_enter_ns - exit_side;
        dt[i] = (int64_t)(S.calib_enter_tsc - exit_tsc);
    }
    T.calibrating = 0;
    qsort(d, FAST, sizeof d[0], cmp_i64);
    qsort(dt, FAST, sizeof dt[0], cmp_i64);
    S.ck.baseline_ns = d[FAST / 2];
    S.baseline_ticks = dt[FAST / 2];

    S.ck.syscalls = 0;
    S.ck.page_misses = 0;
}

/* The cold return path (docs/architecture.md "The cold return path"). A gap that follows an MPI
 * call during which the rank was switched out starts on caches and TLBs that other processes
 * evicted: the way back into the program and its first instructions cost more than the same
 * code warm. The excess is measured on this rank while it runs, per pair of call sites (the call
 * the gap follows, the call it ends in: the same code in between): the least of the pair's
 * recent gaps that followed a switch minus the least of its recent gaps that did not. Minima
 * (not means) because the program's own work varies and only inflates a gap; recent (the pair's
 * last RP_HORIZON occurrences) so that work that grows over the run does not pass for a
 * penalty; no estimate until both kinds have RP_MIN samples in that horizon, nor where the
 * unswitched gaps' own spread (median - least) is as large as the excess. A switched gap is
 * charged its measured time minus that excess, never below the least recent warm gap of its
 * pair (nor above what was measured). Gaps during which the rank was also switched out are
 * charged, not sampled. */
enum { RP_PAIRS = 512, RP_RING = 16, RP_HORIZON = 64, RP_MIN = 4 };
typedef struct rp_ring {
    int64_t ns[RP_RING];
    uint32_t seq[RP_RING];       /* the pair's occurrence number of each sample */
    uint32_t n;
} rp_ring;
typedef struct rp_pair {
    uint64_t key;                /* 0: free */
    uint32_t seq;
    rp_ring warm, cold;
} rp_pair;

static rp_pair *rp_find(uint64_t key)
{
    if (!S.rp) return NULL;
    key |= 1;   /* never 0 */
    uint64_t h = key * 0x9e3779b97f4a7c15ULL;
    for (unsigned i = 0; i < 8; i++) {   /* a full neighbourhood: the pair is not measured */
        rp_pair *p = &S.rp[(h + i) & (RP_PAIRS - 1)];
        if (p->key == key) return p;
        if (!p->key) {
            p->key = key;
            return p;
        }
    }
    return NULL;
}

static void rp_put(rp_ring *r, int64_t ns, uint32_t seq)
{
    r->ns[r->n % RP_RING] = ns;
    r->seq[r->n % RP_RING] = seq;
    r->n++;
}

/* The least and the median of the ring's samples within the horizon; 0 if fewer than RP_MIN. */
static int rp_stats(const rp_ring *r, uint32_t now, int64_t *min, int64_t *median)
{
    int64_t v[RP_RING];
    int k = 0;
    for (uint32_t i = 0; i < RP_RING && i < r->n; i++)
        if (now - r->seq[i] <= RP_HORIZON) sorted_insert(v, &k, r->ns[i]);
    if (k < RP_MIN) return 0;
    *min = v[0];
    *median = v[k / 2];
    return 1;
}

/* The charge of a gap of d ns (after the baseline) ending at `site`. */
static int64_t rp_charge(int64_t d, const void *site, int woken, int desched)
{
    rp_pair *p = S.rp_on ? rp_find((uint64_t)(uintptr_t)T.site * 0x100000001b3ULL ^ (uint64_t)(uintptr_t)site) : NULL;
    if (!p) return d;
    uint32_t now = ++p->seq;
    int64_t c = d;
    int64_t warm, warm_med, cold, cold_med;
    /* only where the pair's work is steady enough to resolve the excess: the unswitched gaps'
     * median within the excess of their least (work that varies as much as the excess would
     * pass for it) */
    if (woken && rp_stats(&p->warm, now, &warm, &warm_med) && rp_stats(&p->cold, now, &cold, &cold_med) &&
        cold - warm > warm_med - warm) {
        c = d - (cold - warm);
        if (c < warm) c = d < warm ? d : warm;
    }
    if (!desched) rp_put(woken ? &p->cold : &p->warm, d, now);
    return c;
}

/* Repeatable small gaps (docs/architecture.md "Repeatable small gaps"). What an empty gap
 * measures is the machine's noise: a few ns median, and beside a CPU-bound job cold returns,
 * interrupts and stretches of dozens of calls at 100-600 ns, different in every run; charged as
 * measured, they move near-simultaneous messages past each other, and the same program gives
 * other times from run to run. So a gap measured at or below the noise floor (shim.gap_noise) is
 * charged shim.gap_floor; and where the program does nothing between a pair of call sites (the
 * same code in between), a gap of up to shim.gap_noise_max is noise and charged the floor too. A
 * pair does nothing when at least half of its last GF_WINDOW gaps were at or below the noise
 * floor (empty gaps' medians were 2-45 ns at load 12; real work worth charging is longer), or,
 * after a switched-out call, at most GF_WOKEN times it (beside a CPU-bound job a rank's empty
 * gaps after a switch took 200-600 ns for a whole run: a cold way back that the return path
 * cannot measure without unswitched gaps to compare), counting GF_PRIOR such gaps more as a prior
 * (a new pair's first gaps run cold code). The window is long so that a stretch of noise (the
 * longest seen: ~100 calls) does not make an empty pair look busy; the prior and the window bound
 * what real work that is sometimes there and sometimes not can lose (at most gap_noise_max per
 * gap; docs/architecture.md). A stall of the machine in an empty gap (steal time of the virtual
 * machine or an interrupt, counted by every clock the shim can read, task-clock, TSC and thread
 * CPU time alike: 5-46 us seen, in about one run in three of an empty loop beside a CPU-bound job,
 * several in a run, even two in one pair's window)
 * is longer than gap_noise_max but rare: a pair that does nothing (as above, with at least
 * GF_QUIET_MIN gaps: a pair with work in every gap no longer looks empty by then, so a new pair's
 * first computations are not taken for stalls) and had fewer than GF_STALLS gaps above
 * gap_noise_max among its last GF_WINDOW takes one of up to GF_STALL x gap_noise_max for a stall
 * (after a switched-out call GF_STALL_WOKEN x: 152 us seen at load 14), charged the floor; more
 * of them are charged (work that comes back is work). Anything else is charged as measured. */
enum { GF_PAIRS = 512, GF_WINDOW = 256, GF_PRIOR = 8, GF_WOKEN = 10, GF_STALL = 20, GF_STALL_WOKEN = 80,
       GF_STALLS = 3, GF_QUIET_MIN = 10 };
typedef struct gf_pair {
    uint64_t key;                /* 0: free */
    uint64_t small[GF_WINDOW / 64];   /* bit i: the window's gap i was taken for an empty one */
    uint16_t n, pos, count;      /* gaps in the window, the next one's place, small ones among them */
    uint64_t longer[GF_WINDOW / 64];  /* bit i: the window's gap i was above gap_noise_max */
    uint16_t longs;              /* such gaps in the window */
} gf_pair;

static gf_pair *gf_find(uint64_t key)
{
    key |= 1;   /* never 0 */
    uint64_t h = key * 0x9e3779b97f4a7c15ULL;
    for (unsigned i = 0; i < 8; i++) {   /* a full neighbourhood: the pair gets the plain floor */
        gf_pair *p = &S.gf[(h + i) & (GF_PAIRS - 1)];
        if (p->key == key) return p;
        if (!p->key) {
            p->key = key;
            return p;
        }
    }
    return NULL;
}

/* The charge of a gap of d ns (after baselines and the return path), ending at `site`. */
static int64_t gap_floor(int64_t d, const void *site, int woken)
{
    int64_t noise = S.params.gap_noise_ps / 1000, floor = S.params.gap_floor_ps / 1000;
    int small = d <= noise || (woken && d <= GF_WOKEN * noise), empty = small;
    gf_pair *p = S.gf ? gf_find((uint64_t)(uintptr_t)T.site * 0x100000001b3ULL ^ (uint64_t)(uintptr_t)site) : NULL;
    int stall = 0;
    if (p) {
        /* quiet before this gap: an isolated long one is a stall of the machine */
        int quiet = p->n >= GF_QUIET_MIN && 2 * (p->count + GF_PRIOR) >= p->n + GF_PRIOR && p->longs < GF_STALLS;
        int lng = d * 1000 > S.params.gap_noise_max_ps;
        uint64_t *w = &p->small[p->pos / 64], *l = &p->longer[p->pos / 64], bit = 1ULL << (p->pos % 64);
        if (p->n == GF_WINDOW) {   /* the oldest leaves */
            p->count -= (*w & bit) != 0;
            p->longs -= (*l & bit) != 0;
        } else {
            p->n++;
        }
        *w = small ? *w | bit : *w & ~bit;
        *l = lng ? *l | bit : *l & ~bit;
        p->count += small;
        p->longs += lng;
        p->pos = (uint16_t)((p->pos + 1) % GF_WINDOW);
        empty = 2 * (p->count + GF_PRIOR) >= p->n + GF_PRIOR;
        stall = lng && quiet && d * 1000 <= (woken ? GF_STALL_WOKEN : GF_STALL) * S.params.gap_noise_max_ps;
    }
    if (d <= noise || (empty && d * 1000 <= S.params.gap_noise_max_ps) || stall) {
        S.ck.floor_gaps++;
        if (d < floor) S.ck.floor_added_ns += floor - d;
        else S.ck.floor_dropped_ns += d - floor;
        if (stall) {
            S.ck.stall_gaps++;
            S.ck.stall_dropped_ns += d - floor;
        }
        return floor;
    }
    return d;
}

/* The wrapper window (shim.h; docs/architecture.md "The wrapper window"). The counter's ticks
 * become ns by its rate against CLOCK_MONOTONIC, measured in the run: a pair of readings at the
 * first exit and one at most every ms after (each pair bracketed by two counter reads a few ns
 * apart), used from 2 ms on (20 ns of pairing error in 2 ms: 1e-5). The window is only used where
 * the counter is invariant (one rate, on every CPU: CPUID 0x80000007 EDX bit 8), and is given up
 * for the run if the rate moves by more than 1e-3 between two measurements. */
static int tsc_invariant(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
    if (a < 0x80000007u) return 0;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
    return (d >> 8) & 1;
#else
    return 0;
#endif
}

static int tsc_pair(uint64_t *tsc, int64_t *mono)
{
    for (int tries = 0; tries < 4; tries++) {
        uint64_t t0 = ms_tsc();
        int64_t m = mono_ns();
        uint64_t t1 = ms_tsc();
        if (t1 > t0 && t1 - t0 < 2000) {   /* not interrupted between the reads */
            *tsc = t0 + (t1 - t0) / 2;
            *mono = m;
            return 1;
        }
    }
    return 0;
}

static void window_off(void)
{
    S.window_on = 0;
    S.tsc_invariant = 0;
    ms_wrapper_window.lock = NULL;
    ms_wrapper_window.exit_tsc = 0;
}

/* At an exit reading (mono: its CLOCK_MONOTONIC): refine the rate, at most once a ms. */
static void window_refine(int64_t mono)
{
    if (MS_LIKELY(mono - S.tsc_last_mono < 1000000) || !S.tsc_invariant || !T.ck_page) return;
    uint64_t t;
    int64_t m;
    if (!tsc_pair(&t, &m)) return;
    S.tsc_last_mono = m;
    if (!S.tsc_ref) {
        S.tsc_ref = t;
        S.tsc_ref_mono = m;
        return;
    }
    if (m - S.tsc_ref_mono < 2000000) return;
    double r = t > S.tsc_ref ? (double)(m - S.tsc_ref_mono) / (double)(t - S.tsc_ref) : 0;
    if (r < 0.01 || r > 100 || (S.ns_per_tick > 0 && fabs(r / S.ns_per_tick - 1) > 1e-3)) {
        window_off();   /* not a steady counter: measured between the shim's readings from now on */
        return;
    }
    S.ns_per_tick = r;
    S.ck.window_ps_per_tick = llround(r * 1e9);
    S.ck.window_baseline_ns = llround((double)S.baseline_ticks * r);
    if (!S.window_on) {
        S.window_on = 1;
        S.ck.window_cold_ns = S.ck.window_baseline_ns;   /* until a trial after a switch */
        if (S.rp) memset(S.rp, 0, RP_PAIRS * sizeof *S.rp);   /* the pairs' samples were of the other measure */
        ms_wrapper_window.lock = &T.ck_page->lock;
    }
}

static void clock_start(void)
{
    memset(&S.ck, 0, sizeof S.ck);
    window_off();
    S.tsc_ref = 0;
    S.tsc_last_mono = 0;
    S.ns_per_tick = 0;
    T.ck_page = NULL;
    T.ck_origin_ns = 0;
    if (S.params.compute_mode == MS_COMPUTE_NONE) {
        S.ck.method = MS_CHARGING_NONE;
        return;
    }
    if (S.params.compute_mode == MS_COMPUTE_WALL) S.ck.method = MS_CHARGING_WALL;
    else S.ck.method = clock_open_page() == 0 ? MS_CHARGING_TASK_CLOCK : MS_CHARGING_SYSCALL;
    clock_calibrate();
    S.tsc_invariant = S.ck.method == MS_CHARGING_TASK_CLOCK && tsc_invariant();
    /* allocated once; without the memory the gaps are charged as measured */
    S.rp_on = S.params.return_path && S.ck.method == MS_CHARGING_TASK_CLOCK;
    if (S.rp_on && !S.rp) S.rp = calloc(RP_PAIRS, sizeof *S.rp);
    if (S.rp_on) ms_wp_init();
    if (S.params.gap_noise_ps > 0 && !S.gf) S.gf = calloc(GF_PAIRS, sizeof *S.gf);   /* without: the plain floor */
}

static void clock_stop(void)
{
    window_off();
    if (!T.ck_page) return;
    munmap((void *)T.ck_page, (size_t)sysconf(_SC_PAGESIZE) * (1 + CK_DATA_PAGES));
    close(T.ck_fd);
    T.ck_page = NULL;
}

/* The compute gate (gate.c) for computation that is measured: every rank of the run opens its
 * host's segment, and once all have (a barrier) its name goes, so nothing is left behind. */
static void gate_start(void)
{
    if (!S.server || S.params.compute_mode == MS_COMPUTE_NONE) return;
    const char *token = getenv("MPISIM_GATE");   /* mpisim run's; without it, no gate */
    int on = ms_gate_open(token, S.rank, S.size, S.params.compute_slots,
                          S.params.compute_slot_timeout_ps / 1000) == 0;
    PMPI_Barrier(MPI_COMM_WORLD);
    if (on) {
        ms_gate_unlink(token);
        ms_gate_take(T.clock_ps);
    }
}

static void gate_stats_into(ms_msg_charging *c)
{
    ms_gate_stats g;
    ms_gate_get_stats(&g);
    c->gate_slots = g.slots;
    c->gate_waits = g.waits;
    c->gate_wait_ns = g.wait_ns;
    c->gate_timeouts = g.timeouts;
}

/* Computation since the last MPI call returned, in ns of the measured clock, compensated.
 * site: the call the gap ends in. */
int64_t clock_gap(int64_t now, int64_t mono, const void *site, int window)
{
    int64_t raw = now - T.last_exit_ns;
    if (raw < 0) raw = 0;
    int64_t wall = mono - T.last_exit_mono_ns;
    /* a window gap is measured between the wrappers' stamps, the others between the readings */
    int64_t base = window ? S.ck.window_baseline_ns : S.ck.baseline_ns;
    int64_t cold = window ? S.ck.window_cold_ns : S.ck.cold_baseline_ns;
    int64_t d = raw > base ? raw - base : 0;
    int desched = S.ck.method == MS_CHARGING_TASK_CLOCK && T.ck_seq_now != T.last_exit_seq;
    int woken = T.ck_woken;
    T.ck_woken = 0;
    /* after a switch: what an empty gap costs right after one, measured (clock_woken) */
    int64_t excess = cold > base ? cold - base : 0;
    int64_t dw = woken ? (d > excess ? d - excess : 0) : d;
    /* a pair's samples are all of one measure: the window's once it is on */
    int64_t c = rp_charge(dw, site, woken, desched || window != S.window_on);
    if (S.params.gap_noise_ps > 0) c = gap_floor(c, site, woken);
    S.ck.gaps++;
    S.ck.window_gaps += (uint64_t)window;
    S.ck.raw_ns += raw;
    S.ck.compensated_ns += raw - c;
    if (woken) {
        S.ck.woken_raw_ns += raw;
        S.ck.woken_charged_ns += c;
        S.ck.return_comp_ns += d - c;
    }
    S.ck.wall_ns += wall;
    if (desched) {
        S.ck.descheduled_gaps++;
        if (wall > raw) S.ck.descheduled_ns += wall - raw;
    }
    return c;
}

static void send_progress(void);

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
            ps = (int64_t)((double)d * 1000.0 * S.params.cpu_factor + 0.5);
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
        if (S.progress_due) send_progress();
        if (T.counted) {
            T.counted = 0;
            __atomic_fetch_sub(&S.inside, 1, __ATOMIC_RELEASE);
        }
        ms_unlock();
        /* last, so that none of the shim's work falls into the gap */
        if (S.params.compute_mode != MS_COMPUTE_NONE) {
            if (T.slot == 0) {   /* the thread of MPI_Init: the compute gate, the cold return path */
                ms_gate_take(T.clock_ps);   /* may sleep: before the reading, so never charged */
                if (T.ck_page && T.ck_page->lock != T.ck_seq_now) clock_woken(__builtin_return_address(0));
                window_refine(T.last_exit_mono_ns);   /* before the reading: a gap may be measured from it */
            }
            T.last_exit_ns = clock_now(&T.last_exit_mono_ns);
            T.last_exit_seq = T.ck_seq_now;
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
static void totals_into(ms_msg_finalize *f, int64_t in_call_ps)
{
    memset(f, 0, sizeof *f);
    f->t = T.clock_ps;
    f->compute_ps = S.compute_ps;
    f->mpi_ps = S.mpi_ps + in_call_ps;
    f->calls = S.calls;
    f->unmodelled_calls = S.unmodelled_calls;
    f->charging = S.ck;
    gate_stats_into(&f->charging);
    ms_threads_finalize_into(f);
}

/* About once a second of real time: the rank's totals and call sites so far, to the server only,
 * so that a rank killed before MPI_Finalize still has them in the report (outside the gap: the
 * caller is ms_exit, before its reading). */
static void send_progress(void)
{
    S.progress_due = 0;
    S.progress_mono_ns = mono_ns();
    if (!S.server) return;
    ms_msg_finalize f;
    totals_into(&f, 0);
    wire_put(MS_MSG_PROGRESS, &f, sizeof f, NULL, 0);
    send_callsites(0);
    flush_out();
}

static ms_rq *find_by_id(uint64_t id);
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
static void service_server(int wait_ms) { service_server_us((int64_t)wait_ms * 1000); }

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
        ms_rq *r = find_by_id(rv.req);
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
static void spin_where_cores_allow(void)
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
static int wait_ms(unsigned spins)
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

typedef struct real_call {
    int (*fn)(void *arg);
    void *arg;
    int rc;
} real_call;
static void wait_common(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn, int flags,
                        real_call *real);

/* Send what is batched and wait for the server's RESUME, keeping the real MPI moving. */
static void await_resume(ms_fn_id fn)
{
    T.resume_ready = 0;
    flush_out();
    T.blocked_fn = fn;
    T.waiting = 1;
    for (unsigned spins = 0; !T.resume_ready; spins++) {
        service_server(wait_ms(spins));
        /* a receive the model matched goes to the real MPI now: its sender may already sit in
         * its real send, which the model has completed, holding the horizon (issue 11) */
        if (S.resolve_pending) ms_post_deferred();
        if (!T.resume_ready) ms_progress();
    }
    T.waiting = 0;
    T.clock_ps = T.resume_t > T.clock_ps ? T.resume_t : T.clock_ps;
}

void ms_model_wait_for(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn)
{
    wait_common(mode, n, reqs, results, fn, 0, NULL);
}

void ms_model_wait_sync(ms_rq *r, ms_fn_id fn)
{
    ms_msg_result res;
    wait_common(0, 1, &r, &res, fn, MS_WAIT_FLAG_SYNC, NULL);
}

int ms_model_wait_around(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn,
                         int (*real)(void *arg), void *arg)
{
    real_call rc = {real, arg, MPI_SUCCESS};
    wait_common(mode, n, reqs, results, fn, 0, &rc);
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
    int is_test = mode >= MS_TEST_ALL;
    int any = mode == MS_WAIT_ANY || mode == MS_TEST_ANY, some = mode == MS_WAIT_SOME || mode == MS_TEST_SOME;
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
        service_server(0);
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
    int mode = w->mode, is_test = mode >= MS_TEST_ALL;
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
    else if (mode == MS_WAIT_ALL) R = at = last;
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
        case MS_WAIT_ALL: case MS_TEST_ALL: case MS_TEST_PEEK: c = all; break;
        case MS_WAIT_ANY: case MS_TEST_ANY: c = i == best; break;
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
            r->model_forgotten = mode != MS_TEST_PEEK;
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

static void wait_common(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn, int flags,
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
    if (S.server && mode >= MS_TEST_ALL && !flags && n <= 16) {
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
            reqs[i]->model_forgotten = mode != MS_TEST_PEEK;
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
    if (S.server) service_server_us(wait_ms(spins) ? MS_REAL_WAIT_SLEEP_US : 0);
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
    if (mode == MS_SEND_STANDARD && !to_self && r->src != MPI_PROC_NULL && S.params.local_send && S.cpu_free >= 0 &&
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

static ms_rq *find_by_id(uint64_t id)
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

/* ---------------------------------------------------------------------------------------- */
/* unmodelled calls */

static void untimed_begin(ms_fn_id fn)
{
    S.unmodelled_calls++;
    ms_msg_text t;
    memset(&t, 0, sizeof t);
    /* the name, then where it was called from (a stall report names it: the rank cannot answer
     * while it is inside the real call); the text of the last site is kept, loops repeat it */
    static uint64_t last_pc;
    static char last_site[MS_SITE_TEXT];
    if (T.cur_pcs[0] != last_pc || !last_site[0]) {
        cs_text(T.cur_pcs, T.cur_npcs, last_site, sizeof last_site);
        last_pc = T.cur_pcs[0];
    }
    size_t n = (size_t)snprintf(t.text, sizeof t.text, "%s", ms_fn_names[fn]) + 1;
    n += (size_t)snprintf(t.text + n, sizeof t.text - n, "%s", last_site) + 1;
    put_msg(MS_MSG_UNMODELLED, &t, n < sizeof t.text ? n : sizeof t.text, NULL, 0);
    /* the server stops waiting for this rank's clock while it is in the real call */
    flush_out();
}

void ms_unmodelled(ms_fn_id fn)
{
    if (!S.params.unmodelled_passthrough)
        ms_fatal("%s is not modelled by mpisim yet (run with --set unmodelled=passthrough to let it run "
                 "untimed)",
                 ms_fn_names[fn]);
    untimed_begin(fn);
}

void ms_passthrough(ms_fn_id fn)
{
    /* one note per kind (file I/O, the others), from rank 0; the run's outcome says it too (untimed) */
    static int warned_file, warned_other;
    int file = !strncmp(ms_fn_names[fn], "MPI_File_", 9);
    int *warned = file ? &warned_file : &warned_other;
    if (!(*warned)++ && S.rank == 0)
        fprintf(stderr, "mpisim: %s (%s) runs untimed; the report counts such calls and the run ends with outcome "
                        "untimed\n",
                ms_fn_names[fn], file ? "file I/O: the model has no file system" : "not modelled");
    untimed_begin(fn);
}

void ms_rejoin(ms_fn_id fn)
{
    ms_msg_result none;
    T.parked = 0;
    wait_common(0, 0, NULL, &none, fn, MS_WAIT_FLAG_UNTIMED, NULL);
}

void ms_unmodelled_done(ms_fn_id fn)
{
    /* the call was untimed; the rank rejoins the model at the model's present time */
    ms_msg_result none;
    wait_common(0, 0, NULL, &none, fn, MS_WAIT_FLAG_UNTIMED, NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* lifecycle */

/* The rank's CPU binding as a list of ranges, e.g. "0-1" (recorded in the report) */
void cpu_list(char *out, size_t len)
{
    cpu_set_t set;
    out[0] = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    size_t off = 0;
    for (int c = 0; c < CPU_SETSIZE && off + 16 < len; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) e++;
        off += (size_t)snprintf(out + off, len - off, off ? ",%d" : "%d", c);
        if (e > c) off += (size_t)snprintf(out + off, len - off, "-%d", e);
        c = e;
    }
}

static void report_exit(int status, void *arg);

/* ---------------------------------------------------------------------------------------- */
/* signals: what the rank recorded is kept however it ends */

static struct sigaction old_actions[65];

static const char *const stop_names[] = {[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGTERM] = "SIGTERM",
                                         [SIGQUIT] = "SIGQUIT"};

/* A signal that ends the rank: the launcher's SIGTERM (after another rank died, or when the run is
 * stopped), a batch system's, Ctrl-C; or a crash. Its records so far go to its trace (with a stop
 * record for a signal from outside: a replay then blames the rank that died, not those the
 * launcher ended), the server hears that it is being stopped, and then the signal does what it
 * would have done without the shim. Async-signal-safe. */
static void on_fatal_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    int outside = sig < (int)(sizeof stop_names / sizeof stop_names[0]) && stop_names[sig];
    if (outside) {
        char why[64] = "signal ";
        strcat(why, stop_names[sig]);
        trace_stop(why);
        if (S.server && !S.tp_writing) {
            ms_msg_text t;
            size_t n = 0;
            static const char stop[] = "STOP ended by ";
            memcpy(t.text, stop, sizeof stop - 1);
            n = sizeof stop - 1;
            for (const char *p = stop_names[sig]; *p; p++) t.text[n++] = *p;
            t.text[n++] = 0;
            ms_tp_send_now(&S.tp, MS_MSG_UNMODELLED, &t, n);
        }
    } else {
        trace_flush_now();
    }
    sigaction(sig, &old_actions[sig], NULL);
    /* a fault the kernel raised comes again as the instruction is retried, to the old handler */
    if (outside || !si || si->si_code <= 0) raise(sig);
    errno = saved;
}

static void install_signal_handlers(void)
{
    static const int outside[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    /* only where the program has left the default: its own handlers are its business */
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
        if (sigaction(outside[i], NULL, &old_actions[outside[i]]) == 0 && old_actions[outside[i]].sa_handler == SIG_DFL &&
            !(old_actions[outside[i]].sa_flags & SA_SIGINFO))
            sigaction(outside[i], &sa, NULL);
    /* faults chain to what was there (Open MPI's backtrace handler, the program's) */
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        if (sigaction(faults[i], NULL, &old_actions[faults[i]]) == 0 && old_actions[faults[i]].sa_handler != SIG_IGN)
            sigaction(faults[i], &sa, NULL);
}

static void start_session(void)
{
    const char *server = getenv("MPISIM_SERVER");
    const char *secret = getenv("MPISIM_SECRET");
    const char *trace = getenv("MPISIM_TRACE_DIR");
    PMPI_Comm_rank(MPI_COMM_WORLD, &S.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &S.size);
    int capture_only = (!server || !secret) && trace && *trace;
    if ((!server || !secret) && !capture_only) {
        /* preloaded without `mpisim run` or `mpisim trace`: stay out of the way */
        if (S.rank == 0)
            fprintf(stderr, "mpisim: libmpisim.so is loaded but no model server is set (MPISIM_SERVER); "
                            "running untimed\n");
        return;
    }
    if (capture_only) {
        /* `mpisim trace`: the real MPI decides everything; the trace records it */
        const char *cm = getenv("MPISIM_COMPUTE");
        memset(&S.params, 0, sizeof S.params);
        S.params.compute_mode = cm && !strcmp(cm, "wall") ? MS_COMPUTE_WALL
                                : cm && !strcmp(cm, "none") ? MS_COMPUTE_NONE : MS_COMPUTE_CPU;
        S.params.cpu_factor = 1.0;
        S.params.eager_threshold = INT64_MAX;
        S.params.unmodelled_passthrough = 1;
        const char *d = getenv("MPISIM_CALLSITE_DEPTH");
        S.params.callsite_depth = d ? atoi(d) : 1;
        S.params.spin_polls = MS_DEFAULT_SPIN_POLLS;
        const char *rp = getenv("MPISIM_RETURN_PATH");
        S.params.return_path = !rp || !strcmp(rp, "measured");
        /* shim.gap_floor, gap_noise, gap_noise_max (ps), from mpisim trace; else their defaults */
        const char *gaps = getenv("MPISIM_GAPS");
        long long gf = 20000, gn = 100000, gx = 5000000;
        if (gaps) sscanf(gaps, "%lld,%lld,%lld", &gf, &gn, &gx);
        S.params.gap_floor_ps = gf;
        S.params.gap_noise_ps = gn;
        S.params.gap_noise_max_ps = gx;
        S.server = 0;
    } else {
        /* on the server's host its shared segment; elsewhere (or refused: another host's
         * segment of the same name cannot exist, it is random) TCP */
        const char *shm = getenv("MPISIM_SHM");
        char why[256] = "";
        ms_tp_init(&S.tp);
        /* MPISIM_SERVER "none": the run does not listen (every rank is on its host) */
        if (!(shm && *shm && ms_tp_attach_shm(&S.tp, shm, S.rank, why, sizeof why) == 0)) {
            if (!strcmp(server, "none"))
                ms_fatal("cannot attach to the model server's shared segment: %s", why[0] ? why : "MPISIM_SHM is not set");
            if (ms_tp_connect_tcp(&S.tp, server) < 0)
                ms_fatal("cannot connect to the model server at %s (has its mpisim ended?)%s%s", server,
                         why[0] ? "; " : "", why);
        }
        ms_msg_hello h;
        memset(&h, 0, sizeof h);
        h.magic = MS_PROTO_MAGIC;
        h.version = MS_PROTO_VERSION;
        h.rank = S.rank;
        h.size = S.size;
        h.pid = (int32_t)getpid();
        h.sizes_check = ms_proto_sizes_check();
        memcpy(h.secret, secret, strnlen(secret, MS_SECRET_LEN));
        gethostname(h.hostname, sizeof h.hostname - 1);
        cpu_list(h.binding, sizeof h.binding);
        S.server = 1;
        put_msg(MS_MSG_HELLO, &h, sizeof h, NULL, 0);
        flush_out();
        /* the WELCOME is the only message that can come now */
        ms_msg_header hdr;
        size_t len;
        while (!(len = ms_tp_next(&S.tp))) {
            /* a server that has ended is said at once, not after the transport's slow look */
            if (!ms_tp_server_alive(&S.tp)) {
                S.server = 0;
                ms_fatal("the model server (mpisim, pid %d) ended before it answered this rank", S.tp.server_pid);
            }
            if (ms_tp_read(&S.tp, 100) < 0) {
                S.server = 0;
                if (!ms_tp_server_alive(&S.tp))
                    ms_fatal("the model server (mpisim, pid %d) ended before it answered this rank", S.tp.server_pid);
                ms_fatal("the model server refused this rank (wrong secret or rank?)");
            }
        }
        memcpy(&hdr, S.tp.in, sizeof hdr);
        if (hdr.type != MS_MSG_WELCOME || hdr.length != sizeof(ms_msg_welcome))
            ms_fatal("unexpected first reply from the model server");
        memcpy(&S.params, S.tp.in + sizeof hdr, sizeof S.params);
        ms_tp_consume(&S.tp, len);
    }
    if (S.server) spin_where_cores_allow();
    S.cs_depth = S.params.callsite_depth < 1 ? 1
                 : S.params.callsite_depth > MS_CS_MAX_DEPTH ? MS_CS_MAX_DEPTH : S.params.callsite_depth;
    trace_open();
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_attr_delete, &S.comm_keyval, NULL);
    PMPI_Comm_dup(MPI_COMM_SELF, &S.progress_comm);
    T.clock_ps = 0;
    S.cpu_free = 0;   /* the model starts every rank's CPU free at 0 */
    T.wtime_last_ps = -1;
    /* the thread of MPI_Init is the rank's thread 0 */
    T.slot = 0;
    S.thr[0] = &T;
    S.nthreads = 1;
    S.active = 1;
    S.progress_mono_ns = mono_ns();
    ms_program_clocks_start();   /* before the first gap: their epoch is this moment */
    install_signal_handlers();
    clock_start();
    gate_start();
    T.last_exit_ns = clock_now(&T.last_exit_mono_ns);
    T.last_exit_seq = T.ck_seq_now;
    if (S.server) {
        S.exit_pid = getpid();
        on_exit(report_exit, NULL);
    }
}

/* The process exits (exit(), a return from main): say with which code, before or after
 * MPI_Finalize, so that the run names a rank that returned EXIT_FAILURE on its own as such (not
 * "crashed or killed"), and a non-zero code after MPI_Finalize as the program's own (not the MPI
 * library's shutdown). The connection stays open after MPI_Finalize for this one message; a
 * process that is killed never gets here, and the run says so as before. */
static void report_exit(int status, void *arg)
{
    (void)arg;
    /* a child the program forked (and that exits without exec) shares the connection: not its word */
    if (!S.server || S.exit_sent || getpid() != S.exit_pid) return;
    S.exit_sent = 1;
    ms_msg_exit m = {status, S.finalized};
    put_msg(MS_MSG_EXIT, &m, sizeof m, NULL, 0);
    trace_flush();
    if (S.tp.fd >= 0 || S.tp.shm) {
        ms_tp_flush(&S.tp);
        ms_tp_close(&S.tp);
    }
}

/* A rank that ends without entering MPI_Init leaves the others waiting inside it, and the
 * launcher ends them a moment later: say in the run's shared segment that this one went first,
 * so that the run names it (the server's look at /proc can miss a short-lived process). The
 * rank comes from the launcher's environment (Open MPI's, or PMIx's / PMI's). */
__attribute__((destructor)) static void note_exit_before_init(void)
{
    if (S.init_entered) return;
    const char *shm = getenv("MPISIM_SHM");
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMIX_RANK");
    if (!r) r = getenv("PMI_RANK");
    if (!shm || !*shm || !r || *r < '0' || *r > '9') return;
    ms_tp_note_left_early(shm, atoi(r));
}

int MPI_Init(int *argc, char ***argv)
{
    S.init_entered = 1;
    S.level = -1;
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) start_session();
    return rc;
}

/* The level the real MPI gives is the program's: under MPI_THREAD_MULTIPLE each thread that
 * calls MPI has a clock of its own and the shim's lock is a mutex; under the lower levels two
 * threads inside MPI at once are counted, and the run ends with outcome thread_level
 * (docs/architecture.md "Threads"). */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    S.init_entered = 1;
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        S.level = *provided;
        if (*provided == MPI_THREAD_MULTIPLE) {
            pthread_mutexattr_t a;
            pthread_mutexattr_init(&a);
            pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
            pthread_mutex_init(&S.mutex, &a);
            pthread_mutexattr_destroy(&a);
            S.mt = 1;
        }
        start_session();
    }
    return rc;
}

/* The rank's virtual time now, read as a call of its own (the computation before it is charged,
 * the trace records it): MPI_Wtime, and the program's own clock reads (program_clocks.c). */
int64_t ms_read_virtual_clock(ms_fn_id fn, void *callsite, uint64_t entry_tsc)
{
    if (T.depth > 0) return T.clock_ps;
    /* a thread that has made no other MPI call: its own estimate, without joining the model (a
     * thread that only reads the clock must not hold virtual time back while it waits elsewhere) */
    if (T.slot < 0) {
        int64_t t = ms_thread_vt_now();
        if (S.params.compute_mode != MS_COMPUTE_NONE) T.birth_ps += S.params.clock_read_cost_ps;
        T.clock_only = 1;
        return t;
    }
    T.clock_read = 1;   /* ms_enter: a read that finds the clock unmoved advances it */
    ms_enter_at(fn, callsite, entry_tsc);
    int64_t t = T.clock_ps;
    ms_exit(fn, 0);
    T.wtime_last_ps = T.clock_ps;
    T.wtime_last_compute_ps = T.compute_ps;
    /* what the host's read it stands for costs, charged with the next gap: the interval
     * between two reads holds one read, natively */
    if (S.params.compute_mode != MS_COMPUTE_NONE && S.params.clock_read_cost_ps > 0)
        T.extra_compute_ps += (int64_t)((double)S.params.clock_read_cost_ps * S.params.cpu_factor + 0.5);
    ms_window_exit();
    return t;
}

int ms_virtual_clock_on(void) { return S.active && S.server && S.params.program_clocks; }

double ms_wtime_from(void *callsite, uint64_t entry_tsc)
{
    if (!S.active || !S.server) return PMPI_Wtime();
    return (double)ms_read_virtual_clock(MS_FN_Wtime, callsite, entry_tsc) * 1e-12;
}

/* the program's call site, as every wrapper names it (the report's callsites) */
double MPI_Wtime(void) { return ms_wtime_from(__builtin_return_address(0), ms_tsc()); }

double MPI_Wtick(void)
{
    if (!S.active || !S.server) return PMPI_Wtick();
    return 1e-12;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    if (S.active && T.depth == 0) {
        ms_msg_text t;
        memset(&t, 0, sizeof t);
        snprintf(t.text, sizeof t.text, "ABORT MPI_Abort(errorcode %d) at virtual time %.9f s", errorcode,
                 (double)T.clock_ps * 1e-12);
        put_msg(MS_MSG_UNMODELLED, &t, strlen(t.text) + 1, NULL, 0);
        flush_out();
        trace_flush();
        S.active = 0;
    }
    return PMPI_Abort(comm, errorcode);
}

/* An open MPI_Pcontrol region ends: its virtual duration goes into the call-site table as an
 * "MPI_Pcontrol region" entry at the site that opened it (one call per region). */
static void pcontrol_close_region(void)
{
    if (S.pc_level <= 0) return;
    uint64_t pcs[MS_CS_MAX_DEPTH];
    int npcs = T.cur_npcs;
    memcpy(pcs, T.cur_pcs, sizeof pcs);
    memcpy(T.cur_pcs, S.pc_pcs, sizeof pcs);
    T.cur_npcs = S.pc_npcs;
    cs_add((int)MS_FN_Pcontrol_region, 0, T.clock_ps - S.pc_start_ps);
    memcpy(T.cur_pcs, pcs, sizeof pcs);
    T.cur_npcs = npcs;
    S.pc_level = 0;
}

/* MPI_Pcontrol(level) marks regions, as mpiP reads it: a positive level opens one, 0 closes it.
 * Each mark is traced (the timeline draws the regions); the report lists each region's time. */
int MPI_Pcontrol(const int level, ...)
{
    if (ms_bypass()) return PMPI_Pcontrol(level);
    ms_enter(MS_FN_Pcontrol, __builtin_return_address(0));
    if (S.trace_fd >= 0) {
        ms_msg_tr_pcontrol m = {S.server ? T.clock_ps : 0, mono_ns(), level, 0};
        trace_put(MS_MSG_TR_PCONTROL, &m, sizeof m, NULL, 0);
    }
    if (level > 0 && S.pc_level <= 0) {
        S.pc_start_ps = T.clock_ps;
        memcpy(S.pc_pcs, T.cur_pcs, sizeof S.pc_pcs);
        S.pc_npcs = T.cur_npcs;
        S.pc_level = level;
    } else if (level <= 0) {
        pcontrol_close_region();
    }
    int rc = PMPI_Pcontrol(level);
    ms_exit(MS_FN_Pcontrol, rc);
    return rc;
}

int MPI_Finalize(void)
{
    if (!S.active || T.depth > 0) return PMPI_Finalize();
    ms_enter(MS_FN_Finalize, __builtin_return_address(0));
    ms_gate_close();   /* the slot went back at ms_enter; nothing is taken after Finalize */
    ms_msg_finalize f;
    totals_into(&f, T.clock_ps - T.call_start_ps);
    pcontrol_close_region();
    send_callsites(1);
    put_msg(MS_MSG_FINALIZE, &f, sizeof f, NULL, 0);
    trace_flush();
    flush_out();
    S.fin_ok = !S.server;
    for (unsigned spins = 0; !S.fin_ok; spins++) {
        service_server(wait_ms(spins));
        ms_progress();
    }
    /* sends the program saw complete early still have to reach their receivers */
    ms_real_wait w = {0};
    while (S.detached_n) ms_real_wait_step(&w, S.detached[0]);
    ms_real_wait_end(&w);
    S.active = 0;
    T.depth--;
    S.finalized = 1;
    ms_unlock();
    /* the connection stays for the process's exit code (report_exit); the trace is complete */
    if (!S.server) ms_tp_close(&S.tp);
    trace_flush();
    if (S.trace_fd >= 0) close(S.trace_fd);   /* trace_flush checked it is still ours */
    S.trace_fd = -1;
    PMPI_Comm_free(&S.progress_comm);
    clock_stop();
    return PMPI_Finalize();
}
