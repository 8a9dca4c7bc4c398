#!/usr/bin/python3
"""Integration tests of the co-simulation: real programs under `mpisim run` with the shim.

Usage: test_cosim.py BUILD_DIR SOURCE_DIR TEST_NAME
Each test prints what it checked and exits 0 on success.
"""
import atexit
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import progress_run  # noqa: E402

BUILD, SRC, NAME = sys.argv[1], sys.argv[2], sys.argv[3]
BIN = os.path.join(BUILD, "bin")
MPISIM = os.path.join(BIN, "mpisim")
WORK = tempfile.mkdtemp(prefix="mpisim-test-")
atexit.register(shutil.rmtree, WORK, True)   # gone when the test ends, passed or failed


def remove_segments(pid):
    """The shared segments of an mpisim that was killed (SIGKILL leaves them; the next run's sweep
    would take them only after 10 minutes)."""
    for f in os.listdir("/dev/shm"):
        if f.startswith((f"mpisim-{pid}-", f"mpisim-gate-{pid}x")):
            try:
                os.unlink(os.path.join("/dev/shm", f))
            except FileNotFoundError:
                pass


def run(args, check=True, timeout=None, **kw):
    """args run to their end; one whose processes are idle for two minutes (neither running nor
    waiting for a CPU: tests/progress_run.py; a loaded machine makes a run slow, not stuck) or that
    outlasts `timeout` (default: the suite's last resort, below ctest's 600 s) is ended as a batch
    system would end it (SIGTERM: mpisim stops its launcher and removes its segments), then, if
    that is not enough, killed with all it started, and the test fails."""
    p = progress_run.run(args, idle_limit=120, wall_limit=timeout, check_stuck=False, errors="replace", **kw)
    if p.stuck:
        remove_segments(p.pid)
        sys.exit(f"FAILED: {' '.join(args)} was stopped: {p.stuck}\nstdout:\n{(p.stdout or '')[-3000:]}\n"
                 f"stderr:\n{(p.stderr or '')[-3000:]}")
    if check and p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def mpisim_run(n, prog, *, sets=(), compute="none", report=None, extra=(), check=True, profile=None):
    report = report or os.path.join(WORK, "report.json")
    args = [MPISIM, "run", "--compute", compute, "--report", report]
    if profile:
        args += ["--profile", profile]
    for s in sets:
        args += ["--set", s]
    args += list(extra) + ["-n", str(n), "--"] + list(prog)
    p = run(args, check=check)
    rep = None
    if os.path.isfile(report):   # not /dev/full
        with open(report) as f:
            rep = json.load(f)
    return p, rep


def mpicc(src, out):
    run(["mpicc", "-O1", "-std=c11", "-o", out, src])
    return out


def mpifort(src, out):
    """Fortran programs are built with Open MPI's mpifort (Debian: gfortran)."""
    run(["mpifort", "-O1", "-o", out, src])
    return out


def cfg_value(rep, key):
    return rep["config"][key]["value"]


# ---------------------------------------------------------------------------------------------
# closed forms (docs: libmpisim/model/README.md, netmodel/README.md)

def closed_form_half_rtt(rep, m):
    """Half round trip of a blocking ping-pong of m bytes on one crossbar, analytic engine."""
    rate = float(cfg_value(rep, "network.link_rate"))
    tau = round(8e12 / rate)
    prop = 2 * round(float(cfg_value(rep, "network.link_length")) / float(cfg_value(rep, "network.propagation_velocity")) * 1e12)
    d = int(cfg_value(rep, "network.switch_delay"))
    h = 1
    mtu = int(cfg_value(rep, "mpi.packet_payload"))
    env = int(cfg_value(rep, "mpi.envelope_bytes"))
    ctl = int(cfg_value(rep, "mpi.control_bytes"))
    os_ = int(cfg_value(rep, "mpi.send_overhead"))
    or_ = int(cfg_value(rep, "mpi.recv_overhead"))
    threshold = int(cfg_value(rep, "mpi.eager_threshold"))
    frame = h + 4 + 1 + 1  # route, type, CRC, GAP characters around each payload

    def lat(p):  # uncontended packet latency: eq. 3 generalised
        return tau * (p + 4 + h) + prop + h * d

    def net(b):
        total = b + env
        npk = max(1, math.ceil(total / mtu))
        last = total - (npk - 1) * mtu
        return (npk - 1) * (mtu + frame) * tau + lat(last)

    if m < threshold:
        return os_ + net(m) + or_
    return os_ + lat(ctl) + or_ + lat(ctl) + net(m) + or_


def test_pingpong_exact():
    sizes = "0,1,2,4,8,64,512,1000,4096,4097,8192,16383,16384,16385,65536,100000,1048576"
    p, rep = mpisim_run(2, [os.path.join(BIN, "pingpong"), "--only", sizes, "--iters", "3", "--warmup", "1"],
                        sets=["network.engine=analytic"])
    rows = [l for l in p.stdout.splitlines() if re.match(r"^\d+,", l)]
    assert rows, p.stdout
    checked = 0
    for line in rows:
        b, half, _ = line.split(",")
        b = int(b)
        got = round(float(half) * 1e12)
        want = closed_form_half_rtt(rep, b)
        if got != want:
            sys.exit(f"FAILED: {b} B: half round trip {got} ps, closed form {want} ps")
        checked += 1
    print(f"pingpong: {checked} sizes equal the closed form to the picosecond")


def test_matmul_wtime():
    p, rep = mpisim_run(4, [os.path.join(BIN, "matmul"), "64"])
    vals = dict(re.findall(r"(\w+)=([0-9.eE+-]+)", p.stdout))
    assert "check=ok" in p.stdout, p.stdout
    interval = round(float(vals["time_s"]) * 1e12)
    start = round(float(vals["wtime_start_s"]) * 1e12)
    end = round(float(vals["wtime_end_s"]) * 1e12)
    r0 = rep["ranks"][0]
    # rank 0 does only local work (the check) after its last MPI_Wtime, free under --compute none
    if end != r0["virtual_end_ps"] or interval != end - start:
        sys.exit(f"FAILED: matmul interval {interval} ps ({start}..{end}), rank 0 report {r0['virtual_end_ps']} ps")
    # MPI_Wtime's call sites are the program's, as every other call's (it showed 0xffffffffffffffff)
    wsites = [c["site"] for c in rep["callsites"] if c["call"] == "MPI_Wtime"]
    if not wsites or not all(w.startswith("main+") for w in wsites):
        sys.exit(f"FAILED: MPI_Wtime's call sites {wsites} do not name matmul's main")
    print(f"matmul: MPI_Wtime interval {interval} ps; its end {end} ps == rank 0 virtual_end_ps; "
          f"MPI_Wtime called from {', '.join(sorted(wsites))}")


def strip(rep):
    return [{k: v for k, v in r.items() if k not in ("pid", "host")} for r in rep["ranks"]]


def test_deterministic():
    prog = [os.path.join(BIN, "matmul"), "48"]
    _, a = mpisim_run(4, prog, report=os.path.join(WORK, "a.json"))
    _, b = mpisim_run(4, prog, report=os.path.join(WORK, "b.json"))
    if strip(a) != strip(b):
        sys.exit(f"FAILED: two --compute none runs differ:\n{strip(a)}\n{strip(b)}")
    print("two --compute none runs: identical per-rank results")


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


