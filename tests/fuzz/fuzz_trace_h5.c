/* libFuzzer harness: an HDF5 trace file, as `mpisim replay` reads it. The input is the whole file
 * (superblock, object headers, the global heap of the string datasets and attributes, chunks).
 * MPISIM_FUZZ_DIRECT=1 reads in this process (ms_trace_read_h5_direct), which exposes HDF5's own
 * faults; by default the guarded reader is fuzzed, which must turn them into errors. */
#include "fuzz_util.h"
#include "ms_trace.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    static int direct = -1;
    if (direct < 0) direct = getenv("MPISIM_FUZZ_DIRECT") && !strcmp(getenv("MPISIM_FUZZ_DIRECT"), "1");
    const char *path = fuzz_file(data, len, ".h5");
    char err[2048] = "";
    ms_trace *t = direct ? ms_trace_read_h5_direct(path, err, sizeof err) : ms_trace_read_h5(path, err, sizeof err);
    if (t) {
        /* what replay relies on */
        if (ms_trace_validate(t, path, err, sizeof err) != 0) abort();
        ms_trace_free(t);
    } else {
        fuzz_check_error(err, path);
    }
    return 0;
}
