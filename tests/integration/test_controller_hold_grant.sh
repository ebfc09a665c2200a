#!/bin/bash
# test_controller_hold_grant.sh - store = "controller" with on_exhausted =
# "hold", and the restore-budget commands on the AdminComment line real jobs
# wrote (docs/stores.md): a trial with a corrupt checkpoint (M=0, R=1) is
# preempted once, its restore fails (exit 42, RequeueExit), and attempt 2 is
# requeued held; `show` (text and JSON, as its user too) reads the line;
# `grant` as the user is refused, as root rewrites the line; after
# `scontrol release` attempt 3 runs on the granted budget and is held again
# at attempt 4; `gc` has nothing to collect; `list` says what to use; once
# the job has ended, `grant` is refused.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
CLI=$RB_ROOT/build/restore-budget

rb_cluster_up 'store = "controller";
max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;
on_exhausted = "hold";' || { fail "cluster up"; summary; }
cli() { "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" "$@"; }
line() { timeout 10 squeue -h --states=all -j "$1" -O admin_comment:0 | sed -n 's/^restore_budget\[state\]: //p' | tr ' ' '\n' | sed -n "s/^$2=//p"; }

rb_workdir hold >/dev/null
j=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "job $j wrote 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
checkq "job $j preempted" preempt "$j" 30
check "job $j is held at attempt 2" wait_held "$j" 90
expect "job $j: Reason" "$(job_field "$j" Reason)" job_requeued_in_held_state
expect "the line: attempt 2, refused, F=1" "$(line "$j" a) $(line "$j" rf) $(line "$j" F)" "2 1 1"
check "the reason line is there too" bash -c "squeue -h --states=all -j $j -O admin_comment:0 | grep -q '^restore_budget: held: restore 1 of 1 failed'"
checkpoint=$(line "$j" ck)
check "a checkpoint is on the line" test -n "$checkpoint"

s=$(cli show "$j")
expect_match "show: exhausted" "$s" 'exhausted: *yes'
expect_match "show: failures 1 of 0" "$s" 'failures F/M: *1/0'
expect_match "show: the user and partition" "$s" 'rbuser'
s=$(as_user "$CLI" --config "$RB_CONF" show --json "$j")
python3 -c '
import json, sys
d = json.loads(sys.argv[2])
assert d["job_id"] == int(sys.argv[1]), d
assert d["failures"] == 1 and d["exhausted"] is True, d
' "$j" "$s" && pass "show --json as the job's user: failures 1, exhausted" || fail "show --json as the user: $s"
g=$(cli gc --older-than 0 2>&1)
expect_match "gc: nothing to collect" "$g" 'store = "controller": nothing to collect'
l=$(as_user "$CLI" --config "$RB_CONF" list --state exhausted 2>&1)
expect "list --state exhausted as the user: exit 0" "$?" 0
check "list: the held job at attempt 2, exhausted" grep -Eq "^$j +$RB_USER +2 +exhausted " <<<"$l"
m=$(cli metrics 2>&1)
check "metrics: one job exhausted" grep -Eq '^restore_budget_jobs_exhausted\{cluster="[^"]*"\} 1$' <<<"$m"

as_user "$CLI" --config "$RB_CONF" grant "$j" --failures 1 >/dev/null 2>&1
expect "grant as $RB_USER is refused (exit 4)" "$?" 4
expect "the user's grant changed nothing" "$(line "$j" g)" 0
check "grant as root" cli grant "$j" --failures 1
expect "granted is on the line" "$(line "$j" g)" 1
checkq "scontrol release $j" scontrol release "$j"
check "job $j: attempt 3 restores after the release" wait_grep "$out" "^trial\[$j\.3\]: restoring from $checkpoint\$" 90
expect "attempt 3 sees max_failures 0+1" "$(out_var "$out" 3 RESTORE_BUDGET_MAX_FAILURES)" 1
check "job $j: held again at attempt 4" wait_held "$j" 90
for _ in $(seq 1 50); do [[ $(line "$j" a) == 4 ]] && break; sleep 0.2; done
expect "the line: attempt 4, F=2 across the grant" "$(line "$j" a) $(line "$j" F) $(line "$j" g)" "4 2 1"
checkq "scancel $j" scancel "$j"
check "job $j ends" wait_state "$j" CANCELLED 30
g=$(cli grant "$j" --failures 1 2>&1)
expect "grant of an ended job: exit 1" "$?" 1
expect_match "grant of an ended job says so" "$g" 'has ended'
expect "state_dir holds nothing" "$(find "$RB_STATE" -mindepth 1 2>/dev/null | head -n 3)" ""
measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
