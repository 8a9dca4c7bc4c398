#!/usr/bin/python3
"""Third-party MPI programs from Debian packages, natively and under `mpisim run`.

Usage: test_thirdparty.py BUILD_DIR CASE
Cases:
  netpipe     NetPIPE's NPopenmpi (package netpipe-openmpi) in integrity-check mode (-i): every
              message size must pass its check under the shim, with nothing unmodelled; in timing
              mode its own table (timed with gettimeofday) must give the model's ping-pong.
  mpi4py_ring mpi4py's own benchmark package (python3-mpi4py): helloworld's answers must be
              identical; ringtest must complete with nothing unmodelled.
  hpcc        the HPC Challenge suite (package hpcc: HPL, PTRANS, RandomAccess with its closing
              MPI_Cancel, FFT, STREAM, b_eff) on 4 ranks with Debian's example input at N = 500
              (its N = 1000 makes RandomAccess poll MPI_Testany 4 million times, and a loaded
              machine's slower peers make it poll more: minutes beside other jobs):
              every test passes natively and under mpisim, nothing unmodelled, and HPCC's own
              ping-pong bandwidth is the modelled link's rate.
  lammps      the LAMMPS molecular dynamics code (package lammps): a Lennard-Jones melt of 4000
              atoms on 4 ranks (3-D domain decomposition, halo exchange, Cartesian communicator):
              the thermodynamic output is identical natively and under mpisim, nothing unmodelled,
              and LAMMPS's own "Loop time" is virtual time.
A case whose program is not installed is skipped (exit 77, ctest's SKIP_RETURN_CODE).
Each command runs until it ends, or until its processes have been idle for two minutes (neither
running nor waiting for a CPU: tests/progress_run.py), not for a fixed time: a loaded machine
makes them slow, not stuck.
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import progress_run  # noqa: E402

BUILD, CASE = sys.argv[1], sys.argv[2]
MPISIM = os.path.join(os.path.abspath(BUILD), "bin", "mpisim")
ROOT = ["--allow-run-as-root"] if os.geteuid() == 0 else []
ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
WORK = tempfile.mkdtemp(prefix="mpisim-3p-")
atexit.register(shutil.rmtree, WORK, True)   # gone when the test ends, passed or failed


def run(args):
    return progress_run.run(args, env=ENV, idle_limit=120, wall_limit=280)


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


def test_netpipe():
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
    # timing mode: NetPIPE times itself with gettimeofday, which the shim answers in virtual time
    # (shim.program_clocks): its own table must give the model's ping-pong, as apps/pingpong
    # (MPI_Wtime) measures it
    table = os.path.join(WORK, "np.out")
    simulated(2, [exe, "-n", "20", "-u", "1048576", "-o", table])
    np = {int(r.split()[0]): float(r.split()[2]) for r in open(table) if r.strip()}
    pp, _ = simulated(2, [os.path.join(os.path.abspath(BUILD), "bin", "pingpong"), "--only", "1,1024,1048576"])
    model = {int(r.split(",")[0]): float(r.split(",")[1]) for r in pp.splitlines() if re.match(r"^[0-9]+,", r)}
    for size, half_rtt in sorted(model.items()):
        got = np.get(size)
        # gettimeofday ticks in microseconds: over NetPIPE's 20 round trips, 25 ns of a half round trip
        if got is None or abs(got - half_rtt) > 0.005 * half_rtt + 30e-9:
            sys.exit(f"FAILED: NetPIPE's own time for {size} B is {got} s, the model's ping-pong {half_rtt} s")
    print("NetPIPE timing mode under mpisim, its own table against apps/pingpong: " +
          ", ".join(f"{k} B {np[k] * 1e6:.3f} / {v * 1e6:.3f} us" for k, v in sorted(model.items())))


def test_mpi4py_ring():
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


def test_hpcc():
    exe = shutil.which("hpcc", path="/usr/bin")
    example = "/usr/share/doc/hpcc/examples/_hpccinf.txt"
    if not exe or not os.path.exists(example):
        print("hpcc not installed (package hpcc): skipped")
        sys.exit(77)
    # HPCC reads and writes in its cwd; the example's one problem size (line 6) halved
    lines = open(example).read().splitlines(True)
    if not re.match(r"^1000\s+Ns", lines[5]):
        sys.exit(f"FAILED: Debian's example input changed: line 6 is {lines[5]!r}, expected N = 1000")
    lines[5] = lines[5].replace("1000", "500 ", 1)
    with open(os.path.join(WORK, "hpccinf.txt"), "w") as f:
        f.writelines(lines)
    os.chdir(WORK)

    def results(where):
        text = open("hpccoutf.txt").read()
        os.remove("hpccoutf.txt")
        vals = dict(re.findall(r"^(\w+)=(\S+)$", text, re.M))
        if vals.get("Success") != "1" or vals.get("Failure", "0") != "0" or "FAILED" in text:
            sys.exit(f"FAILED {where}: HPCC reports Success={vals.get('Success')} Failure={vals.get('Failure')}")
        return vals

    native(4, [exe])
    nat = results("natively")
    _, rep = simulated(4, [exe])
    sim = results("under mpisim")
    calls = sorted({c["call"] for c in rep["callsites"]})
    if "MPI_Cancel" not in calls:
        sys.exit(f"FAILED: RandomAccess's MPI_Cancel was not seen: {calls}")
    rate = float(rep["config"]["network.link_rate"]["value"]) / 8 / 1e9   # GB/s
    bw = float(sim["MaxPingPongBandwidth_GBytes"])
    if abs(bw - rate) > 0.02 * rate:
        sys.exit(f"FAILED: HPCC's ping-pong bandwidth {bw} GB/s under mpisim, the link carries {rate} GB/s")
    print(f"HPCC: every test passed natively and under mpisim ({len(calls)} MPI calls used, nothing unmodelled); "
          f"HPL {nat['HPL_Tflops']} -> {sim['HPL_Tflops']} Tflop/s, ping-pong bandwidth {nat['MaxPingPongBandwidth_GBytes']}"
          f" -> {bw} GB/s (link {rate:.3f}), latency {nat['MaxPingPongLatency_usec']} -> "
          f"{sim['MaxPingPongLatency_usec']} us; virtual time {rep['summary']['virtual_time_ps'] / 1e12:.3f} s")


LJ_MELT = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 10 0 10 0 10
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 20 delay 0 check no
fix 1 all nve
thermo 50
run 250
"""


