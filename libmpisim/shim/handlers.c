/* Handlers of the modelled MPI calls (named in mpi_calls.spec; the wrappers call them).
 *
 * Pattern of every handler (docs/architecture.md, "Keeping the real MPI moving"): post the real operation
 * in its nonblocking form as soon as its arguments are known, report the event to the model,
 * wait for the model's virtual completion while driving the real MPI, then complete the real
 * operation. */

#include "handlers_internal.h"

uint64_t ms_type_bytes(MPI_Datatype dt, int count)
{
    int sz = 0;
    if (dt == MPI_DATATYPE_NULL || count <= 0) return 0;
    PMPI_Type_size(dt, &sz);
    return (uint64_t)sz * (uint64_t)count;
}

static int peer_to_model(int peer)
{
    if (peer == MPI_ANY_SOURCE) return MS_WIRE_ANY_SOURCE;
    if (peer == MPI_PROC_NULL) return MS_WIRE_PROC_NULL;
    return peer;
}

void mh_copy_status(MPI_Status *dst, const MPI_Status *src)
{
    if (dst != MPI_STATUS_IGNORE) *dst = *src;
}

void mh_empty_status(MPI_Status *st)
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
                          MPI_Comm comm, uint64_t bytes, int mode)
{
    int sync = mode == MS_WIRE_SEND_SYNC;
    /* buffered sends complete locally in the real MPI too (the attached buffer) */
    if (mode == MS_WIRE_SEND_BUFFERED) {
        r->real_posted = 1;
        return PMPI_Ibsend(buf, count, dt, dest, tag, comm, &r->real);
    }
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
/* A receive the model cancelled: nothing is received. Its real receive, if posted, is cancelled
 * too; should the real MPI already have delivered a message to it, that message is kept for the
 * receive the model matches it to. */
static int finish_cancelled(ms_rq *r, MPI_Status *status)
{
    if (r->deferred) ms_post_deferred();   /* takes it off the deferred list, unposted */
    if (r->real_posted && !r->real_done) {
        PMPI_Cancel(&r->real);
        int rc = ms_real_complete(r);
        if (rc != MPI_SUCCESS) return rc;
        int cancelled = 0;
        PMPI_Test_cancelled(&r->status, &cancelled);
        if (!cancelled) ms_stash_keep(r);
    }
    mh_empty_status(status);
    if (status != MPI_STATUS_IGNORE) PMPI_Status_set_cancelled(status, 1);
    if (r->user_is_grequest) {
        PMPI_Grequest_complete(r->user);
        PMPI_Request_free(&r->user);
    }
    ms_rq_free(r);
    return MPI_SUCCESS;
}

int mh_finish(ms_rq *r, MPI_Status *status)
{
    int rc = MPI_SUCCESS;
    if (r->detached_copy && !r->real_done) {
        int flag = 0;
        PMPI_Test(&r->real, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            ms_detach_send(r);
            mh_empty_status(status);
            return MPI_SUCCESS;
        }
        r->real_done = 1;
    }
    if (r->model_cancelled) return finish_cancelled(r, status);
    if (r->kind == MS_RQ_RMA) ms_rma_request_done(r);
    if (r->kind == MS_RQ_RECV && r->deferred) ms_post_deferred();
    if (r->kind == MS_RQ_RECV && r->deferred) ms_fatal("internal: a completed receive could not be posted");
    rc = ms_real_complete(r);
    if (r->kind == MS_RQ_RECV) mh_copy_status(status, &r->status);
    else mh_empty_status(status);
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
    int roff = 0, inter = 0;
    r->comm_id = ms_comm_id_x(comm, &roff, &inter);
    r->src = dest;
    r->tag = tag;
    r->buf = (void *)buf;   /* its address only (the model's registration cache) */
    uint64_t bytes = type_bytes(dt, count);
    /* to MPI_PROC_NULL: nothing real to do; the model completes it at once */
    *rc = dest == MPI_PROC_NULL ? MPI_SUCCESS : post_real_send(r, buf, count, dt, dest, tag, comm, bytes, mode);
    if (*rc != MPI_SUCCESS) {
        ms_rq_free(r);
        return NULL;
    }
    int me = -1;
    if (dest != MPI_PROC_NULL && !inter) PMPI_Comm_rank(comm, &me);   /* an intercommunicator has no self */
    /* an intercommunicator's remote rank dest is its union's roff + dest in the model */
    ms_report_isend(r, dest == MPI_PROC_NULL ? MS_WIRE_PROC_NULL : dest + roff, tag, bytes, mode, dest == me, fn);
    ms_advance(ms_isend_cost(bytes));
    return r;
}

static ms_rq *start_recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, ms_fn_id fn,
                         int *rc)
{
    ms_rq *r = ms_rq_new(MS_RQ_RECV);
    int inter = 0;
    r->comm_id = ms_comm_id_x(comm, &r->roff, &inter);
    r->buf = buf;
    r->count = count;
    r->dtype = dt;
    r->src = src;
    r->tag = tag;
    r->comm = comm;
    uint64_t bytes = type_bytes(dt, count);
    *rc = MPI_SUCCESS;
    if (src == MPI_PROC_NULL) {
        mh_empty_status(&r->status);
        r->resolved = 1;
        ms_report_irecv(r, MS_WIRE_PROC_NULL, tag, bytes, fn);
        return r;
    }
    /* Capture only: no model to decide wildcards, the real MPI does. Co-simulation: a wildcard
     * is held back until the model names its sender, and so is a receive an earlier held-back
     * one could take the message of; the model says when it has matched either (a wildcard's
     * RESOLVE; MS_IRECV_NOTIFY), and the shim posts it then (docs/architecture.md). */
    int wildcard = src == MPI_ANY_SOURCE || tag == MPI_ANY_TAG;
    if (!ms_has_server() || (!wildcard && !ms_recv_must_defer(r->comm_id, src, tag))) {
        r->resolved = 1;
        *rc = ms_has_server() ? ms_post_real_recv(r) : PMPI_Irecv(buf, count, dt, src, tag, comm, &r->real);
        r->real_posted = 1;
        if (*rc != MPI_SUCCESS) {
            ms_rq_free(r);
            return NULL;
        }
    } else {
        r->resolved = !wildcard;
        r->notify = !wildcard;
        ms_defer_recv(r);
    }
    ms_report_irecv(r, src >= 0 ? src + r->roff : peer_to_model(src), tag, bytes, fn);
    ms_advance(ms_irecv_cost(bytes));
    return r;
}

