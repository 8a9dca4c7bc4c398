/* patterns: accepted bandwidth under uniform random traffic and under the permutation patterns
 * of seed 003 (Qian, Afsahi & Zamani) section 5.6.
 *
 *   Every rank sends M messages. With `uniform` each message goes to a destination drawn
 *   uniformly among the other ranks; with a permutation every message of rank a goes to the
 *   fixed destination perm(a), where a = a_{n-1} .. a_0 in binary and P = 2^n:
 *     baseline     beta_{n-1}: the n bits rotated right by one (a_0 becomes the top bit)
 *     bitrev       a_0 a_1 .. a_{n-1}
 *     butterfly    beta_{n-1}: bits a_{n-1} and a_0 exchanged
 *     complement   every bit inverted
 *     cube         beta_{n-1}: bit a_{n-1} inverted
 *     transpose    a_{n/2-1} .. a_0 a_{n-1} .. a_{n/2} (the halves exchanged; n/2 rounded down)
 *     neighbor     0<->1, 2<->3, ...  (a_0 inverted; any even P)
 *     shuffle      a_{n-2} .. a_0 a_{n-1} (rotation left by one)
 *   baseline, butterfly and cube are the "single-stage" patterns (highest stage i = n-1);
 *   baseline-multi, butterfly-multi and cube-multi are the "multi-stage" ones: message k of every
 *   rank uses stage i = k mod n, so a run goes through all the stages (beta_i for baseline rotates
 *   the low i+1 bits right by one, for butterfly exchanges a_i and a_0, for cube inverts a_i).
 *   Messages a permutation maps to the sender itself are not sent (no network traffic).
 *   Message sizes: fixed S, or uniform on [1, 2S-1], or exponential with mean S; inter-arrival
 *   gaps before each send: none, uniform on [0, 2T], or exponential with mean T (busy wait on
 *   MPI_Wtime). All random choices come from --seed, so runs are reproducible.
 *   Run: MPI_Barrier, every rank posts MPI_Irecv for all the messages it will receive (every
 *   rank knows the whole traffic plan), sends its own with MPI_Isend, MPI_Waitall.
 *   time_s = latest completion - earliest start over all ranks;
 *   accepted_MBps = bytes delivered / time_s / 1e6 (all ranks together).
 *
 * Usage: patterns [--size S] [--msgs M] [--patterns p1,p2,..] [--seed X]
 *                 [--size-dist fixed|uniform|exp] [--gap-dist none|uniform|exp] [--gap SECONDS]
 *   defaults: --size 10240 --msgs 20 --seed 1 --size-dist fixed --gap-dist none --gap 0,
 *             all patterns; the bit patterns need a power-of-two process count and are
 *             skipped otherwise (a `# skipped` line says so).
 *
 * Output (rank 0):
 *   # patterns procs=<P> size=<S> msgs=<M> seed=<X> size_dist=<d> gap_dist=<d> gap_s=<T>
 *   pattern,procs,msgs,bytes,time_s,accepted_MBps
 *   <one line per pattern: msgs and bytes are the totals actually sent over all ranks>
 *   # check=ok
 * Every received message is checked against its pattern after the timed part.
 */
#include "app_args.h"

#include <math.h>

static const char *const USAGE = "patterns [--size S] [--msgs M] [--patterns p1,p2,..] [--seed X] "
                                 "[--size-dist fixed|uniform|exp] [--gap-dist none|uniform|exp] [--gap SECONDS]";

enum {
    P_UNIFORM,
    P_BASELINE,
    P_BASELINE_MULTI,
    P_BITREV,
    P_BUTTERFLY,
    P_BUTTERFLY_MULTI,
    P_COMPLEMENT,
    P_CUBE,
    P_CUBE_MULTI,
    P_TRANSPOSE,
    P_NEIGHBOR,
    P_SHUFFLE,
    P_COUNT
};
static const char *const pat_names[P_COUNT] = {"uniform",   "baseline",        "baseline-multi", "bitrev",
                                               "butterfly", "butterfly-multi", "complement",     "cube",
                                               "cube-multi", "transpose",      "neighbor",       "shuffle"};

