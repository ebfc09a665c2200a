#!/bin/bash
# tests/reliability/run.sh - run the reliability programs and add up their
# "<name>: N passed, N failed" lines into one "reliability: N passed, N
# failed" line; exit 1 if anything failed.
#
#   run.sh BUILD_DIR        (make reliability; needs root)
#
# REL_CRASH_KILLS (default 1000), REL_CONC_PROCS (32), REL_CONC_JOBS (6),
# REL_CONC_ROUNDS (10) tune the crash and concurrency tests.
set -u
cd "$(dirname "$0")/../.." || exit 2
B=${1:-build/reliability}
[ "$(id -u)" = 0 ] || { echo "reliability: must run as root (root-owned state_dir, setuid nobody, tmpfs mounts)" >&2; exit 2; }

export REL_CONC_PROCS=${REL_CONC_PROCS:-32} REL_CONC_JOBS=${REL_CONC_JOBS:-6}
export REL_CONC_ROUNDS=${REL_CONC_ROUNDS:-10}

# a tmpfs left mounted by a killed rel_faults
cleanup() {
	awk '$2 ~ /^\/tmp\/rb-rel-faults-/ {print $2}' /proc/mounts |
		while read -r m; do umount -l "$m"; done
}
trap cleanup EXIT

pass=0 fail=0 failed=
for t in rel_crash rel_concurrency rel_hostile rel_faults; do
	echo "== $t"
	out=$("$B/$t" 2>&1); rc=$?
	printf '%s\n' "$out"
	line=$(printf '%s\n' "$out" | grep -E '^[a-z]+: [0-9]+ passed, [0-9]+ failed$' | tail -1)
	p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
	f=$(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) failed$/\1/p')
	pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
	if [ $rc -ne 0 ]; then
		[ -z "$line" ] && fail=$((fail + 1))
		failed="$failed $t"
	fi
done
echo "reliability: $pass passed, $fail failed"
[ -z "$failed" ] || { echo "failed:$failed"; exit 1; }
