/* fan: the fan-in / fan-out application core of seed 001 (Wyckoff & Chen).
 *
 *   fan-in:  every rank other than 0 sends S bytes to rank 0 (blocking MPI_Send); rank 0 has
 *            posted one MPI_Irecv per sender and waits for all of them (MPI_Waitall).
 *   fan-out: rank 0 sends S bytes to every other rank (MPI_Isend to ranks 1..P-1 in order, then
 *            MPI_Waitall); every other rank receives with a blocking MPI_Recv.
 *   --fanout bcast: rank 0 sends the same S bytes to every rank with one MPI_Bcast (seed 001's
 *            fan-out, which conventional GigE ran on its switches' multicast hardware).
 *   Each repetition of each operation starts after an MPI_Barrier. Every rank records MPI_Wtime
 *   right after the barrier (start) and when its own part is complete (end).
 *   duration_s = max over ranks of end - min over ranks of start (fan-out: rank 0's start): the
 *   time until the last data is delivered (it assumes MPI_Wtime is one clock for all ranks, which holds under the
 *   simulator and for ranks on one host); root_s = end - start on rank 0 alone.
 *
 * Usage: fan [--size S] [--reps K] [--op in|out|both] [--fanout isend|bcast]
 *        (defaults: 2048, 3, both, isend)
 *
 * Output (rank 0):
 *   # fan procs=<P> bytes=<S> reps=<K>
 *   op,bytes,procs,rep,duration_s,root_s
 *   fanin,2048,4,0,<s>,<s>
 *   ...
 *   fanout,2048,4,0,<s>,<s>
 *   ...
 *   # check=ok
 * Every received payload is checked against its deterministic pattern after the timed part.
 */
#include "app_args.h"

static const char *const USAGE = "fan [--size S] [--reps K] [--op in|out|both] [--fanout isend|bcast]";

enum { TAG_FANIN = 301, TAG_FANOUT = 302 };

static uint64_t msg_seed(int op, long rep, int peer) { return ((uint64_t)op << 40) ^ ((uint64_t)rep << 20) ^ (uint64_t)peer; }

/* Reduce (start, end) to rank 0 and print one CSV row. A fan-out counts from the root's start
 * (no data moves before it; ranks leave the barrier at different times). */
