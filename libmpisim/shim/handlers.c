/* Handlers of the modelled MPI calls (named in mpi_calls.spec; the wrappers call them).
 *
 * Pattern of every handler (DESIGN.md, "Keeping the real MPI moving"): post the real operation
 * in its nonblocking form as soon as its arguments are known, report the event to the model,
 * wait for the model's virtual completion while driving the real MPI, then complete the real
 * operation. */
#include <stdlib.h>
#include <string.h>
#include "ms_model.h"
#include "shim.h"

static uint64_t type_bytes(MPI_Datatype dt, int count)
{
    int sz = 0;
    if (dt == MPI_DATATYPE_NULL || count <= 0) return 0;
    PMPI_Type_size(dt, &sz);
    return (uint64_t)sz * (uint64_t)count;
}

static int peer_to_model(int peer)
{
    if (peer == MPI_ANY_SOURCE) return MS_ANY_SOURCE;
    if (peer == MPI_PROC_NULL) return MS_PROC_NULL;
    return peer;
}

static void copy_status(MPI_Status *dst, const MPI_Status *src)
{
    if (dst != MPI_STATUS_IGNORE) *dst = *src;
}

static void empty_status(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE) return;
    memset(st, 0, sizeof *st);
    st->MPI_SOURCE = MPI_PROC_NULL;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = MPI_SUCCESS;
}

/* Start the real send. Eager sends of a size the real MPI may not buffer go from a copy, so
 * that when the model lets the program go on the real transfer can finish later by itself. */
static int post_real_send(ms_rq *r, const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                          MPI_Comm comm, uint64_t bytes, int sync)
{
    if (ms_has_server() && !sync && bytes > MS_REAL_EAGER_SAFE && (int64_t)bytes < ms_eager_threshold()) {
        int need = 0;
        PMPI_Pack_size(count, dt, comm, &need);
        if ((size_t)need > r->copy_cap) {
            void *p = realloc(r->copy, (size_t)need);
            if (!p) ms_fatal("out of memory copying an eager send");
            r->copy = p;
            r->copy_cap = (size_t)need;
        }
        int pos = 0;
        PMPI_Pack(buf, count, dt, r->copy, need, &pos, comm);
        r->detached_copy = 1;
        r->real_posted = 1;
        return PMPI_Isend(r->copy, pos, MPI_PACKED, dest, tag, comm, &r->real);
    }
    r->real_posted = 1;
    if (sync) return PMPI_Issend(buf, count, dt, dest, tag, comm, &r->real);
    return PMPI_Isend(buf, count, dt, dest, tag, comm, &r->real);
}

/* After the model has completed r: finish the real side and release r. */
static int finish(ms_rq *r, MPI_Status *status)
{
    int rc = MPI_SUCCESS;
    if (r->kind == MS_RQ_SEND && r->detached_copy && !r->real_done) {
        int flag = 0;
        PMPI_Test(&r->real, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            ms_detach_send(r);
            empty_status(status);
            return MPI_SUCCESS;
        }
        r->real_done = 1;
    }
    if (r->kind == MS_RQ_RECV && r->deferred) ms_post_deferred();
    if (r->kind == MS_RQ_RECV && r->deferred) ms_fatal("internal: a completed receive could not be posted");
    rc = ms_real_complete(r);
    if (r->kind == MS_RQ_RECV) copy_status(status, &r->status);
    else empty_status(status);
    if (r->user_is_grequest) {
        PMPI_Grequest_complete(r->user);
        PMPI_Request_free(&r->user);
    }
    ms_rq_free(r);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* point-to-point */

static ms_rq *start_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                         int mode, ms_fn_id fn, int *rc)
{
    ms_rq *r = ms_rq_new(MS_RQ_SEND);
    r->comm_id = ms_comm_id(comm);
    uint64_t bytes = type_bytes(dt, count);
    *rc = post_real_send(r, buf, count, dt, dest, tag, comm, bytes, mode == MS_SEND_SYNC);
    if (*rc != MPI_SUCCESS) {
        ms_rq_free(r);
        return NULL;
    }
    ms_report_isend(r, peer_to_model(dest), tag, bytes, mode, fn);
    ms_advance(ms_isend_cost(bytes));
    return r;
}

