#!/usr/bin/python3
"""Measured vs re-run (under the calibrated profile) time per message size, one panel per test:
the plot of `mpisim calibrate` (it calls this with its CSV), or by hand:
    /usr/bin/python3 results/plot_calibration.py host.csv host.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_calibration.py CALIBRATION.csv OUT.png")
    rows = list(csv.DictReader(open(sys.argv[1])))
    tests = [t for t in ("pingpong", "stream", "bothway", "sendcall", "recvcall") if any(r["test"] == t for r in rows)]
    if not tests:
        sys.exit("plot_calibration.py: no point-to-point series in " + sys.argv[1])
    fig, axes = plt.subplots(len(tests), 1, figsize=(8, 3.2 * len(tests)), squeeze=False)
    for ax, t in zip(axes[:, 0], tests):
        modes = sorted({r["mode"] for r in rows if r["test"] == t})
        for i, m in enumerate(modes):
            pts = sorted((float(r["bytes"]), float(r["measured_s"]), r["rerun_s"])
                         for r in rows if r["test"] == t and r["mode"] == m and float(r["bytes"]) > 0)
            if not pts:
                continue
            color = "C%d" % i
            ax.plot([p[0] for p in pts], [p[1] * 1e6 for p in pts], "o", color=color, ms=4, label=m + " measured")
            fit = [(p[0], float(p[2])) for p in pts if p[2]]
            if fit:
                ax.plot([p[0] for p in fit], [p[1] * 1e6 for p in fit], "-", color=color, lw=1, label=m + " re-run")
        bounds = sorted({float(r["bytes"]) for r in rows if r["test"] == "pingpong" and r["mode"] == "send"
                         and r["rendezvous"] == "1"})
        if bounds:
            ax.axvline(bounds[0], color="grey", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylabel(t + " (us)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    axes[-1, 0].set_xlabel("message size (bytes); dotted: the protocol switch")
    fig.suptitle("mpisim calibrate: measured vs re-run under the profile (virtual time)")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
