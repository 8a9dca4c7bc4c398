/* The `myrinet` engine: character-level wormhole model of a Myrinet network (seed 000 sec 2,
 * seed 002 sec 5.3), simulated by runs of characters instead of one event per character.
 *
 * The model (what a character-by-character simulator would do):
 *  - A packet on hop h (directed channel route->channel[h]) is the character string
 *    [route bytes still to be used] [type] [payload] [CRC] [GAP]; each switch strips the
 *    route byte addressed to it. Character j of hop h+1 is character j+1 of hop h.
 *  - A channel's transmitter sends one character per char time tau; a character sent at s is
 *    fully received (and may be forwarded) at s + tau + prop.
 *  - A switch input buffer requests the output port named by its front packet's route byte
 *    when that byte has been received and the previous packet has left; output ports are
 *    granted one header at a time, demand-slotted round robin over input ports; the first
 *    character may leave at grant + switch_delay.
 *  - Occupancy of a slack buffer = characters received minus characters that have started to
 *    leave (the route byte leaves when the request is made), evaluated at the end of each
 *    instant. Above high_water the receiver sends STOP, below low_water GO, on the reverse
 *    channel; control characters (STOP, GO, BEAT) take the next character slot of that channel
 *    (after the character in progress) and delay its data by one slot. A STOP arriving at t
 *    stops characters that would start at or after t; GO lets them resume.
 *  - Destination hosts drain their slack buffer as characters arrive, unless the reception
 *    queue (network.nic_recv_queue packets, 0 = unlimited) is full; then the next packet's
 *    characters stay in the slack buffer until a slot frees.
 *
 * Speed: a transmitter's characters are planned as segments (start, first index, count) at
 * the channel's char time, as far ahead as the characters are known to be available; a
 * segment is cut when a STOP arrives or a control character takes a slot, and everything
 * downstream that depended on the cut characters is re-planned. Events happen only where
 * state changes: a packet's tail passing a channel, a header reaching a switch, a grant,
 * a control character arriving, a buffer crossing a water mark (found arithmetically), a CRC
 * reaching a host. With network.myrinet_stepping = 1 the same rules are applied one
 * character at a time (no look-ahead): the reference the fast mode is tested against.
 *
 * In-transit buffers (ITB routing, seed 002 sec 4): a route with in-transit hosts is one worm
 * whose hop into an in-transit host is absorbed by that NIC's pool (no slack occupancy, no STOP);
 * detect + DMA time after its first character (the ITB mark) arrives, the packet requests the
 * host's output channel like a switch output (the mark is stripped like a route byte) and is sent
 * from there as its characters arrive (virtual cut-through); local packets compete with a
 * priority that grows with their queue. The hop into the host is released independently of the
 * hop out of it, which removes the dependency between them.
 *
 * Watchdog: when packets are in flight and no event other than BEAT / timeout is pending, nothing
 * can move any more (a deadlock): counted in stats.deadlocks, and run_until returns -3.
 *
 * Same-instant order: control arrivals (class 0), then ordinary events (1), then grants (2),
 * then water-mark checks and BEATs (3); ties within a class by sequence number. */
#include "nm_internal.h"

#include <stdlib.h>
#include <string.h>

enum { CL_CTRL = 0, CL_NORM = 1, CL_ARB = 2, CL_THR = 3 };
enum { CT_STOP = 1, CT_GO = 2, CT_BEAT = 3 };
enum { EK_TX = 0, EK_CQ, EK_HEAD, EK_THR, EK_ARB, EK_PER_CH };
enum { D_TX = 1, D_BUF = 2 };

#define CQ_CAP 16

typedef struct { nm_time_t t0; int32_t k0, n; } mseg;

typedef struct {
    int ch;
    int32_t len, nplan;        /* characters on this hop; planned so far */
    mseg *seg;
    int nseg, cap;
    int alo, slo;              /* first segment not yet fully arrived / fully sent before now */
    int32_t alocnt, slocnt;
    nm_time_t avail;           /* earliest start of the first character */
    nm_time_t rb_dep;          /* when the route byte left the switch buffer (request) */
    uint8_t active, done, in_fifo, admitted;
    uint8_t itb, pooled;       /* hop into an in-transit host; holds ITB pool space */
} mhop;

typedef struct {
    uint32_t gen;
    int src, dst, nh, live, qnext;
    const nm_route *rt;
    uint64_t payload, cookie;
    nm_time_t inject, ready, rxdone;
    uint8_t completed, delivered;
    uint8_t cb;                /* makes a delivery callback: a packet, or the last of a train */
    uint32_t train;            /* packets of its train (0: a single packet) */
    uint32_t tid;              /* its train's number (nm_network_train_cut finds the train by it) */
    mhop *hop;
    int caphop;
} mworm;

typedef struct { int w, h; } whref;
typedef struct { nm_time_t t; int type; } mctrl;

typedef struct {
    nm_time_t tau, prop;
    int rev;
    int to_host, from_host;    /* host id at that end or -1 */
    int to_port, from_sw;      /* port number at the receiving end; sending switch or -1 */
    /* transmitter */
    int owner, owner_h;
    int stopped;
    nm_time_t ctrl_end, wake;
    whref *req;
    int nreq, capreq, rr_last;
    mctrl cq[CQ_CAP];          /* control characters on the wire toward the receiving end */
    int cqh, cqn;
    /* receiving slack buffer */
    whref *fifo;
    int fh, fn, fcap;
    int stop_sent, over;
    int dirty;
    uint64_t chars_final;
    int nitb;                  /* in-transit packets in this (host) buffer */
} mchan;

typedef struct {
    int ch_out, ch_in;
    int qhead, qtail;
    nm_time_t base_ready;              /* ready time of the last packet started */
    int slots;
    int *rxq;
    int rxh, rxn, rxcap;
    nm_time_t rx_last;
    /* in-transit buffer: packets waiting to be reinjected (FIFO), pool use, local priority */
    struct mtq { int w, h; nm_time_t ready; } *tq;
    int tqh, tqn, tqcap;
    int nq, it_run;            /* local packets queued; in-transit sent in a row while local waited */
    int64_t itb_used;
    struct mtrain *tr;         /* the last packet start of a train from here, for train_jump */
} mhost;

