/* Wildcard receives of every form and every size: a blocking receive with
 * MPI_ANY_TAG or MPI_ANY_SOURCE of a message at or above the model's eager threshold used to hang
 * (the sender sat in its real send, which the model had completed, while the receiver had not yet
 * posted its real receive).
 *
 * For each receive form, each wildcard combination and each size around the model's and Open
 * MPI's protocol switches: a 3-round ping-pong between ranks 0 and 1 (tags change per round), then
 * a fan-in of every other rank to rank 0; then receives held back behind an undecided wildcard.
 * Every message's contents, source, tag and count are checked. Prints one line per case; exits 1
 * on a wrong answer. Usage: wildcard_forms [max_bytes] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { F_RECV, F_IRECV_WAIT, F_IRECV_TEST, F_PROBE_RECV, F_IPROBE_RECV, F_MPROBE, F_IMPROBE, F_IRECV_WAITANY,
       F_PROBE_WILD_RECV, F_SENDRECV, F_IMRECV, F_COUNT };
static const char *form_name[F_COUNT] = {"Recv", "Irecv+Wait", "Irecv+Test loop", "Probe+Recv", "Iprobe loop+Recv",
                                         "Mprobe+Mrecv", "Improbe loop+Mrecv", "Irecv+Waitany",
                                         "Probe+Recv(wildcards)", "Sendrecv", "Mprobe+Imrecv+Wait"};

static int rank, size, failures;
static unsigned char *sbuf, *rbuf;

static unsigned char pattern(int src, int tag, int n, int i) { return (unsigned char)(src * 31 + tag * 7 + n + i * 13); }

static void fill(int tag, int n)
{
    for (int i = 0; i < n; i++) sbuf[i] = pattern(rank, tag, n, i);
}

static void check(const char *what, const MPI_Status *st, int src, int tag, int n)
{
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    int bad = st->MPI_SOURCE != src || st->MPI_TAG != tag || count != n;
    for (int i = 0; !bad && i < n; i++) bad = rbuf[i] != pattern(src, tag, n, i);
    if (bad) {
        fprintf(stderr, "rank %d: %s: got source %d tag %d count %d, want %d %d %d%s\n", rank, what, st->MPI_SOURCE,
                st->MPI_TAG, count, src, tag, n, count == n ? " (contents differ)" : "");
        failures++;
    }
}

/* Receive n bytes from (src, tag) as the program would, with wildcards in place of what `wild`
 * says (1: any source, 2: any tag, 3: both). */
static void receive(int form, int wild, int src, int tag, int n, MPI_Status *st)
{
    int s = wild & 1 ? MPI_ANY_SOURCE : src, t = wild & 2 ? MPI_ANY_TAG : tag;
    MPI_Request rq;
    MPI_Message msg;
    int flag = 0, idx;
    switch (form) {
    case F_RECV: MPI_Recv(rbuf, n, MPI_BYTE, s, t, MPI_COMM_WORLD, st); break;
    case F_IRECV_WAIT:
        MPI_Irecv(rbuf, n, MPI_BYTE, s, t, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, st);
        break;
    case F_IRECV_TEST:
        MPI_Irecv(rbuf, n, MPI_BYTE, s, t, MPI_COMM_WORLD, &rq);
        while (!flag) MPI_Test(&rq, &flag, st);
        break;
    case F_PROBE_RECV:
        MPI_Probe(s, t, MPI_COMM_WORLD, st);
        MPI_Recv(rbuf, n, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, MPI_COMM_WORLD, st);
        break;
    case F_IPROBE_RECV:
        while (!flag) MPI_Iprobe(s, t, MPI_COMM_WORLD, &flag, st);
        MPI_Recv(rbuf, n, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, MPI_COMM_WORLD, st);
        break;
    case F_MPROBE:
        MPI_Mprobe(s, t, MPI_COMM_WORLD, &msg, st);
        MPI_Mrecv(rbuf, n, MPI_BYTE, &msg, st);
        break;
    case F_IMPROBE:
        while (!flag) MPI_Improbe(s, t, MPI_COMM_WORLD, &flag, &msg, st);
        MPI_Mrecv(rbuf, n, MPI_BYTE, &msg, st);
        break;
    case F_IRECV_WAITANY:
        MPI_Irecv(rbuf, n, MPI_BYTE, s, t, MPI_COMM_WORLD, &rq);
        MPI_Waitany(1, &rq, &idx, st);
        break;
    case F_PROBE_WILD_RECV:
        MPI_Probe(s, t, MPI_COMM_WORLD, st);
        MPI_Recv(rbuf, n, MPI_BYTE, s, t, MPI_COMM_WORLD, st);
        break;
    case F_IMRECV:
        MPI_Mprobe(s, t, MPI_COMM_WORLD, &msg, st);
        MPI_Imrecv(rbuf, n, MPI_BYTE, &msg, &rq);
        MPI_Wait(&rq, st);
        break;
    }
}

