/* A packet's life in the myrinet engine: injection into its source NIC's queue (in injection-time
 * order, nic_send_cost each), the start on the host's channel, the header's request for a
 * switch output and the round-robin grant, reception at the destination (the NIC reception
 * queue, nic_recv_cost) and delivery, the timeout and the drop. The model is explained in
 * engine_myrinet.c. */
#include "myrinet_internal.h"
#include "cm_grow.h"

#include <stdlib.h>
#include <string.h>

static int worm_alloc(meng *e, int nh)
{
    int wi;
    if (e->freew >= 0) {
        wi = e->freew;
        e->freew = e->w[wi].qnext;
    } else {
        size_t oc = e->capw;
        if (cm_grow((void **)&e->w, &e->capw, (size_t)e->nw + 1, sizeof *e->w, 64) < 0) return -1;
        /* hop arrays of worms not used yet must start empty (caphop 0, hop NULL) */
        if (e->capw > oc) memset(e->w + oc, 0, (e->capw - oc) * sizeof *e->w);
        wi = e->nw++;
    }
    mworm *w = &e->w[wi];
    if (w->caphop < nh) {
        mhop *nhp = realloc(w->hop, (size_t)nh * sizeof *nhp);
        if (!nhp) { w->qnext = e->freew; e->freew = wi; return -1; }
        memset(nhp + w->caphop, 0, (size_t)(nh - w->caphop) * sizeof *nhp);
        w->hop = nhp;
        w->caphop = nh;
    }
    return wi;
}

int myr_inject_one(meng *e, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie, uint32_t train,
                      int cb)
{
    if (t < e->now || src < 0 || dst < 0 || src >= e->nhost || dst >= e->nhost || src == dst) return -2;
    const nm_route *rt = nm_route_get(e->topo, src, dst);
    if (rt->nhops < 0 || e->host[src].ch_out < 0) return -3;
    if (payload > (uint64_t)INT32_MAX - 1024) return -5;
    int wi = worm_alloc(e, rt->nchannels);
    if (wi < 0) return -6;
    mworm *w = &e->w[wi];
    w->src = src;
    w->dst = dst;
    w->nh = rt->nchannels;
    w->rt = rt;
    w->payload = payload;
    w->cookie = cookie;
    w->inject = t;
    w->live = 1;
    w->completed = w->delivered = 0;
    w->cb = (uint8_t)cb;
    w->train = train;
    w->tid = e->ntrains;
    w->qnext = -1;
    for (int h = 0; h < w->nh; h++) {
        mhop *hp = &w->hop[h];
        hp->ch = rt->channel[h];
        /* one header byte per node still ahead: route bytes and ITB marks */
        hp->len = (int32_t)(rt->nchannels - 1 - h) + e->type_b + (int32_t)payload + e->crc_b + e->gap_b;
        hp->nplan = 0;
        hp->nseg = 0;
        hp->alo = hp->slo = 0;
        hp->alocnt = hp->slocnt = 0;
        hp->avail = 0;
        hp->rb_dep = NM_TIME_NEVER;
        hp->active = hp->done = hp->in_fifo = 0;
        hp->itb = UNLIKELY(rt->nitb > 0) && h + 1 < w->nh && e->ch[hp->ch].to_host >= 0;
        hp->pooled = 0;
        hp->admitted = (h == w->nh - 1 && e->rxcap == 0) || hp->itb;   /* the ITB pool takes it all */
    }
    /* NIC queue, kept in injection-time order; each packet costs nic_send_cost in turn */
    mhost *ho = &e->host[src];
    int prev = -1, cur = ho->qhead;
    if (ho->qtail >= 0 && e->w[ho->qtail].inject <= t) { prev = ho->qtail; cur = -1; }   /* the usual case */
    while (cur >= 0 && e->w[cur].inject <= t) { prev = cur; cur = e->w[cur].qnext; }
    w->qnext = cur;
    if (prev < 0) ho->qhead = wi; else e->w[prev].qnext = wi;
    if (cur < 0) ho->qtail = wi;
    nm_time_t r = prev < 0 ? ho->base_ready : e->w[prev].ready;
    for (int q = wi; q >= 0; q = e->w[q].qnext) {
        e->w[q].ready = tmax(e->w[q].inject, r) + e->send_cost;
        r = e->w[q].ready;
    }
    e->st.packets_injected++;
    e->nlive++;
    ho->nq++;
    if (ho->qhead == wi && e->ch[ho->ch_out].owner < 0)
        myr_sched(e, ent_nictx(e, src), e->w[wi].ready, CL_NORM);
    return 0;
}

