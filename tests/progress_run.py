"""Running a test's command until it ends or is stuck, not until a clock says so.

A fixed wall-clock limit fails a correct build on a loaded machine (issue 26: a native hpcc run hit
its 300 s, a co-simulation its 60 s connect timeout, beside other jobs). The tests run their
commands through run() here: a command is stopped when its processes have been idle for
`idle_limit` seconds, idle meaning that none of them ran or waited for a CPU (their run-queue
delay in /proc/PID/schedstat): a run starved of CPU by other jobs is slow, not stuck. A command
spinning for ever uses the CPU and is not idle: mpisim's own stall watchdog stops such a run, and
`wall_limit` (below the test's ctest TIMEOUT) is the last resort. This is the same rule as the
model server's (libmpisim/server/ms_proc.h).
"""
import os
import signal
import subprocess
import time


def _tree(root):
    """root and its descendants (/proc/PID/task/TID/children)."""
    out, i = [root], 0
    while i < len(out):
        try:
            for tid in os.listdir(f"/proc/{out[i]}/task"):
                try:
                    with open(f"/proc/{out[i]}/task/{tid}/children") as f:
                        out += [int(x) for x in f.read().split()]
                except OSError:
                    pass
        except OSError:
            pass
        i += 1
    return out


def _sample(pid):
    """(running + waiting for a CPU) in seconds of the process's main thread, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return None
        with open(f"/proc/{pid}/schedstat") as f:
            run, wait = f.read().split()[:2]
        return (int(run) + int(wait)) * 1e-9
    except (OSError, ValueError, IndexError):
        return None


class Watch:
    """Idle time of a process tree, looked at once a second (look())."""

    def __init__(self, root):
        self.root, self.prev, self.idle, self.last = root, {}, 0.0, time.monotonic()

    def look(self):
        now = time.monotonic()
        cur = {p: s for p in _tree(self.root) if (s := _sample(p)) is not None}
        busy = max([s - self.prev.get(p, 0.0) for p, s in cur.items()] or [0.0])
        dt, self.last = now - self.last, now
        self.idle += max(0.0, dt - busy)
        self.prev = cur
        return self.idle


def run(args, *, idle_limit=120, wall_limit=None, check_stuck=True, **kw):
    """subprocess.run(args, capture_output=True, text=True, **kw) that ends the command (SIGTERM to
    its session, as a batch system would: mpisim then stops its launcher and writes its report;
    SIGKILL 30 s later) once it has been idle for idle_limit s or has run for wall_limit s. The
    CompletedProcess has .stuck set to the reason then (None otherwise); with check_stuck the
    caller's test fails there and then, saying so."""
    if wall_limit is None:   # below the ctest TIMEOUT of 600 s, as the last resort
        wall_limit = float(os.environ.get("MPISIM_TEST_WALL_LIMIT", "540"))
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    if kw.pop("capture_output"):
        kw["stdout"], kw["stderr"] = subprocess.PIPE, subprocess.PIPE
    t0 = time.monotonic()
    with subprocess.Popen(args, start_new_session=True, **kw) as p:
        w, stuck = Watch(p.pid), None
        out = err = None
        while True:
            try:
                out, err = p.communicate(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                pass
            idle = w.look()
            if idle >= idle_limit:
                stuck = f"idle for {idle:.0f} s (nothing ran or waited for a CPU)"
            elif time.monotonic() - t0 >= wall_limit:
                stuck = f"still running after {wall_limit} s"
            if stuck:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    out, err = p.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    out, err = p.communicate()
                break
    cp = subprocess.CompletedProcess(args, p.returncode, out, err)
    cp.stuck = stuck
    cp.wall = time.monotonic() - t0
    cp.pid = p.pid
    if stuck and check_stuck:
        import sys
        tail = lambda s: (s or "")[-3000:] if isinstance(s, str) else ""
        sys.exit(f"FAILED: {' '.join(map(str, args))} was stopped: {stuck}\nstdout:\n{tail(out)}\nstderr:\n{tail(err)}")
    return cp
