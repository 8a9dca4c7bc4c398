/* One-sided communication (MPI-3 RMA) in virtual time (docs/architecture.md "One-sided
 * communication"; the model's side: libmpisim/model/README.md "One-sided communication").
 *
 * The data moves through the real MPI: every operation is issued to it first (PMPI_Put, ...), then
 * reported to the model (ms_report_rma), which plays it as an RDMA transfer. Synchronisation is
 * played with what the model already has, on the window's own model communicator:
 *   - completing operations (flush, unlock, complete, fence) is a wait in the model for their
 *     requests, the operation ids this file keeps per window;
 *   - a fence is then a barrier of the window's group (Open MPI's osc/rdma and MPICH both end a
 *     fence with one);
 *   - post / start / complete / wait are zero-byte messages (MPICH's "post" and "done" packets):
 *     a post sends one to each origin, a start waits for one from each target, a complete sends
 *     one to each target once its operations are done, a wait waits for one from each origin;
 *   - lock and unlock are operations on the target's lock (ms_model_rma: granted in arrival order,
 *     shared together, exclusive alone), unlock after the operations to that target are done.
 * A real call that waits for other ranks (fence, start, complete, wait, unlock, flush, free) is
 * made while the model holds the rank (shim_wait_around), never while the rank holds the
 * horizon back; a real lock is taken after the model has granted it, so that the real and the
 * modelled order of exclusive locks cannot wait on each other. */
#include <stdlib.h>
#include <string.h>
#include "shim.h"

#define TAG_POST 0
#define TAG_COMPLETE 1

typedef struct op_ref {
    uint64_t id;
    int target;
} op_ref;

typedef struct ms_win {
    MPI_Win win;
    uint64_t comm;               /* the window's model communicator */
    int size, me;
    MPI_Group group;             /* the window's group: PSCW groups are translated into it */
    op_ref *ops;                 /* issued, not yet completed by a synchronisation */
    size_t nops, capops;
    ms_rq **rops;                /* MPI_Rput...: requests the program holds (win set) */
    size_t nrops, caprops;
    ms_rq **notices;             /* PSCW: the "done" notices its exposure epoch waits for */
    int nnotices;
    int *targets;                /* PSCW: the access epoch's targets */
    int ntargets;
    unsigned char *locked;       /* per target: 1 if its lock went through the model (MPI_MODE_NOCHECK: 0) */
    int all_locked;              /* MPI_Win_lock_all went through the model */
} ms_win;

static ms_win **wins;
static size_t nwins, capwins;
static ms_win *last_win;

static ms_win *win_find(MPI_Win win, ms_fn_id fn)
{
    if (last_win && last_win->win == win) return last_win;
    for (size_t i = 0; i < nwins; i++)
        if (wins[i]->win == win) return last_win = wins[i];
    ms_fatal("%s on a window mpisim did not see created", ms_fn_names[fn]);
}

static void grow(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *p = realloc(*v, nc * elem);
    if (!p) ms_fatal("out of memory (one-sided communication)");
    *v = p;
    *cap = nc;
}

/* ---- creation and free ------------------------------------------------------------------- */

/* The members meet in the model as MPICH's window creation does (an allgather of every member's
 * base, size and displacement unit: 24 bytes each) and leave together, then make the real
 * (blocking, collective) call, which can no longer wait on the model. */
static void win_meet(MPI_Comm comm, ms_fn_id fn)
{
    ms_rq *r = ms_rq_new(MS_RQ_COLL);
    r->comm_id = ms_comm_id(comm);
    ms_report_icoll(r, MS_WIRE_COLL_ALLGATHER, 0, 24, NULL, 0, fn);
    shim_wait_sync(r, fn);
    ms_rq_free(r);
}

static int win_made(int rc, MPI_Comm comm, MPI_Win *win)
{
    if (rc != MPI_SUCCESS) return rc;
    ms_win *w = calloc(1, sizeof *w);
    if (!w) ms_fatal("out of memory (one-sided communication)");
    w->win = *win;
    w->comm = ms_comm_register_window(comm);
    PMPI_Comm_size(comm, &w->size);
    PMPI_Comm_rank(comm, &w->me);
    PMPI_Win_get_group(*win, &w->group);
    w->locked = calloc((size_t)w->size, 1);
    if (!w->locked) ms_fatal("out of memory (one-sided communication)");
    grow((void **)&wins, &capwins, nwins + 1, sizeof *wins);
    wins[nwins++] = w;
    return rc;
}

