/* mt_pingpong: multi-threaded ping-pong latency (the usual MPI_THREAD_MULTIPLE benchmark, as
 * OSU's osu_latency_mt does it). Ranks 0 and 1 each run T threads (pthreads); thread t of rank 0
 * and thread t of rank 1 ping-pong over their own duplicate of MPI_COMM_WORLD, all pairs at once;
 * the threads of a rank meet at a pthread barrier before timing. Each thread times its own
 * round trips with MPI_Wtime. The run is made first with one thread, then with T, so that one
 * run gives the single-thread latency beside the per-thread one.
 *
 * Usage: mt_pingpong [--threads T] [--size BYTES] [--iters N] [--warmup W]
 *   defaults: --threads 2 --size 8 --iters 1000 --warmup 100; needs 2 ranks (others idle) and
 *   MPI_THREAD_MULTIPLE (it says so and exits 1 without it).
 * Output (rank 0):
 *   # mt_pingpong threads=<T> size=<S> iters=<N> provided=<MPI_THREAD_MULTIPLE|...>
 *   threads,thread,bytes,latency_s        (half round trip of that thread's pair)
 *   1,0,<S>,<t>
 *   <T>,<i>,<S>,<t>                        (one line per thread)
 *   # check=ok
 */
#define _POSIX_C_SOURCE 200809L   /* pthread barriers under -std=c11 */
#include "app_args.h"

#include <pthread.h>

static const char *const USAGE = "mt_pingpong [--threads T] [--size BYTES] [--iters N] [--warmup W]";

typedef struct job {
    int thread, rank;
    MPI_Comm comm;
    long size, iters, warmup;
    char *buf;
    pthread_barrier_t *bar;
    double latency;
    long errors;
} job;

static void *pingpong(void *p)
{
    job *j = p;
    int peer = 1 - j->rank;
    for (long i = 0; i < j->warmup + j->iters; i++) {
        if (i == j->warmup) {
            pthread_barrier_wait(j->bar);   /* the threads of a rank start timing together */
            MPI_Barrier(j->comm);           /* ... and with their peer */
            j->latency = MPI_Wtime();
        }
        if (j->rank == 0) {
            j->buf[0] = (char)(i + j->thread);
            MPI_Send(j->buf, (int)j->size, MPI_CHAR, peer, 1, j->comm);
            MPI_Recv(j->buf, (int)j->size, MPI_CHAR, peer, 1, j->comm, MPI_STATUS_IGNORE);
            if (j->buf[0] != (char)(i + j->thread + 1)) j->errors++;
        } else {
            MPI_Recv(j->buf, (int)j->size, MPI_CHAR, peer, 1, j->comm, MPI_STATUS_IGNORE);
            j->buf[0]++;
            MPI_Send(j->buf, (int)j->size, MPI_CHAR, peer, 1, j->comm);
        }
    }
    j->latency = (MPI_Wtime() - j->latency) / (2.0 * (double)j->iters);
    return NULL;
}

/* T threads of this rank ping-pong at once; latencies into lat[0..T) (rank 0's view). */
static long run(int nthreads, int rank, long size, long iters, long warmup, double *lat)
{
    job *jobs = calloc((size_t)nthreads, sizeof *jobs);
    pthread_t *th = calloc((size_t)nthreads, sizeof *th);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    for (int t = 0; t < nthreads; t++) {
        job *j = &jobs[t];
        j->thread = t;
        j->rank = rank;
        j->size = size;
        j->iters = iters;
        j->warmup = warmup;
        j->bar = &bar;
        j->buf = calloc((size_t)(size > 0 ? size : 1), 1);
        MPI_Comm_dup(MPI_COMM_WORLD, &j->comm);   /* from this thread, one after another */
    }
    for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, pingpong, &jobs[t]);
    long errors = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        lat[t] = jobs[t].latency;
        errors += jobs[t].errors;
        MPI_Comm_free(&jobs[t].comm);
        free(jobs[t].buf);
    }
    pthread_barrier_destroy(&bar);
    free(jobs);
    free(th);
    return errors;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = app_world_rank(), size = app_world_size();
    long threads = 2, bytes = 8, iters = 1000, warmup = 100;
    const app_opt opts[] = {
        {"--threads", APP_OPT_LONG, &threads, .lo = 1, .hi = 64},
        {"--size", APP_OPT_LONG, &bytes, .lo = 0, .hi = 1L << 26},
        {"--iters", APP_OPT_LONG, &iters, .lo = 1, .hi = 100000000},
        {"--warmup", APP_OPT_LONG, &warmup, .lo = 0, .hi = 100000000},
    };
    app_parse_args(&(app_cli){.prog = "mt_pingpong", .usage = USAGE, .unknown = "bad argument '%s'"},
                   opts, APP_NOPTS(opts), argc, argv);
    static const char *const names[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED",
                                        "MPI_THREAD_MULTIPLE"};
    const char *pname = provided >= 0 && provided <= 3 ? names[provided] : "?";
    if (provided != MPI_THREAD_MULTIPLE || size < 2) {
        if (rank == 0)
            fprintf(stderr, "mt_pingpong: needs MPI_THREAD_MULTIPLE (got %s) and 2 ranks (got %d)\n", pname, size);
        MPI_Finalize();
        return 1;
    }
    double one[1], *many = calloc((size_t)threads, sizeof *many);
    long errors = 0;
    if (rank < 2) {
        errors += run(1, rank, bytes, iters, warmup, one);
        errors += run((int)threads, rank, bytes, iters, warmup, many);
    }
    long all = 0;
    MPI_Reduce(&errors, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# mt_pingpong threads=%ld size=%ld iters=%ld provided=%s\n", threads, bytes, iters, pname);
        printf("threads,thread,bytes,latency_s\n");
        printf("1,0,%ld,%.9e\n", bytes, one[0]);
        for (long t = 0; t < threads; t++) printf("%ld,%ld,%ld,%.9e\n", threads, t, bytes, many[t]);
        if (all) fprintf(stderr, "mt_pingpong: %ld wrong echoes\n", all);
        printf("# check=%s\n", all ? "FAIL" : "ok");
    }
    free(many);
    MPI_Finalize();
    return all ? 1 : 0;
}
