/* logp: parameterized LogP (Kielmann, Bal & Verstoep, "Fast measurement of LogP parameters for
 * message passing platforms", IPDPS workshops 2000), as used by seed 003 section 5.3:
 * o_s, o_r and g per message size, and L. Rank 0 measures, rank 1 mirrors, other ranks idle.
 *
 *   RTT(m), o_s(m): K times: rank 0 sends m bytes (MPI_Send) and receives a 0-byte reply.
 *        o_s(m) = mean time of the MPI_Send call; RTT(m) = mean time of send + reply.
 *   o_r(m): K times: rank 0 sends a 0-byte request, the mirror replies with m bytes; rank 0 waits
 *        until the reply has arrived: it polls MPI_Iprobe (and MPI_Wtime) until the probe finds
 *        the reply, at most delta = max(1.2 RTT(m), --min-delta); then it times the MPI_Recv
 *        call. o_r(m) = mean time of the MPI_Recv call. (Polling with MPI_Iprobe instead of a
 *        pure MPI_Wtime loop also lets the wait end where computation is not charged, as under
 *        mpisim --compute none, and drives MPI's progress so the reply really is there.)
 *   g(m): rank 0 sends n messages of m bytes in a row (MPI_Send), then waits for the mirror's
 *        0-byte ack (sent when it has received all n); T(n) = time from the first send to the
 *        ack. The n messages leave one gap apart and the last one plus the ack take one RTT(m),
 *        so g(m) = (T(n) - RTT(m)) / (n - 1): the gap also where sends return before the
 *        network has taken the message (eager sends into ample buffers), where the duration of
 *        the send calls alone would only show o_s. n starts at 10 and doubles until two
 *        successive values differ by less than 1 % (at least 20 messages), or n reaches
 *        --max-runs, or n m exceeds 32 MiB (saturation of the pipeline, as in Kielmann's method).
 *   L = RTT(0) / 2 - g(0)   (PLogP: RTT(m) = 2 L + g(m) + g(0)).
 *   The run starts with 50 untimed empty round trips; each phase is preceded by 2 untimed
 *   repetitions. Size 0 is always measured (for L).
 *
 * Usage: logp [--sizes a,b,..] [--iters K] [--max-runs N] [--min-delta SECONDS]
 *   defaults: --sizes 0,1,4,16,64,256,1024,4096,8192,16383,16384,32768,65536,262144,1048576
 *             --iters 20 --max-runs 1280 --min-delta 5e-6
 *
 * Output (rank 0):
 *   # logp procs=<P> iters=<K> L_s=<L>
 *   bytes,os_s,or_s,g_s,L_s,rtt_s
 *   <one line per size; L_s repeats the single L on every line>
 *   # check=ok
 * The payload of the last message of each phase is checked against its pattern.
 */
#include "app_args.h"

static const char *const USAGE = "logp [--sizes a,b,..] [--iters K] [--max-runs N] [--min-delta SECONDS]";

enum { TAG_CTRL = 601, TAG_DATA = 602, TAG_REPLY = 603 };
enum { PH_RTT = 1, PH_OR = 2, PH_G = 3, PH_DONE = 4 };

#define WARMUP 2
#define G_BYTES_CAP (32.0 * 1024 * 1024)

/* control message from rank 0 to the mirror: phase, size, count */
typedef struct {
    int phase, size;
    long count;
} ctrl_t;

static void send_ctrl(int phase, int size, long count)
{
    long msg[3] = {phase, size, count};
    MPI_Send(msg, 3, MPI_LONG, 1, TAG_CTRL, MPI_COMM_WORLD);
}

