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
#include "common.h"

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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    wrank = app_world_rank();
    wsize = app_world_size();
    long iters = 5;
    long *sizes = NULL;
    int nsizes = 0, interleave = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--sizes")) {
            if (app_parse_list(v, 4, 1L << 26, &sizes, &nsizes) != 0)
                app_usage_error("intercomm", USAGE, "--sizes needs a comma-separated list of sizes >= 4");
            i++;
        } else if (!strcmp(a, "--iters")) {
            if (app_parse_long(v, 1, 1000000, &iters) != 0) app_usage_error("intercomm", USAGE, "--iters needs 1..1000000");
            i++;
        } else if (!strcmp(a, "--interleave")) {
            interleave = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            app_help(USAGE);
        } else {
            app_usage_error("intercomm", USAGE, "unexpected argument '%s'", a);
        }
    }
    if (wsize < 2) app_usage_error("intercomm", USAGE, "needs at least 2 processes");
    if (!sizes) {
        static long dflt[] = {8, 1024, 65536};
        sizes = dflt;
        nsizes = 3;
    }
    in_a = interleave ? wrank % 2 == 0 : wrank < wsize / 2;
    MPI_Comm local, inter, merged;
    MPI_Comm_split(MPI_COMM_WORLD, in_a ? 0 : 1, wrank, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    int leader_a = 0, leader_b = interleave ? 1 : wsize / 2;
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, in_a ? leader_b : leader_a, 77, &inter);
    MPI_Comm_remote_size(inter, &rsize);
    int g = in_a ? 0 : 1, rg = 1 - g;
    if (wrank == 0) {
        printf("# intercomm procs=%d groups=%d+%d iters=%ld%s\n", wsize, lsize, rsize, iters, interleave ? " interleave=1" : "");
        printf("test,bytes,time_s\n");
    }
    long maxb = 0;
    for (int i = 0; i < nsizes; i++) maxb = sizes[i] > maxb ? sizes[i] : maxb;
    long maxn = maxb / 4, maxp = lsize > rsize ? lsize : rsize;
    int *sb = malloc(sizeof(int) * (size_t)(maxn * maxp + 1)), *rb = malloc(sizeof(int) * (size_t)(maxn * maxp + 1));
    int *sc = malloc(sizeof(int) * (size_t)(maxp + 1)), *sd = malloc(sizeof(int) * (size_t)(maxp + 1));
    int *rc = malloc(sizeof(int) * (size_t)(maxp + 1)), *rd = malloc(sizeof(int) * (size_t)(maxp + 1));
    if (!sb || !rb || !sc || !sd || !rc || !rd) MPI_Abort(MPI_COMM_WORLD, 1);

    for (int si = 0; si < nsizes; si++) {
        long bytes = sizes[si], n = bytes / 4;
        double t;
        /* ping-pong between the leaders: over the intercommunicator (remote rank 0), then the world */
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
        /* a wildcard receive over the intercommunicator, after a probe: B's leader sends to A's
         * leader; then the same over a dup of it */
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
#define TIMED(name, body)                                                                                  \
    do {                                                                                                   \
        MPI_Barrier(MPI_COMM_WORLD);                                                                       \
        t = MPI_Wtime();                                                                                   \
        for (long k = 0; k < iters; k++) { body; }                                                         \
        t = (MPI_Wtime() - t) / (double)iters;                                                             \
        if (wrank == 0) printf("%s,%ld,%.9e\n", name, bytes, t);                                           \
    } while (0)
        if (si == 0) {
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
        /* allgather and alltoall: the other group's blocks */
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
        /* the v-variants: member r of a group sends (r % 2 + 1) x n / 2 ints (at least 1) */
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
        /* reduce_scatter_block: each group reduces vectors of n x (its own size) ints; both groups
         * must give the same total, so only when they are of one size */
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
    /* merged: A first, then B */
    MPI_Intercomm_merge(inter, in_a ? 0 : 1, &merged);
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
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) printf("# check=%s\n", all ? "FAIL" : "ok");
    free(sb);
    free(rb);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    MPI_Finalize();
    return all ? 1 : 0;
}
