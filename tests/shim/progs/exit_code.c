/* Exits with argv[1] after MPI_Finalize (rank 0; the others 0); argv[2] = "abort": rank 0 calls
 * MPI_Abort(MPI_COMM_WORLD, 9) instead. For the exit-code table's tests. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 2 && !strcmp(argv[2], "abort") && rank == 0) MPI_Abort(MPI_COMM_WORLD, 9);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return rank == 0 && argc > 1 ? atoi(argv[1]) : 0;
}
