/* collectives: completion time of the MPI collective operations by size and process count
 * (seed 003, Qian, Afsahi & Zamani, section 5.7).
 *
 *   For each operation and size: one untimed warm-up call, the output buffers are then cleared,
 *   MPI_Barrier, K timed calls, and the result of the last call is verified (outside the timed
 *   region). Each rank's time is (t_end - t_start) / K; time_s is the maximum over the ranks
 *   (the completion time of the operation), avg_rank_time_s the mean over the ranks.
 *   Root is rank 0. `bytes` is the size of the block one process contributes or receives:
 *     barrier   (no data; reported with bytes=0)
 *     bcast     root's `bytes` to everyone
 *     reduce    `bytes`/4 MPI_INT summed to the root (MPI_SUM)
 *     allreduce `bytes`/4 MPI_INT summed to everyone
 *     gather    `bytes` from every rank to the root (P x bytes at the root)
 *     scatter   `bytes` from the root to every rank
 *     allgather `bytes` from every rank to every rank
 *     alltoall  `bytes` from every rank to every rank, a different block per pair
 *     alltoallv like alltoall with per-pair sizes of 0.5, 1 or 1.5 x `bytes` (not in the default list)
 *
 * Usage: collectives [--sizes a,b,..] [--iters K] [--ops op1,op2,..]
 *   defaults: --sizes 4,64,1024,16384,65536 --iters 10
 *             --ops barrier,bcast,reduce,allreduce,gather,scatter,allgather,alltoall
 *   sizes must be multiples of 4.
 *
 * Output (rank 0):
 *   # collectives procs=<P> iters=<K>
 *   op,bytes,procs,iters,time_s,avg_rank_time_s
 *   <one line per operation and size>
 *   # check=ok
 */
#include "app_args.h"

static const char *const USAGE = "collectives [--sizes a,b,..] [--iters K] [--ops op1,op2,..]";

enum op_id { OP_BARRIER, OP_BCAST, OP_REDUCE, OP_ALLREDUCE, OP_GATHER, OP_SCATTER, OP_ALLGATHER, OP_ALLTOALL, OP_ALLTOALLV, OP_COUNT };

static const char *const op_names[OP_COUNT] = {"barrier", "bcast",     "reduce",   "allreduce", "gather",
                                               "scatter", "allgather", "alltoall", "alltoallv"};

static const int default_ops[] = {OP_BARRIER, OP_BCAST,  OP_REDUCE,    OP_ALLREDUCE,
                                  OP_GATHER,  OP_SCATTER, OP_ALLGATHER, OP_ALLTOALL};

typedef struct {
    int rank, procs;
    long bytes;
    unsigned char *sbuf, *rbuf; /* `cap` bytes each: the largest need of the selected operations */
    size_t cap;
    int *scounts, *sdispls, *rcounts, *rdispls;
} ctx_t;

static uint64_t seed_of(int op, long bytes, long a, long b)
{
    return ((uint64_t)(op + 1) << 56) ^ ((uint64_t)bytes << 24) ^ ((uint64_t)a << 12) ^ (uint64_t)b;
}

static int reduce_elem(int rank, long i) { return (rank + 1) * (int)(i % 13 + 1); }

/* alltoallv: bytes sent from i to j (multiple of 2 when bytes is a multiple of 4) */
static int v_bytes(long bytes, int i, int j) { return (int)(bytes * ((i + j) % 3 + 1) / 2); }

static void setup(ctx_t *c, int op)
{
    const long B = c->bytes;
    const int P = c->procs, r = c->rank;
    const size_t b = (size_t)B;
    switch (op) {
    case OP_BCAST:
        if (r == 0)
            app_fill_pattern(c->rbuf, b, seed_of(op, B, 0, 0));
        break;
    case OP_REDUCE:
    case OP_ALLREDUCE: {
        int *s = (int *)(void *)c->sbuf;
        for (long i = 0; i < B / 4; i++)
            s[i] = reduce_elem(r, i);
        break;
    }
    case OP_GATHER:
    case OP_ALLGATHER:
        app_fill_pattern(c->sbuf, b, seed_of(op, B, r, 0));
        break;
    case OP_SCATTER:
        if (r == 0)
            for (int j = 0; j < P; j++)
                app_fill_pattern(c->sbuf + (size_t)j * b, b, seed_of(op, B, 0, j));
        break;
    case OP_ALLTOALL:
        for (int j = 0; j < P; j++)
            app_fill_pattern(c->sbuf + (size_t)j * b, b, seed_of(op, B, r, j));
        break;
    case OP_ALLTOALLV: {
        int so = 0, ro = 0;
        for (int j = 0; j < P; j++) {
            c->scounts[j] = v_bytes(B, r, j);
            c->sdispls[j] = so;
            app_fill_pattern(c->sbuf + so, (size_t)c->scounts[j], seed_of(op, B, r, j));
            so += c->scounts[j];
            c->rcounts[j] = v_bytes(B, j, r);
            c->rdispls[j] = ro;
            ro += c->rcounts[j];
        }
        break;
    }
    default:
        break;
    }
}

