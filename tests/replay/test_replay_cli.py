#!/usr/bin/python3
"""CLI tests of trace capture, replay and sweeps (run by ctest with Debian's python3).

usage: test_replay_cli.py BUILD_DIR SOURCE_DIR TEST_NAME
"""
import csv
import json
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
SYNTH = os.path.join(BIN, "synth_tool")
WORK = tempfile.mkdtemp(prefix="replay_cli_")


def run(cmd, ok=True, **kw):
    """cmd to its end, or until idle for two minutes or past 280 s (tests/progress_run.py)."""
    p = progress_run.run(cmd, idle_limit=120, wall_limit=280, **kw)
    if ok and p.returncode != 0:
        raise SystemExit("FAILED: %s\nstdout:\n%s\nstderr:\n%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p


def synth(shape, n, iters, nbytes, compute, out):
    run([SYNTH, "h5", shape, str(n), str(iters), str(nbytes), str(compute), out])
    return out


def check(cond, msg):
    if not cond:
        raise SystemExit("FAILED: " + msg)


def test_h5py_readable():
    """A trace is plain HDF5 (h5py, h5dump); replay/mpisim_trace.py decodes its records into numpy
    arrays, for schema 2 (written now) and schema 1 (written before), the same arrays for both."""
    import h5py
    import numpy as np
    sys.path.insert(0, os.path.join(SRC, "replay"))
    import mpisim_trace
    h5 = synth("stencil", 4, 3, 256, 1000, os.path.join(WORK, "s.h5"))
    with h5py.File(h5, "r") as f:
        check(f.attrs["schema"] == "mpisim-trace/2", "schema attribute")
        check(int(f.attrs["nranks"]) == 4, "nranks")
        heads = f["rank_heads"][:]
        for field in ("rank", "pid", "hostname", "nev", "nlists", "nresults", "ntext", "first_stretch"):
            check(field in heads.dtype.names, "rank_heads field " + field)
        check(f["records"].dtype == np.uint8 and f["stretches"][-1] == f["records"].shape[0], "records, stretches")
        names = [s.decode() if isinstance(s, bytes) else s for s in f["fn_names"][:]]
        check(names[0] == "MPI_Send", "fn_names")
    old = os.path.join(WORK, "s1.h5")
    run([SYNTH, "copy-v1", h5, old])
    with mpisim_trace.open(h5) as t, mpisim_trace.open(old) as u:
        check(t.schema == "mpisim-trace/2" and u.schema == "mpisim-trace/1", "schemas")
        ev = t.events(0)
        for field in ("kind", "fn", "t_ps", "compute_ps", "real_entry_ns", "real_exit_ns", "comm", "peer", "tag",
                      "bytes", "req", "mode", "matched_source", "matched_tag", "callsite", "list_off", "list_n"):
            check(field in ev.dtype.names, "field " + field)
        check(int(np.sum(ev["kind"] == 2)) == 3 * 4, "3 iterations x 4 Isend")
        waits = ev[ev["kind"] == 6]
        lists = t.lists(0)
        w = waits[-1]
        check(len(lists[w["list_off"]:w["list_off"] + w["list_n"]]) == 8, "wait list of 8 requests")
        for r in range(4):
            a, b = t.events(r), u.events(r)
            for n in mpisim_trace.EVENT_DTYPE.names[:-1]:   # schema 1 has no pad
                check(np.array_equal(a[n].astype("i8"), b[n].astype("i8")), "rank %d field %s: schemas agree" % (r, n))
            check(np.array_equal(t.lists(r), u.lists(r)) and t.results(r).tobytes() == u.results(r).tobytes()
                  and t.text(r) == u.text(r), "rank %d side arrays agree" % r)
    # the co-simulation trace of the golden test (schema 1, real clocks) rewritten: the same records
    golden, again = os.path.join(SRC, "tests/golden/data/collectives_np4.h5"), os.path.join(WORK, "g2.h5")
    run([SYNTH, "copy", golden, again])
    with mpisim_trace.open(golden) as t, mpisim_trace.open(again) as u:
        for r in range(t.nranks):
            for n in mpisim_trace.EVENT_DTYPE.names[:-1]:   # schema 1 has no pad
                check(np.array_equal(t.events(r)[n].astype("i8"), u.events(r)[n].astype("i8")),
                      "golden trace rank %d field %s" % (r, n))
    p = run(["h5dump", "-H", h5])
    check("rank_heads" in p.stdout, "h5dump reads it")


def test_readme_example():
    """The h5py example of replay/README.md runs as written (with replay/ on the module path, where
    mpisim_trace.py is; installed: share/mpisim/python)."""
    text = open(os.path.join(SRC, "replay/README.md")).read()
    m = re.search(r"```python\n(.*?)```", text, re.S)
    check(m is not None, "README has a python example")
    synth("pingpong", 2, 4, 8, 1000, os.path.join(WORK, "trace.h5"))
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "replay"))
    p = run([sys.executable, "-c", m.group(1)], cwd=WORK, env=env)
    check("rank 0" in p.stdout, "example prints per-rank lines: " + p.stdout)


