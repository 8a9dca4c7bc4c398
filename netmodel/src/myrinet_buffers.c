/* The myrinet engine's slack buffers and flow control (seed 000 sec 2): each channel's receiving
 * buffer as a FIFO of packets, its occupancy at any instant from the packets' segments, the
 * instants it crosses the water marks (found arithmetically, not character by character), the
 * STOP / GO / BEAT control characters they send on the reverse channel and what those do to the
 * transmitter's plan; and, for every channel whose state changed in an event, when its next
 * transmitter, header and water-mark events are. The model is explained in engine_myrinet.c. */
#include "myrinet_internal.h"

#include <stdlib.h>

/* ---------------------------------------------------------------- buffer FIFOs */

int myr_fifo_push(meng *e, int c, int w, int h)
{
    mchan *x = &e->ch[c];
    if (x->fn == x->fcap) {
        int nc = x->fcap ? 2 * x->fcap : 8;
        whref *nf = malloc((size_t)nc * sizeof *nf);
        if (!nf) { e->oom++; return -1; }
        for (int i = 0; i < x->fn; i++) nf[i] = x->fifo[(x->fh + i) & (x->fcap - 1)];
        free(x->fifo);
        x->fifo = nf;
        x->fh = 0;
        x->fcap = nc;
    }
    x->fifo[(x->fh + x->fn) & (x->fcap - 1)] = (whref){w, h};
    x->fn++;
    e->w[w].hop[h].in_fifo = 1;
    x->nitb += e->w[w].hop[h].itb;
    return 0;
}
void myr_fifo_remove(meng *e, int c, int w, int h)
{
    mchan *x = &e->ch[c];
    for (int i = 0; i < x->fn; i++) {
        whref *r = fifo_at(x, i);
        if (r->w == w && r->h == h) {
            for (int j = i; j > 0; j--) *fifo_at(x, j) = *fifo_at(x, j - 1);
            x->fh = (x->fh + 1) & (x->fcap - 1);
            x->fn--;
            e->w[w].hop[h].in_fifo = 0;
            x->nitb -= e->w[w].hop[h].itb;
            return;
        }
    }
}

/* ---------------------------------------------------------------- control characters */

void myr_send_ctrl(meng *e, int c, int type)
{
    mchan *x = &e->ch[c];
    nm_time_t b = tmax(e->now, x->ctrl_end);
    mhop *hp = NULL;
    if (x->owner >= 0) {
        hp = &e->w[x->owner].hop[x->owner_h];
        int32_t k = sent_by(e, hp, e->now);
        if (k > 0) b = tmax(b, start_of(e, hp, k - 1) + x->tau);   /* character in progress */
    }
    x->ctrl_end = b + x->tau;
    x->chars_final++;
    if (type != CT_BEAT) {
        if (x->cqn == CQ_CAP) {   /* cannot happen with sane water marks */
            if (e->fail_ch < 0) { e->fail_ch = c; e->fail_t = e->now; e->fail_occ = -1; }
            e->overflow++;
        }
        else {
            x->cq[(x->cqh + x->cqn) & (CQ_CAP - 1)] = (mctrl){b + x->tau + x->prop, type};
            if (x->cqn++ == 0) myr_sched(e, ent_ch(c, EK_CQ), b + x->tau + x->prop, CL_CTRL);
        }
    }
    if (hp) {
        int32_t old = hp->nplan;
        myr_seg_cut_time(hp, b, x->tau);
        int32_t k = hp->nplan;
        myr_plan(e, c);
        myr_hop_changed(e, x->owner, x->owner_h, k < old ? k : old);
    }
}

/* ---------------------------------------------------------------- buffers */

static int32_t hop_dep(const meng *e, const mworm *w, int h, nm_time_t t)
{
    mhop *hp = (mhop *)&w->hop[h];
    int32_t d = (hp->rb_dep <= t) ? 1 : 0;
    if (h + 1 < w->nh && w->hop[h + 1].active) d += sent_by(e, (mhop *)&w->hop[h + 1], t);
    return d;
}

