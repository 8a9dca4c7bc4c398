/* Trains in the myrinet engine: a train is many packets of one size from one host to another,
 * each a worm of its own, only the last making a callback; alone in the network its back-to-back
 * packets soon repeat one pattern, and myr_train_jump moves the whole state many periods ahead at
 * once (exactly: see below). Also the train's injection and its cut (nm_network_train_cut).
 * The model is explained in engine_myrinet.c. */
#include "myrinet_internal.h"
#include "cm_grow.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- trains */

/* A train's back-to-back packets, alone in the network, soon repeat the same pattern: the state
 * of everything (packets in flight, buffers, flow control, pending events) at one packet's start
 * is the state at the previous packet's start shifted by one period P. From then on the engine is
 * periodic until something differs: so myr_train_jump moves the whole state m periods ahead at once
 * (the packets in flight take the names of the packets m places later; m packets are counted
 * delivered, m periods of characters counted on each channel). It is exact because the engine's
 * behaviour depends on times only through differences and the order of pending events, both of
 * which the signature compares. It splits (does not jump, or jumps less far) at the first packet
 * something else could interact with: any other packet anywhere in the network, an injection or
 * callback during the period compared, a packet of the train not yet ready when its turn comes or
 * not the same as the others, a packet that makes a callback (the train's last), the BEAT, the
 * end of the run call (later injections and callbacks come from there). */
typedef struct mtrain {
    int64_t *sig;
    size_t sn, cap;
    int valid;
    nm_time_t t;                       /* the signed packet start */
    uint64_t inj, del, pay, cb, ovf, oom;
    uint64_t *chars;                   /* chars_final of the path's channels, both directions */
    int nchars;
} mtrain;

static int sput(meng *e, int64_t v)
{
    if (cm_grow((void **)&e->sbuf, &e->scap, e->sn + 1, sizeof *e->sbuf, 256) < 0) return -1;
    e->sbuf[e->sn++] = v;
    return 0;
}
static int tw_push(meng *e, int wi)
{
    if (cm_grow((void **)&e->tw, &e->captw, (size_t)e->ntw + 1, sizeof *e->tw, 16) < 0) return -1;
    e->tw[e->ntw++] = wi;
    return 0;
}
static int tw_index(const meng *e, int wi, int n)
{
    for (int i = 0; i < n; i++)
        if (e->tw[i] == wi) return i;
    return -1;
}
static int on_path(const nm_route *rt, int c)
{
    for (int h = 0; h < rt->nchannels; h++)
        if ((rt->channel[h] | 1) == (c | 1)) return 1;
    return 0;
}

/* The state relative to now into e->sbuf, and the stream's packets in flight, oldest first, into
 * e->tw; -1 when anything but host hid's stream of packets like w0 is in the network. */
