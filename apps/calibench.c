/* calibench: the microbenchmarks `mpisim calibrate` fits a profile from, as one ordinary MPI
 * program (no mpisim code inside: it runs natively under mpirun, and under `mpisim run` for the
 * fit check, where every time it prints is virtual time).
 *
 * Ranks 0 and 1 take part (others idle); rank 0 measures and prints. Per test, mode and size it
 * takes repeated samples, each one a short batch of operations (about 10 us, so that a rank
 * switched out by the scheduler spoils few samples), and prints every sample: the statistics
 * (medians, minima, outlier rejection) are the fit's business, not this program's.
 *
 * Tests (`--tests`, all by default):
 *   pingpong  half round trip of B bytes, both ranks sending with the mode and receiving with
 *             MPI_Recv after it (as osu_latency); rsend: every receive posted before its message
 *   stream    rank 0 sends a window of W messages with the mode to pre-posted receives, rank 1
 *             acknowledges the last with 0 bytes: time per message
 *   bothway   both ranks do that at once: time per pair of messages
 *   sendcall  the duration of MPI_Send(B) (rank 1 receives it, then replies with 0 bytes)
 *   recvcall  the duration of MPI_Recv(B) of a message that has arrived (MPI_Iprobe saw it)
 *   forward   the ping-pong of standard sends in which each rank sends on what it has just
 *             received, into the same buffer (a token ring on two ranks): every message lands in
 *             a buffer whose lines the peer's core read last (the model's mpi.size_segments
 *             COPY_SHARED_PB, see forward())
 *   empty     per call: MPI_Iprobe finding nothing, MPI_Test of a receive nothing matches, a
 *             blocking MPI_Send to MPI_PROC_NULL, MPI_Wtime (mode iprobe, test, procnull, wtime)
 *   reduce    MPI_Reduce_local of B bytes, MPI_SUM (mode int and double): time per call
 *   compute   the reference kernel on both ranks at once: int32 dot products as matmul
 *             computes them (apps/matmul.c), time per multiply-add (mode mac), bytes = 0
 *   coll      per call, on both ranks: MPI_Allreduce (doubles, MPI_SUM), MPI_Bcast (the root
 *             alternating), MPI_Barrier, each also by hand as its algorithm runs on two ranks
 *             (mode allreduce_p2p: MPI_Sendrecv and MPI_Reduce_local; bcast_p2p: MPI_Send and
 *             MPI_Recv alternating; barrier_p2p: MPI_Sendrecv of 0 B); 8, 64 and 512 B up to the
 *             largest size listed (barrier: 0 B), whatever --modes says. The difference is the
 *             collective's own path, which the model's mpi.allreduce_overhead, bcast_overhead and
 *             barrier_overhead charge
 * Modes of the communication tests (`--modes`): send (MPI_Send / MPI_Recv), ssend, bsend
 * (buffer attached), rsend (receives posted before, as the standard requires), isend
 * (MPI_Isend + MPI_Wait). sendcall and recvcall use send only.
 *
 * Time: `--budget S` seconds for all measurements together (default 60): each measurement
 * gets its share of what is left; it ends at `--samples N` samples (default 31) or when its
 * share is spent. Each measurement is visited in `--rounds R` rounds (default 4) spread over the
 * run (a spell of load spoils a few samples of many sizes, not all of one); a visit ends at its
 * part of the samples, at its share of the time left with 2 samples, or at four times the share
 * with 1 (a loaded machine gives fewer samples, said in the output, never a longer run).
 * `--spread S`: round k starts no earlier than k S / R seconds after the first, both ranks asleep
 * in between. This machine's slow spells last seconds (the ping-pong of 0 B at 2.5-3x its usual
 * time in about one run in five, a few seconds at a time, on an idle VM): rounds spread over a
 * longer time let the fit tell the spells from the machine. So each round is framed by a probe,
 * the fastest of 9 samples of the standard ping-pong of 0 B, before and after it: the fit leaves
 * out the rounds whose probe was slow (cli/calib_stats.c).
 *
 * Output: `--format raw` (default):
 *   # calibench procs=2 budget_s=60 samples=31 rounds=4 spread_s=0 host0=NAME host1=NAME same_host=1
 *   test,mode,bytes,window,batch,samples,values_s,rounds
 *   pingpong,send,1,1,16,31,2.41e-07 2.39e-07 ...,0 0 ... 3   (samples, seconds per op; each one's round)
 *   ...
 *   # round=0 start_s=0.000 probe_before_s=1.45e-07 probe_after_s=1.47e-07   (one line per round)
 *   # elapsed_s=12.3
 *   # check=ok
 * Progress (one line per measurement) goes to stderr with `--progress`.
 * `--format osu-latency|osu-bw|osu-bibw|imb-pingpong|imb-pingping` prints instead the table of
 * the named suite in that suite's own layout (median of the samples; MB = 10^6 bytes), for a
 * profile made from files (`mpisim calibrate --from`) and for the tests of the parsers.
 *
 * Usage: calibench [--tests t1,..] [--modes m1,..] [--sizes a,b,.. | --max BYTES] [--budget S]
 *                  [--samples N] [--rounds R] [--spread S] [--window W] [--all-sizes] [--format F]
 *                  [--progress] [--check]
 * The modes other than send, the streams and the reductions take every other size of the list
 * (the first and the last always) unless --all-sizes. --quick: one warm-up and one operation per
 * sample and no warm-up, no probes and no pauses, a bounded amount of work: under mpisim, whose clocks (and
 * so --budget) are virtual, `mpisim calibrate` checks its profile so.
 *   defaults: sizes 0,1,2,4,...,4M; window 64 (16 above 64 KiB, at most 2 MiB of messages, 2 at least); budget 60;
 *   samples 31.
 * Every message's payload is checked after the timed loops (--check: every message).
 */
