#!/bin/bash
# test_user_requeue_exhausted.sh - a user cannot run past an exhausted budget
# by requeueing (or releasing) their own job (docs/security.md: any user
# may "requeue their own jobs"; none of that may "let a job run past its
# exhausted budget").
#   A: on_exhausted = "fail".  rbuser's trial (M=0, R=1) fails its restore
#      (exit 42) and its attempt 2 is refused: FAILED 1:0.  rbuser runs
#      `scontrol requeue J`: the rerun is refused again.
#   B: on_exhausted = "hold" (the config is re-read at each attempt's start).
#      The same scenario leaves the job held; rbuser runs `scontrol release J`
#      and `scontrol requeue J`: whatever Slurm lets through is refused or
#      held again.
#   Each time: the script body never runs again, the record stays exhausted,
#   the failure counts do not change, no node drains.
# A regression guard: it passes on the plugin of d6936ee too.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
BASE='max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;'

rb_cluster_up "$BASE
on_exhausted = \"fail\";" || { fail "cluster up"; summary; }

# exhaust - from $RB_WORKDIR, a trial whose restore always fails, requeued
# once (root): prints its job id; attempt 2 is the one the plugin refuses (or
# holds).  (Called in $( ): the caller sets RB_WORKDIR first.)
exhaust() {
    local id o
    id=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
        --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || return 1
    o=$RB_WORKDIR/trial-$id.out
    wait_grep "$o" "^trial\[$id\.0\]: checkpoint step 2\$" 60 || return 1
    timeout 10 scontrol requeue "$id" || return 1
    wait_ev "$id" 'kind=start attempt=2 decision=refuse' 90 || return 1
    printf '%s\n' "$id"
}

# scripts_ran OUT - the attempts whose script body started, space separated.
scripts_ran() { out_attempts "$1" | tr '\n' ' '; }

# as_user_scontrol TAG ARGS... - scontrol as $RB_USER; logs the outcome.
as_user_scontrol() {
    local tag=$1 msg rc; shift
    msg=$(as_user scontrol "$@" 2>&1); rc=$?
    rb_log "$tag: '$RB_USER: scontrol $*' -> rc=$rc ${msg:+($msg)}"
    return $rc
}

# budget_unchanged TAG JOB F_WANT FT_WANT RFT_WANT - the record still says exhausted
# with the same counts.
budget_unchanged() {
    local tag=$1 job=$2
    expect "$tag: record exhausted" "$(rec_get "$job" exhausted)" true
    expect "$tag: record failures" "$(rec_get "$job" failures)" "$3"
    expect "$tag: record failures_total" "$(rec_get "$job" failures_total)" "$4"
    expect "$tag: record restore_failures_total" "$(rec_get "$job" restore_failures_total)" "$5"
    check "$tag: no node drained" rb_nodes_ok
}

# ---- A: on_exhausted = "fail", then a user requeue ---------------------------------
rb_workdir fail >/dev/null
ja=$(exhaust) || { fail "A: job exhausted"; rb_final_checks; summary; }
outa=$RB_WORKDIR/trial-$ja.out
check "A: job $ja ends FAILED (refused)" wait_state "$ja" FAILED 60
expect "A: ExitCode" "$(job_field "$ja" ExitCode)" "1:0"
expect "A: attempts whose script ran" "$(scripts_ran "$outa")" "0 1 "
fa=$(rec_get "$ja" failures) fta=$(rec_get "$ja" failures_total) rfta=$(rec_get "$ja" restore_failures_total)
expect "A: failures after exhaustion" "$fa" 1
budget_unchanged "A: before the user's requeue" "$ja" "$fa" "$fta" "$rfta"

check "A: $RB_USER may requeue the finished job $ja (Slurm allows it)" as_user_scontrol A requeue "$ja"
check "A: the requeue bumped Restarts to 3" wait_restart_count "$ja" 3 30
check "A: attempt 3 refused in the ledger" wait_ev "$ja" 'kind=start attempt=3 decision=refuse' 60
check "A: job $ja ends FAILED again" wait_state "$ja" FAILED 60
expect "A: ExitCode" "$(job_field "$ja" ExitCode)" "1:0"
expect "A: start 3: failures unchanged" "$(ev_get "$ja" start 3 failures)" "$fa->$fa"
expect "A: start 3: nothing charged" "$(ev_get "$ja" start 3 charge)" none
check "A: the refusal of attempt 3 reached the job's output" \
    wait_grep "$outa" "restore_budget: job $ja attempt 3 refused: restore budget exhausted" 10
expect "A: attempts whose script ran (none after the requeue)" "$(scripts_ran "$outa")" "0 1 "
expect "A: restore attempts" "$(grep -c "^trial\[$ja\.[0-9]*\]: restoring from " "$outa")" 1
budget_unchanged "A: after the user's requeue" "$ja" "$fa" "$fta" "$rfta"
expect "A: record cur.attempt" "$(rec_get "$ja" cur.attempt)" 3
expect "A: record cur.refused" "$(rec_get "$ja" cur.refused)" true

