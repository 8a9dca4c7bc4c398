/* Exits with argv[1] after MPI_Finalize (rank 0; the others 0); argv[2] = "abort": rank 0 calls
 * MPI_Abort(MPI_COMM_WORLD, 9) instead; "kill-after-finalize": rank 1 is killed after
 * MPI_Finalize (the launcher then fails though the model's run was complete). For the exit-code
 * table's tests. */
#include <mpi.h>
#include <signal.h>
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
    if (argc > 2 && !strcmp(argv[2], "kill-after-finalize") && rank == 1) raise(SIGKILL);
    return rank == 0 && argc > 1 ? atoi(argv[1]) : 0;
}
