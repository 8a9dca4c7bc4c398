#!/usr/bin/python3
"""Issue 25 (hardening, round 2): one test per item, each failing on the code before its fix.

Usage: test_hardening.py BUILD_DIR SOURCE_DIR TEST_NAME
  outputs_no_links    1: no output is written through another user's link (a second local user,
                      made and removed here, plants them in a shared sticky directory)
  trace_dir_swap      2: the ranks refuse a trace directory swapped for another user's link, at
                      its own name or at a directory above it
  full_devshm         3: a full /dev/shm (a small tmpfs mounted in a private mount namespace):
                      the run goes on over TCP with a warning, ungated, exit 0
  sigpipe_listener    4: no TCP listener unless a transport needs it; with one, strangers'
                      connections while stderr is a closed pipe do not end mpisim (was 141)
  stops_keep_traces   5: a deadlocked run's trace replays as that deadlock; after a kill -9 of a
                      rank the replay blames that rank; a stopped run's trace says it was stopped
  relative_trace      6: --trace REL with --wdir and with a program that chdir()s before MPI_Init
  full_disk_trace     7: writing a trace onto a full file system (a small tmpfs): exit 5 with a
                      message, no crash at HDF5's exit, no partial file left
  timeline_keeps      8: --timeline X.json leaves an existing X.json.trace.h5 alone
  fd_reuse            9: a program that closes the trace's descriptor and reuses its number gets
                      no records in its file; a trace that then cannot go on makes exit 5
  report_stdout       10: --report - writes the report to standard output
  report_bound        12: mpisim report reads with a bound (/dev/zero: exit 2 at once)
  large_n             13: a large -n says that the model's set-up takes a while
  signals             15: SIGTERM, SIGHUP, kill -INT, Ctrl-C (a pty) and a killed launcher: exit 4,
                      the ranks "stopped", the signal named, nobody blamed
  capture_codes       16: mpisim trace: a killed rank exits 4, SIGTERM 4 without naming a report;
                      replay --timeline /dev/full exits 5; a failed set-up leaves no F.h5.raw
  server_gone         17: ranks whose model server was killed before they attached say so at once
  messages            18: NaN factor file, --listen ::1, net array:1:1, a program that does not
                      exist, --rep, config --describe, the summary after a failed report,
                      trace-recover naming cut ranks, control characters in mpisim report
Item 11 (a SIGSTOPped rank) is issue 26's; item 14 is tests/server (ServerBounds), item 19
tests/fuzz (fuzz.fuzz_trace_h5_no_false_artifacts); every exit code: test_exit_codes.py.
"""
import atexit
import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BUILD, SRC, NAME = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
BIN = os.path.join(BUILD, "bin")
MPISIM = os.path.join(BIN, "mpisim")
WORK = tempfile.mkdtemp(prefix="mpisim-hard-")
os.chmod(WORK, 0o755)   # a second user must reach the shared directories below it
atexit.register(shutil.rmtree, WORK, True)
SKIP = 77


def fail(what):
    sys.exit("FAILED: " + what)


def check(cond, what):
    if not cond:
        fail(what)
    print("ok:", what)


def remove_segments(pid):
    for f in os.listdir("/dev/shm"):
        if f.startswith((f"mpisim-{pid}-", f"mpisim-gate-{pid}x")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join("/dev/shm", f))


def run(args, timeout=300, **kw):
    """args to their end (SIGTERM, then SIGKILL of all it started, past the timeout: a failure)."""
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                          start_new_session=True, **kw) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            try:
                out, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, err = p.communicate()
                remove_segments(p.pid)
            fail(f"{' '.join(args)} did not end within {timeout} s\n{err[-3000:]}")
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def mpicc(name, src_dir="tests/cli/progs"):
    out = os.path.join(WORK, name)
    if not os.path.exists(out):
        p = run(["mpicc", "-O1", "-std=gnu11", "-o", out, os.path.join(SRC, src_dir, name + ".c")])
        if p.returncode:
            fail(f"mpicc {name}: {p.stderr}")
    return out


PINGPONG = [os.path.join(BIN, "pingpong"), "--iters", "3", "--only", "8"]


