#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks (Debian packages only), then configures and builds
# mpisim into build/ (or $MPISIM_BUILD). Safe to run again: it installs nothing already there, waits
# for another package manager (an unattended upgrade, a second apt) instead of failing, and a run
# with nothing changed rebuilds nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${MPISIM_BUILD:-$here/build}
# how long to wait for another apt or dpkg to let go of the package locks (seconds)
lock_wait=${MPISIM_APT_LOCK_WAIT:-600}

packages=(build-essential cmake pkg-config python3 python3-numpy python3-matplotlib python3-h5py
          python3-mpi4py openmpi-bin libopenmpi-dev libhdf5-dev hdf5-tools libhwloc-dev hwloc
          libunwind-dev libgtest-dev libinih-dev libjansson-dev netpipe-openmpi gfortran hpcc lammps
          clang libclang-rt-14-dev)   # clang + libFuzzer: the fuzz harnesses (tests/fuzz)

# apt-get that waits for the locks: DPkg::Lock::Timeout makes apt wait for dpkg's lock (apt >=
# 1.9.11), but `apt-get update` fails at once (rc 100, "Could not get lock
# /var/lib/apt/lists/lock") when another update holds the lists: that is retried until lock_wait
# has passed. Any other failure is apt's answer and ends the set-up.
apt_wait() {
  local start=$SECONDS said=0 err rc
  err=$(mktemp)
  while :; do
    rc=0
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$lock_wait" "$@" 2>"$err" >&2 || rc=$?
    if [ "$rc" -eq 0 ]; then break; fi
    if ! grep -qE "Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock" "$err" ||
       [ $((SECONDS - start)) -ge "$lock_wait" ]; then
      cat "$err" >&2
      rm -f "$err"
      return "$rc"
    fi
    if [ "$said" -eq 0 ]; then
      echo "setup: another package manager holds the lock ($(grep -m1 -oE 'held by process [0-9]+ \([^)]*\)' "$err" || echo 'apt or dpkg')); waiting up to ${lock_wait} s" >&2
      said=1
    fi
    sleep 5
  done
  rm -f "$err"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  apt_wait update -qq
  apt_wait install -y -qq --no-install-recommends "${missing[@]}"
fi

# Configure only a build directory that has not been configured for this checkout: a configured
# one re-runs CMake by itself when a CMakeLists.txt changed, and configuring it again regenerated
# files and rebuilt part of the project with no source change.
cache="$build/CMakeCache.txt"
configured_for=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache" 2>/dev/null || true)
if [ -z "$configured_for" ] || [ "$(realpath -- "$configured_for" 2>/dev/null)" != "$(realpath -- "$here")" ] ||
   { [ ! -f "$build/Makefile" ] && [ ! -f "$build/build.ninja" ]; }; then
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$build" -j"$(nproc)" >&2