# ---- B: on_exhausted = "hold", then a user release and requeue ---------------------
check "B: config switched to on_exhausted = hold" rb_write_config "$BASE
on_exhausted = \"hold\";"
rb_workdir hold >/dev/null
jb=$(exhaust) || { fail "B: job exhausted"; rb_final_checks; summary; }
outb=$RB_WORKDIR/trial-$jb.out

# held_now JOB - PENDING with Priority=0 (held) within 30 s.
held_now() {
    local _
    for _ in $(seq 1 100); do
        [[ $(job_field "$1" JobState) == PENDING && $(job_field "$1" Priority) == 0 ]] && return 0
        sleep 0.3
    done
    echo "held_now: job $1 is $(job_field "$1" JobState) Priority=$(job_field "$1" Priority) ($(job_field "$1" Reason))" >&2
    return 1
}
check "B: job $jb is held (PENDING, Priority=0)" held_now "$jb"
expect "B: attempts whose script ran" "$(scripts_ran "$outb")" "0 1 "
fb=$(rec_get "$jb" failures) ftb=$(rec_get "$jb" failures_total) rftb=$(rec_get "$jb" restore_failures_total)
expect "B: failures after exhaustion" "$fb" 1
budget_unchanged "B: before the user's release" "$jb" "$fb" "$ftb" "$rftb"
# last_start JOB - the attempt number of the newest start event (-1: none).
last_start() { ev_lines "$1" start | sed -n 's/.* attempt=\([0-9]*\) .*/\1/p' | sort -n | tail -n 1 | grep . || echo -1; }
# wait_new_start JOB AFTER TIMEOUT - wait for a start event of an attempt > AFTER.
wait_new_start() {
    local t0=$SECONDS
    while (($(last_start "$1") <= $2)); do
        ((SECONDS - t0 >= $3)) && { echo "wait_new_start: no start of job $1 after attempt $2 in ${3}s" >&2; return 1; }
        sleep 0.3
    done
}

# user_release TAG - `scontrol release` as the user: if Slurm lets it through,
# the next attempt must be refused (held again); if not, the job stays held.
user_release() {
    local tag=$1 s0 n
    s0=$(last_start "$jb")
    if as_user_scontrol B release "$jb"; then
        rb_log "B: $RB_USER's release was accepted: the next attempt must be held again"
        check "B: $tag: a new attempt starts after the release" wait_new_start "$jb" "$s0" 60
        n=$(last_start "$jb")
        expect "B: $tag: attempt $n (after the release) is refused in the ledger" \
            "$(ev_get "$jb" start "$n" decision)" refuse
        check "B: $tag: job $jb is held again" held_now "$jb"
    else
        pass "B: $tag: $RB_USER's release is refused by Slurm"
        sleep 8 # longer than the requeue delay (cred_expire=5): a rerun would have started
        check "B: $tag: job $jb is still held" held_now "$jb"
    fi
}
# 1. release as the user
user_release "first release"
expect "B: attempts whose script ran (none after the release)" "$(scripts_ran "$outb")" "0 1 "
budget_unchanged "B: after the user's release" "$jb" "$fb" "$ftb" "$rftb"

# 2. requeue as the user (a held pending job: Slurm may refuse, 22.05 does:
#    "Job is pending execution"; either way nothing may run)
ev_before=$(ev_count "$jb" ' kind=start ')
s1=$(last_start "$jb")
if as_user_scontrol B requeue "$jb"; then
    rb_log "B: $RB_USER's requeue was accepted"
    check "B: a new attempt starts after the requeue" wait_new_start "$jb" "$s1" 60
    n=$(last_start "$jb")
    expect "B: attempt $n (after the requeue) is refused in the ledger" "$(ev_get "$jb" start "$n" decision)" refuse
else
    pass "B: $RB_USER's requeue of the held job is refused by Slurm"
fi
# 3. and release once more, in case the requeue changed the hold
user_release "second release"
s=$(job_field "$jb" JobState) p=$(job_field "$jb" Priority)
check "B: job $jb is held, never running (JobState=$s Priority=$p)" test "$s:$p" = PENDING:0
expect "B: attempts whose script ran (none after release + requeue)" "$(scripts_ran "$outb")" "0 1 "
expect "B: restore attempts" "$(grep -c "^trial\[$jb\.[0-9]*\]: restoring from " "$outb")" 1
check "B: every start after the exhaustion was refused" \
    test "$(ev_count "$jb" ' kind=start .* decision=run ')" = 2
rb_log "B: start events: $ev_before before the requeue, $(ev_count "$jb" ' kind=start ') now"
budget_unchanged "B: at the end" "$jb" "$fb" "$ftb" "$rftb"
expect "B: record cur.refused" "$(rec_get "$jb" cur.refused)" true

timeout 10 scancel "$jb"; wait_state "$jb" CANCELLED 30 >/dev/null
measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