int ms_h_win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    win_meet(comm, MS_FN_MPI_Win_create);
    return win_made(PMPI_Win_create(base, size, disp_unit, info, comm, win), comm, win);
}

int ms_h_win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)
{
    win_meet(comm, MS_FN_MPI_Win_allocate);
    return win_made(PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win), comm, win);
}

/* Loads and stores of the program on a shared window are its own computation, charged as such. */
int ms_h_win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)
{
    win_meet(comm, MS_FN_MPI_Win_allocate_shared);
    return win_made(PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win), comm, win);
}

/* MPI_Win_attach and MPI_Win_detach are local (mpi_calls.spec): they cost their real code. */
int ms_h_win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    win_meet(comm, MS_FN_MPI_Win_create_dynamic);
    return win_made(PMPI_Win_create_dynamic(info, comm, win), comm, win);
}

static void forget_win(ms_win *w)
{
    for (size_t i = 0; i < nwins; i++)
        if (wins[i] == w) {
            wins[i] = wins[--nwins];
            break;
        }
    if (last_win == w) last_win = NULL;
    for (size_t i = 0; i < w->nrops; i++) w->rops[i]->win = NULL;
    PMPI_Group_free(&w->group);
    free(w->ops);
    free(w->rops);
    free(w->notices);
    free(w->targets);
    free(w->locked);
    free(w);
}

/* ---- completing operations --------------------------------------------------------------- */

typedef struct real_arg {
    int (*fn)(struct real_arg *);
    MPI_Win win;
    MPI_Win *winp;
    int a, b;
    MPI_Group group;
    int *flag;
} real_arg;
static int call_real(void *p)
{
    real_arg *r = p;
    return r->fn(r);
}

/* Wait in the model for the window's operations to `target` (-1: every target) to complete, then
 * (if real is given) make the real call while the model holds the rank. The completed operations
 * leave the window's lists; a request of MPI_Rput... the program still holds is complete for it
 * too (its later wait asks no one). */
static int complete_ops(ms_win *w, int target, ms_fn_id fn, real_arg *real)
{
    size_t n = 0;
    for (size_t i = 0; i < w->nops; i++)
        if (target < 0 || w->ops[i].target == target) n++;
    for (size_t i = 0; i < w->nrops; i++)
        if (!w->rops[i]->model_done && (target < 0 || w->rops[i]->src == target)) n++;
    if (n == 0) return real ? call_real(real) : MPI_SUCCESS;
    /* plain operations have no request of the shim's: stand-ins carry their ids */
    ms_rq **rqs = malloc(sizeof *rqs * n);
    ms_rq *stand = calloc(n, sizeof *stand);
    ms_msg_result small[16];
    ms_msg_result *res = n <= 16 ? small : malloc(sizeof *res * (n < MS_MAX_WAIT_REQS ? n : MS_MAX_WAIT_REQS));
    if (!rqs || !stand || !res) ms_fatal("out of memory (one-sided communication)");
    size_t k = 0, keep = 0;
    for (size_t i = 0; i < w->nops; i++) {
        if (target >= 0 && w->ops[i].target != target) {
            w->ops[keep++] = w->ops[i];
            continue;
        }
        stand[k].kind = MS_RQ_RMA;
        stand[k].id = w->ops[i].id;
        stand[k].real = stand[k].user = MPI_REQUEST_NULL;
        rqs[k] = &stand[k];
        k++;
    }
    w->nops = keep;
    for (size_t i = 0; i < w->nrops; i++)
        if (!w->rops[i]->model_done && (target < 0 || w->rops[i]->src == target)) rqs[k++] = w->rops[i];
    int rc = MPI_SUCCESS;
    /* one wait takes at most MS_MAX_WAIT_REQS: later parts start when the earlier are done, so the
     * end is the latest completion either way */
    for (size_t off = 0; off < n; off += MS_MAX_WAIT_REQS) {
        int m = (int)(n - off < MS_MAX_WAIT_REQS ? n - off : MS_MAX_WAIT_REQS);
        if (real && off + (size_t)m == n) rc = shim_wait_around(MS_WIRE_WAIT_ALL, m, rqs + off, res, fn, call_real, real);
        else shim_wait_for(MS_WIRE_WAIT_ALL, m, rqs + off, res, fn);
    }
    if (res != small) free(res);
    free(stand);
    free(rqs);
    return rc;
}

