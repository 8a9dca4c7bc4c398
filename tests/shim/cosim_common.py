#!/usr/bin/python3
"""What the co-simulation tests share (cosim_*.py, one file per topic, each run as
`cosim_TOPIC.py BUILD_DIR SOURCE_DIR TEST_NAME`): the build, the scratch directory, running mpisim
and compiling the programs, and run_named, which runs the test a file was asked for."""
import atexit
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import progress_run  # noqa: E402

BUILD, SRC, NAME = sys.argv[1], sys.argv[2], sys.argv[3]
BIN = os.path.join(BUILD, "bin")
MPISIM = os.path.join(BIN, "mpisim")
WORK = tempfile.mkdtemp(prefix="mpisim-test-")
atexit.register(shutil.rmtree, WORK, True)   # gone when the test ends, passed or failed


def remove_segments(pid):
    """The shared segments of an mpisim that was killed (SIGKILL leaves them; the next run's sweep
    would take them only after 10 minutes)."""
    for f in os.listdir("/dev/shm"):
        if f.startswith((f"mpisim-{pid}-", f"mpisim-gate-{pid}x")):
            try:
                os.unlink(os.path.join("/dev/shm", f))
            except FileNotFoundError:
                pass


def run(args, check=True, timeout=None, **kw):
    """args run to their end; one whose processes are idle for two minutes (neither running nor
    waiting for a CPU: tests/progress_run.py; a loaded machine makes a run slow, not stuck) or that
    outlasts `timeout` (default: the suite's last resort, below ctest's 600 s) is ended as a batch
    system would end it (SIGTERM: mpisim stops its launcher and removes its segments), then, if
    that is not enough, killed with all it started, and the test fails."""
    p = progress_run.run(args, idle_limit=120, wall_limit=timeout, check_stuck=False, errors="replace", **kw)
    if p.stuck:
        remove_segments(p.pid)
        sys.exit(f"FAILED: {' '.join(args)} was stopped: {p.stuck}\nstdout:\n{(p.stdout or '')[-3000:]}\n"
                 f"stderr:\n{(p.stderr or '')[-3000:]}")
    if check and p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def mpisim_run(n, prog, *, sets=(), compute="none", report=None, extra=(), check=True, profile=None):
    report = report or os.path.join(WORK, "report.json")
    args = [MPISIM, "run", "--compute", compute, "--report", report]
    if profile:
        args += ["--profile", profile]
    for s in sets:
        args += ["--set", s]
    args += list(extra) + ["-n", str(n), "--"] + list(prog)
    p = run(args, check=check)
    rep = None
    if os.path.isfile(report):   # not /dev/full
        with open(report) as f:
            rep = json.load(f)
    return p, rep


def mpicc(src, out):
    run(["mpicc", "-O1", "-std=c11", "-o", out, src])
    return out


def mpifort(src, out):
    """Fortran programs are built with Open MPI's mpifort (Debian: gfortran)."""
    run(["mpifort", "-O1", "-o", out, src])
    return out


def cfg_value(rep, key):
    return rep["config"][key]["value"]


# ---------------------------------------------------------------------------------------------
# closed forms (docs: libmpisim/model/README.md, netmodel/README.md)

