/* The shim's runtime: lifecycle, virtual clock, connection to the model server, request
 * table, and the loops that wait for the model while keeping the real MPI moving. */
#define _GNU_SOURCE
#include "ms_model.h"   /* the wait modes */
#include "shim.h"
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
#include <sched.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>


#define MS_CS_MAX_DEPTH 8

typedef struct ms_state {
    int active;                  /* connected to a server; wrappers do their work */
    int depth;                   /* nesting of wrapped calls (re-entry guard) */
    int rank, size;
    int fd;
    ms_msg_welcome params;
    int64_t clock_ps;
    int64_t compute_ps, mpi_ps;
    int64_t call_start_ps;
    int64_t last_exit_ns;        /* the rank's clock reading (clock_now) when its last MPI call returned */
    int64_t last_exit_mono_ns;
    /* the thread's CPU clock without a system call (clock_now): a task-clock perf event's page
     * and its ring buffer of switch records */
    volatile struct perf_event_mmap_page *ck_page;   /* NULL: every CPU-clock read is a system call */
    const char *ck_data;         /* the ring buffer (overwrite mode) */
    uint64_t ck_mask;            /* its size - 1 */
    uint64_t ck_head0;           /* data_head while the buffer holds no record yet */
    int ck_fd;
    int64_t ck_origin_ns;        /* thread CPU clock - task clock: the system-call fallback's origin */
    uint32_t ck_seq_now;         /* the page's lock at the last reading (1: read by system call) */
    const void *site;            /* the program's call site of the current MPI call */
    int ck_woken;                /* the current gap follows a switched-out MPI call */
    uint32_t last_exit_seq;      /* ... at the last exit: a different one at entry = switched out */
    ms_msg_charging ck;          /* baselines and counts, sent at MPI_Finalize */
    struct rp_pair *rp;          /* the cold return path's measurements per pair of call sites */
    int rp_on;                   /* shim.return_path = measured */
    uint64_t calls, unmodelled_calls;
    uint64_t next_req;
    /* outgoing batch */
    char *out;
    size_t out_len, out_cap;
    /* incoming */
    char *in;
    size_t in_len, in_cap;
    /* the reply a blocked rank waits for */
    int resume_ready;
    int64_t resume_t;
    ms_msg_result *results;
    int results_cap, results_n;
    int fin_ok;
    /* request table: open addressing on the MPI_Request value */
    ms_rq **table;
    size_t table_cap, table_used;
    ms_rq *free_rqs;
    ms_rq *deferred_head, *deferred_tail;
    int resolve_pending;         /* a RESOLVE came: held-back receives may be postable */
    ms_rq **detached;
    size_t detached_n, detached_cap;
    /* communicators */
    int comm_keyval;
    MPI_Comm progress_comm;      /* private: Iprobe on it only drives progress */
    ms_fn_id blocked_fn;
    ms_fn_id cur_fn;             /* the MPI call being handled (stall reports) */
    /* capture */
    int trace_fd;                /* -1: not tracing */
    char *tr;
    size_t tr_len, tr_cap;
    int64_t last_raw_compute_ns;
    int64_t last_trace_flush_ns;
    int server;                  /* 1: co-simulation; 0: capture only */
    /* call sites */
    int cs_depth;
    uint64_t cur_pcs[MS_CS_MAX_DEPTH];
    int cur_npcs;
    /* the open MPI_Pcontrol region: level, start, and the site that opened it */
    int pc_level;
    int64_t pc_start_ps;
    uint64_t pc_pcs[MS_CS_MAX_DEPTH];
    int pc_npcs;
    void *fortran_site;          /* set by a Fortran binding for the C wrapper it calls */
    int64_t extra_compute_ps;    /* charged as computation at the next call (MPI_Wtime stalls) */
    int64_t wtime_last_ps;       /* the clock as the previous MPI_Wtime left it */
    uint64_t call_bytes;
    struct cs_entry *cs;
    size_t cs_cap, cs_used;
} ms_state;

typedef struct cs_entry {
    uint64_t key;
    uint64_t pcs[MS_CS_MAX_DEPTH];
    int npcs, fn;
    uint64_t calls, bytes;
    int64_t time_ps;
} cs_entry;

struct cs_entry;
static void trace_flush(void);
static void put_msg(uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
static ms_state S = {.fd = -1, .comm_keyval = MPI_KEYVAL_INVALID, .trace_fd = -1};

int ms_has_server(void) { return S.server; }

typedef struct ms_comm_info {
    uint64_t id;
    uint64_t children;           /* communicators created from this one so far */
} ms_comm_info;
static ms_comm_info world_info = {MS_COMM_WORLD_ID, 0}, self_info = {MS_COMM_SELF_ID, 0};

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
    trace_flush();
    if (S.fd >= 0) {
        /* tell the server so the run's report says why it stopped */
        ms_msg_header h = {MS_MSG_UNMODELLED, sizeof(ms_msg_text)};
        ms_msg_text t;
        memset(&t, 0, sizeof t);
        snprintf(t.text, sizeof t.text, "FATAL %.1000s", line);
        ssize_t w1 = write(S.fd, &h, sizeof h);
        ssize_t w2 = write(S.fd, &t, sizeof t);
        (void)w1;
        (void)w2;
    }
    PMPI_Abort(MPI_COMM_WORLD, 3);
    _exit(3);
}

/* ---------------------------------------------------------------------------------------- */
/* trace capture: whole records appended to a per-rank file (trace_raw.h) */

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void trace_flush(void)
{
    size_t off = 0;
    while (S.trace_fd >= 0 && off < S.tr_len) {
        ssize_t w = write(S.trace_fd, S.tr + off, S.tr_len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            /* a full disk must not kill the program: stop tracing, say so once */
            fprintf(stderr, "mpisim: rank %d: writing the trace failed (%s); tracing stops\n", S.rank,
                    strerror(errno));
            close(S.trace_fd);
            S.trace_fd = -1;
            break;
        }
        off += (size_t)w;
    }
    S.tr_len = 0;
}

static void trace_put(uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (S.trace_fd < 0) return;
    ms_msg_header h = {type, (uint32_t)(alen + blen)};
    size_t need = sizeof h + alen + blen;
    if (S.tr_len + need > S.tr_cap) {
        size_t cap = S.tr_cap ? S.tr_cap : 2 * MS_TRACE_FLUSH_BYTES;
        while (cap < S.tr_len + need) cap *= 2;
        char *p = realloc(S.tr, cap);
        if (!p) {
            S.trace_fd = -1;
            return;
        }
        S.tr = p;
        S.tr_cap = cap;
    }
    memcpy(S.tr + S.tr_len, &h, sizeof h);
    if (alen) memcpy(S.tr + S.tr_len + sizeof h, a, alen);
    if (blen) memcpy(S.tr + S.tr_len + sizeof h + alen, b, blen);
    S.tr_len += need;
    if (S.tr_len >= MS_TRACE_FLUSH_BYTES) trace_flush();
}

static void cpu_list(char *out, size_t len);

