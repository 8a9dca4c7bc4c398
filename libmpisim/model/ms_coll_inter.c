/* Intercommunicator collectives (MPICH 3.x's *_inter_* algorithms). */
#include "ms_coll_internal.h"

/* ---- intercommunicators ----------------------------------------------------------------------
 * MPICH 3.x's intercommunicator algorithms (src/mpi/coll/<name>/<name>_inter_*.c), played on the
 * union of the two groups: the low group's members are ranks [0, nlow), the high group's the rest.
 * They are compositions of intracommunicator collectives on one group (played as that group's
 * own algorithm) and messages between the groups' rank 0s ("leaders"). */

/* Thresholds of MPICH 3.x (CVARs): inter gather and scatter send the whole block through the
 * remote group's rank 0 below this many bytes, else linearly. */
#define GATHER_INTER_SHORT_MSG 2048
#define SCATTER_INTER_SHORT_MSG 2048

typedef struct inter_ctx {
    int lo, loff, lsize, roff, rsize, lr, alg;
} inter_ctx;

/* Append the plan of member lr of an intracommunicator collective on this member's own group, its
 * peers moved to union ranks. */
static int append_local(ms_coll_plan *p, const inter_ctx *x, ms_coll_kind kind, int root, uint64_t bytes,
                        const uint64_t *counts, size_t ncounts)
{
    if (x->lsize <= 1) return 0;
    ms_coll_plan q = {0};
    int rc = mscoll_gen_intra(&q, kind, x->alg, x->lsize, x->lr, root, bytes, counts, ncounts);
    for (size_t s = 0; rc == 0 && s < q.nsteps; s++) {
        step_begin(p);
        for (size_t k = 0; k < q.steps[s].nops; k++) {
            const ms_coll_op *o = &q.ops[q.steps[s].first_op + k];
            op_add(p, o->peer + x->loff, o->is_send, o->bytes);
        }
        step_reduce(p, q.steps[s].reduce_bytes);
    }
    ms_coll_plan_free(&q);
    return rc != 0 || p->oom ? -1 : 0;
}

/* MPIR_Bcast_inter_remote_send_local_bcast, the receiving side: the group's rank 0 receives from
 * the root (a union rank of the other group), then broadcasts in its group. */
static int inter_bcast_recv(ms_coll_plan *p, const inter_ctx *x, int root, uint64_t bytes)
{
    if (x->lr == 0) p_recv(p, root, bytes, 0);
    return append_local(p, x, MS_COLL_BCAST, 0, bytes, NULL, 0);
}
/* ... the sending side: the root sends to the other group's rank 0. */
static void inter_bcast_send(ms_coll_plan *p, const inter_ctx *x, uint64_t bytes) { p_send(p, x->roff, bytes); }

/* MPIR_Reduce_inter_local_reduce_remote_send, the sending group: a reduce to its rank 0, which
 * sends the result to the root (a union rank of the other group). */
static int inter_reduce_send(ms_coll_plan *p, const inter_ctx *x, int root, uint64_t bytes)
{
    if (append_local(p, x, MS_COLL_REDUCE, 0, bytes, NULL, 0) < 0) return -1;
    if (x->lr == 0) p_send(p, root, bytes);
    return 0;
}

/* The gatherv of MPIR_Allgatherv_inter as the root (this group's rank 0): a receive of each
 * remote member's block, in one batch (MPIR_Gatherv posts them all, then waits). */
static void inter_gatherv_root(ms_coll_plan *p, const inter_ctx *x, const uint64_t *counts)
{
    step_begin(p);
    for (int i = 0; i < x->rsize; i++)
        if (counts[i]) op_add(p, x->roff + i, 0, counts[i]);
    if (p->nsteps && p->steps[p->nsteps - 1].nops == 0) p->nsteps--;
}

static int inter_gather(ms_coll_plan *p, const inter_ctx *x, int am_root, int root, uint64_t B)
{
    /* the total both sides agree on: the root's recvcount x remote size = sendcount x local size */
    uint64_t total = am_root ? B * (uint64_t)x->rsize : B * (uint64_t)x->lsize;
    if (B == 0) return 0;
    if (total < GATHER_INTER_SHORT_MSG) {   /* MPIR_Gather_inter_local_gather_remote_send */
        if (am_root) p_recv(p, x->roff, total, 0);
        else {
            if (append_local(p, x, MS_COLL_GATHER, 0, B, NULL, 0) < 0) return -1;
            if (x->lr == 0) p_send(p, root, total);
        }
    } else if (am_root) {                   /* MPIR_Gather_inter_linear: one MPIC_Recv per rank */
        for (int i = 0; i < x->rsize; i++) p_recv(p, x->roff + i, B, 0);
    } else {
        p_send(p, root, B);
    }
    return 0;
}

