/* The shim's clock (docs/architecture.md "Virtual time in a rank"): thread CPU time and the
 * charging rules between two MPI calls. */
#define _GNU_SOURCE
#include "shim_internal.h"

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

/* Steal (docs/architecture.md "Steal"). On a virtual machine the hypervisor runs other guests on
 * a vCPU that the guest thinks busy: the guest does not switch the thread out, so the task clock
 * and CLOCK_MONOTONIC go on counting. Beside other guests' load the task clock read 1.2-2.2x the
 * thread's CPU time over 0.22 s of work here, and an OpenMP region was charged 1.5x its longest
 * thread. The CPU-time system call leaves steal out (the kernel's paravirt steal accounting) but
 * costs 0.4-0.8 us. So the two clocks are paired (an anchor) at a gap's start, reusing a pairing
 * taken less than STEAL_EVERY_NS of wall before (steal in an MPI call makes the wall time pass, so
 * at most that much steal falls between the pairing and the gap; 5 us cost the blocking round
 * trip 7 % more wall, 20 us nothing measurable), and again at the end of every gap of at least
 * STEAL_MIN_NS (shorter ones are left to the floor's rules): what the task clock counted beyond the CPU-time clock
 * between the two is taken off the gap. Both pairings lie outside the gap (before its start
 * reading, after its end reading), so neither system call is charged. */
enum { STEAL_EVERY_NS = 20000, STEAL_MIN_NS = 2000 };

static int steal_on(void) { return S.ck.method == MS_CHARGING_TASK_CLOCK && T.ck_page; }

void clock_anchor(ck_anchor *a)
{
    uint32_t seq = T.ck_seq_now;   /* a pairing is not one of the gap's readings */
    int64_t m0, m1;
    int64_t p0 = clock_now(&m0);
    struct timespec ts;
    ms_clock_real(CLOCK_THREAD_CPUTIME_ID, &ts);
    int64_t p1 = clock_now(&m1);
    T.ck_seq_now = seq;
    a->page_ns = p0 + (p1 - p0) / 2;   /* the system call read its clock between the two */
    a->cpu_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    a->mono_ns = m1;
    T.an_last = *a;
    __atomic_add_fetch(&S.ck.steal_syscalls, 1, __ATOMIC_RELAXED);   /* OpenMP team threads too */
}

/* raw_ns of the task clock, measured from a reading just after the pairing `from` to one just
 * before now: less the steal between them. */
int64_t clock_unsteal(const ck_anchor *from, int64_t raw_ns)
{
    if (raw_ns < STEAL_MIN_NS || !from->mono_ns || !steal_on()) return raw_ns;
    ck_anchor now;
    clock_anchor(&now);
    int64_t st = (now.page_ns - from->page_ns) - (now.cpu_ns - from->cpu_ns);
    if (st <= 0) return raw_ns;
    if (st > raw_ns) st = raw_ns;   /* steal before the gap's start reading (at most STEAL_EVERY_NS) */
    __atomic_add_fetch(&S.ck.steal_gaps, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&S.ck.steal_ns, st, __ATOMIC_RELAXED);
    return raw_ns - st;
}

