/* Rank 2 blocks in MPI_Recv from rank 0; rank 0 kills it (SIGKILL, by pid: same host), then sends
 * to it anyway and ping-pongs with rank 1 before both finalize. The dead rank must not be resumed
 * by the message meant for it nor hold the others back. With the argument "linger" rank 0 waits
 * 60 s (real time) after the kill, so that a launcher that ends the job when a rank dies surely
 * does so before the others could finalize (1 s was a race on a loaded machine). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, pid = (int)getpid(), pids[3] = {0, 0, 0}, v = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 2) MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);   /* killed here */
    if (rank == 0) {
        sleep(1);   /* real time (not charged under --compute none): rank 2 is blocked by now */
        kill(pids[2], SIGKILL);
        sleep(argc > 1 && !strcmp(argv[1], "linger") ? 60 : 1);
        MPI_Send(&v, 1, MPI_INT, 2, 5, MPI_COMM_WORLD);   /* eager: the model completes it */
    }
    for (int i = 0; i < 20 && rank < 2; i++) {
        if (rank == 0) {
            MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        }
    }
    if (rank < 2) printf("rank %d done\n", rank);
    MPI_Finalize();
    return 0;
}
