/* Handlers of communicator construction: members meet in the model, then make the real call (see
 * handlers.c for the pattern every handler follows). */
#include "handlers_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* communicator construction: members meet in the model (as MPICH's context-id allreduce),
 * leave it together, then make the real call, which can no longer wait on the model. */

static void comm_sync(MPI_Comm comm, ms_fn_id fn)
{
    ms_rq *r = mh_coll_rq(comm);
    ms_report_icoll(r, MS_WIRE_COLL_ALLREDUCE, 0, 16, NULL, 0, fn);
    shim_wait_sync(r, fn);
    ms_rq_free(r);
}

int ms_h_comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    comm_sync(comm, MS_FN_MPI_Comm_dup);
    int rc = PMPI_Comm_dup(comm, newcomm);
    if (rc == MPI_SUCCESS) ms_comm_register(comm, *newcomm);
    return rc;
}

int ms_h_comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    comm_sync(comm, MS_FN_MPI_Comm_dup_with_info);
    int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
    if (rc == MPI_SUCCESS) ms_comm_register(comm, *newcomm);
    return rc;
}

int ms_h_comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    comm_sync(comm, MS_FN_MPI_Comm_split);
    int rc = PMPI_Comm_split(comm, color, key, newcomm);
    if (rc == MPI_SUCCESS) ms_comm_register(comm, *newcomm);
    return rc;
}

int ms_h_comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    comm_sync(comm, MS_FN_MPI_Comm_split_type);
    int rc = PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
    if (rc == MPI_SUCCESS) ms_comm_register(comm, *newcomm);
    return rc;
}

int ms_h_comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    comm_sync(comm, MS_FN_MPI_Comm_create);
    int rc = PMPI_Comm_create(comm, group, newcomm);
    if (rc == MPI_SUCCESS) ms_comm_register(comm, *newcomm);
    return rc;
}

int ms_h_comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    uint64_t id = ms_comm_prepare_group(comm, group, tag);
    ms_rq *r = ms_rq_new(MS_RQ_COLL);
    r->comm_id = id;
    ms_report_icoll(r, MS_WIRE_COLL_ALLREDUCE, 0, 16, NULL, 0, MS_FN_MPI_Comm_create_group);
    shim_wait_sync(r, MS_FN_MPI_Comm_create_group);
    ms_rq_free(r);
    int rc = PMPI_Comm_create_group(comm, group, tag, newcomm);
    if (rc == MPI_SUCCESS) ms_comm_attach(*newcomm, id);
    return rc;
}

int ms_h_cart_create(MPI_Comm old, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *cart)
{
    comm_sync(old, MS_FN_MPI_Cart_create);
    int rc = PMPI_Cart_create(old, ndims, dims, periods, reorder, cart);
    if (rc == MPI_SUCCESS) ms_comm_register(old, *cart);
    return rc;
}

int ms_h_cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    comm_sync(comm, MS_FN_MPI_Cart_sub);
    int rc = PMPI_Cart_sub(comm, remain_dims, newcomm);
    if (rc == MPI_SUCCESS) ms_comm_register(comm, *newcomm);
    return rc;
}

/* ---- intercommunicators (comms.c: the model's union of the two groups) ---- */

typedef struct icc_args {
    MPI_Comm local, bridge, inter;
    int local_leader, remote_leader, tag, high;
    MPI_Comm *out;
} icc_args;
static int real_intercomm_create(void *p)
{
    icc_args *a = p;
    return PMPI_Intercomm_create(a->local, a->local_leader, a->bridge, a->remote_leader, a->tag, a->out);
}
static int real_intercomm_merge(void *p)
{
    icc_args *a = p;
    return PMPI_Intercomm_merge(a->inter, a->high, a->out);
}

/* MPICH: each group agrees on a context id (an allreduce, as every creation), then the two
 * leaders exchange their groups' process ids over the bridge and each tells its group, played as
 * an intercommunicator allgather of 4 bytes a member once the union is known. The real call waits
 * for the other group, whose ranks the model may still run: it is made while the model holds
 * this rank. */