static int inter_scatter(ms_coll_plan *p, const inter_ctx *x, int am_root, int root, uint64_t B)
{
    uint64_t total = am_root ? B * (uint64_t)x->rsize : B * (uint64_t)x->lsize;
    if (B == 0) return 0;
    if (total < SCATTER_INTER_SHORT_MSG) {  /* MPIR_Scatter_inter_remote_send_local_scatter */
        if (am_root) p_send(p, x->roff, total);
        else {
            if (x->lr == 0) p_recv(p, root, total, 0);
            if (append_local(p, x, MS_COLL_SCATTER, 0, B, NULL, 0) < 0) return -1;
        }
    } else if (am_root) {                   /* MPIR_Scatter_inter_linear: one MPIC_Send per rank */
        for (int i = 0; i < x->rsize; i++) p_send(p, x->roff + i, B);
    } else {
        p_recv(p, root, B, 0);
    }
    return 0;
}

static int inter_allgatherv(ms_coll_plan *p, const inter_ctx *x, uint64_t B, const uint64_t *c)
{
    /* MPIR_Allgatherv_inter: a gatherv to each group's rank 0 from the other group, low group's
     * first, then a bcast of what it received in each group */
    uint64_t total = 0;
    for (int i = 0; i < x->rsize; i++) total += c[i];
    if (total == 0 && B == 0) return 0;
    for (int phase = 0; phase < 2; phase++) {
        if ((phase == 0) == x->lo) {
            if (x->lr == 0) inter_gatherv_root(p, x, c);
        } else if (B) {
            p_send(p, x->roff, B);
        }
    }
    if (append_local(p, x, MS_COLL_BCAST, 0, total, NULL, 0) < 0) return -1;
    return 0;
}

static void inter_alltoall(ms_coll_plan *p, const inter_ctx *x, int v, uint64_t B, const uint64_t *c)
{
    /* MPIR_Alltoall(v)_inter_pairwise_exchange: max(local, remote size) steps, each a sendrecv
     * with the remote ranks (rank + i) and (rank - i), where they exist */
    if (!v && B == 0) return;
    if (v && mscoll_empty_collective(MS_COLL_ALLTOALLV, x->rsize, 0, c, 2 * (size_t)x->rsize)) return;
    int max = x->lsize > x->rsize ? x->lsize : x->rsize;
    for (int i = 0; i < max; i++) {
        int src = (x->lr - i + max) % max, dst = (x->lr + i) % max;
        step_begin(p);
        if (src < x->rsize) op_add(p, x->roff + src, 0, v ? c[x->rsize + src] : B);
        if (dst < x->rsize) op_add(p, x->roff + dst, 1, v ? c[dst] : B);
        if (p->nsteps && p->steps[p->nsteps - 1].nops == 0) p->nsteps--;
    }
}

static int inter_reduce_scatter(ms_coll_plan *p, const inter_ctx *x, const uint64_t *c)
{
    /* MPIR_Reduce_scatter_inter_remote_reduce_local_scatter: the whole vector reduced to the
     * low group's rank 0 from the high group, then to the high group's rank 0 from the low
     * group, then scattered in each group */
    uint64_t total = 0;
    for (int i = 0; i < x->lsize; i++) total += c[i];
    if (total == 0) return 0;
    for (int phase = 0; phase < 2; phase++) {
        if ((phase == 0) == x->lo) {
            if (x->lr == 0) p_recv(p, x->roff, total, total);
        } else if (inter_reduce_send(p, x, x->roff, total) < 0) {
            return -1;
        }
    }
    if (append_local(p, x, MS_COLL_SCATTERV, 0, c[x->lr], c, (size_t)x->lsize) < 0) return -1;
    return 0;
}

