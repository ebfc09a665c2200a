#!/bin/bash
# test_controller_history.sh - store = "controller" with accounting: a
# private slurmdbd and MariaDB (RB_ACCOUNTING=1, contrib/cluster/accounting.sh).
# `sacct -D` keeps one row per run, each with the AdminComment that run
# ended with, so `restore-budget explain` tells a finished job's history:
# a corrupt-checkpoint trial (M=0, R=2) preempted once; its restores fail
# (exit 42); attempt 3 is refused (FAILED).  explain (text and JSON) shows
# the four runs in order: attempt 0 ended by the controller, attempts 1 and
# 2 failed:42 while RESTORING, attempt 3 refused.  Without accounting,
# explain says plainly that only the current run is known.  `list` gives
# the job once while the controller holds it, and from accounting once the
# controller has forgotten it (slurmctld -c).
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
CLI=$RB_ROOT/build/restore-budget

RB_ACCOUNTING=1 rb_cluster_up 'store = "controller";
max_failures = 0;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "cluster up (with slurmdbd)"; summary; }
cli() { "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" "$@"; }

rb_workdir history >/dev/null
j=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "job $j wrote 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
checkq "job $j preempted" preempt "$j" 30
check "job $j ends" wait_state "$j" 'FAILED|COMPLETED|CANCELLED' 120
expect "job $j: FAILED" "$(job_field "$j" JobState)" FAILED
# slurmdbd may take a moment to store the last row
for _ in $(seq 1 50); do
    [[ $(timeout 10 sacct -n -D -X -P -j "$j" -o JobID 2>/dev/null | grep -c "^$j\$") -ge 4 ]] && break
    sleep 0.2
done
e=$(cli explain "$j")
rb_log "explain:
$e"
rows=$(grep -E '^[0-9]+ ' <<<"$e")
expect "explain: four runs" "$(wc -l <<<"$rows")" 4
expect_match "run 1: attempt 0, ended by the controller" "$(sed -n 1p <<<"$rows")" '^1 +(PREEMPTED|REQUEUED) +[0-9:]+ +0 +FRESH +none +none \(the controller ended it\)'
expect_match "run 2: attempt 1 failed:42 while RESTORING" "$(sed -n 2p <<<"$rows")" '^2 +REQUEUED +42:0 +1 +RESTORING +none +failed:42 '
expect_match "run 3: attempt 2 failed:42" "$(sed -n 3p <<<"$rows")" '^3 +REQUEUED +42:0 +2 +RESTORING +none +failed:42 '
expect_match "run 4: attempt 3 refused" "$(sed -n 4p <<<"$rows")" '^4 +FAILED +1:0 +3 .* refused$'
as_user "$CLI" --config "$RB_CONF" explain --json "$j" | python3 -c '
import json, sys
d = json.load(sys.stdin)
runs = d["runs"]
assert [r["record"]["attempt"] for r in runs] == [0, 1, 2, 3], runs
assert runs[3]["record"]["exhausted"] is True, runs[3]
assert runs[1]["state"] == "REQUEUED" and runs[1]["exit_code"] == "42:0", runs[1]
' && pass "explain --json as the job's user: attempts 0..3, the last exhausted" || fail "explain --json"
# list: the controller's jobs, then accounting's the controller no longer
# holds; a job both keep is listed once
l=$(cli list)
expect "list: job $j once (the controller and accounting both keep it)" "$(grep -Ec "^$j +" <<<"$l")" 1
checkq "slurmctld started again with no state (-c): it forgets job $j" rb_restart_ctld TERM -c
expect "squeue no longer lists job $j" "$(timeout 10 squeue -h --states=all -j "$j" -o %i 2>/dev/null)" ""
l=$(as_user "$CLI" --config "$RB_CONF" list --state exhausted 2>&1)
check "list as the user: job $j from accounting, attempt 3, exhausted" grep -Eq "^$j +$RB_USER +3 +exhausted " <<<"$l"
l=$(cli list --json "$j")
python3 -c '
import json, sys
d = json.loads(sys.argv[2])
assert [(x["job_id"], x["attempt"], x["state"]) for x in d["jobs"]] == [(int(sys.argv[1]), 3, "exhausted")], d
' "$j" "$l" && pass "list --json $j: from accounting alone" || fail "list --json $j: $l"
measure "duration=$((SECONDS - T0))s"
rb_final_checks
cluster_down
trap - EXIT

# without accounting
rb_cluster_up 'store = "controller";' || { fail "cluster up (no accounting)"; summary; }
j=$(submit_as_user -p low -o /dev/null --wrap true) || { fail "sbatch"; summary; }
check "job $j completes" wait_state "$j" COMPLETED 60
e=$("$CLI" --config "$RB_CONF" explain "$j" 2>&1)
expect "explain without accounting: exit 3" "$?" 3
expect_match "explain without accounting says so" "$e" 'keeps no accounting .*: no run but the current one is known'
rb_final_checks
summary
