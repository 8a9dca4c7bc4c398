#!/usr/bin/python3
"""Computation charged and the clocks: CPU time charged, the shim's own cost kept out, programs that wait on the clock, the compute gate and the waiting ranks' spinning."""
# the helpers, the build and the scratch directory (BUILD, SRC, WORK, MPISIM), and the modules they use
from cosim_common import *  # noqa: F401,F403


def test_spin_oversubscribed():
    """Ranks more than 4 per core sleep at once when they wait (shim.spin_oversubscribed = sleep)
    or poll first (spin, the default): how they wait changes no virtual time. (Beyond 3 cores the
    16 ranks are too few to sleep: then both runs spin, and the test only says so.)"""
    n = min(16, 4 * len(os.sched_getaffinity(0)) + 1)
    prog = [os.path.join(BIN, "stencil"), "--iters", "50", "--no-times"]
    _, a = mpisim_run(n, prog, sets=["shim.spin_oversubscribed=sleep"], report=os.path.join(WORK, "sleep.json"))
    _, b = mpisim_run(n, prog, sets=["shim.spin_oversubscribed=spin"], report=os.path.join(WORK, "spin.json"))
    if strip(a) != strip(b) or a["summary"]["virtual_time_ps"] != b["summary"]["virtual_time_ps"]:
        sys.exit(f"FAILED: sleeping and spinning waits differ in virtual time:\n{strip(a)}\n{strip(b)}")
    print(f"{n} ranks, sleeping and spinning waits: the same virtual times "
          f"({a['summary']['virtual_time_ps']} ps; wall {a['summary']['wall_s']:.2f} s and {b['summary']['wall_s']:.2f} s)")


