/* pingpong: half round-trip time and bandwidth between ranks 0 and 1 (other ranks idle).
 *
 *   For each size: W untimed warm-up round trips, then K timed round trips of blocking
 *   MPI_Send/MPI_Recv (rank 0 sends, rank 1 receives and sends the same bytes back).
 *   half_rtt_s = (t_end - t_start) / (2 K) on rank 0; bandwidth_MBps = bytes / half_rtt_s / 1e6.
 *
 * Usage: pingpong [--iters K] [--warmup W] [--max BYTES] [--sizes a,b,..] [--only a,b,..]
 *
 *   default sizes: 0, then 1 B to --max (default 1 MiB) by powers of two, plus 16383 and 16385
 *   (both sides of the 16 KB eager/rendezvous switch of seed 003); --sizes adds sizes to that
 *   list, --only replaces it.
 *
 * Output (rank 0):
 *   # pingpong procs=<P> iters=<K> warmup=<W>
 *   bytes,half_rtt_s,bandwidth_MBps
 *   <one line per size>
 *   # check=ok
 *
 * Payload check: every message carries a deterministic pattern and, when it has at least 4 bytes,
 * the round-trip number in its first 4 bytes; rank 1 checks the number on every receipt and
 * both ranks check the whole content of the last message after the timed loop.
 */
#include "app_args.h"

static const char *const USAGE =
    "pingpong [--iters K] [--warmup W] [--max BYTES] [--sizes a,b,..] [--only a,b,..]";

enum { TAG_PING = 201, TAG_PONG = 202 };

static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

typedef struct {
    long iters, warmup, maxb;
    app_list extra, only;
    int use_only;
} options;

static void parse_options(options *o, int argc, char **argv)
{
    *o = (options){.iters = 10, .warmup = 2, .maxb = 1L << 20};
    const app_opt opts[] = {
        {"--iters", APP_OPT_LONG, &o->iters, .lo = 1, .hi = 100000000L, .error = "--iters needs an integer >= 1"},
        {"--warmup", APP_OPT_LONG, &o->warmup, .lo = 0, .hi = 100000000L, .error = "--warmup needs an integer >= 0"},
        {"--max", APP_OPT_LONG, &o->maxb, .lo = 0, .hi = 1L << 30, .error = "--max needs a size in [0, 1G]"},
        {"--sizes", APP_OPT_LIST, &o->extra, .lo = 0, .hi = 1L << 30,
         .error = "--sizes needs a comma-separated list of sizes"},
        {"--only", APP_OPT_LIST, &o->only, .lo = 0, .hi = 1L << 30,
         .error = "--only needs a comma-separated list of sizes", .given = &o->use_only},
    };
    app_parse_args(&(app_cli){.prog = "pingpong", .usage = USAGE, .unknown = "unexpected argument '%s'"}, opts,
                   APP_NOPTS(opts), argc, argv);
}

/* The sizes measured, ascending: --only's, or 0, the powers of two to --max, both sides of the
 * eager/rendezvous switch and --sizes'. */
static app_list size_list(options *o)
{
    app_list l = {0};
    if (o->use_only) {
        l = o->only;
        o->only = (app_list){0};
    } else {
        l.v = app_xmalloc((size_t)(40 + o->extra.n) * sizeof(long));
        l.v[l.n++] = 0;
        for (long s = 1; s <= o->maxb; s *= 2)
            l.v[l.n++] = s;
        if (o->maxb >= 16385) {
            l.v[l.n++] = 16383;
            l.v[l.n++] = 16385;
        }
        for (int k = 0; k < o->extra.n; k++)
            l.v[l.n++] = o->extra.v[k];
    }
    app_sort_unique(l.v, &l.n);
    return l;
}

/* Bytes of the message that differ from the pattern, past the round-trip number. */
static size_t payload_errors(const unsigned char *buf, int n, uint64_t seed)
{
    size_t bad = 0;
    for (size_t k = n >= 4 ? 4 : 0; k < (size_t)n; k++)
        bad += buf[k] != app_pattern_byte(seed, k);
    return bad;
}

