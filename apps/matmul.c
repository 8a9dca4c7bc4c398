/* matmul: the parallel integer matrix multiply of seed 000 (George & VanLoon), section 3.2.
 *
 *   C = A x B, N x N int32 matrices. The master (rank 0) distributes the rows of A evenly over
 *   all ranks including itself, then sends B^T (B transposed) to every slave; every rank computes
 *   its rows of C as dot products of rows of A with rows of B^T; the slaves return their rows of
 *   C; the run ends when the master has computed its own rows and received all the others.
 *
 *   How A and B^T travel (sec 3.2: "distributes rows of the A matrix to itself and the slave
 *   processors", "transmits B^T ... to each of the slave processors"):
 *   --distribute p2p (the default, the paper's words): MPI_Send of each block of A, then of B^T to
 *     each slave, in rank order;
 *   --distribute collective: MPI_Scatterv for A (the master's own block included, "to itself")
 *     and MPI_Bcast for B^T. With one compute rate fitted on the 2-node curve, P - 1 copies of
 *     B^T one after another over the master's 1.28 Gb/s link bound the 8-node efficiency at
 *     N = 128 by 93.3 % and the 16-node at N = 144 by 79.8 %, below Fig. 7's 95 % and 85 %; a
 *     broadcast does not (results/VALIDATION.md reports both forms, the paper's scored).
 *   The rows of C come back by MPI_Send/MPI_Recv in both ("returned to the master processor").
 *
 * Usage: matmul N [--check] [--repeat K] [--seed S] [--distribute collective|p2p]
 *
 * Output (rank 0, one line):
 *   N=<n> P=<procs> time_s=<mean> repeat=<K> time_min_s=<min> time_max_s=<max> ... check=ok
 * time_s is the MPI_Wtime interval, on rank 0, of one whole distribute-compute-collect (mean
 * over the K repetitions; each repetition starts after an MPI_Barrier). The fastest repetition's
 * phases on rank 0 follow: distribute_s (until A and B^T are sent), compute_s (its own rows),
 * collect_s (waiting for the slaves' rows). Rank 0 always verifies C against a sequential
 * product, outside the timed region; on a mismatch it prints check=FAIL, a message on stderr,
 * and exits 1.
 */
#include "app_args.h"

static const char *const USAGE = "matmul N [--check] [--repeat K] [--seed S] [--distribute collective|p2p]";

enum { TAG_A = 101, TAG_BT = 102, TAG_C = 103 };

/* Rows of A given to rank r: count and first row (the first N % P ranks get one more). */
static void row_block(long n, int procs, int r, long *first, long *count)
{
    long base = n / procs, rem = n % procs;
    *count = base + (r < rem ? 1 : 0);
    *first = (long)r * base + (r < rem ? r : rem);
}

static int32_t a_elem(long i, long j, long seed) { return (int32_t)((i + 2 * j + seed) % 7) - 3; }
static int32_t b_elem(long i, long j, long seed) { return (int32_t)((3 * i + j + 2 * seed) % 5) - 2; }

/* c[i][j] = sum_k a[i][k] * bt[j][k] for `rows` rows of a. */
static void multiply_rows(const int32_t *a, const int32_t *bt, int32_t *c, long rows, long n)
{
    for (long i = 0; i < rows; i++) {
        const int32_t *ai = a + i * n;
        for (long j = 0; j < n; j++) {
            const int32_t *btj = bt + j * n;
            int32_t s = 0;
            for (long k = 0; k < n; k++)
                s += ai[k] * btj[k];
            c[i * n + j] = s;
        }
    }
}

typedef struct {
    long n, repeat, seed;
    int collective;   /* the paper's form (0): point to point */
} options;

static const char *const DISTRIBUTIONS[] = {"p2p", "collective", NULL};

/* N, the one operand. */
static int take_n(const char *a, void *n)
{
    if (a[0] == '-' && a[1] != '\0')
        app_usage_error("matmul", USAGE, "unknown option '%s'", a);
    if (*(long *)n >= 0)
        return -1;
    if (app_parse_long(a, 1, 46340, n) != 0)
        app_usage_error("matmul", USAGE, "N must be an integer in [1, 46340], got '%s'", a);
    return 0;
}