def synth_h5(name="good.h5", ranks=4, iters=2):
    path = os.path.join(WORK, name)
    if not os.path.exists(path):
        p = run([os.path.join(BIN, "synth_tool"), "h5", "stencil", str(ranks), str(iters), "1024", "0", path])
        if p.returncode:
            fail("synth_tool: " + p.stderr)
    return path


@contextlib.contextmanager
def other_user():
    """A second local user, made for the test and removed after it (skip when the machine cannot)."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        print("skipped: needs root and useradd to make a second local user")
        sys.exit(SKIP)
    name = f"mpsh{os.getpid() % 100000}"
    p = subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", name], capture_output=True, text=True)
    if p.returncode:
        print("skipped: useradd failed: " + p.stderr.strip())
        sys.exit(SKIP)
    try:
        pw = pwd.getpwnam(name)
        yield pw.pw_uid, pw.pw_gid
    finally:
        subprocess.run(["userdel", "-f", name], capture_output=True)


def as_user(uid, gid, fn):
    """fn() in a child running as uid:gid (an attacker's action); its exit code."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            fn()
            os._exit(0)
        except BaseException as e:   # noqa: B902 (the child reports any failure by its code)
            sys.stderr.write(f"as uid {uid}: {e}\n")
            os._exit(1)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st)


def in_small_tmpfs(mountpoint, size, cmd, fill=False, timeout=300):
    """cmd run in a private mount namespace where a tmpfs of `size` is mounted at mountpoint (and
    filled to the last byte when fill): a full /dev/shm or disk as another user of the machine makes
    it, without touching anyone else's. Skips when mounting is not allowed."""
    script = (f"mount -t tmpfs -o size={size} tmpfs {mountpoint} || exit 99\n"
              + (f"dd if=/dev/zero of={mountpoint}/filler bs=4k >/dev/null 2>&1\n" if fill else "")
              + 'exec "$@"\n')
    p = run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"] + cmd, timeout=timeout)
    if p.returncode == 99:
        print("skipped: cannot mount a tmpfs in a private mount namespace: " + p.stderr.strip())
        sys.exit(SKIP)
    return p


# ---------------------------------------------------------------------------------------------