int ms_h_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    if (dest == MPI_PROC_NULL) return PMPI_Send(buf, count, dt, dest, tag, comm);
    int rc;
    ms_rq *r = start_send(buf, count, dt, dest, tag, comm, MS_WIRE_SEND_STANDARD, MS_FN_MPI_Send, &rc);
    if (!r) return rc;
    ms_msg_result res;
    shim_wait_for(MS_WIRE_WAIT_ALL, 1, &r, &res, MS_FN_MPI_Send);
    return mh_finish(r, MPI_STATUS_IGNORE);
}

int ms_h_recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (src == MPI_PROC_NULL) return PMPI_Recv(buf, count, dt, src, tag, comm, status);
    int rc;
    ms_rq *r = start_recv(buf, count, dt, src, tag, comm, MS_FN_MPI_Recv, &rc);
    if (!r) return rc;
    ms_msg_result res;
    shim_wait_for(MS_WIRE_WAIT_ALL, 1, &r, &res, MS_FN_MPI_Recv);
    return mh_finish(r, status);
}

static int query_fn(void *extra, MPI_Status *st)
{
    ms_rq *r = extra;
    *st = r->status;
    return MPI_SUCCESS;
}
static int free_fn(void *extra) { (void)extra; return MPI_SUCCESS; }
static int cancel_fn(void *extra, int complete) { (void)extra; (void)complete; return MPI_SUCCESS; }

/* The program's handle for r. Usually the real request itself; but Open MPI hands out one
 * static, already complete request for every small send it sends inline, so a real handle that
 * is already taken gets a generalized request standing in for it. */
void ms_give_handle(ms_rq *r, MPI_Request *request)
{
    static MPI_Request shared_empty = MPI_REQUEST_NULL;
    if (shared_empty == MPI_REQUEST_NULL) {
        /* what the real MPI hands out for operations that completed at once (PROC_NULL) */
        PMPI_Isend(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &shared_empty);
    }
    if (r->real != MPI_REQUEST_NULL && r->real != shared_empty && !ms_rq_find(r->real)) {
        r->user = r->real;
    } else {
        PMPI_Grequest_start(query_fn, free_fn, cancel_fn, r, &r->user);
        r->user_is_grequest = 1;
    }
    ms_rq_index(r);
    *request = r->user;
}

int ms_h_isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    int rc;
    ms_rq *r = start_send(buf, count, dt, dest, tag, comm, MS_WIRE_SEND_STANDARD, MS_FN_MPI_Isend, &rc);
    if (!r) return rc;
    give_handle(r, request);
    return MPI_SUCCESS;
}