#define _POSIX_C_SOURCE 200809L
#include "app_args.h"

#include <math.h>
#include <time.h>

static const char *const USAGE =
    "calibench [--tests t1,..] [--modes m1,..] [--sizes a,b,.. | --max BYTES] [--budget S] [--samples N] "
    "[--rounds R] [--spread S] [--window W] [--all-sizes] [--quick] [--format raw|osu-latency|osu-bw|osu-bibw|imb-pingpong|imb-pingping] [--progress] [--check]";

enum { T_PINGPONG, T_STREAM, T_BOTHWAY, T_SENDCALL, T_RECVCALL, T_FORWARD, T_EMPTY, T_REDUCE, T_COMPUTE, T_COLL,
       T_COUNT };
static const char *const test_names[T_COUNT] = {"pingpong", "stream",  "bothway", "sendcall", "recvcall",
                                                "forward",  "empty",   "reduce",  "compute", "coll"};
enum { M_SEND, M_SSEND, M_BSEND, M_RSEND, M_ISEND, M_COUNT };
static const char *const mode_names[M_COUNT] = {"send", "ssend", "bsend", "rsend", "isend"};
static const char *const empty_modes[] = {"iprobe", "test", "procnull", "wtime"};
static const char *const reduce_modes[] = {"int", "double"};
/* coll: each collective, then the same messages and reduction sent by hand (what the collective's
 * algorithm does on two ranks), so that the difference is the collective's own software path */
enum { C_ALLREDUCE, C_ALLREDUCE_P2P, C_BCAST, C_BCAST_P2P, C_BARRIER, C_BARRIER_P2P, C_COUNT };
static const char *const coll_modes[C_COUNT] = {"allreduce", "allreduce_p2p", "bcast", "bcast_p2p", "barrier",
                                                "barrier_p2p"};

/* a control message that is no test: both ranks sleep `bytes` microseconds (--spread) */
#define CTRL_PAUSE 100
#define PROBE_SAMPLES 9
#define MAX_ROUNDS 64

enum { TAG_CTRL = 701, TAG_DATA = 702, TAG_REPLY = 703, TAG_READY = 704, TAG_ACK = 705 };
#define BATCH_TARGET_S 10e-6
#define MIN_SAMPLES 5
#define WARMUP 2
#define MAX_WINDOW 256

typedef struct {
    long test, mode, bytes, window, batch, stop;
} ctrl_t;

typedef struct {
    int tests[T_COUNT];
    int modes[M_COUNT];
    long *sizes;
    int nsizes;
    double budget;
    int samples;
    int rounds;      /* 0: 4, or 1 when fewer than 8 samples */
    double spread;   /* seconds the rounds span at least */
    long window;   /* 0: the default per size */
    const char *format;
    int progress;
    int check;
    int all_sizes;
    int quick;   /* one warm-up, one operation per sample: a bounded amount of work (under a model) */
} opts_t;

static unsigned char *sbuf, *rbuf;
static unsigned char *wbufs;        /* stream/bothway receive buffers: window x size */
static long maxbytes;
static char *bsend_buf;
static int bsend_size;
static long errors;

static double now_s(void) { return MPI_Wtime(); }

static void send_ctrl(const ctrl_t *c) { MPI_Send((void *)c, 6, MPI_LONG, 1, TAG_CTRL, MPI_COMM_WORLD); }