def test_cpu_charged():
    """Computation is charged by CPU time, not wall time: ranks that share one CPU with no compute
    gate take turns on it, so the wall time from a rank's MPI_Init to its barrier grows with the
    ranks beside it while its CPU time stays that of the work."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/burn.c"), os.path.join(WORK, "burn"))
    work = "30000000"
    # Every rank on one CPU (burn pins itself; the model server and the launcher may use the
    # others), computing right after MPI_Init, where nothing orders them: ranks that surely
    # share a core, and the same conditions on any host. The test used to compare 2 and 16 ranks
    # spread over the host's cores, computing between two barriers: a host's clock rates differ
    # with how many cores are busy (a CI host ran lone ranks 1.75x slower than four together),
    # and the driver resumes ranks from a barrier one after another, so they seldom computed
    # together: --compute wall gave 16 ranks 1.0x the compute of 2, inside the old bound
    cpu = max(os.sched_getaffinity(0))

    def lower_median(n, tag):
        _, r = mpisim_run(n, [exe, work, str(cpu)], compute="cpu", sets=["shim.compute_slots=0"],
                          report=os.path.join(WORK, f"c{tag}.json"))
        c = sorted(x["compute_ps"] for x in r["ranks"])
        # the lower median: of two ranks the less disturbed (the upper one of two is their maximum,
        # which a slow spell of the CPU decides: 26.5 against 41 ms seen on a quiet machine)
        return c[(len(c) - 1) // 2]

    # CPU-time noise on a shared machine only inflates: interleave the sizes (the machine's load
    # drifts) and keep the least of the runs of each. The host has slow spells in which a process
    # computes at 1.6x for its whole life (about 1 in 5 here; a quiet machine's one rank alone was
    # charged 1/0.73 of the others once, all three of its runs slow): where a ratio is out of its
    # bounds after three rounds, more rounds, up to eight; a least that stays out of them is
    # charged wall time (2 ranks 1.84x, 16 ranks 13-15x under --compute wall, whatever the rounds)
    runs = {1: [], 2: [], 16: []}

    def out_of_bounds():
        best = {n: min(v) for n, v in runs.items()}
        return [n for n in (2, 16) if not 0.7 <= best[n] / best[1] <= 1.4], best

    for k in range(8):
        for n in runs:
            runs[n].append(lower_median(n, f"{n}-{k}"))
        if k >= 2 and not out_of_bounds()[0]:
            break
    bad, best = out_of_bounds()
    print(f"compute per rank on CPU {cpu}: " + ", ".join(f"{n} rank(s) {best[n] / 1e9:.3f} ms" for n in best) +
          f"; ratios {best[2] / best[1]:.3f}, {best[16] / best[1]:.3f} after {len(runs[1])} rounds "
          f"(runs: {' / '.join(str([round(x / 1e9, 3) for x in v]) for v in runs.values())})")
    # --compute wall gives 1.84x for two ranks and 13-15x for sixteen; CPU time stays within a
    # few % of one rank's on a quiet machine (0.99-1.03 here: caches refilled after a switch, a
    # hypervisor's share), but beside two CPU-bound jobs (one on this CPU) sixteen ranks took
    # 1.20x after eight rounds (scripts/soak.sh): the bounds 0.7-1.4 still refuse wall time
    for n in bad:
        sys.exit(f"FAILED: {n} ranks sharing a CPU were charged {best[n] / best[1]:.2f}x the compute of one rank "
                 "alone (wall time charged?)")


def test_steal_excluded():
    """Computation is charged by the thread's CPU time, the hypervisor's steal left out: gaps of
    real work that the program times itself with CLOCK_THREAD_CPUTIME_ID (which a virtual machine's
    kernel keeps free of steal) are charged within 2 % of that time, alone and beside a CPU-bound
    job. Before, the shim charged its task clock as measured, which counts steal: on a shared
    virtual machine an OpenMP region was charged 1.5x its longest thread, and a task clock read
    1.2-2.2x the CPU time of 0.22 s of work (docs/architecture.md "Steal")."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/cpu_gaps.c"), os.path.join(WORK, "cpu_gaps"))

    def ratios(tag):
        p, r = mpisim_run(2, [exe, "20", "2000000"], compute="cpu", sets=["shim.cpu_factor=1"],
                          report=os.path.join(WORK, f"steal{tag}.json"))
        own = [int(x) for x in re.search(r"cpu_ns=([0-9,]+)", p.stdout).group(1).split(",")]
        cs = [x["charging"] for x in r["ranks"]]
        if any(c["method"] == "task-clock" and c["steal_syscalls"] < 20 for c in cs):
            sys.exit(f"FAILED: the gaps' clocks were not paired: {cs}")
        # the rank's whole charge: its other gaps (around the barriers) are charged the floor, ~ns
        got = [x["compute_ps"] / 1e3 for x in r["ranks"]]
        return [g / o for g, o in zip(got, own)], sum(c["steal_ns"] for c in cs) / 1e6, cs[0]["method"]

    # CPU time on a shared machine only inflates (caches shared with the job beside): the best of
    # up to three runs, each rank's ratio the one nearest 1
    out = {}
    for tag, beside in (("alone", False), ("beside", True)):
        burner = subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"]) if beside else None
        try:
            runs = []
            for k in range(3):
                runs.append(ratios(f"{tag}{k}"))
                if all(0.98 <= x <= 1.02 for x in runs[-1][0]):
                    break
        finally:
            if burner:
                burner.kill()
                burner.wait()
        best = min(runs, key=lambda v: max(abs(x - 1) for x in v[0]))
        out[tag] = best
        print(f"{tag}: charged / the program's own CPU time per rank {', '.join(f'{x:.4f}' for x in best[0])} "
              f"(method {best[2]}; steal left out: {best[1]:.2f} ms; runs: "
              f"{[[round(x, 4) for x in v[0]] for v in runs]}, steal {[round(v[1], 2) for v in runs]} ms)")
    for tag, (rs, _, _) in out.items():
        if not all(0.98 <= x <= 1.02 for x in rs):
            sys.exit(f"FAILED: {tag}: the work should be charged within 2 % of its CPU time")


def runnable_per_cpu():
    """Tasks ready to run now other than this test, per CPU it may use: the median of ten looks at
    /proc/stat (procs_running, which counts this one) over half a second."""
    import time
    looks = []
    for _ in range(10):
        with open("/proc/stat") as f:
            looks.append(next(int(l.split()[1]) for l in f if l.startswith("procs_running")) - 1)
        time.sleep(0.05)
    return sorted(looks)[5] / len(os.sched_getaffinity(0))


