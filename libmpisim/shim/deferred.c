/* Deferred receives (split from shim.c): held back from the real MPI and posted in the order
 * the model matched them; the stash of messages delivered to receives the model cancelled. */
#define _GNU_SOURCE
#include "shim_state.h"

#include <stdlib.h>
#include <string.h>

void ms_defer_recv(ms_rq *r)
{
    r->deferred = 1;
    r->next_deferred = NULL;
    if (S.deferred_tail) S.deferred_tail->next_deferred = r;
    else S.deferred_head = r;
    S.deferred_tail = r;
}

int ms_recv_must_defer(uint64_t comm_id, int src, int tag)
{
    if (S.resolve_pending) ms_post_deferred();
    for (ms_rq *q = S.deferred_head; q; q = q->next_deferred)
        if (q->comm_id == comm_id && !q->model_cancelled && (q->src == MPI_ANY_SOURCE || q->src == src) &&
            (q->tag == MPI_ANY_TAG || q->tag == tag))
            return 1;
    return 0;
}

/* Messages the real MPI delivered to receives the model cancelled (rare: the sender ran ahead in
 * real time of a cancel decided earlier in virtual time). Each is the earliest message of its
 * (communicator, source, tag) not yet received, so the next real receive posted for that triple
 * is the one the model matches it to. */
typedef struct stash_entry {
    MPI_Comm comm;
    int src, tag;
    int packed_bytes, bytes;
    void *data;
    struct stash_entry *next;
} stash_entry;
static stash_entry *stash_head;

static int same_triple(const ms_rq *q, MPI_Comm comm, int src, int tag)
{
    int cmp = MPI_UNEQUAL;
    if (q->comm != comm) PMPI_Comm_compare(q->comm, comm, &cmp);
    return (q->comm == comm || cmp == MPI_IDENT) && q->src == src && q->tag == tag;
}

void ms_stash_keep(const ms_rq *c)
{
    int src = c->status.MPI_SOURCE, tag = c->status.MPI_TAG, count = 0, size = 0, pos = 0;
    /* a real receive for the same triple already posted has taken the next message instead */
    for (size_t j = 0; j < S.table.cap; j++) {
        ms_rq *q = ms_rqt_at(&S.table, j);
        if (q && q != c && q->kind == MS_RQ_RECV && q->real_posted && !q->real_done &&
            same_triple(q, c->comm, src, tag))
            ms_fatal("MPI_Cancel: the real MPI delivered a message (source %d, tag %d) to a receive the model "
                     "cancelled, and a later receive for the same source and tag is already posted; this "
                     "reordering is not supported", src, tag);
    }
    PMPI_Get_count(&c->status, c->dtype, &count);
    PMPI_Pack_size(count, c->dtype, c->comm, &size);
    stash_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->data = malloc(size ? (size_t)size : 1))) ms_fatal("out of memory (cancel stash)");
    PMPI_Pack(c->buf, count, c->dtype, e->data, size, &pos, c->comm);
    PMPI_Get_count(&c->status, MPI_BYTE, &e->bytes);
    e->comm = c->comm;
    e->src = src;
    e->tag = tag;
    e->packed_bytes = pos;
    stash_entry **tail = &stash_head;
    while (*tail) tail = &(*tail)->next;
    *tail = e;
}

int ms_post_real_recv(ms_rq *r)
{
    for (stash_entry **pe = &stash_head; *pe; pe = &(*pe)->next) {
        stash_entry *e = *pe;
        if (!same_triple(r, e->comm, e->src, e->tag)) continue;
        int pos = 0, count = 0, size = 0;
        PMPI_Type_size(r->dtype, &size);
        count = size > 0 ? e->bytes / size : 0;
        int rc = PMPI_Unpack(e->data, e->packed_bytes, &pos, r->buf, count, r->dtype, r->comm);
        memset(&r->status, 0, sizeof r->status);
        r->status.MPI_SOURCE = e->src;
        r->status.MPI_TAG = e->tag;
        r->status.MPI_ERROR = MPI_SUCCESS;
        PMPI_Status_set_elements(&r->status, MPI_BYTE, e->bytes);
        r->real = MPI_REQUEST_NULL;
        r->real_posted = 1;
        r->real_done = 1;
        *pe = e->next;
        free(e->data);
        free(e);
        return rc;
    }
    int rc = PMPI_Irecv(r->buf, r->count, r->dtype, r->src, r->tag, r->comm, &r->real);
    if (rc == MPI_SUCCESS) r->real_posted = 1;
    return rc;
}

void ms_post_deferred(void)
{
    S.resolve_pending = 0;
    ms_rq *prev = NULL;
    for (ms_rq *r = S.deferred_head; r;) {
        ms_rq *next = r->next_deferred;
        /* A receive goes once the model has matched it, in posting order. An earlier receive
         * still unmatched cannot want the same message: it was posted first, so the model would
         * have given it that message (or an earlier one of the same source and tag) first. An
         * earlier one matched to the same source and tag goes first, in this same pass. So the
         * real MPI, matching per (source, tag) in posting order, takes what the model took. */
        if (r->model_cancelled || r->matched || r->model_done) {
            /* a receive the model took back is never posted */
            if (!r->model_cancelled) {
                int rc = ms_post_real_recv(r);
                if (rc != MPI_SUCCESS) ms_fatal("posting the real receive failed (error %d)", rc);
            }
            r->deferred = 0;
            if (prev) prev->next_deferred = next;
            else S.deferred_head = next;
            if (S.deferred_tail == r) S.deferred_tail = prev;
            r->next_deferred = NULL;
        } else {
            prev = r;
        }
        r = next;
    }
}
