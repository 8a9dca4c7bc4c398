/* overlap: computation/communication overlap potential after seed 003 (Qian, Afsahi & Zamani)
 * sec 5.5: "the latency test but with non-blocking send and receive function calls ... we insert
 * computation in between until the original latency increases".
 *
 *   Ranks 0 and 1 (others idle) ping-pong S bytes with MPI_Isend / MPI_Irecv, each followed by c
 *   seconds of computation (a busy loop on MPI_Wtime) before its MPI_Wait, on both sides. T(c) =
 *   time of K round trips / K. The overlap is the largest c with T(c) <= T(0) (1 + tol), found by
 *   bisection between 0 and T(0): the computation a rank can do while a message is under way.
 *   Under `mpisim run --compute none` the busy loop advances the clock by shim.wtime_stall per
 *   MPI_Wtime call (its resolution); with --compute cpu or wall its time is measured.
 *
 * Usage: overlap [--sizes a,b,..] [--iters K] [--tol F] [--steps N]
 *   defaults: --sizes 1,16,256,1k,4k,16383,16384,64k,256k,1M --iters 5 --tol 0.01 --steps 14
 *
 * Output (rank 0):
 *   # overlap procs=<P> iters=<K> tol=<F>
 *   bytes,rtt_s,overlap_s
 *   # check=ok
 */
#include "app_args.h"

static const char *const USAGE = "overlap [--sizes a,b,..] [--iters K] [--tol F] [--steps N]";

enum { TAG_PING = 701, TAG_PONG = 702, TAG_CTL = 703 };

static void compute(double c)
{
    if (c <= 0) return;
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < c) {
    }
}

/* K round trips of S bytes, every call nonblocking with c seconds of computation between post
 * and wait, on both sides; rank 0's mean round trip time (every rank returns it). */
static double rtt(int rank, unsigned char *sb, unsigned char *rb, size_t n, long iters, double c)
{
    double t0 = 0, t = 0;
    MPI_Request rq;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Isend(sb, (int)n, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD, &rq);
            compute(c);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            MPI_Irecv(rb, (int)n, MPI_BYTE, 1, TAG_PONG, MPI_COMM_WORLD, &rq);
            compute(c);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Irecv(rb, (int)n, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, &rq);
            compute(c);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            MPI_Isend(sb, (int)n, MPI_BYTE, 0, TAG_PONG, MPI_COMM_WORLD, &rq);
            compute(c);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 0) t = (MPI_Wtime() - t0) / (double)iters;
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = app_world_rank(), P = app_world_size();
    long iters = 5, steps = 14;
    app_list size_list = {0};
    double tol = 0.01;
    const app_opt opts[] = {
        {"--sizes", APP_OPT_LIST, &size_list, .lo = 0, .hi = 1L << 30, .error = "bad --sizes '%s'"},
        {"--iters", APP_OPT_LONG, &iters, .lo = 1, .hi = 1000000, .error = "bad --iters '%s'"},
        {"--steps", APP_OPT_LONG, &steps, .lo = 1, .hi = 60, .error = "bad --steps '%s'"},
        {"--tol", APP_OPT_DOUBLE, &tol, .dlo = 0, .dhi = 10, .error = "bad --tol '%s'"},
    };
    app_parse_args(&(app_cli){.prog = "overlap", .usage = USAGE, .unknown = "unknown option '%s'",
                              .missing = "%s needs a value"},
                   opts, APP_NOPTS(opts), argc, argv);
    if (P < 2) app_usage_error("overlap", USAGE, "needs at least 2 ranks");
    static const long dflt[] = {1, 16, 256, 1024, 4096, 16383, 16384, 65536, 262144, 1048576};
    app_list_or_default(&size_list, dflt, (int)(sizeof dflt / sizeof dflt[0]));
    long *sizes = size_list.v;
    const int nsizes = size_list.n;
    long maxs = 1;
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] > maxs) maxs = sizes[k];
    unsigned char *sb = malloc((size_t)maxs), *rb = malloc((size_t)maxs);
    app_fill_pattern(sb, (size_t)maxs, 7);
    if (rank == 0) {
        printf("# overlap procs=%d iters=%ld tol=%g\n", P, iters, tol);
        printf("bytes,rtt_s,overlap_s\n");
    }
    for (int k = 0; k < nsizes; k++) {
        size_t n = (size_t)sizes[k];
        rtt(rank, sb, rb, n, 1, 0);   /* untimed */
        double t0 = rtt(rank, sb, rb, n, iters, 0);
        double lo = 0, hi = t0;       /* T(lo) within tolerance; T(hi) not, or the whole round trip */
        for (long s = 0; s < steps; s++) {
            double mid = 0.5 * (lo + hi);
            if (rtt(rank, sb, rb, n, iters, mid) <= t0 * (1 + tol)) lo = mid;
            else hi = mid;
        }
        if (rank == 0) printf("%zu,%.9e,%.9e\n", n, t0, lo);
    }
    if (rank == 0) printf("# check=ok\n");
    free(sb);
    free(rb);
    free(sizes);
    MPI_Finalize();
    return 0;
}
