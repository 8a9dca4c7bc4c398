#!/usr/bin/python3
"""Regenerate the main study from the tools alone: matrix multiply speedup and efficiency
(seed 000 section 3.2) on the default Myrinet profile. Writes speedup.csv, speedup.png,
config.json, cpu_factor.txt and one report per point into OUT_DIR (default BUILD_DIR/speedup,
never the checkout: the committed results/speedup/ is updated only on purpose, by copying).

Usage: speedup.py [BUILD_DIR] [--out OUT_DIR] [extra `mpisim study speedup` options...]
"""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
build = args.pop(0) if args and not args[0].startswith("--") else os.path.join(here, "..", "build")
out = os.path.join(build, "speedup")
if "--out" in args:
    i = args.index("--out")
    out = args[i + 1]
    del args[i:i + 2]
sys.exit(subprocess.call([os.path.join(build, "bin", "mpisim"), "study", "speedup", "--out", out, *args]))
