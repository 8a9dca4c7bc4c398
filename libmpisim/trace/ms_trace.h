/* ms_trace: mpisim traces. C11, no MPI inside, nothing printed, no exit().
 *
 * Two forms of a trace:
 *  - raw: what a rank's shim appends while it runs, <dir>/rank-<R>.mstrace (layout in
 *    libmpisim/trace/trace_raw.h: a header, then protocol messages as records), plus <dir>/meta.json
 *    written by `mpisim run --trace` / `mpisim trace`;
 *  - HDF5: one file for the whole job (schema in replay/README.md), what replay and sweeps read
 *    and what h5py / h5dump users look at.
 *
 * In memory both become an ms_trace: per rank, an array of ms_trace_event (one per record, the
 * same fields as the HDF5 compound dataset /ranks/<R>/events) and the side arrays the events
 * point into (request lists of waits, counts of v-collectives, results of resumes, texts), plus
 * the communicators' memberships and the job's metadata.
 *
 * Every function returns 0 (or a pointer) on success and -1 (NULL) on error with one line in
 * err naming the file (and the byte offset or HDF5 object) at fault. Corrupt input never
 * crashes: every length and index is checked before use. */
#ifndef MS_TRACE_H
#define MS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MS_TRACE_SCHEMA "mpisim-trace/2"   /* written; mpisim-trace/1 is still read */
/* Bounds on what a trace may claim (ms_trace_validate); beyond them a record is damaged, and the
 * model would spend hours on it or overflow its int64 picosecond clock.
 * - bytes of one message or collective block: an int count of 8-byte elements is at most 16 GiB;
 *   64 GiB leaves room for derived types (the myrinet engine takes ~3 s per GiB);
 * - one computation gap: 2^60 ps (13 days), a rank's clock 2^62 ps (53 days): far from INT64_MAX
 *   so that sums of gaps and transfer times cannot overflow. */
#define MS_TRACE_MAX_BYTES (UINT64_C(1) << 36)
#define MS_TRACE_MAX_GAP_PS (INT64_C(1) << 60)
#define MS_TRACE_MAX_CLOCK_PS (INT64_C(1) << 62)

/* matched_source / matched_tag / complete_ps not known from the recording */
#define MS_TRACE_UNKNOWN INT32_MIN
#define MS_TRACE_UNKNOWN_TIME INT64_MIN

/* Record kinds. A raw record is a protocol message (trace_raw.h) and keeps its message type's
 * value, which the HDF5 trace stores too; trace_raw.c checks that they agree. */
typedef enum {
    MS_TRACE_ISEND = 2, MS_TRACE_IRECV = 3, MS_TRACE_ICOLL = 4, MS_TRACE_COMM_ADD = 5, MS_TRACE_WAIT = 6,
    MS_TRACE_PROBE = 7, MS_TRACE_FINALIZE = 8, MS_TRACE_UNMODELLED = 9, MS_TRACE_CALLSITE = 10,
    MS_TRACE_CLOCK = 11, MS_TRACE_SITE = 12, MS_TRACE_CANCEL = 13, MS_TRACE_FREE = 14, MS_TRACE_RMA = 17,
    MS_TRACE_PROC_EXIT = 18,  /* the process exits (exit()) without MPI_Finalize: mode = its exit code */
    MS_TRACE_CALL = 32, MS_TRACE_EXIT = 33, MS_TRACE_PCONTROL = 34,  /* an MPI call begins, returns; MPI_Pcontrol */
    MS_TRACE_RESUME = 65, MS_TRACE_RESOLVE = 66                       /* the model's (or the real MPI's) answers */
} ms_trace_kind;
/* WAIT flags */
#define MS_TRACE_FLAG_SYNC 1      /* the members of the collective left together (communicator creation) */
#define MS_TRACE_FLAG_UNTIMED 2   /* back from an untimed call */
#define MS_TRACE_FLAG_LOCAL 4     /* answered by the shim itself, as the model would have (no round trip;
                                   * docs/architecture.md "Local answers"): replay asks the model and checks */
/* IRECV flags */
#define MS_TRACE_FLAG_NOTIFY 1    /* held back from the real MPI behind an undecided wildcard: the model
                                   * resolved it when it matched it (replay asks the same) */

/* One record of a rank; `kind` is an ms_trace_kind. Fields a kind does not use are 0 (the
 * matched_* and complete_ps "unknown" markers excepted). Meaning per kind: replay/README.md. */
