#!/bin/bash
# test_controller_ctld_kill.sh - store = "controller" when slurmctld dies:
# the budget is the controller's job record, so a `kill -9` of slurmctld
# can take back what it had not saved yet (state saves are batched over a
# few seconds: SLURM-FACTS), the budget line with it.  A trial whose every
# restore fails (M=1, R=2: R x (M+1) = 4 restores) runs while slurmctld is
# killed with -9 and started again (it recovers its saved state) KILLS
# times, once right after an attempt wrote its line; then a graceful
# restart.  The bound holds within one charge per kill: at most
# 4 + KILLS restore attempts, and the job ends refused; every line read is
# whole (strict: never a torn or half-written line); no node drained.
# After each kill -9 slurmd is restarted too, and the test's own preemptor
# jobs are cancelled: a rollback can bring back a job the node has long
# finished as RUNNING (seen on 26.05: the preemptor, holding both CPUs, not
# let go by the controller even after the node registered again for 3 min;
# Slurm's, not the plugin's: docs/stores.md, "When slurmctld dies").  The
# trial itself may come back RUNNING with no process (24.11 leg, CI
# 2026-12-03: attempt 1 had ended and been requeued; the controller kept the
# job RUNNING for the whole 90 s of the next wait): after 20 s of that it is
# requeued, as an admin would (rb_requeue_if_stale), within the same bound.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
KILLS=2

rb_cluster_up 'store = "controller";
max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "cluster up"; summary; }
line() { timeout 10 squeue -h --states=all -j "$1" -O admin_comment:0 2>/dev/null | sed -n 's/^restore_budget\[state\]: //p' | tr ' ' '\n' | sed -n "s/^$2=//p"; }

rb_workdir ctldkill >/dev/null
j=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "job $j wrote 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
checkq "job $j preempted" preempt "$j" 30
for ((k = 1; k <= KILLS; k++)); do
    # right after attempt k wrote its line: within the save window
    checkq "attempt $k started" wait_grep "$out" "^trial\[$j\.$k\]: restoring from " 90
    check "kill -9 slurmctld #$k (attempt $k running), started again" rb_restart_ctld KILL
    checkq "slurmd restarted (the node registers again)" rb_restart_slurmd busy
    timeout 10 scancel --name=preemptor 2>/dev/null
    rb_requeue_if_stale "$j"
    rb_log "after kill #$k: line a=$(line "$j" a) F=$(line "$j" F) r=$(line "$j" r); Restarts=$(job_field "$j" Restarts)"
done
# Slurm's own answer to a rollback that forgot a batch step still running:
# it starts the job again on the node that runs it and drains the node
# "Duplicate jobid" (24.11 leg, 2026-12-03: recovered PENDING, "Registered
# PENDING JobId=1 StepId=1.batch", started again, drained).  An admin
# resumes the node; every drain slurmctld logs must be that one.
NRESUMED=0
resume_duplicate_drain() {
    local n
    for n in $(timeout 10 sinfo -h -N -t drain -o '%N|%E' 2>/dev/null | sed -n 's/|Duplicate jobid$//p' | sort -u); do
        rb_log "node $n drained by slurmctld, 'Duplicate jobid' (its rollback's doing): resumed, as an admin would"
        timeout 10 scontrol update NodeName="$n" State=RESUME
        NRESUMED=$((NRESUMED + 1))
    done
}
job_ends() {
    local t
    for ((t = 0; t < 300; t += 5)); do
        resume_duplicate_drain
        wait_state "$j" 'FAILED|COMPLETED|CANCELLED' 5 2>/dev/null && return 0
    done
    return 1
}
check "graceful slurmctld restart" rb_restart_ctld TERM
check "job $j ends" job_ends
st=$(job_field "$j" JobState) n=$(grep -c "^trial\[$j\.[0-9]*\]: restoring from " "$out")
expect "job $j: refused in the end (FAILED)" "$st" FAILED
check "job $j: restore attempts $n <= R x (M+1) + kills = $((4 + KILLS))" test "$n" -le $((4 + KILLS))
check "job $j: restore attempts $n >= R x (M+1) = 4" test "$n" -ge 4
expect "the line: refused, F=2" "$(line "$j" rf) $(line "$j" F)" "1 2"
check "the job was told why" grep -q 'refused' "$out"
measure "kills=$KILLS restore_attempts=$n restarts=$(job_field "$j" Restarts) duration=$((SECONDS - T0))s"
# an end written while slurmctld was dying fails loudly (it counts as
# interrupted, within the bound above): that error, and no other
errs=$(grep -E 'error: .*restore_budget: ' "$RB_CLUSTER_DIR/log/slurmd.log" | grep -v 'its end is not recorded (it will count as interrupted)' | head -n 3)
expect "no restore_budget error in slurmd.log but an end lost with the controller" "$errs" ""
resume_duplicate_drain
if ((NRESUMED > 0)); then
    clog=$RB_CLUSTER_DIR/log/slurmctld.log
    expect "every drain slurmctld logged was its 'Duplicate jobid'" \
        "$(grep -c 'state set to DRAIN' "$clog")" "$(grep -c 'error: Duplicate jobid on nodes' "$clog")"
    RB_DRAINS_ALLOWED='drain_nodes: node .* state set to DRAIN|error: Duplicate jobid on nodes'
fi
RB_EXPECT_PLUGIN_ERRORS=1 rb_final_checks
summary
