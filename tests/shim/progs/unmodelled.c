/* Calls MPI_Alltoall, which the first cut of the model does not time. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int in[64], out[64];
    for (int i = 0; i < size; i++) in[i] = rank * 100 + i;
    MPI_Alltoall(in, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD);
    int ok = 1;
    for (int i = 0; i < size; i++) ok &= out[i] == i * 100 + rank;
    if (rank == 0) printf("alltoall=%s\n", ok ? "ok" : "wrong");
    MPI_Finalize();
    return ok ? 0 : 1;
}
