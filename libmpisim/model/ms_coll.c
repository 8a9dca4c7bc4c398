/* Collective algorithms as per-member step lists (see ms_coll.h and README.md): names, selection
 * and the entry points. The generators are in ms_coll_intra.c and ms_coll_inter.c.
 *
 * Every generator transcribes the message pattern of the MPICH 3.x intra-communicator
 * algorithm of the same name (src/mpi/coll/{barrier,bcast,reduce,allreduce,gather,scatter,
 * allgather,allgatherv,alltoall,alltoallv,red_scat,scan,exscan,gatherv,scatterv}.c): which
 * peer, in which order, how many bytes. Blocking calls of MPICH (MPIC_Send, MPIC_Recv,
 * MPIC_Sendrecv) are one step each; batches of nonblocking calls completed by one Waitall
 * are one step.
 */
#include "ms_coll_internal.h"

/* ---- names --------------------------------------------------------------------------------- */

static const char *const kind_names[MS_COLL_COUNT] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall",
    "reduce_scatter", "scan", "exscan", "gatherv", "scatterv", "allgatherv", "alltoallv", "neighbor"};
static const char *const mpi_names[MS_COLL_COUNT] = {
    "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Scatter",
    "MPI_Allgather", "MPI_Alltoall", "MPI_Reduce_scatter", "MPI_Scan", "MPI_Exscan",
    "MPI_Gatherv", "MPI_Scatterv", "MPI_Allgatherv", "MPI_Alltoallv", "MPI_Neighbor_*"};

/* Algorithm tables: index 0 is "auto". */
static const char *const alg_names[MS_COLL_COUNT][MAXALG] = {
    /* barrier */ {"auto", "dissemination", NULL, NULL},
    /* bcast */ {"auto", "binomial", "scatter_doubling_allgather", "scatter_ring_allgather", "multicast"},
    /* reduce */ {"auto", "binomial", "reduce_scatter_gather", NULL},
    /* allreduce */ {"auto", "recursive_doubling", "reduce_scatter_allgather", NULL},
    /* gather */ {"auto", "binomial", "linear", NULL},
    /* scatter */ {"auto", "binomial", "linear", NULL},
    /* allgather */ {"auto", "recursive_doubling", "bruck", "ring"},
    /* alltoall */ {"auto", "bruck", "scattered", "pairwise"},
    /* reduce_scatter */ {"auto", "recursive_halving", "pairwise", NULL},
    /* scan */ {"auto", "recursive_doubling", NULL, NULL},
    /* exscan */ {"auto", "recursive_doubling", NULL, NULL},
    /* gatherv */ {"auto", "linear", NULL, NULL},
    /* scatterv */ {"auto", "linear", NULL, NULL},
    /* allgatherv */ {"auto", "recursive_doubling", "bruck", "ring"},
    /* alltoallv */ {"auto", "scattered", NULL, NULL},
    /* neighbor */ {"auto", "linear", NULL, NULL},
};
static const char *const alg_choices[MS_COLL_COUNT] = {
    "auto|dissemination",
    "auto|binomial|scatter_doubling_allgather|scatter_ring_allgather|multicast",
    "auto|binomial|reduce_scatter_gather",
    "auto|recursive_doubling|reduce_scatter_allgather",
    "auto|binomial|linear",
    "auto|binomial|linear",
    "auto|recursive_doubling|bruck|ring",
    "auto|bruck|scattered|pairwise",
    "auto|recursive_halving|pairwise",
    "auto|recursive_doubling",
    "auto|recursive_doubling",
    "auto|linear",
    "auto|linear",
    "auto|recursive_doubling|bruck|ring",
    "auto|scattered",
    "auto|linear",
};

const char *ms_coll_kind_name(ms_coll_kind kind)
{
    return (unsigned)kind < MS_COLL_COUNT ? kind_names[kind] : "?";
}
const char *ms_coll_mpi_name(ms_coll_kind kind)
{
    return (unsigned)kind < MS_COLL_COUNT ? mpi_names[kind] : "MPI_?";
}
int ms_coll_algorithm_count(ms_coll_kind kind)
{
    if ((unsigned)kind >= MS_COLL_COUNT) return 0;
    int n = 0;
    while (n < MAXALG && alg_names[kind][n]) n++;
    return n;
}
const char *ms_coll_algorithm_name(ms_coll_kind kind, int alg)
{
    if (alg < 0 || alg >= ms_coll_algorithm_count(kind)) return NULL;
    return alg_names[kind][alg];
}
int ms_coll_algorithm_lookup(ms_coll_kind kind, const char *name)
{
    int n = ms_coll_algorithm_count(kind);
    for (int i = 0; name && i < n; i++)
        if (!strcmp(alg_names[kind][i], name)) return i;
    return -1;
}
const char *ms_coll_algorithm_choices(ms_coll_kind kind)
{
    return (unsigned)kind < MS_COLL_COUNT ? alg_choices[kind] : NULL;
}

