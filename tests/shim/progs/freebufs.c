/* freebufs: ranks 0 and 1 exchange messages into receive buffers they allocate, use once and free,
 * with an allocation between them whose size changes from run to run (read from /dev/urandom), as
 * the real MPI's own allocations change with its message timing. In one run a new buffer lands on
 * memory a freed one had used, in another elsewhere: what the host model charges for a new
 * buffer (first touches, registration) must not depend on that (cosim_runs.py buffer_identities).
 * Prints nothing but "freebufs: ok" (rank 0); the report's virtual times are the result. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char noise[64];
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(noise, 1, sizeof noise, f) != sizeof noise) memset(noise, 1, sizeof noise);
    if (f) fclose(f);
    void *keep[64];
    static const int sizes[] = {1024, 8192, 32768, 65536, 100000};
    for (int i = 0; i < 64; i++) {
        int n = sizes[i % 5];
        unsigned char *b = malloc((size_t)n);
        if (rank == 0) memset(b, i, (size_t)n);
        if (rank == 0) {
            MPI_Send(b, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(b, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(b, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        free(b);
        /* sometimes takes the memory just freed, sometimes not */
        keep[i] = malloc(noise[i] & 1 ? 16 : (size_t)n);
    }
    for (int i = 0; i < 64; i++) free(keep[i]);
    if (rank == 0) printf("freebufs: ok\n");
    MPI_Finalize();
    return 0;
}
