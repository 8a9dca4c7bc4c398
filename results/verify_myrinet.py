#!/usr/bin/python3
"""Verification of the character-level myrinet engine against the analytic model of seed 000
(seed file 000_cbda115baaa6117c.txt, sec 2.2 eqs. 1-3, sec 3.1, sec 4.1, Table 2).

2 hosts on a 2x2 crossbar and 8 hosts on an 8x8 crossbar, payloads 4 B to 8 KB by powers of two,
uniform (fixed-rate) interarrival, uniformly distributed destinations; offered load 1.44 Gb/s
per host for throughput (saturated) and 160 Mb/s for latency; Table 2 parameters (profile
seed000-sbus) with network.engine=myrinet. Beside each figure: APET (eq. 2) and OWAL (eq. 3)
with C = 1 (2 nodes) and C = 1-(1-1/7)^7 = 0.66 (8 nodes, Table 2).

Differences are given in the paper's convention (sec 4.1: "on average approximately 1.02 Mb/s or
just 0.09% higher"): the mean difference over the 12 payloads divided by the mean analytic value.
Each statement of sec 4.1 is a scorecard row (results/scorecard.py): nothing of seed000-sbus is
calibrated, so all are predictions; a gap to the analytic model passes within twice the paper's
own gap (at least half a point: the text's precision), the other numbers within 5 %. The 8-node
latency is also measured at higher offered loads, fixed-rate and Poisson arrivals, to show what
the paper's 5.58 % would need.

Writes verify_myrinet.csv, .png, .md and scorecard.json into --out (default <build>/results/
verify_myrinet). The tool is <build>/bin/mpisim-net. About a minute.

usage: verify_myrinet.py [--build DIR] [--out DIR]
"""
import argparse
import csv
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import scorecard  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--build", default=os.environ.get("MPISIM_BUILD", os.path.join(here, "..", "build")))
ap.add_argument("--out", default=None)
args = ap.parse_args()
build = os.path.abspath(args.build)
out = os.path.abspath(args.out or os.path.join(build, "results", "verify_myrinet"))
os.makedirs(out, exist_ok=True)
tool = None
for cand in (os.path.join(build, "bin", "mpisim-net"), os.path.join(build, "mpisim-net")):
    if os.path.exists(cand):
        tool = cand
        break
if tool is None:
    sys.exit("verify_myrinet.py: no mpisim-net under %s (set MPISIM_BUILD to the build directory)" % build)

R = 1.28e9            # Table 2, Link Data Rate
L = 10.0              # Table 2, Length of Link
V = 1.8e8             # Table 2, Propagation Velocity
TAU_NS = 8 / R * 1e9  # one character, 6.25 ns
PAYLOADS = [4 << i for i in range(12)]   # 4 B .. 8 KB
C = {2: 1.0, 8: 1 - (1 - 1 / 7) ** 7}    # eq. 1 with N = 1 and N = 7 (sec 3.1)


def apet(n, p):   # eq. 2
    return R * C[n] * p / (p + 7)


def owal_ns(n, p):   # eq. 3
    return (8 * (1 + 3 + p + 1) / (R * C[n]) + 2 * L / V) * 1e9


