#!/usr/bin/python3
"""Capture cost of a whole run (docs/performance.md, "Capture"): the 64-rank fan captured with `mpisim trace`
against the same run natively, and against another build's capture in the same session.

Usage: bench_capture_fan.py [--runs R] [--np N] [--reps K] BUILD_DIR [OTHER_BUILD_DIR]

Runs apps/fan (BUILD_DIR's bin/fan, default arguments but --reps K, default 3) natively under
mpirun and under each build's `mpisim trace`, interleaved, R times each (default 3), and prints
per variant the median wall seconds and CPU seconds (user + system of the whole process tree:
mpirun, the ranks, mpisim and its trace writer), the trace's size, and the ratios against the
native run (and BUILD_DIR against OTHER_BUILD_DIR). SimGrid is not installed here: the figure to
compare with is the reference figure of SMPI 3.32's time-independent trace of the same run, 7.8 s (under load
10-40, as our 58.7 s then), printed beside ours as a quoted figure, not a measurement.
"""
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

argv = sys.argv[1:]
opts = {"--runs": 3, "--np": 64, "--reps": 3}
builds = []
i = 0
while i < len(argv):
    if argv[i] in opts and i + 1 < len(argv):
        opts[argv[i]] = int(argv[i + 1])
        i += 2
    elif argv[i].startswith("-"):
        sys.exit(__doc__)
    else:
        builds.append(os.path.abspath(argv[i]))
        i += 1
if not builds:
    sys.exit(__doc__)
root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
fan = os.path.join(builds[0], "bin", "fan")
prog = [fan, "--reps", str(opts["--reps"])]
n = str(opts["--np"])
tmp = tempfile.mkdtemp(prefix="mpisim-capfan-")
atexit.register(shutil.rmtree, tmp, True)   # also when a run fails


def timed(cmd):
    """wall and CPU seconds of cmd and all its descendants (they are waited for by it)"""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench_capture_fan: {' '.join(cmd)} failed:\n{err}")
    return wall, ru.ru_utime + ru.ru_stime


variants = [("native", None)] + [(f"trace[{k}]", b) for k, b in enumerate(builds)]
res = {name: [] for name, _ in variants}
size = {}
for r in range(opts["--runs"]):
    for name, b in variants:
        if b is None:
            cmd = ["mpirun", *root, "--oversubscribe", "-n", n, *prog]
        else:
            out = os.path.join(tmp, f"t{r}.h5")
            if os.path.exists(out):
                os.unlink(out)
            cmd = [os.path.join(b, "bin", "mpisim"), "trace", "-o", out, "-n", n, "--", *prog]
        res[name].append(timed(cmd))
        if b is not None:
            size[name] = os.path.getsize(out)
            os.unlink(out)

load = os.getloadavg()[0]
print(f"# {n}-rank fan --reps {opts['--reps']}, {opts['--runs']} runs each, interleaved; load {load:.1f} at the end")
med = {}
for name, b in variants:
    w = statistics.median(x[0] for x in res[name])
    c = statistics.median(x[1] for x in res[name])
    med[name] = (w, c)
    lo, hi = min(x[0] for x in res[name]), max(x[0] for x in res[name])
    extra = f" trace={size[name] / 1e6:.2f} MB build={b}" if b else ""
    print(f"{name:9s} wall={w:.2f} s (range {lo:.2f}-{hi:.2f}) cpu={c:.2f} s{extra}")
nw, nc = med["native"]
for name, b in variants[1:]:
    w, c = med[name]
    print(f"{name:9s} / native: wall x{w / nw:.2f} cpu x{c / nc:.2f}")
if len(builds) > 1:
    w0, c0 = med["trace[0]"]
    w1, c1 = med["trace[1]"]
    print(f"trace[0] / trace[1]: wall x{w0 / w1:.2f} cpu x{c0 / c1:.2f}")
print("reference figures (not measured here): SMPI 3.32 time-independent trace of the 64-rank fan 7.8 s, "
      "mpisim's capture then 58.7 s, both at load 10-40")
