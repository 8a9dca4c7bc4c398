/* Buffer identities for the host model (libmpisim/model/README.md, "Buffer identities").
 *
 * The host model keys first touches and its registration cache by buffer address. A real address
 * says where malloc put a buffer, and that depends on everything else in the heap: the real MPI's
 * own allocations among them, which follow its message timing. A program that frees buffers and
 * allocates new ones thus got new buffers on memory an earlier buffer had used in one run and on
 * other memory in the next: different virtual times (seed003-ecard, apps/patterns).
 *
 * The shim reports an identity instead: a buffer inside memory the program passed to MPI before
 * and has not freed since keeps its address (plus that memory's offset); any other buffer is new
 * memory to the model. free(), realloc() and munmap() drop what they release; a new buffer on
 * memory released since its identities were given gets a fresh slice of identities (a
 * generation: the address plus generation x 2^47), so it never meets the model's state of what
 * was there, whatever malloc did. The model thus sees a freed buffer as gone (MPICH-GM's
 * registration cache drops a registration when its memory is freed; the model's stale entries
 * are never found again and age out of its LRU), and memory allocated again as new, its first
 * touches charged again (as for memory the allocator got back from the OS; memory it kept
 * would not fault again, but which it kept is the allocator's choice, not the program's).
 * After 2^17 - 1 generations new buffers are reported as unknown (0: touched and cached).
 *
 * The ranges are kept per process (one rank), sorted, behind a spin lock: free() may come from
 * any thread. Nothing here allocates while holding the lock. */
#define _GNU_SOURCE
#include "shim.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define GEN_SHIFT 47
#define GEN_MAX ((UINT64_C(1) << (64 - GEN_SHIFT)) - 1)

typedef struct { uint64_t s, e, delta; } id_range;   /* raw [s, e) reported as [s, e) + delta */
typedef struct { id_range *v; size_t n, cap; } range_set;

static range_set live;   /* memory passed to MPI and not released since */
static range_set dead;   /* released in the current generation */
static uint64_t gen;     /* the current generation */
static atomic_size_t nlive;
/* the live ranges' hull [lo, hi): most frees are of other memory and need no lock */
static _Atomic uint64_t live_lo = UINT64_MAX, live_hi;
static atomic_flag lock = ATOMIC_FLAG_INIT;

static void take(void) { while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) {} }
static void give(void) { atomic_flag_clear_explicit(&lock, memory_order_release); }

/* ---- the real allocator (the next one after the shim: glibc's, or the program's own) ---- */
typedef void (*free_fn)(void *);
typedef void *(*realloc_fn)(void *, size_t);
typedef size_t (*usable_fn)(void *);
typedef int (*munmap_fn)(void *, size_t);
static free_fn real_free;
static realloc_fn real_realloc;
static usable_fn real_usable;
static munmap_fn real_munmap;
static _Atomic int resolving;
/* glibc's own, for the frees and reallocs dlsym makes while the next allocator is looked up */
extern void __libc_free(void *);
extern void *__libc_realloc(void *, size_t);

static void resolve(void)
{
    if (real_free || atomic_exchange(&resolving, 1)) return;
    real_realloc = (realloc_fn)(uintptr_t)dlsym(RTLD_NEXT, "realloc");
    real_usable = (usable_fn)(uintptr_t)dlsym(RTLD_NEXT, "malloc_usable_size");
    real_munmap = (munmap_fn)(uintptr_t)dlsym(RTLD_NEXT, "munmap");
    real_free = (free_fn)(uintptr_t)dlsym(RTLD_NEXT, "free");
}

/* Looked up when the shim is loaded, before the program runs: a lookup made later, from inside a
 * free, ran into dlsym freeing a pending dlerror() string (libomp's failed dlopen) and recursed. */
__attribute__((constructor)) static void bufid_resolve_at_load(void) { resolve(); }

/* first index whose range ends after a */
static size_t first_after(const range_set *r, uint64_t a)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->v[mid].e <= a) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int overlaps(const range_set *r, uint64_t s, uint64_t e)
{
    size_t k = first_after(r, s);
    return k < r->n && r->v[k].s < e;
}

/* room for `need` ranges in r, with the lock held: grows it without the lock (malloc and free
 * may come back here), so the caller looks again afterwards. 0 on no memory. */
static int reserve(range_set *r, size_t need)
{
    while (r->cap < need) {
        size_t nc = r->cap ? 2 * r->cap : 64;
        while (nc < need) nc *= 2;
        give();
        id_range *v = malloc(nc * sizeof *v);
        take();
        if (!v) return 0;
        id_range *old = v;
        if (r->cap < nc) {   /* else another thread grew it meanwhile */
            if (r->n) memcpy(v, r->v, r->n * sizeof *v);
            old = r->v;
            r->v = v;
            r->cap = nc;
        }
        give();
        free(old);
        take();
    }
    return 1;
}

