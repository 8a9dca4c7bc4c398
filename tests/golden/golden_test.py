#!/usr/bin/python3
"""Golden tests: outputs that must not change unless a change means them to.

  golden_test.py BUILD_DIR SOURCE_DIR replay|config

replay: `mpisim replay` of the trace shipped in data/ (4 ranks of apps/collectives, captured by
`mpisim run --trace`), its report compared with replay_collectives_np4.json; config: `mpisim
config --json` of the default profile compared with config_default.json. What depends on the
host or the moment (wall_s, the trace's path as given on the command line) is left out of both
sides. A difference is printed key by key (path: expected -> got).

To accept an intended change, regenerate (then review the diff of the .json files):
  MPISIM_GOLDEN_UPDATE=1 ctest -R golden       (in the build directory)
"""
import json
import os
import subprocess
import sys
import tempfile

BUILD, SRC, NAME = sys.argv[1], sys.argv[2], sys.argv[3]
HERE = os.path.join(SRC, "tests", "golden")
MPISIM = os.path.join(BUILD, "bin", "mpisim")
UPDATE = os.environ.get("MPISIM_GOLDEN_UPDATE") == "1"
HOST_DEPENDENT = {("summary", "wall_s"), ("replay", "trace")}


def strip(doc):
    """The document without its host- and moment-dependent fields."""
    for path in HOST_DEPENDENT:
        node = doc
        for k in path[:-1]:
            node = node.get(k, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return doc


def flatten(x, prefix, out):
    if isinstance(x, dict):
        for k, v in x.items():
            flatten(v, f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(x, list):
        out[prefix + ".length"] = len(x)
        for i, v in enumerate(x):
            flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = x
    return out


def compare(got, golden_file):
    path = os.path.join(HERE, golden_file)
    if UPDATE:
        with open(path, "w") as fh:
            json.dump(got, fh, indent=1, sort_keys=False)
            fh.write("\n")
        print(f"UPDATED {golden_file}")
        return
    with open(path) as fh:
        want = json.load(fh)
    w, g = flatten(want, "", {}), flatten(got, "", {})
    diff = [f"  {k}: {w[k]!r} -> {g[k]!r}" for k in w if k in g and w[k] != g[k]]
    diff += [f"  {k}: missing (was {w[k]!r})" for k in w if k not in g]
    diff += [f"  {k}: new ({g[k]!r})" for k in g if k not in w]
    if diff:
        shown = diff[:60]
        more = f"\n  ... and {len(diff) - len(shown)} more" if len(diff) > len(shown) else ""
        sys.exit(f"FAILED: {NAME} differs from {golden_file} in {len(diff)} key(s):\n" + "\n".join(shown) + more +
                 "\nIf the change is intended: MPISIM_GOLDEN_UPDATE=1 ctest -R golden (see tests/golden/README.md)")


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)} exited {p.returncode}\n{p.stderr}")
    return p.stdout


# the profiles of the source tree, whatever MPISIM_PROFILE_PATH the caller has
os.environ.pop("MPISIM_PROFILE_PATH", None)
def test_replay():
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        run([MPISIM, "replay", os.path.join(HERE, "data", "collectives_np4.h5"), "--report", report, "--quiet"])
        with open(report) as fh:
            compare(strip(json.load(fh)), "replay_collectives_np4.json")


def test_config():
    compare(strip(json.loads(run([MPISIM, "config", "--json"]))), "config_default.json")


TESTS = {n[len("test_"):]: f for n, f in globals().items() if n.startswith("test_")}
if NAME not in TESTS:
    sys.exit(f"unknown golden test {NAME}")
TESTS[NAME]()
print("PASSED", NAME)
