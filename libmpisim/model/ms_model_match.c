/* Communicators, requests, match queues, messages and matching (eager and rendezvous start). */
#include "ms_model_internal.h"
#include "cm_grow.h"

/* ---- communicators --------------------------------------------------------------------------- */

ms_comm *msm_comm_get(const ms_model *m, uint64_t id)
{
    if (id == MS_COMM_WORLD && m->ncomms > 0) return m->commv[0];   /* created first, in ms_model_create */
    return cm_hmap_get(&m->comms, id, 0);
}

/* comm rank of world rank w in c, -1 if not a member */
int msm_comm_rank_of(const ms_model *m, const ms_comm *c, int w)
{
    if (c->id == MS_COMM_WORLD) return w >= 0 && w < m->nranks ? w : -1;
    if (c->self) return 0;
    void *v = cm_hmap_get(&m->cranks, (uint64_t)c->idx, (uint64_t)w);
    return v ? (int)((intptr_t)v - 1) : -1;
}
/* world rank of comm rank r in c, seen by world rank `me` */
int msm_comm_world_of(const ms_comm *c, int r, int me)
{
    if (c->self) return me;
    if (!c->members) return r;
    return c->members[r];
}
uint64_t *msm_coll_seq_slot(ms_comm *c, int crank, int world)
{
    return c->self || c->id == MS_COMM_WORLD ? &c->coll_seq[world] : &c->coll_seq[crank];
}

ms_comm *msm_comm_new(ms_model *m, uint64_t id, int size, int self, size_t nseq)
{
    if (cm_grow((void **)&m->commv, &m->capcomms, m->ncomms + 1, sizeof *m->commv, 16) < 0) return NULL;
    ms_comm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->coll_seq = calloc(nseq ? nseq : 1, sizeof *c->coll_seq);
    if (!c->coll_seq) { free(c); return NULL; }
    c->id = id;
    c->size = size;
    c->self = self;
    c->idx = (int)m->ncomms;
    if (cm_hmap_put(&m->comms, id, 0, c) != 0) {
        free(c->coll_seq);
        free(c);
        return NULL;
    }
    m->commv[m->ncomms++] = c;
    return c;
}

