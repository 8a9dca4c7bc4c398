#!/usr/bin/python3
"""End to end: `mpisim calibrate` measures this machine (calibench natively, a second pass, the
check under mpisim run) and writes a profile that `mpisim run` accepts; then a calibration from
the suites' files. Judged by what it did (its progress lines, the files, the table), never by the
wall clock: a busy machine gives fewer samples, not a failure."""
import os
import re
import subprocess
import sys
import tempfile

BUILD = sys.argv[1]
MPISIM = os.path.join(BUILD, "bin", "mpisim")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
failures = 0


def check(cond, what):
    global failures
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures += 1


work = tempfile.mkdtemp(prefix="mpisim-calibrate-test-")
ini = os.path.join(work, "host.ini")
# a short budget: the point is the whole path, on whatever machine this is
p = subprocess.run([MPISIM, "calibrate", "--out", ini, "--budget", "30", "--max", "256k"], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True, timeout=800)
err = p.stderr
print(err[-6000:])
check(p.returncode == 0, "mpisim calibrate exits 0")
check("measuring with calibench" in err and re.search(r"round 3 of 4 done", err) is not None,
      "progress: the measuring rounds are reported as they end")
check(re.search(r"\d+/\d+ pingpong send \d+ B: \d+ samples", err) is not None, "progress: a line per measurement")
check("Fit quality" in err and re.search(r"\d+ of \d+ size ranges within 5 % rms", err) is not None,
      "the fit-quality table is printed")
check(os.path.exists(ini) and os.path.exists(os.path.join(work, "host.csv")), "the profile and the CSV are written")
text = open(ini).read() if os.path.exists(ini) else ""
for key in ("shm_latency", "eager_threshold", "size_segments", "poll_cost", "reduce_cost_per_byte"):
    check(re.search(r"^%s\.source = calibrated: .* on \d{4}-\d\d-\d\d" % key, text, re.M) is not None,
          "%s has a 'calibrated: ... on DATE' source" % key)
check("; Fit quality" in text, "the fit quality is kept in the profile's header")
c = subprocess.run([MPISIM, "config", "--profile", ini], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(c.returncode == 0 and "calibrated: calibench" in c.stdout, "mpisim config reads it and shows the sources")
r = subprocess.run([MPISIM, "run", "--profile", ini, "--report", os.path.join(work, "r.json"), "-n", "2", "--",
                    os.path.join(BUILD, "bin", "pingpong"), "--only", "1,65536"],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
check(r.returncode == 0 and "check=ok" in r.stdout, "mpisim run accepts the profile")

# from the suites' files (made by the project: tests/calibrate/data), without measuring
ini2 = os.path.join(work, "files.ini")
p = subprocess.run([MPISIM, "calibrate", "--out", ini2, "--no-check", "--from", os.path.join(DATA, "osu_latency.txt"),
                    "--from", os.path.join(DATA, "osu_bw.txt"), "--from", os.path.join(DATA, "imb_pingpong_pingping.txt")],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
print(p.stderr[-3000:])
check(p.returncode == 0 and os.path.exists(ini2), "a profile from OSU and IMB files")
t2 = open(ini2).read() if os.path.exists(ini2) else ""
check("assumed: a third of the" in t2 and "no send/recv call durations" in p.stderr,
      "without call durations the split is said to be assumed")
c = subprocess.run([MPISIM, "config", "--profile", ini2], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(c.returncode == 0, "mpisim config reads the files' profile")
# bad input names the file and line; exit 2
bad = os.path.join(work, "bad.txt")
open(bad, "w").write("# OSU MPI Latency Test v5.8\n# Size          Latency (us)\n1 0.5\nfoo bar\n")
p = subprocess.run([MPISIM, "calibrate", "--out", os.path.join(work, "x.ini"), "--no-check", "--from", bad],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.returncode == 2 and "bad.txt:4:" in p.stderr, "a bad file: exit 2 and its line named")
print("%d failed" % failures)
sys.exit(1 if failures else 0)
