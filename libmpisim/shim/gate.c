/* The compute gate: at most `slots` ranks of a host run the program's code at once (gate.h,
 * docs/architecture.md "The compute gate"). Ranks that outnumber the cores and compute together
 * time-slice and evict each other's caches while they compute; the gate keeps the others asleep
 * (a futex: not runnable, not charged) until a slot is free.
 *
 * Shared state (one segment per host and run, zero-filled = valid): `held` slots of `capacity`,
 * taken by compare-and-swap while nobody waits; waiters queue under a small futex lock and are
 * granted slots least virtual clock first (the rank holding back the model's horizon runs
 * first). A release and a waiter's registration are ordered Dekker-style (held, then nwaiting;
 * nwaiting, then held, all sequentially consistent), so no wake-up is lost. */
#define _GNU_SOURCE
#include "gate.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* program_clocks.c: the host's clock, never the program's virtual one */
__attribute__((visibility("hidden"))) int ms_clock_real(int clock, struct timespec *ts);

enum { IDLE = 0, WAITING = 1, GRANTED = 2 };

typedef struct gate_rank {
    uint32_t state;        /* IDLE, WAITING (in the queue), GRANTED (a slot was taken for it) */
    uint32_t pad;
    int64_t clock_ps;      /* its virtual clock when it queued */
} gate_rank;

typedef struct gate_shm {
    uint32_t lock;         /* the queue's lock: 0 free, 1 taken, 2 taken with sleepers */
    int32_t capacity;      /* slots: set by the first rank, one more per timeout */
    int32_t held;          /* slots taken */
    int32_t nwaiting;      /* ranks in the queue */
    uint32_t progress;     /* bumped by every release: a waiter sees the gate move */
    int32_t size;          /* ranks the segment has room for */
    /* gate_rank ranks[size]; int32_t queue[size]; */
} gate_shm;

static struct {
    gate_shm *g;
    gate_rank *ranks;
    int32_t *queue;
    size_t len;
    int me;
    int holding;
    int64_t timeout_ns;
    ms_gate_stats st;
} G;

#define SC __ATOMIC_SEQ_CST

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);   /* shared: not FUTEX_PRIVATE_FLAG */
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    ms_clock_real(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void lock(void)
{
    uint32_t *l = &G.g->lock;
    for (int spin = 0; spin < 64; spin++) {
        uint32_t c = 0;
        if (__atomic_compare_exchange_n(l, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
        __builtin_ia32_pause();
    }
    while (__atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE) != 0) futex(l, FUTEX_WAIT, 2, NULL);
}

static void unlock(void)
{
    if (__atomic_exchange_n(&G.g->lock, 0, __ATOMIC_RELEASE) == 2) futex(&G.g->lock, FUTEX_WAKE, 1, NULL);
}

/* Under the lock: free slots go to the queued ranks, least clock first (ties: lower rank). */
static void dispatch(void)
{
    gate_shm *g = G.g;
    while (__atomic_load_n(&g->nwaiting, SC) > 0 &&
           __atomic_load_n(&g->held, SC) < __atomic_load_n(&g->capacity, SC)) {
        int n = g->nwaiting, best = 0;
        for (int i = 1; i < n; i++) {
            const gate_rank *a = &G.ranks[G.queue[i]], *b = &G.ranks[G.queue[best]];
            if (a->clock_ps < b->clock_ps || (a->clock_ps == b->clock_ps && G.queue[i] < G.queue[best])) best = i;
        }
        int k = G.queue[best];
        G.queue[best] = G.queue[n - 1];
        __atomic_store_n(&g->nwaiting, n - 1, SC);
        __atomic_add_fetch(&g->held, 1, SC);
        __atomic_store_n(&G.ranks[k].state, GRANTED, __ATOMIC_RELEASE);
        futex(&G.ranks[k].state, FUTEX_WAKE, 1, NULL);
    }
}

static void segment_name(const char *token, char *name, size_t len)
{
    char s[40];
    size_t k = 0;
    for (const char *p = token; *p && k + 1 < sizeof s; p++)   /* a name: letters and digits only */
        if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) s[k++] = *p;
    s[k] = 0;
    snprintf(name, len, "/mpisim-gate-%s", s);
}

int ms_gate_open(const char *token, int rank, int size, int slots, int64_t timeout_ns)
{
    memset(&G, 0, sizeof G);
    if (slots <= 0 || !token || strlen(token) < 16 || rank < 0 || rank >= size) return -1;
    char name[64];
    segment_name(token, name, sizeof name);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    /* the first rank of the host creates it; one that someone else planted is not ours */
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        close(fd);
        return -1;
    }
    size_t len = sizeof(gate_shm) + (size_t)size * (sizeof(gate_rank) + sizeof(int32_t));
    /* every rank asks for the same length, allocated (zero-filled: a valid empty gate) before it is
     * mapped: a sparse segment on a full /dev/shm gives SIGBUS at the first write */
    int e = posix_fallocate(fd, 0, (off_t)len);
    if (e) {
        close(fd);
        if (rank == 0)
            fprintf(stderr, "mpisim: warning: the compute gate's segment cannot be allocated in /dev/shm (%s): the run "
                            "is not gated (ranks beyond the cores may compute at once)\n", strerror(e));
        return -1;
    }
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return -1;
    G.g = m;
    G.len = len;
    G.ranks = (gate_rank *)(G.g + 1);
    G.queue = (int32_t *)(G.ranks + size);
    G.me = rank;
    G.timeout_ns = timeout_ns > 0 ? timeout_ns : 1000000000LL;
    int32_t zero = 0;
    __atomic_compare_exchange_n(&G.g->capacity, &zero, slots, 0, SC, SC);   /* the first rank's */
    zero = 0;
    __atomic_compare_exchange_n(&G.g->size, &zero, size, 0, SC, SC);
    G.st.slots = __atomic_load_n(&G.g->capacity, SC);
    return 0;
}

