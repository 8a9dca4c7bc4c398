#!/usr/bin/python3
"""Seed 001 (Wyckoff & Chen, seed file 001_2ea627d3e7a0bb84.txt) reproduced on its four networks:
profiles seed001-gige, seed001-avici-gige, seed001-avici and seed001-myrinet, 256 ranks each.

The application cores of the slides are the programs of apps/: tokenring (token pass), fan
(fan-in / fan-out, 2048 B) and stencil (2D mesh and torus, 32-2048 B halos). Each program runs
once under `mpisim trace` (capture only, --compute none: seed 001 has "no host effects, no
software effects") and the trace is replayed under each profile with `mpisim replay --timeline`,
whose per-call virtual entry/exit times give:
  - token pass: each hop's latency (receive exit at rank r+1 minus send entry at rank r) for a
    1-byte token, min/avg/max/stdev over the 256 hops of one round; throughput of a 1 MiB token
    (bits / hop time, averaged over a round);
  - fan-in / fan-out: from the earliest exit of the barrier before the phase to the latest exit of
    the phase's last point-to-point call over all ranks (the app's own duration_s);
  - mesh: per rank, when it completed each iteration (its Waitall exits), from the earliest start.

Usage: seed001.py [--build DIR] [--out DIR] [--quick]
Writes into --out (default <build>/results-seed001): seed001.csv, seed001_mesh.csv,
seed001_mesh.png, seed001_completion.png, seed001.md; traces are kept there and reused.
--quick: token pass and fan only (no mesh). $MPISIM_BUILD also names the build directory.
"""
import argparse
import collections
import csv
import math
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--build", default=os.environ.get("MPISIM_BUILD", os.path.join(here, "..", "build")))
ap.add_argument("--out", default=None)
ap.add_argument("--quick", action="store_true")
ap.add_argument("--ranks", type=int, default=256)
args = ap.parse_args()
build = os.path.abspath(args.build)
out = os.path.abspath(args.out or os.path.join(build, "results-seed001"))
os.makedirs(out, exist_ok=True)
mpisim = os.path.join(build, "bin", "mpisim")
if not os.path.exists(mpisim):
    sys.exit("seed001.py: no %s (give --build)" % mpisim)
N = args.ranks

NETS = [  # (profile, label, seed 001 row)
    ("seed001-gige", "Conventional GigE"),
    ("seed001-avici-gige", "Avici GigE"),
    ("seed001-avici", "Avici fabric"),
    ("seed001-myrinet", "Myrinet"),
]
# seed 001, slide "Characterization results" (us; Mb/s) and slide "Fan results" (ms)
SEED = {
    "Myrinet": dict(lat=(0.388, 0.427, 0.869, 0.093), tput=1279.947, fanin=3.314, fanout=3.319),
    "Avici fabric": dict(lat=(0.180, 0.186, 0.330, 0.024), tput=None, fanin=0.233, fanout=0.233),
    "Avici GigE": dict(lat=(1.380, 1.386, 1.530, 0.024), tput=975.610, fanin=4.350, fanout=0.259),
    "Conventional GigE": dict(lat=(1.564, 1.595, 3.532, 0.244), tput=974.301, fanin=4.345, fanout=0.055),
}
MESH_SIZES = [32, 64, 128, 256, 512, 1024, 2048]
MESH_ITERS = 20


