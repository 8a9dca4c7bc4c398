/* The myrinet engine's event loop: one entity's event at a time from the heap (dispatch), the
 * dirty channels' next events after it, a train's jump when one started, and the watchdog that
 * sees a deadlock (packets in flight, nothing but BEAT / timeout left to happen). The model is
 * explained in engine_myrinet.c. */
#include "myrinet_internal.h"

/* Packets in flight and nothing but BEAT / timeout left to happen: a deadlock. */
static void watchdog(meng *e)
{
    int others = (int)e->heap.n - (e->pos[ent_beat(e)] >= 0) - (e->pos[ent_timeout(e)] >= 0);
    if (e->nlive > 0 && others == 0) {
        if (!e->stuck) {
            if (e->st.deadlocks == 0) e->st.deadlock_time = e->now;
            e->st.deadlocks++;
            e->stuck = 1;
        }
    } else {
        e->stuck = 0;
    }
}

static void dispatch(meng *e, int ent)
{
    if (ent < e->nch * EK_PER_CH) {
        int c = ent / EK_PER_CH;
        mchan *x = &e->ch[c];
        switch (ent % EK_PER_CH) {
        case EK_TX:
            if (x->owner >= 0) {
                mhop *hp = &e->w[x->owner].hop[x->owner_h];
                if (hp->nplan == hp->len && seg_end(&hp->seg[hp->nseg - 1], x->tau) <= e->now) myr_tail_done(e, c);
                else if (e->stepping) {
                    int32_t old = hp->nplan;
                    myr_plan(e, c);
                    myr_hop_changed(e, x->owner, x->owner_h, old);
                }
            }
            mark(e, c, D_TX);
            break;
        case EK_CQ: myr_cq_event(e, c); break;
        case EK_HEAD: myr_head_event(e, c); break;
        case EK_THR: myr_thr_event(e, c); break;
        case EK_ARB: myr_arbitrate(e, c); break;
        }
        return;
    }
    int k = ent - e->nch * EK_PER_CH;
    if (k < 2 * e->nhost) {
        if (k % 2 == 0) myr_host_try_start(e, k / 2);
        else myr_nicrx_event(e, k / 2);
    } else if (ent == ent_timeout(e)) {
        myr_timeout_event(e);
    } else {
        for (int c = 0; c < e->nch; c++) myr_send_ctrl(e, c, CT_BEAT);
        e->next_beat += e->beat;
        myr_sched(e, ent_beat(e), e->next_beat, CL_THR);
    }
}

nm_time_t myr_next_time(const void *p)
{
    const meng *e = p;
    if (e->heap.n == 0 || (e->heap.n == 1 && e->heap.e[0].ent == ent_beat(e))) return NM_TIME_NEVER;   /* idle */
    return e->heap.e[0].t;
}

int myr_run_until(void *p, nm_time_t limit)
{
    meng *e = p;
    uint64_t over0 = e->overflow, oom0 = e->oom, dl0 = e->st.deadlocks;
    while (e->heap.n > 0) {
        int ent = e->heap.e[0].ent;
        nm_time_t t = e->heap.e[0].t;
        if (t >= limit) break;
        /* only the BEAT clock left: the network is idle */
        if (limit == NM_TIME_NEVER && e->heap.n == 1 && ent == ent_beat(e)) break;
        myr_hremove(e, ent);
        e->now = t;
        dispatch(e, ent);
        myr_flush_dirty(e);
        e->st.events++;
        if (UNLIKELY(e->tr_host >= 0)) {
            int h = e->tr_host;
            e->tr_host = -1;
            myr_train_jump(e, h, limit);
        }
        if ((e->nlive > 0 && e->heap.n <= 2) || e->stuck) watchdog(e);
    }
    if ((e->nlive > 0 && e->heap.n <= 2) || e->stuck) watchdog(e);
    if (limit != NM_TIME_NEVER && limit > e->now) e->now = limit;
    if (e->oom != oom0) return -2;
    if (e->overflow != over0) return -1;
    return e->st.deadlocks != dl0 ? -3 : 0;
}

/* nm_network_run_instants: the same events in the same order as myr_run_until(t + 1) for each
 * instant t, stopping after an instant whose events failed (as that call would return). */
int myr_run_instants(void *p, nm_time_t limit, const nm_time_t *stop)
{
    meng *e = p;
    uint64_t over0 = e->overflow, oom0 = e->oom, dl0 = e->st.deadlocks;
    int any = 0;
    nm_time_t last = 0;
    while (e->heap.n > 0) {
        int ent = e->heap.e[0].ent;
        nm_time_t t = e->heap.e[0].t;
        if (any && t > last && (e->oom != oom0 || e->overflow != over0 || e->st.deadlocks != dl0)) break;
        if (t >= limit || t >= *stop) break;
        if (e->heap.n == 1 && ent == ent_beat(e)) break;   /* only the BEAT clock: idle */
        myr_hremove(e, ent);
        e->now = t;
        last = t;
        any = 1;
        dispatch(e, ent);
        myr_flush_dirty(e);
        e->st.events++;
        if (UNLIKELY(e->tr_host >= 0)) {
            int h = e->tr_host;
            e->tr_host = -1;
            if (myr_train_jump(e, h, tmin(limit, *stop))) last = e->now;
        }
        if ((e->nlive > 0 && e->heap.n <= 2) || e->stuck) watchdog(e);
    }
    if ((e->nlive > 0 && e->heap.n <= 2) || e->stuck) watchdog(e);
    if (any && last + 1 > e->now) e->now = last + 1;
    if (e->oom != oom0) return -2;
    if (e->overflow != over0) return -1;
    return e->st.deadlocks != dl0 ? -3 : 0;
}
