#define _DEFAULT_SOURCE
/* Computation after switched-out MPI calls must be charged in full (the cold return
 * path): rank 0 computes a varying, growing amount between blocking calls; in the second half of
 * the run rank 1 sleeps (off the CPU, charged nothing) before every other exchange, so that
 * rank 0's calls there are switched out and the gaps that follow them are both switched and the
 * heaviest of the run: a compensation that mistook the growth for a cold-cache penalty would
 * charge rank 0 less than the same work without the sleeps.
 * Usage: growing_work ITERS UNITS SLEEP_US (SLEEP_US 0: never sleeps); needs 2 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile double sink;

static void work(long units)
{
    double x = 0;
    for (long i = 0; i < units; i++) x += (double)(i & 7) * 1e-9;
    sink = x;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 400;
    long units = argc > 2 ? atol(argv[2]) : 20000;
    int sleep_us = argc > 3 ? atoi(argv[3]) : 0;
    unsigned lcg = 12345;
    char a = 0, b = 0;
    for (int k = 0; k < iters && size >= 2 && rank < 2; k++) {
        lcg = lcg * 1103515245u + 12345u;
        double jitter = (double)((lcg >> 16) & 1023) / 1024.0;        /* the same sequence every run */
        long w = (long)((double)units * (1.0 + 3.0 * k / iters) * (1.0 + 0.5 * jitter));
        if (rank == 0) work(w);
        if (rank == 1 && sleep_us > 0 && k >= iters / 2 && (k & 1)) usleep((useconds_t)sleep_us);
        MPI_Sendrecv(&a, 1, MPI_CHAR, 1 - rank, 0, &b, 1, MPI_CHAR, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
