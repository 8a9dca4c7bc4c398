#!/usr/bin/python3
"""seed 003's figures under seed003-ecard, both-way rendezvous on the default
profile, and what the kernels of the usual benchmark suites report (IMB, OSU: tests/shim/progs/
suites.c) agreeing with the project's own apps.

Usage: test_host_fidelity.py BUILD_DIR SOURCE_DIR CASE
  seed003   sendmodes and logp under seed003-ecard, model only (--compute none): every figure
            of seed 003 sec 5.1-5.3 within the scorecard's 15 % (003_99118bf692f3fa3b.txt; a few of
            them are the profile's calibration inputs, results/calibrate_seed003.py); on node too
  cpu       the same figures with the default compute mode (charged CPU time): bandwidths checked,
            microsecond latencies printed (they carry the shim's charged overhead)
  suites    IMB PingPong/PingPing/Sendrecv and OSU latency/bw/bibw kernels under seed003-ecard:
            the same half round trip and bandwidth as sendmodes; PingPing not serialised
  bothway   default profile: 1 MiB both ways at once >= 1.9 x one way (sendmodes both vs uni)
"""
import atexit
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import progress_run  # noqa: E402

BUILD, SRC, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
BIN = os.path.join(BUILD, "bin")
WORK = tempfile.mkdtemp(prefix="mpisim-fidelity-")
atexit.register(shutil.rmtree, WORK, True)   # gone when the test ends, passed or failed
failures = []


def mpisim(prog, *args, profile="seed003-ecard", compute="none", sets=()):
    cmd = [os.path.join(BIN, "mpisim"), "run", "--profile", profile, "--compute", compute,
           "--report", os.path.join(WORK, "r.json")]
    for s in sets:
        cmd += ["--set", s]
    cmd += ["-n", "2", "--", prog, *args]
    p = progress_run.run(cmd, idle_limit=120)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)} exited {p.returncode}\n{p.stderr[-3000:]}")
    return p.stdout


def rows(text):
    return list(csv.DictReader(io.StringIO("\n".join(l for l in text.splitlines() if not l.startswith("#")))))


def sendmodes(on_node=False, compute="none", profile="seed003-ecard", sizes="1,512,16383,16384,131072,1048576"):
    sets = ("host.map_by=slot",) if on_node else ()
    out = rows(mpisim(os.path.join(BIN, "sendmodes"), "--sizes", sizes, "--modes", "send,ssend,bsend,rsend",
                      "--tests", "uni,bi,both", "--iters", "6", profile=profile, compute=compute, sets=sets))
    return {(r["test"], r["mode"], int(r["bytes"])): r for r in out}


INFO_ONLY = False   # the cpu case: latencies carry the shim's charged overhead per call


def check(what, got, want, tol=0.15, info=False):
    if info or (INFO_ONLY and "(us)" in what):
        print(f"info {what}: {got:.4g} (seed 003: {want:g}, {100 * (got - want) / want:+.1f} %)")
        return
    ok = abs(got - want) <= tol * abs(want)
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got:.4g} (seed 003: {want:g}, {100 * (got - want) / want:+.1f} %)")
    if not ok:
        failures.append(what)


US = 1e6


def case_seed003(compute="none"):
    off, on = sendmodes(compute=compute), sendmodes(on_node=True, compute=compute)
    t = lambda d, test, mode, b: float(d[(test, mode, b)]["time_s"]) * US
    bw = lambda d, test, b: float(d[(test, "send", b)]["bandwidth_MBps"])
    check("sec 5.1: 1 B half round trip, standard (us)", t(off, "bi", "send", 1), 6.1)
    check("sec 5.1: ready (us)", t(off, "bi", "rsend", 1), 6.1)
    check("sec 5.1: buffered (us)", t(off, "bi", "bsend", 1), 6.84)
    check("sec 5.1: synchronous (us)", t(off, "bi", "ssend", 1), 23.6)
    check("sec 5.1: synchronous, 512 B, 23.6 \"for up to 512-byte messages\" (us)", t(off, "bi", "ssend", 512), 23.6)
    check("sec 5.2: 1 MiB one way (MB/s)", bw(off, "uni", 1 << 20), 440)
    check("sec 5.2: 1 MiB ping-pong (MB/s)", bw(off, "bi", 1 << 20), 440)
    check("sec 5.2: 1 MiB both ways (MB/s)", bw(off, "both", 1 << 20), 690)
    check("sec 5.1: on node, standard (us)", t(on, "bi", "send", 1), 1.46)
    check("sec 5.1: on node, buffered (us)", t(on, "bi", "bsend", 1), 2.29)
    check("sec 5.1: on node, synchronous (us)", t(on, "bi", "ssend", 1), 4.51)
    # the on-node peaks are below the cache limit (host.shm_cache); beyond it the bandwidth drops
    check("sec 5.2: on node one way, peak (MB/s)", max(bw(on, "uni", b) for b in (16383, 131072)), 672, 0.10)
    check("sec 5.2: on node ping-pong, peak (MB/s)", max(bw(on, "bi", b) for b in (16383, 131072)), 702)
    check("sec 5.2: on node both ways, peak (MB/s)", max(bw(on, "both", b) for b in (16383, 131072)), 870)
    drop = bw(on, "uni", 1 << 20) < 0.9 * bw(on, "uni", 131072)
    print(f"{'ok  ' if drop else 'FAIL'} sec 5.2: on node the bandwidth drops after its peak: "
          f"{bw(on, 'uni', 131072):.0f} MB/s at 128 KiB, {bw(on, 'uni', 1 << 20):.0f} at 1 MiB")
    if not drop:
        failures.append("on-node drop")
    # the unidirectional ping: one message and a 0-byte acknowledgement, halved
    ping = rows(mpisim(os.path.join(BIN, "sendmodes"), "--sizes", "1", "--modes", "send", "--tests", "uni",
                       "--iters", "1", compute=compute))
    check("sec 5.1: 1 B unidirectional ping (us)", float(ping[0]["time_s"]) / 2 * US, 5.7)
    ping_on = rows(mpisim(os.path.join(BIN, "sendmodes"), "--sizes", "1", "--modes", "send", "--tests", "uni",
                          "--iters", "1", compute=compute, sets=("host.map_by=slot",)))
    check("sec 5.1: on node, 1 B unidirectional ping (us)", float(ping_on[0]["time_s"]) / 2 * US, 1.38)
    if compute != "none":
        return
    lp = {int(r["bytes"]): r for r in rows(mpisim(os.path.join(BIN, "logp"), "--sizes", "1,16383,16384"))}
    check("sec 5.3: LogP o = o_s + o_r (us)", (float(lp[1]["os_s"]) + float(lp[1]["or_s"])) * US, 0.8)
    check("sec 5.3: LogP g (us)", float(lp[1]["g_s"]) * US, 2.3)
    check("sec 5.3: LogP L (us)", float(lp[0]["L_s"]) * US, 4.2)
    for b, want in ((16383, 5), (16384, 70)):
        for f in ("os_s", "or_s"):
            check(f"sec 5.3: {f[:-2]} at {b} B (us; ~5 -> ~70 at 16 KB)", float(lp[b][f]) * US, want)


