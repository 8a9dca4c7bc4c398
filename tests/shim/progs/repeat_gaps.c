/* Kernels with nothing between their MPI calls, written as IMB writes them: under --compute cpu
 * their virtual times must repeat exactly from run to run, whatever runs
 * beside them, since the measurement's noise (a few tens of ns per gap) would otherwise reorder
 * near-simultaneous messages.
 *
 *   exchange  IMB Exchange: every rank MPI_Isend to both neighbours of a ring, MPI_Irecv from
 *             both, MPI_Waitall; t per iteration
 *   alltoall  IMB Alltoall: MPI_Alltoall of BYTES per pair; t per iteration
 *
 * Usage: repeat_gaps KERNEL BYTES [ITERS]   (default 200 iterations, after 10 of warm-up)
 * Output (rank 0): "KERNEL bytes t_min_ps t_max_ps t_avg_ps" over ranks, in whole ps of the
 * clock (MPI_Wtime to the picosecond: exact comparisons between runs). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *k = argc > 1 ? argv[1] : "exchange";
    long bytes = argc > 2 ? atol(argv[2]) : 0;
    int iters = argc > 3 ? atoi(argv[3]) : 200;
    int alltoall = !strcmp(k, "alltoall");
    size_t per = (size_t)(bytes > 0 ? bytes : 1);
    char *sb = calloc(per * (size_t)size * 2, 1), *rb = calloc(per * (size_t)size * 2, 1);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Request rq[4];
    double t = 0;
    for (int rep = 0; rep < 2; rep++) {   /* a warm-up, then the timed run */
        int n = rep ? iters : 10;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            if (alltoall) {
                MPI_Alltoall(sb, (int)bytes, MPI_BYTE, rb, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
            } else {
                MPI_Isend(sb, (int)bytes, MPI_BYTE, left, 0, MPI_COMM_WORLD, &rq[0]);
                MPI_Isend(sb + per, (int)bytes, MPI_BYTE, right, 0, MPI_COMM_WORLD, &rq[1]);
                MPI_Irecv(rb, (int)bytes, MPI_BYTE, left, 0, MPI_COMM_WORLD, &rq[2]);
                MPI_Irecv(rb + per, (int)bytes, MPI_BYTE, right, 0, MPI_COMM_WORLD, &rq[3]);
                MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
            }
        }
        t = (MPI_Wtime() - t0) / n;
    }
    double tmin, tmax, tsum;
    MPI_Reduce(&t, &tmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t, &tsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s %ld %.0f %.0f %.0f\n", k, bytes, tmin * 1e12, tmax * 1e12, tsum / size * 1e12);
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