static ms_rq *start_recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, ms_fn_id fn,
                         int *rc)
{
    ms_rq *r = ms_rq_new(MS_RQ_RECV);
    r->comm_id = ms_comm_id(comm);
    r->buf = buf;
    r->count = count;
    r->dtype = dt;
    r->src = src;
    r->tag = tag;
    r->comm = comm;
    uint64_t bytes = type_bytes(dt, count);
    *rc = MPI_SUCCESS;
    /* capture only: no model to decide wildcards, the real MPI does */
    if (!ms_has_server() || (src != MPI_ANY_SOURCE && tag != MPI_ANY_TAG && !ms_recv_has_unresolved_before(r->comm_id))) {
        r->resolved = 1;
        r->real_posted = 1;
        *rc = PMPI_Irecv(buf, count, dt, src, tag, comm, &r->real);
        if (*rc != MPI_SUCCESS) {
            ms_rq_free(r);
            return NULL;
        }
    } else {
        r->resolved = (src != MPI_ANY_SOURCE && tag != MPI_ANY_TAG);
        ms_defer_recv(r);
    }
    ms_report_irecv(r, peer_to_model(src), tag, bytes, fn);
    ms_advance(ms_irecv_cost(bytes));
    return r;
}

int ms_h_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    if (dest == MPI_PROC_NULL) return PMPI_Send(buf, count, dt, dest, tag, comm);
    int rc;
    ms_rq *r = start_send(buf, count, dt, dest, tag, comm, MS_SEND_STANDARD, MS_FN_MPI_Send, &rc);
    if (!r) return rc;
    ms_msg_result res;
    ms_model_wait_for(MS_WAIT_ALL, 1, &r, &res, MS_FN_MPI_Send);
    return finish(r, MPI_STATUS_IGNORE);
}

int ms_h_recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (src == MPI_PROC_NULL) return PMPI_Recv(buf, count, dt, src, tag, comm, status);
    int rc;
    ms_rq *r = start_recv(buf, count, dt, src, tag, comm, MS_FN_MPI_Recv, &rc);
    if (!r) return rc;
    ms_msg_result res;
    ms_model_wait_for(MS_WAIT_ALL, 1, &r, &res, MS_FN_MPI_Recv);
    return finish(r, status);
}

static int query_fn(void *extra, MPI_Status *st)
{
    ms_rq *r = extra;
    *st = r->status;
    return MPI_SUCCESS;
}
static int free_fn(void *extra) { (void)extra; return MPI_SUCCESS; }
static int cancel_fn(void *extra, int complete) { (void)extra; (void)complete; return MPI_SUCCESS; }

int ms_h_isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    if (dest == MPI_PROC_NULL) return PMPI_Isend(buf, count, dt, dest, tag, comm, request);
    int rc;
    ms_rq *r = start_send(buf, count, dt, dest, tag, comm, MS_SEND_STANDARD, MS_FN_MPI_Isend, &rc);
    if (!r) return rc;
    r->user = r->real;
    ms_rq_index(r);
    *request = r->user;
    return MPI_SUCCESS;
}

int ms_h_irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Request *request)
{
    if (src == MPI_PROC_NULL) return PMPI_Irecv(buf, count, dt, src, tag, comm, request);
    int rc;
    ms_rq *r = start_recv(buf, count, dt, src, tag, comm, MS_FN_MPI_Irecv, &rc);
    if (!r) return rc;
    if (r->real_posted) {
        r->user = r->real;
    } else {
        /* the real receive waits for the model to name its sender; the program gets a stand-in */
        PMPI_Grequest_start(query_fn, free_fn, cancel_fn, r, &r->user);
        r->user_is_grequest = 1;
    }
    ms_rq_index(r);
    *request = r->user;
    return MPI_SUCCESS;
}

