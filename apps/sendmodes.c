/* sendmodes: latency and bandwidth per MPI send mode between ranks 0 and 1 (other ranks idle),
 * after seed 003 (Qian, Afsahi & Zamani) sections 4, 5.1 and 5.2.
 *
 *   modes: send (MPI_Send), ssend (MPI_Ssend), bsend (MPI_Bsend, with an attached buffer),
 *          rsend (MPI_Rsend), isend (MPI_Isend + MPI_Wait/MPI_Waitall).
 *   Receives are always pre-posted MPI_Irecv (so that every mode, rsend included, is legal and
 *   all modes are compared with the same receive side), and each measurement starts after a
 *   0-byte handshake that tells the sender the receives are posted.
 *   tests:
 *     uni   rank 0 sends K messages in a row; rank 1 answers the last with a 0-byte ack.
 *           time_s = T / K, bandwidth_MBps = K bytes / T.
 *     bi    ping-pong: K round trips, each side sending with the mode.
 *           time_s = T / (2 K) (half round trip), bandwidth_MBps = bytes / time_s.
 *     both  both ranks send K messages to each other at the same time.
 *           time_s = T / K, bandwidth_MBps = 2 K bytes / T (both directions together).
 *   T is measured on rank 0 with MPI_Wtime. Each measurement is preceded by W untimed runs of
 *   the same exchange.
 *
 * Usage: sendmodes [--sizes a,b,..] [--iters K] [--warmup W] [--modes m1,m2,..] [--tests t1,t2,..]
 *   defaults: --sizes 1,4,16,64,256,1024,4096,16383,16384,16385,65536,262144,1048576
 *             --iters 10 --warmup 1 --modes send,ssend,bsend,rsend,isend --tests uni,bi,both
 *
 * Output (rank 0):
 *   # sendmodes procs=<P> iters=<K> warmup=<W>
 *   test,mode,bytes,iters,time_s,bandwidth_MBps
 *   <one line per test, mode and size>
 *   # check=ok
 * Every received message is checked against its pattern after the timed part.
 */
#include "app_args.h"

static const char *const USAGE =
    "sendmodes [--sizes a,b,..] [--iters K] [--warmup W] [--modes m1,m2,..] [--tests t1,t2,..]";

enum { M_SEND, M_SSEND, M_BSEND, M_RSEND, M_ISEND, M_COUNT };
static const char *const mode_names[M_COUNT + 1] = {"send", "ssend", "bsend", "rsend", "isend", NULL};
enum { T_UNI, T_BI, T_BOTH, T_COUNT };
static const char *const test_names[T_COUNT + 1] = {"uni", "bi", "both", NULL};

enum { TAG_READY = 501, TAG_DATA = 502, TAG_ACK = 503, TAG_PONG = 504 };

