#!/bin/bash
# test_batch_node_dies.sh - the batch host dies mid-attempt (slurmd and the
# job's processes killed with SIGKILL, the node set DOWN, as when a node
# loses power): its epilog never runs, so the attempt's end is never
# recorded there.  The controller requeues the job onto the other node,
# whose batch step records and charges the next attempt from its own note
# (issue 12: only the batch host does ledger work).  The budget must hold:
# one start per attempt, the dead attempt without an end, the rerun handed
# the checkpoint, the job completes.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
M=1 R=3

rb_cluster_up "max_failures = $M;
restore_retry_num = $R;
restore_timeout = 0;" || { fail "cluster up"; summary; }
rb_workdir dies >/dev/null
ck=$RB_WORKDIR/ckpt

j=$(TRIAL_STEPS=12 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt "$MN_JOB") ||
    { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
check "attempt 0 runs" wait_state "$j" RUNNING 60
A=$(job_field "$j" NodeList)
B=$(mn_other "$A")
checkq "attempt 0 writes 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60

# ---- the batch host dies ---------------------------------------------------------------
# procs_of_job J - the processes of job J on node A: those in A's UTS
# namespace (its slurmd's, which the job's slurmstepd and script inherit)
# whose environment says SLURM_JOB_ID=J, and J's slurmstepd there. Never a
# process of another cluster: the legs run at the same time on one host,
# with the same job ids, and share its pid namespace.
procs_of_job() {
    local p
    for p in /proc/[0-9]*; do
        [[ $(readlink "$p/ns/uts" 2>/dev/null) == "$uts_a" ]] || continue
        if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "SLURM_JOB_ID=$1" ||
            [[ $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) == "slurmstepd: [$1."* ]]; then
            echo "${p#/proc/}"
        fi
    done
}
pid=$(mn_slurmd_pid "$A") || fail "slurmd of $A runs"
uts_a=$(readlink "/proc/$pid/ns/uts")
check "$A's slurmd has a UTS namespace of its own" test -n "$uts_a" -a "$uts_a" != "$(readlink /proc/self/ns/uts)"
victims=$(procs_of_job "$j" | tr '\n' ' ')
rb_log "killing slurmd $pid of $A and job $j's processes there: $victims"
check "job $j's processes on $A found" test -n "$victims"
kill -KILL "$pid" $victims 2>/dev/null
gone() { local i; for ((i = 0; i < 50; i++)); do [[ ! -d /proc/$1 || $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]] && return 0; sleep 0.1; done; return 1; }
check "slurmd of $A is dead" gone "$pid"
check "no process of job $j is left on $A" test -z "$(procs_of_job "$j")"
check "$A set DOWN" timeout 10 scontrol update NodeName="$A" State=DOWN Reason=rb-test-died
check "job $j requeued after its batch host died" wait_restart_count "$j" 1 60
check "attempt 1 runs on $B" mn_wait_on "$j" "$B" 90
check "job $j completes on $B" wait_state "$j" COMPLETED 120
expect "Restarts" "$(job_field "$j" Restarts)" 1

# ---- the budget held -------------------------------------------------------------------
for n in 0 1; do
    expect "attempt $n: one kind=start event" "$(ev_count "$j" " kind=start attempt=$n( |$)")" 1
done
expect "attempt 0: no end recorded (its epilog never ran)" "$(ev_count "$j" " kind=end attempt=0( |$)")" 0
expect "attempt 1: one end" "$(ev_get "$j" end 1 end)" completed
c=$(out_var "$out" 1 RESTORE_BUDGET_CHECKPOINT)
check "attempt 1 was handed a checkpoint under $ck" test "${c%/*}" == "$ck"
expect "attempt 1: PHASE" "$(out_var "$out" 1 RESTORE_BUDGET_PHASE)" RESTORING
expect "attempt 1: FAILURES" "$(out_var "$out" 1 RESTORE_BUDGET_FAILURES)" 0
check "$B's slurmd logged the start of attempt 1 (its batch step)" \
    grep -qE "restore_budget: job $j attempt 1: " "$RB_CLUSTER_DIR/log/slurmd-$B.log"
expect "record cur.attempt" "$(rec_get "$j" cur.attempt)" 1
expect "record failures" "$(rec_get "$j" failures)" 0
rb_log "events of job $j:"$'\n'"$(cat "$(rb_evlog_path "$j")")"

# ---- the node comes back ---------------------------------------------------------------
check "slurmd of $A starts again" "$RB_CLUSTER_SH" start-node "$RB_CLUSTER_DIR" "$A"
# slurmd's registration may return the node by itself (ReturnToService);
# otherwise an admin resumes it
node_idle() { [[ $(timeout 10 sinfo -h -n "$A" -o %T 2>/dev/null) == idle ]]; }
for ((i = 0; i < 30; i++)); do node_idle && break; sleep 0.3; done
node_idle || timeout 10 scontrol update NodeName="$A" State=RESUME
for ((i = 0; i < 100; i++)); do node_idle && break; sleep 0.3; done
check "$A is back (idle)" node_idle
measure "batch_node_dies duration=$((SECONDS - T0))s"
mn_final_checks
summary