int ms_h_sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    if (dest == MPI_PROC_NULL || source == MPI_PROC_NULL)
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                             recvtag, comm, status);
    int rc;
    ms_rq *rr = start_recv(recvbuf, recvcount, recvtype, source, recvtag, comm, MS_FN_MPI_Sendrecv, &rc);
    if (!rr) return rc;
    ms_rq *sr = start_send(sendbuf, sendcount, sendtype, dest, sendtag, comm, MS_SEND_STANDARD, MS_FN_MPI_Sendrecv,
                           &rc);
    if (!sr) return rc;
    ms_rq *both[2] = {rr, sr};
    ms_msg_result res[2];
    ms_model_wait_for(MS_WAIT_ALL, 2, both, res, MS_FN_MPI_Sendrecv);
    rc = finish(rr, status);
    int rc2 = finish(sr, MPI_STATUS_IGNORE);
    return rc != MPI_SUCCESS ? rc : rc2;
}

static ms_rq *lookup(MPI_Request req, const char *call)
{
    ms_rq *r = ms_rq_find(req);
    if (!r) ms_fatal("%s on a request that mpisim did not create (made by an unmodelled call?)", call);
    return r;
}

int ms_h_wait(MPI_Request *request, MPI_Status *status)
{
    if (*request == MPI_REQUEST_NULL) {
        empty_status(status);
        return MPI_SUCCESS;
    }
    ms_rq *r = lookup(*request, "MPI_Wait");
    ms_msg_result res;
    ms_model_wait_for(MS_WAIT_ALL, 1, &r, &res, MS_FN_MPI_Wait);
    ms_rq_unindex(r);
    *request = MPI_REQUEST_NULL;
    return finish(r, status);
}

int ms_h_waitall(int count, MPI_Request reqs[], MPI_Status *statuses)
{
    ms_rq *small[32];
    ms_msg_result res_small[32];
    ms_rq **rs = count <= 32 ? small : malloc(sizeof *rs * (size_t)count);
    ms_msg_result *res = count <= 32 ? res_small : malloc(sizeof *res * (size_t)count);
    if (!rs || !res) ms_fatal("out of memory");
    int n = 0;
    for (int i = 0; i < count; i++)
        if (reqs[i] != MPI_REQUEST_NULL) rs[n++] = lookup(reqs[i], "MPI_Waitall");
    if (n) ms_model_wait_for(MS_WAIT_ALL, n, rs, res, MS_FN_MPI_Waitall);
    int rc = MPI_SUCCESS;
    for (int i = 0, k = 0; i < count; i++) {
        MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
        if (reqs[i] == MPI_REQUEST_NULL) {
            empty_status(st);
            continue;
        }
        ms_rq *r = rs[k++];
        ms_rq_unindex(r);
        reqs[i] = MPI_REQUEST_NULL;
        int e = finish(r, st);
        if (e != MPI_SUCCESS) rc = e;
    }
    if (rs != small) free(rs);
    if (res != res_small) free(res);
    return rc;
}

int ms_h_test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (*request == MPI_REQUEST_NULL) {
        *flag = 1;
        empty_status(status);
        return MPI_SUCCESS;
    }
    ms_rq *r = lookup(*request, "MPI_Test");
    ms_msg_result res;
    ms_model_wait_for(MS_TEST_ALL, 1, &r, &res, MS_FN_MPI_Test);
    if (!res.completed) {
        *flag = 0;
        /* keep the real transfer moving between polls */
        ms_post_deferred();
        return MPI_SUCCESS;
    }
    *flag = 1;
    ms_rq_unindex(r);
    *request = MPI_REQUEST_NULL;
    return finish(r, status);
}

