/* The model's event queue, completion of requests, resumption of waiting ranks, and the loop that
 * drives events and network deliveries. */
#include "ms_model_internal.h"
#include "cm_grow.h"

/* ---- events ---------------------------------------------------------------------------------- */

static void push_ev(ms_model *m, ms_time_t t, uint64_t order, uint32_t type, int rank, void *p, uint64_t a)
{
    (void)rank;
    ms_event e = {t, order, p, (a << EV_TYPE_BITS) | type};
    if (ms_evq_push(&m->heap, e) != 0) model_error(m, "out of memory (event queue)");
}
void msm_push_internal(ms_model *m, ms_time_t t, uint32_t type, void *p, uint64_t a)
{
    push_ev(m, t, (CLS_INTERNAL << 62) | (m->seq0++ & ((1ULL << 62) - 1)), type, -1, p, a);
}
static inline int ev_before(const ms_event *a, const ms_event *b)
{
    return a->t < b->t || (a->t == b->t && a->k < b->k);
}
/* An EV_NIC that takes a packet already in the network as part of a train: ordered with the other
 * events exactly as push_internal's, but kept aside so that the network may run past it. */
void msm_push_train_nic(ms_model *m, ms_time_t t, int node)
{
    if (cm_grow((void **)&m->tev, &m->captev, m->ntev + 1, sizeof *m->tev, 8) < 0) {
        model_error(m, "out of memory (event queue)");
        return;
    }
    ms_event ev = {t, (CLS_INTERNAL << 62) | (m->seq0++ & ((1ULL << 62) - 1)), NULL,
                   ((uint64_t)node << EV_TYPE_BITS) | EV_NIC};
    size_t i = m->ntev++;   /* kept in order: the first is the next */
    while (i > 0 && ev_before(&ev, &m->tev[i - 1])) { m->tev[i] = m->tev[i - 1]; i--; }
    m->tev[i] = ev;
}
void msm_tev_remove(ms_model *m, size_t i)
{
    memmove(&m->tev[i], &m->tev[i + 1], (m->ntev - i - 1) * sizeof *m->tev);
    m->ntev--;
}
/* The model's next event, trains' EV_NICs included; *tidx its index in m->tev or -1. */
const ms_event *msm_next_event(const ms_model *m, long *tidx)
{
    const ms_event *e = ms_evq_top(&m->heap);
    long i = tev_first(m);
    *tidx = -1;
    if (i >= 0 && (!e || ev_before(&m->tev[i], e))) { *tidx = i; return &m->tev[i]; }
    return e;
}
void msm_pop_event(ms_model *m, long tidx, ms_event *out)
{
    if (tidx < 0) { ms_evq_pop(&m->heap, out); return; }
    *out = m->tev[tidx];
    msm_tev_remove(m, (size_t)tidx);
}
/* How far the network may run: before the model's next event of its own heap, and before the
 * NIC takes its first packet after each train (that one is pushed when the train's last packet is
 * taken, which may come after the network has run past it). */
ms_time_t msm_network_bound(const ms_model *m, ms_time_t bound)
{
    const ms_event *e = ms_evq_top(&m->heap);
    if (e) {
        ms_time_t b = ORDER_CLASS(e->k) == CLS_RESUME ? e->t + 1 : e->t;
        if (b < bound) bound = b;
    }
    for (size_t i = 0; i < m->ntev; i++) {
        const nic_state *ns = &m->nic[EV_ARG(&m->tev[i])];
        if (ns->tr_after < bound) bound = ns->tr_after;
    }
    return bound;
}

void msm_push_post(ms_model *m, int rank, ms_time_t t, uint32_t type, void *p)
{
    rank_state *rs = &m->ranks[rank];
    push_ev(m, t, (CLS_POST << 62) | ((uint64_t)rank << RANK_SHIFT) | (rs->cnt++ & LOW38), type, rank, p, 0);
}
void msm_schedule_resume(ms_model *m, int rank, waiter *w, ms_time_t T)
{
    rank_state *rs = &m->ranks[rank];
    if (w->sched != NEVER && T >= w->sched) return;
    w->sched = T;
    w->gen = ++rs->gen;   /* the rank's: one order key per resume, whichever thread */
    push_ev(m, T, (CLS_RESUME << 62) | ((uint64_t)rank << RANK_SHIFT) | (w->gen & LOW38), EV_RESUME, rank,
            w, w->gen);
}

/* ---- completion and waits -------------------------------------------------------------------- */

