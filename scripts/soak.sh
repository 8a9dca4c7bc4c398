#!/usr/bin/env bash
# The whole suite several times in a row with CPU-bound jobs beside it: how the suite is shown to
# hold on a busy machine (a test that waits on a clock instead of on progress fails here first).
# Usage: scripts/soak.sh [ROUNDS (3)] [BUSY_JOBS (2)] [ctest arguments, default -j2]
# Stops at the first round with a failing test and exits 1; prints each round's time and load.
# Each round's ctest output is in BUILD/soak/roundK.log, every test's own output in roundK.xml.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
busy=${2:-2}
shift $(( $# >= 2 ? 2 : $# ))
[ $# -gt 0 ] || set -- -j2
"$here/scripts/setup.sh"
build=${MPISIM_BUILD:-$here/build}
logs=$build/soak
mkdir -p "$logs"

pids=()
stop_busy() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap stop_busy EXIT
for _ in $(seq "$busy"); do
  /usr/bin/env sh -c 'while :; do :; done' &
  pids+=($!)
done

for k in $(seq "$rounds"); do
  start=$SECONDS
  rc=0
  # every test's own output per round, as JUnit XML: Testing/Temporary/LastTest.log is the last
  # ctest's in the build directory, and a test of the suite runs one itself
  (cd "$build" && ctest --timeout 600 --output-junit "$logs/round$k.xml" "$@" >"$logs/round$k.log" 2>&1) || rc=$?
  summary=$(grep -E "tests passed|tests failed" "$logs/round$k.log" | tail -1 || true)
  echo "soak: round $k of $rounds beside $busy CPU-bound jobs: ${summary:-no summary} in $((SECONDS - start)) s" \
       "(load $(cut -d' ' -f1-3 /proc/loadavg)); log $logs/round$k.log"
  if [ "$rc" -ne 0 ]; then
    sed -n '/The following tests FAILED/,$p' "$logs/round$k.log"
    exit 1
  fi
done
echo "soak: $rounds rounds in a row passed"