typedef struct ms_trace_event {
    int32_t kind;
    int32_t fn;              /* MPI function id (names: the trace's fn_names) or -1 */
    int64_t t_ps;            /* recorded virtual time (posts, waits, resumes; TR_EXIT: clock at exit) */
    int64_t compute_ps;      /* TR_CALL: computation charged before the call; FINALIZE: total */
    int64_t raw_compute_ns;  /* TR_CALL: the same, as measured (before shim.cpu_factor) */
    int64_t real_entry_ns;   /* TR_CALL: CLOCK_MONOTONIC at entry */
    int64_t real_exit_ns;    /* TR_EXIT: CLOCK_MONOTONIC at exit */
    int64_t complete_ps;     /* ISEND/IRECV/ICOLL: completion time in the recorded resume, else unknown */
    uint64_t comm;           /* communicator id (0 world, 1 self) */
    uint64_t bytes;          /* message/collective bytes; RESOLVE: bytes; FINALIZE: calls */
    uint64_t req;            /* request id (ISEND, IRECV, ICOLL, RESOLVE) */
    uint64_t callsite;       /* TR_CALL, WAIT, PROBE: return address in the program; ISEND, IRECV: the
                              * user's buffer address (0 unknown), for the host model's registration cache;
                              * RMA: the result's bytes (a get's, a fetching atomic's) */
    int64_t list_off;        /* WAIT: reqs in `lists`; ICOLL: counts in `lists`; RESUME: `results`; */
    int32_t list_n;          /* UNMODELLED/CALLSITE: bytes of `text`; COMM_ADD: list_off = index in /comms */
    int32_t peer;            /* ISEND dst, IRECV src, ICOLL root, PROBE src, RESOLVE source, COMM_ADD size,
                              * RMA target */
    int32_t tag;             /* ISEND/IRECV/PROBE tag, RESOLVE tag */
    int32_t mode;            /* ISEND send mode, ICOLL kind, WAIT mode, PROBE blocking, RESUME n, TR_EXIT rc,
                              * RMA kind (ms_rma_kind) */
    int32_t flags;           /* WAIT flags (MS_TRACE_FLAG_SYNC, _UNTIMED, _LOCAL); IRECV: MS_TRACE_FLAG_NOTIFY;
                              * ICOLL: an intercommunicator's low group size (0: intra) */
    int32_t matched_source;  /* IRECV/PROBE: the sender the recording matched (comm rank), else UNKNOWN */
    int32_t matched_tag;     /* same, its tag */
    int32_t pad;
} ms_trace_event;

/* One request's outcome in a recorded resume (= ms_msg_result). */
typedef struct ms_trace_result {
    uint64_t req;
    int64_t complete_time;
    uint64_t bytes;
    int32_t completed, source, tag;
    int32_t cancelled;            /* completed by MPI_Cancel */
} ms_trace_result;

typedef struct ms_trace_rank {
    int32_t rank;
    int32_t pid;
    int32_t cosim;           /* 1: recorded during a co-simulation (resume times are the model's) */
    int32_t truncated;       /* 1: the raw file ended inside a record (killed rank); it was dropped */
    int32_t missing;         /* 1: the rank left no records (its raw file was missing or empty) */
    int64_t start_real_ns;
    char hostname[64];
    ms_trace_event *ev;
    size_t nev;
    uint64_t *lists;         /* WAIT request ids, ICOLL counts */
    size_t nlists;
    ms_trace_result *results;
    size_t nresults;
    char *text;              /* UNMODELLED/CALLSITE texts, each NUL-terminated */
    size_t ntext;
} ms_trace_rank;

typedef struct ms_trace_comm {
    uint64_t id;
    int32_t size;
    int32_t pad;
    int64_t offset;          /* first member in members[] */
} ms_trace_comm;

typedef struct ms_trace {
    int nranks;
    ms_trace_rank *ranks;
    ms_trace_comm *comms;    /* every communicator registered by some rank (COMM_ADD) */
    size_t ncomms;
    int32_t *members;        /* world ranks, comms[i].size of them from comms[i].offset */
    size_t nmembers;
    /* metadata; NULL when absent */
    char **program;          /* program and arguments */
    int nprogram;
    char *config_json;       /* the resolved configuration of the recorded run (JSON object) */
    char *machine;           /* hwloc summary text */
    char *bindings_json;     /* JSON array */
    char *mpisim_version;    /* of the recording run */
    char **fn_names;         /* MPI function names by id (the ids are per build) */
    size_t nfn;
} ms_trace;

void ms_trace_free(ms_trace *t);
const char *ms_trace_fn_name(const ms_trace *t, int fn);   /* "?" when unknown */

/* ---- raw files ------------------------------------------------------------------------------ */