int ms_h_irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Request *request)
{
    int rc;
    ms_rq *r = start_recv(buf, count, dt, src, tag, comm, MS_FN_MPI_Irecv, &rc);
    if (!r) return rc;
    /* a deferred receive (its sender not yet decided) has no real request: a stand-in */
    give_handle(r, request);
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
    ms_rq *sr = start_send(sendbuf, sendcount, sendtype, dest, sendtag, comm, MS_WIRE_SEND_STANDARD, MS_FN_MPI_Sendrecv,
                           &rc);
    if (!sr) return rc;
    ms_rq *both[2] = {rr, sr};
    ms_msg_result res[2];
    shim_wait_for(MS_WIRE_WAIT_ALL, 2, both, res, MS_FN_MPI_Sendrecv);
    rc = mh_finish(rr, status);
    int rc2 = mh_finish(sr, MPI_STATUS_IGNORE);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* ======================================================================================== */
/* The rest of point-to-point                                                                */

static int send_mode_call(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, int mode,
                          ms_fn_id fn)
{
    if (dest == MPI_PROC_NULL) return MPI_SUCCESS;
    int rc;
    ms_rq *r = start_send(buf, count, dt, dest, tag, comm, mode, fn, &rc);
    if (!r) return rc;
    ms_msg_result res;
    shim_wait_for(MS_WIRE_WAIT_ALL, 1, &r, &res, fn);
    return mh_finish(r, MPI_STATUS_IGNORE);
}

static int isend_mode_call(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, int mode,
                           ms_fn_id fn, MPI_Request *request)
{
    int rc;
    ms_rq *r = start_send(buf, count, dt, dest, tag, comm, mode, fn, &rc);
    if (!r) return rc;
    give_handle(r, request);
    return MPI_SUCCESS;
}

int ms_h_ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return send_mode_call(buf, count, dt, dest, tag, comm, MS_WIRE_SEND_SYNC, MS_FN_MPI_Ssend);
}
int ms_h_bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return send_mode_call(buf, count, dt, dest, tag, comm, MS_WIRE_SEND_BUFFERED, MS_FN_MPI_Bsend);
}
int ms_h_rsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return send_mode_call(buf, count, dt, dest, tag, comm, MS_WIRE_SEND_READY, MS_FN_MPI_Rsend);
}
int ms_h_issend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    return isend_mode_call(buf, count, dt, dest, tag, comm, MS_WIRE_SEND_SYNC, MS_FN_MPI_Issend, request);
}
int ms_h_ibsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    return isend_mode_call(buf, count, dt, dest, tag, comm, MS_WIRE_SEND_BUFFERED, MS_FN_MPI_Ibsend, request);
}
int ms_h_irsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    return isend_mode_call(buf, count, dt, dest, tag, comm, MS_WIRE_SEND_READY, MS_FN_MPI_Irsend, request);
}

int ms_h_sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int sendtag, int source, int recvtag,
                          MPI_Comm comm, MPI_Status *status)
{
    /* send from a packed copy, receive into the buffer: the standard's own description */
    int need = 0;
    PMPI_Pack_size(count, dt, comm, &need);
    void *tmp = malloc(need > 0 ? (size_t)need : 1);
    if (!tmp) ms_fatal("out of memory in MPI_Sendrecv_replace");
    int pos = 0;
    PMPI_Pack(buf, count, dt, tmp, need, &pos, comm);
    int rc = ms_h_sendrecv(tmp, pos, MPI_PACKED, dest, sendtag, buf, count, dt, source, recvtag, comm, status);
    free(tmp);
    return rc;
}

/* ---- persistent requests: the program's handle is a real, never started, persistent request
 * (a stable identity); each Start runs a fresh nonblocking operation behind it ---- */

typedef struct ms_persist {
    int is_send, mode;
    const void *buf;
    int count;
    MPI_Datatype dt;
    int peer, tag;
    MPI_Comm comm;
    ms_rq *active;
} ms_persist;

static int make_persistent(ms_rq *r, int is_send, int mode, const void *buf, int count, MPI_Datatype dt, int peer,
                           int tag, MPI_Comm comm)
{
    ms_persist *p = calloc(1, sizeof *p);
    if (!p) ms_fatal("out of memory");
    *p = (ms_persist){is_send, mode, buf, count, dt, peer, tag, comm, NULL};
    r->persist = p;
    r->comm_id = ms_comm_id(comm);
    ms_rq_index(r);
    return MPI_SUCCESS;
}

