#!/usr/bin/python3
"""Every study in results/ must repeat (docs: the developers' guide, "Numbers we can stand behind"):
a results/ script run twice, the second time with a CPU-bound process beside it on every core,
writes the same outputs. The scoring scripts are model-only (--compute none, replays, the network
tool), so their tables must be identical to the byte; what may differ is only what describes the
run itself (wall time, load average, the output folder), which is masked.

usage: test_repeat.py BUILD SCRIPT [ARGS...]     (SCRIPT: a file name under results/)
Exit 0: identical; 1: a difference (printed, first lines of each differing file)."""
import difflib
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "..", "results")
PY = "/usr/bin/python3"
TEXT = (".md", ".csv", ".json", ".txt", ".tsv")
# what describes the run, not the model: wall time, load, folders, the report file's timing
MASKS = [
    (re.compile(r"load average [0-9.]+( at the start and [0-9.]+ at the end)?"), "load average L"),
    (re.compile(r"\b[0-9.]+ (s|min) wall\b"), "T wall"),
    (re.compile(r"\b[0-9]+(\.[0-9]+)? s\)"), "T s)"),
    (re.compile(r"\"(wall_s|load(_start|_end)?|elapsed_s|wall)\": [0-9.eE+-]+"), r'"\1": X'),
]


def masked(path, out):
    with open(path, errors="replace") as f:
        s = f.read().replace(out, "OUT")
    for rx, rep in MASKS:
        s = rx.sub(rep, s)
    return s.splitlines()


def outputs(out):
    files = {}
    for root, _, names in os.walk(out):
        for n in names:
            if n.endswith(TEXT) and n != "last-report.json":
                p = os.path.join(root, n)
                files[os.path.relpath(p, out)] = masked(p, out)
    return files


def run(build, script, args, out, hogs):
    procs = [subprocess.Popen([PY, "-c", "while 1: pass"]) for _ in range(hogs)]
    try:
        p = subprocess.run([PY, os.path.join(RESULTS, script), "--build", build, "--out", out] + args,
                           capture_output=True, text=True)
    finally:
        for h in procs:
            h.kill()
            h.wait()
    got = outputs(out)
    # 1: a scoring script with misses, which still writes its scorecard (sys.exit(text) is 1 too)
    if p.returncode not in (0, 1) or (p.returncode == 1 and not any(n.startswith("scorecard") for n in got)):
        sys.exit(f"test_repeat: {script} exited {p.returncode}{' beside CPU-bound processes' if hogs else ''}\n"
                 f"{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return got


def main():
    build, script, args = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3:]
    base = os.path.join(build, "results", "repeat", os.path.splitext(script)[0])
    hogs = len(os.sched_getaffinity(0))
    a = run(build, script, args, os.path.join(base, "quiet"), 0)
    b = run(build, script, args, os.path.join(base, "loaded"), hogs)
    bad = 0
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            bad += 1
            print(f"DIFFERS: {name}")
            d = difflib.unified_diff(a.get(name, []), b.get(name, []), "without", f"beside {hogs} CPU-bound", lineterm="", n=0)
            for line in list(d)[:20]:
                print("   ", line)
    if not a:
        sys.exit(f"test_repeat: {script} wrote no text outputs to {base}")
    if bad:
        sys.exit(f"FAILED: {script}: {bad} of {len(a)} outputs differ with {hogs} CPU-bound processes beside it")
    print(f"{script} {' '.join(args)}: {len(a)} outputs identical without and beside {hogs} CPU-bound processes")


if __name__ == "__main__":
    main()
