#!/usr/bin/python3
"""Charged computation per empty MPI call (<= 50 ns at cpu factor 1 in the default
compute mode, with a CPU-bound job beside). A ping-pong with nothing between its MPI calls, under
`mpisim run`, alone and beside a python CPU-bound loop, ROUNDS times interleaved; prints each run
and the medians, and how many gaps followed a switch-out. Since the gap floor (a gap the
measurement cannot tell from an empty one is charged shim.gap_floor, the same in every run) the
charge is the floor by design; the figure measured before it is the measurement's own.

Usage: bench_charged.py [BUILD_DIR] [--rounds K] [--trips N] [--compare OTHER_BUILD_DIR] [--fortran]
With --compare, every run is made with both builds in turn (same-run ratios against a previous
version). With --fortran, the same program in Fortran (tests/shim/progs/empty_pingpong_f.f90,
1000 round trips: the bindings' handle conversions must not be charged either)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]


def opt(name, default):
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i:i + 2]
        return v
    return default


rounds = int(opt("--rounds", "5"))
trips = int(opt("--trips", "1000"))
other = opt("--compare", None)
fortran = "--fortran" in args
if fortran:
    args.remove("--fortran")
build = os.path.abspath(args[0] if args else os.path.join(here, "..", "..", "build"))
builds = [("this", build)] + ([("other", os.path.abspath(other))] if other else [])
tmp = tempfile.mkdtemp(prefix="mpisim-bench-charged-")
prog = os.path.join(tmp, "empty_pingpong")
if fortran:
    subprocess.run(["mpifort", "-O2", "-o", prog, os.path.join(here, "..", "shim", "progs", "empty_pingpong_f.f90")],
                   check=True)
else:
    subprocess.run(["mpicc", "-O2", "-o", prog, os.path.join(here, "..", "shim", "progs", "empty_pingpong.c")], check=True)


def per_call(b):
    rep = os.path.join(tmp, "r.json")
    subprocess.run([os.path.join(b, "bin", "mpisim"), "run", "--compute", "cpu", "--set", "shim.cpu_factor=1",
                    "--report", rep, "-n", "2", "--", prog] + ([] if fortran else [str(trips)]), check=True, capture_output=True)
    r = json.load(open(rep))
    c = [x["charging"] for x in r["ranks"]]
    calls = sum(x["calls"] for x in r["ranks"])
    ns = sum(x["compute_ps"] for x in r["ranks"]) / calls / 1e3
    # before the gap floor (docs/architecture.md "Repeatable small gaps": a gap the measurement
    # cannot tell from an empty one is charged shim.gap_floor): what the measurement itself charged,
    # comparable with builds before the floor (whose reports have no floor_* fields)
    measured = ns - sum(x.get("floor_added_ns", 0) - x.get("floor_dropped_ns", 0) for x in c) / calls
    return ns, measured, sum(x["woken_gaps"] for x in c), sum(x["gaps"] for x in c)


res = {(name, mode): [] for name, _ in builds for mode in ("alone", "beside")}
meas = {(name, mode): [] for name, _ in builds for mode in ("alone", "beside")}
for mode in ("alone", "beside"):
    burner = subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"]) if mode == "beside" else None
    try:
        for k in range(rounds):
            for name, b in builds:
                ns, measured, woken, gaps = per_call(b)
                res[(name, mode)].append(ns)
                meas[(name, mode)].append(measured)
                print(f"{mode:6s} {name:5s} run {k + 1}: {ns:6.1f} ns charged per call, {measured:6.1f} ns measured "
                      f"before the gap floor ({woken} of {gaps} gaps after a switch-out)")
    finally:
        if burner:
            burner.kill()
            burner.wait()
for mode in ("alone", "beside"):
    for what, d in (("charged", res), ("measured before the gap floor", meas)):
        line = f"{what} per empty MPI call, {mode}: median {statistics.median(d[('this', mode)]):.1f} ns"
        if other:
            o = statistics.median(d[("other", mode)])
            line += f" (other build {o:.1f} ns, ratio {statistics.median(d[('this', mode)]) / o:.2f})"
        print(line + " (goal <= 50 ns)")
