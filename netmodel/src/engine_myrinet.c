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
 * then water-mark checks and BEATs (3); ties within a class by sequence number.
 *
 * The engine's parts and its types: myrinet_internal.h. */
#include "myrinet_internal.h"
#include "cm_grow.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- event heap */

/* The heap (cm_heap.h) is keyed (time, class << 56 | sequence): keys are unique, so the order of
 * events does not depend on the heap's shape. A slot carries its key, so comparisons read the heap
 * array only; pos[] is each entity's slot, for removal and rescheduling. */
void myr_hremove(meng *e, int ent)
{
    int i = e->pos[ent];
    if (i < 0) return;
    e->pos[ent] = -1;
    myr_evq_remove_at_ctx(&e->heap, (size_t)i, e->pos);
}
/* (Re)schedule entity `ent` at t in class cl; NM_TIME_NEVER unschedules. An unchanged
 * (time, class) keeps its sequence number, so re-evaluating a state does not reorder ties. */
void myr_sched(meng *e, int ent, nm_time_t t, int cl)
{
    if (t == NM_TIME_NEVER) { myr_hremove(e, ent); return; }
    int i = e->pos[ent];
    if (i >= 0 && e->heap.e[i].t == t && (int)(e->heap.e[i].k >> 56) == cl) return;
    hslot x = {t, ((uint64_t)cl << 56) | (e->seq++ & 0x00ffffffffffffffULL), ent};
    if (i >= 0) myr_evq_update_at_ctx(&e->heap, (size_t)i, x, e->pos);
    else (void)myr_evq_push_ctx(&e->heap, x, e->pos);   /* never grows: room for every entity */
}

/* ---------------------------------------------------------------- segments */

/* Characters of hp whose start is <= t. lo/locnt cache the segments wholly before `lim`. */
int32_t myr_cnt_upto(mhop *hp, nm_time_t tau, nm_time_t t, int *lo, int32_t *locnt, nm_time_t lim)
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
    if (cm_grow((void **)&hp->seg, &hp->cap, (size_t)hp->nseg + 1, sizeof *hp->seg, 4) < 0) {
        e->oom++;
        return -1;
    }
    hp->seg[hp->nseg++] = (mseg){t0, k0, n};
    hp->nplan += n;
    return 0;
}
/* Remove planned characters that start at or after tcut. */
void myr_seg_cut_time(mhop *hp, nm_time_t tcut, nm_time_t tau)
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

/* ---------------------------------------------------------------- planning */

/* Plan the owner's characters on channel c as far as they are known to be available. */
void myr_plan(meng *e, int c)
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
void myr_hop_changed(meng *e, int wi, int h, int32_t kmin)
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
        myr_plan(e, dn->ch);
        if (keep >= old && dn->nplan == old) { mark(e, dn->ch, D_TX); return; }
        kmin = keep < old ? keep : old;
        h++;
    }
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
    e->heap.e = malloc((size_t)e->nent * sizeof *e->heap.e);
    e->heap.cap = e->heap.e ? (size_t)e->nent : 0;
    if (!e->ch || !e->host || !e->dirty || !e->pos || !e->heap.e) {
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
        myr_sched(e, ent_beat(e), e->next_beat, CL_THR);
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
            myr_train_free(e->host[h].tr);
        }
    free(e->ch);
    free(e->host);
    free(e->dirty);
    free(e->pos);
    free(e->heap.e);
    free(e->to);
    free(e->sbuf);
    free(e->tw);
    free(e);
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
    {"myrinet", "myrinet", "character-level wormhole with slack buffers, STOP/GO (seed 000)"}, 1, eng_create, eng_destroy, myr_inject, myr_next_time, myr_run_until, eng_now, eng_stats,
    eng_link_busy, .run_instants = myr_run_instants, .failure_reason = eng_failure_reason,
    .inject_train = myr_inject_train, .train_cut = myr_train_cut,
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
