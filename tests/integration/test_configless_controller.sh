#!/bin/bash
# test_configless_controller.sh - what issue 22 asks of a site: no shared
# directory, no config file, no per-node file.  A configless cluster
# (RB_CONFIGLESS=1: slurmd fetches slurm.conf and plugstack.conf from the
# controller and has nothing of its own) with the plugin configured only by
# its plugstack.conf line, store=controller: the budget lives in each job's
# AdminComment.  A corrupt-checkpoint trial (M=1, R=2), preempted once,
# makes exactly R x (M+1) = 4 restore attempts and attempt 5 is refused; its
# line says so; nothing is written under state_dir or run_dir; `explain`
# and `show` work from the plugstack line alone (no --config).
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_configless_up "store=controller max_failures=1 restore_retry_num=2 restore_timeout=0" ||
    { fail "configless cluster up"; summary; }
cli=$RB_ROOT/build/restore-budget
check "slurmd fetched the plugstack line" grep -qF "$RB_PLUGSTACK_ARGS" "$RB_CLUSTER_DIR/spool/conf-cache/plugstack.conf"
expect "no restore_budget.conf in the cluster" "$(find "$RB_CLUSTER_DIR" -name 'restore_budget.conf*')" ""
line() { timeout 10 squeue -h --states=all -j "$1" -O admin_comment:0 | sed -n 's/^restore_budget\[state\]: //p' | tr ' ' '\n' | sed -n "s/^$2=//p"; }

rb_workdir corrupt >/dev/null
j=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "job $j wrote 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
checkq "job $j preempted" preempt "$j" 30
check "job $j ends" wait_state "$j" 'FAILED|COMPLETED|CANCELLED' 240
expect "job $j: FAILED 1:0" "$(job_field "$j" JobState) $(job_field "$j" ExitCode)" "FAILED 1:0"
expect "job $j: restore attempts = R x (M+1) = 4" "$(grep -c "^trial\[$j\.[0-9]*\]: restoring from " "$out")" 4
expect "the line: attempt 5 refused, F=2, M=1, R=2" "$(line "$j" a) $(line "$j" rf) $(line "$j" F) $(line "$j" M) $(line "$j" R)" "5 1 2 1 2"
check "the job was told, naming the plugstack arguments" grep -q 'refused.*plugstack.conf arguments' "$out"
s=$(env -u RESTORE_BUDGET_CONFIG "$cli" show "$j")
expect_match "show (settings from the plugstack line): exhausted" "$s" 'exhausted: *yes'
expect "state_dir and run_dir hold nothing" "$(find "$RB_STATE" "$RB_RUN_DIR" -type f 2>/dev/null | head -n 3)" ""
measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