#define PERSISTENT_SEND(name, fnid, mode)                                                                          \
    int ms_h_##name(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,                   \
                    MPI_Request *request)                                                                          \
    {                                                                                                              \
        ms_rq *r = ms_rq_new(MS_RQ_SEND);                                                                          \
        int rc = PMPI_Send_init(buf, count, dt, dest, tag, comm, request);                                        \
        if (rc != MPI_SUCCESS) {                                                                                   \
            ms_rq_free(r);                                                                                         \
            return rc;                                                                                             \
        }                                                                                                          \
        r->user = *request;                                                                                        \
        return make_persistent(r, 1, mode, buf, count, dt, dest, tag, comm);                                       \
    }
PERSISTENT_SEND(send_init, MS_FN_MPI_Send_init, MS_WIRE_SEND_STANDARD)
PERSISTENT_SEND(ssend_init, MS_FN_MPI_Ssend_init, MS_WIRE_SEND_SYNC)
PERSISTENT_SEND(bsend_init, MS_FN_MPI_Bsend_init, MS_WIRE_SEND_BUFFERED)
PERSISTENT_SEND(rsend_init, MS_FN_MPI_Rsend_init, MS_WIRE_SEND_READY)

int ms_h_recv_init(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request *request)
{
    ms_rq *r = ms_rq_new(MS_RQ_RECV);
    int rc = PMPI_Recv_init(buf, count, dt, source, tag, comm, request);
    if (rc != MPI_SUCCESS) {
        ms_rq_free(r);
        return rc;
    }
    r->user = *request;
    return make_persistent(r, 0, 0, buf, count, dt, source, tag, comm);
}

static int start_one(MPI_Request *request, ms_fn_id fn)
{
    ms_rq *r = ms_rq_find(*request);
    if (!r || !r->persist) ms_fatal("%s on a request that is not a persistent request of mpisim", ms_fn_names[fn]);
    ms_persist *p = r->persist;
    if (p->active) ms_fatal("%s on a persistent request that is still active", ms_fn_names[fn]);
    int rc = MPI_SUCCESS;
    if (p->peer == MPI_PROC_NULL) {
        p->active = NULL;
        return MPI_SUCCESS;
    }
    if (p->is_send) p->active = start_send(p->buf, p->count, p->dt, p->peer, p->tag, p->comm, p->mode, fn, &rc);
    else p->active = start_recv((void *)p->buf, p->count, p->dt, p->peer, p->tag, p->comm, fn, &rc);
    return rc;
}

int ms_h_start(MPI_Request *request) { return start_one(request, MS_FN_MPI_Start); }

