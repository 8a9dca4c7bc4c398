/* `mpisim net`: the network-only tool (synthetic traffic on a modelled network, no MPI). */
#ifndef NM_NET_TOOL_H
#define NM_NET_TOOL_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Run the tool with argv[0] = the command name; prints results on `out` and diagnostics on
 * `errout`. Returns 0 on success, 2 on a usage error, 1 on any other failure. */
int nm_net_main(int argc, char **argv, FILE *out, FILE *errout);

#ifdef __cplusplus
}
#endif
#endif
