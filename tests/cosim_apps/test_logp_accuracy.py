#!/usr/bin/python3
"""LogP accuracy (issue 4): apps/logp under the shim recovers the profile's host parameters.

Usage: test_logp_accuracy.py BUILD_DIR LOGP_EXE CASE      (CASE: defaults | gap)

Runs `mpisim run --compute none --set network.engine=analytic [sets] -n 2 -- logp` and compares
logp's CSV with `mpisim config --json` (same sets). By the timing contract
(libmpisim/model/README.md), on a 2-host crossbar with nothing else on the network:
  * eager sizes m < mpi.eager_threshold: an MPI_Send returns after o_s(m) = send_overhead +
    m * send_overhead_per_byte; receiving an arrived message takes o_r(m) likewise;
  * g(m) is the steady interval between messages sent in a row: the largest of the sender's
    o_s(m), the NIC's mpi.gap, the receiver's o_r(m) and the time the message occupies the host
    link; for m = 0 the link time (a few characters) is far below the others, so
    g(0) = max(mpi.gap, o_s(0), o_r(0));
  * at m >= eager_threshold the send is a rendezvous: MPI_Send and the receive of an arrived
    message (RTS) both take at least a control round trip plus the data's transfer time, so
    o_s and o_r jump up at the threshold.
Each recovered value must be within 5 % of the profile's.
"""
import atexit
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import progress_run  # noqa: E402

BUILD, LOGP, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
MPISIM = os.path.join(BUILD, "bin", "mpisim")
TOL = 0.05

CASES = {
    # the default profile: o_s = o_r = 0.4 us, gap 0
    "defaults": [],
    # distinct values so that a swap of o_s and o_r or a gap below o_s would show;
    # gap 2.3 us is seed 003 5.3's measured g
    "gap": ["mpi.send_overhead=1us", "mpi.recv_overhead=0.7us", "mpi.gap=2.3us"],
}
sets = ["network.engine=analytic"] + CASES[CASE]
setargs = [a for s in sets for a in ("--set", s)]

cfg = json.loads(subprocess.run([MPISIM, "config", "--json"] + setargs, capture_output=True,
                                text=True, check=True).stdout)


def val(k):
    return float(cfg[k]["value"])


ps = 1e-12
os0, or0 = val("mpi.send_overhead") * ps, val("mpi.recv_overhead") * ps
os_b, or_b = val("mpi.send_overhead_per_byte") * ps, val("mpi.recv_overhead_per_byte") * ps
gap = val("mpi.gap") * ps
thr = int(val("mpi.eager_threshold"))
print(f"profile ({CASE}): o_s={os0:.4g} s o_r={or0:.4g} s gap={gap:.4g} s eager_threshold={thr} B")

sizes = sorted({0, 1, 64, 1024, 4096, thr - 1, thr, 2 * thr})
work = tempfile.mkdtemp(prefix="mpisim-logp-")
atexit.register(shutil.rmtree, work, True)   # gone when the test ends, passed or failed
cmd = [MPISIM, "run", "--compute", "none", "--report", os.path.join(work, "report.json")] + setargs + [
    "-n", "2", "--", LOGP, "--sizes", ",".join(map(str, sizes)), "--iters", "10"]
p = progress_run.run(cmd, idle_limit=120, wall_limit=280)
print(" ".join(cmd))
print(p.stdout)
if p.returncode != 0:
    sys.stderr.write(p.stderr)
    sys.exit(f"FAILED: logp under mpisim exited {p.returncode}")
if "# check=ok" not in p.stdout:
    sys.exit("FAILED: logp did not print check=ok")
rows = {int(r["bytes"]): r for r in csv.DictReader(io.StringIO(
    "\n".join(l for l in p.stdout.splitlines() if l and not l.startswith("#"))))}

errors = []


def close(what, got, want):
    ok = abs(got - want) <= TOL * want
    print(f"{'ok  ' if ok else 'FAIL'} {what}: measured {got:.6g} s, profile {want:.6g} s "
          f"({(got - want) / want * 100:+.2f} %)")
    if not ok:
        errors.append(what)


for m in sizes:
    if m >= thr:
        continue
    r = rows[m]
    close(f"o_s({m})", float(r["os_s"]), os0 + m * os_b)
    close(f"o_r({m})", float(r["or_s"]), or0 + m * or_b)
close("g(0)", float(rows[0]["g_s"]), max(gap, os0, or0))

# protocol switch: from thr-1 to thr both overheads jump by more than a control round trip
# (at least two 0-byte packet latencies, each >= the 0-byte host-link time); demand a factor
# of 5 at least, and that nothing jumps between the eager sizes below.
below, at = rows[thr - 1], rows[thr]
for col in ("os_s", "or_s"):
    a, b = float(below[col]), float(at[col])
    ok = b > 5 * a
    print(f"{'ok  ' if ok else 'FAIL'} protocol switch in {col}: {thr - 1} B -> {a:.6g} s, {thr} B -> {b:.6g} s")
    if not ok:
        errors.append(f"switch {col}")

if errors:
    sys.exit("FAILED: " + ", ".join(errors))
print("OK: logp recovers o_s, o_r and g within 5 % and shows the switch at", thr, "B")