static void parse_options(options *o, int argc, char **argv)
{
    *o = (options){.n = -1, .repeat = 1};
    const app_opt opts[] = {
        {.name = "--check", .kind = APP_OPT_FLAG},   /* verification is always done; accepted for compatibility */
        {"--repeat", APP_OPT_LONG, &o->repeat, .lo = 1, .hi = 1000000, .error = "--repeat needs an integer >= 1"},
        {"--seed", APP_OPT_LONG, &o->seed, .lo = 0, .hi = 1000000000L, .error = "--seed needs an integer in [0, 1e9]"},
        {"--distribute", APP_OPT_CHOICE, &o->collective, .choices = DISTRIBUTIONS,
         .error = "--distribute needs collective or p2p, got '%s'"},
    };
    app_parse_args(&(app_cli){.prog = "matmul", .usage = USAGE, .unknown = "unexpected argument '%s'",
                              .other = take_n, .ctx = &o->n},
                   opts, APP_NOPTS(opts), argc, argv);
    if (o->n < 0)
        app_usage_error("matmul", USAGE, "missing N");
}

/* The timed repetitions: the whole product's times, and the phases of the fastest one. */
typedef struct {
    double tsum, tmin, tmax, last_t0, last_t1;
    double dist, comp, coll;
} timing;

/* Rank 0, one repetition: A's rows and B^T out, its own rows, the others' rows of C back. */
static void master_product(const options *o, const int32_t *a, int32_t *bt, int32_t *c, int *counts, int *displs,
                           int procs, long rep, timing *tm)
{
    const long n = o->n;
    const size_t nn = (size_t)n * (size_t)n;
    long my_first, my_rows;
    row_block(n, procs, 0, &my_first, &my_rows);
    memset(c, 0, nn * sizeof(int32_t));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (o->collective) {
        MPI_Scatterv(a, counts, displs, MPI_INT32_T, MPI_IN_PLACE, 0, MPI_INT32_T, 0, MPI_COMM_WORLD);
        MPI_Bcast(bt, (int)nn, MPI_INT32_T, 0, MPI_COMM_WORLD);
    } else {
        /* rows of A, then B^T, to every slave that has rows */
        for (int r = 1; r < procs; r++)
            if (counts[r] > 0)
                MPI_Send(a + displs[r], counts[r], MPI_INT32_T, r, TAG_A, MPI_COMM_WORLD);
        for (int r = 1; r < procs; r++)
            if (counts[r] > 0)
                MPI_Send(bt, (int)nn, MPI_INT32_T, r, TAG_BT, MPI_COMM_WORLD);
    }
    double t_sent = MPI_Wtime();
    multiply_rows(a + my_first * n, bt, c + my_first * n, my_rows, n);
    double t_computed = MPI_Wtime();
    for (int r = 1; r < procs; r++)
        if (counts[r] > 0)
            MPI_Recv(c + displs[r], counts[r], MPI_INT32_T, r, TAG_C, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t1 = MPI_Wtime();
    double dt = t1 - t0;
    tm->last_t0 = t0;
    tm->last_t1 = t1;
    tm->tsum += dt;
    if (rep == 0 || dt < tm->tmin) {
        tm->tmin = dt;
        tm->dist = t_sent - t0;
        tm->comp = t_computed - t_sent;
        tm->coll = t1 - t_computed;
    }
    if (rep == 0 || dt > tm->tmax)
        tm->tmax = dt;
}

/* Rank 0's line, after the check against a sequential i-k-j product: 0, or 1 (wrong). */
static int check_and_print(const options *o, const int32_t *a, const int32_t *b, const int32_t *c, int procs,
                           const timing *tm)
{
    const long n = o->n;
    const size_t nn = (size_t)n * (size_t)n;
    int32_t *ref = app_xcalloc(nn, sizeof(int32_t));
    for (long i = 0; i < n; i++)
        for (long k = 0; k < n; k++) {
            const int32_t aik = a[i * n + k];
            for (long j = 0; j < n; j++)
                ref[i * n + j] += aik * b[k * n + j];
        }
    long bad = 0, first_bad = -1;
    for (size_t x = 0; x < nn; x++)
        if (ref[x] != c[x]) {
            if (first_bad < 0)
                first_bad = (long)x;
            bad++;
        }
    printf("N=%ld P=%d time_s=%.12e repeat=%ld time_min_s=%.12e time_max_s=%.12e wtime_start_s=%.12e "
           "wtime_end_s=%.12e distribute_s=%.9e compute_s=%.9e collect_s=%.9e check=%s\n",
           n, procs, tm->tsum / (double)o->repeat, o->repeat, tm->tmin, tm->tmax, tm->last_t0, tm->last_t1, tm->dist,
           tm->comp, tm->coll, bad == 0 ? "ok" : "FAIL");
    fflush(stdout);
    int status = 0;
    if (bad != 0) {
        fprintf(stderr,
                "matmul: verification FAILED: %ld of %zu elements wrong; first C[%ld][%ld] = %d, "
                "expected %d\n",
                bad, nn, first_bad / n, first_bad % n, (int)c[first_bad], (int)ref[first_bad]);
        status = 1;
    }
    free(ref);
    return status;
}

/* Rank 0: builds A and B, runs the repetitions, checks and prints. The exit status. */
static int master(const options *o, int procs)
{
    const long n = o->n;
    const size_t nn = (size_t)n * (size_t)n;
    int32_t *a = app_xmalloc(nn * sizeof(int32_t));
    int32_t *b = app_xmalloc(nn * sizeof(int32_t));
    int32_t *bt = app_xmalloc(nn * sizeof(int32_t));
    int32_t *c = app_xmalloc(nn * sizeof(int32_t));
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            a[i * n + j] = a_elem(i, j, o->seed);
            b[i * n + j] = b_elem(i, j, o->seed);
        }
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            bt[j * n + i] = b[i * n + j];
    /* every rank's block of A (elements), the master's own included */
    int *counts = app_xmalloc((size_t)procs * sizeof(int)), *displs = app_xmalloc((size_t)procs * sizeof(int));
    for (int r = 0; r < procs; r++) {
        long first, rows;
        row_block(n, procs, r, &first, &rows);
        counts[r] = (int)(rows * n);
        displs[r] = (int)(first * n);
    }
    timing tm = {0};
    for (long rep = 0; rep < o->repeat; rep++)
        master_product(o, a, bt, c, counts, displs, procs, rep, &tm);
    int status = check_and_print(o, a, b, c, procs, &tm);
    free(counts);
    free(displs);
    free(a);
    free(b);
    free(bt);
    free(c);
    return status;
}

