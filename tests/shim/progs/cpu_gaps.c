/* Gaps of real work between MPI calls, each timed by the program's own CPU-time clock
 * (CLOCK_THREAD_CPUTIME_ID, which the shim leaves the host's): under --compute cpu a rank must be
 * charged that CPU time, with the hypervisor's steal left out (docs/architecture.md "Steal"),
 * whatever the machine's other guests do. Built with plain mpicc.
 * Usage: cpu_gaps [REPS [WORK]]   (default 20 gaps of 2000000 iterations)
 * Output (rank 0): "cpu_ns=<rank 0's>,<rank 1's>,..." the work's CPU time per rank, in ns. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static long long cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    long work = argc > 2 ? atol(argv[2]) : 2000000L;
    long long own = 0;
    double x = 0;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        long long c0 = cpu_ns();
        for (long i = 0; i < work; i++) x += (double)(i % 7) * 1e-9;
        own += cpu_ns() - c0;
    }
    sink = x;
    long long *all = rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
    MPI_Gather(&own, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("cpu_ns=");
        for (int i = 0; i < size; i++) printf("%s%lld", i ? "," : "", all[i]);
        printf("\n");
        free(all);
    }
    MPI_Finalize();
    return 0;
}
