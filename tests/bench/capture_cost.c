/* Benchmark of trace capture: the median wall-clock cost of one cheap MPI call (MPI_Test on a
 * null request: no communication, so what remains is the wrapper, the clock and the trace
 * records). bench_capture.py runs it natively and under `mpisim trace` and prints the
 * difference per call in microseconds. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench_util.h"

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
    printf("median_call_us=%.4f\n", median(t, (size_t)batches));
    free(t);
    MPI_Finalize();
    return 0;
}
