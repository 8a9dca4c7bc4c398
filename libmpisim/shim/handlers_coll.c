/* Handlers of the collectives: blocking and nonblocking, neighbourhood (see handlers.c for the
 * pattern every handler follows). */
#include "handlers_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* collectives: the real nonblocking collective is posted first, the model times it */

/* rc: what posting the real nonblocking collective returned; request: NULL for a blocking call,
 * else where the program's handle goes. inter_low: an intercommunicator's (ms_coll_args), else 0. */
static int coll_vx(int kind, int root, uint64_t bytes, const uint64_t *counts, int ncounts, int inter_low,
                   ms_fn_id fn, int rc, ms_rq *r, MPI_Request *request)
{
    if (rc != MPI_SUCCESS) {
        ms_rq_free(r);
        return rc;
    }
    r->real_posted = 1;
    /* A collective that moves nothing completes in the model at its post (ms_model.h), before the
     * other members may have entered, while the real one can wait for them: it has no output, so
     * the shim completes it later, as an eager send's copy (a barrier and neighbourhood
     * collectives are never empty) */
    int empty = ms_has_server() && bytes == 0 && kind != MS_WIRE_COLL_BARRIER && kind != MS_WIRE_COLL_NEIGHBOR;
    for (int i = 0; empty && counts && i < ncounts; i++) empty = counts[i] == 0;
    if (empty) r->detached_copy = 1;
    ms_report_icoll_inter(r, kind, root, bytes, counts, ncounts, inter_low, fn);
    if (request) {
        give_handle(r, request);
        return MPI_SUCCESS;
    }
    ms_msg_result res;
    shim_wait_for(MS_WIRE_WAIT_ALL, 1, &r, &res, fn);
    return mh_finish(r, MPI_STATUS_IGNORE);
}
/* Capture only (no model) and a blocking call: the real blocking collective (Open MPI's tuned
 * algorithms) instead of its nonblocking form and a wait (libnbc, progressed by polling: 2 % of a
 * 64-rank fan's capture in libnbc alone, and more in the progress loop). The same records follow:
 * ICOLL, WAIT, RESUME. Not for intercommunicators (their records need the union's ranks). */
static int capture_blocking(MPI_Comm comm, MPI_Request *request)
{
    int inter = 0;
    if (request || ms_has_server()) return 0;
    PMPI_Comm_test_inter(comm, &inter);
    return !inter;
}
static int coll_done(int kind, int root, uint64_t bytes, ms_fn_id fn, int rc, ms_rq *r)
{
    if (rc != MPI_SUCCESS) {
        ms_rq_free(r);
        return rc;
    }
    r->real_posted = 1;
    r->real_done = 1;
    r->real = MPI_REQUEST_NULL;
    ms_report_icoll_inter(r, kind, root, bytes, NULL, 0, 0, fn);
    ms_msg_result res;
    shim_wait_for(MS_WIRE_WAIT_ALL, 1, &r, &res, fn);
    return mh_finish(r, MPI_STATUS_IGNORE);
}
static int coll_v(int kind, int root, uint64_t bytes, const uint64_t *counts, int ncounts, ms_fn_id fn, int rc,
                  ms_rq *r, MPI_Request *request)
{
    return coll_vx(kind, root, bytes, counts, ncounts, 0, fn, rc, r, request);
}

ms_rq *mh_coll_rq(MPI_Comm comm)
{
    ms_rq *r = ms_rq_new(MS_RQ_COLL);
    r->comm_id = ms_comm_id(comm);
    return r;
}

/* Intercommunicators (comms.c): the root as the model's union rank (MPI_ROOT: this rank;
 * MPI_PROC_NULL: the root's group's other members, MS_WIRE_COLL_ROOT_NONE; else a remote rank). */
static int inter_root(const ms_inter *x, int root)
{
    if (root == MPI_ROOT) return x->urank;
    if (root == MPI_PROC_NULL) return MS_WIRE_COLL_ROOT_NONE;
    return x->roff + root;
}

int ms_h_barrier(MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    if (capture_blocking(comm, request)) return coll_done(MS_WIRE_COLL_BARRIER, 0, 0, fn, PMPI_Barrier(comm), mh_coll_rq(comm));
    int low = ms_comm_inter(comm, &x) ? x.nlow : 0;
    ms_rq *r = mh_coll_rq(comm);
    return coll_vx(MS_WIRE_COLL_BARRIER, 0, 0, NULL, 0, low, fn, PMPI_Ibarrier(comm, &r->real), r, request);
}

