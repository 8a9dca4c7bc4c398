#!/usr/bin/python3
"""The validation scorecard: every seed figure the results/ scripts reproduce, with the paper's
value, mpisim's, the error, its kind (calibration or prediction), the tolerance and pass / miss,
and for each testbed how much each prediction moves under +-10 % of each calibrated parameter.

One command regenerates it from the tools alone:

    /usr/bin/python3 results/validation.py --build build [--out DIR] [--publish]

It checks that each profile still equals its calibration (results/calibrate_seed00{0,1,3}.py),
runs every scoring script into DIR (default <build>/validation) -- verify_myrinet.py and
seed000_matmul.py (seed 000), seed001.py --quick (001), routing_seed002.py --no-root-scan (002),
seed003.py (003), seed004.py and seed004_fig12.py (004) -- gathers their scorecard*.json, checks
the kinds (a row is calibration exactly when a profile's calibrated value, or a script's own
calibration, names it; no such row appears as a prediction), then reruns the calibrated
parameters' scripts at -10 % and +10 % of each, and writes DIR/VALIDATION.md (and, with
--publish, results/VALIDATION.md: the committed copy). Every run is model-only (--compute none,
replays, the network tool): the tables do not depend on this machine or its load. About 30
minutes on the 2-core machine (--no-sensitivity: about 20; --reuse DIR takes the scripts' outputs
of an earlier run instead of running them again).

usage: validation.py [--build DIR] [--out DIR] [--publish] [--no-sensitivity] [--reuse] [-j N]
"""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import calibration as cal  # noqa: E402
import scorecard  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--build", default=os.environ.get("MPISIM_BUILD", os.path.join(HERE, "..", "build")))
ap.add_argument("--out", default=None)
ap.add_argument("--publish", action="store_true", help="also write results/VALIDATION.md (the committed copy)")
ap.add_argument("--no-sensitivity", action="store_true")
ap.add_argument("--reuse", action="store_true", help="use the scripts' outputs already in --out")
ap.add_argument("-j", type=int, default=2, help="scripts run at once in the sensitivity study")
a = ap.parse_args()
build = os.path.abspath(a.build)
out = os.path.abspath(a.out or os.path.join(build, "validation"))
os.makedirs(out, exist_ok=True)
PY = "/usr/bin/python3"
t_start = time.time()
load0 = os.getloadavg()[0]
log = open(os.path.join(out, "validation.log"), "a")


