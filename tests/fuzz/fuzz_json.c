/* libFuzzer harness: a raw trace directory's meta.json, read by the trace library (jansson
 * parses it; what is fuzzed is our reading of what it returns: job size, program, configuration,
 * bindings). The input becomes DIR/meta.json of a directory with no rank files. */
#include "fuzz_util.h"
#include "ms_trace.h"

#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    static char dir[256];
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/mpisim-fuzz-meta-%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        if (mkdir(dir, 0700) != 0) abort();
    }
    char path[300];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (len && fwrite(data, 1, len, f) != len) abort();
    if (fclose(f) != 0) abort();
    char err[1024] = "";
    ms_trace *t = ms_trace_read_dir(dir, err, sizeof err);
    if (t) ms_trace_free(t);
    else fuzz_check_error(err, NULL);
    return 0;
}