static int train_sign(meng *e, int hid, const mworm *w0)
{
    const nm_route *rt = w0->rt;
    nm_time_t now = e->now;
    e->sn = 0;
    e->ntw = 0;
    for (int h = rt->nchannels - 1; h >= 0; h--) {   /* a path's buffers are FIFOs: oldest first */
        mchan *x = &e->ch[rt->channel[h]];
        for (int i = 0; i < x->fn; i++) {
            int wi = fifo_at(x, i)->w;
            const mworm *w = &e->w[wi];
            if (w->src != hid || w->rt != rt || w->payload != w0->payload) return -1;
            if (tw_index(e, wi, e->ntw) < 0 && tw_push(e, wi) != 0) return -1;
        }
    }
    if (e->nlive != (int64_t)e->host[hid].nq + e->ntw || e->stuck) return -1;
    int r = e->ntw, bad = 0;
#define REL(t) ((t) == NM_TIME_NEVER ? INT64_MIN : (t) - now)
#define CLAMP(t) ((t) <= now ? 0 : (t) - now)
#define PUT(v) do { if (sput(e, (int64_t)(v)) != 0) return -1; } while (0)
#define IDX(wi) (tw_index(e, (wi), r) < 0 ? (bad = 1) : tw_index(e, (wi), r))
    PUT(r);
    for (int j = 0; j < r; j++) {
        const mworm *w = &e->w[e->tw[j]];
        PUT(w->completed | w->delivered << 1);
        for (int h = 0; h < w->nh; h++) {
            const mhop *hp = &w->hop[h];
            PUT(hp->active | hp->done << 1 | hp->in_fifo << 2 | hp->admitted << 3 | hp->pooled << 4 | hp->itb << 5);
            PUT(hp->len); PUT(hp->nplan); PUT(hp->nseg); PUT(hp->alo); PUT(hp->slo); PUT(hp->alocnt); PUT(hp->slocnt);
            PUT(hp->active ? CLAMP(hp->avail) : 0);
            PUT(REL(hp->rb_dep));
            for (int i = 0; i < hp->nseg; i++) { PUT(hp->seg[i].t0 - now); PUT(hp->seg[i].k0); PUT(hp->seg[i].n); }
        }
    }
    for (int h = 0; h < rt->nchannels; h++)
        for (int d = 0; d < 2; d++) {
            const mchan *x = &e->ch[rt->channel[h] ^ d];
            PUT(x->owner < 0 ? -1 : IDX(x->owner)); PUT(x->owner_h); PUT(x->stopped);
            PUT(CLAMP(x->ctrl_end)); PUT(REL(x->wake)); PUT(x->nreq);
            for (int i = 0; i < x->nreq; i++) { PUT(IDX(x->req[i].w)); PUT(x->req[i].h); }
            PUT(x->rr_last); PUT(x->cqn);
            for (int i = 0; i < x->cqn; i++) {
                const mctrl *q = &x->cq[(x->cqh + i) & (CQ_CAP - 1)];
                PUT(q->t - now); PUT(q->type);
            }
            PUT(x->fn);
            for (int i = 0; i < x->fn; i++) { PUT(IDX(fifo_at((mchan *)x, i)->w)); PUT(fifo_at((mchan *)x, i)->h); }
            PUT(x->stop_sent | x->over << 1); PUT(x->nitb); PUT(x->dirty);
        }
    for (int k = 0; k < 2; k++) {
        const mhost *ho = &e->host[k ? w0->dst : hid];
        PUT(ho->slots); PUT(ho->rxn); PUT(ho->tqn); PUT(ho->it_run);
    }
    for (size_t i = 0; i < e->ton; i++) {
        const mtout *f = &e->to[(e->toh + i) & (e->tocap - 1)];
        const mworm *w = &e->w[f->w];
        if (w->gen != f->gen || !w->live || w->completed) continue;   /* stale: passed over */
        PUT(IDX(f->w)); PUT(f->dl - now);
    }
    /* pending events in their order (time, class, sequence), each one of the stream's */
    size_t h0 = e->sn;
    for (size_t i = 0; i < e->heap.n; i++) {
        const hslot *x = &e->heap.e[i];
        int ent = x->ent;
        if (ent == ent_beat(e)) continue;
        if (ent < e->nch * EK_PER_CH) { if (!on_path(rt, ent / EK_PER_CH)) return -1; }
        else if (ent < ent_timeout(e)) {
            int k = (ent - e->nch * EK_PER_CH) / 2;
            if (k != hid && k != w0->dst) return -1;
        }
        PUT(i);   /* placeholder: the slot's index, sorted below */
    }
    int64_t *v = e->sbuf + h0;
    size_t nv = e->sn - h0;
    for (size_t i = 1; i < nv; i++) {   /* insertion sort: a handful of events */
        int64_t c = v[i];
        size_t j = i;
        while (j > 0 && myr_evq_less(&e->heap.e[c], &e->heap.e[v[j - 1]])) { v[j] = v[j - 1]; j--; }
        v[j] = c;
    }
    for (size_t i = 0; i < nv; i++) {
        const hslot *x = &e->heap.e[e->sbuf[h0 + i]];
        PUT(x->ent); PUT(x->t - now); PUT((int64_t)(x->k >> 56));
    }
#undef REL
#undef CLAMP
#undef PUT
#undef IDX
    return bad ? -1 : 0;
}

/* Called after an event in which a train's packet started on host hid's channel right behind the
 * previous one; may move the state m periods ahead (see above). Returns 1 when it did. */
