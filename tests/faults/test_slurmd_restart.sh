#!/bin/bash
# test_slurmd_restart.sh - slurmd restarted (kill -TERM, start again) while a
# tracked job runs, three times:
#   a. during attempt 0 (FRESH): the job keeps running and checkpointing;
#   b. during attempt 1, while it is RESTORING (its ack held back);
#   c. slurmd down when attempt 1 acknowledges and ends by itself: the
#      epilog runs only once the new slurmd is up.
# The budget must not notice: one start and one end per attempt, attempt 1
# charged nothing for the requeue, confirmed by its ack, F = r = 0; slurmd up,
# no node drained, no restore_budget error at all.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
rb_cluster_up 'max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;
on_error = "closed";' || { fail "cluster up"; summary; }
rb_workdir restart >/dev/null
hold=$RB_WORKDIR/hold-ack
: >"$hold"
ck=$RB_WORKDIR/ckpt

j=$(TRIAL_STEPS=6 TRIAL_HOLD_ACK=$hold ft_submit) || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "attempt 0 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 1\$" 60

# a. during attempt 0
s0=$(rb_daemon_pid slurmd)
t0=$(rb_now)
check "a: slurmd restarted during attempt 0" ft_restart_slurmd_busy
ta=$(rb_since "$t0")
check "a: a new slurmd" test "$(rb_daemon_pid slurmd)" != "$s0"
expect "a: job still RUNNING" "$(job_field "$j" JobState)" RUNNING
checkq "a: attempt 0 keeps checkpointing" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 3\$" 30
check "a: no node drained" rb_nodes_ok

check "attempt 0 requeued" timeout 10 scontrol requeue "$j"
checkq "attempt 1 holds its ack (RESTORING)" wait_grep "$out" "^trial\[$j\.1\]: holding the acknowledgement" 60
handed=$(out_var "$out" 1 RESTORE_BUDGET_CHECKPOINT)

# b. during attempt 1, RESTORING
check "b: slurmd restarted while attempt 1 is RESTORING" ft_restart_slurmd_busy
expect "b: job still RUNNING" "$(job_field "$j" JobState)" RUNNING
check "b: no node drained" rb_nodes_ok

# c. down while attempt 1 acknowledges and finishes
FT_WHILE_DOWN="rm -f '$hold'; wait_grep '$out' '^trial\[$j\.1\]: done: 6 steps' 60 >/dev/null && sleep 1"
check "c: slurmd down while attempt 1 acknowledges and ends, then started again" ft_restart_slurmd_busy
FT_WHILE_DOWN=
check "job $j completes" wait_state "$j" COMPLETED 90
t_epi=$(rb_since "$FT_SLURMD_DOWN_AT")
wait_not_running "$j" 60 >/dev/null
check "attempt 1 acknowledged" grep -q "^trial\[$j\.1\]: acknowledged restore" "$out"
expect "attempt 1: ATTEMPT" "$(out_var "$out" 1 RESTORE_BUDGET_ATTEMPT)" 1
expect "attempt 1: PHASE" "$(out_var "$out" 1 RESTORE_BUDGET_PHASE)" RESTORING
expect "attempt 1: RESTORES_LEFT" "$(out_var "$out" 1 RESTORE_BUDGET_RESTORES_LEFT)" 4
check "attempt 1 handed a checkpoint ($handed)" test "${handed%/*}" == "$ck"
for n in 0 1; do
    expect "attempt $n: one start event" "$(ev_count "$j" " kind=start attempt=$n( |\$)")" 1
    expect "attempt $n: one end event" "$(ev_count "$j" " kind=end attempt=$n( |\$)")" 1
done
expect "end 0" "$(ev_get "$j" end 0 end)" interrupted
expect "start 1: charge" "$(ev_get "$j" start 1 charge)" none
expect "end 1 (recorded after slurmd came back)" "$(ev_get "$j" end 1 end)" completed
expect "end 1: confirmed" "$(ev_get "$j" end 1 confirmed)" ack
for kv in failures=0 restore_failures=0 cur.attempt=1 cur.end=completed "checkpoint=$handed"; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done
rb_log "events of job $j:"$'\n'"$(cat "$(rb_evlog_path "$j")")"

measure "restart_a=${ta}s down_to_completed_c=${t_epi}s duration=$((SECONDS - T0))s"
rb_final_checks
summary