/* Clear what the operation writes, so that the check sees the timed calls' result. */
static void clear_output(ctx_t *c, int op)
{
    switch (op) {
    case OP_BCAST:
        if (c->rank != 0)
            memset(c->rbuf, 0, (size_t)c->bytes);
        break;
    case OP_BARRIER:
        break;
    default:
        memset(c->rbuf, 0, c->cap);
        break;
    }
}

static void run(ctx_t *c, int op)
{
    const int B = (int)c->bytes;
    MPI_Comm w = MPI_COMM_WORLD;
    switch (op) {
    case OP_BARRIER:
        MPI_Barrier(w);
        break;
    case OP_BCAST:
        MPI_Bcast(c->rbuf, B, MPI_BYTE, 0, w);
        break;
    case OP_REDUCE:
        MPI_Reduce(c->sbuf, c->rbuf, B / 4, MPI_INT, MPI_SUM, 0, w);
        break;
    case OP_ALLREDUCE:
        MPI_Allreduce(c->sbuf, c->rbuf, B / 4, MPI_INT, MPI_SUM, w);
        break;
    case OP_GATHER:
        MPI_Gather(c->sbuf, B, MPI_BYTE, c->rbuf, B, MPI_BYTE, 0, w);
        break;
    case OP_SCATTER:
        MPI_Scatter(c->sbuf, B, MPI_BYTE, c->rbuf, B, MPI_BYTE, 0, w);
        break;
    case OP_ALLGATHER:
        MPI_Allgather(c->sbuf, B, MPI_BYTE, c->rbuf, B, MPI_BYTE, w);
        break;
    case OP_ALLTOALL:
        MPI_Alltoall(c->sbuf, B, MPI_BYTE, c->rbuf, B, MPI_BYTE, w);
        break;
    case OP_ALLTOALLV:
        MPI_Alltoallv(c->sbuf, c->scounts, c->sdispls, MPI_BYTE, c->rbuf, c->rcounts, c->rdispls, MPI_BYTE, w);
        break;
    default:
        break;
    }
}

/* Number of wrong bytes/elements in this rank's result. */
static long verify(const ctx_t *c, int op)
{
    const long B = c->bytes;
    const size_t b = (size_t)B;
    const int P = c->procs, r = c->rank;
    long bad = 0;
    switch (op) {
    case OP_BCAST:
        bad += (long)app_check_pattern(c->rbuf, b, seed_of(op, B, 0, 0));
        break;
    case OP_REDUCE:
    case OP_ALLREDUCE:
        if (op == OP_ALLREDUCE || r == 0) {
            const int *x = (const int *)(const void *)c->rbuf;
            for (long i = 0; i < B / 4; i++)
                bad += x[i] != (int)(i % 13 + 1) * (P * (P + 1) / 2);
        }
        break;
    case OP_GATHER:
    case OP_ALLGATHER:
        if (op == OP_ALLGATHER || r == 0)
            for (int j = 0; j < P; j++)
                bad += (long)app_check_pattern(c->rbuf + (size_t)j * b, b, seed_of(op, B, j, 0));
        break;
    case OP_SCATTER:
        bad += (long)app_check_pattern(c->rbuf, b, seed_of(op, B, 0, r));
        break;
    case OP_ALLTOALL:
        for (int j = 0; j < P; j++)
            bad += (long)app_check_pattern(c->rbuf + (size_t)j * b, b, seed_of(op, B, j, r));
        break;
    case OP_ALLTOALLV:
        for (int j = 0; j < P; j++)
            bad += (long)app_check_pattern(c->rbuf + c->rdispls[j], (size_t)c->rcounts[j], seed_of(op, B, j, r));
        break;
    default:
        break;
    }
    return bad;
}

typedef struct {
    int v[OP_COUNT * 4], n;
} op_list;

