/* reuse: latency and bandwidth under a buffer reuse pattern, after seed 003 (Qian, Afsahi &
 * Zamani) sec 5.4: "our standard latency/bandwidth test ... with a buffer reuse pattern of 0%,
 * 25%, 50%, 75%, and 100%. A 100% buffer reuse pattern means that only one buffer is used for all
 * message transfers. A 0% buffer reuse pattern means that each time a new buffer is used."
 *
 *   Ranks 0 and 1 (others idle) run the standard latency test (--tests lat: K round trips,
 *   MPI_Send/MPI_Recv) or the standard bandwidth test of seed 003 sec 4 (--tests bw: rank 0 sends
 *   K messages in a row with MPI_Send into K receives rank 1 posted before, MPI_Irecv, and rank 1
 *   answers the last with a 0-byte message). With reuse r %, message (round trip) k uses the one
 *   shared buffer when floor((k+1) r / 100) > floor(k r / 100), else a buffer never used before
 *   (kept until the end so that no address comes back), on both sides. The new
 *   buffers lie one after the other in a pool (--layout packed, the default: the k-th new buffer
 *   at pool + k * size, as a benchmark drawing each new buffer from a pool or from malloc sees
 *   them: small messages share pages) or each on pages of its own (--layout page). A run begins
 *   with an untimed round trip on the shared buffer.
 *   lat: half_rtt_s = T / (2K), bandwidth_MBps = bytes / half_rtt_s.
 *   bw:  half_rtt_s = T / K (the time per message), bandwidth_MBps = K bytes / T.
 *
 * Usage: reuse [--sizes a,b,..] [--iters K] [--reuse a,b,..] [--layout packed|page] [--tests lat,bw]
 *   defaults: --sizes 1,1k,4k,16k,64k,256k,1M --iters 16 --reuse 0,25,50,75,100 --layout packed
 *             --tests lat
 *
 * Output (rank 0):
 *   # reuse procs=<P> iters=<K>
 *   bytes,reuse_pct,half_rtt_s,bandwidth_MBps[,test] (the test column when --tests is given)
 *   # check=ok
 */
#include "common.h"

static const char *const USAGE = "reuse [--sizes a,b,..] [--iters K] [--reuse a,b,..] [--layout packed|page] [--tests lat,bw]";