int ms_h_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    if (capture_blocking(comm, request))
        return coll_done(MS_WIRE_COLL_ALLREDUCE, 0, type_bytes(dt, count), fn,
                         PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm), mh_coll_rq(comm));
    int low = ms_comm_inter(comm, &x) ? x.nlow : 0;
    ms_rq *r = mh_coll_rq(comm);
    return coll_vx(MS_WIRE_COLL_ALLREDUCE, 0, type_bytes(dt, count), NULL, 0, low, fn,
                   PMPI_Iallreduce(sendbuf, recvbuf, count, dt, op, comm, &r->real), r, request);
}

/* Ranks whose part of a collective has no output (bcast root, reduce and gather non-roots,
 * scatter root) may finish in the model before the slowest member has even entered, while the
 * real collective (Open MPI's libnbc) can wait for it: such ranks give the real operation a
 * copy of their input and leave the real completion to the shim (as eager sends do). */
static const void *input_copy(ms_rq *r, const void *buf, int count, MPI_Datatype dt)
{
    if (!ms_has_server() || buf == MPI_IN_PLACE || count <= 0) return buf;
    MPI_Aint lb, extent, tlb, textent;
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &tlb, &textent);
    size_t span = (size_t)(tlb + (MPI_Aint)(count - 1) * extent + textent);
    if (span > r->copy_cap) {
        void *p = realloc(r->copy, span);
        if (!p) ms_fatal("out of memory copying a collective's input");
        r->copy = p;
        r->copy_cap = span;
    }
    memcpy(r->copy, buf, span);
    r->detached_copy = 1;
    return r->copy;
}

int ms_h_bcast(void *buffer, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *request,
               ms_fn_id fn)
{
    if (capture_blocking(comm, request))
        return coll_done(MS_WIRE_COLL_BCAST, root, type_bytes(dt, count), fn, PMPI_Bcast(buffer, count, dt, root, comm),
                         mh_coll_rq(comm));
    ms_rq *r = mh_coll_rq(comm);
    void *buf = buffer;
    ms_inter x;
    if (ms_comm_inter(comm, &x)) {   /* the root (MPI_ROOT) has no output; its group's others take no part */
        if (root == MPI_ROOT) buf = (void *)input_copy(r, buffer, count, dt);
        return coll_vx(MS_WIRE_COLL_BCAST, inter_root(&x, root), type_bytes(dt, count), NULL, 0, x.nlow, fn,
                       PMPI_Ibcast(buf, count, dt, root, comm, &r->real), r, request);
    }
    if (mh_comm_rank_of(comm) == root) buf = (void *)input_copy(r, buffer, count, dt);
    return coll_v(MS_WIRE_COLL_BCAST, root, type_bytes(dt, count), NULL, 0, fn,
                  PMPI_Ibcast(buf, count, dt, root, comm, &r->real), r, request);
}

int ms_h_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    if (capture_blocking(comm, request))
        return coll_done(MS_WIRE_COLL_REDUCE, root, type_bytes(dt, count), fn,
                         PMPI_Reduce(sendbuf, recvbuf, count, dt, op, root, comm), mh_coll_rq(comm));
    ms_rq *r = mh_coll_rq(comm);
    const void *in = sendbuf;
    ms_inter x;
    if (ms_comm_inter(comm, &x)) {   /* the remote group sends (no output); the root receives */
        if (root >= 0) in = input_copy(r, sendbuf, count, dt);
        return coll_vx(MS_WIRE_COLL_REDUCE, inter_root(&x, root), type_bytes(dt, count), NULL, 0, x.nlow, fn,
                       PMPI_Ireduce(in, recvbuf, count, dt, op, root, comm, &r->real), r, request);
    }
    if (mh_comm_rank_of(comm) != root) in = input_copy(r, sendbuf, count, dt);
    return coll_v(MS_WIRE_COLL_REDUCE, root, type_bytes(dt, count), NULL, 0, fn,
                  PMPI_Ireduce(in, recvbuf, count, dt, op, root, comm, &r->real), r, request);
}

