/* The shim's lifecycle: unmodelled calls, start-up (MPI_Init), signals and what is reported at
 * exit, the virtual clock's readers and MPI_Finalize. */
#define _GNU_SOURCE
#include "shim_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* unmodelled calls */

static void untimed_begin(ms_fn_id fn)
{
    S.unmodelled_calls++;
    ms_msg_text t;
    memset(&t, 0, sizeof t);
    /* the name, then where it was called from (a stall report names it: the rank cannot answer
     * while it is inside the real call); the text of the last site is kept, loops repeat it */
    static uint64_t last_pc;
    static char last_site[MS_SITE_TEXT];
    if (T.cur_pcs[0] != last_pc || !last_site[0]) {
        cs_text(T.cur_pcs, T.cur_npcs, last_site, sizeof last_site);
        last_pc = T.cur_pcs[0];
    }
    size_t n = (size_t)snprintf(t.text, sizeof t.text, "%s", ms_fn_names[fn]) + 1;
    n += (size_t)snprintf(t.text + n, sizeof t.text - n, "%s", last_site) + 1;
    put_msg(MS_MSG_UNMODELLED, &t, n < sizeof t.text ? n : sizeof t.text, NULL, 0);
    /* the server stops waiting for this rank's clock while it is in the real call */
    flush_out();
}

void ms_unmodelled(ms_fn_id fn)
{
    if (!S.params.unmodelled_passthrough)
        ms_fatal("%s is not modelled by mpisim yet (run with --set unmodelled=passthrough to let it run "
                 "untimed)",
                 ms_fn_names[fn]);
    untimed_begin(fn);
}

void ms_passthrough(ms_fn_id fn)
{
    /* one note per kind (file I/O, the others), from rank 0; the run's outcome says it too (untimed) */
    static int warned_file, warned_other;
    int file = !strncmp(ms_fn_names[fn], "MPI_File_", 9);
    int *warned = file ? &warned_file : &warned_other;
    if (!(*warned)++ && S.rank == 0)
        fprintf(stderr, "mpisim: %s (%s) runs untimed; the report counts such calls and the run ends with outcome "
                        "untimed\n",
                ms_fn_names[fn], file ? "file I/O: the model has no file system" : "not modelled");
    untimed_begin(fn);
}

void ms_rejoin(ms_fn_id fn)
{
    ms_msg_result none;
    T.parked = 0;
    shim_wait_common(0, 0, NULL, &none, fn, MS_WAIT_FLAG_UNTIMED, NULL);
}

void ms_unmodelled_done(ms_fn_id fn)
{
    /* the call was untimed; the rank rejoins the model at the model's present time */
    ms_msg_result none;
    shim_wait_common(0, 0, NULL, &none, fn, MS_WAIT_FLAG_UNTIMED, NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* lifecycle */

/* The rank's CPU binding as a list of ranges, e.g. "0-1" (recorded in the report) */
void cpu_list(char *out, size_t len)
{
    cpu_set_t set;
    out[0] = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    size_t off = 0;
    for (int c = 0; c < CPU_SETSIZE && off + 16 < len; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) e++;
        off += (size_t)snprintf(out + off, len - off, off ? ",%d" : "%d", c);
        if (e > c) off += (size_t)snprintf(out + off, len - off, "-%d", e);
        c = e;
    }
}

static void report_exit(int status, void *arg);

/* ---------------------------------------------------------------------------------------- */
/* signals: what the rank recorded is kept however it ends */

static struct sigaction old_actions[65];

static const char *const stop_names[] = {[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGTERM] = "SIGTERM",
                                         [SIGQUIT] = "SIGQUIT"};

/* A signal that ends the rank: the launcher's SIGTERM (after another rank died, or when the run is
 * stopped), a batch system's, Ctrl-C; or a crash. Its records so far go to its trace (with a stop
 * record for a signal from outside: a replay then blames the rank that died, not those the
 * launcher ended), the server hears that it is being stopped, and then the signal does what it
 * would have done without the shim. Async-signal-safe. */
static void on_fatal_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    int outside = sig < (int)(sizeof stop_names / sizeof stop_names[0]) && stop_names[sig];
    if (outside) {
        char why[64] = "signal ";
        strcat(why, stop_names[sig]);
        trace_stop(why);
        if (S.server && !S.tp_writing) {
            ms_msg_text t;
            size_t n = 0;
            static const char stop[] = "STOP ended by ";
            memcpy(t.text, stop, sizeof stop - 1);
            n = sizeof stop - 1;
            for (const char *p = stop_names[sig]; *p; p++) t.text[n++] = *p;
            t.text[n++] = 0;
            ms_tp_send_now(&S.tp, MS_MSG_UNMODELLED, &t, n);
        }
    } else {
        trace_flush_now();
    }
    sigaction(sig, &old_actions[sig], NULL);
    /* a fault the kernel raised comes again as the instruction is retried, to the old handler */
    if (outside || !si || si->si_code <= 0) raise(sig);
    errno = saved;
}

