/* The point-to-point protocol below matching: host-driven rendezvous, packets, NIC queues and
 * trains, injection into the network, and posting sends, receives and cancels. */
#include "ms_model_internal.h"
#include "cm_grow.h"

/* how many bytes of [addr, addr + len) were the source of one of rank rs's recent rendezvous
 * sends on its node (the largest overlap with one of them) */
static uint64_t sent_overlap(const rank_state *rs, uint64_t addr, uint64_t len)
{
    uint64_t best = 0;
    if (!addr || !len) return 0;
    for (unsigned i = 0; i < SENT_RING; i++) {
        uint64_t a = rs->sent_at[i], n = rs->sent_len[i];
        if (!a || !n) continue;
        uint64_t lo = a > addr ? a : addr, hi = a + n < addr + len ? a + n : addr + len;
        if (hi > lo && hi - lo > best) best = hi - lo;
    }
    return best;
}

/* ---- host-driven rendezvous (host.rndv_progress = in_call) ------------------------------------ */

/* When `rank` is known to be inside an MPI call from: a wait, test or probe it is blocked in, or
 * MPI_Finalize; NEVER while it runs its own code (its next call is not known yet). */
ms_time_t msm_rank_call_from(const ms_model *m, int rank)
{
    rank_state *rs = &m->ranks[rank];
    ms_time_t from = NEVER;
    for (int i = 0; i <= rs->nwx; i++) {
        const waiter *w = wt_at(rs, i);
        if (w && w->blocked && w->wt < from) from = w->wt;
    }
    if (from != NEVER) return from;
    if (rs->finalized) return rs->fin_t;
    return NEVER;
}

/* `rank`'s next entry into the MPI library is at t (a post, a wait, a probe): the turns it holds
 * happen then. */
void msm_rndv_progress(ms_model *m, int rank, ms_time_t t)
{
    rank_state *rs = &m->ranks[rank];
    for (size_t i = 0; i < rs->nturns; i++) {   /* a turn only schedules injections: the list stays put */
        ms_msg *g = msg_at(m, (uint32_t)(rs->turns[i] >> PK_BITS));
        msm_do_turn(m, g, (int)(rs->turns[i] & ((1u << PK_BITS) - 1)), t);
        msm_msg_unref(m, g);
    }
    rs->nturns = 0;
}

/* A turn of rendezvous g (PK_CTS: the receiver says "send"; PK_DATA: the sender starts its data)
 * is due at t on `rank`'s host. MPICH-GM drives its rendezvous from the host (seed 003 sec 5.5: the
 * overlap drops at the protocol switch): under host.rndv_progress = in_call the turn waits for the
 * rank to be inside an MPI call. */
/* A turn happens at t: the receiver's CTS, the sender's data, or (PK_RMA) a one-sided operation at
 * its target. */
void msm_do_turn(ms_model *m, ms_msg *g, int kind, ms_time_t t)
{
    if (kind == PK_CTS) msm_rndv_send_cts(m, g, g->rreq, t);
    else if (kind == PK_RMA) msm_rma_handle(m, g, t);
    else msm_rndv_send_data(m, g, t);
}

/* `rank` holds turn (g, kind), due at t, until its next entry into the MPI library (`from` when it
 * is in a call entered later than t). Out of memory: the turn happens now. */
void msm_hold_turn(ms_model *m, int rank, ms_msg *g, int kind, ms_time_t t, ms_time_t from)
{
    rank_state *rs = &m->ranks[rank];
    if (cm_grow((void **)&rs->turns, &rs->capturns, rs->nturns + 1, sizeof *rs->turns, 8) < 0) {
        model_error(m, "out of memory (held turns)");
        msm_do_turn(m, g, kind, t);
        return;
    }
    g->pending++;   /* held by the turn */
    rs->turns[rs->nturns++] = ((uint64_t)g->idx << PK_BITS) | (uint64_t)kind;
    /* in a call entered later than t: that call is its next entry (unless a post of its still
     * queued comes first, which makes progress itself) */
    if (from != NEVER && !rs->progress_pending) {
        rs->progress_pending = 1;
        msm_push_post(m, rank, from, EV_PROGRESS, NULL);
    }
}

void msm_rndv_turn(ms_model *m, int rank, ms_msg *g, int kind, ms_time_t t, int in_call)
{
    ms_time_t from = msm_rank_call_from(m, rank);
    if (in_call || !ms_host_rndv_in_call(m->host) || from <= t) msm_do_turn(m, g, kind, t);
    else msm_hold_turn(m, rank, g, kind, t, from);
}

