#!/bin/bash
# test_array_sweep.sh - a sweep is a job array, and each task has its own
# budget: the plugin asks about, comments on and holds one task by its
# address "<array_job_id>_<task_id>", never by a bare id, which Slurm applies
# to every task of the array (docs/arrays.md).
#   rbuser submits one array of 8 tasks (tests/integration/jobs/sweepjob.sh,
#   M=1, R=1, exit code 3 fatal, on_exhausted = "hold"); the partition is
#   oversubscribed so that all 8 run at once on the 2-core node:
#     0, 6  healthy, running until the test releases them (6 carries an
#           admin's AdminComment "site-note-6")
#     1     requeued by its user (`scontrol requeue A_1`), restores, completes
#     2     a failure, then a corrupt checkpoint: exhausted, held
#     3     one application failure (charged, within budget), then completes
#     4     a fatal exit code (3): held
#     5     healthy, short
#     7     fails every attempt: exhausted, held.  The last task to start, so
#           it keeps the array's own job id: the case that held every
#           running sibling and clobbered every task's AdminComment when the
#           plugin addressed it by its bare id.
#   Each task is charged, held and commented on its own; no sibling is
#   held, killed, requeued or has its AdminComment changed.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
JOB=$RB_ROOT/tests/integration/jobs/sweepjob.sh

RB_REQUEUE_EXIT=42,3 rb_cluster_up 'max_failures = 1;
restore_retry_num = 1;
restore_timeout = 0;
on_exhausted = "hold";
exit_rules = ( { codes = [3]; action = "fatal"; } );' || { fail "cluster up"; summary; }

# all 8 tasks at once on 2 cores: each core shared by up to 8 jobs
check "partition low oversubscribed (FORCE:8)" \
    timeout 10 scontrol update PartitionName=low OverSubscribe=FORCE:8

# until_ok TIMEOUT CMD... - run CMD every 0.3 s until it succeeds (1: timeout).
until_ok() {
    local t0=$SECONDS tmo=$1; shift
    until "$@"; do ((SECONDS - t0 >= tmo)) && return 1; sleep 0.3; done
}
# comment ADDR - a task's AdminComment exactly ("(null)" when none): squeue
# prints it whole, the '|' after it ends it.
comment() {
    local s
    s=$(timeout 10 squeue --noheader --states=all --jobs "$1" --Format='admin_comment:0|')
    printf '%s\n' "${s%|}"
}
state_of() { printf '%s:%s\n' "$(job_field "$1" JobState)" "$(job_field "$1" Priority)"; }
is_held() { [[ $(job_field "$1" JobState):$(job_field "$1" Priority) == PENDING:0 ]]; }
# jobid_of ADDR - the job id of array task ADDR (A_T).
jobid_of() { timeout 10 squeue --noheader --states=all --jobs "$1" --Format='JobID:0|' | tr -d '|'; }
out_of() { printf '%s/sweep-%s.out\n' "$RB_WORKDIR" "$1"; }

rb_workdir sweep >/dev/null
# one checkpoint directory per task (ckpt/<task id>): a task is never
# handed a sibling's checkpoint (docs/arrays.md)
A=$(submit_as_user -p low --array=0-7 --checkpoint-dir='ckpt/%a' "$JOB") || { fail "sbatch --array=0-7"; rb_final_checks; summary; }
rb_log "array $A submitted"
for t in 0 1 2 3 4 5 6 7; do
    checkq "task $t started" wait_grep "$(out_of $t)" "start task $t of array $A" 60
done
declare -A J
for t in 0 1 2 3 4 5 6 7; do J[$t]=$(jobid_of "${A}_$t"); done
rb_log "job ids: $(for t in 0 1 2 3 4 5 6 7; do printf '%s=%s ' "${A}_$t" "${J[$t]}"; done)"
expect "task 7, the last to start, keeps the array's job id" "${J[7]}" "$A"
timeout 10 scontrol update JobId="${A}_6" AdminComment=site-note-6 ||
    fail "admin: AdminComment of ${A}_6"

# task 1: its user requeues it (by its address) once it has a checkpoint
check "task 1 checkpointed" wait_grep "$(out_of 1)" "waiting to be requeued" 30
check "rbuser requeues ${A}_1" as_user scontrol requeue "${A}_1"

# Task 7's attempt 2 is the one refused and held. Requeued at once, it can be
# relaunched while slurmd still caches its credential (cred_expire=5 here,
# 120 s by default): then Slurm runs no prolog for it (lib.sh, "BUT: ...";
# seen for this task on 22.05). Start it a little later, so that it takes
# the ordinary path (the prolog's note, then the hold from the batch step).
check "task 7's attempt 1 ends" wait_grep "$(out_of 7)" "^trial\[$A\.1\]: exiting 42" 60
# (asked again at each try: a $(...) in the arguments would be asked once)
task_pending() { [[ $(job_field "${A}_$1" JobState) == PENDING ]]; }
check "task 7 requeued" until_ok 30 task_pending 7
check "task 7's attempt 2 starts in 10 s (admin)" \
    timeout 10 scontrol update JobId="${A}_7" StartTime=now+10