/* ---- operations -------------------------------------------------------------------------- */

/* Issued to the real MPI already (rc); to the model now. request: NULL, or the program's handle
 * of MPI_Rput... (the real request in *request). */
static int issue(ms_win *w, int target, int kind, uint64_t bytes, uint64_t result, int rc, MPI_Request *request,
                 ms_fn_id fn)
{
    if (rc != MPI_SUCCESS || target == MPI_PROC_NULL) return rc;
    if (request) {
        ms_rq *r = ms_rq_new(MS_RQ_RMA);
        r->real = *request;
        r->real_posted = 1;
        r->src = target;
        r->comm_id = w->comm;
        r->model_bytes = bytes;
        r->win = w;
        ms_report_rma(r->id, w->comm, target, kind, bytes, result, fn);
        grow((void **)&w->rops, &w->caprops, w->nrops + 1, sizeof *w->rops);
        w->rops[w->nrops++] = r;
        ms_give_handle(r, request);
    } else {
        uint64_t id = ms_next_req_id();
        ms_report_rma(id, w->comm, target, kind, bytes, result, fn);
        grow((void **)&w->ops, &w->capops, w->nops + 1, sizeof *w->ops);
        w->ops[w->nops++] = (op_ref){id, target};
    }
    ms_advance(ms_isend_cost(bytes));   /* the origin's CPU posts it (ms_model_rma) */
    return rc;
}

void ms_rma_request_done(ms_rq *r)
{
    ms_win *w = r->win;
    if (!w) return;
    for (size_t i = 0; i < w->nrops; i++)
        if (w->rops[i] == r) {
            w->rops[i] = w->rops[--w->nrops];
            break;
        }
    r->win = NULL;
}

void ms_rma_request_freed(ms_rq *r)
{
    ms_win *w = r->win;
    if (!w) return;
    if (!r->model_done) {
        grow((void **)&w->ops, &w->capops, w->nops + 1, sizeof *w->ops);
        w->ops[w->nops++] = (op_ref){r->id, r->src};
    }
    ms_rma_request_done(r);
}

static int is_no_op(MPI_Op op) { return op == MPI_NO_OP; }

int ms_h_put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request,
             ms_fn_id fn)
{
    ms_win *w = win_find(win, fn);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = request ? PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                                 target_datatype, win, &real)
                     : PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                                target_datatype, win);
    if (request) *request = real;
    return issue(w, target_rank, MS_WIRE_RMA_PUT, ms_type_bytes(origin_datatype, origin_count), 0, rc, request, fn);
}

int ms_h_get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
             int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request, ms_fn_id fn)
{
    ms_win *w = win_find(win, fn);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = request ? PMPI_Rget(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                                 target_datatype, win, &real)
                     : PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                                target_datatype, win);
    if (request) *request = real;
    return issue(w, target_rank, MS_WIRE_RMA_GET, 0, ms_type_bytes(origin_datatype, origin_count), rc, request, fn);
}

int ms_h_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                    MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                    MPI_Request *request, ms_fn_id fn)
{
    ms_win *w = win_find(win, fn);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = request ? PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                                        target_count, target_datatype, op, win, &real)
                     : PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                                       target_count, target_datatype, op, win);
    if (request) *request = real;
    return issue(w, target_rank, MS_WIRE_RMA_ACCUMULATE, ms_type_bytes(origin_datatype, origin_count), 0, rc, request, fn);
}

