#!/usr/bin/python3
"""Shim benchmark: median wall-clock cost the shim adds to one blocking ping-pong round trip.

Usage: bench_shim.py [BUILD_DIR [PREVIOUS_BUILD_DIR]] [--round-trips N] [--rounds R]   (default
../../build, 3000 round trips, 5 rounds; docs/performance.md's figure: --round-trips 100000)
Runs bin/bench_shim_rtt natively under mpirun and under `mpisim run --compute none` with the
shared-memory transport (shim.transport=shm, the default), with TCP (shim.transport=tcp, as ranks
on other hosts use), with waiting loops that sleep at once (shim.spin_polls=0) and with every
answer from the model server (shim.local_answers=off: a send's completion too), five times
each interleaved (the machine is shared and noisy), and prints the medians; the default compute
mode (cpu) over shm too. With a previous build, its mpisim runs the same program in both compute
modes in the same rounds, for ratios measured in the same run. The load average is printed
before and after.
Also prints the model round trips per ping-pong (the report's lookahead.model_round_trips) and the
context switches per model round trip (perf, when it is there).
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import json

args = sys.argv[1:]
ROUND_TRIPS, ROUNDS = 3000, 5
for opt in ("--round-trips", "--rounds"):
    if opt in args:
        i = args.index(opt)
        if opt == "--round-trips":
            ROUND_TRIPS = int(args[i + 1])
        else:
            ROUNDS = int(args[i + 1])
        del args[i:i + 2]
build = args[0] if args else os.path.join(os.path.dirname(__file__), "../../build")
previous = args[1] if len(args) > 1 else None
exe = os.path.join(build, "bin", "bench_shim_rtt")
root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
perf = shutil.which("perf")


REPORT = os.path.join(tempfile.mkdtemp(prefix="bench_shim_"), "report.json")


def median_of(cmd):
    """Median round trip (us), the run's context switches (None without perf) and its model round
    trips (from the report; a build without the count: 4 per ping-pong, two blocking calls per rank)."""
    if perf:
        cmd = [perf, "stat", "-x,", "-e", "context-switches", "--"] + cmd
    if os.path.exists(REPORT):
        os.unlink(REPORT)
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    cs = re.search(r"^([0-9]+),,context-switches", p.stderr, re.M)
    trips = 4 * ROUND_TRIPS
    if os.path.exists(REPORT):
        trips = json.load(open(REPORT)).get("lookahead", {}).get("model_round_trips", trips)
    return float(re.search(r"median_rtt_us=([0-9.]+)", p.stdout).group(1)), int(cs.group(1)) if cs else None, trips


def knows(b, key):
    """Whether build b has a configuration key (a previous build may not)."""
    return subprocess.run([os.path.join(b, "bin", "mpisim"), "config", "--set", f"{key}"], capture_output=True).returncode == 0


def sim(b, *sets, compute="none"):
    cmd = [os.path.join(b, "bin", "mpisim"), "run", "--compute", compute, "--report", REPORT]
    # the benchmark times itself with clock_gettime: it must read the host's clock, not virtual time
    if knows(b, "shim.program_clocks=real"):
        sets = ("shim.program_clocks=real",) + sets
    for s in sets:
        cmd += ["--set", s]
    return cmd + ["-n", "2", "--", exe, str(ROUND_TRIPS)]


runs = {"native": ["mpirun", *root, "--oversubscribe", "-n", "2", exe, str(ROUND_TRIPS)],
        "shm": sim(build),
        "tcp": sim(build, "shim.transport=tcp"),
        "shm, spin_polls=0": sim(build, "shim.spin_polls=0"),
        "shm, local_answers=off": sim(build, "shim.local_answers=off"),
        "shm, compute cpu": sim(build, compute="cpu")}
if previous:
    runs["previous build"] = sim(previous)
    runs["previous build, cpu"] = sim(previous, compute="cpu")
print(f"load average before: {os.getloadavg()[0]:.1f}; {ROUND_TRIPS} round trips, {ROUNDS} rounds")
got = {k: [] for k in runs}
for _ in range(ROUNDS):
    for k, cmd in runs.items():
        got[k].append(median_of(cmd))
med = {k: statistics.median(v[0] for v in got[k]) for k in runs}
n = med["native"]
for k in runs:
    cs = [v[1] for v in got[k] if v[1] is not None]
    extra = ""
    if cs and k != "native":
        trips = statistics.median(v[2] for v in got[k])
        extra = (f", {trips / ROUND_TRIPS:.1f} model round trips per ping-pong, "
                 f"{statistics.median(cs) / trips:.2f} context switches per model round trip")
    print(f"{k:>22}: {med[k]:8.2f} us per ping-pong round trip{'' if k == 'native' else f' (shim cost {med[k] - n:.2f} us)'}{extra}")
s = med["shm"] - n
print(f"shim cost per blocking message (half a round trip, one send and one receive): {s / 2:.2f} us over shm, "
      f"{(med['tcp'] - n) / 2:.2f} us over tcp")
print(f"wall per blocking one-byte message (half a round trip): {med['shm'] / 2:.2f} us with --compute none, "
      f"{med['shm, compute cpu'] / 2:.2f} us with the default mode (native {n / 2:.2f} us)")
if previous:
    print(f"previous build / this build: {(med['previous build'] - n) / s:.2f}x shim cost per round trip "
          f"(--compute none), {(med['previous build, cpu'] - n) / (med['shm, compute cpu'] - n):.2f}x (cpu); "
          f"wall per message {med['previous build'] / 2:.2f} -> {med['shm'] / 2:.2f} us (none), "
          f"{med['previous build, cpu'] / 2:.2f} -> {med['shm, compute cpu'] / 2:.2f} us (cpu)")
print(f"load average after: {os.getloadavg()[0]:.1f}")
