"""Rows of the validation scorecard (results/VALIDATION.md), written by each results/ script into
its --out directory as scorecard.json and gathered by results/validation.py.

A row is one figure of a seed: the paper's value, mpisim's, the error, its kind and the rule that
scores it. Its kind is not the script's to choose: a row is `calibration` when a profile's
calibrated value names its id ([id] in the value's comment, configs/README.md) or when the script
declares a calibration of its own (a value that lives outside the profiles, e.g. seed 000's
compute rate: `Scorecard(..., calibrated={id: what})`); every other row is a `prediction`.
Misses stay misses: each carries its cause, or "unknown".
"""
import json
import os

import calibration


class Scorecard:
    def __init__(self, seed, profiles, calibrated=None):
        """seed: "000".."004"; profiles: the profiles whose calibrated values decide the kinds;
        calibrated: {row id: what was fitted on it} for calibrations outside the profiles."""
        self.seed = seed
        self.rows = []
        self.cal = {}   # row id -> what was fitted on it
        for p in profiles:
            for e in calibration.read_profile(p):
                if e.kind == "calibrated":
                    for rid in e.row_ids:
                        self.cal.setdefault(rid, []).append(f"{p}: {e.name}")
        for rid, what in (calibrated or {}).items():
            self.cal.setdefault(rid, []).append(what)

    def _add(self, rid, where, quantity, paper, ours, unit, error, rule, ok, cause, note, profile):
        if any(r["id"] == rid for r in self.rows):
            raise ValueError(f"scorecard row {rid} twice")
        kind = "calibration" if rid in self.cal else "prediction"
        self.rows.append({
            "id": rid, "seed": self.seed, "where": where, "quantity": quantity, "paper": paper, "mpisim": ours,
            "unit": unit, "error": error, "kind": kind, "fitted": self.cal.get(rid, []), "rule": rule,
            "status": "pass" if ok else "miss",
            "cause": (cause or "unknown") if not ok else (cause or ""), "note": note or "", "profile": profile,
        })
        return ok

    def num(self, rid, where, quantity, paper, ours, unit, tol, cause=None, note=None, profile=""):
        """A number against the paper's: relative error within tol (a fraction) passes."""
        err = (ours - paper) / abs(paper) if paper else None
        ok = err is not None and abs(err) <= tol + 1e-12
        return self._add(rid, where, quantity, paper, ours, unit, err, f"within {100 * tol:g} %", ok, cause, note,
                         profile)

    def diff(self, rid, where, quantity, paper, ours, unit, tol, cause=None, note=None, profile=""):
        """A number that is itself a difference or a percentage: within tol of it in its own unit."""
        ok = abs(ours - paper) <= tol + 1e-12
        return self._add(rid, where, quantity, paper, ours, unit, None, f"within {tol:g} {unit}", ok, cause, note,
                         profile)

    def check(self, rid, where, quantity, paper, ours, ok, rule, cause=None, note=None, profile=""):
        """A statement of the paper (a shape, an order, a range): ok is whether mpisim's result
        satisfies `rule`; paper and ours are texts."""
        return self._add(rid, where, quantity, paper, ours, "", None, rule, bool(ok), cause, note, profile)

    def write(self, out, name="scorecard.json"):
        """Into out/name; results/validation.py gathers every scorecard*.json of a script's --out."""
        missing = sorted(set(self.cal) - {r["id"] for r in self.rows})
        with open(os.path.join(out, name), "w") as f:
            json.dump({"seed": self.seed, "rows": self.rows, "calibrations_without_row": missing}, f, indent=1)

    def markdown(self):
        """The rows as a table (the scripts' own reports)."""
        out = ["| id | figure | quantity | paper | mpisim | error | kind | rule | status |",
               "|---|---|---|---|---|---|---|---|---|"]
        for r in self.rows:
            out.append("| " + " | ".join([r["id"], r["where"], r["quantity"], fmt(r["paper"], r["unit"]),
                                          fmt(r["mpisim"], r["unit"]), fmt_err(r), r["kind"], r["rule"],
                                          r["status"]]) + " |")
        return "\n".join(out) + "\n"


def fmt(v, unit=""):
    if isinstance(v, str):
        return v
    if v is None:
        return ""
    a = abs(v)
    s = f"{v:.4g}" if a >= 1e-3 or a == 0 else f"{v:.3g}"
    return f"{s} {unit}".strip()


def fmt_err(r):
    if r["error"] is None:
        if isinstance(r["paper"], (int, float)) and isinstance(r["mpisim"], (int, float)):
            return f"{r['mpisim'] - r['paper']:+.3g} {r['unit']}".strip()
        return ""
    return f"{100 * r['error']:+.1f} %"
