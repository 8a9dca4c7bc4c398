/* MPI_Pcontrol regions around a ping-pong (mpisim timeline / report tests). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char buf[4096];
    memset(buf, rank, sizeof buf);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Pcontrol(1);
    for (int i = 0; i < 5 && size > 1; i++) {
        if (rank == 0) {
            MPI_Send(buf, sizeof buf, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, sizeof buf, MPI_CHAR, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, sizeof buf, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, sizeof buf, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
        }
    }
    MPI_Pcontrol(0);
    double t1 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d region_s %.12e\n", rank, t1 - t0);
    MPI_Finalize();
    return 0;
}