void ms_gate_unlink(const char *token)
{
    if (!G.g) return;
    char name[64];
    segment_name(token, name, sizeof name);
    shm_unlink(name);   /* ENOENT: another rank of this host did it */
}

void ms_gate_take(int64_t clock_ps)
{
    gate_shm *g = G.g;
    if (!g || G.holding) return;
    if (__atomic_load_n(&g->nwaiting, SC) == 0) {   /* uncontended: one compare-and-swap */
        int32_t h = __atomic_load_n(&g->held, SC);
        while (h < __atomic_load_n(&g->capacity, SC))
            if (__atomic_compare_exchange_n(&g->held, &h, h + 1, 0, SC, SC)) {
                G.holding = 1;
                return;
            }
    }
    gate_rank *me = &G.ranks[G.me];
    lock();
    me->clock_ps = clock_ps;
    __atomic_store_n(&me->state, WAITING, SC);
    G.queue[g->nwaiting] = G.me;
    __atomic_add_fetch(&g->nwaiting, 1, SC);
    dispatch();
    unlock();
    if (__atomic_load_n(&me->state, __ATOMIC_ACQUIRE) == WAITING) {
        int64_t t0 = mono_ns(), moved = t0;
        uint32_t seen = __atomic_load_n(&g->progress, SC);
        G.st.waits++;
        for (;;) {
            struct timespec slice = {0, 50000000};   /* look at the gate's progress every 50 ms */
            futex(&me->state, FUTEX_WAIT, WAITING, &slice);
            if (__atomic_load_n(&me->state, __ATOMIC_ACQUIRE) != WAITING) break;
            int64_t now = mono_ns();
            uint32_t p = __atomic_load_n(&g->progress, SC);
            if (p != seen) {
                seen = p;
                moved = now;
                continue;
            }
            if (now - moved < G.timeout_ns) continue;
            /* Nobody left computation for the whole timeout: the ranks holding the slots may be
             * waiting for this one outside MPI (shared memory, a file, an untimed window).
             * Compute anyway, on a slot added for good. */
            lock();
            if (__atomic_load_n(&me->state, SC) == WAITING) {
                int n = g->nwaiting;
                for (int i = 0; i < n; i++)
                    if (G.queue[i] == G.me) {
                        G.queue[i] = G.queue[n - 1];
                        break;
                    }
                __atomic_store_n(&g->nwaiting, n - 1, SC);
                __atomic_add_fetch(&g->capacity, 1, SC);
                __atomic_add_fetch(&g->held, 1, SC);
                __atomic_store_n(&me->state, GRANTED, SC);
                G.st.timeouts++;
            }
            unlock();
            break;
        }
        G.st.wait_ns += mono_ns() - t0;
    }
    __atomic_store_n(&me->state, IDLE, __ATOMIC_RELAXED);
    G.holding = 1;
}

void ms_gate_leave(void)
{
    gate_shm *g = G.g;
    if (!g || !G.holding) return;
    G.holding = 0;
    __atomic_sub_fetch(&g->held, 1, SC);
    __atomic_add_fetch(&g->progress, 1, SC);
    if (__atomic_load_n(&g->nwaiting, SC) > 0) {
        lock();
        dispatch();
        unlock();
    }
}

void ms_gate_close(void)
{
    if (!G.g) return;
    ms_gate_leave();
    G.st.slots = __atomic_load_n(&G.g->capacity, SC);
    munmap(G.g, G.len);
    G.g = NULL;
}

void ms_gate_get_stats(ms_gate_stats *st)
{
    *st = G.st;
    if (G.g) st->slots = __atomic_load_n(&G.g->capacity, SC);
}
