#!/usr/bin/python3
"""scripts/check_layers.py: the checkout's includes follow the layers (up to its list of known
edges), and the check fails on an include that runs back up (one injected into a copy).

Usage: test_layers.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1])
CHECK = os.path.join(SRC, "scripts", "check_layers.py")


def check(cond, what, out=""):
    if not cond:
        sys.exit("FAILED: " + what + ("\n" + out if out else ""))
    print("ok:", what)


p = subprocess.run(["/usr/bin/python3", CHECK, SRC], capture_output=True, text=True)
check(p.returncode == 0, "the checkout's includes follow the layers", p.stdout + p.stderr)

work = tempfile.mkdtemp(prefix="mpisim-layers-")
try:
    files = subprocess.run(["git", "-C", SRC, "ls-files", "*.c", "*.h"], capture_output=True, text=True,
                           check=True).stdout.split()
    for f in files:
        if os.path.exists(os.path.join(SRC, f)):
            os.makedirs(os.path.join(work, os.path.dirname(f)), exist_ok=True)
            shutil.copy(os.path.join(SRC, f), os.path.join(work, f))
    victim = os.path.join(work, "netmodel", "src", "network.c")
    with open(victim, "a") as fh:
        fh.write('\n#include "ms_model.h"\n')
    subprocess.run(["git", "init", "-q", work], check=True)
    subprocess.run(["git", "-C", work, "add", "-A"], check=True)
    p = subprocess.run(["/usr/bin/python3", CHECK, work], capture_output=True, text=True)
    check(p.returncode == 1 and "netmodel/src/network.c -> ms_model.h  (netmodel may not include model)" in p.stdout,
          "an include of the MPI model from netmodel is refused, named", p.stdout + p.stderr)
finally:
    shutil.rmtree(work, True)
print("PASSED layers")
