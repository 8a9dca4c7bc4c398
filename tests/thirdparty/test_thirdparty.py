#!/usr/bin/python3
"""Third-party MPI programs from Debian packages, natively and under `mpisim run`.

Usage: test_thirdparty.py BUILD_DIR CASE
Cases:
  netpipe     NetPIPE's NPopenmpi (package netpipe-openmpi) in integrity-check mode (-i): every
              message size must pass its check under the shim, with nothing unmodelled.
  mpi4py_ring mpi4py's own benchmark package (python3-mpi4py): helloworld's answers must be
              identical; ringtest must complete with nothing unmodelled.
A case whose program is not installed is skipped (exit 77, ctest's SKIP_RETURN_CODE).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BUILD, CASE = sys.argv[1], sys.argv[2]
MPISIM = os.path.join(BUILD, "bin", "mpisim")
ROOT = ["--allow-run-as-root"] if os.geteuid() == 0 else []
ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
WORK = tempfile.mkdtemp(prefix="mpisim-3p-")


def run(args, timeout=300):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=ENV)
    return p


def native(n, prog):
    p = run(["mpirun", *ROOT, "--oversubscribe", "-n", str(n), *prog])
    if p.returncode != 0:
        sys.exit(f"FAILED natively: {p.stderr[-2000:]}")
    return p.stdout + p.stderr


def simulated(n, prog, both=False):
    rep = os.path.join(WORK, "r.json")
    p = run([MPISIM, "run", "--compute", "none", "--report", rep, "-n", str(n), "--", *prog])
    if p.returncode != 0:
        sys.exit(f"FAILED under mpisim (rc {p.returncode}): {p.stderr[-3000:]}")
    r = json.load(open(rep))
    if r["summary"]["outcome"] != "ok":
        sys.exit(f"FAILED: outcome {r['summary']}")
    unm = {k: v for x in r["ranks"] for k, v in x["unmodelled"].items()}
    if unm:
        sys.exit(f"FAILED: calls ran unmodelled: {unm}")
    return (p.stdout + p.stderr if both else p.stdout), r


def netpipe():
    exe = shutil.which("NPopenmpi", path="/usr/bin")
    if not exe:
        print("NPopenmpi not installed (netpipe-openmpi): skipped")
        sys.exit(77)
    prog = [exe, "-u", "131072", "-n", "3", "-i"]
    nat = native(2, prog)
    out, rep = simulated(2, prog, both=True)
    for text, where in ((nat, "natively"), (out, "under mpisim")):
        checks = re.findall(r"Integrity check (\w+)", text)
        if not checks or any(c != "passed" for c in checks):
            sys.exit(f"FAILED {where}: integrity checks {checks}")
    calls = sorted({c["call"] for c in rep["callsites"]})
    print(f"NetPIPE integrity mode: {len(re.findall('passed', out))} sizes passed under mpisim; calls used {calls}")


def mpi4py_ring():
    if run(["/usr/bin/python3", "-c", "import mpi4py.bench"]).returncode != 0:
        print("mpi4py not installed (python3-mpi4py): skipped")
        sys.exit(77)
    hello = ["/usr/bin/python3", "-m", "mpi4py.bench", "helloworld"]
    nat = sorted(native(4, hello).splitlines())
    out, _ = simulated(4, hello)
    if sorted(out.splitlines()) != nat:
        sys.exit(f"FAILED: helloworld differs\n{nat}\n{sorted(out.splitlines())}")
    ring = ["/usr/bin/python3", "-m", "mpi4py.bench", "ringtest", "-n", "4096", "-l", "20"]
    native(4, ring)
    out, rep = simulated(4, ring)
    print(f"mpi4py helloworld identical; ringtest under mpisim: {out.strip()[:200]}; "
          f"virtual time {rep['summary']['virtual_time_ps'] / 1e6:.3f} us")


{"netpipe": netpipe, "mpi4py_ring": mpi4py_ring}[CASE]()
