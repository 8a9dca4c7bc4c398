/* MPI-3 neighbourhood collectives on Cartesian (periodic and not), graph and distributed-graph
 * topologies, blocking and nonblocking, every variant: the same checksums natively and under
 * mpisim. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank;

static void show(const char *what, const int *v, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) s = s * 31 + v[i];
    printf("rank %d %s: %ld\n", rank, what, s);
}

static void exercise(MPI_Comm c, const char *name, int nin, int nout)
{
    int *sb = malloc(sizeof(int) * (size_t)(3 * nout + 1)), *rb = malloc(sizeof(int) * (size_t)(3 * nin + 1));
    int *sc = malloc(sizeof(int) * (size_t)(nout + 1)), *sd = malloc(sizeof(int) * (size_t)(nout + 1));
    int *rc = malloc(sizeof(int) * (size_t)(nin + 1)), *rd = malloc(sizeof(int) * (size_t)(nin + 1));
    MPI_Aint *sdw = malloc(sizeof(MPI_Aint) * (size_t)(nout + 1)), *rdw = malloc(sizeof(MPI_Aint) * (size_t)(nin + 1));
    MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * (size_t)(nout + 1)), *rt = malloc(sizeof(MPI_Datatype) * (size_t)(nin + 1));
    char what[64];
    for (int i = 0; i < 3 * nout; i++) sb[i] = rank * 1000 + i;
    for (int i = 0; i < nout; i++) { sc[i] = 1 + (i % 2); sd[i] = 3 * i; sdw[i] = (MPI_Aint)sizeof(int) * 3 * i; st[i] = MPI_INT; }
    for (int i = 0; i < nin; i++) { rd[i] = 3 * i; rdw[i] = (MPI_Aint)sizeof(int) * 3 * i; rt[i] = MPI_INT; }
    MPI_Request q;
    for (int nb = 0; nb < 2; nb++) {
        for (int i = 0; i < 3 * nin; i++) rb[i] = -1;
        if (nb) { MPI_Ineighbor_allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, c, &q); MPI_Wait(&q, MPI_STATUS_IGNORE); }
        else MPI_Neighbor_allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, c);
        snprintf(what, sizeof what, "%s %sallgather", name, nb ? "i" : ""); show(what, rb, 3 * nin);
        for (int i = 0; i < nin; i++) rc[i] = 2;
        if (nb) { MPI_Ineighbor_allgatherv(sb, 2, MPI_INT, rb, rc, rd, MPI_INT, c, &q); MPI_Wait(&q, MPI_STATUS_IGNORE); }
        else MPI_Neighbor_allgatherv(sb, 2, MPI_INT, rb, rc, rd, MPI_INT, c);
        snprintf(what, sizeof what, "%s %sallgatherv", name, nb ? "i" : ""); show(what, rb, 3 * nin);
        if (nb) { MPI_Ineighbor_alltoall(sb, 3, MPI_INT, rb, 3, MPI_INT, c, &q); MPI_Wait(&q, MPI_STATUS_IGNORE); }
        else MPI_Neighbor_alltoall(sb, 3, MPI_INT, rb, 3, MPI_INT, c);
        snprintf(what, sizeof what, "%s %salltoall", name, nb ? "i" : ""); show(what, rb, 3 * nin);
        /* v and w: every process sends 1 or 2 ints per neighbour, and receives as many */
        for (int i = 0; i < nin; i++) rc[i] = 3;
        for (int i = 0; i < 3 * nin; i++) rb[i] = -1;
        if (nb) { MPI_Ineighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, c, &q); MPI_Wait(&q, MPI_STATUS_IGNORE); }
        else MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, c);
        snprintf(what, sizeof what, "%s %salltoallv", name, nb ? "i" : ""); show(what, rb, 3 * nin);
        for (int i = 0; i < 3 * nin; i++) rb[i] = -1;
        if (nb) { MPI_Ineighbor_alltoallw(sb, sc, sdw, st, rb, rc, rdw, rt, c, &q); MPI_Wait(&q, MPI_STATUS_IGNORE); }
        else MPI_Neighbor_alltoallw(sb, sc, sdw, st, rb, rc, rdw, rt, c);
        snprintf(what, sizeof what, "%s %salltoallw", name, nb ? "i" : ""); show(what, rb, 3 * nin);
    }
    free(sb); free(rb); free(sc); free(sd); free(rc); free(rd); free(sdw); free(rdw); free(st); free(rt);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int dims[2] = {0, 0}, per[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    /* a periodic dimension of 2 makes both neighbours the same process; Open MPI's blocking and
     * nonblocking neighbourhood collectives then order the two messages differently, and mpisim
     * runs the nonblocking one for both (README, known differences) */
    if (dims[0] == 2) per[0] = 0;
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &cart);
    exercise(cart, "cart", 4, 4);
    MPI_Comm_free(&cart);
    /* distributed graph: each process sends to the next two (a directed ring with a chord) */
    int dst[2] = {(rank + 1) % size, (rank + 2) % size}, src[2] = {(rank + size - 1) % size, (rank + size - 2) % size};
    MPI_Comm dg;
    int w[2] = {1, 1};   /* weights given: Open MPI's MPI_UNWEIGHTED trips gcc's array-bounds check */
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, w, 2, dst, w, MPI_INFO_NULL, 0, &dg);
    exercise(dg, "distgraph", 2, 2);
    MPI_Comm_free(&dg);
    /* graph: a ring */
    int *index = malloc(sizeof(int) * (size_t)size), *edges = malloc(sizeof(int) * (size_t)(2 * size));
    for (int i = 0; i < size; i++) { index[i] = 2 * (i + 1); edges[2 * i] = (i + size - 1) % size; edges[2 * i + 1] = (i + 1) % size; }
    MPI_Comm g;
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g);
    exercise(g, "graph", 2, 2);
    MPI_Comm_free(&g);
    free(index); free(edges);
    MPI_Finalize();
    return 0;
}