/* A rank enters a wait, test or probe at t (API call): its held turns happen then, by an event in
 * its posting order (never an internal one: the order must not depend on how calls interleave). */
void msm_rndv_enter_call(ms_model *m, int rank, ms_time_t t)
{
    rank_state *rs = &m->ranks[rank];
    if (rs->nturns && !rs->progress_pending) {
        rs->progress_pending = 1;
        msm_push_post(m, rank, t, EV_PROGRESS, NULL);
    }
}

/* The receive r of rendezvous message g learns at d that its data is in. */
static void rndv_recv_done(ms_model *m, ms_msg *g, ms_req *r, ms_time_t d)
{
    /* a synchronous send below the eager threshold: the data came through the bounce buffers */
    ms_time_t copy = g->sh != g->dh && (int64_t)g->bytes < m->eager_thr ? ms_host_recv_copy(m->host, g->bytes) : 0;
    /* a FIN is one more turn the receiving host handles */
    ms_time_t fin = g->sh != g->dh && ms_host_rndv_fin(m->host) ? ms_host_rndv_handling(m->host) : 0;
    /* the NIC's put wrote pages the receiver never touched (none if its registration pinned them) */
    ms_time_t touch = g->sh != g->dh && !r->internal ? ms_host_touch(m->host, r->rank, r->buf, g->bytes) : 0;
    msm_determine(m, r, rank_cpu(m, r, tmax(d, r->post) + fin, or_cost(m, g->bytes) + copy + touch));
}

/* A packet of kind k of message g reached its destination at time d. */
void msm_packet_done(ms_model *m, ms_msg *g, int k, ms_time_t d)
{
    switch (k) {
    case PK_DATA:
        if (--g->pkts_left > 0) break;
        if (g->rma) {
            msm_rma_data_in(m, g, d);
        } else if (!g->rndv) {
            msm_start_arrived(m, g, d);
        } else {
            ms_req *s = g->sreq, *r = g->rreq;
            g->sreq = NULL;
            if (s) msm_determine(m, s, tmax(d, g->local_done));
            int fin = g->sh != g->dh ? ms_host_rndv_fin(m->host) : 0;
            if (fin == 1) {
                /* the put's data is in, but only the sender's FIN tells the receiver (host model) */
                msm_schedule_inject(m, g, PK_FIN, d);
                break;
            }
            if (fin == 2 && !g->fin_in) break;   /* the FIN, queued behind the data, tells it */
            g->rreq = NULL;
            if (r) rndv_recv_done(m, g, r, d);
        }
        break;
    case PK_FIN: {
        if (ms_host_rndv_fin(m->host) == 2 && g->pkts_left > 0) {
            /* it overtook the put's last packet on another port: the data completes the receive */
            g->fin_in = 1;
            break;
        }
        ms_req *r = g->rreq;
        g->rreq = NULL;
        if (r) rndv_recv_done(m, g, r, d);
        break;
    }
    case PK_RTS:
        msm_start_arrived(m, g, d);
        break;
    case PK_CTS:
        /* the sender's NIC puts the data on the wire as soon as the CTS is in (a zero-delay
         * reaction, injected from inside the delivery callback) and its buffer is registered; a
         * host-driven rendezvous waits for the sender to be in an MPI call (rndv_turn) */
        msm_rndv_turn(m, g->src, g, PK_DATA, d, 0);
        break;
    case PK_ACK: {
        ms_req *s = g->sreq;
        g->sreq = NULL;
        /* a one-sided operation's acknowledgement (or lock grant): the origin takes the completion */
        if (s) msm_determine(m, s, g->rma ? d + or_cost(m, 0) : tmax(d, g->local_done));
        break;
    }
    }
    msm_msg_unref(m, g);
}

static void net_inject(ms_model *m, ms_msg *g, int k, uint64_t payload, ms_time_t t, int port)
{
    int fn = (k == PK_CTS || k == PK_ACK) ? g->dh : g->sh;   /* FIN goes with the data */
    int tn = (k == PK_CTS || k == PK_ACK) ? g->sh : g->dh;
    /* the packet leaves by `port` and enters the receiving NIC by the same-numbered port */
    int from = ms_host_port_host(m->host, fn, port), to = ms_host_port_host(m->host, tn, port);
    ms_time_t now = nm_network_now(m->net);
    if (t < now) {   /* only with zero overheads right after a resume; see README */
        m->clamped++;
        t = now;
    }
    m->tn_valid = 0;
    int rc = nm_network_inject(m->net, from, to, payload, t, ((uint64_t)g->idx << PK_BITS) | (uint64_t)k);
    if (rc < 0) {
        model_error(m, "nm_network_inject(host %d -> host %d, %" PRIu64 " B, t=%" PRId64 ") failed (%d)", from, to,
                    payload, t, rc);
        /* deliver at once so that the model does not hang */
        g->pending++;
        msm_packet_done(m, g, k, t);
    }
}


