/* intercomm: point-to-point and collectives over an intercommunicator between two halves of
 * the job (MPI_Intercomm_create), and over the intracommunicator merged from it
 * (MPI_Intercomm_merge).
 *
 *   Group A: world ranks 0 .. P/2-1 (the first half; with --interleave the even ranks), group B the
 *   others. The leaders are each group's rank 0.
 *   pingpong: half round trip between the two leaders over the intercommunicator, and the same
 *     over MPI_COMM_WORLD between the same two processes (they should cost the same).
 *   collectives over the intercommunicator: barrier, bcast (root: A's leader), reduce (root: B's
 *     leader), allreduce, gather and scatter (root: A's leader), allgather, alltoall, gatherv,
 *     scatterv, allgatherv, alltoallv, reduce_scatter_block; then allreduce over the merged
 *     communicator. time_s: one call, averaged over --iters on world rank 0.
 *
 * Usage: intercomm [--sizes a,b,..] [--iters K] [--interleave]
 *   default sizes: 8,1k,64k (bytes per member and peer; ints)
 *
 * Output (rank 0):
 *   # intercomm procs=<P> groups=<a>+<b> iters=<K>
 *   test,bytes,time_s
 *   pingpong_inter,<B>,<s>   pingpong_world,<B>,<s>   barrier,0,<s>   bcast,<B>,<s> ...
 *   # check=ok
 *
 * Check: every collective's result is compared with what the other group sent.
 */
#include "app_args.h"

static const char *const USAGE = "intercomm [--sizes a,b,..] [--iters K] [--interleave]";

static int wrank, wsize, in_a, lrank, lsize, rsize, errors;

static void expect(int ok, const char *what, long bytes)
{
    if (ok) return;
    fprintf(stderr, "intercomm: world rank %d: %s at %ld bytes: wrong result\n", wrank, what, bytes);
    errors++;
}

/* the value member r of group g (0 = A, 1 = B) contributes at element i */
static int val(int g, int r, long i) { return (g + 1) * 100000 + r * 1000 + (int)(i % 997); }

/* What every test uses: the intercommunicator, the leaders' world ranks, this member's group (g:
 * 0 = A, 1 = B) and the other (rg), and buffers for the largest size. */
typedef struct {
    MPI_Comm inter;
    long iters;
    int leader_a, leader_b, g, rg;
    int *sb, *rb, *sc, *sd, *rc, *rd;
} ic_t;

/* A timed loop of `body` (iters times, after a barrier) and its line: the time of one. */
#define TIMED(name, body)                                                                                  \
    do {                                                                                                   \
        MPI_Barrier(MPI_COMM_WORLD);                                                                       \
        t = MPI_Wtime();                                                                                   \
        for (long k = 0; k < iters; k++) { body; }                                                         \
        t = (MPI_Wtime() - t) / (double)iters;                                                             \
        if (wrank == 0) printf("%s,%ld,%.9e\n", name, bytes, t);                                           \
    } while (0)

/* Ping-pong between the leaders: over the intercommunicator (remote rank 0), then the world. */
static void pingpongs(const ic_t *x, long bytes)
{
    const long iters = x->iters, n = bytes / 4;
    const int g = x->g, rg = x->rg, leader_a = x->leader_a, leader_b = x->leader_b;
    int *sb = x->sb, *rb = x->rb;
    MPI_Comm inter = x->inter;
    double t;
    for (int pass = 0; pass < 2; pass++) {
        MPI_Comm c = pass ? MPI_COMM_WORLD : inter;
        int peer = pass ? (in_a ? leader_b : leader_a) : 0;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        if (lrank == 0)
            for (long k = 0; k < iters; k++) {
                for (long i = 0; i < n; i++) sb[i] = val(g, 0, i + k);
                if (in_a) {
                    MPI_Send(sb, (int)n, MPI_INT, peer, 5, c);
                    MPI_Recv(rb, (int)n, MPI_INT, peer, 6, c, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rb, (int)n, MPI_INT, peer, 5, c, MPI_STATUS_IGNORE);
                    MPI_Send(sb, (int)n, MPI_INT, peer, 6, c);
                }
                int ok = 1;
                for (long i = 0; i < n; i++) ok &= rb[i] == val(rg, 0, i + k);
                expect(ok, pass ? "pingpong_world" : "pingpong_inter", bytes);
            }
        t = (MPI_Wtime() - t) / (2.0 * (double)iters);
        if (wrank == 0) printf("%s,%ld,%.9e\n", pass ? "pingpong_world" : "pingpong_inter", bytes, t);
    }
}

/* A wildcard receive over the intercommunicator, after a probe: B's leader sends to A's leader;
 * then the same over a dup of it. */
