#!/bin/bash
# test_config_deleted.sh - the plugin's config file deleted while a job runs.
#
# The config (on_error = "closed") is removed during attempt 0.  Attempt 0
# keeps running; its epilog cannot load the config (error in slurmd.log with
# the path and the cause).  Attempt 1 starts without a config: a missing
# config has no on_error to consult, so, as for a config that does not parse
# (tests/integration/test_broken_config.sh), the attempt runs untracked and
# slurmd.log names the file.  The config is restored; attempt 2 is tracked
# again and its budget continues the record of attempt 0 (nothing charged
# for the interruption, the checkpoint handed out as usual).
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
BASE='max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;
on_error = "closed";'
rb_cluster_up "$BASE" || { fail "cluster up"; summary; }
rb_workdir cfg >/dev/null
slog=$RB_CLUSTER_DIR/log/slurmd.log
slurmd0=$(rb_daemon_pid slurmd)
ck=$RB_WORKDIR/ckpt

j=$(TRIAL_STEPS=8 ft_submit) || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "attempt 0 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 1\$" 60
expect "attempt 0 tracked" "$(out_var "$out" 0 RESTORE_BUDGET_ATTEMPT)" 0
n0=$(log_len "$slog")
check "config deleted while attempt 0 runs" rm "$RB_CONF"
checkq "attempt 0 keeps running (checkpoint step 2)" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 30
check "job parked between attempts" ft_park "$j"
errs=$(new_log_lines "$slog" "$n0" | grep -E 'error: .*restore_budget: ')
check "epilog 0: slurmd.log names $RB_CONF and the cause" \
    grep -qE "epilog: job $j: .*$RB_CONF.*No such file or directory" <<<"$errs"

n1=$(log_len "$slog")
t0=$(rb_now)
check "job released (attempt 1, no config)" ft_release "$j"
checkq "attempt 1 checkpoints" wait_grep "$out" "^trial\[$j\.1\]: checkpoint step 1\$" 60
t_untracked=$(rb_since "$t0")
expect "attempt 1 runs untracked (no RESTORE_BUDGET_*)" "$(attempt_env "$out" 1 | tr '\n' ' ')" ""
errs=$(new_log_lines "$slog" "$n1" | grep -E 'error: .*restore_budget: ')
rb_log "slurmd.log errors, attempt 1:"$'\n'"$errs"
check "prolog 1: slurmd.log names $RB_CONF, the cause and 'untracked'" \
    grep -qE "prolog: .*$RB_CONF.*No such file or directory.*untracked" <<<"$errs"
check "no record was made for attempt 1" test -z "$(ev_lines "$j" start 1)"
expect "slurmd the same process" "$(rb_daemon_pid slurmd)" "$slurmd0"
check "no node drained" rb_nodes_ok

# The admin puts the config back; the next attempt is tracked again.
check "config restored" rb_write_config "$BASE"
checkq "attempt 1 requeued" bash -c "scontrol requeue $j && sleep 0.5"
checkq "attempt 2 starts" wait_grep "$out" "^trial\[$j\.2\]: start on " 60
check "job $j completes" wait_state "$j" COMPLETED 60
expect "attempt 2: ATTEMPT" "$(out_var "$out" 2 RESTORE_BUDGET_ATTEMPT)" 2
expect "attempt 2: PHASE" "$(out_var "$out" 2 RESTORE_BUDGET_PHASE)" RESTORING
expect "attempt 2: FAILURES" "$(out_var "$out" 2 RESTORE_BUDGET_FAILURES)" 0
expect "attempt 2: RESTORE_FAILURES" "$(out_var "$out" 2 RESTORE_BUDGET_RESTORE_FAILURES)" 0
expect "attempt 2: RESTORES_LEFT" "$(out_var "$out" 2 RESTORE_BUDGET_RESTORES_LEFT)" 4
expect "attempt 2: LAST_END" "$(out_var "$out" 2 RESTORE_BUDGET_LAST_END)" interrupted
c2=$(out_var "$out" 2 RESTORE_BUDGET_CHECKPOINT)
check "attempt 2 handed a checkpoint of the job's dir ($c2)" test "${c2%/*}" == "$ck"
wait_not_running "$j" 30 >/dev/null
expect "one start event for attempt 0" "$(ev_count "$j" ' kind=start attempt=0( |$)')" 1
expect "one start event for attempt 2" "$(ev_count "$j" ' kind=start attempt=2( |$)')" 1
expect "start 2: charged attempt (the last recorded)" "$(ev_get "$j" start 2 charged)" 0
expect "start 2: charge" "$(ev_get "$j" start 2 charge)" none
expect "end 0 recorded late (by attempt 1's epilog)" "$(ev_get "$j" end 0 end)" interrupted
expect "end 2" "$(ev_get "$j" end 2 end)" completed
for kv in failures=0 restore_failures=0 cur.attempt=2 cur.end=completed exhausted=false; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done
rb_log "events of job $j:"$'\n'"$(cat "$(rb_evlog_path "$j")")"

measure "release_to_untracked_checkpoint=${t_untracked}s duration=$((SECONDS - T0))s"
ft_final_checks
summary
