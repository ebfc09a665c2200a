#!/bin/bash
# test_controller_unreachable.sh - every question the plugin asks the
# controller has a deadline, so a frozen (SIGSTOP) or stopped controller
# never hangs a prolog or epilog and never drains the node:
#   A. the controller freezes just as the epilog of a requeued job asks how it
#      was interrupted: the epilog gives up at its 10 s deadline, the end is
#      recorded as interrupted, and the job reruns once the controller thaws.
#   B. the controller is stopped (connection refused) at that moment: the
#      epilog records the end at once; the restarted controller reruns it.
#   C. on_exhausted = "hold" with the controller frozen when the prolog asks
#      it to hold the job: the prolog gives up at its deadline and the attempt
#      is refused in task_init instead (FAILED 1:0).
# The freeze happens at exactly the right moment: the plugin's
# slurm_bindir= points at wrappers of the real squeue/scontrol that SIGSTOP
# the real slurmctld first when a trigger file exists, then run the real
# command against the frozen controller.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;
on_exhausted = "hold";' || { fail "cluster up"; summary; }

BIN=$RB_CLUSTER_DIR/rbbin
TRIGGER=$RB_CLUSTER_DIR/rbbin/freeze-next
mkdir -p "$BIN"
for tool in squeue scontrol; do
    cat >"$BIN/$tool" <<EOF
#!/bin/sh
# a wrapper of the real $tool: freeze (or stop) the controller first, once
if [ -e "$TRIGGER" ]; then
    how=\$(cat "$TRIGGER"); rm -f "$TRIGGER"
    echo "\$(date +%s.%N) $tool \$how" >>"$BIN/events"
    kill -\$how "\$(cat "$RB_CLUSTER_DIR/run/slurmctld.pid")"
fi
exec $(command -v "$tool") "\$@"
EOF
    chmod 755 "$BIN/$tool"
done
sed -i "s|^required .*|& slurm_bindir=$BIN|" "$RB_CLUSTER_DIR/plugstack.conf"
check "slurmd restarted with slurm_bindir=$BIN" rb_restart_slurmd
ctld_pid=$(rb_daemon_pid slurmctld)
thaw() { [[ -n ${ctld_pid:-} ]] && kill -CONT "$ctld_pid" 2>/dev/null; true; }
RB_EXIT_HOOK="thaw; ${RB_EXIT_HOOK:-}"

# epilog_seconds JOB N - seconds from the wrapper's freeze to the end event
# of attempt N (the epilog ran with the controller frozen or gone).
end_recorded_within() {
    local job=$1 n=$2 tmo=$3 t0=$SECONDS
    while ((SECONDS - t0 < tmo)); do
        [[ -n $(ev_get "$job" end "$n" end) ]] && return 0
        sleep 0.2
    done
    return 1
}

# ---- A: frozen at the epilog -------------------------------------------------------
rb_workdir frozen >/dev/null
ja=$(TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch A"; summary; }
outa=$RB_WORKDIR/trial-$ja.out
checkq "A: attempt 0 wrote a checkpoint" wait_grep "$outa" "^trial\[$ja\.0\]: checkpoint step 1\$" 60
echo STOP >"$TRIGGER"
check "A: scontrol requeue $ja" timeout 10 scontrol requeue "$ja"
t_req=$SECONDS
check "A: the epilog recorded the end while the controller was frozen" end_recorded_within "$ja" 0 40
t_end=$((SECONDS - t_req))
check "A: the controller really was frozen (wrapper ran)" grep -q "squeue STOP" "$BIN/events"
check "A: the controller is still stopped (state T)" bash -c "grep -q '^State:.*T' /proc/$ctld_pid/status"
expect "A: attempt 0 ended interrupted" "$(ev_get "$ja" end 0 end)" interrupted
check "A: the epilog gave up on the controller at its deadline (slurmd.log)" \
    grep -q "job $ja: interruption cause unknown: .*deadline" "$RB_CLUSTER_DIR/log/slurmd.log"
thaw
check "A: attempt 1 runs after the controller thaws" wait_grep "$outa" "^trial\[$ja\.1\]: start" 90
measure "frozen-epilog end_recorded_after=${t_end}s"
timeout 10 scancel "$ja"
wait_state "$ja" 'CANCELLED|COMPLETED|FAILED' 60 >/dev/null

# ---- B: stopped at the epilog --------------------------------------------------------
rb_workdir stopped >/dev/null
jb=$(TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch B"; summary; }
outb=$RB_WORKDIR/trial-$jb.out
checkq "B: attempt 0 wrote a checkpoint" wait_grep "$outb" "^trial\[$jb\.0\]: checkpoint step 1\$" 60
echo TERM >"$TRIGGER"
check "B: scontrol requeue $jb" timeout 10 scontrol requeue "$jb"
t_req=$SECONDS
check "B: the epilog recorded the end with the controller gone" end_recorded_within "$jb" 0 30
t_end=$((SECONDS - t_req))
check "B: the controller was stopped by the wrapper" grep -q "squeue TERM" "$BIN/events"
expect "B: attempt 0 ended interrupted" "$(ev_get "$jb" end 0 end)" interrupted
for _ in $(seq 1 100); do kill -0 "$ctld_pid" 2>/dev/null || break; sleep 0.1; done
check "B: slurmctld restarted from its state" \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin slurmctld -f "$RB_CLUSTER_DIR/slurm.conf"
for _ in $(seq 1 100); do ctld_pid=$(rb_daemon_pid slurmctld) && break; sleep 0.1; done
check "B: attempt 1 runs on the restarted controller" wait_grep "$outb" "^trial\[$jb\.1\]: start" 120
measure "stopped-epilog end_recorded_after=${t_end}s"
timeout 10 scancel "$jb"
wait_state "$jb" 'CANCELLED|COMPLETED|FAILED' 60 >/dev/null

# ---- C: frozen when the prolog holds ---------------------------------------------------
rb_workdir hold >/dev/null
jc=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch C"; summary; }
outc=$RB_WORKDIR/trial-$jc.out
checkq "C: attempt 0 wrote a checkpoint" wait_grep "$outc" "^trial\[$jc\.0\]: checkpoint step 1\$" 60
check "C: scontrol requeue $jc" timeout 10 scontrol requeue "$jc"
# attempt 1 restores and fails (42); the prolog of attempt 2 would hold it
checkq "C: attempt 1 failed its restore" wait_grep "$outc" "^trial\[$jc\.1\]: start" 90
echo STOP >"$TRIGGER"
check "C: attempt 2 refused in the ledger" wait_ev "$jc" 'kind=start attempt=2 decision=refuse' 90
check "C: the prolog gave up holding at its deadline (slurmd.log)" \
    wait_grep "$RB_CLUSTER_DIR/log/slurmd.log" "job $jc: requeue-hold failed .*refused instead" 40
# the hold's first call froze it: squeue, reading the AdminComment to merge
# the reason into (docs/rule.md, "Where the reason shows")
check "C: the controller really was frozen" grep -qE "(squeue|scontrol) STOP" "$BIN/events"
thaw
check "C: job ends FAILED (refused in task_init)" wait_state "$jc" FAILED 90
expect "C: ExitCode" "$(job_field "$jc" ExitCode)" 1:0
check "C: the refusal reached the job's stderr" \
    wait_grep "$outc" "restore_budget: job $jc attempt 2 refused: restore budget exhausted" 10

RB_EXPECT_PLUGIN_ERRORS=1 rb_final_checks
measure "duration=$((SECONDS - T0))s"
summary
