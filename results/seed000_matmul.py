#!/usr/bin/python3
"""Seed 000 sec 4.2 (Figs. 6 and 7), the model alone: the matrix multiply on 2, 4, 8 and 16 nodes of
the SBus testbed (profile seed000-sbus), N = 32..144, in both of matmul's forms, scored.

Each point is the model's communication alone (`mpisim study speedup --compute none`: the
critical path with nothing charged between MPI calls, deterministic, the same on any machine)
plus one rank's N^3/P multiply-adds at the testbed's rate, fitted on Fig. 6's 2-node mean alone
(results/calibrate_seed000.py; the scorecard's one calibration row of this testbed). The
co-simulation with measured computation is results/seed000_validation.py (and the main job,
`mpisim study speedup`); this is the model's answer without this machine's noise. Adding the two
is slightly pessimistic: the slaves' returns of C overlap the others' computation.

  the paper's form (scored): --distribute p2p, "transmits B^T ... to each of the slave processors"
  the alternative: --distribute collective (MPI_Scatterv + MPI_Bcast), reported beside it

Fig. 6: the testbed's means (sec 4.2: 2 nodes 95.80 ms, 4 nodes 48.05, 8 nodes 25.11) within 5 %
(the paper's own simulation was within 2.27 %). Fig. 7: 2 nodes >= 95 % at every N; 4 nodes below
95 % before N = 80 and at or above from 80 on; 8 nodes likewise from N = 128; 16 nodes peak 85 %
at N = 144 (within 5 %).

Writes seed000_matmul.md, scorecard.json and seed000_matmul.csv to --out (default
<build>/results/seed000_matmul). About 2 minutes (two studies of 32 model-only runs).

usage: seed000_matmul.py [--build DIR] [--out DIR] [--set KEY=VALUE]... [--rate-scale X] [--forms p2p,collective]
"""
import argparse
import csv
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import calibrate_seed000 as cal0  # noqa: E402
import scorecard  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--build", default=os.environ.get("MPISIM_BUILD", os.path.join(here, "..", "build")))
ap.add_argument("--out", default=None)
ap.add_argument("--set", action="append", default=[])
ap.add_argument("--rate-scale", type=float, default=1.0, help="the fitted rate times X (sensitivity)")
ap.add_argument("--forms", default="p2p,collective")
args = ap.parse_args()
build = os.path.abspath(args.build)
out = os.path.abspath(args.out or os.path.join(build, "results", "seed000_matmul"))
os.makedirs(out, exist_ok=True)
forms = args.forms.split(",")

TESTBED = {2: 95.80, 4: 48.05, 8: 25.11}
PROCS = (2, 4, 8, 16)
comm = {f: cal0.comm_alone(build, "2,4,8,16", f, args.set) for f in forms}
sizes = sorted({n for _, n in comm[forms[0]]})
rate, comm2 = cal0.rate_ns(comm["p2p" if "p2p" in forms else forms[0]])
rate *= args.rate_scale


def t(form, p, n):
    """ms: one rank's share of the multiply-adds at the testbed's rate, plus the communication alone."""
    return n ** 3 / p * rate * 1e-6 + (comm[form][(p, n)] if p > 1 else 0.0)


def eff(form, p, n):
    return 100 * t(form, 1, n) / (p * t(form, p, n))


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs)


def first_from(form, p, level=95.0):
    """The smallest N from which the efficiency stays at or above `level` (None if never)."""
    first = None
    for n in sizes:
        if eff(form, p, n) >= level:
            first = n if first is None else first
        else:
            first = None
    return first