/* Send one message with the mode; for isend the request is returned in *req (others: NULL). */
static void mode_send(int mode, const void *buf, int n, int peer, int tag, MPI_Request *req)
{
    switch (mode) {
    case M_SEND:
        MPI_Send(buf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        break;
    case M_SSEND:
        MPI_Ssend(buf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        break;
    case M_BSEND:
        MPI_Bsend(buf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        break;
    case M_RSEND:
        MPI_Rsend(buf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        break;
    case M_ISEND:
        MPI_Isend(buf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, req);
        break;
    default:
        break;
    }
}

typedef struct {
    int rank;
    long iters;
    unsigned char *sbuf;  /* one message */
    unsigned char *slots; /* iters receive slots */
    MPI_Request *rreq, *sreq;
} ctx_t;

/* Fill this rank's send buffer and clear its receive slots. */
static void prepare(ctx_t *c, int n, uint64_t seed)
{
    app_fill_pattern(c->sbuf, (size_t)n, seed + (uint64_t)c->rank);
    memset(c->slots, 0, (size_t)n * (size_t)c->iters);
}

/* Messages expected by this rank in the last run: count of filled slots and the peer's seed. */
static long check_slots(const ctx_t *c, int n, long count, uint64_t seed, int peer)
{
    long bad = 0;
    for (long k = 0; k < count; k++)
        bad += app_check_pattern(c->slots + (size_t)k * (size_t)n, (size_t)n, seed + (uint64_t)peer) != 0;
    return bad;
}

/* One run of a test; returns T on rank 0 (0 elsewhere). */
static double run_uni(ctx_t *c, int mode, int n)
{
    const long K = c->iters;
    double T = 0.0;
    if (c->rank == 0) {
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t0 = MPI_Wtime();
        for (long k = 0; k < K; k++)
            mode_send(mode, c->sbuf, n, 1, TAG_DATA, &c->sreq[k]);
        if (mode == M_ISEND)
            MPI_Waitall((int)K, c->sreq, MPI_STATUSES_IGNORE);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        T = MPI_Wtime() - t0;
    } else {
        for (long k = 0; k < K; k++)
            MPI_Irecv(c->slots + (size_t)k * (size_t)n, n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &c->rreq[k]);
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
        MPI_Waitall((int)K, c->rreq, MPI_STATUSES_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
    }
    return T;
}

static double run_bi(ctx_t *c, int mode, int n)
{
    const long K = c->iters;
    const int peer = 1 - c->rank;
    double T = 0.0;
    MPI_Request sreq = MPI_REQUEST_NULL;
    if (c->rank == 0) {
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t0 = MPI_Wtime();
        for (long k = 0; k < K; k++) {
            /* the pong's receive is posted before the ping leaves, so rank 1 may Rsend it */
            MPI_Irecv(c->slots + (size_t)k * (size_t)n, n, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD, &c->rreq[0]);
            mode_send(mode, c->sbuf, n, peer, TAG_DATA, &sreq);
            if (mode == M_ISEND)
                MPI_Wait(&sreq, MPI_STATUS_IGNORE);
            MPI_Wait(&c->rreq[0], MPI_STATUS_IGNORE);
        }
        T = MPI_Wtime() - t0;
    } else {
        MPI_Irecv(c->slots, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &c->rreq[0]);
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
        for (long k = 0; k < K; k++) {
            MPI_Wait(&c->rreq[0], MPI_STATUS_IGNORE);
            /* the next ping's receive is posted before the pong leaves */
            if (k + 1 < K)
                MPI_Irecv(c->slots + (size_t)(k + 1) * (size_t)n, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                          &c->rreq[0]);
            mode_send(mode, c->sbuf, n, peer, TAG_PONG, &sreq);
            if (mode == M_ISEND)
                MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        }
    }
    return T;
}

static double run_both(ctx_t *c, int mode, int n)
{
    const long K = c->iters;
    const int peer = 1 - c->rank;
    for (long k = 0; k < K; k++)
        MPI_Irecv(c->slots + (size_t)k * (size_t)n, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &c->rreq[k]);
    MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, TAG_READY, NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    double t0 = MPI_Wtime();
    for (long k = 0; k < K; k++)
        mode_send(mode, c->sbuf, n, peer, TAG_DATA, &c->sreq[k]);
    if (mode == M_ISEND)
        MPI_Waitall((int)K, c->sreq, MPI_STATUSES_IGNORE);
    MPI_Waitall((int)K, c->rreq, MPI_STATUSES_IGNORE);
    double T = MPI_Wtime() - t0;
    return c->rank == 0 ? T : 0.0;
}

typedef struct {
    long iters, warmup;
    app_list sizes;
    int modes[M_COUNT], tests[T_COUNT];
} options;

static void parse_options(options *o, int argc, char **argv)
{
    *o = (options){.iters = 10, .warmup = 1, .modes = {1, 1, 1, 1, 1}, .tests = {1, 1, 1}};
    const app_opt opts[] = {
        {"--sizes", APP_OPT_LIST, &o->sizes, .lo = 0, .hi = 1L << 28, .reset = 1,
         .error = "--sizes needs a comma-separated list of sizes"},
        {"--iters", APP_OPT_LONG, &o->iters, .lo = 1, .hi = 1000000L, .error = "--iters needs an integer in [1, 1e6]"},
        {"--warmup", APP_OPT_LONG, &o->warmup, .lo = 0, .hi = 1000000L, .error = "--warmup needs an integer >= 0"},
        {"--modes", APP_OPT_NAMES, o->modes, .choices = mode_names,
         .error = "--modes takes send,ssend,bsend,rsend,isend"},
        {"--tests", APP_OPT_NAMES, o->tests, .choices = test_names, .error = "--tests takes uni,bi,both"},
    };
    app_parse_args(&(app_cli){.prog = "sendmodes", .usage = USAGE, .unknown = "unexpected argument '%s'"}, opts,
                   APP_NOPTS(opts), argc, argv);
}

/* Ranks 0 and 1: buffers, receive slots and requests for iters messages of maxsize, and the
 * MPI_Bsend buffer when bsend is measured (returned: detach and free it at the end). */
static void *setup(ctx_t *c, const options *o, long maxsize)
{
    c->sbuf = app_xmalloc((size_t)maxsize);
    c->slots = app_xmalloc((size_t)maxsize * (size_t)o->iters);
    c->rreq = app_xmalloc(sizeof(MPI_Request) * (size_t)o->iters);
    c->sreq = app_xmalloc(sizeof(MPI_Request) * (size_t)o->iters);
    if (!o->modes[M_BSEND])
        return NULL;
    /* room for all K messages of a run in flight at once */
    int one = 0;
    MPI_Pack_size((int)maxsize, MPI_BYTE, MPI_COMM_WORLD, &one);
    double need = ((double)one + MPI_BSEND_OVERHEAD) * (double)o->iters + 1024.0;
    if (need > 2147483647.0)
        app_usage_error("sendmodes", USAGE, "the MPI_Bsend buffer would exceed 2 GiB");
    void *bsend_buf = app_xmalloc((size_t)need);
    MPI_Buffer_attach(bsend_buf, (int)need);
    return bsend_buf;
}

/* One test, mode and size on ranks 0 and 1: the warm-up runs, the timed run, its check and (rank
 * 0) its line. The errors found. */
static long run_case(ctx_t *c, const options *o, int t, int m, int n)
{
    const int rank = c->rank;
    const long iters = o->iters;
    const uint64_t seed = ((uint64_t)t << 48) ^ ((uint64_t)m << 40) ^ ((uint64_t)n << 8);
    double T = 0.0;
    for (long w = 0; w <= o->warmup; w++) {
        prepare(c, n, seed);
        if (t == T_UNI)
            T = run_uni(c, m, n);
        else if (t == T_BI)
            T = run_bi(c, m, n);
        else
            T = run_both(c, m, n);
    }
    /* verification of the last (timed) run */
    long errors = 0;
    long expect = 0;
    if (t == T_UNI)
        expect = rank == 1 ? iters : 0;
    else
        expect = iters;
    long bad = check_slots(c, n, expect, seed, 1 - rank);
    if (bad) {
        fprintf(stderr, "sendmodes: rank %d: %s/%s/%d bytes: %ld messages wrong\n", rank,
                test_names[t], mode_names[m], n, bad);
        errors++;
    }
    if (rank == 0) {
        double per = 0.0, bw = 0.0;
        if (t == T_UNI) {
            per = T / (double)iters;
            bw = T > 0.0 ? (double)n * (double)iters / T / 1e6 : 0.0;
        } else if (t == T_BI) {
            per = T / (2.0 * (double)iters);
            bw = per > 0.0 ? (double)n / per / 1e6 : 0.0;
        } else {
            per = T / (double)iters;
            bw = T > 0.0 ? 2.0 * (double)n * (double)iters / T / 1e6 : 0.0;
        }
        printf("%s,%s,%d,%ld,%.9e,%.3f\n", test_names[t], mode_names[m], n, iters, per, bw);
        fflush(stdout);
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
        app_usage_error("sendmodes", USAGE, "needs at least 2 processes");
    static const long def[] = {1, 4, 16, 64, 256, 1024, 4096, 16383, 16384, 16385, 65536, 262144, 1048576};
    app_list_or_default(&o.sizes, def, (int)(sizeof def / sizeof def[0]));
    long maxsize = 0;
    for (int k = 0; k < o.sizes.n; k++)
        if (o.sizes.v[k] > maxsize)
            maxsize = o.sizes.v[k];
    if ((double)maxsize * (double)o.iters > 512.0 * 1024 * 1024)
        app_usage_error("sendmodes", USAGE, "iters x largest size exceeds 512 MiB of receive slots");

    ctx_t c = {.rank = rank, .iters = o.iters};
    void *bsend_buf = rank <= 1 ? setup(&c, &o, maxsize) : NULL;
    long errors = 0;

    if (rank == 0) {
        printf("# sendmodes procs=%d iters=%ld warmup=%ld\n", procs, o.iters, o.warmup);
        printf("test,mode,bytes,iters,time_s,bandwidth_MBps\n");
        fflush(stdout);
    }
    for (int t = 0; rank <= 1 && t < T_COUNT; t++)
        for (int m = 0; o.tests[t] && m < M_COUNT; m++)
            for (int si = 0; o.modes[m] && si < o.sizes.n; si++)
                errors += run_case(&c, &o, t, m, (int)o.sizes.v[si]);

    if (bsend_buf != NULL) {
        void *b = NULL;
        int bsize = 0;
        MPI_Buffer_detach(&b, &bsize);
        free(bsend_buf);
    }
    int status = app_finish(errors, "sendmodes");
    free(c.sbuf);
    free(c.slots);
    free(c.rreq);
    free(c.sreq);
    free(o.sizes.v);
    MPI_Finalize();
    return status;
}
