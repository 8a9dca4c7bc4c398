#!/usr/bin/python3
"""README.md "Exit codes", every row of its three tables, as one table of cases.

Usage: test_exit_codes.py BUILD_DIR SOURCE_DIR [KEY...]

CASES below has one or more cases per README row, each (table, key, what, function, expected): the
table ("run" for the first one, "signals", or a subcommand), the row's key (its code, or the first
cell of a signal row), and a function that runs the case and returns (exit code, stderr, extra
check or None). The test first reads the README's tables and fails if a row has no case or a
case names no row; then runs every case (or those whose "table:key" is given). A new row (say
code 6) needs its line in README.md and a case here.
"""
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BUILD, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
ONLY = sys.argv[3:]
BIN = os.path.join(BUILD, "bin")
MPISIM = os.path.join(BIN, "mpisim")
WORK = tempfile.mkdtemp(prefix="mpisim-exit-")
NOWHERE = os.path.join(WORK, "no", "such", "dir")
PINGPONG = [os.path.join(BIN, "pingpong"), "--iters", "3", "--only", "8"]


def run(args, timeout=300, **kw):
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                          start_new_session=True, **kw) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            err += f"\n[killed: did not end within {timeout} s]"
    return p.returncode, out, err


def mpisim(*args, **kw):
    rc, _, err = run([MPISIM] + list(args), **kw)
    return rc, err


def prog(name, where="tests/shim/progs"):
    out = os.path.join(WORK, name)
    if not os.path.exists(out):
        subprocess.run(["mpicc", "-O1", "-std=gnu11", "-o", out, os.path.join(SRC, where, name + ".c")], check=True)
    return out


def CALDATA(name):
    return os.path.join(SRC, "tests", "calibrate", "data", name)


def work(name):
    return os.path.join(WORK, name)


def synth(kind, fmt, name, ranks=4, iters=2, size=1024):
    path = work(name)
    if not os.path.exists(path):
        subprocess.run([os.path.join(BIN, "synth_tool"), fmt, kind, str(ranks), str(iters), str(size), "0", path],
                       check=True, capture_output=True)
    return path


def report(path):
    with open(path) as f:
        return json.load(f)


def run_mpisim(n, program, *extra, rep="r.json"):
    return mpisim("run", "--compute", "none", "--report", work(rep), *extra, "-n", str(n), "--", *program)


def ended_by(sig, cmd="run", count=5, tty=False, kill_launcher=False):
    """slow_barriers under mpisim, ended once rank 0 has passed `count` barriers: by `sig` to mpisim,
    by Ctrl-C on a terminal, or by killing its launcher. (exit code, stderr)."""
    args = [MPISIM, cmd] + (["--report", work("sig.json")] if cmd == "run" else ["-o", work("sig.h5"),
                                                                                "--replace-trace"])
    args += ["-n", "2", "--", prog("slow_barriers")]
    if tty:
        import pty
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(MPISIM, args)
        out = b""
        t0 = time.time()
        while f"barrier {count}".encode() not in out and time.time() - t0 < 120:
            with contextlib.suppress(OSError):
                out += os.read(fd, 4096)
        os.write(fd, b"\x03")
        while True:
            try:
                d = os.read(fd, 4096)
            except OSError:
                break
            if not d:
                break
            out += d
        _, st = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(st), out.decode(errors="replace")
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    err = []
    t = threading.Thread(target=lambda: err.extend(p.stderr), daemon=True)
    t.start()
    for line in p.stdout:
        if line.startswith(f"barrier {count}"):
            break
    if kill_launcher:
        launcher = int(subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()[0])
        os.kill(launcher, signal.SIGKILL)
    else:
        p.send_signal(sig)
    threading.Thread(target=lambda: p.stdout.read(), daemon=True).start()
    try:
        p.wait(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
    t.join(timeout=30)
    if sig == signal.SIGKILL:   # what it leaves: its segments, for the next run's sweep
        for f in os.listdir("/dev/shm"):
            if f.startswith((f"mpisim-{p.pid}-", f"mpisim-gate-{p.pid}x")):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join("/dev/shm", f))
        subprocess.run(["pkill", "-KILL", "-s", str(p.pid)], capture_output=True)
    return p.returncode, "".join(err)