def test_buffer_identities():
    """The host model's first touches and registration cache see buffers, not where malloc put
    them: a program that frees its receive buffers and allocates new ones, with allocations in
    between that change from run to run (as the real MPI's do), gets the same virtual times every
    run (libmpisim/model/README.md "Buffer identities"; the seed003-ecard 16-rank apps/patterns
    runs differed by up to 3 % before)."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/freebufs.c"), os.path.join(WORK, "freebufs"))
    runs = []
    for k in range(4):
        p, rep = mpisim_run(2, [exe], profile="seed003-ecard", report=os.path.join(WORK, f"fb{k}.json"))
        if "freebufs: ok" not in p.stdout:
            sys.exit(f"FAILED: freebufs printed {p.stdout!r}")
        runs.append(strip(rep))
    for k in range(1, len(runs)):
        if runs[k] != runs[0]:
            sys.exit(f"FAILED: run {k} differs from run 0:\n{runs[0]}\n{runs[k]}")
    # the costs are there (the test would be empty without them): no first touches, less time
    _, flat = mpisim_run(2, [exe], profile="seed003-ecard", sets=["host.touch_cost_per_page=0"],
                         report=os.path.join(WORK, "fbflat.json"))
    t_on, t_off = (max(r["virtual_end_ps"] for r in x) for x in (runs[0], strip(flat)))
    if not t_on > t_off:
        sys.exit(f"FAILED: first touches cost nothing ({t_on} ps with, {t_off} ps without)")
    print(f"4 runs with frees and run-dependent allocations: identical per-rank results "
          f"({t_on} ps; {t_off} ps without first touches)")


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
    """A program with nothing between its MPI calls is charged (almost) no computation, at factor 1
    in the default compute mode, alone and with a CPU-bound job beside it."""
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

    def per_call(tag, trips, prog=exe):
        _, r = mpisim_run(2, [prog, str(trips)] if prog == exe else [prog], compute="cpu", sets=["shim.cpu_factor=1"],
                          report=os.path.join(WORK, f"o{tag}.json"))
        for x in r["ranks"]:
            c = x["charging"]
            if c["method"] not in ("task-clock", "syscall") or c["gaps"] < 2 * trips:
                sys.exit(f"FAILED: rank {x['rank']} charging block {c}")
        # what the measurement charged before the floor took the gaps it cannot tell from empty
        # ones (Repeatable small gaps: charged shim.gap_floor instead, the same in every run)
        measured = sum(x["compute_ps"] / 1e3 - x["charging"]["floor_added_ns"] + x["charging"]["floor_dropped_ns"]
                       for x in r["ranks"])
        calls = sum(x["calls"] for x in r["ranks"])
        floored = sum(x["charging"]["floor_gaps"] for x in r["ranks"]) / sum(x["charging"]["gaps"] for x in r["ranks"])
        if floored < 0.9:
            sys.exit(f"FAILED: only {floored:.1%} of the empty gaps were charged the floor")
        return measured / calls, c

    alone, c = per_call("alone", 2000)
    falone, _ = per_call("falone", 1000, fexe)
    burner = subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
    try:
        # the lower of two runs: another job's burst can still land on one
        (beside, cb), _ = sorted([per_call("beside", 500), per_call("beside2", 500)], key=lambda x: x[0])
        fbeside = min(per_call("fbeside", 1000, fexe)[0], per_call("fbeside2", 1000, fexe)[0])
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
    # and tests/bench/bench_charged.py 21-28 ns over interleaved runs (65 ns for the build
    # before them, 1500-1700 ns when the CPU clock was a system call); the Fortran program 27-47 ns beside (300-380
    # before the Fortran bindings took the stamps)
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
    comp = max(c["return_comp_ns"] for _, c in switched)
    woken = min(c["woken_gaps"] for _, c in switched)
    print(f"rank 0 charged {a / 1e6:.3f} ms without switches, {b / 1e6:.3f} ms with its later calls switched out "
          f"(ratio {b / a:.3f}; {woken} of {cb['gaps']} gaps followed a switch; the return path's compensation "
          f"took off at most {comp / 1e3:.1f} us in a run; {len(plain)} rounds)")
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


def test_unlinked_program():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/burn.c"), os.path.join(WORK, "burn"))
    ldd = run(["ldd", exe]).stdout
    assert "mpisim" not in ldd, ldd
    p, rep = mpisim_run(2, [exe, "1000"], sets=["network.engine=analytic"])
    m = re.search(r"transfer_s=([0-9.eE+-]+)", p.stdout)
    assert m, p.stdout
    t = float(m.group(1))
    floor = 1048576 / 160e6
    print(f"1 MiB over a 1.28 Gb/s link took {t * 1e3:.4f} ms of virtual time (floor {floor * 1e3:.4f} ms)")
    if t < floor:
        sys.exit("FAILED: faster than the link allows")


def check_unmodelled_port(exe, what):
    """exe calls MPI_Open_port (not modelled): a stop naming it (exit 4); under passthrough, it runs
    untimed and counted, and the run ends with outcome untimed naming the calls, exit 6."""
    p, _ = mpisim_run(2, [exe], check=False)
    lines = [l for l in p.stderr.splitlines() if "MPI_Open_port" in l]
    if p.returncode != 4 or not lines:
        sys.exit(f"FAILED: expected a stop naming MPI_Open_port, exit 4 (got {p.returncode})\n{p.stderr}")
    print(f"{what} error line:", lines[0])
    p, rep = mpisim_run(2, [exe], sets=["unmodelled=passthrough"], check=False)
    assert "port=ok" in p.stdout, p.stdout
    n = sum(r["unmodelled"].get("MPI_Open_port", 0) + r["unmodelled"].get("MPI_Close_port", 0) for r in rep["ranks"])
    text = rep["summary"].get("outcome_text", "")
    if (n != 4 or p.returncode != 6 or rep["summary"]["outcome"] != "untimed" or "MPI_Open_port (2 calls)" not in text
            or "MPI_Close_port (2 calls)" not in text or "untimed" not in p.stderr):
        sys.exit(f"FAILED: passthrough: exit {p.returncode}, {n} untimed calls counted (expected 4), "
                 f"{rep['summary']}\n{p.stderr}")
    print(f"{what} passthrough: ran untimed and counted ({n}); exit 6, outcome untimed: {text}")


def test_unmodelled():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/unmodelled.c"), os.path.join(WORK, "unmodelled"))
    check_unmodelled_port(exe, "C")


def test_bad_profile():
    bad = os.path.join(WORK, "bad.ini")
    with open(bad, "w") as f:
        f.write("[network]\nlink_rate = 1.28 Gb/s\nlink_colour = blue\n")
    p = run([MPISIM, "run", "--profile", bad, "-n", "2", "--", "true"], check=False)
    if p.returncode == 0 or "bad.ini:3" not in p.stderr or "link_colour" not in p.stderr:
        sys.exit(f"FAILED: expected file:line and key\n{p.stderr}")
    print("malformed profile:", p.stderr.strip().splitlines()[0])


def test_wildcard_virtual_order():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/wildcard.c"), os.path.join(WORK, "wildcard"))
    p, _ = mpisim_run(3, [exe], compute="cpu")
    m = re.search(r"first=(\d+) second=(\d+)", p.stdout)
    assert m, p.stdout
    if m.group(1) != "2":
        sys.exit(f"FAILED: ANY_SOURCE matched rank {m.group(1)} first, virtual time says rank 2\n{p.stdout}")
    print("wildcard receive matched the virtual-time-first sender:", p.stdout.strip())


def test_wildcard_forms():
    """Wildcard receives (MPI_ANY_SOURCE, MPI_ANY_TAG, both) of every form (blocking,
    Irecv+Wait/Test loop/Waitany, Probe+Recv, Iprobe loop, Mprobe/Improbe+Mrecv/Imrecv, Sendrecv)
    at sizes on both sides of the shim's copy limit, Open MPI's eager limits and the model's 16 KiB
    threshold, up to 1 MiB; and receives held back behind an undecided wildcard. They used to hang
    at >= 16 KiB. A regression stops on the stall watchdog instead of hanging."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/wildcard_forms.c"), os.path.join(WORK, "wildcard_forms"))
    # polling loops cost one model round trip per poll: a coarser poll cost keeps 1 MiB short
    p, rep = mpisim_run(3, [exe], sets=("mpi.poll_cost=20us", "shim.stall_timeout=20s"), check=False)
    if p.returncode != 0 or "all ok" not in p.stdout or rep["summary"]["outcome"] != "ok":
        sys.exit(f"FAILED: rc={p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    sizes = [l.split(":")[0] for l in p.stdout.splitlines() if l.startswith("size")]
    print(f"every wildcard form right at {len(sizes)} sizes ({sizes[0]} .. {sizes[-1]})")


def test_stall_watchdog():
    """A run that waits inside the real MPI while nothing can move stops after
    shim.stall_timeout with exit 3, each rank's call, peer, tag and call site, report written;
    a rank that merely computes while another waits in the real MPI is no stall."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/stall.c"), os.path.join(WORK, "stall"))
    sets = ("shim.stall_timeout=2s", "shim.unmodelled=passthrough")
    want = {
        "grequest": ["rank 0 at", "MPI_Wait waits in the real MPI for a request mpisim does not time",
                     "rank 1 at", "MPI_Recv", "recv from rank 0 tag 4", "called from main+"],
        "unmatched": ["rank 0 at", "MPI_Finalize waits in the real MPI for its send to rank 1 tag 3",
                      "called from main+"],
        # one-sided communication is modelled: a fence that waits for a rank blocked in the model is a
        # deadlock in virtual time (the fence's barrier), found without the watchdog's timeout
        "fence": ["deadlock in virtual time", "rank 0 at", "MPI_Win_fence", "MPI_Barrier",
                  "rank 1 at", "recv from rank 0 tag 5"],
    }
    for case, needles in want.items():
        report = os.path.join(WORK, f"stall_{case}.json")
        p, rep = mpisim_run(2, [exe, case], sets=sets, report=report, check=False)
        text = rep["summary"].get("outcome_text", "") if rep else ""
        missing = [n for n in needles if n not in text]
        kind = "deadlock" if case == "fence" else "stall"
        if p.returncode != 3 or rep["summary"]["outcome"] != kind or missing or f"{kind}" not in p.stderr:
            sys.exit(f"FAILED ({case}): rc={p.returncode}, missing {missing}\n{text}\n{p.stderr[-2000:]}")
        print(f"{case}: exit 3, {text.splitlines()[1].strip()}")
    p, rep = mpisim_run(2, [exe, "late"], sets=sets, check=False)
    if p.returncode != 0 or rep["summary"]["outcome"] != "ok":
        sys.exit(f"FAILED: a rank computing 3 s beside a real wait was taken for a stall\n{p.stderr[-2000:]}")
    print("late: a receiver computing for 3 s (stall_timeout 2 s) is no stall: the run ends normally")


def test_deadlock():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/deadlock.c"), os.path.join(WORK, "deadlock"))
    p, rep = mpisim_run(2, [exe], check=False)
    if p.returncode != 3 or "deadlock" not in p.stderr or "MPI_Recv" not in p.stderr:
        sys.exit(f"FAILED: expected a deadlock report naming MPI_Recv\n{p.stderr}")
    # said once, by mpisim, last: no line per rank, no MPI_ABORT banner of Open MPI's after it
    if p.stderr.count("deadlock in virtual time") != 1 or "MPI_ABORT was invoked" in p.stderr or \
            not p.stderr.rstrip().splitlines()[-1].lstrip().startswith("rank "):
        sys.exit(f"FAILED: the deadlock should be said once, last, without Open MPI's abort banner\n{p.stderr}")
    print("deadlock report:", [l for l in p.stderr.splitlines() if "rank" in l][:3])


def test_args_and_exit_code():
    p, _ = mpisim_run(1, ["sh", "-c", 'printf "%s|" "$@"; exit 7', "sh", "a b", "--set", "-n"], check=False)
    if p.returncode != 7 or p.stdout != "a b|--set|-n|":
        sys.exit(f"FAILED: args or exit code not passed through: rc={p.returncode} out={p.stdout!r}")
    print("arguments after -- and the exit code reach the user untouched")


def test_killed_rank():
    """kill -9 of a rank blocked in MPI_Recv: it is "died"; a message later meant for it does not
    make it running (holding the horizon back for ever). With Open MPI's recovery on, the others
    go on and finalize; by default the launcher ends them: "stopped", naming the dead rank."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/kill_blocked.c"), os.path.join(WORK, "kill_blocked"))
    for extra, others in ((["--mpirun-arg", "--enable-recovery"], "finalized"), ([], "stopped")):
        # by default rank 0 lingers after the kill until the launcher ends the job
        p, rep = mpisim_run(3, [exe] + ([] if extra else ["linger"]), extra=extra, check=False)
        st = [r["status"] for r in rep["ranks"]]
        if p.returncode != 4 or st != [others, others, "died"] or "rank 2" not in rep["summary"]["outcome_text"]:
            sys.exit(f"FAILED ({' '.join(extra) or 'default'}): exit {p.returncode}, statuses {st}, "
                     f"{rep['summary']}\n{p.stderr}")
        if others == "stopped" and "after rank 2 died" not in rep["ranks"][0].get("error", ""):
            sys.exit(f"FAILED: the stopped ranks name the dead one: {rep['ranks'][0]}")
        print(f"{' '.join(extra) or 'default'}: statuses {st}, exit 4")