static void pingpong(int form, int wild, int n)
{
    MPI_Status st;
    for (int round = 0; round < 3; round++) {
        int tag = 10 + round;
        if (rank > 1) break;
        int peer = 1 - rank;
        fill(tag, n);
        if (form == F_SENDRECV) {
            /* both at once: each receive with wildcards, each send at the same time */
            MPI_Sendrecv(sbuf, n, MPI_BYTE, peer, tag, rbuf, n, MPI_BYTE, wild & 1 ? MPI_ANY_SOURCE : peer,
                         wild & 2 ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &st);
            check("Sendrecv", &st, peer, tag, n);
        } else if (rank == 0) {
            MPI_Send(sbuf, n, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
            receive(form, wild, 1, tag, n, &st);
            check(form_name[form], &st, 1, tag, n);
        } else {
            receive(form, wild, 0, tag, n, &st);
            check(form_name[form], &st, 0, tag, n);
            MPI_Send(sbuf, n, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
        }
    }
}

/* Every other rank sends one message to rank 0, which takes them with MPI_ANY_SOURCE. */
static void fan_in(int form, int n)
{
    MPI_Status st;
    if (form == F_SENDRECV) return;
    if (rank == 0) {
        int seen[64] = {0};
        for (int k = 1; k < size; k++) {
            receive(form, 1 | 2, -1, -1, n, &st);
            if (st.MPI_SOURCE > 0 && st.MPI_SOURCE < 64) seen[st.MPI_SOURCE]++;
            check("fan-in", &st, st.MPI_SOURCE, 20 + st.MPI_SOURCE, n);
        }
        for (int k = 1; k < size && k < 64; k++)
            if (seen[k] != 1) {
                fprintf(stderr, "fan-in: %d messages from rank %d\n", seen[k], k);
                failures++;
            }
    } else {
        fill(20 + rank, n);
        MPI_Send(sbuf, n, MPI_BYTE, 0, 20 + rank, MPI_COMM_WORLD);
    }
}

/* A wildcard receive still undecided holds back a later receive that could take the same
 * message; the later one (matched to the second message) must not take the first. */
static void held_back(int n)
{
    MPI_Status st;
    if (rank == 0) {
        fill(5, n);
        MPI_Send(sbuf, n, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
        fill(6, n);
        MPI_Send(sbuf, n, MPI_BYTE, 1, 6, MPI_COMM_WORLD);
        fill(5, n);
        MPI_Send(sbuf, n, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
    } else if (rank == 1) {
        unsigned char *first = malloc((size_t)n + 1);
        MPI_Request w;
        MPI_Irecv(first, n, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &w);
        MPI_Recv(rbuf, n, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &st);   /* the second message */
        check("held back (tag 6)", &st, 0, 6, n);
        MPI_Recv(rbuf, n, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st);   /* the third */
        check("held back (second tag 5)", &st, 0, 5, n);
        MPI_Wait(&w, &st);
        memcpy(rbuf, first, (size_t)n);
        check("held back (wildcard, first)", &st, 0, 5, n);
        free(first);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int maxn = argc > 1 ? atoi(argv[1]) : 1 << 20;
    /* both sides of: the shim's copy limit (1 KiB), Open MPI's shared-memory eager limit (4 KiB
     * with its header), the model's eager threshold (16 KiB), Open MPI's TCP eager limit (64 KiB) */
    static const int sizes[] = {0, 1, 1024, 1025, 4095, 4096, 4097, 16383, 16384, 16385, 65535, 65536, 65537, 1 << 20};
    sbuf = malloc((size_t)maxn + 1);
    rbuf = malloc((size_t)maxn + 1);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k];
        if (n > maxn) continue;
        for (int form = 0; form < F_COUNT; form++) {
            /* phases apart: a wildcard of one must not take a message of the next */
            for (int wild = 1; wild <= 3; wild++) {
                pingpong(form, wild, n);
                MPI_Barrier(MPI_COMM_WORLD);
            }
            fan_in(form, n);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        held_back(n);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) printf("size %d: every form and wildcard %s\n", n, failures ? "FAILED" : "ok");
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%s\n", all ? "FAILED" : "all ok");
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return all ? 1 : 0;
}
