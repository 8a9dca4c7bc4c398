/* Programs that wait inside the real MPI while nothing can move (issue 11, the stall watchdog,
 * shim.stall_timeout). Each case is a real bug the program would hang on without mpisim too;
 * under mpisim the run must stop with every rank's call, peer, tag and call site.
 *   grequest  rank 0 waits for a generalized request nobody completes (a wait in the real MPI
 *             the model knows nothing of); rank 1 waits in the model for rank 0's message.
 *   unmatched rank 0 sends a message nobody receives (eager in the model: MPI_Send returns), then
 *             waits in MPI_Finalize for the real transfer; rank 1 finalizes.
 *   fence     rank 0 enters MPI_Win_fence, rank 1 waits in the model for a message rank 0 sends
 *             after the fence (modelled: a deadlock in virtual time, the fence's barrier).
 *   late      not a stall: rank 1 computes for 3 s before it receives rank 0's message, while
 *             rank 0 waits in MPI_Finalize for the real transfer; the run must end normally. */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int query(void *extra, MPI_Status *st) { (void)extra; MPI_Status_set_elements(st, MPI_BYTE, 0); return MPI_SUCCESS; }
static int release(void *extra) { (void)extra; return MPI_SUCCESS; }
static int cancel(void *extra, int complete) { (void)extra; (void)complete; return MPI_SUCCESS; }

static void spin_seconds(double s)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9 < s);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *mode = argc > 1 ? argv[1] : "grequest";
    static char buf[8192];
    if (!strcmp(mode, "grequest")) {
        if (rank == 0) {
            MPI_Request rq;
            MPI_Grequest_start(query, release, cancel, NULL, &rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            MPI_Send(buf, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(buf, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (!strcmp(mode, "unmatched") || !strcmp(mode, "late")) {
        if (rank == 0) MPI_Send(buf, sizeof buf, MPI_CHAR, 1, 3, MPI_COMM_WORLD);
        if (rank == 1 && !strcmp(mode, "late")) {
            spin_seconds(3.0);
            MPI_Recv(buf, sizeof buf, MPI_CHAR, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (!strcmp(mode, "fence")) {
        MPI_Win win;
        MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        if (rank == 0) {
            MPI_Win_fence(0, win);
            MPI_Send(buf, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(buf, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Win_fence(0, win);
        }
        MPI_Win_free(&win);
    }
    if (rank == 0) printf("%s: done\n", mode);
    MPI_Finalize();
    return 0;
}