/* --ops: the operations in the order given (each may repeat). */
static int parse_ops(const char *v, void *value)
{
    op_list *l = value;
    if (v == NULL || *v == '\0')
        app_usage_error("collectives", USAGE, "--ops needs a comma-separated list of operations");
    l->n = 0;
    const char *p = v;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int found = -1;
        for (int k = 0; k < OP_COUNT; k++)
            if (strlen(op_names[k]) == len && strncmp(op_names[k], p, len) == 0)
                found = k;
        if (found < 0 || l->n >= (int)(sizeof l->v / sizeof l->v[0]))
            return -1;
        l->v[l->n++] = found;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

typedef struct {
    long iters;
    app_list sizes;
    op_list ops;
} options;

static void parse_options(options *o, int argc, char **argv)
{
    *o = (options){.iters = 10};
    const app_opt opts[] = {
        {"--sizes", APP_OPT_LIST, &o->sizes, .lo = 0, .hi = 1L << 28, .reset = 1,
         .error = "--sizes needs a comma-separated list of sizes"},
        {"--iters", APP_OPT_LONG, &o->iters, .lo = 1, .hi = 100000000L, .error = "--iters needs an integer >= 1"},
        {"--ops", APP_OPT_CUSTOM, &o->ops, .parse = parse_ops, .error = "unknown operation in --ops '%s'"},
    };
    app_parse_args(&(app_cli){.prog = "collectives", .usage = USAGE, .unknown = "unexpected argument '%s'"}, opts,
                   APP_NOPTS(opts), argc, argv);
    static const long def[] = {4, 64, 1024, 16384, 65536};
    app_list_or_default(&o->sizes, def, (int)(sizeof def / sizeof def[0]));
    for (int k = 0; k < o->sizes.n; k++)
        if (o->sizes.v[k] % 4 != 0)
            app_usage_error("collectives", USAGE, "size %ld is not a multiple of 4", o->sizes.v[k]);
    if (o->ops.n == 0) {
        o->ops.n = (int)(sizeof default_ops / sizeof default_ops[0]);
        memcpy(o->ops.v, default_ops, sizeof default_ops);
    }
}

/* Buffers for the largest size: P blocks each (alltoall, gather, ...), 1.5 P blocks for alltoallv. */
static void alloc_buffers(ctx_t *c, const options *o)
{
    long maxsize = 0;
    for (int k = 0; k < o->sizes.n; k++)
        if (o->sizes.v[k] > maxsize)
            maxsize = o->sizes.v[k];
    int want_v = 0;
    for (int k = 0; k < o->ops.n; k++)
        want_v |= o->ops.v[k] == OP_ALLTOALLV;
    const size_t cap = (size_t)c->procs * (size_t)maxsize * (want_v ? 3 : 2) / 2 + 8;
    c->cap = cap;
    if (cap > ((size_t)1 << 31) - 1)
        app_usage_error("collectives", USAGE, "buffers of %zu bytes are too large", cap);
    c->sbuf = app_xcalloc(cap, 1);
    c->rbuf = app_xcalloc(cap, 1);
    c->scounts = app_xcalloc((size_t)c->procs, sizeof(int));
    c->sdispls = app_xcalloc((size_t)c->procs, sizeof(int));
    c->rcounts = app_xcalloc((size_t)c->procs, sizeof(int));
    c->rdispls = app_xcalloc((size_t)c->procs, sizeof(int));
}

/* One operation at c->bytes: a warm-up call, the timed calls, the check and (rank 0) its line
 * with the slowest rank's time and the ranks' mean. The errors found. */
static long measure(ctx_t *c, int op, long iters)
{
    long errors = 0;
    setup(c, op);
    run(c, op); /* warm-up */
    clear_output(c, op);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long it = 0; it < iters; it++)
        run(c, op);
    double t = (MPI_Wtime() - t0) / (double)iters;
    long bad = verify(c, op);
    if (bad) {
        fprintf(stderr, "collectives: rank %d: %s of %ld bytes: %ld wrong bytes/elements\n", c->rank, op_names[op],
                c->bytes, bad);
        errors++;
    }
    double tmax = 0.0, tsum = 0.0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t, &tsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (c->rank == 0) {
        printf("%s,%ld,%d,%ld,%.9e,%.9e\n", op_names[op], c->bytes, c->procs, iters, tmax, tsum / c->procs);
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
    ctx_t c = {.rank = rank, .procs = procs};
    alloc_buffers(&c, &o);
    long errors = 0;

    if (rank == 0) {
        printf("# collectives procs=%d iters=%ld\n", procs, o.iters);
        printf("op,bytes,procs,iters,time_s,avg_rank_time_s\n");
        fflush(stdout);
    }
    for (int oi = 0; oi < o.ops.n; oi++) {
        const int op = o.ops.v[oi];
        const int n_this = op == OP_BARRIER ? 1 : o.sizes.n;
        for (int si = 0; si < n_this; si++) {
            c.bytes = op == OP_BARRIER ? 0 : o.sizes.v[si];
            errors += measure(&c, op, o.iters);
        }
    }

    int status = app_finish(errors, "collectives");
    free(c.sbuf);
    free(c.rbuf);
    free(c.scounts);
    free(c.sdispls);
    free(c.rcounts);
    free(c.rdispls);
    free(o.sizes.v);
    MPI_Finalize();
    return status;
}
