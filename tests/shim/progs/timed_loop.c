/* Timed loops, as overlap benchmarks write them: short intervals of real work
 * read with MPI_Wtime must read their own length, and a compute phase made of them (OSU's
 * do_compute_cpu: {t1 = MPI_Wtime(); work; t2 = MPI_Wtime(); elapsed += t2 - t1} until the
 * target) must last what it does natively, not be stretched by the clock reads.
 *
 * Usage: timed_loop WORK READS PHASE_US
 *   WORK: iterations of the work kernel per interval (a dependent chain of multiply-adds)
 *   READS: intervals timed one by one (after as many of warm-up)
 * Output (rank 0): "read_median_ns=R phase_ns=P phase_loops=L elapsed_ns=E" */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

static void work(long k)
{
    double x = sink;
    for (long i = 0; i < k; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long k = argc > 1 ? atol(argv[1]) : 200;
    int reads = argc > 2 ? atoi(argv[2]) : 2000;
    double target = (argc > 3 ? atof(argv[3]) : 100.0) * 1e-6;
    double *d = malloc(sizeof *d * (size_t)reads);
    sink = 1.0;
    for (int rep = 0; rep < 2; rep++)   /* a warm-up, then the timed intervals */
        for (int i = 0; i < reads; i++) {
            double t1 = MPI_Wtime();
            work(k);
            double t2 = MPI_Wtime();
            d[i] = t2 - t1;
        }
    qsort(d, (size_t)reads, sizeof *d, cmp_d);
    MPI_Barrier(MPI_COMM_WORLD);
    /* the compute phase */
    double t0 = MPI_Wtime(), elapsed = 0;
    long loops = 0;
    while (elapsed < target) {
        double t1 = MPI_Wtime();
        work(k);
        double t2 = MPI_Wtime();
        elapsed += t2 - t1;
        loops++;
    }
    double t3 = MPI_Wtime();
    if (rank == 0)
        printf("read_median_ns=%.1f phase_ns=%.0f phase_loops=%ld elapsed_ns=%.0f\n", d[reads / 2] * 1e9,
               (t3 - t0) * 1e9, loops, elapsed * 1e9);
    free(d);
    MPI_Finalize();
    return 0;
}
