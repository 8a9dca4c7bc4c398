#!/bin/sh
# A harness run over inputs the code under test handles (every run ends without a finding) must
# leave no artifact: an oom-, crash-, timeout- or leak- file there would be a false finding (issue
# 25 item 19: libFuzzer's per-malloc limit carried into the guarded HDF5 reader's child).
# usage: no_false_artifacts.sh HARNESS INPUT...
set -u
harness=$1
shift
dir=$(mktemp -d "${TMPDIR:-/tmp}/mpisim-fuzz-art.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/corpus" "$dir/art"
cp "$@" "$dir/corpus/"
"$harness" -runs=0 -timeout=60 -artifact_prefix="$dir/art/" "$dir/corpus" >"$dir/log" 2>&1
rc=$?
found=$(ls "$dir/art" | grep -E '^(oom|crash|timeout|leak)-' || true)
if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
    cat "$dir/log"
    echo "FAILED: exit $rc, artifacts: $found"
    exit 1
fi
echo "no artifact from $*"
