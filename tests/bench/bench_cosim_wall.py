#!/usr/bin/python3
"""Co-simulation wall time against native: HPCC on 4 ranks and a latency sweep up to 1 MiB.

Usage: bench_cosim_wall.py [BUILD_DIR [PREVIOUS_BUILD_DIR]] [--rounds N] [--only hpcc|sweep]
Runs each program natively under mpirun and under `mpisim run --compute none` (this build and,
given one, a previous build), interleaved, N rounds (default 1; the machine is shared), and
prints the median wall seconds and the ratios to native. The goals: HPCC
<= 3x native, the sweep <= 5x.
  hpcc   Debian's hpcc with its example input (N = 1000), 4 ranks (skipped when not installed)
  sweep  apps/pingpong: blocking ping-pong, 0 B and 1 B .. 1 MiB by powers of two, 100 round
         trips per size, 2 ranks
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

args = [a for a in sys.argv[1:]]
rounds, only = 1, None
if "--rounds" in args:
    i = args.index("--rounds")
    rounds = int(args[i + 1])
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
    shutil.copy(example, os.path.join(work, "hpccinf.txt"))   # HPCC reads and writes in its cwd
    cases["hpcc 4 ranks"] = (4, [hpcc])
if only in (None, "sweep"):
    cases["latency sweep to 1 MiB"] = (2, [os.path.join(build, "bin", "pingpong"), "--iters", "100"])


def timed(cmd):
    t = time.monotonic()
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return time.monotonic() - t


def sim(b, n, prog):
    return [os.path.join(b, "bin", "mpisim"), "run", "--compute", "none", "--report", os.path.join(work, "r.json"),
            "-n", str(n), "--", *prog]


for name, (n, prog) in cases.items():
    runs = {"native": ["mpirun", *root, "--oversubscribe", "-n", str(n), *prog], "mpisim": sim(build, n, prog)}
    if previous:
        runs["previous build"] = sim(previous, n, prog)
    got = {k: [] for k in runs}
    for _ in range(rounds):
        for k, cmd in runs.items():
            got[k].append(timed(cmd))
    med = {k: statistics.median(v) for k, v in got.items()}
    line = f"{name}: native {med['native']:.2f} s, mpisim {med['mpisim']:.2f} s ({med['mpisim'] / med['native']:.1f}x native)"
    if previous:
        p = med["previous build"]
        line += f", previous build {p:.2f} s ({p / med['native']:.1f}x native; this build {p / med['mpisim']:.2f}x faster)"
    print(line, flush=True)
shutil.rmtree(work, ignore_errors=True)