def run(n, p, load, measure_ps, warmup_ps, inter="uniform"):
    cmd = [tool, "--profile", "seed000-sbus", "--topology", "crossbar:%d" % n,
           "--set", "network.engine=myrinet", "--traffic", "uniform", "--interarrival", inter,
           "--load", str(load), "--payload", str(p), "--seed", "1",
           "--warmup", str(warmup_ps), "--measure", str(measure_ps), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


rows = []
for n in (2, 8):
    for p in PAYLOADS:
        pkt_ps = (p + 7) * 8 / R * 1e12
        # throughput: >= 3000 packet times per window (window quantisation < 0.04%)
        meas = int(max(2e9, 3000 * pkt_ps))
        t = run(n, p, 1.44e9, meas, int(max(2e8, 50 * pkt_ps)))
        # latency: >= 300 packets per host at 160 Mb/s
        lat_meas = int(max(2e9, 300 * p * 8 / 160e6 * 1e12))
        lt = run(n, p, 160e6, lat_meas, int(max(1e8, 5 * p * 8 / 160e6 * 1e12)))
        rows.append({
            "nodes": n, "payload_B": p,
            "apet_bps": apet(n, p), "throughput_bps": t["throughput_bps_per_host"],
            "throughput_err_pct": 100 * (t["throughput_bps_per_host"] - apet(n, p)) / apet(n, p),
            "owal_ns": owal_ns(n, p), "latency_mean_ns": lt["latency_ns_mean"],
            "latency_min_ns": lt["latency_ns_min"], "latency_max_ns": lt["latency_ns_max"],
            "latency_p99_ns": lt["latency_ns_p99"],
            "latency_mean_err_pct": 100 * (lt["latency_ns_mean"] - owal_ns(n, p)) / owal_ns(n, p),
            "min_minus_eq3_C1_chars": (lt["latency_ns_min"] - owal_ns(2, p)) / TAU_NS,
            "dropped": t["dropped"] + lt["dropped"],
            "engine_error": t["engine_error"] + lt["engine_error"],
        })
        r = rows[-1]
        print("%d nodes %5d B: thr %.4g b/s (APET %.4g, %+.3f%%)  lat mean %.1f ns min %.1f (OWAL %.1f)"
              % (n, p, r["throughput_bps"], r["apet_bps"], r["throughput_err_pct"], r["latency_mean_ns"],
                 r["latency_min_ns"], r["owal_ns"]), flush=True)

with open(os.path.join(out, "verify_myrinet.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    for r in rows:
        w.writerow(r)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    for col, n in enumerate((2, 8)):
        rs = [r for r in rows if r["nodes"] == n]
        ps = [r["payload_B"] for r in rs]
        a = ax[0][col]
        a.plot(ps, [r["apet_bps"] / 1e6 for r in rs], "k--", label="analytic APET (eq. 2)")
        a.plot(ps, [r["throughput_bps"] / 1e6 for r in rs], "o-", label="myrinet engine")
        a.set_xscale("log", base=2)
        a.set_xlabel("payload (bytes)")
        a.set_ylabel("throughput per host (Mb/s)")
        a.set_title("%d nodes, offered 1.44 Gb/s (seed 000 fig. 4%s)" % (n, "a" if n == 2 else "b"))
        a.legend()
        a = ax[1][col]
        a.plot(ps, [r["owal_ns"] / 1e3 for r in rs], "k--", label="analytic OWAL (eq. 3)")
        a.plot(ps, [r["latency_mean_ns"] / 1e3 for r in rs], "o-", label="myrinet engine, mean")
        a.plot(ps, [r["latency_min_ns"] / 1e3 for r in rs], "x:", label="myrinet engine, min")
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("payload (bytes)")
        a.set_ylabel("latency (us)")
        a.set_title("%d nodes, offered 160 Mb/s (seed 000 fig. 5%s)" % (n, "a" if n == 2 else "b"))
        a.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "verify_myrinet.png"), dpi=110)
except ImportError as e:   # the CSV and the report do not need matplotlib
    print("no plot: %s" % e)

two = [r for r in rows if r["nodes"] == 2]
eight = [r for r in rows if r["nodes"] == 8]
avg = lambda xs: sum(xs) / len(xs)


def gap_pct(rs, ana, sim):
    """The paper's convention: mean (analytic - simulated) over the payloads / mean analytic, in %."""
    return 100 * avg([r[ana] - r[sim] for r in rs]) / avg([r[ana] for r in rs])


thr2_err = avg([r["throughput_err_pct"] for r in two])
thr2_gap = gap_pct(two, "apet_bps", "throughput_bps")
thr8_peak = max(r["throughput_bps"] for r in eight)
thr8_diff = avg([r["apet_bps"] - r["throughput_bps"] for r in eight])
thr8_gap = gap_pct(eight, "apet_bps", "throughput_bps")
thr8_pct_pp = avg([(r["apet_bps"] - r["throughput_bps"]) / r["apet_bps"] * 100 for r in eight])
lat2_gap = gap_pct(two, "owal_ns", "latency_mean_ns")
lat2_min = min(r["latency_min_ns"] for r in two)
lat8_curve_min = min(r["latency_mean_ns"] for r in eight)   # the latency curve's lowest point (4 B)
lat8_diff = avg([r["owal_ns"] - r["latency_mean_ns"] for r in eight])
lat8_gap = gap_pct(eight, "owal_ns", "latency_mean_ns")
lat8_pct_pp = avg([(r["owal_ns"] - r["latency_mean_ns"]) / r["owal_ns"] * 100 for r in eight])
k = sorted(set(round(r["min_minus_eq3_C1_chars"], 3) for r in two))

# What the paper's 5.58 % would take: the 8-node latency at higher offered loads, fixed-rate and
# Poisson arrivals (every payload, as above).
sweep = []
for inter in ("uniform", "exponential"):
    for load in (160e6, 320e6, 480e6, 640e6):
        lats = []
        for p in PAYLOADS:
            lat_meas = int(max(2e9, 300 * p * 8 / 160e6 * 1e12))
            lats.append(run(8, p, load, lat_meas, int(max(1e8, 5 * p * 8 / 160e6 * 1e12)), inter)["latency_ns_mean"])
        g = 100 * avg([owal_ns(8, p) - x for p, x in zip(PAYLOADS, lats)]) / avg([owal_ns(8, p) for p in PAYLOADS])
        sweep.append((inter, load, g, lats[-1] / min(r["latency_min_ns"] for r in eight if r["payload_B"] == 8192)))
        print("8 nodes, %s arrivals at %.0f Mb/s: %.2f %% below eq. 3" % (inter, load / 1e6, g), flush=True)
rho = 160e6 / R
md1 = 100 * rho / (2 * (1 - rho))   # M/D/1 waiting time over the service time

GAP_CAUSE = ("the engine counts 2 characters more than eq. 3 (12.5 ns per packet: a switch forwards a character "
             "once it has received it whole, and eq. 3 counts one character fewer than the source sends before "
             "the CRC ends)")
sc = scorecard.Scorecard("000", ["seed000-sbus"])
P = "seed000-sbus"


def gap_row(rid, quantity, paper, ours, cause=None):
    tol = max(2 * paper, 0.5)
    sc.check(rid, "sec 4.1 Fig. %s" % ("4" if "throughput" in quantity else "5"), quantity, "%g %%" % paper,
             "%.3g %%" % ours, abs(ours) <= tol, "the engine within %g %% of the analytic model (twice the paper's "
             "gap, at least 0.5 %%)" % tol, cause=cause, profile=P)


gap_row("000-v2-throughput", "2 nodes: analytic throughput (eq. 2) above the simulation, mean difference / mean",
        0.09, thr2_gap)
sc.num("000-v8-peak", "sec 4.1 Fig. 4", "8 nodes: peak throughput", 790, thr8_peak / 1e6, "Mb/s", 0.05, profile=P)
gap_row("000-v8-throughput", "8 nodes: throughput below eq. 2 with C = 0.66, mean difference / mean", 4.80, thr8_gap)
gap_row("000-v2-latency", "2 nodes: latency against OWAL (eq. 3), mean difference / mean", 0.0004, -lat2_gap,
        cause=GAP_CAUSE)
sc.check("000-v2-minlat", "sec 4.1 Fig. 5", "2 nodes: minimum latency", "< 0.17 us", "%.4f us" % (lat2_min / 1e3),
         lat2_min < 170, "below 0.17 us", profile=P, cause=GAP_CAUSE + "; eq. 3 itself gives %.4f us" % (owal_ns(2, 4) / 1e3))
sc.num("000-v8-minlat", "sec 4.1 Fig. 5", "8 nodes: the latency curve's minimum (4 B, mean)", 0.19, lat8_curve_min / 1e3,
       "us", 0.05, profile=P, note="\"just over 0.19 us\"")
need = [f"{x[1] / 1e6:.0f} Mb/s {x[0]}: {x[2]:.1f} %" for x in sweep]
sc.check("000-v8-latency", "sec 4.1 Fig. 5", "8 nodes: simulated latency below OWAL (eq. 3, C = 0.66), mean difference / "
         "mean", "5.58 %", "%.2f %%" % lat8_gap, abs(lat8_gap) <= 11.16, "within 11.16 %% (twice the paper's 5.58 %%)",
         profile=P, note="by offered load per host: " + "; ".join(need),
         cause="the stated offered load (160 Mb/s per host, 12.5 %% of a link, uniform destinations) leaves the 8x8 "
               "crossbar nearly uncontended: the engine's mean latency is %.3f x the uncontended at 8 KB, as an "
               "M/D/1 output queue at that load predicts (+%.1f %% waiting); the paper's simulated latency, %.2f %% "
               "below eq. 3, is about 1.43 x the uncontended at 8 KB, which the engine reaches near 640 Mb/s per host "
               "with fixed-rate arrivals or 320 Mb/s with Poisson ones (note): the paper's simulator saw more "
               "contention than its stated load gives, for a reason the text does not say" % (
                   sweep[0][3], md1, 5.58))
sc.write(out)

with open(os.path.join(out, "verify_myrinet.md"), "w") as f:
    f.write("# Verification of the myrinet engine (seed 000 sec 4.1)\n\n")
    f.write("Generated by `results/verify_myrinet.py` (profile seed000-sbus = Table 2, "
            "network.engine=myrinet, crossbar:2 and crossbar:8, uniform interarrival and "
            "destinations). Data: `verify_myrinet.csv`, plot: `verify_myrinet.png`. Differences in the paper's "
            "convention: the mean difference over the payloads over the mean analytic value (sec 4.1: \"1.02 Mb/s or "
            "just 0.09%%\"; earlier versions of this table averaged per-payload percentages instead).\n\n")
    f.write("| statement (seed 000 sec 4.1) | paper | mpisim myrinet engine |\n|---|---|---|\n")
    f.write("| 2-node throughput vs APET (eq. 2, C = 1) | analytic 0.09%% higher on average (1.02 Mb/s) "
            "| analytic %.4f%% higher (%.3f Mb/s; max abs. error per payload %.3f%%) |\n"
            % (thr2_gap, avg([r["apet_bps"] - r["throughput_bps"] for r in two]) / 1e6,
               max(abs(r["throughput_err_pct"]) for r in two)))
    f.write("| 8-node peak throughput | 790 Mb/s | %.0f Mb/s (8 KB) |\n" % (thr8_peak / 1e6))
    f.write("| 8-node throughput below APET (C = 0.66) | 34.4 Mb/s, 4.80%% on average | %.1f Mb/s, %.2f%% (per-payload "
            "mean: %.2f%%) |\n" % (thr8_diff / 1e6, thr8_gap, thr8_pct_pp))
    f.write("| 2-node latency vs OWAL (eq. 3) | 0.0004%% relative difference | %.3f%% above; min latency = eq. 3 + %s "
            "character times at every payload (see netmodel/README.md) |\n"
            % (-lat2_gap, ", ".join("%g" % x for x in k)))
    f.write("| 2-node minimum latency | < 0.17 us | %.4f us (eq. 3: %.4f us) |\n"
            % (lat2_min / 1e3, owal_ns(2, 4) / 1e3))
    f.write("| 8-node minimum latency | just over 0.19 us | %.4f us, the 4 B mean (eq. 3 with C = 0.66: %.4f us) |\n"
            % (lat8_curve_min / 1e3, owal_ns(8, 4) / 1e3))
    f.write("| 8-node mean latency below OWAL | 0.73 us, 5.58%% smaller | %.3f us, %.2f%% smaller (per-payload mean: "
            "%.2f%%) |\n" % (lat8_diff / 1e3, lat8_gap, lat8_pct_pp))
    f.write("\n| nodes | payload B | APET Mb/s | engine Mb/s | err %% | OWAL ns | mean ns | min ns | max ns |\n")
    f.write("|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write("| %d | %d | %.2f | %.2f | %+.3f | %.1f | %.1f | %.1f | %.1f |\n"
                % (r["nodes"], r["payload_B"], r["apet_bps"] / 1e6, r["throughput_bps"] / 1e6,
                   r["throughput_err_pct"], r["owal_ns"], r["latency_mean_ns"], r["latency_min_ns"],
                   r["latency_max_ns"]))
    f.write("\n## The 8-node latency: what the paper's 5.58 %% would take\n\n"
            "The engine's mean latency below eq. 3 (C = 0.66), the paper's convention, by offered load per host and "
            "arrival process; and the engine's 8 KB mean over the uncontended 8 KB latency:\n\n"
            "| arrivals | offered load per host | below eq. 3 | 8 KB mean / uncontended |\n|---|---|---|---|\n")
    for inter, load, g, ratio in sweep:
        f.write("| %s | %.0f Mb/s | %.2f %% | %.3f |\n" % ("fixed rate" if inter == "uniform" else "Poisson",
                                                           load / 1e6, g, ratio))
    f.write("\nAt the paper's 160 Mb/s (12.5 %% of a 1.28 Gb/s link, sec 3.1: \"sufficiently below saturation\") an "
            "output port of the crossbar is busy 12.5 %% of the time; an M/D/1 queue then waits %.1f %% of a packet's "
            "time on average, and the engine's 8 KB packets take %.3f x their uncontended time. The paper's simulated "
            "8-node latency, 5.58 %% below eq. 3, is about 1.43 x the uncontended latency at 8 KB (eq. 3 with "
            "C = 0.66 is 1.515 x it): the engine gets there near 640 Mb/s per host with fixed-rate arrivals, or "
            "between 320 and 480 Mb/s with Poisson ones. So the gap is the load (or the arrival process) of the "
            "paper's latency runs, not the engine's switch: its 2-node results and its 8-node throughput agree with "
            "the paper (rows above). Row 000-v8-latency stays a miss with this cause.\n" % (md1, sweep[0][3]))
    f.write("\nNotes. The engine's latency is measured from the packet's hand-over to the source NIC "
            "(= the start of its first character on an idle NIC with no NIC cost, as in Table 2) to the "
            "end of its CRC at the destination. It exceeds eq. 3 by a constant %s character times "
            "(6.25 ns each): the switch forwards a character once it has been received whole, and "
            "eq. 3 counts one character fewer than the source sends before the CRC ends (route + 4 "
            "type + P + CRC = P+6, eq. 3 counts P+5). The 8-node minimum over packets equals the 2-node one "
            "because an uncontended packet on an 8x8 crossbar meets no other: eq. 3's C = 0.66 spreads "
            "contention into every character, the engine models it as waiting for the output port. "
            "Dropped packets: %d; engine errors (slack-buffer overflow): %d.\n"
            % (", ".join("%g" % x for x in k), sum(r["dropped"] for r in rows),
               sum(r["engine_error"] for r in rows)))
    f.write("\n## Scorecard rows\n\n" + sc.markdown())
print("wrote %s" % ", ".join(os.path.join(out, "verify_myrinet" + e) for e in (".csv", ".png", ".md")))
