#!/usr/bin/python3
"""Co-simulation wall time against native: HPCC on 4 ranks and a latency sweep up to 1 MiB.

Usage: bench_cosim_wall.py [BUILD_DIR [PREVIOUS_BUILD_DIR]] [--rounds N] [--only hpcc|sweep|many]
                           [--compute none|cpu|both] [--hpcc-n N]
Runs each program natively under mpirun and under `mpisim run --compute none` (or cpu, the
default mode, or both: this build and, given one, a previous build), interleaved, N rounds
(default 1; the machine is shared), and prints the median wall seconds, the ratios to native and,
with both modes, cpu against none. The load average is printed with each case. Goals:
HPCC <= 3x native and the sweep <= 5x; the 16-rank cases within 1.5x of native, HPCC
in the default mode within 1.2x of --compute none and 3x of native.
  hpcc   Debian's hpcc with its example input (N = 1000; --hpcc-n: another problem size, 500 as
         tests/thirdparty runs it), 4 ranks (skipped when not installed)
  sweep  apps/pingpong: blocking ping-pong, 0 B and 1 B .. 1 MiB by powers of two, 100 round
         trips per size, 2 ranks
  many   16 ranks on the machine's cores: apps/stencil, 2D mesh, 2000 iterations;
         apps/matmul N = 144, 200 repetitions
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

args = [a for a in sys.argv[1:]]
rounds, only, compute, hpcc_n = 1, None, "none", None
if "--rounds" in args:
    i = args.index("--rounds")
    rounds = int(args[i + 1])
    del args[i:i + 2]
if "--hpcc-n" in args:
    i = args.index("--hpcc-n")
    hpcc_n = int(args[i + 1])
    del args[i:i + 2]
if "--compute" in args:
    i = args.index("--compute")
    compute = args[i + 1]
    del args[i:i + 2]
if "--only" in args:
    i = args.index("--only")
    only = args[i + 1]
    del args[i:i + 2]
build = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), "../../build"))
previous = os.path.abspath(args[1]) if len(args) > 1 else None
root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
work = tempfile.mkdtemp(prefix="mpisim-bench-wall-")

cases = {}
hpcc = shutil.which("hpcc", path="/usr/bin")
example = "/usr/share/doc/hpcc/examples/_hpccinf.txt"
if hpcc and os.path.exists(example) and only in (None, "hpcc"):
    lines = open(example).read().splitlines(True)   # HPCC reads and writes in its cwd
    if hpcc_n:   # line 6: the one problem size
        lines[5] = re.sub(r"^\d+", str(hpcc_n), lines[5])
    with open(os.path.join(work, "hpccinf.txt"), "w") as f:
        f.writelines(lines)
    cases[f"hpcc 4 ranks (N = {hpcc_n or 1000})"] = (4, [hpcc])
if only in (None, "sweep"):
    cases["latency sweep to 1 MiB"] = (2, [os.path.join(build, "bin", "pingpong"), "--iters", "100"])
if only in (None, "many"):
    cases["stencil 16 ranks, 2000 iterations"] = (16, [os.path.join(build, "bin", "stencil"), "--iters", "2000",
                                                       "--no-times", "--no-verify"])
    cases["matmul 16 ranks, N = 144 x 200"] = (16, [os.path.join(build, "bin", "matmul"), "144", "--repeat", "200"])
modes = ["none", "cpu"] if compute == "both" else [compute]


def timed(cmd):
    t = time.monotonic()
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return time.monotonic() - t


def sim(b, n, prog, mode):
    return [os.path.join(b, "bin", "mpisim"), "run", "--compute", mode, "--report", os.path.join(work, "r.json"),
            "-n", str(n), "--", *prog]


for name, (n, prog) in cases.items():
    runs = {"native": ["mpirun", *root, "--oversubscribe", "-n", str(n), *prog]}
    for m in modes:
        runs[m] = sim(build, n, prog, m)
        if previous:
            # the previous build's own copy of the program where it has one (the same source)
            pprog = [p.replace(build, previous) if p.startswith(build) else p for p in prog]
            runs["previous " + m] = sim(previous, n, pprog, m)
    load0 = os.getloadavg()[0]
    got = {k: [] for k in runs}
    for _ in range(rounds):
        for k, cmd in runs.items():
            got[k].append(timed(cmd))
    med = {k: statistics.median(v) for k, v in got.items()}
    nat = med["native"]
    line = f"{name} (load {load0:.1f}-{os.getloadavg()[0]:.1f}): native {nat:.2f} s"
    for m in modes:
        line += f"; --compute {m} {med[m]:.2f} s ({med[m] / nat:.2f}x native)"
        if previous:
            p = med["previous " + m]
            line += f", previous build {p:.2f} s ({p / nat:.2f}x native; this build {p / med[m]:.2f}x faster)"
    if len(modes) == 2:
        line += f"; cpu / none {med['cpu'] / med['none']:.2f}x"
        if previous:
            line += f" (previous build {med['previous cpu'] / med['previous none']:.2f}x)"
    print(line, flush=True)
shutil.rmtree(work, ignore_errors=True)
