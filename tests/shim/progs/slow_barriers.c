/* Barriers 0.1 s apart for a long time: a run to be ended from outside (SIGTERM to mpisim). */
#include <mpi.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    for (int i = 0; i < 600; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        usleep(100000);
    }
    MPI_Finalize();
    return 0;
}