enum { TAG = 801, TAG_ACK = 802 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = app_world_rank(), P = app_world_size();
    long *sizes = NULL, *reuse = NULL, iters = 16;
    int nsizes = 0, nreuse = 0, page_layout = 0, do_lat = 1, do_bw = 0, test_col = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) app_help(USAGE);
        if (!v) app_usage_error("reuse", USAGE, "%s needs a value", a);
        if (!strcmp(a, "--sizes")) {
            if (app_parse_list(v, 0, 1L << 30, &sizes, &nsizes) != 0) app_usage_error("reuse", USAGE, "bad --sizes '%s'", v);
        } else if (!strcmp(a, "--reuse")) {
            if (app_parse_list(v, 0, 100, &reuse, &nreuse) != 0) app_usage_error("reuse", USAGE, "bad --reuse '%s'", v);
        } else if (!strcmp(a, "--layout")) {
            if (!strcmp(v, "page")) page_layout = 1;
            else if (strcmp(v, "packed")) app_usage_error("reuse", USAGE, "--layout needs packed or page, got '%s'", v);
        } else if (!strcmp(a, "--tests")) {
            do_lat = do_bw = 0;
            test_col = 1;
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%s", v);
            for (char *p = tmp, *e; p && *p; p = e) {
                e = strchr(p, ',');
                if (e) *e++ = 0;
                if (!strcmp(p, "lat")) do_lat = 1;
                else if (!strcmp(p, "bw")) do_bw = 1;
                else app_usage_error("reuse", USAGE, "--tests takes lat,bw, got '%s'", v);
            }
        } else if (!strcmp(a, "--iters")) {
            if (app_parse_long(v, 1, 100000, &iters) != 0) app_usage_error("reuse", USAGE, "bad --iters '%s'", v);
        } else {
            app_usage_error("reuse", USAGE, "unknown option '%s'", a);
        }
        i++;
    }
    if (P < 2) app_usage_error("reuse", USAGE, "needs at least 2 ranks");
    if (!sizes) {
        static const long d[] = {1, 1024, 4096, 16384, 65536, 262144, 1048576};
        nsizes = (int)(sizeof d / sizeof d[0]);
        sizes = malloc(sizeof d);
        memcpy(sizes, d, sizeof d);
    }
    if (!reuse) {
        static const long d[] = {0, 25, 50, 75, 100};
        nreuse = (int)(sizeof d / sizeof d[0]);
        reuse = malloc(sizeof d);
        memcpy(reuse, d, sizeof d);
    }
    long maxs = 1;
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] > maxs) maxs = sizes[k];
    size_t slot = ((size_t)maxs + 4095) / 4096 * 4096;
    /* fresh buffers are never freed before the end: an address the program used before would be
     * the same memory to the MPI library (its registration cache) */
    unsigned char *shared = NULL, **fresh = calloc((size_t)(2 * nsizes * nreuse), sizeof *fresh);
    if (!fresh || posix_memalign((void **)&shared, 4096, slot) != 0) {
        fprintf(stderr, "reuse: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(shared, 0, slot);
    if (rank == 0) {
        printf("# reuse procs=%d iters=%ld layout=%s\n", P, iters, page_layout ? "page" : "packed");
        printf("bytes,reuse_pct,half_rtt_s,bandwidth_MBps%s\n", test_col ? ",test" : "");
    }
    MPI_Request *rq = calloc((size_t)iters + 1, sizeof *rq);
    unsigned char **bufs = calloc((size_t)iters + 1, sizeof *bufs);
    if (!rq || !bufs) {
        fprintf(stderr, "reuse: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int t = 0; t < 2; t++) {
        if (!(t == 0 ? do_lat : do_bw)) continue;
        for (int k = 0; k < nsizes; k++)
            for (int r = 0; r < nreuse; r++) {
                size_t n = (size_t)sizes[k], fslot = page_layout ? (n + 4095) / 4096 * 4096 : (n ? n : 1);
                unsigned char **arena = &fresh[(t * nsizes + k) * nreuse + r];
                if (posix_memalign((void **)arena, 4096, fslot * (size_t)iters + 4096) != 0) {
                    fprintf(stderr, "reuse: out of memory\n");
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                long used = 0;   /* new buffers taken from the pool so far */
                /* message i's buffer (i = -1: the untimed first exchange, on the shared buffer) */
                for (long i = -1; i < iters; i++) {
                    int same = i < 0 || (i + 1) * reuse[r] / 100 > i * reuse[r] / 100;
                    bufs[i + 1] = same ? shared : *arena + fslot * (size_t)used++;
                }
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime(), T;
                if (t == 0) {
                    for (long i = -1; i < iters; i++) {
                        unsigned char *b = bufs[i + 1];
                        if (i == 0) t0 = MPI_Wtime();
                        if (rank == 0) {
                            MPI_Send(b, (int)n, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
                            MPI_Recv(b, (int)n, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        } else if (rank == 1) {
                            MPI_Recv(b, (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                            MPI_Send(b, (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
                        }
                    }
                    T = (MPI_Wtime() - t0) / (2.0 * (double)iters);
                } else {
                    /* the untimed first message, then K in a row into receives posted before them */
                    if (rank == 1) {
                        MPI_Recv(bufs[0], (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        for (long i = 0; i < iters; i++)
                            MPI_Irecv(bufs[i + 1], (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &rq[i]);
                        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
                        MPI_Waitall((int)iters, rq, MPI_STATUSES_IGNORE);
                        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
                    } else if (rank == 0) {
                        MPI_Send(bufs[0], (int)n, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
                        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        t0 = MPI_Wtime();
                        for (long i = 0; i < iters; i++) MPI_Send(bufs[i + 1], (int)n, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
                        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    }
                    T = (MPI_Wtime() - t0) / (double)iters;
                }
                if (rank == 0) {
                    printf("%zu,%ld,%.9e,%.3f", n, reuse[r], T, T > 0 ? (double)n / T / 1e6 : 0.0);
                    printf(test_col ? (t == 0 ? ",lat\n" : ",bw\n") : "\n");
                }
            }
    }
    if (rank == 0) printf("# check=ok\n");
    for (int i = 0; i < 2 * nsizes * nreuse; i++) free(fresh[i]);
    free(fresh);
    free(rq);
    free(bufs);
    free(shared);
    free(sizes);
    free(reuse);
    MPI_Finalize();
    return 0;
}