int ms_h_startall(int count, MPI_Request requests[])
{
    for (int i = 0; i < count; i++) {
        int rc = start_one(&requests[i], MS_FN_MPI_Startall);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

/* ---- the one place that waits and tests: every Wait/Test variant comes here ---- */

/* What the program's handle stands for now: NULL for null or inactive persistent requests. */
ms_rq *mh_target_of(MPI_Request h, ms_rq **owner, const char *call)
{
    (void)call;
    *owner = NULL;
    if (h == MPI_REQUEST_NULL) return NULL;
    ms_rq *r = ms_rq_find(h);
    if (!r) return NULL; /* foreign: see wait_generic */
    if (r->persist) {
        *owner = r;
        return ((ms_persist *)r->persist)->active;
    }
    return r;
}

/* The model has completed t (the operation behind handle *h): finish the real side and update
 * the program's handle. */
static int complete_handle(MPI_Request *h, ms_rq *t, ms_rq *owner, MPI_Status *st)
{
    if (owner) {
        ((ms_persist *)owner->persist)->active = NULL;
        return mh_finish(t, st); /* the handle stays: an inactive persistent request */
    }
    ms_rq_unindex(t);
    *h = MPI_REQUEST_NULL;
    return mh_finish(t, st);
}

/* Requests the model does not know ("foreign": operations on MPI_PROC_NULL, untimed
 * passthrough calls) complete by the real MPI alone, untimed. */
static int is_foreign(MPI_Request h) { return h != MPI_REQUEST_NULL && !ms_rq_find(h); }

/* The status a completed request i of a wait fills in: the one status (Wait, Waitany, Test,
 * Testany), none, or its own (Waitall, Testall; Waitsome, Testsome: the next in order). */
#define STATUS_FOR(i) (one_status ? statuses : statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE \
                       : some ? &statuses[*outcount] : &statuses[i])

/* Foreign requests already complete count at once (for Testall only if all complete): the number
 * of foreign requests still pending; *done counts those completed. */
static inline int foreign_done_now(int mode, int count, MPI_Request reqs[], int *index, int *outcount, int indices[],
                                   MPI_Status *statuses, int one_status, int *done)
{
    int any = mode == MS_WIRE_WAIT_ANY || mode == MS_WIRE_TEST_ANY, some = mode == MS_WIRE_WAIT_SOME || mode == MS_WIRE_TEST_SOME;
    int nforeign = 0;
    for (int i = 0; i < count; i++) {
        if (!is_foreign(reqs[i])) continue;
        nforeign++;
        if (any && *index != MPI_UNDEFINED) continue;
        int f = 0;
        MPI_Status st;
        if (mode == MS_WIRE_TEST_ALL) continue;
        PMPI_Test(&reqs[i], &f, &st);
        if (!f) continue;
        MPI_Status *dst = STATUS_FOR(i);
        if (dst != MPI_STATUS_IGNORE) *dst = st;
        if (any) *index = i;
        if (some) indices[(*outcount)++] = i;
        (*done)++;
        nforeign--;
    }
    return nforeign;
}

/* Foreign requests still pending: the real MPI completes them (a test looks once). */
static void foreign_wait(int mode, int count, MPI_Request reqs[], int *index, int *outcount, int indices[],
                         MPI_Status *statuses, int one_status, int *done)
{
    int any = mode == MS_WIRE_WAIT_ANY || mode == MS_WIRE_TEST_ANY, some = mode == MS_WIRE_WAIT_SOME || mode == MS_WIRE_TEST_SOME;
    int is_test = mode == MS_WIRE_TEST_ALL || mode == MS_WIRE_TEST_ANY || mode == MS_WIRE_TEST_SOME;
    ms_real_wait w = {0};
    for (;;) {
        int pending = 0;
        for (int i = 0; i < count; i++) {
            if (!is_foreign(reqs[i])) continue;
            int f = 0;
            MPI_Status st;
            PMPI_Test(&reqs[i], &f, &st);
            if (!f) {
                pending++;
                continue;
            }
            MPI_Status *dst = STATUS_FOR(i);
            if (dst != MPI_STATUS_IGNORE) *dst = st;
            if (any) *index = i;
            if (some) indices[(*outcount)++] = i;
            (*done)++;
            if (any) break;
        }
        if (!pending || is_test || ((any || some) && *done)) break;
        ms_real_wait_step(&w, NULL);
    }
    ms_real_wait_end(&w);
}

static int wait_generic(int mode, int count, MPI_Request reqs[], int *index, int *outcount, int indices[],
                        int *flag, MPI_Status *statuses, int one_status, ms_fn_id fn)
{
    ms_rq *small_t[32], *small_o[32];
    int small_i[32];
    ms_msg_result small_r[32];
    int big = count > 32;
    ms_rq **ts = big ? malloc(sizeof *ts * (size_t)count) : small_t;
    ms_rq **os = big ? malloc(sizeof *os * (size_t)count) : small_o;
    int *at = big ? malloc(sizeof *at * (size_t)count) : small_i;
    ms_msg_result *res = big ? malloc(sizeof *res * (size_t)count) : small_r;
    if (!ts || !os || !at || !res) ms_fatal("out of memory");
    int any = mode == MS_WIRE_WAIT_ANY || mode == MS_WIRE_TEST_ANY, some = mode == MS_WIRE_WAIT_SOME || mode == MS_WIRE_TEST_SOME;
    int is_test = mode == MS_WIRE_TEST_ALL || mode == MS_WIRE_TEST_ANY || mode == MS_WIRE_TEST_SOME;
    int rc = MPI_SUCCESS, done = 0;
    if (!one_status && statuses != MPI_STATUSES_IGNORE && !any && !some)
        for (int i = 0; i < count; i++) mh_empty_status(&statuses[i]);
    if (any) *index = MPI_UNDEFINED;
    if (some) *outcount = 0;
    int nforeign = foreign_done_now(mode, count, reqs, index, outcount, indices, statuses, one_status, &done);
    int n = 0;
    for (int i = 0; i < count; i++) {
        ms_rq *owner;
        ms_rq *t = mh_target_of(reqs[i], &owner, ms_fn_names[fn]);
        if (!t) continue;
        if (t->kind == MS_RQ_RMA && t->model_done) {
            /* MPI_Rput...: a flush completed it in the model already; the real MPI finishes it */
            if (any && done) continue;
            int e = complete_handle(&reqs[i], t, owner, STATUS_FOR(i));
            if (e != MPI_SUCCESS) rc = e;
            if (any) *index = i;
            if (some) indices[(*outcount)++] = i;
            done++;
            continue;
        }
        ts[n] = t;
        os[n] = owner;
        at[n] = i;
        n++;
    }
    if (done && (any || some)) {
        if (flag) *flag = 1;
        goto out;
    }
    if (n == 0 && nforeign == 0) {
        if (any) *index = MPI_UNDEFINED;
        if (some && !done) *outcount = MPI_UNDEFINED;
        if (flag) *flag = 1;
        if (one_status && !done) mh_empty_status(statuses);
        goto out;
    }
    int mdone = 0;
    if (n > 0) {
        shim_wait_for(mode, n, ts, res, fn);
        for (int k = 0; k < n; k++) {
            if (!res[k].completed) continue;
            int i = at[k];
            int e = complete_handle(&reqs[i], ts[k], os[k], STATUS_FOR(i));
            if (e != MPI_SUCCESS) rc = e;
            if (any) *index = i;
            if (some) indices[(*outcount)++] = i;
            mdone++;
        }
    }
    done += mdone;
    /* foreign requests still pending: the real MPI completes them */
    if (nforeign && (mode == MS_WIRE_WAIT_ALL || (mode == MS_WIRE_TEST_ALL && mdone == n) || ((any || some) && !done)))
        foreign_wait(mode, count, reqs, index, outcount, indices, statuses, one_status, &done);
#undef STATUS_FOR
    if (flag) {
        int total = n + nforeign;
        if (mode == MS_WIRE_TEST_ALL) *flag = mdone == n && done >= total;
        else *flag = done > 0 || !is_test;
    }
    if (!done && is_test) ms_post_deferred();
out:
    if (big) {
        free(ts);
        free(os);
        free(at);
        free(res);
    }
    return rc;
}

int ms_h_waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
    return wait_generic(MS_WIRE_WAIT_ANY, count, reqs, index, NULL, NULL, NULL, status, 1, MS_FN_MPI_Waitany);
}
int ms_h_waitsome(int incount, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    return wait_generic(MS_WIRE_WAIT_SOME, incount, reqs, NULL, outcount, indices, NULL, statuses, 0, MS_FN_MPI_Waitsome);
}
int ms_h_testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    return wait_generic(MS_WIRE_TEST_ALL, count, reqs, NULL, NULL, NULL, flag, statuses, 0, MS_FN_MPI_Testall);
}
int ms_h_testany(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
    return wait_generic(MS_WIRE_TEST_ANY, count, reqs, index, NULL, NULL, flag, status, 1, MS_FN_MPI_Testany);
}
int ms_h_testsome(int incount, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    int dummy;
    return wait_generic(MS_WIRE_TEST_SOME, incount, reqs, NULL, outcount, indices, &dummy, statuses, 0,
                        MS_FN_MPI_Testsome);
}