static int mode_send(int mode, const void *buf, long bytes, int peer, int tag, MPI_Request *req)
{
    switch (mode) {
    case M_SSEND: return MPI_Ssend(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    case M_BSEND: return MPI_Bsend(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    case M_RSEND: return MPI_Rsend(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    case M_ISEND:
        if (req) return MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, req);
        {
            MPI_Request r;
            MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
            return MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    default: return MPI_Send(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    }
}

/* One sample of k ping-pong round trips; both ranks run it. Receives are posted before the
 * peer can send (rsend is then legal), through a ready message before the first. */
static double pingpong(int rank, int mode, long bytes, long k)
{
    int peer = 1 - rank;
    if (mode != M_RSEND) {
        /* as OSU's osu_latency: MPI_Recv after the send, never posted ahead (Open MPI takes a
         * rendezvous that arrives before its receive another way, slower than a posted one) */
        MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, TAG_READY, NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        double t0 = now_s();
        for (long i = 0; i < k; i++) {
            if (rank == 0) {
                mode_send(mode, sbuf, bytes, 1, TAG_DATA, NULL);
                MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                mode_send(mode, sbuf, bytes, 0, TAG_REPLY, NULL);
            }
        }
        return (now_s() - t0) / (2.0 * (double)k);
    }
    MPI_Request rq;
    MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, peer, rank == 0 ? TAG_REPLY : TAG_DATA, MPI_COMM_WORLD, &rq);
    if (rank == 1) MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
    else MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t0 = now_s();
    for (long i = 0; i < k; i++) {
        if (rank == 0) {
            mode_send(mode, sbuf, bytes, 1, TAG_DATA, NULL);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            if (i + 1 < k) MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, &rq);
        } else {
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            if (i + 1 < k) MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &rq);
            mode_send(mode, sbuf, bytes, 0, TAG_REPLY, NULL);
        }
    }
    return (now_s() - t0) / (2.0 * (double)k);
}

/* One window of W messages from `from` to the other rank (both = 1: each way at once). */
static double stream(int rank, int mode, long bytes, long w, int both)
{
    int peer = 1 - rank;
    MPI_Request rr[MAX_WINDOW], sr[MAX_WINDOW];
    int receiving = both || rank == 1, sending = both || rank == 0;
    /* every receive of the window into one buffer, as OSU's osu_bw and osu_bibw do: the copies are
     * then as warm in the caches as a ping-pong's (the model has no caches; a window of buffers
     * W x B long would measure the caches' size instead) */
    if (receiving)
        for (long i = 0; i < w; i++)
            MPI_Irecv(wbufs, (int)bytes, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &rr[i]);
    /* ready: every receive of the window is posted */
    if (both) {
        MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, TAG_READY, NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
    } else {
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double t0 = now_s();
    if (sending) {
        if (mode == M_ISEND) {
            for (long i = 0; i < w; i++) mode_send(mode, sbuf, bytes, peer, TAG_DATA, &sr[i]);
            MPI_Waitall((int)w, sr, MPI_STATUSES_IGNORE);
        } else {
            for (long i = 0; i < w; i++) mode_send(mode, sbuf, bytes, peer, TAG_DATA, NULL);
        }
    }
    if (receiving) MPI_Waitall((int)w, rr, MPI_STATUSES_IGNORE);
    /* the acknowledgement: the last message is in */
    if (both) {
        MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, TAG_ACK, NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
    } else {
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return (now_s() - t0) / (double)w;
}

static double sendcall(int rank, long bytes, long k)
{
    double sum = 0;
    for (long i = 0; i < k; i++) {
        if (rank == 0) {
            double t0 = now_s();
            MPI_Send(sbuf, (int)bytes, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
            sum += now_s() - t0;
            MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
        }
    }
    return sum / (double)k;
}

static double recvcall(int rank, long bytes, long k)
{
    double sum = 0;
    for (long i = 0; i < k; i++) {
        if (rank == 0) {
            MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
            int flag = 0;
            while (!flag) MPI_Iprobe(1, TAG_REPLY, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            double t0 = now_s();
            MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            sum += now_s() - t0;
        } else {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)bytes, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
        }
    }
    return sum / (double)k;
}

/* One sample of k round trips in which each rank sends what it has just received, into the
 * buffer it sent from (rank 0 first its own pattern, copied untimed). A rendezvous above the eager
 * limit is copied by the receiver's core straight from the sender's buffer (Open MPI's single
 * copy), so every message here is written into lines the other core holds (it read them when
 * this buffer was last sent): each store must take them from it first, which costs the copy
 * 2-3x more on a machine whose cores keep their caches coherent; the ping-pong above, of one
 * buffer never written and one never sent, never does (osu_latency measures that one). */
static double forward(int rank, long bytes, long k)
{
    double t0 = 0;
    int peer = 1 - rank;
    if (rank == 0 && bytes > 0) memcpy(rbuf, sbuf, (size_t)bytes);
    /* one round trip untimed first: whatever ran before, both buffers have then been sent from
     * (under a model too, which has no other warm-up) */
    for (long i = -1; i < k; i++) {
        if (i == 0) {
            MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, TAG_READY, NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            t0 = now_s();
        }
        if (rank == 0) {
            MPI_Send(rbuf, (int)bytes, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(rbuf, (int)bytes, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
        }
    }
    return (now_s() - t0) / (2.0 * (double)k);
}

/* Rank 0 alone; k calls of the kind named by mode. */
static double empty_call(int mode, long k)
{
    int flag;
    MPI_Request rq = MPI_REQUEST_NULL;
    if (mode == 1) MPI_Irecv(rbuf, 1, MPI_BYTE, 1, TAG_ACK + 1, MPI_COMM_WORLD, &rq);   /* never sent */
    volatile double sink = 0;
    double t0 = now_s();
    for (long i = 0; i < k; i++) {
        switch (mode) {
        case 0: MPI_Iprobe(1, TAG_ACK + 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE); break;
        case 1: MPI_Test(&rq, &flag, MPI_STATUS_IGNORE); break;
        case 2: MPI_Send(sbuf, 1, MPI_BYTE, MPI_PROC_NULL, TAG_DATA, MPI_COMM_WORLD); break;
        default: sink += MPI_Wtime(); break;
        }
    }
    double t = (now_s() - t0) / (double)k;
    (void)sink;
    if (mode == 1) {
        MPI_Cancel(&rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }
    return t;
}

static double reduce_local(int mode, long bytes, long k)
{
    int count = (int)(bytes / (mode ? (long)sizeof(double) : (long)sizeof(int)));
    MPI_Datatype dt = mode ? MPI_DOUBLE : MPI_INT;
    if (count < 1) count = 1;
    double t0 = now_s();
    for (long i = 0; i < k; i++) MPI_Reduce_local(sbuf, rbuf, count, dt, MPI_SUM);
    return (now_s() - t0) / (double)k;
}

/* One sample of k collective calls on both ranks (mode: coll_modes), time per call. allreduce:
 * MPI_SUM of doubles; by hand, as recursive doubling on two ranks: the exchange (MPI_Sendrecv) and
 * MPI_Reduce_local. bcast: the root alternates, so each call waits for the one before (one
 * message's latency a call); by hand, the same message sent and received alternately. barrier: by
 * hand, an exchange of 0 bytes. */
static double coll(int rank, int mode, long bytes, long k)
{
    int peer = 1 - rank, count = (int)(bytes / (long)sizeof(double));
    if (count < 1) count = 1;
    long b = (long)count * (long)sizeof(double);
    MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, TAG_READY, NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    double t0 = now_s();
    for (long i = 0; i < k; i++) {
        int root = (int)(i % 2);
        switch (mode) {
        case C_ALLREDUCE: MPI_Allreduce(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
        case C_ALLREDUCE_P2P:
            MPI_Sendrecv(sbuf, (int)b, MPI_BYTE, peer, TAG_DATA, rbuf, (int)b, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            MPI_Reduce_local(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM);
            break;
        case C_BCAST: MPI_Bcast(rank == root ? sbuf : rbuf, (int)b, MPI_BYTE, root, MPI_COMM_WORLD); break;
        case C_BCAST_P2P:
            if (rank == root) MPI_Send(sbuf, (int)b, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
            else MPI_Recv(rbuf, (int)b, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case C_BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
        default:
            MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, TAG_DATA, NULL, 0, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            break;
        }
    }
    return (now_s() - t0) / (double)k;
}

/* matmul's inner loop (apps/matmul.c): dot products of int32 rows; time per multiply-add. */
#define KN 96
static int32_t ka[KN * KN], kb[KN * KN], kc[KN * KN];
static double compute_kernel(long k)
{
    double t0 = now_s();
    for (long r = 0; r < k; r++) {
        for (int i = 0; i < KN; i++)
            for (int j = 0; j < KN; j++) {
                int32_t s = 0;
                for (int x = 0; x < KN; x++) s += ka[i * KN + x] * kb[j * KN + x];
                kc[i * KN + j] = s;
            }
        ka[r % (KN * KN)] += kc[(r * 7) % (KN * KN)] & 1;   /* the next repetition depends on this one */
    }
    return (now_s() - t0) / ((double)k * KN * KN * KN);
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* The mirror (rank 1) runs what rank 0 asks, sample by sample, until told to stop. */
static void mirror(void)
{
    for (;;) {
        ctrl_t c;
        MPI_Recv(&c, 6, MPI_LONG, 0, TAG_CTRL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (c.stop) {
            /* the payload rank 0 checks at the end */
            if (c.bytes > 0) MPI_Send(sbuf, (int)c.bytes, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
            return;
        }
        switch (c.test) {
        case T_PINGPONG: pingpong(1, (int)c.mode, c.bytes, c.batch); break;
        case T_STREAM:
        case T_BOTHWAY:
            for (long b = 0; b < c.batch; b++) stream(1, (int)c.mode, c.bytes, c.window, c.test == T_BOTHWAY);
            break;
        case T_SENDCALL: sendcall(1, c.bytes, c.batch); break;
        case T_RECVCALL: recvcall(1, c.bytes, c.batch); break;
        case T_FORWARD: forward(1, c.bytes, c.batch); break;
        case T_COMPUTE: compute_kernel(c.batch); break;
        case T_COLL: coll(1, (int)c.mode, c.bytes, c.batch); break;
        case CTRL_PAUSE: sleep_us(c.bytes); break;
        default: break;
        }
    }
}

/* rank 0: one sample of a measurement (the mirror told first where it takes part) */
static double sample(const ctrl_t *c)
{
    int mirrored = c->test != T_EMPTY && c->test != T_REDUCE;
    if (mirrored) send_ctrl(c);
    switch (c->test) {
    case T_PINGPONG: return pingpong(0, (int)c->mode, c->bytes, c->batch);
    case T_STREAM:
    case T_BOTHWAY: {
        double s = 0;
        for (long b = 0; b < c->batch; b++) s += stream(0, (int)c->mode, c->bytes, c->window, c->test == T_BOTHWAY);
        return s / (double)c->batch;
    }
    case T_SENDCALL: return sendcall(0, c->bytes, c->batch);
    case T_RECVCALL: return recvcall(0, c->bytes, c->batch);
    case T_FORWARD: return forward(0, c->bytes, c->batch);
    case T_EMPTY: return empty_call((int)c->mode, c->batch);
    case T_REDUCE: return reduce_local((int)c->mode, c->bytes, c->batch);
    case T_COMPUTE: return compute_kernel(c->batch);
    case T_COLL: return coll(0, (int)c->mode, c->bytes, c->batch);
    default: return 0;
    }
}

typedef struct {
    int test, mode;
    long bytes, window;
} meas_t;

typedef struct {
    meas_t m;
    long batch;
    int n;
    double *v;
    unsigned char *rd;   /* each sample's round */
} result_t;

/* A round's frame: when it started, and the probe before and after it (0: not probed). */
typedef struct {
    double start_s, before_s, after_s;
} round_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(const double *v, int n)
{
    double *t = malloc((size_t)n * sizeof *t);
    if (!t || n == 0) { free(t); return 0; }
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double m = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    free(t);
    return m;
}

static const char *mode_name(int test, int mode)
{
    if (test == T_EMPTY) return empty_modes[mode];
    if (test == T_REDUCE) return reduce_modes[mode];
    if (test == T_COMPUTE) return "mac";
    if (test == T_COLL) return coll_modes[mode];
    return mode_names[mode];
}

static void check_payload(long bytes, uint64_t seed)
{
    /* rank 0's last receive of a pingpong or recvcall carries rank 1's pattern (seed 2), of a
     * forward its own that went round (seed 1) */
    if (bytes <= 0) return;
    size_t bad = 0;
    for (long i = 0; i < bytes; i++)
        if (rbuf[i] != app_pattern_byte(seed, (size_t)i)) bad++;
    if (bad) {
        fprintf(stderr, "calibench: %zu bytes of a %ld-byte message are wrong\n", bad, bytes);
        errors++;
    }
}

static void print_suite(const char *format, result_t *res, int nres)
{
    /* the layouts of the suites' own output (OSU micro-benchmarks 5.x, IMB 2019+) */
    int osu = !strncmp(format, "osu-", 4);
    int want_test = T_PINGPONG, want_mode = M_SEND;
    if (!strcmp(format, "osu-bw")) want_test = T_STREAM, want_mode = M_ISEND;
    if (!strcmp(format, "osu-bibw")) want_test = T_BOTHWAY, want_mode = M_ISEND;
    if (!strcmp(format, "imb-pingping")) want_test = T_BOTHWAY, want_mode = M_ISEND;
    if (osu) {
        if (!strcmp(format, "osu-latency")) printf("# OSU MPI Latency Test v5.8\n# Size          Latency (us)\n");
        else if (!strcmp(format, "osu-bw")) printf("# OSU MPI Bandwidth Test v5.8\n# Size      Bandwidth (MB/s)\n");
        else printf("# OSU MPI Bi-Directional Bandwidth Test v5.8\n# Size      Bandwidth (MB/s)\n");
    } else {
        printf("#---------------------------------------------------\n"
               "# Benchmarking %s \n# #processes = 2 \n"
               "#---------------------------------------------------\n"
               "       #bytes #repetitions      t[usec]   Mbytes/sec\n",
               want_test == T_PINGPONG ? "PingPong" : "PingPing");
    }
    for (int i = 0; i < nres; i++) {
        result_t *r = &res[i];
        if (r->m.test != want_test || r->m.mode != want_mode || r->n == 0) continue;
        double t = median_of(r->v, r->n);
        if (osu) {
            if (want_test == T_PINGPONG) printf("%-10ld%18.2f\n", r->m.bytes, t * 1e6);
            else if (r->m.bytes > 0)
                printf("%-10ld%18.2f\n", r->m.bytes, (want_test == T_BOTHWAY ? 2.0 : 1.0) * (double)r->m.bytes / t / 1e6);
        } else {
            /* IMB's PingPong: t = half the round trip; PingPing: both send at once, t per message */
            printf("%13ld%13ld%13.2f%13.2f\n", r->m.bytes, (long)r->n * r->batch, t * 1e6,
                   t > 0 ? (double)r->m.bytes / t / 1e6 : 0.0);
        }
    }
}

/* --tests and --modes: the names listed are added to those selected (*given: some were). */
static int select_names(const char *v, int *sel, const char *const *names, int count, const char *what)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int k = 0; k < count; k++)
            if (!strcmp(t, names[k])) {
                sel[k] = 1;
                found = 1;
            }
        if (!found) app_usage_error("calibench", USAGE, "unknown %s '%s'", what, t);
    }
    return 0;
}
static int select_tests(const char *v, void *sel) { return select_names(v, sel, test_names, T_COUNT, "test"); }
static int select_modes(const char *v, void *sel) { return select_names(v, sel, mode_names, M_COUNT, "mode"); }

static const char *const FORMATS[] = {"raw", "osu-latency", "osu-bw", "osu-bibw", "imb-pingpong", "imb-pingping",
                                      NULL};
#define STR_(x) #x
#define STR(x) STR_(x)

/* The options, then what follows from them: the suites' tables have every size (IMB's PingPing
 * one message each way at a time), every test and mode unless some were named, the sizes 0 and
 * the powers of two to --max unless --sizes, ascending. */
static void parse_options(opts_t *o, int argc, char **argv)
{
    *o = (opts_t){.budget = 60, .samples = 31, .format = "raw"};
    long maxsize = 4L << 20, samples = o->samples, rounds = 0;
    int any_test = 0, any_mode = 0, format = 0;
    app_list sizes = {0};
    const app_opt opts[] = {
        {"--progress", APP_OPT_FLAG, &o->progress, .set = 1},
        {"--check", APP_OPT_FLAG, &o->check, .set = 1},
        {"--all-sizes", APP_OPT_FLAG, &o->all_sizes, .set = 1},
        {"--quick", APP_OPT_FLAG, &o->quick, .set = 1},
        {"--tests", APP_OPT_CUSTOM, o->tests, .parse = select_tests, .given = &any_test},
        {"--modes", APP_OPT_CUSTOM, o->modes, .parse = select_modes, .given = &any_mode},
        {"--sizes", APP_OPT_LIST, &sizes, .lo = 0, .hi = 1L << 30, .error = "bad --sizes '%s'"},
        {"--max", APP_OPT_LONG, &maxsize, .lo = 1, .hi = 1L << 30, .error = "bad --max '%s'"},
        {"--budget", APP_OPT_DOUBLE, &o->budget, .dlo = 0.1, .dhi = 86400, .error = "bad --budget '%s'"},
        {"--samples", APP_OPT_LONG, &samples, .lo = 1, .hi = 100000, .error = "bad --samples '%s'"},
        {"--rounds", APP_OPT_LONG, &rounds, .lo = 1, .hi = MAX_ROUNDS, .error = "bad --rounds '%s' (1.." STR(MAX_ROUNDS) ")"},
        {"--spread", APP_OPT_DOUBLE, &o->spread, .dlo = 0, .dhi = 86400, .error = "bad --spread '%s'"},
        {"--window", APP_OPT_LONG, &o->window, .lo = 1, .hi = MAX_WINDOW,
         .error = "bad --window '%s' (1.." STR(MAX_WINDOW) ")"},
        {"--format", APP_OPT_CHOICE, &format, .choices = FORMATS, .error = "unknown --format '%s'"},
    };
    app_parse_args(&(app_cli){.prog = "calibench", .usage = USAGE, .unknown = "unknown option '%s'",
                              .missing = "%s needs a value (or is unknown)"},
                   opts, APP_NOPTS(opts), argc, argv);
    o->samples = (int)samples;
    o->rounds = (int)(rounds ? rounds : o->samples >= 8 ? 4 : 1);
    if (o->rounds > o->samples) o->rounds = o->samples;
    o->format = FORMATS[format];
    o->sizes = sizes.v;
    o->nsizes = sizes.n;
    if (strcmp(o->format, "raw")) o->all_sizes = 1;
    if (!strcmp(o->format, "imb-pingping") && !o->window) o->window = 1;
    if (!any_test) for (int k = 0; k < T_COUNT; k++) o->tests[k] = 1;
    if (!any_mode) for (int k = 0; k < M_COUNT; k++) o->modes[k] = 1;
    if (!o->nsizes) {
        app_parse_list("0", 0, 0, &o->sizes, &o->nsizes);
        for (long b = 1; b <= maxsize; b *= 2) {
            long *nv = realloc(o->sizes, (size_t)(o->nsizes + 1) * sizeof *nv);
            if (!nv) MPI_Abort(MPI_COMM_WORLD, 1);
            o->sizes = nv;
            o->sizes[o->nsizes++] = b;
        }
    }
    app_sort_unique(o->sizes, &o->nsizes);
}

/* The stream window of b-byte messages: --window, else 64 (16 above 64 KiB), at most 2 MiB of them
 * (2 messages at least): a sample stays short on a busy machine. */
static long window_of(const opts_t *o, long b)
{
    long w = o->window ? o->window : (b > 65536 ? 16 : 64);
    long cap = b > 0 ? (2L << 20) / b : w;
    if (cap < 2) cap = 2;
    return w > cap ? cap : w;
}

/* The buffers for the largest message and window, the compute kernel's matrices and, when bsend
 * is measured, the MPI_Bsend buffer. */
static void alloc_buffers(const opts_t *o, int rank)
{
    maxbytes = o->sizes[o->nsizes - 1];
    if (maxbytes < 64) maxbytes = 64;
    long wmax = 1;
    for (int s = 0; s < o->nsizes; s++) {
        long w = window_of(o, o->sizes[s]);
        if (w * (o->sizes[s] ? o->sizes[s] : 1) > wmax) wmax = w * (o->sizes[s] ? o->sizes[s] : 1);
    }
    sbuf = malloc((size_t)maxbytes);
    rbuf = malloc((size_t)maxbytes);
    wbufs = malloc((size_t)wmax);
    if (!sbuf || !rbuf || !wbufs) {
        fprintf(stderr, "calibench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    app_fill_pattern(sbuf, (size_t)maxbytes, (uint64_t)(rank + 1));
    memset(rbuf, 0, (size_t)maxbytes);
    memset(wbufs, 0, (size_t)wmax);
    for (int i = 0; i < KN * KN; i++) {
        ka[i] = (i * 7 + 3) % 11 - 5;
        kb[i] = (i * 5 + 1) % 13 - 6;
    }
    if (o->modes[M_BSEND]) {
        int pack = 0;
        MPI_Pack_size((int)maxbytes, MPI_BYTE, MPI_COMM_WORLD, &pack);
        long need = (long)(wmax / (maxbytes ? maxbytes : 1) + 2) * ((long)pack + MPI_BSEND_OVERHEAD);
        if (need < 2L * ((long)pack + MPI_BSEND_OVERHEAD) * 64) need = 2L * ((long)pack + MPI_BSEND_OVERHEAD) * 64;
        if (need > (1L << 30)) need = 1L << 30;
        bsend_size = (int)need;
        bsend_buf = malloc((size_t)bsend_size);
        if (!bsend_buf) MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_Buffer_attach(bsend_buf, bsend_size);
    }
}

static void add_meas(meas_t **ms, int *nm, int *cap, int test, int mode, long bytes, long window)
{
    if (*nm == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        meas_t *nms = realloc(*ms, (size_t)*cap * sizeof *nms);
        if (!nms) MPI_Abort(MPI_COMM_WORLD, 1);
        *ms = nms;
    }
    (*ms)[*nm] = (meas_t){.test = test, .mode = mode, .bytes = bytes, .window = window};
    (*nm)++;
}

/* The measurements, in order (*nm of them). */
static meas_t *plan_measurements(const opts_t *o, int *nm)
{
    int cap = 0;
    meas_t *ms = NULL;
    *nm = 0;
    if (o->tests[T_COMPUTE]) add_meas(&ms, nm, &cap, T_COMPUTE, 0, 0, 1);
    if (o->tests[T_EMPTY])
        for (int m = 0; m < 4; m++) add_meas(&ms, nm, &cap, T_EMPTY, m, 0, 1);
    for (int t = T_PINGPONG; t <= T_FORWARD; t++) {
        if (!o->tests[t]) continue;
        for (int m = 0; m < M_COUNT; m++) {
            if (!o->modes[m]) continue;
            if ((t == T_SENDCALL || t == T_RECVCALL || t == T_FORWARD) && m != M_SEND) continue;
            for (int s = 0; s < o->nsizes; s++) {
                long b = o->sizes[s], w = 1;
                /* the other modes and the streams: every other size (the first and last always),
                 * unless --all-sizes */
                /* forward: every size from 2 KiB (it is fitted per rendezvous size range) */
                int thin = !o->all_sizes && (m != M_SEND || t == T_STREAM || t == T_BOTHWAY ||
                                             (t == T_FORWARD && o->sizes[s] < 2048));
                if (thin && s % 2 && s != o->nsizes - 1) continue;
                if (t == T_STREAM || t == T_BOTHWAY) w = window_of(o, b);
                add_meas(&ms, nm, &cap, t, m, b, w);
            }
        }
    }
    if (o->tests[T_REDUCE])
        for (int m = 0; m < 2; m++)
            for (int s = 0; s < o->nsizes; s++)
                if (o->sizes[s] >= 64 && (o->all_sizes || s % 2 == 0 || s == o->nsizes - 1))
                    add_meas(&ms, nm, &cap, T_REDUCE, m, o->sizes[s], 1);
    /* coll: a per-call cost, so a few small sizes, the same whatever the list (8, 64, 512 B up to
     * the largest listed; barrier 0 B) */
    if (o->tests[T_COLL]) {
        long top = 0;
        for (int s = 0; s < o->nsizes; s++) top = o->sizes[s] > top ? o->sizes[s] : top;
        for (int m = 0; m < C_COUNT; m++)
            for (long b = 8; b <= 512; b *= 8) {
                if (m >= C_BARRIER) {
                    add_meas(&ms, nm, &cap, T_COLL, m, 0, 1);
                    break;
                }
                if (b <= top || b == 8) add_meas(&ms, nm, &cap, T_COLL, m, b, 1);
            }
    }
    return ms;
}

/* Round 0 of measurement c: the warm-up, and the batch that makes a sample ~10 us (--quick: no
 * warm-up, a model's times do not warm up; one operation per sample). */
static long first_batch(const opts_t *o, ctrl_t *c)
{
    double t_one = 0;
    for (int w = 0; w < (o->quick ? (c->test == T_EMPTY || c->test == T_COMPUTE) : WARMUP); w++) t_one = sample(c);
    double per_batch = t_one * (double)(c->test == T_STREAM || c->test == T_BOTHWAY ? c->window : 1) *
                       (c->test == T_PINGPONG || c->test == T_FORWARD ? 2.0 : 1.0);
    long k = per_batch > 0 ? (long)ceil(BATCH_TARGET_S / per_batch) : 64;
    if (c->test == T_EMPTY) k = 1000;
    else if (c->test == T_COMPUTE) k = (long)ceil(2e-3 / (t_one * KN * KN * KN > 0 ? t_one * KN * KN * KN : 1e-3));
    if (k < 1) k = 1;
    if (k > 64 && c->test != T_EMPTY && c->test != T_COMPUTE && c->test != T_REDUCE) k = 64;
    if (k > 100000) k = 100000;
    if (o->quick && c->test != T_EMPTY && c->test != T_COMPUTE) k = 1;
    /* a collective's one call would start from the ready exchange's uneven exits: 16 of them */
    if (o->quick && c->test == T_COLL) k = 16;
    return k;
}

static void print_progress(int i, int nm, const result_t *r)
{
    fprintf(stderr, "calibench: %d/%d %s %s %ld B: %d samples of %ld, median %.3g s%s\n", i + 1, nm,
            test_names[r->m.test], mode_name(r->m.test, r->m.mode), r->m.bytes, r->n, r->batch,
            median_of(r->v, r->n), r->n < MIN_SAMPLES ? " (few: the machine is busy)" : "");
}

/* The probe that frames each round: the fastest of PROBE_SAMPLES samples of the standard
 * ping-pong of 0 B (batch: what first_batch chose for it once). The fastest, not the median: a
 * rank switched out by the scheduler (a CPU-bound job beside) slows some samples, a slow spell of
 * the machine slows them all. */
static double probe(const opts_t *o, long *batch)
{
    ctrl_t c = {T_PINGPONG, M_SEND, 0, 1, 1, 0};
    if (*batch == 0) *batch = first_batch(o, &c);
    c.batch = *batch;
    sample(&c);   /* warm: other sizes ran since */
    double best = HUGE_VAL;
    for (int i = 0; i < PROBE_SAMPLES; i++) best = fmin(best, sample(&c));
    return best;
}

/* Both ranks asleep until `until` (--spread): the rounds span a longer time at no CPU cost. */
static void pause_until(double until)
{
    double left = until - now_s();
    if (left <= 0) return;
    ctrl_t c = {CTRL_PAUSE, 0, (long)(left * 1e6), 0, 0, 0};
    send_ctrl(&c);
    sleep_us(c.bytes);
}

/* Rounds: every measurement is visited several times over the run, so that a spell of load
 * spoils a few samples of many sizes rather than all of one size; each round framed by probes
 * (rt[round]), the rounds spread over --spread seconds. Returns the rounds begun. */
static int run_rounds(const opts_t *o, result_t *res, int nm, double start, round_t *rt)
{
    double deadline = start + o->budget;
    int rounds = o->rounds;
    int framed = rounds > 1 && !o->quick;
    int per_visit = (o->samples + rounds - 1) / rounds;
    int done_visits = 0, total_visits = rounds * nm, late = 0, begun = 0;
    long probe_batch = 0;
    double last_probe = 0;
    for (int round = 0; round < rounds && !late; round++) {
        if (framed && round > 0 && o->spread > 0) {
            /* not past the deadline, with the time the rounds so far took per round left for this one */
            double until = start + o->spread * round / rounds, per_round = (now_s() - start) / round;
            if (until > deadline - per_round) until = deadline - per_round;
            pause_until(until);
        }
        rt[round] = (round_t){.start_s = now_s() - start};
        if (framed) rt[round].before_s = round > 0 && last_probe > 0 && o->spread <= 0 ? last_probe : probe(o, &probe_batch);
        begun++;
        for (int i = 0; i < nm; i++, done_visits++) {
            result_t *r = &res[i];
            if (r->n >= o->samples) continue;
            /* past the deadline only the first round goes on (every measurement gets its sample):
             * a busy machine gives fewer samples, never a longer run */
            if (round > 0 && !o->quick && now_s() > deadline) {
                late = 1;
                break;
            }
            ctrl_t c = {r->m.test, r->m.mode, r->m.bytes, r->m.window, 1, 0};
            if (round == 0) r->batch = first_batch(o, &c);
            c.batch = r->batch;
            if (round > 0 && !o->quick) sample(&c);   /* warm again: other sizes ran since */
            double t0 = now_s();
            double left = deadline - t0;
            double share = left > 0 ? left / (double)(total_visits - done_visits) : 0;
            int got = 0, want = round == rounds - 1 ? o->samples - r->n : per_visit;
            while (r->n < o->samples && got < want) {
                r->rd[r->n] = (unsigned char)round;
                r->v[r->n++] = sample(&c);
                got++;
                double el = now_s() - t0;
                if ((el >= share && got >= 2) || el >= 4 * share) break;
            }
            if (o->check && (c.test == T_PINGPONG || c.test == T_RECVCALL || c.test == T_FORWARD))
                check_payload(c.bytes, c.test == T_FORWARD ? 1 : 2);
            if (o->progress && round == rounds - 1) {
                print_progress(i, nm, r);
                fflush(stderr);
            }
        }
        if (framed) rt[round].after_s = last_probe = probe(o, &probe_batch);
        if (o->progress && late) {
            fprintf(stderr, "calibench: the budget is spent in round %d of %d (%.1f s): the samples so far count\n",
                    round + 1, rounds, now_s() - start);
            fflush(stderr);
        } else if (o->progress && round < rounds - 1) {
            fprintf(stderr, "calibench: round %d of %d done (%d measurements, %.1f s", round + 1, rounds, nm,
                    now_s() - start);
            if (framed) fprintf(stderr, "; ping-pong of 0 B %.3g s before, %.3g s after", rt[round].before_s, rt[round].after_s);
            fputs(")\n", stderr);
            fflush(stderr);
        }
    }
    if (late && o->progress)   /* the measurements' lines the last round would have printed */
        for (int i = 0; i < nm; i++) print_progress(i, nm, &res[i]);
    return begun;
}

static void print_raw(const opts_t *o, const result_t *res, int nm, int nprocs, const char *host, const char *host1,
                      double start, const round_t *rt, int nrounds)
{
    printf("# calibench procs=%d budget_s=%g samples=%d rounds=%d spread_s=%g host0=%s host1=%s same_host=%d\n", nprocs,
           o->budget, o->samples, o->rounds, o->spread, host, host1, !strcmp(host, host1));
    printf("test,mode,bytes,window,batch,samples,values_s,rounds\n");
    for (int i = 0; i < nm; i++) {
        const result_t *r = &res[i];
        printf("%s,%s,%ld,%ld,%ld,%d,", test_names[r->m.test], mode_name(r->m.test, r->m.mode), r->m.bytes,
               r->m.window, r->batch, r->n);
        for (int s = 0; s < r->n; s++) printf("%s%.4e", s ? " " : "", r->v[s]);
        putchar(',');
        for (int s = 0; s < r->n; s++) printf("%s%d", s ? " " : "", r->rd[s]);
        printf("\n");
    }
    for (int k = 0; k < nrounds; k++)
        printf("# round=%d start_s=%.3f probe_before_s=%.4e probe_after_s=%.4e\n", k, rt[k].start_s, rt[k].before_s,
               rt[k].after_s);
    printf("# elapsed_s=%.3f\n", now_s() - start);
    printf(errors ? "# check=FAIL errors=%ld\n" : "# check=ok\n", errors);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = app_world_rank(), nprocs = app_world_size();
    opts_t o;
    parse_options(&o, argc, argv);
    if (nprocs < 2) app_usage_error("calibench", USAGE, "needs at least 2 ranks");
    alloc_buffers(&o, rank);
    char host[MPI_MAX_PROCESSOR_NAME] = "", host1[MPI_MAX_PROCESSOR_NAME] = "";
    int hl = 0;
    MPI_Get_processor_name(host, &hl);
    if (rank == 1) MPI_Send(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, TAG_CTRL, MPI_COMM_WORLD);
    if (rank == 0) MPI_Recv(host1, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1, TAG_CTRL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    if (rank == 1) mirror();
    if (rank != 0) {
        if (bsend_buf) {
            void *b;
            int s;
            MPI_Buffer_detach(&b, &s);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }

    int nm = 0;
    meas_t *ms = plan_measurements(&o, &nm);
    result_t *res = calloc((size_t)(nm ? nm : 1), sizeof *res);
    if (!res) MPI_Abort(MPI_COMM_WORLD, 1);
    double start = now_s();
    for (int i = 0; i < nm; i++) {
        res[i].m = ms[i];
        res[i].v = malloc((size_t)o.samples * sizeof *res[i].v);
        res[i].rd = malloc((size_t)o.samples);
        if (!res[i].v || !res[i].rd) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    round_t rt[MAX_ROUNDS];
    int nrounds = run_rounds(&o, res, nm, start, rt);
    /* the mirror's largest message, checked whatever the options */
    ctrl_t stop = {0, 0, maxbytes, 0, 0, 1};
    send_ctrl(&stop);
    memset(rbuf, 0, (size_t)maxbytes);
    MPI_Recv(rbuf, (int)maxbytes, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check_payload(maxbytes, 2);

    if (!strcmp(o.format, "raw")) print_raw(&o, res, nm, nprocs, host, host1, start, rt, nrounds);
    else print_suite(o.format, res, nm);
    fflush(stdout);
    for (int i = 0; i < nm; i++) free(res[i].v), free(res[i].rd);
    free(res);
    free(ms);
    if (bsend_buf) {
        void *b;
        int s;
        MPI_Buffer_detach(&b, &s);
        free(bsend_buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(sbuf);
    free(rbuf);
    free(wbufs);
    free(o.sizes);
    MPI_Finalize();
    return errors ? 1 : 0;
}
