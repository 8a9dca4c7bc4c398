/* Calls MPI_Intercomm_create, which mpisim does not model yet (intercommunicators). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* each rank alone on its side, its partner on the other (run with 2 ranks) */
    MPI_Comm inter;
    MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, (rank + 1) % size, 7, &inter);
    int remote = 0;
    MPI_Comm_remote_size(inter, &remote);
    if (rank == 0) printf("intercomm=%s\n", remote == 1 ? "ok" : "wrong");
    MPI_Comm_free(&inter);
    MPI_Finalize();
    return remote == 1 ? 0 : 1;
}