def test_cli_replay():
    h5 = synth("pingpong", 2, 10, 8, 0, os.path.join(WORK, "pp.h5"))
    rep = os.path.join(WORK, "r.json")
    run([MPISIM, "replay", h5, "--set", "network.engine=analytic", "--report", rep])
    r = json.load(open(rep))
    check(r["schema"] == "mpisim-report/1", "report schema")
    check(r["engine"] == "analytic" and r["nranks"] == 2, "engine/nranks")
    tau, prop, o = 6250, round(10 / 1.8e8 * 1e12), 400000
    half = o + tau * (8 + 4 + 1) + 2 * prop + o
    check(r["ranks"][0]["virtual_end_ps"] == 20 * half, "closed form %d vs %d" % (r["ranks"][0]["virtual_end_ps"], 20 * half))
    # --timeline: every call's virtual entry/exit; rank 0's last exit is its virtual end
    tl = os.path.join(WORK, "tl.csv")
    run([MPISIM, "replay", h5, "--set", "network.engine=analytic", "--report", rep, "--timeline", tl])
    rows = read_csv(tl)
    check(rows[0]["fn"] == "MPI_Send" and len([r for r in rows if r["rank"] == "0"]) == 20, "timeline rows")
    check(int([r for r in rows if r["rank"] == "0"][-1]["exit_ps"]) == 20 * half, "timeline end")
    # --cpu-scale and --profile are accepted; a corrupt file is a clear error, exit status 2
    run([MPISIM, "replay", h5, "--profile", "seed002-pci", "--cpu-scale", "2", "--report", rep])
    bad = os.path.join(WORK, "bad.h5")
    with open(h5, "rb") as f:
        data = f.read()
    with open(bad, "wb") as f:
        f.write(data[: len(data) // 2])
    p = run([MPISIM, "replay", bad], ok=False)
    check(p.returncode == 2 and "bad.h5" in p.stderr, "corrupt trace: " + p.stderr)
    # a routing that may deadlock is said before the replay (as mpisim run and net say it)
    st = synth("stencil", 16, 1, 1024, 0, os.path.join(WORK, "st16.h5"))
    p = run([MPISIM, "replay", st, "--report", rep, "--set", "network.topology=torus2d:4:4:1",
             "--set", "network.routing=shortest"])
    check("WARNING: routing 'shortest' on 'torus2d:4:4:1' is not deadlock-free" in p.stderr, "warning: " + p.stderr)
    p = run([MPISIM, "replay", h5, "--set", "network.nope=1"], ok=False)
    check(p.returncode == 2 and "nope" in p.stderr, "bad key: " + p.stderr)
    # trace-recover from raw files (synthetic, one rank truncated)
    raw = os.path.join(WORK, "raw")
    run([SYNTH, "raw", "fan", "4", "2", "1024", "0", raw])
    f1 = os.path.join(raw, "rank-000001.mstrace")
    os.truncate(f1, os.path.getsize(f1) - 3)
    out = os.path.join(WORK, "rec.h5")
    run([MPISIM, "trace-recover", raw, out])
    p = run([MPISIM, "replay", out, "--report", rep], ok=False)
    r = json.load(open(rep))
    check(r["ranks"][1]["status"] in ("died", "finalized", "blocked"), "recovered trace replays")
    # one rank left no file, another an empty one: trace-recover converts the rest and names them;
    # the replay of that partial trace plays what exists and is not ok (exit 4)
    raw2 = os.path.join(WORK, "raw2")
    run([SYNTH, "raw", "fan", "4", "2", "1024", "0", raw2])
    os.unlink(os.path.join(raw2, "rank-000002.mstrace"))
    open(os.path.join(raw2, "rank-000003.mstrace"), "w").close()
    out2 = os.path.join(WORK, "rec2.h5")
    p = run([MPISIM, "trace-recover", raw2, out2])
    check("2 of 4 ranks left no records" in p.stderr and ": 2, 3" in p.stderr, "missing ranks listed: " + p.stderr)
    p = run([MPISIM, "replay", out2, "--report", rep], ok=False)
    r2 = json.load(open(rep))
    check(p.returncode == 4 and "partial trace" in p.stderr and r2["ranks"][2]["status"] == "died"
          and r2["ranks"][0]["calls"] > 0, "partial replay: %d %s" % (p.returncode, p.stderr))
    # exit codes (README.md): a partial trace is not ok (4); an unwritable report is 5
    if any(x["status"] == "died" for x in r["ranks"]):
        check(p.returncode == 4 and r["summary"]["outcome"] == "error" and "partial trace" in p.stderr,
              "a partial trace replays with exit 4: %d %s" % (p.returncode, p.stderr))
    p = run([MPISIM, "replay", h5, "--report", os.path.join(WORK, "no", "such", "dir.json")], ok=False)
    check(p.returncode == 5 and "cannot write the report" in p.stderr, "unwritable report: %d %s" % (p.returncode, p.stderr))
    if os.path.exists("/dev/full"):
        p = run([MPISIM, "replay", h5, "--report", "/dev/full"], ok=False)
        check(p.returncode == 5, "report on a full disk: %d %s" % (p.returncode, p.stderr))


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_sweep_csv():
    h5 = synth("stencil", 16, 10, 2048, 100000, os.path.join(WORK, "st.h5"))
    out = os.path.join(WORK, "sw.csv")
    run([MPISIM, "sweep", h5, "--vary", "network.link_rate=640Mb/s,1.28Gb/s,2.56Gb/s",
         "--vary", "mpi.send_overhead=0.2us,2us", "--jobs", "2", "--out", out])
    rows = read_csv(out)
    check(len(rows) == 6, "6 points, got %d" % len(rows))
    check([r["point"] for r in rows] == [str(i) for i in range(6)], "rows in point order")
    for r in rows:
        check(r["outcome"] == "ok", "outcome " + r["outcome"])
        check(int(r["msgs_sent"]) == 16 * (10 * 4 + 4), "messages")
    t = {(r["network.link_rate"], r["mpi.send_overhead"]): int(r["virtual_time_ps"]) for r in rows}
    check(t[("640Mb/s", "0.2us")] > t[("1.28Gb/s", "0.2us")] > t[("2.56Gb/s", "0.2us")], "faster links, less time")
    check(t[("1.28Gb/s", "2us")] > t[("1.28Gb/s", "0.2us")], "more overhead, more time")
    # the same points one by one give the same numbers
    rep = os.path.join(WORK, "one.json")
    run([MPISIM, "replay", h5, "--set", "network.link_rate=2.56Gb/s", "--set", "mpi.send_overhead=2us",
         "--report", rep])
    check(json.load(open(rep))["summary"]["virtual_time_ps"] == t[("2.56Gb/s", "2us")], "sweep == replay")
    # cpu_scale as a varied key; bad values fail before anything runs
    run([MPISIM, "sweep", h5, "--vary", "cpu_scale=0,1,4", "--out", out])
    rows = read_csv(out)
    check(int(rows[0]["virtual_time_ps"]) < int(rows[1]["virtual_time_ps"]) < int(rows[2]["virtual_time_ps"]),
          "cpu_scale")
    p = run([MPISIM, "sweep", h5, "--vary", "network.link_rate=1Gb/s,fast"], ok=False)
    check(p.returncode == 2 and "point 1" in p.stderr, "bad value named: " + p.stderr)


def test_sweep_mpirun():
    h5 = synth("stencil", 9, 5, 512, 100000, os.path.join(WORK, "st9.h5"))
    out = os.path.join(WORK, "mp.csv")
    single = os.path.join(WORK, "single.csv")
    vary = ["--vary", "network.link_rate=640Mb/s,1.28Gb/s,2.56Gb/s,5.12Gb/s", "--vary", "network.engine=analytic,myrinet"]
    run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2", MPISIM, "sweep", h5] + vary +
        ["--jobs", "1", "--out", out])
    run([MPISIM, "sweep", h5] + vary + ["--out", single])
    a, b = read_csv(out), read_csv(single)
    check(len(a) == 8, "8 merged rows, got %d" % len(a))
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]
    check(strip(a) == strip(b), "mpirun sweep == local sweep")
    check(not [f for f in os.listdir(WORK) if ".part" in f], "parts removed")