typedef struct { int w; uint32_t gen; nm_time_t dl; } mtout;
typedef struct { nm_time_t t; uint64_t k; int ent; } hslot;

typedef struct {
    const nm_topology *topo;
    nm_network *net;
    nm_time_t now;
    int stepping;
    nm_time_t D, timeout, beat, send_cost, recv_cost;
    int32_t H, L, S, type_b, crc_b, gap_b;
    int rxcap;
    int nch, nhost;
    mchan *ch;
    mhost *host;
    mworm *w;
    int nw, capw, freew;
    /* indexed binary heap of entities */
    int nent, hn;
    hslot *heap;
    int *pos;
    uint64_t seq;
    mtout *to;
    size_t toh, ton, tocap;
    int *dirty;
    int ndirty;
    nm_time_t next_beat;
    nm_stats st;
    uint64_t overflow, oom;
    /* the first overflow, for nm_network_failure_reason: its channel (-1: none yet), when, and
     * how full the buffer was (-1: a control queue) */
    int fail_ch;
    nm_time_t fail_t;
    int32_t fail_occ;
    /* ITB parameters (network.itb_*) and the watchdog */
    nm_time_t itb_delay, itb_host_cost;
    int64_t itb_pool;
    int itb_drop, itb_local_q;
    int64_t nlive;
    int stuck;
    /* trains (train_jump): the host whose train started a packet in this event, whether that
     * start followed the previous packet's tail on the host's channel; scratch buffers */
    int tr_host, tr_tail;
    uint32_t ntrains;
    uint64_t ncb;
    int64_t *sbuf;
    size_t sn, scap;
    int *tw;
    int ntw, captw;
} meng;

#define UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline nm_time_t tmax(nm_time_t a, nm_time_t b) { return a > b ? a : b; }
static inline nm_time_t tmin(nm_time_t a, nm_time_t b) { return a < b ? a : b; }


/* ---------------------------------------------------------------- event heap */

/* Indexed binary heap of entities, keyed (time, class << 56 | sequence): keys are unique, so the
 * order of events does not depend on the heap's shape. A slot carries its key, so comparisons
 * read the heap array only. */
static inline int hs_less(const hslot *a, const hslot *b)
{
    return a->t < b->t || (a->t == b->t && a->k < b->k);
}
static void hsift_up(meng *e, int i, hslot x)
{
    hslot *H = e->heap;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!hs_less(&x, &H[p])) break;
        H[i] = H[p];
        e->pos[H[i].ent] = i;
        i = p;
    }
    H[i] = x;
    e->pos[x.ent] = i;
}
static void hsift_down(meng *e, int i, hslot x)
{
    hslot *H = e->heap;
    int n = e->hn;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && hs_less(&H[c + 1], &H[c])) c++;
        if (!hs_less(&H[c], &x)) break;
        H[i] = H[c];
        e->pos[H[i].ent] = i;
        i = c;
    }
    H[i] = x;
    e->pos[x.ent] = i;
}
static void hremove(meng *e, int ent)
{
    int i = e->pos[ent];
    if (i < 0) return;
    e->pos[ent] = -1;
    hslot last = e->heap[--e->hn];
    if (i == e->hn) return;
    if (i > 0 && hs_less(&last, &e->heap[(i - 1) / 2])) hsift_up(e, i, last);
    else hsift_down(e, i, last);
}
/* (Re)schedule entity `ent` at t in class cl; NM_TIME_NEVER unschedules. An unchanged
 * (time, class) keeps its sequence number, so re-evaluating a state does not reorder ties. */
static void sched(meng *e, int ent, nm_time_t t, int cl)
{
    if (t == NM_TIME_NEVER) { hremove(e, ent); return; }
    int i = e->pos[ent];
    if (i >= 0 && e->heap[i].t == t && (int)(e->heap[i].k >> 56) == cl) return;
    hslot x = {t, ((uint64_t)cl << 56) | (e->seq++ & 0x00ffffffffffffffULL), ent};
    if (i < 0) hsift_up(e, e->hn++, x);
    else if (hs_less(&x, &e->heap[i])) hsift_up(e, i, x);
    else hsift_down(e, i, x);
}

static inline int ent_ch(int c, int k) { return c * EK_PER_CH + k; }
static inline int ent_nictx(const meng *e, int h) { return e->nch * EK_PER_CH + 2 * h; }
static inline int ent_nicrx(const meng *e, int h) { return e->nch * EK_PER_CH + 2 * h + 1; }
static inline int ent_timeout(const meng *e) { return e->nch * EK_PER_CH + 2 * e->nhost; }
static inline int ent_beat(const meng *e) { return ent_timeout(e) + 1; }

/* ---------------------------------------------------------------- segments */

static inline nm_time_t seg_end(const mseg *s, nm_time_t tau) { return s->t0 + (nm_time_t)s->n * tau; }

/* Characters of hp whose start is <= t. lo/locnt cache the segments wholly before `lim`. */
static int32_t cnt_upto(mhop *hp, nm_time_t tau, nm_time_t t, int *lo, int32_t *locnt, nm_time_t lim)
{
    if (*lo > hp->nseg) { *lo = 0; *locnt = 0; }
    while (*lo < hp->nseg) {
        const mseg *s = &hp->seg[*lo];
        if (s->t0 + (nm_time_t)(s->n - 1) * tau < lim) { *locnt += s->n; (*lo)++; }
        else break;
    }
    int32_t c = *locnt;
    for (int i = *lo; i < hp->nseg; i++) {
        const mseg *s = &hp->seg[i];
        if (t < s->t0) break;
        nm_time_t d = t - s->t0;
        if (d >= (nm_time_t)(s->n - 1) * tau) c += s->n;   /* the whole segment: no division */
        else { c += (int32_t)(d / tau) + 1; break; }
    }
    return c;
}
static inline int32_t sent_by(const meng *e, mhop *hp, nm_time_t t)
{
    const mchan *x = &e->ch[hp->ch];
    return cnt_upto(hp, x->tau, t, &hp->slo, &hp->slocnt, e->now);
}
static inline int32_t arrived_by(const meng *e, mhop *hp, nm_time_t t)
{
    const mchan *x = &e->ch[hp->ch];
    nm_time_t d = x->tau + x->prop;
    return cnt_upto(hp, x->tau, t - d, &hp->alo, &hp->alocnt, e->now - d);
}
static int seg_index(const mhop *hp, int32_t k)
{
    for (int i = hp->nseg - 1; i >= 0; i--)
        if (hp->seg[i].k0 <= k) return i;
    return -1;
}
static nm_time_t start_of(const meng *e, const mhop *hp, int32_t k)
{
    if (k < 0 || k >= hp->nplan) return NM_TIME_NEVER;
    const mseg *s = &hp->seg[seg_index(hp, k)];
    return s->t0 + (nm_time_t)(k - s->k0) * e->ch[hp->ch].tau;
}
static nm_time_t arrival_of(const meng *e, const mhop *hp, int32_t k)
{
    nm_time_t s = start_of(e, hp, k);
    if (s == NM_TIME_NEVER) return s;
    return s + e->ch[hp->ch].tau + e->ch[hp->ch].prop;
}

