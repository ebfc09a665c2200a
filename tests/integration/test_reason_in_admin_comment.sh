#!/bin/bash
# test_reason_in_admin_comment.sh - the reason of a refusal or hold reaches
# the job's AdminComment, and what an admin put there is kept
# (docs/rule.md, "Where the reason shows"):
#   A: on_exhausted = "fail".  An admin sets AdminComment=site-note on
#      rbuser's trial (M=0, R=1); its restore fails (exit 42) and attempt 2
#      is refused (FAILED 1:0).  After the end `scontrol show job` shows
#      "restore_budget: refused: <reason>" and site-note is still there.
#   B: on_exhausted = "hold".  The admin's comment is two lines, one of them
#      a stale plugin line: the hold replaces that line only.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
BASE='max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;'
REASON='restore 1 of 1 failed (attempt 1): failures 1 > max_failures 0: budget exhausted'

rb_cluster_up "$BASE
on_exhausted = \"fail\";" || { fail "cluster up"; summary; }

# until TIMEOUT CMD... - run CMD every 0.3 s until it succeeds (1: timeout).
until_ok() {
    local t0=$SECONDS tmo=$1; shift
    until "$@"; do ((SECONDS - t0 >= tmo)) && return 1; sleep 0.3; done
}

# admin_comment JOB - the AdminComment exactly (squeue prints it whole, the
# '|' after it ends it).
admin_comment() {
    local s
    s=$(timeout 10 squeue --noheader --states=all --jobs "$1" --Format='admin_comment:0|')
    printf '%s\n' "${s%|}"
}
comment_matches() { [[ $(admin_comment "$1") =~ $2 ]]; }
is_held() { [[ $(job_field "$1" JobState):$(job_field "$1" Priority) == PENDING:0 ]]; }

# exhaust COMMENT - rbuser's trial whose restore always fails (from
# $RB_WORKDIR); an admin (root) sets its AdminComment to COMMENT and, once it
# wrote a checkpoint, requeues it: attempt 1 fails its restore, attempt 2 is
# refused (or held). Prints the job id.
exhaust() {
    local j
    j=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
        --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") &&
        timeout 10 scontrol update JobId="$j" AdminComment="$1" &&
        wait_grep "$RB_WORKDIR/trial-$j.out" "^trial\[$j\.0\]: checkpoint step 2\$" 60 &&
        timeout 10 scontrol requeue "$j" &&
        wait_ev "$j" 'kind=start attempt=2 decision=refuse' 90 &&
        printf '%s\n' "$j"
}

# ---- A: refused (on_exhausted = "fail") ------------------------------------------
rb_workdir fail >/dev/null
ja=$(exhaust site-note) || { fail "A: job exhausted"; rb_final_checks; summary; }
check "A: job $ja ends FAILED (refused)" wait_state "$ja" FAILED 60
expect "A: ExitCode" "$(job_field "$ja" ExitCode)" "1:0"
show=$(timeout 10 scontrol show job "$ja")
expect_match "A: scontrol show job: site-note is still there" "$show" 'AdminComment=site-note'
expect_match "A: scontrol show job: the reason" "$show" \
    "restore_budget: refused: restore 1 of 1 failed \(attempt 1\): failures 1 > max_failures 0: budget exhausted"
expect "A: AdminComment is the site's line, then the plugin's" "$(admin_comment "$ja")" \
    "site-note
restore_budget: refused: $REASON"
check "A: the refusal still reached the job's output" \
    wait_grep "$RB_WORKDIR/trial-$ja.out" "restore_budget: job $ja attempt 2 refused: restore budget exhausted" 10

# ---- B: held (on_exhausted = "hold"), a stale plugin line replaced ----------------
check "B: config switched to on_exhausted = hold" rb_write_config "$BASE
on_exhausted = \"hold\";"
rb_workdir hold >/dev/null
jb=$(exhaust "restore_budget: stale line
ticket 42: ask ops") || { fail "B: job exhausted"; rb_final_checks; summary; }
check "B: AdminComment names the hold" until_ok 30 comment_matches "$jb" 'restore_budget: held: '
expect "B: AdminComment: the plugin's line replaced in place, the site's kept" \
    "$(admin_comment "$jb")" "restore_budget: held: $REASON
ticket 42: ask ops"
check "B: job $jb is held (PENDING, Priority=0)" until_ok 30 is_held "$jb"
timeout 10 scancel "$jb"; wait_state "$jb" CANCELLED 30 >/dev/null
check "B: the site's line survives the end" comment_matches "$jb" 'ticket 42: ask ops'

measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