def test_charged_overhead():
    """A program with nothing between its MPI calls is charged (almost) no computation per call, at
    factor 1 in the default compute mode, alone and with a CPU-bound job beside it: what the
    measurement gives before the floor, per call between a short and a long run of the program."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/empty_pingpong.c"), os.path.join(WORK, "empty_pingpong"))
    # the same in Fortran: the bindings convert handles around the C wrapper, inside their stamps
    fexe = mpifort(os.path.join(SRC, "tests/shim/progs/empty_pingpong_f.f90"), os.path.join(WORK, "empty_pingpong_f"))
    # the bounds assume this program and one CPU-bound job of its own; they have held beside up to
    # 2 other runnable tasks per CPU (4 CPU-bound jobs on 2 CPUs: 14-18 ns alone, 17-21 ns
    # beside), not tried beyond. The load average this skip looked at lags a minute behind:
    # after a stretch of `ctest -j2` it skipped the test on machines idle by then (in CI nearly
    # always), so look at what runs now
    busy = runnable_per_cpu()
    if busy > 2:
        print(f"SKIPPED: {busy:.1f} other runnable tasks per CPU before the test (held up to 2, not tried beyond)")
        sys.exit(77)

    def measured(tag, trips, prog):
        _, r = mpisim_run(2, [prog, str(trips)], compute="cpu", sets=["shim.cpu_factor=1"],
                          report=os.path.join(WORK, f"o{tag}.json"))
        for x in r["ranks"]:
            c = x["charging"]
            if c["method"] not in ("task-clock", "syscall") or c["gaps"] < 2 * trips:
                sys.exit(f"FAILED: rank {x['rank']} charging block {c}")
        # what the measurement charged before the floor took the gaps it cannot tell from empty
        # ones (Repeatable small gaps: charged shim.gap_floor instead, the same in every run)
        m = sum(x["compute_ps"] / 1e3 - x["charging"]["floor_added_ns"] + x["charging"]["floor_dropped_ns"]
                for x in r["ranks"])
        calls = sum(x["calls"] for x in r["ranks"])
        floored = sum(x["charging"]["floor_gaps"] for x in r["ranks"]) / sum(x["charging"]["gaps"] for x in r["ranks"])
        if floored < 0.9:
            sys.exit(f"FAILED: only {floored:.1%} of the empty gaps were charged the floor")
        return m, calls, c

    def per_call(tag, few, many, prog=exe):
        # per call between two lengths of the same run: the program's one-time costs between MPI
        # calls (the first calls' lazy symbol binding: ~24 us in the Fortran program's first gaps,
        # 12 ns per call over its 2000) are its own computation, native too, and cancel
        m0, n0, _ = measured(f"{tag}-few", few, prog)
        m1, n1, c = measured(f"{tag}-many", many, prog)
        return (m1 - m0) / (n1 - n0), c

    alone, c = per_call("alone", 1000, 5000)
    falone, _ = per_call("falone", 1000, 5000, fexe)
    burner = subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
    try:
        # the lower of two: another job's burst can still land on one
        (beside, cb), _ = sorted([per_call("beside", 500, 2500), per_call("beside2", 500, 2500)], key=lambda x: x[0])
        fbeside = min(per_call("fbeside", 500, 2500, fexe)[0], per_call("fbeside2", 500, 2500, fexe)[0])
    finally:
        burner.kill()
        burner.wait()
    print(f"measured per empty MPI call (before the floor): {alone:.0f} ns alone, {beside:.0f} ns beside a CPU-bound job "
          f"(method {c['method']}, baseline {c['baseline_ns']} ns subtracted per gap; beside: "
          f"{cb['woken_gaps']} of {cb['gaps']} gaps followed a switch-out, cold baseline {cb['cold_baseline_ns']} ns "
          f"from {cb['cold_trials']} trials; {cb.get('window_gaps', 0)} gaps in the wrapper window); "
          f"Fortran: {falone:.0f} ns alone, {fbeside:.0f} ns beside")
    # the bound: <= 50 ns per call, alone and beside. Beside a CPU-bound job half the gaps follow
    # a switch-out and start cold (docs/performance.md, "The cold return path"): with the wrapper
    # window and the warm path's probe this test gave 14-19 ns beside (the lower of two runs),
    # and tests/bench/bench_charged.py 21-28 ns over interleaved runs (65 ns for the build before
    # them, 1500-1700 ns when the CPU clock was a system call); the Fortran program 27-47 ns beside (300-380
    # before the Fortran bindings took the stamps). Divided over one run's calls, its one-time
    # costs included, it gave C 25-49 ns and Fortran 51-74 on a slow day (and failed); between two
    # lengths: C 15-23 alone, 32-41 beside, Fortran 23-29 and 24-30 (3 runs, 2026-12-03)
    if max(alone, beside, falone, fbeside) > 50:
        sys.exit("FAILED: bound 50 ns per call, alone and beside a CPU-bound job, C and Fortran")


def test_dlclose_sites():
    """A program calls MPI from a library it then unloads, from the same call site before and
    after (the shim touches the code that followed a site after a switch-out: warm_path.c);
    under --compute cpu beside the other rank it neither crashes nor loses calls."""
    lib = os.path.join(WORK, "libdl_pingpong.so")
    run(["mpicc", "-O1", "-shared", "-fPIC", "-o", lib, os.path.join(SRC, "tests/shim/progs/dl_pingpong_lib.c")])
    exe = os.path.join(WORK, "dlclose_sites")
    run(["mpicc", "-O1", "-std=c11", "-o", exe, os.path.join(SRC, "tests/shim/progs/dlclose_sites.c"), "-ldl"])
    p, r = mpisim_run(2, [exe, lib], compute="cpu", report=os.path.join(WORK, "dlclose.json"))
    if "dlclose_sites=ok" not in p.stdout:
        sys.exit(f"FAILED: {p.stdout}\n{p.stderr[-2000:]}")
    woken = sum(x["charging"]["woken_gaps"] for x in r["ranks"])
    print(f"dlclose_sites: {p.stdout.strip()}; {woken} gaps followed a switch-out")
    if woken < 10:
        sys.exit("FAILED: too few switched-out calls to exercise the touched way back")


def test_program_clocks():
    """The program's own clocks (shim.program_clocks = virtual, the default): the same ping-pongs
    timed with clock_gettime (monotonic, realtime) and gettimeofday give MPI_Wtime's virtual time;
    the realtime clock still reads today's date; CPU time stays the host's; a capture of the run
    replays to the same virtual times (the reads are calls in the trace). With
    shim.program_clocks = real they read the host's clock again."""
    import time
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/program_clocks.c"), os.path.join(WORK, "program_clocks"))
    h5 = os.path.join(WORK, "clocks.h5")
    if os.path.exists(h5):
        os.unlink(h5)
    p, rep = mpisim_run(2, [exe, "1000"], report=os.path.join(WORK, "clocks.json"), extra=["--trace", h5])
    v = {k: int(x) for k, x in re.findall(r"(\w+)=(-?[0-9]+)", p.stdout)}
    print(f"virtual: {v}")
    w = v["wtime_ns"]
    # MPI_Wtime is a double of seconds; the clocks count whole ns (gettimeofday whole us)
    if not (w > 0 and abs(v["monotonic_ns"] - w) <= 2 and abs(v["realtime_ns"] - w) <= 2 and
            abs(v["gettimeofday_ns"] - w) <= 1000):
        sys.exit(f"FAILED: the program's clocks do not read virtual time: {v}")
    if abs(v["date_s"] - time.time()) > 600:
        sys.exit(f"FAILED: CLOCK_REALTIME is not today's date under co-simulation: {v['date_s']}")
    if v["cputime_ns"] <= 0:
        sys.exit(f"FAILED: CLOCK_PROCESS_CPUTIME_ID should stay the host's: {v}")
    sites = {}
    for c in rep["callsites"]:
        sites[c["call"]] = sites.get(c["call"], 0) + c["calls"]
    # per rank: 2 gettimeofday, 5 clock_gettime of the virtual clocks (the CPU-time ones stay real)
    if sites.get("gettimeofday") != 4 or sites.get("clock_gettime") != 10:
        sys.exit(f"FAILED: the reads are not counted as calls: {sites}")
    off = os.path.join(WORK, "clocks-replay.json")
    run([MPISIM, "replay", h5, "--report", off])
    b = json.load(open(off))
    for x, y in zip(rep["ranks"], b["ranks"]):
        if x["virtual_end_ps"] != y["virtual_end_ps"] or x["calls"] != y["calls"]:
            sys.exit(f"FAILED: replay differs: rank {x['rank']} {x['virtual_end_ps']} / {y['virtual_end_ps']}")
    p, _ = mpisim_run(2, [exe, "1000"], sets=["shim.program_clocks=real"], report=os.path.join(WORK, "clocks2.json"))
    r = {k: int(x) for k, x in re.findall(r"(\w+)=(-?[0-9]+)", p.stdout)}
    print(f"real:    {r}")
    if abs(r["monotonic_ns"] - r["wtime_ns"]) < 0.1 * r["wtime_ns"]:
        sys.exit(f"FAILED: shim.program_clocks = real should read the host's clock: {r}")
    print("the program's clock reads give virtual time (monotonic, realtime, gettimeofday); replay agrees")


