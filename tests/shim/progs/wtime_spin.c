/* Waits on the clock, as timer calibrations and timed loops do: under --compute none the loop
 * must still end (each MPI_Wtime that finds the clock unmoved advances it by shim.wtime_stall). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), t;
    long polls = 0;
    do {
        t = MPI_Wtime();
        polls++;
    } while (t - t0 < 1e-3);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("waited=%.9f polls=%ld\n", t - t0, polls);
    MPI_Finalize();
    return 0;
}