int ms_h_request_free(MPI_Request *request)
{
    if (*request == MPI_REQUEST_NULL) return MPI_SUCCESS;
    ms_rq *r = ms_rq_find(*request);
    if (!r) return PMPI_Request_free(request);
    if (r->persist) {
        ms_persist *p = r->persist;
        if (p->active) ms_fatal("MPI_Request_free on an active persistent request is not modelled yet");
        ms_rq_unindex(r);
        free(p);
        r->persist = NULL;
        ms_rq_free(r);
        return PMPI_Request_free(request);
    }
    if (r->kind == MS_RQ_RMA) {
        /* MPI_Rput...: it stays one of its window's operations; the next synchronisation completes it */
        ms_rq_unindex(r);
        ms_rma_request_freed(r);
        if (r->user_is_grequest) {
            PMPI_Grequest_complete(r->user);
            PMPI_Request_free(&r->user);
        }
        if (r->real != MPI_REQUEST_NULL) PMPI_Request_free(&r->real);
        ms_rq_free(r);
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    /* an active operation the program will not wait for: it goes on; the shim completes it */
    if (r->kind != MS_RQ_SEND)
        ms_fatal("MPI_Request_free on an active receive or collective is not modelled yet");
    ms_rq_unindex(r);
    if (!r->model_forgotten) ms_report_free(r, MS_FN_MPI_Request_free);
    if (r->user_is_grequest) {   /* the stand-in for Open MPI's shared request of inline sends */
        PMPI_Grequest_complete(r->user);
        PMPI_Request_free(&r->user);
        r->user_is_grequest = 0;
    }
    ms_detach_send(r);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

int ms_h_cancel(MPI_Request *request)
{
    ms_rq *owner;
    ms_rq *t = mh_target_of(*request, &owner, "MPI_Cancel");
    if (!t) return *request != MPI_REQUEST_NULL && !ms_rq_find(*request) ? PMPI_Cancel(request) : MPI_SUCCESS;
    /* A send that has started cannot be taken back in the model's network; the standard lets
     * a cancel fail (MPI_Test_cancelled then says false), which is what happens here. */
    if (t->kind != MS_RQ_RECV || t->model_done || t->cancel_sent) return MPI_SUCCESS;
    /* A receive: the model decides, in virtual time, whether a message matched it before the
     * cancel; the program learns it when it completes the request. Without a model (capture
     * only) the real MPI decides. */
    t->cancel_sent = 1;
    ms_report_cancel(t, MS_FN_MPI_Cancel);
    if (!ms_has_server() && t->real_posted && !t->real_done) PMPI_Cancel(&t->real);
    return MPI_SUCCESS;
}

/* ---- probes ---- */

static void probe_status(MPI_Comm comm, const ms_msg_result *res, MPI_Status *status)
{
    /* the real message exists (its sender posted it before reporting): wait for it to be
     * visible to the real MPI, keeping the server served, to fill the status */
    MPI_Status st;
    int flag = 0;
    ms_real_wait w = {0};
    ms_post_deferred();   /* receives matched to earlier messages of that source and tag first */
    for (;;) {
        PMPI_Iprobe(res->source, res->tag, comm, &flag, &st);
        if (flag) break;
        ms_real_wait_step(&w, NULL);
    }
    ms_real_wait_end(&w);
    if (status != MPI_STATUS_IGNORE) *status = st;
}

int ms_h_probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (source == MPI_PROC_NULL) return PMPI_Probe(source, tag, comm, status);
    ms_msg_result res;
    ms_block_probe(comm, peer_to_model(source), tag == MPI_ANY_TAG ? MS_WIRE_ANY_TAG : tag, 1, &res, MS_FN_MPI_Probe);
    if (!ms_has_server()) {
        if (status != MPI_STATUS_IGNORE) {
            /* capture only: the real probe already ran; probe again (non-destructive) for the status */
            PMPI_Probe(res.source, res.tag, comm, status);
        }
        return MPI_SUCCESS;
    }
    probe_status(comm, &res, status);
    return MPI_SUCCESS;
}

int ms_h_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    if (source == MPI_PROC_NULL) return PMPI_Iprobe(source, tag, comm, flag, status);
    ms_msg_result res;
    ms_block_probe(comm, peer_to_model(source), tag == MPI_ANY_TAG ? MS_WIRE_ANY_TAG : tag, 0, &res, MS_FN_MPI_Iprobe);
    *flag = res.completed;
    if (!res.completed) return MPI_SUCCESS;
    if (!ms_has_server()) {
        if (status != MPI_STATUS_IGNORE) PMPI_Probe(res.source, res.tag, comm, status);
        return MPI_SUCCESS;
    }
    probe_status(comm, &res, status);
    return MPI_SUCCESS;
}