int myr_train_jump(meng *e, int hid, nm_time_t lim)
{
    mhost *ho = &e->host[hid];
    mchan *x = &e->ch[ho->ch_out];
    if (e->stepping || e->rxcap || e->recv_cost || x->owner < 0 || x->owner_h != 0) return 0;
    mworm *wq = &e->w[x->owner];
    const nm_route *rt = wq->rt;
    if (rt->nitb > 0) return 0;
    if (!ho->tr && !(ho->tr = calloc(1, sizeof *ho->tr))) return 0;
    mtrain *tr = ho->tr;
    if (train_sign(e, hid, wq) != 0 || e->tw[e->ntw - 1] != x->owner) { tr->valid = 0; return 0; }
    int r = e->ntw, nc2 = 2 * rt->nchannels;
    int match = tr->valid && e->now > tr->t && tr->sn == e->sn && !memcmp(tr->sig, e->sbuf, e->sn * sizeof *e->sbuf) &&
                tr->nchars == nc2 && tr->inj == e->st.packets_injected && tr->cb == e->ncb && tr->ovf == e->overflow &&
                tr->oom == e->oom && e->st.packets_delivered == tr->del + 1 &&
                e->st.payload_bytes_delivered == tr->pay + wq->payload;
    if (match) {
        nm_time_t P = e->now - tr->t;
        int64_t mt = lim == NM_TIME_NEVER ? INT64_MAX : (lim - 1 - e->now) / P;   /* now + m P < lim */
        if (e->beat > 0) { int64_t b = (e->next_beat - 1 - e->now) / P; if (b < mt) mt = b; }
        for (int qi = ho->qhead; qi >= 0 && e->ntw - r < mt; qi = e->w[qi].qnext) {
            const mworm *q = &e->w[qi];
            if (q->dst != wq->dst || q->rt != rt || q->payload != wq->payload || tw_push(e, qi) != 0) break;
        }
        int64_t m = 0, n = e->ntw - r;
        /* packet S[m] (tw[m]) is delivered unseen, packet Q_{m+1} (tw[r + m]) starts at now + (m+1) P */
        while (m < mt && m < n && !e->w[e->tw[m]].cb && e->w[e->tw[r + m]].ready <= e->now + (m + 1) * P) m++;
        if (m > 0) {
            nm_time_t D = (nm_time_t)m * P;
            for (int i = 0; i < r; i++) {   /* in flight: names m places later, times D later */
                mworm *w = &e->w[e->tw[i]];
                const mworm *s2 = &e->w[e->tw[i + m]];
                w->cookie = s2->cookie;
                w->inject = s2->inject;
                w->ready = s2->ready;
                w->cb = s2->cb;
                w->train = s2->train;
                w->tid = s2->tid;
                for (int h = 0; h < w->nh; h++) {
                    mhop *hp = &w->hop[h];
                    if (hp->active) hp->avail += D;
                    if (hp->rb_dep != NM_TIME_NEVER) hp->rb_dep += D;
                    for (int i2 = 0; i2 < hp->nseg; i2++) hp->seg[i2].t0 += D;
                }
            }
            for (int k = 0; k < nc2; k++) {
                mchan *c = &e->ch[rt->channel[k / 2] ^ (k & 1)];
                if (c->ctrl_end > e->now) c->ctrl_end += D;
                if (c->wake != NM_TIME_NEVER) c->wake += D;
                for (int i = 0; i < c->cqn; i++) c->cq[(c->cqh + i) & (CQ_CAP - 1)].t += D;
                c->chars_final += (uint64_t)m * (c->chars_final - tr->chars[k]);
            }
            for (size_t i = 0; i < e->ton; i++) e->to[(e->toh + i) & (e->tocap - 1)].dl += D;
            for (size_t i = 0; i < e->heap.n; i++)
                if (e->heap.e[i].ent != ent_beat(e)) e->heap.e[i].t += D;
            myr_evq_heapify_ctx(&e->heap, e->pos);   /* the BEAT stayed */
            e->st.packets_delivered += (uint64_t)m;
            e->st.payload_bytes_delivered += (uint64_t)m * wq->payload;
            for (int64_t j = 0; j < m; j++) {   /* Q_1..Q_m were run as the shifted packets */
                int qi = ho->qhead;
                ho->qhead = e->w[qi].qnext;
                e->w[qi].qnext = -1;
                ho->nq--;
                myr_worm_free(e, qi);
            }
            if (ho->qhead < 0) ho->qtail = -1;
            ho->base_ready = e->w[e->tw[r - 1]].ready;
            e->now += D;
            tr->valid = 0;
            return 1;
        }
    }
    /* this start is the reference for the next one */
    if (tr->cap < e->sn) {
        int64_t *ns = realloc(tr->sig, e->sn * sizeof *ns);
        if (!ns) { tr->valid = 0; return 0; }
        tr->sig = ns;
        tr->cap = e->sn;
    }
    if (tr->nchars != nc2) {
        uint64_t *nch = realloc(tr->chars, (size_t)nc2 * sizeof *nch);
        if (!nch) { tr->valid = 0; return 0; }
        tr->chars = nch;
        tr->nchars = nc2;
    }
    memcpy(tr->sig, e->sbuf, e->sn * sizeof *e->sbuf);
    tr->sn = e->sn;
    for (int k = 0; k < nc2; k++) tr->chars[k] = e->ch[rt->channel[k / 2] ^ (k & 1)].chars_final;
    tr->t = e->now;
    tr->inj = e->st.packets_injected;
    tr->del = e->st.packets_delivered;
    tr->pay = e->st.payload_bytes_delivered;
    tr->cb = e->ncb;
    tr->ovf = e->overflow;
    tr->oom = e->oom;
    tr->valid = 1;
    return 0;
}

