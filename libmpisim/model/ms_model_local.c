/* Local answers (docs/architecture.md "Local answers"): what a rank's shim may know without
 * asking the server. */
#include "ms_model_internal.h"

/* ---- local answers (docs/architecture.md "Local answers") ------------------------------------ */

ms_time_t ms_model_cpu_free(const ms_model *m, int rank)
{
    if (!m || rank < 0 || rank >= m->nranks) return -1;
    const rank_state *rs = &m->ranks[rank];
    /* what else moves it: a collective's steps, and with registration costs a rendezvous receive's
     * match (the receiver registers its buffer on its CPU), at times other ranks decide; with
     * several threads, which thread's CPU a post uses */
    if (rs->active_colls || (rs->active_recvs && ms_host_registers(m->host)) || rs->nwx) return -1;
    /* host-driven rendezvous: every entry into the library (a post too) may run held turns on
     * this host's CPU, at times the model alone knows */
    if (ms_host_rndv_in_call(m->host)) return -1;
    /* one-sided operations the target's CPU handles move it at times their origins decide */
    if (m->rma_in_call) return -1;
    return rs->w0.cpu_free;
}

int ms_model_local_send(const ms_model *m, double *copy_ps_per_byte, int *recv_moves_cpu)
{
    if (!m || m->nseg || m->recv_serial) return 0;   /* costs by size range, receives on the CPU: the shim does not know them */
    *recv_moves_cpu = ms_host_registers(m->host);
    double send_copy, shm_copy, shm_mem;
    ms_host_copy_costs(m->host, &send_copy, &shm_copy, &shm_mem);
    int intra = 0, inter = 0;   /* two ranks on one node; on two nodes */
    int *seen = calloc((size_t)m->nhosts, sizeof *seen);
    if (!seen) return 0;
    for (int r = 0; r < m->nranks; r++) {
        int h = m->ranks[r].host;
        if (h >= 0 && h < m->nhosts && seen[h]++) intra = 1;
        if (h != m->ranks[0].host) inter = 1;
    }
    free(seen);
    /* on one node the sender copies into shared memory, and the node's memory rate makes that
     * copy wait for other ranks' copies */
    if (intra && shm_mem > 0) return 0;
    if (intra && inter && send_copy != shm_copy) return 0;
    *copy_ps_per_byte = inter ? send_copy : shm_copy;
    return 1;
}

/* The least delay between another rank's next action (a post, or its resume) and a change of
 * `rank`'s requests or unexpected messages: its message's data or RTS leaves after the send
 * overhead; only a send of `rank` waiting for an answer (synchronous ACK, rendezvous CTS) can be
 * answered by a receive posted elsewhere at once, with no overhead in between. */
static ms_time_t influence_latency(const ms_model *m, int rank)
{
    return m->ranks[rank].open_sends ? 0 : m->o_s;
}

ms_time_t ms_model_quiet_until(const ms_model *m, int rank, ms_time_t t, const uint64_t *reqs, size_t n,
                               int probe, ms_time_t *lat_out)
{
    *lat_out = 0;
    if (!m || rank < 0 || rank >= m->nranks || m->in_run) return t;
    /* host-driven rendezvous: a test is an entry into the library, which runs the rank's held
     * turns; the model must see every one */
    if (ms_host_rndv_in_call(m->host) || m->rma_in_call) return t;
    const rank_state *rs = &m->ranks[rank];
    if (rs->nwx) return t;   /* several threads: another one's posts are not the caller's to bound */
    ms_time_t q = NEVER;
    /* receives (and probes) change only when a message or its RTS arrives: a send overhead after
     * its post; anything else the rank waits for may be one of its sends that waits for an answer */
    ms_time_t lat = m->o_s;
    for (size_t i = 0; i < n; i++) {
        const ms_req *r = msm_req_find(m, rank, reqs[i]);
        if (!r) return t;                             /* gone: nothing to promise */
        if (r->done != NEVER && r->done > t && r->done < q) q = r->done;   /* decided: completes then */
        if (r->kind != REQ_RECV) lat = influence_latency(m, rank);
    }
    if (probe && rs->unexp_first < q) q = rs->unexp_first;
    ms_time_t tn = nm_network_next_time(m->net);
    if (tn < q) q = tn;
    long ti = tev_first(m);
    if (ti >= 0 && m->tev[ti].t < q) q = m->tev[ti].t;   /* internal events, as the heap's below */
    /* Pending events: the model's own (injections, NIC, packets, collective steps) may act on the
     * rank at their time; a post or a resume is another rank's action, felt a latency later. The
     * heap is walked from its top, skipping subtrees that start too late to matter. */
    *lat_out = lat;
    const ms_heap *h = &m->heap;
    size_t stack[128], sp = 0;
    if (h->n) stack[sp++] = 0;
    while (sp) {
        size_t i = stack[--sp];
        const ms_event *e = &h->e[i];
        if (e->t >= q) continue;   /* children are no earlier */
        uint64_t cls = ORDER_CLASS(e->k);
        ms_time_t b = cls == CLS_INTERNAL ? e->t : e->t + lat;
        if (b < q) q = b;
        for (size_t c = ms_evq_arity * i + 1; c <= ms_evq_arity * i + ms_evq_arity && c < h->n; c++) {
            if (sp == sizeof stack / sizeof stack[0]) return q < h->e[0].t ? q : h->e[0].t;   /* too deep: the next event */
            stack[sp++] = c;
        }
    }
    return q;
}

int ms_model_run_until(ms_model *m, ms_time_t limit)
{
    if (!m || m->in_run) return -1;
    m->in_run = 1;
    m->stop = limit;
    int rc = 0;
    m->tn_valid = 0;
    for (;;) {
        if (m->mqs.n > m->mq_limit) msm_mq_sweep(m);
        long ti;
        const ms_event *e = msm_next_event(m, &ti);
        if (!m->tn_valid) {
            m->tn_cache = nm_network_next_time(m->net);
            m->tn_valid = 1;
        }
        ms_time_t tm = e ? e->t : NEVER, tn = m->tn_cache;
        if (e && tm < m->stop && (ORDER_CLASS(e->k) == CLS_RESUME ? tm < tn : tm <= tn)) {
            ms_event ev;
            msm_pop_event(m, ti, &ev);
            if (ev.t > m->now) m->now = ev.t;
            msm_process(m, &ev);
            continue;
        }
        if (tn != NEVER && tn < m->stop) {
            /* The network's instants before the model's next event, in one call: the model would
             * take none of them in between. A network event at the time of a model event comes
             * after it, except after a resume (a resumed rank acts after what happened at its
             * resume time). Deliveries that add model events lower the bound (on_deliver). */
            /* (trains' EV_NICs aside: they take packets already in the network) */
            ms_time_t bound = msm_network_bound(m, m->stop);
            m->tn_valid = 0;
            int nrc = nm_network_run_instants(m->net, bound);
            ms_time_t last = nm_network_now(m->net) - 1;   /* the last instant processed */
            if (last > m->now) m->now = last;
            if (nrc < 0) {
                char why[600];
                if (nm_network_failure_reason(m->net, why, sizeof why)) model_error(m, "%s", why);
                else model_error(m, "nm_network_run_until failed at t=%" PRId64, last);
                rc = -1;
                break;
            }
            continue;
        }
        break;
    }
    m->in_run = 0;
    return rc;
}