static uint64_t gather_block(MPI_Comm comm, int root, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             int recvcount, MPI_Datatype recvtype)
{
    return (mh_comm_rank_of(comm) == root && sendbuf == MPI_IN_PLACE) ? type_bytes(recvtype, recvcount)
                                                                    : type_bytes(sendtype, sendcount);
}

int ms_h_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_rq *r = mh_coll_rq(comm);
    const void *in = sendbuf;
    ms_inter x;
    if (ms_comm_inter(comm, &x)) {   /* the root receives a block of each remote member */
        uint64_t block = root == MPI_ROOT ? type_bytes(recvtype, recvcount) : type_bytes(sendtype, sendcount);
        if (root >= 0) in = input_copy(r, sendbuf, sendcount, sendtype);
        return coll_vx(MS_WIRE_COLL_GATHER, inter_root(&x, root), block, NULL, 0, x.nlow, fn,
                       PMPI_Igather(in, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, &r->real), r,
                       request);
    }
    uint64_t block = gather_block(comm, root, sendbuf, sendcount, sendtype, recvcount, recvtype);
    if (mh_comm_rank_of(comm) != root) in = input_copy(r, sendbuf, sendcount, sendtype);
    return coll_v(MS_WIRE_COLL_GATHER, root, block, NULL, 0, fn,
                  PMPI_Igather(in, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, &r->real), r,
                  request);
}

/* The scatter root's own block is copied here, locally, so that its real operation has no
 * output and can be left to finish later. */
static const void *scatter_root_prepare(ms_rq *r, const void *sendbuf, int total, MPI_Datatype sendtype,
                                        MPI_Aint own_disp, int own_count, void **recvbuf, int recvcount,
                                        MPI_Datatype recvtype)
{
    if (!ms_has_server()) return sendbuf;
    if (*recvbuf != MPI_IN_PLACE) {
        MPI_Aint lb, extent;
        PMPI_Type_get_extent(sendtype, &lb, &extent);
        PMPI_Sendrecv((const char *)sendbuf + own_disp * extent, own_count, sendtype, 0, 0, *recvbuf, recvcount,
                      recvtype, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
        *recvbuf = MPI_IN_PLACE;
    }
    return input_copy(r, sendbuf, total, sendtype);
}

int ms_h_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_rq *r = mh_coll_rq(comm);
    const void *in = sendbuf;
    ms_inter x;
    if (ms_comm_inter(comm, &x)) {   /* the root sends a block to each remote member, receives none */
        uint64_t block = root == MPI_ROOT ? type_bytes(sendtype, sendcount) : type_bytes(recvtype, recvcount);
        if (root == MPI_ROOT) in = input_copy(r, sendbuf, sendcount * x.rsize, sendtype);
        return coll_vx(MS_WIRE_COLL_SCATTER, inter_root(&x, root), block, NULL, 0, x.nlow, fn,
                       PMPI_Iscatter(in, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, &r->real), r,
                       request);
    }
    int me = mh_comm_rank_of(comm);
    uint64_t block = me == root ? type_bytes(sendtype, sendcount) : type_bytes(recvtype, recvcount);
    if (me == root)
        in = scatter_root_prepare(r, sendbuf, sendcount * mh_comm_size_of(comm), sendtype, (MPI_Aint)sendcount * root,
                                  sendcount, &recvbuf, recvcount, recvtype);
    return coll_v(MS_WIRE_COLL_SCATTER, root, block, NULL, 0, fn,
                  PMPI_Iscatter(in, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, &r->real), r,
                  request);
}

/* ======================================================================================== */
/* Collectives, blocking and nonblocking                                                     */

static uint64_t *counts_buf(int n)
{
    static uint64_t *buf;
    static int cap;
    if (n > cap) {
        uint64_t *p = realloc(buf, sizeof *p * (size_t)n);
        if (!p) ms_fatal("out of memory");
        buf = p;
        cap = n;
    }
    return buf;
}

int mh_comm_size_of(MPI_Comm comm)
{
    int n = 0;
    PMPI_Comm_size(comm, &n);
    return n;
}

int mh_comm_rank_of(MPI_Comm comm)
{
    int n = 0;
    PMPI_Comm_rank(comm, &n);
    return n;
}

static uint64_t allgather_block(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                                MPI_Datatype recvtype)
{
    return sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, recvcount) : type_bytes(sendtype, sendcount);
}