static int seg_append(meng *e, mhop *hp, nm_time_t t0, int32_t k0, int32_t n, nm_time_t tau)
{
    if (hp->nseg > 0) {
        mseg *l = &hp->seg[hp->nseg - 1];
        /* merge only segments no cache has folded in yet */
        if (hp->nseg - 1 >= hp->alo && hp->nseg - 1 >= hp->slo && seg_end(l, tau) == t0 &&
            l->k0 + l->n == k0) {
            l->n += n;
            hp->nplan += n;
            return 0;
        }
    }
    if (hp->nseg == hp->cap) {
        int nc = hp->cap ? 2 * hp->cap : 4;
        mseg *ns = realloc(hp->seg, (size_t)nc * sizeof *ns);
        if (!ns) { e->oom++; return -1; }
        hp->seg = ns;
        hp->cap = nc;
    }
    hp->seg[hp->nseg++] = (mseg){t0, k0, n};
    hp->nplan += n;
    return 0;
}
/* Remove planned characters that start at or after tcut. */
static void seg_cut_time(mhop *hp, nm_time_t tcut, nm_time_t tau)
{
    while (hp->nseg > 0) {
        mseg *s = &hp->seg[hp->nseg - 1];
        if (s->t0 >= tcut) { hp->nplan -= s->n; hp->nseg--; continue; }
        nm_time_t keep = (tcut - s->t0 + tau - 1) / tau;
        if (keep < s->n) { hp->nplan -= s->n - (int32_t)keep; s->n = (int32_t)keep; }
        break;
    }
}
/* Keep only the first `keep` planned characters. */
static void seg_cut_count(mhop *hp, int32_t keep)
{
    if (keep < 0) keep = 0;
    while (hp->nseg > 0 && hp->nplan > keep) {
        mseg *s = &hp->seg[hp->nseg - 1];
        int32_t excess = hp->nplan - keep;
        if (excess >= s->n) { hp->nplan -= s->n; hp->nseg--; }
        else { s->n -= excess; hp->nplan = keep; }
    }
}

/* ---------------------------------------------------------------- bookkeeping helpers */

static void mark(meng *e, int c, int what)
{
    if (c < 0) return;
    mchan *x = &e->ch[c];
    if (!x->dirty) e->dirty[e->ndirty++] = c;
    x->dirty |= what;
}

static int fifo_push(meng *e, int c, int w, int h)
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
static inline whref *fifo_at(mchan *x, int i) { return &x->fifo[(x->fh + i) & (x->fcap - 1)]; }
static void fifo_remove(meng *e, int c, int w, int h)
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

static inline int32_t end_index(const meng *e, const mhop *hp)
{
    /* index of the last CRC character on this hop: the packet is complete when it arrives */
    return hp->len - e->gap_b - 1;
}

/* ---------------------------------------------------------------- planning */

static void hop_changed(meng *e, int wi, int h, int32_t kmin);
static void host_try_start(meng *e, int hid);
static void drop_worm(meng *e, int wi);
static void itb_start(meng *e, int hid);

/* Plan the owner's characters on channel c as far as they are known to be available. */
static void plan(meng *e, int c)
{
    mchan *x = &e->ch[c];
    x->wake = NM_TIME_NEVER;
    if (x->owner < 0 || x->stopped) return;
    mworm *w = &e->w[x->owner];
    int h = x->owner_h;
    mhop *hp = &w->hop[h];
    int32_t K = hp->nplan;
    nm_time_t tau = x->tau;
    nm_time_t t = tmax(tmax(e->now, x->ctrl_end), hp->avail);
    if (hp->nseg) t = tmax(t, seg_end(&hp->seg[hp->nseg - 1], tau));
    while (K < hp->len) {
        nm_time_t start;
        int32_t n;
        if (h == 0) {
            start = t;
            n = hp->len - K;
        } else {
            mhop *up = &w->hop[h - 1];
            const mchan *ux = &e->ch[up->ch];
            int32_t j = K + 1;
            if (j >= up->nplan) break;
            const mseg *s = &up->seg[seg_index(up, j)];
            nm_time_t a = s->t0 + (nm_time_t)(j - s->k0) * ux->tau + ux->tau + ux->prop;
            start = tmax(t, a);
            int32_t rem = s->k0 + s->n - j;
            if (ux->tau <= tau) n = rem;
            else {
                nm_time_t m = (start - a) / (ux->tau - tau) + 1;
                n = m < rem ? (int32_t)m : rem;
            }
            if (n > hp->len - K) n = hp->len - K;
        }
        if (e->stepping) {
            if (start > e->now) { x->wake = start; break; }
            n = 1;
        }
        if (seg_append(e, hp, start, K, n, tau) != 0) break;
        K += n;
        t = start + (nm_time_t)n * tau;
        if (e->stepping) { if (K < hp->len) x->wake = t; break; }
    }
}

/* Characters >= kmin of hop h of worm wi may have changed: re-plan everything downstream that
 * depended on them and mark the buffers whose arrivals or departures changed. */