/* Messages taken by a matched probe, until their Mrecv: the model receives by source and tag. */
typedef struct probed_msg {
    MPI_Message msg;
    int source, tag;
    MPI_Comm comm;
} probed_msg;
static probed_msg probed[64];
static int nprobed;

static void remember_probed(MPI_Message m, int source, int tag, MPI_Comm comm)
{
    if (nprobed == 64) ms_fatal("more than 64 messages matched by MPI_Mprobe are waiting for MPI_Mrecv");
    probed[nprobed++] = (probed_msg){m, source, tag, comm};
}

static int take_probed(MPI_Message m, probed_msg *out)
{
    for (int i = 0; i < nprobed; i++)
        if (probed[i].msg == m) {
            *out = probed[i];
            probed[i] = probed[--nprobed];
            return 1;
        }
    return 0;
}

/* The message the model found is in the real MPI (its sender posted it before reporting): take
 * it with the real matched probe, waiting until the real MPI sees it. */
static void real_improbe(const ms_msg_result *res, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    int flag = 0;
    ms_real_wait w = {0};
    ms_post_deferred();   /* receives matched to earlier messages of that source and tag first */
    for (;;) {
        PMPI_Improbe(res->source, res->tag, comm, &flag, message, status);
        if (flag) break;
        ms_real_wait_step(&w, NULL);
    }
    ms_real_wait_end(&w);
}

