/* tokenring: the token-pass application core of seed 001 (Wyckoff & Chen).
 *
 *   A token of S bytes goes round the ranks 0 -> 1 -> ... -> P-1 -> 0, R times, with blocking
 *   MPI_Send/MPI_Recv. A small token measures latency, a large one bandwidth; there is no
 *   contention. After W untimed warm-up rounds, rank 0 times R rounds with MPI_Wtime:
 *   hop_s = total_s / (R P), bandwidth_MBps = S / hop_s / 1e6.
 *
 * Usage: tokenring [--sizes a,b,..] [--rounds R] [--warmup W]     (defaults: 1,1024,65536; 10; 1)
 *
 * Output (rank 0):
 *   # tokenring procs=<P> rounds=<R> warmup=<W>
 *   bytes,rounds,hops,total_s,hop_s,bandwidth_MBps
 *   <one line per size>
 *   # check=ok
 * The token carries a hop counter (first 4 bytes, or first byte for tokens of 1-3 bytes) that every
 * receiver checks and increments; the rest is a deterministic pattern checked after the last round.
 * Needs at least 2 processes.
 */
#include "app_args.h"

static const char *const USAGE = "tokenring [--sizes a,b,..] [--rounds R] [--warmup W]";

enum { TAG_TOKEN = 401 };

static uint32_t get_counter(const unsigned char *t, long n)
{
    if (n >= 4) {
        uint32_t v;
        memcpy(&v, t, 4);
        return v;
    }
    return n >= 1 ? t[0] : 0;
}

static void set_counter(unsigned char *t, long n, uint32_t v)
{
    if (n >= 4)
        memcpy(t, &v, 4);
    else if (n >= 1)
        t[0] = (unsigned char)(v & 0xFF);
}

static uint32_t counter_mask(long n) { return n >= 4 ? 0xFFFFFFFFu : 0xFFu; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const int rank = app_world_rank();
    const int procs = app_world_size();

    long rounds = 10, warmup = 1;
    app_list size_list = {0};
    const app_opt opts[] = {
        {"--sizes", APP_OPT_LIST, &size_list, .lo = 0, .hi = 1L << 30,
         .error = "--sizes needs a comma-separated list of sizes"},
        {"--size", APP_OPT_LIST, &size_list, .lo = 0, .hi = 1L << 30,
         .error = "--sizes needs a comma-separated list of sizes"},
        {"--rounds", APP_OPT_LONG, &rounds, .lo = 1, .hi = 100000000L, .error = "--rounds needs an integer >= 1"},
        {"--warmup", APP_OPT_LONG, &warmup, .lo = 0, .hi = 100000000L, .error = "--warmup needs an integer >= 0"},
    };
    app_parse_args(&(app_cli){.prog = "tokenring", .usage = USAGE, .unknown = "unexpected argument '%s'"}, opts,
                   APP_NOPTS(opts), argc, argv);
    if (procs < 2)
        app_usage_error("tokenring", USAGE, "needs at least 2 processes");
    static const long def[] = {1, 1024, 65536};
    app_list_or_default(&size_list, def, 3);
    long *sizes = size_list.v;
    int nsizes = size_list.n;
    long maxsize = 0;
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] > maxsize)
            maxsize = sizes[k];

    unsigned char *tok = app_xmalloc((size_t)maxsize);
    const int next = (rank + 1) % procs, prev = (rank + procs - 1) % procs;
    long errors = 0;

    if (rank == 0) {
        printf("# tokenring procs=%d rounds=%ld warmup=%ld\n", procs, rounds, warmup);
        printf("bytes,rounds,hops,total_s,hop_s,bandwidth_MBps\n");
        fflush(stdout);
    }

    for (int si = 0; si < nsizes; si++) {
        const long n = sizes[si];
        const uint64_t seed = (uint64_t)n * 0x9E3779B97F4A7C15ULL + 401;
        const long total = warmup + rounds;
        const uint32_t mask = counter_mask(n);
        long seq_errors = 0;
        if (rank == 0)
            app_fill_pattern(tok, (size_t)n, seed);
        else
            memset(tok, 0, (size_t)n);
        set_counter(tok, n, 0);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long k = 0; k < total; k++) {
            if (rank == 0) {
                if (k == warmup)
                    t0 = MPI_Wtime();
                MPI_Send(tok, (int)n, MPI_BYTE, next, TAG_TOKEN, MPI_COMM_WORLD);
                MPI_Recv(tok, (int)n, MPI_BYTE, prev, TAG_TOKEN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(tok, (int)n, MPI_BYTE, prev, TAG_TOKEN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            /* hop counter: rank r receives k P + r - 1 (rank 0: k P + P - 1) */
            if (n > 0) {
                uint32_t expect = (uint32_t)(k * procs + (rank == 0 ? procs : rank) - 1) & mask;
                if (get_counter(tok, n) != expect)
                    seq_errors++;
                set_counter(tok, n, expect + 1);
            }
            if (rank != 0)
                MPI_Send(tok, (int)n, MPI_BYTE, next, TAG_TOKEN, MPI_COMM_WORLD);
        }
        double t1 = MPI_Wtime();
        if (seq_errors) {
            fprintf(stderr, "tokenring: rank %d: size %ld: %ld tokens carried a wrong hop counter\n", rank, n,
                    seq_errors);
            errors++;
        }
        size_t from = n >= 4 ? 4 : (n >= 1 ? 1 : 0);
        size_t bad = 0;
        for (size_t x = from; x < (size_t)n; x++)
            bad += tok[x] != app_pattern_byte(seed, x);
        if (bad) {
            fprintf(stderr, "tokenring: rank %d: size %ld: %zu token bytes wrong\n", rank, n, bad);
            errors++;
        }
        if (rank == 0) {
            double tot = t1 - t0;
            long hops = rounds * procs;
            double hop = tot / (double)hops;
            double bw = hop > 0.0 ? (double)n / hop / 1e6 : 0.0;
            printf("%ld,%ld,%ld,%.9e,%.9e,%.3f\n", n, rounds, hops, tot, hop, bw);
            fflush(stdout);
        }
    }

    int status = app_finish(errors, "tokenring");
    free(tok);
    free(sizes);
    MPI_Finalize();
    return status;
}
