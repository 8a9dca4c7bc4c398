/* Exercises the MPI calls beyond the basic point-to-point ones and prints results that do not depend on timing, so that
 * its output natively and under mpisim must be identical. Any process count >= 2. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static long checksum;

static void add(const char *what, long v)
{
    checksum = checksum * 31 + v;
    if (rank == 0) printf("%s=%ld\n", what, v);
}

/* Send modes around a ring. */
static void send_modes(int right, int left)
{
    /* send modes around a ring */
    long v = rank, got = -1;
    MPI_Request rq;
    MPI_Irecv(&got, 1, MPI_LONG, left, 1, MPI_COMM_WORLD, &rq);
    MPI_Ssend(&v, 1, MPI_LONG, right, 1, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    long s = got;
    MPI_Irecv(&got, 1, MPI_LONG, left, 2, MPI_COMM_WORLD, &rq);
    MPI_Bsend(&v, 1, MPI_LONG, right, 2, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    s += got;
    MPI_Irecv(&got, 1, MPI_LONG, left, 3, MPI_COMM_WORLD, &rq);
    MPI_Barrier(MPI_COMM_WORLD); /* the receive is posted everywhere before the ready send */
    MPI_Rsend(&v, 1, MPI_LONG, right, 3, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    s += got;
    long tot;
    MPI_Allreduce(&s, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("sendmodes", tot);
}

/* Persistent requests, Startall, Waitall, repeated. */
static void persistent(int right, int left)
{
    long tot;
    /* persistent requests, Startall, Waitall, repeated */
    long pin = 0, pout;
    MPI_Request pr[2];
    MPI_Send_init(&pout, 1, MPI_LONG, right, 4, MPI_COMM_WORLD, &pr[0]);
    MPI_Recv_init(&pin, 1, MPI_LONG, left, 4, MPI_COMM_WORLD, &pr[1]);
    long acc = 0;
    for (int it = 0; it < 5; it++) {
        pout = rank * 10 + it;
        MPI_Startall(2, pr);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        acc += pin;
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);
    MPI_Allreduce(&acc, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("persistent", tot);
}

/* Probe with wildcards, then receive what was probed. */
static void wildcard_probe(void)
{
    /* probe with wildcards, then receive what was probed */
    if (rank == 0) {
        long sum = 0;
        for (int i = 1; i < size; i++) {
            MPI_Status st;
            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int n;
            MPI_Get_count(&st, MPI_LONG, &n);
            long *b = malloc(sizeof(long) * (size_t)n);
            MPI_Recv(b, n, MPI_LONG, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int k = 0; k < n; k++) sum += b[k];
            free(b);
        }
        add("probe", sum);
    } else {
        long b[8];
        for (int k = 0; k < rank % 8 + 1; k++) b[k] = rank * 100 + k;
        MPI_Send(b, rank % 8 + 1, MPI_LONG, 0, 50 + rank, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* keep later messages out of the wildcard probes */
}

/* Matched probe and receive. */
static void matched_probe(void)
{
    /* matched probe and receive */
    if (rank == 0) {
        long sum = 0;
        for (int i = 1; i < size; i++) {
            MPI_Message m;
            MPI_Status st;
            long b = 0;
            if (i % 2) {
                MPI_Mprobe(MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, &m, &st);
                MPI_Mrecv(&b, 1, MPI_LONG, &m, &st);
            } else {
                int flag = 0;
                while (!flag) MPI_Improbe(MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, &flag, &m, &st);
                MPI_Request q;
                MPI_Imrecv(&b, 1, MPI_LONG, &m, &q);
                MPI_Wait(&q, &st);
            }
            sum += b * 3 + st.MPI_SOURCE;
        }
        add("mprobe", sum);
    } else {
        long b = rank * 11;
        MPI_Send(&b, 1, MPI_LONG, 0, 70, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Waitany / Testsome over receives from everyone. */
static void waitany_testsome(void)
{
    long tot;
    /* Waitany / Testsome over receives from everyone */
    MPI_Request *rs = malloc(sizeof *rs * (size_t)size);
    long *in = calloc((size_t)size, sizeof *in);
    for (int i = 0; i < size; i++) MPI_Irecv(&in[i], 1, MPI_LONG, i, 6, MPI_COMM_WORLD, &rs[i]);
    long mine = rank + 1000;
    for (int i = 0; i < size; i++) MPI_Send(&mine, 1, MPI_LONG, i, 6, MPI_COMM_WORLD);
    int left_ = size;
    while (left_ > 0) {
        int idx;
        MPI_Waitany(size, rs, &idx, MPI_STATUS_IGNORE);
        left_--;
        int outc, ids[256], flag;
        MPI_Testall(size, rs, &flag, MPI_STATUSES_IGNORE);
        if (flag) break;
        MPI_Testsome(size, rs, &outc, ids, MPI_STATUSES_IGNORE);
        if (outc != MPI_UNDEFINED) left_ -= outc;
    }
    long sum = 0;
    for (int i = 0; i < size; i++) sum += in[i];
    free(rs);
    free(in);
    MPI_Allreduce(&sum, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("waitany", tot);
}

/* Collectives, the v-variants and the reductions. */
static void collectives(void)
{
    long tot;
    /* collectives */
    int n = size;
    int *sc = malloc(sizeof(int) * (size_t)n), *rc = malloc(sizeof(int) * (size_t)n);
    int *sd = malloc(sizeof(int) * (size_t)n), *rd = malloc(sizeof(int) * (size_t)n);
    long *sb = malloc(sizeof(long) * 64 * (size_t)n), *rb = malloc(sizeof(long) * 64 * (size_t)n);
    for (int i = 0; i < 64 * n; i++) sb[i] = rank * 7 + i;
    MPI_Allgather(sb, 3, MPI_LONG, rb, 3, MPI_LONG, MPI_COMM_WORLD);
    long c = 0;
    for (int i = 0; i < 3 * n; i++) c += rb[i];
    add("allgather", c);
    MPI_Alltoall(sb, 2, MPI_LONG, rb, 2, MPI_LONG, MPI_COMM_WORLD);
    c = 0;
    for (int i = 0; i < 2 * n; i++) c += rb[i] * (i + 1);
    MPI_Allreduce(&c, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("alltoall", tot);
    for (int i = 0; i < n; i++) {
        sc[i] = (i + rank) % 3 + 1;
        rc[i] = (i + rank) % 3 + 1;
    }
    /* alltoallv: what i sends to j is (i+j)%3+1 elements, symmetric */
    sd[0] = rd[0] = 0;
    for (int i = 1; i < n; i++) {
        sd[i] = sd[i - 1] + sc[i - 1];
        rd[i] = rd[i - 1] + rc[i - 1];
    }
    MPI_Alltoallv(sb, sc, sd, MPI_LONG, rb, rc, rd, MPI_LONG, MPI_COMM_WORLD);
    c = 0;
    for (int i = 0; i < rd[n - 1] + rc[n - 1]; i++) c += rb[i];
    MPI_Allreduce(&c, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("alltoallv", tot);
    int cnt[256], dsp[256];
    for (int i = 0; i < n; i++) {
        cnt[i] = i % 4 + 1;
        dsp[i] = i == 0 ? 0 : dsp[i - 1] + cnt[i - 1];
    }
    MPI_Gatherv(sb, rank % 4 + 1, MPI_LONG, rb, cnt, dsp, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        c = 0;
        for (int i = 0; i < dsp[n - 1] + cnt[n - 1]; i++) c += rb[i];
        add("gatherv", c);
    }
    MPI_Scatterv(sb, cnt, dsp, MPI_LONG, rb, rank % 4 + 1, MPI_LONG, 0, MPI_COMM_WORLD);
    c = 0;
    for (int i = 0; i < rank % 4 + 1; i++) c += rb[i];
    MPI_Allreduce(&c, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("scatterv", tot);
    MPI_Allgatherv(sb, rank % 4 + 1, MPI_LONG, rb, cnt, dsp, MPI_LONG, MPI_COMM_WORLD);
    c = 0;
    for (int i = 0; i < dsp[n - 1] + cnt[n - 1]; i++) c += rb[i];
    add("allgatherv", c);
    long x = rank + 1, y = 0;
    MPI_Scan(&x, &y, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&y, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("scan", tot);
    y = 0;
    MPI_Exscan(&x, &y, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) y = 0;
    MPI_Allreduce(&y, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("exscan", tot);
    for (int i = 0; i < n; i++) rc[i] = 2;
    MPI_Reduce_scatter(sb, rb, rc, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    c = rb[0] + rb[1];
    MPI_Allreduce(&c, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("reduce_scatter", tot);
    MPI_Reduce_scatter_block(sb, rb, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    c = rb[0] + rb[1];
    MPI_Allreduce(&c, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("reduce_scatter_block", tot);
    free(sc); free(rc); free(sd); free(rd); free(sb); free(rb);
}

/* Nonblocking collectives overlapping. */
static void nonblocking_collectives(void)
{
    /* nonblocking collectives overlapping */
    MPI_Request cr[3];
    long b1 = rank == 1 ? 4242 : 0, r2 = 0, x2 = rank;
    MPI_Ibcast(&b1, 1, MPI_LONG, 1 % size, MPI_COMM_WORLD, &cr[0]);
    MPI_Iallreduce(&x2, &r2, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &cr[1]);
    MPI_Ibarrier(MPI_COMM_WORLD, &cr[2]);
    MPI_Waitall(3, cr, MPI_STATUSES_IGNORE);
    add("ibcast", b1);
    add("iallreduce", r2);
}

/* Communicators: split, dup, cart. */
static void communicators(void)
{
    long tot;
    /* communicators: split, dup, cart */
    MPI_Comm half, dup, cart;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    MPI_Comm_dup(half, &dup);
    long hs = rank;
    MPI_Allreduce(MPI_IN_PLACE, &hs, 1, MPI_LONG, MPI_SUM, dup);
    MPI_Allreduce(&hs, &tot, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    add("split", tot);
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    int src, dst;
    MPI_Cart_shift(cart, 0, 1, &src, &dst);
    long sv = rank, rv = -1;
    MPI_Sendrecv(&sv, 1, MPI_LONG, dst, 9, &rv, 1, MPI_LONG, src, 9, cart, MPI_STATUS_IGNORE);
    MPI_Sendrecv_replace(&sv, 1, MPI_LONG, dst, 10, src, 10, cart, MPI_STATUS_IGNORE);
    MPI_Allreduce(MPI_IN_PLACE, &rv, 1, MPI_LONG, MPI_SUM, cart);
    MPI_Allreduce(MPI_IN_PLACE, &sv, 1, MPI_LONG, MPI_SUM, cart);
    add("cart", rv * 1000 + sv);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int bufsz = 1 << 16;
    void *bbuf = malloc(bufsz);
    MPI_Buffer_attach(bbuf, bufsz);

    send_modes(right, left);
    persistent(right, left);
    wildcard_probe();
    matched_probe();
    waitany_testsome();
    collectives();
    nonblocking_collectives();
    communicators();

    int bsz;
    MPI_Buffer_detach(&bbuf, &bsz);
    free(bbuf);
    add("checksum", checksum);
    MPI_Finalize();
    return 0;
}
