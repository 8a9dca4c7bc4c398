#!/usr/bin/python3
"""Runs that fail or are stopped: what mpisim says and exits with (unmodelled calls, bad profiles, deadlocks, crashes, killed and stalled ranks, timeouts)."""
# the helpers, the build and the scratch directory (BUILD, SRC, WORK, MPISIM), and the modules they use
from cosim_common import *  # noqa: F401,F403


def test_unlinked_program():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/burn.c"), os.path.join(WORK, "burn"))
    ldd = run(["ldd", exe]).stdout
    assert "mpisim" not in ldd, ldd
    p, rep = mpisim_run(2, [exe, "1000"], sets=["network.engine=analytic"])
    m = re.search(r"transfer_s=([0-9.eE+-]+)", p.stdout)
    assert m, p.stdout
    t = float(m.group(1))
    floor = 1048576 / 160e6
    print(f"1 MiB over a 1.28 Gb/s link took {t * 1e3:.4f} ms of virtual time (floor {floor * 1e3:.4f} ms)")
    if t < floor:
        sys.exit("FAILED: faster than the link allows")


def test_unmodelled():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/unmodelled.c"), os.path.join(WORK, "unmodelled"))
    check_unmodelled_port(exe, "C")


def test_bad_profile():
    bad = os.path.join(WORK, "bad.ini")
    with open(bad, "w") as f:
        f.write("[network]\nlink_rate = 1.28 Gb/s\nlink_colour = blue\n")
    p = run([MPISIM, "run", "--profile", bad, "-n", "2", "--", "true"], check=False)
    if p.returncode == 0 or "bad.ini:3" not in p.stderr or "link_colour" not in p.stderr:
        sys.exit(f"FAILED: expected file:line and key\n{p.stderr}")
    print("malformed profile:", p.stderr.strip().splitlines()[0])


