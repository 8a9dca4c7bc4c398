#!/usr/bin/python3
"""Regenerate the main study from the tools alone: matrix multiply speedup and efficiency
(seed 000 section 3.2) on the default Myrinet profile. Writes results/speedup/speedup.csv,
speedup.png, config.json and one report per point.

Usage: speedup.py [BUILD_DIR] [extra `mpisim study speedup` options...]
"""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build")
extra = sys.argv[2:]
sys.exit(subprocess.call([os.path.join(build, "bin", "mpisim"), "study", "speedup",
                          "--out", os.path.join(here, "speedup"), *extra]))
