/* The raw trace a rank writes while it runs (the shim's side of capture).
 *
 * One file per rank, <dir>/rank-<R>.mstrace, appended with write(2) in whole records whenever
 * the shim's buffer passes MS_TRACE_FLUSH_BYTES and at MPI_Finalize: a rank killed by SIGKILL
 * leaves a file whose complete records are all valid (a trailing partial record is ignored by
 * readers). `mpisim trace` (and `mpisim run --trace`) merges the raw files with <dir>/meta.json
 * into one HDF5 file; `mpisim trace-recover DIR` does the same after a crash.
 *
 * Layout: ms_trace_file_header, then records. A record is an ms_msg_header followed by its
 * payload, exactly the protocol messages of protocol.h the rank sends to the model server
 * (ISEND, IRECV, ICOLL, COMM_ADD, WAIT, PROBE, CLOCK, UNMODELLED, FINALIZE), plus the records
 * the server sends back that decide the run (RESUME with its results, RESOLVE), plus TR_CALL /
 * TR_EXIT around every wrapped MPI call. In capture-only mode (no server) the shim writes RESUME
 * and RESOLVE itself from the real MPI's statuses (times 0, sources and tags real).
 *
 * Replay rebuilds each rank's clock: at TR_CALL add compute_ps (scaled), an ISEND or IRECV
 * happens at the current clock and adds the model's isend/irecv cost, WAIT and PROBE block in
 * the model until it resumes the rank. The recorded `t` fields are the original run's times,
 * kept for comparison only.
 */
#ifndef MS_TRACE_RAW_H
#define MS_TRACE_RAW_H

#include <stdint.h>
#include "protocol.h"

#define MS_TRACE_MAGIC "MSTRACE1"
#define MS_TRACE_FLUSH_BYTES (256u * 1024u)

typedef struct ms_trace_file_header {
    char magic[8];           /* MS_TRACE_MAGIC */
    uint32_t version;        /* MS_PROTO_VERSION */
    uint32_t sizes_check;    /* ms_proto_sizes_check() */
    int32_t rank, size;
    int32_t pid;
    int32_t cosim;           /* 1: written during a co-simulation (RESUMEs are the model's) */
    int64_t start_real_ns;   /* CLOCK_MONOTONIC at MPI_Init's end */
    char hostname[64];
} ms_trace_file_header;

#endif
