#!/usr/bin/python3
"""Plot the matrix-multiply study (speedup and parallel efficiency, seed 000 Fig. 7).

Usage: plot_speedup.py SPEEDUP.csv OUT.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
procs = sorted({int(r["P"]) for r in rows})
fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
for p in procs:
    pts = sorted((int(r["N"]), float(r["speedup"]), float(r["efficiency"])) for r in rows if int(r["P"]) == p)
    n = [x[0] for x in pts]
    a.plot(n, [x[1] for x in pts], marker="o", label=f"{p} nodes")
    b.plot(n, [100 * x[2] for x in pts], marker="o", label=f"{p} nodes")
a.set_xlabel("matrix size N (N x N integers)")
a.set_ylabel("speedup")
a.set_title("(a) speedup")
b.set_xlabel("matrix size N (N x N integers)")
b.set_ylabel("parallel efficiency (%)")
b.set_title("(b) parallel efficiency")
for ax in (a, b):
    ax.grid(alpha=0.3)
    ax.legend()
fig.suptitle("Matrix multiply under mpisim (cf. seed 000 Fig. 7)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