/* ---- selection ----------------------------------------------------------------------------- */

int ms_coll_choose(ms_coll_kind kind, int P, uint64_t bytes, const uint64_t *counts)
{
    int pof2 = pof2_floor(P > 0 ? P : 1);
    uint64_t esz = elem_size(bytes);
    switch (kind) {
    case MS_COLL_BARRIER: return BAR_DISSEM;
    case MS_COLL_BCAST:
        if (bytes < BCAST_SHORT_MSG || P < BCAST_MIN_PROCS) return BC_BINOMIAL;
        if (bytes < BCAST_LONG_MSG && is_pof2(P)) return BC_SCATTER_RD;
        return BC_SCATTER_RING;
    case MS_COLL_REDUCE:
        return (bytes > REDUCE_SHORT_MSG && bytes / esz >= (uint64_t)pof2) ? RED_RSG : RED_BINOMIAL;
    case MS_COLL_ALLREDUCE:
        return (bytes <= ALLREDUCE_SHORT_MSG || bytes / esz < (uint64_t)pof2) ? AR_RD : AR_RSAG;
    case MS_COLL_GATHER: case MS_COLL_SCATTER: return GS_BINOMIAL;
    case MS_COLL_GATHERV: case MS_COLL_SCATTERV: return 1;
    case MS_COLL_ALLGATHER: case MS_COLL_ALLGATHERV: {
        uint64_t tot = sum_counts(kind == MS_COLL_ALLGATHERV ? counts : NULL, P, bytes);
        if (tot < ALLGATHER_LONG_MSG && is_pof2(P)) return AG_RD;
        if (tot < ALLGATHER_SHORT_MSG) return AG_BRUCK;
        return AG_RING;
    }
    case MS_COLL_ALLTOALL:
        if (bytes <= ALLTOALL_SHORT_MSG && P >= ALLTOALL_MIN_PROCS) return A2A_BRUCK;
        if (bytes <= ALLTOALL_MEDIUM_MSG) return A2A_SCATTERED;
        return A2A_PAIRWISE;
    case MS_COLL_ALLTOALLV: return 1;
    case MS_COLL_REDUCE_SCATTER:
        return sum_counts(counts, P, bytes) < REDSCAT_COMM_LONG_MSG ? RS_HALVING : RS_PAIRWISE;
    case MS_COLL_SCAN: case MS_COLL_EXSCAN: return 1;
    default: return 1;
    }
}

/* Forced algorithms that need a power of two fall back to the automatic choice. */
int mscoll_applicable(ms_coll_kind kind, int alg, int P)
{
    if (kind == MS_COLL_BCAST && alg == BC_SCATTER_RD) return is_pof2(P);
    if ((kind == MS_COLL_ALLGATHER || kind == MS_COLL_ALLGATHERV) && alg == AG_RD) return is_pof2(P);
    return 1;
}

void ms_coll_plan_free(ms_coll_plan *p)
{
    if (!p) return;
    free(p->steps);
    free(p->ops);
    memset(p, 0, sizeof *p);
}

/* MPI_Neighbor_*: MPICH posts a receive from every in-neighbour and a send to every out-neighbour
 * at once and waits for all (counts: see MS_COLL_NEIGHBOR in ms_model.h). */
int ms_coll_generate_spec(ms_coll_plan *p, const ms_coll_spec *s)
{
    if (!p || !s || (unsigned)s->kind >= MS_COLL_COUNT || s->size < 1 || s->me < 0 || s->me >= s->size) return -1;
    p->nsteps = 0;
    p->nops = 0;
    p->pending_copy = 0;
    p->oom = 0;
    if (s->inter_low) return mscoll_gen_inter(p, s);
    return mscoll_gen_intra(p, s->kind, s->alg, s->size, s->me, s->root, s->bytes, s->counts,
                     s->counts ? s->ncounts : 0);
}

int ms_coll_generate(ms_coll_plan *p, ms_coll_kind kind, int alg, int P, int me, int root, uint64_t bytes,
                     const uint64_t *counts)
{
    ms_coll_spec s = {kind, alg, P, me, root, bytes, counts, counts ? (size_t)P : 0, 0};
    return ms_coll_generate_spec(p, &s);
}