def outcome(name, want):
    return lambda: report(work(name))["summary"]["outcome"] == want


def statuses(name):
    return [r["status"] for r in report(work(name))["ranks"]]


# -- the cases ----------------------------------------------------------------------------------
# each: (table, key, what, fn -> (rc, stderr[, check]), expected code)

def c_ok():
    rc, err = run_mpisim(2, PINGPONG)
    return rc, err, outcome("r.json", "ok")


def c_own():
    return run_mpisim(2, [prog("exit_code"), "7"])


def c_launcher_own():
    rc, err = run_mpisim(2, [prog("exit_code"), "0", "kill-after-finalize"])
    r = report(work("r.json"))
    return rc, err, lambda: rc != 0 and r["summary"]["outcome"] == "ok" and "note" in r["launcher"] and \
        "believe the report" in err


def c_no_memory():
    big = work("big.json")
    with open(big, "w") as f:
        f.write(" " * (200 << 20))
    rc, _, err = run(["prlimit", f"--as={150 << 20}", MPISIM, "report", big])
    os.unlink(big)
    return rc, err, lambda: "out of memory" in err


def c_trace_recover_partial():
    raw = work("partial.raw")
    if not os.path.exists(raw):
        synth("fan", "raw", "partial.raw")
        os.unlink(os.path.join(raw, "rank-000002.mstrace"))
    rc, err = mpisim("trace-recover", raw, work("partial.h5"))
    return rc, err, lambda: "ranks left no records" in err


def c_replay_partial():
    c_trace_recover_partial()
    rc, err = mpisim("replay", work("partial.h5"), "--quiet", "--report", work("pr.json"))
    return rc, err, lambda: "partial trace" in err


def c_deadlock():
    rc, err = run_mpisim(2, [prog("deadlock")])
    # MPI_Recv with its call site (symbol+offset and module+offset, for addr2line)
    return rc, err, lambda: re.search(r"in MPI_Recv: .*MPI_Recv called from main\+0x[0-9a-f]+ \(deadlock\+0x[0-9a-f]+\)",
                                      err) is not None and outcome("r.json", "deadlock")()


def c_stall():
    rc, err = run_mpisim(2, [prog("stall"), "grequest"], "--set", "shim.stall_timeout=2s", "--set",
                         "shim.unmodelled=passthrough")
    return rc, err, outcome("r.json", "stall")


def c_network_deadlock():
    tr = synth("stencil", "h5", "stencil64k.h5", 16, 5, 65536)
    rc, err = mpisim("replay", tr, "--quiet", "--report", work("nd.json"), "--set", "network.topology=ring:8:2:1",
                     "--set", "network.routing=shortest")
    return rc, err, lambda: "the network deadlocked" in err


def c_capture_killed():
    rc, err = mpisim("trace", "-o", work("k.h5"), "--replace-trace", "-n", "3", "--", prog("kill_blocked"), "linger")
    return rc, err, lambda: "rank 2 ended without MPI_Finalize" in err


def c_capture_abort():
    rc, err = mpisim("trace", "-o", work("a.h5"), "--replace-trace", "-n", "2", "--", prog("exit_code"), "0", "abort")
    return rc, err, lambda: "MPI_Abort" in err


def c_trace_incomplete():
    return mpisim("run", "--compute", "none", "--report", work("inc.json"), "--trace", work("inc.h5"), "-n", "2",
                  "--", prog("fd_reuse", "tests/cli/progs"), work("own"), "unlink")


def signal_case(sig, **kw):
    def f():
        rc, err = ended_by(sig, **kw)
        name = "SIGINT" if kw.get("tty") else getattr(sig, "name", "")
        if kw.get("kill_launcher"):
            return rc, err, lambda: "launcher was killed by SIGKILL" in err and "died" not in statuses("sig.json")
        return rc, err, lambda: f"ended by {name}" in err and statuses("sig.json") == ["stopped", "stopped"]
    return f


def c_sigkill():
    rc, err = ended_by(signal.SIGKILL)
    return rc, err, lambda: rc == -signal.SIGKILL


