/* One-sided communication (README.md "One-sided communication"): operations, locks. */
#include "ms_model_internal.h"

/* ---- one-sided communication (README.md "One-sided communication") ---------------------------- */

static const char *const rma_names[MS_RMA_KIND_COUNT] = {
    "MPI_Put", "MPI_Get", "MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op", "MPI_Compare_and_swap",
    "lock (shared)", "lock (exclusive)", "unlock"};

const char *ms_model_rma_name(ms_rma_kind kind) { return (unsigned)kind < MS_RMA_KIND_COUNT ? rma_names[kind] : "?"; }

/* a result comes back (else an acknowledgement) */
int msm_rma_fetches(int k)
{
    return k == MS_RMA_GET || k == MS_RMA_GET_ACCUMULATE || k == MS_RMA_FETCH_AND_OP || k == MS_RMA_COMPARE_AND_SWAP;
}
/* the target combines what arrives with what it holds (mpi.reduce_cost_per_byte) */
static int rma_reduces(int k)
{
    return k == MS_RMA_ACCUMULATE || k == MS_RMA_GET_ACCUMULATE || k == MS_RMA_FETCH_AND_OP ||
           k == MS_RMA_COMPARE_AND_SWAP;
}


static rma_lock *lock_get(ms_model *m, int32_t ctx, int target)
{
    rma_lock *l = cm_hmap_get(&m->locks, (uint64_t)(uint32_t)ctx, (uint64_t)target);
    if (l) return l;
    l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->excl = -1;
    if (cm_hmap_put(&m->locks, (uint64_t)(uint32_t)ctx, (uint64_t)target, l) != 0) {
        free(l);
        return NULL;
    }
    return l;
}

/* The grant (or an unlock's acknowledgement) leaves the target at t. */
static void lock_answer(ms_model *m, ms_req *r, ms_msg *g, ms_time_t t)
{
    if (g) msm_schedule_inject(m, g, PK_ACK, t);
    else msm_determine(m, r, t);
}

static int lock_free_for(const rma_lock *l, int excl)
{
    return excl ? l->excl < 0 && l->shared == 0 : l->excl < 0;
}

/* Waiting requests that can have the lock now, in order, at t. */
static void lock_grant_waiting(ms_model *m, rma_lock *l, ms_time_t t)
{
    while (l->n) {
        lock_wait *w = &l->q[l->head];
        if (!lock_free_for(l, w->excl)) break;
        if (w->excl) l->excl = w->origin;
        else l->shared++;
        lock_wait x = *w;
        l->head = (l->head + 1) % l->cap;
        l->n--;
        lock_answer(m, x.r, x.g, t);
        if (x.g) msm_msg_unref(m, x.g);   /* the reference held while it waited */
    }
}

/* A lock request or an unlock of `origin` at the target's lock, handled at t. Returns 1 if the
 * request waits (g, if any, keeps its reference). */
static int lock_op(ms_model *m, int32_t ctx, int target, int origin, int kind, ms_req *r, ms_msg *g, ms_time_t t)
{
    rma_lock *l = lock_get(m, ctx, target);
    if (!l) {
        model_error(m, "out of memory (one-sided locks)");
        lock_answer(m, r, g, t);
        return 0;
    }
    if (kind == MS_RMA_UNLOCK) {
        if (l->excl == origin) l->excl = -1;
        else if (l->shared) l->shared--;
        else model_error(m, "rank %d unlocks a window at rank %d it holds no lock of", origin, target);
        lock_answer(m, r, g, t);
        lock_grant_waiting(m, l, t);
        return 0;
    }
    int excl = kind == MS_RMA_LOCK_EXCLUSIVE;
    if (!l->n && lock_free_for(l, excl)) {
        if (excl) l->excl = origin;
        else l->shared++;
        lock_answer(m, r, g, t);
        return 0;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 8;
        lock_wait *q = malloc(nc * sizeof *q);
        if (!q) {
            model_error(m, "out of memory (one-sided locks)");
            lock_answer(m, r, g, t);
            return 0;
        }
        for (size_t i = 0; i < l->n; i++) q[i] = l->q[(l->head + i) % l->cap];
        free(l->q);
        l->q = q;
        l->head = 0;
        l->cap = nc;
    }
    l->q[(l->head + l->n) % l->cap] = (lock_wait){r, g, excl, origin};
    l->n++;
    return 1;
}

/* Operation g (RMA_OP) is handled at its target at t: by the NIC, or (host.rma_progress = in_call)
 * by the target's CPU, which then spends a receive overhead, the reduction and the overhead of
 * sending the answer. The answer goes back: the result (a message of its own), else an ACK. */
