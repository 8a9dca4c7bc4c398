/* libFuzzer harness: a raw trace directory's meta.json, read by the trace library (jansson
 * parses it; what is fuzzed is our reading of what it returns: job size, program, configuration,
 * bindings). The input becomes DIR/meta.json of a directory with no rank files. */
#include "fuzz_util.h"
#include "ms_trace.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    /* meta.json in this process's own scratch directory (fuzz_util.h: made with mkdtemp, gone
     * at exit). It was /tmp/mpisim-fuzz-meta-PID, never removed: once the PID came round again
     * mkdir failed and the harness aborted (fuzz_json_corpus failed now and then on a machine
     * with some 80 such directories left) */
    char path[300];
    snprintf(path, sizeof path, "%s/meta.json", fuzz_scratch());
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (len && fwrite(data, 1, len, f) != len) abort();
    if (fclose(f) != 0) abort();
    char err[1024] = "";
    ms_trace *t = ms_trace_read_dir(fuzz_scratch(), err, sizeof err);
    if (t) ms_trace_free(t);
    else fuzz_check_error(err, NULL);
    return 0;
}
