#!/usr/bin/env bash
# Set up, build, and run the whole test suite (ctest). Extra arguments go to ctest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
build=${MPISIM_BUILD:-$here/build}
cd "$build"
ctest --output-on-failure --timeout 600 "$@"
