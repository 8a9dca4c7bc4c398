/* Barriers 0.1 s apart for a long time: a run to be ended from outside (SIGTERM to mpisim). Rank 0
 * says after each barrier how many have passed, so that the test ends it at a point of the
 * program's own, whatever its start-up took. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 600; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            printf("barrier %d\n", i + 1);
            fflush(stdout);
        }
        usleep(100000);
    }
    MPI_Finalize();
    return 0;
}
