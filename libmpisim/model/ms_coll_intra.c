/* Intracommunicator collectives: the generators of MPICH 3.x's algorithms (see ms_coll.c) and
 * the dispatch to them. */
#include "ms_coll_internal.h"

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
int mscoll_empty_collective(ms_coll_kind kind, int P, uint64_t bytes, const uint64_t *counts, size_t ncounts)
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

int mscoll_gen_intra(ms_coll_plan *p, ms_coll_kind kind, int alg, int P, int me, int root, uint64_t bytes,
                     const uint64_t *counts, size_t ncounts)
{
    int hasroot = kind == MS_COLL_BCAST || kind == MS_COLL_REDUCE || kind == MS_COLL_GATHER ||
                  kind == MS_COLL_SCATTER || kind == MS_COLL_GATHERV || kind == MS_COLL_SCATTERV;
    if (hasroot && (root < 0 || root >= P)) return -1;
    if (!hasroot) root = 0;
    if (alg < 0 || alg >= ms_coll_algorithm_count(kind)) return -1;
    if (alg == 0 || !mscoll_applicable(kind, alg, P)) alg = ms_coll_choose(kind, P, bytes, counts);
    p->alg = alg;
    if (P == 1) return 0;
    /* alltoallv: receive counts after the send counts (ms_model.h) */
    const uint64_t *rcounts = kind == MS_COLL_ALLTOALLV && counts && ncounts >= 2 * (size_t)P ? counts + P : NULL;
    if (mscoll_empty_collective(kind, P, bytes, counts, ncounts)) return 0;
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