/* Matched probes: the model finds the message; the real matched probe then takes exactly that
 * (source, tag), first in its FIFO as in the model's. Mrecv is a receive of that source and tag. */
int ms_h_mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    if (source == MPI_PROC_NULL) return PMPI_Mprobe(source, tag, comm, message, status);
    ms_msg_result res;
    ms_block_probe(comm, peer_to_model(source), tag == MPI_ANY_TAG ? MS_WIRE_ANY_TAG : tag, 1, &res, MS_FN_MPI_Mprobe);
    real_improbe(&res, comm, message, status);
    remember_probed(*message, res.source, res.tag, comm);
    return MPI_SUCCESS;
}

int ms_h_improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
    if (source == MPI_PROC_NULL) return PMPI_Improbe(source, tag, comm, flag, message, status);
    ms_msg_result res;
    ms_block_probe(comm, peer_to_model(source), tag == MPI_ANY_TAG ? MS_WIRE_ANY_TAG : tag, 0, &res, MS_FN_MPI_Improbe);
    *flag = res.completed;
    if (!res.completed) return MPI_SUCCESS;
    real_improbe(&res, comm, message, status);
    remember_probed(*message, res.source, res.tag, comm);
    return MPI_SUCCESS;
}

/* The model's receive of the probed (source, tag) is the probed message: its FIFO is the real
 * one's. The real receive is the matched one. */
static ms_rq *start_mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *message, ms_fn_id fn,
                          probed_msg *pm)
{
    if (!take_probed(*message, pm)) ms_fatal("%s of a message mpisim did not see probed", ms_fn_names[fn]);
    ms_rq *r = ms_rq_new(MS_RQ_RECV);
    int inter = 0;
    r->comm_id = ms_comm_id_x(pm->comm, &r->roff, &inter);
    r->buf = buf;
    r->count = count;
    r->dtype = dt;
    r->src = pm->source;
    r->tag = pm->tag;
    r->comm = pm->comm;
    r->resolved = 1;
    uint64_t bytes = type_bytes(dt, count);
    ms_report_irecv(r, pm->source + r->roff, pm->tag, bytes, fn);
    ms_advance(ms_irecv_cost(bytes));
    return r;
}

int ms_h_mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *message, MPI_Status *status)
{
    if (*message == MPI_MESSAGE_NO_PROC) return PMPI_Mrecv(buf, count, dt, message, status);
    probed_msg pm;
    ms_rq *r = start_mrecv(buf, count, dt, message, MS_FN_MPI_Mrecv, &pm);
    /* the real receive goes first (its sender may wait for it in the real MPI) */
    int rc = PMPI_Imrecv(buf, count, dt, message, &r->real);
    if (rc != MPI_SUCCESS) ms_fatal("MPI_Mrecv failed in the real MPI (error %d)", rc);
    r->real_posted = 1;
    ms_msg_result res;
    shim_wait_for(MS_WIRE_WAIT_ALL, 1, &r, &res, MS_FN_MPI_Mrecv);
    return mh_finish(r, status);
}

int ms_h_imrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *message, MPI_Request *request)
{
    if (*message == MPI_MESSAGE_NO_PROC) return PMPI_Imrecv(buf, count, dt, message, request);
    probed_msg pm;
    ms_rq *r = start_mrecv(buf, count, dt, message, MS_FN_MPI_Imrecv, &pm);
    int rc = PMPI_Imrecv(buf, count, dt, message, &r->real);
    if (rc != MPI_SUCCESS) ms_fatal("MPI_Imrecv failed in the real MPI (error %d)", rc);
    r->real_posted = 1;
    give_handle(r, request);
    return MPI_SUCCESS;
}

int ms_h_wait(MPI_Request *request, MPI_Status *status)
{
    return wait_generic(MS_WIRE_WAIT_ALL, 1, request, NULL, NULL, NULL, NULL, status, 1, MS_FN_MPI_Wait);
}
int ms_h_waitall(int count, MPI_Request reqs[], MPI_Status *statuses)
{
    return wait_generic(MS_WIRE_WAIT_ALL, count, reqs, NULL, NULL, NULL, NULL, statuses, 0, MS_FN_MPI_Waitall);
}
int ms_h_test(MPI_Request *request, int *flag, MPI_Status *status)
{
    return wait_generic(MS_WIRE_TEST_ALL, 1, request, NULL, NULL, NULL, flag, status, 1, MS_FN_MPI_Test);
}