int ms_h_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    int low = ms_comm_inter(comm, &x) ? x.nlow : 0;
    ms_rq *r = mh_coll_rq(comm);
    return coll_vx(MS_WIRE_COLL_ALLGATHER, 0, allgather_block(sendbuf, sendcount, sendtype, recvcount, recvtype), NULL, 0,
                   low, fn, PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &r->real),
                   r, request);
}

int ms_h_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    int inter = ms_comm_inter(comm, &x);
    int n = inter ? x.rsize : mh_comm_size_of(comm);   /* an intercommunicator's counts: the remote group's */
    uint64_t *c = counts_buf(n);
    for (int i = 0; i < n; i++) c[i] = type_bytes(recvtype, recvcounts[i]);
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, &r->real);
    uint64_t own = inter ? type_bytes(sendtype, sendcount) : c[mh_comm_rank_of(comm)];
    return coll_vx(MS_WIRE_COLL_ALLGATHERV, 0, own, c, n, inter ? x.nlow : 0, fn, rc, r, request);
}

int ms_h_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    uint64_t block = sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, recvcount) : type_bytes(sendtype, sendcount);
    ms_inter x;
    int low = ms_comm_inter(comm, &x) ? x.nlow : 0;
    ms_rq *r = mh_coll_rq(comm);
    return coll_vx(MS_WIRE_COLL_ALLTOALL, 0, block, NULL, 0, low, fn,
                   PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &r->real), r,
                   request);
}

int ms_h_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                   MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    int inter = ms_comm_inter(comm, &x);
    int n = inter ? x.rsize : mh_comm_size_of(comm);   /* an intercommunicator's peers: the remote group */
    uint64_t *c = counts_buf(2 * n);   /* send counts, then receive counts (ms_model.h) */
    for (int i = 0; i < n; i++) {
        c[i] = sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, recvcounts[i]) : type_bytes(sendtype, sendcounts[i]);
        c[n + i] = type_bytes(recvtype, recvcounts[i]);
    }
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                             &r->real);
    return coll_vx(MS_WIRE_COLL_ALLTOALLV, 0, 0, c, 2 * n, inter ? x.nlow : 0, fn, rc, r, request);
}

int ms_h_alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
                   const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    int inter = ms_comm_inter(comm, &x);
    int n = inter ? x.rsize : mh_comm_size_of(comm);
    uint64_t *c = counts_buf(2 * n);
    for (int i = 0; i < n; i++) {
        c[i] = sendbuf == MPI_IN_PLACE ? type_bytes(recvtypes[i], recvcounts[i])
                                       : type_bytes(sendtypes[i], sendcounts[i]);
        c[n + i] = type_bytes(recvtypes[i], recvcounts[i]);
    }
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm,
                             &r->real);
    return coll_vx(MS_WIRE_COLL_ALLTOALLV, 0, 0, c, 2 * n, inter ? x.nlow : 0, fn, rc, r, request);
}

int ms_h_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    if (ms_comm_inter(comm, &x)) {   /* the root receives each remote member's block */
        uint64_t *c = NULL;
        if (root == MPI_ROOT) {
            c = counts_buf(x.rsize);
            for (int i = 0; i < x.rsize; i++) c[i] = type_bytes(recvtype, recvcounts[i]);
        }
        ms_rq *r = mh_coll_rq(comm);
        const void *in = root >= 0 ? input_copy(r, sendbuf, sendcount, sendtype) : sendbuf;
        int rc = PMPI_Igatherv(in, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, &r->real);
        return coll_vx(MS_WIRE_COLL_GATHERV, inter_root(&x, root), root >= 0 ? type_bytes(sendtype, sendcount) : 0, c,
                       c ? x.rsize : 0, x.nlow, fn, rc, r, request);
    }
    int n = mh_comm_size_of(comm), me = mh_comm_rank_of(comm);
    uint64_t *c = NULL;
    int nc = 0;
    uint64_t own = type_bytes(sendtype, sendcount);
    if (me == root) {
        c = counts_buf(n);
        for (int i = 0; i < n; i++) c[i] = type_bytes(recvtype, recvcounts[i]);
        nc = n;
        own = c[me];
    }
    ms_rq *r = mh_coll_rq(comm);
    const void *in = me == root ? sendbuf : input_copy(r, sendbuf, sendcount, sendtype);
    int rc = PMPI_Igatherv(in, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, &r->real);
    return coll_v(MS_WIRE_COLL_GATHERV, root, own, c, nc, fn, rc, r, request);
}