int myr_inject(void *p, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie)
{
    return myr_inject_one(p, src, dst, payload, t, cookie, 0, 1);
}

void myr_worm_free(meng *e, int wi)
{
    mworm *w = &e->w[wi];
    for (int h = 0; h < w->nh; h++)
        if (w->hop[h].in_fifo) { myr_fifo_remove(e, w->hop[h].ch, wi, h); mark(e, w->hop[h].ch, D_BUF); }
    w->gen++;
    w->live = 0;
    e->nlive--;
    w->qnext = e->freew;
    e->freew = wi;
}

static void timeout_trim(meng *e)
{
    while (e->ton > 0) {
        mtout *f = &e->to[e->toh];
        mworm *w = &e->w[f->w];
        if (w->gen == f->gen && w->live && !w->completed) break;
        e->toh = (e->toh + 1) & (e->tocap - 1);
        e->ton--;
    }
    myr_sched(e, ent_timeout(e), e->ton ? e->to[e->toh].dl : NM_TIME_NEVER, CL_NORM);
}

static void maybe_free(meng *e, int wi)
{
    mworm *w = &e->w[wi];
    if (w->completed && w->delivered && w->hop[w->nh - 1].done) myr_worm_free(e, wi);
}

static void deliver(meng *e, int wi, nm_time_t t)
{
    mworm *w = &e->w[wi];
    w->delivered = 1;
    e->st.packets_delivered++;
    e->st.payload_bytes_delivered += w->payload;
    if (w->cb) {   /* a train's other packets make no callback */
        nm_delivery d = {w->src, w->dst, w->payload, w->inject, t, w->cookie, w->train};
        e->ncb++;
        nm_network_deliver_(e->net, &d);
    }
    maybe_free(e, wi);
}

void myr_host_try_start(meng *e, int hid)
{
    mhost *ho = &e->host[hid];
    mchan *x = &e->ch[ho->ch_out];
    if (UNLIKELY(ho->tqn > 0) && myr_itb_turn(e, hid)) return;   /* in-transit packets first, or wait */
    if (x->owner >= 0 || ho->qhead < 0) { myr_sched(e, ent_nictx(e, hid), NM_TIME_NEVER, CL_NORM); return; }
    int wi = ho->qhead;
    mworm *w = &e->w[wi];
    if (w->ready > e->now) { myr_sched(e, ent_nictx(e, hid), w->ready, CL_NORM); return; }
    myr_sched(e, ent_nictx(e, hid), NM_TIME_NEVER, CL_NORM);
    ho->nq--;
    ho->qhead = w->qnext;
    ho->base_ready = w->ready;
    if (ho->qhead < 0) ho->qtail = -1;
    w->qnext = -1;
    x->owner = wi;
    x->owner_h = 0;
    if (w->train > 1 && e->tr_tail) e->tr_host = hid;   /* back to back: myr_train_jump may look */
    w->hop[0].active = 1;
    w->hop[0].avail = e->now;
    if (myr_fifo_push(e, ho->ch_out, wi, 0) != 0) return;
    if (e->timeout > 0) {
        if (e->ton == e->tocap) {
            size_t nc = e->tocap ? 2 * e->tocap : 64;
            mtout *nt = malloc(nc * sizeof *nt);
            if (!nt) { e->oom++; return; }
            for (size_t i = 0; i < e->ton; i++) nt[i] = e->to[(e->toh + i) & (e->tocap - 1)];
            free(e->to);
            e->to = nt;
            e->toh = 0;
            e->tocap = nc;
        }
        e->to[(e->toh + e->ton) & (e->tocap - 1)] = (mtout){wi, w->gen, e->now + e->timeout};
        if (e->ton++ == 0) myr_sched(e, ent_timeout(e), e->now + e->timeout, CL_NORM);
    }
    myr_plan(e, ho->ch_out);
    myr_hop_changed(e, wi, 0, 0);
}

/* ---------------------------------------------------------------- switches and hosts */

