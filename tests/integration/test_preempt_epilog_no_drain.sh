#!/bin/bash
# test_preempt_epilog_no_drain.sh - the first preemption of a tracked job
# never drains the node, on every release. On 24.11 the plugin of
# 2026-11-30 asked the controller through libslurm from the epilog process,
# where libslurm is not initialised: `fatal: No hash plugins loaded`, the
# epilog died (status 0x0100) and slurmd drained the node. Now the epilog
# asks through squeue with a deadline and records the preemption.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "cluster up"; summary; }

rb_workdir preempt >/dev/null
j=$(TRIAL_STEPS=6 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "attempt 0 wrote a checkpoint" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 1\$" 60
checkq "job $j preempted" preempt "$j" 30
check "the epilog recorded attempt 0's end" wait_ev "$j" 'kind=end attempt=0' 30
expect "attempt 0 ended interrupted" "$(ev_get "$j" end 0 end)" interrupted
expect "the controller said: preempted" "$(ev_get "$j" end 0 detail)" preempted
check "no node drained after the preemption" rb_nodes_ok
fatal=$(grep -E 'fatal|spank/epilog returned status|epilog error|draining the node' \
    "$RB_CLUSTER_DIR/log/slurmd.log" | head -n 3)
expect "no fatal, no failed epilog in slurmd.log" "$fatal" ""
check "attempt 1 restores" wait_grep "$out" "^trial\[$j\.1\]: start" 60
check "job completes" wait_state "$j" COMPLETED 90
# read once the job is done: the trial prints its environment just after
# its "start" line, and a read between the two found none (a trixie leg)
expect "attempt 1: LAST_END" "$(out_var "$out" 1 RESTORE_BUDGET_LAST_END)" interrupted
rb_final_checks
measure "duration=$((SECONDS - T0))s"
summary
