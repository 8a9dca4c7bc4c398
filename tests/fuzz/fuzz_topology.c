/* libFuzzer harness: a topology file (netmodel/README.md format), loaded and routed as a run
 * does; a loaded one must route every pair. FUZZ_001 set: only the seed-001 language (the
 * harness fuzz_topo001 is this file built with it). */
#include "fuzz_util.h"
#include "netmodel.h"
#include "nm_internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    if (len > 8192) return 0;   /* routing is quadratic in hosts: keep each input quick */
#ifdef FUZZ_001
    {
        char *text = malloc(len + 1);
        if (!text) return 0;
        memcpy(text, data, len);
        text[len] = 0;
        int is001 = nm_topo_is_001(text);
        free(text);
        if (!is001) return 0;
    }
#endif
    const char *path = fuzz_file(data, len, ".topo");
    static nm_config *cfg;
    if (!cfg) cfg = nm_config_create();
    char err[1024] = "";
    nm_topology *t = nm_topology_load(path, cfg, err, sizeof err);
    if (t) {
        int n = nm_topology_hosts(t);
        for (int s = 0; s < n && s < 64; s++)
            for (int d = 0; d < n && d < 64; d++)
                if (s != d && nm_topology_route_hops(t, s, d) < 0) abort();
        nm_topology_destroy(t);
    } else {
        fuzz_check_error(err, NULL);
    }
    return 0;
}