# ---- the holds -----------------------------------------------------------------------
check "task 4 (fatal exit 3) is held" until_ok 60 is_held "${A}_4"
check "task 2 (corrupt checkpoint, exhausted) is held" until_ok 60 is_held "${A}_2"
check "task 7 (exhausted, keeps the array's id) is held" until_ok 40 is_held "${A}_7"
sleep 3 # a hold that hit a sibling shows by now (22.05: at once)

# (task 7 never checkpoints: its attempts are FRESH, so two failures)
expect_match "task 7's AdminComment is its own hold alone" "$(comment "${A}_7")" \
    '^restore_budget: held: attempt 1 failed: failures 2 > max_failures 1: budget exhausted$'
expect_match "task 4's AdminComment is its own hold alone" "$(comment "${A}_4")" \
    '^restore_budget: held: exit code 3 is fatal \(exit_rules\)[^|]*$'
expect_match "task 2's AdminComment is its own hold alone" "$(comment "${A}_2")" \
    '^restore_budget: held: restore 1 of 1 failed \(attempt 1\): failures 2 > max_failures 1: budget exhausted$'
for t in 0 6; do
    s=$(state_of "${A}_$t")
    expect "running sibling $t is untouched: still RUNNING, not held ($(job_field "${A}_$t" Reason))" "${s%%:*}" RUNNING
    expect "running sibling $t was never requeued" "$(job_field "${A}_$t" Restarts)" 0
done
expect "sibling 0's AdminComment untouched (none)" "$(comment "${A}_0")" "(null)"
expect "sibling 6's AdminComment untouched (the admin's)" "$(comment "${A}_6")" "site-note-6"

# ---- the rest completes --------------------------------------------------------------
touch "$RB_WORKDIR/release"
t_end=$((SECONDS + 60)) # for all of them: a held one never completes
for t in 0 1 3 5 6; do
    if is_held "${A}_$t"; then fail "task $t completes (it is held: $(job_field "${A}_$t" Reason))"; continue; fi
    left=$((t_end - SECONDS)); ((left < 1)) && left=1
    check "task $t completes" wait_state "${A}_$t" COMPLETED "$left"
done
for t in 0 1 3 5; do
    expect "task $t's AdminComment untouched (none)" "$(comment "${A}_$t")" "(null)"
done
expect "task 6's AdminComment untouched (the admin's)" "$(comment "${A}_6")" "site-note-6"
for t in 0 5 6; do expect "task $t ran once" "$(job_field "${A}_$t" Restarts)" 0; done
for t in 2 4 7; do check "task $t is still held" is_held "${A}_$t"; done

# ---- each task's record: its own budget, its own array id and task id ----------------
for t in 0 1 2 3 4 5 6 7; do
    expect "task $t: record array_job_id" "$(rec_get "${J[$t]}" array_job_id)" "$A"
    # (an optional field: no line at 0)
    expect "task $t: record array_task_id" "$(rec_get "${J[$t]}" array_task_id)" "${t#0}"
done
for t in 0 5 6; do
    expect "task $t: failures 0" "$(rec_get "${J[$t]}" failures_total)" 0
    expect "task $t: not exhausted" "$(rec_get "${J[$t]}" exhausted)" false
done
expect "task 1: interrupted once" "$(rec_get "${J[1]}" interruptions)" 1
expect "task 1: nothing charged" "$(rec_get "${J[1]}" failures_total)" 0
expect "task 1: attempt 0's end asked of the controller by its address: requeued" \
    "$(ev_get "${J[1]}" end 0 detail)" requeued
check "task 1 restored and acknowledged" grep -q "acknowledged restore" "$(out_of 1)"
# --checkpoint-dir=ckpt/%a: each task handed its own checkpoint, never a
# sibling's (they all checkpoint at once)
for t in 1 2; do
    expect "task $t: handed its own checkpoint (ckpt/$t)" \
        "$(rec_get "${J[$t]}" checkpoint)" "$RB_WORKDIR/ckpt/$t/checkpoint-$t"
done
expect "task 2: a failure and a failed restore" "$(rec_get "${J[2]}" failures_total):$(rec_get "${J[2]}" restore_failures_total)" 2:1
expect "task 2: exhausted" "$(rec_get "${J[2]}" exhausted)" true
expect "task 3: one application failure charged" "$(rec_get "${J[3]}" failures_total)" 1
expect "task 3: not exhausted" "$(rec_get "${J[3]}" exhausted)" false
expect "task 4: fatal code kept" "$(rec_get "${J[4]}" fatal_code)" 3
expect "task 7: exhausted" "$(rec_get "${J[7]}" exhausted)" true
expect "task 7: attempt 2 refused (held)" "$(ev_get "${J[7]}" start 2 decision)" refuse

# ---- slurmd's log names the task as A_T -------------------------------------------------
log=$RB_CLUSTER_DIR/log/slurmd.log
check "the hold of task 7 is logged by its address, with the grant/release hint" \
    grep -qE "job ${A}_7 held: .*'restore-budget grant ${A}_7 --failures N' then 'scontrol release ${A}_7'" "$log"
expect "no hold or comment addressed to the bare array id $A" \
    "$(grep -E "restore_budget: job $A(:| held)" "$log" | head -n 3)" ""

timeout 10 scancel "$A"
measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
