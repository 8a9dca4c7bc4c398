#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks (Debian packages only), then configures and builds
# mpisim into build/ (or $MPISIM_BUILD). Safe to run again: it installs nothing already there.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${MPISIM_BUILD:-$here/build}

packages=(build-essential cmake pkg-config python3 python3-numpy python3-matplotlib python3-h5py
          python3-mpi4py openmpi-bin libopenmpi-dev libhdf5-dev hdf5-tools libhwloc-dev hwloc
          libunwind-dev libgtest-dev libinih-dev libjansson-dev netpipe-openmpi gfortran hpcc lammps
          clang libclang-rt-14-dev    # clang + libFuzzer: the fuzz harnesses (tests/fuzz)
          libomp-dev)                 # clang's OpenMP (LLVM libomp): cosim_omp_imbalance
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build "$build" -j"$(nproc)" >&2