enum { D_FIXED, D_NONE = D_FIXED, D_UNIFORM, D_EXP };
enum { TAG_DATA = 701 };

static int bit(int x, int i) { return (x >> i) & 1; }

/* Destination of `src` under a bit permutation with n bits, stage i. */
static int permute(int pat, int src, int n, int i, int procs)
{
    const int mask = n > 0 ? (1 << n) - 1 : 0; /* n < 0: P not a power of two (neighbor only) */
    switch (pat) {
    case P_BASELINE:
    case P_BASELINE_MULTI: {
        int lowmask = (1 << (i + 1)) - 1;
        int low = src & lowmask;
        int rot = (low >> 1) | ((low & 1) << i);
        return (src & ~lowmask) | rot;
    }
    case P_BITREV: {
        int d = 0;
        for (int b = 0; b < n; b++)
            d |= bit(src, b) << (n - 1 - b);
        return d;
    }
    case P_BUTTERFLY:
    case P_BUTTERFLY_MULTI: {
        int bi = bit(src, i), b0 = bit(src, 0);
        int d = src & ~((1 << i) | 1);
        return d | (b0 << i) | bi;
    }
    case P_COMPLEMENT:
        return src ^ mask;
    case P_CUBE:
    case P_CUBE_MULTI:
        return src ^ (1 << i);
    case P_TRANSPOSE: {
        int h = n / 2;
        return ((src & ((1 << h) - 1)) << (n - h)) | (src >> h);
    }
    case P_NEIGHBOR: {
        int d = src ^ 1;
        return d < procs ? d : src;
    }
    case P_SHUFFLE:
        return n > 0 ? (((src << 1) | (src >> (n - 1))) & mask) : src;
    default:
        return src;
    }
}

typedef struct {
    long size, msgs;
    int size_dist, gap_dist;
    double gap;
    uint64_t seed;
    int procs, n; /* n = log2(procs), or -1 */
} plan_cfg_t;

typedef struct {
    int dest;
    int bytes;
    double gap;
} msg_t;

/* The M messages of rank `src` under pattern `pat` (deterministic, any rank can compute it). */
static void plan_rank(const plan_cfg_t *c, int pat, int src, msg_t *out)
{
    uint64_t st = c->seed * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)pat << 48) ^ ((uint64_t)src << 20) ^ 0x5A5AULL;
    app_rand_next(&st);
    for (long k = 0; k < c->msgs; k++) {
        double gap = 0.0;
        if (c->gap_dist == D_UNIFORM)
            gap = 2.0 * c->gap * app_rand_unit(&st);
        else if (c->gap_dist == D_EXP)
            gap = -c->gap * log(1.0 - app_rand_unit(&st));
        long bytes = c->size;
        if (c->size_dist == D_UNIFORM) {
            bytes = 1 + (long)app_rand_below(&st, (uint64_t)(2 * c->size - 1));
        } else if (c->size_dist == D_EXP) {
            bytes = 1 + (long)(-(double)c->size * log(1.0 - app_rand_unit(&st)));
            if (bytes > 64 * c->size)
                bytes = 64 * c->size;
        }
        int dest;
        if (pat == P_UNIFORM) {
            dest = (int)app_rand_below(&st, (uint64_t)(c->procs - 1));
            if (dest >= src)
                dest++;
        } else {
            int stage = c->n - 1;
            if (pat == P_BASELINE_MULTI || pat == P_BUTTERFLY_MULTI || pat == P_CUBE_MULTI)
                stage = c->n > 0 ? (int)(k % c->n) : 0;
            dest = permute(pat, src, c->n, stage, c->procs);
        }
        out[k].dest = dest;
        out[k].bytes = (int)bytes;
        out[k].gap = gap;
    }
}

static uint64_t msg_seed(int pat, int src, long k) { return ((uint64_t)pat << 50) ^ ((uint64_t)src << 24) ^ (uint64_t)k; }