static void wildcard_receive(const ic_t *x, long bytes)
{
    const long n = bytes / 4;
    const int g = x->g;
    int *sb = x->sb, *rb = x->rb;
    MPI_Comm inter = x->inter;
    for (int pass = 0; pass < 2; pass++) {
        MPI_Comm c = inter;
        if (pass) MPI_Comm_dup(inter, &c);
        if (lrank == 0) {
            MPI_Status st;
            if (in_a) {
                int flag = 0;
                MPI_Probe(MPI_ANY_SOURCE, 9, c, &st);
                expect(st.MPI_SOURCE == 0, "probe", bytes);
                MPI_Iprobe(0, MPI_ANY_TAG, c, &flag, &st);
                expect(flag && st.MPI_TAG == 9, "iprobe", bytes);
                MPI_Recv(rb, (int)n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st);
                expect(st.MPI_SOURCE == 0 && st.MPI_TAG == 9 && rb[0] == val(1, 0, 0), "wildcard receive", bytes);
            } else {
                for (long i = 0; i < n; i++) sb[i] = val(g, 0, i);
                MPI_Send(sb, (int)n, MPI_INT, 0, 9, c);
            }
        }
        if (pass) MPI_Comm_free(&c);
    }
}

/* The barrier (first size only), bcast, reduce, allreduce, gather and scatter, checked. */
static void rooted_collectives(const ic_t *x, long bytes, int first)
{
    const long iters = x->iters, n = bytes / 4;
    const int g = x->g, rg = x->rg;
    int *sb = x->sb, *rb = x->rb;
    double t;
    MPI_Comm inter = x->inter;
    if (first) {
        long b0 = bytes;
        bytes = 0;
        TIMED("barrier", MPI_Barrier(inter));
        bytes = b0;
    }
    /* bcast from A's leader */
    for (long i = 0; i < n; i++) sb[i] = in_a ? val(0, 0, i) : -1;
    TIMED("bcast", MPI_Bcast(sb, (int)n, MPI_INT, in_a ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter));
    if (!in_a) {
        int ok = 1;
        for (long i = 0; i < n; i++) ok &= sb[i] == val(0, 0, i);
        expect(ok, "bcast", bytes);
    }
    /* reduce to B's leader of A's values */
    for (long i = 0; i < n; i++) sb[i] = val(g, lrank, i);
    TIMED("reduce", MPI_Reduce(sb, rb, (int)n, MPI_INT, MPI_SUM, in_a ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL), inter));
    if (!in_a && lrank == 0) {
        int ok = 1;
        for (long i = 0; i < n; i++) {
            long s = 0;
            for (int r = 0; r < rsize; r++) s += val(0, r, i);
            ok &= rb[i] == (int)s;
        }
        expect(ok, "reduce", bytes);
    }
    /* allreduce: each group gets the other's sum (nonblocking, then blocking) */
    MPI_Request rq;
    MPI_Iallreduce(sb, rb, (int)n, MPI_INT, MPI_SUM, inter, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    TIMED("allreduce", MPI_Allreduce(sb, rb, (int)n, MPI_INT, MPI_SUM, inter));
    {
        int ok = 1;
        for (long i = 0; i < n; i++) {
            long s = 0;
            for (int r = 0; r < rsize; r++) s += val(rg, r, i);
            ok &= rb[i] == (int)s;
        }
        expect(ok, "allreduce", bytes);
    }
    /* gather to A's leader, scatter from it */
    TIMED("gather", MPI_Gather(sb, (int)n, MPI_INT, rb, (int)n, MPI_INT, in_a ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter));
    if (in_a && lrank == 0) {
        int ok = 1;
        for (int r = 0; r < rsize; r++)
            for (long i = 0; i < n; i++) ok &= rb[r * n + i] == val(1, r, i);
        expect(ok, "gather", bytes);
    }
    if (in_a && lrank == 0)
        for (int r = 0; r < rsize; r++)
            for (long i = 0; i < n; i++) sb[r * n + i] = val(0, r, i) + 7;
    TIMED("scatter", MPI_Scatter(sb, (int)n, MPI_INT, rb, (int)n, MPI_INT, in_a ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter));
    if (!in_a) {
        int ok = 1;
        for (long i = 0; i < n; i++) ok &= rb[i] == val(0, lrank, i) + 7;
        expect(ok, "scatter", bytes);
    }
}

