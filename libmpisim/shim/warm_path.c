/* The way back into the program after a switched-out MPI call (warm_path.h).
 *
 * Beside a CPU-bound job, an empty gap that follows an MPI call during which the rank was
 * switched out took 150-290 ns instead of 30-60 (median; docs/performance.md): whatever ran
 * meanwhile evicted the lines the way back runs. That way is known before the gap starts: the
 * program's code from the call's return address to its next MPI call (the same as last time, in a
 * loop), the PLT stub and GOT slot that call goes through, the next wrapper's entry. Touching
 * them as data brings them into the unified L2 and their page-table entries into the caches, so
 * the gap pays L1 refills instead of misses to memory; where the next call goes into one of our
 * generated wrappers, that call is also made once (the probe, with ms_probing set: the wrapper
 * returns at once), which warms the instruction side and the PLT stub's jump prediction too.
 *
 * The next call is decoded from the call instruction before its return address (x86-64:
 * `call rel32`, `call *disp32(%rip)`), and followed only into address ranges of loaded objects
 * (dl_iterate_phdr at start), so a misdecoded byte never leads to an unmapped address: a dlclose
 * (interposed here) makes the ranges and the learned calls stale, and a call site outside every
 * range has them taken again (at most once per 256 such sites: code a JIT made is never in one).
 * Process state, hidden in libmpisim.so like the rest of the shim's. */
#define _GNU_SOURCE
#include "warm_path.h"
#include "shim.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { WP_WAYS = 256, WP_RANGES = 64, WP_SPAN = 512 };

typedef struct wp_range {
    uintptr_t lo, hi;
    int exec;
} wp_range;

static struct {
    struct {
        uintptr_t site, next;
    } way[WP_WAYS];
    wp_range range[WP_RANGES];
    int nranges;
    volatile int stale;              /* an object was unloaded since */
    unsigned misses;                 /* call sites outside every range */
    uintptr_t wrapper[2 * MS_WRAPPER_COUNT];   /* the generated wrappers' and Fortran bindings' entries, sorted */
    int nwrappers;
} W;

__thread int ms_probing;

static int cmp_uptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static int is_wrapper(uintptr_t a)
{
    return bsearch(&a, W.wrapper, (size_t)W.nwrappers, sizeof W.wrapper[0], cmp_uptr) != NULL;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (int i = 0; i < info->dlpi_phnum && W.nranges < WP_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        W.range[W.nranges++] = (wp_range){lo, lo + ph->p_memsz, (ph->p_flags & PF_X) != 0};
    }
    return 0;
}

void ms_wp_init(void)
{
    memset(&W, 0, sizeof W);
    dl_iterate_phdr(add_object, NULL);
    for (int i = 0; i < MS_WRAPPER_COUNT; i++) W.wrapper[W.nwrappers++] = (uintptr_t)ms_wrapper_entries[i];
    for (int i = 0; i < ms_fortran_entry_count && W.nwrappers < 2 * MS_WRAPPER_COUNT; i++)
        W.wrapper[W.nwrappers++] = (uintptr_t)ms_fortran_entries[i];
    qsort(W.wrapper, (size_t)W.nwrappers, sizeof W.wrapper[0], cmp_uptr);
}

/* The ranges and learned calls again (after a dlclose, or for a call site in an object loaded
 * since). */
static void refresh_ranges(void)
{
    W.stale = 0;
    W.nranges = 0;
    memset(W.way, 0, sizeof W.way);
    dl_iterate_phdr(add_object, NULL);
}

/* The program's (or any library's) dlclose: the object's addresses may be gone after it. */
int dlclose(void *handle)
{
    static int (*real_dlclose)(void *);
    if (!real_dlclose) real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    W.stale = 1;   /* before: the unmapping happens inside */
    return real_dlclose ? real_dlclose(handle) : -1;
}

static unsigned slot_of(uintptr_t site) { return (unsigned)((site * 0x9e3779b97f4a7c15ULL) >> 56) & (WP_WAYS - 1); }

/* The learned call after `site`: its slot or one of the next WP_PROBE (two sites of a loop whose
 * addresses share a slot, which ASLR makes a matter of luck, would otherwise evict each other at
 * every call, and that rank would never be probed: 2 of 6 runs of a 4-rank exchange had a rank
 * with no probe at all, its empty gaps after a switch 100-800 ns instead of 0-50). */
