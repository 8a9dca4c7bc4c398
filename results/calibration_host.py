#!/usr/bin/python3
"""Calibrate this machine with `mpisim calibrate`, then predict held-out programs with the profile.

1. Two calibrations in a row, the second with a CPU-bound job beside it (one busy loop per
   core): their parameters are compared (the model's ping-pong at reference sizes, the protocol
   switch, the latency, the poll and reduction costs).
2. Held-out programs (none of them is used by the calibration: it runs calibench only), each run
   natively (mpirun, two ranks, one per core; the time the program itself prints, wall clock) and
   under `mpisim run --profile <the first calibration> --cpu-factor 1` (the same print, virtual
   time: computation charged as the CPU time it took here, communication as the profile says),
   several times each, interleaved, the median counting. The load average is recorded around
   every run. The whole set runs twice: alone, then beside a CPU-bound job (one busy loop per
   core): the predictions must not move, the native times may.

Outputs go to --out (default build/calibration_host): host.ini, host2.ini, their CSV and plots,
runs.csv, and the table calibration_host.md (copy it over results/calibration_host.md with --update).

    /usr/bin/python3 results/calibration_host.py [--build build] [--out DIR] [--runs 5] [--update]
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (name, pattern, program and arguments, how to read its time)
HELD_OUT = [
    ("stencil 2D 256x256, 100 iterations", "halo exchange + compute",
     ["stencil", "--grid", "256", "--iters", "100", "--no-times"], "stencil"),
    ("stencil 2D 1024x1024, 20 iterations", "halo exchange + compute (8 KiB halos)",
     ["stencil", "--grid", "1024", "--iters", "20", "--no-times"], "stencil"),
    ("allreduce 64 B", "collectives-heavy (latency)",
     ["collectives", "--ops", "allreduce", "--sizes", "64", "--iters", "2000"], "coll"),
    ("allreduce 256 KiB", "collectives-heavy (reduction, bandwidth)",
     ["collectives", "--ops", "allreduce", "--sizes", "262144", "--iters", "50"], "coll"),
    ("bcast 64 KiB", "collectives-heavy",
     ["collectives", "--ops", "bcast", "--sizes", "65536", "--iters", "200"], "coll"),
    ("alltoall 1 KiB", "all-to-all",
     ["collectives", "--ops", "alltoall", "--sizes", "1024", "--iters", "1000"], "coll"),
    ("alltoall 512 KiB", "all-to-all",
     ["collectives", "--ops", "alltoall", "--sizes", "524288", "--iters", "20"], "coll"),
    ("matmul N=160", "matmul (compute, scatter, bcast)", ["matmul", "160", "--repeat", "3"], "matmul"),
    ("matmul N=320", "matmul (compute, scatter, bcast)", ["matmul", "320", "--repeat", "2"], "matmul"),
    ("token ring 1 B, 2000 rounds", "latency-bound token ring",
     ["tokenring", "--sizes", "1", "--rounds", "2000"], "ring"),
    ("token ring 32 KiB, 300 rounds", "token ring (rendezvous)",
     ["tokenring", "--sizes", "32768", "--rounds", "300"], "ring"),
]


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wait_for_load(limit, max_wait):
    """Wait (at most max_wait seconds) for the 1-minute load average to fall below limit: the
    native times of a machine shared with others are only the machine's when it is quiet."""
    t0 = time.time()
    while loadavg() > limit and time.time() - t0 < max_wait:
        time.sleep(5)
    return loadavg()


def parse_time(kind, out):
    """The time the program itself prints, in seconds."""
    if kind == "matmul":
        m = re.search(r"time_min_s=([0-9.eE+-]+)", out) or re.search(r"time_s=([0-9.eE+-]+)", out)
        return float(m.group(1))
    if kind == "stencil":
        return float(re.search(r"# time_s=([0-9.eE+-]+)", out).group(1))
    rows = [l for l in out.splitlines() if l and not l.startswith("#")]
    header = rows[0].split(",")
    vals = rows[1].split(",")
    if kind == "coll":
        t = float(vals[header.index("time_s")])
        iters = float(vals[header.index("iters")])
        return t * iters   # the whole loop: per-call times are tiny
    if kind == "ring":
        return float(vals[header.index("total_s")])
    raise ValueError(kind)


