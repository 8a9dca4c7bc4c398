/* Every rank increments a counter in rank 0's window K times under an exclusive lock (get, add,
 * put, unlock: the lock makes each increment atomic), computing a little between. The counter
 * must end at K x ranks; rank 0 prints it. Under mpisim the model grants the locks in virtual
 * time and the real MPI takes them after it: the two orders must never wait on each other. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, k = argc > 1 ? atoi(argv[1]) : 10;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long *base;
    MPI_Win win;
    MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    *base = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    volatile double x = 1;
    for (int i = 0; i < k; i++) {
        long v = 0;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        MPI_Win_flush(0, win);
        v++;
        MPI_Put(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        MPI_Win_unlock(0, win);
        for (int j = 0; j < 1000 * (rank + 1); j++) x = x * 1.0000001;   /* unequal work */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        printf("counter=%ld expected=%d %s\n", *base, k * size, *base == (long)k * size ? "check=ok" : "check=FAIL");
        MPI_Win_unlock(0, win);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
