/* MPI_Waitany, MPI_Waitsome and MPI_Waitall over receives that complete one by one (the senders
 * send in reverse rank order, one after another), with a null request and a send among them:
 * every status must name its sender, tag and size, as natively. A capture waits for these in the
 * real MPI's blocking calls (shim.c wait_real_block); exit code 1 and "BAD" on any mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 3

static int bad;

static void expect(int cond, const char *what, int round, int i)
{
    if (!cond) {
        printf("BAD %s (round %d, request %d)\n", what, round, i);
        bad = 1;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { MAXP = 64 };
    if (size < 2 || size > MAXP) {
        if (!rank) printf("waitmodes: 2 to %d ranks\n", MAXP);
        MPI_Finalize();
        return 2;
    }
    static int buf[MAXP][64];
    for (int round = 0; round < ROUNDS; round++) {
        if (rank == 0) {
            /* request 0: null; 1..size-1: receives from those ranks; size: a send to the last rank */
            MPI_Request rq[MAXP + 1];
            MPI_Status st[MAXP + 1];
            int token = round;
            rq[0] = MPI_REQUEST_NULL;
            for (int s = 1; s < size; s++)
                MPI_Irecv(buf[s], 64, MPI_INT, s, 100 + s + round, MPI_COMM_WORLD, &rq[s]);
            MPI_Isend(&token, 1, MPI_INT, size - 1, 7, MPI_COMM_WORLD, &rq[size]);
            int done[MAXP + 1] = {0}, ndone = 0;
            /* the first sender may go: the others follow in a chain */
            MPI_Send(&token, 1, MPI_INT, size - 1, 8, MPI_COMM_WORLD);
            while (ndone < size) {
                if (round == 0) {   /* Waitany */
                    int i = -1;
                    MPI_Status s1;
                    MPI_Waitany(size + 1, rq, &i, &s1);
                    expect(i >= 1 && i <= size && !done[i], "Waitany index", round, i);
                    if (i < 1 || i > size) break;
                    done[i] = 1;
                    ndone++;
                    st[i] = s1;
                } else if (round == 1) {   /* Waitsome */
                    int out = 0, idx[MAXP + 1];
                    MPI_Status ss[MAXP + 1];
                    MPI_Waitsome(size + 1, rq, &out, idx, ss);
                    expect(out >= 1, "Waitsome count", round, out);
                    if (out < 1) break;
                    for (int k = 0; k < out; k++) {
                        expect(idx[k] >= 1 && idx[k] <= size && !done[idx[k]], "Waitsome index", round, idx[k]);
                        if (idx[k] < 1 || idx[k] > size) continue;
                        done[idx[k]] = 1;
                        ndone++;
                        st[idx[k]] = ss[k];
                    }
                } else {   /* Waitall */
                    MPI_Waitall(size + 1, rq, st);
                    ndone = size;
                }
            }
            for (int s = 1; s < size; s++) {
                int count = -1;
                MPI_Get_count(&st[s], MPI_INT, &count);
                expect(st[s].MPI_SOURCE == s, "status source", round, s);
                expect(st[s].MPI_TAG == 100 + s + round, "status tag", round, s);
                expect(count == 8 + s, "status count", round, s);
                for (int k = 0; k < count && k < 64; k++) expect(buf[s][k] == s * 1000 + round * 100 + k, "data", round, s);
            }
        } else {
            int token;
            /* in reverse rank order: rank size-1 first (told by rank 0), then each tells the next lower */
            MPI_Recv(&token, 1, MPI_INT, rank == size - 1 ? 0 : rank + 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int data[64];
            for (int k = 0; k < 64; k++) data[k] = rank * 1000 + round * 100 + k;
            MPI_Send(data, 8 + rank, MPI_INT, 0, 100 + rank + round, MPI_COMM_WORLD);
            if (rank > 1) MPI_Send(&token, 1, MPI_INT, rank - 1, 8, MPI_COMM_WORLD);
            if (rank == size - 1) MPI_Recv(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int any = 0;
    MPI_Reduce(&bad, &any, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("waitmodes: %s\n", any ? "BAD" : "ok");
    MPI_Finalize();
    return any ? 1 : 0;
}
