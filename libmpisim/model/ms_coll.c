/* Collective algorithms as per-member step lists (see ms_coll.h and README.md).
 *
 * Every generator below transcribes the message pattern of the MPICH 3.x intra-communicator
 * algorithm of the same name (src/mpi/coll/{barrier,bcast,reduce,allreduce,gather,scatter,
 * allgather,allgatherv,alltoall,alltoallv,red_scat,scan,exscan,gatherv,scatterv}.c): which
 * peer, in which order, how many bytes. Blocking calls of MPICH (MPIC_Send, MPIC_Recv,
 * MPIC_Sendrecv) are one step each; batches of nonblocking calls completed by one Waitall
 * are one step.
 */
#include "ms_coll.h"

#include <stdlib.h>
#include <string.h>

/* ---- names --------------------------------------------------------------------------------- */

static const char *const kind_names[MS_COLL_COUNT] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall",
    "reduce_scatter", "scan", "exscan", "gatherv", "scatterv", "allgatherv", "alltoallv", "neighbor"};
static const char *const mpi_names[MS_COLL_COUNT] = {
    "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Scatter",
    "MPI_Allgather", "MPI_Alltoall", "MPI_Reduce_scatter", "MPI_Scan", "MPI_Exscan",
    "MPI_Gatherv", "MPI_Scatterv", "MPI_Allgatherv", "MPI_Alltoallv", "MPI_Neighbor_*"};

/* Algorithm tables: index 0 is "auto". */
#define MAXALG 5
static const char *const alg_names[MS_COLL_COUNT][MAXALG] = {
    /* barrier */ {"auto", "dissemination", NULL, NULL},
    /* bcast */ {"auto", "binomial", "scatter_doubling_allgather", "scatter_ring_allgather", "multicast"},
    /* reduce */ {"auto", "binomial", "reduce_scatter_gather", NULL},
    /* allreduce */ {"auto", "recursive_doubling", "reduce_scatter_allgather", NULL},
    /* gather */ {"auto", "binomial", "linear", NULL},
    /* scatter */ {"auto", "binomial", "linear", NULL},
    /* allgather */ {"auto", "recursive_doubling", "bruck", "ring"},
    /* alltoall */ {"auto", "bruck", "scattered", "pairwise"},
    /* reduce_scatter */ {"auto", "recursive_halving", "pairwise", NULL},
    /* scan */ {"auto", "recursive_doubling", NULL, NULL},
    /* exscan */ {"auto", "recursive_doubling", NULL, NULL},
    /* gatherv */ {"auto", "linear", NULL, NULL},
    /* scatterv */ {"auto", "linear", NULL, NULL},
    /* allgatherv */ {"auto", "recursive_doubling", "bruck", "ring"},
    /* alltoallv */ {"auto", "scattered", NULL, NULL},
    /* neighbor */ {"auto", "linear", NULL, NULL},
};
static const char *const alg_choices[MS_COLL_COUNT] = {
    "auto|dissemination",
    "auto|binomial|scatter_doubling_allgather|scatter_ring_allgather|multicast",
    "auto|binomial|reduce_scatter_gather",
    "auto|recursive_doubling|reduce_scatter_allgather",
    "auto|binomial|linear",
    "auto|binomial|linear",
    "auto|recursive_doubling|bruck|ring",
    "auto|bruck|scattered|pairwise",
    "auto|recursive_halving|pairwise",
    "auto|recursive_doubling",
    "auto|recursive_doubling",
    "auto|linear",
    "auto|linear",
    "auto|recursive_doubling|bruck|ring",
    "auto|scattered",
    "auto|linear",
};

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