/* Read one raw rank file. A trailing partial record is dropped (r->truncated = 1); anything else
 * that is not a valid record is an error "FILE: offset N: ...". The side arrays are filled;
 * matched_source/matched_tag/complete_ps are derived from the RESOLVE and RESUME records.
 * COMM_ADD members go to *members (appended; *nmembers updated); the event's list_off points at
 * them there (ms_trace_read_dir turns that into /comms indices). */
int ms_trace_read_raw(const char *path, ms_trace_rank *r, int32_t *nranks_out, int32_t **members,
                      size_t *nmembers, char *err, size_t errlen);
/* The same from memory (fuzzing, tests); `name` is used in messages. */
int ms_trace_parse_raw(const void *data, size_t len, const char *name, ms_trace_rank *r, int32_t *nranks_out,
                       int32_t **members, size_t *nmembers, char *err, size_t errlen);

/* Read <dir>/meta.json (optional: missing fields are absent) and every <dir>/rank-<R>.mstrace.
 * A rank whose file is missing or empty (it died before writing) becomes a rank without records
 * (missing = 1); the others are kept. */
ms_trace *ms_trace_read_dir(const char *dir, char *err, size_t errlen);
/* The same from the directory open at dfd (mpisim's own raw directory, held since it made it:
 * a name swapped meanwhile does not lead elsewhere); `dir` names it in messages. */
ms_trace *ms_trace_read_dirfd(int dfd, const char *dir, char *err, size_t errlen);
/* "1, 3" (the ranks without records) into buf; their count. */
int ms_trace_missing_ranks(const ms_trace *t, char *buf, size_t len);

/* ---- HDF5 --------------------------------------------------------------------------------- */

int ms_trace_write_h5(const ms_trace *t, const char *path, char *err, size_t errlen);
/* Reads in a forked child with a time limit (ms_trace_read_limit_s, counted from the child's last
 * progress: it sends rank after rank) and a memory bound: HDF5 1.10 itself can overflow a buffer,
 * loop or crash on a damaged file, so a damaged file is an error naming it, never a crash or a
 * hang of the caller. */
ms_trace *ms_trace_read_h5(const char *path, char *err, size_t errlen);
/* The same in this process (what the child runs; fuzzing and tests). */
ms_trace *ms_trace_read_h5_direct(const char *path, char *err, size_t errlen);
double ms_trace_read_limit_s(const char *path);

/* ---- reading an HDF5 trace as it is replayed ------------------------------------------------ */

/* A stretch of one rank's records and the parts of its side arrays they point into. Record k of
 * the rank is ev[k - from]; a record keeps the rank's indices into the side arrays, so its list is
 * lists + (list_off - lists_from), its results results + (list_off - results_from), its text
 * text + (list_off - text_from) (a streamed window's text has a NUL one byte past ntext). */
typedef struct ms_trace_window {
    size_t from, n;
    const ms_trace_event *ev;
    const uint64_t *lists;
    size_t lists_from, nlists;
    const ms_trace_result *results;
    size_t results_from, nresults;
    const char *text;
    size_t text_from, ntext;
    void *buf[4];                 /* a streamed window's own buffers (ms_trace_window_free) */
    size_t cap[4];
} ms_trace_window;
void ms_trace_window_free(ms_trace_window *w);
/* Bytes a window's buffers hold. */
size_t ms_trace_window_bytes(const ms_trace_window *w);

/* The sizes of a rank's records and side arrays in the file (its ms_trace_rank has none in memory). */
typedef struct ms_trace_rank_size {
    size_t nev, nlists, nresults, ntext;
    size_t chunk;                 /* records per HDF5 chunk of its events (0: not chunked): HDF5 inflates a
                                   * chunk whole, so a reader's stretch is best one chunk, aligned */
} ms_trace_rank_size;

/* An HDF5 trace read stretch by stretch in the guarded child of ms_trace_read_h5 (same protections:
 * a child process, a time limit counted from its last progress, a memory bound, every length of what
 * it sends checked; errors name the file, and the rank and records when they are at fault). The
 * child stays until ms_trace_stream_close and reads what it is asked for, one stretch at a time. */
typedef struct ms_trace_stream ms_trace_stream;
ms_trace_stream *ms_trace_stream_open(const char *path, char *err, size_t errlen);
/* The trace without records: metadata, communicators, each rank's head (nev etc. 0); it passes
 * ms_trace_validate_shape. Owned by the stream. */