/* One data packet of every message of a multicast group, sent as one network multicast. */
static void net_inject_mcast(ms_model *m, mc_group *c, uint64_t payload, ms_time_t t, int port)
{
    ms_msg *g0 = msg_at(m, c->msg[0]);
    int from = ms_host_port_host(m->host, g0->sh, port);
    for (uint32_t i = 0; i < c->n; i++) {
        ms_msg *g = msg_at(m, c->msg[i]);
        g->pending++;
        c->dst[i] = ms_host_port_host(m->host, g->dh, port);
        c->cookie[i] = ((uint64_t)g->idx << PK_BITS) | (uint64_t)PK_DATA;
    }
    ms_time_t now = nm_network_now(m->net);
    if (t < now) {
        m->clamped++;
        t = now;
    }
    m->tn_valid = 0;
    int rc = nm_network_inject_multicast(m->net, from, (int)c->n, c->dst, c->cookie, payload, t);
    if (rc < 0) {
        model_error(m, "nm_network_inject_multicast(host %d -> %u hosts, %" PRIu64 " B, t=%" PRId64 ") failed (%d)",
                    from, c->n, payload, t, rc);
        for (uint32_t i = 0; i < c->n; i++) msm_packet_done(m, msg_at(m, c->msg[i]), PK_DATA, t);
    }
}

/* Packet (g, k) is complete at its receiver at T >= now: at once, or by an EV_PKT event. The
 * caller holds a reference for it, which packet_done releases. */
void msm_packet_done_at(ms_model *m, ms_msg *g, int k, ms_time_t T, ms_time_t now)
{
    if (T <= now) msm_packet_done(m, g, k, now);
    else msm_push_internal(m, T, EV_PKT, g, (uint64_t)k);
}

int msm_nic_push(nic_queue *q, const nic_job *j)
{
    if (q->n == q->cap) {
        size_t nc = q->cap ? q->cap * 2 : 16;
        nic_job *v = malloc(nc * sizeof *v);
        if (!v) return -1;
        for (size_t i = 0; i < q->n; i++) v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v;
        q->head = 0;
        q->cap = nc;
    }
    q->v[(q->head + q->n) % q->cap] = *j;
    q->n++;
    return 0;
}


/* Packet (g, k) is an acknowledgement the target's NIC generates itself (ms_host_tx_nic_ack): a
 * put's or accumulate's, carried out by the NIC (host.rma_progress = nic); a lock's grant is the
 * answer of an atomic on the lock, sent as the NIC sends a fetch's result. */
int msm_nic_ack(const ms_model *m, const ms_msg *g, int k)
{
    return k == PK_ACK && g->rma == RMA_OP && !m->rma_in_call &&
           (g->rma_kind == MS_RMA_PUT || g->rma_kind == MS_RMA_ACCUMULATE);
}

