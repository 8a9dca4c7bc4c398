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
#include "common.h"

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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const int rank = app_world_rank();
    const int procs = app_world_size();

    long iters = 10, warmup = 2, maxb = 1L << 20;
    long *extra = NULL, *only = NULL;
    int nextra = 0, nonly = 0, use_only = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
        if (strcmp(a, "--iters") == 0) {
            if (app_parse_long(v, 1, 100000000L, &iters) != 0)
                app_usage_error("pingpong", USAGE, "--iters needs an integer >= 1");
            i++;
        } else if (strcmp(a, "--warmup") == 0) {
            if (app_parse_long(v, 0, 100000000L, &warmup) != 0)
                app_usage_error("pingpong", USAGE, "--warmup needs an integer >= 0");
            i++;
        } else if (strcmp(a, "--max") == 0) {
            if (app_parse_long(v, 0, 1L << 30, &maxb) != 0)
                app_usage_error("pingpong", USAGE, "--max needs a size in [0, 1G]");
            i++;
        } else if (strcmp(a, "--sizes") == 0) {
            if (app_parse_list(v, 0, 1L << 30, &extra, &nextra) != 0)
                app_usage_error("pingpong", USAGE, "--sizes needs a comma-separated list of sizes");
            i++;
        } else if (strcmp(a, "--only") == 0) {
            if (app_parse_list(v, 0, 1L << 30, &only, &nonly) != 0)
                app_usage_error("pingpong", USAGE, "--only needs a comma-separated list of sizes");
            use_only = 1;
            i++;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            app_help(USAGE);
        } else {
            app_usage_error("pingpong", USAGE, "unexpected argument '%s'", a);
        }
    }
    if (procs < 2)
        app_usage_error("pingpong", USAGE, "needs at least 2 processes");

    long *sizes = NULL;
    int nsizes = 0;
    if (use_only) {
        sizes = only;
        nsizes = nonly;
        only = NULL;
    } else {
        sizes = app_xmalloc((size_t)(40 + nextra) * sizeof(long));
        sizes[nsizes++] = 0;
        for (long s = 1; s <= maxb; s *= 2)
            sizes[nsizes++] = s;
        if (maxb >= 16385) {
            sizes[nsizes++] = 16383;
            sizes[nsizes++] = 16385;
        }
        for (int k = 0; k < nextra; k++)
            sizes[nsizes++] = extra[k];
    }
    app_sort_unique(sizes, &nsizes);
    long maxsize = 0;
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] > maxsize)
            maxsize = sizes[k];

    unsigned char *sbuf = app_xmalloc((size_t)maxsize);
    unsigned char *rbuf = app_xmalloc((size_t)maxsize);
    double *half = app_xcalloc((size_t)nsizes, sizeof(double));
    long errors = 0;

    if (rank == 0) {
        printf("# pingpong procs=%d iters=%ld warmup=%ld\n", procs, iters, warmup);
        printf("bytes,half_rtt_s,bandwidth_MBps\n");
        fflush(stdout);
    }

    for (int si = 0; si < nsizes; si++) {
        const int n = (int)sizes[si];
        const uint64_t seed = (uint64_t)n * 2654435761ULL + 17;
        const long total = warmup + iters;
        if (rank == 0) {
            app_fill_pattern(sbuf, (size_t)n, seed);
            memset(rbuf, 0, (size_t)n);
            double t0 = 0.0;
            for (long it = 0; it < total; it++) {
                if (it == warmup)
                    t0 = MPI_Wtime();
                if (n >= 4)
                    put_u32(sbuf, (uint32_t)it);
                MPI_Send(sbuf, n, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD);
                MPI_Recv(rbuf, n, MPI_BYTE, 1, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            double t1 = MPI_Wtime();
            half[si] = (t1 - t0) / (2.0 * (double)iters);
            /* verification of the last echo, outside the timed loop */
            if (n >= 4 && get_u32(rbuf) != (uint32_t)(total - 1)) {
                fprintf(stderr, "pingpong: rank 0: size %d: echo carries round trip %u, expected %ld\n",
                        n, get_u32(rbuf), total - 1);
                errors++;
            }
            size_t from = n >= 4 ? 4 : 0;
            size_t bad = 0;
            for (size_t k = from; k < (size_t)n; k++)
                bad += rbuf[k] != app_pattern_byte(seed, k);
            if (bad) {
                fprintf(stderr, "pingpong: rank 0: size %d: %zu payload bytes wrong in the echo\n", n, bad);
                errors++;
            }
            double bw = half[si] > 0.0 ? (double)n / half[si] / 1e6 : 0.0;
            printf("%d,%.12e,%.3f\n", n, half[si], bw);
            fflush(stdout);
        } else if (rank == 1) {
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
            size_t from = n >= 4 ? 4 : 0;
            size_t bad = 0;
            for (size_t k = from; k < (size_t)n; k++)
                bad += rbuf[k] != app_pattern_byte(seed, k);
            if (bad) {
                fprintf(stderr, "pingpong: rank 1: size %d: %zu payload bytes wrong\n", n, bad);
                errors++;
            }
        }
    }

    int status = app_finish(errors, "pingpong");
    free(sbuf);
    free(rbuf);
    free(half);
    free(sizes);
    free(extra);
    free(only);
    MPI_Finalize();
    return status;
}