void myr_tail_done(meng *e, int c)
{
    mchan *x = &e->ch[c];
    int wi = x->owner, h = x->owner_h;
    mworm *w = &e->w[wi];
    mhop *hp = &w->hop[h];
    hp->done = 1;
    x->chars_final += (uint64_t)hp->len;
    x->owner = -1;
    x->wake = NM_TIME_NEVER;
    mark(e, c, D_TX);
    if (h > 0 && w->hop[h - 1].in_fifo) {   /* its GAP has left the previous buffer */
        myr_fifo_remove(e, w->hop[h - 1].ch, wi, h - 1);
        mark(e, w->hop[h - 1].ch, D_BUF);
    }
    if (h > 0 && w->hop[h - 1].pooled) {     /* left the in-transit buffer */
        w->hop[h - 1].pooled = 0;
        e->host[x->from_host].itb_used -= w->hop[h - 1].len;
    }
    if (h == w->nh - 1) maybe_free(e, wi);
    if (x->from_host >= 0) {
        e->tr_tail = 1;
        myr_host_try_start(e, x->from_host);
        e->tr_tail = 0;
    }
    else if (x->nreq > 0) myr_sched(e, ent_ch(c, EK_ARB), e->now, CL_ARB);
}

void myr_arbitrate(meng *e, int c)
{
    mchan *x = &e->ch[c];
    if (x->owner >= 0 || x->nreq == 0) return;
    int np = e->topo->switches[x->from_sw].nports, best = 0, bd = np + 1;
    for (int i = 0; i < x->nreq; i++) {
        mworm *w = &e->w[x->req[i].w];
        int ip = e->ch[w->hop[x->req[i].h - 1].ch].to_port;
        int d = ((ip - x->rr_last - 1) % np + np) % np;
        if (d < bd) { bd = d; best = i; }
    }
    whref r = x->req[best];
    x->req[best] = x->req[--x->nreq];
    mworm *w = &e->w[r.w];
    x->rr_last = e->ch[w->hop[r.h - 1].ch].to_port;
    x->owner = r.w;
    x->owner_h = r.h;
    w->hop[r.h].active = 1;
    w->hop[r.h].avail = e->now + e->D;
    if (myr_fifo_push(e, c, r.w, r.h) != 0) return;
    myr_plan(e, c);
    myr_hop_changed(e, r.w, r.h, 0);
}

void myr_head_event(meng *e, int c)
{
    mchan *x = &e->ch[c];
    if (x->to_host >= 0) {
        int hid = x->to_host;
        mhost *ho = &e->host[hid];
        if (UNLIKELY(x->nitb > 0) && myr_itb_detect(e, c) != 0) return;
        for (int i = 0; i < x->fn; i++) {
            whref r = *fifo_at(x, i);
            mworm *w = &e->w[r.w];
            mhop *hp = &w->hop[r.h];
            if (UNLIKELY(hp->itb)) continue;   /* in transit: myr_itb_detect */
            if (!hp->admitted) {
                if ((e->rxcap == 0 || ho->slots < e->rxcap) && arrival_of(e, hp, 0) <= e->now) {
                    hp->admitted = 1;   /* its held characters drain now */
                    ho->slots++;
                } else break;
            }
            if (w->completed) continue;
            if (arrival_of(e, hp, end_index(e, hp)) > e->now) break;
            w->completed = 1;
            if (e->recv_cost == 0 && e->rxcap == 0) {
                deliver(e, r.w, e->now);
                if (x->fn <= i || fifo_at(x, i)->w != r.w) i--;   /* freed and removed */
            } else {
                w->rxdone = tmax(e->now, ho->rx_last) + e->recv_cost;
                ho->rx_last = w->rxdone;
                if (ho->rxn == ho->rxcap) {
                    int nc = ho->rxcap ? 2 * ho->rxcap : 8;
                    int *nq = malloc((size_t)nc * sizeof *nq);
                    if (!nq) { e->oom++; break; }
                    for (int j = 0; j < ho->rxn; j++) nq[j] = ho->rxq[(ho->rxh + j) & (ho->rxcap - 1)];
                    free(ho->rxq);
                    ho->rxq = nq;
                    ho->rxh = 0;
                    ho->rxcap = nc;
                }
                ho->rxq[(ho->rxh + ho->rxn++) & (ho->rxcap - 1)] = r.w;
                if (ho->rxn == 1) myr_sched(e, ent_nicrx(e, hid), w->rxdone, CL_NORM);
            }
        }
        timeout_trim(e);
        mark(e, c, D_BUF);
        return;
    }
    for (int i = 0; i < x->fn; i++) {
        whref r = *fifo_at(x, i);
        mworm *w = &e->w[r.w];
        mhop *hp = &w->hop[r.h];
        if (hp->rb_dep != NM_TIME_NEVER) continue;
        hp->rb_dep = e->now;
        int oc = w->hop[r.h + 1].ch;
        mchan *ox = &e->ch[oc];
        if (cm_grow((void **)&ox->req, &ox->capreq, (size_t)ox->nreq + 1, sizeof *ox->req, 4) < 0) {
            e->oom++;
            return;
        }
        ox->req[ox->nreq++] = (whref){r.w, r.h + 1};
        if (ox->owner < 0) myr_sched(e, ent_ch(oc, EK_ARB), e->now, CL_ARB);
        break;
    }
    mark(e, c, D_BUF);
}

