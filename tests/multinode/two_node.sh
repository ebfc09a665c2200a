# shellcheck shell=bash
# two_node.sh - the body of test_two_node_alloc.sh and test_two_node_srun.sh
# (sourced; MN_VARIANT = alloc or srun).
#
# A 2-node job (sbatch -N 2) whose prolog and epilog run on BOTH nodes: every
# attempt must be charged exactly once (one kind=start per attempt), however
# many nodes run the prolog.  slurm.conf also gets Prolog=/Epilog= probe.sh,
# which logs every prolog/epilog run per node (log/probe.log), to prove both
# nodes ran them.
#   alloc: PrologFlags=Alloc: the prolog runs on both nodes at allocation.
#   srun:  default PrologFlags: the prolog runs on the first node at the
#          batch launch and on the second one when the job's `srun` reaches
#          it (during the attempt, racing the batch step's own callbacks).
# M = 1, R = 2, restore_timeout = 0.  The job (tests/lib/trial_job.sh, TRIAL_FAIL_AFTER_ACK=42):
#   attempt 0: FRESH, checkpoints; preempted (preemptor pinned to node A)
#   attempt 1: restores, acknowledges, exits 42 (RequeueExit)
#   attempt 2: charged for 1: F 0->1; same again
#   attempt 3: charged for 2: F 1->2 > M: refused in task_init: FAILED 1:0
T0=$SECONDS
M=1 R=2
RB_MN_EXTRA_CONF="Prolog=$MN_PROBE
Epilog=$MN_PROBE"
export RB_MN_EXTRA_CONF
srun_knob=0
case $MN_VARIANT in
    alloc) export RB_PROLOGFLAGS=Alloc ;;
    srun)  unset RB_PROLOGFLAGS; srun_knob=1 ;;
    *) echo "two_node.sh: MN_VARIANT must be alloc or srun" >&2; exit 2 ;;
esac

rb_cluster_up "max_failures = $M;
restore_retry_num = $R;
restore_timeout = 0;" || { fail "cluster up"; summary; }
rb_workdir "two-$MN_VARIANT" >/dev/null
ck=$RB_WORKDIR/ckpt
read -r A B < <(mn_nodes)
# Only the batch host does ledger work (issue 12). Slurm launches a job's
# batch script on the first node of its allocation, A here: every file call
# of B's slurmd and what it forks (prologs, epilogs, the srun step's
# slurmstepd) is traced, to show B's prolog and epilog never name state_dir.
# A is not traced: strace stops a tracee at every system call, and the job
# itself, on A, would run many times slower on a loaded machine.
check "strace follows the slurmd of $B" mn_trace_start "$B"

j=$(TRIAL_STEPS=30 TRIAL_CKPT_EVERY=1 TRIAL_FAIL_AFTER_ACK=42 TRIAL_SRUN=$srun_knob \
    submit_as_user -p low -N 2 -n 2 --ntasks-per-node=1 --checkpoint-dir=ckpt "$MN_JOB") ||
    { fail "sbatch -N 2"; summary; }
out=$RB_WORKDIR/trial-$j.out
check "job $j runs" wait_state "$j" RUNNING 60
expect "NumNodes" "$(job_field "$j" NumNodes)" 2
checkq "attempt 0 writes 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 120
if [[ $MN_VARIANT == srun ]]; then
    check "attempt 0: srun reached both nodes" grep -qE "^trial\[$j\.0\]: srun on every node: ($A $B|$B $A) \$" "$out"
