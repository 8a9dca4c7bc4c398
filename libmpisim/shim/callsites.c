/* Call sites (split from shim.c): totals per (function, program frames), as mpiP reports them. */
#define _GNU_SOURCE
#include "shim_state.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

static uint64_t cs_hash(int fn, const uint64_t *pcs, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)fn;
    for (int i = 0; i < n; i++) {
        h ^= pcs[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdULL;
    }
    return h | 1;
}

void cs_add(int fn, uint64_t bytes, int64_t time_ps)
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
void cs_text(const uint64_t *pcs, int n, char *out, size_t len)
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

void capture_callsite(void *ret, int skip)
{
    if (S.cs_depth <= 1) {
        S.cur_pcs[0] = (uint64_t)(uintptr_t)ret;
        S.cur_npcs = 1;
        return;
    }
    /* deeper sites: walk the stack with libunwind; frames 0-1 are this function and ms_enter,
     * frame 2 is the wrapper, whose return address is `ret`; `skip` more for a Fortran binding
     * in between */
    void *frames[MS_CS_MAX_DEPTH + 5];
    int n = unw_backtrace(frames, S.cs_depth + 5);
    int k = 0, first = 3 + skip;
    /* the frame of `ret` itself where the walk finds it: a clock read (MPI_Wtime, the program's
     * gettimeofday) enters through one more function of the shim than a wrapper does */
    for (int i = 2; i < n && i < 6; i++)
        if (frames[i] == ret) {
            first = i;
            break;
        }
    for (int i = first; i < n && k < S.cs_depth; i++) S.cur_pcs[k++] = (uint64_t)(uintptr_t)frames[i];
    if (k == 0) S.cur_pcs[k++] = (uint64_t)(uintptr_t)ret;
    S.cur_npcs = k;
}

void send_callsites(int also_trace)
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
        if (also_trace) put_msg(MS_MSG_SITE, &m, sizeof m, NULL, 0);
        else wire_put(MS_MSG_SITE, &m, sizeof m, NULL, 0);
    }
}