def test_outputs_no_links():
    shared = os.path.join(WORK, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)   # as /tmp
    victim = os.path.join(WORK, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    raw = os.path.join(WORK, "raw")
    run([os.path.join(BIN, "synth_tool"), "raw", "fan", "4", "2", "1024", "0", raw])
    good = synth_h5()
    names = ["mpisim-report.json", "r.json", "t.h5", "tl.json", "rep.json", "tl.csv", "out.csv", "rec.h5", "-"]
    with other_user() as (uid, gid):
        def plant():
            for n in names:
                os.symlink(victim, os.path.join(shared, n if n != "-" else "dash"))
        check(as_user(uid, gid, plant) == 0, "the other user planted links to a file of ours")
        cases = [
            ([MPISIM, "run", "--compute", "none", "-n", "2", "--"] + PINGPONG, "the default report"),
            ([MPISIM, "run", "--compute", "none", "--report", "r.json", "--trace", "t.h5", "-n", "2", "--"] + PINGPONG,
             "--report and --trace"),
            ([MPISIM, "run", "--compute", "none", "--report", "ok.json", "--timeline", "tl.json", "-n", "2", "--"]
             + PINGPONG, "--timeline"),
            ([MPISIM, "replay", good, "--quiet", "--report", "rep.json"], "replay --report"),
            ([MPISIM, "replay", good, "--quiet", "--report", "ok2.json", "--timeline", "tl.csv"], "replay --timeline"),
            ([MPISIM, "sweep", good, "--vary", "network.link_rate=1e9,2e9", "--jobs", "1", "--out", "out.csv"],
             "sweep --out"),
            ([MPISIM, "trace-recover", raw, "rec.h5"], "trace-recover OUT"),
        ]
        for args, what in cases:
            p = run(args, cwd=shared)
            check(p.returncode == 5 and "symbolic link of another user" in p.stderr,
                  f"{what}: exit {p.returncode}, the link named\n{p.stderr[-1500:]}")
            check(open(victim).read() == "precious\n", f"{what}: the file the link points to is untouched")
            left = [f for f in os.listdir(shared) if f.startswith(".")]
            check(not left, f"{what}: no temporary file left ({left})")
    # the user's own links are followed (the report goes where the link points)
    mine = os.path.join(WORK, "mine")
    os.mkdir(mine)
    os.symlink(os.path.join(mine, "real.json"), os.path.join(mine, "link.json"))
    p = run([MPISIM, "replay", good, "--quiet", "--report", os.path.join(mine, "link.json")])
    check(p.returncode == 0 and json.load(open(os.path.join(mine, "real.json")))["schema"] == "mpisim-report/1"
          and os.path.islink(os.path.join(mine, "link.json")), "one's own link is followed")


def test_trace_dir_swap():
    prog = mpicc("late_init")
    shared = os.path.join(WORK, "shared2")
    os.mkdir(shared)
    os.chmod(shared, 0o777)   # writable by others, not sticky: they may rename what is in it
    victim = os.path.join(WORK, "victimdir")
    os.mkdir(victim)
    with open(os.path.join(victim, "meta.json"), "w") as f:
        f.write("precious\n")
    sub = os.path.join(shared, "sub")
    os.mkdir(sub)
    os.chmod(sub, 0o755)
    with other_user() as (uid, gid):
        attacker = os.path.join(shared, "attacker")   # the other user's own directory
        for trace, swap in ((os.path.join(shared, "F.h5"), "its own name"), (os.path.join(sub, "G.h5"), "a directory above it")):
            go = os.path.join(WORK, "go-" + os.path.basename(trace))
            raw = trace + ".raw"
            p = subprocess.Popen([MPISIM, "trace", "-o", trace, "-n", "2", "--", prog, go], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
            for _ in range(3000):
                if os.path.isdir(raw):
                    break
                time.sleep(0.01)
            check(os.path.isdir(raw), f"mpisim made {raw}")

            def attack():
                if swap == "its own name":
                    os.rename(raw, raw + ".away")
                    os.symlink(victim, raw)
                else:   # the directory holding the raw directory, for one of the other user's own
                    os.rename(sub, sub + ".away")
                    os.makedirs(os.path.join(attacker, "G.h5.raw"), mode=0o700)
                    os.symlink(attacker, sub)
            check(as_user(uid, gid, attack) == 0, f"the other user swapped the trace directory at {swap}")
            open(go, "w").close()
            try:
                out, err = p.communicate(timeout=240)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                fail("mpisim trace did not end after the swap")
            check(p.returncode != 0 and "cannot create the trace" in err,
                  f"swapped at {swap}: the ranks refuse it (exit {p.returncode})\n{err[-1500:]}")
            check(sorted(os.listdir(victim)) == ["meta.json"] and open(os.path.join(victim, "meta.json")).read()
                  == "precious\n", f"swapped at {swap}: the directory the link points to is untouched")
            if swap == "a directory above it":
                check(os.listdir(os.path.join(attacker, "G.h5.raw")) == [], "nothing in the other user's directory")


def test_full_devshm():
    for transport in ("shm", "tcp"):
        rep = os.path.join(WORK, f"shm-{transport}.json")
        p = in_small_tmpfs("/dev/shm", "1m", [MPISIM, "run", "--set", f"shim.transport={transport}", "--report", rep,
                                               "-n", "2", "--"] + PINGPONG, fill=True)
        check(p.returncode == 0 and json.load(open(rep))["summary"]["outcome"] == "ok",
              f"transport {transport} on a full /dev/shm: exit {p.returncode}\n{p.stderr[-2000:]}")
        if transport == "shm":
            check("cannot allocate the shared segment" in p.stderr and "connect by TCP instead" in p.stderr,
                  "the segment that cannot be allocated is said, and TCP used instead")
        check("compute gate's segment cannot be allocated" in p.stderr, "the ungated run is said")


def listening_sockets(pid):
    """TCP sockets in LISTEN state among the descriptors of process pid."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
            if t.startswith("socket:["):
                inodes.add(t[8:-1])
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:
                    n += 1
    return n


def test_sigpipe_listener():
    slow = mpicc("slow_barriers", "tests/shim/progs")
    # the default transport (shared memory): mpisim listens nowhere
    run_ = Running([MPISIM, "run", "--report", os.path.join(WORK, "l.json"), "-n", "2", "--", slow], 3)
    n = listening_sockets(run_.pid)
    run_.end(signal.SIGTERM)
    check(n == 0, f"no listening socket with the shared-memory transport (found {n})")
    # over TCP, with stderr a pipe nobody reads any more: strangers' connections are refused and
    # logged, and mpisim is not killed by the write (SIGPIPE)
    r, w = os.pipe()
    os.close(r)
    p = subprocess.Popen([MPISIM, "run", "--set", "shim.transport=tcp", "--report", os.path.join(WORK, "t.json"),
                          "-n", "2", "--", slow], stdout=subprocess.PIPE, stderr=w, text=True, start_new_session=True)
    os.close(w)
    for line in p.stdout:
        if line.startswith("barrier 2"):
            break
    # the server's port, from its listening socket
    import socket
    port = None
    inodes = {os.readlink(f"/proc/{p.pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{p.pid}/fd")
              if os.readlink(f"/proc/{p.pid}/fd/{fd}").startswith("socket:[")}
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:
                port = int(cols[1].split(":")[1], 16)
    check(port is not None, "the TCP transport has a listener")
    for _ in range(6):
        with contextlib.suppress(OSError):
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(b"garbage that is no hello, long enough to be read as one.....")
            time.sleep(0.2)
            s.close()
    for line in p.stdout:
        if line.startswith("barrier 12"):
            break
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=120)
    rep = json.load(open(os.path.join(WORK, "t.json")))
    check(p.returncode == 4 and rep["summary"]["rejected_connections"] >= 1,
          f"strangers refused with stderr closed: exit {p.returncode} (141: killed by SIGPIPE), "
          f"{rep['summary'].get('rejected_connections')} refused")


def test_stops_keep_traces():
    dl = mpicc("deadlock", "tests/shim/progs")
    kb = mpicc("kill_blocked", "tests/shim/progs")
    tr = os.path.join(WORK, "dl.h5")
    p = run([MPISIM, "run", "--compute", "none", "--report", os.path.join(WORK, "dl.json"), "--trace", tr, "-n", "2",
             "--", dl])
    check(p.returncode == 3, "the deadlocked run: exit 3")
    p = run([MPISIM, "replay", tr, "--report", os.path.join(WORK, "dlr.json")])
    r = json.load(open(os.path.join(WORK, "dlr.json")))
    check(p.returncode == 3 and r["summary"]["outcome"] == "deadlock" and "MPI_Recv" in p.stderr,
          f"its trace replays as the same deadlock (exit {p.returncode})\n{p.stderr[-1500:]}")
    for cmd in (["run", "--report", os.path.join(WORK, "k.json"), "--trace"], ["trace", "-o"]):
        tr = os.path.join(WORK, f"k-{cmd[0]}.h5")
        p = run([MPISIM] + cmd + [tr, "--compute", "none", "-n", "3", "--", kb, "linger"])
        check(p.returncode == 4, f"mpisim {cmd[0]} with rank 2 killed: exit 4 ({p.returncode})\n{p.stderr[-1500:]}")
        rep = os.path.join(WORK, f"kr-{cmd[0]}.json")
        p = run([MPISIM, "replay", tr, "--report", rep])
        st = [x["status"] for x in json.load(open(rep))["ranks"]]
        check(p.returncode == 4 and st[2] == "died" and "died" not in st[:2] and "rank 2 ended without MPI_Finalize"
              in p.stderr, f"mpisim {cmd[0]}: the replay blames rank 2, the killed one: {st}\n{p.stderr[-1500:]}")
    # MPI_Abort stops the run: the trace says why
    ab = mpicc("exit_code", "tests/shim/progs")
    tr = os.path.join(WORK, "ab.h5")
    run([MPISIM, "run", "--compute", "none", "--report", os.path.join(WORK, "u.json"), "--trace", tr, "-n", "2", "--",
         ab, "0", "abort"])
    p = run([MPISIM, "replay", tr, "--quiet", "--report", os.path.join(WORK, "ur.json")])
    check(p.returncode == 4 and "MPI_Abort" in p.stderr and "(recorded)" in p.stderr,
          f"the replay names the recorded cause of the stop\n{p.stderr[-1500:]}")


def test_relative_trace():
    prog = mpicc("late_init")
    other = os.path.join(WORK, "elsewhere")
    os.mkdir(other)
    here = os.path.join(WORK, "here")
    os.mkdir(here)
    for extra, args, what in ((["--mpirun-arg", "--wdir", "--mpirun-arg", other], ["-"], "--wdir"),
                              ([], ["-", other], "a chdir before MPI_Init")):
        p = run([MPISIM, "run", "--compute", "none", "--report", "r.json", "--trace", "rel.h5"] + extra
                + ["-n", "2", "--", prog] + args, cwd=here)
        check(p.returncode == 0 and os.path.isfile(os.path.join(here, "rel.h5")),
              f"{what}: a relative --trace is written where mpisim runs (exit {p.returncode})\n{p.stderr[-1500:]}")
        check(not os.listdir(other), f"{what}: nothing in the ranks' directory")
        os.unlink(os.path.join(here, "rel.h5"))


def test_full_disk_trace():
    raw = os.path.join(WORK, "raw")
    run([os.path.join(BIN, "synth_tool"), "raw", "stencil", "16", "50", "65536", "0", raw])
    full = os.path.join(WORK, "fullfs")
    os.mkdir(full)
    p = in_small_tmpfs(full, "64k", [MPISIM, "trace-recover", raw, os.path.join(full, "out.h5")])
    check(p.returncode == 5 and "disk full" in p.stderr and "infinite loop" not in p.stderr,
          f"trace-recover onto a full file system: exit 5 (139 was HDF5's crash at exit): {p.returncode}\n"
          f"{p.stderr[-1500:]}")
    # mpisim run --trace onto it: the ranks' raw files fit, the HDF5 trace does not
    prog = mpicc("late_init")
    script = f"{MPISIM} run --compute none --report {WORK}/fd.json --trace {full}/t.h5 -n 2 -- {prog} -; " \
             f"echo rc=$?; ls -a {full}"
    p = in_small_tmpfs(full, "64k", ["sh", "-c", script])
    rc = int(p.stdout.split("rc=")[1].split()[0])
    check(rc == 5 and "infinite loop" not in p.stderr and "t.h5\n" not in p.stdout and "t.h5.raw" in p.stdout
          and "disk full" in p.stderr, f"mpisim run --trace onto a full file system: exit 5, no half trace, the raw "
          f"files kept: {rc}\n{p.stdout}\n{p.stderr[-1500:]}")


def test_timeline_keeps():
    tl = os.path.join(WORK, "X.json")
    with open(tl + ".trace.h5", "w") as f:
        f.write("the user's own file\n")
    p = run([MPISIM, "run", "--compute", "none", "--report", os.path.join(WORK, "r.json"), "--timeline", tl, "-n",
             "2", "--"] + PINGPONG)
    check(p.returncode == 0 and json.load(open(tl))["traceEvents"], "the timeline is written")
    check(open(tl + ".trace.h5").read() == "the user's own file\n", "X.json.trace.h5 is left alone")
    check(sorted(os.listdir(WORK)) == sorted(["X.json", "X.json.trace.h5", "r.json"]), "nothing else is left")


def test_fd_reuse():
    prog = mpicc("fd_reuse")
    out = os.path.join(WORK, "own")
    p = run([MPISIM, "run", "--compute", "none", "--report", os.path.join(WORK, "f.json"), "--trace",
             os.path.join(WORK, "f.h5"), "-n", "2", "--", prog, out])
    for r in (0, 1):
        check(open(f"{out}.{r}").read() == f"own output of rank {r}\nrank {r} done\n",
              f"rank {r}'s own file holds its own lines only")
    check(p.returncode == 0 and "the trace goes on in descriptor" in p.stderr, "the trace goes on, and says so")
    p = run([MPISIM, "replay", os.path.join(WORK, "f.h5"), "--quiet", "--report", os.path.join(WORK, "fr.json")])
    check(p.returncode == 0, "the trace is complete: " + p.stderr[-1000:])
    # its file removed as well: the trace cannot go on, and the run's exit code says so (README: 5)
    p = run([MPISIM, "run", "--compute", "none", "--report", os.path.join(WORK, "g.json"), "--trace",
             os.path.join(WORK, "g.h5"), "-n", "2", "--", prog, out, "unlink"])
    check(p.returncode == 5 and "tracing stops" in p.stderr, f"a trace that could not be written: exit 5 "
          f"({p.returncode})\n{p.stderr[-1500:]}")


def test_report_stdout():
    p = run([MPISIM, "run", "--compute", "none", "--report", "-", "-n", "2", "--"] + PINGPONG)
    out = p.stdout
    start = out.find("{\n")
    check(p.returncode == 0 and start >= 0 and json.loads(out[start:])["schema"] == "mpisim-report/1",
          f"the report on standard output after the program's own lines (exit {p.returncode})")
    check("report -" not in p.stderr, "the summary does not name a report file")
    p = run([MPISIM, "replay", synth_h5(), "--quiet", "--report", "-"])
    check(p.returncode == 0 and json.loads(p.stdout)["schema"] == "mpisim-report/1", "replay --report - too")


def test_report_bound():
    t0 = time.time()
    p = run([MPISIM, "report", "/dev/zero"], timeout=120)
    check(p.returncode == 2 and "larger than" in p.stderr and time.time() - t0 < 60,
          f"mpisim report /dev/zero: exit 2 ({p.returncode}) after {time.time() - t0:.1f} s: {p.stderr}")


def test_large_n():
    # the launcher is /bin/false: only the set-up is tested, and what it says before it
    p = run([MPISIM, "run", "--compute", "none", "--mpirun", "/bin/false", "--report", os.path.join(WORK, "n.json"),
             "-n", "1536", "--"] + PINGPONG, timeout=600)
    check("setting up the model of 1536 hosts" in p.stderr, "a large -n says that its set-up takes a while")


class Running:
    """A run of slow_barriers (or another program printing "barrier N") read as it goes."""

    def __init__(self, args, count):
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        self.err = []
        self.t = threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True)
        self.t.start()
        for line in self.p.stdout:
            if line.startswith(f"barrier {count}"):
                break
        self.pid = self.p.pid

    def end(self, sig=None, timeout=120):
        """Its exit code and stderr, after `sig` (if any)."""
        if sig:
            self.p.send_signal(sig)
        threading.Thread(target=lambda: self.p.stdout.read(), daemon=True).start()
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            remove_segments(self.p.pid)
            fail(f"{self.p.args} did not end within {timeout} s of {sig}")
        self.t.join(timeout=30)
        return self.p.returncode, "".join(self.err)


def test_signals():
    slow = mpicc("slow_barriers", "tests/shim/progs")
    rep = os.path.join(WORK, "s.json")
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        rc, err = Running([MPISIM, "run", "--report", rep, "-n", "2", "--", slow], 5).end(sig)
        r = json.load(open(rep))
        st = [x["status"] for x in r["ranks"]]
        check(rc == 4 and st == ["stopped", "stopped"] and f"ended by {sig.name}" in r["summary"]["outcome_text"]
              and f"ended by {sig.name}" in err, f"{sig.name}: exit 4 ({rc}), ranks {st}, the signal named\n{err[-1500:]}")
    # Ctrl-C on a terminal: the whole foreground group gets SIGINT
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(MPISIM, [MPISIM, "run", "--report", rep, "-n", "2", "--", slow])
    out = b""
    t0 = time.time()
    while b"barrier 5" not in out and time.time() - t0 < 120:
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
    _, status = os.waitpid(pid, 0)
    r = json.load(open(rep))
    text = out.decode(errors="replace")
    check(os.waitstatus_to_exitcode(status) == 4 and "ended by SIGINT" in text and [x["status"] for x in r["ranks"]]
          == ["stopped", "stopped"], f"Ctrl-C: exit 4, 'ended by SIGINT', ranks stopped\n{text[-1500:]}")
    # the launcher killed: every rank goes with it, none of them is to blame
    run_ = Running([MPISIM, "run", "--report", rep, "-n", "2", "--", slow], 5)
    launcher = int(subprocess.run(["pgrep", "-P", str(run_.pid)], capture_output=True, text=True).stdout.split()[0])
    os.kill(launcher, signal.SIGKILL)
    rc, err = run_.end()
    r = json.load(open(rep))
    st = [x["status"] for x in r["ranks"]]
    check(rc == 4 and "died" not in st and "launcher was killed by SIGKILL" in r["summary"]["outcome_text"],
          f"a killed launcher: exit 4, ranks {st}, {r['summary']['outcome_text']}")


def test_capture_codes():
    kb = mpicc("kill_blocked", "tests/shim/progs")
    p = run([MPISIM, "trace", "-o", os.path.join(WORK, "k.h5"), "-n", "3", "--", kb, "linger"])
    check(p.returncode == 4 and "rank 2 ended without MPI_Finalize" in p.stderr,
          f"mpisim trace with a killed rank: exit 4 (was 137): {p.returncode}\n{p.stderr[-1000:]}")
    slow = mpicc("slow_barriers", "tests/shim/progs")
    rc, err = Running([MPISIM, "trace", "-o", os.path.join(WORK, "s.h5"), "-n", "2", "--", slow], 5).end(signal.SIGTERM)
    check(rc == 4 and "ended by SIGTERM" in err and "report" not in err,
          f"mpisim trace ended by SIGTERM: exit 4 (was 1), no report named: {rc}\n{err[-1000:]}")
    p = run([MPISIM, "replay", os.path.join(WORK, "s.h5"), "--quiet", "--report", os.path.join(WORK, "sr.json")])
    # (the recording was stopped: said as such when every rank had the time to record its stop, which a
    # machine loaded past one second per rank may not give before the launcher's SIGKILL)
    check(p.returncode == 4 and "partial trace" in p.stderr, "its replay says the trace is partial: " + p.stderr[-800:])
    if os.path.exists("/dev/full"):
        p = run([MPISIM, "replay", synth_h5(), "--quiet", "--report", os.path.join(WORK, "r.json"), "--timeline",
                 "/dev/full"])
        check(p.returncode == 5 and "/dev/full" in p.stderr, f"replay --timeline /dev/full: exit 5 ({p.returncode})")
    # a set-up that cannot write meta.json (a full file system): no F.h5.raw is left to refuse the next run
    full = os.path.join(WORK, "fullsetup")
    os.mkdir(full)
    script = f"{MPISIM} trace -o {full}/t.h5 -n 2 -- {slow}; echo rc=$?; ls -a {full}"
    p = in_small_tmpfs(full, "4k", ["sh", "-c", script], fill=True)
    check("rc=5" in p.stdout and "t.h5.raw" not in p.stdout and "No space left on device" in p.stderr,
          f"a set-up failure on a full disk: exit 5, no raw directory left\n{p.stdout}\n{p.stderr[-1000:]}")


def test_server_gone():
    prog = mpicc("late_init")
    go = os.path.join(WORK, "go")
    p = subprocess.Popen([MPISIM, "run", "--report", os.path.join(WORK, "g.json"), "-n", "2", "--", prog, go],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 120
    seg = None
    while time.time() < deadline and not seg:   # the server's segment is there: the ranks are starting
        seg = [f for f in os.listdir("/dev/shm") if f.startswith(f"mpisim-{p.pid}-")]
        time.sleep(0.05)
    time.sleep(1.0)
    os.kill(p.pid, signal.SIGKILL)   # the model server goes before the ranks attach
    t0 = time.time()
    open(go, "w").close()
    try:
        _, err = p.communicate(timeout=120)   # ends when the orphaned launcher and ranks have
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
    took = time.time() - t0
    remove_segments(p.pid)
    check("model server (mpisim, pid %d) has ended" % p.pid in err and "refused" not in err and took < 60,
          f"the ranks say that their server has ended, at once ({took:.1f} s; ~25 s and 'refused' before)\n"
          f"{err[-1500:]}")


def test_messages():
    fac = os.path.join(WORK, "factor.txt")
    with open(fac, "w") as f:
        f.write("nan\nsomething\n")
    p = run([MPISIM, "study", "speedup", "--cpu-factor", fac, "--procs", "1", "--sizes", "32", "--out",
             os.path.join(WORK, "st")])
    check(p.returncode == 2 and "factor.txt" in p.stderr, f"a NaN factor file is refused: {p.returncode}")
    import socket
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
        v6 = True
    except OSError:
        v6 = False
    if v6:
        p = run([MPISIM, "run", "--compute", "none", "--listen", "::1", "--set", "shim.transport=tcp", "--report",
                 os.path.join(WORK, "v6.json"), "-n", "2", "--"] + PINGPONG)
        check(p.returncode == 0, f"--listen ::1: the ranks connect to [::1] ({p.returncode})\n{p.stderr[-1000:]}")
    else:
        print("skipped --listen ::1: no IPv6 loopback here")
    p = run([MPISIM, "net", "--topology", "array:1:1", "--measure", "1us"])
    check(p.returncode == 2, f"net --topology array:1:1: exit 2 ({p.returncode})")
    nowhere = os.path.join(WORK, "no-such-program")
    for extra in ([], ["--trace", os.path.join(WORK, "np.h5")]):
        p = run([MPISIM, "run"] + extra + ["-n", "2", "--", nowhere])
        check(p.returncode == 2 and "cannot run the program" in p.stderr and "No such file" in p.stderr
              and not os.path.exists(os.path.join(WORK, "np.h5.raw")),
              f"a program that does not exist {extra}: exit 2 ({p.returncode}): {p.stderr[-500:]}")
    p = run([MPISIM, "run", "-n", "1", "--", "no-such-program-in-path"])
    check(p.returncode == 2 and "not in PATH" in p.stderr, "a name not in PATH")
    p = run([MPISIM, "run", "--rep", "x", "-n", "1", "--", "true"])
    check(p.returncode == 2 and "ambiguous" in p.stderr and "--report" in p.stderr and "--replace-trace" in p.stderr
          and "--np" not in p.stderr, f"--rep: ambiguous, naming both: {p.stderr}")
    p = run([MPISIM, "config", "--describe", "shim.connect_timeout"])
    check(p.returncode == 0 and "default 60 s (" in p.stdout and "s ps" not in p.stdout, "config --describe: " + p.stdout)
    if os.path.exists("/dev/full"):
        p = run([MPISIM, "run", "--compute", "none", "--report", "/dev/full", "-n", "2", "--"] + PINGPONG)
        check(p.returncode == 5 and "; report /dev/full" not in p.stderr, "the summary names no report that failed")
    raw = os.path.join(WORK, "cutraw")
    run([os.path.join(BIN, "synth_tool"), "raw", "fan", "4", "2", "1024", "0", raw])
    r3 = os.path.join(raw, "rank-000003.mstrace")
    os.truncate(r3, os.path.getsize(r3) - 5)
    p = run([MPISIM, "trace-recover", raw, os.path.join(WORK, "cut.h5")])
    check(p.returncode == 0 and "files were cut" in p.stderr and ": 3" in p.stderr, "trace-recover names the cut rank")
    # control characters of a program's path are not sent to the terminal
    rep = os.path.join(WORK, "ctl.json")
    run([MPISIM, "replay", synth_h5(), "--quiet", "--report", rep])
    r = json.load(open(rep))
    r["program"] = ["/bin/\x1b]0;owned\x07prog"]
    with open(rep, "w") as f:
        json.dump(r, f)
    p = run([MPISIM, "report", rep])
    check(p.returncode == 0 and "\x1b" not in p.stdout and "\\x1b" in p.stdout, "control characters are escaped")


TESTS = {n[5:]: f for n, f in globals().items() if n.startswith("test_")}
TESTS[NAME]()
print("PASSED", NAME)