enum { WP_PROBE = 4 };
static int way_of(uintptr_t site, int add)
{
    unsigned k = slot_of(site);
    for (unsigned i = 0; i < WP_PROBE; i++) {
        unsigned j = (k + i) & (WP_WAYS - 1);
        if (W.way[j].site == site) return (int)j;
        if (!W.way[j].site) return add ? (int)j : -1;
    }
    return add ? (int)k : -1;   /* a full neighbourhood: the home slot is taken over */
}

void ms_wp_note(const void *prev_site, const void *site)
{
    uintptr_t p = (uintptr_t)prev_site;
    if (!p) return;
    int k = way_of(p, 1);
    W.way[k].site = p;
    W.way[k].next = (uintptr_t)site;
}

/* Inside a loaded object: [a, a + n) in one range (executable if asked). */
static int mapped(uintptr_t a, size_t n, int exec)
{
    for (int i = 0; i < W.nranges; i++)
        if (a >= W.range[i].lo && a + n <= W.range[i].hi) return !exec || W.range[i].exec;
    return 0;
}

static inline void touch(uintptr_t a) { (void)*(volatile const char *)a; }

static void touch_lines(uintptr_t lo, uintptr_t hi)
{
    for (uintptr_t a = lo & ~(uintptr_t)63; a < hi; a += 64) touch(a);
}

static int32_t rel32(uintptr_t a)
{
    int32_t v;
    memcpy(&v, (const void *)a, sizeof v);
    return v;
}

/* The code a call returning to `ret` went to, through a PLT stub or a GOT slot (touched on the
 * way); 0 when not decodable. *stub: what the call instruction itself calls (the PLT stub, or
 * the callee for a direct call); 0 for an indirect call. */
static uintptr_t call_target(uintptr_t ret, uintptr_t *stub)
{
    *stub = 0;
    if (!mapped(ret - 6, 6, 1)) return 0;
    const unsigned char *c = (const unsigned char *)ret;
    uintptr_t slot = 0, t = 0;
    if (c[-6] == 0xff && c[-5] == 0x15) {   /* call *disp32(%rip): -fno-plt */
        slot = ret + (intptr_t)rel32(ret - 4);
    } else if (c[-5] == 0xe8) {             /* call rel32: to a PLT stub, or direct */
        t = ret + (intptr_t)rel32(ret - 4);
        if (!mapped(t, 16, 1)) return 0;
        touch(t);
        *stub = t;
        const unsigned char *p = (const unsigned char *)t;
        size_t at = !memcmp(p, "\xf3\x0f\x1e\xfa", 4) ? 4 : 0;   /* endbr64 (.plt.sec) */
        if (p[at] == 0xf2) at++;                                /* bnd */
        if (p[at] != 0xff || p[at + 1] != 0x25) return t;       /* not a stub: the callee itself */
        slot = t + at + 6 + (intptr_t)rel32(t + at + 2);
    } else {
        return 0;
    }
    if (!mapped(slot, sizeof(uintptr_t), 0)) return 0;
    uintptr_t target;
    memcpy(&target, (const void *)slot, sizeof target);
    return mapped(target, 64, 1) ? target : 0;
}

int ms_wp_touch(const void *site, const void *wrapper_ret)
{
    uintptr_t w = (uintptr_t)wrapper_ret, s = (uintptr_t)site;
    if (W.stale || (s && !mapped(s, 64, 1) && W.misses++ % 256 == 0)) refresh_ranges();
    if (w && mapped(w, 64, 1)) touch_lines(w, w + 64);
    if (!s || !mapped(s, 64, 1)) return 0;
    int k = way_of(s, 0);
    uintptr_t next = k >= 0 ? W.way[k].next : 0;
    /* the program's code up to its next call (a loop's body), or its first lines */
    touch_lines(s, next > s && next - s <= WP_SPAN && mapped(next, 0, 1) ? next : s + 128);
    if (!next) return 0;
    if (!(next > s && next - s <= WP_SPAN)) touch_lines(next - 64, next);
    uintptr_t stub, wrapper = call_target(next, &stub);
    if (!wrapper) return 0;
    touch_lines(wrapper, wrapper + 128);   /* its prologue and the bypass test */
    /* The probe: where the next call goes into one of our wrappers, go that way once, as the
     * program will (through its PLT stub: the indirect jump's prediction too), with the wrapper
     * set to return at once. Touching brings the lines into the caches; only going the way
     * brings them into the instruction cache and the branch predictors, which a switch-out (or
     * the kernel's mitigations on the shim's system calls) left cold: the call into a wrapper
     * was the largest part of an empty gap beside a CPU-bound job. */
    if (!is_wrapper(wrapper)) return 0;
    ms_probing = 1;
    ((void (*)(void))(stub ? stub : wrapper))();
    ms_probing = 0;
    return 1;
}
