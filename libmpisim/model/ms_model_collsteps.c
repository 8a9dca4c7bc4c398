/* Running collectives: a member's plan steps (ms_coll.h) as point-to-point operations and
 * multicasts. */
#include "ms_model_internal.h"

/* ---- collectives ----------------------------------------------------------------------------- */

static void coll_finish_step(ms_model *m, coll_member *cm);

void msm_mc_group_free(mc_group *c)
{
    if (!c) return;
    free(c->dst);
    free(c->cookie);
    free(c);
}

/* A multicast step's messages take their sender's NIC as one job (EV_MCAST). */
void msm_do_mcast(ms_model *m, mc_group *c, ms_time_t t)
{
    ms_msg *g = msg_at(m, c->msg[0]);
    uint64_t total = g->bytes + (uint64_t)m->env_bytes, pp = (uint64_t)m->pkt_payload;
    uint32_t npk = (uint32_t)(total ? (total + pp - 1) / pp : 1);
    for (uint32_t i = 0; i < c->n; i++) msg_at(m, c->msg[i])->pkts_left = npk;
    nic_job j = {g->idx, PK_DATA, npk, 0, c};
    int node = g->sh;
    if (msm_nic_push(&m->nic[node].q[NQ_START], &j) != 0) {
        model_error(m, "out of memory (NIC queue)");
        for (uint32_t i = 0; i < c->n; i++) msm_msg_unref(m, msg_at(m, c->msg[i]));
        msm_mc_group_free(c);
        return;
    }
    nic_state *ns = &m->nic[node];
    if (ns->tr_on && NQ_START < ns->tr_cls) msm_train_cut(m, node);
    if (!ns->busy) {
        ns->busy = 1;
        msm_do_nic(m, node, t);
    }
}

void msm_coll_step_start(ms_model *m, coll_member *cm, ms_time_t s)
{
    cm->step_start = s;
    cm->step_max = s;
    if (cm->step >= cm->plan.nsteps) {
        ms_req *u = cm->req;
        u->cm = NULL;
        ms_coll_plan_free(&cm->plan);
        free(cm);
        msm_determine(m, u, s);
        return;
    }
    const ms_coll_step *st = &cm->plan.steps[cm->step];
    rank_state *rs = &m->ranks[cm->rank];
    waiter *w = wt_of(rs, cm->req ? cm->req->thread : 0);   /* the calling thread's CPU */
    ms_time_t own = cm->step == 0 && cm->comm->size > 1 ? m->coll_call[cm->kind] : 0;   /* COMM_SELF: a shortcut */
    if (own) {
        /* the library's own path through the call, before its first step */
        s = tmax(s, w->cpu_free) + own;
        w->cpu_free = s;
        cm->step_max = s;
    }
    if (st->copy_bytes) {
        /* a local copy on the member's CPU before it posts the step: one core copying, as a
         * rendezvous's single copy of that size does (the segment's COPY_PB) */
        ms_time_t c = seg_copy(m, st->copy_bytes);
        if (c < 0) {
            double sc, shm, mem;
            ms_host_copy_costs(m->host, &sc, &shm, &mem);
            c = (ms_time_t)(shm * (double)st->copy_bytes);
        }
        s = tmax(s, w->cpu_free) + c;
        w->cpu_free = s;
        cm->step_max = s;
    }
    cm->pending = (uint32_t)st->nops + 1;
    /* the root's step of a multicast bcast on a network that multicasts: collect its eager sends */
    if (m->mc_ok && cm->kind == MS_COLL_BCAST && st->nops > 1 &&
        !strcmp(ms_coll_algorithm_name(MS_COLL_BCAST, cm->plan.alg), "multicast")) {
        m->mc_collect = calloc(1, sizeof(mc_group) + st->nops * sizeof(uint32_t));
        if (m->mc_collect) {
            m->mc_collect->dst = malloc(st->nops * sizeof(int));
            m->mc_collect->cookie = malloc(st->nops * sizeof(uint64_t));
            if (!m->mc_collect->dst || !m->mc_collect->cookie) {
                free(m->mc_collect->dst);
                free(m->mc_collect->cookie);
                free(m->mc_collect);
                m->mc_collect = NULL;
            }
        }
    }
    for (size_t i = 0; i < st->nops; i++) {
        const ms_coll_op *op = &cm->plan.ops[st->first_op + i];
        ms_req *r = msm_req_new(m);
        if (!r) { model_error(m, "out of memory (requests)"); cm->pending--; continue; }
        r->rank = cm->rank;
        r->thread = cm->req ? cm->req->thread : 0;   /* the calling thread's CPU */
        r->kind = op->is_send ? REQ_SEND : REQ_RECV;
        r->internal = 1;
        r->mode = MS_SEND_STANDARD;
        r->comm = cm->comm->id;
        r->ctx = cm->ctx;
        r->peer = op->peer;
        r->peer_world_cache = msm_comm_world_of(cm->comm, op->peer, cm->rank);
        r->tag = cm->tag;
        r->bytes = op->bytes;
        r->post = s;
        r->cm = cm;
        r->into_sent = (uint8_t)(op->into_sent != 0);
        if (op->is_send) {
            r->m_src = cm->crank;
            msm_do_send(m, r, s);
        } else {
            msm_do_recv(m, r, s);
        }
    }
    mc_group *c = m->mc_collect;
    m->mc_collect = NULL;
    if (c && c->n > 0) msm_push_internal(m, m->mc_tinj, EV_MCAST, c, 0);
    else if (c) msm_mc_group_free(c);
    if (--cm->pending == 0) coll_finish_step(m, cm);
}

static void coll_finish_step(ms_model *m, coll_member *cm)
{
    const ms_coll_step *st = &cm->plan.steps[cm->step];
    ms_time_t end = cm->step_max + (ms_time_t)st->reduce_bytes * m->red_pb;
    cm->step++;
    msm_push_internal(m, end, EV_COLL_STEP, cm, 0);
}

void msm_coll_op_done(ms_model *m, coll_member *cm, ms_time_t T)
{
    if (T > cm->step_max) cm->step_max = T;
    if (--cm->pending == 0) coll_finish_step(m, cm);
}