int ms_h_scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    if (ms_comm_inter(comm, &x)) {   /* the root sends each remote member its block, receives none */
        uint64_t *c = NULL;
        ms_rq *r = mh_coll_rq(comm);
        const void *in = sendbuf;
        if (root == MPI_ROOT) {
            c = counts_buf(x.rsize);
            int span = 0;
            for (int i = 0; i < x.rsize; i++) {
                c[i] = type_bytes(sendtype, sendcounts[i]);
                if (displs[i] + sendcounts[i] > span) span = displs[i] + sendcounts[i];
            }
            in = input_copy(r, sendbuf, span, sendtype);
        }
        int rc = PMPI_Iscatterv(in, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, &r->real);
        return coll_vx(MS_WIRE_COLL_SCATTERV, inter_root(&x, root), root >= 0 ? type_bytes(recvtype, recvcount) : 0, c,
                       c ? x.rsize : 0, x.nlow, fn, rc, r, request);
    }
    int n = mh_comm_size_of(comm), me = mh_comm_rank_of(comm);
    uint64_t *c = NULL;
    int nc = 0;
    uint64_t own = type_bytes(recvtype, recvcount);
    if (me == root) {
        c = counts_buf(n);
        for (int i = 0; i < n; i++) c[i] = type_bytes(sendtype, sendcounts[i]);
        nc = n;
        own = c[me];
    }
    ms_rq *r = mh_coll_rq(comm);
    const void *in = sendbuf;
    if (me == root) {
        int span = 0;
        for (int i = 0; i < n; i++)
            if (displs[i] + sendcounts[i] > span) span = displs[i] + sendcounts[i];
        in = scatter_root_prepare(r, sendbuf, span, sendtype, displs[root], sendcounts[root], &recvbuf, recvcount,
                                  recvtype);
    }
    int rc = PMPI_Iscatterv(in, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, &r->real);
    return coll_v(MS_WIRE_COLL_SCATTERV, root, own, c, nc, fn, rc, r, request);
}

int ms_h_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype dt, MPI_Op op,
                        MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    int low = ms_comm_inter(comm, &x) ? x.nlow : 0;   /* counts: the own group's, intra or inter */
    int n = mh_comm_size_of(comm);
    uint64_t *c = counts_buf(n);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) total += c[i] = type_bytes(dt, recvcounts[i]);
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm, &r->real);
    return coll_vx(MS_WIRE_COLL_REDUCE_SCATTER, 0, total, c, n, low, fn, rc, r, request);
}

int ms_h_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    int low = ms_comm_inter(comm, &x) ? x.nlow : 0;
    int n = mh_comm_size_of(comm);
    uint64_t *c = counts_buf(n);
    uint64_t b = type_bytes(dt, recvcount);
    for (int i = 0; i < n; i++) c[i] = b;
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm, &r->real);
    return coll_vx(MS_WIRE_COLL_REDUCE_SCATTER, 0, b * (uint64_t)n, c, n, low, fn, rc, r, request);
}

static int do_scan(int kind, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_inter x;
    if (ms_comm_inter(comm, &x)) {   /* no intercommunicator form: the real MPI says so (an error) */
        if (request) return kind == MS_WIRE_COLL_SCAN ? PMPI_Iscan(sendbuf, recvbuf, count, dt, op, comm, request)
                                                 : PMPI_Iexscan(sendbuf, recvbuf, count, dt, op, comm, request);
        return kind == MS_WIRE_COLL_SCAN ? PMPI_Scan(sendbuf, recvbuf, count, dt, op, comm)
                                    : PMPI_Exscan(sendbuf, recvbuf, count, dt, op, comm);
    }
    ms_rq *r = mh_coll_rq(comm);
    int rc = kind == MS_WIRE_COLL_SCAN ? PMPI_Iscan(sendbuf, recvbuf, count, dt, op, comm, &r->real)
                                  : PMPI_Iexscan(sendbuf, recvbuf, count, dt, op, comm, &r->real);
    return coll_v(kind, 0, type_bytes(dt, count), NULL, 0, fn, rc, r, request);
}
int ms_h_scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
              MPI_Request *request, ms_fn_id fn)
{
    return do_scan(MS_WIRE_COLL_SCAN, sendbuf, recvbuf, count, dt, op, comm, request, fn);
}
int ms_h_exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                MPI_Request *request, ms_fn_id fn)
{
    return do_scan(MS_WIRE_COLL_EXSCAN, sendbuf, recvbuf, count, dt, op, comm, request, fn);
}