def c_sigpipe():
    """stderr a pipe nobody reads: the run's own messages fail, the run ends as it would"""
    r, w = os.pipe()
    os.close(r)
    p = subprocess.run([MPISIM, "run", "--compute", "none", "--report", work("pipe.json"), "-n", "2", "--"] + PINGPONG,
                       stdout=subprocess.DEVNULL, stderr=w)
    os.close(w)
    return p.returncode, "", outcome("pipe.json", "ok")


def study_superlinear():
    """Exit 8 with the point marked in the table, the CSV and on stderr; the P = 1 row is not."""
    out = work("stsl")
    rc, so, err = run([MPISIM, "study", "speedup", "--out", out, "--compute", "none", "--cpu-factor", "1",
                       "--runs", "2", "--procs", "1,2", "--sizes", "32", "--program",
                       prog("superlinear", "tests/cli/progs")])
    rows = open(os.path.join(out, "speedup.csv")).read().splitlines()
    if rc == 8 and ("superlinear" not in so or "Outcome: superlinear: 1 point" not in so or
                    "speedup 4.000 exceeds P = 2" not in err or "superlinear" not in rows[0].split(",") or
                    [r.split(",")[rows[0].split(",").index("superlinear")] for r in rows[1:]] != ["0", "1"]):
        return -1, f"exit 8 but the table, CSV or stderr do not say which point:\n{so}\n{err}\n{rows}"
    return rc, err


def study_slow_host():
    """Exit 9 with the P = 2 point marked slow host in the table and the CSV; the P = 1 row not."""
    out = work("stslow")
    rc, so, err = run([MPISIM, "study", "speedup", "--out", out, "--runs", "1", "--procs", "1,2", "--sizes", "64",
                       "--program", prog("slowhost", "tests/cli/progs")])
    rows = open(os.path.join(out, "speedup.csv")).read().splitlines()
    if rc == 9 and ("Outcome: slow host: 1 point" not in so or "(the counted one at 2.00x)" not in so or
                    rows[0].split(",")[-1] != "slow_host" or [r.split(",")[-1] for r in rows[1:]] != ["0", "1"]):
        return -1, f"exit 9 but the table or CSV do not say which point:\n{so}\n{err}\n{rows}"
    return rc, err


def study_factor(text):
    f = work("factor.txt")
    with open(f, "w") as fh:
        fh.write(text)
    return mpisim("study", "speedup", "--out", work("stf"), "--cpu-factor", f, "--procs", "1", "--sizes", "32")


def sweep_missing_part():
    """rank 0 of a sweep under mpirun (as the launcher's environment says) whose other rank's part
    never comes: its points' rows are missing from the merged table"""
    env = dict(os.environ, OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_LOCAL_SIZE="1")
    rc, _, err = run([MPISIM, "sweep", synth("stencil", "h5", "good.h5"), "--vary", "network.link_rate=1e9,2e9",
                      "--jobs", "1", "--merge-timeout", "1", "--out", work("sm.csv")], env=env)
    return rc, err, lambda: "gave up waiting" in err


