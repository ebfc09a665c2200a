#!/bin/bash
# test_preempt_while_restoring.sh - an attempt preempted while it restores
# (before its acknowledgement; restore_timeout is large) is a failed restore:
# r += 1; R of them in a row are one failure (F += 1, r := 0).
# Job: tests/lib/trial_job.sh, which holds its ack while a file exists.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
M=1 R=2

rb_cluster_up "max_failures = $M;
restore_retry_num = $R;
restore_timeout = 600;" || { fail "cluster up"; summary; }
rb_workdir restoring >/dev/null
hold=$RB_WORKDIR/hold-ack
touch "$hold"

j=$(TRIAL_HOLD_ACK=$hold TRIAL_STEPS=5 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/tests/lib/trial_job.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out

checkq "attempt 0 wrote 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
checkq "attempt 0 preempted" preempt "$j" 30
checkq "attempt 0 gone" wait_not_running "$j" 30
latest=$RB_WORKDIR/ckpt/$(readlink "$RB_WORKDIR/ckpt/latest")

# Attempts 1..R: preempted while restoring.  Attempt R+1: allowed to finish.
for ((n = 1; n <= R + 1; n++)); do
    checkq "attempt $n is restoring (holding its ack)" \
        wait_grep "$out" "^trial\[$j\.$n\]: holding the acknowledgement" 90
    checkq "attempt $n reported RESTORING to the ledger" wait_ev "$j" " kind=report attempt=$n phase=RESTORING " 10
    expect "attempt $n: PHASE" "$(out_var "$out" "$n" RESTORE_BUDGET_PHASE)" RESTORING
    expect "attempt $n: CHECKPOINT" "$(out_var "$out" "$n" RESTORE_BUDGET_CHECKPOINT)" "$latest"
    # counters when attempt n starts: n-1 restores failed so far
    ff=$(((n - 1) / R)) rr=$(((n - 1) % R))
    expect "attempt $n: FAILURES" "$(out_var "$out" "$n" RESTORE_BUDGET_FAILURES)" "$ff"
    expect "attempt $n: RESTORE_FAILURES" "$(out_var "$out" "$n" RESTORE_BUDGET_RESTORE_FAILURES)" "$rr"
    expect "attempt $n: RESTORES_LEFT" "$(out_var "$out" "$n" RESTORE_BUDGET_RESTORES_LEFT)" "$(((M + 1 - ff) * R - rr))"
    expect "attempt $n: record restore_failures" "$(rec_get "$j" restore_failures)" "$rr"
    expect "attempt $n: record failures" "$(rec_get "$j" failures)" "$ff"
    expect "attempt $n: restore_timeout in force" "$(ev_get "$j" start "$n" restore_timeout)" 600
    if ((n >= 2)); then
        want=restore_failure; ((rr == 0)) && want=restore_failure_converted
        expect "attempt $n: charge for attempt $((n - 1))" "$(ev_get "$j" start "$n" charge)" "$want"
        expect "attempt $n: charged phase" "$(ev_get "$j" start "$n" charged_phase)" RESTORING
        expect "attempt $n: LAST_END" "$(out_var "$out" "$n" RESTORE_BUDGET_LAST_END)" interrupted
    fi
    if ((n <= R)); then
        checkq "attempt $n preempted while restoring" preempt "$j" 30
        checkq "attempt $n gone" wait_not_running "$j" 30
        check "attempt $n never acknowledged" bash -c "! grep -q '^trial\[$j\.$n\]: acknowledged' '$out'"
        check "no ack file for attempt $n" test ! -e "$(rb_ack_path_of "$j" "$n")"
        checkq "attempt $n end recorded" wait_ev "$j" " kind=end attempt=$n " 30
        expect "event end $n: end" "$(ev_get "$j" end "$n" end)" interrupted
        expect "event end $n: confirmed" "$(ev_get "$j" end "$n" confirmed)" none
    fi
done
rm -f "$hold"   # let attempt R+1 restore
check "job $j completes" wait_state "$j" COMPLETED 90
expect "ExitCode" "$(job_field "$j" ExitCode)" "0:0"
expect "Restarts" "$(job_field "$j" Restarts)" "$((R + 1))"
check_attempts_recorded "$j" "$((R + 1))"
check "attempt $((R + 1)) acknowledged" grep -q "^trial\[$j\.$((R + 1))\]: acknowledged" "$out"
expect "R=$R failed restores made one failure: failures" "$(rec_get "$j" failures)" 1
for kv in restore_failures=0 restore_failures_total=$R failures_total=1 interruptions=$((R + 1)) \
          exhausted=false cur.end=completed cur.confirmed=ack "checkpoint=$latest"; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done
measure "attempts=$((R + 2)) preempted_while_restoring=$R M=$M R=$R duration=$((SECONDS - T0))s"
rb_final_checks
summary
