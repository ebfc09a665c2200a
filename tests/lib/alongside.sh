#!/usr/bin/env bash
# tests/lib/alongside.sh - `make test`: the legs (tests/legs/, ~20 min of
# real-Slurm suites in chroots) run alongside the host's suites instead of
# after them. Both mostly wait on Slurm's daemons and timers (CI used about
# 6 min of CPU in 41 min on 2 cores), so running them together roughly
# halves CI's wall time; the clusters never meet (random free ports, own
# dirs, the legs in their own mount namespaces).
#
#   tests/lib/alongside.sh "LEGS COMMAND" "HOST COMMAND"
#
# The legs' output goes to build/legs/alongside.out and is printed when
# both are done, after the host's; exit 1 if either failed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$ROOT/build/legs/alongside.out
mkdir -p "${out%/*}" || exit 1
t0=$SECONDS
bash -c "$1" >"$out" 2>&1 </dev/null &
legs=$!
echo "alongside: legs started (pid $legs, output in $out): $1"
bash -c "$2"
host_rc=$?
echo "alongside: host suites done in $((SECONDS - t0))s (exit $host_rc); waiting for the legs"
wait "$legs"
legs_rc=$?
printf '\n===== the legs, run alongside (%s) =====\n' "$1"
cat "$out"
printf '\nalongside: host exit %d, legs exit %d, %ds in all\n' "$host_rc" "$legs_rc" "$((SECONDS - t0))"
((host_rc == 0 && legs_rc == 0))
