#!/usr/bin/env bash
# The main job: set up, build, and run the matrix-multiply speedup/efficiency study (seed 000
# section 3.2) on the default Myrinet profile, printing its table.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
build=${MPISIM_BUILD:-$here/build}
# results go under the build directory (or --out), never over the committed results/
exec "$build/bin/mpisim" study speedup --out "$build/speedup" "$@"