def test_lammps():
    exe = shutil.which("lmp", path="/usr/bin")
    if not exe:
        print("lmp not installed (package lammps): skipped")
        sys.exit(77)
    inp = os.path.join(WORK, "in.melt")
    with open(inp, "w") as f:
        f.write(LJ_MELT)
    os.chdir(WORK)   # log.lammps goes to the cwd
    prog = [exe, "-in", inp]

    def thermo(text):
        rows = re.findall(r"^\s+(\d+(?:\s+-?[0-9.]+(?:e[-+]\d+)?){5})\s*$", text, re.M)
        return rows

    nat = thermo(native(4, prog))
    out, rep = simulated(4, prog)
    sim = thermo(out)
    if len(nat) != 6 or nat != sim:
        sys.exit(f"FAILED: thermodynamic output differs\nnative {nat}\nmpisim {sim}")
    loop = float(re.search(r"Loop time of ([0-9.e+-]+)", out).group(1))
    vt = rep["summary"]["virtual_time_ps"] / 1e12
    if not 0 < loop <= vt:
        sys.exit(f"FAILED: LAMMPS's loop time {loop} s should be virtual time (run ended at {vt} s)")
    calls = sorted({c["call"] for c in rep["callsites"]})
    print(f"LAMMPS LJ melt: 6 thermo rows identical natively and under mpisim; loop time {loop} s of virtual time "
          f"(run {vt:.6f} s); calls {calls}")


TESTS = {n[len("test_"):]: f for n, f in globals().items() if n.startswith("test_")}
TESTS[CASE]()
