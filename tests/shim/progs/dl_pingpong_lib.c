/* A library the dlclose test loads, calls MPI from and unloads (its call sites go away). */
#include <mpi.h>

void lib_pingpong(int rounds)
{
    int rank;
    char b = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < rounds; i++) {
        if (rank == 0) {
            MPI_Send(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
}