int mscoll_gen_inter(ms_coll_plan *p, const ms_coll_spec *s)
{
    int P = s->size, me = s->me, nlow = s->inter_low;
    if (nlow < 1 || nlow >= P) return -1;
    inter_ctx x;
    x.lo = me < nlow;
    x.loff = x.lo ? 0 : nlow;
    x.lsize = x.lo ? nlow : P - nlow;
    x.roff = x.lo ? nlow : 0;
    x.rsize = P - x.lsize;
    x.lr = me - x.loff;
    x.alg = 0;   /* each group's own collectives: MPICH's automatic choice for its size */
    p->alg = 1;
    uint64_t B = s->bytes;
    const uint64_t *c = s->counts;
    size_t nc = c ? s->ncounts : 0;
    int root = s->root;
    int hasroot = s->kind == MS_COLL_BCAST || s->kind == MS_COLL_REDUCE || s->kind == MS_COLL_GATHER ||
                  s->kind == MS_COLL_SCATTER || s->kind == MS_COLL_GATHERV || s->kind == MS_COLL_SCATTERV;
    if (hasroot) {
        if (root == MS_COLL_ROOT_NONE) return 0;   /* MPI_PROC_NULL: the root's group, not the root */
        if (root != me && (root < x.roff || root >= x.roff + x.rsize)) return -1;
    }
    int am_root = hasroot && root == me;
    /* v-variants: which lists they need (ms_model.h) */
    size_t need = 0;
    if ((s->kind == MS_COLL_GATHERV || s->kind == MS_COLL_SCATTERV) && am_root) need = (size_t)x.rsize;
    if (s->kind == MS_COLL_ALLGATHERV) need = (size_t)x.rsize;
    if (s->kind == MS_COLL_ALLTOALLV) need = 2 * (size_t)x.rsize;
    if (s->kind == MS_COLL_REDUCE_SCATTER) need = (size_t)x.lsize;
    if (need && nc < need) return -1;
    switch (s->kind) {
    case MS_COLL_BARRIER:
        /* MPIR_Barrier_inter_bcast: a barrier in each group, then a 1-byte bcast from the low
         * group's rank 0 to the high group, and one back */
        if (append_local(p, &x, MS_COLL_BARRIER, 0, 0, NULL, 0) < 0) return -1;
        for (int phase = 0; phase < 2; phase++) {
            if ((phase == 0) == x.lo) {
                if (x.lr == 0) inter_bcast_send(p, &x, 1);
            } else if (inter_bcast_recv(p, &x, x.roff, 1) < 0) {
                return -1;
            }
        }
        break;
    case MS_COLL_BCAST:
        if (B == 0) break;
        if (am_root) inter_bcast_send(p, &x, B);
        else if (inter_bcast_recv(p, &x, root, B) < 0) return -1;
        break;
    case MS_COLL_REDUCE:
        if (B == 0) break;
        if (am_root) p_recv(p, x.roff, B, B);
        else if (inter_reduce_send(p, &x, root, B) < 0) return -1;
        break;
    case MS_COLL_ALLREDUCE:
        /* MPIR_Allreduce_inter_reduce_exchange_bcast */
        if (B == 0) break;
        if (append_local(p, &x, MS_COLL_REDUCE, 0, B, NULL, 0) < 0) return -1;
        if (x.lr == 0) p_sendrecv(p, x.roff, B, x.roff, B, 0);
        if (append_local(p, &x, MS_COLL_BCAST, 0, B, NULL, 0) < 0) return -1;
        break;
    case MS_COLL_GATHER:
        return inter_gather(p, &x, am_root, root, B) < 0 || p->oom ? -1 : 0;
    case MS_COLL_SCATTER:
        return inter_scatter(p, &x, am_root, root, B) < 0 || p->oom ? -1 : 0;
    case MS_COLL_GATHERV:
        if (am_root) inter_gatherv_root(p, &x, c);
        else if (B) p_send(p, root, B);
        break;
    case MS_COLL_SCATTERV:
        if (am_root) {
            step_begin(p);
            for (int i = 0; i < x.rsize; i++)
                if (c[i]) op_add(p, x.roff + i, 1, c[i]);
            if (p->nsteps && p->steps[p->nsteps - 1].nops == 0) p->nsteps--;
        } else if (B) {
            p_recv(p, root, B, 0);
        }
        break;
    case MS_COLL_ALLGATHER:
        /* MPIR_Allgather_inter_local_gather_remote_bcast: a gather in each group, then each group's
         * rank 0 broadcasts the whole group's data to the other group, low to high first */
        if (B == 0) break;
        if (append_local(p, &x, MS_COLL_GATHER, 0, B, NULL, 0) < 0) return -1;
        for (int phase = 0; phase < 2; phase++) {
            if ((phase == 0) == x.lo) {
                if (x.lr == 0) inter_bcast_send(p, &x, B * (uint64_t)x.lsize);
            } else if (inter_bcast_recv(p, &x, x.roff, B * (uint64_t)x.rsize) < 0) {
                return -1;
            }
        }
        break;
    case MS_COLL_ALLGATHERV:
        return inter_allgatherv(p, &x, B, c) < 0 || p->oom ? -1 : 0;
    case MS_COLL_ALLTOALL:
    case MS_COLL_ALLTOALLV:
        inter_alltoall(p, &x, s->kind == MS_COLL_ALLTOALLV, B, c);
        break;
    case MS_COLL_REDUCE_SCATTER:
        return inter_reduce_scatter(p, &x, c) < 0 || p->oom ? -1 : 0;
    default:
        return -1;   /* scan, exscan and neighbourhood collectives have no intercommunicator form */
    }
    return p->oom ? -1 : 0;
}