static void trace_open(void)
{
    const char *dir = getenv("MPISIM_TRACE_DIR");
    if (!dir || !*dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%06d.mstrace", dir, S.rank);
    S.trace_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (S.trace_fd < 0) ms_fatal("cannot write the trace %s: %s", path, strerror(errno));
    ms_trace_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MS_TRACE_MAGIC, 8);
    h.version = MS_PROTO_VERSION;
    h.sizes_check = ms_proto_sizes_check();
    h.rank = S.rank;
    h.size = S.size;
    h.pid = (int32_t)getpid();
    h.cosim = S.server;
    h.start_real_ns = mono_ns();
    gethostname(h.hostname, sizeof h.hostname - 1);
    ssize_t w = write(S.trace_fd, &h, sizeof h);
    if (w != (ssize_t)sizeof h) ms_fatal("cannot write the trace header to %s", path);
    /* the rank's CPU binding, for the trace's record of the machine */
    snprintf(path, sizeof path, "%s/rank-%06d.binding", dir, S.rank);
    FILE *b = fopen(path, "w");
    if (b) {
        char list[128];
        cpu_list(list, sizeof list);
        fprintf(b, "%s\n", list);
        fclose(b);
    }
}

/* Capture only: what the model would have answered, from the real MPI (times 0). */
void ms_trace_resolution(const ms_rq *r)
{
    if (S.trace_fd < 0 || r->kind != MS_RQ_RECV) return;
    int count = 0;
    PMPI_Get_count(&r->status, MPI_BYTE, &count);
    ms_msg_resolve m = {r->id, (uint64_t)(count < 0 ? 0 : count), r->status.MPI_SOURCE, r->status.MPI_TAG};
    trace_put(MS_MSG_RESOLVE, &m, sizeof m, NULL, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* call sites: totals per (function, program frames), as mpiP reports them */

static uint64_t cs_hash(int fn, const uint64_t *pcs, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)fn;
    for (int i = 0; i < n; i++) {
        h ^= pcs[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdULL;
    }
    return h | 1;
}

static void cs_add(int fn, uint64_t bytes, int64_t time_ps)
{
    if ((S.cs_used + 1) * 2 > S.cs_cap) {
        size_t cap = S.cs_cap ? S.cs_cap * 2 : 256;
        cs_entry *t = calloc(cap, sizeof *t);
        if (!t) return;
        for (size_t i = 0; i < S.cs_cap; i++)
            if (S.cs[i].key) {
                size_t j = S.cs[i].key & (cap - 1);
                while (t[j].key) j = (j + 1) & (cap - 1);
                t[j] = S.cs[i];
            }
        free(S.cs);
        S.cs = t;
        S.cs_cap = cap;
    }
    uint64_t key = cs_hash(fn, S.cur_pcs, S.cur_npcs);
    size_t j = key & (S.cs_cap - 1);
    while (S.cs[j].key && !(S.cs[j].key == key && S.cs[j].fn == fn && S.cs[j].npcs == S.cur_npcs &&
                            !memcmp(S.cs[j].pcs, S.cur_pcs, sizeof(uint64_t) * (size_t)S.cur_npcs)))
        j = (j + 1) & (S.cs_cap - 1);
    cs_entry *e = &S.cs[j];
    if (!e->key) {
        e->key = key;
        e->fn = fn;
        e->npcs = S.cur_npcs;
        memcpy(e->pcs, S.cur_pcs, sizeof(uint64_t) * (size_t)S.cur_npcs);
        S.cs_used++;
    }
    e->calls++;
    e->bytes += bytes;
    e->time_ps += time_ps;
}

/* "symbol+0xoff (module+0xoff)" for each frame, innermost first; addr2line takes module+off */
static void cs_text(const uint64_t *pcs, int n, char *out, size_t len)
{
    size_t off = 0;
    out[0] = 0;
    for (int i = 0; i < n && off + 1 < len; i++) {
        Dl_info di;
        /* a return address points after the call: look up the call instruction itself */
        uintptr_t pc = (uintptr_t)pcs[i] - 1;
        const char *sep = i ? " < " : "";
        if (dladdr((void *)pc, &di) && di.dli_fname) {
            const char *mod = strrchr(di.dli_fname, '/');
            mod = mod ? mod + 1 : di.dli_fname;
            /* symbols the dynamic table lacks (main, static functions): libunwind reads .symtab */
            char name[128];
            unw_word_t symoff = 0;
            unw_accessors_t *acc = unw_get_accessors(unw_local_addr_space);
            if (!di.dli_sname && acc && acc->get_proc_name &&
                acc->get_proc_name(unw_local_addr_space, (unw_word_t)pc, name, sizeof name, &symoff, NULL) == 0)
                off += (size_t)snprintf(out + off, len - off, "%s%s+0x%lx (%s+0x%lx)", sep, name,
                                        (unsigned long)symoff, mod, (unsigned long)(pc - (uintptr_t)di.dli_fbase));
            else if (di.dli_sname)
                off += (size_t)snprintf(out + off, len - off, "%s%s+0x%lx (%s+0x%lx)", sep, di.dli_sname,
                                        (unsigned long)(pc - (uintptr_t)di.dli_saddr), mod,
                                        (unsigned long)(pc - (uintptr_t)di.dli_fbase));
            else
                off += (size_t)snprintf(out + off, len - off, "%s%s+0x%lx", sep, mod,
                                        (unsigned long)(pc - (uintptr_t)di.dli_fbase));
        } else {
            off += (size_t)snprintf(out + off, len - off, "%s0x%lx", sep, (unsigned long)pc);
        }
    }
}

static void capture_callsite(void *ret, int skip)
{
    if (S.cs_depth <= 1) {
        S.cur_pcs[0] = (uint64_t)(uintptr_t)ret;
        S.cur_npcs = 1;
        return;
    }
    /* deeper sites: walk the stack with libunwind; frames 0-1 are this function and ms_enter,
     * frame 2 is the wrapper, whose return address is `ret`; `skip` more for a Fortran binding
     * in between */
    void *frames[MS_CS_MAX_DEPTH + 3];
    int n = unw_backtrace(frames, S.cs_depth + 3);
    int k = 0;
    for (int i = 3 + skip; i < n && k < S.cs_depth; i++) S.cur_pcs[k++] = (uint64_t)(uintptr_t)frames[i];
    if (k == 0) S.cur_pcs[k++] = (uint64_t)(uintptr_t)ret;
    S.cur_npcs = k;
}

static void send_callsites(void)
{
    for (size_t i = 0; i < S.cs_cap; i++) {
        cs_entry *e = &S.cs[i];
        if (!e->key) continue;
        ms_msg_site m;
        memset(&m, 0, sizeof m);
        m.fn = e->fn;
        m.depth = e->npcs;
        m.calls = e->calls;
        m.bytes = e->bytes;
        m.time_ps = e->time_ps;
        m.pc0 = e->npcs ? e->pcs[0] : 0;
        cs_text(e->pcs, e->npcs, m.text, sizeof m.text);
        put_msg(MS_MSG_SITE, &m, sizeof m, NULL, 0);
    }
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
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    S.ck.syscalls++;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define CK_BARRIER() __asm__ __volatile__("" ::: "memory")
enum { CK_DATA_PAGES = 1 };

/* the thread the perf event counts (initial-exec: a plain %fs access, no call) */
static __thread int ck_owner __attribute__((tls_model("initial-exec")));

/* One consistent reading of the task clock from the page; 0 if the page cannot give one now. */
static int clock_read_page(int64_t *cpu, int64_t *mono, uint32_t *seq)
{
    volatile struct perf_event_mmap_page *pg = S.ck_page;
    for (int tries = 0; tries < 8; tries++) {
        uint32_t l0 = pg->lock;
        CK_BARRIER();
        uint64_t count = pg->offset;
        uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
        const struct perf_event_header *h = (const void *)(S.ck_data + (head & S.ck_mask));
        uint16_t type = h->type, misc = h->misc;
        uint64_t t_in;
        memcpy(&t_in, (const char *)h + sizeof *h, sizeof t_in);
        int64_t m = mono_ns();
        CK_BARRIER();
        uint32_t l1 = pg->lock;
        if (l0 != l1 || (l0 & 1)) continue;   /* scheduled in (or the kernel writing) meanwhile */
        /* we run, so the newest record is the switch-in that started this stretch */
        if (type != PERF_RECORD_SWITCH || (misc & PERF_RECORD_MISC_SWITCH_OUT) || head == S.ck_head0) return 0;
        *cpu = (int64_t)count + (m - (int64_t)t_in);
        *mono = m;
        *seq = l1;
        return 1;
    }
    return 0;
}

/* The rank's compute clock in ns; *mono gets CLOCK_MONOTONIC at the same moment. */
static int64_t clock_now(int64_t *mono)
{
    if (S.params.compute_mode == MS_COMPUTE_WALL) return *mono = mono_ns();
    if (S.ck_page && ck_owner) {
        int64_t c;
        uint32_t seq;
        if (clock_read_page(&c, mono, &seq)) {
            S.ck_seq_now = seq;
            return c;
        }
        S.ck.page_misses++;
    }
    /* no page, or MPI called from another thread: the system call, on the page's origin */
    int64_t c = thread_cpu_ns() - S.ck_origin_ns;
    *mono = mono_ns();
    S.ck_seq_now = 1;
    return c;
}

/* Open the task-clock event with switch records on this thread; 0 on success. Checked, not
 * trusted: after a sleep the page must hold a switch-in record and a new count, or it does not
 * do what clock_now needs (another kernel). */
static int clock_open_page(void)
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
    S.ck_page = map;
    S.ck_data = (const char *)map + pg;
    S.ck_mask = pg * CK_DATA_PAGES - 1;
    S.ck_fd = fd;
    S.ck_head0 = S.ck_page->data_head;
    ck_owner = 1;
    for (int tries = 0; tries < 3; tries++) {
        usleep(50);
        int64_t c, m;
        uint32_t seq;
        if (clock_read_page(&c, &m, &seq)) {
            S.ck_head0 = (uint64_t)-1;   /* from now on any head is a record */
            S.ck_origin_ns = thread_cpu_ns() - c;
            return 0;
        }
    }
    munmap(map, len);
    close(fd);
    S.ck_page = NULL;
    ck_owner = 0;
    return -1;
}

/* Called at the end of an MPI call during which the thread was switched out: whatever ran
 * meanwhile left the caches and TLBs cold, and the way back into the program and into the next
 * wrapper pays for it inside the next gap (measured beside a CPU-bound job: an empty gap took
 * 0.4-1 us instead of 40 ns). Touch the lines the way back is known to use (the wrapper's return,
 * the program's call site, the entry of the next wrapper) before the gap starts. */
static void clock_woken(const void *wrapper_ret)
{
    volatile const char *w = wrapper_ret, *site = S.site, *enter = (const char *)(uintptr_t)&ms_enter,
                        *bypass = (const char *)(uintptr_t)&ms_bypass;
    (void)w[0];
    (void)w[63];
    if (site) {
        (void)site[0];
        (void)site[63];
    }
    (void)enter[0];
    (void)enter[64];
    (void)bypass[0];
    S.ck.woken_gaps++;
    S.ck_woken = 1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The enter-side reading of a calibration trial, called through a pointer like a wrapper. */
static __attribute__((noinline)) int64_t clock_enter_reading(int64_t *mono) { return clock_now(mono); }
static int64_t (*volatile clock_enter_fn)(int64_t *) = clock_enter_reading;

/* The compensation, measured at start as TAU and Score-P measure their overheads: the charge of
 * an empty gap between an exit-side and an enter-side reading, back to back (the median of many
 * trials; with the system-call clock this is one system call's length). */
static void clock_calibrate(void)
{
    enum { FAST = 255 };
    int64_t d[FAST], m;
    for (int i = 0; i < FAST; i++) {
        int64_t a = clock_now(&m);
        int64_t b = clock_enter_fn(&m);
        d[i] = b - a;
    }
    qsort(d, FAST, sizeof d[0], cmp_i64);
    S.ck.baseline_ns = d[FAST / 2];

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
        if (now - r->seq[i] <= RP_HORIZON) {
            int j = k++;   /* insertion sort: at most 16 */
            while (j > 0 && v[j - 1] > r->ns[i]) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = r->ns[i];
        }
    if (k < RP_MIN) return 0;
    *min = v[0];
    *median = v[k / 2];
    return 1;
}

/* The charge of a gap of d ns (after the baseline) ending at `site`. */
static int64_t rp_charge(int64_t d, const void *site, int woken, int desched)
{
    rp_pair *p = S.rp_on ? rp_find((uint64_t)(uintptr_t)S.site * 0x100000001b3ULL ^ (uint64_t)(uintptr_t)site) : NULL;
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

static void clock_start(void)
{
    memset(&S.ck, 0, sizeof S.ck);
    S.ck_page = NULL;
    S.ck_origin_ns = 0;
    if (S.params.compute_mode == MS_COMPUTE_NONE) {
        S.ck.method = MS_CHARGING_NONE;
        return;
    }
    if (S.params.compute_mode == MS_COMPUTE_WALL) S.ck.method = MS_CHARGING_WALL;
    else S.ck.method = clock_open_page() == 0 ? MS_CHARGING_TASK_CLOCK : MS_CHARGING_SYSCALL;
    clock_calibrate();
    /* allocated once; without the memory the gaps are charged as measured */
    S.rp_on = S.params.return_path && S.ck.method == MS_CHARGING_TASK_CLOCK;
    if (S.rp_on && !S.rp) S.rp = calloc(RP_PAIRS, sizeof *S.rp);
}

static void clock_stop(void)
{
    if (!S.ck_page) return;
    munmap((void *)S.ck_page, (size_t)sysconf(_SC_PAGESIZE) * (1 + CK_DATA_PAGES));
    close(S.ck_fd);
    S.ck_page = NULL;
    ck_owner = 0;
}

/* The compute gate (gate.c) for computation that is measured: every rank of the run opens its
 * host's segment, and once all have (a barrier) its name goes, so nothing is left behind. */
static void gate_start(const char *secret)
{
    if (!S.server || S.params.compute_mode == MS_COMPUTE_NONE) return;
    int on = ms_gate_open(secret, S.rank, S.size, S.params.compute_slots,
                          S.params.compute_slot_timeout_ps / 1000) == 0;
    PMPI_Barrier(MPI_COMM_WORLD);
    if (on) {
        ms_gate_unlink(secret);
        ms_gate_take(S.clock_ps);
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
static int64_t clock_gap(int64_t now, int64_t mono, const void *site)
{
    int64_t raw = now - S.last_exit_ns;
    if (raw < 0) raw = 0;
    int64_t wall = mono - S.last_exit_mono_ns;
    int64_t base = S.ck.baseline_ns;
    int64_t d = raw > base ? raw - base : 0;
    int desched = S.ck.method == MS_CHARGING_TASK_CLOCK && S.ck_seq_now != S.last_exit_seq;
    int woken = S.ck_woken;
    S.ck_woken = 0;
    int64_t c = rp_charge(d, site, woken, desched);
    S.ck.gaps++;
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

int ms_bypass(void) { return !S.active || S.depth > 0; }

void ms_f_callsite(void *ret)
{
    if (!ms_bypass()) S.fortran_site = ret;
}

void ms_enter(ms_fn_id fn, void *callsite)
{
    if (S.depth++ == 0) {
        int64_t d = 0, ps = 0;
        int64_t mono = 0;
        if (S.params.compute_mode != MS_COMPUTE_NONE) {
            int64_t now = clock_now(&mono);
            d = clock_gap(now, mono, callsite);
            ps = (int64_t)((double)d * 1000.0 * S.params.cpu_factor + 0.5);
            S.clock_ps += ps;
            S.compute_ps += ps;
        }
        ms_gate_leave();   /* after the reading: a hand-off's wake-up is the shim's work */
        if (S.extra_compute_ps) {
            ps += S.extra_compute_ps;
            S.clock_ps += S.extra_compute_ps;
            S.compute_ps += S.extra_compute_ps;
            S.extra_compute_ps = 0;
        }
        S.call_start_ps = S.clock_ps;
        S.cur_fn = fn;
        S.calls++;
        S.call_bytes = 0;
        int skip = 0;
        if (S.fortran_site) {   /* the program's call is one frame further out */
            callsite = S.fortran_site;
            S.fortran_site = NULL;
            skip = 1;
        }
        capture_callsite(callsite, skip);
        S.site = callsite;
        if (S.trace_fd >= 0) {
            ms_msg_tr_call c = {ps, d, mono ? mono : mono_ns(), (uint64_t)(uintptr_t)callsite, (int32_t)fn, 0};
            trace_put(MS_MSG_TR_CALL, &c, sizeof c, NULL, 0);
        }
    }
}

void ms_exit(ms_fn_id fn, int rc)
{
    if (--S.depth == 0) {
        S.mpi_ps += S.clock_ps - S.call_start_ps;
        cs_add((int)fn, S.call_bytes, S.clock_ps - S.call_start_ps);
        if (S.trace_fd >= 0) {
            ms_msg_tr_exit e = {mono_ns(), S.server ? S.clock_ps : 0, (int32_t)fn, rc};
            trace_put(MS_MSG_TR_EXIT, &e, sizeof e, NULL, 0);
            /* bounded loss if the rank is killed: at most half a second of events */
            if (e.real_exit_ns - S.last_trace_flush_ns > 500000000LL) {
                trace_flush();
                S.last_trace_flush_ns = e.real_exit_ns;
            }
        }
        /* last, so that none of the shim's work falls into the gap */
        if (S.params.compute_mode != MS_COMPUTE_NONE) {
            ms_gate_take(S.clock_ps);   /* may sleep: before the reading, so never charged */
            if (S.ck_page && S.ck_page->lock != S.ck_seq_now) clock_woken(__builtin_return_address(0));
            S.last_exit_ns = clock_now(&S.last_exit_mono_ns);
            S.last_exit_seq = S.ck_seq_now;
        }
    }
}

int64_t ms_now(void) { return S.clock_ps; }
void ms_advance(int64_t ps) { S.clock_ps += ps; }
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

static void out_reserve(size_t more)
{
    if (S.out_len + more <= S.out_cap) return;
    size_t cap = S.out_cap ? S.out_cap : 65536;
    while (cap < S.out_len + more) cap *= 2;
    char *p = realloc(S.out, cap);
    if (!p) ms_fatal("out of memory for the report buffer");
    S.out = p;
    S.out_cap = cap;
}

static void flush_out(void)
{
    if (!S.server) return;
    size_t off = 0;
    while (off < S.out_len) {
        ssize_t w = write(S.fd, S.out + off, S.out_len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd p = {S.fd, POLLOUT, 0};
                poll(&p, 1, 10);
                continue;
            }
            S.active = 0;
            ms_fatal("lost the connection to the model server (%s)", strerror(errno));
        }
        off += (size_t)w;
    }
    S.out_len = 0;
}

/* To the server only: what the trace has no use for (stall notices). */
static void wire_put(uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (!S.server) return;
    ms_msg_header h = {type, (uint32_t)(alen + blen)};
    out_reserve(sizeof h + alen + blen);
    memcpy(S.out + S.out_len, &h, sizeof h);
    S.out_len += sizeof h;
    if (alen) memcpy(S.out + S.out_len, a, alen);
    S.out_len += alen;
    if (blen) memcpy(S.out + S.out_len, b, blen);
    S.out_len += blen;
    if (S.out_len > (1u << 20)) flush_out();
}

static void put_msg(uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    trace_put(type, a, alen, b, blen);
    wire_put(type, a, alen, b, blen);
}

static ms_rq *find_by_id(uint64_t id);
static void handle_message(uint32_t type, const char *p, uint32_t len);

/* Read whatever the server has sent and act on it. wait_ms: how long to block for data. */
static void service_server(int wait_ms)
{
    struct pollfd pfd = {S.fd, POLLIN, 0};
    int n = poll(&pfd, 1, wait_ms);
    if (n <= 0) return;
    for (;;) {
        if (S.in_cap - S.in_len < 65536) {
            size_t cap = S.in_cap ? S.in_cap * 2 : 131072;
            char *q = realloc(S.in, cap);
            if (!q) ms_fatal("out of memory for the server's replies");
            S.in = q;
            S.in_cap = cap;
        }
        ssize_t r = read(S.fd, S.in + S.in_len, S.in_cap - S.in_len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) break;
        if (r <= 0) {
            S.active = 0;
            ms_fatal("the model server closed the connection");
        }
        S.in_len += (size_t)r;
        if ((size_t)r < S.in_cap - S.in_len + (size_t)r) break;
    }
    size_t off = 0;
    while (S.in_len - off >= sizeof(ms_msg_header)) {
        ms_msg_header h;
        memcpy(&h, S.in + off, sizeof h);
        if (S.in_len - off < sizeof h + h.length) break;
        handle_message(h.type, S.in + off + sizeof h, h.length);
        off += sizeof h + h.length;
    }
    memmove(S.in, S.in + off, S.in_len - off);
    S.in_len -= off;
}

static void handle_message(uint32_t type, const char *p, uint32_t len)
{
    switch (type) {
    case MS_MSG_RESUME: {
        trace_put(type, p, len, NULL, 0);
        ms_msg_resume rs;
        memcpy(&rs, p, sizeof rs);
        if (rs.n > S.results_cap) {
            ms_msg_result *q = realloc(S.results, sizeof *q * (size_t)rs.n);
            if (!q) ms_fatal("out of memory");
            S.results = q;
            S.results_cap = rs.n;
        }
        memcpy(S.results, p + sizeof rs, sizeof(ms_msg_result) * (size_t)rs.n);
        S.results_n = rs.n;
        S.resume_t = rs.t;
        S.resume_ready = 1;
        break;
    }
    case MS_MSG_RESOLVE: {
        trace_put(type, p, len, NULL, 0);
        ms_msg_resolve rv;
        memcpy(&rv, p, sizeof rv);
        ms_rq *r = find_by_id(rv.req);
        if (r && !r->resolved) {
            r->resolved = 1;
            r->src = rv.source;
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
        char where[MS_SITE_TEXT];
        cs_text(S.cur_pcs, S.cur_npcs, where, sizeof where);
        snprintf(t.text, sizeof t.text, "%s called from %s", ms_fn_names[S.blocked_fn], where);
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
        fprintf(stderr, "mpisim: rank %d stopped by the model server: %s\n", S.rank, t.text);
        fflush(stderr);
        S.active = 0;
        PMPI_Abort(MPI_COMM_WORLD, 4);
        _exit(4);
    }
    case MS_MSG_FIN_OK:
        S.fin_ok = 1;
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

/* Waiting loops poll without sleeping for shim.spin_polls rounds, yielding the CPU between
 * polls, then sleep 1 ms per poll: the server's answer usually comes within microseconds, and a
 * sleeping CPU of a virtual machine takes tens of them to wake (bench_shim: 164 -> 31 us per
 * ping-pong round trip). */
static int backoff_ms(unsigned spins)
{
    if (spins < (unsigned)S.params.spin_polls) {
        if (spins) sched_yield();
        return 0;
    }
    return 1;
}

static void wait_common(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn, int flags);

/* Send what is batched and wait for the server's RESUME, keeping the real MPI moving. */
static void await_resume(ms_fn_id fn)
{
    flush_out();
    S.resume_ready = 0;
    S.blocked_fn = fn;
    for (unsigned spins = 0; !S.resume_ready; spins++) {
        service_server(backoff_ms(spins));
        /* a receive the model matched goes to the real MPI now: its sender may already sit in
         * its real send, which the model has completed, holding the horizon (issue 11) */
        if (S.resolve_pending) ms_post_deferred();
        if (!S.resume_ready) ms_progress();
    }
    S.clock_ps = S.resume_t > S.clock_ps ? S.resume_t : S.clock_ps;
}

void ms_model_wait_for(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn)
{
    wait_common(mode, n, reqs, results, fn, 0);
}

void ms_model_wait_sync(ms_rq *r, ms_fn_id fn)
{
    ms_msg_result res;
    wait_common(0, 1, &r, &res, fn, MS_WAIT_FLAG_SYNC);
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
            results[i].source = r->status.MPI_SOURCE;
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

static void wait_common(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn, int flags)
{
    ms_msg_wait w = {0};
    w.flags = flags;
    w.t = S.clock_ps;
    w.mode = mode;
    w.n = n;
    w.fn = (int32_t)fn;
    w.callsite = S.cur_pcs[0];
    uint64_t ids_small[16] = {0};
    uint64_t *ids = n <= 16 ? ids_small : malloc(sizeof *ids * (size_t)n);
    if (!ids) ms_fatal("out of memory");
    for (int i = 0; i < n; i++) ids[i] = reqs[i]->id;
    put_msg(MS_MSG_WAIT, &w, sizeof w, ids, sizeof *ids * (size_t)n);
    if (ids != ids_small) free(ids);
    if (!S.server) {
        wait_real(mode, n, reqs, results);
        return;
    }
    await_resume(fn);
    if (S.results_n != n) ms_fatal("model answered %d results for %d requests", S.results_n, n);
    for (int i = 0; i < n; i++) {
        results[i] = S.results[i];
        if (S.results[i].completed) {
            reqs[i]->model_done = 1;
            reqs[i]->model_forgotten = mode != MS_TEST_PEEK;
            if (S.results[i].cancelled) {
                reqs[i]->model_cancelled = 1;
                reqs[i]->resolved = 1;   /* decided: it no longer holds later receives back */
            } else if (reqs[i]->kind == MS_RQ_RECV) {
                reqs[i]->matched = 1;
                if (!reqs[i]->resolved) {
                    reqs[i]->resolved = 1;
                    reqs[i]->src = S.results[i].source;
                    reqs[i]->tag = S.results[i].tag;
                }
            }
        }
    }
}

void ms_block_probe(MPI_Comm mcomm, int src, int tag, int blocking, ms_msg_result *result, ms_fn_id fn)
{
    uint64_t comm = ms_comm_id(mcomm);
    ms_msg_probe pr = {0};
    pr.t = S.clock_ps;
    pr.comm = comm;
    pr.src = src;
    pr.tag = tag;
    pr.blocking = blocking;
    pr.fn = (int32_t)fn;
    pr.callsite = S.cur_pcs[0];
    put_msg(MS_MSG_PROBE, &pr, sizeof pr, NULL, 0);
    if (!S.server) {
        MPI_Status st;
        int flag = 1;
        if (blocking) PMPI_Probe(src, tag, mcomm, &st);
        else PMPI_Iprobe(src, tag, mcomm, &flag, &st);
        memset(result, 0, sizeof *result);
        result->completed = flag;
        result->source = flag ? st.MPI_SOURCE : -1;
        result->tag = flag ? st.MPI_TAG : -1;
        if (flag) {
            int count = 0;
            PMPI_Get_count(&st, MPI_BYTE, &count);
            result->bytes = (uint64_t)(count < 0 ? 0 : count);
        }
        ms_msg_resume rs = {0, 1, 0};
        trace_put(MS_MSG_RESUME, &rs, sizeof rs, result, sizeof *result);
        return;
    }
    await_resume(fn);
    *result = S.results[0];
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
    cs_text(S.cur_pcs, S.cur_npcs, where, sizeof where);
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
    snprintf(out, len, "%s waits in the real MPI for %s; %s called from %s", ms_fn_names[S.cur_fn], what,
             ms_fn_names[S.cur_fn], where);
}

void ms_real_wait_step(ms_real_wait *w, const ms_rq *r)
{
    unsigned spins = w->spins++;
    if (S.server) service_server(backoff_ms(spins));
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

void ms_report_isend(const ms_rq *r, int dst, int tag, uint64_t bytes, int mode, ms_fn_id fn)
{
    ms_msg_isend m = {0};
    m.t = S.clock_ps;
    m.req = r->id;
    m.comm = r->comm_id;
    m.bytes = bytes;
    m.dst = dst;
    m.tag = tag;
    m.mode = mode;
    m.fn = (int32_t)fn;
    m.buf = (uint64_t)(uintptr_t)r->buf;
    S.call_bytes += bytes;
    put_msg(MS_MSG_ISEND, &m, sizeof m, NULL, 0);
}

void ms_report_irecv(const ms_rq *r, int src, int tag, uint64_t bytes, ms_fn_id fn)
{
    ms_msg_irecv m = {0};
    m.t = S.clock_ps;
    m.req = r->id;
    m.comm = r->comm_id;
    m.bytes = bytes;
    m.src = src;
    m.tag = tag;
    m.fn = (int32_t)fn;
    m.flags = r->notify ? MS_IRECV_NOTIFY : 0;
    m.buf = (uint64_t)(uintptr_t)r->buf;
    S.call_bytes += bytes;
    put_msg(MS_MSG_IRECV, &m, sizeof m, NULL, 0);
}

static void report_request_op(uint32_t type, const ms_rq *r, ms_fn_id fn)
{
    ms_msg_cancel m = {0};
    m.t = S.clock_ps;
    m.req = r->id;
    m.fn = (int32_t)fn;
    put_msg(type, &m, sizeof m, NULL, 0);
}
void ms_report_cancel(const ms_rq *r, ms_fn_id fn) { report_request_op(MS_MSG_CANCEL, r, fn); }
void ms_report_free(const ms_rq *r, ms_fn_id fn) { report_request_op(MS_MSG_FREE, r, fn); }

void ms_report_icoll(const ms_rq *r, int kind, int root, uint64_t bytes, const uint64_t *counts, int ncounts,
                     ms_fn_id fn)
{
    ms_msg_icoll m = {0};
    m.t = S.clock_ps;
    m.req = r->id;
    m.comm = r->comm_id;
    m.bytes = bytes;
    m.kind = kind;
    m.root = root;
    m.ncounts = counts ? ncounts : 0;
    m.fn = (int32_t)fn;
    S.call_bytes += bytes;
    put_msg(MS_MSG_ICOLL, &m, sizeof m, counts, counts ? sizeof *counts * (size_t)ncounts : 0);
}

/* ---------------------------------------------------------------------------------------- */
/* request table */

static size_t hash_ptr(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

#define TOMBSTONE ((ms_rq *)1)

static void table_grow(void)
{
    size_t cap = S.table_cap ? S.table_cap * 2 : 1024;
    ms_rq **t = calloc(cap, sizeof *t);
    if (!t) ms_fatal("out of memory for the request table");
    for (size_t i = 0; i < S.table_cap; i++) {
        ms_rq *r = S.table[i];
        if (r && r != TOMBSTONE) {
            size_t j = hash_ptr(r->user) & (cap - 1);
            while (t[j]) j = (j + 1) & (cap - 1);
            t[j] = r;
        }
    }
    free(S.table);
    S.table = t;
    S.table_cap = cap;
}

void ms_rq_index(ms_rq *r)
{
    if (getenv("MPISIM_DEBUG")) {
        ms_rq *o = ms_rq_find(r->user);
        if (o) fprintf(stderr, "mpisim-debug: rank %d: handle %p of request %llu (kind %d) already names request %llu (kind %d)\n", S.rank, (void *)r->user, (unsigned long long)r->id, r->kind, (unsigned long long)o->id, o->kind);
    }
    if ((S.table_used + 1) * 2 > S.table_cap) table_grow();
    size_t j = hash_ptr(r->user) & (S.table_cap - 1);
    while (S.table[j] && S.table[j] != TOMBSTONE) j = (j + 1) & (S.table_cap - 1);
    S.table[j] = r;
    S.table_used++;
}

ms_rq *ms_rq_find(MPI_Request user)
{
    if (!S.table_cap) return NULL;
    size_t j = hash_ptr(user) & (S.table_cap - 1);
    for (size_t k = 0; k < S.table_cap && S.table[j]; k++, j = (j + 1) & (S.table_cap - 1))
        if (S.table[j] != TOMBSTONE && S.table[j]->user == user) return S.table[j];
    return NULL;
}

void ms_rq_unindex(ms_rq *r)
{
    if (!S.table_cap) return;
    size_t j = hash_ptr(r->user) & (S.table_cap - 1);
    for (size_t k = 0; k < S.table_cap && S.table[j]; k++, j = (j + 1) & (S.table_cap - 1))
        if (S.table[j] == r) {
            S.table[j] = TOMBSTONE;
            S.table_used--; /* tombstones are cleared at the next growth */
            return;
        }
}

static ms_rq *find_by_id(uint64_t id)
{
    /* RESOLVE names receives that may not be indexed yet (blocking receives): look in the
     * deferred list first, it is short. */
    for (ms_rq *r = S.deferred_head; r; r = r->next_deferred)
        if (r->id == id) return r;
    for (size_t i = 0; i < S.table_cap; i++)
        if (S.table[i] && S.table[i] != TOMBSTONE && S.table[i]->id == id) return S.table[i];
    return NULL;
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
/* deferred receives: posted to the real MPI in the order the model matched them */

void ms_defer_recv(ms_rq *r)
{
    r->deferred = 1;
    r->next_deferred = NULL;
    if (S.deferred_tail) S.deferred_tail->next_deferred = r;
    else S.deferred_head = r;
    S.deferred_tail = r;
}

int ms_recv_must_defer(uint64_t comm_id, int src, int tag)
{
    if (S.resolve_pending) ms_post_deferred();
    for (ms_rq *q = S.deferred_head; q; q = q->next_deferred)
        if (q->comm_id == comm_id && !q->model_cancelled && (q->src == MPI_ANY_SOURCE || q->src == src) &&
            (q->tag == MPI_ANY_TAG || q->tag == tag))
            return 1;
    return 0;
}

/* Messages the real MPI delivered to receives the model cancelled (rare: the sender ran ahead in
 * real time of a cancel decided earlier in virtual time). Each is the earliest message of its
 * (communicator, source, tag) not yet received, so the next real receive posted for that triple
 * is the one the model matches it to. */
typedef struct stash_entry {
    MPI_Comm comm;
    int src, tag;
    int packed_bytes, bytes;
    void *data;
    struct stash_entry *next;
} stash_entry;
static stash_entry *stash_head;

static int same_triple(const ms_rq *q, MPI_Comm comm, int src, int tag)
{
    int cmp = MPI_UNEQUAL;
    if (q->comm != comm) PMPI_Comm_compare(q->comm, comm, &cmp);
    return (q->comm == comm || cmp == MPI_IDENT) && q->src == src && q->tag == tag;
}

void ms_stash_keep(const ms_rq *c)
{
    int src = c->status.MPI_SOURCE, tag = c->status.MPI_TAG, count = 0, size = 0, pos = 0;
    /* a real receive for the same triple already posted has taken the next message instead */
    for (size_t j = 0; j < S.table_cap; j++) {
        ms_rq *q = S.table[j];
        if (q && q != TOMBSTONE && q != c && q->kind == MS_RQ_RECV && q->real_posted && !q->real_done &&
            same_triple(q, c->comm, src, tag))
            ms_fatal("MPI_Cancel: the real MPI delivered a message (source %d, tag %d) to a receive the model "
                     "cancelled, and a later receive for the same source and tag is already posted; this "
                     "reordering is not supported", src, tag);
    }
    PMPI_Get_count(&c->status, c->dtype, &count);
    PMPI_Pack_size(count, c->dtype, c->comm, &size);
    stash_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->data = malloc(size ? (size_t)size : 1))) ms_fatal("out of memory (cancel stash)");
    PMPI_Pack(c->buf, count, c->dtype, e->data, size, &pos, c->comm);
    PMPI_Get_count(&c->status, MPI_BYTE, &e->bytes);
    e->comm = c->comm;
    e->src = src;
    e->tag = tag;
    e->packed_bytes = pos;
    stash_entry **tail = &stash_head;
    while (*tail) tail = &(*tail)->next;
    *tail = e;
}

int ms_post_real_recv(ms_rq *r)
{
    for (stash_entry **pe = &stash_head; *pe; pe = &(*pe)->next) {
        stash_entry *e = *pe;
        if (!same_triple(r, e->comm, e->src, e->tag)) continue;
        int pos = 0, count = 0, size = 0;
        PMPI_Type_size(r->dtype, &size);
        count = size > 0 ? e->bytes / size : 0;
        int rc = PMPI_Unpack(e->data, e->packed_bytes, &pos, r->buf, count, r->dtype, r->comm);
        memset(&r->status, 0, sizeof r->status);
        r->status.MPI_SOURCE = e->src;
        r->status.MPI_TAG = e->tag;
        r->status.MPI_ERROR = MPI_SUCCESS;
        PMPI_Status_set_elements(&r->status, MPI_BYTE, e->bytes);
        r->real = MPI_REQUEST_NULL;
        r->real_posted = 1;
        r->real_done = 1;
        *pe = e->next;
        free(e->data);
        free(e);
        return rc;
    }
    int rc = PMPI_Irecv(r->buf, r->count, r->dtype, r->src, r->tag, r->comm, &r->real);
    if (rc == MPI_SUCCESS) r->real_posted = 1;
    return rc;
}

void ms_post_deferred(void)
{
    S.resolve_pending = 0;
    ms_rq *prev = NULL;
    for (ms_rq *r = S.deferred_head; r;) {
        ms_rq *next = r->next_deferred;
        /* A receive goes once the model has matched it, in posting order. An earlier receive
         * still unmatched cannot want the same message: it was posted first, so the model would
         * have given it that message (or an earlier one of the same source and tag) first. An
         * earlier one matched to the same source and tag goes first, in this same pass. So the
         * real MPI, matching per (source, tag) in posting order, takes what the model took. */
        if (r->model_cancelled || r->matched || r->model_done) {
            /* a receive the model took back is never posted */
            if (!r->model_cancelled) {
                int rc = ms_post_real_recv(r);
                if (rc != MPI_SUCCESS) ms_fatal("posting the real receive failed (error %d)", rc);
            }
            r->deferred = 0;
            if (prev) prev->next_deferred = next;
            else S.deferred_head = next;
            if (S.deferred_tail == r) S.deferred_tail = prev;
            r->next_deferred = NULL;
        } else {
            prev = r;
        }
        r = next;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* communicators */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static ms_comm_info *comm_info(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD) return &world_info;
    if (comm == MPI_COMM_SELF) return &self_info;
    void *v = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, S.comm_keyval, &v, &found);
    return found ? (ms_comm_info *)v : NULL;
}

uint64_t ms_comm_id(MPI_Comm comm)
{
    ms_comm_info *ci = comm_info(comm);
    if (!ci) {
        int inter = 0;
        PMPI_Comm_test_inter(comm, &inter);
        if (inter) ms_fatal("intercommunicators are not modelled yet");
        ms_fatal("a communicator made by a call mpisim does not model was used");
    }
    return ci->id;
}

/* World ranks of a group's members, in group order (malloc'd). */
static int32_t *group_world_ranks(MPI_Group g, int n)
{
    int *in = malloc(sizeof(int) * 2 * (size_t)(n + 1));
    int32_t *w = malloc(sizeof(int32_t) * (size_t)(n + 1));
    if (!in || !w) ms_fatal("out of memory");
    MPI_Group wg;
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int i = 0; i < n; i++) in[i] = i;
    PMPI_Group_translate_ranks(g, n, in, wg, in + n);
    PMPI_Group_free(&wg);
    for (int i = 0; i < n; i++) w[i] = in[n + i];
    free(in);
    return w;
}

/* A new communicator's model id: the same on every member, from what they all know. */
static uint64_t comm_id_of(uint64_t seed, const int32_t *members, int n)
{
    int32_t minw = n ? members[0] : 0;
    uint64_t h = seed;
    for (int i = 0; i < n; i++) {
        if (members[i] < minw) minw = members[i];
        h = mix64(h ^ (uint64_t)(uint32_t)members[i]);
    }
    h = mix64(h ^ ((uint64_t)(uint32_t)minw << 32) ^ (uint64_t)(uint32_t)n);
    return h <= MS_COMM_SELF_ID ? h + 2 : h;   /* 0 and 1 are world and self */
}

static void comm_add(uint64_t id, const int32_t *members, int n)
{
    ms_msg_comm_add m = {id, n, 0};
    put_msg(MS_MSG_COMM_ADD, &m, sizeof m, members, sizeof(int32_t) * (size_t)n);
}

static void comm_attach(MPI_Comm comm, uint64_t id)
{
    ms_comm_info *ci = malloc(sizeof *ci);
    if (!ci) ms_fatal("out of memory");
    ci->id = id;
    ci->children = 0;
    PMPI_Comm_set_attr(comm, S.comm_keyval, ci);
}

int ms_comm_register(MPI_Comm parent, MPI_Comm newcomm)
{
    ms_comm_info *pi = comm_info(parent);
    if (!pi) ms_fatal("a communicator made by a call mpisim does not model was used");
    uint64_t seq = ++pi->children; /* same on every member of parent: creation is collective */
    if (newcomm == MPI_COMM_NULL) return MPI_SUCCESS;
    int n = 0;
    MPI_Group g;
    PMPI_Comm_size(newcomm, &n);
    PMPI_Comm_group(newcomm, &g);
    int32_t *members = group_world_ranks(g, n);
    PMPI_Group_free(&g);
    uint64_t id = comm_id_of(mix64(pi->id ^ mix64(seq)), members, n);
    comm_attach(newcomm, id);
    comm_add(id, members, n);
    free(members);
    return MPI_SUCCESS;
}

/* MPI_Comm_create_group is collective over the group only, so the parent's creation count
 * cannot name the new communicator: its id comes from the parent, the tag, the members and how
 * many times these three have made one before. The model learns the communicator first; the
 * members' creation is timed on it as comm creation is (an allreduce that they leave together). */
static struct cg_seen { uint64_t key, count; } *cg_seen;
static size_t cg_n, cg_cap;

uint64_t ms_comm_prepare_group(MPI_Comm parent, MPI_Group group, int tag)
{
    int n = 0;
    PMPI_Group_size(group, &n);
    int32_t *members = group_world_ranks(group, n);
    uint64_t key = comm_id_of(mix64(ms_comm_id(parent) ^ mix64(0x6367ULL << 32 ^ (uint32_t)tag)), members, n);
    size_t i = 0;
    while (i < cg_n && cg_seen[i].key != key) i++;
    if (i == cg_n) {
        if (cg_n == cg_cap) {
            size_t cap = cg_cap ? 2 * cg_cap : 16;
            struct cg_seen *q = realloc(cg_seen, cap * sizeof *q);
            if (!q) ms_fatal("out of memory");
            cg_seen = q;
            cg_cap = cap;
        }
        cg_seen[cg_n++] = (struct cg_seen){key, 0};
    }
    uint64_t id = comm_id_of(mix64(key ^ mix64(++cg_seen[i].count)), members, n);
    comm_add(id, members, n);
    free(members);
    return id;
}

void ms_comm_attach(MPI_Comm comm, uint64_t id)
{
    if (comm != MPI_COMM_NULL) comm_attach(comm, id);
}

static int comm_attr_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    free(attr);
    return MPI_SUCCESS;
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
    if (S.cur_pcs[0] != last_pc || !last_site[0]) {
        cs_text(S.cur_pcs, S.cur_npcs, last_site, sizeof last_site);
        last_pc = S.cur_pcs[0];
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
    /* one note per kind (one-sided, file I/O), from rank 0 */
    static int warned_file, warned_rma;
    int file = !strncmp(ms_fn_names[fn], "MPI_File_", 9);
    int *warned = file ? &warned_file : &warned_rma;
    if (!(*warned)++ && S.rank == 0)
        fprintf(stderr, "mpisim: %s (%s) runs untimed; the report counts such calls\n", ms_fn_names[fn],
                file ? "file I/O: the model has no file system" : "one-sided communication, not modelled yet");
    untimed_begin(fn);
}

void ms_unmodelled_done(ms_fn_id fn)
{
    /* the call was untimed; the rank rejoins the model at the model's present time */
    ms_msg_result none;
    wait_common(0, 0, NULL, &none, fn, MS_WAIT_FLAG_UNTIMED);
}

/* ---------------------------------------------------------------------------------------- */
/* lifecycle */

static int connect_server(const char *spec)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= sizeof host) return -1;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = 0;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0) return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

/* The rank's CPU binding as a list of ranges, e.g. "0-1" (recorded in the report) */
static void cpu_list(char *out, size_t len)
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
        S.server = 0;
    } else {
        S.fd = connect_server(server);
        if (S.fd < 0) ms_fatal("cannot connect to the model server at %s", server);
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
        size_t got = 0;
        char buf[sizeof hdr + sizeof(ms_msg_welcome)];
        while (got < sizeof buf) {
            ssize_t r = read(S.fd, buf + got, sizeof buf - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) ms_fatal("the model server refused this rank (wrong secret or rank?)");
            got += (size_t)r;
        }
        memcpy(&hdr, buf, sizeof hdr);
        if (hdr.type != MS_MSG_WELCOME || hdr.length != sizeof(ms_msg_welcome))
            ms_fatal("unexpected first reply from the model server");
        memcpy(&S.params, buf + sizeof hdr, sizeof S.params);
    }
    S.cs_depth = S.params.callsite_depth < 1 ? 1
                 : S.params.callsite_depth > MS_CS_MAX_DEPTH ? MS_CS_MAX_DEPTH : S.params.callsite_depth;
    trace_open();
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_attr_delete, &S.comm_keyval, NULL);
    PMPI_Comm_dup(MPI_COMM_SELF, &S.progress_comm);
    S.clock_ps = 0;
    S.wtime_last_ps = -1;
    S.active = 1;
    clock_start();
    gate_start(secret);
    S.last_exit_ns = clock_now(&S.last_exit_mono_ns);
    S.last_exit_seq = S.ck_seq_now;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) start_session();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    /* Ranks report from one thread at a time; MULTIPLE is answered with SERIALIZED, which the
     * standard allows (programs that need more check `provided`). */
    int ask = required > MPI_THREAD_SERIALIZED ? MPI_THREAD_SERIALIZED : required;
    int rc = PMPI_Init_thread(argc, argv, ask, provided);
    if (rc == MPI_SUCCESS) start_session();
    if (rc == MPI_SUCCESS && S.active && required == MPI_THREAD_MULTIPLE && S.rank == 0)
        fprintf(stderr, "mpisim: MPI_THREAD_MULTIPLE is not supported; the program gets MPI_THREAD_SERIALIZED "
                        "(one thread in MPI at a time)\n");
    return rc;
}

double MPI_Wtime(void)
{
    if (!S.active || !S.server) return PMPI_Wtime();
    if (S.depth > 0) return (double)S.clock_ps * 1e-12;
    /* computation costs nothing: a program spinning on the clock would wait forever */
    if (S.params.compute_mode == MS_COMPUTE_NONE && S.clock_ps == S.wtime_last_ps)
        S.extra_compute_ps += S.params.wtime_stall_ps;
    ms_enter(MS_FN_Wtime, NULL);
    double t = (double)S.clock_ps * 1e-12;
    ms_exit(MS_FN_Wtime, 0);
    S.wtime_last_ps = S.clock_ps;
    return t;
}

double MPI_Wtick(void)
{
    if (!S.active || !S.server) return PMPI_Wtick();
    return 1e-12;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    if (S.active && S.depth == 0) {
        ms_msg_text t;
        memset(&t, 0, sizeof t);
        snprintf(t.text, sizeof t.text, "ABORT MPI_Abort(errorcode %d) at virtual time %.9f s", errorcode,
                 (double)S.clock_ps * 1e-12);
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
    int npcs = S.cur_npcs;
    memcpy(pcs, S.cur_pcs, sizeof pcs);
    memcpy(S.cur_pcs, S.pc_pcs, sizeof pcs);
    S.cur_npcs = S.pc_npcs;
    cs_add((int)MS_FN_Pcontrol_region, 0, S.clock_ps - S.pc_start_ps);
    memcpy(S.cur_pcs, pcs, sizeof pcs);
    S.cur_npcs = npcs;
    S.pc_level = 0;
}

/* MPI_Pcontrol(level) marks regions, as mpiP reads it: a positive level opens one, 0 closes it.
 * Each mark is traced (the timeline draws the regions); the report lists each region's time. */
int MPI_Pcontrol(const int level, ...)
{
    if (ms_bypass()) return PMPI_Pcontrol(level);
    ms_enter(MS_FN_Pcontrol, __builtin_return_address(0));
    if (S.trace_fd >= 0) {
        ms_msg_tr_pcontrol m = {S.server ? S.clock_ps : 0, mono_ns(), level, 0};
        trace_put(MS_MSG_TR_PCONTROL, &m, sizeof m, NULL, 0);
    }
    if (level > 0 && S.pc_level <= 0) {
        S.pc_start_ps = S.clock_ps;
        memcpy(S.pc_pcs, S.cur_pcs, sizeof S.pc_pcs);
        S.pc_npcs = S.cur_npcs;
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
    if (!S.active || S.depth > 0) return PMPI_Finalize();
    ms_enter(MS_FN_Finalize, __builtin_return_address(0));
    ms_msg_finalize f = {0};
    f.t = S.clock_ps;
    f.compute_ps = S.compute_ps;
    f.mpi_ps = S.mpi_ps + (S.clock_ps - S.call_start_ps);
    f.calls = S.calls;
    f.unmodelled_calls = S.unmodelled_calls;
    ms_gate_close();   /* the slot went back at ms_enter; nothing is taken after Finalize */
    gate_stats_into(&S.ck);
    f.charging = S.ck;
    pcontrol_close_region();
    send_callsites();
    put_msg(MS_MSG_FINALIZE, &f, sizeof f, NULL, 0);
    trace_flush();
    flush_out();
    S.fin_ok = !S.server;
    for (unsigned spins = 0; !S.fin_ok; spins++) {
        service_server(backoff_ms(spins));
        ms_progress();
    }
    /* sends the program saw complete early still have to reach their receivers */
    ms_real_wait w = {0};
    while (S.detached_n) ms_real_wait_step(&w, S.detached[0]);
    ms_real_wait_end(&w);
    S.active = 0;
    S.depth--;
    if (S.fd >= 0) close(S.fd);
    S.fd = -1;
    trace_flush();
    if (S.trace_fd >= 0) close(S.trace_fd);
    S.trace_fd = -1;
    PMPI_Comm_free(&S.progress_comm);
    clock_stop();
    return PMPI_Finalize();
}
