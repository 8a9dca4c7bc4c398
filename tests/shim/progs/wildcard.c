/* Rank 1 burns CPU (late in virtual time, early in real time) then sends; rank 2 sleeps (wall
 * time, which --compute cpu does not charge: early in virtual time, late in real time) then
 * sends; rank 0 receives from MPI_ANY_SOURCE twice. The model must give rank 2 first. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

static volatile double sink;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int v = rank * 10;
    if (rank == 0) {
        MPI_Status st;
        int a, b;
        MPI_Recv(&a, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        int first = st.MPI_SOURCE;
        MPI_Recv(&b, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        printf("first=%d second=%d values=%d,%d\n", first, st.MPI_SOURCE, a, b);
        if (a != first * 10 || b != st.MPI_SOURCE * 10) return 1;
    } else if (rank == 1) {
        double x = 0;
        for (long i = 0; i < 30000000L; i++) x += (double)(i & 3);
        sink = x;
        MPI_Send(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
    } else if (rank == 2) {
        usleep(500000);
        MPI_Send(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
