/* libFuzzer harness: an HDF5 trace file, as `mpisim replay` reads it. The input is the whole file
 * (superblock, object headers, the global heap of the string datasets and attributes, chunks).
 * MPISIM_FUZZ_DIRECT=1 reads in this process (ms_trace_read_h5_direct), which exposes HDF5's own
 * faults; by default the guarded reader is fuzzed, which must turn them into errors.
 * MPISIM_FUZZ_STREAM=1 fuzzes the guarded stream replay reads (ms_trace_stream: every rank's
 * records in stretches of 100, each validated as replay validates them). */
#include "fuzz_util.h"
#include "ms_trace.h"

/* libFuzzer's per-malloc limit (-malloc_limit_mb, by default -rss_limit_mb: 2048) is a hook in
 * the allocator, which the guarded reader's forked child inherits: HDF5 there may ask for any
 * size a damaged file names (a sparse dataset of 40 M records: calloc of 5 GB, never touched),
 * which the guard handles (the child's memory is bounded by the parent, which allocates within
 * the same bound itself), but the hook would end the child and write the input as a false
 * oom-* artifact. So the guarded modes run without a per-malloc limit unless one is asked for
 * (an explicit -malloc_limit_mb comes after this one and wins); the parent's memory is still
 * watched by -rss_limit_mb. MPISIM_FUZZ_DIRECT keeps libFuzzer's limit: HDF5 runs in process. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *d = getenv("MPISIM_FUZZ_DIRECT");
    if ((d && !strcmp(d, "1")) || *argc < 1) return 0;
    static char flag[] = "-malloc_limit_mb=1048576";   /* 1 TiB: above the sanitizer's largest allocation */
    char **v = malloc(sizeof *v * ((size_t)*argc + 2));
    if (!v) return 0;
    v[0] = (*argv)[0];
    v[1] = flag;
    for (int i = 1; i < *argc; i++) v[i + 1] = (*argv)[i];
    v[*argc + 1] = NULL;
    (*argc)++;
    *argv = v;
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    static int direct = -1;
    if (direct < 0) direct = getenv("MPISIM_FUZZ_DIRECT") && !strcmp(getenv("MPISIM_FUZZ_DIRECT"), "1");
    static int stream = -1;
    if (stream < 0) stream = getenv("MPISIM_FUZZ_STREAM") && !strcmp(getenv("MPISIM_FUZZ_STREAM"), "1");
    const char *path = fuzz_file(data, len, ".h5");
    char err[2048] = "";
    if (stream) {
        ms_trace_stream *s = ms_trace_stream_open(path, err, sizeof err);
        if (!s) {
            fuzz_check_error(err, path);
            return 0;
        }
        const ms_trace *h = ms_trace_stream_trace(s);
        ms_trace_window w;
        memset(&w, 0, sizeof w);
        int bad = 0;
        for (int i = 0; i < h->nranks && !bad; i++) {
            const ms_trace_rank_size *sz = ms_trace_stream_size(s, i);
            for (size_t a = 0; a < sz->nev && !bad; a += 100) {
                size_t b = a + 100 < sz->nev ? a + 100 : sz->nev;
                if (ms_trace_stream_read(s, i, a, b, &w, err, sizeof err) < 0 ||
                    ms_trace_validate_window(h, i, sz, &w, a, b, path, err, sizeof err) < 0) {
                    fuzz_check_error(err, path);
                    bad = 1;
                }
            }
        }
        ms_trace_window_free(&w);
        ms_trace_stream_close(s);
        return 0;
    }
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