static ctrl_t recv_ctrl(void)
{
    long msg[3];
    MPI_Recv(msg, 3, MPI_LONG, 0, TAG_CTRL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ctrl_t c = {(int)msg[0], (int)msg[1], msg[2]};
    return c;
}

static uint64_t seed_of(int phase, int size) { return ((uint64_t)phase << 40) ^ (uint64_t)size ^ 0x600DULL; }

typedef struct {
    long iters, max_runs;
    double min_delta;
    app_list sizes;
} options;

static void parse_options(options *o, int argc, char **argv)
{
    *o = (options){.iters = 20, .max_runs = 1280, .min_delta = 5e-6};
    const app_opt opts[] = {
        {"--sizes", APP_OPT_LIST, &o->sizes, .lo = 0, .hi = 1L << 28, .reset = 1,
         .error = "--sizes needs a comma-separated list of sizes"},
        {"--iters", APP_OPT_LONG, &o->iters, .lo = 1, .hi = 10000000L, .error = "--iters needs an integer >= 1"},
        {"--max-runs", APP_OPT_LONG, &o->max_runs, .lo = 10, .hi = 100000000L,
         .error = "--max-runs needs an integer >= 10"},
        {"--min-delta", APP_OPT_DOUBLE, &o->min_delta, .dlo = 0.0, .dhi = 10.0,
         .error = "--min-delta needs seconds in [0, 10]"},
    };
    app_parse_args(&(app_cli){.prog = "logp", .usage = USAGE, .unknown = "unexpected argument '%s'"}, opts,
                   APP_NOPTS(opts), argc, argv);
}

/* RTT(m) and o_s(m): m bytes forward, 0 back (rank 0). */
static void phase_rtt(const options *o, unsigned char *sbuf, int m, double *os, double *rtt)
{
    app_fill_pattern(sbuf, (size_t)m, seed_of(PH_RTT, m));
    send_ctrl(PH_RTT, m, o->iters + WARMUP);
    MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* sync */
    double sum_os = 0.0, sum_rtt = 0.0;
    for (long k = 0; k < o->iters + WARMUP; k++) {
        double t0 = MPI_Wtime();
        MPI_Send(sbuf, m, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t2 = MPI_Wtime();
        if (k >= WARMUP) {
            sum_os += t1 - t0;
            sum_rtt += t2 - t0;
        }
    }
    *os = sum_os / (double)o->iters;
    *rtt = sum_rtt / (double)o->iters;
}

/* o_r(m): 0 bytes forward, m back, received after a delay (rank 0). The errors found. */
static long phase_or(const options *o, unsigned char *rbuf, int m, double rtt, double *orr)
{
    long errors = 0;
    const double delta = 1.2 * rtt > o->min_delta ? 1.2 * rtt : o->min_delta;
    memset(rbuf, 0, (size_t)m);
    send_ctrl(PH_OR, m, o->iters + WARMUP);
    MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* sync */
    double sum_or = 0.0;
    for (long k = 0; k < o->iters + WARMUP; k++) {
        MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
        const double deadline = MPI_Wtime() + delta;
        int arrived = 0;
        do
            MPI_Iprobe(1, TAG_REPLY, MPI_COMM_WORLD, &arrived, MPI_STATUS_IGNORE);
        while (!arrived && MPI_Wtime() < deadline);
        double t0 = MPI_Wtime();
        MPI_Recv(rbuf, m, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t1 = MPI_Wtime();
        if (k >= WARMUP)
            sum_or += t1 - t0;
    }
    *orr = sum_or / (double)o->iters;
    size_t bad = app_check_pattern(rbuf, (size_t)m, seed_of(PH_OR, m));
    if (bad) {
        fprintf(stderr, "logp: rank 0: o_r phase, %d bytes: %zu bytes wrong\n", m, bad);
        errors++;
    }
    return errors;
}

/* g(m): n messages in a row, doubling n until the per-message time settles (rank 0). */
static double phase_g(const options *o, unsigned char *sbuf, int m, double rtt)
{
    app_fill_pattern(sbuf, (size_t)m, seed_of(PH_G, m));
    long runs = 10;
    double prev = 0.0, avg = 0.0;
    int first = 1;
    for (;;) {
        send_ctrl(PH_G, m, runs);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* sync */
        double t0 = MPI_Wtime();
        for (long k = 0; k < runs; k++)
            MPI_Send(sbuf, m, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* ack */
        double t1 = MPI_Wtime();
        avg = (t1 - t0 - rtt) / (double)(runs - 1);
        int settled = !first && runs >= 20 && prev > 0.0 && (avg > prev ? avg - prev : prev - avg) < 0.01 * prev;
        if (settled || runs * 2 > o->max_runs || (double)runs * 2.0 * (double)m > G_BYTES_CAP)
            break;
        first = 0;
        prev = avg;
        runs *= 2;
    }
    return avg;
}

/* Rank 0: every phase of every size, then the table. The errors found. */
static long measure(const options *o, int procs, unsigned char *sbuf, unsigned char *rbuf)
{
    const long *sizes = o->sizes.v;
    const int nsizes = o->sizes.n;
    long errors = 0;
    double *os = app_xcalloc((size_t)nsizes, sizeof(double));
    double *orr = app_xcalloc((size_t)nsizes, sizeof(double));
    double *g = app_xcalloc((size_t)nsizes, sizeof(double));
    double *rtt = app_xcalloc((size_t)nsizes, sizeof(double));
    /* untimed warm-up of the connection: 50 empty round trips */
    send_ctrl(PH_RTT, 0, 50);
    MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int k = 0; k < 50; k++) {
        MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int si = 0; si < nsizes; si++) {
        const int m = (int)sizes[si];
        phase_rtt(o, sbuf, m, &os[si], &rtt[si]);
        errors += phase_or(o, rbuf, m, rtt[si], &orr[si]);
        g[si] = phase_g(o, sbuf, m, rtt[si]);
    }
    send_ctrl(PH_DONE, 0, 0);

    const double L = rtt[0] / 2.0 - g[0];
    printf("# logp procs=%d iters=%ld L_s=%.9e\n", procs, o->iters, L);
    printf("bytes,os_s,or_s,g_s,L_s,rtt_s\n");
    for (int si = 0; si < nsizes; si++)
        printf("%ld,%.9e,%.9e,%.9e,%.9e,%.9e\n", sizes[si], os[si], orr[si], g[si], L, rtt[si]);
    fflush(stdout);
    free(os);
    free(orr);
    free(g);
    free(rtt);
    return errors;
}

/* Rank 1: answers each phase rank 0 asks for until it is done. The errors found. */
static long mirror(unsigned char *sbuf, unsigned char *rbuf)
{
    long errors = 0;
    for (;;) {
        ctrl_t c = recv_ctrl();
        if (c.phase == PH_DONE)
            break;
        const int m = c.size;
        if (c.phase == PH_RTT) {
            memset(rbuf, 0, (size_t)m);
            MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
            for (long k = 0; k < c.count; k++) {
                MPI_Recv(rbuf, m, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
            }
        } else if (c.phase == PH_OR) {
            app_fill_pattern(sbuf, (size_t)m, seed_of(PH_OR, m));
            MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
            for (long k = 0; k < c.count; k++) {
                MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, m, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
            }
        } else if (c.phase == PH_G) {
            memset(rbuf, 0, (size_t)m);
            MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
            for (long k = 0; k < c.count; k++)
                MPI_Recv(rbuf, m, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
        }
        if (c.phase == PH_RTT || c.phase == PH_G) {
            size_t bad = app_check_pattern(rbuf, (size_t)m, seed_of(c.phase, m));
            if (bad) {
                fprintf(stderr, "logp: rank 1: phase %d, %d bytes: %zu bytes wrong\n", c.phase, m, bad);
                errors++;
            }
        }
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
        app_usage_error("logp", USAGE, "needs at least 2 processes");
    if (o.sizes.n == 0) {
        static const long def[] = {0, 1, 4, 16, 64, 256, 1024, 4096, 8192, 16383, 16384, 32768, 65536, 262144, 1048576};
        app_list_or_default(&o.sizes, def, (int)(sizeof def / sizeof def[0]));
    } else {
        long *nv = realloc(o.sizes.v, (size_t)(o.sizes.n + 1) * sizeof(long));
        if (nv == NULL)
            app_usage_error("logp", USAGE, "out of memory");
        o.sizes.v = nv;
        o.sizes.v[o.sizes.n++] = 0;
    }
    app_sort_unique(o.sizes.v, &o.sizes.n); /* size 0 first */
    long maxsize = o.sizes.v[o.sizes.n - 1];

    unsigned char *sbuf = app_xmalloc((size_t)maxsize);
    unsigned char *rbuf = app_xmalloc((size_t)maxsize);
    long errors = 0;
    if (rank == 0)
        errors = measure(&o, procs, sbuf, rbuf);
    else if (rank == 1)
        errors = mirror(sbuf, rbuf);

    int status = app_finish(errors, "logp");
    free(sbuf);
    free(rbuf);
    free(o.sizes.v);
    MPI_Finalize();
    return status;
}