/* A gap starts (an MPI call returns, a parked thread goes on): the pairing, then the reading. */
void clock_gap_start(void)
{
    if (steal_on()) {
        if (mono_ns() - T.an_last.mono_ns > STEAL_EVERY_NS) clock_anchor(&T.an_last);
        T.an_exit = T.an_last;
    }
    T.last_exit_ns = clock_now(&T.last_exit_mono_ns);
    T.last_exit_seq = T.ck_seq_now;
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
    S.calib_exit_tsc = ms_tsc_exit();
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
void shim_clock_woken(const void *wrapper_ret)
{
    S.ck.woken_gaps++;
    T.ck_woken = 1;
    if (!S.rp_on) return;   /* shim.return_path = off: charged as it comes */
    S.ck.probes += (uint64_t)ms_wp_touch(T.site, wrapper_ret);
    T.calibrating = 1;
    int64_t exit_side = S.calib_exit_ns = clock_now(&S.calib_mono);
    uint32_t seq = T.ck_seq_now;
    uint64_t exit_tsc = ms_tsc_exit();
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
    S.calib_exit_tsc = ms_tsc_exit();
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
 * pair does nothing when at least 1 / GF_SHARE of its last GF_WINDOW gaps were at or below the
 * noise floor (empty gaps' medians were 2-45 ns at load 12; real work worth charging is longer;
 * a quarter, not a half: in a slow phase of the machine most of an empty pair's gaps measure
 * 100-450 ns, docs/performance.md), or,
 * after a switched-out call, at most GF_WOKEN times it (beside a CPU-bound job a rank's empty
 * gaps after a switch took 200-600 ns for a whole run: a cold way back that the return path
 * cannot measure without unswitched gaps to compare), counting GF_PRIOR such gaps more as a prior
 * (a new pair's first gaps run cold code). The window is long so that a stretch of noise (the
 * longest seen: ~100 calls) does not make an empty pair look busy; the prior and the window bound
 * what real work that is sometimes there and sometimes not can lose (at most gap_noise_max per
 * gap; docs/performance.md). A stall of the machine in an empty gap (an interrupt, or steal the
 * pairing missed: it only measures gaps of STEAL_MIN_NS or more; 5-46 us seen before steal was
 * taken off, in about one run in three of an empty loop beside a CPU-bound job, several in a run,
 * even two in one pair's window)
 * is longer than gap_noise_max but rare: a pair that does nothing (as above, with at least
 * GF_QUIET_MIN gaps: a pair with work in every gap no longer looks empty by then, so a new pair's
 * first computations are not taken for stalls) and had fewer than GF_STALLS gaps above
 * gap_noise_max among its last GF_WINDOW takes one of up to GF_STALL x gap_noise_max for a stall
 * (after a switched-out call GF_STALL_WOKEN x: 152 us seen at load 14), charged the floor; more
 * of them are charged (work that comes back is work). Anything else is charged as measured. */
enum { GF_PAIRS = 512, GF_WINDOW = 256, GF_PRIOR = 8, GF_WOKEN = 10, GF_STALL = 20, GF_STALL_WOKEN = 80,
       GF_STALLS = 3, GF_QUIET_MIN = 10, GF_SHARE = 4 };
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

/* The pair's window (with the prior) holds enough gaps taken for empty ones: it does nothing. */
static inline int gf_empty(const gf_pair *p) { return GF_SHARE * (p->count + GF_PRIOR) >= p->n + GF_PRIOR; }

/* The charge of a gap of d ns (after baselines and the return path), ending at `site`. */
static int64_t gap_floor(int64_t d, const void *site, int woken)
{
    int64_t noise = S.params.gap_noise_ps / 1000, floor = S.params.gap_floor_ps / 1000;
    int small = d <= noise || (woken && d <= GF_WOKEN * noise), empty = small;
    gf_pair *p = S.gf ? gf_find((uint64_t)(uintptr_t)T.site * 0x100000001b3ULL ^ (uint64_t)(uintptr_t)site) : NULL;
    int stall = 0;
    if (p) {
        /* quiet before this gap: an isolated long one is a stall of the machine */
        int quiet = p->n >= GF_QUIET_MIN && gf_empty(p) && p->longs < GF_STALLS;
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
        empty = gf_empty(p);
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
void shim_window_refine(int64_t mono)
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

void shim_clock_start(void)
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

void shim_clock_stop(void)
{
    window_off();
    if (!T.ck_page) return;
    munmap((void *)T.ck_page, (size_t)sysconf(_SC_PAGESIZE) * (1 + CK_DATA_PAGES));
    close(T.ck_fd);
    T.ck_page = NULL;
}

/* The compute gate (gate.c) for computation that is measured: every rank of the run opens its
 * host's segment, and once all have (a barrier) its name goes, so nothing is left behind. */
void shim_gate_start(void)
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

void shim_gate_stats_into(ms_msg_charging *c)
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
    /* a gap whose start was paired (clock_gap_start, an OpenMP worker's stretch) loses the steal
     * in it; the pairing serves this gap alone */
    int64_t cpu = clock_unsteal(&T.an_exit, raw);
    T.an_exit.mono_ns = 0;
    /* a window gap is measured between the wrappers' stamps, the others between the readings */
    int64_t base = window ? S.ck.window_baseline_ns : S.ck.baseline_ns;
    int64_t cold = window ? S.ck.window_cold_ns : S.ck.cold_baseline_ns;
    int64_t d = cpu > base ? cpu - base : 0;
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