def run(script, args, name, quiet=True):
    """Run results/<script> with --build, --out OUT/<name>; returns its out dir and wall seconds."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    cmd = [PY, os.path.join(HERE, script), "--build", build, "--out", d] + list(args)
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    log.write(f"$ {' '.join(cmd)}\n{p.stdout[-20000:]}\n{p.stderr[-20000:]}\n")
    log.flush()
    if p.returncode not in (0, 1) or not glob.glob(os.path.join(d, "scorecard*.json")):
        sys.exit(f"validation.py: {' '.join(cmd)} exited {p.returncode}\n{p.stderr[-3000:]}")
    if not quiet:
        print(f"  {script} {' '.join(args)}: {time.time() - t0:.0f} s", flush=True)
    return d, time.time() - t0


# ---- 1. the calibrations still hold ---------------------------------------------------------
print("validation.py: calibrations", flush=True)
cal_status = {}
for c in ("calibrate_seed000.py", "calibrate_seed001.py", "calibrate_seed003.py"):
    p = subprocess.run([PY, os.path.join(HERE, c), "--build", build], capture_output=True, text=True)
    log.write(p.stdout + p.stderr)
    cal_status[c] = "agrees" if p.returncode == 0 else "DIFFERS"
    print(f"  {c}: {cal_status[c]}", flush=True)

# ---- 2. the scoring scripts -----------------------------------------------------------------
SCRIPTS = [  # (seed, script, args, out name)
    ("000", "verify_myrinet.py", [], "verify_myrinet"),
    ("000", "seed000_matmul.py", [], "seed000_matmul"),
    ("001", "seed001.py", ["--quick"], "seed001"),
    ("002", "routing_seed002.py", ["--no-root-scan", "-j", "2", "--t2-loads", "0.005"], "routing_seed002"),
    ("003", "seed003.py", ["--no-plots"], "seed003"),
    ("004", "seed004.py", [], "seed004"),
    ("004", "seed004_fig12.py", [], "seed004_fig12"),
]
walls = {}
print("validation.py: scoring scripts", flush=True)
for seed, script, args, name in SCRIPTS:
    d = os.path.join(out, name)
    if a.reuse and glob.glob(os.path.join(d, "scorecard*.json")):
        print(f"  {script}: reused", flush=True)
        continue
    _, walls[script] = run(script, args, name, quiet=False)

rows = []
for seed, script, args, name in SCRIPTS:
    for f in sorted(glob.glob(os.path.join(out, name, "scorecard*.json"))):
        j = json.load(open(f))
        if j["calibrations_without_row"]:
            sys.exit(f"validation.py: {script}: calibrations with no row: {j['calibrations_without_row']}")
        for r in j["rows"]:
            r["script"] = script
            rows.append(r)

# ---- 3. the kinds ---------------------------------------------------------------------------
ids = [r["id"] for r in rows]
dups = sorted({i for i in ids if ids.count(i) > 1})
if dups:
    sys.exit(f"validation.py: rows twice: {dups}")
declared = {}
for path in sorted(glob.glob(os.path.join(cal.CONFIGS, "seed*.ini"))):
    name = os.path.basename(path)[:-4]
    for e in cal.read_profile(name):
        if e.kind == "calibrated":
            for rid in e.row_ids:
                declared.setdefault(rid, []).append(f"{name}: {e.name}")
declared["000-fig6-2node"] = ["cli/study.c SEED000_NS_PER_MAC (results/calibrate_seed000.py)"]
by_id = {r["id"]: r for r in rows}
problems = []
for rid, what in declared.items():
    if rid not in by_id:
        problems.append(f"calibrated value(s) {what} name row {rid}, which no script scores")
    elif by_id[rid]["kind"] != "calibration":
        problems.append(f"row {rid} is fitted on ({what}) but scored as a prediction")
for r in rows:
    if r["kind"] not in ("calibration", "prediction"):
        problems.append(f"row {r['id']} has no kind")
    if r["kind"] == "calibration" and r["id"] not in declared:
        problems.append(f"row {r['id']} is calibration but no profile or script names it")
if problems:
    sys.exit("validation.py: kinds inconsistent:\n  " + "\n  ".join(problems))

# ---- 4. sensitivity -------------------------------------------------------------------------
SENS = {  # testbed: [(label, [keys varied together])]; calibrated parameters only
    "003": [("o = o_s + o_r (mpi.send_overhead, mpi.recv_overhead)", ["mpi.send_overhead", "mpi.recv_overhead"]),
            ("host.nic_send_cost (g)", ["host.nic_send_cost"]),
            ("host.nic_recv_cost", ["host.nic_recv_cost"]),
            ("host.dma_setup", ["host.dma_setup"]),
            ("host.send_copy_rate, host.recv_copy_rate", ["host.send_copy_rate", "host.recv_copy_rate"]),
            ("host.bsend_overhead", ["host.bsend_overhead"]),
            ("host.shm_latency", ["host.shm_latency"]),
            ("host.shm_copy_rate", ["host.shm_copy_rate"]),
            ("host.shm_memory_rate", ["host.shm_memory_rate"])],
    "001": [("seed001-gige: ethernet.switch_latency", "seed001-gige", ["ethernet.switch_latency"]),
            ("seed001-gige: network.link_length", "seed001-gige", ["network.link_length"]),
            ("seed001-avici(-gige): avici.hop_latency", "seed001-avici-gige", ["avici.hop_latency"]),
            ("seed001-avici(-gige): avici.linecard_latency", "seed001-avici-gige", ["avici.linecard_latency"])],
}
sens = {}   # testbed -> {label: {sign: {row id: mpisim value}}}


def scaled(profile, keys, f):
    cfg = cal.resolved(build, profile)
    return [f"{k}={cfg[k]['value'] * f:.10g}" for k in keys]


def values(d):
    """{row id: (mpisim's value, status)} of a script's output folder."""
    v = {}
    for fj in glob.glob(os.path.join(d, "scorecard*.json")):
        for r in json.load(open(fj))["rows"]:
            v[r["id"]] = (r["mpisim"], r["status"])
    return v


if not a.no_sensitivity:
    print("validation.py: sensitivity (+-10 % of each calibrated parameter)", flush=True)
    jobs = []
    for label, keys in SENS["003"]:
        for sign, f in (("-", 0.9), ("+", 1.1)):
            sets = [x for s in scaled("seed003-ecard", keys, f) for x in ("--set", s)]
            jobs.append(("003", label, sign, "seed003.py", sets + ["--no-plots"], f"sens/003/{keys[0]}{sign}"))
    for label, prof, keys in SENS["001"]:
        for sign, f in (("-", 0.9), ("+", 1.1)):
            sets = [x for s in scaled(prof, keys, f) for x in ("--set", s)]
            for p_ in ([prof] if prof != "seed001-avici-gige" else ["seed001-avici-gige", "seed001-avici"]):
                jobs.append(("001", label, sign, "seed001.py", ["--quick", "--only", p_, "--traces",
                             os.path.join(out, "seed001")] + sets, f"sens/001/{p_}-{keys[0]}{sign}"))
    for j in jobs:   # the table's order is the jobs' order, not the order they finish in
        sens.setdefault(j[0], {}).setdefault(j[1], {}).setdefault(j[2], {})
    with cf.ThreadPoolExecutor(max_workers=a.j) as ex:
        futs = {ex.submit(run, j[3], j[4], j[5]): j for j in jobs}
        for fu in cf.as_completed(futs):
            j = futs[fu]
            d, _ = fu.result()
            sens.setdefault(j[0], {}).setdefault(j[1], {}).setdefault(j[2], {}).update(values(d))
    # seed 000: the compute rate, from seed000_matmul.csv (communication alone at every point)
    import csv as _csv
    pts = list(_csv.DictReader(open(os.path.join(out, "seed000_matmul", "seed000_matmul.csv"))))
    base0 = {r["id"]: r for r in rows if r["seed"] == "000" and r["script"] == "seed000_matmul.py"}
    comm = {(r["form"], int(r["P"]), int(r["N"])): float(r["comm_alone_ms"]) for r in pts}
    times = {(r["form"], int(r["P"]), int(r["N"])): float(r["time_ms"]) for r in pts}
    sizes = sorted({k[2] for k in comm})
    # recover the rate from one point: time = N^3/P x rate + comm
    rate = (times[("p2p", 2, 144)] - comm[("p2p", 2, 144)]) / (144 ** 3 / 2)
    lab = "testbed compute rate (cli/study.c SEED000_NS_PER_MAC)"
    for sign, f in (("-", 0.9), ("+", 1.1)):
        t = lambda p, n: n ** 3 / p * rate * f + (comm[("p2p", p, n)] if p > 1 else 0.0)
        eff = lambda p, n: 100 * t(1, n) / (p * t(p, n))
        v = {"000-fig6-4node": sum(t(4, n) for n in sizes) / len(sizes),
             "000-fig6-8node": sum(t(8, n) for n in sizes) / len(sizes),
             "000-fig7-16node": max(eff(16, n) for n in sizes)}
        for p, paper in ((4, 80), (8, 128)):
            first = None
            for n in sizes:
                first = (n if first is None else first) if eff(p, n) >= 95 else None
            v[f"000-fig7-{p}node"] = f"from N = {first}" if first else "never"
        st = {"000-fig6-4node": abs(v["000-fig6-4node"] / 48.05 - 1) <= 0.05,
              "000-fig6-8node": abs(v["000-fig6-8node"] / 25.11 - 1) <= 0.05,
              "000-fig7-16node": abs(v["000-fig7-16node"] / 85 - 1) <= 0.05,
              "000-fig7-4node": v["000-fig7-4node"] == "from N = 80", "000-fig7-8node": v["000-fig7-8node"] == "from N = 128"}
        sens.setdefault("000", {}).setdefault(lab, {})[sign] = {k: (x, "pass" if st[k] else "miss") for k, x in v.items()}

# ---- 5. the report --------------------------------------------------------------------------
SEEDS = {"000": "seed 000 (George & VanLoon): SBus Myrinet testbed, seed000-sbus",
         "001": "seed 001 (Wyckoff & Chen): 256-node GigE, Avici and Myrinet, seed001-*",
         "002": "seed 002 (Flich et al.): UD vs ITB routing, seed002-pci",
         "003": "seed 003 (Qian, Afsahi, Zamani): E-card cluster, seed003-ecard",
         "004": "seed 004 (Millich, George, Oral): Myrinet and SCI, seed004-myrinet, seed004-sci"}
FILES = {"000": "000_cbda115baaa6117c.txt", "001": "001_2ea627d3e7a0bb84.txt", "002": "002_f6a717de313a5387.txt",
         "003": "003_99118bf692f3fa3b.txt", "004": "004_b89396d8c3611c14.txt"}
npred = sum(r["kind"] == "prediction" for r in rows)
wall = time.time() - t_start
L = ["# Validation scorecard", "",
     "Generated by `/usr/bin/python3 results/validation.py --build build --publish` (do not edit by hand). Every row "
     "is one figure of a seed (the seed files are named per seed below, quoted by section): the "
     "paper's value, mpisim's, the error, its kind, the rule that scores it and pass or miss. A row is *calibration* "
     "when a profile's calibrated value names it (`configs/README.md`: `calibrated: <seed file> <figure> [row]`) or, "
     "for seed 000's compute rate, `results/calibrate_seed000.py`; every other row is a *prediction* from the "
     "declared calibration. Misses stay misses, each with its cause or \"unknown\". Every run is model-only "
     "(`--compute none`, trace replays, the network tool): nothing here depends on the machine or its load.", "",
     f"**{len(rows)} rows: {len(rows) - npred} calibration, {npred} predictions ({100 * npred / len(rows):.0f} %); "
     f"predictions: {sum(r['kind'] == 'prediction' and r['status'] == 'pass' for r in rows)} pass, "
     f"{sum(r['kind'] == 'prediction' and r['status'] == 'miss' for r in rows)} miss.**", "",
     "| seed | rows | calibration | predictions | predictions pass | predictions miss | calibration rows pass |",
     "|---|---|---|---|---|---|---|"]
for s in SEEDS:
    rs = [r for r in rows if r["seed"] == s]
    pr = [r for r in rs if r["kind"] == "prediction"]
    cr = [r for r in rs if r["kind"] == "calibration"]
    L.append(f"| {s} | {len(rs)} | {len(cr)} | {len(pr)} | {sum(r['status'] == 'pass' for r in pr)} | "
             f"{sum(r['status'] == 'miss' for r in pr)} | {sum(r['status'] == 'pass' for r in cr)} of {len(cr)} |")
L += ["", "Calibrations checked against their profiles: " +
      ", ".join(f"`{c}` {s}" for c, s in cal_status.items()) + ". " +
      f"Run: {wall / 60:.0f} min wall, load average {load0:.1f} at the start and {os.getloadavg()[0]:.1f} at the end "
      f"on {os.cpu_count()} CPUs" + ("" if not walls else " (" + ", ".join(f"{k} {v:.0f} s" for k, v in walls.items()) + ")") +
      ". Each script's own report, with plots and the figures' full curves, is in its output folder.", ""]
for s, title in SEEDS.items():
    rs = [r for r in rows if r["seed"] == s]
    L += [f"## {title}", "", f"Seed file `{FILES[s]}`. Scripts: " +
          ", ".join(sorted({f"`results/{r['script']}`" for r in rs})) + ".", "",
          "| id | figure | quantity | paper | mpisim | error | kind | tolerance | status |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in rs:
        L.append("| " + " | ".join([r["id"], r["where"], r["quantity"].replace("|", "/"),
                                    scorecard.fmt(r["paper"], r["unit"]), scorecard.fmt(r["mpisim"], r["unit"]),
                                    scorecard.fmt_err(r), r["kind"], r["rule"], r["status"]]) + " |")
    cals = [r for r in rs if r["kind"] == "calibration"]
    if cals:
        L += ["", "Fitted on the calibration rows: " + "; ".join(f"{r['id']}: {', '.join(r['fitted'])}" for r in cals) + "."]
    miss = [r for r in rs if r["status"] == "miss"]
    if miss:
        L += ["", "Misses and their causes:", ""]
        for r in miss:
            L.append(f"- **{r['id']}**: {r['cause']}" + (f" ({r['note']})" if r["note"] else ""))
    L.append("")

L += ["## Sensitivity: +-10 % of each calibrated parameter", ""]
if a.no_sensitivity:
    L += ["Not run (`--no-sensitivity`).", ""]
for s in ("000", "001", "003"):
    if s not in sens:
        continue
    base = {r["id"]: (r["mpisim"], r["status"]) for r in rows if r["seed"] == s}
    labels = list(sens[s])
    ids_s = [r["id"] for r in rows if r["seed"] == s and r["kind"] == "prediction"
             and any(r["id"] in sens[s][l].get("-", {}) for l in labels)]
    L += [f"### {SEEDS[s]}", "",
          "Change of each prediction (%, mpisim's value at -10 % / +10 % of the parameter against the profile's); "
          "a statement row shows its status at -10 % / +10 %, \"same\" where neither its result nor its status "
          "moves; a status that differs from the profile's is in bold:", "",
          "| prediction | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for rid in ids_s:
        cells = []
        for l in labels:
            v0, s0 = base.get(rid, (None, None))
            lo, hi = sens[s][l].get("-", {}).get(rid), sens[s][l].get("+", {}).get(rid)
            if lo is None or hi is None:
                cells.append("")
                continue
            mark = lambda st: st if st == s0 else f"**{st}**"
            if isinstance(v0, (int, float)) and isinstance(lo[0], (int, float)) and isinstance(hi[0], (int, float)) and v0:
                flip = "" if lo[1] == s0 and hi[1] == s0 else f" ({mark(lo[1])} / {mark(hi[1])})"
                cells.append(f"{100 * (lo[0] / v0 - 1):+.1f} / {100 * (hi[0] / v0 - 1):+.1f}{flip}")
            elif lo == (v0, s0) and hi == (v0, s0):
                cells.append("same")
            else:
                cells.append(f"{mark(lo[1])} / {mark(hi[1])}")
        L.append(f"| {rid} | " + " | ".join(cells) + " |")
    L.append("")
L += ["Seeds 002 and 004 have no calibrated parameter (their profiles are cited and assumed values only): their "
      "predictions move with no fitted value. Assumed values carry their ranges in the profiles "
      "(`mpisim config --describe KEY`).", ""]

L += ["## Figures not scored", "",
      "- seed 000 sec 4.3, Fig. 8 (case study): `results/casestudy.py` reproduces it from a trace with measured "
      "computation; its statements are orderings read off a lost figure.",
      "- seed 000 sec 4.2, the co-simulation with measured computation (`results/seed000_validation.py`, the main job "
      "`mpisim study speedup`): the same figures as `seed000_matmul.py` here, with this machine's noise.",
      "- seed 001 slides \"Mesh latency results\" and \"Mesh completion times\": orderings of lost figures "
      "(`results/seed001.py` without --quick tabulates the stencil runs).",
      "- seed 002 Table 4 and sec 5.5.2 (hotspot on the regular topologies): not run by `routing_seed002.py`.",
      "- seed 003 Fig. 9's collective times other than the barrier: the figure is lost, the text gives only the order.",
      "- seed 004 Figs. 7-8 (B-Link saturation, 360 MB/s): the test needs senders and receivers placed so that every "
      "packet changes rings at one node, which apps/bisect cannot place; Figs. 14-15 are prices.", ""]
L += ["## Regenerate", "",
      "`/usr/bin/python3 results/validation.py --build build` writes `build/validation/VALIDATION.md` and each script's "
      "outputs beside it; `--publish` also replaces `results/VALIDATION.md`. The calibration scripts "
      "(`results/calibrate_seed00{0,1,3}.py`) check the profiles (`--write` updates them); `tests/results` runs them.", ""]
text = "\n".join(L) + "\n"
open(os.path.join(out, "VALIDATION.md"), "w").write(text)
json.dump({"rows": rows, "sensitivity": sens}, open(os.path.join(out, "validation.json"), "w"), indent=1)
if a.publish:
    open(os.path.join(HERE, "VALIDATION.md"), "w").write(text)
print(text)
