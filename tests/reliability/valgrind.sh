#!/bin/bash
# tests/reliability/valgrind.sh - memcheck over the core's lifecycle path and
# the restore-budget CLI (docs/architecture.md, "The ledger";
# contrib/cli/README.md).
#
# build/reliability/vg_plugin loads build/restore_budget.so with stand-ins
# for the host's SPANK API and runs its callbacks; vg_driver drives the core
# calls the SPANK callbacks make (config, options, start, checkpoint, report, epilog,
# grant, reads) on a real ledger; then every read command of the CLI runs
# on that ledger (show, explain, list, each also --json, and check-config on
# a good and a bad file). Each run is
#   valgrind --error-exitcode=1 --leak-check=full
# and passes when valgrind reports nothing and the program exits as it
# should. Needs root (a root-owned state_dir). Last line:
# "valgrind: N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
DRIVER=$ROOT/build/reliability/vg_driver
CLI=$ROOT/build/restore-budget

for f in "$DRIVER" "$CLI"; do
	[ -x "$f" ] || { echo "valgrind: $f missing: run make reliability-build all" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "valgrind: valgrind not installed (apt-get install valgrind)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "valgrind: must run as root" >&2; exit 2; }

T=$(mktemp -d /tmp/rb-rel-valgrind-XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
mkdir -m 755 "$T/state" "$T/ck"
: >"$T/ck/checkpoint-1"
: >"$T/ck/checkpoint-2"
ln -s checkpoint-2 "$T/ck/latest"
cat >"$T/rb.conf" <<CONF
state_dir = "$T/state";
max_failures = 2;
restore_retry_num = 3;
restore_timeout = 0;
partitions = { preempt = { restore_retry_num = 2; }; };
accounts = { ml-team = { max_failures = 4; }; };
CONF
printf 'state_dir = "%s";\nmax_failures = "two";\n' "$T/state" >"$T/bad-type.conf"
printf 'state_dir = "%s\nmax_failures = 1;\n' "$T/state" >"$T/bad-syntax.conf"
chmod 644 "$T"/*.conf
export RESTORE_BUDGET_CONFIG=$T/rb.conf SLURM_CONF=$T/none TZ=UTC
unset SLURM_CLUSTER_NAME

VG=(valgrind -q --error-exitcode=1 --leak-check=full
    --errors-for-leak-kinds=definite,possible --track-fds=no
    --suppressions="$ROOT/tests/reliability/valgrind.supp")
pass=0 fail=0 n=0

# vg WANT_RC CMD...: valgrind CMD; it must exit WANT_RC and valgrind must
# report nothing (with -q, any line in the log is an error report).
vg() {
	local want=$1; shift
	n=$((n + 1))
	"${VG[@]}" --log-file="$T/vg.$n.log" "$@" >"$T/out.$n" 2>"$T/err.$n"
	local rc=$?
	if [ "$rc" = "$want" ] && [ ! -s "$T/vg.$n.log" ]; then
		pass=$((pass + 1)); echo "ok   ${*#$ROOT/}"
	else
		fail=$((fail + 1)); echo "FAIL ${*#$ROOT/} (exit $rc, want $want)"
		sed 's/^/    /' "$T/vg.$n.log" | head -40
		sed 's/^/    stderr: /' "$T/err.$n" | head -5
	fi
}

vg 0 "$DRIVER" "$T/rb.conf" cluster 4242 "$T/ck"
vg 0 "$DRIVER" "$T/rb.conf" cluster 1001 "$T/ck"
# The plugin itself, loaded as slurmd/slurmstepd load it, every callback of
# a job that exhausts its budget (tests/reliability/vg_plugin.c).
mkdir -m 755 "$T/work" "$T/work/ckpt" && echo 3 >"$T/work/ckpt/checkpoint-3"
vg 0 "$ROOT/build/reliability/vg_plugin" "$ROOT/build/restore_budget.so" "$T/rb.conf" "$T/work"
vg 0 "$CLI" show 4242
vg 0 "$CLI" --json show 4242
vg 0 "$CLI" explain 4242
vg 0 "$CLI" --json explain 4242
vg 0 "$CLI" list
vg 0 "$CLI" --json list
vg 0 "$CLI" list --exhausted
vg 3 "$CLI" show 999
vg 0 "$CLI" check-config "$T/rb.conf"
vg 0 "$CLI" --json check-config "$T/rb.conf"
vg 1 "$CLI" check-config "$T/bad-type.conf"
vg 1 "$CLI" check-config "$T/bad-syntax.conf"
vg 0 "$CLI" metrics
# a corrupt record: reported, exit 1, no leak on the error path
sed -i 's/^failures=.*/failures=7/' "$T/state/cluster/001/1001.rec"
vg 1 "$CLI" show 1001
vg 1 "$CLI" list

echo "valgrind: $pass passed, $fail failed"
[ "$fail" = 0 ]