def cosim_pair(n, prog, args, name, opts=()):
    h5 = os.path.join(WORK, name + ".h5")
    online = os.path.join(WORK, name + "-online.json")
    run([MPISIM, "run", *opts, "--trace", h5, "--report", online, "-n", str(n), "--", prog] + args)
    check(not os.path.exists(h5 + ".raw"), "%s: the raw directory is removed once the trace is written" % name)
    off = os.path.join(WORK, name + "-replay.json")
    run([MPISIM, "replay", h5, "--report", off])
    a, b = json.load(open(online)), json.load(open(off))
    for x, y in zip(a["ranks"], b["ranks"]):
        for k in ("virtual_end_ps", "compute_ps", "mpi_ps", "msgs_sent", "bytes_sent", "msgs_recv", "bytes_recv",
                  "calls"):
            check(x[k] == y[k], "%s rank %d %s: online %s, replay %s" % (name, x["rank"], k, x[k], y[k]))
    check(b["replay"]["resumes_checked"] > 0 and b["replay"]["resumes_differ"] == 0,
          "%s: recorded resumes %s" % (name, b["replay"]))
    return h5


def test_online_equals_offline():
    if os.environ.get("MPISIM_SANITIZED"):
        print("skipped: a sanitized libmpisim.so cannot be preloaded into uninstrumented MPI programs")
        sys.exit(77)
    pp = cosim_pair(2, os.path.join(BIN, "pingpong"), ["--iters", "3", "--sizes", "8,4096,65536"], "pingpong")
    # what the replay says of the recorded resume times: a check with the capture's configuration,
    # an expected difference under another one (it read like an error)
    p = run([MPISIM, "replay", pp, "--report", os.devnull])
    check(re.search(r"0 of \d+ recorded resume times differ \(replay reproduces the co-simulation\)", p.stderr),
          "the capture's configuration: the replay says it reproduces the co-simulation: " + p.stderr.strip()[-200:])
    p = run([MPISIM, "replay", pp, "--report", os.devnull, "--set", "network.link_rate=2.56Gb/s"])
    check(re.search(r"\d+ of \d+ resume times moved from the co-simulation's, as expected: the configuration is "
                    r"not the capture's \(network.link_rate\)", p.stderr) and "differ" not in p.stderr,
          "another configuration: the moved resume times are expected, named by key: " + p.stderr.strip()[-300:])
    cosim_pair(4, os.path.join(BIN, "matmul"), ["32"], "matmul")
    cosim_pair(4, os.path.join(BIN, "fan"), ["--reps", "2", "--size", "30000"], "fan")
    cosim_pair(4, os.path.join(BIN, "collectives"), ["--sizes", "64,20000", "--iters", "2", "--ops",
                                                     "bcast,allreduce,reduce,alltoall,gather,scatter"], "collectives")
    # a host-driven rendezvous (seed003-ecard: host.rndv_progress = in_call): turns held while a rank
    # computes are released in its posting order, whatever the interleaving of the ranks' calls
    cosim_pair(2, os.path.join(BIN, "overlap"), ["--sizes", "16384", "--iters", "2", "--steps", "3"], "overlap",
               ("--profile", "seed003-ecard", "--compute", "none", "--set", "shim.wtime_stall=1000000"))
    def build(prog, compiler="mpicc"):
        src = os.path.join(SRC, "tests/shim/progs", prog)
        exe = os.path.join(WORK, os.path.splitext(prog)[0])
        run([compiler, "-O1", "-o", exe, src] + (["-std=c11"] if compiler == "mpicc" else []))
        return exe

    def capture_replays(n, exe, what):
        name = what.replace(" ", "_")
        cap, rep = os.path.join(WORK, name + "-capture.h5"), os.path.join(WORK, name + "-replay.json")
        run([MPISIM, "trace", "-o", cap, "-n", str(n), "--", exe])
        run([MPISIM, "replay", cap, "--report", rep])
        check(json.load(open(rep))["summary"]["outcome"] == "ok", "a capture-only trace with %s replays" % what)

    # wildcards: the co-simulation's decisions are recorded; capture-only records the real order
    exe = build("wildcard.c")
    cosim_pair(3, exe, [], "wildcard")
    # MPI_Cancel, neighbourhood collectives, MPI_Comm_create_group: the model's decisions replay
    # identically; capture-only traces replay
    exe_c = build("cancel.c")
    cosim_pair(3, exe_c, [], "cancel")
    cosim_pair(4, build("neighbor.c"), [], "neighbor")
    cosim_pair(4, build("create_group.c"), [], "create_group")
    capture_replays(3, exe_c, "cancels")
    # polling loops: in a capture-only trace a request may be tested again after the replay's
    # model already reported it complete (the real run finished it later)
    capture_replays(3, build("fcoverage_f08.f90", "mpifort"), "test loops")
    # blocking waits of a capture wait in the real MPI's Waitany/Waitsome/Waitall: the statuses the
    # program checks (exit 1 on a mismatch) and a trace that replays
    capture_replays(5, build("waitmodes.c"), "waitany and waitsome")
    cap = os.path.join(WORK, "wc-capture.h5")
    run([MPISIM, "trace", "-o", cap, "-n", "3", "--", exe])
    rec, virt = os.path.join(WORK, "rec.json"), os.path.join(WORK, "virt.json")
    run([MPISIM, "replay", cap, "--wildcards", "recorded", "--report", rec])
    run([MPISIM, "replay", cap, "--wildcards", "virtual", "--report", virt])
    r, v = json.load(open(rec)), json.load(open(virt))
    check(r["summary"]["outcome"] == "ok" and v["summary"]["outcome"] == "ok", "capture-only traces replay")


