#!/bin/bash
# tests/cli/run.sh - the restore-budget CLI against real ledgers.
#
# Builds nothing but its ledger driver: run `make all` first. Needs root (a
# root-owned state_dir, grant, gc, runuser). Creates a temporary state_dir
# and config, writes ledgers through the core's lifecycle functions
# (tests/cli/mkledger.c), then checks every command's output and exit code.
# Last line: "cli: N passed, N failed"; exit status 1 on any failure.
set -u

cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
CLI_BUILT=$ROOT/build/restore-budget

if [ ! -x "$CLI_BUILT" ] || ! ls build/core/*/*.o >/dev/null 2>&1; then
	echo "cli: build/restore-budget or build/core/*/*.o missing: run 'make all' first" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	echo "cli: must run as root (root-owned state_dir, grant, gc, runuser)" >&2
	exit 2
fi

T=$(mktemp -d /tmp/rb-cli-XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
mkdir -m 755 "$T/state" "$T/bin"
# a copy any user can run (the build tree may not be reachable by nobody)
install -m 755 "$CLI_BUILT" "$T/bin/restore-budget"
CLI=$T/bin/restore-budget

export TZ=UTC
unset SLURM_CLUSTER_NAME SUDO_USER
export SLURM_CONF=$T/no-slurm.conf   # absent: the default cluster applies

cat >"$T/rb.conf" <<EOF
# restore_budget test config
state_dir = "$T/state";
max_failures = 1;
restore_retry_num = 3;
restore_timeout = 0;
partitions = { preempt = { restore_retry_num = 2; }; };
accounts = { ml-team = { max_failures = 4; }; };
EOF
printf 'state_dir = "%s";\nmax_failures = 1;\nrestore_retries = 3;\n' \
	"$T/state" >"$T/bad-key.conf"
printf 'state_dir = "%s";\n\nmax_failures = "two";\n' "$T/state" \
	>"$T/bad-type.conf"
printf 'state_dir = "%s";\nmax_interruptions = 2;\nexit_rules = ( { codes = [3, 4]; action = "fatal"; },\n  { codes = [75]; action = "ignore"; } );\n' \
	"$T/state" >"$T/rules.conf"
printf 'state_dir = "%s";\nexit_rules = ( { codes = [3]; action = "fatal"; },\n  { codes = [300]; action = "ignore"; } );\n' \
	"$T/state" >"$T/bad-rule.conf"
chmod 644 "$T"/*.conf
export RESTORE_BUDGET_CONFIG=$T/rb.conf

pass=0
fail=0
OUT=
ERR=
RC=

# run CMD...: OUT = stdout, ERR = stderr, RC = exit status
run() {
	OUT=$("$@" 2>"$T/stderr")
	RC=$?
	ERR=$(cat "$T/stderr")
}

report() { # report NAME OK [DETAIL]
	if [ "$2" = 0 ]; then
		pass=$((pass + 1))
		echo "ok   - $1"
	else
		fail=$((fail + 1))
		echo "FAIL - $1"
		if [ -n "${3:-}" ]; then printf '%s\n' "$3" | sed 's/^/       | /'; fi
	fi
}

# expect NAME RC [REGEX...]: exit status RC and every extended regex
# matching some line of stdout; "!REGEX" must match no line; "2>REGEX"
# must match a line of stderr.
expect() {
	local name=$1 want=$2 ok=0 why="" pat
	shift 2
	if [ "$RC" != "$want" ]; then
		ok=1
		why="exit $RC, wanted $want"
	fi
	for pat in "$@"; do
		case $pat in
		'!'*)
			if grep -qE -- "${pat#!}" <<<"$OUT"; then
				ok=1
				why="$why${why:+; }stdout matches $pat"
			fi ;;
		'2>'*)
			if ! grep -qE -- "${pat#2>}" <<<"$ERR"; then
				ok=1
				why="$why${why:+; }stderr lacks ${pat#2>}"
			fi ;;
		*)
			if ! grep -qE -- "$pat" <<<"$OUT"; then
				ok=1
				why="$why${why:+; }stdout lacks $pat"
			fi ;;
		esac
	done
	[ $ok = 0 ] || why=$(printf '%s\n--- stdout:\n%s\n--- stderr:\n%s' \
		"$why" "$OUT" "$ERR")
	report "$name" $ok "$why"
}

# expect_json NAME RC PYTHON-EXPR: stdout parses as JSON (d) and the
# expression holds.
expect_json() {
	local name=$1 want=$2 expr=$3 ok=0 why=""
	if [ "$RC" != "$want" ]; then
		ok=1
		why="exit $RC, wanted $want"
	fi
	if ! why2=$(python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
if not ('"$expr"'):
    print("assertion failed: " + sys.argv[1])
    sys.exit(1)
' "$expr" <<<"$OUT" 2>&1); then
		ok=1
		why="$why${why:+; }$why2"
	fi
	[ $ok = 0 ] || why=$(printf '%s\n--- stdout:\n%s\n--- stderr:\n%s' \
		"$why" "$OUT" "$ERR")
	report "$name" $ok "$why"
}

# expect_true NAME COMMAND...: a plain condition
expect_true() {
	local name=$1
	shift
	if "$@"; then report "$name" 0; else report "$name" 1 "condition failed: $*"; fi
}

# ---- ledgers through the core --------------------------------------------
# build/mkledger: make links it with the core objects (Makefile, cli-test)
MKLEDGER=${MKLEDGER:-$ROOT/build/mkledger}
if [ ! -x "$MKLEDGER" ]; then
	echo "cli: $MKLEDGER missing: run 'make cli-test'" >&2
	exit 2
fi
mk() { TMPDIR=$T "$MKLEDGER" "$T/rb.conf" cluster "$@" || { echo "cli: mkledger $* failed" >&2; exit 2; }; }
mk exhaust 101      # alice: M=1 R=2, preempted, corrupt checkpoint: refused
mk clean 102        # bob: one attempt, exit 0
mk confirmed 103    # carol: restore confirmed by ack, preempted, exit 0
mk inprogress 104   # dave: attempt 0 running
mk clean 105        # bob: old, done -> gc removes it
mk age 105 40
mk inprogress 106   # dave: old, no end on record -> gc keeps it
mk age 106 40

C=cluster
S=$T/state/$C
CK=/home/alice/run/ckpt/checkpoint-7
TS='^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}  '

# ---- help, version, usage errors -----------------------------------------
run "$CLI" --help
expect "--help prints usage" 0 '^Usage: restore-budget \[OPTIONS\] COMMAND' \
	'^  grant JOB --failures N' '^Exit status: 0 ok; 1 bad data'
run "$CLI" -h
expect "-h prints usage" 0 '^Usage: restore-budget'
run "$CLI" --version
expect "--version" 0 '^restore-budget [0-9]+\.[0-9]+\.[0-9]+ \(ledger record format 2\)$'
run "$CLI"
expect "no command: exit 2" 2 '2>^Usage: restore-budget'
run "$CLI" frobnicate
expect "unknown command: exit 2" 2 "2>^restore-budget: unknown command 'frobnicate'"
run "$CLI" show
expect "show without JOB: exit 2" 2 '2>show: missing JOB argument'
run "$CLI" show 12x
expect "show with a bad job id: exit 2" 2 "2>'12x' is not a job id"
run "$CLI" show 101 --failures 3
expect "show does not take --failures: exit 2" 2 '2>show does not take --failures'
run "$CLI" grant 101 --json --failures 1
expect "grant does not take --json: exit 2" 2 '2>grant does not take --json'
run "$CLI" --cluster ../etc show 101
expect "invalid --cluster: exit 2" 2 "2>invalid cluster name '../etc'"

# ---- show ------------------------------------------------------------------
run "$CLI" show 101
expect "show 101 (exhausted): counters, phase, limits" 0 \
	'^cluster: +cluster$' '^job: +101$' '^user: +alice \(uid 1001\)$' \
	'^partition/acct: +preempt / ml$' '^attempt: +5 \(started 2023-11-14 ' \
	'^phase: +RESTORING$' '^failures F/M: +2/1$' '^restores r/R: +0/2$' \
	'^granted: +0$' '^restores_left: +0$' \
	'^exhausted: +yes \(attempt 5 was refused\)$' "^checkpoint: +$CK\$" \
	'^last end: +failed:1 \(attempt 4\)$' \
	'^limits: +max_failures=1 restore_retry_num=2 restore_timeout=0 accounting=grouped count_preemptions=false$' \
	'^totals: +1 interruptions, 4 failed restores, 2 failures charged$'
run "$CLI" show 102
expect "show 102 (clean): fresh, completed, budget left" 0 \
	'^user: +bob \(uid 1002\)$' '^phase: +FRESH$' \
	'^ended: +completed at 2023-11-14 23:15:25 \(ran 1h02m\)$' \
	'^failures F/M: +0/1$' '^restores r/R: +0/3$' '^restores_left: +6$' \
	'^exhausted: +no$' '^checkpoint: +\(none found yet\)$' '^last end: +none$'
run "$CLI" show 103
expect "show 103 (confirmed): confirmed restore, safe odd path" 0 \
	'^phase: +RESTORING \(restore confirmed: exit0\)$' \
	'^last end: +interrupted \(attempt 1\)$' '^restores_left: +4$' \
	'^checkpoint: +/home/carol/my run/ck=1/50%/%1B\[31mcheckpoint 7%C2%9B2J%E2%80%AEé%FF$' \
	'^totals: +2 interruptions, 0 failed restores, 0 failures charged$'
expect_true "show never prints a raw control byte" \
	bash -c '! printf "%s" "$1" | LC_ALL=C grep -q "$(printf "\033")"' _ "$OUT"
expect_true "show never prints a raw C1 control (U+009B CSI), bidi override or invalid byte" \
	bash -c '! printf "%s" "$1" | LC_ALL=C grep -qP "\xc2\x9b|\xe2\x80\xae|\xff"' _ "$OUT"
run "$CLI" show 104
expect "show 104 (in progress): no end yet" 0 \
	'^ended: +no end recorded \(running, or its node died\)$'
run "$CLI" show 101 --json
expect_json "show --json 101: fields" 0 \
	'd["job_id"] == 101 and d["user"] == "alice" and d["failures"] == 2 and d["max_failures"] == 1 and d["restore_failures"] == 0 and d["restore_retry_num"] == 2 and d["restores_left"] == 0 and d["exhausted"] is True and d["state"] == "exhausted" and d["checkpoint"] == "'"$CK"'" and d["last_end"] == "failed:1" and d["limits"] == {"max_failures": 1, "restore_retry_num": 2, "restore_timeout": 0, "restore_accounting": "grouped", "count_preemptions": False} and d["current_attempt"]["attempt"] == 5 and d["current_attempt"]["refused"] is True and d["totals"]["restore_failures"] == 4'
run "$CLI" --json show 103
expect_json "show --json 103: exact odd checkpoint path" 0 \
	'd["checkpoint"] == "/home/carol/my run/ck=1/50%/\x1b[31mcheckpoint 7\ufffd2J\ufffdé\ufffd" and d["current_attempt"]["confirmed"] == "exit0" and d["last_end"] == "interrupted" and d["restores_left"] == 4'
run "$CLI" show 999
expect "show 999: not found, exit 3" 3 \
	'2>^restore-budget: job 999: no record on cluster cluster' '!.'
run "$CLI" --cluster other show 101
expect "show on another cluster: exit 3" 3 '2>no record on cluster other'

# ---- explain ---------------------------------------------------------------
run "$CLI" explain 101
expect "explain 101: one line per event, each rule named" 0 \
	"${TS}attempt 0 +start +run; nothing to charge \(first recorded attempt\); failures 0->0, restore_failures 0->0; limits M=1 R=2 timeout=0s grouped$" \
	"${TS}attempt 0 +end +interrupted \(preempted\) after 10m00s \(phase FRESH, restore confirmed: none\)$" \
	"${TS}attempt 1 +start +run; charged attempt 0 \(ended interrupted while FRESH\) as nothing; failures 0->0, restore_failures 0->0" \
	"${TS}attempt 1 +report +phase RESTORING, checkpoint $CK$" \
	"${TS}attempt 1 +end +failed:1 after 30s \(phase RESTORING, restore confirmed: none\)$" \
	"${TS}attempt 2 +start +run; charged attempt 1 \(ended failed:1 while RESTORING\) as a failed restore \(r \+= 1\); failures 0->0, restore_failures 0->1; limits M=1 R=2 timeout=0s grouped$" \
	"${TS}attempt 3 +start +run; charged attempt 2 \(ended failed:1 while RESTORING\) as a failed restore that completed a group of R \(F \+= 1, r := 0\); failures 0->1, restore_failures 1->0" \
	"${TS}attempt 5 +start +REFUSED; .*failures 1->2, restore_failures 1->0; .*reason: restore 2 of 2 failed \(attempt 4\): failures 2 > max_failures 1: budget exhausted$" \
	"${TS}attempt 5 +end +failed:1 after 1s"
expect_true "explain 101: 17 events (5 x start/report/end + refused start/end)" \
	test "$(grep -cE "$TS" <<<"$OUT")" = 17
run "$CLI" explain 103
expect "explain 103: ack confirmation and the charge it spared" 0 \
	"${TS}attempt 1 +end +interrupted \(preempted\) after 3m20s \(phase RESTORING, restore confirmed: ack\); confirmed by ack before its end$" \
	"${TS}attempt 2 +start +run; charged attempt 1 \(ended interrupted while RUNNING\) as nothing" \
	"${TS}attempt 2 +report +phase RESTORING, checkpoint /home/carol/my run/ck=1/50%/%1B\[31mcheckpoint 7%C2%9B2J%E2%80%AEé%FF$" \
	"${TS}attempt 2 +end +completed after 8m20s \(phase RESTORING, restore confirmed: exit0\)$"
run "$CLI" explain 101 --json
expect_json "explain --json 101: typed fields" 0 \
	'len(d["events"]) == 17 and d["torn_lines"] == 0 and all(e["ok"] and isinstance(e["time"], int) for e in d["events"]) and [e for e in d["events"] if e["kind"] == "start" and e["attempt"] == 5][0] == {**[e for e in d["events"] if e["kind"] == "start" and e["attempt"] == 5][0], "decision": "refuse", "charged": 4, "charge": "restore_failure_converted", "charged_end": "failed:1", "charged_phase": "RESTORING", "failures": {"before": 1, "after": 2}, "restore_failures": {"before": 1, "after": 0}, "max_failures": 1, "restore_retry_num": 2, "count_preemptions": False} and "checkpoint" not in [e for e in d["events"] if e["kind"] == "start" and e["attempt"] == 5][0] and [e["checkpoint"] for e in d["events"] if e["kind"] == "report"] == ["", "'"$CK"'", "'"$CK"'", "'"$CK"'", "'"$CK"'"]'
# a torn / forged line: bad checksum
printf 't=1700000000 kind=grant attempt=0 granted=0->9 by=mallory crc=0123456789abcdef\n' \
	>>"$S/102/102.log"
run "$CLI" explain 102
expect "explain: a line with a bad checksum is marked and not shown" 0 \
	'^line 4: \(torn line ignored\)$' "${TS}attempt 0 +end +completed after 1h02m" \
	'!mallory' '!granted 0->9'
run "$CLI" explain 102 --json
expect_json "explain --json: torn line counted, content dropped" 0 \
	'd["torn_lines"] == 1 and d["events"][-1] == {"ok": False, "line": 4} and "mallory" not in json.dumps(d) and len(d["events"]) == 4'
run "$CLI" explain 999
expect "explain 999: exit 3" 3 '2>^restore-budget: job 999: no event log'

# ---- list ------------------------------------------------------------------
run "$CLI" list
expect "list: one row per record" 0 \
	'^JOB +USER +ATTEMPT +STATE +PHASE +F/M +r/R +LEFT$' \
	'^101 +alice +5 +exhausted +RESTORING +2/1 +0/2 +0$' \
	'^102 +bob +0 +ended +FRESH +0/1 +0/3 +6$' \
	'^103 +carol +2 +ended +RESTORING +0/1 +0/2 +4$' \
	'^104 +dave +0 +running +FRESH +0/1 +0/3 +6$' '^105 ' '^106 '
run "$CLI" list --user bob
expect "list --user bob" 0 '^102 +bob ' '^105 +bob ' '!alice' '!carol' '!dave'
run "$CLI" list --state running
expect "list --state running" 0 '^104 ' '^106 ' '!^10[1235] '
run "$CLI" list --exhausted
expect "list --exhausted" 0 '^101 +alice' '!^10[2-6] '
run "$CLI" list --state exhausted --user bob
expect "list filters combine" 0 '^JOB' '!^1'
run "$CLI" list --state sleeping
expect "list --state bad: exit 2" 2 '2>--state sleeping: expected running, restoring, exhausted, ended or all'
run "$CLI" list --json --state ended
expect_json "list --json --state ended" 0 \
	'sorted(j["job_id"] for j in d["jobs"]) == [102, 103, 105] and d["corrupt"] == [] and [j for j in d["jobs"] if j["job_id"] == 103][0]["restores_left"] == 4'
run "$CLI" --cluster empty list
expect "list on a cluster with no ledger: header only" 0 '^JOB' '!^[0-9]'

# ---- check-config ----------------------------------------------------------
run "$CLI" check-config
expect "check-config (from \$RESTORE_BUDGET_CONFIG): summary" 0 \
	"^$T/rb.conf: OK$" "^state_dir: +$T/state$" '^max_failures: +1$' \
	'^restore_retry_num: +3$' '^restore_accounting: +grouped$' \
	'^partition preempt: +restore_retry_num=2$' \
	'^account ml-team: +max_failures=4$' \
	'^corrupt checkpoint: +6 restore attempts before a job is refused$'
run "$CLI" check-config "$T/bad-key.conf"
expect "check-config: unknown key, exact file:line" 1 '!.' \
	"2>^restore-budget: $T/bad-key.conf:3: unknown key \"restore_retries\" \\(known keys: store, state_dir, "
expect_true "check-config: the message is the first stderr line, exactly" \
	test "$(head -1 <<<"$ERR" | cut -d'(' -f1)" = "restore-budget: $T/bad-key.conf:3: unknown key \"restore_retries\" "
run "$CLI" check-config --json "$T/bad-type.conf"
expect_json "check-config --json: wrong type, exact file:line" 1 \
	'd["ok"] is False and d["error"].startswith("'"$T"'/bad-type.conf:3: max_failures = \"two\" has the wrong type: expected an integer")'
expect "check-config --json: the error also on stderr" 1 \
	"2>^restore-budget: $T/bad-type.conf:3: max_failures = \"two\" has the wrong type"
run "$CLI" check-config "$T/rules.conf"
expect "check-config: exit rules and the interruption cap in the summary" 0 \
	'^max_interruptions: +2$' '^exit_rules: +3,4 fatal; 75 ignore$'
run "$CLI" check-config --json "$T/rules.conf"
expect_json "check-config --json: exit rules and the interruption cap" 0 \
	'd["max_interruptions"] == 2 and d["exit_rules"] == [{"codes": [3, 4], "action": "fatal"}, {"codes": [75], "action": "ignore"}]'
run "$CLI" check-config "$T/bad-rule.conf"
expect "check-config: an exit code out of range, exact file:line" 1 '!.' \
	"2>^restore-budget: $T/bad-rule.conf:3: exit_rules\\[2\\].codes: 300 is out of range: exit codes are 0..255 "
run "$CLI" check-config "$T/missing.conf"
expect "check-config: missing file, exit 1" 1 "2>^restore-budget: $T/missing.conf: cannot read"
run "$CLI" check-config --json
expect_json "check-config --json: effective settings" 0 \
	'd["ok"] is True and d["path"] == "'"$T"'/rb.conf" and d["state_dir"] == "'"$T"'/state" and d["max_failures"] == 1 and d["restore_retry_num"] == 3 and d["restore_timeout"] == 0 and d["partitions"] == {"preempt": {"restore_retry_num": 2}} and d["accounts"] == {"ml-team": {"max_failures": 4}} and d["limits"]["max_failures"] == 10'
run "$CLI" --config "$T/bad-type.conf" show 101
expect "a bad --config fails every command with file:line, exit 1" 1 \
	"2>^restore-budget: $T/bad-type.conf:3: max_failures" '!.'
# requeue_exit against slurm.conf's RequeueExit (docs/rule.md, "The requeue code")
printf 'state_dir = "%s";\nrequeue_exit = 7;\n' "$T/state" >"$T/requeue.conf"
chmod 644 "$T/requeue.conf"
printf 'ClusterName=c\nRequeueExit=42,3\nRequeueExitHold=43\n' >"$T/rq-slurm.conf"
run env SLURM_CONF="$T/rq-slurm.conf" "$CLI" check-config "$T/requeue.conf"
expect "check-config: requeue_exit not in RequeueExit warns, names both files, exit 0" 0 \
	'^requeue_exit: +7$' \
	"2>^restore-budget: warning: requeue_exit = 7 in $T/requeue.conf is not in RequeueExit=42,3 of $T/rq-slurm.conf: .*set requeue_exit to one of 42,3, or add 7 to RequeueExit"
run env SLURM_CONF="$T/rq-slurm.conf" "$CLI" check-config --json "$T/requeue.conf"
expect_json "check-config --json: the requeue_exit warning too" 0 \
	'd["requeue_exit"] == 7 and len(d["warnings"]) == 1 and "RequeueExit=42,3" in d["warnings"][0]'
run env SLURM_CONF="$T/rq-slurm.conf" "$CLI" check-config
expect "check-config: requeue_exit unset defaults to the first of RequeueExit" 0 \
	"^requeue_exit: +42 \\(the first of RequeueExit=42,3 in $T/rq-slurm.conf\\)$"
run "$CLI" check-config --json "$T/requeue.conf"
expect_json "check-config --json: slurm.conf unreadable: requeue_exit, no warning" 0 \
	'd["requeue_exit"] == 7 and "warnings" not in d'
run "$CLI" check-config
expect "check-config: no requeue_exit, no RequeueExit: no line" 0 '!^requeue_exit'
if [ ! -e /etc/slurm/restore_budget.conf ]; then
	run env -u RESTORE_BUDGET_CONFIG "$CLI" check-config
	expect "check-config without a config file: built-in defaults" 0 \
		'^\(built-in defaults\): OK$' '^max_failures: +2$' \
		'^restore_retry_num: +3$' '2>does not exist'
fi

# ---- the plugstack.conf arguments (docs/rule.md, "Plugstack arguments") ---
mkdir -m 755 "$T/etc" "$T/etc/plugstack.conf.d"
printf 'ClusterName=c\n' >"$T/etc/slurm.conf"
printf '# the site stack\ninclude plugstack.conf.d/*.conf\n' >"$T/etc/plugstack.conf"
printf 'optional other.so max_failures=9\n\nrequired /usr/lib/slurm/restore_budget.so max_failures=3 exit_rules.fatal=3,4 partitions.preempt.max_failures=5 # a comment\n' \
	>"$T/etc/plugstack.conf.d/rb.conf"
PS=$T/etc/plugstack.conf.d/rb.conf
run env SLURM_CONF="$T/etc/slurm.conf" "$CLI" check-config
expect "check-config: plugstack.conf next to slurm.conf, include followed, arguments over the file, each setting's origin" 0 \
	"^$T/rb.conf and $PS:3 arguments: OK$" '^max_failures: +3$' \
	"^  max_failures=3 +argument \\($PS:3\\)$" \
	"^  restore_retry_num=3 +$T/rb.conf:4$" \
	"^  exit_rules.fatal=3,4 +argument \\($PS:3\\)$" \
	"^  partitions.preempt.max_failures=5 +argument \\($PS:3\\)$" \
	"^  partitions.preempt.restore_retry_num=2 +$T/rb.conf:6$" \
	'^  track=all +default$' '^  store=dir +default$'
run env SLURM_CONF="$T/etc/slurm.conf" "$CLI" check-config --json
expect_json "check-config --json: settings with origin and where" 0 \
	'd["max_failures"] == 3 and {"key": "max_failures", "value": "3", "origin": "argument", "where": "'"$PS"':3"} in d["settings"] and {"key": "restore_retry_num", "value": "3", "origin": "file", "where": "'"$T"'/rb.conf:4"} in d["settings"] and {"key": "track", "value": "all", "origin": "default"} in d["settings"]'
printf 'required restore_budget.so config=%s state_dir=%s max_failures=two\n' \
	"$T/rules.conf" "$T/state" >"$T/etc/other-stack.conf"
printf 'ClusterName=c\nPlugStackConfig=%s\n' "$T/etc/other-stack.conf" >"$T/etc/slurm2.conf"
run env -u RESTORE_BUDGET_CONFIG SLURM_CONF="$T/etc/slurm2.conf" "$CLI" check-config
expect "check-config: PlugStackConfig of slurm.conf; a bad argument names the line and the argument, exit 1" 1 '!.' \
	"2>^restore-budget: $T/etc/other-stack.conf:1: argument \"max_failures=two\": max_failures = \"two\" has the wrong type: expected an integer"
printf 'required restore_budget.so config=%s exit_rules.ignore=75\n' "$T/rules.conf" >"$T/etc/third-stack.conf"
run env -u RESTORE_BUDGET_CONFIG "$CLI" --plugstack "$T/etc/third-stack.conf" check-config
expect "check-config --plugstack: its config=PATH is the file, its exit rules replace the file's" 0 \
	"^$T/rules.conf and $T/etc/third-stack.conf:1 arguments: OK$" \
	'^exit_rules: +75 ignore$' '^max_interruptions: +2$'
run "$CLI" --plugstack "$T/etc/none.conf" check-config
expect "check-config --plugstack: a missing file, exit 1" 1 '!.' \
	"2>^restore-budget: $T/etc/none.conf: cannot read: No such file or directory \\(--plugstack\\)$"
cp "$T/etc/third-stack.conf" "$T/etc/writable-stack.conf"
chmod 664 "$T/etc/writable-stack.conf"
run "$CLI" --plugstack "$T/etc/writable-stack.conf" check-config
expect "check-config --plugstack: a line in a file others may change is refused, exit 1" 1 '!.' \
	"2>^restore-budget: $T/etc/writable-stack.conf: refusing the restore_budget.so line of a file others than root may change"
printf 'required restore_budget.so state_dir=%s\n' "$T/state" >"$T/etc/fourth-stack.conf"
run env -u RESTORE_BUDGET_CONFIG "$CLI" --plugstack "$T/etc/fourth-stack.conf" list
expect "list: state_dir from a plugstack argument alone (no config file)" 0 '^JOB' '^101 '

# ---- cluster name ----------------------------------------------------------
printf '# test\nSlurmctldHost=x\n  ClusterName = Alpha # ours\n' >"$T/slurm.conf"
run env SLURM_CONF="$T/slurm.conf" "$CLI" show 101
expect "cluster from slurm.conf ClusterName (lower-cased)" 3 \
	'2>no record on cluster alpha'
printf 'ClusterName=cluster\nClusterName=beta\n' >"$T/slurm2.conf"
run env SLURM_CONF="$T/slurm2.conf" "$CLI" show 101
expect "two ClusterName lines: the last wins, as in Slurm" 3 \
	'2>no record on cluster beta'
run env SLURM_CONF="$T/slurm.conf" SLURM_CLUSTER_NAME=cluster "$CLI" show 101
expect "\$SLURM_CLUSTER_NAME wins over slurm.conf" 0 '^job: +101$'
run env SLURM_CLUSTER_NAME=alpha "$CLI" --cluster cluster show 102
expect "--cluster wins over \$SLURM_CLUSTER_NAME" 0 '^job: +102$'

# ---- an untrusted state_dir ---------------------------------------------------
mkdir -m 777 "$T/open" "$T/open/cluster"
chmod 777 "$T/open"
sed "s|$T/state|$T/open|" "$T/rb.conf" >"$T/open.conf"
run "$CLI" --config "$T/open.conf" show 101
expect "a world-writable state_dir is refused: exit 1" 1 \
	"2>state_dir $T/open is owned by uid 0 with mode 0777" '!.'

# ---- as an unprivileged user --------------------------------------------------
# Who reads what (docs/security.md): root and the job's group, nobody else.
run runuser -u nobody -- "$CLI" show 101
expect "another user cannot read a job's budget: exit 1, the reason" 1 \
	"2>^restore-budget: job 101: .*/101.rec: not readable by you: a job's record and event log are readable by root and the job's group only$"
run setpriv --reuid=65534 --regid="$(stat -c %g "$S/101/101.rec")" --clear-groups -- "$CLI" show 101
expect "a member of the job's group reads its budget" 0 '^restores_left: +0$'
run runuser -u nobody -- "$CLI" list
expect "list as another user: other groups' jobs are not shown, not corrupt: exit 0" 0 \
	'2>records of other users. jobs not shown' '!^101 ' '!corrupt'
run runuser -u nobody -- "$CLI" grant 101 --failures 1
expect "grant as nobody: exit 4" 4 '2>^restore-budget: grant changes the ledger and needs root'
run runuser -u nobody -- "$CLI" gc --older-than 1
expect "gc as nobody: exit 4" 4 '2>^restore-budget: gc changes the ledger and needs root'
run runuser -u nobody -- "$CLI" grant 101
expect "usage errors come before permission: exit 2" 2 '2>grant needs --failures N'

# ---- grant ---------------------------------------------------------------------
run "$CLI" grant 101 --failures 0
expect "grant --failures 0: exit 2" 2 '2>--failures 0: expected a number from 1 to 1000000'
run "$CLI" grant 999 --failures 1
expect "grant to an unknown job: exit 3" 3 '2>job 999: no record'
expect_true "grant to an unknown job creates nothing" test ! -e "$S/999/999.log"
run env SUDO_USER=tester "$CLI" grant 101 --failures 1
expect "grant 101 --failures 1 as root" 0 \
	'^job 101: granted 0 -> 1; failures F/M 2/1\+1, restores_left 2, exhausted no$' \
	'^job 101: attempt 5 was refused; requeue the job \(scontrol requeue 101\)'
run "$CLI" show 101
expect "show after grant: new budget" 0 '^granted: +1$' '^failures F/M: +2/1\+1$' \
	'^restores_left: +2$' '^exhausted: +yes \(attempt 5 was refused; a grant since leaves budget'
run "$CLI" explain 101
expect "explain after grant: who granted what" 0 \
	"${TS}attempt 5 +grant +extra failures granted 0->1 by tester$"
run "$CLI" explain 101 --json
expect_json "explain --json: grant event" 0 \
	'd["events"][-1]["kind"] == "grant" and d["events"][-1]["granted"] == {"before": 0, "after": 1} and d["events"][-1]["by"] == "tester"'

# ---- gc ------------------------------------------------------------------------
run "$CLI" gc
expect "gc without --older-than: exit 2" 2 '2>gc needs --older-than DAYS'
run "$CLI" gc --older-than 30 --dry-run
expect "gc --dry-run: names what it would remove, removes nothing" 0 \
	'^would remove job 105 \(user bob, state ended, updated ' \
	'^kept job 106: attempt 0 has no end on record' \
	'^gc: would remove 1 of 6 records not updated for 30 days; kept 1 with an attempt in progress$' \
	'!^would remove job 10[1-46]'
expect_true "gc --dry-run left the record" test -e "$S/105/105.rec"
run "$CLI" gc --older-than 30
expect "gc --older-than 30: removes the old record" 0 '^removed job 105 ' \
	'^gc: removed 1 of 6 records' '!^removed job 10[1-46]'
run "$CLI" show 105
expect "gc'd job is gone: exit 3" 3 '2>job 105: no record'
expect_true "gc removed the record and the log" \
	test ! -e "$S/105/105.rec" -a ! -e "$S/105/105.log"
# Job 106's attempt has no end. A squeue that lists it: running; one that
# lists nothing: Slurm no longer knows the job, its end was lost
# (docs/architecture.md, "An end not written"); show says so, gc removes it.
mkdir -m 755 "$T/slurmbin"
echo "ClusterName=cluster" >"$T/slurm.conf"
printf '#!/bin/sh\necho 106\n' >"$T/slurmbin/squeue"
chmod 755 "$T/slurmbin/squeue"
SQ=(env SLURM_CONF="$T/slurm.conf" RESTORE_BUDGET_SLURM_BINDIR="$T/slurmbin")
run "${SQ[@]}" "$CLI" show 106
expect "show: Slurm lists the job: no end recorded, running" 0 \
	'^ *ended: +no end recorded \(running, or its node died\)$'
printf '#!/bin/sh\nexit 0\n' >"$T/slurmbin/squeue"
run "${SQ[@]}" "$CLI" show 106
expect "show: Slurm no longer lists the job: its end was lost" 0 \
	'^ *ended: +its end was lost: no end recorded, and Slurm no longer lists the job$'
run "${SQ[@]}" "$CLI" show 106 --json
expect_json "show --json: end_lost, state ended" 0 \
	'd["end_lost"] is True and d["state"] == "ended"'
run "${SQ[@]}" "$CLI" gc --older-than 30 --dry-run
expect "gc: a job Slurm no longer lists ended: removable" 0 \
	'^job 106: attempt 0 has no end on record, and Slurm no longer lists the job: it ended$' \
	'^would remove job 106 '
run "$CLI" gc --older-than 30 --force
expect "gc --force removes an old record with no end" 0 '^removed job 106 ' \
	'^gc: removed 1 of 5 records'

# ---- a corrupt record ----------------------------------------------------------
mk clean 107
echo "failures=0" >>"$S/107/107.rec"
run "$CLI" list
expect "list: a corrupt record is listed and exits 1" 1 \
	'^107 +corrupt: .*107\.rec: corrupt record: 11 unexpected bytes after the checksum line$' \
	'^101 +alice ' '2>1 record could not be read'
run "$CLI" list --json
expect_json "list --json: corrupt records reported" 1 \
	'd["corrupt"][0]["job_id"] == 107 and "corrupt record" in d["corrupt"][0]["corrupt"] and 101 in [j["job_id"] for j in d["jobs"]]'
run "$CLI" show 107
expect "show a corrupt record: exit 1" 1 '2>^restore-budget: job 107: .*corrupt record' '!.'
run "$CLI" gc --older-than 0 --dry-run
expect "gc keeps a corrupt record and exits 1" 1 '2>job 107: .*\(kept\)' \
	'kept 1 unreadable' '!job 107'

# ---- an untrusted state_dir is refused, never reported empty ---------------------
mkdir -m 777 "$T/open-state"
printf 'state_dir = "%s";\n' "$T/open-state" >"$T/open.conf"
chmod 644 "$T/open.conf"
for c in "list" "gc --older-than 0" "gc --older-than 0 --dry-run" "metrics" "list --json"; do
	# shellcheck disable=SC2086
	run "$CLI" --config "$T/open.conf" $c
	expect "$c on a world-writable state_dir: refused, exit 1" 1 \
		'2>state_dir .*/open-state is owned by uid 0 with mode 0777; it must be owned by root and not writable by group or others' \
		'!removed 0 of 0'
done
chown nobody "$T/open-state"; chmod 755 "$T/open-state"
run "$CLI" --config "$T/open.conf" list
expect "list on a state_dir owned by a user: refused, exit 1" 1 \
	'2>state_dir .*/open-state is owned by uid [0-9]+ with mode 0755'

# ---- metrics (its own cluster in the same state_dir) ------------------------------
. tests/cli/metrics.sh

# ---- job arrays (their own cluster too) -------------------------------------------
. tests/cli/arrays.sh

# ---- explain on a folded event log (its own cluster too) -------------------------
. tests/cli/folded.sh

echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
