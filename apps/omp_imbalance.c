/* omp_imbalance: an unbalanced OpenMP loop between MPI calls (hybrid MPI + OpenMP, the MPI calls
 * on the main thread: MPI_THREAD_FUNNELED). Each repetition, every rank runs
 *     #pragma omp parallel for num_threads(T) schedule(static, 1)
 * over T iterations, the last one (a worker thread's, not the main thread's) doing F times the
 * work of the others, between two
 * MPI_Barrier-separated MPI_Wtime reads. Inside the loop each thread reads its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID: a real clock, also under a simulator) around its work, so the program
 * knows its critical path: what the longest thread computed.
 *
 * Usage: omp_imbalance [--threads T] [--factor F] [--work N] [--reps R]
 *   defaults: --threads 2 --factor 3 --work 2000000 (multiply-adds of one light iteration)
 *   --reps 5.
 * Output (rank 0, its own loop):
 *   # omp_imbalance threads=<T> factor=<F> work=<N> reps=<R> ranks=<P>
 *   rep,region_s,longest_cpu_s,sum_cpu_s
 *   <one line per repetition: the region's MPI_Wtime length, its longest thread's and all its
 *    threads' CPU time>
 *   # check=ok
 * Under mpisim region_s is what the rank was charged for the region: its critical path
 * (longest_cpu_s) rather than the main thread's share or the sum. */
#define _POSIX_C_SOURCE 200809L
#include "app_args.h"

#include <omp.h>
#include <time.h>

static const char *const USAGE = "omp_imbalance [--threads T] [--factor F] [--work N] [--reps R]";

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double work(long n, double x)
{
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
    return x;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rank = app_world_rank(), size = app_world_size();
    long threads = 2, factor = 3, n = 2000000, reps = 5;
    const app_opt opts[] = {
        {"--threads", APP_OPT_LONG, &threads, .lo = 1, .hi = 256},
        {"--factor", APP_OPT_LONG, &factor, .lo = 1, .hi = 1000},
        {"--work", APP_OPT_LONG, &n, .lo = 1, .hi = 1L << 40},
        {"--reps", APP_OPT_LONG, &reps, .lo = 1, .hi = 100000},
    };
    app_parse_args(&(app_cli){.prog = "omp_imbalance", .usage = USAGE, .unknown = "bad argument '%s'"},
                   opts, APP_NOPTS(opts), argc, argv);
    double *cpu = calloc((size_t)threads, sizeof *cpu);
    double *region = calloc((size_t)reps, sizeof *region), *longest = calloc((size_t)reps, sizeof *longest),
           *sum = calloc((size_t)reps, sizeof *sum);
    double sink = 1.0;
    long bad = 0;
    for (long r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
#pragma omp parallel for num_threads(threads) schedule(static, 1) reduction(+ : sink)
        for (long i = 0; i < threads; i++) {
            double c0 = cpu_s();
            sink += work(i == threads - 1 ? factor * n : n, 1.0 + (double)i);
            cpu[i] = cpu_s() - c0;
        }
        double t1 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        region[r] = t1 - t0;
        for (long i = 0; i < threads; i++) {
            sum[r] += cpu[i];
            if (cpu[i] > longest[r]) longest[r] = cpu[i];
        }
        if (!(sink > 0)) bad++;
    }
    if (rank == 0) {
        printf("# omp_imbalance threads=%ld factor=%ld work=%ld reps=%ld ranks=%d max_threads=%d\n", threads, factor, n,
               reps, size, omp_get_max_threads());
        printf("rep,region_s,longest_cpu_s,sum_cpu_s\n");
        for (long r = 0; r < reps; r++) printf("%ld,%.9e,%.9e,%.9e\n", r, region[r], longest[r], sum[r]);
        printf("# check=%s\n", bad ? "FAIL" : "ok");
    }
    free(cpu);
    free(region);
    free(longest);
    free(sum);
    MPI_Finalize();
    return bad ? 1 : 0;
}