int ms_h_get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr,
                        int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                        int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request,
                        ms_fn_id fn)
{
    ms_win *w = win_find(win, fn);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = request ? PMPI_Rget_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                                            result_datatype, target_rank, target_disp, target_count, target_datatype,
                                            op, win, &real)
                     : PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                                           result_datatype, target_rank, target_disp, target_count, target_datatype,
                                           op, win);
    if (request) *request = real;
    /* MPI_NO_OP: a get (nothing goes to the target but the request) */
    uint64_t in = is_no_op(op) ? 0 : ms_type_bytes(origin_datatype, origin_count);
    return issue(w, target_rank, MS_WIRE_RMA_GET_ACCUMULATE, in, ms_type_bytes(result_datatype, result_count), rc, request,
                 fn);
}

int ms_h_fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
                      MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Fetch_and_op);
    int rc = PMPI_Fetch_and_op(origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
    uint64_t b = ms_type_bytes(datatype, 1);
    return issue(w, target_rank, MS_WIRE_RMA_FETCH_AND_OP, is_no_op(op) ? 0 : b, b, rc, NULL, MS_FN_MPI_Fetch_and_op);
}

int ms_h_compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr, MPI_Datatype datatype,
                          int target_rank, MPI_Aint target_disp, MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Compare_and_swap);
    int rc = PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp, win);
    uint64_t b = ms_type_bytes(datatype, 1);
    return issue(w, target_rank, MS_WIRE_RMA_COMPARE_AND_SWAP, 2 * b, b, rc, NULL, MS_FN_MPI_Compare_and_swap);
}

/* ---- active target: fence ---------------------------------------------------------------- */

static int real_fence(real_arg *a) { return PMPI_Win_fence(a->a, a->win); }

int ms_h_win_fence(int assert, MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_fence);
    /* this rank's operations are complete at their targets, then the group's barrier: every
     * operation of the epoch has completed when any member leaves */
    complete_ops(w, -1, MS_FN_MPI_Win_fence, NULL);
    ms_rq *b = ms_rq_new(MS_RQ_COLL);
    b->comm_id = w->comm;
    ms_report_icoll(b, MS_WIRE_COLL_BARRIER, 0, 0, NULL, 0, MS_FN_MPI_Win_fence);
    real_arg ra = {real_fence, win, NULL, assert, 0, MPI_GROUP_NULL, NULL};
    ms_msg_result res;
    int rc = shim_wait_around(MS_WIRE_WAIT_ALL, 1, &b, &res, MS_FN_MPI_Win_fence, call_real, &ra);
    ms_rq_free(b);
    return rc;
}

/* ---- active target: post, start, complete, wait ------------------------------------------ */

/* The group's members as ranks of the window's group (malloc'd). */
static int *group_ranks(ms_win *w, MPI_Group g, int *n)
{
    PMPI_Group_size(g, n);
    int *in = malloc(sizeof *in * (size_t)(*n + 1)), *out = malloc(sizeof *out * (size_t)(*n + 1));
    if (!in || !out) ms_fatal("out of memory (one-sided communication)");
    for (int i = 0; i < *n; i++) in[i] = i;
    PMPI_Group_translate_ranks(g, *n, in, w->group, out);
    free(in);
    return out;
}

/* A zero-byte message of the model alone (no real message carries it): a post or done notice. */
static ms_rq *notice_send(ms_win *w, int dst, int tag, ms_fn_id fn)
{
    ms_rq *r = ms_rq_new(MS_RQ_SEND);
    r->comm_id = w->comm;
    r->src = dst;
    r->tag = tag;
    ms_report_isend(r, dst, tag, 0, MS_WIRE_SEND_STANDARD, dst == w->me, fn);
    ms_advance(ms_isend_cost(0));
    return r;
}
static ms_rq *notice_recv(ms_win *w, int src, int tag, ms_fn_id fn)
{
    ms_rq *r = ms_rq_new(MS_RQ_RECV);
    r->comm_id = w->comm;
    r->src = src;
    r->tag = tag;
    r->resolved = 1;
    ms_report_irecv(r, src, tag, 0, fn);
    ms_advance(ms_irecv_cost(0));
    return r;
}

static int real_post(real_arg *a) { return PMPI_Win_post(a->group, a->a, a->win); }