def test_stall_watchdog():
    """A run that waits inside the real MPI while nothing can move stops after
    shim.stall_timeout with exit 3, each rank's call, peer, tag and call site, report written;
    a rank that merely computes while another waits in the real MPI is no stall."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/stall.c"), os.path.join(WORK, "stall"))
    sets = ("shim.stall_timeout=2s", "shim.unmodelled=passthrough")
    want = {
        "grequest": ["rank 0 at", "MPI_Wait waits in the real MPI for a request mpisim does not time",
                     "rank 1 at", "MPI_Recv", "recv from rank 0 tag 4", "called from main+"],
        "unmatched": ["rank 0 at", "MPI_Finalize waits in the real MPI for its send to rank 1 tag 3",
                      "called from main+"],
        # one-sided communication is modelled: a fence that waits for a rank blocked in the model is a
        # deadlock in virtual time (the fence's barrier), found without the watchdog's timeout
        "fence": ["deadlock in virtual time", "rank 0 at", "MPI_Win_fence", "MPI_Barrier",
                  "rank 1 at", "recv from rank 0 tag 5"],
    }
    for case, needles in want.items():
        report = os.path.join(WORK, f"stall_{case}.json")
        p, rep = mpisim_run(2, [exe, case], sets=sets, report=report, check=False)
        text = rep["summary"].get("outcome_text", "") if rep else ""
        missing = [n for n in needles if n not in text]
        kind = "deadlock" if case == "fence" else "stall"
        if p.returncode != 3 or rep["summary"]["outcome"] != kind or missing or f"{kind}" not in p.stderr:
            sys.exit(f"FAILED ({case}): rc={p.returncode}, missing {missing}\n{text}\n{p.stderr[-2000:]}")
        print(f"{case}: exit 3, {text.splitlines()[1].strip()}")
    p, rep = mpisim_run(2, [exe, "late"], sets=sets, check=False)
    if p.returncode != 0 or rep["summary"]["outcome"] != "ok":
        sys.exit(f"FAILED: a rank computing 3 s beside a real wait was taken for a stall\n{p.stderr[-2000:]}")
    print("late: a receiver computing for 3 s (stall_timeout 2 s) is no stall: the run ends normally")


def test_deadlock():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/deadlock.c"), os.path.join(WORK, "deadlock"))
    p, rep = mpisim_run(2, [exe], check=False)
    if p.returncode != 3 or "deadlock" not in p.stderr or "MPI_Recv" not in p.stderr:
        sys.exit(f"FAILED: expected a deadlock report naming MPI_Recv\n{p.stderr}")
    # said once, by mpisim, last: no line per rank, no MPI_ABORT banner of Open MPI's after it
    if p.stderr.count("deadlock in virtual time") != 1 or "MPI_ABORT was invoked" in p.stderr or \
            not p.stderr.rstrip().splitlines()[-1].lstrip().startswith("rank "):
        sys.exit(f"FAILED: the deadlock should be said once, last, without Open MPI's abort banner\n{p.stderr}")
    print("deadlock report:", [l for l in p.stderr.splitlines() if "rank" in l][:3])


def test_args_and_exit_code():
    p, _ = mpisim_run(1, ["sh", "-c", 'printf "%s|" "$@"; exit 7', "sh", "a b", "--set", "-n"], check=False)
    if p.returncode != 7 or p.stdout != "a b|--set|-n|":
        sys.exit(f"FAILED: args or exit code not passed through: rc={p.returncode} out={p.stdout!r}")
    print("arguments after -- and the exit code reach the user untouched")


def test_killed_rank():
    """kill -9 of a rank blocked in MPI_Recv: it is "died"; a message later meant for it does not
    make it running (holding the horizon back for ever). With Open MPI's recovery on, the others
    go on and finalize; by default the launcher ends them: "stopped", naming the dead rank."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/kill_blocked.c"), os.path.join(WORK, "kill_blocked"))
    for extra, others in ((["--mpirun-arg", "--enable-recovery"], "finalized"), ([], "stopped")):
        # by default rank 0 lingers after the kill until the launcher ends the job
        p, rep = mpisim_run(3, [exe] + ([] if extra else ["linger"]), extra=extra, check=False)
        st = [r["status"] for r in rep["ranks"]]
        if p.returncode != 4 or st != [others, others, "died"] or "rank 2" not in rep["summary"]["outcome_text"]:
            sys.exit(f"FAILED ({' '.join(extra) or 'default'}): exit {p.returncode}, statuses {st}, "
                     f"{rep['summary']}\n{p.stderr}")
        if others == "stopped" and "after rank 2 died" not in rep["ranks"][0].get("error", ""):
            sys.exit(f"FAILED: the stopped ranks name the dead one: {rep['ranks'][0]}")
        print(f"{' '.join(extra) or 'default'}: statuses {st}, exit 4")


def test_finalize_hang():
    """Ranks that finalized for the model but never leave the MPI library's own shutdown (Open MPI
    under --enable-recovery with a dead peer, now and then: CI saw cosim_killed_rank idle 121 s in
    PMPI_Finalize's fence): mpisim ends the launcher after its 60 s grace, says why, and the report
    is complete (both ranks finalized), instead of waiting for ever."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/finalize_hang.c"), os.path.join(WORK, "finalize_hang"))
    p, rep = mpisim_run(2, [exe], check=False)
    st = [r["status"] for r in rep["ranks"]] if rep else None
    if st != ["finalized", "finalized"] or "still inside MPI_Finalize" not in p.stderr or p.returncode == 0:
        sys.exit(f"FAILED: exit {p.returncode}, statuses {st}\n{p.stdout}\n{p.stderr}")
    print(f"held in MPI_Finalize: statuses {st}, launcher ended, exit {p.returncode}")


def test_trace_finalize_hang():
    """The same under `mpisim trace` (no model server): the shim marks a rank held inside
    PMPI_Finalize in the trace directory, and the launcher is ended after the same grace; the
    trace is complete (it replays with both ranks finalized) and the raw directory is gone."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/finalize_hang.c"), os.path.join(WORK, "finalize_hang"))
    h5 = os.path.join(WORK, "finalize_hang.h5")
    for f in (h5, h5 + ".raw"):
        if os.path.isfile(f):
            os.remove(f)
    p = run([MPISIM, "trace", "-o", h5, "-n", "2", "--", exe], check=False)
    if "still inside MPI_Finalize" not in p.stderr or p.returncode == 0 or not os.path.isfile(h5):
        sys.exit(f"FAILED: exit {p.returncode}, trace written: {os.path.isfile(h5)}\n{p.stdout}\n{p.stderr}")
    if os.path.exists(h5 + ".raw"):
        sys.exit(f"FAILED: the raw directory {h5}.raw was left: {os.listdir(h5 + '.raw')}")
    report = os.path.join(WORK, "finalize_hang_replay.json")
    run([MPISIM, "replay", h5, "--report", report])
    with open(report) as f:
        st = [r["status"] for r in json.load(f)["ranks"]]
    if st != ["finalized", "finalized"]:
        sys.exit(f"FAILED: the trace replays with statuses {st}")
    print(f"held in MPI_Finalize under mpisim trace: launcher ended, exit {p.returncode}; replayed: {st}")