void msm_rma_handle(ms_model *m, ms_msg *g, ms_time_t t)
{
    int kind = g->rma_kind;
    ms_req *r = g->sreq;
    uint64_t res = r ? r->m_bytes : 0;
    ms_time_t red = rma_reduces(kind) ? (ms_time_t)g->bytes * m->red_pb : 0;
    ms_time_t done = t + red;
    if (m->rma_in_call) {
        waiter *rt = &m->ranks[g->dst].w0;   /* the target's progress is its thread 0's */
        ms_time_t start = tmax(t, rt->cpu_free);
        done = start + or_cost(m, kind <= MS_RMA_COMPARE_AND_SWAP ? g->bytes : 0) + red + os_cost(m, res);
        rt->cpu_free = done;
    }
    if (kind >= MS_RMA_LOCK_SHARED) {
        g->sreq = r;   /* the ACK completes it, now or at the grant */
        if (lock_op(m, g->ctx, g->dst, g->src, kind, r, g, done)) return;   /* waits: keeps its reference */
    } else if (!msm_rma_fetches(kind)) {
        msm_schedule_inject(m, g, PK_ACK, done);
    } else {
        /* the result: a message of its own from the target to the origin */
        ms_msg *q = msm_msg_new(m);
        if (!q) {
            g->sreq = NULL;
            if (r) msm_determine(m, r, done);
        } else {
            q->pending = 0;
            q->src = g->dst;
            q->dst = g->src;
            q->sh = g->dh;
            q->dh = g->sh;
            q->ctx = g->ctx;
            q->bytes = res;
            q->rma = RMA_RESP;
            q->rma_kind = (uint8_t)kind;
            q->sreq = r;
            g->sreq = NULL;
            ms_time_t tinj = tmax(done, m->nic_free[q->sh]);   /* a message start of the target's NIC */
            m->nic_free[q->sh] = tinj + m->gap;
            msm_schedule_inject(m, q, PK_DATA, tinj);
        }
    }
    msm_msg_unref(m, g);   /* the "awaiting handling" reference */
}

/* The last packet of g is in the memory of its destination at d. */
void msm_rma_data_in(ms_model *m, ms_msg *g, ms_time_t d)
{
    if (g->rma == RMA_RESP) {
        ms_req *r = g->sreq;
        g->sreq = NULL;
        if (r) msm_determine(m, r, d + or_cost(m, 0));
        return;
    }
    /* at the target: its NIC does it now; its CPU when it is inside an MPI call (as the turns of a
     * host-driven rendezvous: rndv_turn) */
    ms_time_t from = msm_rank_call_from(m, g->dst);
    if (!m->rma_in_call || from <= d) msm_rma_handle(m, g, d);
    else msm_hold_turn(m, g->dst, g, PK_RMA, d, from);
}

/* Origin r starts its operation at t. */
void msm_do_rma(ms_model *m, ms_req *r, ms_time_t t)
{
    if (r->peer == MS_PROC_NULL) {
        msm_determine(m, r, t);
        return;
    }
    rank_state *rs = &m->ranks[r->rank];
    waiter *ws = wt_of(rs, r->thread);
    int kind = r->mode, target = r->peer_world_cache;
    ms_time_t start = tmax(t, ws->cpu_free);
    ms_time_t ldone = start + os_cost(m, r->bytes);
    ws->cpu_free = ldone;
    rs->st.rma_ops++;
    rs->st.rma_bytes += r->bytes + r->m_bytes;
    r->open = 1;   /* it waits for the target's answer (lookahead: no latency can be promised) */
    rs->open_sends++;
    if (rs->host == m->ranks[target].host) {
        /* one node: the origin's CPU does it through shared memory (a single copy; locks are
         * atomics on the window's memory) */
        if (kind >= MS_RMA_LOCK_SHARED) {
            lock_op(m, r->ctx, target, r->rank, kind, r, NULL, ldone);
            return;
        }
        ms_time_t done = ms_host_shm_copy(m->host, rs->host, r->bytes + r->m_bytes, ldone);
        if (rma_reduces(kind)) done += (ms_time_t)r->bytes * m->red_pb;
        ws->cpu_free = done;
        msm_determine(m, r, done);
        return;
    }
    ms_msg *g = msm_msg_new(m);
    if (!g) {
        msm_determine(m, r, ldone);
        return;
    }
    g->pending = 1;   /* until the target has handled it */
    g->src = r->rank;
    g->dst = target;
    g->sh = rs->host;
    g->dh = m->ranks[target].host;
    g->ctx = r->ctx;
    g->src_c = r->m_src;
    g->bytes = kind >= MS_RMA_LOCK_SHARED || kind == MS_RMA_GET ? (uint64_t)m->ctl_bytes : r->bytes;
    g->rma = RMA_OP;
    g->rma_kind = (uint8_t)kind;
    g->sreq = r;
    g->local_done = ldone;
    /* a message start of the origin's NIC, in posting order with its other messages */
    ms_time_t tinj = tmax(ldone, m->nic_free[g->sh]);
    m->nic_free[g->sh] = tinj + m->gap;
    msm_schedule_inject(m, g, PK_DATA, tinj);
}
