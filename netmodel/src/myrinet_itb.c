/* In-transit buffers in the myrinet engine (ITB routing, seed 002 sec 4): a packet whose route
 * passes through an in-transit host is ejected there into the NIC's pool (or host memory, or
 * dropped), after detect + DMA time, and reinjected on the host's channel as its characters
 * arrive, competing with the host's own packets with a priority that grows with their queue.
 * The model is explained in engine_myrinet.c. */
#include "myrinet_internal.h"

#include <stdlib.h>

/* ---------------------------------------------------------------- in-transit buffers */

/* Reinject the first packet of hid's in-transit queue: the host's output channel is free. */
static void itb_start(meng *e, int hid)
{
    mhost *ho = &e->host[hid];
    struct mtq q = ho->tq[ho->tqh];
    ho->tqh = (ho->tqh + 1) & (ho->tqcap - 1);
    ho->tqn--;
    myr_sched(e, ent_nictx(e, hid), NM_TIME_NEVER, CL_NORM);
    mchan *x = &e->ch[ho->ch_out];
    mworm *w = &e->w[q.w];
    x->owner = q.w;
    x->owner_h = q.h;
    w->hop[q.h].active = 1;
    w->hop[q.h].avail = e->now;
    if (myr_fifo_push(e, ho->ch_out, q.w, q.h) != 0) return;
    myr_plan(e, ho->ch_out);
    myr_hop_changed(e, q.w, q.h, 0);
}

/* Host hid has in-transit packets queued: whether their turn settles what its channel does now
 * (1: an in-transit packet started, or the channel is busy, or nothing is ready yet and the next
 * try is scheduled) or a local packet may start (0). */
int myr_itb_turn(meng *e, int hid)
{
    mhost *ho = &e->host[hid];
    mchan *x = &e->ch[ho->ch_out];
    if (x->owner >= 0) { myr_sched(e, ent_nictx(e, hid), NM_TIME_NEVER, CL_NORM); return 1; }
    struct mtq *q = &ho->tq[ho->tqh];
    int local = ho->qhead >= 0 && e->w[ho->qhead].ready <= e->now;
    if (q->ready > e->now) {
        if (!local) {
            nm_time_t t = q->ready;
            if (ho->qhead >= 0) t = tmin(t, e->w[ho->qhead].ready);
            myr_sched(e, ent_nictx(e, hid), t, CL_NORM);
            return 1;
        }
    } else {
        /* seed 002 sec 4: local priority rises with the local queue; at itb_local_queue
         * queued packets both kinds alternate */
        int need = e->itb_local_q - ho->nq + 1;
        if (need < 1) need = 1;
        if (!local || ho->it_run < need) {
            if (local) ho->it_run++;
            itb_start(e, hid);
            return 1;
        }
    }
    ho->it_run = 0;
    return 0;
}

/* In-transit packets in the buffer of host channel c whose detect + DMA time has passed: reserve
 * pool space (or host memory, or drop) and queue them for reinjection. */
int myr_itb_detect(meng *e, int c)
{
    mchan *x = &e->ch[c];
    int hid = x->to_host, any = 0, again = 1;
    mhost *ho = &e->host[hid];
    while (again) {
        again = 0;
        for (int i = 0; i < x->fn; i++) {
            whref r = *fifo_at(x, i);
            mhop *hp = &e->w[r.w].hop[r.h];
            if (!hp->itb || hp->rb_dep != NM_TIME_NEVER) continue;
            nm_time_t a = arrival_of(e, hp, 0);
            if (a == NM_TIME_NEVER || a + e->itb_delay > e->now) break;
            hp->rb_dep = e->now;
            e->st.itb_packets++;
            nm_time_t ready = e->now;
            if (ho->itb_used + hp->len <= e->itb_pool) {
                hp->pooled = 1;
                ho->itb_used += hp->len;
                if ((uint64_t)ho->itb_used > e->st.itb_pool_peak) e->st.itb_pool_peak = (uint64_t)ho->itb_used;
            } else if (e->itb_drop) {
                e->st.itb_dropped++;
                myr_drop_worm(e, r.w);
                again = 1;
                break;
            } else {
                e->st.itb_host_stored++;
                ready = e->now + e->itb_host_cost;
            }
            if (ho->tqn == ho->tqcap) {
                int nc = ho->tqcap ? 2 * ho->tqcap : 8;
                struct mtq *nq = malloc((size_t)nc * sizeof *nq);
                if (!nq) { e->oom++; return -1; }
                for (int j = 0; j < ho->tqn; j++) nq[j] = ho->tq[(ho->tqh + j) & (ho->tqcap - 1)];
                free(ho->tq);
                ho->tq = nq;
                ho->tqh = 0;
                ho->tqcap = nc;
            }
            ho->tq[(ho->tqh + ho->tqn++) & (ho->tqcap - 1)] = (struct mtq){r.w, r.h + 1, ready};
            any = 1;
        }
    }
    if (any) myr_host_try_start(e, hid);
    mark(e, c, D_BUF);
    return 0;
}

/* Packet wi, dropped, leaves host hid's in-transit queue (if it is still there). */
void myr_itb_unqueue(meng *e, int hid, int wi)
{
    mhost *ho = &e->host[hid];
    for (int i = 0; i < ho->tqn; i++) {
        struct mtq *q = &ho->tq[(ho->tqh + i) & (ho->tqcap - 1)];
        if (q->w != wi) continue;
        for (int j = i; j > 0; j--) ho->tq[(ho->tqh + j) & (ho->tqcap - 1)] = ho->tq[(ho->tqh + j - 1) & (ho->tqcap - 1)];
        ho->tqh = (ho->tqh + 1) & (ho->tqcap - 1);
        ho->tqn--;
        break;
    }
}
