/* Synthetic traces for tests and benchmarks: build ms_trace objects (and raw rank files) that
 * look like what the shim records, without running MPI. */
#ifndef SYNTH_TRACE_H
#define SYNTH_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include "ms_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synth synth;

/* Function ids of synthetic traces (their /fn_names). */
enum { SY_SEND = 0, SY_RECV, SY_ISEND, SY_IRECV, SY_WAITALL, SY_BARRIER, SY_FINALIZE, SY_WAIT, SY_PROBE,
       SY_COMM_SPLIT, SY_ALLREDUCE, SY_BCAST, SY_NFN };

synth *synth_new(int nranks);
/* Finish: the trace (owned by the caller, ms_trace_free). The builder is freed. */
ms_trace *synth_finish(synth *s);
/* Records of one rank, in order (each helper writes what the shim writes for that call). */
void synth_call(synth *s, int rank, int fn, int64_t compute_ps);      /* TR_CALL */
void synth_exit(synth *s, int rank, int fn);                          /* TR_EXIT */
uint64_t synth_isend(synth *s, int rank, int dst, int tag, uint64_t bytes, uint64_t comm);
uint64_t synth_irecv(synth *s, int rank, int src, int tag, uint64_t bytes, uint64_t comm);
uint64_t synth_icoll(synth *s, int rank, int kind, int root, uint64_t bytes, uint64_t comm);
void synth_wait(synth *s, int rank, int mode, int n, const uint64_t *reqs, int flags);
void synth_probe(synth *s, int rank, int src, int tag, int blocking, uint64_t comm);
void synth_resume(synth *s, int rank, int64_t t, int n, const ms_trace_result *res);
void synth_resolve(synth *s, int rank, uint64_t req, int source, int tag, uint64_t bytes);
void synth_comm_add(synth *s, int rank, uint64_t comm, int size, const int32_t *members);
/* A collective with a counts list (v-variants, neighbourhood: ms_coll_args.counts). */
uint64_t synth_icollv(synth *s, int rank, int kind, int root, uint64_t bytes, uint64_t comm, int n,
                      const uint64_t *counts);
/* The rank's last ISEND/IRECV record: the user's buffer address (0 unknown) and, for an IRECV,
 * its flags (MS_TRACE_FLAG_NOTIFY: held back behind an undecided wildcard). */
void synth_post_details(synth *s, int rank, uint64_t buf, int flags);
/* A one-sided operation (ms_rma_kind) on the window whose communicator is comm. */
uint64_t synth_rma(synth *s, int rank, int kind, int target, uint64_t bytes, uint64_t result_bytes, uint64_t comm);
/* The rank's last ICOLL record is an intercommunicator's, on the union of groups whose low group
 * has `low` members (ms_coll_args.inter_low). */
void synth_inter(synth *s, int rank, int low);
void synth_cancel(synth *s, int rank, uint64_t req);                  /* MPI_Cancel */
void synth_free(synth *s, int rank, uint64_t req);                    /* MPI_Request_free */
void synth_unmodelled(synth *s, int rank, const char *text);          /* an untimed call's name */
void synth_finalize(synth *s, int rank);

/* Whole MPI calls (TR_CALL .. TR_EXIT around the shim's records). */
void synth_send(synth *s, int rank, int64_t compute, int dst, int tag, uint64_t bytes);
void synth_recv(synth *s, int rank, int64_t compute, int src, int tag, uint64_t bytes);

/* Shapes. compute_ps: computation before each iteration. */
ms_trace *synth_pingpong(int iters, uint64_t bytes, int64_t compute_ps);
/* 2D periodic stencil on a px x py process grid (px*py = nranks): per iteration every rank posts
 * 4 Irecv, 4 Isend (faces of `bytes`), one Waitall of 8. */
ms_trace *synth_stencil(int nranks, int iters, uint64_t bytes, int64_t compute_ps);
/* fan-in then fan-out (apps/fan): reps x (barrier, nranks-1 sends to 0, barrier, 0 sends to all). */
ms_trace *synth_fan(int nranks, int reps, uint64_t bytes);
/* Seed 001's fan-out as one MPI_Bcast of `bytes` from rank 0, after a barrier, `reps` times. */
ms_trace *synth_fan_bcast(int nranks, int reps, uint64_t bytes);

/* Serialize one rank of a trace as a raw rank file (trace_raw.h layout); malloc'd bytes. */
unsigned char *synth_raw_bytes(const ms_trace *t, int rank, size_t *len);
/* Write <dir>/rank-<R>.mstrace for every rank and a meta.json; 0 or -1. */
int synth_write_raw_dir(const ms_trace *t, const char *dir);

#ifdef __cplusplus
}
#endif
#endif
