#!/bin/bash
# test_interruption_cap.sh - max_interruptions on real Slurm (docs/rule.md,
# "Interruption cap"):
#   A: max_interruptions = 2; a trial is preempted twice and requeued once
#      by the admin (scontrol requeue): the fourth attempt is refused naming
#      the cap, with no failure charged; RESTORE_BUDGET_INTERRUPTIONS and
#      _MAX_INTERRUPTIONS tell the job where it stands.
#   B: on_exhausted = "hold" and the job's own --max-interruptions=0: one
#      requeue, and the next attempt is held with the cap in AdminComment.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
CLI=$RB_ROOT/build/restore-budget
BASE='max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;
max_interruptions = 2;
limits = { max_interruptions = 5; };'

rb_cluster_up "$BASE" || { fail "cluster up"; summary; }
cli() { "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" "$@"; }

# ---- A: three interruptions, the fourth attempt refused -------------------------------
rb_workdir cap >/dev/null
j=$(TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "A: sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "A: attempt 0 wrote a checkpoint" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 1\$" 60
checkq "A: attempt 0 preempted" preempt "$j" 30
checkq "A: attempt 1 acknowledged its restore" wait_grep "$out" "^trial\[$j\.1\]: acknowledged restore" 60
expect "A: attempt 1 sees INTERRUPTIONS 1" "$(out_var "$out" 1 RESTORE_BUDGET_INTERRUPTIONS)" 1
expect "A: attempt 1 sees MAX_INTERRUPTIONS 2" "$(out_var "$out" 1 RESTORE_BUDGET_MAX_INTERRUPTIONS)" 2
checkq "A: attempt 1 preempted" preempt "$j" 30
checkq "A: attempt 2 acknowledged its restore" wait_grep "$out" "^trial\[$j\.2\]: acknowledged restore" 60
expect "A: attempt 2 sees INTERRUPTIONS 2" "$(out_var "$out" 2 RESTORE_BUDGET_INTERRUPTIONS)" 2
expect "A: start 2 runs (2 interruptions, not more than 2)" "$(ev_get "$j" start 2 decision)" run
check "A: admin scontrol requeue (attempt 2)" timeout 10 scontrol requeue "$j"
check "A: attempt 3 refused in the ledger" wait_ev "$j" 'kind=start attempt=3 decision=refuse' 90
check "A: job $j ends FAILED (refused)" wait_state "$j" FAILED 60
expect "A: ExitCode" "$(job_field "$j" ExitCode)" "1:0"
check_attempts_recorded "$j" 3 "A: job $j"
expect "A: start 3: the reason names the cap" "$(ev_get "$j" start 3 reason)" \
    "interruptions%203%20>%20max_interruptions%202:%20budget%20exhausted"
expect "A: start 3: nothing charged" "$(ev_get "$j" start 3 failures)" "0->0"
expect "A: start 3: max_interruptions in the limits" "$(ev_get "$j" start 3 max_interruptions)" 2
check "A: the refusal names the cap in the job's output" \
    wait_grep "$out" "restore_budget: job $j attempt 3 refused: interruptions 3 > max_interruptions 2 \(limits from " 10
expect "A: attempts whose script ran" "$(out_attempts "$out" | tr '\n' ' ')" "0 1 2 "
for kv in interruptions=3 failures=0 restore_failures=0 interruption_cap_refusals=1 exhausted=true cur.limits.max_interruptions=2; do
    expect "A: record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done
expect_match "A: show names the cap" "$(cli show "$j")" \
    'exhausted: +yes \(attempt 3 was refused: interruptions 3 > max_interruptions 2\)'
check "A: metrics count the refusal" grep -qx \
    "restore_budget_interruption_cap_refusals_total{cluster=\"$RB_CLUSTER_NAME_USED\"} 1" <<<"$(cli metrics)"

# ---- B: the job's own cap, held ---------------------------------------------------------
check "B: config switched to on_exhausted = hold" rb_write_config "$BASE
on_exhausted = \"hold\";"
rb_workdir hold >/dev/null
jb=$(TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low --max-interruptions=0 \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "B: sbatch"; summary; }
outb=$RB_WORKDIR/trial-$jb.out
checkq "B: attempt 0 wrote a checkpoint" wait_grep "$outb" "^trial\[$jb\.0\]: checkpoint step 1\$" 60
expect "B: attempt 0 sees MAX_INTERRUPTIONS 0" "$(out_var "$outb" 0 RESTORE_BUDGET_MAX_INTERRUPTIONS)" 0
check "B: admin scontrol requeue (attempt 0)" timeout 10 scontrol requeue "$jb"
check "B: attempt 1 refused in the ledger" wait_ev "$jb" 'kind=start attempt=1 decision=refuse' 90
check "B: job $jb is held (PENDING, Priority=0)" wait_held "$jb" 30
expect_match "B: AdminComment names the cap" "$(scontrol -o show job "$jb")" \
    'AdminComment=restore_budget: held: interruptions 1 > max_interruptions 0: budget exhausted'
timeout 10 scancel "$jb"; wait_state "$jb" CANCELLED 30 >/dev/null

measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
