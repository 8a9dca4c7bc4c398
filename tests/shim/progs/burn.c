/* Each rank burns the same fixed amount of CPU work between MPI_Init and a barrier (all ranks at
 * once: nothing in the real MPI or the model orders them there), then rank 0 sends
 * 1 MiB to rank 1. Built by the test with plain mpicc: it knows nothing of mpisim.
 * Usage: burn [WORK [CPU]]: with CPU, every rank runs on that one CPU (they take turns on it). */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile double sink;

int main(int argc, char **argv)
{
    if (argc > 2) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(atoi(argv[2]), &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) {
            perror("burn: sched_setaffinity");
            return 1;
        }
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long work = argc > 1 ? atol(argv[1]) : 20000000L;
    double x = 0;
    for (long i = 0; i < work; i++) x += (double)(i % 7) * 1e-9;
    sink = x;
    MPI_Barrier(MPI_COMM_WORLD);
    const int n = 1 << 20;
    char *buf = malloc(n);
    memset(buf, rank, n);
    double t0 = MPI_Wtime();
    if (rank == 0 && size > 1) MPI_Send(buf, n, MPI_CHAR, 1, 5, MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Recv(buf, n, MPI_CHAR, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (buf[12345] != 0) {
            fprintf(stderr, "burn: wrong data\n");
            return 1;
        }
        printf("transfer_s=%.12e\n", MPI_Wtime() - t0);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