/* The NIC of `node` takes its next packet at t (EV_NIC). */
void msm_do_nic(ms_model *m, int node, ms_time_t t)
{
    nic_state *ns = &m->nic[node];
    nic_queue *q = NULL;
    for (int i = 0; i < NQ_COUNT && !q; i++)
        if (ns->q[i].n) q = &ns->q[i];
    if (!q) { ns->busy = 0; return; }
    nic_job *j = &q->v[q->head];
    ms_msg *g = msg_at(m, j->msg);
    uint64_t payload = (uint64_t)m->ctl_bytes;
    if (j->kind == PK_DATA) {
        uint64_t total = g->bytes + (uint64_t)m->env_bytes, pp = (uint64_t)m->pkt_payload;
        payload = total - j->off < pp ? total - j->off : pp;
        j->off += payload;
    }
    int port = 0;
    mc_group *c = j->grp;
    uint64_t pp = (uint64_t)m->pkt_payload;
    if (!ns->tr_on && m->trains_ok && j->kind == PK_DATA && !c && payload == pp && j->left >= 2) {
        /* the job's next full packets as one train, when the NIC sends them periodically */
        uint64_t rest = g->bytes + (uint64_t)m->env_bytes - (j->off - payload);
        uint32_t full = (uint32_t)(rest / pp < j->left ? rest / pp : j->left);
        ms_time_t w0, per, after;
        uint32_t n = full >= 2 ? ms_host_tx_run(m->host, node, pp, t, full, &w0, &per, &after) : 0;
        if (n >= 2 && w0 >= nm_network_now(m->net)) {
            int from = ms_host_port_host(m->host, g->sh, 0), to = ms_host_port_host(m->host, g->dh, 0);
            uint64_t cookie = ((uint64_t)g->idx << PK_BITS) | (uint64_t)PK_DATA;
            m->tn_valid = 0;
            if (nm_network_inject_train(m->net, from, to, pp, n, w0, per, cookie) == 0) {
                ns->tr_on = 1;
                ns->tr_cls = (uint8_t)(q - ns->q);
                ns->tr_msg = j->msg;
                ns->tr_n = n;
                ns->tr_taken = 0;
                ns->tr_from = from;
                ns->tr_cookie = cookie;
                ns->tr_w0 = w0;
                ns->tr_period = per;
                ns->tr_after = after;
            }
        }
    }
    ms_time_t wire = t, next = msm_nic_ack(m, g, j->kind) ? ms_host_tx_nic_ack(m->host, node, payload, t, &wire, &port)
                                                      : ms_host_tx_packet(m->host, node, payload, t, &wire, &port);
    int train_next = 0;
    if (ns->tr_on) {
        /* a packet of the train: in the network already, at the time the train was given */
        if (j->msg != ns->tr_msg || j->kind != PK_DATA || c || q != &ns->q[ns->tr_cls] || payload != pp ||
            wire != ns->tr_w0 + (ms_time_t)ns->tr_taken * ns->tr_period)
            model_error(m, "packet train of node %d out of step (a defect)", node);
        g->pending++;
        if (++ns->tr_taken == ns->tr_n) ns->tr_on = 0;
        train_next = ns->tr_on;
    } else if (c) {
        net_inject_mcast(m, c, payload, wire, port);
    } else {
        g->pending++;
        net_inject(m, g, j->kind, payload, wire, port);
    }
    if (--j->left == 0) {
        q->head = (q->head + 1) % q->cap;
        q->n--;
        /* the scheduled-injection references, held by the job */
        if (c) {
            for (uint32_t i = 0; i < c->n; i++) msm_msg_unref(m, msg_at(m, c->msg[i]));
            msm_mc_group_free(c);
        } else {
            msm_msg_unref(m, g);
        }
    }
    if (train_next) msm_push_train_nic(m, next, node);
    else msm_push_internal(m, next, EV_NIC, NULL, (uint64_t)node);
}

/* A job was queued on node's NIC ahead of its train's job: the NIC takes it before the train's
 * next packet, so the train keeps the packets taken so far; its next EV_NIC becomes ordinary. The
 * network has not run to the withdrawn packets' times (it stops before this event's time or at
 * this delivery's). */
void msm_train_cut(ms_model *m, int node)
{
    nic_state *ns = &m->nic[node];
    if (!ns->tr_on) return;
    ns->tr_on = 0;
    uint32_t delivered = 0;
    m->tn_valid = 0;
    if (nm_network_train_cut(m->net, ns->tr_from, ns->tr_cookie, ns->tr_taken, &delivered) != 0)
        model_error(m, "could not cut the packet train of node %d (a defect)", node);
    /* kept packets the network delivered without a callback: none is the message's last */
    ms_msg *g = msg_at(m, ns->tr_msg);
    for (uint32_t i = 0; i < delivered && g; i++) msm_packet_done(m, g, PK_DATA, m->now);
    for (size_t i = 0; i < m->ntev; i++)
        if ((int)EV_ARG(&m->tev[i]) == node) {
            ms_event ev = m->tev[i];
            msm_tev_remove(m, i);
            if (ms_evq_push(&m->heap, ev) != 0) model_error(m, "out of memory (event queue)");
            break;
        }
}