/* Rank 0: the timed round trips of one size, checked, and its line. The errors found. */
static long ping(const options *o, unsigned char *sbuf, unsigned char *rbuf, int n, uint64_t seed)
{
    long errors = 0;
    const long total = o->warmup + o->iters;
    app_fill_pattern(sbuf, (size_t)n, seed);
    memset(rbuf, 0, (size_t)n);
    double t0 = 0.0;
    for (long it = 0; it < total; it++) {
        if (it == o->warmup)
            t0 = MPI_Wtime();
        if (n >= 4)
            put_u32(sbuf, (uint32_t)it);
        MPI_Send(sbuf, n, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD);
        MPI_Recv(rbuf, n, MPI_BYTE, 1, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double t1 = MPI_Wtime();
    double half = (t1 - t0) / (2.0 * (double)o->iters);
    /* verification of the last echo, outside the timed loop */
    if (n >= 4 && get_u32(rbuf) != (uint32_t)(total - 1)) {
        fprintf(stderr, "pingpong: rank 0: size %d: echo carries round trip %u, expected %ld\n",
                n, get_u32(rbuf), total - 1);
        errors++;
    }
    size_t bad = payload_errors(rbuf, n, seed);
    if (bad) {
        fprintf(stderr, "pingpong: rank 0: size %d: %zu payload bytes wrong in the echo\n", n, bad);
        errors++;
    }
    double bw = half > 0.0 ? (double)n / half / 1e6 : 0.0;
    printf("%d,%.12e,%.3f\n", n, half, bw);
    fflush(stdout);
    return errors;
}

/* Rank 1: echoes every message of one size, checking the round-trip numbers. The errors found. */
static long pong(const options *o, unsigned char *rbuf, int n, uint64_t seed)
{
    long errors = 0;
    const long total = o->warmup + o->iters;
    memset(rbuf, 0, (size_t)n);
    long seq_errors = 0;
    for (long it = 0; it < total; it++) {
        MPI_Recv(rbuf, n, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (n >= 4 && get_u32(rbuf) != (uint32_t)it)
            seq_errors++;
        MPI_Send(rbuf, n, MPI_BYTE, 0, TAG_PONG, MPI_COMM_WORLD);
    }
    if (seq_errors) {
        fprintf(stderr, "pingpong: rank 1: size %d: %ld messages carried the wrong round-trip number\n",
                n, seq_errors);
        errors++;
    }
    size_t bad = payload_errors(rbuf, n, seed);
    if (bad) {
        fprintf(stderr, "pingpong: rank 1: size %d: %zu payload bytes wrong\n", n, bad);
        errors++;
    }
    return errors;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const int rank = app_world_rank();
    const int procs = app_world_size();

    options o;
    parse_options(&o, argc, argv);
    if (procs < 2)
        app_usage_error("pingpong", USAGE, "needs at least 2 processes");

    app_list sizes = size_list(&o);
    long maxsize = 0;
    for (int k = 0; k < sizes.n; k++)
        if (sizes.v[k] > maxsize)
            maxsize = sizes.v[k];

    unsigned char *sbuf = app_xmalloc((size_t)maxsize);
    unsigned char *rbuf = app_xmalloc((size_t)maxsize);
    long errors = 0;

    if (rank == 0) {
        printf("# pingpong procs=%d iters=%ld warmup=%ld\n", procs, o.iters, o.warmup);
        printf("bytes,half_rtt_s,bandwidth_MBps\n");
        fflush(stdout);
    }

    for (int si = 0; si < sizes.n; si++) {
        const int n = (int)sizes.v[si];
        const uint64_t seed = (uint64_t)n * 2654435761ULL + 17;
        if (rank == 0)
            errors += ping(&o, sbuf, rbuf, n, seed);
        else if (rank == 1)
            errors += pong(&o, rbuf, n, seed);
    }

    int status = app_finish(errors, "pingpong");
    free(sbuf);
    free(rbuf);
    free(sizes.v);
    free(o.extra.v);
    free(o.only.v);
    MPI_Finalize();
    return status;
}
