#!/usr/bin/python3
"""Seed 004 (Millich, George, Oral, "A comparative throughput analysis of SCI and Myrinet", seed
file 004_b89396d8c3611c14.txt), the link saturation tests, model only (--compute none), scored:

  sec 4.2, Figs. 11-12 (Myrinet): senders on one 16-port switch stream to receivers on another
    through the single link between the switches (`--set network.topology=array:2:4`, profile
    seed004-myrinet: every link at 160 MB/s, sec 2.2); the paper measures at most 144 MB/s, 90 %
    of 160. Also, for comparison and not scored, the mechanism earlier versions fitted that
    figure with: NICs that stream at 144 MB/s (network.host_link_rate), which in a wormhole
    network pace the shared link too.
  sec 3.2, Figs. 5-6 (SCI): senders 0-3 stream to receivers 4-7 on an 8-node ring, every message
    through the link from node 3 to node 4 (profile seed004-sci, sci-torus:8:1); the paper: two
    senders twice one, the third saturates the link at 390 MB/s, 88 % of the link's 444 MB/s.

Both run apps/bisect (seed 004's modified mpptest bisection test: rank i sends to rank i + 4, the
pairs' throughputs added) with 1 to 4 sending pairs. Nothing of either profile is calibrated:
every row is a prediction. Tolerance 5 %: each figure is a loss of 10-12 % below the link's
theoretical rate, which a wider tolerance could not tell from no loss at all. Writes
seed004_fig12.md, .csv, .png and scorecard.json to --out (default: <build>/results/seed004).
About a minute (the character-level engine).

usage: seed004_fig12.py [--build DIR] [--out DIR] [--sizes LIST] [--iters K] [--set KEY=VALUE]...
"""
import argparse
import csv
import io
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import scorecard  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--build", default=os.environ.get("MPISIM_BUILD", os.path.join(here, "..", "build")))
ap.add_argument("--out", default=None)
ap.add_argument("--sizes", default="1k,4k,16k,64k", help="message sizes (the character-level engine "
                "takes about a minute per MB through the link)")
ap.add_argument("--iters", default="4")
ap.add_argument("--set", action="append", default=[], help="passed to the seed004-myrinet runs (sensitivity)")
args = ap.parse_args()
build = os.path.abspath(args.build)
out = os.path.abspath(args.out or os.path.join(build, "results", "seed004"))
os.makedirs(out, exist_ok=True)
MPISIM = os.path.join(build, "bin", "mpisim")
if not os.path.exists(MPISIM):
    sys.exit(f"seed004_fig12.py: no {MPISIM} (build first, or --build DIR)")
SEED_MBS, LINK_MBS = 144.0, 160.0
SCI_MBS, SCI_LINK_MBS = 390.0, 444.0
TOL = 0.05


def bisect(label, profile, senders, sets=(), topology="array:2:4", sizes=None):
    cmd = [MPISIM, "run", "--profile", profile, "--compute", "none", "--set", f"network.topology={topology}",
           "--report", os.path.join(out, "last-report.json")]
    for s in sets:
        cmd += ["--set", s]
    cmd += ["-n", "8", "--", os.path.join(build, "bin", "bisect"), "--senders", str(senders), "--sizes",
            sizes or args.sizes, "--iters", args.iters, "--warmup", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"seed004_fig12.py: {' '.join(cmd)} exited {p.returncode}\n{p.stderr[-3000:]}")
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in p.stdout.splitlines() if not l.startswith("#")))))
    for r in rows:
        r["profile"] = label
    print(f"  {label}, {senders} sender(s): " +
          ", ".join(f"{r['bytes']} B {float(r['total_MBps']):.1f} MB/s" for r in rows), flush=True)
    return rows


MYRI = "seed004-myrinet"
FIT = "what if: NICs at 144 MB/s"
SCI = "seed004-sci"
rows = []
for n in (1, 2, 3, 4):
    rows += bisect(MYRI, MYRI, n, args.set)
rows += bisect(FIT, MYRI, 4, list(args.set) + ["network.host_link_rate=144MB/s"])
for n in (1, 2, 3, 4):
    rows += bisect(SCI, SCI, n, topology="sci-torus:8:1", sizes="64k")
