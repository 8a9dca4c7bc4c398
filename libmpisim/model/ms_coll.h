/* Collective algorithms as data: each algorithm is a generator of one member's step list.
 *
 * A plan is a sequence of steps; a step is a set of point-to-point operations (sends and
 * receives to/from comm ranks) that are all posted when the step starts; the step ends when
 * all of them have completed, plus the reduction cost of `reduce_bytes` (combining received
 * data). The next step starts when the previous one ends. The MPI layer model plays the steps
 * through its ordinary eager/rendezvous machinery in a matching space of its own.
 *
 * The algorithms and their selection rules follow MPICH 3.x (MPICH src/mpi/coll/, the intra-
 * communicator defaults and their CVAR thresholds); see README.md in this folder.
 */
#ifndef MS_COLL_H
#define MS_COLL_H

#include <stddef.h>
#include <stdint.h>
#include "ms_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_coll_op {
    int peer;          /* comm rank */
    int is_send;       /* 1 send, 0 receive */
    uint64_t bytes;    /* message size (for receives: what the matching send carries) */
    int into_sent;     /* a receive into the part of the result this member sent earlier in the plan
                        * (its peer's core read those lines: mpi.size_segments COPY_SHARED_PB) */
} ms_coll_op;

typedef struct ms_coll_step {
    size_t first_op, nops;     /* ops[first_op .. first_op+nops) */
    uint64_t reduce_bytes;     /* bytes combined after the step's operations complete */
    uint64_t copy_bytes;       /* a local copy before the step's operations are posted (the send
                                * buffer into the result, a member's own block) */
} ms_coll_step;

typedef struct ms_coll_plan {
    ms_coll_step *steps;
    size_t nsteps, cap_steps;
    ms_coll_op *ops;
    size_t nops, cap_ops;
    int alg;                   /* algorithm actually generated (index in the kind's table, >= 1) */
    uint64_t pending_copy;     /* generating: a local copy for the next step */
    int oom;                   /* set if an allocation failed */
} ms_coll_plan;

/* Names: "barrier", "bcast", ... (the names used in mpi.coll.<name>.algorithm). */
const char *ms_coll_kind_name(ms_coll_kind kind);
/* MPI function name ("MPI_Bcast") for reports. */
const char *ms_coll_mpi_name(ms_coll_kind kind);
/* Algorithms of a kind: index 0 is "auto", 1..count-1 the algorithms. */
int ms_coll_algorithm_count(ms_coll_kind kind);
const char *ms_coll_algorithm_name(ms_coll_kind kind, int alg);
int ms_coll_algorithm_lookup(ms_coll_kind kind, const char *name);   /* -1 if unknown */
/* "auto|a|b|..." for the configuration key's choices. */
const char *ms_coll_algorithm_choices(ms_coll_kind kind);

/* MPICH's automatic choice for this size/message (never 0). */
int ms_coll_choose(ms_coll_kind kind, int size, uint64_t bytes, const uint64_t *counts);

/* Generate member `me`'s plan (comm ranks 0..size-1). `alg` 0 = automatic; a forced algorithm
 * that cannot run on this size (power-of-two only) falls back to the automatic choice.
 * `counts`: per-member bytes for the v-variants and reduce_scatter (NULL: `bytes` each).
 * Returns 0, or -1 (bad arguments / out of memory). The plan is reset first. */
int ms_coll_generate(ms_coll_plan *plan, ms_coll_kind kind, int alg, int size, int me, int root,
                     uint64_t bytes, const uint64_t *counts);

/* The same, with everything a member says (ms_model.h ms_coll_args): `counts` has `ncounts`
 * entries (alltoallv: the send counts, then the receive counts, 2 x size; with size entries only,
 * every pair exchanges a message). An intercommunicator's collective (inter_low > 0) is played on
 * the union of its two groups, the low group's members as ranks 0..inter_low-1 and the high
 * group's after them; `root` is then the root's union rank, this member's own when it is the root
 * (MPI_ROOT), or MS_COLL_ROOT_NONE for the other members of the root's group (MPI_PROC_NULL). */
#define MS_COLL_ROOT_NONE (-2)
typedef struct ms_coll_spec {
    ms_coll_kind kind;
    int alg;                   /* 0: automatic */
    int size, me, root;
    uint64_t bytes;
    const uint64_t *counts;
    size_t ncounts;
    int inter_low;             /* 0: an intracommunicator; else the size of the low group */
} ms_coll_spec;
int ms_coll_generate_spec(ms_coll_plan *plan, const ms_coll_spec *spec);
void ms_coll_plan_free(ms_coll_plan *plan);

#ifdef __cplusplus
}
#endif
#endif
