#!/usr/bin/python3
"""Run a command and pass only if it exits with exactly the given status and its standard error
matches a pattern: a usage error must fail as a usage error, not as a crash (WILL_FAIL would
pass on any non-zero status, a segfault included).

Usage: expect_exit.py STATUS REGEX -- COMMAND [ARG...]
"""
import re
import subprocess
import sys


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit(__doc__)
    want, pattern, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[4:]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    ok = True
    if p.returncode != want:
        print(f"FAILED: exit status {p.returncode}, expected {want}")
        ok = False
    if not re.search(pattern, p.stderr, re.M):
        print(f"FAILED: standard error does not match {pattern!r}")
        ok = False
    if not ok:
        print("stdout:\n" + p.stdout[-2000:] + "\nstderr:\n" + p.stderr[-3000:])
        sys.exit(1)
    print(f"ok: exit status {want}, standard error matches {pattern!r}")


if __name__ == "__main__":
    main()