def test_corrupt_traces():
    """60 seeded whole-file byte mutations of a real trace (a co-simulation of apps/matmul on 8
    ranks, committed under results/): each replay ends within 20 s in a result or a clear error
    naming the file, never a signal or a hang (HDF5 itself is read in a child process)."""
    import random
    import time
    src = os.path.join(SRC, "results", "casestudy_matmul64.h5")
    data = open(src, "rb").read()
    rng = random.Random(14)
    outcomes = {}
    for i in range(60):
        w = bytearray(data)
        for _ in range(rng.randint(1, 16)):   # anywhere: superblock, object headers, heaps, chunks
            w[rng.randrange(len(w))] = rng.randrange(256)
        bad = os.path.join(WORK, "m%02d.h5" % i)
        with open(bad, "wb") as f:
            f.write(w)
        # the reader's own limit (10 s of time in which it did not wait for a CPU since its last
        # bytes) ends a looping HDF5; a mutation that outlasts it by far is a defect
        t0 = time.time()
        p = progress_run.run([MPISIM, "replay", bad, "--report", os.path.join(WORK, "m.json")], text=False,
                             idle_limit=60, wall_limit=120)
        err = p.stderr.decode("utf-8")   # the messages stay text whatever the file holds
        check(p.returncode >= 0, "mutation %d: killed by signal %d\n%s" % (i, -p.returncode, err))
        check(p.returncode in (0, 1, 2, 3, 4), "mutation %d: exit %d\n%s" % (i, p.returncode, err))
        if p.returncode == 2:
            check(("m%02d.h5" % i) in err, "mutation %d: the error names the file: %s" % (i, err))
        outcomes[p.returncode] = outcomes.get(p.returncode, 0) + 1
        check(time.time() - t0 < 120, "mutation %d took %.1f s" % (i, time.time() - t0))
    print("exit codes of 60 mutations:", outcomes)
    check(outcomes.get(2, 0) > 0, "some mutations are errors")
    # a file on which HDF5 itself loops (found by fuzz_trace_h5): stopped by the reader's limit
    t0 = time.time()
    p = progress_run.run([MPISIM, "replay", os.path.join(SRC, "tests/replay/data/hdf5_loops.h5"), "--report",
                          os.path.join(WORK, "m.json")], text=False, idle_limit=60, wall_limit=120)
    check(p.returncode == 2 and b"did not finish reading it within" in p.stderr,
          "HDF5's loop is stopped: %d %s (%.1f s)" % (p.returncode, p.stderr, time.time() - t0))