def test_suites():
    exe = os.path.join(WORK, "suites")
    subprocess.run(["mpicc", "-O1", "-o", exe, os.path.join(SRC, "tests/shim/progs/suites.c")], check=True)
    res = {}
    for k in ("imb_pingpong", "imb_pingping", "imb_sendrecv", "osu_latency", "osu_bw", "osu_bibw"):
        for line in mpisim(exe, k).splitlines():
            name, b, t, mbps = line.split()
            res[(name, int(b))] = (float(t), float(mbps))
    off = sendmodes(sizes="1,16384,1048576")
    ours_t = float(off[("bi", "send", 1)]["time_s"]) * US
    ours_bw = float(off[("bi", "send", 1 << 20)]["bandwidth_MBps"])
    for k in ("imb_pingpong", "osu_latency"):
        check(f"{k} 1 B = sendmodes half round trip (us)", res[(k, 1)][0], ours_t, 0.01)
        check(f"{k} 1 MiB = sendmodes ping-pong (MB/s)", res[(k, 1 << 20)][1], ours_bw, 0.01)
        check(f"{k} 1 B vs seed 003 sec 5.1 (us)", res[(k, 1)][0], 6.1)
    ratio = res[("imb_pingping", 16384)][0] / res[("imb_pingpong", 16384)][0]
    print(f"{'ok  ' if ratio < 1.15 else 'FAIL'} IMB PingPing / PingPong at 16 KiB: {ratio:.3f} (serialised: 2)")
    if ratio >= 1.15:
        failures.append("PingPing serialised")
    check("osu_bibw 1 MiB vs seed 003 sec 5.2 both-way (MB/s)", res[("osu_bibw", 1 << 20)][1], 690)
    check("IMB Sendrecv 1 MiB vs seed 003 sec 5.2 both-way (MB/s)", res[("imb_sendrecv", 1 << 20)][1], 690)
    r = res[("osu_bibw", 1 << 20)][1] / res[("osu_bw", 1 << 20)][1]
    print(f"osu_bibw / osu_bw at 1 MiB: {r:.2f} (the PCI-X bus carries both directions: 873 MB/s, sec 3)")


def test_bothway():
    d = sendmodes(profile="default", sizes="1048576")
    one = float(d[("uni", "send", 1 << 20)]["bandwidth_MBps"])
    two = float(d[("both", "send", 1 << 20)]["bandwidth_MBps"])
    ok = two >= 1.9 * one
    print(f"{'ok  ' if ok else 'FAIL'} default profile, 1 MiB: both ways {two:.1f} MB/s = {two / one:.2f} x one way "
          f"{one:.1f} MB/s (>= 1.9)")
    if not ok:
        failures.append("both-way")


def test_cpu():
    """The default compute mode: the bandwidths must hold; the microsecond latencies also carry
    the computation the shim charges per MPI call (its own overhead included, which grows beside
    other jobs), so they are printed, not checked."""
    global INFO_ONLY
    INFO_ONLY = True
    case_seed003("cpu")


def test_seed003():
    case_seed003()


TESTS = {n[len("test_"):]: f for n, f in globals().items() if n.startswith("test_")}
TESTS[CASE]()
if failures:
    sys.exit(f"FAILED: {', '.join(failures)}")
