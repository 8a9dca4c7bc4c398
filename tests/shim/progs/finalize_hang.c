/* Stands in for an MPI library whose shutdown never ends (Open MPI's, with a dead peer under
 * --enable-recovery, now and then): this program's own PMPI_Finalize, which the shim's
 * MPI_Finalize calls, never returns. Every rank has finalized for the model, so mpisim ends the
 * launcher after its grace rather than waiting for ever. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int PMPI_Finalize(void)
{
    for (;;) pause();
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d finalizing\n", rank);
    fflush(stdout);
    return MPI_Finalize();
}
