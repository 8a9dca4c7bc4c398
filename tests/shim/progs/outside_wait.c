/* Ranks that wait for each other outside MPI: right after MPI_Init each rank creates its file in
 * DIR and spins until the other rank's file exists (no MPI call in between: a rank spinning
 * outside MPI does not drive the real MPI's progress, which a collective just before would need). Under a compute gate of one slot the rank holding
 * it spins for the other, which waits for the slot: the gate must not deadlock it.
 * Usage: outside_wait DIR; needs 2 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || size != 2) {
        if (rank == 0) fprintf(stderr, "usage: outside_wait DIR (2 ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char mine[4096], theirs[4096];
    snprintf(mine, sizeof mine, "%s/rank%d", argv[1], rank);
    snprintf(theirs, sizeof theirs, "%s/rank%d", argv[1], 1 - rank);
    FILE *f = fopen(mine, "w");
    if (f) fclose(f);
    while (access(theirs, F_OK) != 0) { /* spin: the other rank's file */ }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("outside_wait=ok\n");
    MPI_Finalize();
    return 0;
}