/* Allgather and alltoall: the other group's blocks. */
static void allgather_alltoall(const ic_t *x, long bytes)
{
    const long iters = x->iters, n = bytes / 4;
    const int g = x->g, rg = x->rg;
    int *sb = x->sb, *rb = x->rb;
    double t;
    MPI_Comm inter = x->inter;
    for (long i = 0; i < n; i++) sb[i] = val(g, lrank, i);
    TIMED("allgather", MPI_Allgather(sb, (int)n, MPI_INT, rb, (int)n, MPI_INT, inter));
    {
        int ok = 1;
        for (int r = 0; r < rsize; r++)
            for (long i = 0; i < n; i++) ok &= rb[r * n + i] == val(rg, r, i);
        expect(ok, "allgather", bytes);
    }
    for (int r = 0; r < rsize; r++)
        for (long i = 0; i < n; i++) sb[r * n + i] = val(g, lrank, i) + r;
    TIMED("alltoall", MPI_Alltoall(sb, (int)n, MPI_INT, rb, (int)n, MPI_INT, inter));
    {
        int ok = 1;
        for (int r = 0; r < rsize; r++)
            for (long i = 0; i < n; i++) ok &= rb[r * n + i] == val(rg, r, i) + lrank;
        expect(ok, "alltoall", bytes);
    }
}

/* The v-variants: member r of a group sends (r % 2 + 1) x n / 2 ints (at least 1). */
static void v_collectives(const ic_t *x, long bytes)
{
    const long iters = x->iters, n = bytes / 4;
    const int g = x->g, rg = x->rg;
    int *sb = x->sb, *rb = x->rb, *sc = x->sc, *sd = x->sd, *rc = x->rc, *rd = x->rd;
    double t;
    MPI_Comm inter = x->inter;
#define VCNT(r) ((int)(((r) % 2 + 1) * (n / 2 > 0 ? n / 2 : 1)))
    for (int r = 0; r < rsize; r++) {
        rc[r] = VCNT(r);
        rd[r] = r ? rd[r - 1] + rc[r - 1] : 0;
    }
    for (long i = 0; i < VCNT(lrank); i++) sb[i] = val(g, lrank, i);
    TIMED("gatherv", MPI_Gatherv(sb, VCNT(lrank), MPI_INT, rb, rc, rd, MPI_INT, in_a ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter));
    if (in_a && lrank == 0) {
        int ok = 1;
        for (int r = 0; r < rsize; r++)
            for (long i = 0; i < rc[r]; i++) ok &= rb[rd[r] + i] == val(1, r, i);
        expect(ok, "gatherv", bytes);
    }
    TIMED("allgatherv", MPI_Allgatherv(sb, VCNT(lrank), MPI_INT, rb, rc, rd, MPI_INT, inter));
    {
        int ok = 1;
        for (int r = 0; r < rsize; r++)
            for (long i = 0; i < rc[r]; i++) ok &= rb[rd[r] + i] == val(rg, r, i);
        expect(ok, "allgatherv", bytes);
    }
    if (in_a && lrank == 0)
        for (int r = 0; r < rsize; r++)
            for (long i = 0; i < rc[r]; i++) sb[rd[r] + i] = val(0, r, i) + 3;
    TIMED("scatterv", MPI_Scatterv(sb, rc, rd, MPI_INT, rb, VCNT(lrank), MPI_INT, in_a ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter));
    if (!in_a) {
        int ok = 1;
        for (long i = 0; i < VCNT(lrank); i++) ok &= rb[i] == val(0, lrank, i) + 3;
        expect(ok, "scatterv", bytes);
    }
    /* alltoallv: to remote member r, (r % 2 + 1) x n / 2 ints; from it, (lrank % 2 + 1) x n / 2 */
    for (int r = 0; r < rsize; r++) {
        sc[r] = VCNT(r);
        sd[r] = r ? sd[r - 1] + sc[r - 1] : 0;
        rc[r] = VCNT(lrank);
        rd[r] = r * VCNT(lrank);
        for (long i = 0; i < sc[r]; i++) sb[sd[r] + i] = val(g, lrank, i) + r;
    }
    TIMED("alltoallv", MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, inter));
    {
        int ok = 1;
        for (int r = 0; r < rsize; r++)
            for (long i = 0; i < rc[r]; i++) ok &= rb[rd[r] + i] == val(rg, r, i) + lrank;
        expect(ok, "alltoallv", bytes);
    }
}

/* Reduce_scatter_block: each group reduces vectors of n x (its own size) ints; both groups must
 * give the same total, so only when they are of one size. */
static void reduce_scatter(const ic_t *x, long bytes)
{
    const long iters = x->iters, n = bytes / 4;
    const int g = x->g, rg = x->rg;
    int *sb = x->sb, *rb = x->rb;
    double t;
    MPI_Comm inter = x->inter;
    if (lsize == rsize) {
        for (long i = 0; i < n * lsize; i++) sb[i] = val(g, lrank, i);
        TIMED("reduce_scatter_block", MPI_Reduce_scatter_block(sb, rb, (int)n, MPI_INT, MPI_SUM, inter));
        int ok = 1;
        for (long i = 0; i < n; i++) {
            long s = 0;
            for (int r = 0; r < rsize; r++) s += val(rg, r, lrank * n + i);
            ok &= rb[i] == (int)s;
        }
        expect(ok, "reduce_scatter_block", bytes);
    }
}

