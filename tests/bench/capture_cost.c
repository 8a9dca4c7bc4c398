/* Benchmark of trace capture: the median wall-clock cost of one cheap MPI call (MPI_Test on a
 * null request: no communication, so what remains is the wrapper, the clock and the trace
 * records). bench_capture.py runs it natively and under `mpisim trace` and prints the
 * difference per call in microseconds. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int batches = argc > 1 ? atoi(argv[1]) : 200, per = 1000;
    double *t = malloc(sizeof *t * (size_t)batches);
    for (int b = 0; b < batches + 10; b++) {
        double t0 = now_us();
        for (int i = 0; i < per; i++) {
            MPI_Request r = MPI_REQUEST_NULL;
            int flag;
            MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        }
        if (b >= 10) t[b - 10] = (now_us() - t0) / per;
    }
    qsort(t, (size_t)batches, sizeof *t, cmp);
    printf("median_call_us=%.4f\n", t[batches / 2]);
    free(t);
    MPI_Finalize();
    return 0;
}
