/* Benchmark of the shim: wall-clock cost of one blocking 1-byte ping-pong round trip between
 * ranks 0 and 1, measured with the real clock (MPI_Wtime is virtual under the shim). Prints the
 * median over many round trips in microseconds. bench_shim.py runs it natively and under
 * `mpisim run` and reports the difference: the shim's (and model server's) cost per round trip. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench_util.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    double *t = malloc(sizeof *t * (size_t)iters);
    char b = 0;
    for (int i = 0; i < iters + 100; i++) {
        double t0 = now_us();
        if (rank == 0) {
            MPI_Send(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
        if (i >= 100) t[i - 100] = now_us() - t0;
    }
    if (rank == 0) {
        printf("median_rtt_us=%.3f\n", median(t, (size_t)iters));
    }
    free(t);
    MPI_Finalize();
    return 0;
}
