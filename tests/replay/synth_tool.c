/* synth_tool: write synthetic traces for the Python tests and for trying the CLI.
 *   synth_tool h5 pingpong|stencil|fan|fan-bcast NRANKS ITERS BYTES COMPUTE_PS OUT.h5
 *   synth_tool raw pingpong|stencil|fan NRANKS ITERS BYTES COMPUTE_PS OUTDIR   (raw rank files + meta.json)
 *   synth_tool copy|copy-v1 IN.h5 OUT.h5   (a trace rewritten in the current schema, or in schema 1) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_trace_internal.h"
#include "synth_trace.h"

int main(int argc, char **argv)
{
    if (argc == 4 && (!strcmp(argv[1], "copy") || !strcmp(argv[1], "copy-v1"))) {
        char err[1024];
        ms_trace *t = ms_trace_read_h5(argv[2], err, sizeof err);
        int rc = !t ? -1 : !strcmp(argv[1], "copy") ? ms_trace_write_h5(t, argv[3], err, sizeof err)
                                                     : ms_trace_write_h5_v1(t, argv[3], err, sizeof err);
        if (rc < 0) fprintf(stderr, "synth_tool: %s\n", err);
        ms_trace_free(t);
        return rc < 0 ? 1 : 0;
    }
    if (argc != 8) {
        fprintf(stderr, "usage: synth_tool h5|raw pingpong|stencil|fan NRANKS ITERS BYTES COMPUTE_PS OUT\n");
        return 2;
    }
    int n = atoi(argv[3]), iters = atoi(argv[4]);
    uint64_t bytes = strtoull(argv[5], NULL, 10);
    int64_t comp = strtoll(argv[6], NULL, 10);
    ms_trace *t = !strcmp(argv[2], "pingpong") ? synth_pingpong(iters, bytes, comp)
                  : !strcmp(argv[2], "stencil") ? synth_stencil(n, iters, bytes, comp)
                  : !strcmp(argv[2], "fan") ? synth_fan(n, iters, bytes)
                  : !strcmp(argv[2], "fan-bcast") ? synth_fan_bcast(n, iters, bytes) : NULL;
    if (!t) {
        fprintf(stderr, "synth_tool: unknown shape %s\n", argv[2]);
        return 2;
    }
    char err[512];
    int rc = !strcmp(argv[1], "raw") ? synth_write_raw_dir(t, argv[7]) : ms_trace_write_h5(t, argv[7], err, sizeof err);
    if (rc < 0) fprintf(stderr, "synth_tool: %s\n", !strcmp(argv[1], "raw") ? "cannot write" : err);
    ms_trace_free(t);
    return rc < 0 ? 1 : 0;
}
