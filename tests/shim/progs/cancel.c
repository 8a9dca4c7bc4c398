/* MPI_Cancel of receives, with outcomes that are the same natively and under mpisim:
 *  a) a wildcard receive nobody sends to is cancelled (MPI_Test_cancelled: true);
 *  b) a receive already matched by a synchronous send cannot be cancelled (data received);
 *  c) a specific receive cancelled before its message is sent: the message goes to the next
 *     receive for that source and tag;
 *  d) a persistent receive started and cancelled, then started again and received;
 *  e) HPCC RandomAccess's pattern: a wildcard receive posted in a loop, the last one cancelled;
 *  f) and, beside cancels, sends freed while active (MPI_Request_free): they still arrive;
 *  g) MPI_Request_get_status polled until complete; the request stays for MPI_Wait. */
#include <mpi.h>
#include <stdio.h>

static void show(int rank, const char *what, int cancelled, int value)
{
    printf("rank %d %s: cancelled=%d value=%d\n", rank, what, cancelled, value);
}

/* a) a wildcard receive nobody sends to is cancelled. */
static void cancel_unmatched(int rank)
{
    int v = -1, flag = 0;
    MPI_Request rq;
    MPI_Status st;
    MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &rq);
    MPI_Cancel(&rq);
    MPI_Wait(&rq, &st);
    MPI_Test_cancelled(&st, &flag);
    show(rank, "a", flag, rq == MPI_REQUEST_NULL);
}

/* b) a receive already matched by a synchronous send cannot be cancelled. */
static void cancel_matched(int rank, int size)
{
    int v = -1, flag = 0;
    MPI_Request rq;
    MPI_Status st;
    if (rank == 0 && size > 1) {
        v = -1;
        MPI_Irecv(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &rq);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Cancel(&rq);
        MPI_Wait(&rq, &st);
        MPI_Test_cancelled(&st, &flag);
        show(rank, "b", flag, v);
    } else if (rank == 1) {
        int x = 505;
        MPI_Ssend(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* c) a specific receive cancelled before its message is sent: the message goes to the next one. */
static void cancel_before_send(int rank, int size)
{
    int v = -1, flag = 0;
    MPI_Request rq;
    MPI_Status st;
    if (rank == 0 && size > 1) {
        v = -1;
        MPI_Irecv(&v, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, &rq);
        MPI_Cancel(&rq);
        MPI_Wait(&rq, &st);
        MPI_Test_cancelled(&st, &flag);
        MPI_Barrier(MPI_COMM_WORLD);
        int w = -1;
        MPI_Recv(&w, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, &st);
        show(rank, "c", flag, w);
    } else if (rank == 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        int x = 606;
        MPI_Send(&x, 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* d) a persistent receive started and cancelled, then started again and received. */
static void cancel_persistent(int rank, int peer)
{
    int v = -1, flag = 0;
    MPI_Request rq;
    MPI_Status st;
    if (peer != MPI_PROC_NULL) {
        MPI_Recv_init(&v, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &rq);
        MPI_Start(&rq);
        MPI_Cancel(&rq);
        MPI_Wait(&rq, &st);
        MPI_Test_cancelled(&st, &flag);
        MPI_Barrier(MPI_COMM_WORLD);
        int x = 700 + rank;
        MPI_Request s;
        MPI_Isend(&x, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &s);
        MPI_Start(&rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
        MPI_Request_free(&rq);
        show(rank, "d", flag, v);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

static void cancel_last_wildcard(int rank, int size)
{
    int v = -1, flag = 0;
    MPI_Request rq;
    MPI_Status st;
    /* e) every rank sends `rank + 1` updates to each other rank; receivers count them with an
     * always-posted wildcard receive and cancel the last one after a closing allreduce */
    int expect = 0, got = 0, sum = 0;
    for (int r = 0; r < size; r++)
        if (r != rank) expect += r + 1;
    MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &rq);
    for (int r = 0; r < size; r++) {
        if (r == rank) continue;
        for (int k = 0; k <= rank; k++) MPI_Send(&k, 1, MPI_INT, r, 8, MPI_COMM_WORLD);
    }
    while (got < expect) {
        MPI_Wait(&rq, &st);
        got++;
        sum += st.MPI_SOURCE;
        MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &rq);
    }
    MPI_Allreduce(MPI_IN_PLACE, &got, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Cancel(&rq);
    MPI_Wait(&rq, &st);
    MPI_Test_cancelled(&st, &flag);
    show(rank, "e", flag, got * 1000 + sum);
}

/* f) sends freed while active still arrive. */
static void free_active_sends(int rank, int peer)
{
    if (peer != MPI_PROC_NULL) {
        int out[3] = {rank, rank + 10, rank + 20}, in[3] = {0, 0, 0};
        MPI_Request f;
        for (int k = 0; k < 3; k++) {
            MPI_Isend(&out[k], 1, MPI_INT, peer, 20 + k, MPI_COMM_WORLD, &f);
            MPI_Request_free(&f);
        }
        for (int k = 0; k < 3; k++) MPI_Recv(&in[k], 1, MPI_INT, peer, 20 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);   /* the freed sends have been received everywhere */
        show(rank, "f", 0, in[0] + in[1] * 100 + in[2] * 10000);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* g) MPI_Request_get_status polled until complete; the request stays for MPI_Wait. */
static void poll_get_status(int rank, int peer)
{
    int flag = 0;
    MPI_Status st;
    if (peer != MPI_PROC_NULL) {
        int in = -1, out = rank + 77, polls = 0, sflag = 0;
        MPI_Request rr, sr;
        MPI_Irecv(&in, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &rr);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Isend(&out, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &sr);
        flag = 0;
        while (!flag) {
            MPI_Request_get_status(rr, &flag, &st);
            polls++;
        }
        int src = st.MPI_SOURCE, tag = st.MPI_TAG;
        MPI_Request_get_status(sr, &sflag, MPI_STATUS_IGNORE);
        while (!sflag) MPI_Request_get_status(sr, &sflag, MPI_STATUS_IGNORE);
        MPI_Wait(&rr, &st);
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
        show(rank, "g", rr == MPI_REQUEST_NULL && sr == MPI_REQUEST_NULL, in * 100 + (src == peer) * 10 + (tag == 30));
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    if (peer >= size) peer = MPI_PROC_NULL;
    cancel_unmatched(rank);
    cancel_matched(rank, size);
    cancel_before_send(rank, size);
    cancel_persistent(rank, peer);
    cancel_last_wildcard(rank, size);
    free_active_sends(rank, peer);
    poll_get_status(rank, peer);
    MPI_Finalize();
    return 0;
}
