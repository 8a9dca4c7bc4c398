#!/usr/bin/python3
"""Runs one program natively (plain mpirun) and under `mpisim run`, and compares the answers.

Usage: run_cosim_app.py BUILD_DIR NP PROGRAM [ARGS...]
       (PROGRAM: a name in BUILD_DIR/bin, or a path)

Checks:
  * both runs exit 0 and print `check=ok` (apps/README.md conventions), no `check=FAIL`;
  * the time-independent part of both outputs is identical: every `#` metadata line and every
    CSV row with the times removed (keys and columns whose name ends in `_s` or `_MBps`; see
    apps/README.md: times are `..._s`, bandwidths `..._MBps`), and matmul's key=value line the same
    way; checksums, counts, sizes and pattern names stay;
  * the mpisim report says outcome ok, every rank finalized, nothing ran unmodelled.

On failure the last line on stderr starts with `FAILED:` and quotes mpisim's own error line
(for an unmodelled call: `MPI_Xxx is not modelled by mpisim yet`).
Environment: MPISIM_COMPUTE (default none), MPISIM_EXTRA_SETS (space separated k=v),
MPISIM_COMPARE=lines (compare every line but `#` comments verbatim, for programs that print no
times), MPISIM_OK (the success marker, default `check=ok`), MPISIM_TEST_TIMEOUT (s, default 240).
"""
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import progress_run  # noqa: E402

TIME_KEY = re.compile(r"(_s|_MBps)$")


def mpirun():
    return shutil.which("mpirun") or "mpirun"


def run(args, timeout):
    """Runs args in its own session until it ends, or until its processes have been idle for two
    minutes (neither running nor waiting for a CPU: tests/progress_run.py) or it has run for
    `timeout` s (the last resort): then the whole group (mpirun, ranks) is ended."""
    p = progress_run.run(args, idle_limit=120, wall_limit=timeout, check_stuck=False)
    if p.stuck:
        return f"stopped: {p.stuck} (hang)", p.stdout, p.stderr
    return p.returncode, p.stdout, p.stderr


def strip_kv(line):
    """'a=1 b_s=2.0 c=x' -> 'a=1 c=x' (time-valued keys dropped)."""
    toks = []
    for t in line.split():
        k, eq, _ = t.partition("=")
        if eq and TIME_KEY.search(k):
            continue
        toks.append(t)
    return " ".join(toks)


def canonical(out):
    """Time-independent view of an app's stdout (list of lines)."""
    lines = [l for l in out.splitlines() if l.strip()]
    res = []
    header = None
    keep = None
    for l in lines:
        if l.startswith("#"):
            res.append(strip_kv(l))
        elif "=" in l and "," not in l:  # matmul's single key=value line
            res.append(strip_kv(l))
        elif header is None:
            header = l.split(",")
            keep = [i for i, h in enumerate(header) if not TIME_KEY.search(h)]
            res.append(",".join(header[i] for i in keep))
        else:
            f = l.split(",")
            res.append(",".join(f[i] for i in keep if i < len(f)))
    return res


def all_lines(out):
    """MPISIM_COMPARE=lines: every non-empty line that is not a `#` comment, verbatim."""
    return [l for l in out.splitlines() if l.strip() and not l.startswith("#")]


def error_lines(err):
    """mpisim's own diagnostic lines (the most useful one first)."""
    lines = [l for l in err.splitlines() if l.startswith("mpisim:") and " ranks on " not in l]
    key = [l for l in lines if "not modelled" in l]
    return key + [l for l in lines if l not in key]


def main():
    build, np_, prog = sys.argv[1], sys.argv[2], sys.argv[3]
    args = sys.argv[4:]
    exe = prog if os.sep in prog else os.path.join(build, "bin", prog)
    mpisim = os.path.join(build, "bin", "mpisim")
    compute = os.environ.get("MPISIM_COMPUTE", "none")
    sets = os.environ.get("MPISIM_EXTRA_SETS", "").split()
    timeout = int(os.environ.get("MPISIM_TEST_TIMEOUT", "270"))   # each of the two runs, as the last resort
    work = tempfile.mkdtemp(prefix="mpisim-cosim-app-")
    atexit.register(shutil.rmtree, work, True)   # gone when the test ends, passed or failed
    report = os.path.join(work, "report.json")

    native = [mpirun(), "--allow-run-as-root", "--oversubscribe", "-n", np_, exe] + args
    rc_n, out_n, err_n = run(native, timeout)
    print("native:", " ".join(native), "-> exit", rc_n)
    print(out_n)
    okmark = os.environ.get("MPISIM_OK", "check=ok")
    if rc_n != 0 or "check=FAIL" in out_n or okmark not in out_n:
        sys.stderr.write(err_n)
        sys.exit(f"FAILED: native run exit {rc_n} (not a shim problem)")

    cmd = [mpisim, "run", "--compute", compute, "--report", report]
    for s in sets:
        cmd += ["--set", s]
    cmd += ["-n", np_, "--", exe] + args
    rc_s, out_s, err_s = run(cmd, timeout)
    print("cosim:", " ".join(cmd), "-> exit", rc_s)
    print(out_s)
    sys.stderr.write(err_s)
    if rc_s != 0:
        errs = error_lines(err_s)
        sys.exit(f"FAILED: under mpisim exit {rc_s}: " + (errs[0] if errs else "(no mpisim error line)"))

    problems = []
    if okmark not in out_s or "check=FAIL" in out_s:
        problems.append(f"no {okmark} under mpisim")
    view = all_lines if os.environ.get("MPISIM_COMPARE") == "lines" else canonical
    cn, cs = view(out_n), view(out_s)
    if cn != cs:
        for i in range(max(len(cn), len(cs))):
            a = cn[i] if i < len(cn) else "<missing>"
            b = cs[i] if i < len(cs) else "<missing>"
            if a != b:
                problems.append(f"output differs at line {i + 1}: native '{a}' vs mpisim '{b}'")
                break
    if os.path.exists(report):
        with open(report) as f:
            rep = json.load(f)
        s = rep["summary"]
        if s.get("outcome") != "ok":
            problems.append(f"report outcome {s.get('outcome')}: {s.get('outcome_text')}")
        for r in rep["ranks"]:
            if r.get("status") != "finalized":
                problems.append(f"rank {r['rank']} status {r.get('status')}: {r.get('error')}")
            if r.get("unmodelled"):
                problems.append(f"rank {r['rank']} ran unmodelled calls {r['unmodelled']}")
        print(f"virtual time {s.get('virtual_time_ps', 0) / 1e12:.9f} s, wall {s.get('wall_s')} s")
    else:
        problems.append("no report written")
    if problems:
        sys.exit("FAILED: " + "; ".join(problems))
    print(f"OK: {len(cs)} time-independent output lines identical, checks pass")


if __name__ == "__main__":
    main()