void msm_do_inject(ms_model *m, ms_msg *g, int k, ms_time_t t)
{
    if (g->sh == g->dh) {
        /* same node (or a message to self): the intra-node path, no network */
        if (k == PK_DATA) g->pkts_left = 1;
        g->pending++;
        uint64_t b = k == PK_DATA && !g->copied ? g->bytes : 0;
        ms_time_t done;
        if (b) {
            /* rendezvous data: the receiver's CPU copies it into its buffer (Open MPI's single-copy
             * get), one copy after the other, and writes the buffer's pages it never received into
             * before; with mpi.recv_overhead_serial the copy also waits for what that CPU has queued
             * and keeps it busy */
            rank_state *rd = &m->ranks[g->dst];
            waiter *rw = g->rreq ? wt_of(rd, g->rreq->thread) : &rd->w0;   /* the receiving thread's CPU */
            ms_time_t s = tmax(t, m->recv_serial ? rw->cpu_free : rd->copy_free);
            /* bytes landing in lines the other core holds (a buffer this rank sent from) */
            uint64_t shared = !g->rreq || g->src == g->dst ? 0
                              : g->rreq->into_sent ? b
                                                   : sent_overlap(rd, g->rreq->buf, b);
            ms_time_t end = ms_host_shm_copy_ps(m->host, g->sh, b, seg_copy_shared(m, b, shared), s);
            if (g->rreq && !g->rreq->internal) end += ms_host_touch(m->host, g->dst, g->rreq->buf, b);
            rd->copy_free = end;
            if (m->recv_serial) rw->cpu_free = end;
            done = end + ms_host_shm_latency(m->host);
        } else {
            done = ms_host_shm_transfer(m->host, g->sh, 0, t);
        }
        msm_packet_done_at(m, g, k, done, t);
        msm_msg_unref(m, g);   /* the scheduled-injection reference */
        return;
    }
    int node = (k == PK_CTS || k == PK_ACK) ? g->dh : g->sh;
    nic_job j = {g->idx, (uint8_t)k, 1, 0, NULL};
    int cls = NQ_RESP;
    if (k == PK_DATA) {
        uint64_t total = g->bytes + (uint64_t)m->env_bytes, pp = (uint64_t)m->pkt_payload;
        uint64_t npk = total ? (total + pp - 1) / pp : 1;
        g->pkts_left = (uint32_t)npk;
        j.left = (uint32_t)npk;
        cls = g->rndv ? NQ_BULK : NQ_START;
    } else if (k == PK_RTS) {
        cls = NQ_START;
    } else if (k == PK_FIN && ms_host_rndv_fin(m->host) == 2) {
        cls = NQ_BULK;   /* behind its put's data */
    }
    if (cls == NQ_START && m->ports > 1 && !g->rma) {   /* one-sided operations are not matched: no order */
        ms_conn *c = msm_conn_get(m, g->sh, g->dh);
        if (c) g->cseq = c->sent++;
    }
    if (msm_nic_push(&m->nic[node].q[cls], &j) != 0) {
        model_error(m, "out of memory (NIC queue)");
        msm_msg_unref(m, g);
        return;
    }
    nic_state *ns = &m->nic[node];
    if (ns->tr_on && cls < ns->tr_cls) msm_train_cut(m, node);
    if (!ns->busy) {
        ns->busy = 1;
        msm_do_nic(m, node, t);
    }
}

/* ---- posts ----------------------------------------------------------------------------------- */

