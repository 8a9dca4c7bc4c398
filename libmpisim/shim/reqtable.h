/* The shim's requests and the table that finds them by the handle the program holds. Open
 * addressing on the MPI_Request value (an opaque pointer or integer: only compared and hashed),
 * tombstones cleared when it grows. No global state: tests/transport exercises it without
 * mpirun. */
#ifndef MS_REQTABLE_H
#define MS_REQTABLE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A request the shim tracks: the model's id, and the real MPI request behind it (if posted). */
typedef enum { MS_RQ_SEND = 1, MS_RQ_RECV, MS_RQ_COLL, MS_RQ_RMA } ms_rq_kind;

typedef struct ms_rq {
    uint64_t id;                 /* model request id (per rank, never reused) */
    MPI_Request user;            /* the handle the program holds */
    MPI_Request real;            /* real request; MPI_REQUEST_NULL when not posted / done */
    int kind;
    int real_posted;             /* the real operation has been started */
    int real_done;               /* the real operation has completed */
    int user_is_grequest;        /* `user` is a generalized request standing in for `real` */
    int deferred;                /* receive held back from the real MPI (docs/architecture.md) */
    int resolved;                /* src/tag are known (named by the program, or decided by the model) */
    int matched;                 /* the model has matched this receive: its real one may be posted */
    int notify;                  /* the model was asked to say when it matches (MS_IRECV_NOTIFY) */
    int model_done;              /* model said complete */
    int detached_copy;           /* send from the shim's copy: user sees completion early */
    int cancel_sent;             /* MPI_Cancel reported to the model */
    int model_cancelled;         /* the model took the receive back: nothing is received */
    int model_forgotten;         /* reported complete to the model's satisfaction: it dropped it */
    int local_known;             /* the shim knows when the model completes it: local_done (an eager
                                  * standard send, docs/architecture.md "Local answers") */
    int64_t local_done;
    uint64_t model_bytes;        /* bytes as reported to the model (what its answers say) */
    /* receive arguments kept until the real receive can be posted */
    void *buf;
    int count;
    MPI_Datatype dtype;
    int src, tag;                /* a receive's source and tag; a send's destination and tag */
    MPI_Comm comm;
    uint64_t comm_id;
    MPI_Status status;
    void *copy;                  /* shim-owned copy of an eager send's data */
    size_t copy_cap;
    void *persist;               /* persistent request: its arguments and active operation */
    void *win;                   /* MS_RQ_RMA (MPI_Rput...): the shim's record of its window (rma.c) */
    int roff;                    /* intercommunicator: the remote group's first rank in the model's union */
    struct ms_rq *next_deferred; /* FIFO of receives not yet posted, per process */
    struct ms_rq *next_free;
} ms_rq;

typedef struct ms_rq_table {
    ms_rq **slots;
    size_t cap, used;            /* used: live entries (tombstones not counted) */
} ms_rq_table;

/* Make r findable by r->user. -1: out of memory. */
int ms_rqt_index(ms_rq_table *t, ms_rq *r);
ms_rq *ms_rqt_find(const ms_rq_table *t, MPI_Request user);
void ms_rqt_unindex(ms_rq_table *t, ms_rq *r);
/* By the model's id: a scan (only RESOLVE messages need it). */
ms_rq *ms_rqt_find_id(const ms_rq_table *t, uint64_t id);
/* The entry in slot i (i < t->cap), or NULL: to visit every request. */
ms_rq *ms_rqt_at(const ms_rq_table *t, size_t i);
void ms_rqt_destroy(ms_rq_table *t);

#ifdef __cplusplus
}
#endif
#endif
