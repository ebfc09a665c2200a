#!/bin/bash
# test_requeue_interrupt.sh - `scontrol requeue` by an admin while the job
# runs, and a job that requeues itself (`scontrol requeue $SLURM_JOB_ID` as
# its user), are interruptions: nothing is charged (failures stays 0 with
# max_failures = 0, restore_failures unchanged after a confirmed restore),
# and the event log records end=interrupted.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 0;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "cluster up"; summary; }

# B: requeues itself in attempts 0 and 1 (runs on its own meanwhile)
rb_workdir self >/dev/null
WB=$RB_WORKDIR
jb=$(TRIAL_SELF_REQUEUE="0 1" TRIAL_STEPS=5 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/tests/lib/trial_job.sh") || fail "sbatch self-requeue job"
outb=$WB/trial-$jb.out

# A: requeued twice by the admin
rb_workdir admin >/dev/null
ja=$(TRIAL_STEPS=8 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
outa=$RB_WORKDIR/trial-$ja.out
checkq "A: attempt 0 wrote 2 checkpoints" wait_grep "$outa" "^trial\[$ja\.0\]: checkpoint step 2\$" 60
check "A: admin scontrol requeue (attempt 0, FRESH)" timeout 10 scontrol requeue "$ja"
checkq "A: attempt 0 got SIGTERM" wait_grep "$outa" "^trial\[$ja\.0\]: got SIGTERM" 30
checkq "A: attempt 1 acknowledged its restore" wait_grep "$outa" "^trial\[$ja\.1\]: acknowledged restore" 60
checkq "A: attempt 1 wrote a checkpoint" wait_grep "$outa" "^trial\[$ja\.1\]: checkpoint step" 30
r_before=$(rec_get "$ja" restore_failures)
check "A: admin scontrol requeue (attempt 1, restore confirmed)" timeout 10 scontrol requeue "$ja"
checkq "A: attempt 1 got SIGTERM" wait_grep "$outa" "^trial\[$ja\.1\]: got SIGTERM" 30
checkq "A: attempt 2 started" wait_grep "$outa" "^trial\[$ja\.2\]: start" 60
for n in 0 1; do
    expect "A: event end $n: end" "$(ev_get "$ja" end "$n" end)" interrupted
    expect "A: attempt $((n + 1)) start: charge" "$(ev_get "$ja" start $((n + 1)) charge)" none
    expect "A: attempt $((n + 1)) start: charged_end" "$(ev_get "$ja" start $((n + 1)) charged_end)" interrupted
    expect "A: attempt $((n + 1)) start: failures" "$(ev_get "$ja" start $((n + 1)) failures)" "0->0"
done
expect "A: event end 1: confirmed" "$(ev_get "$ja" end 1 confirmed)" ack
expect "A: restore_failures unchanged by the requeue of a confirmed restore" \
    "$(ev_get "$ja" start 2 restore_failures)" "$r_before->$r_before"
expect "A: attempt 2: FAILURES" "$(out_var "$outa" 2 RESTORE_BUDGET_FAILURES)" 0
expect "A: attempt 2: RESTORE_FAILURES" "$(out_var "$outa" 2 RESTORE_BUDGET_RESTORE_FAILURES)" "$r_before"
expect "A: attempt 2: LAST_END" "$(out_var "$outa" 2 RESTORE_BUDGET_LAST_END)" interrupted
check "A: job completes" wait_state "$ja" COMPLETED 90
expect "A: Restarts" "$(job_field "$ja" Restarts)" 2
check_attempts_recorded "$ja" 2 "A"
expect "A: attempt 2: ATTEMPT" "$(out_var "$outa" 2 RESTORE_BUDGET_ATTEMPT)" 2
for kv in failures=0 restore_failures=0 interruptions=2 failures_total=0 exhausted=false; do
    expect "A: record ${kv%%=*}" "$(rec_get "$ja" "${kv%%=*}")" "${kv#*=}"
done
measure "admin-requeue job=$ja attempts=3 requeues=2"

# B: the job requeues itself
if [[ -n $jb ]]; then
    wait_state "$jb" 'COMPLETED|FAILED|CANCELLED' 120
    if grep -q "^trial\[$jb\.0\]: self-requeue refused" "$outb"; then
        # Documented outcome: the user may not requeue its own job here.
        rb_log "NOTE: the job's user may not requeue its own job: $(grep -m1 'self-requeue refused' "$outb")"
        measure "self-requeue=refused-for-user"
        pass "B: self-requeue outcome documented (refused for the user)"
    else
        for n in 0 1; do
            check "B: attempt $n asked to requeue itself" grep -q "^trial\[$jb\.$n\]: requesting self-requeue" "$outb"
            check "B: attempt $n was then requeued (next attempt ran)" grep -q "^trial\[$jb\.$((n + 1))\]: start" "$outb"
        done
        check "B: attempt 1 had acknowledged its restore" grep -q "^trial\[$jb\.1\]: acknowledged restore" "$outb"
        expect "B: JobState" "$(job_field "$jb" JobState)" COMPLETED
        expect "B: Restarts" "$(job_field "$jb" Restarts)" 2
        check_attempts_recorded "$jb" 2 "B"
        expect "B: attempt 2: ATTEMPT" "$(out_var "$outb" 2 RESTORE_BUDGET_ATTEMPT)" 2
        for n in 0 1; do
            expect "B: event end $n: end" "$(ev_get "$jb" end "$n" end)" interrupted
            expect "B: attempt $((n + 1)) start: charge" "$(ev_get "$jb" start $((n + 1)) charge)" none
        done
        expect "B: event end 1: confirmed" "$(ev_get "$jb" end 1 confirmed)" ack
        expect "B: attempt 2: LAST_END" "$(out_var "$outb" 2 RESTORE_BUDGET_LAST_END)" interrupted
        expect "B: attempt 2: FAILURES" "$(out_var "$outb" 2 RESTORE_BUDGET_FAILURES)" 0
        for kv in failures=0 restore_failures=0 interruptions=2 exhausted=false; do
            expect "B: record ${kv%%=*}" "$(rec_get "$jb" "${kv%%=*}")" "${kv#*=}"
        done
        measure "self-requeue=allowed-for-user job=$jb attempts=3 requeues=2"
    fi
fi
measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