void msm_do_send(ms_model *m, ms_req *r, ms_time_t t)
{
    if (r->peer == MS_PROC_NULL) {
        msm_determine(m, r, t);
        return;
    }
    rank_state *rs = &m->ranks[r->rank];
    waiter *ws = wt_of(rs, r->thread);
    int intra = rs->host == m->ranks[r->peer_world_cache].host;
    int eager = (int64_t)r->bytes < m->eager_thr && !(r->mode == MS_SEND_SYNC && ms_host_sync_rendezvous(m->host));
    ms_time_t start = tmax(t, ws->cpu_free);
    ms_time_t ldone = start + os_cost(m, r->bytes) + seg_send_extra(m, r->bytes) +
                      ms_host_mode_cost(m->host, r->mode, r->bytes, intra);
    /* host model: an eager message is copied into the NIC's registered buffers in the call; a
     * rendezvous buffer is registered after the RTS has gone (the data waits for it) */
    int big = (int64_t)r->bytes >= m->eager_thr;   /* else a synchronous handshake: data through the bounce buffers */
    if (!intra && !big) ldone += ms_host_send_copy(m->host, r->bytes);
    /* on one node the sender copies an eager message into shared memory itself, in its call */
    int copy_in = intra && eager && r->peer_world_cache != r->rank;
    if (copy_in) ldone = ms_host_shm_copy_ps(m->host, rs->host, r->bytes, seg_copy(m, r->bytes), ldone);
    ms_time_t reg = !intra && big && !r->internal ? ms_host_register(m->host, r->rank, r->buf, r->bytes) : 0;
    ws->cpu_free = ldone + reg;
    if (intra && !eager && r->buf && r->bytes && r->peer_world_cache != r->rank) {
        rs->sent_at[rs->sent_next % SENT_RING] = r->buf;
        rs->sent_len[rs->sent_next % SENT_RING] = r->bytes;
        rs->sent_next++;
    }
    rs->st.msgs_sent++;
    rs->st.bytes_sent += r->bytes;
    ms_msg *g = msm_msg_new(m);
    if (!g) {
        msm_determine(m, r, ldone);
        return;
    }
    g->pending = 1;
    g->src = r->rank;
    g->dst = r->peer_world_cache;
    g->sh = rs->host;
    g->dh = m->ranks[g->dst].host;
    g->ctx = r->ctx;
    g->src_c = r->m_src;   /* sender's own comm rank, stashed at post */
    g->tag = r->tag;
    g->bytes = r->bytes;
    g->mode = r->mode;
    g->local_done = ldone;
    g->copied = (uint8_t)copy_in;
    g->ack_taken = (uint8_t)(eager && r->mode != MS_SEND_SYNC && r->mode != MS_SEND_BUFFERED && seg_ack(m, r->bytes) &&
                             r->peer_world_cache != r->rank);
    g->fin_in = 0;
    g->data_ready = ldone + reg;
    /* Every message start (eager data or RTS) takes the host NIC in order, at least mpi.gap
     * after the previous start: messages of one host leave in posting order (non-overtaking). */
    ms_time_t tinj = ldone;
    if (g->sh != g->dh) {
        tinj = tmax(ldone, m->nic_free[g->sh]);
        m->nic_free[g->sh] = tinj + m->gap;
    }
    if (eager) {
        mc_group *c = m->mc_collect;
        if (c && g->sh != g->dh) {   /* a multicast step: injected with the others (coll_step_start) */
            if (c->n == 0) m->mc_tinj = tinj;
            g->pending++;
            c->msg[c->n++] = g->idx;
        } else {
            msm_schedule_inject(m, g, PK_DATA, tinj);
        }
        if (r->mode == MS_SEND_SYNC || g->ack_taken) {
            g->sreq = r;
            r->open = 1;
            rs->open_sends++;
        } else {
            msm_determine(m, r, ldone);
        }
    } else {
        g->rndv = 1;
        if (r->mode == MS_SEND_BUFFERED) {
            /* buffered mode is local (MPI-3.1 sec. 3.4): the call ends with the copy into the
             * attached buffer, and the library sends that copy by its rendezvous later */
            msm_determine(m, r, ldone);
        } else {
            g->sreq = r;
            r->open = 1;
            rs->open_sends++;
        }
        msm_schedule_inject(m, g, PK_RTS, tinj);
    }
}

void msm_do_recv(ms_model *m, ms_req *r, ms_time_t t)
{
    if (r->peer == MS_PROC_NULL) {
        r->m_src = MS_PROC_NULL;
        r->m_tag = MS_ANY_TAG;
        r->m_bytes = 0;
        msm_determine(m, r, t);
        return;
    }
    ms_mq *q = msm_mq_find(m, r->ctx, r->rank, r->peer);   /* one lookup for the search and the post */
    ms_msg *g = msm_unexp_find_in(q, r->peer, r->tag);
    if (g) {
        msm_unexp_unlink(m, g);
        msm_match(m, g, r, tmax(t, g->arrival), 1);
        return;
    }
    if (!q) q = msm_mq_get(m, r->ctx, r->rank, r->peer);
    if (!q) { model_error(m, "out of memory (match queues)"); return; }
    r->post_seq = m->post_seq++;
    msm_posted_append(q, r);
}

/* MPI_Cancel of receive r at time t, in the owner's posting order: it succeeds if no message has
 * matched r by then (r still waits in its posted queue); otherwise r completes normally. */
void msm_do_cancel(ms_model *m, ms_req *r, ms_time_t t)
{
    if (!r->mq || r->done != NEVER) return;
    msm_posted_unlink(m, r);
    r->cancelled = 1;
    r->m_src = -1;
    r->m_tag = -1;
    r->m_bytes = 0;
    msm_determine(m, r, t);
}