static void install_signal_handlers(void)
{
    static const int outside[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    /* only where the program has left the default: its own handlers are its business */
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
        if (sigaction(outside[i], NULL, &old_actions[outside[i]]) == 0 && old_actions[outside[i]].sa_handler == SIG_DFL &&
            !(old_actions[outside[i]].sa_flags & SA_SIGINFO))
            sigaction(outside[i], &sa, NULL);
    /* faults chain to what was there (Open MPI's backtrace handler, the program's) */
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        if (sigaction(faults[i], NULL, &old_actions[faults[i]]) == 0 && old_actions[faults[i]].sa_handler != SIG_IGN)
            sigaction(faults[i], &sa, NULL);
}

static void start_session(void)
{
    const char *server = getenv("MPISIM_SERVER");
    const char *secret = getenv("MPISIM_SECRET");
    const char *trace = getenv("MPISIM_TRACE_DIR");
    PMPI_Comm_rank(MPI_COMM_WORLD, &S.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &S.size);
    int capture_only = (!server || !secret) && trace && *trace;
    if ((!server || !secret) && !capture_only) {
        /* preloaded without `mpisim run` or `mpisim trace`: stay out of the way */
        if (S.rank == 0)
            fprintf(stderr, "mpisim: libmpisim.so is loaded but no model server is set (MPISIM_SERVER); "
                            "running untimed\n");
        return;
    }
    if (capture_only) {
        /* `mpisim trace`: the real MPI decides everything; the trace records it */
        const char *cm = getenv("MPISIM_COMPUTE");
        memset(&S.params, 0, sizeof S.params);
        S.params.compute_mode = cm && !strcmp(cm, "wall") ? MS_COMPUTE_WALL
                                : cm && !strcmp(cm, "none") ? MS_COMPUTE_NONE : MS_COMPUTE_CPU;
        S.params.cpu_factor = 1.0;
        S.params.eager_threshold = INT64_MAX;
        S.params.unmodelled_passthrough = 1;
        const char *d = getenv("MPISIM_CALLSITE_DEPTH");
        S.params.callsite_depth = d ? atoi(d) : 1;
        S.params.spin_polls = MS_DEFAULT_SPIN_POLLS;
        const char *rp = getenv("MPISIM_RETURN_PATH");
        S.params.return_path = !rp || !strcmp(rp, "measured");
        /* shim.gap_floor, gap_noise, gap_noise_max (ps), from mpisim trace; else their defaults */
        const char *gaps = getenv("MPISIM_GAPS");
        long long gf = 20000, gn = 100000, gx = 5000000;
        if (gaps) sscanf(gaps, "%lld,%lld,%lld", &gf, &gn, &gx);
        S.params.gap_floor_ps = gf;
        S.params.gap_noise_ps = gn;
        S.params.gap_noise_max_ps = gx;
        S.server = 0;
    } else {
        /* on the server's host its shared segment; elsewhere (or refused: another host's
         * segment of the same name cannot exist, it is random) TCP */
        const char *shm = getenv("MPISIM_SHM");
        char why[256] = "";
        ms_tp_init(&S.tp);
        /* MPISIM_SERVER "none": the run does not listen (every rank is on its host) */
        if (!(shm && *shm && ms_tp_attach_shm(&S.tp, shm, S.rank, why, sizeof why) == 0)) {
            if (!strcmp(server, "none"))
                ms_fatal("cannot attach to the model server's shared segment: %s", why[0] ? why : "MPISIM_SHM is not set");
            if (ms_tp_connect_tcp(&S.tp, server) < 0)
                ms_fatal("cannot connect to the model server at %s (has its mpisim ended?)%s%s", server,
                         why[0] ? "; " : "", why);
        }
        ms_msg_hello h;
        memset(&h, 0, sizeof h);
        h.magic = MS_PROTO_MAGIC;
        h.version = MS_PROTO_VERSION;
        h.rank = S.rank;
        h.size = S.size;
        h.pid = (int32_t)getpid();
        h.sizes_check = ms_proto_sizes_check();
        memcpy(h.secret, secret, strnlen(secret, MS_SECRET_LEN));
        gethostname(h.hostname, sizeof h.hostname - 1);
        cpu_list(h.binding, sizeof h.binding);
        S.server = 1;
        put_msg(MS_MSG_HELLO, &h, sizeof h, NULL, 0);
        flush_out();
        /* the WELCOME is the only message that can come now */
        ms_msg_header hdr;
        size_t len;
        while (!(len = ms_tp_next(&S.tp))) {
            /* a server that has ended is said at once, not after the transport's slow look */
            if (!ms_tp_server_alive(&S.tp)) {
                S.server = 0;
                ms_fatal("the model server (mpisim, pid %d) ended before it answered this rank", S.tp.server_pid);
            }
            if (ms_tp_read(&S.tp, 100) < 0) {
                S.server = 0;
                if (!ms_tp_server_alive(&S.tp))
                    ms_fatal("the model server (mpisim, pid %d) ended before it answered this rank", S.tp.server_pid);
                ms_fatal("the model server refused this rank (wrong secret or rank?)");
            }
        }
        memcpy(&hdr, S.tp.in, sizeof hdr);
        if (hdr.type != MS_MSG_WELCOME || hdr.length != sizeof(ms_msg_welcome))
            ms_fatal("unexpected first reply from the model server");
        memcpy(&S.params, S.tp.in + sizeof hdr, sizeof S.params);
        ms_tp_consume(&S.tp, len);
    }
    if (S.server) shim_spin_where_cores_allow();
    S.cs_depth = S.params.callsite_depth < 1 ? 1
                 : S.params.callsite_depth > MS_CS_MAX_DEPTH ? MS_CS_MAX_DEPTH : S.params.callsite_depth;
    trace_open();
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_attr_delete, &S.comm_keyval, NULL);
    PMPI_Comm_dup(MPI_COMM_SELF, &S.progress_comm);
    T.clock_ps = 0;
    S.cpu_free = 0;   /* the model starts every rank's CPU free at 0 */
    T.wtime_last_ps = -1;
    /* the thread of MPI_Init is the rank's thread 0 */
    T.slot = 0;
    S.thr[0] = &T;
    S.nthreads = 1;
    S.active = 1;
    S.progress_mono_ns = mono_ns();
    ms_program_clocks_start();   /* before the first gap: their epoch is this moment */
    install_signal_handlers();
    shim_clock_start();
    shim_gate_start();
    clock_gap_start();
    if (S.server) {
        S.exit_pid = getpid();
        on_exit(report_exit, NULL);
    }
}

