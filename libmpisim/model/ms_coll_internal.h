/* Private to the collective plans (ms_coll*.c): algorithm ids, MPICH thresholds, the step-list
 * builders every generator uses, and the functions the files share (prefix mscoll_). */
#ifndef MS_COLL_INTERNAL_H
#define MS_COLL_INTERNAL_H

#include "ms_coll.h"

#include <stdlib.h>
#include <string.h>

#define MAXALG 5

/* Algorithm ids per kind (index into alg_names). */
enum { BAR_DISSEM = 1 };
enum { BC_BINOMIAL = 1, BC_SCATTER_RD = 2, BC_SCATTER_RING = 3, BC_MULTICAST = 4 };
enum { RED_BINOMIAL = 1, RED_RSG = 2 };
enum { AR_RD = 1, AR_RSAG = 2 };
enum { GS_BINOMIAL = 1, GS_LINEAR = 2 };
enum { AG_RD = 1, AG_BRUCK = 2, AG_RING = 3 };
enum { A2A_BRUCK = 1, A2A_SCATTERED = 2, A2A_PAIRWISE = 3 };
enum { RS_HALVING = 1, RS_PAIRWISE = 2 };

/* MPICH 3.x CVAR defaults (bytes / process counts). */
#define BCAST_SHORT_MSG 12288
#define BCAST_LONG_MSG 524288
#define BCAST_MIN_PROCS 8
#define REDUCE_SHORT_MSG 2048
#define ALLREDUCE_SHORT_MSG 2048
#define ALLGATHER_SHORT_MSG 81920
#define ALLGATHER_LONG_MSG 524288
#define ALLTOALL_SHORT_MSG 256
#define ALLTOALL_MEDIUM_MSG 32768
#define ALLTOALL_MIN_PROCS 8
#define ALLTOALL_THROTTLE 32
#define REDSCAT_COMM_LONG_MSG 524288

/* ---- helpers ------------------------------------------------------------------------------- */

static inline int is_pof2(int p) { return p > 0 && (p & (p - 1)) == 0; }
static inline int pof2_floor(int p)
{
    int q = 1;
    while (q * 2 <= p) q *= 2;
    return q;
}
static inline uint64_t sum_counts(const uint64_t *counts, int size, uint64_t bytes)
{
    if (!counts) return bytes * (uint64_t)size;
    uint64_t s = 0;
    for (int i = 0; i < size; i++) s += counts[i];
    return s;
}
static inline uint64_t cnt_of(const uint64_t *counts, uint64_t bytes, int i) { return counts ? counts[i] : bytes; }

/* Element size assumed for splitting reduction vectors (the model sees bytes only): 8 bytes when
 * the size is a multiple of 8 (MPI_DOUBLE, MPI_LONG), else 4, else 1. */
static inline uint64_t elem_size(uint64_t bytes)
{
    if (bytes > 0 && bytes % 8 == 0) return 8;
    if (bytes > 0 && bytes % 4 == 0) return 4;
    return 1;
}

static inline int plan_grow_steps(ms_coll_plan *p)
{
    if (p->nsteps < p->cap_steps) return 0;
    size_t nc = p->cap_steps ? p->cap_steps * 2 : 16;
    ms_coll_step *s = realloc(p->steps, nc * sizeof *s);
    if (!s) { p->oom = 1; return -1; }
    p->steps = s;
    p->cap_steps = nc;
    return 0;
}
static inline int plan_grow_ops(ms_coll_plan *p)
{
    if (p->nops < p->cap_ops) return 0;
    size_t nc = p->cap_ops ? p->cap_ops * 2 : 32;
    ms_coll_op *o = realloc(p->ops, nc * sizeof *o);
    if (!o) { p->oom = 1; return -1; }
    p->ops = o;
    p->cap_ops = nc;
    return 0;
}
static inline void step_begin(ms_coll_plan *p)
{
    if (p->oom || plan_grow_steps(p)) return;
    ms_coll_step *s = &p->steps[p->nsteps++];
    s->first_op = p->nops;
    s->nops = 0;
    s->reduce_bytes = 0;
    s->copy_bytes = p->pending_copy;
    p->pending_copy = 0;
}
static inline void op_add(ms_coll_plan *p, int peer, int is_send, uint64_t bytes)
{
    if (p->oom || p->nsteps == 0 || plan_grow_ops(p)) return;
    ms_coll_op *o = &p->ops[p->nops++];
    o->peer = peer;
    o->is_send = is_send;
    o->bytes = bytes;
    o->into_sent = 0;
    p->steps[p->nsteps - 1].nops++;
}
/* the local copy the member makes before its next step (added to the next step_begin's) */
static inline void step_copy_next(ms_coll_plan *p, uint64_t bytes)
{
    if (!p->oom) p->pending_copy += bytes;
}
static inline void step_reduce(ms_coll_plan *p, uint64_t bytes)
{
    if (!p->oom && p->nsteps) p->steps[p->nsteps - 1].reduce_bytes += bytes;
}
/* One blocking call each. */
static inline void p_send(ms_coll_plan *p, int peer, uint64_t bytes) { step_begin(p); op_add(p, peer, 1, bytes); }
static inline void p_recv(ms_coll_plan *p, int peer, uint64_t bytes, uint64_t reduce)
{
    step_begin(p);
    op_add(p, peer, 0, bytes);
    step_reduce(p, reduce);
}
static inline void p_sendrecv(ms_coll_plan *p, int dst, uint64_t sbytes, int src, uint64_t rbytes, uint64_t reduce)
{
    step_begin(p);
    op_add(p, dst, 1, sbytes);
    op_add(p, src, 0, rbytes);
    step_reduce(p, reduce);
}


/* ms_coll.c */
int mscoll_applicable(ms_coll_kind kind, int alg, int P);

/* ms_coll_intra.c */
int mscoll_empty_collective(ms_coll_kind kind, int P, uint64_t bytes, const uint64_t *counts, size_t ncounts);
int mscoll_gen_intra(ms_coll_plan *p, ms_coll_kind kind, int alg, int P, int me, int root, uint64_t bytes, const uint64_t *counts, size_t ncounts);

/* ms_coll_inter.c */
int mscoll_gen_inter(ms_coll_plan *p, const ms_coll_spec *s);

#endif
