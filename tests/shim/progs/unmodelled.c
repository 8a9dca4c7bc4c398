/* Calls MPI_Comm_create_group, which mpisim does not model yet. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Group g;
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    MPI_Comm c;
    MPI_Comm_create_group(MPI_COMM_WORLD, g, 7, &c);
    int n = 0;
    MPI_Comm_size(c, &n);
    if (rank == 0) printf("create_group=%s\n", n == size ? "ok" : "wrong");
    MPI_Comm_free(&c);
    MPI_Group_free(&g);
    MPI_Finalize();
    return n == size ? 0 : 1;
}