/* The process exits (exit(), a return from main): say with which code, before or after
 * MPI_Finalize, so that the run names a rank that returned EXIT_FAILURE on its own as such (not
 * "crashed or killed"), and a non-zero code after MPI_Finalize as the program's own (not the MPI
 * library's shutdown). The connection stays open after MPI_Finalize for this one message; a
 * process that is killed never gets here, and the run says so as before. */
static void report_exit(int status, void *arg)
{
    (void)arg;
    /* a child the program forked (and that exits without exec) shares the connection: not its word */
    if (!S.server || S.exit_sent || getpid() != S.exit_pid) return;
    S.exit_sent = 1;
    ms_msg_exit m = {status, S.finalized};
    put_msg(MS_MSG_EXIT, &m, sizeof m, NULL, 0);
    trace_flush();
    if (S.tp.fd >= 0 || S.tp.shm) {
        ms_tp_flush(&S.tp);
        ms_tp_close(&S.tp);
    }
}

/* A rank that ends without entering MPI_Init leaves the others waiting inside it, and the
 * launcher ends them a moment later: say in the run's shared segment that this one went first,
 * so that the run names it (the server's look at /proc can miss a short-lived process). The
 * rank comes from the launcher's environment (Open MPI's, or PMIx's / PMI's). */
__attribute__((destructor)) static void note_exit_before_init(void)
{
    if (S.init_entered) return;
    const char *shm = getenv("MPISIM_SHM");
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMIX_RANK");
    if (!r) r = getenv("PMI_RANK");
    if (!shm || !*shm || !r || *r < '0' || *r > '9') return;
    ms_tp_note_left_early(shm, atoi(r));
}

