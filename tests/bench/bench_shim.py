#!/usr/bin/python3
"""Shim benchmark: median wall-clock cost the shim adds to one blocking ping-pong round trip.

Usage: bench_shim.py [BUILD_DIR]   (default ../../build)
Runs bin/bench_shim_rtt natively under mpirun, under `mpisim run --compute none`, and under mpisim
with waiting loops that sleep at once (`shim.spin_polls=0`, the behaviour before spinning), three
times each interleaved (the machine is shared and noisy), and prints the medians and differences.
"""
import os
import re
import statistics
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../build")
exe = os.path.join(build, "bin", "bench_shim_rtt")
mpisim = os.path.join(build, "bin", "mpisim")
root = ["--allow-run-as-root"] if os.geteuid() == 0 else []


def median_of(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median_rtt_us=([0-9.]+)", out).group(1))


native, shim, nospin = [], [], []
sim = [mpisim, "run", "--compute", "none", "--report", "/dev/null"]
for _ in range(3):
    native.append(median_of(["mpirun", *root, "--oversubscribe", "-n", "2", exe, "3000"]))
    shim.append(median_of(sim + ["-n", "2", "--", exe, "3000"]))
    nospin.append(median_of(sim + ["--set", "shim.spin_polls=0", "-n", "2", "--", exe, "3000"]))
n, s, z = statistics.median(native), statistics.median(shim), statistics.median(nospin)
print(f"native median round trip: {n:.2f} us")
print(f"under mpisim:             {s:.2f} us")
print(f"  with shim.spin_polls=0: {z:.2f} us")
print(f"shim cost per blocking ping-pong round trip: {s - n:.2f} us (4 MPI calls, 4 model round trips); "
      f"{(z - n) / (s - n):.1f}x less than sleeping at once")
