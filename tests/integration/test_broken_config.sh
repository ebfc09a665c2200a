#!/bin/bash
# test_broken_config.sh - internal errors never stop slurmd nor drain a node.
#  A. a config with a syntax error: slurmd stays up (also across a restart),
#     jobs run untracked and complete (a config that cannot be parsed cannot
#     say "closed"), and slurmd.log has a restore_budget error with file:line.
#  B. a valid config whose state_dir is unusable (owned by a user; mode 0777):
#     on_error = "closed" refuses the job (FAILED, clear message in its
#     output); on_error = "open" lets it run untracked.  Root never writes
#     into the unusable directory.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
RB_EXPECT_PLUGIN_ERRORS=1   # read by rb_final_checks (lib.sh)
export RB_EXPECT_PLUGIN_ERRORS
GOOD='max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;'

rb_cluster_up "$GOOD" || { fail "cluster up"; summary; }
rb_workdir broken >/dev/null
slurmd0=$(rb_daemon_pid slurmd)
log=$RB_CLUSTER_DIR/log/slurmd.log

# run_trial NAME SBATCH-ARGS... - submit a short trial, wait for its end,
# print the job id.  The trial's output is $RB_WORKDIR/trial-<id>.out.
run_trial() {
    local name=$1 j; shift
    j=$(TRIAL_STEPS=2 TRIAL_CKPT_EVERY=1 submit_as_user -p low "$@" \
        "$RB_ROOT/contrib/jobs/trial.sh") || { fail "$name: sbatch $*"; return 1; }
    wait_state "$j" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 60 || true
    printf '%s\n' "$j"
}
untracked() {  # NAME JOB - the job ran, completed and was not tracked
    local name=$1 j=$2 out=$RB_WORKDIR/trial-$2.out
    expect "$name: job $j JobState" "$(job_field "$j" JobState)" COMPLETED
    expect "$name: job $j ExitCode" "$(job_field "$j" ExitCode)" "0:0"
    check "$name: the job ran" grep -q "^trial\[$j\.0\]: done: 2 steps" "$out"
    check "$name: untracked (no RESTORE_BUDGET_* in its environment)" \
        bash -c "! grep -q '^trial:   RESTORE_BUDGET_' '$out'"
}

# ---- A. syntax error ---------------------------------------------------------
# rb_write_config adds 2 lines (comment, state_dir): the error is on line 4.
rb_write_config 'max_failures = 1;
restore_retry_num = ;
restore_timeout = 0;'
check "broken config: line 4 is the bad one" grep -q '^restore_retry_num = ;$' <(sed -n 4p "$RB_CONF")
ja=$(run_trial "broken config" --checkpoint-dir=ckpt --max-failures=3)
[[ -n $ja ]] && untracked "broken config" "$ja"
check "broken config: no ledger record for job $ja" test ! -e "$(rb_rec_path "$ja")"
check "broken config: slurmd.log has a restore_budget error with $RB_CONF:4:" \
    grep -qE "error: .*restore_budget: .*$RB_CONF:4: " "$log"
rb_log "error line: $(grep -m1 -E "error: .*restore_budget: .*$RB_CONF:4: " "$log")"
expect "broken config: slurmd still the same process" "$(rb_daemon_pid slurmd)" "$slurmd0"
check "broken config: no node drained" rb_nodes_ok

# slurmd restarted with the broken config: stays up
n0=$(grep -cE "error: .*restore_budget: .*$RB_CONF:4: .*until it is fixed" "$log")
check "slurmd restarts with the broken config" rb_restart_slurmd
slurmd1=$(rb_daemon_pid slurmd)
check "slurmd is a new process" test -n "$slurmd1" -a "$slurmd1" != "$slurmd0"
check "slurmd start logged the file:line error" \
    test "$(grep -cE "error: .*restore_budget: .*$RB_CONF:4: .*until it is fixed" "$log")" -gt "$n0"
jb=$(run_trial "after restart")
[[ -n $jb ]] && untracked "after restart" "$jb"
expect "slurmd still up after a job (same pid)" "$(rb_daemon_pid slurmd)" "$slurmd1"
check "after restart: no node drained" rb_nodes_ok

# ---- B. state_dir unusable -------------------------------------------------------
ustate=$RB_CLUSTER_DIR/rb/state-user      # owned by the job's user
wstate=$RB_CLUSTER_DIR/rb/state-0777      # root's, writable by all
mkdir -p "$ustate" "$wstate"
chown "$RB_USER": "$ustate"; chmod 755 "$ustate"
chmod 777 "$wstate"
for sd in "$ustate" "$wstate"; do
    what="state_dir $(stat -c '%U %a' "$sd")"
    rb_write_config "state_dir = \"$sd\";
$GOOD
on_error = \"closed\";"
    jc=$(run_trial "$what, closed" --checkpoint-dir=ckpt)
    if [[ -n $jc ]]; then
        out=$RB_WORKDIR/trial-$jc.out
        expect "$what, closed: JobState" "$(job_field "$jc" JobState)" FAILED
        expect "$what, closed: ExitCode" "$(job_field "$jc" ExitCode)" "1:0"
        check "$what, closed: the script never ran" bash -c "! grep -q '^trial\[$jc\.' '$out'"
        msg=$(grep -m1 "restore_budget: job $jc refused" "$out")
        check "$what, closed: refusal message in the job's output" test -n "$msg"
        check "$what, closed: message names on_error = closed" grep -q 'on_error = "closed"' <<<"$msg"
        check "$what, closed: message names the config file" grep -qF "$RB_CONF" <<<"$msg"
        check "$what, closed: message names the unusable state_dir" grep -qF "$sd" <<<"$msg"
        rb_log "$what, closed: ${msg:-<no message>}"
        check "$what, closed: no node drained" rb_nodes_ok
    fi
    rb_write_config "state_dir = \"$sd\";
$GOOD
on_error = \"open\";"
    jo=$(run_trial "$what, open" --checkpoint-dir=ckpt)
    [[ -n $jo ]] && untracked "$what, open" "$jo"
    expect "$what: root wrote nothing into it" "$(find "$sd" -mindepth 1 | head -n 3)" ""
    check "$what, open: no node drained" rb_nodes_ok
done

# ---- back to a good config: tracked again, without a restart ------------------------
rb_write_config "$GOOD"
jg=$(run_trial "config fixed")
if [[ -n $jg ]]; then
    expect "config fixed: job completes" "$(job_field "$jg" JobState)" COMPLETED
    expect "config fixed: tracked again" "$(out_var "$RB_WORKDIR/trial-$jg.out" 0 RESTORE_BUDGET_ATTEMPT)" 0
fi
expect "slurmd not restarted since" "$(rb_daemon_pid slurmd)" "$slurmd1"
measure "jobs=$((jg)) duration=$((SECONDS - T0))s"
rb_final_checks
summary