int ms_model_comm_add(ms_model *m, uint64_t comm, int size, const int *world_ranks, char *err, size_t errlen)
{
    if (!m) return -1;
    if (comm == MS_COMM_WORLD || comm == MS_COMM_SELF) {
        set_err(err, errlen, "communicator id %" PRIu64 " is reserved (world/self)", comm);
        return -1;
    }
    if (size < 1 || !world_ranks) {
        set_err(err, errlen, "communicator %" PRIu64 ": bad size %d", comm, size);
        return -1;
    }
    ms_comm *c = msm_comm_get(m, comm);
    if (c) {
        if (c->size != size || memcmp(c->members, world_ranks, (size_t)size * sizeof(int)) != 0) {
            set_err(err, errlen, "communicator %" PRIu64 " registered again with a different member list", comm);
            return -1;
        }
        return 0;
    }
    for (int i = 0; i < size; i++) {
        if (world_ranks[i] < 0 || world_ranks[i] >= m->nranks) {
            set_err(err, errlen, "communicator %" PRIu64 ": member %d is world rank %d (of %d)", comm, i,
                    world_ranks[i], m->nranks);
            return -1;
        }
    }
    c = msm_comm_new(m, comm, size, 0, (size_t)size);
    if (!c) { set_err(err, errlen, "out of memory"); return -1; }
    c->members = malloc((size_t)size * sizeof(int));
    if (!c->members) { set_err(err, errlen, "out of memory"); return -1; }
    memcpy(c->members, world_ranks, (size_t)size * sizeof(int));
    for (int i = 0; i < size; i++) {
        if (cm_hmap_get(&m->cranks, (uint64_t)c->idx, (uint64_t)world_ranks[i])) {
            set_err(err, errlen, "communicator %" PRIu64 ": world rank %d listed twice", comm, world_ranks[i]);
            /* leave the comm registered but unusable members are harmless; report the error */
            return -1;
        }
        if (cm_hmap_put(&m->cranks, (uint64_t)c->idx, (uint64_t)world_ranks[i], (void *)(intptr_t)(i + 1)) != 0) {
            set_err(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* ---- requests -------------------------------------------------------------------------------- */

ms_req *msm_req_new(ms_model *m)
{
    uint32_t idx;
    ms_req *r = ms_pool_alloc(&m->reqpool, &idx);
    if (!r) return NULL;
    r->pidx = idx;
    r->done = NEVER;
    return r;
}
void msm_req_free(ms_model *m, ms_req *r)
{
    if (!r->internal && r->rank >= 0 && r->rank < m->nranks) {
        rank_state *rs = &m->ranks[r->rank];
        if (r->kind == REQ_RECV) rs->active_recvs--;
        else if (r->kind == REQ_COLL) rs->active_colls--;
    }
    ms_pool_release(&m->reqpool, r->pidx);
}

/* Active user requests by (rank, id). A rank's ids come from one counter (the shim's, the trace's)
 * and few are in flight at once, so nearly all of them sit in a small window per rank at their id
 * modulo REQ_WIN: a lookup is one load and a compare, where the hash map took a hash, a probe and,
 * for a removal, a shift of the probe chain. An id whose place is taken (by an older request still
 * active) goes to the hash map. */
ms_req *msm_req_find(const ms_model *m, int rank, uint64_t id)
{
    ms_req **w = m->ranks[rank].win;
    ms_req *r = w ? w[id & (REQ_WIN - 1)] : NULL;
    if (r && r->id == id) return r;
    return m->reqs.n ? cm_hmap_get(&m->reqs, (uint64_t)rank, id) : NULL;
}
int msm_req_index(ms_model *m, int rank, ms_req *r)
{
    rank_state *rs = &m->ranks[rank];
    if (!rs->win && !(rs->win = calloc(REQ_WIN, sizeof *rs->win))) return -1;
    ms_req **slot = &rs->win[r->id & (REQ_WIN - 1)];
    if (!*slot) *slot = r;
    else if (cm_hmap_put(&m->reqs, (uint64_t)rank, r->id, r) != 0) return -1;
    m->nreqs++;
    return 0;
}
void msm_req_unindex(ms_model *m, ms_req *r)
{
    ms_req **slot = &m->ranks[r->rank].win[r->id & (REQ_WIN - 1)];
    if (*slot == r) *slot = NULL;
    else cm_hmap_del(&m->reqs, (uint64_t)r->rank, r->id);
    m->nreqs--;
}

/* ---- match queues ---------------------------------------------------------------------------- */

static uint64_t mq_k2(int dst, int src) { return ((uint64_t)(uint32_t)dst << 32) | (uint32_t)(src + 2); }

ms_mq *msm_mq_find(const ms_model *m, int32_t ctx, int dst, int src)
{
    return cm_hmap_get(&m->mqs, (uint64_t)ctx, mq_k2(dst, src));
}
ms_mq *msm_mq_get(ms_model *m, int32_t ctx, int dst, int src)
{
    ms_mq *q = msm_mq_find(m, ctx, dst, src);
    if (q) return q;
    uint32_t idx;
    q = ms_pool_alloc(&m->mqpool, &idx);
    if (!q) return NULL;
    q->pidx = idx;
    q->k1 = (uint64_t)ctx;
    q->k2 = mq_k2(dst, src);
    q->any = src == MS_ANY_SOURCE;
    if (cm_hmap_put(&m->mqs, q->k1, q->k2, q) != 0) {
        ms_pool_release(&m->mqpool, idx);
        return NULL;
    }
    return q;
}
/* A queue that became empty stays in the map (and in the pool): the same (context, receiver,
 * source) is usually used again soon, and creating it again costs a hash insertion and a deletion.
 * An empty queue is found like an absent one is not (no posted receive, no unexpected message).
 * mq_sweep removes the empty ones when the map grows past mq_limit; it runs only where no queue
 * pointer is held (at the top of the driving loop). */
static void mq_maybe_release(ms_model *m, ms_mq *q)
{
    (void)m;
    (void)q;
}
void msm_mq_sweep(ms_model *m)
{
    size_t n = 0;
    ms_mq **empty = malloc(m->mqs.n * sizeof *empty);
    if (empty) {
        for (size_t i = 0; i < m->mqs.cap; i++) {
            ms_mq *q = m->mqs.s[i].v;
            if (q && !q->ph && !q->uh) empty[n++] = q;
        }
        for (size_t i = 0; i < n; i++) {
            cm_hmap_del(&m->mqs, empty[i]->k1, empty[i]->k2);
            ms_pool_release(&m->mqpool, empty[i]->pidx);
        }
        free(empty);
    }
    m->mq_limit = 2 * m->mqs.n > MQ_LIMIT_MIN ? 2 * m->mqs.n : MQ_LIMIT_MIN;
}
void msm_posted_append(ms_mq *q, ms_req *r)
{
    r->mq = q;
    r->qn = NULL;
    r->qp = q->pt;
    if (q->pt) q->pt->qn = r;
    else q->ph = r;
    q->pt = r;
}
void msm_posted_unlink(ms_model *m, ms_req *r)
{
    ms_mq *q = r->mq;
    if (r->qp) r->qp->qn = r->qn;
    else q->ph = r->qn;
    if (r->qn) r->qn->qp = r->qp;
    else q->pt = r->qp;
    r->mq = NULL;
    r->qn = r->qp = NULL;
    mq_maybe_release(m, q);
}
static void unexp_append(ms_mq *qs, ms_mq *qa, ms_msg *g)
{
    g->mq_src = qs;
    g->sn = NULL;
    g->sp = qs->ut;
    if (qs->ut) qs->ut->sn = g;
    else qs->uh = g;
    qs->ut = g;
    g->mq_any = qa;
    g->an = NULL;
    g->ap = qa->ut;
    if (qa->ut) qa->ut->an = g;
    else qa->uh = g;
    qa->ut = g;
}
void msm_unexp_unlink(ms_model *m, ms_msg *g)
{
    ms_mq *qs = g->mq_src, *qa = g->mq_any;
    if (g->sp) g->sp->sn = g->sn;
    else qs->uh = g->sn;
    if (g->sn) g->sn->sp = g->sp;
    else qs->ut = g->sp;
    if (g->ap) g->ap->an = g->an;
    else qa->uh = g->an;
    if (g->an) g->an->ap = g->ap;
    else qa->ut = g->ap;
    g->mq_src = g->mq_any = NULL;
    g->sn = g->sp = g->an = g->ap = NULL;
    mq_maybe_release(m, qs);
    mq_maybe_release(m, qa);
}
static int tag_ok(int64_t want, int64_t have) { return want == MS_ANY_TAG || want == have; }

/* Earliest-arrived unexpected message of queue q (that of src) with tag, or NULL. */
ms_msg *msm_unexp_find_in(const ms_mq *q, int src, int64_t tag)
{
    if (!q) return NULL;
    if (src == MS_ANY_SOURCE) {
        for (ms_msg *g = q->uh; g; g = g->an)
            if (tag_ok(tag, g->tag)) return g;
    } else {
        for (ms_msg *g = q->uh; g; g = g->sn)
            if (tag_ok(tag, g->tag)) return g;
    }
    return NULL;
}

/* Earliest-arrived unexpected message for (ctx, dst, src, tag), or NULL. */
ms_msg *msm_unexp_find(const ms_model *m, int32_t ctx, int dst, int src, int64_t tag)
{
    return msm_unexp_find_in(msm_mq_find(m, ctx, dst, src), src, tag);
}

/* ---- messages -------------------------------------------------------------------------------- */

/* A zeroed message with its index (packet cookies name it), or NULL with the error recorded. */
ms_msg *msm_msg_new(ms_model *m)
{
    uint32_t idx;
    ms_msg *g = ms_pool_alloc(&m->msgs, &idx);
    if (!g || idx > (UINT32_MAX >> PK_BITS)) {
        model_error(m, "out of memory (messages)");
        return NULL;
    }
    g->idx = idx;
    return g;
}
void msm_msg_unref(ms_model *m, ms_msg *g)
{
    if (--g->pending == 0) ms_pool_release(&m->msgs, g->idx);
}


void msm_push_resolution(ms_model *m, int rank, uint64_t req, int src, int64_t tag, uint64_t bytes)
{
    rank_state *rs = &m->ranks[rank];
    if (rs->rhead > 0 && rs->rhead == rs->rn) rs->rhead = rs->rn = 0;
    if (cm_grow((void **)&rs->resol, &rs->rcap, rs->rn + 1, sizeof *rs->resol, 8) < 0) {
        model_error(m, "out of memory (resolutions)");
        return;
    }
    ms_resolution *x = &rs->resol[rs->rn++];
    x->req = req;
    x->source = src;
    x->tag = (int)tag;
    x->bytes = bytes;
}


void msm_schedule_inject(ms_model *m, ms_msg *g, int kind, ms_time_t t)
{
    g->pending++;
    msm_push_internal(m, t, EV_INJECT, g, (uint64_t)kind);
}


/* The receiver of rendezvous message g, matched by r, says "send" (CTS) from t: it registers its
 * buffer (host model) first. */
void msm_rndv_send_cts(ms_model *m, ms_msg *g, ms_req *r, ms_time_t t)
{
    int off_node = g->sh != g->dh;
    int big = (int64_t)g->bytes >= m->eager_thr;
    ms_time_t reg = off_node && big && !r->internal ? ms_host_register(m->host, r->rank, r->buf, r->bytes) : 0;
    ms_time_t cts = t + or_cost(m, 0) + ms_host_rndv_handling(m->host);
    if (reg) {   /* the receiving thread's CPU registers its buffers one after the other */
        waiter *rw = wt_of(&m->ranks[r->rank], r->thread);
        cts = tmax(cts, rw->cpu_free) + reg;
        rw->cpu_free = cts;
    }
    msm_schedule_inject(m, g, PK_CTS, cts);
}

/* The sender of rendezvous message g, told by the CTS, starts its data (and FIN) from t. */
void msm_rndv_send_data(ms_model *m, ms_msg *g, ms_time_t t)
{
    ms_time_t go = tmax(t + ms_host_rndv_handling(m->host), g->data_ready);
    msm_schedule_inject(m, g, PK_DATA, go);
    /* GM delivers in order (seed 003 sec 2): the FIN may follow the put without waiting for it */
    if (g->sh != g->dh && ms_host_rndv_fin(m->host) == 2) msm_schedule_inject(m, g, PK_FIN, go);
}

/* A receive r meets message g at match time mt; in_call: the receiving rank is inside an MPI call
 * then (its own post made the match). */
void msm_match(ms_model *m, ms_msg *g, ms_req *r, ms_time_t mt, int in_call)
{
    r->m_src = g->src_c;
    r->m_tag = g->tag;
    r->m_bytes = g->bytes;
    if (!r->internal && (r->peer == MS_ANY_SOURCE || r->tag == MS_ANY_TAG || r->notify))
        msm_push_resolution(m, r->rank, r->id, g->src_c, g->tag, g->bytes);
    rank_state *rd = &m->ranks[g->dst];
    rd->st.msgs_recv++;
    rd->st.bytes_recv += g->bytes;
    int off_node = g->sh != g->dh;
    if (!g->rndv) {
        if (g->mode == MS_SEND_SYNC) msm_schedule_inject(m, g, PK_ACK, mt);
        /* eager data is copied out of the registered receive buffers (host model), writing the
         * buffer's pages for the first time if the rank never received into them */
        ms_time_t touch = r->internal ? 0 : ms_host_touch(m->host, r->rank, r->buf, g->bytes);
        /* a message that came before its receive was queued unexpected: the library copies it
         * out of its queue again (mpi.recv_unexpected_overhead) */
        ms_time_t unexp = r->post > g->arrival ? m->or_unexp + (ms_time_t)g->bytes * m->or_unexp_pb : 0;
        ms_time_t done = rank_cpu(m, r, mt, or_cost(m, g->bytes) + unexp + (off_node ? ms_host_recv_copy(m->host, g->bytes) : 0) + touch);
        if (g->ack_taken) msm_schedule_inject(m, g, PK_ACK, done);   /* the fragment goes back once emptied */
        msm_determine(m, r, done);
    } else {
        g->rreq = r;
        msm_rndv_turn(m, r->rank, g, PK_CTS, mt, in_call);
    }
    msm_msg_unref(m, g);   /* the "awaiting match" reference */
}

/* Message g has arrived at its receiver at time d (eager: last data packet; rendezvous: RTS). */
void msm_arrival(ms_model *m, ms_msg *g, ms_time_t d)
{
    g->arrival = d;
    ms_mq *qs = msm_mq_find(m, g->ctx, g->dst, g->src_c), *qa = msm_mq_find(m, g->ctx, g->dst, MS_ANY_SOURCE);
    ms_req *r1 = NULL, *r2 = NULL;
    if (qs)
        for (ms_req *r = qs->ph; r; r = r->qn)
            if (tag_ok(r->tag, g->tag)) { r1 = r; break; }
    if (qa)
        for (ms_req *r = qa->ph; r; r = r->qn)
            if (tag_ok(r->tag, g->tag)) { r2 = r; break; }
    ms_req *r = r1;
    if (r2 && (!r || r2->post_seq < r->post_seq)) r = r2;
    if (r) {
        msm_posted_unlink(m, r);
        msm_match(m, g, r, tmax(d, r->post), 0);
        return;
    }
    if (!qs) qs = msm_mq_get(m, g->ctx, g->dst, g->src_c);   /* found above, or made now */
    if (!qa) qa = msm_mq_get(m, g->ctx, g->dst, MS_ANY_SOURCE);
    if (!qs || !qa) { model_error(m, "out of memory (match queues)"); return; }
    unexp_append(qs, qa, g);
    rank_state *rs = &m->ranks[g->dst];
    if (rs->unexp_first == NEVER) rs->unexp_first = d;
    for (int i = 0; i <= rs->nwx; i++) {   /* every thread whose MPI_Probe it matches sees it */
        waiter *w = wt_at(rs, i);
        if (!w || !w->parmed || w->pctx != g->ctx || !(w->psrc == MS_ANY_SOURCE || w->psrc == g->src_c) ||
            !tag_ok(w->ptag, g->tag))
            continue;
        w->parmed = 0;
        w->pfound = 1;
        w->pf_src = g->src_c;
        w->pf_tag = g->tag;
        w->pf_bytes = g->bytes;
        w->pf_time = d;
        if (w->psrc == MS_ANY_SOURCE || w->ptag == MS_ANY_TAG)
            msm_push_resolution(m, g->dst, MS_RESOLUTION_PROBE, g->src_c, g->tag, g->bytes);
        msm_schedule_resume(m, g->dst, w, d);
    }
}

ms_conn *msm_conn_get(ms_model *m, int sn, int dn)
{
    ms_conn *c = cm_hmap_get(&m->conns, (uint64_t)sn, (uint64_t)dn);
    if (c) return c;
    uint32_t idx;
    c = ms_pool_alloc(&m->connpool, &idx);
    if (!c) return NULL;
    c->pidx = idx;
    if (cm_hmap_put(&m->conns, (uint64_t)sn, (uint64_t)dn, c) != 0) {
        ms_pool_release(&m->connpool, idx);
        return NULL;
    }
    return c;
}

/* Message g's start (eager: all its data; rendezvous: the RTS) is at its receiver at d. With
 * several ports a later start can get there first: it waits for the earlier ones (in order per
 * connection, as GM delivers), so that MPI's non-overtaking holds. */
void msm_start_arrived(ms_model *m, ms_msg *g, ms_time_t d)
{
    if (m->ports == 1 || g->sh == g->dh) {
        msm_arrival(m, g, d);
        return;
    }
    ms_conn *c = msm_conn_get(m, g->sh, g->dh);
    if (!c) { model_error(m, "out of memory (connections)"); msm_arrival(m, g, d); return; }
    if (g->cseq != c->next) {
        ms_msg **pp = &c->parked;
        while (*pp && (*pp)->cseq < g->cseq) pp = &(*pp)->sn;
        g->sn = *pp;
        *pp = g;
        g->pending++;   /* held while parked */
        return;
    }
    msm_arrival(m, g, d);
    c->next++;
    while (c->parked && c->parked->cseq == c->next) {
        ms_msg *p = c->parked;
        c->parked = p->sn;
        p->sn = NULL;
        msm_arrival(m, p, d);
        c->next++;
        msm_msg_unref(m, p);
    }
}