int ms_h_intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm bridge_comm, int remote_leader, int tag,
                          MPI_Comm *newintercomm)
{
    ms_rq *r = mh_coll_rq(local_comm);
    ms_report_icoll(r, MS_WIRE_COLL_ALLREDUCE, 0, 16, NULL, 0, MS_FN_MPI_Intercomm_create);
    icc_args a = {local_comm, bridge_comm, MPI_COMM_NULL, local_leader, remote_leader, tag, 0, newintercomm};
    ms_msg_result res;
    int rc = shim_wait_around(MS_WIRE_WAIT_ALL, 1, &r, &res, MS_FN_MPI_Intercomm_create, real_intercomm_create, &a);
    ms_rq_free(r);
    if (rc != MPI_SUCCESS) return rc;
    ms_comm_register_intercomm(*newintercomm, tag);
    ms_inter x;
    ms_comm_inter(*newintercomm, &x);
    ms_rq *e = mh_coll_rq(*newintercomm);
    ms_report_icoll_inter(e, MS_WIRE_COLL_ALLGATHER, 0, 4, NULL, 0, x.nlow, MS_FN_MPI_Intercomm_create);
    shim_wait_for(MS_WIRE_WAIT_ALL, 1, &e, &res, MS_FN_MPI_Intercomm_create);
    ms_rq_free(e);
    return rc;
}

/* The union agrees on the new communicator's context id (an allreduce over both groups). */
int ms_h_intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    ms_rq *r = mh_coll_rq(intercomm);
    ms_report_icoll(r, MS_WIRE_COLL_ALLREDUCE, 0, 16, NULL, 0, MS_FN_MPI_Intercomm_merge);
    icc_args a = {MPI_COMM_NULL, MPI_COMM_NULL, intercomm, 0, 0, 0, high, newintracomm};
    ms_msg_result res;
    int rc = shim_wait_around(MS_WIRE_WAIT_ALL, 1, &r, &res, MS_FN_MPI_Intercomm_merge, real_intercomm_merge, &a);
    ms_rq_free(r);
    if (rc == MPI_SUCCESS) ms_comm_register(intercomm, *newintracomm);
    return rc;
}

int ms_h_comm_free(MPI_Comm *comm)
{
    /* Open MPI frees locally; the attribute's delete function frees the shim's record, and the
     * model keeps the id (ids are never reused) */
    return PMPI_Comm_free(comm);
}

/* ---- more communicator constructors ---- */

int ms_h_comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    /* timed as a (blocking) dup; the program gets a request that is already complete */
    int rc = ms_h_comm_dup(comm, newcomm);
    *request = MPI_REQUEST_NULL;
    return rc;
}

int ms_h_graph_create(MPI_Comm old, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm *graph)
{
    comm_sync(old, MS_FN_MPI_Graph_create);
    int rc = PMPI_Graph_create(old, nnodes, index, edges, reorder, graph);
    if (rc == MPI_SUCCESS) ms_comm_register(old, *graph);
    return rc;
}

int ms_h_dist_graph_create_adjacent(MPI_Comm old, int indegree, const int sources[], const int sourceweights[],
                                    int outdegree, const int destinations[], const int destweights[], MPI_Info info,
                                    int reorder, MPI_Comm *graph)
{
    comm_sync(old, MS_FN_MPI_Dist_graph_create_adjacent);
    int rc = PMPI_Dist_graph_create_adjacent(old, indegree, sources, sourceweights, outdegree, destinations,
                                             destweights, info, reorder, graph);
    if (rc == MPI_SUCCESS) ms_comm_register(old, *graph);
    return rc;
}

int ms_h_dist_graph_create(MPI_Comm old, int n, const int sources[], const int degrees[], const int destinations[],
                           const int weights[], MPI_Info info, int reorder, MPI_Comm *graph)
{
    comm_sync(old, MS_FN_MPI_Dist_graph_create);
    int rc = PMPI_Dist_graph_create(old, n, sources, degrees, destinations, weights, info, reorder, graph);
    if (rc == MPI_SUCCESS) ms_comm_register(old, *graph);
    return rc;
}