def closed_form_half_rtt(rep, m):
    """Half round trip of a blocking ping-pong of m bytes on one crossbar, analytic engine."""
    rate = float(cfg_value(rep, "network.link_rate"))
    tau = round(8e12 / rate)
    prop = 2 * round(float(cfg_value(rep, "network.link_length")) / float(cfg_value(rep, "network.propagation_velocity")) * 1e12)
    d = int(cfg_value(rep, "network.switch_delay"))
    h = 1
    mtu = int(cfg_value(rep, "mpi.packet_payload"))
    env = int(cfg_value(rep, "mpi.envelope_bytes"))
    ctl = int(cfg_value(rep, "mpi.control_bytes"))
    os_ = int(cfg_value(rep, "mpi.send_overhead"))
    or_ = int(cfg_value(rep, "mpi.recv_overhead"))
    threshold = int(cfg_value(rep, "mpi.eager_threshold"))
    frame = h + 4 + 1 + 1  # route, type, CRC, GAP characters around each payload

    def lat(p):  # uncontended packet latency: eq. 3 generalised
        return tau * (p + 4 + h) + prop + h * d

    def net(b):
        total = b + env
        npk = max(1, math.ceil(total / mtu))
        last = total - (npk - 1) * mtu
        return (npk - 1) * (mtu + frame) * tau + lat(last)

    if m < threshold:
        return os_ + net(m) + or_
    return os_ + lat(ctl) + or_ + lat(ctl) + net(m) + or_


def strip(rep):
    return [{k: v for k, v in r.items() if k not in ("pid", "host")} for r in rep["ranks"]]


def check_unmodelled_port(exe, what):
    """exe calls MPI_Open_port (not modelled): a stop naming it (exit 4); under passthrough, it runs
    untimed and counted, and the run ends with outcome untimed naming the calls, exit 6."""
    p, _ = mpisim_run(2, [exe], check=False)
    lines = [l for l in p.stderr.splitlines() if "MPI_Open_port" in l]
    if p.returncode != 4 or not lines:
        sys.exit(f"FAILED: expected a stop naming MPI_Open_port, exit 4 (got {p.returncode})\n{p.stderr}")
    print(f"{what} error line:", lines[0])
    p, rep = mpisim_run(2, [exe], sets=["unmodelled=passthrough"], check=False)
    assert "port=ok" in p.stdout, p.stdout
    n = sum(r["unmodelled"].get("MPI_Open_port", 0) + r["unmodelled"].get("MPI_Close_port", 0) for r in rep["ranks"])
    text = rep["summary"].get("outcome_text", "")
    if (n != 4 or p.returncode != 6 or rep["summary"]["outcome"] != "untimed" or "MPI_Open_port (2 calls)" not in text
            or "MPI_Close_port (2 calls)" not in text or "untimed" not in p.stderr):
        sys.exit(f"FAILED: passthrough: exit {p.returncode}, {n} untimed calls counted (expected 4), "
                 f"{rep['summary']}\n{p.stderr}")
    print(f"{what} passthrough: ran untimed and counted ({n}); exit 6, outcome untimed: {text}")


def same_answers(exe, cases, args=(), ordered=True, outcome="ok", code=0, sets=()):
    """Run exe natively and under mpisim for each (ranks, compute) case; the answers (stdout,
    line order ignored unless ordered) must be the same and the run end with this outcome and exit
    code. Yields (ranks, native stdout, report, the mpisim process)."""
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    for n, compute in cases:
        native = run(["mpirun", *root, "--oversubscribe", "-n", str(n), exe, *args]).stdout
        p, rep = mpisim_run(n, [exe, *args], compute=compute, check=False, sets=sets)
        a, b = (native, p.stdout) if ordered else (sorted(native.splitlines()), sorted(p.stdout.splitlines()))
        if a != b or p.returncode != code or rep["summary"]["outcome"] != outcome:
            sys.exit(f"FAILED with {n} ranks: native and co-simulated answers differ, or exit {p.returncode} "
                     f"(expected {code}), outcome not {outcome}\n{native[:2000]}\n---\n"
                     f"{p.stdout[:2000]}\n{rep['summary']}\n{p.stderr[-3000:]}")
        yield n, native, rep, p


def run_named(names):
    """Runs the test NAME (the command line's third argument) of a test file's globals `names`: its
    `def test_NAME`. Each test prints what it checked and exits 0 on success."""
    tests = {k[5:]: v for k, v in names.items() if k.startswith("test_")}
    if NAME not in tests:
        sys.exit(f"unknown test {NAME}; known: {', '.join(tests)}")
    tests[NAME]()