CASES = [
    ("run", "0", "a program that finalizes", c_ok, 0),
    ("run", "0", "mpisim replay of a sound trace",
     lambda: mpisim("replay", synth("stencil", "h5", "good.h5"), "--quiet", "--report", work("g.json")), 0),
    ("run", "0", "mpisim trace", lambda: mpisim("trace", "-o", work("t.h5"), "-n", "2", "--", *PINGPONG), 0),
    ("run", "the program's own", "the program's exit code 7", c_own, 7),
    ("run", "the program's own", "a program that is no MPI program and exits 3",
     lambda: run_mpisim(1, ["sh", "-c", "exit 3"]), 3),
    ("run", "the launcher's own", "the launcher fails after every rank finalized", c_launcher_own, None),
    ("run", "1", "out of memory (mpisim report under a 150 MiB address space)", c_no_memory, 1),
    ("run", "2", "no -n", lambda: mpisim("run", "--", *PINGPONG), 2),
    ("run", "2", "an ambiguous option", lambda: mpisim("run", "--rep", "x", "-n", "2", "--", *PINGPONG), 2),
    ("run", "2", "a value out of range", lambda: run_mpisim(2, PINGPONG, "--set", "shim.cpu_factor=-1"), 2),
    ("run", "2", "a bad profile", lambda: run_mpisim(2, PINGPONG, "--profile", work("missing.ini")), 2),
    ("run", "2", "a program that does not exist", lambda: run_mpisim(2, [work("no-such-program")]), 2),
    ("run", "2", "a damaged trace", lambda: mpisim("replay", "/etc/hostname", "--quiet"), 2),
    ("run", "3", "a virtual-time deadlock, each rank's call and call site named", c_deadlock, 3),
    ("run", "3", "a network deadlock (replay)", c_network_deadlock, 3),
    ("run", "3", "a stall", c_stall, 3),
    ("run", "4", "MPI_Abort", lambda: run_mpisim(2, [prog("exit_code"), "0", "abort"]), 4),
    ("run", "4", "a crash", lambda: run_mpisim(2, [prog("crash")]), 4),
    ("run", "4", "an unmodelled call", lambda: run_mpisim(2, [prog("unmodelled")]), 4),
    ("run", "4", "a rank killed", lambda: run_mpisim(3, [prog("kill_blocked"), "linger"]), 4),
    ("run", "4", "ranks that never connected while the program returned 0", lambda: run_mpisim(1, ["true"]), 4),
    ("run", "4", "mpisim trace: a rank killed", c_capture_killed, 4),
    ("run", "4", "mpisim trace: MPI_Abort", c_capture_abort, 4),
    ("run", "4", "a replay of a partial trace", c_replay_partial, 4),
    ("run", "5", "a report in a directory that does not exist",
     lambda: run_mpisim(2, PINGPONG, rep=os.path.join("no", "r.json")), 5),
    ("run", "5", "a report on a full disk (/dev/full)",
     lambda: mpisim("run", "--compute", "none", "--report", "/dev/full", "-n", "2", "--", *PINGPONG), 5),
    ("run", "5", "a trace that cannot be written",
     lambda: run_mpisim(2, PINGPONG, "--trace", os.path.join(NOWHERE, "t.h5")), 5),
    ("run", "5", "a timeline that cannot be written",
     lambda: run_mpisim(2, PINGPONG, "--timeline", os.path.join(NOWHERE, "t.json")), 5),
    ("run", "5", "an incomplete trace (a rank's trace writing failed)", c_trace_incomplete, 5),
    ("run", "5", "replay --report unwritable",
     lambda: mpisim("replay", synth("stencil", "h5", "good.h5"), "--quiet", "--report", "/dev/full"), 5),
    ("run", "6", "untimed calls (MPI-IO)",
     lambda: run_mpisim(2, [prog("mpiio"), work("io.dat")], "--trace", work("io.h5"), "--replace-trace"), 6),
    ("run", "6", "mpisim replay of a trace with untimed calls",
     lambda: (run_mpisim(2, [prog("mpiio"), work("io2.dat")], "--trace", work("io2.h5"), "--replace-trace"),
              mpisim("replay", work("io2.h5"), "--quiet", "--report", work("io2.json")))[1], 6),
    ("run", "7", "threads calling MPI at once under MPI_THREAD_SERIALIZED",
     lambda: run_mpisim(2, [prog("thread_calls"), "serialized", "concurrent"]), 7),
    ("signals", "SIGTERM or SIGHUP to mpisim", "SIGTERM", signal_case(signal.SIGTERM), 4),
    ("signals", "SIGTERM or SIGHUP to mpisim", "SIGHUP", signal_case(signal.SIGHUP), 4),
    ("signals", "SIGTERM or SIGHUP to mpisim", "mpisim trace, SIGTERM",
     lambda: ended_by(signal.SIGTERM, cmd="trace"), 4),
    ("signals", "SIGINT to mpisim (`kill -INT`)", "kill -INT", signal_case(signal.SIGINT), 4),
    ("signals", "Ctrl-C on the terminal", "Ctrl-C", signal_case(signal.SIGINT, tty=True), 4),
    ("signals", "the launcher killed", "kill -9 of mpirun", signal_case(None, kill_launcher=True), 4),
    ("signals", "SIGKILL to mpisim", "kill -9 of mpisim", c_sigkill, None),
    ("signals", "SIGPIPE (a closed pipe on stderr, a rank's socket)", "stderr closed", c_sigpipe, 0),
    ("trace-recover", "0", "a complete raw directory",
     lambda: mpisim("trace-recover", synth("fan", "raw", "fan.raw"), work("rec.h5")), 0),
    ("trace-recover", "0", "a partial one", c_trace_recover_partial, 0),
    ("trace-recover", "2", "a missing directory", lambda: mpisim("trace-recover", work("noraw"), work("x.h5")), 2),
    ("trace-recover", "2", "usage", lambda: mpisim("trace-recover", work("noraw")), 2),
    ("trace-recover", "5", "OUT.h5 unwritable",
     lambda: mpisim("trace-recover", synth("fan", "raw", "fan.raw"), os.path.join(NOWHERE, "x.h5")), 5),
    ("sweep", "0", "a complete table",
     lambda: mpisim("sweep", synth("stencil", "h5", "good.h5"), "--vary", "network.link_rate=1e9,2e9", "--jobs", "1",
                    "--out", work("s.csv")), 0),
    ("sweep", "2", "an unknown key",
     lambda: mpisim("sweep", synth("stencil", "h5", "good.h5"), "--vary", "network.nope=1", "--jobs", "1"), 2),
    ("sweep", "4", "points whose rows are missing (a part of the table never came)", sweep_missing_part, 4),
    ("sweep", "6", "a trace whose calls ran untimed",
     lambda: (run_mpisim(2, [prog("mpiio"), work("io3.dat")], "--trace", work("io3.h5"), "--replace-trace"),
              mpisim("sweep", work("io3.h5"), "--vary", "network.link_rate=1e9,2e9", "--jobs", "1",
                     "--out", work("s6.csv")))[1], 6),
    ("sweep", "5", "the table unwritable",
     lambda: mpisim("sweep", synth("stencil", "h5", "good.h5"), "--vary", "network.link_rate=1e9", "--jobs", "1",
                    "--out", os.path.join(NOWHERE, "s.csv")), 5),
    ("timeline", "0", "written", lambda: mpisim("timeline", synth("stencil", "h5", "good.h5"), "-o", work("t.json")), 0),
    ("timeline", "2", "a damaged trace", lambda: mpisim("timeline", "/etc/hostname", "-o", work("t2.json")), 2),
    ("timeline", "5", "unwritable",
     lambda: mpisim("timeline", synth("stencil", "h5", "good.h5"), "-o", os.path.join(NOWHERE, "t.json")), 5),
    ("report", "0", "printed", lambda: (c_ok(), mpisim("report", work("r.json")))[1], 0),
    ("report", "1", "out of memory", c_no_memory, 1),
    ("report", "2", "a file that is no report", lambda: mpisim("report", "/etc/hostname"), 2),
    ("report", "2", "/dev/zero (read with a bound)", lambda: mpisim("report", "/dev/zero"), 2),
    ("net", "0", "done", lambda: mpisim("net", "--topology", "crossbar:4", "--measure", "1us"), 0),
    ("net", "2", "a bad topology", lambda: mpisim("net", "--topology", "nosuch:4", "--measure", "1us"), 2),
    ("net", "2", "fewer than 2 hosts", lambda: mpisim("net", "--topology", "array:1:1", "--measure", "1us"), 2),
    ("config", "0", "done", lambda: mpisim("config"), 0),
    ("config", "2", "an unknown key", lambda: mpisim("config", "--set", "network.nope=1"), 2),
    ("study", "0", "done",
     lambda: mpisim("study", "speedup", "--out", work("st"), "--compute", "none", "--cpu-factor", "1", "--runs", "1",
                    "--procs", "1,2", "--sizes", "32"), 0),
    ("study", "1", "its runs fail (no shim)",
     lambda: (lambda r: (r[0], r[2]))(run([MPISIM, "study", "speedup", "--out", work("st1"), "--compute", "none",
                                           "--cpu-factor", "1", "--runs", "1", "--procs", "1", "--sizes", "32"],
                                          env=dict(os.environ, MPISIM_SHIM=work("no-shim.so")))), 1),
    ("study", "2", "a NaN factor file", lambda: study_factor("nan\n"), 2),
    ("study", "8", "a speedup above P (a program whose time falls as 1 / P^2)", study_superlinear, 8),
    ("study", "9", "every run of a point computed at 2x the calibrated rate (a stand-in program)", study_slow_host, 9),
    ("study", "5", "its table cannot be written",
     lambda: mpisim("study", "speedup", "--out", "/dev/null", "--compute", "none", "--cpu-factor", "1", "--runs",
                    "1", "--procs", "1", "--sizes", "32"), 5),
    ("calibrate", "0", "a profile from an OSU file",
     lambda: mpisim("calibrate", "--from", CALDATA("osu_latency.txt"), "--no-check", "--out", work("cal.ini")), 0),
    ("calibrate", "1", "the benchmark cannot run (no mpirun on PATH)",
     lambda: mpisim("calibrate", "--budget", "5", "--out", work("cal1.ini"),
                    env=dict(os.environ, PATH=os.path.join(WORK, "no-such-bin"))), 1),
    ("calibrate", "2", "a file of no known suite",
     lambda: mpisim("calibrate", "--from", os.path.join(SRC, "README.md"), "--no-check", "--out", work("cal2.ini")), 2),
    ("calibrate", "5", "the profile cannot be written",
     lambda: mpisim("calibrate", "--from", CALDATA("osu_latency.txt"), "--no-check",
                    "--out", os.path.join(NOWHERE, "cal.ini")), 5),
    ("version", "0", "mpisim version", lambda: mpisim("version"), 0),
    ("version", "2", "an unknown command", lambda: mpisim("nosuchcommand"), 2),
]


