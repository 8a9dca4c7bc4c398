/* Private to the shim's runtime (shim*.c): the headers it builds on and the functions its files
 * share (prefix shim_, hidden inside libmpisim.so). Module-wide state is in shim_state.h. */
#ifndef MS_SHIM_INTERNAL_H
#define MS_SHIM_INTERNAL_H

#include "shim_state.h"
#include "warm_path.h"
#include "gate.h"
#include "trace_raw.h"

#include <dlfcn.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
/* A real MPI call a wait makes progress with (shim_wait_common). */
typedef struct real_call {
    int (*fn)(void *arg);
    void *arg;
    int rc;
} real_call;

/* shim.c */
MS_HIDDEN ms_rq *shim_find_by_id(uint64_t id);

/* shim_clock.c */
MS_HIDDEN void shim_clock_woken(const void *wrapper_ret);
MS_HIDDEN void shim_window_refine(int64_t mono);
MS_HIDDEN void shim_clock_start(void);
MS_HIDDEN void shim_clock_stop(void);
MS_HIDDEN void shim_gate_start(void);
MS_HIDDEN void shim_gate_stats_into(ms_msg_charging *c);

/* shim_link.c */
MS_HIDDEN void shim_totals_into(ms_msg_finalize *f, int64_t in_call_ps);
MS_HIDDEN void shim_send_progress(void);
MS_HIDDEN void shim_service_server(int wait_ms);
MS_HIDDEN void shim_spin_where_cores_allow(void);
MS_HIDDEN int shim_wait_ms(unsigned spins);
MS_HIDDEN void shim_wait_common(int mode, int n, ms_rq *const *reqs, ms_msg_result *results, ms_fn_id fn, int flags, real_call *real);

#endif