static const char *const SIZE_DISTS[] = {"fixed", "uniform", "exp", NULL};
static const char *const GAP_DISTS[] = {"none", "uniform", "exp", NULL};

/* --patterns: sel[k] for the patterns named. */
static int parse_patterns(const char *v, void *sel)
{
    if (v == NULL || *v == '\0')
        app_usage_error("patterns", USAGE, "--patterns needs a comma-separated list");
    return app_parse_names(v, pat_names, P_COUNT, sel);
}

static void parse_options(plan_cfg_t *cfg, long *seed, int *sel, int argc, char **argv)
{
    const app_opt opts[] = {
        {"--size", APP_OPT_LONG, &cfg->size, .lo = 0, .hi = 1L << 26, .error = "--size needs a size in [0, 64M]"},
        {"--msgs", APP_OPT_LONG, &cfg->msgs, .lo = 1, .hi = 1000000L, .error = "--msgs needs an integer in [1, 1e6]"},
        {"--seed", APP_OPT_LONG, seed, .lo = 0, .hi = 1000000000L, .error = "--seed needs an integer in [0, 1e9]"},
        {"--gap", APP_OPT_DOUBLE, &cfg->gap, .dlo = 0.0, .dhi = 10.0, .error = "--gap needs seconds in [0, 10]"},
        {"--size-dist", APP_OPT_CHOICE, &cfg->size_dist, .choices = SIZE_DISTS,
         .error = "--size-dist takes fixed, uniform or exp"},
        {"--gap-dist", APP_OPT_CHOICE, &cfg->gap_dist, .choices = GAP_DISTS,
         .error = "--gap-dist takes none, uniform or exp"},
        {"--patterns", APP_OPT_CUSTOM, sel, .parse = parse_patterns, .error = "unknown pattern in '%s'"},
    };
    app_parse_args(&(app_cli){.prog = "patterns", .usage = USAGE, .unknown = "unexpected argument '%s'"}, opts,
                   APP_NOPTS(opts), argc, argv);
}

/* One pattern: every rank posts its receives, sends its messages with their gaps, waits; the
 * check outside the timed region; rank 0's line (first send to last completion over all ranks).
 * The errors found. */