# -- the README's tables ------------------------------------------------------------------------

def readme_rows():
    text = open(os.path.join(SRC, "README.md")).read()
    sec = text[text.index("### Exit codes"):text.index("## What is modelled")]
    rows, table = set(), None
    for line in sec.splitlines():
        if not line.startswith("|"):
            table = None if not line.strip() else table
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in ("code",):
            table = "run"
            continue
        if cells[0] == "what happens":
            table = "signals"
            continue
        if cells[0] == "command":
            table = ("cmd", cells[1:])
            continue
        if set(cells[0]) <= set("-"):
            continue
        if table in ("run", "signals"):
            rows.add((table, cells[0]))
        elif table:
            for cmd in re.findall(r"`([a-z-]+)", cells[0]):
                for code, cell in zip(table[1], cells[1:]):
                    if cell:
                        rows.add((cmd, code))
    return rows


def main():
    rows = readme_rows()
    keys = {(t, k) for t, k, *_ in CASES}
    aliases = {("help", c): ("version", c) for c in ("0", "2")}   # one row names both
    missing = {r for r in rows if aliases.get(r, r) not in keys}
    stray = {k for k in keys if k not in rows}
    if missing or stray:
        sys.exit(f"FAILED: README rows without a case: {sorted(missing)}; cases naming no row: {sorted(stray)}")
    print(f"{len(rows)} README rows, {len(CASES)} cases")
    failed = []
    for table, key, what, fn, want in CASES:
        if ONLY and f"{table}:{key}" not in ONLY:
            continue
        t0 = time.time()
        res = fn()
        rc, err = res[0], res[1]
        extra = res[2] if len(res) > 2 else None
        ok = (want is None or rc == want) and (extra is None or extra())
        line = f"[{table}: {key}] {what}: exit {rc}" + (f", expected {want}" if want is not None else "") + \
               f" ({time.time() - t0:.1f} s)"
        print(("ok: " if ok else "FAILED: ") + line)
        if not ok:
            failed.append(line + "\n" + (err or "")[-1500:])
    shutil.rmtree(WORK, True)
    if failed:
        sys.exit("FAILED:\n" + "\n\n".join(failed))
    print("PASSED")


main()
