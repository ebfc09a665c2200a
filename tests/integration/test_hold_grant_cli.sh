#!/bin/bash
# test_hold_grant_cli.sh - on_exhausted = "hold" on real Slurm, and every
# restore-budget command on the ledgers real jobs wrote:
#   a trial with a corrupt checkpoint (M=0, R=1) is preempted once, its
#   restore fails (exit 42, RequeueExit), and the attempt that would be
#   refused is instead requeued held with the reason in AdminComment;
#   `restore-budget grant` (root only) + `scontrol release` let it continue
#   with the same checkpoint; show/explain/list/metrics (text and JSON), gc.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
CLI=$RB_ROOT/build/restore-budget

rb_cluster_up 'max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;
on_exhausted = "hold";' || { fail "cluster up"; summary; }
cli() { "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" "$@"; }

rb_workdir hold >/dev/null
j=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "job $j wrote 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
checkq "job $j preempted" preempt "$j" 30
# attempt 1 restores and fails (42); the prolog of attempt 2 holds the job
check "job $j: held attempt recorded" wait_ev "$j" 'kind=start attempt=2 decision=refuse' 90
held=0
for _ in $(seq 1 100); do
    [[ $(job_field "$j" JobState) == PENDING && $(job_field "$j" Priority) == 0 ]] && { held=1; break; }
    sleep 0.3
done
expect "job $j is held (PENDING, Priority=0)" "$held" 1
expect "job $j: Reason" "$(job_field "$j" Reason)" job_requeued_in_held_state
adm=$(scontrol -o show job "$j" | grep -o 'AdminComment=.*budget exhausted')
expect_match "job $j: AdminComment names the reason" "$adm" \
    'AdminComment=restore_budget: held: restore 1 of 1 failed \(attempt 1\): failures 1 > max_failures 0: budget exhausted'
check "job $j: the held attempt never ran the script" bash -c "! grep -q '^trial\[$j\.2\]' '$out'"
checkpoint=$(rec_get "$j" checkpoint)
check "job $j: a checkpoint is on record" test -n "$checkpoint"

# --- the CLI on this real ledger -------------------------------------------------
s=$(cli show "$j")
expect_match "show: exhausted" "$s" 'exhausted: *yes'
expect_match "show: failures 1 of 0" "$s" 'failures F/M: *1/0'
expect_match "show: checkpoint" "$s" "checkpoint: *$checkpoint"
cli show --json "$j" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["job_id"] == int(sys.argv[1]), d
assert d["failures"] == 1 and d["exhausted"] is True, d
' "$j" && pass "show --json: failures 1, exhausted" || fail "show --json"
e=$(cli explain "$j")
expect "explain: one start line per attempt 0..2" "$(grep -c ' start ' <<<"$e")" 3
expect_match "explain: attempt 2 refused with the rule" "$e" \
    'attempt 2 +start +REFUSED; charged attempt 1 \(ended failed:42 while RESTORING\)'
expect_match "explain: attempt 0 preempted" "$e" 'attempt 0 +end +interrupted \(preempted\)'
cli explain --json "$j" | python3 -c 'import json,sys; ev=json.load(sys.stdin)["events"]; assert len(ev) >= 7, len(ev)' &&
    pass "explain --json parses" || fail "explain --json"
check "list --exhausted names the job" grep -qE "^ *$j +rbuser +2 +exhausted" <<<"$(cli list --exhausted)"
m=$(cli metrics)
check "metrics: one exhausted job" grep -qx "restore_budget_jobs_exhausted{cluster=\"$RB_CLUSTER_NAME_USED\"} 1" <<<"$m"
check "metrics: one restore failure" grep -qx "restore_budget_restore_failures_total{cluster=\"$RB_CLUSTER_NAME_USED\"} 1" <<<"$m"

# --- grant: root only; then release ----------------------------------------------
as_user "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" grant "$j" --failures 1 >/dev/null 2>&1
expect "grant as $RB_USER is refused (exit 4)" "$?" 4
expect "the user's grant changed nothing" "$(rec_get "$j" granted)" 0
check "grant as root" cli grant "$j" --failures 1
expect "granted is on record" "$(rec_get "$j" granted)" 1
check "grant is in the event log" wait_ev "$j" 'kind=grant .*granted=0->1' 5
checkq "scontrol release $j" scontrol release "$j"
check "job $j: attempt 3 restores after the release" wait_grep "$out" "^trial\[$j\.3\]: restoring from $checkpoint\$" 90
expect "attempt 3 sees max_failures 0+1" "$(out_var "$out" 3 RESTORE_BUDGET_MAX_FAILURES)" 1
expect "attempt 3 is handed the same checkpoint" "$(out_var "$out" 3 RESTORE_BUDGET_CHECKPOINT)" "$checkpoint"
# its restore fails again: F = 2 > 0 + 1, held again at attempt 4
check "job $j: held again at attempt 4" wait_ev "$j" 'kind=start attempt=4 decision=refuse' 90
expect "failures counted across the grant" "$(rec_get "$j" failures)" 2

# --- gc: a held job's record is kept unless forced ---------------------------------
g=$(cli gc --older-than 0 --dry-run 2>&1)
check "gc --dry-run removes nothing" test -f "$(rb_rec_path "$j")"
rb_log "gc --dry-run: $g"
scancel "$j"; wait_state "$j" CANCELLED 30 >/dev/null
measure "held_attempts=2 duration=$((SECONDS - T0))s"
rb_final_checks
summary
