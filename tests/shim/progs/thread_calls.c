/* MPI calls from several threads of a rank, at the thread level asked for.
 *
 *   thread_calls LEVEL concurrent   two threads per rank ping-pong with the other rank's at once
 *                                   (correct under multiple; under single, funneled or serialized
 *                                   the program's error, which mpisim must report)
 *   thread_calls LEVEL turns        the same two ping-pongs one thread after the other (correct
 *                                   under serialized and multiple)
 * LEVEL: single, funneled, serialized, multiple (MPI_Init_thread's required; the answer is
 * printed, not checked: the program goes on as a careless one would). 2 ranks.
 * Output (rank 0): "provided=P latency0_ps=A latency1_ps=B" (half round trips per thread). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 200

typedef struct job {
    int rank, thread;
    MPI_Comm comm;
    double latency;
} job;

static void *pingpong(void *p)
{
    job *j = p;
    char b = 0;
    double t0 = MPI_Wtime();
    for (int i = 0; i < ITERS; i++) {
        if (j->rank == 0) {
            MPI_Send(&b, 1, MPI_CHAR, 1, j->thread, j->comm);
            MPI_Recv(&b, 1, MPI_CHAR, 1, j->thread, j->comm, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&b, 1, MPI_CHAR, 0, j->thread, j->comm, MPI_STATUS_IGNORE);
            MPI_Send(&b, 1, MPI_CHAR, 0, j->thread, j->comm);
        }
    }
    j->latency = (MPI_Wtime() - t0) / (2.0 * ITERS);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *lv = argc > 1 ? argv[1] : "multiple";
    int turns = argc > 2 && !strcmp(argv[2], "turns");
    int required = !strcmp(lv, "single") ? MPI_THREAD_SINGLE : !strcmp(lv, "funneled") ? MPI_THREAD_FUNNELED
                   : !strcmp(lv, "serialized") ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
    int provided = -1, rank;
    MPI_Init_thread(&argc, &argv, required, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    job jobs[2];
    pthread_t th[2];
    for (int t = 0; t < 2; t++) {
        jobs[t].rank = rank;
        jobs[t].thread = t;
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
    }
    if (rank < 2) {
        for (int t = 0; t < 2; t++) {
            pthread_create(&th[t], NULL, pingpong, &jobs[t]);
            if (turns) pthread_join(th[t], NULL);
        }
        if (!turns)
            for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    }
    for (int t = 0; t < 2; t++) MPI_Comm_free(&jobs[t].comm);
    if (rank == 0)
        printf("provided=%d latency0_ps=%.0f latency1_ps=%.0f\n", provided, jobs[0].latency * 1e12,
               jobs[1].latency * 1e12);
    MPI_Finalize();
    return 0;
}