/* Occupancy of the slack buffer at the receiving end of channel c at the end of instant t. */
static int32_t occ(meng *e, int c, nm_time_t t)
{
    mchan *x = &e->ch[c];
    int32_t o = 0;
    for (int i = 0; i < x->fn; i++) {
        whref r = *fifo_at(x, i);
        mworm *w = &e->w[r.w];
        mhop *hp = &w->hop[r.h];
        if (x->to_host >= 0) {
            if (!hp->admitted) o += arrived_by(e, hp, t);
        } else {
            o += arrived_by(e, hp, t) - hop_dep(e, w, r.h, t);
        }
    }
    return o;
}

/* Time of the need-th arrival after t into c's buffer (counting only held packets at hosts). */
static nm_time_t nth_arrival(meng *e, int c, nm_time_t t, int32_t need)
{
    mchan *x = &e->ch[c];
    for (int i = 0; i < x->fn; i++) {
        whref r = *fifo_at(x, i);
        mhop *hp = &e->w[r.w].hop[r.h];
        if (x->to_host >= 0 && hp->admitted) continue;
        int32_t a = arrived_by(e, hp, t);
        int32_t av = hp->nplan - a;
        if (need <= av) return arrival_of(e, hp, a + need - 1);
        need -= av;
        if (hp->nplan < hp->len) return NM_TIME_NEVER;
    }
    return NM_TIME_NEVER;
}

static nm_time_t nth_departure(meng *e, int c, nm_time_t t, int32_t need)
{
    mchan *x = &e->ch[c];
    if (x->to_host >= 0) return NM_TIME_NEVER;   /* hosts drain only at admission events */
    for (int i = 0; i < x->fn; i++) {
        whref r = *fifo_at(x, i);
        mworm *w = &e->w[r.w];
        mhop *hp = &w->hop[r.h];
        if (hp->rb_dep == NM_TIME_NEVER) return NM_TIME_NEVER;
        mhop *dn = &w->hop[r.h + 1];
        int32_t known = 1 + (dn->active ? dn->nplan : 0);
        int32_t d = hop_dep(e, w, r.h, t);
        int32_t av = known - d;
        if (need <= av) {
            int32_t q = d + need - 1;
            return q == 0 ? hp->rb_dep : start_of(e, dn, q - 1);
        }
        need -= av;
        if (known < hp->len) return NM_TIME_NEVER;
    }
    return NM_TIME_NEVER;
}

/* A stretch after t over which a switch buffer's occupancy cannot rise at an arrival instant: the
 * next arrivals are one run (a segment, every tau_a) and the departures one run at least as fast
 * (tau_d <= tau_a) whose first departure after t comes no later than the first arrival, so every
 * arrival in the stretch is preceded by a departure since the one before. Returns the last such
 * arrival instant (occupancy there <= occupancy at t), or NM_TIME_NEVER if there is no stretch.
 * A packet streaming through a switch is such a stretch over its whole length. */
static nm_time_t rise_window_end(meng *e, int c, nm_time_t t)
{
    mchan *x = &e->ch[c];
    if (x->to_host >= 0) return NM_TIME_NEVER;
    const mhop *ah = NULL;
    int32_t ak = 0;
    for (int i = 0; i < x->fn && !ah; i++) {   /* the next arrival: entry, character */
        whref r = *fifo_at(x, i);
        mhop *hp = &e->w[r.w].hop[r.h];
        int32_t a = arrived_by(e, hp, t);
        if (a < hp->nplan) { ah = hp; ak = a; }
        else if (hp->nplan < hp->len) return NM_TIME_NEVER;
    }
    if (!ah) return NM_TIME_NEVER;
    const mhop *dn = NULL;
    int32_t dq = 0;
    for (int i = 0; i < x->fn && !dn; i++) {   /* the next departure: a character on a next hop */
        whref r = *fifo_at(x, i);
        mworm *w = &e->w[r.w];
        mhop *hp = &w->hop[r.h];
        if (hp->rb_dep > t) return NM_TIME_NEVER;   /* a single route byte first */
        mhop *nx = &w->hop[r.h + 1];
        if (!nx->active) return NM_TIME_NEVER;
        int32_t d = hop_dep(e, w, r.h, t);
        if (d >= hp->len) continue;                 /* gone, waiting for its removal */
        if (d - 1 >= nx->nplan) return NM_TIME_NEVER;
        dn = nx;
        dq = d - 1;
    }
    if (!dn) return NM_TIME_NEVER;
    const mchan *dx = &e->ch[dn->ch];
    nm_time_t tau_a = x->tau, tau_d = dx->tau;
    if (tau_d > tau_a) return NM_TIME_NEVER;
    const mseg *sa = &ah->seg[seg_index(ah, ak)], *sd = &dn->seg[seg_index(dn, dq)];
    nm_time_t a0 = sa->t0 + (nm_time_t)(ak - sa->k0) * tau_a + tau_a + x->prop;
    nm_time_t d0 = sd->t0 + (nm_time_t)(dq - sd->k0) * tau_d;
    nm_time_t dlast = sd->t0 + (nm_time_t)(sd->n - 1) * tau_d;
    if (d0 > a0 || dlast < a0) return NM_TIME_NEVER;
    int64_t k = (dlast - a0) / tau_a, left = sa->k0 + sa->n - 1 - ak;
    if (k > left) k = left;
    return a0 + k * tau_a;
}

