# shellcheck shell=bash
# tests/cli/folded.sh - `restore-budget explain` on a folded event log,
# sourced by tests/cli/run.sh (its $T, $CLI, $TS, run, expect, expect_json,
# expect_true and the mkledger driver). Its own cluster, so that list and
# metrics elsewhere count what they expect.
#
# mkledger's "requeued" job: 200 self-requeued attempts with 1 KB
# checkpoint paths, a failure at attempt 10, a grant of 2 at attempt 50.
# Its log crossed the 64 KiB cap (docs/architecture.md, "The ledger"): the
# older attempts are one summary line, and explain's totals are the record's.

FC=folded
TMPDIR=$T "$MKLEDGER" "$T/rb.conf" $FC requeued 120 ||
	{ echo "cli: mkledger requeued failed" >&2; exit 2; }
FLOG=$T/state/$FC/120/120.log

expect_true "folded: the 200-attempt log is within the 64 KiB cap" \
	test "$(stat -c %s "$FLOG")" -le 65536
expect_true "folded: one summary line, first" \
	test "$(grep -c ' kind=folded ' "$FLOG")" = 1 -a \
	"$(head -n 1 "$FLOG" | grep -c ' kind=folded attempts=0-')" = 1
expect_true "folded: each kept attempt names its checkpoint once" \
	test "$(grep -c 'xxxx-199 ' "$FLOG")" = 1

run "$CLI" --cluster $FC explain 120
expect "folded: explain shows the summary as one line, then the attempts kept" 0 \
	"${TS}attempts 0-[0-9]+ folded: [0-9]+ events; [0-9]+ starts \(0 refused\), [0-9]+ ends \([0-9]+ interrupted, 1 failed, 0 completed\), 1 grants; charged: failures 1 \(fatal exit codes 0\), restore failures 0, interruptions [0-9]+; granted 2; checkpoints handed out [0-9]+, newest /home/erin/run/ckpt/x+-[0-9]+ \([0-9]+ named, [0-9]+ not kept\)$" \
	"${TS}attempt 199 +report +phase RUNNING, checkpoint /home/erin/run/ckpt/x+-199$" \
	'^totals, as the record counts them: failures charged 1 \(fatal exit codes 0\), restore failures 0, interruptions 198, granted 2$'
first=$(sed -n 1p <<<"$OUT")
second=$(sed -n 2p <<<"$OUT")
kept=$(sed -nE 's/^.*  attempt ([0-9]+) +start .*$/\1/p' <<<"$second")
expect_true "folded: the line after the summary starts the attempt after its range" \
	test -n "$kept" -a "$(sed -nE 's/^.*attempts 0-([0-9]+) folded.*$/\1/p' <<<"$first")" = "$((kept - 1))"

run "$CLI" --cluster $FC show 120 --json
# the record's totals and grant, as explain --json would name them
WANT=$(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
t = r["totals"]
print(json.dumps({"failures_total": t["failures"], "fatal_exits": t["fatal_exits"],
                  "restore_failures_total": t["restore_failures"],
                  "interruptions": t["interruptions"], "granted": r["granted"]}))' "$OUT")
run "$CLI" --cluster $FC explain 120 --json
expect_json "folded: explain --json: the summary typed, first, and the totals are the record's" 0 \
	'd["events"][0]["kind"] == "folded" and d["events"][0]["attempts"]["first"] == 0 and d["events"][0]["attempts"]["last"] + 1 == [e for e in d["events"] if e["kind"] == "start"][0]["attempt"] and isinstance(d["events"][0]["starts"], int) and len(d["events"][0]["checkpoints"]) >= 1 and d["events"][0]["checkpoints"][-1].startswith("/home/erin/run/ckpt/x") and d["torn_lines"] == 0 and d["totals"] == '"$WANT"' and d["totals"]["interruptions"] == 198 and d["events"][0]["refused_attempt"] == -1'