int ms_h_win_post(MPI_Group group, int assert, MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_post);
    int n;
    int *origins = group_ranks(w, group, &n);
    /* the done notices its wait will take, posted now (they may come before the wait) */
    for (int i = 0; i < w->nnotices; i++) ms_rq_free(w->notices[i]);
    free(w->notices);
    w->notices = malloc(sizeof *w->notices * (size_t)(n + 1));
    if (!w->notices) ms_fatal("out of memory (one-sided communication)");
    w->nnotices = n;
    for (int i = 0; i < n; i++) w->notices[i] = notice_recv(w, origins[i], TAG_COMPLETE, MS_FN_MPI_Win_post);
    /* MPI_MODE_NOCHECK: the matching starts do not wait for it */
    if (!(assert & MPI_MODE_NOCHECK))
        for (int i = 0; i < n; i++) {
            ms_rq *s = notice_send(w, origins[i], TAG_POST, MS_FN_MPI_Win_post);
            ms_report_free(s, MS_FN_MPI_Win_post);   /* nobody waits for it: the model drops it when done */
            ms_rq_free(s);
        }
    free(origins);
    real_arg ra = {real_post, win, NULL, assert, 0, group, NULL};
    return real_post(&ra);
}

/* Notices to (send) or from (receive) the epoch's targets, then a wait for them around the real call. */
static int notices_around(ms_win *w, int send, int tag, ms_fn_id fn, real_arg *ra)
{
    ms_rq **r = malloc(sizeof *r * (size_t)w->ntargets);
    ms_msg_result *res = malloc(sizeof *res * (size_t)w->ntargets);
    if (!r || !res) ms_fatal("out of memory (one-sided communication)");
    for (int i = 0; i < w->ntargets; i++)
        r[i] = send ? notice_send(w, w->targets[i], tag, fn) : notice_recv(w, w->targets[i], tag, fn);
    int rc = shim_wait_around(MS_WIRE_WAIT_ALL, w->ntargets, r, res, fn, call_real, ra);
    for (int i = 0; i < w->ntargets; i++) ms_rq_free(r[i]);
    free(r);
    free(res);
    return rc;
}

static int real_start(real_arg *a) { return PMPI_Win_start(a->group, a->a, a->win); }

int ms_h_win_start(MPI_Group group, int assert, MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_start);
    free(w->targets);
    w->targets = group_ranks(w, group, &w->ntargets);
    real_arg ra = {real_start, win, NULL, assert, 0, group, NULL};
    if (assert & MPI_MODE_NOCHECK || w->ntargets == 0) return real_start(&ra);
    /* every target's post notice (osc/rdma's start waits for them too) */
    return notices_around(w, 0, TAG_POST, MS_FN_MPI_Win_start, &ra);
}

static int real_complete(real_arg *a) { return PMPI_Win_complete(a->win); }

int ms_h_win_complete(MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_complete);
    real_arg ra = {real_complete, win, NULL, 0, 0, MPI_GROUP_NULL, NULL};
    /* the epoch's operations complete at their targets, then each target gets a done notice */
    for (int i = 0; i < w->ntargets; i++) complete_ops(w, w->targets[i], MS_FN_MPI_Win_complete, NULL);
    int rc = w->ntargets ? notices_around(w, 1, TAG_COMPLETE, MS_FN_MPI_Win_complete, &ra) : real_complete(&ra);
    free(w->targets);
    w->targets = NULL;
    w->ntargets = 0;
    return rc;
}

static int real_wait(real_arg *a) { return PMPI_Win_wait(a->win); }

static void notices_done(ms_win *w)
{
    for (int i = 0; i < w->nnotices; i++) ms_rq_free(w->notices[i]);
    free(w->notices);
    w->notices = NULL;
    w->nnotices = 0;
}

int ms_h_win_wait(MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_wait);
    real_arg ra = {real_wait, win, NULL, 0, 0, MPI_GROUP_NULL, NULL};
    if (w->nnotices == 0) return real_wait(&ra);
    ms_msg_result *res = malloc(sizeof *res * (size_t)w->nnotices);
    if (!res) ms_fatal("out of memory (one-sided communication)");
    int rc = shim_wait_around(MS_WIRE_WAIT_ALL, w->nnotices, w->notices, res, MS_FN_MPI_Win_wait, call_real, &ra);
    free(res);
    notices_done(w);
    return rc;
}