def test_unreadable_records():
    """A trace whose records cannot be read from some point on (one stretch of rank 1's compact
    records in the middle of the file overwritten): `mpisim replay` reads records as it plays them,
    so it replays everything before the damage, then stops with exit 2 and an error naming the file,
    the rank and the records, and writes the report of what it replayed."""
    import h5py
    h5 = synth("pingpong", 2, 3000, 64, 1000, os.path.join(WORK, "cut.h5"))
    with h5py.File(h5, "r") as f:
        heads, off = f["rank_heads"][:], f["stretches"][:]
        stretch, at = int(f.attrs["stretch_records"]), f["records"].id.get_offset()
        j = int(heads["first_stretch"][1]) + 10
        first, nev = 10 * stretch, int(heads["nev"][1])
        a, b = int(off[j]), int(off[j + 1])
    with open(h5, "r+b") as f:
        f.seek(at + a)
        f.write(b"\x5a" * (b - a))
    rep = os.path.join(WORK, "cut.json")
    p = run([MPISIM, "replay", h5, "--set", "network.engine=analytic", "--report", rep], ok=False)
    check(p.returncode == 2, "exit %d\n%s" % (p.returncode, p.stderr))
    check(h5 in p.stderr and "of rank 1" in p.stderr and "records [%d," % first in p.stderr,
          "the error names the file, the rank and the records: %s" % p.stderr)
    r = json.load(open(rep))
    check(r["summary"]["outcome"] == "error", "outcome %s" % r["summary"]["outcome"])
    recv = r["ranks"][1]["msgs_recv"]
    check(first * 3000 // nev - 3 < recv < 3000, "rank 1 received %d of 3000 messages, its records end "
          "being readable at %d of %d" % (recv, first, nev))
    print("replayed %d of 3000 rounds before the damaged records; %s" % (recv, p.stderr.strip().splitlines()[-2]))