void msm_determine(ms_model *m, ms_req *r, ms_time_t T)
{
    r->done = T;
    if (r->open) {
        r->open = 0;
        m->ranks[r->rank].open_sends--;
    }
    if (r->internal) {
        coll_member *cm = r->cm;
        msm_req_free(m, r);
        msm_coll_op_done(m, cm, T);
        return;
    }
    if (r->forget) {   /* freed by the program: nobody will ask */
        msm_req_unindex(m, r);
        msm_req_free(m, r);
        return;
    }
    if (!r->in_wait) return;
    waiter *w = wt_of(&m->ranks[r->rank], r->wthread);
    if (w->wkind != W_WAIT) return;
    if (w->wmode == MS_WAIT_ALL) {
        if (T > w->wmax) w->wmax = T;
        if (--w->nundet == 0) msm_schedule_resume(m, r->rank, w, tmax(w->wt, w->wmax));
    } else {
        msm_schedule_resume(m, r->rank, w, tmax(w->wt, T));
    }
}

static void fill_result(ms_req_result *o, const ms_req *r, int completed)
{
    o->req = r->id;
    o->completed = completed;
    o->source = -1;
    o->tag = -1;
    o->bytes = r->bytes;
    o->complete_time = completed ? r->done : NEVER;
    o->cancelled = completed && r->cancelled;
    if (completed && r->kind == REQ_RECV && !r->cancelled) {
        o->source = r->m_src;
        o->tag = (int)r->m_tag;
        o->bytes = r->m_bytes;
    }
}

/* A probe found message g: what its answer reports (and, for a wildcard, how it resolved). */
static void probe_found(ms_model *m, int rank, waiter *w, const ms_msg *g)
{
    w->pfound = 1;
    w->pf_src = g->src_c;
    w->pf_tag = g->tag;
    w->pf_bytes = g->bytes;
    w->pf_time = g->arrival;
    if (w->psrc == MS_ANY_SOURCE || w->ptag == MS_ANY_TAG)
        msm_push_resolution(m, rank, MS_RESOLUTION_PROBE, g->src_c, g->tag, g->bytes);
}

static void do_resume(ms_model *m, int rank, waiter *w, uint64_t gen, ms_time_t T)
{
    rank_state *rs = &m->ranks[rank];
    if (!w->blocked || (w->gen & (UINT64_MAX >> EV_TYPE_BITS)) != gen) return;
    size_t n = w->wn, nres = n ? n : 1;
    if (w->rescap < nres) {
        ms_req_result *nr = realloc(w->res, nres * sizeof *nr);
        if (!nr) { model_error(m, "out of memory (results)"); return; }
        w->res = nr;
        w->rescap = nres;
    }
    ms_req_result *res = w->res;
    ms_time_t R = T;
    size_t nout = n;
    if (w->wkind == W_WAIT || w->wkind == W_TEST) {
        ms_time_t at = T;   /* completed means done <= at */
        if (w->wkind == W_TEST) R = T + m->poll;
        int all = 1;
        size_t best = n;
        for (size_t i = 0; i < n; i++) {
            ms_req *r = w->wreqs[i];
            if (r->done > at) all = 0;
            else if (best == n || r->done < w->wreqs[best]->done) best = i;
        }
        for (size_t i = 0; i < n; i++) {
            ms_req *r = w->wreqs[i];
            int c;
            switch (w->wmode) {
            case MS_WAIT_ALL: case MS_TEST_ALL: case MS_TEST_PEEK: c = all; break;
            case MS_WAIT_ANY: case MS_TEST_ANY: c = i == best; break;
            default: c = r->done <= at; break;
            }
            fill_result(&res[i], r, c);
        }
        for (size_t i = 0; i < n; i++) {
            ms_req *r = w->wreqs[i];
            r->in_wait = 0;
            if (res[i].completed && w->wmode != MS_TEST_PEEK) {
                msm_req_unindex(m, r);
                msm_req_free(m, r);
            }
        }
    } else {
        /* probes: one result */
        nout = 1;
        memset(&res[0], 0, sizeof res[0]);
        res[0].req = 0;
        res[0].source = -1;
        res[0].tag = -1;
        res[0].complete_time = NEVER;
        if (w->wkind == W_IPROBE) {
            R = T + m->poll;
            rs->unexp_first = NEVER;
            if (!w->pfound && w->psrc != MS_PROC_NULL) {
                ms_msg *g = msm_unexp_find(m, w->pctx, rank, w->psrc, w->ptag);
                if (g) probe_found(m, rank, w, g);
            }
        }
        if (w->pfound) {
            res[0].completed = 1;
            res[0].source = w->pf_src;
            res[0].tag = (int)w->pf_tag;
            res[0].bytes = w->pf_bytes;
            res[0].complete_time = w->pf_time;
        }
        w->parmed = 0;
        w->pfound = 0;
    }
    w->blocked = 0;
    w->wkind = W_NONE;
    w->wn = 0;
    w->sched = NEVER;
    if (R < m->stop) m->stop = R;   /* the resumed rank may post events from R on */
    if (m->resume) m->resume(m->user, rank, w->thread, R, res, nout);
}

