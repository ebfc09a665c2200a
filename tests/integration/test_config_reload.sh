#!/bin/bash
# test_config_reload.sh - the admin edits restore_retry_num (and max_failures)
# while a requeued job waits between attempts (held): the next attempt runs
# with the new values, and no daemon was restarted.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "cluster up"; summary; }
rb_workdir reload >/dev/null
slurmd0=$(rb_daemon_pid slurmd) ctld0=$(rb_daemon_pid slurmctld)

j=$(TRIAL_STEPS=6 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "attempt 0 wrote a checkpoint" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 1\$" 60
expect "attempt 0: RESTORE_RETRY_NUM" "$(out_var "$out" 0 RESTORE_BUDGET_RESTORE_RETRY_NUM)" 2
expect "attempt 0: MAX_FAILURES" "$(out_var "$out" 0 RESTORE_BUDGET_MAX_FAILURES)" 1

checkq "attempt 0 preempted" preempt "$j" 30
check "scontrol hold on the pending requeued job" timeout 10 scontrol hold "$j"
expect "job is pending" "$(job_field "$j" JobState)" PENDING
expect_match "job is held" "$(job_field "$j" Reason)" 'Held'
# The admin edits the config while the job waits.
rb_write_config 'max_failures = 3;
restore_retry_num = 4;
restore_timeout = 0;'
check "config edited" grep -q 'restore_retry_num = 4;' "$RB_CONF"
# still waiting: attempt 1 has not started
check "attempt 1 did not start while held" bash -c "! grep -q '^trial\[$j\.1\]' '$out'"
check "scontrol release" timeout 10 scontrol release "$j"

checkq "attempt 1 started" wait_grep "$out" "^trial\[$j\.1\]: restoring from" 60
expect "attempt 1: RESTORE_RETRY_NUM (new value)" "$(out_var "$out" 1 RESTORE_BUDGET_RESTORE_RETRY_NUM)" 4
expect "attempt 1: MAX_FAILURES (new value)" "$(out_var "$out" 1 RESTORE_BUDGET_MAX_FAILURES)" 3
expect "attempt 1: RESTORES_LEFT = (3+1)*4" "$(out_var "$out" 1 RESTORE_BUDGET_RESTORES_LEFT)" 16
expect "ledger: attempt 0 ran with restore_retry_num" "$(ev_get "$j" start 0 restore_retry_num)" 2
expect "ledger: attempt 1 runs with restore_retry_num" "$(ev_get "$j" start 1 restore_retry_num)" 4
expect "ledger: attempt 1 runs with max_failures" "$(ev_get "$j" start 1 max_failures)" 3
check "job completes" wait_state "$j" COMPLETED 90
check_attempts_recorded "$j" 1
expect "record cur.limits.restore_retry_num" "$(rec_get "$j" cur.limits.restore_retry_num)" 4
expect "slurmd not restarted (same pid)" "$(rb_daemon_pid slurmd)" "$slurmd0"
expect "slurmctld not restarted (same pid)" "$(rb_daemon_pid slurmctld)" "$ctld0"
expect "slurmd loaded the config once (at its start)" \
    "$(grep -c 'restore_budget: config .* loaded' "$RB_CLUSTER_DIR/log/slurmd.log")" 1
measure "attempts=2 duration=$((SECONDS - T0))s"
rb_final_checks
summary
