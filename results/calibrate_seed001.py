#!/usr/bin/python3
"""The calibration of seed 001's networks (Wyckoff & Chen, seed file 001_2ea627d3e7a0bb84.txt):
every `calibrated:` value of configs/seed001-gige.ini and configs/seed001-avici.ini derived from
the one row of the slide "Characterization results" (token pass latency, min / avg / max / stdev)
that each network cannot do without, then checked against the profiles (default) or written into
them (--write). Avici GigE (seed001-avici-gige: the Avici fabric plus physical GigE host links)
and Myrinet (seed001-myrinet) take nothing from their rows: every figure of theirs, and every
throughput and fan figure, is a prediction (results/seed001.py).

Conventional GigE, row "Conventional GigE": 1.564 / 1.595 / 3.532 / 0.244 us
  - the 256 token hops in node order cross k switches 3 at a time and 1 otherwise:
    avg = min + k / 256 (max - min) -> k = 4, i.e. 4 edge switches of 64 hosts; the slides' 280
    cables and 5 switches leave (280 - 256) / 4 = 6 trunk links per edge switch (gige-tree:4:64:6);
    the stdev (max - min) sqrt(k/256 (1 - k/256)) = 0.244 checks it
  - a small message is one minimum frame with preamble, 72 B = 576 ns at 1 Gb/s per link (IEEE
    802.3, cited): min = 2 (576 ns + d) + s, max = 4 (576 ns + d) + 3 s, solved for the cable's
    delay d (network.link_length at the assumed velocity) and the switch's latency s
Avici fabric, row "Avici fabric": 0.180 / 0.186 / 0.330 / 0.024 us
  - hop_latency = (max - min) / 2: the farthest token hop crosses 2 more fabric hops
  - linecard_latency = (min - 2 flit times - 1 hop) / 2 (flit = payload + header at 20 Gb/s)
  - the torus: the X x Y x Z of 256 line cards (one node each, in order) whose token hops give
    avg and stdev (to the table's 3 decimals)

usage: calibrate_seed001.py [--build DIR] [--write]
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibration as cal  # noqa: E402

NODES = 256
GIGE = {"min": 1.564, "avg": 1.595, "max": 3.532, "stdev": 0.244}           # us
AVICI = {"min": 0.180, "avg": 0.186, "max": 0.330, "stdev": 0.024}          # us
CABLES, SWITCHES = 280, 5   # slide "Gigabit ethernet": 5 x $30 000 switch + 280 x $75 cable


def torus_hops(x, y, z):
    """Fabric hops of the token's 256 passes on an X x Y x Z torus, node i on card i in x-major order."""
    def coord(i):
        return i % x, (i // x) % y, i // (x * y)
    out = []
    for i in range(NODES):
        a, b = coord(i), coord((i + 1) % NODES)
        out.append(sum(min(abs(p - q), n - abs(p - q)) for p, q, n in zip(a, b, (x, y, z))))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("MPISIM_BUILD", os.path.join(here, "..", "build")))
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    bad = []

    # ---- conventional GigE ----
    g = cal.resolved(a.build, "seed001-gige")
    k = round(NODES * (GIGE["avg"] - GIGE["min"]) / (GIGE["max"] - GIGE["min"]))
    sd = (GIGE["max"] - GIGE["min"]) * math.sqrt(k / NODES * (1 - k / NODES))
    if abs(sd - GIGE["stdev"]) > 0.0015:
        sys.exit(f"calibrate_seed001.py: {k} crossings give a stdev of {sd:.3f} us, the row says {GIGE['stdev']}")
    trunks = (CABLES - NODES) // k
    frame_ns = (g["ethernet.min_frame"]["value"] + g["ethernet.preamble_bytes"]["value"]) * 8e9 / g["network.link_rate"]["value"]
    # min = 2 (f + d) + s; max = 4 (f + d) + 3 s  ->  d = (3 min - max) / 2 - f ... solved exactly:
    mn, mx = GIGE["min"] * 1e3, GIGE["max"] * 1e3   # ns
    d = (3 * mn - mx) / 2 - frame_ns
    s = mn - 2 * (frame_ns + d)
    vel = g["network.propagation_velocity"]["value"]
    derived_g = {"network.topology": f"gige-tree:{k}:{NODES // k}:{trunks}",
                 "network.link_length": f"{d * 1e-9 * vel:.3g} m",
                 "ethernet.switch_latency": f"{s:.3g} ns"}
    print(f"seed001-gige: {k} of {NODES} token hops cross three switches (stdev {sd:.3f} us), {trunks} trunks per edge "
          f"switch; cable {d:.2f} ns, switch {s:.1f} ns")
    for key, v in derived_g.items():
        print(f"  {key} = {v}")
    bad += [("seed001-gige",) + b for b in cal.check_or_write(a.build, "seed001-gige", derived_g, a.write)]

    # ---- Avici fabric ----
    v = cal.resolved(a.build, "seed001-avici")
    hop_ns = (AVICI["max"] - AVICI["min"]) / 2 * 1e3
    flit_ns = (v["avici.flit_payload"]["value"] + v["avici.flit_header"]["value"]) * 8e9 / v["avici.fabric_rate"]["value"]
    lc_ns = (AVICI["min"] * 1e3 - 2 * flit_ns - hop_ns) / 2
    shapes = []
    for x in range(1, NODES + 1):
        for y in range(1, NODES // x + 1):
            if NODES % (x * y):
                continue
            z = NODES // (x * y)
            if not (x >= y >= z):
                continue
            hops = torus_hops(x, y, z)
            base = min(hops)
            lat = [AVICI["min"] + (h - base) * hop_ns * 1e-3 for h in hops]
            avg = sum(lat) / NODES
            sdv = math.sqrt(sum((t - avg) ** 2 for t in lat) / NODES)
            if round(avg, 3) == AVICI["avg"] and round(sdv, 3) == AVICI["stdev"] and max(hops) - base == 2:
                shapes.append((x, y, z))
    if len(shapes) != 1:
        sys.exit(f"calibrate_seed001.py: the Avici fabric row fits {len(shapes)} torus shapes: {shapes}")
    x, y, z = shapes[0]
    derived_v = {"network.topology": f"avici:{x}:{y}:{z}:1", "avici.hop_latency": f"{hop_ns:.3g} ns",
                 "avici.linecard_latency": f"{lc_ns:.3g} ns"}
    print(f"seed001-avici: a {x} x {y} x {z} torus; hop {hop_ns:.1f} ns, line card {lc_ns:.2f} ns")
    for key, val in derived_v.items():
        print(f"  {key} = {val}")
    bad += [("seed001-avici",) + b for b in cal.check_or_write(a.build, "seed001-avici", derived_v, a.write)]
    if bad:
        print("the profiles differ from the derivation (run with --write to update them):")
        for p, key, have, want in bad:
            print(f"  {p} {key}: profile {have}, derived {want}")
        sys.exit(1)
    print("profiles " + ("updated" if a.write else "agree with the derivation"))


if __name__ == "__main__":
    main()
