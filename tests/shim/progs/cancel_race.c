/* A receive cancelled early in virtual time whose message the real MPI has already delivered
 * (the sender runs ahead in real time but sends late in virtual time): under mpisim the cancel
 * succeeds, as the model says, and the message goes to the next receive for its source and tag.
 * Run with --compute cpu and a large shim.cpu_factor; natively the outcome would differ. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <time.h>


static volatile double sink;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        int v = -1, w = -1, flag = 0;
        MPI_Request rq;
        MPI_Status st;
        MPI_Irecv(&v, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, &rq);
        struct timespec nap = {0, 300000000};
        nanosleep(&nap, NULL);   /* real time passes, virtual time does not (no CPU used) */
        MPI_Cancel(&rq);
        MPI_Wait(&rq, &st);
        MPI_Test_cancelled(&st, &flag);
        MPI_Recv(&w, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, &st);
        printf("race: cancelled=%d value=%d source=%d tag=%d\n", flag, w, st.MPI_SOURCE, st.MPI_TAG);
    } else if (rank == 1) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        double x = 0;
        do {   /* a little CPU: much virtual time under a large cpu_factor */
            for (int i = 0; i < 100000; i++) x += i * 1e-9;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        } while ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec) < 2e6);
        sink = x;
        int x9 = 909;
        MPI_Send(&x9, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
