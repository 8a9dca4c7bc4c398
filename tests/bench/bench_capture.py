#!/usr/bin/python3
"""Capture benchmark: median cost per MPI call of recording a trace (target < 1 us).

Usage: bench_capture.py [BUILD_DIR]
Runs bin/bench_capture_cost natively and under `mpisim trace` (one rank), three times each,
interleaved, and prints the medians and the difference per call.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../build")
exe = os.path.join(build, "bin", "bench_capture_cost")
mpisim = os.path.join(build, "bin", "mpisim")
root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
tmp = tempfile.mkdtemp(prefix="mpisim-capture-")


def median_of(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median_call_us=([0-9.]+)", out).group(1))


native, traced = [], []
for k in range(3):
    native.append(median_of(["mpirun", *root, "-n", "1", exe, "300"]))
    traced.append(median_of([mpisim, "trace", "-o", os.path.join(tmp, f"t{k}.h5"), "-n", "1", "--", exe, "300"]))
n, t = statistics.median(native), statistics.median(traced)
print(f"native MPI_Test(null):   {n:.4f} us per call")
print(f"under mpisim trace:      {t:.4f} us per call")
print(f"capture cost per MPI call: {t - n:.4f} us (target < 1 us)")