/* the hull only grows (a stale wide hull costs a lock, never a missed release) */
static void widen(uint64_t s, uint64_t e)
{
    if (s < atomic_load_explicit(&live_lo, memory_order_relaxed)) atomic_store_explicit(&live_lo, s, memory_order_relaxed);
    if (e > atomic_load_explicit(&live_hi, memory_order_relaxed)) atomic_store_explicit(&live_hi, e, memory_order_relaxed);
}

static void insert(range_set *r, id_range x)
{
    size_t k = first_after(r, x.s);
    memmove(r->v + k + 1, r->v + k, (r->n - k) * sizeof *r->v);
    r->v[k] = x;
    r->n++;
}

/* Drops the live ranges that overlap [s, e); those of the current generation become dead. */
static void release(uint64_t s, uint64_t e)
{
    if (e <= s || atomic_load_explicit(&nlive, memory_order_relaxed) == 0) return;
    take();
    size_t k, m;
    for (;;) {
        k = first_after(&live, s);
        size_t cur = 0;
        for (m = k; m < live.n && live.v[m].s < e; m++) cur += live.v[m].delta == gen << GEN_SHIFT;
        if (dead.n + cur <= dead.cap) break;
        if (!reserve(&dead, dead.n + cur)) {
            give();
            return;
        }
    }
    for (size_t i = k; i < m; i++)
        if (live.v[i].delta == gen << GEN_SHIFT) insert(&dead, (id_range){live.v[i].s, live.v[i].e, 0});
    memmove(live.v + k, live.v + m, (live.n - m) * sizeof *live.v);
    live.n -= m - k;
    atomic_store_explicit(&nlive, live.n, memory_order_relaxed);
    give();
}

uint64_t ms_buffer_identity(const void *buf, uint64_t bytes)
{
    uint64_t s = (uint64_t)(uintptr_t)buf, len = bytes ? bytes : 1, e = s + len;
    if (!buf || e < s) return 0;
    take();
    size_t k = first_after(&live, s);
    uint64_t id;
    if (k < live.n && live.v[k].s < e) {
        /* inside memory passed before: its identity; the ranges it spans become one */
        uint64_t delta = live.v[k].delta, ns = live.v[k].s < s ? live.v[k].s : s, ne = e;
        size_t m = k;
        while (m < live.n && live.v[m].s < e) {
            if (live.v[m].e > ne) ne = live.v[m].e;
            m++;
        }
        memmove(live.v + k + 1, live.v + m, (live.n - m) * sizeof *live.v);
        live.n -= m - k - 1;
        live.v[k] = (id_range){ns, ne, delta};
        widen(ns, ne);
        id = s + delta;
    } else {
        /* new memory: on memory released in this generation, the next generation */
        if (overlaps(&dead, s, e)) {
            dead.n = 0;
            gen++;
        }
        if (gen > GEN_MAX || !reserve(&live, live.n + 1)) {
            give();
            return 0;
        }
        insert(&live, (id_range){s, e, gen << GEN_SHIFT});
        atomic_store_explicit(&nlive, live.n, memory_order_relaxed);
        widen(s, e);
        id = s + (gen << GEN_SHIFT);
    }
    give();
    return id;
}

/* ---- the interposed calls ---- */
void free(void *p)
{
    resolve();
    if (!real_free) {   /* inside the lookup: glibc's own memory */
        __libc_free(p);
        return;
    }
    uint64_t s = (uint64_t)(uintptr_t)p;
    if (p && real_usable && atomic_load_explicit(&nlive, memory_order_relaxed) &&
        s < atomic_load_explicit(&live_hi, memory_order_relaxed)) {
        uint64_t e = s + real_usable(p);
        if (e > atomic_load_explicit(&live_lo, memory_order_relaxed)) release(s, e);
    }
    real_free(p);
}

void *realloc(void *p, size_t n)
{
    resolve();
    if (!real_realloc) return __libc_realloc(p, n);
    uint64_t s = (uint64_t)(uintptr_t)p, old = p && real_usable ? real_usable(p) : 0;
    void *q = real_realloc(p, n);
    if (p && q) {
        if (q != p) release(s, s + old);   /* moved: the old memory is released */
        else if (real_usable && real_usable(q) < old) release(s + real_usable(q), s + old);
    }
    return q;
}

int munmap(void *addr, size_t len)
{
    resolve();
    uint64_t s = (uint64_t)(uintptr_t)addr;
    release(s, s + len);
    return real_munmap ? real_munmap(addr, len) : -1;
}