fi
t0=$(rb_now)
checkq "attempt 0 preempted (preemptor on $A)" mn_preempt_on "$j" "$A" 60
check "job $j ends FAILED (refused at attempt 3)" wait_state "$j" FAILED 300
t_end=$(rb_since "$t0")
expect "ExitCode" "$(job_field "$j" ExitCode)" "1:0"
expect "Restarts" "$(job_field "$j" Restarts)" 3
c=$(out_var "$out" 1 RESTORE_BUDGET_CHECKPOINT)
check "attempt 1 was handed a checkpoint under $ck" test "${c%/*}" == "$ck"
expect "attempt 2: CHECKPOINT (kept)" "$(out_var "$out" 2 RESTORE_BUDGET_CHECKPOINT)" "$c"
expect "attempt 1: FAILURES" "$(out_var "$out" 1 RESTORE_BUDGET_FAILURES)" 0
expect "attempt 1: RESTORES_LEFT" "$(out_var "$out" 1 RESTORE_BUDGET_RESTORES_LEFT)" $(((M + 1) * R))
expect "attempt 1: LAST_END" "$(out_var "$out" 1 RESTORE_BUDGET_LAST_END)" interrupted
expect "attempt 2: FAILURES" "$(out_var "$out" 2 RESTORE_BUDGET_FAILURES)" 1
expect "attempt 2: RESTORES_LEFT" "$(out_var "$out" 2 RESTORE_BUDGET_RESTORES_LEFT)" $(((M + 1 - 1) * R))
expect "attempt 2: LAST_END" "$(out_var "$out" 2 RESTORE_BUDGET_LAST_END)" failed:42
expect "attempts whose script ran" "$(out_attempts "$out" | tr '\n' ' ')" "0 1 2 "
check "attempt 3 refused with a clear message in the job's output" \
    grep -qE "restore_budget: job $j attempt 3 refused: restore budget exhausted: failures F=2 > max_failures M=1" "$out"

# ---- charged exactly once per attempt ---------------------------------------------------
for n in 0 1 2 3; do
    expect "attempt $n: one kind=start event" "$(ev_count "$j" " kind=start attempt=$n( |$)")" 1
    expect "attempt $n: at most one kind=end event" "$(( $(ev_count "$j" " kind=end attempt=$n( |$)") <= 1 ))" 1
    # the plugin logs a non-duplicate start once (INFO/WARNING), a duplicate never
    expect "attempt $n: one start logged across both slurmd logs" \
        "$(cat "$RB_CLUSTER_DIR"/log/slurmd-*.log | grep -cE "restore_budget: job $j attempt $n: ")" 1
done
expect "start 1: charge" "$(ev_get "$j" start 1 charge)" none
expect "start 2: charge" "$(ev_get "$j" start 2 charge)" failure
expect "start 2: failures" "$(ev_get "$j" start 2 failures)" "0->1"
expect "start 3: charge" "$(ev_get "$j" start 3 charge)" failure
expect "start 3: failures" "$(ev_get "$j" start 3 failures)" "1->2"
expect "start 3: decision" "$(ev_get "$j" start 3 decision)" refuse
expect "end 0" "$(ev_get "$j" end 0 end)" interrupted
expect "end 1" "$(ev_get "$j" end 1 end)" failed:42
expect "end 2" "$(ev_get "$j" end 2 end)" failed:42
for kv in failures=2 restore_failures=0 failures_total=2 interruptions=1 \
          exhausted=true cur.attempt=3 cur.refused=true "checkpoint=$c"; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done

# ---- the prolog and the epilog ran on both nodes ---------------------------------------
# Epilogs of the job may still be running on one node when the job shows FAILED.
wait_not_running "$j" 30 >/dev/null
sleep 1
last_prolog=3; [[ $MN_VARIANT == srun ]] && last_prolog=2   # no srun in a refused attempt
for ((n = 0; n <= last_prolog; n++)); do
    expect "attempt $n: prolog ran on both nodes" "$(probe_nodes prolog_slurmd "$j" "$n")" "$A $B"
done
for node in $A $B; do
    expect "epilog ran on $node for each of the 4 attempts" \
        "$(grep -c "^epilog_slurmd node=$node job=$j " "$RB_CLUSTER_DIR/log/probe.log")" 4
done
# ---- only the batch host touched state_dir ----------------------------------------------
expect "the batch script of job $j ran on $A only (the first node), every attempt" \
    "$(mn_batch_hosts "$j" | tr '\n' ' ')" "$A "
# the trace sees B's prologs: each wrote its note under run_dir
calls=$(mn_trace_calls "$B" "$RB_RUN_DIR")
check "$B's trace names run_dir, where its prologs write their notes ($calls calls)" test "${calls:-0}" -gt 0
expect "$B never ran the batch script: its prologs and epilogs touched nothing under state_dir" \
    "$(mn_trace_calls "$B" "$RB_STATE")" 0
rb_log "probe.log for job $j:"$'\n'"$(grep " job=$j " "$RB_CLUSTER_DIR/log/probe.log")"
rb_log "events of job $j:"$'\n'"$(cat "$(rb_evlog_path "$j")")"

measure "variant=$MN_VARIANT preempt_to_failed=${t_end}s duration=$((SECONDS - T0))s"
mn_final_checks
summary
