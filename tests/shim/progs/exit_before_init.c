/* Rank 1 (by Open MPI's environment) never reaches MPI_Init: with "exit" it leaves after 2 s,
 * with "now" at once (before the server's look at /proc can see it), with "hang" it sleeps (10
 * minutes). The others wait for it inside MPI_Init. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (r && atoi(r) == 1) {
        if (argc > 1 && !strcmp(argv[1], "hang")) sleep(600);
        else if (argc > 1 && !strcmp(argv[1], "now")) return 3;
        else sleep(2);
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