def terminate_after_barriers(exe, report, count):
    """mpisim run of slow_barriers, sent SIGTERM once its rank 0 has passed count barriers (0.1 s
    apart: by then each rank has sent its totals about once a second), whatever the start-up took
    on this host. Returns the process, its stdout and stderr, and the barriers rank 0 had passed."""
    import signal
    import threading
    p = subprocess.Popen([MPISIM, "run", "--report", report, "-n", "2", "--", exe],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines, errs, reached = [], [], threading.Event()

    def read_out():
        for line in p.stdout:
            lines.append(line)
            if line.startswith("barrier ") and int(line.split()[1]) >= count:
                reached.set()

    readers = [threading.Thread(target=read_out), threading.Thread(target=lambda: errs.extend(p.stderr))]
    for t in readers:
        t.start()
    ok = reached.wait(timeout=300)   # the start-up of a loaded machine: not the test's subject
    passed = len([l for l in lines if l.startswith("barrier ")])
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        remove_segments(p.pid)
        sys.exit("FAILED: mpisim did not end within 60 s of SIGTERM")
    for t in readers:
        t.join()
    if not ok:
        sys.exit(f"FAILED: rank 0 did not pass {count} barriers within 300 s\n{''.join(lines)}\n{''.join(errs)}")
    return p, "".join(lines), "".join(errs), passed


def test_terminated():
    """SIGTERM to mpisim run (a batch system's time limit) goes to the launcher: the ranks end, the
    report keeps what was recorded (the barriers so far), the exit code says the run did not
    finish, and no shared segment is left in /dev/shm."""
    import time
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/slow_barriers.c"), os.path.join(WORK, "slow_barriers"))
    report = os.path.join(WORK, "term.json")
    # what an mpisim killed with SIGKILL leaves: its segments go at the next run once its PID is
    # gone and they are older than any set-up; a live PID's or a young one's stay
    t = subprocess.Popen(["true"])
    t.wait()
    dead, old = t.pid, time.time() - 3600
    planted = {f"mpisim-{dead}-00c0ffee00c0ffee": False, f"mpisim-gate-{dead}x00c0ffee00c0ffee": False,
               f"mpisim-{os.getpid()}-00c0ffee00c0ffee": True, f"mpisim-{dead}-11c0ffee00c0ffee": True}
    for i, name in enumerate(planted):
        with open(os.path.join("/dev/shm", name), "w") as f:
            f.write("x")
        if i < 3:
            os.utime(os.path.join("/dev/shm", name), (old, old))
    before = set(f for f in os.listdir("/dev/shm") if f.startswith("mpisim-"))
    try:
        p, out, err, passed = terminate_after_barriers(exe, report, 30)
    finally:
        there = {name: os.path.exists(os.path.join("/dev/shm", name)) for name in planted}
        for name in planted:
            if there[name]:
                os.unlink(os.path.join("/dev/shm", name))
    # this run's (other runs may be starting beside the test)
    left = set(f for f in os.listdir("/dev/shm")
               if f.startswith((f"mpisim-{p.pid}-", f"mpisim-gate-{p.pid}x"))) - before
    rep = json.load(open(report)) if os.path.exists(report) else None
    # the model's view survives, and each rank's totals and call sites as of its last PROGRESS
    # (about once a second): a rank stopped before MPI_Finalize keeps them
    barriers = min(r["collectives"] for r in rep["ranks"]) if rep else 0
    if rep:
        sites = sum(c["calls"] for c in rep["callsites"] if c["call"] == "MPI_Barrier")
        asof = [r.get("totals_as_of_ps", 0) for r in rep["ranks"]]
        if any(r["calls"] < 10 or "charging" not in r for r in rep["ranks"]) or sites < 20 or min(asof) <= 0:
            sys.exit(f"FAILED: the stopped ranks' totals and call sites are not in the report: calls "
                     f"{[r['calls'] for r in rep['ranks']]}, barrier calls at sites {sites}, as of {asof}")
    if p.returncode == 0 or not rep or barriers < 2 or left:
        sys.exit(f"FAILED: exit {p.returncode}, report {'written' if rep else 'missing'}, {barriers} barriers "
                 f"recorded, segments left {sorted(left)}\n{err}")
    if "ended by SIGTERM" not in err:
        sys.exit(f"FAILED: the run does not say it was ended by SIGTERM\n{err}")
    if there != planted:
        sys.exit(f"FAILED: stale segments: expected present {planted}, found {there}")
    print(f"SIGTERM after barrier {passed}: exit {p.returncode}, report with {barriers} barriers per rank, the ranks' call sites and "
          f"charging as of their last progress ({[r['calls'] for r in rep['ranks']]} calls), no segment left")


def rank_pid(launcher_pid, rank):
    """The pid of a rank's process under the launcher (Open MPI's environment names its rank)."""
    import time
    for _ in range(200):
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                env = open(f"/proc/{d}/environ", "rb").read().split(b"\0")
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            ancestors, pid = set(), int(d)
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env and b"MPISIM_SERVER" in b" ".join(env):
                # below this test's mpisim (its launcher's child)
                p = pid
                for _ in range(8):
                    try:
                        p = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
                    except OSError:
                        break
                    ancestors.add(p)
                if launcher_pid in ancestors:
                    return pid
        time.sleep(0.1)
    sys.exit(f"FAILED: rank {rank}'s process not found under {launcher_pid}")


def test_stopped_rank():
    """A rank whose process is stopped (SIGSTOP) does not move and cannot say so:
    the stall watchdog finds it after shim.stall_timeout (exit 3, outcome stall, the rank named as
    stopped) and the run ends, the stopped rank with it. Stopped for less than that and continued,
    it is no stall. A SIGTERM to mpisim while a rank is stopped still ends the run promptly."""
    import signal
    import threading
    import time
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/slow_barriers.c"), os.path.join(WORK, "slow_barriers"))

    def start(report, timeout_s):
        p = subprocess.Popen([MPISIM, "run", "--report", report, "--set", f"shim.stall_timeout={timeout_s}",
                              "-n", "2", "--", exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        lines, errs, reached = [], [], threading.Event()

        def read_out():
            for line in p.stdout:
                lines.append(line)
                if line.startswith("barrier ") and int(line.split()[1]) >= 5:
                    reached.set()
        readers = [threading.Thread(target=read_out), threading.Thread(target=lambda: errs.extend(p.stderr))]
        for t in readers:
            t.start()
        if not reached.wait(timeout=300):
            os.killpg(p.pid, signal.SIGKILL)
            sys.exit(f"FAILED: rank 0 did not pass 5 barriers\n{''.join(errs)}")
        return p, lines, errs, readers

    def finish(p, readers, limit, what):
        try:
            p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            remove_segments(p.pid)
            sys.exit(f"FAILED: {what}: mpisim did not end within {limit} s")
        for t in readers:
            t.join()

    # stopped for good: found after the timeout (5 s of wall time stopped), the run ends
    report = os.path.join(WORK, "stopped.json")
    p, lines, errs, readers = start(report, "5s")
    pid = rank_pid(p.pid, 1)
    os.kill(pid, signal.SIGSTOP)
    t0 = time.monotonic()
    finish(p, readers, 120, "a rank stopped for good")
    took = time.monotonic() - t0
    rep = json.load(open(report))
    text = rep["summary"].get("outcome_text", "")
    gone = not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    if p.returncode != 3 or rep["summary"]["outcome"] != "stall" or "rank 1" not in text or \
            f"its process {pid} is stopped (state T" not in text or not gone or took < 5:
        sys.exit(f"FAILED: a rank stopped by SIGSTOP: exit {p.returncode} after {took:.0f} s, process gone {gone}\n"
                 f"{text}\n{''.join(errs)[-2000:]}")
    print(f"SIGSTOP of rank 1: exit 3 after {took:.1f} s, {[l.strip() for l in text.splitlines() if 'rank 1' in l][0]}")
    # stopped for 2 s, then continued: slow, not stuck (stall_timeout 5 s); the run ends normally
    report = os.path.join(WORK, "continued.json")
    p, lines, errs, readers = start(report, "5s")
    pid = rank_pid(p.pid, 1)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(2)
    os.kill(pid, signal.SIGCONT)
    os.killpg(p.pid, 0)   # still there
    # it has 600 barriers to go (a minute): end it as a batch system would, after some more
    n = len(lines)
    while len(lines) < n + 5 and p.poll() is None:
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    finish(p, readers, 120, "a rank stopped and continued")
    rep = json.load(open(report))
    if rep["summary"]["outcome"] == "stall" or len(lines) < n + 5:
        sys.exit(f"FAILED: a rank stopped for 2 s and continued was taken for a stall ({len(lines) - n} barriers "
                 f"after)\n{rep['summary']}")
    print(f"SIGSTOP for 2 s then SIGCONT (stall_timeout 5 s): no stall, {len(lines) - n} more barriers")
    # SIGTERM while a rank is stopped (watchdog far off): the stopped rank does not hold the end
    report = os.path.join(WORK, "term_stopped.json")
    p, lines, errs, readers = start(report, "600s")
    pid = rank_pid(p.pid, 1)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(1)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    finish(p, readers, 60, "SIGTERM while a rank is stopped")
    took = time.monotonic() - t0
    if p.returncode == 0 or "ended by SIGTERM" not in "".join(errs) or took > 30:
        sys.exit(f"FAILED: SIGTERM with rank 1 stopped: exit {p.returncode} after {took:.0f} s\n{''.join(errs)[-2000:]}")
    print(f"SIGTERM with rank 1 stopped: mpisim ended after {took:.1f} s (exit {p.returncode})")


def test_connect_timeout():
    """A rank that leaves before MPI_Init ends the run promptly, named; one that never reaches it
    (the others wait in MPI_Init for ever) is stopped after shim.connect_timeout, in a
    co-simulation and in a capture-only trace."""
    import time
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/exit_before_init.c"), os.path.join(WORK, "exit_before_init"))
    # after 2 s, and at once (gone before the server's once-a-second look at /proc could see it:
    # named by its own shim's word in the shared segment)
    for when in ("exit", "now"):
        t0 = time.time()
        p, rep = mpisim_run(3, [exe, when], check=False)   # the default shim.connect_timeout
        took = time.time() - t0
        if p.returncode != 4 or took > 90 or "rank 1 exited before MPI_Init" not in p.stderr:
            sys.exit(f"FAILED: leaving before MPI_Init ({when}): exit {p.returncode} after {took:.0f} s\n{p.stderr}")
        print(f"rank 1 left before MPI_Init ({when}): exit 4 after {took:.1f} s, named")
    for cmd in ("run", "trace"):
        t0 = time.time()
        args = [MPISIM, cmd, "--set", "shim.connect_timeout=10 s", "-n", "3", "--", exe, "hang"]
        args[2:2] = ["--report", os.path.join(WORK, "ct.json")] if cmd == "run" else \
            ["-o", os.path.join(WORK, "ct.h5"), "--replace-trace"]
        # 10 s of idle time: about 10 s of wall time on a quiet machine, more on a loaded one (the
        # waiting ranks wait for a CPU when they wake); never less
        p = run(args, check=False, timeout=150)
        took = time.time() - t0
        want = "never connected to the model server within 10 s" if cmd == "run" else "did not reach MPI_Init within 10 s"
        if p.returncode != 4 or took < 10 or took > 120 or want not in p.stderr:
            sys.exit(f"FAILED: mpisim {cmd} with a rank that never reaches MPI_Init: exit {p.returncode} after "
                     f"{took:.0f} s\n{p.stderr}")
        print(f"mpisim {cmd}: a rank that never reaches MPI_Init stops the run after {took:.1f} s (exit 4)")


def test_idle_connections():
    """400 idle connections to the model server (a local stranger's, reopened whenever the server
    drops them) do not slow a co-simulation by more than 2x, also when they exhaust the server's
    file descriptors (limit 256 here); the run's results are the same."""
    import resource
    import time
    prog = [os.path.join(BIN, "pingpong"), "--iters", "1000", "--only", "8"]
    launcher = os.path.join(SRC, "tests/shim/idle_launcher.py")

    def timed(attack):
        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        # both through the launcher (it waits 1 s for its connections), 0 or 400 of them
        # --listen: the run listens (by default, ranks on this host only attach to the shared segment)
        args = [MPISIM, "run", "--compute", "none", "--report", os.path.join(WORK, "idle.json"),
                "--listen", "127.0.0.1", "--mpirun", launcher, "-n", "2", "--"] + prog
        env = dict(os.environ, MPISIM_IDLE_CONNECTIONS="400" if attack else "0")
        t0 = time.time()
        p = run(args, check=False, env=env, preexec_fn=limit)
        took = time.time() - t0
        if p.returncode != 0:
            sys.exit(f"FAILED: {' '.join(args)} exited {p.returncode}\n{p.stderr[-3000:]}")
        rep = json.load(open(os.path.join(WORK, "idle.json")))
        return took, rep, p.stderr

    ratios = []
    for attempt in range(2):   # the machine is shared: a second pair before calling it slow
        base, rb, _ = timed(False)
        hit, ra, err = timed(True)
        if rb["summary"]["virtual_time_ps"] != ra["summary"]["virtual_time_ps"]:
            sys.exit("FAILED: idle connections changed the virtual result")
        ratios.append(hit / base)
        print(f"co-simulation {base:.2f} s alone, {hit:.2f} s beside 400 idle connections "
              f"(ratio {hit / base:.2f}; {ra['summary']['rejected_connections']} refused)")
        if hit / base <= 2.0:
            break
    if min(ratios) > 2.0:
        sys.exit(f"FAILED: idle connections slowed the run {min(ratios):.2f}x")
    if ra["summary"]["rejected_connections"] < 1:
        sys.exit("FAILED: the strangers were not refused")


def same_answers(exe, cases, args=(), ordered=True, outcome="ok", code=0, sets=()):
    """Run exe natively and under mpisim for each (ranks, compute) case; the answers (stdout,
    line order ignored unless ordered) must be the same and the run end with this outcome and exit
    code. Yields (ranks, native stdout, report, the mpisim process)."""
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    for n, compute in cases:
        native = run(["mpirun", *root, "--oversubscribe", "-n", str(n), exe, *args]).stdout
        p, rep = mpisim_run(n, [exe, *args], compute=compute, check=False, sets=sets)
        a, b = (native, p.stdout) if ordered else (sorted(native.splitlines()), sorted(p.stdout.splitlines()))
        if a != b or p.returncode != code or rep["summary"]["outcome"] != outcome:
            sys.exit(f"FAILED with {n} ranks: native and co-simulated answers differ, or exit {p.returncode} "
                     f"(expected {code}), outcome not {outcome}\n{native[:2000]}\n---\n"
                     f"{p.stdout[:2000]}\n{rep['summary']}\n{p.stderr[-3000:]}")
        yield n, native, rep, p


def test_coverage_same_answers():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/coverage.c"), os.path.join(WORK, "coverage"))
    for _ in same_answers(exe, ((2, "none"), (3, "cpu"), (4, "none"), (7, "cpu"))):
        pass
    print("send modes, persistent, probe, wait/test variants, all collectives (blocking and nonblocking), "
          "split/dup/cart: same answers natively and under mpisim with 2, 3, 4, 7 ranks")


def test_rank_crash():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/crash.c"), os.path.join(WORK, "crash"))
    p, rep = mpisim_run(3, [exe], check=False)
    if p.returncode == 0 or rep is None:
        sys.exit(f"FAILED: a crashed rank must fail the run and still write the report\n{p.stderr}")
    r1 = rep["ranks"][1]
    if rep["summary"]["outcome"] != "error" or "rank 1 ended without MPI_Finalize" not in rep["summary"]["outcome_text"]:
        sys.exit(f"FAILED: outcome should name the dead rank: {rep['summary']}")
    if r1["status"] != "died" or "crashed" not in r1.get("error", ""):
        sys.exit(f"FAILED: rank 1 {r1}")
    print("crash:", rep["summary"]["outcome_text"].splitlines()[0])


def test_fortran_pingpong():
    """mpif.h and mpi_f08 ping-pongs: Open MPI's Fortran bindings call PMPI_* directly, so only
    the shim's own Fortran entry points make them visible; timing must equal the C closed form."""
    checked = 0
    for name in ("fpingpong_h", "fpingpong_f08"):
        exe = mpifort(os.path.join(SRC, "tests/shim/progs", name + ".f90"), os.path.join(WORK, name))
        p, rep = mpisim_run(2, [exe], sets=["network.engine=analytic"])
        rows = re.findall(r"^(\d+),\s*([0-9.Ee+-]+)\s*$", p.stdout, re.M)
        if len(rows) != 5:
            sys.exit(f"FAILED: {name}: expected 5 sizes\n{p.stdout}\n{p.stderr}")
        for b, half in rows:
            got, want = round(float(half) * 1e12), closed_form_half_rtt(rep, int(b))
            if got != want:
                sys.exit(f"FAILED: {name} {b} B: half round trip {got} ps, closed form {want} ps")
            checked += 1
        calls = sum(r["calls"] for r in rep["ranks"])
        if calls < 2 * 5 * 7:
            sys.exit(f"FAILED: {name}: the report counts only {calls} MPI calls")
        # MPI_Wtime through the Fortran binding is attributed to the program, as the other calls
        wsites = [c["site"] for c in rep["callsites"] if c["call"] == "MPI_Wtime"]
        if not wsites or not all(w.startswith("MAIN__") for w in wsites):
            sys.exit(f"FAILED: {name}: MPI_Wtime's call sites {wsites} do not name the Fortran main program")
    print(f"Fortran ping-pong (mpif.h and mpi_f08): {checked} size/binding pairs equal the C closed form "
          "to the picosecond")


def test_fortran_coverage():
    exe = mpifort(os.path.join(SRC, "tests/shim/progs/fcoverage.f90"), os.path.join(WORK, "fcoverage"))
    for n, _, rep, _ in same_answers(exe, ((2, "none"), (3, "cpu"), (4, "none"))):
        if rep["summary"]["msgs_sent"] == 0:
            sys.exit(f"FAILED: nothing reached the model: {rep['summary']}")
        sites = {c["call"]: c["site"] for c in rep["callsites"]}
        for call in ("MPI_Waitany", "MPI_Alltoallw", "MPI_Cart_create", "MPI_Startall"):
            if not sites.get(call, "").startswith("MAIN__"):
                sys.exit(f"FAILED: {call} should be attributed to the Fortran main program, got {sites.get(call)}")
    print("Fortran (use mpi): handles, statuses, 1-based indices, MPI_IN_PLACE, STATUS(ES)_IGNORE, request "
          "arrays, persistent requests, alltoallw, split/cart: same answers natively and under mpisim with 2, 3, "
          "4 ranks; call sites name the Fortran program (" + sites["MPI_Waitany"] + ")")


def test_fortran_f08_coverage():
    """mpi_f08: collectives, split, tests and Iprobe (which Open MPI's f08 layer routes through
    pmpi_*_), Cartesian communicators: native answers, and every call reached the model."""
    exe = mpifort(os.path.join(SRC, "tests/shim/progs/fcoverage_f08.f90"), os.path.join(WORK, "fcoverage_f08"))
    for n, _, rep, _ in same_answers(exe, ((2, "cpu"), (3, "cpu")), ordered=False):
        calls = {c["call"] for c in rep["callsites"]}
        missing = {"MPI_Test", "MPI_Testany", "MPI_Iprobe", "MPI_Cart_create", "MPI_Alltoallv", "MPI_Wtime"} - calls
        if missing:
            sys.exit(f"FAILED: these mpi_f08 calls bypassed the shim: {sorted(missing)}")
    print("mpi_f08: same answers natively and under mpisim with 2 and 3 ranks; calls seen:", sorted(calls))


def test_fortran_unmodelled():
    """The Fortran binding of an unmodelled call stops the run, or forwards to Open MPI's own."""
    exe = mpifort(os.path.join(SRC, "tests/shim/progs/funmodelled.f90"), os.path.join(WORK, "funmodelled"))
    check_unmodelled_port(exe, "Fortran")


def test_cancel():
    """MPI_Cancel of receives: wildcard never matched, matched (fails), before the send (the next
    receive gets it), persistent, HPCC RandomAccess's closing cancel. Same answers natively."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/cancel.c"), os.path.join(WORK, "cancel"))
    for _, out, _, _ in same_answers(exe, ((2, "none"), (3, "cpu"), (4, "none")), ordered=False):
        native = sorted(out.splitlines())
    print("cancel: same outcomes natively and under mpisim with 2, 3, 4 ranks:", "; ".join(native[:5]))
    race = mpicc(os.path.join(SRC, "tests/shim/progs/cancel_race.c"), os.path.join(WORK, "cancel_race"))
    p, rep = mpisim_run(2, [race], compute="cpu", sets=["shim.cpu_factor=1000"])
    if "race: cancelled=1 value=909 source=1 tag=9" not in p.stdout:
        sys.exit(f"FAILED: a message the real MPI delivered to a receive the model cancelled must reach the next "
                 f"receive\n{p.stdout}\n{p.stderr}")
    print("cancel race:", p.stdout.strip())


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


def test_stall_rule_says():
    """The stall rule of "Repeatable small gaps" charges the floor for an isolated long interval
    between call sites that otherwise do nothing, taking it for a stall of the machine: real work
    there that comes rarely (rare_work: ~28 us every 100th iteration, 20 times) is dropped with it.
    Never silently: either the work is charged, or the report warns with what it dropped (13.6 %
    of the rank's virtual time here); shim.gap_noise_max = 0 charges it."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/rare_work.c"), os.path.join(WORK, "rare_work"))
    units = 40000
    _, ref = mpisim_run(2, [exe, "2000", "100", str(units)], compute="cpu", sets=["shim.gap_noise_max=0"],
                        report=os.path.join(WORK, "rare0.json"))
    c0 = ref["ranks"][0]["charging"]
    if c0["stall_gaps"]:
        sys.exit(f"FAILED: shim.gap_noise_max = 0 still took {c0['stall_gaps']} intervals for stalls")
    work = ref["ranks"][0]["compute_ps"] / 1e3
    _, r = mpisim_run(2, [exe, "2000", "100", str(units)], compute="cpu", report=os.path.join(WORK, "rare.json"))
    x = r["ranks"][0]
    c = x["charging"]
    warned = [w for w in r.get("measurement_warnings", []) if "taken for stalls of the machine" in w]
    charged = x["compute_ps"] / 1e3
    print(f"rare work: {work / 1e3:.0f} us charged with shim.gap_noise_max = 0; by default {charged / 1e3:.0f} us "
          f"charged, {c['stall_gaps']} intervals taken for stalls ({c['stall_dropped_ns'] / 1e3:.0f} us); "
          f"warned: {bool(warned)}")
    share = c["stall_dropped_ns"] * 1e3 / x["virtual_end_ps"]
    if share > 0.01 and not warned:
        sys.exit(f"FAILED: the stall rule dropped {100 * share:.1f} % of rank 0's virtual time without a warning")
    # the work is ~20 x 28 us: it is either charged or named as dropped (under load the pair may see
    # three long intervals in 256 and no longer look empty: then it is charged)
    if charged + c["stall_dropped_ns"] < 0.5 * work:
        sys.exit("FAILED: rank 0's rare work was neither charged nor reported as dropped")


def test_repeat_gaps():
    """Repeatable small gaps: IMB's Exchange at 0 B and Alltoall of 4 ranks at
    2 KiB, nothing between their MPI calls, give the same virtual times in all of RUNS runs but at most one
    under --compute cpu with a CPU-bound job beside them (each run's measurement noise differs: an
    empty interval charged as measured gave 10.55 / 8.93 / 10.54 us). Stalls of the machine of
    5-152 us in an empty interval (about one run in three, at load 3-14) are taken for noise up to
    20 x shim.gap_noise_max (80 x after a switched-out call), three per pair of call sites in 256
    intervals (before: charged; run for run at load 10-17 the exchange repeated in 3 of 12 runs,
    now 12 of 12; the test then ran until three of eight agreed). Still open at load 15: slow
    phases of the machine and a new pair's cold first interval (docs/architecture.md)."""
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
            # A stall of the machine past the rules (a slow phase of the whole machine, a new
            # pair's cold first interval: docs/architecture.md) still moves one run in about 50 at
            # load 4-5 (the suite beside this test; 1 of 8 of these tests failed on that, at
            # main 15f2e76): one run of six may differ, and the test says so. Charged as measured
            # (shim.gap_noise = 0) no two runs agree, and a rule that held one run in three
            # would leave two or more of six out
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


def test_threads_pingpong():
    """MPI_THREAD_MULTIPLE: it is granted, and two (four) threads per rank that
    ping-pong at once each see a latency within 20 % of the single-thread one: each thread has a
    clock of its own and the model blocks it alone (before, the program got SERIALIZED and quit)."""
    exe = os.path.join(BIN, "mt_pingpong")
    for compute in ("none", "cpu"):
        for t in (2, 4):
            p, rep = mpisim_run(2, [exe, "--threads", str(t), "--iters", "300"], compute=compute,
                                sets=["shim.cpu_factor=1"], report=os.path.join(WORK, f"mt{compute}{t}.json"))
            if "provided=MPI_THREAD_MULTIPLE" not in p.stdout or "check=ok" not in p.stdout:
                sys.exit(f"FAILED: {p.stdout}\n{p.stderr[-2000:]}")
            rows = [l.split(",") for l in p.stdout.splitlines() if re.match(r"^\d+,\d+,", l)]
            one = float(rows[0][3])
            per = [float(r[3]) for r in rows[1:]]
            th = rep["ranks"][0]["threads"]
            print(f"--compute {compute}, {t} threads: single-thread latency {one * 1e6:.3f} us, per thread "
                  f"{', '.join(f'{x * 1e6:.3f}' for x in per)} us; report threads {th}; outcome "
                  f"{rep['summary']['outcome']}")
            if len(per) != t or not all(0.8 <= x / one <= 1.2 for x in per):
                sys.exit("FAILED: each thread's latency should be within 20 % of the single-thread one")
            if th["level"] != "multiple" or th["mpi_threads"] != t + 1 or rep["summary"]["outcome"] != "ok":
                sys.exit(f"FAILED: the report should say level multiple and {t + 1} threads that called MPI")


def test_thread_levels():
    """Under MPI_THREAD_SINGLE, FUNNELED or SERIALIZED, MPI calls that two threads make at once
    are found and the run says so: outcome thread_level, exit 7, a measurement warning and the
    count per rank (before: outcome ok, no warning). The same program under MULTIPLE, and its
    threads taking turns under SERIALIZED, end ok."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/thread_calls.c"), os.path.join(WORK, "thread_calls"))
    run(["mpicc", "-O1", "-std=c11", "-pthread", "-o", exe, os.path.join(SRC, "tests/shim/progs/thread_calls.c")])
    for level, mode, code in (("single", "concurrent", 7), ("funneled", "concurrent", 7), ("serialized", "concurrent", 7),
                              ("multiple", "concurrent", 0), ("serialized", "turns", 0)):
        p, rep = mpisim_run(2, [exe, level, mode], check=False, report=os.path.join(WORK, f"tl{level}{mode}.json"))
        th = rep["ranks"][0]["threads"]
        oc = rep["summary"]["outcome"]
        warned = any("at the same time" in w for w in rep["measurement_warnings"])
        print(f"{level} {mode}: exit {p.returncode}, outcome {oc}, violations {th['violations']}, "
              f"threads {th['mpi_threads']}; {p.stdout.strip()}")
        if p.returncode != code or (oc == "thread_level") != (code == 7) or warned != (code == 7) or \
                (th["violations"] > 0) != (code == 7) or not re.search(r"latency0_ps=\d+ latency1_ps=\d+", p.stdout):
            sys.exit(f"FAILED: expected exit {code}\n{p.stdout}\n{p.stderr[-2000:]}")
        if code == 7 and "thread_level" not in p.stderr:
            sys.exit(f"FAILED: stderr should name the outcome\n{p.stderr[-2000:]}")


def omp_build(name, src, cc=None):
    """An OpenMP program built with mpicc -fopenmp (cc: the C compiler under mpicc, e.g. clang with
    LLVM's libomp); None if that compiler cannot build OpenMP here."""
    out = os.path.join(WORK, name)
    env = dict(os.environ, OMPI_CC=cc) if cc else None
    p = subprocess.run(["mpicc", "-O2", "-fopenmp", "-o", out, src], capture_output=True, text=True, env=env)
    return out if p.returncode == 0 else None


def test_omp_imbalance():
    """Hybrid MPI + OpenMP: an unbalanced omp parallel for (a worker thread does
    3x the others' work) is charged within 15 % of its longest thread's CPU time, with 2 and with
    4 threads, built with GCC's libgomp and with clang's LLVM libomp (before, the main thread's
    share alone: a third of it)."""
    src = os.path.join(SRC, "apps/omp_imbalance.c")
    builds = [("libgomp", os.path.join(BIN, "omp_imbalance"))]
    llvm = omp_build("omp_imbalance_llvm", src, "clang") if shutil.which("clang") else None
    if llvm:
        builds.append(("libomp", llvm))
    else:
        print("clang with OpenMP not found: LLVM libomp not tried")
    for lib, exe in builds:
        for t in (2, 4):
            p, rep = mpisim_run(2, [exe, "--threads", str(t), "--reps", "7"], compute="cpu", sets=["shim.cpu_factor=1"],
                                report=os.path.join(WORK, f"omp{lib}{t}.json"))
            rows = [[float(x) for x in l.split(",")] for l in p.stdout.splitlines() if re.match(r"^\d+,", l)]
            ratios = sorted(r[1] / r[2] for r in rows)
            share = sorted(r[1] / r[3] for r in rows)
            med = ratios[len(ratios) // 2]
            th = rep["ranks"][0]["threads"]
            print(f"{lib}, {t} threads: region / longest thread's CPU {med:.3f} (median of {len(ratios)}: "
                  f"{', '.join(f'{x:.3f}' for x in ratios)}); / sum {share[len(share) // 2]:.3f}; "
                  f"{th['omp_regions']} regions, critical path {th['critical_path_ps'] / 1e9:+.3f} ms")
            if not 0.85 <= med <= 1.15:
                sys.exit("FAILED: the region should be charged within 15 % of its longest thread's CPU time")
            if th["omp_regions"] < 7:
                sys.exit("FAILED: the regions were not seen")


def test_omp_regions():
    """OpenMP beyond a parallel loop: a nested region, an explicit barrier (the path through the
    latest arrival: 6 units where each thread computed 4), pthreads created and joined (their
    longest), each charged within 15 % of the critical path the program measures; threads that
    call MPI inside a region (MPI_THREAD_MULTIPLE) and then wait idle between regions do not hold
    virtual time back."""
    exe = omp_build("omp_regions", os.path.join(SRC, "tests/shim/progs/omp_regions.c"))
    if not exe:
        print("SKIPPED: mpicc -fopenmp does not build here")
        sys.exit(77)
    # the program measures its path with CLOCK_THREAD_CPUTIME_ID, which leaves out the time the
    # hypervisor takes (steal), the shim with the task clock, which does not: a loaded machine's
    # steal only inflates ours, so each case keeps its best of up to three runs
    for n in (2, 3):
        best = {}
        for k in range(3):
            p, rep = mpisim_run(n, [exe, "1000000"], compute="cpu", sets=["shim.cpu_factor=1"],
                                report=os.path.join(WORK, f"omr{n}.json"))
            got = {m.group(1): (float(m.group(2)), float(m.group(3)))
                   for m in re.finditer(r"^(\w+) region_s=([0-9.]+) path_s=([0-9.]+)", p.stdout, re.M)}
            print(f"{n} ranks, run {k + 1}: " + "; ".join(f"{c} {v[0] * 1e3:.3f} ms for a path of {v[1] * 1e3:.3f} ms"
                                                        for c, v in got.items()) + f"; outcome {rep['summary']['outcome']}")
            if "ok=1" not in p.stdout or rep["summary"]["outcome"] != "ok":
                sys.exit(f"FAILED: MPI calls inside a region\n{p.stdout}\n{p.stderr[-2000:]}")
            for c in ("nested", "barrier", "pthread"):
                if c in got:
                    r = got[c][0] / got[c][1]
                    best[c] = r if c not in best or abs(r - 1) < abs(best[c] - 1) else best[c]
            if all(c in best and 0.85 <= best[c] <= 1.15 for c in ("nested", "barrier", "pthread")):
                break
        for c in ("nested", "barrier", "pthread"):
            if c not in best or not 0.85 <= best[c] <= 1.15:
                sys.exit(f"FAILED: {c}: should be charged within 15 % of its critical path (best {best.get(c)})")


def test_mpiio():
    """MPI-IO runs untimed and counted (the model has no file system), with native answers; the
    run ends with outcome untimed (exit 6), the calls named."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/mpiio.c"), os.path.join(WORK, "mpiio"))
    data = os.path.join(WORK, "io.dat")
    for _, _, rep, p in same_answers(exe, ((3, "cpu"),), args=(data,), ordered=False, outcome="untimed", code=6):
        pass
    text = rep["summary"]["outcome_text"]
    if "MPI_File_open (6 calls)" not in text or "MPI_File_write_at_all (3 calls)" not in text:
        sys.exit(f"FAILED: the outcome does not name the untimed calls: {text}")
    counts = rep["ranks"][1]["unmodelled"]
    if counts != {"MPI_File_open": 2, "MPI_File_write_at_all": 1, "MPI_File_close": 2, "MPI_File_read_at": 1}:
        sys.exit(f"FAILED: file calls counted as {counts}")
    if "file I/O" not in p.stderr:
        sys.exit(f"FAILED: no note that file I/O is untimed\n{p.stderr}")
    print("MPI-IO: same answers natively and under mpisim; untimed calls counted per rank:", counts)


def test_neighbor():
    """MPI-3 neighbourhood collectives (5 variants, blocking and nonblocking, on Cartesian, graph
    and distributed-graph topologies) are modelled, with native answers."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/neighbor.c"), os.path.join(WORK, "neighbor"))
    for n, _, rep, _ in same_answers(exe, ((3, "none"), (4, "cpu"), (6, "none")), ordered=False):
        unm = {k: v for x in rep["ranks"] for k, v in x["unmodelled"].items()}
        calls = {c["call"] for c in rep["callsites"] if "eighbor" in c["call"]}
        if unm or len(calls) != 10 or rep["summary"]["msgs_sent"] == 0:
            sys.exit(f"FAILED: unmodelled {unm}, neighbourhood calls seen {sorted(calls)}, {rep['summary']}")
    print(f"neighbourhood collectives: same answers natively and under mpisim with 3, 4, 6 ranks; "
          f"{rep['summary']['msgs_sent']} modelled messages with 6 ranks")


def test_create_group():
    """MPI_Comm_create_group is modelled: members only, repeated, beside whole-parent creations."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/create_group.c"), os.path.join(WORK, "create_group"))
    for n, _, rep, _ in same_answers(exe, ((3, "none"), (4, "cpu"), (5, "none")), ordered=False):
        if sum(c["calls"] for c in rep["callsites"] if c["call"] == "MPI_Comm_create_group") != 2 * ((n + 1) // 2):
            sys.exit(f"FAILED: MPI_Comm_create_group calls not all seen: {rep['callsites']}")
    print("MPI_Comm_create_group: same answers natively and under mpisim with 3, 4, 5 ranks")


# ---- one-sided communication, intercommunicators, empty collectives, outcomes ---------------------

def rma_table(stdout):
    """apps/rma's CSV as {(op, sync, mode, bytes): (time_s, MBps)} and its p2p latency."""
    rows, p2p = {}, None
    for line in stdout.splitlines():
        if line.startswith("# p2p_latency_8B="):
            p2p = float(line.split("=")[1])
        f = line.split(",")
        if len(f) == 6 and f[0] != "op" and not line.startswith("#"):
            rows[(f[0], f[1], f[2], int(f[3]))] = (float(f[4]), float(f[5]))
    return rows, p2p


def test_rma_physical():
    """apps/rma under mpisim on the default profile: one-sided operations are RDMA transfers on the
    network, so a put's latency at 8 B (put + flush, as osu_put_latency measures it) is within 20 %
    of the profile's one-way latency (the same run's 8-byte ping-pong), and a 4 MiB put streams at
    80-100 % of the link's rate under every synchronisation; the synchronisations cost what their
    messages do (lock/unlock: three round trips; fence: a barrier; PSCW: the post and done
    notices); the data are right (check=ok), nothing runs untimed."""
    exe = os.path.join(BIN, "rma")
    # MPI_Compare_and_swap crashes natively with Open MPI 4.1's osc/rdma over vader: left to the
    # osc/pt2pt test below
    args = [exe, "--op", "put,get,acc,fop", "--sizes", "8,64k,4M", "--iters", "3"]
    p, rep = mpisim_run(2, args)
    rows, p2p = rma_table(p.stdout)
    link = float(cfg_value(rep, "network.link_rate")) / 8 / 1e6   # MB/s
    if "# check=ok" not in p.stdout or rep["summary"]["outcome"] != "ok" or any(r["unmodelled"] for r in rep["ranks"]):
        sys.exit(f"FAILED: {rep['summary']}\n{p.stdout}")
    problems = []
    put = rows[("put", "flush", "latency", 8)][0]
    print(f"put latency at 8 B {put * 1e6:.3f} us, one-way latency {p2p * 1e6:.3f} us ({put / p2p:.3f}x)")
    if not 0.8 <= put / p2p <= 1.2:
        problems.append(f"put latency {put} against one-way {p2p}")
    for op in ("put", "get", "acc"):
        lat = rows[(op, "flush", "latency", 8)][0]
        if not 0.8 <= lat / p2p <= 1.2:
            problems.append(f"{op} latency {lat} against one-way {p2p}")
        for sync in ("flush", "lock", "fence", "pscw"):
            bw = rows[(op, sync, "bandwidth", 4 << 20)][1]
            print(f"{op:4} {sync:5} bandwidth at 4 MiB {bw:8.2f} MB/s = {bw / link * 100:5.1f} % of the link")
            if not 0.8 * link <= bw <= link:
                problems.append(f"{op}/{sync} bandwidth {bw} MB/s, link {link} MB/s")
    # the synchronisations' own messages, as multiples of the one-way latency
    for sync, lo, hi in (("lock", 2.5, 4.0), ("fence", 1.5, 3.0), ("pscw", 1.5, 3.5)):
        t = rows[("put", sync, "latency", 8)][0]
        print(f"put under {sync}: {t * 1e6:.3f} us = {t / p2p:.2f} one-way latencies")
        if not lo <= t / p2p <= hi:
            problems.append(f"put/{sync} latency {t / p2p:.2f} one-way latencies, expected {lo}..{hi}")
    fop = rows[("fop", "flush", "latency", 8)][0]
    if not 0.8 <= fop / p2p <= 1.3:
        problems.append(f"fetch-and-op latency {fop} against one-way {p2p}")
    # seed 003's E-card, a NIC with costs of its own (LANai work per packet, DMA setups): the put's
    # acknowledgement is the target NIC's own per-packet one (GM's reliable delivery), which adds
    # its wire time and the completion's DMA into the origin's memory, not a second message's NIC
    # work (before: 1.86 x the one-way latency). A get is a request and the data back: a round trip
    # through both NICs' processors, checked as such.
    e, erep = mpisim_run(2, [exe, "--op", "put,get,acc", "--sync", "flush", "--sizes", "8,4M", "--iters", "3"],
                         profile="seed003-ecard", report=os.path.join(WORK, "rma003.json"))
    erows, ep2p = rma_table(e.stdout)
    elink = float(cfg_value(erep, "network.link_rate")) / 8 / 1e6 * int(cfg_value(erep, "host.ports"))
    if "# check=ok" not in e.stdout or erep["summary"]["outcome"] != "ok":
        problems.append(f"seed003-ecard: {erep['summary']}")
    for op in ("put", "acc"):
        lat = erows[(op, "flush", "latency", 8)][0]
        print(f"seed003-ecard: {op} latency at 8 B {lat * 1e6:.3f} us, one-way {ep2p * 1e6:.3f} us ({lat / ep2p:.3f}x)")
        if not 0.8 <= lat / ep2p <= 1.2:
            problems.append(f"seed003-ecard: {op} latency {lat} against one-way {ep2p}")
    get = erows[("get", "flush", "latency", 8)][0]
    print(f"seed003-ecard: get latency at 8 B {get * 1e6:.3f} us ({get / ep2p:.3f}x one-way: a round trip)")
    if not 1.6 <= get / ep2p <= 2.0:
        problems.append(f"seed003-ecard: get latency {get}, a round trip of one-way {ep2p}")
    bw = erows[("put", "flush", "bandwidth", 4 << 20)][1]
    print(f"seed003-ecard: put bandwidth at 4 MiB {bw:.1f} MB/s = {bw / elink * 100:.1f} % of both ports' {elink:.0f} MB/s")
    if not 0.8 * elink <= bw <= elink:
        problems.append(f"seed003-ecard: put bandwidth {bw} MB/s, ports {elink} MB/s")
    if problems:
        sys.exit("FAILED: " + "; ".join(problems) + f"\n{p.stdout}")


def test_rma_real_osc():
    """The virtual times do not depend on the real MPI's one-sided implementation: osc/pt2pt
    (active messages: the target's progress moves the data, so the shim's real calls must never
    wait on a rank the model holds) gives the same table as the default osc/rdma, and its
    compare-and-swap runs too."""
    exe = os.path.join(BIN, "rma")
    base = [exe, "--sizes", "8,16k", "--iters", "2", "--window", "4"]
    pt2pt = ["--mpirun-arg", "--mca", "--mpirun-arg", "osc", "--mpirun-arg", "pt2pt"]
    a, _ = mpisim_run(2, base + ["--op", "put,get,acc,fop"])
    b, rep = mpisim_run(2, base, extra=pt2pt)
    ta, _ = rma_table(a.stdout)
    tb, _ = rma_table(b.stdout)
    if "# check=ok" not in b.stdout or rep["summary"]["outcome"] != "ok":
        sys.exit(f"FAILED: osc/pt2pt: {rep['summary']}\n{b.stdout}\n{b.stderr[-2000:]}")
    diff = {k: (ta[k], tb[k]) for k in ta if ta[k] != tb.get(k)}
    if diff or not any(k[0] == "cas" for k in tb):
        sys.exit(f"FAILED: osc/rdma and osc/pt2pt differ: {diff}")
    print(f"osc/rdma and osc/pt2pt: {len(ta)} identical measurements; compare-and-swap under pt2pt:",
          tb[("cas", "flush", "latency", 8)])


def test_rma_locks():
    """Exclusive locks contended by every rank (a counter incremented under the lock): the model
    grants them in virtual time, the real MPI takes them after it, and the two never wait on each
    other (osc/rdma's atomics and osc/pt2pt's active messages); the counter is right, the times the
    same in two runs and with either implementation, and the increments serialised (the run takes
    at least one lock round trip per increment)."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/lock_counter.c"), os.path.join(WORK, "lock_counter"))
    pt2pt = ["--mpirun-arg", "--mca", "--mpirun-arg", "osc", "--mpirun-arg", "pt2pt"]
    ends = []
    for extra, compute in (([], "none"), ([], "none"), (pt2pt, "none"), ([], "cpu"), (pt2pt, "cpu")):
        p, rep = mpisim_run(4, [exe, "10"], compute=compute, extra=extra)
        if "counter=40 expected=40 check=ok" not in p.stdout or rep["summary"]["outcome"] != "ok":
            sys.exit(f"FAILED ({compute}, {'pt2pt' if extra else 'rdma'}): {p.stdout} {rep['summary']}")
        if compute == "none":
            ends.append(rep["summary"]["virtual_time_ps"])
    # per increment at least: the lock's round trip, the get's, the put's and the unlock's (~1 us each)
    if len(set(ends)) != 1 or ends[0] < 40 * 3 * 10**6:
        sys.exit(f"FAILED: virtual times {ends} (expected equal, at least {40 * 3} us)")
    print(f"40 increments under contended exclusive locks: check=ok, {ends[0] / 1e6:.3f} us in every run "
          f"(osc/rdma and osc/pt2pt alike)")


def test_rma_shared():
    """An MPI-3 shared-memory window (MPI_Win_allocate_shared, MPI_Win_shared_query, MPI_Win_sync):
    the program's loads and stores are its computation; a put between fences is an operation of
    the host model's node (host.ranks_per_node = 4: the origin's copy) or of the network (one rank
    per node); native answers either way, every call timed."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/shared_win.c"), os.path.join(WORK, "shared_win"))
    for sets in (["host.ranks_per_node=4"], []):
        for n, _, rep, _ in same_answers(exe, ((3, "cpu"), (2, "none")), sets=sets):
            unm = {k for x in rep["ranks"] for k in x["unmodelled"]}
            if unm or not any(c["call"] == "MPI_Win_allocate_shared" for c in rep["callsites"]):
                sys.exit(f"FAILED: {unm}, {[c['call'] for c in rep['callsites']]}")
    print("shared-memory window: same answers natively and under mpisim, on one modelled node and on several")


def test_rma_replay():
    """A one-sided run under --compute cpu, captured, replays to the same virtual times (every
    recorded resume the same); replayed with the target's CPU doing the operations
    (host.rma_progress = in_call) it takes longer, with the same messages."""
    exe = os.path.join(BIN, "rma")
    trace = os.path.join(WORK, "rma.h5")
    p, rep = mpisim_run(2, [exe, "--op", "put,get,fop", "--sizes", "8,64k", "--iters", "2"], compute="cpu",
                        extra=["--trace", trace])
    r = run([MPISIM, "replay", trace, "--report", os.path.join(WORK, "replay.json")], check=True)
    with open(os.path.join(WORK, "replay.json")) as f:
        rp = json.load(f)
    on = [x["virtual_end_ps"] for x in rep["ranks"]]
    off = [x["virtual_end_ps"] for x in rp["ranks"]]
    if on != off or " 0 of " not in r.stderr:
        sys.exit(f"FAILED: replay {off} against the run {on}\n{r.stderr}")
    r2 = run([MPISIM, "replay", trace, "--set", "host.rma_progress=in_call", "--report",
              os.path.join(WORK, "incall.json")], check=True)
    with open(os.path.join(WORK, "incall.json")) as f:
        ic = json.load(f)
    if not ic["summary"]["virtual_time_ps"] > rp["summary"]["virtual_time_ps"] or ic["summary"]["outcome"] != "ok":
        sys.exit(f"FAILED: in_call {ic['summary']} against nic {rp['summary']}")
    print(f"replay == run ({on}); with the target's CPU doing them: {ic['summary']['virtual_time_ps']} ps "
          f"against {rp['summary']['virtual_time_ps']} ps")


def test_rma_fortran():
    """One-sided calls from Fortran (use mpi): the shim's Fortran bindings time them (fence, PSCW,
    lock/unlock, lock_all/flush, put, get, accumulate, fetch-and-op) with native answers."""
    exe = mpifort(os.path.join(SRC, "tests/shim/progs/frma.f90"), os.path.join(WORK, "frma"))
    for n, _, rep, _ in same_answers(exe, ((2, "none"), (3, "cpu"))):
        calls = {c["call"] for c in rep["callsites"]}
        want = {"MPI_Put", "MPI_Get", "MPI_Accumulate", "MPI_Fetch_and_op", "MPI_Win_fence", "MPI_Win_lock",
                "MPI_Win_unlock", "MPI_Win_lock_all", "MPI_Win_flush", "MPI_Win_post", "MPI_Win_start",
                "MPI_Win_complete", "MPI_Win_wait", "MPI_Win_create", "MPI_Win_free"}
        unm = {k for x in rep["ranks"] for k in x["unmodelled"]}
        if not want <= calls or unm:
            sys.exit(f"FAILED: Fortran one-sided calls not all modelled: missing {want - calls}, untimed {unm}")
    print("Fortran one-sided calls: same answers natively and under mpisim with 2 and 3 ranks, every call timed")


def test_intercomm():
    """apps/intercomm: point-to-point and collectives over an intercommunicator (and over its merge)
    give native answers; a ping-pong over it costs exactly what the same over MPI_COMM_WORLD costs."""
    exe = os.path.join(BIN, "intercomm")
    # --compute none: the ping-pongs' equality is exact (the loops around them compute alike, but
    # under cpu their measured CPU time is not the same twice); cpu: the answers
    for n, extra, compute in ((2, [], "none"), (3, ["--interleave"], "none"), (5, [], "none"), (4, [], "cpu")):
        p, rep = mpisim_run(n, [exe, "--iters", "2", "--sizes", "8,4k,64k", *extra], compute=compute)
        if "# check=ok" not in p.stdout or rep["summary"]["outcome"] != "ok" or any(r["unmodelled"] for r in rep["ranks"]):
            sys.exit(f"FAILED with {n} ranks: {rep['summary']}\n{p.stdout}\n{p.stderr[-2000:]}")
        t = {}
        for line in p.stdout.splitlines():
            f = line.split(",")
            if len(f) == 3 and f[0].startswith("pingpong"):
                t[(f[0], f[1])] = f[2]
        for size in ("8", "4096", "65536"):
            a, b = float(t[("pingpong_inter", size)]), float(t[("pingpong_world", size)])
            # with more than the two leaders the others' barrier messages meet theirs on the network
            # at other moments in the two passes: equal within 0.1 % then, exactly equal otherwise
            if compute == "none" and (a != b if n <= 3 else abs(a - b) > 1e-3 * b):
                sys.exit(f"FAILED with {n} ranks: ping-pong at {size} B over the intercommunicator "
                         f"{t[('pingpong_inter', size)]} s, over the world {t[('pingpong_world', size)]} s")
        calls = {c["call"] for c in rep["callsites"]}
        if not {"MPI_Intercomm_create", "MPI_Intercomm_merge", "MPI_Alltoallv"} <= calls:
            sys.exit(f"FAILED: calls seen {sorted(calls)}")
        print(f"{n} ranks{' interleaved' if extra else ''}: check=ok, ping-pong over the intercommunicator "
              f"= over the world ({t[('pingpong_inter', '8')]} s at 8 B)")


def test_empty_collectives():
    """Count-0 (and zero-size datatype) collectives cost what MPICH's algorithms do for count 0:
    nothing but the call (< 0.5 us of virtual time inside each), and no message at all."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/empty_coll.c"), os.path.join(WORK, "empty_coll"))
    for n, compute in ((4, "cpu"), (3, "none")):
        p, rep = mpisim_run(n, [exe], compute=compute)
        worst = {}
        for c in rep["callsites"]:
            worst[c["call"]] = max(worst.get(c["call"], 0), c["time_ps"] / max(c["calls"], 1))
        bad = {k: v for k, v in worst.items() if v >= 500000}
        if bad or rep["summary"]["msgs_sent"] != 0 or len(worst) < 10:
            sys.exit(f"FAILED with {n} ranks: {bad}, {rep['summary']['msgs_sent']} messages\n{worst}")
        print(f"{n} ranks ({compute}): every empty collective took {max(worst.values()) / 1e6:.3f} us at most, "
              f"0 messages")


def test_exit_causes():
    """The cause of a rank's end is named right: a rank that returns EXIT_FAILURE on its own after
    MPI_Init (no MPI_Finalize) is reported with its exit code, not as crashed or killed (exit 4);
    a program that exits 7 after MPI_Finalize gets its own code, and mpisim says so (not the MPI
    library's shutdown)."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/exit_alone.c"), os.path.join(WORK, "exit_alone"))
    p, rep = mpisim_run(2, [exe], check=False)
    text = rep["summary"].get("outcome_text", "")
    r1 = rep["ranks"][1]
    if (p.returncode != 4 or "rank 1 exited with code 1" not in text or "crashed" in text
            or "exited with code 1" not in r1.get("error", "")):
        sys.exit(f"FAILED: exit {p.returncode}, {rep['summary']}, rank 1 {r1}")
    print("a rank that returns EXIT_FAILURE:", text.splitlines()[0])
    exe2 = mpicc(os.path.join(SRC, "tests/shim/progs/exit_code.c"), os.path.join(WORK, "exit_code"))
    p, rep = mpisim_run(2, [exe2, "7"], check=False)
    if (p.returncode != 7 or rep["summary"]["outcome"] != "ok" or "program's own" not in p.stderr
            or "shutdown" in p.stderr or "program's own" not in rep["launcher"].get("note", "")):
        sys.exit(f"FAILED: exit {p.returncode}, {rep['summary']}, {rep.get('launcher')}\n{p.stderr}")
    print("exit 7 after MPI_Finalize:", [l for l in p.stderr.splitlines() if "own" in l][0])


def test_untimed_outcome():
    """Untimed calls (MPI-IO) end a run with outcome untimed and exit 6, named in the report and in
    `mpisim report`; replaying its trace and sweeping over it say the same (exit 6)."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/mpiio.c"), os.path.join(WORK, "mpiio"))
    trace, report = os.path.join(WORK, "io.h5"), os.path.join(WORK, "io.json")
    p, rep = mpisim_run(2, [exe, os.path.join(WORK, "io.dat")], report=report, extra=["--trace", trace], check=False)
    if p.returncode != 6 or rep["summary"]["outcome"] != "untimed" or "MPI_File_open" not in rep["summary"]["outcome_text"]:
        sys.exit(f"FAILED: run: exit {p.returncode}, {rep['summary']}")
    txt = run([MPISIM, "report", report]).stdout
    if "Outcome        : untimed" not in txt or "MPI_File_write_at_all" not in txt:
        sys.exit(f"FAILED: mpisim report does not say untimed or name the calls:\n{txt[:1500]}")
    r = run([MPISIM, "replay", trace, "--report", os.path.join(WORK, "r.json")], check=False)
    with open(os.path.join(WORK, "r.json")) as f:
        rr = json.load(f)
    if r.returncode != 6 or rr["summary"]["outcome"] != "untimed" or "MPI_File_open" not in rr["summary"]["outcome_text"]:
        sys.exit(f"FAILED: replay: exit {r.returncode}, {rr['summary']}\n{r.stderr}")
    out = os.path.join(WORK, "s.csv")
    sw = run([MPISIM, "sweep", trace, "--vary", "network.link_rate=640Mb/s,1.28Gb/s", "--out", out], check=False)
    with open(out) as f:
        table = f.read()
    if sw.returncode != 6 or table.count(",untimed,") != 2:
        sys.exit(f"FAILED: sweep: exit {sw.returncode}\n{table}\n{sw.stderr}")
    print("untimed: run, replay and sweep exit 6;", rep["summary"]["outcome_text"])


TESTS = {k[5:]: v for k, v in globals().items() if k.startswith("test_")}
if NAME not in TESTS:
    sys.exit(f"unknown test {NAME}; known: {', '.join(TESTS)}")
TESTS[NAME]()

