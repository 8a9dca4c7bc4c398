/* What the parts of the replay share (its interface: ms_replay.h). The parts are
 *   replay.c         the replay engine: each rank's records fed to the driver, the result
 *   replay_config.c  the configuration a trace recorded, applied under the user's profile
 *   replay_report.c  the replay's report
 * Functions shared between the parts carry the prefix replay_. */
#ifndef MS_REPLAY_INTERNAL_H
#define MS_REPLAY_INTERNAL_H

#include "ms_replay.h"

#include <stddef.h>

#ifndef MPISIM_VERSION
#define MPISIM_VERSION "unknown"
#endif

#define fail nm_fail   /* message into the caller's buffer, -1 (netmodel.h: one helper for all) */

/* replay_config.c */
void replay_recorded_value(const ms_trace *t, const char *key, char *out, size_t len);

#endif