static void hop_changed(meng *e, int wi, int h, int32_t kmin)
{
    for (;;) {
        mworm *w = &e->w[wi];
        mhop *hp = &w->hop[h];
        mark(e, hp->ch, D_TX | D_BUF);
        if (h > 0) mark(e, w->hop[h - 1].ch, D_BUF);
        if (h + 1 >= w->nh) return;
        mhop *dn = &w->hop[h + 1];
        if (!dn->active || dn->done) return;
        int32_t keep = kmin - 1, old = dn->nplan;
        if (keep < dn->nplan) seg_cut_count(dn, keep);
        plan(e, dn->ch);
        if (keep >= old && dn->nplan == old) { mark(e, dn->ch, D_TX); return; }
        kmin = keep < old ? keep : old;
        h++;
    }
}

/* ---------------------------------------------------------------- control characters */

static void send_ctrl(meng *e, int c, int type)
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
            if (x->cqn++ == 0) sched(e, ent_ch(c, EK_CQ), b + x->tau + x->prop, CL_CTRL);
        }
    }
    if (hp) {
        int32_t old = hp->nplan;
        seg_cut_time(hp, b, x->tau);
        int32_t k = hp->nplan;
        plan(e, c);
        hop_changed(e, x->owner, x->owner_h, k < old ? k : old);
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
    sched(e, ent_ch(c, EK_THR), t, CL_THR);
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
    sched(e, ent_ch(c, EK_HEAD), t, CL_NORM);
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
    sched(e, ent_ch(c, EK_TX), t, CL_NORM);
}

static void flush_dirty(meng *e)
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

/* ---------------------------------------------------------------- packets */

static void worm_free(meng *e, int wi)
{
    mworm *w = &e->w[wi];
    for (int h = 0; h < w->nh; h++)
        if (w->hop[h].in_fifo) { fifo_remove(e, w->hop[h].ch, wi, h); mark(e, w->hop[h].ch, D_BUF); }
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
    sched(e, ent_timeout(e), e->ton ? e->to[e->toh].dl : NM_TIME_NEVER, CL_NORM);
}

static void maybe_free(meng *e, int wi)
{
    mworm *w = &e->w[wi];
    if (w->completed && w->delivered && w->hop[w->nh - 1].done) worm_free(e, wi);
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

static void host_try_start(meng *e, int hid)
{
    mhost *ho = &e->host[hid];
    mchan *x = &e->ch[ho->ch_out];
    if (UNLIKELY(ho->tqn > 0)) {
        if (x->owner >= 0) { sched(e, ent_nictx(e, hid), NM_TIME_NEVER, CL_NORM); return; }
        struct mtq *q = &ho->tq[ho->tqh];
        int local = ho->qhead >= 0 && e->w[ho->qhead].ready <= e->now;
        if (q->ready > e->now) {
            if (!local) {
                nm_time_t t = q->ready;
                if (ho->qhead >= 0) t = tmin(t, e->w[ho->qhead].ready);
                sched(e, ent_nictx(e, hid), t, CL_NORM);
                return;
            }
        } else {
            /* seed 002 sec 4: local priority rises with the local queue; at itb_local_queue
             * queued packets both kinds alternate */
            int need = e->itb_local_q - ho->nq + 1;
            if (need < 1) need = 1;
            if (!local || ho->it_run < need) {
                if (local) ho->it_run++;
                itb_start(e, hid);
                return;
            }
        }
        ho->it_run = 0;
    }
    if (x->owner >= 0 || ho->qhead < 0) { sched(e, ent_nictx(e, hid), NM_TIME_NEVER, CL_NORM); return; }
    int wi = ho->qhead;
    mworm *w = &e->w[wi];
    if (w->ready > e->now) { sched(e, ent_nictx(e, hid), w->ready, CL_NORM); return; }
    sched(e, ent_nictx(e, hid), NM_TIME_NEVER, CL_NORM);
    ho->nq--;
    ho->qhead = w->qnext;
    ho->base_ready = w->ready;
    if (ho->qhead < 0) ho->qtail = -1;
    w->qnext = -1;
    x->owner = wi;
    x->owner_h = 0;
    if (w->train > 1 && e->tr_tail) e->tr_host = hid;   /* back to back: train_jump may look */
    w->hop[0].active = 1;
    w->hop[0].avail = e->now;
    if (fifo_push(e, ho->ch_out, wi, 0) != 0) return;
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
        if (e->ton++ == 0) sched(e, ent_timeout(e), e->now + e->timeout, CL_NORM);
    }
    plan(e, ho->ch_out);
    hop_changed(e, wi, 0, 0);
}

/* ---------------------------------------------------------------- in-transit buffers */

/* Reinject the first packet of hid's in-transit queue: the host's output channel is free. */
static void itb_start(meng *e, int hid)
{
    mhost *ho = &e->host[hid];
    struct mtq q = ho->tq[ho->tqh];
    ho->tqh = (ho->tqh + 1) & (ho->tqcap - 1);
    ho->tqn--;
    sched(e, ent_nictx(e, hid), NM_TIME_NEVER, CL_NORM);
    mchan *x = &e->ch[ho->ch_out];
    mworm *w = &e->w[q.w];
    x->owner = q.w;
    x->owner_h = q.h;
    w->hop[q.h].active = 1;
    w->hop[q.h].avail = e->now;
    if (fifo_push(e, ho->ch_out, q.w, q.h) != 0) return;
    plan(e, ho->ch_out);
    hop_changed(e, q.w, q.h, 0);
}

/* In-transit packets in the buffer of host channel c whose detect + DMA time has passed: reserve
 * pool space (or host memory, or drop) and queue them for reinjection. */
static int itb_detect(meng *e, int c)
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
                drop_worm(e, r.w);
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
    if (any) host_try_start(e, hid);
    mark(e, c, D_BUF);
    return 0;
}

/* Packets in flight and nothing but BEAT / timeout left to happen: a deadlock. */
static void watchdog(meng *e)
{
    int others = e->hn - (e->pos[ent_beat(e)] >= 0) - (e->pos[ent_timeout(e)] >= 0);
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

static void tail_done(meng *e, int c)
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
        fifo_remove(e, w->hop[h - 1].ch, wi, h - 1);
        mark(e, w->hop[h - 1].ch, D_BUF);
    }
    if (h > 0 && w->hop[h - 1].pooled) {     /* left the in-transit buffer */
        w->hop[h - 1].pooled = 0;
        e->host[x->from_host].itb_used -= w->hop[h - 1].len;
    }
    if (h == w->nh - 1) maybe_free(e, wi);
    if (x->from_host >= 0) {
        e->tr_tail = 1;
        host_try_start(e, x->from_host);
        e->tr_tail = 0;
    }
    else if (x->nreq > 0) sched(e, ent_ch(c, EK_ARB), e->now, CL_ARB);
}

