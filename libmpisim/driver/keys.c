/* The configuration keys every front end has beyond netmodel's: the shim's ([shim], read by the
 * server for the ranks' WELCOME and by replay to rescale recorded computation) and the MPI
 * model's ([mpi], [host]). */
#include "ms_driver.h"

#include <stdio.h>
#include <string.h>

/* The [shim] keys, registered together (ms_driver_register_keys). */
static const nm_key_def shim_keys[] = {
    {"shim.compute", NM_KEY_STRING, "", "cpu", "docs/architecture.md (Virtual time in a rank)",
     "what a rank's computation between MPI calls costs: its thread CPU time (cpu), wall time (wall) or "
     "nothing (none)",
     "cpu|wall|none", 0},
    {"shim.cpu_factor", NM_KEY_DOUBLE, "", "1.0", "docs/architecture.md (Virtual time in a rank)",
     "virtual compute time = measured time x this factor (projects a slower or faster processor; "
     "beyond 10000 the clock of a real run would overflow)",
     "0..10000", 0},
    {"shim.callsite_depth", NM_KEY_INT, "", "1", "mpiP (call sites as program frames)",
     "frames of the program's stack that identify a call site in the report (1: the caller; more: "
     "libunwind walks the stack at every call)",
     "1..8", 0},
    {"shim.unmodelled", NM_KEY_STRING, "", "error", "project choice (a run is never timed wrongly without saying so)",
     "an MPI call the model does not time: stop the run (error) or run it untimed and count it "
     "(passthrough)",
     "error|passthrough", 0},
    {"shim.wtime_stall", NM_KEY_INT, "ps", "1000000", "project choice (programs that wait on the clock)",
     "where nothing moves the clock between two clock reads (shim.compute = none; under cpu and wall only "
     "with shim.clock_read_cost and shim.gap_floor both 0): a read of MPI_Wtime (or a program clock, "
     "shim.program_clocks) that finds the clock moved since the previous read by computation alone and by "
     "less than a tenth of this, right after a read that found the same, advances it by this much, as "
     "computation: a program that spins on the clock until time has passed (timer calibration, timed "
     "loops, overlap benchmarks) would otherwise never see it pass, while a {read; work; read} loop, whose "
     "empty intervals never come two in a row, reads its work's own length; 0 turns this off",
     NULL, NM_KEY_NONNEG},
    {"shim.clock_read_cost", NM_KEY_INT, "ps", "30 ns",
     "measured (Open MPI's MPI_Wtime natively on the reference machine: 30-40 ns; clock_gettime through "
     "the vDSO 27 ns)",
     "computation charged for each virtual clock read (MPI_Wtime, the program's clock reads) under "
     "compute cpu and wall, after the read (before shim.cpu_factor): natively the interval between two "
     "reads holds one read's cost, which the shim's virtual read does not take",
     "0..1e6", 0},
    {"shim.gap_floor", NM_KEY_INT, "ps", "20 ns",
     "project choice (docs/architecture.md, Repeatable small gaps: the program's own code between two MPI "
     "calls that does nothing, its loop and the call, costs a few ns natively)",
     "what a computation interval the measurement cannot tell from an empty one (shim.gap_noise) is "
     "charged (before shim.cpu_factor), the same in every run; at most shim.gap_noise",
     "0..1e6", 0},
    {"shim.gap_noise", NM_KEY_INT, "ps", "100 ns",
     "measured (docs/architecture.md, Repeatable small gaps: empty intervals' medians 2-45 ns, at load 12 "
     "beside a CPU-bound job)",
     "the measurement's noise floor: an interval measured at or below this, or one of up to "
     "shim.gap_noise_max between a pair of call sites whose last 256 intervals were for a quarter or "
     "more (after a switched-out call: at or below 10 times this), is taken for an empty one and charged shim.gap_floor, "
     "so that runs with nothing between their MPI calls repeat exactly under compute cpu and wall, while "
     "real computation is charged as measured; 0: every interval as measured",
     "0..1e7", 0},
    {"shim.gap_noise_max", NM_KEY_INT, "ps", "5 us",
     "measured (docs/architecture.md, Repeatable small gaps: the longest empty interval of a steady loop "
     "beside a CPU-bound job at load 12 was 1.5 us, apart from rare stalls of the virtual machine)",
     "the longest interval between a pair of call sites that often does nothing (shim.gap_noise) still "
     "taken for noise; longer ones are charged as measured, but for a stall of the machine: one of up to 20 "
     "times this (80 right after a switched-out call) between such a pair that does nothing, at most three "
     "in its last 256 intervals",
     "0..1e9", 0},
    {"shim.connect_timeout", NM_KEY_INT, "ps", "60 s", "project choice (a rank that leaves before MPI_Init)",
     "when ranks have not connected to the model server and none has connected for this long, the run "
     "stops naming them (a rank that exits before MPI_Init leaves the others waiting in it for ever); "
     "counted in idle time: while the launcher's processes on this host neither run nor wait for a CPU "
     "(a startup on a loaded machine, a program computing before MPI_Init, are not stuck); 1 s to 1 h",
     "1e12..3.6e15", 0},
    {"shim.stall_timeout", NM_KEY_INT, "ps", "60 s",
     "project choice (a hang must end in a report; far above any real transfer)",
     "idle time after which a rank waiting inside the real MPI (for a transfer the model has already "
     "completed, an untimed call, a request mpisim does not time) with nothing completing counts as "
     "stalled, idle meaning while none of the ranks' processes on this host waited for a CPU (a loaded "
     "machine slows the count; a spin inside the real MPI is no progress); a rank whose process is "
     "stopped (SIGSTOP, a debugger) this long in wall time counts as stalled too; when every rank is "
     "stalled, waits in the model or has finished and virtual time cannot move, the run stops (exit 3) "
     "with each rank's call, peer, tag and call site; 0 turns the watchdog off",
     NULL, NM_KEY_NONNEG},
    {"shim.spin_polls", NM_KEY_INT, "", "400", "measured (tests/bench/bench_shim.py: 164 -> 31 us per round trip)",
     "polls without sleeping (yielding the CPU in between) before a waiting rank or the model server "
     "sleeps (over shim.transport = shm a rank polls a quarter of them, the server all of them while a "
     "rank waits; then a doorbell wakes them); 0 sleeps at once, which is kinder to computing ranks when ranks outnumber cores",
     "0..1e9", 0},
    {"shim.spin_oversubscribed", NM_KEY_STRING, "", "sleep",
     "measured (tests/bench/bench_cosim_wall.py --only many on 2 cores, load 4-8, 3 runs each: the 16-rank "
     "stencil 2.31-2.43 s sleeping against 2.29-4.30 s spinning, the 16-rank matmul 2.54-2.74 s against "
     "2.16-2.98 s, since waits in the real MPI kick the peer they wait for; before that the matmul was "
     "1.4-1.8x slower sleeping)",
     "where the ranks of a host outnumber the cores they may use (shim.compute_slots' count, else the "
     "host's CPUs) more than 4 times, a waiting rank sleeps at once instead of polling shim.spin_polls rounds (sleep): the "
     "yields of the ranks that wait take the CPU from the ranks that work and the model server; spin "
     "polls anyway. Virtual time is the same either way",
     "sleep|spin", 0},
    {"shim.program_clocks", NM_KEY_STRING, "", "virtual",
     "project choice (SMPI answers gettimeofday and clock_gettime of code built with smpicc in simulated "
     "time; benchmarks such as NetPIPE time themselves with gettimeofday)",
     "what the program's own clock reads return between MPI_Init and MPI_Finalize: gettimeofday and "
     "clock_gettime (realtime, monotonic, boottime clocks) called by the program, its libraries, "
     "libstdc++ or libgfortran on the thread that called MPI_Init answer in virtual time, as MPI_Wtime "
     "(virtual); the MPI library, its runtime and other threads always read the host's clock; real: "
     "every read is the host's",
     "virtual|real", 0},
    {"shim.transport", NM_KEY_STRING, "", "shm",
     "project choice (a model round trip through a socket costs tens of microseconds)",
     "how ranks on the model server's host talk to it: a shared-memory ring per rank woken by a futex "
     "(shm), or TCP as ranks on other hosts always do (tcp)",
     "shm|tcp", 0},
    {"shim.compute_slots", NM_KEY_STRING, "ranks", "auto",
     "project choice (docs/architecture.md, The compute gate); auto: hwloc's cores the job may use, else the "
     "affinity mask of mpisim run",
     "at most this many ranks of a host compute (run the program's code between MPI calls) at once; the others "
     "sleep until a slot is free, least virtual clock first, so that ranks outnumbering the cores do not "
     "time-slice and evict each other's caches while they compute; auto: the cores the job may use; 0: no gate",
     NULL, 0},
    {"shim.return_path", NM_KEY_STRING, "", "measured",
     "project choice, measured (docs/architecture.md, The cold return path)",
     "a computation interval that follows an MPI call during which the rank was switched out starts on "
     "cold caches: measured touches the way back into the program before the interval starts, takes "
     "off an empty interval's cost right after a switch (measured each time) and the excess measured per "
     "pair of call sites (the least switched interval minus the least unswitched one, never below the "
     "latter); off charges it all as computation",
     "measured|off", 0},
    {"shim.local_answers", NM_KEY_STRING, "", "on",
     "project choice (docs/architecture.md, Local answers)",
     "on: the shim answers what the model can tell in advance without a round trip to the model server, "
     "exactly as the model would (eager standard sends' completion; Test and Iprobe polls inside the "
     "lookahead window the server gives with a negative answer); off: every wait, test and probe asks "
     "the model server",
     "on|off", 0},
    {"shim.compute_slot_timeout", NM_KEY_INT, "ps", "1000000000000",
     "project choice (docs/architecture.md, The compute gate: programs that wait outside MPI)",
     "a rank that waits this long for a compute slot while no rank of its host leaves computation computes "
     "anyway, and the host's gate gets one slot more for the rest of the run (a measurement warning says so): "
     "the ranks holding the slots may be waiting for it outside MPI (shared memory, files, untimed windows)",
     NULL, NM_KEY_POSITIVE},
};

int ms_driver_register_keys(nm_config *cfg, char *err, size_t errlen)
{
    if (nm_config_register(cfg, shim_keys, sizeof shim_keys / sizeof shim_keys[0], err, errlen) < 0) return -1;
    return ms_model_register_keys(cfg, err, errlen);
}

int ms_driver_config_set(nm_config *cfg, const char *assign, char *err, size_t errlen)
{
    static const char *shorts[] = {"unmodelled", "compute", "cpu_factor"};
    for (size_t i = 0; i < sizeof shorts / sizeof shorts[0]; i++) {
        size_t n = strlen(shorts[i]);
        if (!strncmp(assign, shorts[i], n) && assign[n] == '=') {
            char full[1024];
            snprintf(full, sizeof full, "shim.%s", assign);
            return nm_config_set(cfg, full, "--set", err, errlen);
        }
    }
    return nm_config_set(cfg, assign, "--set", err, errlen);
}
