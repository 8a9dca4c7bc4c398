/* Rank 1 returns EXIT_FAILURE on its own right after MPI_Init, without MPI_Finalize; the others
 * wait for it in MPI_Barrier (the run must name it as the program's own exit, not a crash). */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) return EXIT_FAILURE;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