static long run_pattern(const plan_cfg_t *cfg, int pat, msg_t *plan, int rank, int procs)
{
    const long M = cfg->msgs;
    long errors = 0;
    for (int s = 0; s < procs; s++)
        plan_rank(cfg, pat, s, plan + (size_t)s * (size_t)M);

    /* this rank's send and receive lists */
    size_t sbytes = 0, rbytes = 0;
    long nsend = 0, nrecv = 0;
    for (int s = 0; s < procs; s++)
        for (long k = 0; k < M; k++) {
            const msg_t *m = &plan[(size_t)s * (size_t)M + (size_t)k];
            if (m->dest == s)
                continue;
            if (s == rank) {
                sbytes += (size_t)m->bytes;
                nsend++;
            }
            if (m->dest == rank) {
                rbytes += (size_t)m->bytes;
                nrecv++;
            }
        }
    unsigned char *sbuf = app_xmalloc(sbytes);
    unsigned char *rbuf = app_xcalloc(rbytes, 1);
    MPI_Request *reqs = app_xmalloc(sizeof(MPI_Request) * (size_t)(nsend + nrecv));
    size_t off = 0;
    for (long k = 0; k < M; k++) {
        const msg_t *m = &plan[(size_t)rank * (size_t)M + (size_t)k];
        if (m->dest == rank)
            continue;
        app_fill_pattern(sbuf + off, (size_t)m->bytes, msg_seed(pat, rank, k));
        off += (size_t)m->bytes;
    }

    MPI_Barrier(MPI_COMM_WORLD);
    const double ts = MPI_Wtime();
    int nr = 0;
    off = 0;
    for (int s = 0; s < procs; s++)
        for (long k = 0; k < M; k++) {
            const msg_t *m = &plan[(size_t)s * (size_t)M + (size_t)k];
            if (m->dest != rank || s == rank)
                continue;
            MPI_Irecv(rbuf + off, m->bytes, MPI_BYTE, s, TAG_DATA, MPI_COMM_WORLD, &reqs[nr++]);
            off += (size_t)m->bytes;
        }
    off = 0;
    for (long k = 0; k < M; k++) {
        const msg_t *m = &plan[(size_t)rank * (size_t)M + (size_t)k];
        app_spin(m->gap);
        if (m->dest == rank)
            continue;
        MPI_Isend(sbuf + off, m->bytes, MPI_BYTE, m->dest, TAG_DATA, MPI_COMM_WORLD, &reqs[nr++]);
        off += (size_t)m->bytes;
    }
    MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE);
    const double te = MPI_Wtime();

    /* verification, outside the timed region */
    off = 0;
    long bad = 0;
    for (int s = 0; s < procs; s++)
        for (long k = 0; k < M; k++) {
            const msg_t *m = &plan[(size_t)s * (size_t)M + (size_t)k];
            if (m->dest != rank || s == rank)
                continue;
            bad += app_check_pattern(rbuf + off, (size_t)m->bytes, msg_seed(pat, s, k)) != 0;
            off += (size_t)m->bytes;
        }
    if (bad) {
        fprintf(stderr, "patterns: rank %d: %s: %ld messages wrong\n", rank, pat_names[pat], bad);
        errors++;
    }
    double tmin = 0.0, tmax = 0.0;
    long mine[2] = {nrecv, (long)rbytes}, tot[2] = {0, 0};
    MPI_Reduce(&ts, &tmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&te, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, tot, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double t = tmax - tmin;
        double bw = t > 0.0 ? (double)tot[1] / t / 1e6 : 0.0;
        printf("%s,%d,%ld,%ld,%.9e,%.3f\n", pat_names[pat], procs, tot[0], tot[1], t, bw);
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
    free(reqs);
    return errors;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const int rank = app_world_rank();
    const int procs = app_world_size();

    plan_cfg_t cfg = {10240, 20, D_FIXED, D_NONE, 0.0, 1, procs, -1};
    long seed = 1;
    int sel[P_COUNT];
    for (int k = 0; k < P_COUNT; k++)
        sel[k] = 1;
    parse_options(&cfg, &seed, sel, argc, argv);
    if (procs < 2)
        app_usage_error("patterns", USAGE, "needs at least 2 processes");
    if (cfg.size == 0 && cfg.size_dist != D_FIXED)
        app_usage_error("patterns", USAGE, "random message sizes need --size >= 1");
    cfg.seed = (uint64_t)seed;
    for (int n = 0; n < 31; n++)
        if ((1 << n) == procs)
            cfg.n = n;

    const long M = cfg.msgs;
    msg_t *plan = app_xmalloc(sizeof(msg_t) * (size_t)procs * (size_t)M); /* plan[src * M + k] */
    long errors = 0;

    if (rank == 0) {
        static const char *const dn[] = {"fixed", "uniform", "exp"};
        static const char *const gn[] = {"none", "uniform", "exp"};
        printf("# patterns procs=%d size=%ld msgs=%ld seed=%ld size_dist=%s gap_dist=%s gap_s=%.9e\n", procs,
               cfg.size, M, seed, dn[cfg.size_dist], gn[cfg.gap_dist], cfg.gap);
        printf("pattern,procs,msgs,bytes,time_s,accepted_MBps\n");
        fflush(stdout);
    }

    for (int pat = 0; pat < P_COUNT; pat++) {
        if (!sel[pat])
            continue;
        if (pat != P_UNIFORM && pat != P_NEIGHBOR && cfg.n < 0) {
            if (rank == 0)
                printf("# skipped pattern=%s reason=procs-not-power-of-two\n", pat_names[pat]);
            continue;
        }
        errors += run_pattern(&cfg, pat, plan, rank, procs);
    }

    int status = app_finish(errors, "patterns");
    free(plan);
    MPI_Finalize();
    return status;
}