def test_return_path_growing():
    """Computation after switched-out calls is charged in full by the cold return path's
    compensation (shim.return_path = measured), even when the switched gaps are the heaviest:
    growing_work's rank 0 does the same work in two runs, the second with its later calls
    switched out (rank 1 sleeps before every other exchange of the second half)."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/growing_work.c"), os.path.join(WORK, "growing_work"))

    def rank0(tag, sleep_us):
        _, r = mpisim_run(2, [exe, "300", "20000", str(sleep_us)], compute="cpu",
                          sets=["shim.cpu_factor=1", "shim.return_path=measured"],
                          report=os.path.join(WORK, f"g{tag}.json"))
        x = r["ranks"][0]
        return x["compute_ps"] / 1e3, x["charging"]

    # CPU time on a shared machine only inflates: the least of interleaved runs of each. The same
    # work is charged 1x, 1.5x or 2x in slow spells of the host that last a process's whole life
    # (28.4 / 43.8 / 58.6 ms for one burn, test_cpu_charged, a quiet machine; a fresh clone's CI
    # run had all three plain runs fast and all three switched slow: ratio 0.843). So, as there:
    # where the ratio is out of bounds after three rounds, more rounds, up to eight; a real
    # under-charge stays out of them whatever the rounds
    plain, switched = [], []
    for k in range(8):
        plain.append(rank0(f"p{k}", 0))
        switched.append(rank0(f"s{k}", 3000))
        a, _ = min(plain, key=lambda t: t[0])
        b, cb = min(switched, key=lambda t: t[0])
        if k >= 2 and b >= 0.95 * a:
            break
    # the least a run took off: a mistaken compensation is in every run; one run's cold spell is
    # not (a quiet CI-like run: 1055 us over 152 gaps once, beside runs of tens of us)
    comp = min(c["return_comp_ns"] for _, c in switched)
    woken = min(c["woken_gaps"] for _, c in switched)
    print(f"rank 0 charged {a / 1e6:.3f} ms without switches, {b / 1e6:.3f} ms with its later calls switched out "
          f"(ratio {b / a:.3f}; {woken} of {cb['gaps']} gaps followed a switch; the return path's compensation "
          f"took off at least {comp / 1e3:.1f} us in a run; {len(plain)} rounds)")
    if woken < 50:
        sys.exit("FAILED: the sleeps did not switch rank 0 out: the test tests nothing")
    # the compensation takes off the measured cold excess: 0.3-3.8 us per switched gap in the runs
    # of 2026-11-25 (35-500 us over ~130 gaps; the upper end in a fresh clone's CI run, where it is
    # 7 % of a gap's ~52 us of work); mistaking the growth for it would take off tens of
    # microseconds per gap, and the total charged must stay within 5 % either way
    per_gap = comp / max(woken, 1)
    if b < 0.95 * a or per_gap > 0.1 * (a / 300):
        sys.exit("FAILED: computation after switched-out calls was not charged in full")


def test_compute_gate():
    """The compute gate: with one slot, ranks that compute at the same time take turns (and
    still get the same CPU time charged); ranks that wait for each other outside MPI are not
    deadlocked: the wait gives up after shim.compute_slot_timeout, the gate widens and the report
    warns."""
    burn = mpicc(os.path.join(SRC, "tests/shim/progs/init_burn.c"), os.path.join(WORK, "init_burn"))
    per = {}
    spread = None
    for slots in ("1", "0"):
        # a long timeout: on a loaded machine a rank may take long to finish its turn
        _, r = mpisim_run(4, [burn, "20000000"], compute="cpu",
                          sets=[f"shim.compute_slots={slots}", "shim.compute_slot_timeout=60 s"],
                          report=os.path.join(WORK, f"gate{slots}.json"))
        cs = [x["charging"] for x in r["ranks"]]
        per[slots] = sorted(x["compute_ps"] for x in r["ranks"])[2] / 1e9
        if slots == "1":
            waits = sum(c["gate_waits"] for c in cs)
            # ranks start within milliseconds of each other and compute ~20 ms each: at least one
            # must find the slot taken
            if any(c["gate_slots"] != 1 for c in cs) or waits < 1 or sum(c["gate_timeouts"] for c in cs):
                sys.exit(f"FAILED: 4 ranks burning under one slot: {cs}")
            print(f"one slot: {waits} waits for a slot, {sum(c['gate_wait_ns'] for c in cs) / 1e6:.1f} ms waited")
            # within this run (each rank computed alone, at whatever speed the host gave a lone
            # vCPU): the rank that waited longest against the one that waited least
            by_wait = sorted(r["ranks"], key=lambda x: x["charging"]["gate_wait_ns"])
            lo, hi = by_wait[0], by_wait[-1]
            spread = ((hi["compute_ps"] - lo["compute_ps"]) / 1e9,
                      (hi["charging"]["gate_wait_ns"] - lo["charging"]["gate_wait_ns"]) / 1e6)
        elif any(c["gate_slots"] != 0 or c["gate_waits"] for c in cs):
            sys.exit(f"FAILED: compute_slots=0 still gated: {cs}")
    print(f"median compute per rank: one slot {per['1']:.2f} ms, no gate {per['0']:.2f} ms; the rank that waited "
          f"{spread[1]:.1f} ms longer than another was charged {spread[0]:+.2f} ms more")
    # A charged wait would add its whole length. Across the two runs only a loose bound: a CI host
    # ran lone gated ranks 1.75x slower than four together (frequency of a woken vCPU), this one
    # four ungated ranks on two vCPUs 1.9x slower than lone ones (caches)
    if spread[0] > 0.5 * spread[1] or not 0.25 <= per["1"] / per["0"] <= 4:
        sys.exit("FAILED: waiting for a slot was charged as computation?")

    exe = mpicc(os.path.join(SRC, "tests/shim/progs/outside_wait.c"), os.path.join(WORK, "outside_wait"))
    d = tempfile.mkdtemp(prefix="gate-", dir=WORK)
    p, r = mpisim_run(2, [exe, d], compute="cpu",
                      sets=["shim.compute_slots=1", "shim.compute_slot_timeout=200 ms"],
                      report=os.path.join(WORK, "outside.json"))
    assert "outside_wait=ok" in p.stdout, p.stdout
    cs = [x["charging"] for x in r["ranks"]]
    warn = [w for w in r.get("measurement_warnings", []) if "compute slot" in w]
    print(f"waiting outside MPI under one slot: {sum(c['gate_timeouts'] for c in cs)} timeout(s), gate widened to "
          f"{max(c['gate_slots'] for c in cs)}; warning: {warn[:1]}")
    if sum(c["gate_timeouts"] for c in cs) < 1 or max(c["gate_slots"] for c in cs) < 2 or not warn:
        sys.exit("FAILED: expected a timeout, a wider gate and a measurement warning")


def test_wtime_spin():
    """A program waiting on MPI_Wtime ends under --compute none, deterministically, and under
    --compute cpu within 50 us of its 1 ms (each read costs shim.clock_read_cost, each empty gap
    the floor: the clock moves at every read)."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/wtime_spin.c"), os.path.join(WORK, "wtime_spin"))
    for step in (1000000, 250000):
        p, rep = mpisim_run(2, [exe], sets=[f"shim.wtime_stall={step}"])
        m = re.search(r"waited=([0-9.]+) polls=(\d+)", p.stdout)
        if not m:
            sys.exit(f"FAILED: no result\n{p.stdout}{p.stderr}")
        waited, polls = round(float(m.group(1)) * 1e12), int(m.group(2))
        # t0 came right after a barrier; the first poll ends the first empty interval (not a run
        # yet: a {read; work; read} loop's honest intervals must not grow), every later one
        # advances the clock by one step
        if waited != (polls - 1) * step or not 10**9 <= waited < 10**9 + 2 * step:
            sys.exit(f"FAILED: step {step} ps: waited {waited} ps in {polls} polls")
        compute = rep["ranks"][0]["compute_ps"]
        if compute != waited:
            sys.exit(f"FAILED: the wait should be charged as computation ({waited} ps), report says {compute} ps")
    print("a 1 ms wait on MPI_Wtime under --compute none ends, charged as computation, steps of 1 us and 250 ns "
          "from the second empty poll on")
    # --compute cpu: each poll's interval is charged the floor and the read's cost (20 + 30 ns), so
    # ~20000 polls; with both 0 the stall rule takes over again (an empty interval charged only
    # noise): the defect this catches (noise alone moving the clock) took 3.3 M polls. The wait
    # ends at the first poll past 1 ms, overshooting by what the last interval was charged: an
    # interrupt's few us under load (one loaded full run failed a 5 us bound, its output not kept)
    for sets, most in ((["shim.cpu_factor=1"], 50000),
                       (["shim.cpu_factor=1", "shim.clock_read_cost=0", "shim.gap_floor=0"], 50000)):
        p, rep = mpisim_run(2, [exe], compute="cpu", sets=sets)
        m = re.search(r"waited=([0-9.]+) polls=(\d+)", p.stdout)
        waited, polls = round(float(m.group(1)) * 1e12), int(m.group(2))
        print(f"--compute cpu {' '.join(sets[1:]) or '(defaults)'}: waited {waited / 1e6:.3f} us in {polls} polls")
        if not 10**9 <= waited < 10**9 + 50 * 10**6 or polls > most:
            sys.exit(f"FAILED: a 1 ms wait on MPI_Wtime under --compute cpu should take 1 ms (+ at most 50 us) in at "
                     f"most {most} polls (before: noise moved the clock, thousands of polls per microsecond)")


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def test_timed_loop():
    """Timed loops: {MPI_Wtime; 0.3 us of work; MPI_Wtime} reads within 10 %
    of its native length under --compute cpu, and a compute phase made of such intervals until a
    target (OSU's do_compute_cpu) lasts within 15 % of what it lasts natively (it took 4.7x when
    every clock read that found the clock unmoved advanced it by shim.wtime_stall)."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/timed_loop.c"), os.path.join(WORK, "timed_loop"))
    mpirun = ["mpirun", "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])

    def native(k):
        p = run(mpirun + ["-n", "1", exe, str(k), "2000", "100"])
        return {a: float(b) for a, b in re.findall(r"(\w+)=([0-9.]+)", p.stdout)}

    def virtual(k):
        p, _ = mpisim_run(1, [exe, str(k), "2000", "100"], compute="cpu", sets=["shim.cpu_factor=1"])
        return {a: float(b) for a, b in re.findall(r"(\w+)=([0-9.]+)", p.stdout)}

    # the work of 0.3 us on this machine: scaled from a first native run
    k = 200
    k = max(10, round(k * 300 / native(k)["read_median_ns"]))
    # CPU time on a shared machine only inflates, and the load drifts: interleave, medians of 5
    nat, vir = [], []
    for _ in range(5):
        nat.append(native(k))
        vir.append(virtual(k))
    nr, vr = median(x["read_median_ns"] for x in nat), median(x["read_median_ns"] for x in vir)
    npz, vpz = median(x["phase_ns"] for x in nat), median(x["phase_ns"] for x in vir)
    print(f"{k} iterations of work: one interval read {vr:.0f} ns under mpisim, {nr:.0f} ns natively "
          f"(ratio {vr / nr:.3f}); a 100 us compute phase lasted {vpz / 1e3:.1f} us, natively {npz / 1e3:.1f} us "
          f"(ratio {vpz / npz:.3f}) (runs: {[round(x['read_median_ns']) for x in vir]} / "
          f"{[round(x['read_median_ns']) for x in nat]} ns)")
    if not 0.9 <= vr / nr <= 1.1:
        sys.exit("FAILED: {MPI_Wtime; 0.3 us of work; MPI_Wtime} should read within 10 % of its native length")
    if not 0.85 <= vpz / npz <= 1.15:
        sys.exit("FAILED: a compute phase timed by MPI_Wtime should last within 15 % of its native length")


def test_repeat_gaps():
    """Repeatable small gaps: IMB's Exchange at 0 B and Alltoall of 4 ranks at
    2 KiB, nothing between their MPI calls, give the same virtual times in all of RUNS runs but at
    most one under --compute cpu with a CPU-bound job beside them (each run's measurement noise
    differs: an empty interval charged as measured gave 10.55 / 8.93 / 10.54 us). Stalls of the
    machine of 5-152 us in an empty interval are taken for noise up to 20 x shim.gap_noise_max
    (80 x after a switched-out call), three per pair of call sites in 256 intervals; a pair is
    empty when a quarter of its intervals are (a half let slow phases of the machine, most empty
    intervals at 100-450 ns, make it look busy). Still open (docs/performance.md, "Repeatable
    small gaps"): a new pair's first interval stalled, and a slow phase from a pair's first
    intervals on; run for run beside three CPU-bound jobs (load 7) 24 of 25 exchange runs agreed
    (19 of 25 with the half). Asking for all runs failed 1 suite in CI (main de14318): one of six
    may differ, and the test says so."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/repeat_gaps.c"), os.path.join(WORK, "repeat_gaps"))
    runs = 6
    burner = subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
    try:
        for kernel, size in (("exchange", "0"), ("alltoall", "2048")):
            seen = {}
            for k in range(runs):
                p, rep = mpisim_run(4, [exe, kernel, size], compute="cpu", sets=["shim.cpu_factor=1"],
                                    report=os.path.join(WORK, f"rg{k}.json"))
                line = p.stdout.strip()
                c = [x["charging"] for x in rep["ranks"]]
                floored = sum(x["floor_gaps"] for x in c) / sum(x["gaps"] for x in c)
                load = open("/proc/loadavg").read().split()[0]
                print(f"{kernel} run {k + 1}: {line} ({floored:.1%} of the intervals charged the floor; load {load})")
                seen[line] = seen.get(line, 0) + 1
            # charged as measured (shim.gap_noise = 0) no two runs agree; a rule that held one
            # run in three would leave two or more of six out
            mode = max(seen.values())
            print(f"{kernel}: {mode} of {runs} runs gave the same virtual times" +
                  ("" if mode == runs else f" (the others: {sorted(seen.items(), key=lambda kv: -kv[1])[1:]})"))
            if mode < runs - 1:
                sys.exit(f"FAILED: {kernel}: {runs} runs gave {len(seen)} different virtual times: {seen}")
    finally:
        burner.kill()
        burner.wait()
    # real computation is still charged: the compute phase of test_timed_loop; here a program
    # that computes (burn.c) is charged its work, not the floor
    bexe = mpicc(os.path.join(SRC, "tests/shim/progs/burn.c"), os.path.join(WORK, "burn"))
    _, rep = mpisim_run(2, [bexe, "3000000"], compute="cpu", sets=["shim.cpu_factor=1"])
    if rep["ranks"][0]["compute_ps"] < 10**9:
        sys.exit(f"FAILED: burn's computation was not charged: {rep['ranks'][0]['compute_ps']} ps")


if __name__ == "__main__":
    run_named(globals())
