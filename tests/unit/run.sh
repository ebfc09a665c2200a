#!/bin/sh
# Run each cmocka test binary; print one closing "N passed, N failed" line.
# Usage: run.sh LABEL BINARY...
label=$1; shift
pass=0; fail=0; failed=""
for t in "$@"; do
	out=$("$t" 2>&1); rc=$?
	n_pass=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	n_fail=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	pass=$((pass + ${n_pass:-0})); fail=$((fail + ${n_fail:-0}))
	if [ $rc -ne 0 ]; then
		printf '%s\n' "$out"
		[ -z "$n_fail" ] && fail=$((fail + 1))
		failed="$failed $(basename "$t")"
	else
		printf '%-28s %s\n' "$(basename "$t")" "${n_pass:-0} passed"
	fi
done
echo "unit-$label: $pass passed, $fail failed"
[ -z "$failed" ] || { echo "failed:$failed"; exit 1; }