/* A train is its packets, each a worm of its own; only the last makes a callback. myr_train_jump
 * runs the back-to-back ones in a few events when nothing else is in the network. */
int myr_inject_train(void *p, int src, int dst, uint64_t payload, uint32_t count, nm_time_t t,
                            nm_time_t period, uint64_t cookie)
{
    ((meng *)p)->ntrains++;
    for (uint32_t i = 0; i < count; i++) {
        int rc = myr_inject_one(p, src, dst, payload, t + (nm_time_t)i * period, cookie, count, i + 1 == count);
        if (rc < 0) return rc;   /* only the first can fail (out of memory aside) */
    }
    return 0;
}

/* nm_network_train_cut: the train's packets still in the NIC queue beyond the first `keep` leave
 * it (the queue's later packets get their ready times again); the rest of the train is keep. */
int myr_train_cut(void *p, int src, uint64_t cookie, uint32_t keep, uint32_t *delivered)
{
    meng *e = p;
    mhost *ho = &e->host[src];
    uint32_t count = 0, queued = 0, tid = 0;
    int found = 0;
    for (int q = ho->qhead; q >= 0; q = e->w[q].qnext) {   /* the latest train with that cookie */
        const mworm *w = &e->w[q];
        if (w->cookie == cookie && w->train) { tid = w->tid; found = 1; }   /* the last: queued by time */
    }
    if (!found) return -1;   /* all of it has left the NIC */
#define MEMBER(w) ((w)->live && (w)->src == src && (w)->cookie == cookie && (w)->train && (w)->tid == tid)
    for (int q = ho->qhead; q >= 0; q = e->w[q].qnext)
        if (MEMBER(&e->w[q])) { count = e->w[q].train; queued++; }
    uint32_t started = count - queued, flying = 0;
    if (keep < started) return -1;
    for (int wi = 0; wi < e->nw; wi++)   /* the started ones still in the network */
        if (MEMBER(&e->w[wi]) && e->w[wi].hop[0].active && !e->w[wi].delivered) flying++;
    *delivered = started - flying;
    uint32_t rest = keep - *delivered;   /* the kept packets the callback will report */
    for (int wi = 0; wi < e->nw; wi++)
        if (MEMBER(&e->w[wi]) && e->w[wi].hop[0].active) e->w[wi].train = rest;
    uint32_t seen = 0;
    int prev = -1, youngest = -1;
    for (int q = ho->qhead; q >= 0;) {
        mworm *w = &e->w[q];
        int next = w->qnext;
        if (MEMBER(w) && w->train == count) {
            if (started + seen < keep) {   /* kept */
                w->train = rest;
                youngest = q;
                seen++;
                prev = q;
            } else {                       /* withdrawn */
                if (prev < 0) ho->qhead = next; else e->w[prev].qnext = next;
                w->qnext = -1;
                ho->nq--;
                e->st.packets_injected--;
                myr_worm_free(e, q);
            }
        } else {
            prev = q;
        }
        q = next;
    }
    ho->qtail = prev;
    nm_time_t r = ho->base_ready;
    for (int q = ho->qhead; q >= 0; q = e->w[q].qnext) {   /* ready times behind the gap */
        e->w[q].ready = tmax(e->w[q].inject, r) + e->send_cost;
        r = e->w[q].ready;
    }
    if (youngest < 0 && rest > 0) {   /* all kept ones started: the youngest in flight, by its start */
        nm_time_t best = -1;
        for (int wi = 0; wi < e->nw; wi++) {
            mworm *w = &e->w[wi];
            if (MEMBER(w) && w->hop[0].active && !w->delivered && w->hop[0].nseg > 0 && w->hop[0].seg[0].t0 >= best) {
                best = w->hop[0].seg[0].t0;
                youngest = wi;
            }
        }
    }
#undef MEMBER
    if (youngest >= 0 && rest > 0) e->w[youngest].cb = 1;
    if (ho->qhead >= 0 && e->ch[ho->ch_out].owner < 0) myr_sched(e, ent_nictx(e, src), e->w[ho->qhead].ready, CL_NORM);
    else if (ho->qhead < 0) myr_sched(e, ent_nictx(e, src), NM_TIME_NEVER, CL_NORM);
    return 0;
}

void myr_train_free(mtrain *tr)
{
    if (!tr) return;
    free(tr->sig);
    free(tr->chars);
    free(tr);
}
