/* OpenMP regions beyond a plain parallel loop, each between two MPI_Wtime reads
 * on the main thread, each with the critical path the program measures itself (its threads' CPU
 * time, CLOCK_THREAD_CPUTIME_ID):
 *
 *   nested   two threads; thread 1 forks a nested region of two threads, one of which does 3x
 *            the work: the path is max(thread 0's work, the nested region's longest thread)
 *   barrier  two threads, an explicit barrier between two phases with the imbalance swapped:
 *            the path is the longest first phase plus the longest second (each thread computes
 *            4 units; the path is 6)
 *   pthread  the main thread creates two pthreads (one 3x the other's work) and joins them
 *   mpi      (MPI_THREAD_MULTIPLE) in a region of two threads each thread sends a message to the
 *            same thread of the next rank and receives one; then a region of pure work (the
 *            threads that called MPI wait idle between regions without holding time back)
 *
 * Usage: omp_regions WORK   (multiply-adds of one unit, default 1000000)
 * Output (rank 0): "<case> region_s=R path_s=P" per case. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long unit;
static volatile double sink;

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* k units of work; returns the calling thread's CPU time for them */
static double work(long k)
{
    double c0 = cpu_s(), x = sink + 1.0;
    for (long i = 0; i < k * unit; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
    return cpu_s() - c0;
}

static double dmax(double a, double b) { return a > b ? a : b; }

static void *pwork(void *p)
{
    double *d = p;
    *d = work((long)*d);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unit = argc > 1 ? atol(argv[1]) : 1000000;
    omp_set_max_active_levels(2);
    double t0, t1, path;

    /* nested */
    double outer0 = 0, inner[2] = {0, 0};
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0) {
            outer0 = work(1);
        } else {
#pragma omp parallel num_threads(2)
            inner[omp_get_thread_num()] = work(omp_get_thread_num() == 1 ? 3 : 1);
        }
    }
    t1 = MPI_Wtime();
    path = dmax(outer0, dmax(inner[0], inner[1]));
    if (rank == 0) printf("nested region_s=%.9f path_s=%.9f\n", t1 - t0, path);

    /* barrier */
    double p1[2], p2[2];
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
        p1[me] = work(me == 0 ? 1 : 3);
#pragma omp barrier
        p2[me] = work(me == 0 ? 3 : 1);
    }
    t1 = MPI_Wtime();
    path = dmax(p1[0], p1[1]) + dmax(p2[0], p2[1]);
    if (rank == 0) printf("barrier region_s=%.9f path_s=%.9f\n", t1 - t0, path);

    /* pthread */
    double d[2] = {1, 3};
    pthread_t th[2];
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, pwork, &d[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    t1 = MPI_Wtime();
    path = dmax(d[0], d[1]);
    if (rank == 0) printf("pthread region_s=%.9f path_s=%.9f\n", t1 - t0, path);

    /* mpi: the threads of a region talk to the next rank's; then pure work */
    int ok = provided == MPI_THREAD_MULTIPLE;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (ok) {
#pragma omp parallel num_threads(2)
        {
            int me = omp_get_thread_num(), out = rank * 10 + me, in = -1;
            MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, me, &in, 1, MPI_INT, (rank + size - 1) % size, me,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (in != ((rank + size - 1) % size) * 10 + me) ok = 0;
        }
    }
    double w[2];
#pragma omp parallel num_threads(2)
    w[omp_get_thread_num()] = work(omp_get_thread_num() == 0 ? 1 : 2);
    MPI_Barrier(MPI_COMM_WORLD);
    t1 = MPI_Wtime();
    if (rank == 0) printf("mpi region_s=%.9f path_s=%.9f ok=%d\n", t1 - t0, dmax(w[0], w[1]), ok);
    MPI_Finalize();
    return ok ? 0 : 1;
}