/* True once every origin's done notice has arrived in virtual time; the real epoch then ends
 * too (its origins' real completes are under way: they sent their notices first). */
int ms_h_win_test(MPI_Win win, int *flag)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_test);
    if (w->nnotices) {
        ms_msg_result *res = malloc(sizeof *res * (size_t)w->nnotices);
        if (!res) ms_fatal("out of memory (one-sided communication)");
        shim_wait_for(MS_WIRE_TEST_ALL, w->nnotices, w->notices, res, MS_FN_MPI_Win_test);
        int all = res[0].completed;
        free(res);
        if (!all) {
            *flag = 0;
            ms_post_deferred();
            return MPI_SUCCESS;
        }
        notices_done(w);
    }
    ms_real_wait rw = {0};
    int rc;
    while ((rc = PMPI_Win_test(win, flag)) == MPI_SUCCESS && !*flag) ms_real_wait_step(&rw, NULL);
    ms_real_wait_end(&rw);
    return rc;
}

/* ---- passive target: lock, unlock, flush --------------------------------------------------- */

/* Lock requests (or unlocks) to these targets, in the model, all at once; wait for their answers,
 * making `real` while the model holds the rank (NULL: none). */
static int lock_ops(ms_win *w, const int *targets, int n, int kind, ms_fn_id fn, real_arg *real)
{
    if (n == 0) return real ? call_real(real) : MPI_SUCCESS;
    ms_rq **r = malloc(sizeof *r * (size_t)n);
    ms_msg_result *res = malloc(sizeof *res * (size_t)n);
    if (!r || !res) ms_fatal("out of memory (one-sided communication)");
    for (int i = 0; i < n; i++) {
        r[i] = ms_rq_new(MS_RQ_RMA);
        r[i]->src = targets[i];
        ms_report_rma(r[i]->id, w->comm, targets[i], kind, 0, 0, fn);
        ms_advance(ms_isend_cost(0));
    }
    int rc = real ? shim_wait_around(MS_WIRE_WAIT_ALL, n, r, res, fn, call_real, real)
                  : (shim_wait_for(MS_WIRE_WAIT_ALL, n, r, res, fn), MPI_SUCCESS);
    for (int i = 0; i < n; i++) ms_rq_free(r[i]);
    free(r);
    free(res);
    return rc;
}

int ms_h_win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_lock);
    if (rank == MPI_PROC_NULL) return PMPI_Win_lock(lock_type, rank, assert, win);
    /* MPI_MODE_NOCHECK: no conflicting lock exists, the implementation skips the protocol */
    if (!(assert & MPI_MODE_NOCHECK) && rank >= 0 && rank < w->size) {
        int kind = lock_type == MPI_LOCK_EXCLUSIVE ? MS_WIRE_RMA_LOCK_EXCLUSIVE : MS_WIRE_RMA_LOCK_SHARED;
        lock_ops(w, &rank, 1, kind, MS_FN_MPI_Win_lock, NULL);   /* granted in the model first */
        w->locked[rank] = 1;
    }
    return PMPI_Win_lock(lock_type, rank, assert, win);
}

static int real_unlock(real_arg *a) { return PMPI_Win_unlock(a->a, a->win); }

int ms_h_win_unlock(int rank, MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_unlock);
    real_arg ra = {real_unlock, win, NULL, rank, 0, MPI_GROUP_NULL, NULL};
    if (rank == MPI_PROC_NULL || rank < 0 || rank >= w->size) return real_unlock(&ra);
    if (!w->locked[rank]) return complete_ops(w, rank, MS_FN_MPI_Win_unlock, &ra);
    complete_ops(w, rank, MS_FN_MPI_Win_unlock, NULL);
    w->locked[rank] = 0;
    return lock_ops(w, &rank, 1, MS_WIRE_RMA_UNLOCK, MS_FN_MPI_Win_unlock, &ra);
}

static int *all_ranks(const ms_win *w)
{
    int *t = malloc(sizeof *t * (size_t)(w->size + 1));
    if (!t) ms_fatal("out of memory (one-sided communication)");
    for (int i = 0; i < w->size; i++) t[i] = i;
    return t;
}

