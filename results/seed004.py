#!/usr/bin/python3
"""Seed 004 (Millich, George, Oral, seed file 004_b89396d8c3611c14.txt) eqs. 1-12 as Figs. 2-4, 9,
10 and 13, each analytic curve beside the saturated all-to-all throughput per node that the
engines give on the same topologies (`mpisim net ... --traffic uniform --json`,
throughput_bps_per_host).

SCI: profile seed004-sci on sci-torus:R:F (1D ring, 2D, 3D). Myrinet: the seed's topologies
array:S:K (minimally connected), ring:S:K:4 (switch ring, 4 parallel links: the seed gives no
count) and clos64:N / clos:N, on profile seed004-myrinet when it exists, else the default profile
(1.28 Gb/s = 160 MB/s links, seed 004 Table 2) with 16-port switches.

Usage: seed004.py [--build DIR] [--out DIR] [--quick]
Writes seed004.csv, seed004_fig{2,3,4,9,10,13}.png and seed004.md into --out (default
<build>/results-seed004).
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--build", default=os.environ.get("MPISIM_BUILD", os.path.join(here, "..", "build")))
ap.add_argument("--out", default=None)
ap.add_argument("--quick", action="store_true")
args = ap.parse_args()
build = os.path.abspath(args.build)
out = os.path.abspath(args.out or os.path.join(build, "results-seed004"))
os.makedirs(out, exist_ok=True)
mpisim = os.path.join(build, "bin", "mpisim")
MB = 1e6

# ---- seed 004 sec 3.1, eqs. 1-5 (SCI) -------------------------------------------------------
EFF_SCI = 128 / 192          # sec 3.1: 128-byte payloads, 66.7 %
LINK_SCI, BLINK = 667 * MB, 640 * MB   # Table 1 gross
LINK_SCI_MEAS, BLINK_MEAS = 390 * MB, 360 * MB   # sec 3.2: measured saturation (Figs. 6, 8)


def sci_eq(r, f, link_eff=LINK_SCI * EFF_SCI, blink_eff=BLINK * EFF_SCI):
    n = r ** f
    hot_link = n * (r - 1) / 2                                   # eq. 1
    hot_blink = 2 * (n - 1) + sum((d - 1) * math.comb(f, d) * (r - 1) ** d for d in range(2, f + 1))   # eq. 2
    return (n - 1) / hot_link * link_eff, (n - 1) / hot_blink * blink_eff   # eqs. 4, 5


# ---- seed 004 sec 4.1, eqs. 6-12 (Myrinet) --------------------------------------------------
LINK_MYRI, LINK_MYRI_MEAS = 160 * MB, 144 * MB   # Table 2; sec 4.2 measured (Fig. 12)
M = 4096                     # message size of eq. 9: not given in the seed (GM's 4 KB MTU: a guess)


def h_mconn(s):              # eq. 7, as printed
    tot = sum(2 * i * (s - i) for i in range(s))
    return tot / (s * (s - 1)) if s == 2 else tot / (s - 1) ** 2


def h_ring(s):               # eq. 8
    return sum(math.ceil(i / 2) for i in range(s)) / (s - 1)


def myri_layout(kind, n):
    """(S switches, k hosts per switch, j switch ports per switch, h) for N nodes."""
    if kind == "array":
        s = max(1, math.ceil(n / 14))
        return s, n / s, 2 * (s - 1) / s, h_mconn(s) if s > 1 else 0
    if kind == "ring":
        s = max(1, math.ceil(n / 8))
        return s, n / s, (8 if s > 2 else 4 * (s - 1)), h_ring(s) if s > 1 else 0
    s = max(1, math.ceil(n / 8))     # clos64: leaves of 8, full bisection, h = 1 (sec 4.1)
    return s, n / s, 8, 1.0


def myri_eq(kind, n, link):
    s, k, j, h = myri_layout(kind, n)
    beff = link * M / (M + h + 6)                           # eqs. 3, 9
    if s == 1:
        return beff, beff
    hot = n * (n - k) * h / (j * s)                        # eq. 6
    b_sw2sw = min(beff, (n - k) / hot * beff)              # eq. 10 (a node's own link caps it)
    b_sw = beff                                            # eq. 11's text: full link bandwidth on one switch
    return b_sw2sw, ((n - k) * b_sw2sw + (k - 1) * b_sw) / (n - 1)   # eq. 12


# ---- simulations ------------------------------------------------------------------------------
def have_profile(name):
    """True when mpisim finds and loads profile `name`; False when it has no such profile; a profile
    that exists but does not load stops the script (never a silent fall-back to another profile)."""
    p = subprocess.run([mpisim, "config", "--profile", name], capture_output=True, text=True)
    if p.returncode == 0:
        return True
    dirs = [d for d in os.environ.get("MPISIM_PROFILE_PATH", "").split(":") if d]
    dirs.append(os.path.join(build, "share", "mpisim", "configs"))
    if any(os.path.exists(os.path.join(d, name + ".ini")) for d in dirs):
        sys.exit("seed004.py: profile %s does not load:\n%s" % (name, p.stderr))
    return False


MYRI_PROFILE = "seed004-myrinet" if have_profile("seed004-myrinet") else "default"


def net(profile, topo, payload, measure="300us", extra=()):
    cmd = [mpisim, "net", "--profile", profile, "--topology", topo, "--traffic", "uniform", "--load", "20Gb/s",
           "--payload", str(payload), "--warmup", "30us", "--measure", measure, "--seed", "1", "--json"] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("seed004.py: %s failed:\n%s" % (" ".join(cmd), p.stderr))
    return json.loads(p.stdout)["throughput_bps_per_host"] / 8


rows = []
SCI_CASES = {1: [2, 3, 4, 5, 6, 8, 10, 12, 16], 2: [2, 3, 4, 5, 6, 8], 3: [2, 3, 4, 5]}
if args.quick:
    SCI_CASES = {1: [4, 8], 2: [4], 3: [3]}
for f, radices in SCI_CASES.items():
    for r in radices:
        n = r ** f
        bl, bb = sci_eq(r, f)
        cl, cb = sci_eq(r, f, LINK_SCI_MEAS, BLINK_MEAS)
        sim = net("seed004-sci", "sci-torus:%d:%d" % (r, f), 128)
        rows.append(dict(network="SCI %dD" % f, topology="sci-torus:%d:%d" % (r, f), nodes=n, eq_link_MBps=bl / MB,
                         eq_blink_MBps=bb / MB, eq_MBps=min(bl, bb) / MB, calibrated_MBps=min(cl, cb) / MB,
                         sim_MBps=sim / MB))
        print(rows[-1], flush=True)

MYRI_CASES = {"array": [16, 28, 42, 56], "ring": [16, 32, 48, 64], "clos64": [16, 32, 64]}
if args.quick:
    MYRI_CASES = {"array": [28], "ring": [32], "clos64": [64]}
for kind, ns in MYRI_CASES.items():
    for n in ns:
        s, k, _, _ = myri_layout(kind, n)
        topo = {"array": "array:%d:%d" % (s, round(k)), "ring": "ring:%d:%d:4" % (s, round(k)),
                "clos64": "clos64:%d" % n}[kind]
        b2, ba = myri_eq(kind, n, LINK_MYRI)
        c2, ca = myri_eq(kind, n, LINK_MYRI_MEAS)
        sim = net(MYRI_PROFILE, topo, M, "200us", ["--set", "network.engine=myrinet"])
        rows.append(dict(network="Myrinet " + kind, topology=topo, nodes=n, eq_link_MBps=b2 / MB, eq_blink_MBps="",
                         eq_MBps=ba / MB, calibrated_MBps=ca / MB, sim_MBps=sim / MB))
        print(rows[-1], flush=True)

with open(os.path.join(out, "seed004.csv"), "w", newline="") as fo:
    w = csv.DictWriter(fo, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def fig(name, title, curves, sims):
        plt.figure(figsize=(6, 4))
        for label, xs, ys in curves:
            plt.plot(xs, ys, label=label)
        for label, xs, ys in sims:
            plt.plot(xs, ys, "o", label=label + " (engine)")
        plt.xlabel("nodes")
        plt.ylabel("available bandwidth per node (MB/s)")
        plt.title(title, fontsize=9)
        plt.grid(alpha=0.3)
        plt.legend(fontsize=7)
        plt.tight_layout()
        plt.savefig(os.path.join(out, name), dpi=100)
        plt.close()

    ns = list(range(2, 130))
    def sci_curve(f, i, link, blink):
        xs = [n for n in ns if round(n ** (1 / f)) ** f == n and round(n ** (1 / f)) >= 2]
        ys = []
        for n in xs:
            v = sci_eq(round(n ** (1 / f)), f, link, blink)
            ys.append((v[i] if i < 2 else min(v)) / MB)
        return xs, ys
    def sim_pts(net_name):
        pts = [r for r in rows if r["network"] == net_name]
        return [p["nodes"] for p in pts], [p["sim_MBps"] for p in pts]
    L, B = LINK_SCI * EFF_SCI, BLINK * EFF_SCI
    fig("seed004_fig2.png", "Fig. 2: SCI per node limited by the SCI links (eq. 4)",
        [("%dD" % f,) + sci_curve(f, 0, L, B) for f in (1, 2, 3)], [])
    fig("seed004_fig3.png", "Fig. 3: SCI per node limited by the B-Link (eq. 5)",
        [("%dD" % f,) + sci_curve(f, 1, L, B) for f in (1, 2, 3)], [])
    fig("seed004_fig4.png", "Fig. 4: SCI per node, min(eq. 4, eq. 5), and the sci engine",
        [("%dD" % f,) + sci_curve(f, 2, L, B) for f in (1, 2, 3)], [("SCI %dD" % f,) + sim_pts("SCI %dD" % f) for f in (1, 2, 3)])
    mn = list(range(2, 129))
    def myri_curve(kind, i, link):
        return mn, [myri_eq(kind, n, link)[i] / MB for n in mn]
    kinds = ("array", "ring", "clos64")
    fig("seed004_fig9.png", "Fig. 9: Myrinet switch-to-switch per node (eq. 10)",
        [(k,) + myri_curve(k, 0, LINK_MYRI) for k in kinds], [])
    fig("seed004_fig10.png", "Fig. 10: Myrinet overall per node (eq. 12), and the myrinet engine",
        [(k,) + myri_curve(k, 1, LINK_MYRI) for k in kinds], [("Myrinet " + k,) + sim_pts("Myrinet " + k) for k in kinds])
    fig("seed004_fig13.png", "Fig. 13: projected per node (calibrated: SCI 390/360, Myrinet 144 MB/s)",
        [("SCI %dD" % f,) + sci_curve(f, 2, LINK_SCI_MEAS, BLINK_MEAS) for f in (1, 2, 3)] +
        [("Myrinet " + k,) + myri_curve(k, 1, LINK_MYRI_MEAS) for k in kinds], [])
except ImportError:
    print("seed004.py: matplotlib missing, no plots")

md = ["# Seed 004 eqs. 1-12 and the engines (generated by results/seed004.py)", "",
      "Per-node available bandwidth for all-to-all traffic (MB/s): the seed's equations with the "
      "gross rates of Tables 1-2 (eq), calibrated with the measured saturations of sec 3.2 and 4.2 "
      "(Fig. 13: SCI link 390, B-Link 360, Myrinet 144 MB/s), and the engine's saturated uniform "
      "traffic (`mpisim net --traffic uniform`, throughput_bps_per_host / 8). Myrinet profile: %s." % MYRI_PROFILE, "",
      "| network | topology | nodes | eq. 4 / eq. 10 | eq. 5 | eq (min / eq. 12) | calibrated | engine | engine / eq |",
      "|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    md.append("| %s | %s | %d | %.1f | %s | %.1f | %.1f | %.1f | %.3f |" % (
        r["network"], r["topology"], r["nodes"], r["eq_link_MBps"],
        "%.1f" % r["eq_blink_MBps"] if r["eq_blink_MBps"] != "" else "", r["eq_MBps"], r["calibrated_MBps"],
        r["sim_MBps"], r["sim_MBps"] / r["eq_MBps"]))
with open(os.path.join(out, "seed004.md"), "w") as fo:
    fo.write("\n".join(md) + "\n")
print("\n".join(md))
