/* A stand-in for matmul in `mpisim study speedup --program` (tests/cli/test_exit_codes.py): it
 * takes matmul's arguments (N --repeat R [--distribute D]) and prints matmul's result line with a
 * time that falls as 1 / P^2, the superlinear speedup a study must refuse to pass as ok (exit 8).
 * Its ranks meet in one barrier so that the run is an ordinary co-simulated one. */
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
    int n = argc > 1 ? atoi(argv[1]) : 32;
    double t = 1e-3 * n / ((double)size * size);
    if (rank == 0) printf("N=%d P=%d time_min_s=%.12e compute_s=%.12e check=ok\n", n, size, t, t);
    MPI_Finalize();
    return 0;
}
