#!/usr/bin/python3
"""Replay memory: peak resident size of `mpisim replay` on large traces ("traces read
per rank as the replay streams").

Usage: bench_replay_memory.py [--quick] BUILD_DIR [OTHER_BUILD_DIR]
Writes synthetic traces with BUILD_DIR's synth_tool, then replays each with every given build's
`mpisim replay`, alternating builds, and prints per run the wall time, the replay process's peak
resident size and its reader child's (VmHWM, read from /proc while they run; the reader is the
guarded HDF5 reader's child process), and the report's virtual time and messages (which must
agree between builds).
Traces: the 4096-rank fan (10 repetitions, about 1.06 M messages) on torus2d:16:16:16 with
up*/down* (--quick: 1024 ranks on torus2d:8:8:16), and a 2-rank ping-pong at two lengths
(memory must not grow with the length).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
quick = "--quick" in sys.argv
if not args:
    sys.exit(__doc__)
builds = args
tmp = tempfile.mkdtemp(prefix="mpisim-replaymem-")


def hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def run(build, trace, sets):
    report = os.path.join(tmp, "r.json")
    cmd = ["nice", "-n", "10", os.path.join(build, "bin", "mpisim"), "replay", trace, "--report", report, "-q"]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd)
    peak, child_peak = 0, 0
    while p.poll() is None:
        peak = max(peak, hwm(p.pid))   # nice execs mpisim
        for c in children(p.pid):        # the reader
            child_peak = max(child_peak, hwm(c))
        time.sleep(0.02)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit status {p.returncode}")
    with open(report) as f:
        r = json.load(f)["summary"]
    return wall, peak, child_peak, r["virtual_time_ps"], r["msgs_sent"]


synth = os.path.join(builds[0], "bin", "synth_tool")
n, topo = (1024, "torus2d:8:8:16") if quick else (4096, "torus2d:16:16:16")
traces = [(f"fan {n} ranks", "fan", n, 10, 2048, 0, [f"network.topology={topo}", "network.routing=updown"])]
for iters in (20000, 80000):
    traces.append((f"pingpong 2 ranks x {iters}", "pingpong", 2, iters, 64, 1000, ["network.engine=analytic"]))
for name, shape, ranks, iters, size, comp, sets in traces:
    path = os.path.join(tmp, f"{shape}{ranks}_{iters}.h5")
    subprocess.run([synth, "h5", shape, str(ranks), str(iters), str(size), str(comp), path], check=True)
    mb = os.path.getsize(path) / 1e6
    for b in builds:
        wall, peak, child, vt, msgs = run(b, path, sets)
        print(f"{name:28s} ({mb:5.1f} MB file) {b}: wall {wall:6.2f} s, replay peak {peak / 1024:7.1f} MB, "
              f"reader peak {child / 1024:6.1f} MB, virtual {vt} ps, {msgs} messages", flush=True)