static void arbitrate(meng *e, int c)
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
    if (fifo_push(e, c, r.w, r.h) != 0) return;
    plan(e, c);
    hop_changed(e, r.w, r.h, 0);
}

static void head_event(meng *e, int c)
{
    mchan *x = &e->ch[c];
    if (x->to_host >= 0) {
        int hid = x->to_host;
        mhost *ho = &e->host[hid];
        if (UNLIKELY(x->nitb > 0) && itb_detect(e, c) != 0) return;
        for (int i = 0; i < x->fn; i++) {
            whref r = *fifo_at(x, i);
            mworm *w = &e->w[r.w];
            mhop *hp = &w->hop[r.h];
            if (UNLIKELY(hp->itb)) continue;   /* in transit: itb_detect */
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
                if (ho->rxn == 1) sched(e, ent_nicrx(e, hid), w->rxdone, CL_NORM);
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
        if (ox->nreq == ox->capreq) {
            int nc = ox->capreq ? 2 * ox->capreq : 4;
            whref *nr = realloc(ox->req, (size_t)nc * sizeof *nr);
            if (!nr) { e->oom++; return; }
            ox->req = nr;
            ox->capreq = nc;
        }
        ox->req[ox->nreq++] = (whref){r.w, r.h + 1};
        if (ox->owner < 0) sched(e, ent_ch(oc, EK_ARB), e->now, CL_ARB);
        break;
    }
    mark(e, c, D_BUF);
}

static void nicrx_event(meng *e, int hid)
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
    sched(e, ent_nicrx(e, hid), ho->rxn ? e->w[ho->rxq[ho->rxh]].rxdone : NM_TIME_NEVER, CL_NORM);
    mark(e, ho->ch_in, D_BUF);   /* a freed slot may admit a held packet */
}

static void drop_worm(meng *e, int wi)
{
    mworm *w = &e->w[wi];
    for (int h = 0; h < w->nh; h++) {
        mhop *hp = &w->hop[h];
        mchan *x = &e->ch[hp->ch];
        if (hp->active && !hp->done) {
            seg_cut_time(hp, e->now, x->tau);   /* characters on the wire vanish too */
            x->chars_final += (uint64_t)hp->nplan;
            hp->done = 1;
            x->owner = -1;
            x->wake = NM_TIME_NEVER;
            mark(e, hp->ch, D_TX);
            if (x->from_host >= 0) sched(e, ent_nictx(e, x->from_host), e->now, CL_NORM);
            else if (x->nreq > 0) sched(e, ent_ch(hp->ch, EK_ARB), e->now, CL_ARB);
        }
        if (hp->in_fifo) {
            fifo_remove(e, hp->ch, wi, h);
            mark(e, hp->ch, D_BUF);
        }
        if (h > 0) mark(e, w->hop[h - 1].ch, D_BUF);
        if (hp->pooled) {
            hp->pooled = 0;
            e->host[x->to_host].itb_used -= hp->len;
        }
        if (hp->itb && hp->rb_dep != NM_TIME_NEVER && !w->hop[h + 1].active) {
            mhost *ho = &e->host[x->to_host];
            for (int i = 0; i < ho->tqn; i++) {
                struct mtq *q = &ho->tq[(ho->tqh + i) & (ho->tqcap - 1)];
                if (q->w != wi) continue;
                for (int j = i; j > 0; j--) ho->tq[(ho->tqh + j) & (ho->tqcap - 1)] = ho->tq[(ho->tqh + j - 1) & (ho->tqcap - 1)];
                ho->tqh = (ho->tqh + 1) & (ho->tqcap - 1);
                ho->tqn--;
                break;
            }
            sched(e, ent_nictx(e, x->to_host), e->now, CL_NORM);
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
    worm_free(e, wi);
}

static void timeout_event(meng *e)
{
    while (e->ton > 0) {
        mtout f = e->to[e->toh];
        mworm *w = &e->w[f.w];
        if (w->gen == f.gen && w->live && !w->completed) {
            if (f.dl > e->now) break;
            drop_worm(e, f.w);
        }
        e->toh = (e->toh + 1) & (e->tocap - 1);
        e->ton--;
    }
    timeout_trim(e);
}

static void cq_event(meng *e, int c)
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
                seg_cut_time(hp, e->now, tx->tau);
                if (hp->nplan != old) hop_changed(e, tx->owner, tx->owner_h, hp->nplan);
                else mark(e, tc, D_TX);
            }
        } else if (q.type == CT_GO) {
            tx->stopped = 0;
            if (tx->owner >= 0) {
                int32_t old = e->w[tx->owner].hop[tx->owner_h].nplan;
                plan(e, tc);
                hop_changed(e, tx->owner, tx->owner_h, old);
            }
        }
    }
    sched(e, ent_ch(c, EK_CQ), x->cqn ? x->cq[x->cqh].t : NM_TIME_NEVER, CL_CTRL);
}

static void thr_event(meng *e, int c)
{
    mchan *x = &e->ch[c];
    int32_t o = occ(e, c, e->now);
    if (!x->stop_sent && o > e->H) {
        x->stop_sent = 1;
        send_ctrl(e, x->rev, CT_STOP);
    } else if (x->stop_sent && o < e->L) {
        x->stop_sent = 0;
        x->over = 0;
        send_ctrl(e, x->rev, CT_GO);
    } else if (x->stop_sent && o > e->S && !x->over) {
        x->over = 1;
        if (e->fail_ch < 0) { e->fail_ch = c; e->fail_t = e->now; e->fail_occ = o; }
        e->overflow++;
    }
    mark(e, c, D_BUF);
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
                if (hp->nplan == hp->len && seg_end(&hp->seg[hp->nseg - 1], x->tau) <= e->now) tail_done(e, c);
                else if (e->stepping) {
                    int32_t old = hp->nplan;
                    plan(e, c);
                    hop_changed(e, x->owner, x->owner_h, old);
                }
            }
            mark(e, c, D_TX);
            break;
        case EK_CQ: cq_event(e, c); break;
        case EK_HEAD: head_event(e, c); break;
        case EK_THR: thr_event(e, c); break;
        case EK_ARB: arbitrate(e, c); break;
        }
        return;
    }
    int k = ent - e->nch * EK_PER_CH;
    if (k < 2 * e->nhost) {
        if (k % 2 == 0) host_try_start(e, k / 2);
        else nicrx_event(e, k / 2);
    } else if (ent == ent_timeout(e)) {
        timeout_event(e);
    } else {
        for (int c = 0; c < e->nch; c++) send_ctrl(e, c, CT_BEAT);
        e->next_beat += e->beat;
        sched(e, ent_beat(e), e->next_beat, CL_THR);
    }
}