/* The other ranks: their rows of A and B^T in, their rows of C out, each repetition. */
static void worker(const options *o, int rank, int procs)
{
    const long n = o->n;
    const size_t nn = (size_t)n * (size_t)n;
    long my_first, my_rows;
    row_block(n, procs, rank, &my_first, &my_rows);
    /* with the collectives every rank takes part, rows or not; sizes of at least one element */
    int32_t *a = app_xmalloc((size_t)(my_rows > 0 ? my_rows : 1) * (size_t)n * sizeof(int32_t));
    int32_t *bt = app_xmalloc(my_rows > 0 || o->collective ? nn * sizeof(int32_t) : 1);
    int32_t *c = app_xmalloc((size_t)(my_rows > 0 ? my_rows : 1) * (size_t)n * sizeof(int32_t));
    for (long rep = 0; rep < o->repeat; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (o->collective) {
            MPI_Scatterv(NULL, NULL, NULL, MPI_INT32_T, a, (int)(my_rows * n), MPI_INT32_T, 0, MPI_COMM_WORLD);
            MPI_Bcast(bt, (int)nn, MPI_INT32_T, 0, MPI_COMM_WORLD);
        } else if (my_rows > 0) {
            MPI_Recv(a, (int)(my_rows * n), MPI_INT32_T, 0, TAG_A, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(bt, (int)nn, MPI_INT32_T, 0, TAG_BT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (my_rows == 0)
            continue;
        multiply_rows(a, bt, c, my_rows, n);
        MPI_Send(c, (int)(my_rows * n), MPI_INT32_T, 0, TAG_C, MPI_COMM_WORLD);
    }
    free(a);
    free(bt);
    free(c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const int rank = app_world_rank();
    const int procs = app_world_size();

    options o;
    parse_options(&o, argc, argv);
    int status = 0;
    if (rank == 0)
        status = master(&o, procs);
    else
        worker(&o, rank, procs);
    MPI_Finalize();
    return status;
}