with open(os.path.join(out, "seed004_fig12.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)

sizes = sorted({int(r["bytes"]) for r in rows if r["profile"] == MYRI})
agg = {(r["profile"], int(r["pairs"]), int(r["bytes"])): float(r["total_MBps"]) for r in rows}
pairsum = {(r["profile"], int(r["pairs"]), int(r["bytes"])): float(r["aggregate_MBps"]) for r in rows}
big = max(sizes)
ours = agg[(MYRI, 4, big)]
sci = {n: agg[(SCI, n, 65536)] for n in (1, 2, 3, 4)}

sc = scorecard.Scorecard("004", [MYRI, SCI])
sc.num("004-fig12", "sec 4.2 Fig. 12", f"four senders through one inter-switch link ({big} B messages)", SEED_MBS, ours,
       "MB/s", TOL, profile=MYRI,
       note=f"{100 * ours / LINK_MBS:.1f} % of 160 MB/s; one sender alone {agg[(MYRI, 1, big)]:.1f} MB/s",
       cause="unknown: with every link at the 160 MB/s of sec 2.2 the model's link carries its rate less the "
             "packets' framing (4 KB packets: 0.2 %), already from one sender; the mechanisms the model has with "
             "cited values (packet format, GM's 4 KB MTU, stop/go flow control with 10 m cables, the NIC's "
             "64-bit/66 MHz PCI DMA at 533 MB/s) take no 10 % from a link that four senders keep busy. A NIC that "
             "streams slower than its link would (the what-if row: a worm holds every link of its path), but "
             "seed 004 gives no such rate for the M2L-PCI64A-2")
sc.num("004-fig6-sci-link", "sec 3.2 Fig. 6", "SCI link saturation: four senders through one ring link (64 KiB)", SCI_MBS,
       sci[4], "MB/s", TOL, profile=SCI, note=f"{100 * sci[4] / SCI_LINK_MBS:.0f} % of the link's 444 MB/s",
       cause="unknown: the sci engine carries the link's effective rate (Table 1's 667 MB/s at sec 3.1's 66.7 %) "
             "less echoes' and queueing's share; the testbed loses a further 12 % the seed does not explain")
ok = abs(sci[2] / (2 * sci[1]) - 1) <= 0.10 and sci[3] < 1.1 * sci[2] and abs(sci[4] / sci[3] - 1) <= 0.05
sc.check("004-fig6-sci-shape", "sec 3.2 Fig. 6", "SCI: two senders twice one; the third saturates the link",
         "2 = 2 x 1, then flat", ", ".join(f"{n}: {sci[n]:.0f}" for n in (1, 2, 3, 4)) + " MB/s", ok,
         "2 senders within 10 % of twice 1; 3 less than 10 % above 2; 4 within 5 % of 3", profile=SCI,
         cause="one sender alone nearly fills the link in the model: the testbed's single stream (about half the "
               "link) was limited by something at the sender (its adapter or its MPI) that the seed does not "
               "describe and the engine does not have")
sc.write(out)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
    for n in (1, 2, 3, 4):
        ax.plot(sizes, [agg[(MYRI, n, s)] for s in sizes], marker="o", label=f"{n} sender(s), seed004-myrinet")
    ax.plot(sizes, [agg[(FIT, 4, s)] for s in sizes], marker="x", linestyle=":", label="4 senders, NICs at 144 MB/s")
    ax.axhline(SEED_MBS, color="k", linestyle="--", linewidth=0.8, label="seed 004: 144 MB/s")
    ax.axhline(LINK_MBS, color="grey", linestyle=":", linewidth=0.8, label="link: 160 MB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (B)")
    ax.set_ylabel("aggregate throughput (MB/s)")
    ax.set_title("seed 004 Fig. 12: senders through one inter-switch link (array:2:4)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    bx.plot([1, 2, 3, 4], [sci[n] for n in (1, 2, 3, 4)], marker="o", label="seed004-sci, sci-torus:8:1")
    bx.axhline(SCI_MBS, color="k", linestyle="--", linewidth=0.8, label="seed 004: 390 MB/s")
    bx.axhline(SCI_LINK_MBS, color="grey", linestyle=":", linewidth=0.8, label="link: 444 MB/s effective")
    bx.set_xlabel("senders")
    bx.set_ylabel("aggregate throughput (MB/s)")
    bx.set_title("seed 004 Fig. 6: SCI senders through one ring link (64 KiB)", fontsize=10)
    bx.grid(True, alpha=0.3)
    bx.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "seed004_fig12.png"), dpi=110)
    plt.close(fig)
    plots = True
except ImportError:
    plots = False

with open(os.path.join(out, "seed004_fig12.md"), "w") as f:
    f.write("# Seed 004: link saturation, Myrinet (Figs. 11-12) and SCI (Figs. 5-6)\n\n")
    f.write("Generated by `results/seed004_fig12.py`: `apps/bisect` (the mpptest bisection test of seed 004 sec "
            "3.2, pairs' throughputs added) under `mpisim run --compute none`, 8 ranks: senders 0-3, receivers 4-7. "
            f"Myrinet: `--profile seed004-myrinet --set network.topology=array:2:4` (Fig. 11), {args.iters} messages "
            "per pair and size; SCI: `--profile seed004-sci --set network.topology=sci-torus:8:1`, every message through "
            "the link from node 3 to node 4 (Fig. 5). Seed: `004_b89396d8c3611c14.txt` sec 3.2, 4.2. Nothing of either "
            "profile is calibrated: every row is a prediction.\n\n")
    if args.set:
        f.write(f"With `--set {' '.join(args.set)}` on the Myrinet runs.\n\n")
    f.write(f"**Four senders, {big} B: {ours:.1f} MB/s through the link (seed 004: 144 MB/s, "
            f"{100 * (ours - SEED_MBS) / SEED_MBS:+.1f} %; {100 * ours / LINK_MBS:.1f} % of 160); the paper's sum of "
            f"the pairs' throughputs {pairsum[(MYRI, 4, big)]:.1f} MB/s.**\n\n")
    f.write("| message size (B) | 1 sender | 2 | 3 | 4 | 4, NICs at 144 MB/s (what if) |\n|---|---|---|---|---|---|\n")
    for s in sizes:
        f.write(f"| {s} | " + " | ".join(f"{agg[(MYRI, n, s)]:.1f}" for n in (1, 2, 3, 4)) +
                f" | {agg[(FIT, 4, s)]:.1f} |\n")
    f.write(f"""
Throughput in MB/s: all bytes over the time from the first sender's start to the last one's end
(the sum of the pairs' throughputs, the paper's way, overstates small or few messages whose pairs
do not all run at once; it is in the CSV). With every link at 160 MB/s (sec 2.2: "full-duplex 1.28
Gb/s (160MB/s) point-to-point links"; the NICs' too) the inter-switch link is the bottleneck and
carries its rate less the packets' framing, from one sender on; small messages pay MPICH-GM's
per-message costs (seed 003's structure: 16 KB eager limit, rendezvous with a FIN) and need more
senders to fill it. **The paper's 144 MB/s is not reproduced** (a miss in results/VALIDATION.md):
no mechanism the model has, with the values the seeds give, takes 10 % from a link four senders
keep busy. Earlier versions set the NICs' links to 144 MB/s (`network.host_link_rate`, the right
column): in a wormhole network a worm holds every link of its path while it streams, so the
shared link then carries the senders' packets one after another at the NICs' pace, 0.993 x the
rate, whatever it is. That fitted the figure with itself; seed 004 gives no NIC rate below the
link's.

SCI (Figs. 5-6), 64 KiB: {", ".join(f"{n} sender{'s' if n > 1 else ''} {sci[n]:.1f}" for n in (1, 2, 3, 4))} MB/s
(seed 004: two senders twice one, saturation at 390 MB/s from the third).

""")
    f.write(sc.markdown())
    for r in sc.rows:
        if r["status"] == "miss":
            f.write(f"\n- **{r['id']}**: {r['cause']}\n")
    if plots:
        f.write("\nPlot: `seed004_fig12.png`; data: `seed004_fig12.csv`; rows: `scorecard.json`.\n")
try:
    os.remove(os.path.join(out, "last-report.json"))
except OSError:
    pass
print(open(os.path.join(out, "seed004_fig12.md")).read())
