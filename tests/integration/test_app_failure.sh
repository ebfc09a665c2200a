#!/bin/bash
# test_app_failure.sh - an application failure after a confirmed restore
# (TRIAL_FAIL_AFTER_ACK=42: ack, then exit 42 = RequeueExit) is one failure
# (F += 1), never a restore failure (r stays 0).  With M=1 the second such
# failure exhausts the budget after 2 restore attempts (a corrupt checkpoint
# would have had R x (M+1) = 4).
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
M=1 R=2

rb_cluster_up "max_failures = $M;
restore_retry_num = $R;
restore_timeout = 0;" || { fail "cluster up"; summary; }
rb_workdir appfail >/dev/null

j=$(TRIAL_FAIL_AFTER_ACK=42 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "attempt 0 wrote 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
checkq "attempt 0 preempted" preempt "$j" 30

# attempt 1: restores, acks, exits 42 -> requeued by RequeueExit
checkq "attempt 1 acknowledged its restore" wait_grep "$out" "^trial\[$j\.1\]: acknowledged restore" 60
checkq "attempt 1 exited 42" wait_grep "$out" "^trial\[$j\.1\]: TRIAL_FAIL_AFTER_ACK: exiting 42" 30
checkq "attempt 2 started" wait_ev "$j" " kind=start attempt=2 " 60
expect "attempt 1's end" "$(ev_get "$j" end 1 end)" failed:42
expect "attempt 1 confirmed by" "$(ev_get "$j" end 1 confirmed)" ack
expect "attempt 2's start: charge" "$(ev_get "$j" start 2 charge)" failure
expect "attempt 2's start: charged phase" "$(ev_get "$j" start 2 charged_phase)" RUNNING
expect_match "attempt 2's start: charged end" "$(ev_get "$j" start 2 charged_end)" '^failed'
expect "one failure: failures" "$(ev_get "$j" start 2 failures)" "0->1"
expect "no restore failure: restore_failures" "$(ev_get "$j" start 2 restore_failures)" "0->0"
expect "attempt 2 runs" "$(ev_get "$j" start 2 decision)" run
checkq "attempt 2 printed its environment" wait_grep "$out" "^trial\[$j\.2\]: restoring from" 30
expect "attempt 2: FAILURES" "$(out_var "$out" 2 RESTORE_BUDGET_FAILURES)" 1
expect "attempt 2: RESTORE_FAILURES" "$(out_var "$out" 2 RESTORE_BUDGET_RESTORE_FAILURES)" 0
expect "attempt 2: RESTORES_LEFT" "$(out_var "$out" 2 RESTORE_BUDGET_RESTORES_LEFT)" "$(((M + 1 - 1) * R))"
expect "attempt 2: LAST_END" "$(out_var "$out" 2 RESTORE_BUDGET_LAST_END)" failed:42

# attempt 2 fails the same way: F=2 > M=1, attempt 3 is refused
check "job ends" wait_state "$j" 'FAILED|COMPLETED|CANCELLED' 90
expect "JobState" "$(job_field "$j" JobState)" FAILED
expect "ExitCode" "$(job_field "$j" ExitCode)" "1:0"
expect "Restarts" "$(job_field "$j" Restarts)" 3
check_attempts_recorded "$j" 3
expect "restore attempts made" "$(grep -c "^trial\[$j\.[0-9]*\]: restoring from" "$out")" 2
expect "attempt 3: charge" "$(ev_get "$j" start 3 charge)" failure
expect "attempt 3: decision" "$(ev_get "$j" start 3 decision)" refuse
msg=$(grep -m1 'refused' "$out")
for part in "F=2" "M=$M" "r=0" "R=$R" "$RB_CONF"; do
    check "refusal names '$part'" grep -qF -- "$part" <<<"$msg"
done
for kv in failures=2 restore_failures=0 restore_failures_total=0 failures_total=2 exhausted=true cur.refused=true; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done
expect "no restore failure ever charged" "$(ev_count "$j" ' charge=restore_failure')" 0
measure "attempts=4 restore_attempts=2 failures=2 refused_attempt=3 duration=$((SECONDS - T0))s"
rb_final_checks
summary
