/* bisect: aggregate throughput of ranks streaming to partners in the other half, after the
 * modified mpptest bisection test of seed 004 (Millich, George & Oral) sec 3.2 and sec 4.2: rank
 * i < P/2 sends to rank i + P/2 and "the throughput of each pair of nodes is added together".
 * Placed on two switches joined by one link (seed 004 Fig. 11: topology array:2:K), every
 * message crosses that link, which the senders saturate (Fig. 12).
 *
 *   Each sender sends K messages of S bytes in a row (MPI_Send); its partner receives them
 *   (MPI_Recv) and returns a 0-byte acknowledgement after the last. A pair's throughput is
 *   K S / T, T the sender's time from the start (after an MPI_Barrier) to the acknowledgement;
 *   the aggregate is the sum over pairs (the paper's), `total` all bytes over the time from the
 *   first sender's start to the last one's end (MPI_Wtime as one clock: under the simulator, or
 *   ranks on one host): the sum overstates when the pairs do not run all at once (few or small
 *   messages). --senders N uses only the first N pairs (the others idle).
 *
 * Usage: bisect [--sizes a,b,..] [--iters K] [--warmup W] [--senders N]
 *   defaults: --sizes 1k,4k,16k,64k,256k,1M --iters 20 --warmup 2 --senders P/2
 *
 * Output (rank 0):
 *   # bisect procs=<P> pairs=<N> iters=<K> warmup=<W>
 *   bytes,pairs,time_s,pair_min_MBps,pair_max_MBps,aggregate_MBps,total_MBps
 *   # check=ok
 * Every message's pattern is checked after the timed part.
 */
#include "app_args.h"

static const char *const USAGE = "bisect [--sizes a,b,..] [--iters K] [--warmup W] [--senders N]";

enum { TAG_DATA = 601, TAG_ACK = 602 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = app_world_rank(), P = app_world_size();
    app_list size_list = {0};
    long iters = 20, warmup = 2, senders = -1;
    const app_opt opts[] = {
        {"--sizes", APP_OPT_LIST, &size_list, .lo = 0, .hi = 1L << 30, .error = "bad --sizes '%s'"},
        {"--iters", APP_OPT_LONG, &iters, .lo = 1, .hi = 1000000, .error = "bad --iters '%s'"},
        {"--warmup", APP_OPT_LONG, &warmup, .lo = 0, .hi = 1000000, .error = "bad --warmup '%s'"},
        {"--senders", APP_OPT_LONG, &senders, .lo = 1, .hi = 1 << 24, .error = "bad --senders '%s'"},
    };
    app_parse_args(&(app_cli){.prog = "bisect", .usage = USAGE, .unknown = "unknown option '%s'",
                              .missing = "%s needs a value"},
                   opts, APP_NOPTS(opts), argc, argv);
    if (P < 2 || P % 2) app_usage_error("bisect", USAGE, "needs an even number of ranks (got %d)", P);
    int half = P / 2;
    if (senders < 0) senders = half;
    if (senders > half) app_usage_error("bisect", USAGE, "--senders %ld: at most %d pairs", senders, half);
    static const long dflt[] = {1024, 4096, 16384, 65536, 262144, 1048576};
    app_list_or_default(&size_list, dflt, (int)(sizeof dflt / sizeof dflt[0]));
    long *sizes = size_list.v;
    const int nsizes = size_list.n;
    long maxs = 0;
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] > maxs) maxs = sizes[k];
    unsigned char *buf = malloc((size_t)maxs + 1);
    int pair = rank < half ? rank : rank - half;
    int active = pair < senders, sender = rank < half, peer = sender ? rank + half : rank - half;
    int errors = 0;
    if (rank == 0) {
        printf("# bisect procs=%d pairs=%ld iters=%ld warmup=%ld\n", P, senders, iters, warmup);
        printf("bytes,pairs,time_s,pair_min_MBps,pair_max_MBps,aggregate_MBps,total_MBps\n");
    }
    for (int k = 0; k < nsizes; k++) {
        size_t n = (size_t)sizes[k];
        double t = 0, t0 = 0, t1 = 0;
        for (long rep = 0; rep < warmup + 1; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            if (active && sender) {
                app_fill_pattern(buf, n, (uint64_t)rank * 1000003u + n);
                for (long i = 0; i < iters; i++) MPI_Send(buf, (int)n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
                MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (active) {
                for (long i = 0; i < iters; i++)
                    MPI_Recv(buf, (int)n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
                /* the last message, checked outside the timed loop */
                for (size_t j = 0; j < n; j++)
                    if (buf[j] != app_pattern_byte((uint64_t)peer * 1000003u + n, j)) {
                        errors++;
                        break;
                    }
            }
            t1 = MPI_Wtime();
            t = t1 - t0;
        }
        double mbps = active && sender && t > 0 ? (double)iters * (double)n / t / 1e6 : 0.0;
        double lo = active && sender ? mbps : 1e300, hi = mbps, sum = mbps, tmax = active && sender ? t : 0.0;
        double glo, ghi, gsum, gt, first = active && sender ? t0 : 1e300, last = active && sender ? t1 : -1e300, gfirst, glast;
        MPI_Reduce(&first, &gfirst, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&last, &glast, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lo, &glo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&hi, &ghi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&sum, &gsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&tmax, &gt, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        double total = glast > gfirst ? (double)senders * (double)iters * (double)n / (glast - gfirst) / 1e6 : 0.0;
        if (rank == 0) printf("%zu,%ld,%.9e,%.3f,%.3f,%.3f,%.3f\n", n, senders, gt, glo, ghi, gsum, total);
    }
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (all && rank == 0) fprintf(stderr, "bisect: %d messages with wrong contents\n", all);
    if (rank == 0) printf(all ? "# check=FAIL errors=%d\n" : "# check=ok\n", all);
    free(buf);
    free(sizes);
    MPI_Finalize();
    return all ? 1 : 0;
}