/* The merged communicator: A first, then B; one allreduce over it. */
static void merged_allreduce(const ic_t *x)
{
    MPI_Comm merged;
    MPI_Intercomm_merge(x->inter, in_a ? 0 : 1, &merged);
    int mr, ms;
    MPI_Comm_rank(merged, &mr);
    MPI_Comm_size(merged, &ms);
    expect(ms == wsize && (in_a ? mr < lsize : mr >= rsize), "merge order", 0);
    long one = mr, sum = 0;
    double t = MPI_Wtime();
    MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, merged);
    t = MPI_Wtime() - t;
    expect(sum == (long)ms * (ms - 1) / 2, "allreduce after merge", 8);
    if (wrank == 0) printf("merged_allreduce,8,%.9e\n", t);
    MPI_Comm_free(&merged);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    wrank = app_world_rank();
    wsize = app_world_size();
    long iters = 5;
    app_list sizes = {0};
    int interleave = 0;
    const app_opt opts[] = {
        {"--sizes", APP_OPT_LIST, &sizes, .lo = 4, .hi = 1L << 26,
         .error = "--sizes needs a comma-separated list of sizes >= 4"},
        {"--iters", APP_OPT_LONG, &iters, .lo = 1, .hi = 1000000, .error = "--iters needs 1..1000000"},
        {"--interleave", APP_OPT_FLAG, &interleave, .set = 1},
    };
    app_parse_args(&(app_cli){.prog = "intercomm", .usage = USAGE, .unknown = "unexpected argument '%s'"}, opts,
                   APP_NOPTS(opts), argc, argv);
    if (wsize < 2) app_usage_error("intercomm", USAGE, "needs at least 2 processes");
    static const long dflt[] = {8, 1024, 65536};
    app_list_or_default(&sizes, dflt, 3);
    in_a = interleave ? wrank % 2 == 0 : wrank < wsize / 2;
    MPI_Comm local;
    ic_t x = {.iters = iters, .leader_a = 0, .leader_b = interleave ? 1 : wsize / 2};
    MPI_Comm_split(MPI_COMM_WORLD, in_a ? 0 : 1, wrank, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, in_a ? x.leader_b : x.leader_a, 77, &x.inter);
    MPI_Comm_remote_size(x.inter, &rsize);
    x.g = in_a ? 0 : 1;
    x.rg = 1 - x.g;
    if (wrank == 0) {
        printf("# intercomm procs=%d groups=%d+%d iters=%ld%s\n", wsize, lsize, rsize, iters, interleave ? " interleave=1" : "");
        printf("test,bytes,time_s\n");
    }
    long maxb = 0;
    for (int i = 0; i < sizes.n; i++) maxb = sizes.v[i] > maxb ? sizes.v[i] : maxb;
    long maxn = maxb / 4, maxp = lsize > rsize ? lsize : rsize;
    x.sb = malloc(sizeof(int) * (size_t)(maxn * maxp + 1)), x.rb = malloc(sizeof(int) * (size_t)(maxn * maxp + 1));
    x.sc = malloc(sizeof(int) * (size_t)(maxp + 1)), x.sd = malloc(sizeof(int) * (size_t)(maxp + 1));
    x.rc = malloc(sizeof(int) * (size_t)(maxp + 1)), x.rd = malloc(sizeof(int) * (size_t)(maxp + 1));
    if (!x.sb || !x.rb || !x.sc || !x.sd || !x.rc || !x.rd) MPI_Abort(MPI_COMM_WORLD, 1);

    for (int si = 0; si < sizes.n; si++) {
        long bytes = sizes.v[si];
        pingpongs(&x, bytes);
        wildcard_receive(&x, bytes);
        rooted_collectives(&x, bytes, si == 0);
        allgather_alltoall(&x, bytes);
        v_collectives(&x, bytes);
        reduce_scatter(&x, bytes);
    }
    merged_allreduce(&x);
    MPI_Comm_free(&x.inter);
    MPI_Comm_free(&local);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) printf("# check=%s\n", all ? "FAIL" : "ok");
    free(x.sb);
    free(x.rb);
    free(x.sc);
    free(x.sd);
    free(x.rc);
    free(x.rd);
    free(sizes.v);
    MPI_Finalize();
    return all ? 1 : 0;
}