/* First instant >= now at whose end occupancy > lim. Occupancy rises only at arrivals, by one
 * each, so from occupancy o the earliest possible crossing is lim+1-o arrivals later; stretches
 * where departures keep pace (rise_window_end) are passed in one step. */
static nm_time_t find_rise(meng *e, int c, int32_t lim)
{
    nm_time_t t = e->now;
    for (int it = 0;; it++) {
        int32_t o = occ(e, c, t);
        if (o > lim) return t;
        nm_time_t t2 = nth_arrival(e, c, t, lim + 1 - o);
        if (t2 == NM_TIME_NEVER) return t2;
        /* a second step means a long packet: look for a stretch to pass at once */
        nm_time_t w = it > 0 ? rise_window_end(e, c, t) : NM_TIME_NEVER;
        t = w != NM_TIME_NEVER && w > t2 ? w : t2;
    }
}
static nm_time_t find_fall(meng *e, int c, int32_t lim)
{
    nm_time_t t = e->now;
    for (;;) {
        int32_t o = occ(e, c, t);
        if (o < lim) return t;
        t = nth_departure(e, c, t, o - lim + 1);
        if (t == NM_TIME_NEVER) return t;
    }
}

static void thr_recompute(meng *e, int c)
{
    mchan *x = &e->ch[c];
    nm_time_t t;
    if (!x->stop_sent) t = find_rise(e, c, e->H);
    else {
        t = find_fall(e, c, e->L);
        if (!x->over) t = tmin(t, find_rise(e, c, e->S));
    }
    myr_sched(e, ent_ch(c, EK_THR), t, CL_THR);
}

static void head_recompute(meng *e, int c)
{
    mchan *x = &e->ch[c];
    nm_time_t t = NM_TIME_NEVER;
    if (x->to_host >= 0) {
        mhost *ho = &e->host[x->to_host];
        for (int i = 0; i < x->fn; i++) {
            whref r = *fifo_at(x, i);
            mworm *w = &e->w[r.w];
            mhop *hp = &w->hop[r.h];
            if (UNLIKELY(hp->itb)) continue;   /* in transit: below */
            if (!hp->admitted) {
                if (e->rxcap == 0 || ho->slots < e->rxcap) t = tmin(t, tmax(e->now, arrival_of(e, hp, 0)));
                break;
            }
            if (!w->completed) { t = tmin(t, arrival_of(e, hp, end_index(e, hp))); break; }
        }
        for (int i = 0; UNLIKELY(x->nitb > 0) && i < x->fn; i++) {   /* detection of the first in-transit packet */
            mhop *hp = &e->w[fifo_at(x, i)->w].hop[fifo_at(x, i)->h];
            if (!hp->itb || hp->rb_dep != NM_TIME_NEVER) continue;
            nm_time_t a = arrival_of(e, hp, 0);
            if (a != NM_TIME_NEVER) t = tmin(t, tmax(e->now, a + e->itb_delay));
            break;
        }
    } else {
        for (int i = 0; i < x->fn; i++) {
            whref r = *fifo_at(x, i);
            mworm *w = &e->w[r.w];
            mhop *hp = &w->hop[r.h];
            if (hp->rb_dep != NM_TIME_NEVER) continue;
            t = arrival_of(e, hp, 0);
            if (i > 0 && t != NM_TIME_NEVER) {
                whref p = *fifo_at(x, i - 1);
                mworm *pw = &e->w[p.w];
                mhop *pn = &pw->hop[p.h + 1];
                nm_time_t g = pn->active ? start_of(e, pn, pn->len - 1) : NM_TIME_NEVER;
                t = tmax(t, g);
            }
            if (t != NM_TIME_NEVER) t = tmax(t, e->now);
            break;
        }
    }
    myr_sched(e, ent_ch(c, EK_HEAD), t, CL_NORM);
}

