#!/bin/bash
# test_clean.sh - a trial that is never interrupted: it completes, nothing is
# charged, and it sees every RESTORE_BUDGET_* variable (docs/rule.md,
# "What the job sees").
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 2;
restore_retry_num = 3;
restore_timeout = 0;' || { fail "cluster up"; summary; }
rb_workdir clean >/dev/null

j=$(TRIAL_STEPS=3 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch trial"; summary; }
out=$RB_WORKDIR/trial-$j.out
check "job $j completes" wait_state "$j" COMPLETED 60
expect "ExitCode" "$(job_field "$j" ExitCode)" "0:0"
expect "Restarts" "$(job_field "$j" Restarts)" "0"
expect "attempts that ran" "$(out_attempts "$out" | tr '\n' ' ')" "0 "

# Every variable of docs/rule.md, "What the job sees", printed by trial.sh.
for v in ATTEMPT PHASE CHECKPOINT FAILURES MAX_FAILURES RESTORE_FAILURES \
         RESTORE_RETRY_NUM RESTORES_LEFT LAST_END ACK_FILE; do
    checkq "RESTORE_BUDGET_$v present in the job's environment" out_var "$out" 0 "RESTORE_BUDGET_$v"
done
expect "ATTEMPT" "$(out_var "$out" 0 RESTORE_BUDGET_ATTEMPT)" 0
expect "PHASE" "$(out_var "$out" 0 RESTORE_BUDGET_PHASE)" FRESH
expect "CHECKPOINT (none yet)" "$(out_var "$out" 0 RESTORE_BUDGET_CHECKPOINT)" ""
expect "FAILURES" "$(out_var "$out" 0 RESTORE_BUDGET_FAILURES)" 0
expect "MAX_FAILURES" "$(out_var "$out" 0 RESTORE_BUDGET_MAX_FAILURES)" 2
expect "RESTORE_FAILURES" "$(out_var "$out" 0 RESTORE_BUDGET_RESTORE_FAILURES)" 0
expect "RESTORE_RETRY_NUM" "$(out_var "$out" 0 RESTORE_BUDGET_RESTORE_RETRY_NUM)" 3
expect "RESTORES_LEFT = (M+1-F)*R-r = 9" "$(out_var "$out" 0 RESTORE_BUDGET_RESTORES_LEFT)" 9
expect "LAST_END" "$(out_var "$out" 0 RESTORE_BUDGET_LAST_END)" none
ack=$(out_var "$out" 0 RESTORE_BUDGET_ACK_FILE)
expect "ACK_FILE path set (in the job's checkpoint dir, not under state_dir)" "$ack" "$(rb_ack_path_of "$j" 0)"
check "ack file's directory exists and belongs to the job's user" \
    test "$(stat -c %U "$(dirname "$ack")" 2>/dev/null)" = "$RB_USER"
check "nothing under state_dir belongs to the job's user" \
    test -z "$(find "$RB_STATE" -user "$RB_USER" -print -quit)"
check "trial completed its steps" grep -q "trial\[$j.0\]: done: 3 steps" "$out"
check "no refusal in the job's output" bash -c "! grep -qi 'refused' '$out'"

# The ledger: nothing charged.
rec=$(rb_rec_path "$j")
check "ledger record $rec exists" test -s "$rec"
for kv in failures=0 restore_failures=0 failures_total=0 restore_failures_total=0 \
          interruptions=0 exhausted=false cur.attempt=0 cur.phase=FRESH \
          cur.end=completed cur.refused=false cur.limits.max_failures=2 \
          cur.limits.restore_retry_num=3; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done
expect "one start event" "$(ev_lines "$j" start | wc -l)" 1
expect "start: decision" "$(ev_get "$j" start 0 decision)" run
expect "start: charge" "$(ev_get "$j" start 0 charge)" none
expect "report: phase" "$(ev_get "$j" report 0 phase)" FRESH
expect "end: end" "$(ev_get "$j" end 0 end)" completed
check "slurmd.log: prolog logged attempt 0" \
    grep -q "restore_budget: job $j attempt 0: " "$RB_CLUSTER_DIR/log/slurmd.log"

# The variables reach the job's steps too (docs/rule.md, "What the job
# sees": "the batch script and its steps").
j2=$(submit_as_user -p low -o step-%j.out --wrap 'srun printenv RESTORE_BUDGET_ATTEMPT RESTORE_BUDGET_PHASE') ||
    fail "sbatch step job"
check "step job $j2 completes" wait_state "$j2" COMPLETED 60
expect "srun step sees ATTEMPT and PHASE" "$(tr '\n' ' ' <"$RB_WORKDIR/step-$j2.out")" "0 FRESH "

measure "attempts=1 duration=$((SECONDS - T0))s"
rb_final_checks
summary
