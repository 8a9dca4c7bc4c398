/* Every rank computes the same fixed amount right after MPI_Init, all at once (nothing in the
 * real MPI orders them), then meets the others in a barrier: the compute gate's test.
 * Usage: init_burn [UNITS] */
#include <mpi.h>
#include <stdlib.h>

static volatile double sink;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long units = argc > 1 ? atol(argv[1]) : 3000000L;
    double x = 0;
    for (long i = 0; i < units; i++) x += (double)(i % 7) * 1e-9;
    sink = x;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