static void tx_recompute(meng *e, int c)
{
    mchan *x = &e->ch[c];
    nm_time_t t = NM_TIME_NEVER;
    if (x->owner >= 0) {
        mhop *hp = &e->w[x->owner].hop[x->owner_h];
        if (hp->nplan == hp->len) t = seg_end(&hp->seg[hp->nseg - 1], x->tau);
        else if (e->stepping && !x->stopped) t = x->wake;
    }
    myr_sched(e, ent_ch(c, EK_TX), t, CL_NORM);
}

void myr_flush_dirty(meng *e)
{
    for (int i = 0; i < e->ndirty; i++) {
        int c = e->dirty[i];
        int d = e->ch[c].dirty;
        e->ch[c].dirty = 0;
        if (d & D_TX) tx_recompute(e, c);
        if (d & D_BUF) { head_recompute(e, c); thr_recompute(e, c); }
    }
    e->ndirty = 0;
}

/* ---------------------------------------------------------------- flow-control events */

/* Control characters arriving at the transmitter they are for (the reverse channel's). */
void myr_cq_event(meng *e, int c)
{
    mchan *x = &e->ch[c];
    while (x->cqn > 0 && x->cq[x->cqh].t <= e->now) {
        mctrl q = x->cq[x->cqh];
        x->cqh = (x->cqh + 1) & (CQ_CAP - 1);
        x->cqn--;
        int tc = x->rev;             /* the transmitter this flow control is for */
        mchan *tx = &e->ch[tc];
        if (q.type == CT_STOP) {
            tx->stopped = 1;
            if (tx->owner >= 0) {
                mhop *hp = &e->w[tx->owner].hop[tx->owner_h];
                int32_t old = hp->nplan;
                myr_seg_cut_time(hp, e->now, tx->tau);
                if (hp->nplan != old) myr_hop_changed(e, tx->owner, tx->owner_h, hp->nplan);
                else mark(e, tc, D_TX);
            }
        } else if (q.type == CT_GO) {
            tx->stopped = 0;
            if (tx->owner >= 0) {
                int32_t old = e->w[tx->owner].hop[tx->owner_h].nplan;
                myr_plan(e, tc);
                myr_hop_changed(e, tx->owner, tx->owner_h, old);
            }
        }
    }
    myr_sched(e, ent_ch(c, EK_CQ), x->cqn ? x->cq[x->cqh].t : NM_TIME_NEVER, CL_CTRL);
}

/* A buffer crossed a water mark: STOP, GO, or an overflow past the slack buffer. */
void myr_thr_event(meng *e, int c)
{
    mchan *x = &e->ch[c];
    int32_t o = occ(e, c, e->now);
    if (!x->stop_sent && o > e->H) {
        x->stop_sent = 1;
        myr_send_ctrl(e, x->rev, CT_STOP);
    } else if (x->stop_sent && o < e->L) {
        x->stop_sent = 0;
        x->over = 0;
        myr_send_ctrl(e, x->rev, CT_GO);
    } else if (x->stop_sent && o > e->S && !x->over) {
        x->over = 1;
        if (e->fail_ch < 0) { e->fail_ch = c; e->fail_t = e->now; e->fail_occ = o; }
        e->overflow++;
    }
    mark(e, c, D_BUF);
}