/* ---------------------------------------------------------------------------------------- */
/* neighbourhood collectives (MPI-3): the model plays them as MPICH does, every receive and send
 * to the topology's neighbours posted at once (MS_WIRE_COLL_NEIGHBOR) */

/* The neighbours of comm's process topology in the order MPI defines (MPI-3.1 sec. 7.6): a
 * Cartesian topology lists, per dimension, the negative then the positive direction, for
 * sources and destinations alike; a graph its neighbours; a distributed graph its sources and
 * destinations. MPI_PROC_NULL entries stay (the buffers have their blocks). 0, or -1 when comm
 * has no topology (the real call then reports the error). *in and *out are malloc'd. */
int ms_topo_degrees(MPI_Comm comm, int *nin, int *nout)
{
    int status = MPI_UNDEFINED;
    *nin = *nout = 0;
    PMPI_Topo_test(comm, &status);
    if (status == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        *nin = *nout = 2 * nd;
    } else if (status == MPI_GRAPH) {
        int n = 0;
        PMPI_Graph_neighbors_count(comm, mh_comm_rank_of(comm), &n);
        *nin = *nout = n;
    } else if (status == MPI_DIST_GRAPH) {
        int weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, nin, nout, &weighted);
    } else {
        return -1;
    }
    return status;
}

static int topo_neighbors(MPI_Comm comm, int **in, int *nin, int **out, int *nout)
{
    *in = *out = NULL;
    int status = ms_topo_degrees(comm, nin, nout);
    if (status < 0) return -1;
    *in = malloc(sizeof **in * (size_t)(*nin + 1));
    *out = malloc(sizeof **out * (size_t)(*nout + 1));
    if (!*in || !*out) ms_fatal("out of memory");
    if (status == MPI_CART) {
        for (int d = 0; d < *nin / 2; d++) {
            int src = MPI_PROC_NULL, dst = MPI_PROC_NULL;
            PMPI_Cart_shift(comm, d, 1, &src, &dst);
            (*in)[2 * d] = (*out)[2 * d] = src;
            (*in)[2 * d + 1] = (*out)[2 * d + 1] = dst;
        }
    } else if (status == MPI_GRAPH) {
        PMPI_Graph_neighbors(comm, mh_comm_rank_of(comm), *nin, *in);
        memcpy(*out, *in, sizeof **in * (size_t)*nin);
    } else {
        int *sw = malloc(sizeof *sw * (size_t)(*nin + 1)), *dw = malloc(sizeof *dw * (size_t)(*nout + 1));
        if (!sw || !dw) ms_fatal("out of memory");
        PMPI_Dist_graph_neighbors(comm, *nin, *in, sw, *nout, *out, dw);
        free(sw);
        free(dw);
    }
    return 0;
}

typedef enum { NB_ALLGATHER, NB_ALLGATHERV, NB_ALLTOALL, NB_ALLTOALLV, NB_ALLTOALLW } nb_variant;

/* Bytes to and from each neighbour, then the model's lists (without MPI_PROC_NULL) and the
 * real call already posted (rc, r). */
