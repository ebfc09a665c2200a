#!/bin/bash
# test_preempt_confirmed.sh - max_failures = 0 and a trial preempted three
# times, every rerun restoring and acknowledging: preemptions of confirmed
# restores cost nothing, so the job completes; each rerun is handed the
# checkpoint `latest` pointed to when it was preempted.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
N_PREEMPT=3

rb_cluster_up 'max_failures = 0;
restore_retry_num = 3;
restore_timeout = 0;' || { fail "cluster up"; summary; }
rb_workdir preempt >/dev/null
ck=$RB_WORKDIR/ckpt

j=$(TRIAL_STEPS=14 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch trial"; summary; }
out=$RB_WORKDIR/trial-$j.out
declare -a handed_expect before_preempt
for ((n = 0; n < N_PREEMPT; n++)); do
    # attempt n is running and has written a checkpoint of its own
    checkq "attempt $n writes a checkpoint" wait_grep "$out" "^trial\[$j\.$n\]: checkpoint step" 90
    before_preempt[n]=$(readlink "$ck/latest")
    checkq "attempt $n preempted" preempt "$j" 30
    checkq "attempt $n got SIGTERM" wait_grep "$out" "^trial\[$j\.$n\]: got SIGTERM" 30
    checkq "attempt $n gone from the node" wait_not_running "$j" 30
    handed_expect[n + 1]=$ck/$(readlink "$ck/latest")
    rb_log "attempt $n preempted; latest before: ${before_preempt[n]}, at kill: ${handed_expect[n + 1]}"
done
check "job $j completes" wait_state "$j" COMPLETED 120
expect "JobState" "$(job_field "$j" JobState)" COMPLETED
expect "ExitCode" "$(job_field "$j" ExitCode)" "0:0"
expect "Restarts" "$(job_field "$j" Restarts)" "$N_PREEMPT"
expect "attempts that ran" "$(out_attempts "$out" | tr '\n' ' ')" "0 1 2 3 "
check "trial finished all steps" grep -q "trial\[$j.$N_PREEMPT\]: done: 14 steps" "$out"
check_attempts_recorded "$j" "$N_PREEMPT"

for ((n = 1; n <= N_PREEMPT; n++)); do
    want=${handed_expect[n]}
    got=$(out_var "$out" "$n" RESTORE_BUDGET_CHECKPOINT)
    expect "attempt $n handed the checkpoint latest pointed to at its preemption" "$got" "$want"
    # not older than what latest pointed to just before the preemption
    b=${before_preempt[n - 1]#checkpoint-}; g=${got##*/checkpoint-}
    check "attempt $n: checkpoint step $g >= step $b seen before the preemption" \
        test "${g:-0}" -ge "${b:-999}"
    check "attempt $n restored it" grep -q "^trial\[$j\.$n\]: restored step $g\$" "$out"
    check "attempt $n acknowledged" grep -q "^trial\[$j\.$n\]: acknowledged restore" "$out"
    expect "attempt $n: ATTEMPT" "$(out_var "$out" "$n" RESTORE_BUDGET_ATTEMPT)" "$n"
    expect "attempt $n: PHASE" "$(out_var "$out" "$n" RESTORE_BUDGET_PHASE)" RESTORING
    expect "attempt $n: FAILURES" "$(out_var "$out" "$n" RESTORE_BUDGET_FAILURES)" 0
    expect "attempt $n: RESTORE_FAILURES" "$(out_var "$out" "$n" RESTORE_BUDGET_RESTORE_FAILURES)" 0
    expect "attempt $n: MAX_FAILURES" "$(out_var "$out" "$n" RESTORE_BUDGET_MAX_FAILURES)" 0
    expect "attempt $n: RESTORES_LEFT" "$(out_var "$out" "$n" RESTORE_BUDGET_RESTORES_LEFT)" 3
    expect "attempt $n: LAST_END" "$(out_var "$out" "$n" RESTORE_BUDGET_LAST_END)" interrupted
    expect "attempt $n: ACK_FILE" "$(out_var "$out" "$n" RESTORE_BUDGET_ACK_FILE)" "$(rb_ack_path_of "$j" "$n")"
    # the ledger's view of it
    expect "event start $n: decision" "$(ev_get "$j" start "$n" decision)" run
    expect "event start $n: charge" "$(ev_get "$j" start "$n" charge)" none
    expect "event start $n: charged_end" "$(ev_get "$j" start "$n" charged_end)" interrupted
    expect "event start $n: failures" "$(ev_get "$j" start "$n" failures)" "0->0"
    expect "event start $n: restore_failures" "$(ev_get "$j" start "$n" restore_failures)" "0->0"
    expect "event report $n: phase" "$(ev_get "$j" report "$n" phase)" RESTORING
    expect "event report $n: checkpoint" "$(ev_get "$j" report "$n" checkpoint)" "$want"
done
for ((n = 0; n < N_PREEMPT; n++)); do
    expect "event end $n: end" "$(ev_get "$j" end "$n" end)" interrupted
    ((n > 0)) && expect "event end $n: confirmed" "$(ev_get "$j" end "$n" confirmed)" ack
done
expect "event end $N_PREEMPT: end" "$(ev_get "$j" end "$N_PREEMPT" end)" completed
for kv in failures=0 restore_failures=0 failures_total=0 restore_failures_total=0 \
          interruptions=$N_PREEMPT exhausted=false cur.attempt=$N_PREEMPT \
          cur.end=completed cur.refused=false "checkpoint=${handed_expect[N_PREEMPT]}"; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done

measure "attempts=$((N_PREEMPT + 1)) preemptions=$N_PREEMPT duration=$((SECONDS - T0))s"
rb_final_checks
summary