def terminate_after_barriers(exe, report, count):
    """mpisim run of slow_barriers, sent SIGTERM once its rank 0 has passed count barriers (0.1 s
    apart: by then each rank has sent its totals about once a second), whatever the start-up took
    on this host. Returns the process, its stdout and stderr, and the barriers rank 0 had passed."""
    import signal
    import threading
    p = subprocess.Popen([MPISIM, "run", "--report", report, "-n", "2", "--", exe],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines, errs, reached = [], [], threading.Event()

    def read_out():
        for line in p.stdout:
            lines.append(line)
            if line.startswith("barrier ") and int(line.split()[1]) >= count:
                reached.set()

    readers = [threading.Thread(target=read_out), threading.Thread(target=lambda: errs.extend(p.stderr))]
    for t in readers:
        t.start()
    ok = reached.wait(timeout=300)   # the start-up of a loaded machine: not the test's subject
    passed = len([l for l in lines if l.startswith("barrier ")])
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        remove_segments(p.pid)
        sys.exit("FAILED: mpisim did not end within 60 s of SIGTERM")
    for t in readers:
        t.join()
    if not ok:
        sys.exit(f"FAILED: rank 0 did not pass {count} barriers within 300 s\n{''.join(lines)}\n{''.join(errs)}")
    return p, "".join(lines), "".join(errs), passed


def test_terminated():
    """SIGTERM to mpisim run (a batch system's time limit) goes to the launcher: the ranks end, the
    report keeps what was recorded (the barriers so far), the exit code says the run did not
    finish, and no shared segment is left in /dev/shm."""
    import time
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/slow_barriers.c"), os.path.join(WORK, "slow_barriers"))
    report = os.path.join(WORK, "term.json")
    # what an mpisim killed with SIGKILL leaves: its segments go at the next run once its PID is
    # gone and they are older than any set-up; a live PID's or a young one's stay
    t = subprocess.Popen(["true"])
    t.wait()
    dead, old = t.pid, time.time() - 3600
    planted = {f"mpisim-{dead}-00c0ffee00c0ffee": False, f"mpisim-gate-{dead}x00c0ffee00c0ffee": False,
               f"mpisim-{os.getpid()}-00c0ffee00c0ffee": True, f"mpisim-{dead}-11c0ffee00c0ffee": True}
    for i, name in enumerate(planted):
        with open(os.path.join("/dev/shm", name), "w") as f:
            f.write("x")
        if i < 3:
            os.utime(os.path.join("/dev/shm", name), (old, old))
    before = set(f for f in os.listdir("/dev/shm") if f.startswith("mpisim-"))
    try:
        p, out, err, passed = terminate_after_barriers(exe, report, 30)
    finally:
        there = {name: os.path.exists(os.path.join("/dev/shm", name)) for name in planted}
        for name in planted:
            if there[name]:
                os.unlink(os.path.join("/dev/shm", name))
    # this run's (other runs may be starting beside the test)
    left = set(f for f in os.listdir("/dev/shm")
               if f.startswith((f"mpisim-{p.pid}-", f"mpisim-gate-{p.pid}x"))) - before
    rep = json.load(open(report)) if os.path.exists(report) else None
    # the model's view survives, and each rank's totals and call sites as of its last PROGRESS
    # (about once a second): a rank stopped before MPI_Finalize keeps them
    barriers = min(r["collectives"] for r in rep["ranks"]) if rep else 0
    if rep:
        sites = sum(c["calls"] for c in rep["callsites"] if c["call"] == "MPI_Barrier")
        asof = [r.get("totals_as_of_ps", 0) for r in rep["ranks"]]
        if any(r["calls"] < 10 or "charging" not in r for r in rep["ranks"]) or sites < 20 or min(asof) <= 0:
            sys.exit(f"FAILED: the stopped ranks' totals and call sites are not in the report: calls "
                     f"{[r['calls'] for r in rep['ranks']]}, barrier calls at sites {sites}, as of {asof}")
    if p.returncode == 0 or not rep or barriers < 2 or left:
        sys.exit(f"FAILED: exit {p.returncode}, report {'written' if rep else 'missing'}, {barriers} barriers "
                 f"recorded, segments left {sorted(left)}\n{err}")
    if "ended by SIGTERM" not in err:
        sys.exit(f"FAILED: the run does not say it was ended by SIGTERM\n{err}")
    if there != planted:
        sys.exit(f"FAILED: stale segments: expected present {planted}, found {there}")
    print(f"SIGTERM after barrier {passed}: exit {p.returncode}, report with {barriers} barriers per rank, the ranks' call sites and "
          f"charging as of their last progress ({[r['calls'] for r in rep['ranks']]} calls), no segment left")


def rank_pid(launcher_pid, rank):
    """The pid of a rank's process under the launcher (Open MPI's environment names its rank)."""
    import time
    for _ in range(200):
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                env = open(f"/proc/{d}/environ", "rb").read().split(b"\0")
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            ancestors, pid = set(), int(d)
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env and b"MPISIM_SERVER" in b" ".join(env):
                # below this test's mpisim (its launcher's child)
                p = pid
                for _ in range(8):
                    try:
                        p = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
                    except OSError:
                        break
                    ancestors.add(p)
                if launcher_pid in ancestors:
                    return pid
        time.sleep(0.1)
    sys.exit(f"FAILED: rank {rank}'s process not found under {launcher_pid}")


def test_stopped_rank():
    """A rank whose process is stopped (SIGSTOP) does not move and cannot say so:
    the stall watchdog finds it after shim.stall_timeout (exit 3, outcome stall, the rank named as
    stopped) and the run ends, the stopped rank with it. Stopped for less than that and continued,
    it is no stall. A SIGTERM to mpisim while a rank is stopped still ends the run promptly."""
    import signal
    import threading
    import time
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/slow_barriers.c"), os.path.join(WORK, "slow_barriers"))

    def start(report, timeout_s):
        p = subprocess.Popen([MPISIM, "run", "--report", report, "--set", f"shim.stall_timeout={timeout_s}",
                              "-n", "2", "--", exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        lines, errs, reached = [], [], threading.Event()

        def read_out():
            for line in p.stdout:
                lines.append(line)
                if line.startswith("barrier ") and int(line.split()[1]) >= 5:
                    reached.set()
        readers = [threading.Thread(target=read_out), threading.Thread(target=lambda: errs.extend(p.stderr))]
        for t in readers:
            t.start()
        if not reached.wait(timeout=300):
            os.killpg(p.pid, signal.SIGKILL)
            sys.exit(f"FAILED: rank 0 did not pass 5 barriers\n{''.join(errs)}")
        return p, lines, errs, readers

    def finish(p, readers, limit, what):
        try:
            p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            remove_segments(p.pid)
            sys.exit(f"FAILED: {what}: mpisim did not end within {limit} s")
        for t in readers:
            t.join()

    # stopped for good: found after the timeout (5 s of wall time stopped), the run ends
    report = os.path.join(WORK, "stopped.json")
    p, lines, errs, readers = start(report, "5s")
    pid = rank_pid(p.pid, 1)
    os.kill(pid, signal.SIGSTOP)
    t0 = time.monotonic()
    finish(p, readers, 120, "a rank stopped for good")
    took = time.monotonic() - t0
    rep = json.load(open(report))
    text = rep["summary"].get("outcome_text", "")
    gone = not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    if p.returncode != 3 or rep["summary"]["outcome"] != "stall" or "rank 1" not in text or \
            f"its process {pid} is stopped (state T" not in text or not gone or took < 5:
        sys.exit(f"FAILED: a rank stopped by SIGSTOP: exit {p.returncode} after {took:.0f} s, process gone {gone}\n"
                 f"{text}\n{''.join(errs)[-2000:]}")
    print(f"SIGSTOP of rank 1: exit 3 after {took:.1f} s, {[l.strip() for l in text.splitlines() if 'rank 1' in l][0]}")
    # stopped for 2 s, then continued: slow, not stuck (stall_timeout 5 s); the run ends normally
    report = os.path.join(WORK, "continued.json")
    p, lines, errs, readers = start(report, "5s")
    pid = rank_pid(p.pid, 1)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(2)
    os.kill(pid, signal.SIGCONT)
    os.killpg(p.pid, 0)   # still there
    # it has 600 barriers to go (a minute): end it as a batch system would, after some more
    n = len(lines)
    while len(lines) < n + 5 and p.poll() is None:
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    finish(p, readers, 120, "a rank stopped and continued")
    rep = json.load(open(report))
    if rep["summary"]["outcome"] == "stall" or len(lines) < n + 5:
        sys.exit(f"FAILED: a rank stopped for 2 s and continued was taken for a stall ({len(lines) - n} barriers "
                 f"after)\n{rep['summary']}")
    print(f"SIGSTOP for 2 s then SIGCONT (stall_timeout 5 s): no stall, {len(lines) - n} more barriers")
    # SIGTERM while a rank is stopped (watchdog far off): the stopped rank does not hold the end
    report = os.path.join(WORK, "term_stopped.json")
    p, lines, errs, readers = start(report, "600s")
    pid = rank_pid(p.pid, 1)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(1)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    finish(p, readers, 60, "SIGTERM while a rank is stopped")
    took = time.monotonic() - t0
    if p.returncode == 0 or "ended by SIGTERM" not in "".join(errs) or took > 30:
        sys.exit(f"FAILED: SIGTERM with rank 1 stopped: exit {p.returncode} after {took:.0f} s\n{''.join(errs)[-2000:]}")
    print(f"SIGTERM with rank 1 stopped: mpisim ended after {took:.1f} s (exit {p.returncode})")


def test_connect_timeout():
    """A rank that leaves before MPI_Init ends the run promptly, named; one that never reaches it
    (the others wait in MPI_Init for ever) is stopped after shim.connect_timeout, in a
    co-simulation and in a capture-only trace."""
    import time
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/exit_before_init.c"), os.path.join(WORK, "exit_before_init"))
    # after 2 s, and at once (gone before the server's once-a-second look at /proc could see it:
    # named by its own shim's word in the shared segment)
    for when in ("exit", "now"):
        t0 = time.time()
        p, rep = mpisim_run(3, [exe, when], check=False)   # the default shim.connect_timeout
        took = time.time() - t0
        if p.returncode != 4 or took > 90 or "rank 1 exited before MPI_Init" not in p.stderr:
            sys.exit(f"FAILED: leaving before MPI_Init ({when}): exit {p.returncode} after {took:.0f} s\n{p.stderr}")
        print(f"rank 1 left before MPI_Init ({when}): exit 4 after {took:.1f} s, named")
    for cmd in ("run", "trace"):
        t0 = time.time()
        args = [MPISIM, cmd, "--set", "shim.connect_timeout=10 s", "-n", "3", "--", exe, "hang"]
        args[2:2] = ["--report", os.path.join(WORK, "ct.json")] if cmd == "run" else \
            ["-o", os.path.join(WORK, "ct.h5"), "--replace-trace"]
        # 10 s of idle time: about 10 s of wall time on a quiet machine, more on a loaded one (the
        # waiting ranks wait for a CPU when they wake); never less
        p = run(args, check=False, timeout=150)
        took = time.time() - t0
        want = "never connected to the model server within 10 s" if cmd == "run" else "did not reach MPI_Init within 10 s"
        if p.returncode != 4 or took < 10 or took > 120 or want not in p.stderr:
            sys.exit(f"FAILED: mpisim {cmd} with a rank that never reaches MPI_Init: exit {p.returncode} after "
                     f"{took:.0f} s\n{p.stderr}")
        print(f"mpisim {cmd}: a rank that never reaches MPI_Init stops the run after {took:.1f} s (exit 4)")


def test_idle_connections():
    """400 idle connections to the model server (a local stranger's, reopened whenever the server
    drops them) do not slow a co-simulation by more than 2x, also when they exhaust the server's
    file descriptors (limit 256 here); the run's results are the same."""
    import resource
    import time
    prog = [os.path.join(BIN, "pingpong"), "--iters", "1000", "--only", "8"]
    launcher = os.path.join(SRC, "tests/shim/idle_launcher.py")

    def timed(attack):
        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        # both through the launcher (it waits 1 s for its connections), 0 or 400 of them
        # --listen: the run listens (by default, ranks on this host only attach to the shared segment)
        args = [MPISIM, "run", "--compute", "none", "--report", os.path.join(WORK, "idle.json"),
                "--listen", "127.0.0.1", "--mpirun", launcher, "-n", "2", "--"] + prog
        env = dict(os.environ, MPISIM_IDLE_CONNECTIONS="400" if attack else "0")
        t0 = time.time()
        p = run(args, check=False, env=env, preexec_fn=limit)
        took = time.time() - t0
        if p.returncode != 0:
            sys.exit(f"FAILED: {' '.join(args)} exited {p.returncode}\n{p.stderr[-3000:]}")
        rep = json.load(open(os.path.join(WORK, "idle.json")))
        return took, rep, p.stderr

    ratios = []
    for attempt in range(2):   # the machine is shared: a second pair before calling it slow
        base, rb, _ = timed(False)
        hit, ra, err = timed(True)
        if rb["summary"]["virtual_time_ps"] != ra["summary"]["virtual_time_ps"]:
            sys.exit("FAILED: idle connections changed the virtual result")
        ratios.append(hit / base)
        print(f"co-simulation {base:.2f} s alone, {hit:.2f} s beside 400 idle connections "
              f"(ratio {hit / base:.2f}; {ra['summary']['rejected_connections']} refused)")
        if hit / base <= 2.0:
            break
    if min(ratios) > 2.0:
        sys.exit(f"FAILED: idle connections slowed the run {min(ratios):.2f}x")
    if ra["summary"]["rejected_connections"] < 1:
        sys.exit("FAILED: the strangers were not refused")


def test_rank_crash():
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/crash.c"), os.path.join(WORK, "crash"))
    p, rep = mpisim_run(3, [exe], check=False)
    if p.returncode == 0 or rep is None:
        sys.exit(f"FAILED: a crashed rank must fail the run and still write the report\n{p.stderr}")
    r1 = rep["ranks"][1]
    if rep["summary"]["outcome"] != "error" or "rank 1 ended without MPI_Finalize" not in rep["summary"]["outcome_text"]:
        sys.exit(f"FAILED: outcome should name the dead rank: {rep['summary']}")
    if r1["status"] != "died" or "crashed" not in r1.get("error", ""):
        sys.exit(f"FAILED: rank 1 {r1}")
    print("crash:", rep["summary"]["outcome_text"].splitlines()[0])


def test_stall_rule_says():
    """The stall rule of "Repeatable small gaps" charges the floor for an isolated long interval
    between call sites that otherwise do nothing, taking it for a stall of the machine: real work
    there that comes rarely (rare_work: ~28 us every 100th iteration, 20 times) is dropped with it.
    Never silently: either the work is charged, or the report warns with what it dropped (13.6 %
    of the rank's virtual time here); shim.gap_noise_max = 0 charges it."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/rare_work.c"), os.path.join(WORK, "rare_work"))
    units = 40000

    def reference():
        return mpisim_run(2, [exe, "2000", "100", str(units)], compute="cpu", sets=["shim.gap_noise_max=0"],
                          report=os.path.join(WORK, "rare0.json"))[1]

    ref = reference()
    c0 = ref["ranks"][0]["charging"]
    if c0["stall_gaps"]:
        sys.exit(f"FAILED: shim.gap_noise_max = 0 still took {c0['stall_gaps']} intervals for stalls")
    work = ref["ranks"][0]["compute_ps"] / 1e3
    _, r = mpisim_run(2, [exe, "2000", "100", str(units)], compute="cpu", report=os.path.join(WORK, "rare.json"))
    x = r["ranks"][0]
    c = x["charging"]
    warned = [w for w in r.get("measurement_warnings", []) if "taken for stalls of the machine" in w]
    charged = x["compute_ps"] / 1e3
    print(f"rare work: {work / 1e3:.0f} us charged with shim.gap_noise_max = 0; by default {charged / 1e3:.0f} us "
          f"charged, {c['stall_gaps']} intervals taken for stalls ({c['stall_dropped_ns'] / 1e3:.0f} us); "
          f"warned: {bool(warned)}")
    share = c["stall_dropped_ns"] * 1e3 / x["virtual_end_ps"]
    if share > 0.01 and not warned:
        sys.exit(f"FAILED: the stall rule dropped {100 * share:.1f} % of rank 0's virtual time without a warning")
    # the work is ~20 x 28 us: it is either charged or named as dropped (under load the pair may see
    # three long intervals in 256 and no longer look empty: then it is charged). The reference is
    # CPU time, which load only inflates (beside a CPU-bound job once 6.7 ms for 1.3 ms, the
    # shim's issue, not this rule's): a reference that looks too large is measured again, the
    # smallest kept
    for _ in range(2):
        if charged + c["stall_dropped_ns"] >= 0.5 * work:
            break
        work = min(work, reference()["ranks"][0]["compute_ps"] / 1e3)
    if charged + c["stall_dropped_ns"] < 0.5 * work:
        sys.exit(f"FAILED: rank 0's rare work ({work / 1e3:.0f} us) was neither charged nor reported as dropped")


def test_exit_causes():
    """The cause of a rank's end is named right: a rank that returns EXIT_FAILURE on its own after
    MPI_Init (no MPI_Finalize) is reported with its exit code, not as crashed or killed (exit 4);
    a program that exits 7 after MPI_Finalize gets its own code, and mpisim says so (not the MPI
    library's shutdown)."""
    exe = mpicc(os.path.join(SRC, "tests/shim/progs/exit_alone.c"), os.path.join(WORK, "exit_alone"))
    p, rep = mpisim_run(2, [exe], check=False)
    text = rep["summary"].get("outcome_text", "")
    r1 = rep["ranks"][1]
    if (p.returncode != 4 or "rank 1 exited with code 1" not in text or "crashed" in text
            or "exited with code 1" not in r1.get("error", "")):
        sys.exit(f"FAILED: exit {p.returncode}, {rep['summary']}, rank 1 {r1}")
    print("a rank that returns EXIT_FAILURE:", text.splitlines()[0])
    exe2 = mpicc(os.path.join(SRC, "tests/shim/progs/exit_code.c"), os.path.join(WORK, "exit_code"))
    p, rep = mpisim_run(2, [exe2, "7"], check=False)
    if (p.returncode != 7 or rep["summary"]["outcome"] != "ok" or "program's own" not in p.stderr
            or "shutdown" in p.stderr or "program's own" not in rep["launcher"].get("note", "")):
        sys.exit(f"FAILED: exit {p.returncode}, {rep['summary']}, {rep.get('launcher')}\n{p.stderr}")
    print("exit 7 after MPI_Finalize:", [l for l in p.stderr.splitlines() if "own" in l][0])


if __name__ == "__main__":
    run_named(globals())
