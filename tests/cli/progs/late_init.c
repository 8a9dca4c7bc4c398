/* A program that reaches MPI_Init late: it waits (real time) until the file argv[1] exists ("-":
 * no wait), and with argv[2] it first changes to that directory (its working directory is then
 * not mpisim's). Then 20 ping-pongs between rank pairs and MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "-"))
        for (int i = 0; access(argv[1], F_OK) != 0; i++) {
            if (i > 30000) return 9;   /* 5 minutes: the test is gone */
            usleep(10000);
        }
    if (argc > 2 && chdir(argv[2]) != 0) return 8;
    MPI_Init(&argc, &argv);
    int rank, size, v = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    for (int i = 0; i < 20 && peer < size; i++) {
        if (rank & 1) {
            MPI_Recv(&v, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&v, 1, MPI_INT, peer, 0, MPI_COMM_WORLD);
        } else {
            MPI_Send(&v, 1, MPI_INT, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(&v, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    printf("rank %d done\n", rank);
    MPI_Finalize();
    return 0;
}
