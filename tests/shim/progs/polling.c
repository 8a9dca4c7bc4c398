/* Polling and blocking patterns whose answers the shim may give itself (docs/architecture.md,
 * "Local answers"): blocking sends of every protocol, an HPCC-RandomAccess-like loop (MPI_Test on
 * a wildcard receive, Isends tested with MPI_Testany), Iprobe loops against standard, synchronous
 * and rendezvous senders, Testall/Testsome over mixed sets, Waitany/Waitall over sends. The test
 * runs it with shim.local_answers on and off and wants the same virtual times, and a replay of
 * the trace that agrees with every recorded answer. Prints "polling ok" and a checksum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static long checksum;

static void blocking_ring(void)
{
    static const int sizes[] = {0, 8, 1000, 2000, 20000};
    char *buf = calloc(1, 20000);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int it = 0; it < 3; it++) {
            int right = (rank + 1) % size, left = (rank + size - 1) % size;
            if (rank % 2 == 0) {
                MPI_Send(buf, sizes[k], MPI_BYTE, right, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, sizes[k], MPI_BYTE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, sizes[k], MPI_BYTE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, sizes[k], MPI_BYTE, right, 1, MPI_COMM_WORLD);
            }
        }
    free(buf);
}

/* Each rank sends `per_rank` updates round robin to the others and takes what comes with a
 * wildcard receive it polls, as HPCC's MPIRandomAccess does. */
static void random_access(int per_rank)
{
    long in = 0, out[4] = {0};
    MPI_Request rq, sq[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Irecv(&in, 1, MPI_LONG, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &rq);
    int expect = per_rank, got = 0, sent = 0, spins = 0;
    while (got < expect || sent < per_rank) {
        int flag = 0;
        MPI_Status st;
        MPI_Test(&rq, &flag, &st);
        if (flag) {
            checksum += in * (st.MPI_SOURCE + 1);
            if (++got < expect) MPI_Irecv(&in, 1, MPI_LONG, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &rq);
        }
        if (sent < per_rank && ++spins % 7 == 0) {
            int idx, done = 0;
            MPI_Testany(4, sq, &idx, &done, MPI_STATUS_IGNORE);
            int slot = -1;
            for (int i = 0; i < 4; i++)
                if (sq[i] == MPI_REQUEST_NULL) slot = i;
            if (slot >= 0) {
                int peer = (rank + 1 + sent % (size - 1)) % size;
                out[slot] = rank * 1000 + sent;
                MPI_Isend(&out[slot], 1, MPI_LONG, peer, 2, MPI_COMM_WORLD, &sq[slot]);
                sent++;
            }
        }
    }
    MPI_Waitall(4, sq, MPI_STATUSES_IGNORE);
}

/* Rank 0 polls with MPI_Iprobe for one message from every other rank: standard eager, synchronous
 * (its ACK answers a receive at once) and rendezvous, in turn. */
static void iprobe_fan(int round)
{
    static char buf[40000];
    if (rank == 0) {
        for (int k = 1; k < size; k++) {
            int flag = 0;
            MPI_Status st;
            while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &flag, &st);
            int n;
            MPI_Get_count(&st, MPI_BYTE, &n);
            MPI_Recv(buf, n, MPI_BYTE, st.MPI_SOURCE, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            checksum += n + st.MPI_SOURCE;
        }
    } else {
        int kind = (rank + round) % 3, n = kind == 2 ? 40000 : 64;
        if (kind == 1) MPI_Ssend(buf, n, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        else MPI_Send(buf, n, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    }
}

/* Neighbour exchange finished by polling a mixed set (a receive and a send). */
static void mixed_sets(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    long a = rank, b = -1;
    MPI_Request r[2];
    for (int it = 0; it < 4; it++) {
        MPI_Irecv(&b, 1, MPI_LONG, left, 4, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&a, 1, MPI_LONG, right, 4, MPI_COMM_WORLD, &r[1]);
        if (it % 2 == 0) {
            int flag = 0;
            while (!flag) MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE);
        } else {
            int left_n = 2;
            while (left_n > 0) {
                int outc, idx[2];
                MPI_Testsome(2, r, &outc, idx, MPI_STATUSES_IGNORE);
                if (outc != MPI_UNDEFINED) left_n -= outc;
            }
        }
        checksum += b;
    }
    /* sends only: Waitany, then Waitall */
    MPI_Request s[2];
    long c[2] = {1, 2}, d[2];
    MPI_Irecv(&d[0], 1, MPI_LONG, left, 5, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(&d[1], 1, MPI_LONG, left, 6, MPI_COMM_WORLD, &r[1]);
    MPI_Isend(&c[0], 1, MPI_LONG, right, 5, MPI_COMM_WORLD, &s[0]);
    MPI_Isend(&c[1], 1, MPI_LONG, right, 6, MPI_COMM_WORLD, &s[1]);
    int idx;
    MPI_Waitany(2, s, &idx, MPI_STATUS_IGNORE);
    MPI_Waitall(2, s, MPI_STATUSES_IGNORE);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    checksum += d[0] + d[1];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int per_rank = argc > 1 ? atoi(argv[1]) : 200;
    if (size < 2) {
        fprintf(stderr, "polling: run on 2 ranks or more\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    blocking_ring();
    MPI_Barrier(MPI_COMM_WORLD);
    random_access(per_rank);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int round = 0; round < 3; round++) iprobe_fan(round);
    mixed_sets();
    long all = 0;
    MPI_Allreduce(&checksum, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("polling ok, checksum %ld\n", all);
    MPI_Finalize();
    return 0;
}