const char *ms_coll_kind_name(ms_coll_kind kind)
{
    return (unsigned)kind < MS_COLL_COUNT ? kind_names[kind] : "?";
}
const char *ms_coll_mpi_name(ms_coll_kind kind)
{
    return (unsigned)kind < MS_COLL_COUNT ? mpi_names[kind] : "MPI_?";
}
int ms_coll_algorithm_count(ms_coll_kind kind)
{
    if ((unsigned)kind >= MS_COLL_COUNT) return 0;
    int n = 0;
    while (n < MAXALG && alg_names[kind][n]) n++;
    return n;
}
const char *ms_coll_algorithm_name(ms_coll_kind kind, int alg)
{
    if (alg < 0 || alg >= ms_coll_algorithm_count(kind)) return NULL;
    return alg_names[kind][alg];
}
int ms_coll_algorithm_lookup(ms_coll_kind kind, const char *name)
{
    int n = ms_coll_algorithm_count(kind);
    for (int i = 0; name && i < n; i++)
        if (!strcmp(alg_names[kind][i], name)) return i;
    return -1;
}
const char *ms_coll_algorithm_choices(ms_coll_kind kind)
{
    return (unsigned)kind < MS_COLL_COUNT ? alg_choices[kind] : NULL;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static int is_pof2(int p) { return p > 0 && (p & (p - 1)) == 0; }
static int pof2_floor(int p)
{
    int q = 1;
    while (q * 2 <= p) q *= 2;
    return q;
}
static uint64_t sum_counts(const uint64_t *counts, int size, uint64_t bytes)
{
    if (!counts) return bytes * (uint64_t)size;
    uint64_t s = 0;
    for (int i = 0; i < size; i++) s += counts[i];
    return s;
}
static uint64_t cnt_of(const uint64_t *counts, uint64_t bytes, int i) { return counts ? counts[i] : bytes; }

/* Element size assumed for splitting reduction vectors (the model sees bytes only): 8 bytes when
 * the size is a multiple of 8 (MPI_DOUBLE, MPI_LONG), else 4, else 1. */
static uint64_t elem_size(uint64_t bytes)
{
    if (bytes > 0 && bytes % 8 == 0) return 8;
    if (bytes > 0 && bytes % 4 == 0) return 4;
    return 1;
}

static int plan_grow_steps(ms_coll_plan *p)
{
    if (p->nsteps < p->cap_steps) return 0;
    size_t nc = p->cap_steps ? p->cap_steps * 2 : 16;
    ms_coll_step *s = realloc(p->steps, nc * sizeof *s);
    if (!s) { p->oom = 1; return -1; }
    p->steps = s;
    p->cap_steps = nc;
    return 0;
}
static int plan_grow_ops(ms_coll_plan *p)
{
    if (p->nops < p->cap_ops) return 0;
    size_t nc = p->cap_ops ? p->cap_ops * 2 : 32;
    ms_coll_op *o = realloc(p->ops, nc * sizeof *o);
    if (!o) { p->oom = 1; return -1; }
    p->ops = o;
    p->cap_ops = nc;
    return 0;
}
static void step_begin(ms_coll_plan *p)
{
    if (p->oom || plan_grow_steps(p)) return;
    ms_coll_step *s = &p->steps[p->nsteps++];
    s->first_op = p->nops;
    s->nops = 0;
    s->reduce_bytes = 0;
    s->copy_bytes = p->pending_copy;
    p->pending_copy = 0;
}
static void op_add(ms_coll_plan *p, int peer, int is_send, uint64_t bytes)
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
static void step_copy_next(ms_coll_plan *p, uint64_t bytes)
{
    if (!p->oom) p->pending_copy += bytes;
}
static void step_reduce(ms_coll_plan *p, uint64_t bytes)
{
    if (!p->oom && p->nsteps) p->steps[p->nsteps - 1].reduce_bytes += bytes;
}
/* One blocking call each. */
static void p_send(ms_coll_plan *p, int peer, uint64_t bytes) { step_begin(p); op_add(p, peer, 1, bytes); }
static void p_recv(ms_coll_plan *p, int peer, uint64_t bytes, uint64_t reduce)
{
    step_begin(p);
    op_add(p, peer, 0, bytes);
    step_reduce(p, reduce);
}
static void p_sendrecv(ms_coll_plan *p, int dst, uint64_t sbytes, int src, uint64_t rbytes, uint64_t reduce)
{
    step_begin(p);
    op_add(p, dst, 1, sbytes);
    op_add(p, src, 0, rbytes);
    step_reduce(p, reduce);
}

/* ---- barrier ------------------------------------------------------------------------------- */

static void gen_barrier(ms_coll_plan *p, int P, int me)
{
    for (int mask = 1; mask < P; mask <<= 1)
        p_sendrecv(p, (me + mask) % P, 0, (me - mask + P) % P, 0, 0);
}

/* ---- bcast --------------------------------------------------------------------------------- */

static void gen_bcast_binomial(ms_coll_plan *p, int P, int me, int root, uint64_t bytes)
{
    int rel = (me - root + P) % P, mask = 1;
    while (mask < P) {
        if (rel & mask) {
            p_recv(p, (me - mask + P) % P, bytes, 0);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while (mask > 0) {
        if (rel + mask < P) p_send(p, (me + mask) % P, bytes);
        mask >>= 1;
    }
}

/* The root sends to every member in one step (in rank order after it); the model sends these as
 * one switch multicast where the network has one (seed 001 Fan results: "Conventional GigE
 * multicast hardware"), else as one message each. */
static void gen_bcast_multicast(ms_coll_plan *p, int P, int me, int root, uint64_t bytes)
{
    if (P < 2) return;
    step_begin(p);
    if (me != root) {
        op_add(p, root, 0, bytes);
        return;
    }
    for (int i = 1; i < P; i++) op_add(p, (root + i) % P, 1, bytes);
}

/* Bytes of chunks [a, a+n) of a buffer cut into chunks of ss bytes (the last ones short/empty). */
static uint64_t chunk_bytes(uint64_t total, uint64_t ss, int64_t a, int64_t n)
{
    if (n <= 0 || a < 0) return 0;
    uint64_t off = (uint64_t)a * ss;
    if (off >= total) return 0;
    uint64_t len = (uint64_t)n * ss;
    return total - off < len ? total - off : len;
}

/* Binomial scatter of the bcast buffer (MPIR_Scatter_for_bcast): rank rel ends with chunk rel. */
static void gen_bcast_scatter(ms_coll_plan *p, int P, int me, int root, uint64_t bytes, uint64_t ss)
{
    int rel = (me - root + P) % P, mask = 1;
    int64_t subtree = rel == 0 ? P : 0;   /* chunks this rank holds (from rel on) */
    while (mask < P) {
        if (rel & mask) {
            subtree = mask < P - rel ? mask : P - rel;
            uint64_t b = chunk_bytes(bytes, ss, rel, subtree);
            if (b > 0) p_recv(p, (me - mask + P) % P, b, 0);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while (mask > 0) {
        if (rel + mask < P) {
            uint64_t b = chunk_bytes(bytes, ss, rel + mask, subtree - mask);
            if (b > 0) p_send(p, (me + mask) % P, b);
            subtree = mask;
        }
        mask >>= 1;
    }
}

static void gen_bcast_scatter_ring(ms_coll_plan *p, int P, int me, int root, uint64_t bytes)
{
    uint64_t ss = (bytes + (uint64_t)P - 1) / (uint64_t)P;
    gen_bcast_scatter(p, P, me, root, bytes, ss);
    int left = (P + me - 1) % P, right = (me + 1) % P;
    int j = me, jnext = left;
    for (int i = 1; i < P; i++) {
        uint64_t lc = chunk_bytes(bytes, ss, (jnext - root + P) % P, 1);
        uint64_t rc = chunk_bytes(bytes, ss, (j - root + P) % P, 1);
        p_sendrecv(p, right, rc, left, lc, 0);
        j = jnext;
        jnext = (P + jnext - 1) % P;
    }
}

static void gen_bcast_scatter_rd(ms_coll_plan *p, int P, int me, int root, uint64_t bytes)
{
    /* P is a power of two here */
    uint64_t ss = (bytes + (uint64_t)P - 1) / (uint64_t)P;
    gen_bcast_scatter(p, P, me, root, bytes, ss);
    int rel = (me - root + P) % P;
    for (int mask = 1, i = 0; mask < P; mask <<= 1, i++) {
        int rdst = rel ^ mask;
        int dst = (rdst + root) % P;
        int dst_tree = rdst >> i << i, my_tree = rel >> i << i;
        p_sendrecv(p, dst, chunk_bytes(bytes, ss, my_tree, mask), dst, chunk_bytes(bytes, ss, dst_tree, mask), 0);
    }
}

/* ---- reduce -------------------------------------------------------------------------------- */

static void gen_reduce_binomial(ms_coll_plan *p, int P, int me, int root, uint64_t bytes)
{
    int rel = (me - root + P) % P;
    for (int mask = 1; mask < P; mask <<= 1) {
        if ((mask & rel) == 0) {
            int src = rel | mask;
            if (src < P) p_recv(p, (src + root) % P, bytes, bytes);
        } else {
            p_send(p, ((rel & ~mask) + root) % P, bytes);
            break;
        }
    }
}

static uint64_t sum_range(const uint64_t *c, int a, int b)
{
    uint64_t s = 0;
    for (int i = a; i < b; i++) s += c[i];
    return s;
}

/* Rabenseifner block counts (elements) over pof2 blocks, as MPICH allreduce/reduce cut them. */
static uint64_t *rab_counts(int pof2, uint64_t count)
{
    uint64_t *c = malloc((size_t)pof2 * sizeof *c);
    if (!c) return NULL;
    for (int i = 0; i < pof2 - 1; i++) c[i] = count / (uint64_t)pof2;
    c[pof2 - 1] = count - (count / (uint64_t)pof2) * (uint64_t)(pof2 - 1);
    return c;
}

/* Reduce-scatter by recursive halving over newranks (MPICH loop: mask 1,2,..; halves). */
static void rab_reduce_scatter(ms_coll_plan *p, int pof2, int rem, int newrank, const uint64_t *cnts,
                               uint64_t esz, int odd_partner, int *send_idx_o, int *last_idx_o)
{
    int send_idx = 0, recv_idx = 0, last_idx = pof2;
    for (int mask = 1; mask < pof2;) {
        int newdst = newrank ^ mask;
        int dst = newdst < rem ? newdst * 2 + odd_partner : newdst + rem;
        uint64_t sc, rc;
        if (newrank < newdst) {
            send_idx = recv_idx + pof2 / (mask * 2);
            sc = sum_range(cnts, send_idx, last_idx);
            rc = sum_range(cnts, recv_idx, send_idx);
        } else {
            recv_idx = send_idx + pof2 / (mask * 2);
            sc = sum_range(cnts, send_idx, recv_idx);
            rc = sum_range(cnts, recv_idx, last_idx);
        }
        p_sendrecv(p, dst, sc * esz, dst, rc * esz, rc * esz);
        send_idx = recv_idx;
        mask <<= 1;
        if (mask < pof2) last_idx = recv_idx + pof2 / mask;
    }
    *send_idx_o = send_idx;
    *last_idx_o = last_idx;
}

static int gen_reduce_rsg(ms_coll_plan *p, int P, int me, int root, uint64_t bytes)
{
    uint64_t esz = elem_size(bytes), count = bytes / esz;
    int pof2 = pof2_floor(P), rem = P - pof2, newrank;
    if (me < 2 * rem) {
        if (me % 2 != 0) {
            p_send(p, me - 1, bytes);
            newrank = -1;
        } else {
            p_recv(p, me + 1, bytes, bytes);
            newrank = me / 2;
        }
    } else {
        newrank = me - rem;
    }
    uint64_t *cnts = rab_counts(pof2, count);
    if (!cnts) return -1;
    int send_idx = 0, last_idx = pof2, recv_idx = 0;
    if (newrank != -1) rab_reduce_scatter(p, pof2, rem, newrank, cnts, esz, 0, &send_idx, &last_idx);
    int newroot;
    if (root < 2 * rem) {
        if (root % 2 != 0) {
            if (me == root) {
                p_recv(p, 0, cnts[0] * esz, 0);
                newrank = 0;
                send_idx = 0;
                last_idx = 2;
            } else if (newrank == 0) {
                p_send(p, root, cnts[0] * esz);
                newrank = -1;
            }
            newroot = 0;
        } else {
            newroot = root / 2;
        }
    } else {
        newroot = root - rem;
    }
    if (newrank != -1) {
        int j = 0, mask = 1;
        while (mask < pof2) { mask <<= 1; j++; }
        mask >>= 1;
        j--;
        while (mask > 0) {
            int newdst = newrank ^ mask;
            int dst = newdst < rem ? newdst * 2 : newdst + rem;
            if (newdst == 0 && root < 2 * rem && root % 2 != 0) dst = root;
            int newdst_tree = newdst >> j << j, newroot_tree = newroot >> j << j;
            uint64_t sc, rc;
            if (newrank < newdst) {
                if (mask != pof2 / 2) last_idx = last_idx + pof2 / (mask * 2);
                recv_idx = send_idx + pof2 / (mask * 2);
                sc = sum_range(cnts, send_idx, recv_idx);
                rc = sum_range(cnts, recv_idx, last_idx);
            } else {
                recv_idx = send_idx - pof2 / (mask * 2);
                sc = sum_range(cnts, send_idx, last_idx);
                rc = sum_range(cnts, recv_idx, send_idx);
            }
            if (newdst_tree == newroot_tree) {
                p_send(p, dst, sc * esz);
                break;
            }
            p_recv(p, dst, rc * esz, 0);
            if (newrank > newdst) send_idx = recv_idx;
            mask >>= 1;
            j--;
        }
    }
    free(cnts);
    return 0;
}

/* ---- allreduce ----------------------------------------------------------------------------- */

/* Non-power-of-two prologue of MPICH allreduce / reduce_scatter: even ranks < 2*rem give their
 * vector to rank+1 and sit out. Returns newrank (-1 for those sitting out). */
static int fold_in(ms_coll_plan *p, int me, int rem, uint64_t bytes)
{
    if (me < 2 * rem) {
        if (me % 2 == 0) {
            p_send(p, me + 1, bytes);
            return -1;
        }
        p_recv(p, me - 1, bytes, bytes);
        return me / 2;
    }
    return me - rem;
}
static void fold_out(ms_coll_plan *p, int me, int rem, uint64_t bytes)
{
    if (me < 2 * rem) {
        if (me % 2) p_send(p, me - 1, bytes);
        else p_recv(p, me + 1, bytes, 0);
    }
}

static void gen_allreduce_rd(ms_coll_plan *p, int P, int me, uint64_t bytes)
{
    int pof2 = pof2_floor(P), rem = P - pof2;
    step_copy_next(p, bytes);   /* the send buffer into the result first (MPICH, Open MPI) */
    int newrank = fold_in(p, me, rem, bytes);
    if (newrank != -1) {
        for (int mask = 1; mask < pof2; mask <<= 1) {
            int newdst = newrank ^ mask;
            int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
            p_sendrecv(p, dst, bytes, dst, bytes, bytes);
        }
    }
    fold_out(p, me, rem, bytes);
}

static int gen_allreduce_rsag(ms_coll_plan *p, int P, int me, uint64_t bytes)
{
    uint64_t esz = elem_size(bytes), count = bytes / esz;
    int pof2 = pof2_floor(P), rem = P - pof2;
    step_copy_next(p, bytes);   /* the send buffer into the result first (MPICH, Open MPI) */
    int newrank = fold_in(p, me, rem, bytes);
    if (newrank != -1) {
        uint64_t *cnts = rab_counts(pof2, count);
        if (!cnts) return -1;
        int send_idx, last_idx, recv_idx;
        rab_reduce_scatter(p, pof2, rem, newrank, cnts, esz, 1, &send_idx, &last_idx);
        for (int mask = pof2 >> 1; mask > 0; mask >>= 1) {
            int newdst = newrank ^ mask;
            int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
            uint64_t sc, rc;
            if (newrank < newdst) {
                if (mask != pof2 / 2) last_idx = last_idx + pof2 / (mask * 2);
                recv_idx = send_idx + pof2 / (mask * 2);
                sc = sum_range(cnts, send_idx, recv_idx);
                rc = sum_range(cnts, recv_idx, last_idx);
            } else {
                recv_idx = send_idx - pof2 / (mask * 2);
                sc = sum_range(cnts, send_idx, last_idx);
                rc = sum_range(cnts, recv_idx, send_idx);
            }
            p_sendrecv(p, dst, sc * esz, dst, rc * esz, 0);
            /* the allgather receives the blocks this member gave away in the reduce-scatter */
            if (!p->oom && p->nops) p->ops[p->nops - 1].into_sent = 1;
            if (newrank > newdst) send_idx = recv_idx;
        }
        free(cnts);
    }
    fold_out(p, me, rem, bytes);
    return 0;
}

/* ---- gather / scatter ---------------------------------------------------------------------- */

static void gen_gather_binomial(ms_coll_plan *p, int P, int me, int root, uint64_t bytes)
{
    int rel = (me - root + P) % P;
    uint64_t curr = 1;   /* blocks held */
    for (int mask = 1; mask < P; mask <<= 1) {
        if ((mask & rel) == 0) {
            int src = rel | mask;
            if (src < P) {
                uint64_t n = (uint64_t)(mask < P - src ? mask : P - src);
                p_recv(p, (src + root) % P, n * bytes, 0);
                curr += n;
            }
        } else {
            p_send(p, ((rel ^ mask) + root) % P, curr * bytes);
            break;
        }
    }
}

static void gen_scatter_binomial(ms_coll_plan *p, int P, int me, int root, uint64_t bytes)
{
    int rel = (me - root + P) % P, mask = 1;
    int curr = rel == 0 ? P : 0;
    while (mask < P) {
        if (rel & mask) {
            curr = mask < P - rel ? mask : P - rel;
            p_recv(p, (me - mask + P) % P, (uint64_t)curr * bytes, 0);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while (mask > 0) {
        if (rel + mask < P) {
            p_send(p, (me + mask) % P, (uint64_t)(curr - mask) * bytes);
            curr = mask;
        }
        mask >>= 1;
    }
}

/* Linear gather(v): the root posts all receives (nonzero blocks) in one Waitall. Non-roots send
 * their own block when it is not empty. */
static void gen_gather_linear(ms_coll_plan *p, int P, int me, int root, uint64_t bytes, const uint64_t *counts)
{
    if (me == root) {
        step_begin(p);
        for (int i = 0; i < P; i++) {
            uint64_t c = cnt_of(counts, bytes, i);
            if (i != root && c > 0) op_add(p, i, 0, c);
        }
        if (p->nsteps && p->steps[p->nsteps - 1].nops == 0) p->nsteps--;
    } else if (bytes > 0) {
        p_send(p, root, bytes);
    }
}
static void gen_scatter_linear(ms_coll_plan *p, int P, int me, int root, uint64_t bytes, const uint64_t *counts)
{
    if (me == root) {
        step_begin(p);
        for (int i = 0; i < P; i++) {
            uint64_t c = cnt_of(counts, bytes, i);
            if (i != root && c > 0) op_add(p, i, 1, c);
        }
        if (p->nsteps && p->steps[p->nsteps - 1].nops == 0) p->nsteps--;
    } else if (bytes > 0) {
        p_recv(p, root, bytes, 0);
    }
}

/* ---- allgather(v) -------------------------------------------------------------------------- */

/* bytes of the blocks [a, a+n) taken cyclically mod P */
static uint64_t cyc_bytes(const uint64_t *counts, uint64_t bytes, int P, int a, int n)
{
    if (!counts) return (uint64_t)n * bytes;
    uint64_t s = 0;
    for (int k = 0; k < n; k++) s += counts[(a + k) % P];
    return s;
}

static void gen_allgather_rd(ms_coll_plan *p, int P, int me, uint64_t bytes, const uint64_t *counts)
{
    /* P is a power of two */
    for (int mask = 1, i = 0; mask < P; mask <<= 1, i++) {
        int dst = me ^ mask;
        int my_tree = me >> i << i, dst_tree = dst >> i << i;
        p_sendrecv(p, dst, cyc_bytes(counts, bytes, P, my_tree, mask), dst,
                   cyc_bytes(counts, bytes, P, dst_tree, mask), 0);
    }
}
static void gen_allgather_bruck(ms_coll_plan *p, int P, int me, uint64_t bytes, const uint64_t *counts)
{
    int pof2 = 1;
    while (pof2 <= P / 2) {
        int src = (me + pof2) % P, dst = (me - pof2 + P) % P;
        p_sendrecv(p, dst, cyc_bytes(counts, bytes, P, me, pof2), src, cyc_bytes(counts, bytes, P, src, pof2), 0);
        pof2 *= 2;
    }
    int rem = P - pof2;
    if (rem) {
        int src = (me + pof2) % P, dst = (me - pof2 + P) % P;
        p_sendrecv(p, dst, cyc_bytes(counts, bytes, P, me, rem), src, cyc_bytes(counts, bytes, P, src, rem), 0);
    }
}
static void gen_allgather_ring(ms_coll_plan *p, int P, int me, uint64_t bytes, const uint64_t *counts)
{
    int left = (P + me - 1) % P, right = (me + 1) % P;
    int j = me, jnext = left;
    for (int i = 1; i < P; i++) {
        p_sendrecv(p, right, cnt_of(counts, bytes, j), left, cnt_of(counts, bytes, jnext), 0);
        j = jnext;
        jnext = (P + jnext - 1) % P;
    }
}

/* ---- alltoall(v) --------------------------------------------------------------------------- */

static void gen_alltoall_bruck(ms_coll_plan *p, int P, int me, uint64_t bytes)
{
    for (int pof2 = 1; pof2 < P; pof2 *= 2) {
        uint64_t n = 0;
        for (int i = 0; i < P; i++)
            if (i & pof2) n++;
        p_sendrecv(p, (me + pof2) % P, n * bytes, (me - pof2 + P) % P, n * bytes, 0);
    }
}
/* Scattered isend/irecv in batches of ALLTOALL_THROTTLE peers (including the rank itself, as
 * MPICH does). For alltoallv, `counts` are this member's send counts, followed by its receive
 * counts when `rcounts` is set: MPICH posts neither a receive nor a send of zero bytes (the
 * receive count from a peer is that peer's send count here, as MPI requires). Without receive
 * counts (traces of older versions) every pair exchanges a message, zero-byte ones included. */
static void gen_alltoall_scattered(ms_coll_plan *p, int P, int me, uint64_t bytes, const uint64_t *counts,
                                   const uint64_t *rcounts)
{
    for (int ii = 0; ii < P; ii += ALLTOALL_THROTTLE) {
        int ss = P - ii < ALLTOALL_THROTTLE ? P - ii : ALLTOALL_THROTTLE;
        step_begin(p);
        for (int i = 0; i < ss; i++) {
            int src = (me + ii + i) % P;
            if (!rcounts || rcounts[src]) op_add(p, src, 0, rcounts ? rcounts[src] : counts ? 0 : bytes);
        }
        for (int i = 0; i < ss; i++) {
            int dst = (me - ii - i + P) % P;
            if (!rcounts || counts[dst]) op_add(p, dst, 1, cnt_of(counts, bytes, dst));
        }
        if (p->nsteps && p->steps[p->nsteps - 1].nops == 0) p->nsteps--;
    }
}
static void gen_alltoall_pairwise(ms_coll_plan *p, int P, int me, uint64_t bytes)
{
    int pof2 = is_pof2(P);
    step_copy_next(p, bytes);   /* its own block into the result first (MPICH; Open MPI copies it last) */
    for (int i = 1; i < P; i++) {
        int src, dst;
        if (pof2) {
            src = dst = me ^ i;
        } else {
            src = (me - i + P) % P;
            dst = (me + i) % P;
        }
        p_sendrecv(p, dst, bytes, src, bytes, 0);
    }
}

/* ---- reduce_scatter ------------------------------------------------------------------------ */

static int gen_redscat_halving(ms_coll_plan *p, int P, int me, uint64_t bytes, const uint64_t *counts)
{
    uint64_t total = sum_counts(counts, P, bytes);
    int pof2 = pof2_floor(P), rem = P - pof2;
    int newrank = fold_in(p, me, rem, total);
    if (newrank != -1) {
        uint64_t *nc = malloc((size_t)pof2 * sizeof *nc);
        if (!nc) return -1;
        for (int i = 0; i < pof2; i++) {
            int old = i < rem ? i * 2 + 1 : i + rem;
            nc[i] = old < 2 * rem ? cnt_of(counts, bytes, old) + cnt_of(counts, bytes, old - 1)
                                  : cnt_of(counts, bytes, old);
        }
        int send_idx = 0, recv_idx = 0, last_idx = pof2;
        for (int mask = pof2 >> 1; mask > 0; mask >>= 1) {
            int newdst = newrank ^ mask;
            int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
            uint64_t sc, rc;
            if (newrank < newdst) {
                send_idx = recv_idx + mask;
                sc = sum_range(nc, send_idx, last_idx);
                rc = sum_range(nc, recv_idx, send_idx);
            } else {
                recv_idx = send_idx + mask;
                sc = sum_range(nc, send_idx, recv_idx);
                rc = sum_range(nc, recv_idx, last_idx);
            }
            if (sc && rc) p_sendrecv(p, dst, sc, dst, rc, rc);
            else if (rc) p_recv(p, dst, rc, rc);
            else if (sc) p_send(p, dst, sc);
            send_idx = recv_idx;
            last_idx = recv_idx + mask;
        }
        free(nc);
    }
    if (me < 2 * rem) {
        if (me % 2) {
            uint64_t c = cnt_of(counts, bytes, me - 1);
            if (c) p_send(p, me - 1, c);
        } else {
            uint64_t c = cnt_of(counts, bytes, me);
            if (c) p_recv(p, me + 1, c, 0);
        }
    }
    return 0;
}
static void gen_redscat_pairwise(ms_coll_plan *p, int P, int me, uint64_t bytes, const uint64_t *counts)
{
    for (int i = 1; i < P; i++) {
        int src = (me - i + P) % P, dst = (me + i) % P;
        uint64_t r = cnt_of(counts, bytes, me);
        p_sendrecv(p, dst, cnt_of(counts, bytes, dst), src, r, r);
    }
}

/* ---- scan / exscan ------------------------------------------------------------------------- */

static void gen_scan(ms_coll_plan *p, int P, int me, uint64_t bytes, int exclusive)
{
    int flag = 0;
    for (int mask = 1; mask < P; mask <<= 1) {
        int dst = me ^ mask;
        if (dst >= P) continue;
        uint64_t red = bytes;   /* combine into the partial result */
        if (me > dst) {
            if (!exclusive) red += bytes;          /* and into the result */
            else if (me != 0) {
                if (flag) red += bytes;            /* first contribution is a copy */
                flag = 1;
            }
        }
        p_sendrecv(p, dst, bytes, dst, bytes, red);
    }
}

/* ---- selection ----------------------------------------------------------------------------- */

int ms_coll_choose(ms_coll_kind kind, int P, uint64_t bytes, const uint64_t *counts)
{
    int pof2 = pof2_floor(P > 0 ? P : 1);
    uint64_t esz = elem_size(bytes);
    switch (kind) {
    case MS_COLL_BARRIER: return BAR_DISSEM;
    case MS_COLL_BCAST:
        if (bytes < BCAST_SHORT_MSG || P < BCAST_MIN_PROCS) return BC_BINOMIAL;
        if (bytes < BCAST_LONG_MSG && is_pof2(P)) return BC_SCATTER_RD;
        return BC_SCATTER_RING;
    case MS_COLL_REDUCE:
        return (bytes > REDUCE_SHORT_MSG && bytes / esz >= (uint64_t)pof2) ? RED_RSG : RED_BINOMIAL;
    case MS_COLL_ALLREDUCE:
        return (bytes <= ALLREDUCE_SHORT_MSG || bytes / esz < (uint64_t)pof2) ? AR_RD : AR_RSAG;
    case MS_COLL_GATHER: case MS_COLL_SCATTER: return GS_BINOMIAL;
    case MS_COLL_GATHERV: case MS_COLL_SCATTERV: return 1;
    case MS_COLL_ALLGATHER: case MS_COLL_ALLGATHERV: {
        uint64_t tot = sum_counts(kind == MS_COLL_ALLGATHERV ? counts : NULL, P, bytes);
        if (tot < ALLGATHER_LONG_MSG && is_pof2(P)) return AG_RD;
        if (tot < ALLGATHER_SHORT_MSG) return AG_BRUCK;
        return AG_RING;
    }
    case MS_COLL_ALLTOALL:
        if (bytes <= ALLTOALL_SHORT_MSG && P >= ALLTOALL_MIN_PROCS) return A2A_BRUCK;
        if (bytes <= ALLTOALL_MEDIUM_MSG) return A2A_SCATTERED;
        return A2A_PAIRWISE;
    case MS_COLL_ALLTOALLV: return 1;
    case MS_COLL_REDUCE_SCATTER:
        return sum_counts(counts, P, bytes) < REDSCAT_COMM_LONG_MSG ? RS_HALVING : RS_PAIRWISE;
    case MS_COLL_SCAN: case MS_COLL_EXSCAN: return 1;
    default: return 1;
    }
}

/* Forced algorithms that need a power of two fall back to the automatic choice. */
static int applicable(ms_coll_kind kind, int alg, int P)
{
    if (kind == MS_COLL_BCAST && alg == BC_SCATTER_RD) return is_pof2(P);
    if ((kind == MS_COLL_ALLGATHER || kind == MS_COLL_ALLGATHERV) && alg == AG_RD) return is_pof2(P);
    return 1;
}

void ms_coll_plan_free(ms_coll_plan *p)
{
    if (!p) return;
    free(p->steps);
    free(p->ops);
    memset(p, 0, sizeof *p);
}

/* MPI_Neighbor_*: MPICH posts a receive from every in-neighbour and a send to every out-neighbour
 * at once and waits for all (counts: see MS_COLL_NEIGHBOR in ms_model.h). */
static int gen_neighbor(ms_coll_plan *p, int P, const uint64_t *c)
{
    if (!c) return -1;
    uint64_t nin = c[0], nout = c[1];
    const uint64_t *in = c + 2, *inb = in + nin, *out = inb + nin, *outb = out + nout;
    for (uint64_t i = 0; i < nin + nout; i++) {
        uint64_t peer = i < nin ? in[i] : out[i - nin];
        if (peer >= (uint64_t)P) return -1;
    }
    if (nin + nout == 0) return 0;
    step_begin(p);
    for (uint64_t i = 0; i < nin; i++) op_add(p, (int)in[i], 0, inb[i]);
    for (uint64_t i = 0; i < nout; i++) op_add(p, (int)out[i], 1, outb[i]);
    return p->oom ? -1 : 0;
}

/* MPICH returns at once from a collective that moves nothing (count 0, or a zero-size datatype:
 * "if (count == 0) goto fn_exit" in MPIR_Bcast, MPIR_Reduce, MPIR_Allreduce, MPIR_Scan...; gathers
 * and scatters of empty blocks, alltoall(v) and allgatherv of a total of 0): no message at all. A
 * barrier always synchronises; neighbourhood collectives post their (empty) messages. */
static int empty_collective(ms_coll_kind kind, int P, uint64_t bytes, const uint64_t *counts, size_t ncounts)
{
    switch (kind) {
    case MS_COLL_BARRIER: case MS_COLL_NEIGHBOR: return 0;
    case MS_COLL_GATHERV: case MS_COLL_SCATTERV:
        /* the root's counts (NULL elsewhere: a member's own block is `bytes`) */
        if (bytes) return 0;
        for (size_t i = 0; counts && i < ncounts; i++)
            if (counts[i]) return 0;
        return 1;
    case MS_COLL_ALLGATHERV: case MS_COLL_ALLTOALLV: case MS_COLL_REDUCE_SCATTER:
        if (!counts) return bytes == 0;
        for (size_t i = 0; i < ncounts; i++)
            if (counts[i]) return 0;
        return kind != MS_COLL_ALLTOALLV || ncounts >= 2 * (size_t)P;   /* without receive counts: unknown */
    default: return bytes == 0;
    }
}

static int gen_intra(ms_coll_plan *p, ms_coll_kind kind, int alg, int P, int me, int root, uint64_t bytes,
                     const uint64_t *counts, size_t ncounts)
{
    int hasroot = kind == MS_COLL_BCAST || kind == MS_COLL_REDUCE || kind == MS_COLL_GATHER ||
                  kind == MS_COLL_SCATTER || kind == MS_COLL_GATHERV || kind == MS_COLL_SCATTERV;
    if (hasroot && (root < 0 || root >= P)) return -1;
    if (!hasroot) root = 0;
    if (alg < 0 || alg >= ms_coll_algorithm_count(kind)) return -1;
    if (alg == 0 || !applicable(kind, alg, P)) alg = ms_coll_choose(kind, P, bytes, counts);
    p->alg = alg;
    if (P == 1) return 0;
    /* alltoallv: receive counts after the send counts (ms_model.h) */
    const uint64_t *rcounts = kind == MS_COLL_ALLTOALLV && counts && ncounts >= 2 * (size_t)P ? counts + P : NULL;
    if (empty_collective(kind, P, bytes, counts, ncounts)) return 0;
    int rc = 0;
    switch (kind) {
    case MS_COLL_BARRIER: gen_barrier(p, P, me); break;
    case MS_COLL_BCAST:
        if (alg == BC_BINOMIAL) gen_bcast_binomial(p, P, me, root, bytes);
        else if (alg == BC_MULTICAST) gen_bcast_multicast(p, P, me, root, bytes);
        else if (alg == BC_SCATTER_RD) gen_bcast_scatter_rd(p, P, me, root, bytes);
        else gen_bcast_scatter_ring(p, P, me, root, bytes);
        break;
    case MS_COLL_REDUCE:
        if (alg == RED_BINOMIAL) gen_reduce_binomial(p, P, me, root, bytes);
        else rc = gen_reduce_rsg(p, P, me, root, bytes);
        break;
    case MS_COLL_ALLREDUCE:
        if (alg == AR_RD) gen_allreduce_rd(p, P, me, bytes);
        else rc = gen_allreduce_rsag(p, P, me, bytes);
        break;
    case MS_COLL_GATHER:
        if (alg == GS_BINOMIAL) gen_gather_binomial(p, P, me, root, bytes);
        else gen_gather_linear(p, P, me, root, bytes, NULL);
        break;
    case MS_COLL_SCATTER:
        if (alg == GS_BINOMIAL) gen_scatter_binomial(p, P, me, root, bytes);
        else gen_scatter_linear(p, P, me, root, bytes, NULL);
        break;
    case MS_COLL_GATHERV: gen_gather_linear(p, P, me, root, bytes, counts); break;
    case MS_COLL_SCATTERV: gen_scatter_linear(p, P, me, root, bytes, counts); break;
    case MS_COLL_ALLGATHER:
    case MS_COLL_ALLGATHERV: {
        const uint64_t *c = kind == MS_COLL_ALLGATHERV ? counts : NULL;
        if (alg == AG_RD) gen_allgather_rd(p, P, me, bytes, c);
        else if (alg == AG_BRUCK) gen_allgather_bruck(p, P, me, bytes, c);
        else gen_allgather_ring(p, P, me, bytes, c);
        break;
    }
    case MS_COLL_ALLTOALL:
        if (alg == A2A_BRUCK) gen_alltoall_bruck(p, P, me, bytes);
        else if (alg == A2A_SCATTERED) gen_alltoall_scattered(p, P, me, bytes, NULL, NULL);
        else gen_alltoall_pairwise(p, P, me, bytes);
        break;
    case MS_COLL_ALLTOALLV: gen_alltoall_scattered(p, P, me, bytes, counts, rcounts); break;
    case MS_COLL_NEIGHBOR: rc = gen_neighbor(p, P, counts); break;
    case MS_COLL_REDUCE_SCATTER:
        if (alg == RS_HALVING) rc = gen_redscat_halving(p, P, me, bytes, counts);
        else gen_redscat_pairwise(p, P, me, bytes, counts);
        break;
    case MS_COLL_SCAN: gen_scan(p, P, me, bytes, 0); break;
    case MS_COLL_EXSCAN: gen_scan(p, P, me, bytes, 1); break;
    default: return -1;
    }
    return rc != 0 || p->oom ? -1 : 0;
}

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
    int rc = gen_intra(&q, kind, x->alg, x->lsize, x->lr, root, bytes, counts, ncounts);
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

static int gen_inter(ms_coll_plan *p, const ms_coll_spec *s)
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
    case MS_COLL_GATHER: {
        /* the total both sides agree on: the root's recvcount x remote size = sendcount x local size */
        uint64_t total = am_root ? B * (uint64_t)x.rsize : B * (uint64_t)x.lsize;
        if (B == 0) break;
        if (total < GATHER_INTER_SHORT_MSG) {   /* MPIR_Gather_inter_local_gather_remote_send */
            if (am_root) p_recv(p, x.roff, total, 0);
            else {
                if (append_local(p, &x, MS_COLL_GATHER, 0, B, NULL, 0) < 0) return -1;
                if (x.lr == 0) p_send(p, root, total);
            }
        } else if (am_root) {                   /* MPIR_Gather_inter_linear: one MPIC_Recv per rank */
            for (int i = 0; i < x.rsize; i++) p_recv(p, x.roff + i, B, 0);
        } else {
            p_send(p, root, B);
        }
        break;
    }
    case MS_COLL_SCATTER: {
        uint64_t total = am_root ? B * (uint64_t)x.rsize : B * (uint64_t)x.lsize;
        if (B == 0) break;
        if (total < SCATTER_INTER_SHORT_MSG) {  /* MPIR_Scatter_inter_remote_send_local_scatter */
            if (am_root) p_send(p, x.roff, total);
            else {
                if (x.lr == 0) p_recv(p, root, total, 0);
                if (append_local(p, &x, MS_COLL_SCATTER, 0, B, NULL, 0) < 0) return -1;
            }
        } else if (am_root) {                   /* MPIR_Scatter_inter_linear: one MPIC_Send per rank */
            for (int i = 0; i < x.rsize; i++) p_send(p, x.roff + i, B);
        } else {
            p_recv(p, root, B, 0);
        }
        break;
    }
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
    case MS_COLL_ALLGATHERV: {
        /* MPIR_Allgatherv_inter: a gatherv to each group's rank 0 from the other group, low group's
         * first, then a bcast of what it received in each group */
        uint64_t total = 0;
        for (int i = 0; i < x.rsize; i++) total += c[i];
        if (total == 0 && B == 0) break;
        for (int phase = 0; phase < 2; phase++) {
            if ((phase == 0) == x.lo) {
                if (x.lr == 0) inter_gatherv_root(p, &x, c);
            } else if (B) {
                p_send(p, x.roff, B);
            }
        }
        if (append_local(p, &x, MS_COLL_BCAST, 0, total, NULL, 0) < 0) return -1;
        break;
    }
    case MS_COLL_ALLTOALL:
    case MS_COLL_ALLTOALLV: {
        /* MPIR_Alltoall(v)_inter_pairwise_exchange: max(local, remote size) steps, each a sendrecv
         * with the remote ranks (rank + i) and (rank - i), where they exist */
        int v = s->kind == MS_COLL_ALLTOALLV;
        if (!v && B == 0) break;
        if (v && empty_collective(MS_COLL_ALLTOALLV, x.rsize, 0, c, 2 * (size_t)x.rsize)) break;
        int max = x.lsize > x.rsize ? x.lsize : x.rsize;
        for (int i = 0; i < max; i++) {
            int src = (x.lr - i + max) % max, dst = (x.lr + i) % max;
            step_begin(p);
            if (src < x.rsize) op_add(p, x.roff + src, 0, v ? c[x.rsize + src] : B);
            if (dst < x.rsize) op_add(p, x.roff + dst, 1, v ? c[dst] : B);
            if (p->nsteps && p->steps[p->nsteps - 1].nops == 0) p->nsteps--;
        }
        break;
    }
    case MS_COLL_REDUCE_SCATTER: {
        /* MPIR_Reduce_scatter_inter_remote_reduce_local_scatter: the whole vector reduced to the
         * low group's rank 0 from the high group, then to the high group's rank 0 from the low
         * group, then scattered in each group */
        uint64_t total = 0;
        for (int i = 0; i < x.lsize; i++) total += c[i];
        if (total == 0) break;
        for (int phase = 0; phase < 2; phase++) {
            if ((phase == 0) == x.lo) {
                if (x.lr == 0) p_recv(p, x.roff, total, total);
            } else if (inter_reduce_send(p, &x, x.roff, total) < 0) {
                return -1;
            }
        }
        if (append_local(p, &x, MS_COLL_SCATTERV, 0, c[x.lr], c, (size_t)x.lsize) < 0) return -1;
        break;
    }
    default:
        return -1;   /* scan, exscan and neighbourhood collectives have no intercommunicator form */
    }
    return p->oom ? -1 : 0;
}

int ms_coll_generate_spec(ms_coll_plan *p, const ms_coll_spec *s)
{
    if (!p || !s || (unsigned)s->kind >= MS_COLL_COUNT || s->size < 1 || s->me < 0 || s->me >= s->size) return -1;
    p->nsteps = 0;
    p->nops = 0;
    p->pending_copy = 0;
    p->oom = 0;
    if (s->inter_low) return gen_inter(p, s);
    return gen_intra(p, s->kind, s->alg, s->size, s->me, s->root, s->bytes, s->counts,
                     s->counts ? s->ncounts : 0);
}

int ms_coll_generate(ms_coll_plan *p, ms_coll_kind kind, int alg, int P, int me, int root, uint64_t bytes,
                     const uint64_t *counts)
{
    ms_coll_spec s = {kind, alg, P, me, root, bytes, counts, counts ? (size_t)P : 0, 0};
    return ms_coll_generate_spec(p, &s);
}
