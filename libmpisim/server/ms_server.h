/* The model server: the front end that co-simulates a live MPI job.
 *
 * Lifecycle as hwloc's: create, configure, listen, run, report, destroy. The server accepts one
 * TCP connection per rank from the shim (libmpisim.so) carrying the run's secret, decodes the
 * ranks' reports into events for the driver (libmpisim/driver: the MPI layer model on a netmodel
 * network under conservative synchronization, shared with replay) and sends its resumes back
 * (see docs/architecture.md). The configuration's keys: ms_driver_register_keys. Nothing here
 * prints to stdout or exits; errors come back as text in the caller's buffer. */
#ifndef MS_SERVER_H
#define MS_SERVER_H

#include <stdio.h>
#include <signal.h>
#include <sys/types.h>
#include "ms_driver.h"
#include "netmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_server ms_server;

/* How long a launcher may outlive its ranks (every one gone, or held inside PMPI_Finalize, the
 * MPI library's shutdown) before mpisim ends it: far above any shutdown's own time. */
#define MS_LAUNCHER_GRACE_S 60.0
/* The message on stderr when mpisim ends such a launcher: `inside` ranks held in PMPI_Finalize (0:
 * every rank gone); `complete` names what is complete all the same ("report", "trace"). */
void ms_server_say_lingering(int inside, const char *complete);

ms_server *ms_server_create(void);
/* cfg: the resolved configuration (the server reads it, does not own it); nranks: job size;
 * argv: the program and its arguments, for the report. */
int ms_server_configure(ms_server *s, const nm_config *cfg, int nranks, int argc, char *const *argv,
                        char *err, size_t errlen);
/* Listen on bind_addr ("0.0.0.0" for ranks on other hosts, "127.0.0.1" for local) and an
 * ephemeral port. `advertise` is the host name ranks should connect to. Fills endpoint with
 * "host:port" for MPISIM_SERVER. */
int ms_server_listen(ms_server *s, const char *bind_addr, const char *advertise, char *endpoint, size_t len,
                     char *err, size_t errlen);
/* Create the run's shared segment for ranks on this host (ms_shm.h): mode 0600, a random name
 * (into name, for MPISIM_SHM), unlinked once every rank has attached. Ranks that cannot open it
 * (another host) connect by TCP; each authenticates with the secret either way. After configure. */
int ms_server_shm(ms_server *s, char *name, size_t len, char *err, size_t errlen);
/* Every model call of the run, one line each (ms_driver_set_call_log); after configure. */
void ms_server_set_call_log(ms_server *s, ms_driver_log_fn fn, void *user);
/* A summary of the real machine (hwloc), recorded in the report. */
void ms_server_set_machine(ms_server *s, const char *text);
/* From a signal handler (async-signal-safe; the first call counts): a signal (SIGTERM, SIGINT,
 * SIGHUP) ends the run. The server stops it on its next turn: ranks that end from then on were
 * stopped (the outcome names the signal), and unless `forward` is 0 (the launcher got the signal
 * itself: Ctrl-C) the launcher gets SIGTERM a second later, then SIGKILL if it does not end. */
void ms_server_request_stop(ms_server *s, int sig, int forward);
/* The run's secret (hex), to hand to the ranks through the environment. */
const char *ms_server_secret(const ms_server *s);
/* Serve until every rank has finished or died and `child` (the launcher, or -1) has exited.
 * *child_status receives the launcher's wait status. Returns 0, or negative on a server error;
 * a deadlock or an unmodelled call is not a server error: see ms_server_outcome(). */
int ms_server_run(ms_server *s, pid_t child, int *child_status, char *err, size_t errlen);
/* The run's ms_outcome (ms_report.h): OK; DEADLOCK in virtual time or the network's; ERROR, a rank
 * stopped on an error (unmodelled call, crash, abort) or the model did; STALL, the stall watchdog
 * stopped it (shim.stall_timeout); NEVER_CONNECTED, ranks never connected (one left before
 * MPI_Init, or the program is no MPI program). One line describing it goes into buf. */
int ms_server_outcome(const ms_server *s, char *buf, size_t len);
int ms_server_write_report(const ms_server *s, FILE *out);
/* Why the run's charged computation may mislead (many ranks switched out, cold caches after
 * switched-out calls, a costly clock): lines separated by '\n' into buf; how many. Also in the
 * report ("measurement_warnings") and printed by ms_server_write_summary. */
int ms_server_measurement_warnings(const ms_server *s, char *buf, size_t len);
/* A short human summary (for stderr). */
int ms_server_write_summary(const ms_server *s, FILE *out, const char *report_path);
void ms_server_destroy(ms_server *s);

#ifdef __cplusplus
}
#endif
#endif