def test_trace_dir_symlinks():
    """Links another user planted in a pre-existing trace directory are never written through:
    mpisim refuses the directory (or, with --replace-trace, removes the links without following
    them), and the shim never opens an existing rank file nor follows a link."""
    if os.environ.get("MPISIM_SANITIZED"):
        print("skipped: a sanitized libmpisim.so cannot be preloaded into uninstrumented MPI programs")
        sys.exit(77)
    prog = os.path.join(BIN, "pingpong")
    victims = {}
    for name in ("meta.json", "rank-000000.mstrace", "rank-000001.mstrace", "rank-000000.binding",
                 "meta.json.tmp"):
        v = os.path.join(WORK, "victim-" + name)
        with open(v, "w") as f:
            f.write("precious " + name)
        victims[name] = v

    def plant(raw):
        os.makedirs(raw)
        for name, v in victims.items():
            os.symlink(v, os.path.join(raw, name))

    def untouched():
        for name, v in victims.items():
            check(open(v).read() == "precious " + name, "%s was written through a link" % v)

    h5 = os.path.join(WORK, "sym.h5")
    plant(h5 + ".raw")
    for cmd in (["trace", "-o", h5], ["run", "--trace", h5, "--report", os.path.join(WORK, "s.json")]):
        p = subprocess.Popen([MPISIM] + cmd + ["-n", "2", "--", prog, "--iters", "1", "--sizes", "8"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, err = p.communicate(timeout=280)
        check(p.returncode == 2 and "sym.h5.raw exists" in err and "--replace-trace" in err,
              "a pre-existing trace directory is refused: %d %s" % (p.returncode, err))
        # the model server was made before the refusal: its shared segment goes with it
        left = [f for f in os.listdir("/dev/shm") if f.startswith("mpisim-%d-" % p.pid)]
        check(not left, "the refused %s left its shared segment %s" % (cmd[0], left))
        untouched()
    # asked to: the links are removed, not followed, and the run writes a fresh trace
    run([MPISIM, "trace", "-o", h5, "--replace-trace", "-n", "2", "--", prog, "--iters", "1", "--sizes", "8"])
    untouched()
    check(os.path.exists(h5) and not os.path.exists(h5 + ".raw"), "trace written, raw directory removed")
    # something mpisim did not write stays, and is named
    plant(h5 + ".raw")
    os.mkdir(os.path.join(h5 + ".raw", "subdir"))
    p = run([MPISIM, "trace", "-o", h5, "--replace-trace", "-n", "2", "--", prog], ok=False)
    check(p.returncode == 2 and "subdir" in p.stderr, "a foreign entry is named: " + p.stderr)
    untouched()
    # the shim alone (as mpisim launches it, capture only) in a directory with planted links
    shutil.rmtree(h5 + ".raw")
    plant(h5 + ".raw")
    env = dict(os.environ, LD_PRELOAD=os.path.join(BUILD, "lib", "libmpisim.so"), MPISIM_TRACE_DIR=h5 + ".raw",
               MPISIM_COMPUTE="cpu")
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    p = run(["mpirun", *root, "--oversubscribe", "-n", "2", "-x", "LD_PRELOAD", "-x", "MPISIM_TRACE_DIR", "-x",
             "MPISIM_COMPUTE", prog, "--iters", "1", "--sizes", "8"], ok=False, env=env)
    check(p.returncode != 0 and "cannot create the trace" in p.stderr, "the shim refuses: " + p.stderr[-500:])
    untouched()
    print("planted links in a pre-existing trace directory were never written through")


def test_local_answers():
    """what the shim answers itself (eager standard sends' completion; Test and
    Iprobe polls inside the server's lookahead window) is what the model would have said: the same
    program with shim.local_answers on and off ends at the same virtual times, rank by rank, with
    fewer model round trips; and a replay of the trace asks the model every recorded question,
    the local answers included, and finds every answer the same."""
    if os.environ.get("MPISIM_SANITIZED"):
        print("skipped: a sanitized libmpisim.so cannot be preloaded into uninstrumented MPI programs")
        sys.exit(77)

    def build(prog):
        exe = os.path.join(WORK, os.path.splitext(prog)[0])
        run(["mpicc", "-O1", "-std=c11", "-o", exe, os.path.join(SRC, "tests/shim/progs", prog)])
        return exe

    cases = [(4, build("polling.c"), ["60"], "polling", ()),
             (3, build("wildcard_forms.c"), ["4097"], "wildcard_forms", ("mpi.poll_cost=20us",)),
             (2, os.path.join(BIN, "pingpong"), ["--iters", "3", "--sizes", "8,4096,65536"], "pingpong", ()),
             (4, os.path.join(BIN, "fan"), ["--reps", "2", "--size", "3000"], "fan", ())]
    for n, exe, args, name, sets in cases:
        rep = {}
        for mode in ("on", "off"):
            h5 = os.path.join(WORK, "%s-%s.h5" % (name, mode))
            rep[mode] = os.path.join(WORK, "%s-%s.json" % (name, mode))
            cmd = [MPISIM, "run", "--compute", "none", "--trace", h5, "--report", rep[mode],
                   "--set", "shim.local_answers=" + mode]
            for s in sets:
                cmd += ["--set", s]
            run(cmd + ["-n", str(n), "--", exe] + args)
        a, b = json.load(open(rep["on"])), json.load(open(rep["off"]))
        for x, y in zip(a["ranks"], b["ranks"]):
            for k in ("virtual_end_ps", "mpi_ps", "msgs_sent", "bytes_sent", "msgs_recv", "bytes_recv", "calls"):
                check(x[k] == y[k], "%s rank %d %s: local answers %s, without %s" % (name, x["rank"], k, x[k], y[k]))
        la, lb = a["lookahead"]["model_round_trips"], b["lookahead"]["model_round_trips"]
        check(la < lb, "%s: %d model round trips with local answers, %d without" % (name, la, lb))
        off = os.path.join(WORK, name + "-replay.json")
        run([MPISIM, "replay", os.path.join(WORK, name + "-on.h5"), "--report", off])
        r = json.load(open(off))["replay"]
        check(r["resumes_checked"] > la and r["resumes_differ"] == 0, "%s: replay %s" % (name, r))
        print("%s: same virtual times, %d model round trips instead of %d (%d negative polls, %d with a "
              "window); replay checked %d answers" % (name, la, lb, a["lookahead"]["negative_polls"],
                                                      a["lookahead"]["windows"], r["resumes_checked"]))
    pa = json.load(open(os.path.join(WORK, "polling-on.json")))["lookahead"]
    check(pa["windows"] > 0, "polling: lookahead windows given: %s" % pa)


TESTS = {k[len("test_"):]: f for k, f in globals().items() if k.startswith("test_")}
try:
    TESTS[NAME]()
    print("ok", NAME)
finally:
    shutil.rmtree(WORK, ignore_errors=True)
