/* `mpisim net`: the network-only tool (synthetic traffic on a modelled network, no MPI). */
#ifndef NM_NET_TOOL_H
#define NM_NET_TOOL_H

#include <stdio.h>

#include "netmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run the tool with argv[0] = the command name; prints results on `out` and diagnostics on
 * `errout`. Returns 0 on success, 2 on a usage error, 1 on any other failure. */
int nm_net_main(int argc, char **argv, FILE *out, FILE *errout);
/* The same, with the keys of the layers above the network registered first by `more_keys`
 * (NULL: none), so that a whole profile ([mpi], [host], ... sections) loads; the tool runs no
 * MPI and those keys have no effect on it. */
int nm_net_main_keys(int argc, char **argv, FILE *out, FILE *errout,
                     int (*more_keys)(nm_config *cfg, char *err, size_t errlen));

#ifdef __cplusplus
}
#endif
#endif
