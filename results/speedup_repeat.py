#!/usr/bin/python3
"""Does the matrix-multiply study repeat? Runs `mpisim study speedup` twice in a row (P = 1, 2,
4, 8; N = 32..144; each calibrating its own CPU factor, as a user's run does) with a CPU-bound job
beside both, and compares the efficiencies point by point (within 3 points for
N >= 64, within 5 below).

Usage: speedup_repeat.py [BUILD_DIR] [--out DIR] [--no-burner] [--set KEY=VALUE]... [--cpu-factor X|FILE] [--runs K]
Writes DIR/run1, DIR/run2 (the studies' outputs) and DIR/speedup_repeat.md; DIR defaults to
BUILD_DIR/speedup_repeat (never the checkout). --set goes to both studies (e.g.
shim.compute_slots=0: without the compute gate); --cpu-factor fixes the factor of both instead of
calibrating each (the difference is then the charging's alone); --runs K makes each study keep
each point's fastest of K runs of its grid.
"""
import csv
import os
import subprocess
import sys
import time

args = sys.argv[1:]
here = os.path.dirname(os.path.abspath(__file__))
build = args.pop(0) if args and not args[0].startswith("--") else os.path.join(here, "..", "build")
out = os.path.join(build, "speedup_repeat")
burn = True
extra = []
while args:
    a = args.pop(0)
    if a == "--out":
        out = args.pop(0)
    elif a == "--no-burner":
        burn = False
    elif a in ("--set", "--cpu-factor", "--runs"):
        extra += [a, args.pop(0)]
    else:
        sys.exit(f"speedup_repeat.py: unknown argument {a}")
os.makedirs(out, exist_ok=True)
mpisim = os.path.join(build, "bin", "mpisim")

burner = subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"]) if burn else None
tables, factors, walls = [], [], []
try:
    for k in (1, 2):
        d = os.path.join(out, f"run{k}")
        t0 = time.monotonic()
        # exit 9 (outcome slow host): the table stands, with the points a slow host overstated marked
        rc = subprocess.run([mpisim, "study", "speedup", "--procs", "1,2,4,8", "--out", d] + extra).returncode
        if rc not in (0, 9):
            sys.exit(f"speedup_repeat.py: the study exited {rc}")
        walls.append(time.monotonic() - t0)
        rows = {(int(r["P"]), int(r["N"])): r for r in csv.DictReader(open(os.path.join(d, "speedup.csv")))}
        tables.append(rows)
        factors.append(open(os.path.join(d, "cpu_factor.txt")).read().splitlines())
finally:
    if burner:
        burner.kill()
        burner.wait()

a, b = tables
lines = ["# Two consecutive studies" + (" beside a CPU-bound job" if burn else ""), "",
         f"Options of both studies: {' '.join(extra) if extra else '(defaults)'}; wall time "
         f"{walls[0]:.0f} s and {walls[1]:.0f} s", "",
         f"CPU factors: run 1 {float(factors[0][0]):.2f}, run 2 {float(factors[1][0]):.2f} ({factors[0][1]})", "",
         "| P | N | run 1 time (ms) | run 2 time (ms) | run 1 eff. | run 2 eff. | diff (points) | bound |",
         "|---|---|---|---|---|---|---|---|"]
worst_ok = True
for key in sorted(a):
    p, n = key
    if p == 1 or key not in b:
        continue
    ea, eb = 100 * float(a[key]["efficiency"]), 100 * float(b[key]["efficiency"])
    bound = 3 if n >= 64 else 5
    ok = abs(ea - eb) <= bound
    worst_ok &= ok
    slow = [k for k, t in ((1, a), (2, b)) if t[key].get("slow_host") == "1" or t[(1, n)].get("slow_host") == "1"]
    lines.append(f"| {p} | {n} | {1e3 * float(a[key]['time_s']):.3f} | {1e3 * float(b[key]['time_s']):.3f} | "
                 f"{ea:.1f} % | {eb:.1f} % | {ea - eb:+.1f} | {bound}{'' if ok else ' **exceeded**'}"
                 f"{'; slow host in run ' + ' and '.join(map(str, slow)) if slow else ''} |")
lines += ["", "All points within their bound." if worst_ok else "Some points exceed their bound (marked)."]
open(os.path.join(out, "speedup_repeat.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
print(f"written: {os.path.join(out, 'speedup_repeat.md')}")
sys.exit(0 if worst_ok else 1)
