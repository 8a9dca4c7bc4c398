/* libFuzzer harness: a stretch of compact records (schema mpisim-trace/2's /records), as the replay
 * decodes it. The first two bytes say how many records to decode (at most 512); the rest is the
 * stretch. Decoding never reads past it; what decodes encodes back to bytes that decode to the same
 * records. */
#include "fuzz_util.h"
#include "ms_trace.h"
#include "ms_trace_internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    if (len < 2) return 0;
    size_t n = ((size_t)data[0] | (size_t)data[1] << 8) % 513;
    ms_trace_event *ev = malloc((n ? n : 1) * sizeof *ev), *again = malloc((n ? n : 1) * sizeof *again);
    unsigned char *buf = malloc(ms_compact_bound(n));
    size_t bad = 0;
    if (!ev || !again || !buf) abort();
    if (ms_compact_decode(data + 2, len - 2, n, ev, &bad) == 0) {
        size_t m = ms_compact_encode(ev, n, buf);
        if (m > ms_compact_bound(n) || ms_compact_decode(buf, m, n, again, &bad) != 0 ||
            memcmp(ev, again, n * sizeof *ev) != 0)
            abort();
    } else if (bad > n) {
        abort();
    }
    free(ev);
    free(again);
    free(buf);
    return 0;
}