int MPI_Init(int *argc, char ***argv)
{
    S.init_entered = 1;
    S.level = -1;
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) start_session();
    return rc;
}

/* The level the real MPI gives is the program's: under MPI_THREAD_MULTIPLE each thread that
 * calls MPI has a clock of its own and the shim's lock is a mutex; under the lower levels two
 * threads inside MPI at once are counted, and the run ends with outcome thread_level
 * (docs/architecture.md "Threads"). */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    S.init_entered = 1;
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        S.level = *provided;
        if (*provided == MPI_THREAD_MULTIPLE) {
            pthread_mutexattr_t a;
            pthread_mutexattr_init(&a);
            pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
            pthread_mutex_init(&S.mutex, &a);
            pthread_mutexattr_destroy(&a);
            S.mt = 1;
        }
        start_session();
    }
    return rc;
}

/* The rank's virtual time now, read as a call of its own (the computation before it is charged,
 * the trace records it): MPI_Wtime, and the program's own clock reads (program_clocks.c). */
int64_t ms_read_virtual_clock(ms_fn_id fn, void *callsite, uint64_t entry_tsc)
{
    if (T.depth > 0) return T.clock_ps;
    /* a thread that has made no other MPI call: its own estimate, without joining the model (a
     * thread that only reads the clock must not hold virtual time back while it waits elsewhere) */
    if (T.slot < 0) {
        int64_t t = ms_thread_vt_now();
        if (S.params.compute_mode != MS_COMPUTE_NONE) T.birth_ps += S.params.clock_read_cost_ps;
        T.clock_only = 1;
        return t;
    }
    T.clock_read = 1;   /* ms_enter: a read that finds the clock unmoved advances it */
    ms_enter_at(fn, callsite, entry_tsc);
    int64_t t = T.clock_ps;
    ms_exit(fn, 0);
    T.wtime_last_ps = T.clock_ps;
    T.wtime_last_compute_ps = T.compute_ps;
    /* what the host's read it stands for costs, charged with the next gap: the interval
     * between two reads holds one read, natively */
    if (S.params.compute_mode != MS_COMPUTE_NONE && S.params.clock_read_cost_ps > 0)
        T.extra_compute_ps += (int64_t)((double)S.params.clock_read_cost_ps * S.params.cpu_factor + 0.5);
    ms_window_exit();
    return t;
}

int ms_virtual_clock_on(void) { return S.active && S.server && S.params.program_clocks; }

double ms_wtime_from(void *callsite, uint64_t entry_tsc)
{
    if (!S.active || !S.server) return PMPI_Wtime();
    return (double)ms_read_virtual_clock(MS_FN_Wtime, callsite, entry_tsc) * 1e-12;
}

/* the program's call site, as every wrapper names it (the report's callsites) */
double MPI_Wtime(void) { return ms_wtime_from(__builtin_return_address(0), ms_tsc()); }

double MPI_Wtick(void)
{
    if (!S.active || !S.server) return PMPI_Wtick();
    return 1e-12;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    if (S.active && T.depth == 0) {
        ms_msg_text t;
        memset(&t, 0, sizeof t);
        snprintf(t.text, sizeof t.text, "ABORT MPI_Abort(errorcode %d) at virtual time %.9f s", errorcode,
                 (double)T.clock_ps * 1e-12);
        put_msg(MS_MSG_UNMODELLED, &t, strlen(t.text) + 1, NULL, 0);
        flush_out();
        trace_flush();
        S.active = 0;
    }
    return PMPI_Abort(comm, errorcode);
}

