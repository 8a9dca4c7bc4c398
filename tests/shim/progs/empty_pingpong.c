/* Blocking 1-byte ping-pongs with nothing between the MPI calls: whatever computation the
 * co-simulation charges this program is the measurement's own overhead.
 * Usage: empty_pingpong [ROUND_TRIPS] (default 2000); needs 2 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int trips = argc > 1 ? atoi(argv[1]) : 2000;
    char b = 0;
    if (size >= 2 && rank < 2)
        for (int i = 0; i < trips; i++) {
            if (rank == 0) {
                MPI_Send(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
            }
        }
    MPI_Finalize();
    return 0;
}
