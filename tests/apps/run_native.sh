#!/bin/sh
# Runs one study program natively and checks it: exit status 0, every PATTERN (extended regular
# expression, grep -E) matches some output line, and no line reports check=FAIL.
# The program's output is echoed for the ctest log.
# usage: run_native.sh PATTERN... -- command [args...]
n=0
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  n=$((n + 1))
  eval "pat_$n=\$1"
  shift
done
if [ "$#" -eq 0 ]; then
  echo "usage: run_native.sh PATTERN... -- command [args...]" >&2
  exit 2
fi
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
  echo "run_native: FAILED: exit status $rc: $*" >&2
  exit 1
fi
i=1
while [ "$i" -le "$n" ]; do
  eval "pat=\$pat_$i"
  if ! printf '%s\n' "$out" | grep -Eq -- "$pat"; then
    echo "run_native: FAILED: no output line matches '$pat': $*" >&2
    exit 1
  fi
  i=$((i + 1))
done
if printf '%s\n' "$out" | grep -q -- "check=FAIL"; then
  echo "run_native: FAILED: output reports check=FAIL: $*" >&2
  exit 1
fi
exit 0
