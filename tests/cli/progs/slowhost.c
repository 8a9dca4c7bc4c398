/* A stand-in for matmul in `mpisim study speedup --program` (tests/cli/test_exit_codes.py): it
 * takes matmul's arguments (N --repeat R [--distribute D]) and prints matmul's result line as if
 * rank 0 computed at 184 ns per multiply-add alone and at twice that when other ranks run beside
 * it (a slow spell of the host while they run). Its one-rank N = 144 run is the study's
 * calibration (factor 1), so every run of a P > 1 point is slow: the study must say so (exit 9). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    long n = argc > 1 ? atol(argv[1]) : 32;
    long rows0 = n / size + (n % size ? 1 : 0);
    double compute = (double)rows0 * n * n * 184e-9 * (size > 1 ? 2 : 1);
    if (rank == 0) printf("N=%ld P=%d time_min_s=%.12e compute_s=%.12e check=ok\n", n, size, compute, compute);
    MPI_Finalize();
    return 0;
}