def trace(name, prog_args):
    """Capture one trace of an app under `mpisim trace` (kept in --out and reused)."""
    path = os.path.join(out, name + ".h5")
    if not os.path.exists(path):
        cmd = [mpisim, "trace", "--output", path, "--compute", "none", "-n", str(N), "--",
               os.path.join(build, "bin", prog_args[0])] + prog_args[1:]
        print("capturing", name, "...", flush=True)
        # a 256-rank capture of the stencil sometimes ends with a rank "exiting improperly" (Open
        # MPI's words; not understood yet, see results/seed001.md): try three times
        for attempt in range(3):
            # a failed try leaves its raw files in <trace>.raw, which the next capture refuses
            # unless told to replace it: this script's own try, so replace it
            retry = ["--replace-trace"] if attempt else []
            p = subprocess.run(cmd[:2] + retry + cmd[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, errors="replace")
            if p.returncode == 0:
                break
            print("  capture %d of %s failed (exit %d): %s" % (attempt + 1, name, p.returncode,
                  (p.stderr.strip().splitlines() or ["no message"])[-1]), flush=True)
            if os.path.exists(path):   # what a failed run left is not a trace of the program
                os.unlink(path)
        else:
            sys.exit("seed001.py: capturing %s failed three times: %s" % (name, " ".join(cmd)))
    return path


def replay(tr, profile):
    """Replay a trace under a profile; per rank, the list of (fn, entry_ps, exit_ps)."""
    tl = os.path.join(out, "%s.%s.timeline.csv" % (os.path.basename(tr)[:-3], profile))
    subprocess.run([mpisim, "replay", tr, "--profile", profile, "--quiet", "--report", os.devnull,
                    "--timeline", tl], check=True)
    calls = collections.defaultdict(list)
    with open(tl) as f:
        for r in csv.DictReader(f):
            calls[int(r["rank"])].append((r["fn"], int(r["entry_ps"]), int(r["exit_ps"])))
    os.unlink(tl)
    return calls


def barrier_phases(calls, p2p=("MPI_Send", "MPI_Recv", "MPI_Waitall", "MPI_Bcast"), from_root=False):
    """Per barrier-delimited phase k: (earliest barrier exit, or rank 0's, latest exit of a p2p call)."""
    ph = collections.defaultdict(lambda: [None, None])
    for rank, calls_r in sorted(calls.items()):
        k = -1
        for fn, _, ex in calls_r:
            if fn == "MPI_Barrier":
                k += 1
                if not from_root or rank == 0:
                    ph[k][0] = ex if ph[k][0] is None else min(ph[k][0], ex)
            elif k >= 0 and fn in p2p:
                ph[k][1] = ex if ph[k][1] is None else max(ph[k][1], ex)
    return [ph[k] for k in sorted(ph)]


def token_stats(calls, size_index, rounds, warmup):
    """Hop latencies of the token of the size_index-th size, one timed round (the first one).
    The token of size s: rank 0 does Send, Recv per round; rank r > 0 Recv, Send. Each size is
    preceded by one Barrier."""
    hops = []
    sends = {}
    recvs = {}
    for r, cl in calls.items():
        b = -1
        s_list, r_list = [], []
        for fn, en, ex in cl:
            if fn == "MPI_Barrier":
                b += 1
            elif b == size_index and fn == "MPI_Send":
                s_list.append(en)
            elif b == size_index and fn == "MPI_Recv":
                r_list.append(ex)
        sends[r], recvs[r] = s_list, r_list
    for rnd in range(warmup, warmup + rounds):
        for r in range(N):
            nxt = (r + 1) % N
            hops.append((recvs[nxt][rnd] - sends[r][rnd]) * 1e-6)   # us
    # whole timed rounds: rank 0's first timed send to its last receive
    total_us = (recvs[0][warmup + rounds - 1] - sends[0][warmup]) * 1e-6
    return hops, total_us / (rounds * N)


def stats(x):
    m = sum(x) / len(x)
    return min(x), m, max(x), math.sqrt(sum((v - m) ** 2 for v in x) / len(x))


def pct(ours, seed):
    return "%+.1f %%" % (100.0 * (ours - seed) / seed) if seed else ""


rows = []
TOK_BIG = 1 << 20
# two timed rounds, the first measured: in the last one, ranks that are done already run the next
# barrier, whose messages meet the token (seed 001: "no contention")
tok = trace("tokenring", ["tokenring", "--sizes", "1,%d" % TOK_BIG, "--rounds", "2", "--warmup", "1"])
fanin = trace("fanin", ["fan", "--op", "in", "--reps", "1"])
# seed 001's fan-out: one buffer to all (MPI_Bcast; the profiles' bcast algorithm 'multicast'
# makes it a switch multicast on conventional GigE, one message per node elsewhere), counted from
# the root's start as the app does
fanout = trace("fanout-bcast", ["fan", "--op", "out", "--fanout", "bcast", "--reps", "1"])
for prof, label in NETS:
    c = replay(tok, prof)
    lat, _ = token_stats(c, 0, 1, 1)
    _, hop_big_us = token_stats(c, 1, 1, 1)
    tput = TOK_BIG * 8 / hop_big_us   # Mb/s
    fi = barrier_phases(replay(fanin, prof))[0]
    fo = barrier_phases(replay(fanout, prof), from_root=True)[0]
    row = dict(network=label, profile=prof)
    row.update(zip(("lat_min_us", "lat_avg_us", "lat_max_us", "lat_stdev_us"), stats(lat)))
    row["token_Mbps"] = tput
    row["fanin_ms"] = (fi[1] - fi[0]) * 1e-9
    row["fanout_ms"] = (fo[1] - fo[0]) * 1e-9
    rows.append(row)
    print(label, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)

with open(os.path.join(out, "seed001.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)

mesh = []   # (network, topology, bytes, mean iteration us, completion spread us)
completion = {}
if not args.quick:
    for topo in ("mesh", "torus"):
        for b in MESH_SIZES:
            tr = trace("stencil-%s-%d" % (topo, b), ["stencil", "--dims", "2", "--" + topo, "--grid", "64",
                                                      "--iters", str(MESH_ITERS), "--msg", str(b), "--no-verify"])
            for prof, label in NETS:
                c = replay(tr, prof)
                t0 = min(next(ex for fn, _, ex in cl if fn == "MPI_Barrier") for cl in c.values())
                done = {r: [(ex - t0) * 1e-6 for fn, _, ex in cl if fn == "MPI_Waitall"][:MESH_ITERS]
                        for r, cl in c.items()}
                last = [d[-1] for d in done.values()]
                mesh.append((label, topo, b, max(last) / MESH_ITERS, max(last) - min(last)))
                if b == 256:
                    completion[(label, topo)] = done
    with open(os.path.join(out, "seed001_mesh.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["network", "topology", "bytes", "iteration_us", "completion_spread_us"])
        for r in mesh:
            w.writerow([r[0], r[1], r[2], "%.4f" % r[3], "%.4f" % r[4]])

# plots
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if mesh:
        fig, axs = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        for ax, topo in zip(axs, ("mesh", "torus")):
            for _, label in NETS:
                pts = [(r[2], r[3]) for r in mesh if r[0] == label and r[1] == topo]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("halo message (bytes)")
            ax.set_title("2D %s, 256 ranks" % topo)
            ax.grid(True, which="both", alpha=0.3)
        axs[0].set_ylabel("mean time per iteration (us)")
        axs[0].legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "seed001_mesh.png"), dpi=110)
        fig, axs = plt.subplots(2, 4, figsize=(16, 7))
        for j, (_, label) in enumerate(NETS):
            for i, topo in enumerate(("mesh", "torus")):
                ax = axs[i][j]
                done = completion[(label, topo)]
                for r in sorted(done):
                    ax.plot([r] * len(done[r]), done[r], ",", color="k")
                ax.set_title("%s, %s, 256 B" % (label, topo), fontsize=9)
                ax.set_xlabel("rank")
                ax.set_ylabel("iteration completed (us)")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "seed001_completion.png"), dpi=90)
except ImportError:
    print("seed001.py: matplotlib missing, no plots")

# report
L = ["# Seed 001 on mpisim: token pass, fan-in/out, mesh (generated by results/seed001.py)", "",
     "256 ranks, traces captured once with `mpisim trace --compute none` and replayed under each profile.",
     "Seed values: seed 001 slides \"Characterization results\" and \"Fan results\".", "",
     "| network | token latency min / avg / max / stdev (us): mpisim | seed 001 | throughput (Mb/s): mpisim | seed 001 |",
     "|---|---|---|---|---|"]
for r in rows:
    s = SEED[r["network"]]
    L.append("| %s | %.3f / %.3f / %.3f / %.3f | %.3f / %.3f / %.3f / %.3f | %.3f | %s |" % (
        r["network"], r["lat_min_us"], r["lat_avg_us"], r["lat_max_us"], r["lat_stdev_us"], *s["lat"],
        r["token_Mbps"], "%.3f (%s)" % (s["tput"], pct(r["token_Mbps"], s["tput"])) if s["tput"] else "-"))
L += ["", "| network | fan-in 2048 B (ms): mpisim | seed 001 | diff | fan-out (ms): mpisim | seed 001 | diff |",
      "|---|---|---|---|---|---|---|"]
for r in rows:
    s = SEED[r["network"]]
    L.append("| %s | %.3f | %.3f | %s | %.3f | %.3f | %s |" % (
        r["network"], r["fanin_ms"], s["fanin"], pct(r["fanin_ms"], s["fanin"]), r["fanout_ms"], s["fanout"],
        pct(r["fanout_ms"], s["fanout"])))
if mesh:
    L += ["", "Mesh (2D, 16 x 16 ranks, %d iterations): mean time per iteration (us) / spread of the last "
          "completion over ranks (us)" % MESH_ITERS, "",
          "| topology | bytes | " + " | ".join(l for _, l in NETS) + " |", "|---|---|" + "---|" * len(NETS)]
    for topo in ("mesh", "torus"):
        for b in MESH_SIZES:
            cells = []
            for _, label in NETS:
                r = next(x for x in mesh if x[0] == label and x[1] == topo and x[2] == b)
                cells.append("%.2f / %.2f" % (r[3], r[4]))
            L.append("| %s | %d | %s |" % (topo, b, " | ".join(cells)))
with open(os.path.join(out, "seed001.md"), "w") as f:
    f.write("\n".join(L) + "\n")
print("\n".join(L))
