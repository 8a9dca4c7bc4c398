#!/usr/bin/python3
"""tests/results: the seed profiles declare each value's kind, and the calibration scripts agree
with the profiles. usage: test_profiles.py BUILD_DIR kinds|calibrate_seed000|calibrate_seed001|calibrate_seed003"""
import glob
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "results"))
import calibration as cal  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
WHAT = sys.argv[2]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def test_kinds():
    seeds = sorted(glob.glob(os.path.join(ROOT, "configs", "seed*.ini")))
    check(len(seeds) >= 9, f"{len(seeds)} seed profiles")
    ids = set()
    for path in seeds:
        name = os.path.basename(path)[:-4]
        cfg = cal.resolved(BUILD, name)
        entries = [e for e in cal.read_profile(name) if e.section != "profile"]
        for e in entries:
            where = f"{name}:{e.line} {e.name}"
            check(e.kind in cal.KINDS, f"{where} declares its kind ({e.comment[:40]!r})")
            if e.kind == "calibrated":
                check(bool(e.row_ids), f"{where}: a calibrated value names its scorecard row")
                check(bool(re.search(r"\b00[0-4]_[0-9a-f]{16}\.txt\b", e.comment)), f"{where}: names its seed file")
                ids.update(e.row_ids)
            if e.kind == "assumed":
                v = cfg[e.name]["value"]
                if numeric(v):
                    r = e.range
                    check(r is not None, f"{where}: an assumed number gives its range")
                    if r:
                        lo, hi = (cal.value_of(BUILD, name, e.name, x) for x in r)
                        check(lo <= v <= hi, f"{where}: {v} inside its range {r[0]}..{r[1]} ({lo}..{hi})")
                else:
                    check("alternatives" in e.comment, f"{where}: an assumed text value names alternatives")
            # the report carries the comment and the kind the profile gives
            check(cfg[e.name].get("kind") == e.kind and e.comment[:30] in cfg[e.name]["source"],
                  f"{where}: the resolved configuration carries its kind and source")
    check(len(ids) >= 15, f"{len(ids)} scorecard rows named by calibrated values")
    # mpisim config --describe shows a calibrated value's source
    p = subprocess.run([os.path.join(BUILD, "bin", "mpisim"), "config", "--profile", "seed003-ecard", "--describe",
                        "host.dma_setup"], capture_output=True, text=True)
    check(p.returncode == 0 and "kind calibrated, source: calibrated: 003_99118bf692f3fa3b.txt sec 4" in p.stdout,
          "config --describe shows the kind and source: " + p.stdout.strip().splitlines()[-1][:120])
    j = json.loads(subprocess.run([os.path.join(BUILD, "bin", "mpisim"), "config", "--profile", "seed004-myrinet",
                                   "--json"], capture_output=True, text=True).stdout)
    check(j["network.host_link_rate"]["value"] == 0 and j["network.link_rate"]["value"] == 1.28e9,
          "seed004-myrinet: the NICs' links are the 160 MB/s links (sec 2.2), not a fitted rate")


def test_script(script):
    p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "results", script + ".py"), "--build", BUILD],
                       capture_output=True, text=True, timeout=500)
    print(p.stdout[-3000:], p.stderr[-2000:])
    check(p.returncode == 0 and "agree" in p.stdout, f"{script}.py: the profile agrees with the derivation")


def test_scorecard():
    """A row's kind comes from the profiles' calibrated values, never from the script."""
    import tempfile
    import scorecard
    sc = scorecard.Scorecard("003", ["seed003-ecard"], calibrated={"003-own": "a script's own fit"})
    sc.num("003-logp-g", "sec 5.3", "LogP g", 2.3, 2.3, "us", 0.15)             # named by host.nic_send_cost
    sc.num("003-std-1b", "sec 5.1", "standard", 6.1, 5.0, "us", 0.15)           # named by none: a prediction
    sc.check("003-own", "sec x", "own", "a", "b", True, "rule")
    kinds = {r["id"]: (r["kind"], r["status"], r["cause"]) for r in sc.rows}
    check(kinds["003-logp-g"][0] == "calibration", "a row a calibrated value names is calibration")
    check(kinds["003-std-1b"][:2] == ("prediction", "miss") and kinds["003-std-1b"][2] == "unknown",
          "any other row is a prediction; a miss without a cause says unknown")
    check(kinds["003-own"][0] == "calibration", "a script's own calibration")
    try:
        sc.num("003-std-1b", "sec 5.1", "again", 1, 1, "", 0.1)
        check(False, "a row twice is refused")
    except ValueError:
        check(True, "a row twice is refused")
    with tempfile.TemporaryDirectory() as d:
        sc.write(d)
        j = json.load(open(os.path.join(d, "scorecard.json")))
        missing = set(j["calibrations_without_row"])
        check("003-gm-bothway" in missing and "003-logp-g" not in missing,
              "calibrations the script did not score are listed (validation.py refuses them)")


if WHAT == "kinds":
    test_kinds()
elif WHAT == "scorecard":
    test_scorecard()
else:
    test_script(WHAT)
if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all ok")