/* A shared lock of every target, requested of all at once. */
int ms_h_win_lock_all(int assert, MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_lock_all);
    if (!(assert & MPI_MODE_NOCHECK)) {
        int *t = all_ranks(w);
        lock_ops(w, t, w->size, MS_WIRE_RMA_LOCK_SHARED, MS_FN_MPI_Win_lock_all, NULL);
        free(t);
        w->all_locked = 1;
    }
    return PMPI_Win_lock_all(assert, win);
}

static int real_unlock_all(real_arg *a) { return PMPI_Win_unlock_all(a->win); }

int ms_h_win_unlock_all(MPI_Win win)
{
    ms_win *w = win_find(win, MS_FN_MPI_Win_unlock_all);
    real_arg ra = {real_unlock_all, win, NULL, 0, 0, MPI_GROUP_NULL, NULL};
    if (!w->all_locked) return complete_ops(w, -1, MS_FN_MPI_Win_unlock_all, &ra);
    complete_ops(w, -1, MS_FN_MPI_Win_unlock_all, NULL);
    w->all_locked = 0;
    int *t = all_ranks(w);
    int rc = lock_ops(w, t, w->size, MS_WIRE_RMA_UNLOCK, MS_FN_MPI_Win_unlock_all, &ra);
    free(t);
    return rc;
}

/* Flushes: the operations to the target complete at it. A local flush is the same here: as on
 * InfiniBand RC, an RDMA operation completes at its origin with the target's acknowledgement. */
static int real_flush(real_arg *a) { return PMPI_Win_flush(a->a, a->win); }
static int real_flush_local(real_arg *a) { return PMPI_Win_flush_local(a->a, a->win); }
static int real_flush_all(real_arg *a) { return PMPI_Win_flush_all(a->win); }
static int real_flush_local_all(real_arg *a) { return PMPI_Win_flush_local_all(a->win); }

int ms_h_win_flush(int rank, MPI_Win win)
{
    real_arg ra = {real_flush, win, NULL, rank, 0, MPI_GROUP_NULL, NULL};
    return complete_ops(win_find(win, MS_FN_MPI_Win_flush), rank, MS_FN_MPI_Win_flush, &ra);
}
int ms_h_win_flush_local(int rank, MPI_Win win)
{
    real_arg ra = {real_flush_local, win, NULL, rank, 0, MPI_GROUP_NULL, NULL};
    return complete_ops(win_find(win, MS_FN_MPI_Win_flush_local), rank, MS_FN_MPI_Win_flush_local, &ra);
}
int ms_h_win_flush_all(MPI_Win win)
{
    real_arg ra = {real_flush_all, win, NULL, 0, 0, MPI_GROUP_NULL, NULL};
    return complete_ops(win_find(win, MS_FN_MPI_Win_flush_all), -1, MS_FN_MPI_Win_flush_all, &ra);
}
int ms_h_win_flush_local_all(MPI_Win win)
{
    real_arg ra = {real_flush_local_all, win, NULL, 0, 0, MPI_GROUP_NULL, NULL};
    return complete_ops(win_find(win, MS_FN_MPI_Win_flush_local_all), -1, MS_FN_MPI_Win_flush_local_all, &ra);
}

/* ---- free -------------------------------------------------------------------------------- */

/* Collective: what is still outstanding completes, the members meet (as creation: they leave
 * together), then the real free (a barrier in Open MPI). */
int ms_h_win_free(MPI_Win *win)
{
    ms_win *w = win_find(*win, MS_FN_MPI_Win_free);
    complete_ops(w, -1, MS_FN_MPI_Win_free, NULL);
    ms_rq *r = ms_rq_new(MS_RQ_COLL);
    r->comm_id = w->comm;
    ms_report_icoll(r, MS_WIRE_COLL_BARRIER, 0, 0, NULL, 0, MS_FN_MPI_Win_free);
    shim_wait_sync(r, MS_FN_MPI_Win_free);
    ms_rq_free(r);
    int rc = PMPI_Win_free(win);
    forget_win(w);
    return rc;
}
