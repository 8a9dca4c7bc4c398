"""Shared by the calibration scripts (results/calibrate_*.py), the scorecard (results/validation.py)
and tests/results: read a profile's values with their declared kinds (configs/README.md), convert
values through mpisim itself (so that units read exactly as the simulator reads them), write or
check calibrated values, and run mpisim.

A profile line is `key = value ; comment`, the comment continued on indented comment-only lines;
the comment starts with `cited:`, `calibrated:` or `assumed:`. A calibrated comment names the
scorecard row of its figure in brackets ([003-logp-g]); an assumed one gives `range LO..HI`.
"""
import json
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIGS = os.path.join(ROOT, "configs")
KINDS = ("cited", "calibrated", "assumed")


class Entry:
    def __init__(self, section, key, value, comment, line):
        self.section, self.key, self.value, self.comment, self.line = section, key, value, comment, line

    @property
    def name(self):
        return f"{self.section}.{self.key}"

    @property
    def kind(self):
        m = re.match(r"(cited|calibrated|assumed):", self.comment)
        return m.group(1) if m else ""

    @property
    def row_ids(self):
        """The scorecard rows a calibrated value was fitted on ([id] in its comment)."""
        return re.findall(r"\[([0-9]{3}-[a-z0-9-]+)\]", self.comment)

    @property
    def range(self):
        """(LO, HI) texts of an assumed value's `range LO..HI` (a unit given once, after HI, is
        LO's too), or None."""
        m = re.search(r"range\s+([^;]+?)\s*(?:;|$)", self.comment)
        if not m or ".." not in m.group(1):
            return None
        lo, hi = (x.strip() for x in m.group(1).split("..", 1))
        hi = re.match(r"[-+0-9.eE]+(?:\s*[A-Za-z/%]+)?", hi)
        if not hi:
            return None
        hi = hi.group(0)
        unit = re.sub(r"^[-+0-9.eE]+\s*", "", hi)
        if unit and re.fullmatch(r"[-+0-9.eE]+", lo):
            lo = f"{lo} {unit}"
        return lo, hi


def profile_path(name):
    return name if os.path.sep in name or name.endswith(".ini") else os.path.join(CONFIGS, name + ".ini")


def read_profile(name):
    """The profile's own key lines (not its includes), in order."""
    path = profile_path(name)
    out, section, last = [], "", None
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            s = line.strip()
            if not s:
                last = None
                continue
            if s[0] in ";#":
                if last is not None and line[0] in " \t":   # a continuation of the value's comment
                    last.comment = (last.comment + " " + s[1:].strip()).strip()
                else:
                    last = None
                continue
            m = re.match(r"\[([^\]]+)\]", s)
            if m:
                section, last = m.group(1).strip(), None
                continue
            m = re.match(r"([A-Za-z0-9_.]+)\s*=\s*(.*)$", s)
            if not m:
                last = None
                continue
            key, rest = m.group(1), m.group(2)
            c = re.search(r"(^|\s)[;#]", rest)
            value = (rest[:c.start()] if c else rest).strip()
            comment = rest[c.end():].strip() if c else ""
            last = Entry(section, key, value, comment, n)
            out.append(last)
    return out


def mpisim(build):
    p = os.path.join(os.path.abspath(build), "bin", "mpisim")
    if not os.path.exists(p):
        raise SystemExit(f"no {p} (build first, or --build DIR)")
    return p


def resolved(build, profile, sets=()):
    """The resolved configuration of a profile with --set overrides, as mpisim reads it:
    {key: {"value", "unit", "source", ["kind"]}}."""
    cmd = [mpisim(build), "config", "--profile", profile, "--json"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def value_of(build, profile, key, text):
    """`text` (a value with its unit) in the key's own unit, as mpisim converts it."""
    return resolved(build, profile, [f"{key}={text}"])[key]["value"]


def set_values(name, values):
    """Rewrite the values of `values` ({'section.key': 'text'}) in the profile, keeping comments and
    alignment. Returns the keys changed."""
    path = profile_path(name)
    lines = open(path).read().split("\n")
    entries = {e.name: e for e in read_profile(name)}
    changed = []
    for k, text in values.items():
        e = entries[k]
        old = lines[e.line - 1]
        m = re.match(r"(\s*[A-Za-z0-9_.]+\s*=\s*)(.*?)(\s*[;#].*)?$", old)
        head, val, tail = m.group(1), m.group(2), m.group(3) or ""
        if val.strip() == text:
            continue
        # keep the comment's column where the new value fits
        width = len(head) + len(val) + (len(tail) - len(tail.lstrip()))
        new = head + text
        tail_s = tail.lstrip()
        new = (new + " " * max(1, width - len(new)) + tail_s) if tail_s else new
        lines[e.line - 1] = new
        changed.append(k)
    if changed:
        with open(path, "w") as f:
            f.write("\n".join(lines))
    return changed


def fmt_time(ps):
    """ps as a profile value with 3 significant digits in ns or us."""
    if ps >= 1e6:
        return f"{float(f'{ps / 1e6:.3g}'):g} us"
    return f"{float(f'{ps / 1e3:.3g}'):g} ns"


def fmt_rate(bps):
    """bit/s as a profile value with 3 significant digits in MB/s or GB/s."""
    Bps = bps / 8
    if Bps >= 1e9:
        return f"{float(f'{Bps / 1e9:.3g}'):g} GB/s"
    return f"{float(f'{Bps / 1e6:.3g}'):g} MB/s"


def run_app(build, profile, nranks, prog, args, sets=(), compute="none", report=None):
    """An app under `mpisim run`; its CSV rows (lines not starting with '#') as dicts."""
    import csv
    import io
    import tempfile
    rep = report or os.path.join(tempfile.gettempdir(), f"mpisim-cal-{os.getpid()}.json")
    cmd = [mpisim(build), "run", "--profile", profile, "--compute", compute, "--report", rep]
    for s in sets:
        cmd += ["--set", s]
    cmd += ["-n", str(nranks), "--", os.path.join(os.path.abspath(build), "bin", prog), *args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if not report:
        try:
            os.remove(rep)
        except OSError:
            pass
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}\n{p.stderr[-3000:]}")
    return list(csv.DictReader(io.StringIO("\n".join(l for l in p.stdout.splitlines() if not l.startswith("#")))))


def check_or_write(build, profile, derived, write, tol=0.006):
    """Compare the profile's values with the derived ones ({key: text}); with write, put the ones
    that differ into the profile. Returns a list of (key, profile value, derived value) that differ
    beyond tol (relative), empty after a write."""
    cfg = resolved(build, profile)
    bad = []
    for k, text in derived.items():
        want = value_of(build, profile, k, text)
        have = cfg[k]["value"]
        if isinstance(want, str) or isinstance(have, str):
            ok = want == have
        else:
            ok = abs(have - want) <= tol * max(abs(want), 1e-30)
        if not ok:
            bad.append((k, have, want))
    if write and bad:
        for k in set_values(profile, {k: derived[k] for k, _, _ in bad}):
            print(f"  wrote {k} = {derived[k]}")
        return []
    return bad
