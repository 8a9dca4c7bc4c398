/* libFuzzer harness: one raw rank file (libmpisim/src/trace_raw.h) as the shim writes it. */
#include "fuzz_util.h"
#include "ms_trace.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    ms_trace_rank r;
    int32_t nranks = 0, *members = NULL;
    size_t nmembers = 0;
    char err[1024] = "";
    if (ms_trace_parse_raw(data, len, "rank-000000.mstrace", &r, &nranks, &members, &nmembers, err, sizeof err) == 0) {
        /* the side arrays the events point into are in range */
        for (size_t k = 0; k < r.nev; k++)
            if (r.ev[k].list_n < 0 || r.ev[k].list_off < 0) abort();
        free(r.ev);
        free(r.lists);
        free(r.results);
        free(r.text);
    } else {
        fuzz_check_error(err, "rank-000000.mstrace");
    }
    free(members);
    return 0;
}