const ms_trace *ms_trace_stream_trace(const ms_trace_stream *s);
const ms_trace_rank_size *ms_trace_stream_size(const ms_trace_stream *s, int rank);
const char *ms_trace_stream_path(const ms_trace_stream *s);
/* Rank i's records [from, to) into w (its buffers replaced), not validated
 * (ms_trace_validate_window). Records HDF5 cannot read are an error of this call (file, rank,
 * records); a child that crashes, loops, outgrows its bound or sends damaged data breaks the
 * stream: every later call repeats that error. */
int ms_trace_stream_read(ms_trace_stream *s, int rank, size_t from, size_t to, ms_trace_window *w, char *err,
                         size_t errlen);
/* Ask for them now, to be read later by ms_trace_stream_read with the same arguments: the child
 * reads them while the caller works (a rank's next stretch while it plays this one). Asking for
 * other records of the rank, or reading them, drops the request. 0, or -1 (broken, or out of
 * range: nothing asked). */
int ms_trace_stream_ask(ms_trace_stream *s, int rank, size_t from, size_t to);
/* Bytes the stream holds in answers not yet read. */
size_t ms_trace_stream_bytes(const ms_trace_stream *s);
void ms_trace_stream_close(ms_trace_stream *s);

/* ms_trace_validate_events for records [from, to) of a window of rank i whose rank has the sizes sz
 * (what ms_trace_validate would say of them), plus: what the records point into is in the window. */
int ms_trace_validate_window(const ms_trace *t, int rank, const ms_trace_rank_size *sz, const ms_trace_window *w,
                             size_t from, size_t to, const char *name, char *err, size_t errlen);

/* raw dir -> HDF5 (what `mpisim trace`, `mpisim run --trace` and `mpisim trace-recover DIR` call).
 * Ranks killed mid-run are kept up to their last flushed record. 0: done; 1: done, but some ranks
 * left no records (err then says which); -1: the raw files could not be read (none, damaged);
 * -2: the HDF5 file could not be written. */
int ms_trace_convert(const char *raw_dir, const char *h5_path, char *err, size_t errlen);

/* How the ranks' records end: what a capture's exit code and messages say (mpisim trace, run
 * --trace, trace-recover). A rank's records end at MPI_Finalize; at a recorded stop (an UNMODELLED
 * record "STOP <why>": the rank was ended from outside, by a signal or by the model server, and
 * flushed its records first); at a recorded error ("FATAL ", "ABORT "); or nowhere (killed with
 * SIGKILL, crashed, or its trace writing failed). */
typedef struct ms_trace_ends {
    int nranks, finalized;
    int missing, cut, unfinished, stopped;   /* unfinished: neither finalized nor missing */
    char missing_list[160], cut_list[160], unfinished_list[160];   /* "1, 3" */
    int died;            /* of the unfinished ranks without a recorded stop or error, the one whose last
                          * record is the oldest in real time (the first to go); -1 */
    int error_rank;      /* the first rank with a recorded error, -1 */
    char error[300];     /* its text */
    char stop[300];      /* the first recorded stop's text */
} ms_trace_ends;
void ms_trace_ends_of(const ms_trace *t, ms_trace_ends *e);
/* ms_trace_convert from the raw directory open at dfd (named raw_dir in messages), with the ranks'
 * ends into *ends when it is not NULL (after -1 it is not filled). 1 also when some ranks' files
 * were cut (a partial last record: err names them). */
int ms_trace_convert_at(int dfd, const char *raw_dir, const char *h5_path, ms_trace_ends *ends, char *err,
                        size_t errlen);

/* Consistency checks replay relies on (indices in range, known kinds); also run by both readers. */
int ms_trace_validate(const ms_trace *t, const char *name, char *err, size_t errlen);
/* The same in two parts, for a reader of the records that checks each stretch just before it
 * reads it (replay: one pass over the records instead of two): what is not per record (the
 * communicators, each rank's number and text), then rank i's records [from, to). A trace passes
 * ms_trace_validate if and only if it passes the first and the second on every rank's records. */
int ms_trace_validate_shape(const ms_trace *t, const char *name, char *err, size_t errlen);
int ms_trace_validate_events(const ms_trace *t, int rank, size_t from, size_t to, const char *name, char *err,
                             size_t errlen);

/* (Re)compute every rank's matched_source/matched_tag/complete_ps from its RESOLVE and RESUME
 * records (the readers do this; for traces built in memory). */
int ms_trace_derive_matches(ms_trace *t);

/* Set the MPI function names (copied) written into /fn_names. */
int ms_trace_set_fn_names(ms_trace *t, const char *const *names, size_t n);

#ifdef __cplusplus
}
#endif
#endif