/* ---------------------------------------------------------------- trains */

/* A train's back-to-back packets, alone in the network, soon repeat the same pattern: the state
 * of everything (packets in flight, buffers, flow control, pending events) at one packet's start
 * is the state at the previous packet's start shifted by one period P. From then on the engine is
 * periodic until something differs: so train_jump moves the whole state m periods ahead at once
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
    if (e->sn == e->scap) {
        size_t nc = e->scap ? 2 * e->scap : 256;
        int64_t *nb = realloc(e->sbuf, nc * sizeof *nb);
        if (!nb) return -1;
        e->sbuf = nb;
        e->scap = nc;
    }
    e->sbuf[e->sn++] = v;
    return 0;
}
static int tw_push(meng *e, int wi)
{
    if (e->ntw == e->captw) {
        int nc = e->captw ? 2 * e->captw : 16;
        int *nt = realloc(e->tw, (size_t)nc * sizeof *nt);
        if (!nt) return -1;
        e->tw = nt;
        e->captw = nc;
    }
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
    for (int i = 0; i < e->hn; i++) {
        const hslot *x = &e->heap[i];
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
        while (j > 0 && hs_less(&e->heap[c], &e->heap[v[j - 1]])) { v[j] = v[j - 1]; j--; }
        v[j] = c;
    }
    for (size_t i = 0; i < nv; i++) {
        const hslot *x = &e->heap[e->sbuf[h0 + i]];
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
static int train_jump(meng *e, int hid, nm_time_t lim)
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
            for (int i = 0; i < e->hn; i++)
                if (e->heap[i].ent != ent_beat(e)) e->heap[i].t += D;
            for (int i = e->hn / 2 - 1; i >= 0; i--) hsift_down(e, i, e->heap[i]);   /* the BEAT stayed */
            e->st.packets_delivered += (uint64_t)m;
            e->st.payload_bytes_delivered += (uint64_t)m * wq->payload;
            for (int64_t j = 0; j < m; j++) {   /* Q_1..Q_m were run as the shifted packets */
                int qi = ho->qhead;
                ho->qhead = e->w[qi].qnext;
                e->w[qi].qnext = -1;
                ho->nq--;
                worm_free(e, qi);
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

/* ---------------------------------------------------------------- engine interface */

static void eng_destroy(void *p);

static void *eng_create(const nm_config *cfg, const nm_topology *topo, nm_network *net, char *err, size_t errlen)
{
    meng *e = calloc(1, sizeof *e);
    if (!e) { snprintf(err, errlen, "out of memory"); return NULL; }
    e->topo = topo;
    e->net = net;
    e->D = nm_config_int(cfg, "network.switch_delay");
    e->S = (int32_t)nm_config_int(cfg, "network.slack_buffer");
    e->H = (int32_t)nm_config_int(cfg, "network.high_water");
    e->L = (int32_t)nm_config_int(cfg, "network.low_water");
    e->beat = nm_config_int(cfg, "network.beat_period");
    e->timeout = nm_config_int(cfg, "network.timeout");
    e->type_b = (int32_t)nm_config_int(cfg, "network.type_bytes");
    e->crc_b = (int32_t)nm_config_int(cfg, "network.crc_bytes");
    e->gap_b = (int32_t)nm_config_int(cfg, "network.gap_bytes");
    e->send_cost = nm_config_int(cfg, "network.nic_send_cost");
    e->recv_cost = nm_config_int(cfg, "network.nic_recv_cost");
    e->rxcap = nm_config_has(cfg, "network.nic_recv_queue") ? (int)nm_config_int(cfg, "network.nic_recv_queue") : 0;
    e->stepping = nm_config_has(cfg, "network.myrinet_stepping") ? (int)nm_config_int(cfg, "network.myrinet_stepping") : 0;
    e->itb_delay = nm_config_int(cfg, "network.itb_detect") + nm_config_int(cfg, "network.itb_dma");
    e->itb_host_cost = nm_config_int(cfg, "network.itb_host_cost");
    e->itb_pool = nm_config_int(cfg, "network.itb_pool");
    e->itb_drop = !strcmp(nm_config_string(cfg, "network.itb_overflow"), "drop");
    e->itb_local_q = (int)nm_config_int(cfg, "network.itb_local_queue");
    e->fail_ch = -1;
    e->tr_host = -1;
    if (!(e->L >= 1 && e->L <= e->H && e->H < e->S) || e->D < 0 || e->type_b < 0 || e->crc_b < 1 ||
        e->gap_b < 0 || e->send_cost < 0 || e->recv_cost < 0 || e->rxcap < 0) {
        snprintf(err, errlen,
                 "myrinet engine: need 1 <= network.low_water (%d B) <= network.high_water (%d B) < "
                 "network.slack_buffer (%d B), crc_bytes >= 1 and non-negative delays/costs",
                 (int)e->L, (int)e->H, (int)e->S);
        free(e);
        return NULL;
    }
    e->nch = 2 * topo->nlinks;
    e->nhost = topo->nhosts;
    e->ch = calloc((size_t)e->nch + 1, sizeof *e->ch);
    e->host = calloc((size_t)e->nhost + 1, sizeof *e->host);
    e->dirty = calloc((size_t)e->nch + 1, sizeof *e->dirty);
    e->nent = e->nch * EK_PER_CH + 2 * e->nhost + 2;
    e->pos = malloc((size_t)e->nent * sizeof *e->pos);
    e->heap = malloc((size_t)e->nent * sizeof *e->heap);
    if (!e->ch || !e->host || !e->dirty || !e->pos || !e->heap) {
        snprintf(err, errlen, "out of memory");
        eng_destroy(e);
        return NULL;
    }
    for (int i = 0; i < e->nent; i++) e->pos[i] = -1;
    for (int c = 0; c < e->nch; c++) {
        mchan *x = &e->ch[c];
        const nm_link *l = &topo->links[c / 2];
        if (l->char_ps <= 0 || l->prop_ps < 0) {
            snprintf(err, errlen, "myrinet engine: link %d has no positive character time", c / 2);
            eng_destroy(e);
            return NULL;
        }
        x->tau = l->char_ps;
        x->prop = l->prop_ps;
        x->rev = c ^ 1;
        int kind, id, port;
        nm_channel_to(topo, c, &kind, &id, &port);
        x->to_host = kind == NM_NODE_HOST ? id : -1;
        x->to_port = port;
        nm_channel_from(topo, c, &kind, &id, &port);
        x->from_host = kind == NM_NODE_HOST ? id : -1;
        x->from_sw = kind == NM_NODE_SWITCH ? id : -1;
        x->owner = -1;
        x->rr_last = -1;
        x->wake = NM_TIME_NEVER;
    }
    for (int h = 0; h < e->nhost; h++) {
        mhost *ho = &e->host[h];
        ho->qhead = ho->qtail = -1;
        ho->ch_out = ho->ch_in = -1;
        int l = topo->hosts[h].link;
        if (l >= 0) {
            ho->ch_out = nm_channel_leaving(topo, l, NM_NODE_HOST, h);
            ho->ch_in = ho->ch_out ^ 1;
        }
    }
    e->freew = -1;
    if (e->beat > 0) {
        e->next_beat = e->beat;
        sched(e, ent_beat(e), e->next_beat, CL_THR);
    }
    return e;
}

/* The characters still arriving after a receiver crosses the high water mark, on channel c
 * (nm_myrinet_stop_chars). */
static int32_t stop_round_trip_chars(const meng *e, int c)
{
    const mchan *x = &e->ch[c];
    return nm_myrinet_stop_chars(x->tau, x->prop);
}

static int eng_failure_reason(const void *p, char *buf, size_t len)
{
    const meng *e = p;
    if (e->fail_ch >= 0) {
        int c = e->fail_ch, kind, id, port;
        nm_channel_to(e->topo, c, &kind, &id, &port);
        char where[64];
        if (kind == NM_NODE_HOST) snprintf(where, sizeof where, "host %d", id);
        else snprintf(where, sizeof where, "switch %d port %d", id, port);
        const mchan *x = &e->ch[c];
        int32_t need = stop_round_trip_chars(e, c);
        snprintf(buf, len,
                 "a slack buffer overflowed at virtual time %.3f us (the channel into %s%s): the %d B between "
                 "network.high_water (%d B) and network.slack_buffer (%d B) must hold what still arrives during a "
                 "STOP's round trip, about %d B on this link (2 x %.1f ns propagation / %.4f ns per character, + 3); "
                 "raise network.slack_buffer to at least %d B or lower network.link_rate",
                 (double)e->fail_t * 1e-6, where, e->fail_occ < 0 ? ", its control-character queue" : "",
                 (int)(e->S - e->H), (int)e->H, (int)e->S, (int)need, (double)x->prop * 1e-3, (double)x->tau * 1e-3,
                 (int)(e->H + need));
        return 1;
    }
    if (e->oom) {
        snprintf(buf, len, "out of memory while simulating");
        return 1;
    }
    return 0;
}

static void eng_destroy(void *p)
{
    meng *e = p;
    if (!e) return;
    for (int i = 0; i < e->nw; i++) {
        for (int h = 0; h < e->w[i].caphop; h++) free(e->w[i].hop[h].seg);
        free(e->w[i].hop);
    }
    free(e->w);
    if (e->ch)
        for (int c = 0; c < e->nch; c++) { free(e->ch[c].req); free(e->ch[c].fifo); }
    if (e->host)
        for (int h = 0; h < e->nhost; h++) {
            free(e->host[h].rxq);
            free(e->host[h].tq);
            if (e->host[h].tr) { free(e->host[h].tr->sig); free(e->host[h].tr->chars); free(e->host[h].tr); }
        }
    free(e->ch);
    free(e->host);
    free(e->dirty);
    free(e->pos);
    free(e->heap);
    free(e->to);
    free(e->sbuf);
    free(e->tw);
    free(e);
}

static int worm_alloc(meng *e, int nh)
{
    int wi;
    if (e->freew >= 0) {
        wi = e->freew;
        e->freew = e->w[wi].qnext;
    } else {
        if (e->nw == e->capw) {
            int nc = e->capw ? 2 * e->capw : 64;
            mworm *nw = realloc(e->w, (size_t)nc * sizeof *nw);
            if (!nw) return -1;
            memset(nw + e->capw, 0, (size_t)(nc - e->capw) * sizeof *nw);
            e->w = nw;
            e->capw = nc;
        }
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

static int inject_one(meng *e, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie, uint32_t train,
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
        sched(e, ent_nictx(e, src), e->w[wi].ready, CL_NORM);
    return 0;
}

static int eng_inject(void *p, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie)
{
    return inject_one(p, src, dst, payload, t, cookie, 0, 1);
}

/* A train is its packets, each a worm of its own; only the last makes a callback. train_jump
 * runs the back-to-back ones in a few events when nothing else is in the network. */
static int eng_inject_train(void *p, int src, int dst, uint64_t payload, uint32_t count, nm_time_t t,
                            nm_time_t period, uint64_t cookie)
{
    ((meng *)p)->ntrains++;
    for (uint32_t i = 0; i < count; i++) {
        int rc = inject_one(p, src, dst, payload, t + (nm_time_t)i * period, cookie, count, i + 1 == count);
        if (rc < 0) return rc;   /* only the first can fail (out of memory aside) */
    }
    return 0;
}

/* nm_network_train_cut: the train's packets still in the NIC queue beyond the first `keep` leave
 * it (the queue's later packets get their ready times again); the rest of the train is keep. */
static int eng_train_cut(void *p, int src, uint64_t cookie, uint32_t keep, uint32_t *delivered)
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
                worm_free(e, q);
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
    if (ho->qhead >= 0 && e->ch[ho->ch_out].owner < 0) sched(e, ent_nictx(e, src), e->w[ho->qhead].ready, CL_NORM);
    else if (ho->qhead < 0) sched(e, ent_nictx(e, src), NM_TIME_NEVER, CL_NORM);
    return 0;
}

static nm_time_t eng_next_time(const void *p)
{
    const meng *e = p;
    if (e->hn == 0 || (e->hn == 1 && e->heap[0].ent == ent_beat(e))) return NM_TIME_NEVER;   /* idle */
    return e->heap[0].t;
}

static int eng_run_until(void *p, nm_time_t limit)
{
    meng *e = p;
    uint64_t over0 = e->overflow, oom0 = e->oom, dl0 = e->st.deadlocks;
    while (e->hn > 0) {
        int ent = e->heap[0].ent;
        nm_time_t t = e->heap[0].t;
        if (t >= limit) break;
        /* only the BEAT clock left: the network is idle */
        if (limit == NM_TIME_NEVER && e->hn == 1 && ent == ent_beat(e)) break;
        hremove(e, ent);
        e->now = t;
        dispatch(e, ent);
        flush_dirty(e);
        e->st.events++;
        if (UNLIKELY(e->tr_host >= 0)) {
            int h = e->tr_host;
            e->tr_host = -1;
            train_jump(e, h, limit);
        }
        if ((e->nlive > 0 && e->hn <= 2) || e->stuck) watchdog(e);
    }
    if ((e->nlive > 0 && e->hn <= 2) || e->stuck) watchdog(e);
    if (limit != NM_TIME_NEVER && limit > e->now) e->now = limit;
    if (e->oom != oom0) return -2;
    if (e->overflow != over0) return -1;
    return e->st.deadlocks != dl0 ? -3 : 0;
}

/* nm_network_run_instants: the same events in the same order as eng_run_until(t + 1) for each
 * instant t, stopping after an instant whose events failed (as that call would return). */
static int eng_run_instants(void *p, nm_time_t limit, const nm_time_t *stop)
{
    meng *e = p;
    uint64_t over0 = e->overflow, oom0 = e->oom, dl0 = e->st.deadlocks;
    int any = 0;
    nm_time_t last = 0;
    while (e->hn > 0) {
        int ent = e->heap[0].ent;
        nm_time_t t = e->heap[0].t;
        if (any && t > last && (e->oom != oom0 || e->overflow != over0 || e->st.deadlocks != dl0)) break;
        if (t >= limit || t >= *stop) break;
        if (e->hn == 1 && ent == ent_beat(e)) break;   /* only the BEAT clock: idle */
        hremove(e, ent);
        e->now = t;
        last = t;
        any = 1;
        dispatch(e, ent);
        flush_dirty(e);
        e->st.events++;
        if (UNLIKELY(e->tr_host >= 0)) {
            int h = e->tr_host;
            e->tr_host = -1;
            if (train_jump(e, h, tmin(limit, *stop))) last = e->now;
        }
        if ((e->nlive > 0 && e->hn <= 2) || e->stuck) watchdog(e);
    }
    if ((e->nlive > 0 && e->hn <= 2) || e->stuck) watchdog(e);
    if (any && last + 1 > e->now) e->now = last + 1;
    if (e->oom != oom0) return -2;
    if (e->overflow != over0) return -1;
    return e->st.deadlocks != dl0 ? -3 : 0;
}

static nm_time_t eng_now(const void *p) { return ((const meng *)p)->now; }

static uint64_t chan_chars(const meng *e, int c)
{
    mchan *x = (mchan *)&e->ch[c];
    uint64_t n = x->chars_final;
    if (x->owner >= 0) n += (uint64_t)sent_by(e, &e->w[x->owner].hop[x->owner_h], e->now - 1);
    return n;
}

static void eng_stats(const void *p, nm_stats *out)
{
    const meng *e = p;
    *out = e->st;
    uint64_t ch = 0;
    for (int c = 0; c < e->nch; c++) ch += chan_chars(e, c);
    out->char_hops = ch;
}

static size_t eng_link_busy(const void *p, nm_time_t *busy, size_t max)
{
    const meng *e = p;
    for (int c = 0; c < e->nch && (size_t)c < max; c++) busy[c] = (nm_time_t)chan_chars(e, c) * e->ch[c].tau;
    return (size_t)e->nch;
}

const nm_engine_ops nm_engine_myrinet = {
    {"myrinet", "myrinet", "character-level wormhole with slack buffers, STOP/GO (seed 000)"}, 1, eng_create, eng_destroy, eng_inject, eng_next_time, eng_run_until, eng_now, eng_stats,
    eng_link_busy, .run_instants = eng_run_instants, .failure_reason = eng_failure_reason,
    .inject_train = eng_inject_train, .train_cut = eng_train_cut,
};

/* Keys only this engine reads, registered when the configuration lacks them. */
static const nm_key_def myrinet_keys[] = {
    {.name = "network.nic_recv_queue", .type = NM_KEY_INT, .unit = "", .default_value = "0",
     .source = "mpisim design (seed 000 sec 2.1: the host approves each received packet)",
     .help = "packets a NIC holds between reception and delivery to the host (0 = unlimited); "
             "when full, arriving characters stay in the slack buffer",
     .flags = NM_KEY_NONNEG},
    {.name = "network.myrinet_stepping", .type = NM_KEY_INT, .unit = "", .default_value = "0",
     .source = "mpisim design (reference mode for tests)",
     .help = "1: the myrinet engine plans one character at a time (slow reference mode)",
     .flags = NM_KEY_NONNEG},
};

int nm_myrinet_register_keys(nm_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof myrinet_keys / sizeof myrinet_keys[0]; i++)
        if (!nm_config_has(cfg, myrinet_keys[i].name) &&
            nm_config_register(cfg, &myrinet_keys[i], 1, err, errlen) != 0)
            return -1;
    return 0;
}