with open(os.path.join(out, "seed000_matmul.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["form", "P", "N", "comm_alone_ms", "time_ms", "efficiency_pct"])
    for form in forms:
        for p in PROCS:
            for n in sizes:
                w.writerow([form, p, n, f"{comm[form][(p, n)]:.6f}", f"{t(form, p, n):.6f}", f"{eff(form, p, n):.3f}"])

sc = scorecard.Scorecard("000", ["seed000-sbus"], calibrated={
    "000-fig6-2node": "the testbed's compute rate (cli/study.c SEED000_NS_PER_MAC, results/calibrate_seed000.py)"})
form = "p2p"
P = "seed000-sbus"
if form in forms:
    for p, rid in ((2, "000-fig6-2node"), (4, "000-fig6-4node"), (8, "000-fig6-8node")):
        sc.num(rid, "sec 4.2 Fig. 6", f"{p}-node execution time, mean over N = 32..144", TESTBED[p],
               mean(t(form, p, n) for n in sizes), "ms", 0.05, profile=P,
               note="matmul --distribute p2p (the paper's form)")
    worst2 = min(eff(form, 2, n) for n in sizes)
    sc.check("000-fig7-2node", "sec 4.2 Fig. 7", "2 nodes: parallel efficiency above 95 % at every N", ">= 95 % from N = 32",
             f"{worst2:.1f} % at worst", worst2 >= 95, "efficiency >= 95 % at every N", profile=P)
    for p, paper in ((4, 80), (8, 128)):
        got = first_from(form, p)
        below = [f"{eff(form, p, n):.1f}" for n in sizes if paper and n < paper]
        above = [f"{eff(form, p, n):.1f}" for n in sizes if n >= paper]
        sc.check(f"000-fig7-{p}node", "sec 4.2 Fig. 7", f"{p} nodes: 95 % efficiency and above from N = {paper} (and "
                 "below it before)", f"from N = {paper}", f"from N = {got}" if got else "never",
                 got == paper, "the smallest N from which the efficiency stays >= 95 % is the paper's (both sides)",
                 profile=P, note=f"efficiency below {paper}: {', '.join(below)}; from {paper}: {', '.join(above)} %",
                 cause=("the master sends B^T to each of the P - 1 slaves in turn over its one 1.28 Gb/s link "
                        "(sec 3.2): with the compute rate fitted on the 2-node curve that alone bounds the "
                        "efficiency below the paper's (seed000_matmul.md: the bound table); a broadcast does not (the collective form)")
                 if got != paper and (got is None or got > paper) else
                 "the model is more efficient than the testbed at small N: its communication costs less than "
                 "the testbed's there (MPI on the BDM MCP, whose costs seed 000 does not give, is assumed)")
    best = max(sizes, key=lambda n: eff(form, 16, n))
    sc.num("000-fig7-16node", "sec 4.2 Fig. 7", "16 nodes: the maximum efficiency (\"only 85 %\", largest matrices)", 85.0,
           eff(form, 16, best), "%", 0.05, profile=P, note=f"at N = {best}",
           cause="B^T to 15 slaves in turn over the master's link: 15 x N^2 x 4 B at 160 MB/s is 7.8 ms at "
                 "N = 144, a fifth of the computation; the testbed's 16-node system (Fig. 3b) is lost, the "
                 "18-node triangle of sec 2.1 stands in for it")
sc.write(out)

L = ["# Seed 000 sec 4.2, Figs. 6 and 7: the model alone", "",
     "Generated by `results/seed000_matmul.py` (profile `seed000-sbus`): each point is the model's communication alone "
     "(`mpisim study speedup --compute none`, deterministic) plus one rank's N^3/P multiply-adds at the testbed's "
     f"rate, {rate:.2f} ns" + (f" (the fitted rate x {args.rate_scale})" if args.rate_scale != 1 else "") +
     f", fitted on the 2-node mean alone (95.80 ms less the p2p form's {comm2:.3f} ms of communication; "
     "`results/calibrate_seed000.py`). matmul's two forms: `p2p` (the default, the paper's words: scored) and "
     "`collective` (MPI_Scatterv + MPI_Bcast: beside it, not scored)." +
     (f" With `--set {' '.join(args.set)}`." if args.set else ""), ""]
L += ["| nodes | testbed mean (ms) | " + " | ".join(f"{f} mean (ms) | vs testbed" for f in forms) + " |",
      "|---|---|" + "---|---|" * len(forms)]
for p in PROCS:
    cells = []
    for f in forms:
        m = mean(t(f, p, n) for n in sizes)
        cells += [f"{m:.2f}", f"{100 * (m / TESTBED[p] - 1):+.1f} %" if p in TESTBED else ""]
    L.append(f"| {p} | {TESTBED.get(p, '')} | " + " | ".join(cells) + " |")
for f in forms:
    L += ["", f"Efficiency (%), `--distribute {f}`" + (" (scored)" if f == "p2p" else "") + ":", "",
          "| nodes | " + " | ".join(f"N={n}" for n in sizes) + " | >= 95 % from N = | paper |",
          "|---|" + "---|" * (len(sizes) + 2)]
    for p in PROCS:
        paper = {2: "32", 4: "80", 8: "128", 16: "peak ~85 % at 144"}[p]
        L.append(f"| {p} | " + " | ".join(f"{eff(f, p, n):.1f}" for n in sizes) + f" | {first_from(f, p) or 'never'} | {paper} |")
if "p2p" in forms and "collective" in forms:
    L += ["", "Why the forms differ at 8 and 16 nodes: communication alone (ms) against the computation.", "",
          "| nodes | N | computation | comm. p2p | comm. collective | bound p2p | bound collective | paper |",
          "|---|---|---|---|---|---|---|---|"]
    for p, n, paper in ((8, 112, "< 95 %"), (8, 128, ">= 95 %"), (16, 144, "~85 %")):
        comp = n ** 3 / p * rate * 1e-6
        L.append(f"| {p} | {n} | {comp:.2f} | {comm['p2p'][(p, n)]:.3f} | {comm['collective'][(p, n)]:.3f} | "
                 f"{100 * comp / (comp + comm['p2p'][(p, n)]):.1f} % | "
                 f"{100 * comp / (comp + comm['collective'][(p, n)]):.1f} % | {paper} |")
    L += ["", "The bound is the efficiency with the computation split perfectly: N^3/P at the rate over that plus the "
          "communication alone. With P - 1 copies of B^T over the master's link the 8-node efficiency at N = 128 and "
          "the 16-node peak stay below the paper's whatever else costs; a broadcast tree (the collective form) "
          "passes them. The paper's text names point-to-point sends, so the scored rows use them and miss."]
L += ["", "## Scorecard rows", "", sc.markdown()]
for r in sc.rows:
    if r["status"] == "miss":
        L.append(f"- **{r['id']}**: {r['cause']}")
open(os.path.join(out, "seed000_matmul.md"), "w").write("\n".join(L) + "\n")
print("\n".join(L))