def mpirun_base():
    base = ["mpirun", "--oversubscribe", "--bind-to", "core", "-n", "2"]
    if os.geteuid() == 0:
        base.insert(1, "--allow-run-as-root")
    return base


def run(cmd, timeout=600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p.stdout, p.stderr


def busy_jobs(n):
    """One CPU-bound process per core (a busy loop), as the study's 'job beside it'."""
    code = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def calibrate(bindir, out_ini, log):
    t0 = time.time()
    l0 = loadavg()
    _, err = run([os.path.join(bindir, "mpisim"), "calibrate", "--out", out_ini], timeout=900)
    with open(log, "w") as f:
        f.write(err)
    return time.time() - t0, l0, loadavg(), err


def probe(bindir):
    """The machine's speed now, measured as the calibration measures it: calibench's multiply-add
    time on each core and its zero-byte ping-pong (natively, the medians of their samples; half a
    second). A shared virtual machine's cores change speed from minute to minute (seen here: 2x):
    both a native run and the CPU time a run under the model is charged
    follow it, the calibrated latencies do not. Taken before each pair of runs, it says how far the
    machine had moved from the one that was calibrated."""
    o, _ = run(mpirun_base() + [os.path.join(bindir, "calibench"), "--tests", "compute,pingpong",
                                "--modes", "send", "--sizes", "0"])
    got = {}
    for line in o.splitlines():
        f = line.split(",")
        if len(f) >= 7 and f[0] in ("compute", "pingpong"):
            got[f[0]] = statistics.median(float(v) for v in f[6].split())
    return got["pingpong"], got["compute"]


def profile_figures(ini, csv_path):
    """What two calibrations are compared by: the model's ping-pong (the check's re-run, virtual
    time) at reference sizes, and the scalar keys."""
    import csv
    fig = {}
    for r in csv.DictReader(open(csv_path)):
        if r["test"] in ("pingpong", "forward") and r["mode"] == "send" and r["rerun_s"]:
            fig["%s %s B" % (r["test"], r["bytes"])] = float(r["rerun_s"])
    keys = {}
    for line in open(ini):
        m = re.match(r"^(\w+) = ([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)(?![\w.])", line)
        if m:
            keys[m.group(1)] = float(m.group(2))
    for k in ("eager_threshold", "shm_latency", "poll_cost", "reduce_cost_per_byte", "bsend_overhead_per_byte",
              "allreduce_overhead", "bcast_overhead", "barrier_overhead"):
        if k in keys:
            fig[k] = keys[k]
    return fig


def measured(csv_path):
    """A calibration's own estimates (host.csv's measured_s) of a few reference figures."""
    import csv
    want = {("pingpong", "send", "0"): "pingpong 0 B", ("pingpong", "send", "65536"): "pingpong 64 KiB",
            ("compute", "mac", "0"): "multiply-add"}
    got = {}
    for r in csv.DictReader(open(csv_path)):
        k = want.get((r["test"], r["mode"], r["bytes"]))
        if k and r["off_node"] == "0":
            got[k] = float(r["measured_s"])
    return got


READING = """## What the model follows here, and what it does not

- **Rendezvous into lines the other core holds.** Above Open MPI's eager limit (4 KiB with its
  header on this machine) the receiver's core copies the message straight from the sender's buffer
  (CMA). When the receive buffer is one the receiver itself sent from (a token ring, a program that
  forwards what it got, the allgather half of an allreduce), the other core read those lines last and
  every store must take them back first: calibench's `forward` measures that copy at 2-3x the plain
  one (`pingpong`, whose buffers never change hands, as in osu_latency). The profile carries both
  rates (`mpi.size_segments` COPY_SHARED_PB) and the model picks by the buffer addresses the shim
  reports; a program's own stores in between are not seen (a receive into a buffer it rewrote after
  sending is charged the shared rate).
- **Local copies in collectives.** Allreduce copies the send buffer into the result first and the
  pairwise alltoall copies a member's own block: charged at the copy rate of that size.
- **A collective's own software path.** The profile charges an allreduce, a bcast and a barrier
  their own path through the library (`mpi.allreduce_overhead`, `bcast_overhead`,
  `barrier_overhead`), fitted from calibench's `coll`: each collective less the same messages and
  reduction sent by hand, at 8, 64 and 512 B. In three calibrations here that was 12-19 ns for the
  allreduce, 24-85 ns for the bcast and 0-1 ns for the barrier: small. The allreduce of 64 B is
  still predicted short, and the cause is its exchange, not the call: by hand (`MPI_Sendrecv` of
  64 B, then `MPI_Reduce_local`) it took 403-487 ns a call natively against 313 ns under the
  profile, and the barrier's exchange of 0 B 332-357 ns against 288 ns, while the ping-pong's size
  range that holds 64 B fits within 5 %. Both ranks sending and receiving at once cost more than
  the model's o_s + L + o_r of a message one way (the fit-quality table's `coll` rows show it): in
  a small program of 20,000 exchanges of 0 B here, `MPI_Sendrecv` took 348 ns, `MPI_Irecv` +
  `MPI_Send` + `MPI_Wait` 345 ns, `MPI_Isend` + `MPI_Recv` + `MPI_Wait` 310 ns and `MPI_Send` then
  `MPI_Recv` 313 ns, against 224 ns for the ping-pong's half round trip (1.4-1.55x); under the
  calibrated profile 251-271 ns, against 251 ns (1.0-1.08x). The two directions interfere on
  this machine (each core writes the lines the other polls); the model lets them overlap fully,
  and the both-way stream, which the profile fits, is a window of messages, not one exchange.
- **Algorithms.** The model plays MPICH's algorithms. Open MPI 4.1's `tuned` component chose, on two
  ranks here (breakpoints on `ompi_coll_base_*` under gdb): allreduce recursive doubling at 64 B and
  8 KiB, ring at 4 and 16 KiB, segmented ring at 64 KiB, Rabenseifner (`redscat_allgather`) at
  256 KiB and 1 MiB; alltoall and allgather `two_procs`; bcast linear at 1 KiB, binary tree at 64 KiB
  and 1 MiB; reduce linear; scatter linear; gather binomial; barrier recursive doubling. On two ranks
  most are the same exchanges as MPICH's (a ring, a tree or a linear bcast of two members is one
  message or one exchange of halves), which the held-out programs use; they differ for allreduce
  above 2 KiB up to 4 KiB and from 8 KiB up to 16 KiB (Open MPI exchanges the whole vector once,
  MPICH its halves twice) and for reduce above 2 KiB (Open MPI one message, MPICH Rabenseifner),
  and at more ranks. The model does not follow Open MPI's rules: a limit for such sizes and for
  predictions at scale.
- **Caches and memory.** The copy rate is the ping-pong's at each size: a program whose buffers
  together exceed the 2 MiB L2 of a core (the alltoall of 512 KiB blocks: 2 MiB of buffers a rank)
  copies at the memory's rate, which a ping-pong of one message does not see. The reductions are
  charged at `MPI_Reduce_local`'s rate on warm buffers.
- **A shared machine.** A native run of a few milliseconds that needs both cores at once loses whole
  scheduler slices to other jobs; virtual time does not (it must not depend on the host). The
  fastest native run is the better estimate of this machine's speed at the load shown. On a
  virtual machine the cores themselves change speed as other guests use the same physical cores
  (seen here: matmul N=320's compute phase took 29 ms, then 68 ms a few minutes later, with nothing of
  ours beside it, natively and in the CPU time charged under the model alike; the zero-byte
  ping-pong 0.25 us one day, 0.5 us the next): the host columns say how far the machine was from
  the calibrated one while each program ran.
"""


def main():
    # a SIGTERM ends the study through its finally clauses: no busy loop is left behind
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--update", action="store_true", help="write results/calibration_host.md too")
    ap.add_argument("--skip-calibration", action="store_true", help="reuse OUT/host.ini and OUT/host2.ini")
    ap.add_argument("--wait-load", type=float, default=3.0,
                    help="before each calibration and program, wait for the load average to fall below this")
    ap.add_argument("--wait-max", type=float, default=10, help="at most this many seconds each time")
    a = ap.parse_args()
    bindir = os.path.join(a.build, "bin")
    out = a.out or os.path.join(a.build, "calibration_host")
    os.makedirs(out, exist_ok=True)
    ini1, ini2 = os.path.join(out, "host.ini"), os.path.join(out, "host2.ini")
    cal = []
    if not a.skip_calibration:
        wait_for_load(a.wait_load, a.wait_max)
        print("calibration 1 (alone) ...", flush=True)
        cal.append(calibrate(bindir, ini1, os.path.join(out, "calibrate1.log")))
        print("calibration 2 (a CPU-bound job on every core beside it) ...", flush=True)
        jobs = busy_jobs(os.cpu_count() or 2)
        try:
            cal.append(calibrate(bindir, ini2, os.path.join(out, "calibrate2.log")))
        finally:
            for j in jobs:
                j.kill()
                j.wait()
    # the machine's speed right after the calibration: the reference the held-out runs' probes are
    # compared with
    ref = [probe(bindir) for _ in range(3)]
    ref_lat, ref_mac = statistics.median(r[0] for r in ref), statistics.median(r[1] for r in ref)
    f1 = profile_figures(ini1, os.path.join(out, "host.csv"))
    f2 = profile_figures(ini2, os.path.join(out, "host2.csv"))
    rep = []
    for k in f1:
        if k in f2 and f1[k] > 0:
            rep.append((k, f1[k], f2[k], f2[k] / f1[k] - 1))
        elif k in f2 and f1[k] == 0 == f2[k]:
            rep.append((k, 0.0, 0.0, 0.0))   # both calibrations found none (a collective's own path)

    # held-out programs, native and under the profile, interleaved run by run; alone, then beside
    # a CPU-bound job
    each = []

    def held_out(tag):
        rows = []
        for name, pattern, argv, kind in HELD_OUT:
            prog = [os.path.join(bindir, argv[0])] + argv[1:]
            nat, sim, loads, lat, mac = [], [], [], [], []
            for i in range(a.runs):
                loads.append(wait_for_load(a.wait_load, a.wait_max) if tag == "alone" else loadavg())
                # beside the busy loops the probe measures the loops' share of its cores, not the host
                pl, pm = probe(bindir) if tag == "alone" else (float("nan"), float("nan"))
                lat.append(pl / ref_lat)
                mac.append(pm / ref_mac)
                o, _ = run(mpirun_base() + prog)
                nat.append(parse_time(kind, o))
                o, _ = run([os.path.join(bindir, "mpisim"), "run", "--profile", ini1, "--cpu-factor", "1",
                            "--cpu-factor-source", "the calibrated machine itself", "--bind", "core",
                            "--report", os.path.join(out, "report.json"), "-n", "2", "--"] + prog)
                sim.append(parse_time(kind, o))
                each.append((tag, name, i, nat[-1], sim[-1], lat[-1], mac[-1], loads[-1]))
            loads.append(loadavg())
            mn, ms = statistics.median(nat), statistics.median(sim)
            # each prediction against the native run just before it (the same state of the host)
            paired = statistics.median(s_ / n_ for s_, n_ in zip(sim, nat)) - 1
            rows.append((name, pattern, mn, min(nat), ms, ms / mn - 1, ms / min(nat) - 1, min(loads), max(loads),
                         paired, min(lat), max(lat), min(mac), max(mac)))
            host = ("host latency %.2f-%.2fx, multiply-add %.2f-%.2fx the calibrated" %
                    (min(lat), max(lat), min(mac), max(mac)) if tag == "alone" else "host not probed beside the loops")
            print("%-6s %-32s native %.4g s (min %.4g), predicted %.4g s: %+.1f %% (%+.1f %% of the fastest, %+.1f %% paired)"
                  "  (load %.1f-%.1f; %s)" %
                  (tag, name, mn, min(nat), ms, 100 * (ms / mn - 1), 100 * (ms / min(nat) - 1), 100 * paired,
                   min(loads), max(loads), host), flush=True)
        return rows

    rows = held_out("alone")
    jobs = busy_jobs(os.cpu_count() or 2)
    try:
        rows_busy = held_out("beside")
    finally:
        for j in jobs:
            j.kill()
            j.wait()
    with open(os.path.join(out, "runs.csv"), "w") as f:
        f.write("pass,program,pattern,native_median_s,native_min_s,predicted_median_s,error_vs_median,error_vs_fastest,"
                "load_min,load_max,error_paired,host_latency_min,host_latency_max,host_mac_min,host_mac_max\n")
        for tag, rr in (("alone", rows), ("beside a CPU-bound job", rows_busy)):
            for r in rr:
                f.write(("%s," % tag) + "%s,%s,%.6e,%.6e,%.6e,%.4f,%.4f,%.2f,%.2f,%.4f,%.3f,%.3f,%.3f,%.3f\n" % r)
    with open(os.path.join(out, "runs_each.csv"), "w") as f:
        f.write("pass,program,run,native_s,predicted_s,host_latency_vs_calibrated,host_mac_vs_calibrated,load\n")
        for e in each:
            f.write("%s,%s,%d,%.6e,%.6e,%.3f,%.3f,%.2f\n" % e)

    errs = [abs(r[5]) for r in rows]
    errs_min = [abs(r[6]) for r in rows]
    errs_paired = [abs(r[9]) for r in rows]
    # how far the host moved from the calibrated machine during the runs alone (either probe)
    host_lo = min(min(r[10], r[12]) for r in rows)
    host_hi = max(max(r[11], r[13]) for r in rows)
    steady = [r for r in rows if max(r[11], r[13]) <= 1.10 and min(r[10], r[12]) >= 0.90]
    ompi = ""
    try:
        info = subprocess.run(["ompi_info", "--parsable", "--all"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, timeout=60).stdout
        ver = re.search(r"^ompi:version:full:(.*)$", info, re.M)
        keys = {}
        for k in ("btl_vader_eager_limit", "btl_vader_single_copy_mechanism", "btl_vader_max_send_size"):
            m = re.search(r"^mca:btl:vader:param:%s:value:(.*)$" % k, info, re.M)
            if m:
                keys[k] = m.group(1)
        ompi = "Open MPI %s (%s)" % (ver.group(1) if ver else "?", ", ".join("%s = %s" % kv for kv in keys.items()))
    except (OSError, subprocess.SubprocessError):
        ompi = "Open MPI (ompi_info not found)"
    md = os.path.join(out, "calibration_host.md")
    with open(md, "w") as f:
        f.write("# Calibrating this machine and predicting held-out programs\n\n")
        f.write("Generated by `results/calibration_host.py` (%s). %s over shared memory, two ranks, "
                "one per core; the profile is the first calibration's (`mpisim calibrate`, calibench only: "
                "none of the programs below is used by it). Native: the time each program prints, wall "
                "clock, median of %d runs; predicted: the same print under `mpisim run --profile host.ini "
                "--cpu-factor 1` (virtual time: the computation charged as the CPU time it took here, the "
                "communication as the profile says), median of %d runs, interleaved with the native ones. "
                "The machine is shared with other engineers' builds and tests: the load average of each "
                "row is in its last column.\n\n"
                % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), ompi, a.runs, a.runs))
        if cal:
            f.write("## Calibration\n\n| run | beside it | wall time | load average before | after |\n|---|---|---|---|---|\n")
            for i, c in enumerate(cal):
                f.write("| %d | %s | %.0f s | %.1f | %.1f |\n" % (i + 1, "a CPU-bound job per core" if i else "nothing of ours",
                                                              c[0], c[1], c[2]))
            tab = [l for l in cal[0][3].splitlines() if re.match(r"^(test|pingpong|stream|bothway|sendcall|recvcall|forward|coll|\d+ of)", l)]
            f.write("\nFit quality of calibration 1 (the benchmarks re-run under its profile, virtual time, "
                    "against what was measured; rms of the relative error per size range):\n\n```\n%s\n```\n\n" % "\n".join(tab))
        f.write("## Two calibrations in a row (the second beside a CPU-bound job)\n\n"
                "The model's times at each measured size (the check's re-run of calibench under each profile, "
                "virtual time) and the scalar keys.\n\n"
                "| figure | calibration 1 | calibration 2 | difference |\n|---|---|---|---|\n")
        for k, v1, v2, d in rep:
            f.write("| %s | %.4g | %.4g | %+.1f %% |\n" % (k, v1, v2, 100 * d))
        within = sum(1 for r in rep if abs(r[3]) <= 0.10)
        f.write("\n%d of %d figures within 10 %%; the largest difference %.1f %%.\n\n" %
                (within, len(rep), 100 * max((abs(r[3]) for r in rep), default=0)))
        # what each calibration kept, and how far the machine itself moved between them: the
        # measured (not fitted) zero-byte ping-pong and multiply-add of each
        for i, c in enumerate(cal):
            kept = [l.split("mpisim calibrate: ", 1)[1] for l in c[3].splitlines()
                    if l.startswith("mpisim calibrate: ") and " rounds " in l]
            if kept:
                f.write("Calibration %d: %s.\n\n" % (i + 1, kept[-1]))
        m1, m2 = measured(os.path.join(out, "host.csv")), measured(os.path.join(out, "host2.csv"))
        moved = ["%s %.4g s and %.4g s (%+.1f %%)" % (k, m1[k], m2[k], 100 * (m2[k] / m1[k] - 1))
                 for k in ("pingpong 0 B", "pingpong 64 KiB", "multiply-add") if k in m1 and k in m2 and m1[k] > 0]
        if moved:
            f.write("Measured by the two calibrations (their estimates, before any fit): %s. Where these moved by "
                    "more than 10 %%, the machine changed speed between the two calibrations (a shared virtual machine), "
                    "and the fitted figures follow it.\n\n" % "; ".join(moved))
        f.write("## Held-out programs\n\n"
                "Paired: the median, over the runs, of each prediction against the native run just before it. Host: "
                "calibench's zero-byte ping-pong and multiply-add time, measured natively before each pair, against "
                "the same right after the calibrations (1.00x: the machine as it was calibrated; with --skip-calibration, as it was when the study started).\n\n"
                "| program | pattern | native (median) | native (fastest) | predicted (median) | "
                "error vs median | vs fastest | paired | host latency | host multiply-add | load average |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| %s | %s | %.4g s | %.4g s | %.4g s | %+.1f %% | %+.1f %% | %+.1f %% | %.2f-%.2fx | %.2f-%.2fx | %.1f-%.1f |\n" %
                    (r[0], r[1], r[2], r[3], r[4], 100 * r[5], 100 * r[6], 100 * r[9], r[10], r[11], r[12], r[13],
                     r[7], r[8]))
        f.write("\nAgainst the native medians: median absolute error %.1f %%, largest %.1f %%; against the fastest "
                "native runs: %.1f %% and %.1f %%; paired: %.1f %% and %.1f %% (target: 20 %% and 40 %%).\n\n" %
                (100 * statistics.median(errs), 100 * max(errs), 100 * statistics.median(errs_min), 100 * max(errs_min),
                 100 * statistics.median(errs_paired), 100 * max(errs_paired)))
        if host_lo < 0.90 or host_hi > 1.10:
            f.write("**The host moved.** During these runs its latency and multiply-add time were %.2f-%.2fx those of "
                    "the machine that was calibrated: the native times follow the host, the profile's latencies and "
                    "rates do not, so the errors above measure that drift as much as the model. %d of %d programs ran "
                    "with both probes within 10 %% of the calibrated machine%s.\n\n" %
                    (host_lo, host_hi, len(steady), len(rows),
                     (" (paired error of those: median %.1f %%, largest %.1f %%)" %
                      (100 * statistics.median(abs(r[9]) for r in steady), 100 * max(abs(r[9]) for r in steady)))
                     if steady else ""))
        f.write("### The same, beside a CPU-bound job (one busy loop per core)\n\n"
                "| program | native (median) | predicted (median) | error | predicted, against alone | load average |\n"
                "|---|---|---|---|---|---|\n")
        drift = []
        for r, r0 in zip(rows_busy, rows):
            drift.append(abs(r[4] / r0[4] - 1))
            f.write("| %s | %.4g s | %.4g s | %+.1f %% | %+.1f %% | %.1f-%.1f |\n" %
                    (r[0], r[2], r[4], 100 * r[5], 100 * (r[4] / r0[4] - 1), r[7], r[8]))
        f.write("\nThe predictions moved by %.1f %% (median) and %.1f %% at most from the runs alone; the native "
                "times are the busy machine's, not the model's business (the ranks share their cores with the "
                "busy loops).\n\n" % (100 * statistics.median(drift), 100 * max(drift)))
        f.write(READING)
    print(open(md).read())
    if a.update:
        shutil.copy(md, os.path.join(HERE, "calibration_host.md"))


if __name__ == "__main__":
    main()