/* An open MPI_Pcontrol region ends: its virtual duration goes into the call-site table as an
 * "MPI_Pcontrol region" entry at the site that opened it (one call per region). */
static void pcontrol_close_region(void)
{
    if (S.pc_level <= 0) return;
    uint64_t pcs[MS_CS_MAX_DEPTH];
    int npcs = T.cur_npcs;
    memcpy(pcs, T.cur_pcs, sizeof pcs);
    memcpy(T.cur_pcs, S.pc_pcs, sizeof pcs);
    T.cur_npcs = S.pc_npcs;
    cs_add((int)MS_FN_Pcontrol_region, 0, T.clock_ps - S.pc_start_ps);
    memcpy(T.cur_pcs, pcs, sizeof pcs);
    T.cur_npcs = npcs;
    S.pc_level = 0;
}

/* MPI_Pcontrol(level) marks regions, as mpiP reads it: a positive level opens one, 0 closes it.
 * Each mark is traced (the timeline draws the regions); the report lists each region's time. */
int MPI_Pcontrol(const int level, ...)
{
    if (ms_bypass()) return PMPI_Pcontrol(level);
    ms_enter(MS_FN_Pcontrol, __builtin_return_address(0));
    if (S.trace_fd >= 0) {
        ms_msg_tr_pcontrol m = {S.server ? T.clock_ps : 0, mono_ns(), level, 0};
        trace_put(MS_MSG_TR_PCONTROL, &m, sizeof m, NULL, 0);
    }
    if (level > 0 && S.pc_level <= 0) {
        S.pc_start_ps = T.clock_ps;
        memcpy(S.pc_pcs, T.cur_pcs, sizeof S.pc_pcs);
        S.pc_npcs = T.cur_npcs;
        S.pc_level = level;
    } else if (level <= 0) {
        pcontrol_close_region();
    }
    int rc = PMPI_Pcontrol(level);
    ms_exit(MS_FN_Pcontrol, rc);
    return rc;
}

int MPI_Finalize(void)
{
    if (!S.active || T.depth > 0) return PMPI_Finalize();
    ms_enter(MS_FN_Finalize, __builtin_return_address(0));
    ms_gate_close();   /* the slot went back at ms_enter; nothing is taken after Finalize */
    ms_msg_finalize f;
    shim_totals_into(&f, T.clock_ps - T.call_start_ps);
    pcontrol_close_region();
    send_callsites(1);
    put_msg(MS_MSG_FINALIZE, &f, sizeof f, NULL, 0);
    trace_flush();
    flush_out();
    S.fin_ok = !S.server;
    for (unsigned spins = 0; !S.fin_ok; spins++) {
        shim_service_server(shim_wait_ms(spins));
        ms_progress();
    }
    /* sends the program saw complete early still have to reach their receivers */
    ms_real_wait w = {0};
    while (S.detached_n) ms_real_wait_step(&w, S.detached[0]);
    ms_real_wait_end(&w);
    S.active = 0;
    T.depth--;
    S.finalized = 1;
    ms_unlock();
    /* the connection stays for the process's exit code (report_exit); the trace is complete */
    if (!S.server) ms_tp_close(&S.tp);
    trace_flush();
    int captured = S.trace_fd >= 0 && !S.server;
    if (S.trace_fd >= 0) close(S.trace_fd);   /* trace_flush checked it is still ours */
    S.trace_fd = -1;
    PMPI_Comm_free(&S.progress_comm);
    shim_clock_stop();
    if (captured) trace_mark_finalizing(1);
    int rc = PMPI_Finalize();
    if (captured) trace_mark_finalizing(0);
    /* the server tells a program that runs its own code after MPI_Finalize (let be) from ranks
     * held inside Open MPI's shutdown (seen with a dead peer: the launcher is ended) */
    if (S.server && !S.exit_sent && (S.tp.fd >= 0 || S.tp.shm)) {
        wire_put(MS_MSG_FIN_RETURNED, NULL, 0, NULL, 0);
        ms_tp_flush(&S.tp);
    }
    return rc;
}
