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
#include "app_args.h"

static const char *const USAGE = "reuse [--sizes a,b,..] [--iters K] [--reuse a,b,..] [--layout packed|page] [--tests lat,bw]";

enum { TAG = 801, TAG_ACK = 802 };

typedef struct {
    int lat, bw, col;   /* the tests; col: the --tests column is printed */
} tests_sel;

/* --tests lat,bw: the tests run, and the test column printed. */
static int parse_tests(const char *v, void *value)
{
    tests_sel *t = value;
    t->lat = t->bw = 0;
    t->col = 1;
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s", v);
    for (char *p = tmp, *e; p && *p; p = e) {
        e = strchr(p, ',');
        if (e) *e++ = 0;
        if (!strcmp(p, "lat")) t->lat = 1;
        else if (!strcmp(p, "bw")) t->bw = 1;
        else return -1;
    }
    return 0;
}

/* --layout page, or packed (which leaves a page layout given before as it was). */
static int parse_layout(const char *v, void *page_layout)
{
    if (!strcmp(v, "page")) *(int *)page_layout = 1;
    else if (strcmp(v, "packed")) return -1;
    return 0;
}

typedef struct {
    app_list sizes, reuse;
    long iters;
    int page_layout;
    tests_sel tests;
} options;

static void parse_options(options *o, int argc, char **argv)
{
    *o = (options){.iters = 16, .tests = {.lat = 1}};
    const app_opt opts[] = {
        {"--sizes", APP_OPT_LIST, &o->sizes, .lo = 0, .hi = 1L << 30, .error = "bad --sizes '%s'"},
        {"--reuse", APP_OPT_LIST, &o->reuse, .lo = 0, .hi = 100, .error = "bad --reuse '%s'"},
        {"--layout", APP_OPT_CUSTOM, &o->page_layout, .parse = parse_layout,
         .error = "--layout needs packed or page, got '%s'"},
        {"--tests", APP_OPT_CUSTOM, &o->tests, .parse = parse_tests, .error = "--tests takes lat,bw, got '%s'"},
        {"--iters", APP_OPT_LONG, &o->iters, .lo = 1, .hi = 100000, .error = "bad --iters '%s'"},
    };
    app_parse_args(&(app_cli){.prog = "reuse", .usage = USAGE, .unknown = "unknown option '%s'",
                              .missing = "%s needs a value"},
                   opts, APP_NOPTS(opts), argc, argv);
}

/* One test (t: 0 latency, 1 bandwidth) of n bytes on the buffers bufs[0..iters] (bufs[0]: the
 * untimed first message's): half a round trip, or the time per message of a stream. */
static double measure(int t, size_t n, unsigned char **bufs, MPI_Request *rq, long iters, int rank)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
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
        return (MPI_Wtime() - t0) / (2.0 * (double)iters);
    }
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
    return (MPI_Wtime() - t0) / (double)iters;
}

static void out_of_memory(void)
{
    fprintf(stderr, "reuse: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = app_world_rank(), P = app_world_size();
    options o;
    parse_options(&o, argc, argv);
    const long iters = o.iters;
    if (P < 2) app_usage_error("reuse", USAGE, "needs at least 2 ranks");
    static const long dsizes[] = {1, 1024, 4096, 16384, 65536, 262144, 1048576};
    app_list_or_default(&o.sizes, dsizes, (int)(sizeof dsizes / sizeof dsizes[0]));
    static const long dreuse[] = {0, 25, 50, 75, 100};
    app_list_or_default(&o.reuse, dreuse, (int)(sizeof dreuse / sizeof dreuse[0]));
    const long *sizes = o.sizes.v, *reuse = o.reuse.v;
    const int nsizes = o.sizes.n, nreuse = o.reuse.n;
    long maxs = 1;
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] > maxs) maxs = sizes[k];
    size_t slot = ((size_t)maxs + 4095) / 4096 * 4096;
    /* fresh buffers are never freed before the end: an address the program used before would be
     * the same memory to the MPI library (its registration cache) */
    unsigned char *shared = NULL, **fresh = calloc((size_t)(2 * nsizes * nreuse), sizeof *fresh);
    if (!fresh || posix_memalign((void **)&shared, 4096, slot) != 0) out_of_memory();
    memset(shared, 0, slot);
    if (rank == 0) {
        printf("# reuse procs=%d iters=%ld layout=%s\n", P, iters, o.page_layout ? "page" : "packed");
        printf("bytes,reuse_pct,half_rtt_s,bandwidth_MBps%s\n", o.tests.col ? ",test" : "");
    }
    MPI_Request *rq = calloc((size_t)iters + 1, sizeof *rq);
    unsigned char **bufs = calloc((size_t)iters + 1, sizeof *bufs);
    if (!rq || !bufs) out_of_memory();
    for (int t = 0; t < 2; t++) {
        if (!(t == 0 ? o.tests.lat : o.tests.bw)) continue;
        for (int k = 0; k < nsizes; k++)
            for (int r = 0; r < nreuse; r++) {
                size_t n = (size_t)sizes[k], fslot = o.page_layout ? (n + 4095) / 4096 * 4096 : (n ? n : 1);
                unsigned char **arena = &fresh[(t * nsizes + k) * nreuse + r];
                if (posix_memalign((void **)arena, 4096, fslot * (size_t)iters + 4096) != 0) out_of_memory();
                long used = 0;   /* new buffers taken from the pool so far */
                /* message i's buffer (i = -1: the untimed first exchange, on the shared buffer) */
                for (long i = -1; i < iters; i++) {
                    int same = i < 0 || (i + 1) * reuse[r] / 100 > i * reuse[r] / 100;
                    bufs[i + 1] = same ? shared : *arena + fslot * (size_t)used++;
                }
                double T = measure(t, n, bufs, rq, iters, rank);
                if (rank == 0) {
                    printf("%zu,%ld,%.9e,%.3f", n, reuse[r], T, T > 0 ? (double)n / T / 1e6 : 0.0);
                    printf(o.tests.col ? (t == 0 ? ",lat\n" : ",bw\n") : "\n");
                }
            }
    }
    if (rank == 0) printf("# check=ok\n");
    for (int i = 0; i < 2 * nsizes * nreuse; i++) free(fresh[i]);
    free(fresh);
    free(rq);
    free(bufs);
    free(shared);
    free(o.sizes.v);
    free(o.reuse.v);
    MPI_Finalize();
    return 0;
}
