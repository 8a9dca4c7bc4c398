#!/usr/bin/python3
"""scripts/setup.sh.

Usage: test_setup.py BUILD_DIR SOURCE_DIR TEST_NAME
  setup_lock        another package manager holds the lists lock: setup.sh says so and waits
                    (apt-get update retried; every apt-get call has DPkg::Lock::Timeout), then
                    installs; a lock held past MPISIM_APT_LOCK_WAIT ends it with apt's message; any
                    other apt failure ends it at once. apt-get, dpkg-query and cmake are stand-ins
                    on the PATH that record their calls: no package is installed, nothing is built.
  setup_no_rebuild  on a configured build directory setup.sh does not run CMake's configure again
                    (stand-in cmake records it), and a configure run again with nothing changed
                    leaves a build that compiles nothing (the real cmake, --build -- -n): the
                    generated MPI wrappers were regenerated and the shim rebuilt at every run.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

BUILD, SRC, NAME = sys.argv[1], sys.argv[2], sys.argv[3]
WORK = tempfile.mkdtemp(prefix="mpisim-setup-")
SETUP = os.path.join(SRC, "scripts", "setup.sh")


def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)
    print("ok:", what)


def tool(name, body):
    """A stand-in for a command on the PATH: it appends its arguments to calls.log, then runs body."""
    d = os.path.join(WORK, "bin")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write("#!/bin/bash\necho \"%s $*\" >> %s/calls.log\n%s\n" % (name, WORK, body))
    os.chmod(p, stat.S_IRWXU)


def calls():
    try:
        return open(os.path.join(WORK, "calls.log")).read().splitlines()
    except FileNotFoundError:
        return []


def setup(build, extra_env=None, timeout=200):
    env = dict(os.environ, PATH=os.path.join(WORK, "bin") + ":" + os.environ["PATH"], MPISIM_BUILD=build)
    env.update(extra_env or {})
    t0 = time.monotonic()
    p = subprocess.run(["bash", SETUP], capture_output=True, text=True, timeout=timeout, env=env)
    return p, time.monotonic() - t0


def test_setup_lock():
    # every package but one is installed; the stand-in cmake does nothing
    tool("dpkg-query", 'for a; do p=$a; done; [ "$p" = hpcc ] && { echo -n "deinstall ok config-files"; exit 0; }; '
                       'echo -n "install ok installed"')
    tool("sudo", 'exec "$@"')
    tool("cmake", "exit 0")
    # apt-get: the lists lock is held for the first two updates
    state = os.path.join(WORK, "updates")
    tool("apt-get", f'''case " $* " in
  *" update "*) n=$(cat {state} 2>/dev/null || echo 0); echo $((n + 1)) > {state}
      if [ "$n" -lt "${{LOCKED_TRIES:-2}}" ]; then
        echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
        echo "E: Unable to lock directory /var/lib/apt/lists/" >&2; exit 100; fi ;;
  *" install "*) [ -n "$FAIL_INSTALL" ] && {{ echo "E: Unable to locate package hpcc" >&2; exit 100; }} ;;
esac
exit 0''')
    build = os.path.join(WORK, "build")
    p, dt = setup(build, {"MPISIM_APT_LOCK_WAIT": "60"})
    apt = [c for c in calls() if c.startswith("apt-get")]
    check(p.returncode == 0, "setup.sh waited for the lock and went on" + (f" (rc {p.returncode}): {p.stderr[-800:]}" if p.returncode else ""))
    check("held by process 4242 (apt-get)" in p.stderr and "waiting up to 60 s" in p.stderr,
          "it says who holds the lock and how long it waits")
    check(sum(" update" in c for c in apt) == 3 and 8 <= dt < 60, f"apt-get update tried 3 times in {dt:.0f} s")
    check(any(" install " in c and c.rstrip().endswith("hpcc") for c in apt), "then the missing package is installed")
    check(all("-o DPkg::Lock::Timeout=60" in c for c in apt), "every apt-get call waits for dpkg's lock too")
    # a lock that is never released: the wait ends, with apt's own message, and so does setup.sh
    os.remove(state)
    open(os.path.join(WORK, "calls.log"), "w").close()
    p, dt = setup(build, {"MPISIM_APT_LOCK_WAIT": "7", "LOCKED_TRIES": "1000"})
    check(p.returncode == 100 and "Could not get lock" in p.stderr and 7 <= dt < 40,
          f"a lock held past the wait ends the set-up with apt's code and message after {dt:.0f} s")
    check(not any(c.startswith("cmake") for c in calls()), "... before anything is built")
    # any other failure of apt is its answer: no waiting
    os.remove(state)
    p, dt = setup(build, {"MPISIM_APT_LOCK_WAIT": "60", "LOCKED_TRIES": "0", "FAIL_INSTALL": "1"})
    check(p.returncode == 100 and "Unable to locate package" in p.stderr and dt < 20,
          f"another apt failure ends the set-up at once ({dt:.0f} s)")


def compile_commands(build):
    """What a build of `build` would run now (make -n / ninja -n): compiler and generator calls."""
    p = subprocess.run(["cmake", "--build", build, "--", "-n"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"FAILED: cmake --build {build} -- -n: {p.stderr[-1000:]}")
    return [l for l in p.stdout.splitlines()
            if re.search(r"(^|[/ ])(cc|c\+\+|gcc|g\+\+|gfortran|mpicc|mpifort|clang)( |$)| -c |gen_wrappers\.py", l)]


def test_setup_no_rebuild():
    tool("dpkg-query", 'echo -n "install ok installed"')
    tool("apt-get", "exit 1")
    tool("cmake", 'exec /usr/bin/cmake "$@"')
    before = compile_commands(BUILD)
    if before:   # sources changed since the last build: nothing to judge a no-op build by
        print(f"the build directory is not up to date ({len(before)} commands pending, e.g. {before[0][:160]}): "
              "build it first; skipped")
        sys.exit(77)
    p, dt = setup(BUILD)
    cm = [c for c in calls() if c.startswith("cmake")]
    check(p.returncode == 0, "setup.sh on a configured build" + (f" (rc {p.returncode}): {p.stderr[-800:]}" if p.returncode else ""))
    check(not any(c.startswith("apt-get") for c in calls()), "with every package installed, no apt-get")
    check(cm and not any(" -S " in c for c in cm) and any("--build" in c for c in cm),
          f"the configured build is not configured again, only built: {cm}")
    check(not re.search(r"Building (C|CXX|Fortran) object|Linking ", p.stderr),
          "... and that build compiles and links nothing")
    # configure again (a first set-up run does it; CMake re-runs itself when a CMakeLists.txt changes)
    subprocess.run(["cmake", "-S", SRC, "-B", BUILD], capture_output=True, text=True, timeout=200, check=True)
    after = compile_commands(BUILD)
    check(not after, f"after configuring again with nothing changed, nothing would be rebuilt: {after[:3]}")


if __name__ == "__main__":
    try:
        TESTS = {n[len("test_"):]: f for n, f in globals().items() if n.startswith("test_")}
        TESTS[NAME]()
    finally:
        shutil.rmtree(WORK, True)
    print("PASSED", NAME)