static int do_neighbor(nb_variant v, int sendcount, const int sendcounts[], MPI_Datatype sendtype,
                       const MPI_Datatype sendtypes[], int recvcount, const int recvcounts[], MPI_Datatype recvtype,
                       const MPI_Datatype recvtypes[], MPI_Comm comm, int rc, ms_rq *r, MPI_Request *request,
                       ms_fn_id fn)
{
    int *in, *out, nin, nout;
    if (rc != MPI_SUCCESS || topo_neighbors(comm, &in, &nin, &out, &nout) < 0) {
        if (rc == MPI_SUCCESS) ms_fatal("%s on a communicator without a process topology", ms_fn_names[fn]);
        return coll_v(MS_WIRE_COLL_NEIGHBOR, 0, 0, NULL, 0, fn, rc, r, request);
    }
    uint64_t *c = counts_buf(2 + 2 * (nin + nout));
    uint64_t ni = 0, no = 0, total = 0;
    for (int i = 0; i < nin; i++) ni += in[i] != MPI_PROC_NULL;
    for (int i = 0; i < nout; i++) no += out[i] != MPI_PROC_NULL;
    c[0] = ni;
    c[1] = no;
    uint64_t *ir = c + 2, *ib = ir + ni, *orr = ib + ni, *ob = orr + no;
    for (int i = 0, k = 0; i < nin; i++) {
        if (in[i] == MPI_PROC_NULL) continue;
        ir[k] = (uint64_t)in[i];
        ib[k++] = v == NB_ALLGATHERV || v == NB_ALLTOALLV ? type_bytes(recvtype, recvcounts[i])
                  : v == NB_ALLTOALLW                     ? type_bytes(recvtypes[i], recvcounts[i])
                                                          : type_bytes(recvtype, recvcount);
    }
    for (int i = 0, k = 0; i < nout; i++) {
        if (out[i] == MPI_PROC_NULL) continue;
        orr[k] = (uint64_t)out[i];
        ob[k] = v == NB_ALLTOALLV ? type_bytes(sendtype, sendcounts[i])
                : v == NB_ALLTOALLW ? type_bytes(sendtypes[i], sendcounts[i])
                                    : type_bytes(sendtype, sendcount);
        total += ob[k++];
    }
    free(in);
    free(out);
    return coll_v(MS_WIRE_COLL_NEIGHBOR, 0, total, c, (int)(2 + 2 * (ni + no)), fn, MPI_SUCCESS, r, request);
}

int ms_h_neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &r->real);
    return do_neighbor(NB_ALLGATHER, sendcount, NULL, sendtype, NULL, recvcount, NULL, recvtype, NULL, comm, rc, r,
                       request, fn);
}

int ms_h_neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request, ms_fn_id fn)
{
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                       &r->real);
    return do_neighbor(NB_ALLGATHERV, sendcount, NULL, sendtype, NULL, 0, recvcounts, recvtype, NULL, comm, rc, r,
                       request, fn);
}

int ms_h_neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &r->real);
    return do_neighbor(NB_ALLTOALL, sendcount, NULL, sendtype, NULL, recvcount, NULL, recvtype, NULL, comm, rc, r,
                       request, fn);
}

int ms_h_neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Request *request, ms_fn_id fn)
{
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                      comm, &r->real);
    return do_neighbor(NB_ALLTOALLV, 0, sendcounts, sendtype, NULL, 0, recvcounts, recvtype, NULL, comm, rc, r,
                       request, fn);
}

int ms_h_neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request, ms_fn_id fn)
{
    ms_rq *r = mh_coll_rq(comm);
    int rc = PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                                      recvtypes, comm, &r->real);
    return do_neighbor(NB_ALLTOALLW, 0, sendcounts, MPI_DATATYPE_NULL, sendtypes, 0, recvcounts, MPI_DATATYPE_NULL,
                       recvtypes, comm, rc, r, request, fn);
}

/* MPI_Request_get_status: MPI_Test that leaves the request to a later wait. The model is asked
 * with MS_WIRE_TEST_PEEK (it keeps a completed request); a completed receive's real data must be in
 * before its status can be given. */
int ms_h_request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    ms_rq *owner;
    ms_rq *t = mh_target_of(request, &owner, "MPI_Request_get_status");
    if (!t) {
        if (request != MPI_REQUEST_NULL && !ms_rq_find(request)) return PMPI_Request_get_status(request, flag, status);
        *flag = 1;   /* MPI_REQUEST_NULL or an inactive persistent request */
        mh_empty_status(status);
        return MPI_SUCCESS;
    }
    if (!t->model_done) {
        ms_msg_result res;
        shim_wait_for(MS_WIRE_TEST_PEEK, 1, &t, &res, MS_FN_MPI_Request_get_status);
        if (!res.completed) {
            *flag = 0;
            ms_post_deferred();
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    mh_empty_status(status);
    if (t->model_cancelled) {
        if (status != MPI_STATUS_IGNORE) PMPI_Status_set_cancelled(status, 1);
        return MPI_SUCCESS;
    }
    if (t->kind != MS_RQ_RECV) return MPI_SUCCESS;
    if (t->deferred) ms_post_deferred();
    int rc = ms_real_complete(t);
    mh_copy_status(status, &t->status);
    return rc;
}
