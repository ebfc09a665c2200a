#!/bin/bash
# test_torch_trial.sh - contrib/jobs/torch_trial.py, a real PyTorch job, on
# the private cluster (docs/rule.md, "Finding the checkpoint" and
# "Checkpoint fallback"):
#   a. an uninterrupted run without Slurm gives the reference final loss;
#   b. the job preempted twice resumes each time from the checkpoint `latest`
#      named at its preemption (torch.load, confirm) and ends with EXACTLY the
#      reference loss: a real resume (model, optimizer and RNG states);
#   c. the newest checkpoint is corrupted on disk (truncated) while the job
#      waits for its rerun: torch.load fails R = 2 times (restore_failed,
#      RequeueExit), the fallback hands the checkpoint before it, and the job
#      completes with the same loss.
# Prints the three losses and the steps wasted (steps run minus the
# uninterrupted run's) as measure: lines.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
tt_require

rb_cluster_up 'max_failures = 2; restore_retry_num = 2; restore_timeout = 0;
checkpoint = { fallback = true; };' || { fail "cluster up"; summary; }

# ---- a. the reference -------------------------------------------------------
rb_workdir reference >/dev/null
check "a: an uninterrupted run without Slurm completes" tt_local "$RB_WORKDIR/ref.out"
ref=$(tt_loss "$RB_WORKDIR/ref.out")
expect_match "a: it prints its final loss" "$ref" '^[0-9]+\.[0-9]{6}$'
expect "a: it ran every step once" "$(tt_steps_run "$RB_WORKDIR/ref.out")" "$TT_STEPS"
rb_log "reference loss $ref"

# ---- b. preempted twice -------------------------------------------------------
rb_workdir preempt >/dev/null
ck=$RB_WORKDIR/ckpt
j=$(tt_submit) || { fail "sbatch torch_trial.py"; summary; }
out=$RB_WORKDIR/trial-$j.out
declare -a handed
for n in 0 1; do
    # attempt n writes a checkpoint of its own (attempt 0: two), then is preempted
    re="^trial\[$j\.$n\]: checkpoint step"; ((n == 0)) && re="$re $((2 * TT_EVERY)) "
    checkq "b: attempt $n writes a checkpoint" wait_grep "$out" "$re" 90
    checkq "b: attempt $n preempted" preempt "$j" 30
    checkq "b: attempt $n got SIGTERM" wait_grep "$out" "^trial\[$j\.$n\]: got SIGTERM" 30
    checkq "b: attempt $n gone from the node" wait_not_running "$j" 30
    handed[n + 1]=$ck/$(readlink "$ck/latest")
    rb_log "attempt $n preempted; latest: ${handed[n + 1]}"
done
check "b: job $j completes" wait_state "$j" COMPLETED 120
expect "b: Restarts" "$(job_field "$j" Restarts)" 2
expect "b: attempts that ran" "$(out_attempts "$out" | tr '\n' ' ')" "0 1 2 "
check_attempts_recorded "$j" 2
for n in 1 2; do
    want=${handed[n]}
    expect "b: attempt $n handed the checkpoint latest named at its preemption" \
        "$(out_var "$out" "$n" RESTORE_BUDGET_CHECKPOINT)" "$want"
    check "b: attempt $n restored it" grep -q "^trial\[$j\.$n\]: restored step ${want##*-}\$" "$out"
    check "b: attempt $n acknowledged" grep -q "^trial\[$j\.$n\]: acknowledged restore" "$out"
    expect "b: event end $((n - 1)): interrupted" "$(ev_get "$j" end "$((n - 1))" end)" interrupted
    ((n > 1)) && expect "b: event end $((n - 1)): confirmed" "$(ev_get "$j" end "$((n - 1))" confirmed)" ack
done
expect "b: record failures" "$(rec_get "$j" failures)" 0
pre=$(tt_loss "$out" "$j\.2")
expect "b: the resumed job's final loss is the uninterrupted run's" "$pre" "$ref"
pre_run=$(tt_steps_run "$out")

# ---- c. the newest checkpoint corrupted on disk -------------------------------
rb_workdir corrupt >/dev/null
ck=$RB_WORKDIR/ckpt
j=$(tt_submit) || { fail "sbatch torch_trial.py"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "c: attempt 0 writes two checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step $((2 * TT_EVERY)) " 90
checkq "c: attempt 0 preempted" preempt "$j" 30
checkq "c: attempt 0 gone from the node" wait_not_running "$j" 30
bad=$(readlink "$ck/latest")
prev=$(tt_ckpt_before "$ck" "$bad")
# half of it: torch.load cannot read a truncated zip archive
truncate -s $(($(stat -c %s "$ck/$bad") / 2)) "$ck/$bad"
rb_log "truncated $ck/$bad; the one before it: $prev"
check "c: job $j completes" wait_state "$j" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 150
expect "c: JobState" "$(job_field "$j" JobState)" COMPLETED
expect "c: Restarts (attempts 0..3)" "$(job_field "$j" Restarts)" 3
check_attempts_recorded "$j" 3
for n in 1 2; do
    expect "c: attempt $n told the requeue code" "$(out_var "$out" "$n" RESTORE_BUDGET_REQUEUE_EXIT)" 42
    expect "c: attempt $n handed the corrupt newest" "$(out_var "$out" "$n" RESTORE_BUDGET_CHECKPOINT)" "$ck/$bad"
    check "c: attempt $n: torch.load failed" grep -q "^trial\[$j\.$n\]: torch.load failed: " "$out"
    expect "c: event end $n: failed with RequeueExit" "$(ev_get "$j" end "$n" end)" failed:42
done
check "c: restore_failed said why on stderr" grep -q "^restore_budget: restore failed: torch.load($ck/$bad): " "$out"
expect "c: attempt 3 handed the one before it" "$(out_var "$out" 3 RESTORE_BUDGET_CHECKPOINT)" "$ck/$prev"
expect "c: attempt 3: RESTORE_BUDGET_FALLBACK_FROM" "$(out_var "$out" 3 RESTORE_BUDGET_FALLBACK_FROM)" "$ck/$bad"
check "c: attempt 3 restored it" grep -q "^trial\[$j\.3\]: restored step ${prev##*-}\$" "$out"
expect "c: record failures (one group of R failed restores)" "$(rec_get "$j" failures)" 1
expect "c: record fallback.fallbacks" "$(rec_get "$j" fallback.fallbacks)" 1
res=$(tt_loss "$out" "$j\.3")
expect "c: the rescued job's final loss is the uninterrupted run's" "$res" "$ref"
res_run=$(tt_steps_run "$out")

measure "loss_uninterrupted=$ref loss_preempted=$pre loss_rescued=$res"
measure "steps=$TT_STEPS preempted_run=$pre_run wasted_preempted=$((pre_run - TT_STEPS))" \
    "rescued_run=$res_run wasted_rescued=$((res_run - TT_STEPS)) duration=$((SECONDS - T0))s"
rb_final_checks
summary