void myr_nicrx_event(meng *e, int hid)
{
    mhost *ho = &e->host[hid];
    while (ho->rxn > 0) {
        int wi = ho->rxq[ho->rxh];
        if (e->w[wi].rxdone > e->now) break;
        ho->rxh = (ho->rxh + 1) & (ho->rxcap - 1);
        ho->rxn--;
        if (e->rxcap > 0) ho->slots--;
        deliver(e, wi, e->now);
    }
    myr_sched(e, ent_nicrx(e, hid), ho->rxn ? e->w[ho->rxq[ho->rxh]].rxdone : NM_TIME_NEVER, CL_NORM);
    mark(e, ho->ch_in, D_BUF);   /* a freed slot may admit a held packet */
}

/* ---------------------------------------------------------------- timeouts and drops */

void myr_drop_worm(meng *e, int wi)
{
    mworm *w = &e->w[wi];
    for (int h = 0; h < w->nh; h++) {
        mhop *hp = &w->hop[h];
        mchan *x = &e->ch[hp->ch];
        if (hp->active && !hp->done) {
            myr_seg_cut_time(hp, e->now, x->tau);   /* characters on the wire vanish too */
            x->chars_final += (uint64_t)hp->nplan;
            hp->done = 1;
            x->owner = -1;
            x->wake = NM_TIME_NEVER;
            mark(e, hp->ch, D_TX);
            if (x->from_host >= 0) myr_sched(e, ent_nictx(e, x->from_host), e->now, CL_NORM);
            else if (x->nreq > 0) myr_sched(e, ent_ch(hp->ch, EK_ARB), e->now, CL_ARB);
        }
        if (hp->in_fifo) {
            myr_fifo_remove(e, hp->ch, wi, h);
            mark(e, hp->ch, D_BUF);
        }
        if (h > 0) mark(e, w->hop[h - 1].ch, D_BUF);
        if (hp->pooled) {
            hp->pooled = 0;
            e->host[x->to_host].itb_used -= hp->len;
        }
        if (hp->itb && hp->rb_dep != NM_TIME_NEVER && !w->hop[h + 1].active) {
            myr_itb_unqueue(e, x->to_host, wi);
            myr_sched(e, ent_nictx(e, x->to_host), e->now, CL_NORM);
        } else if (h + 1 < w->nh && hp->rb_dep != NM_TIME_NEVER && !w->hop[h + 1].active) {
            mchan *ox = &e->ch[w->hop[h + 1].ch];
            for (int i = 0; i < ox->nreq; i++)
                if (ox->req[i].w == wi) { ox->req[i] = ox->req[--ox->nreq]; break; }
        }
    }
    mhop *last = &w->hop[w->nh - 1];
    if (last->admitted && e->rxcap > 0) e->host[w->dst].slots--;
    e->st.packets_dropped++;
    e->ncb++;
    /* a train's packet: its last reports the packets delivered unseen too; another leaves the
     * train's callback one packet fewer to report */
    uint32_t train = w->train && w->cb ? w->train : 0;
    if (w->train && !w->cb)
        for (int i = 0; i < e->nw; i++) {
            mworm *o = &e->w[i];
            if (i != wi && o->live && o->src == w->src && o->cookie == w->cookie && o->tid == w->tid && o->train)
                o->train--;
        }
    nm_delivery d = {w->src, w->dst, w->payload, w->inject, e->now, w->cookie, train};
    nm_network_drop_(e->net, &d);
    myr_worm_free(e, wi);
}

void myr_timeout_event(meng *e)
{
    while (e->ton > 0) {
        mtout f = e->to[e->toh];
        mworm *w = &e->w[f.w];
        if (w->gen == f.gen && w->live && !w->completed) {
            if (f.dl > e->now) break;
            myr_drop_worm(e, f.w);
        }
        e->toh = (e->toh + 1) & (e->tocap - 1);
        e->ton--;
    }
    timeout_trim(e);
}
