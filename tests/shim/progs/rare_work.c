#define _DEFAULT_SOURCE
/* Rare real work between call sites that otherwise do nothing: the stall rule of "Repeatable
 * small gaps" (docs/architecture.md) takes an isolated interval over shim.gap_noise_max in such a
 * pair for a stall of the machine and charges it the floor, so this program's work is dropped
 * and the report must say so. Usage: rare_work ITERS EVERY UNITS: rank 0 burns UNITS loop steps
 * between a send and a receive every EVERY-th iteration, nothing in the others; needs 2 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 2000, every = argc > 2 ? atoi(argv[2]) : 100;
    long units = argc > 3 ? atol(argv[3]) : 40000;
    char a = 0, b = 0;
    for (int k = 0; k < iters && size >= 2 && rank < 2; k++) {
        if (rank == 0) {
            MPI_Send(&a, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            if (k % every == every - 1) {
                double x = 0;
                for (long i = 0; i < units; i++) x += (double)(i & 7) * 1e-9;
                sink = x;
            }
            MPI_Recv(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&a, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