static void report(const char *op, long size, int procs, long rep, double start, double end)
{
    double smin = 0.0, emax = 0.0;
    MPI_Reduce(&start, &smin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&end, &emax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (!strcmp(op, "fanout")) smin = start;   /* rank 0's own, where it is printed */
    if (app_world_rank() == 0) {
        printf("%s,%ld,%d,%ld,%.9e,%.9e\n", op, size, procs, rep, emax - smin, end - start);
        fflush(stdout);
    }
}

static const char *const OPS[] = {"in", "out", "both", NULL};
static const char *const FANOUTS[] = {"isend", "bcast", NULL};

/* Fan-in: every rank sends its message to rank 0 at once, rank 0 checks them. The errors found. */
static long fan_in(unsigned char *buf, MPI_Request *reqs, long size, long reps, int rank, int procs)
{
    const size_t sz = (size_t)size;
    long errors = 0;
    for (long rep = 0; rep < reps; rep++) {
        if (rank == 0)
            memset(buf, 0, sz * (size_t)procs);
        else
            app_fill_pattern(buf, sz, msg_seed(1, rep, rank));
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        if (rank == 0) {
            for (int r = 1; r < procs; r++)
                MPI_Irecv(buf + sz * (size_t)r, (int)size, MPI_BYTE, r, TAG_FANIN, MPI_COMM_WORLD, &reqs[r - 1]);
            if (procs > 1)
                MPI_Waitall(procs - 1, reqs, MPI_STATUSES_IGNORE);
        } else {
            MPI_Send(buf, (int)size, MPI_BYTE, 0, TAG_FANIN, MPI_COMM_WORLD);
        }
        double end = MPI_Wtime();
        if (rank == 0) {
            for (int r = 1; r < procs; r++) {
                size_t bad = app_check_pattern(buf + sz * (size_t)r, sz, msg_seed(1, rep, r));
                if (bad) {
                    fprintf(stderr, "fan: fan-in rep %ld: %zu bytes wrong in the message from rank %d\n", rep,
                            bad, r);
                    errors++;
                }
            }
        }
        report("fanin", size, procs, rep, start, end);
    }
    return errors;
}

/* Fan-out: rank 0 sends each rank its message (or broadcasts one), every rank checks its own. */
static long fan_out(unsigned char *buf, MPI_Request *reqs, long size, long reps, int bcast, int rank, int procs)
{
    const size_t sz = (size_t)size;
    long errors = 0;
    for (long rep = 0; rep < reps; rep++) {
        if (rank == 0) {
            for (int r = 1; r < procs; r++)
                app_fill_pattern(buf + sz * (size_t)r, sz, msg_seed(2, rep, bcast ? 0 : r));
        } else {
            memset(buf, 0, sz);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        if (bcast) {   /* one buffer for all: rank 0's slot 1 (any slot holds the same pattern) */
            MPI_Bcast(rank == 0 ? buf + (procs > 1 ? sz : 0) : buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
        } else if (rank == 0) {
            for (int r = 1; r < procs; r++)
                MPI_Isend(buf + sz * (size_t)r, (int)size, MPI_BYTE, r, TAG_FANOUT, MPI_COMM_WORLD, &reqs[r - 1]);
            if (procs > 1)
                MPI_Waitall(procs - 1, reqs, MPI_STATUSES_IGNORE);
        } else {
            MPI_Recv(buf, (int)size, MPI_BYTE, 0, TAG_FANOUT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        double end = MPI_Wtime();
        if (rank != 0) {
            size_t bad = app_check_pattern(buf, sz, msg_seed(2, rep, bcast ? 0 : rank));
            if (bad) {
                fprintf(stderr, "fan: fan-out rep %ld: rank %d received %zu wrong bytes\n", rep, rank, bad);
                errors++;
            }
        }
        report("fanout", size, procs, rep, start, end);
    }
    return errors;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const int rank = app_world_rank();
    const int procs = app_world_size();

    long size = 2048, reps = 3;
    int op = 2, bcast = 0;   /* both; isend */
    const app_opt opts[] = {
        {"--size", APP_OPT_LONG, &size, .lo = 0, .hi = 1L << 30, .error = "--size needs a size in [0, 1G]"},
        {"--reps", APP_OPT_LONG, &reps, .lo = 1, .hi = 1000000, .error = "--reps needs an integer >= 1"},
        {"--op", APP_OPT_CHOICE, &op, .choices = OPS, .error = "--op needs in, out or both"},
        {"--fanout", APP_OPT_CHOICE, &bcast, .choices = FANOUTS, .error = "--fanout needs isend or bcast"},
    };
    app_parse_args(&(app_cli){.prog = "fan", .usage = USAGE, .unknown = "unexpected argument '%s'"}, opts,
                   APP_NOPTS(opts), argc, argv);

    const size_t sz = (size_t)size;
    long errors = 0;
    /* rank 0 holds one slot per peer; the others one buffer */
    unsigned char *buf = app_xmalloc(rank == 0 ? sz * (size_t)procs : sz);
    MPI_Request *reqs = app_xmalloc(sizeof(MPI_Request) * (size_t)procs);

    if (rank == 0) {
        printf("# fan procs=%d bytes=%ld reps=%ld\n", procs, size, reps);
        printf("op,bytes,procs,rep,duration_s,root_s\n");
        fflush(stdout);
    }
    if (op != 1)
        errors += fan_in(buf, reqs, size, reps, rank, procs);
    if (op != 0)
        errors += fan_out(buf, reqs, size, reps, bcast, rank, procs);

    int status = app_finish(errors, "fan");
    free(buf);
    free(reqs);
    MPI_Finalize();
    return status;
}