static void do_probe_check(ms_model *m, int rank, waiter *w, ms_time_t t)
{
    if (!w->blocked || w->wkind != W_PROBE) return;
    ms_msg *g = msm_unexp_find(m, w->pctx, rank, w->psrc, w->ptag);
    if (g) {
        probe_found(m, rank, w, g);
        msm_schedule_resume(m, rank, w, t);
    } else {
        w->parmed = 1;
    }
}

/* ---- driving --------------------------------------------------------------------------------- */

void msm_process(ms_model *m, const ms_event *e)
{
    if (ORDER_CLASS(e->k) == CLS_POST) {   /* the rank is inside an MPI call at e->t */
        rank_state *rs = &m->ranks[EV_RANK(e)];
        if (EV_TYPE(e) == EV_PROGRESS) rs->progress_pending = 0;
        if (rs->nturns) msm_rndv_progress(m, EV_RANK(e), e->t);
    }
    switch (EV_TYPE(e)) {
    case EV_SEND_POST: msm_do_send(m, e->p, e->t); break;
    case EV_RECV_POST: msm_do_recv(m, e->p, e->t); break;
    case EV_COLL_STEP: msm_coll_step_start(m, e->p, e->t); break;
    case EV_PROBE: do_probe_check(m, EV_RANK(e), e->p, e->t); break;
    case EV_INJECT: msm_do_inject(m, e->p, (int)EV_ARG(e), e->t); break;
    case EV_RESUME: do_resume(m, EV_RANK(e), e->p, EV_ARG(e), e->t); break;
    case EV_CANCEL: msm_do_cancel(m, e->p, e->t); break;
    case EV_NIC: msm_do_nic(m, (int)EV_ARG(e), e->t); break;
    case EV_PKT: msm_packet_done(m, e->p, (int)EV_ARG(e), e->t); break;
    case EV_MCAST: msm_do_mcast(m, e->p, e->t); break;
    case EV_RMA_POST: msm_do_rma(m, e->p, e->t); break;
    default: break;
    }
}

void msm_on_deliver(void *user, const nm_delivery *d)
{
    ms_model *m = user;
    ms_msg *g = msg_at(m, (uint32_t)(d->cookie >> PK_BITS));
    if (!g) { model_error(m, "delivery with unknown cookie %" PRIu64, d->cookie); return; }
    int was = m->in_cb;
    m->in_cb = 1;
    /* Trains' EV_NICs due by now come first: packet by packet, the network would have stopped for
     * them (ms_model_run_until). */
    for (long ti; (ti = tev_first(m)) >= 0 && m->tev[ti].t <= d->deliver_time;) {
        ms_event ev;
        msm_pop_event(m, ti, &ev);
        msm_process(m, &ev);
    }
    /* the receiving NIC processes the packet and writes it to host memory */
    int node = ms_host_node_of_host(m->host, d->dst_host);
    int kind = (int)(d->cookie & ((1u << PK_BITS) - 1));
    ms_time_t in_mem = msm_nic_ack(m, g, kind) ? ms_host_rx_nic_ack(m->host, node, d->payload_bytes, d->deliver_time)
                                           : ms_host_rx_packet(m->host, node, d->payload_bytes, d->deliver_time);
    /* a train's earlier packets, delivered unseen (receiving holds no state: see trains_ok) */
    for (uint32_t i = 1; i < d->train; i++) msm_packet_done(m, g, kind, d->deliver_time);
    msm_packet_done_at(m, g, kind, in_mem, d->deliver_time);
    /* Zero-delay reactions (a CTS making the data go, an ACK at match time, a collective step
     * starting when a receive completes) are processed now, while the network is at this time. */
    for (;;) {
        long ti;
        const ms_event *e = msm_next_event(m, &ti);
        if (!e || e->t > d->deliver_time || ORDER_CLASS(e->k) == CLS_RESUME) break;
        ms_event ev;
        msm_pop_event(m, ti, &ev);
        msm_process(m, &ev);
    }
    /* the network runs ahead only to the model's next event (see ms_model_run_until) */
    ms_time_t b = msm_network_bound(m, NEVER);
    if (b != NEVER) nm_network_stop_before(m->net, b);
    m->in_cb = was;
}

void msm_on_drop(void *user, const nm_delivery *d)
{
    ms_model *m = user;
    model_error(m, "packet dropped by the network (host %d -> host %d, cookie %" PRIu64 "); delivered anyway",
                d->src_host, d->dst_host, d->cookie);
    msm_on_deliver(user, d);
}

ms_time_t ms_model_next_time(const ms_model *m)
{
    if (!m) return NEVER;
    long ti;
    const ms_event *e = msm_next_event(m, &ti);
    ms_time_t tm = e ? e->t : NEVER, tn = nm_network_next_time(m->net);
    return tm < tn ? tm : tn;
}

ms_time_t ms_model_now(const ms_model *m) { return m ? m->now : 0; }
