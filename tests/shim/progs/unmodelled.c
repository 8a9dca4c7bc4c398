/* Calls MPI_Open_port and MPI_Close_port, which mpisim does not model (dynamic processes). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char port[MPI_MAX_PORT_NAME] = "";
    int rc = MPI_Open_port(MPI_INFO_NULL, port);
    if (rc == MPI_SUCCESS) MPI_Close_port(port);
    if (rank == 0) printf("port=%s\n", rc == MPI_SUCCESS && port[0] ? "ok" : "wrong");
    MPI_Finalize();
    return rc == MPI_SUCCESS ? 0 : 1;
}
