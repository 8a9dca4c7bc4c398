/* What a new user runs first: the kernels of the two widely used MPI benchmark suites (Intel's
 * IMB and the OSU micro-benchmarks are not Debian packages), written the way they do them, so
 * that mpisim's figures can be checked against what those suites would report.
 *
 *   imb_pingpong  IMB PingPong: rank 0 MPI_Send, MPI_Recv(MPI_ANY_TAG) the echo; t = half round trip
 *   imb_pingping  IMB PingPing: both ranks MPI_Isend, MPI_Recv(MPI_ANY_TAG), MPI_Wait; t per iteration
 *   imb_sendrecv  IMB Sendrecv on 2 ranks: MPI_Sendrecv with the other; t per iteration, 2 x bytes moved
 *   osu_latency   OSU latency: blocking ping-pong; half round trip
 *   osu_bw        OSU bandwidth: a window of 64 MPI_Isend, the peer 64 MPI_Irecv, MPI_Waitall, a
 *                 4-byte ack; bytes x 64 / time
 *   osu_bibw      OSU bidirectional bandwidth: both sides post the window at once; 2 x bytes x 64 / time
 *
 * Usage: suites KERNEL [sizes...]   (default sizes 1 16384 1048576)
 * Output (rank 0): one line per size "KERNEL bytes t_us MBps". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *k = argc > 1 ? argv[1] : "imb_pingpong";
    long sizes[16] = {1, 16384, 1048576};
    int ns = 3;
    if (argc > 2) {
        ns = 0;
        for (int i = 2; i < argc && ns < 16; i++) sizes[ns++] = atol(argv[i]);
    }
    long maxs = 4;
    for (int i = 0; i < ns; i++)
        if (sizes[i] > maxs) maxs = sizes[i];
    char *sb = calloc((size_t)maxs * WINDOW, 1), *rb = calloc((size_t)maxs * WINDOW, 1);
    int peer = 1 - rank;
    MPI_Status st;
    for (int si = 0; si < ns; si++) {
        int n = (int)sizes[si], iters = n >= (1 << 20) ? 10 : 50;
        double t = 0, mbps = 0;
        if (rank > 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            continue;
        }
        for (int rep = 0; rep < 2; rep++) {   /* the first run is IMB's and OSU's warm-up */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (!strcmp(k, "imb_pingpong") || !strcmp(k, "osu_latency")) {
                int tag = !strcmp(k, "imb_pingpong") ? MPI_ANY_TAG : 1;
                for (int i = 0; i < iters; i++) {
                    if (rank == 0) {
                        MPI_Send(sb, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                        MPI_Recv(rb, n, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st);
                    } else {
                        MPI_Recv(rb, n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st);
                        MPI_Send(sb, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                    }
                }
                t = (MPI_Wtime() - t0) / (2.0 * iters);
                mbps = n / t / 1e6;
            } else if (!strcmp(k, "imb_pingping")) {
                for (int i = 0; i < iters; i++) {
                    MPI_Request rq;
                    MPI_Isend(sb, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq);
                    MPI_Recv(rb, n, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                    MPI_Wait(&rq, &st);
                }
                t = (MPI_Wtime() - t0) / iters;
                mbps = n / t / 1e6;
            } else if (!strcmp(k, "imb_sendrecv")) {
                for (int i = 0; i < iters; i++)
                    MPI_Sendrecv(sb, n, MPI_BYTE, peer, 1, rb, n, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                t = (MPI_Wtime() - t0) / iters;
                mbps = 2.0 * n / t / 1e6;
            } else if (!strcmp(k, "osu_bw") || !strcmp(k, "osu_bibw")) {
                int bi = !strcmp(k, "osu_bibw");
                MPI_Request rq[2 * WINDOW];
                for (int i = 0; i < iters; i++) {
                    int m = 0;
                    if (rank == 1 || bi)
                        for (int w = 0; w < WINDOW; w++)
                            MPI_Irecv(rb + (size_t)w * n, n, MPI_BYTE, peer, 10, MPI_COMM_WORLD, &rq[m++]);
                    if (rank == 0 || bi)
                        for (int w = 0; w < WINDOW; w++)
                            MPI_Isend(sb + (size_t)w * n, n, MPI_BYTE, peer, 10, MPI_COMM_WORLD, &rq[m++]);
                    MPI_Waitall(m, rq, MPI_STATUSES_IGNORE);
                    if (!bi) {
                        if (rank == 0) MPI_Recv(rb, 4, MPI_BYTE, 1, 11, MPI_COMM_WORLD, &st);
                        else MPI_Send(sb, 4, MPI_BYTE, 0, 11, MPI_COMM_WORLD);
                    }
                }
                t = (MPI_Wtime() - t0) / iters;
                mbps = (bi ? 2.0 : 1.0) * (double)n * WINDOW / t / 1e6;
            } else {
                if (rank == 0) fprintf(stderr, "suites: unknown kernel %s\n", k);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) printf("%s %d %.4f %.2f\n", k, n, t * 1e6, mbps);
    }
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