/* ---------------------------------------------------------------------------------------- */
/* collectives: the real nonblocking collective is posted first, the model times it */

static int coll(MPI_Comm comm, int kind, int root, uint64_t bytes, ms_fn_id fn, int rc, ms_rq *r)
{
    if (rc != MPI_SUCCESS) {
        ms_rq_free(r);
        return rc;
    }
    r->real_posted = 1;
    ms_report_icoll(r, kind, root, bytes, NULL, 0, fn);
    ms_msg_result res;
    ms_model_wait_for(MS_WAIT_ALL, 1, &r, &res, fn);
    (void)comm;
    return finish(r, MPI_STATUS_IGNORE);
}

static ms_rq *coll_rq(MPI_Comm comm)
{
    ms_rq *r = ms_rq_new(MS_RQ_COLL);
    r->comm_id = ms_comm_id(comm);
    return r;
}

int ms_h_barrier(MPI_Comm comm)
{
    ms_rq *r = coll_rq(comm);
    return coll(comm, MS_COLL_BARRIER, 0, 0, MS_FN_MPI_Barrier, PMPI_Ibarrier(comm, &r->real), r);
}

int ms_h_bcast(void *buffer, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    ms_rq *r = coll_rq(comm);
    return coll(comm, MS_COLL_BCAST, root, type_bytes(dt, count), MS_FN_MPI_Bcast,
                PMPI_Ibcast(buffer, count, dt, root, comm, &r->real), r);
}

int ms_h_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    ms_rq *r = coll_rq(comm);
    return coll(comm, MS_COLL_REDUCE, root, type_bytes(dt, count), MS_FN_MPI_Reduce,
                PMPI_Ireduce(sendbuf, recvbuf, count, dt, op, root, comm, &r->real), r);
}

int ms_h_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    ms_rq *r = coll_rq(comm);
    return coll(comm, MS_COLL_ALLREDUCE, 0, type_bytes(dt, count), MS_FN_MPI_Allreduce,
                PMPI_Iallreduce(sendbuf, recvbuf, count, dt, op, comm, &r->real), r);
}

int ms_h_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int me;
    PMPI_Comm_rank(comm, &me);
    /* one block: what each member contributes (the root's recv block when it sends in place) */
    uint64_t block = (me == root && sendbuf == MPI_IN_PLACE) ? type_bytes(recvtype, recvcount)
                                                           : type_bytes(sendtype, sendcount);
    ms_rq *r = coll_rq(comm);
    return coll(comm, MS_COLL_GATHER, root, block, MS_FN_MPI_Gather,
                PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, &r->real), r);
}

int ms_h_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int me;
    PMPI_Comm_rank(comm, &me);
    uint64_t block = me == root ? type_bytes(sendtype, sendcount) : type_bytes(recvtype, recvcount);
    ms_rq *r = coll_rq(comm);
    return coll(comm, MS_COLL_SCATTER, root, block, MS_FN_MPI_Scatter,
                PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, &r->real), r);
}

/* ---------------------------------------------------------------------------------------- */
/* communicator construction: members meet in the model (as MPICH's context-id allreduce),
 * leave it together, then make the real call, which can no longer wait on the model. */

static void comm_sync(MPI_Comm comm, ms_fn_id fn)
{
    ms_rq *r = coll_rq(comm);
    ms_report_icoll(r, MS_COLL_ALLREDUCE, 0, 16, NULL, 0, fn);
    ms_model_wait_sync(r, fn);
    ms_rq_free(r);
}

int ms_h_comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    comm_sync(comm, MS_FN_MPI_Comm_dup);
    int rc = PMPI_Comm_dup(comm, newcomm);
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

int ms_h_comm_free(MPI_Comm *comm)
{
    /* Open MPI frees locally; the model keeps the id (ids are never reused) */
    ms_comm_forget(*comm);
    return PMPI_Comm_free(comm);
}
