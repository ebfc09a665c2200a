#!/bin/bash
# test_configless_controller.sh - what issue 22 asks of a site: no shared
# directory, no config file, no per-node file.  A configless cluster
# (RB_CONFIGLESS=1: slurmd fetches slurm.conf and plugstack.conf from the
# controller and has nothing of its own) with the plugin configured only by
# its plugstack.conf line, which names no store: the default, "controller",
# keeps the budget in each job's AdminComment.  With accounting (a private
# slurmdbd and MariaDB, RB_ACCOUNTING=1): the per-run history in sacct -D.
# A corrupt-checkpoint trial (M=1, R=2), preempted once, makes exactly
# R x (M+1) = 4 restore attempts and attempt 5 is refused; its line says
# so; nothing is written under state_dir or run_dir; `show`, `list` and
# `explain` (one row per run, from sacct) work from the plugstack line
# alone (no --config).
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

RB_ACCOUNTING=1 rb_configless_up "max_failures=1 restore_retry_num=2 restore_timeout=0" ||
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
l=$(env -u RESTORE_BUDGET_CONFIG "$cli" list --state exhausted)
check "list (settings from the plugstack line): job $j exhausted" grep -Eq "^$j +$RB_USER +5 +exhausted " <<<"$l"
# slurmdbd may take a moment to store the last row
for _ in $(seq 1 50); do
    [[ $(timeout 10 sacct -n -D -X -P -j "$j" -o JobID 2>/dev/null | grep -c "^$j\$") -ge 6 ]] && break
    sleep 0.2
done
e=$(env -u RESTORE_BUDGET_CONFIG "$cli" explain "$j")
rb_log "explain:
$e"
rows=$(grep -E '^[0-9]+ ' <<<"$e")
expect "explain: six runs in sacct -D (attempts 0..5)" "$(wc -l <<<"$rows")" 6
check "run 1: attempt 0, ended by the controller" grep -Eq '^1 +(PREEMPTED|REQUEUED) +[0-9:]+ +0 +FRESH ' <<<"$rows"
check "runs 2-5: attempts 1-4 failed:42 while RESTORING" test "$(grep -Ec '^[2-5] +REQUEUED +42:0 +[1-4] +RESTORING +none +failed:42 ' <<<"$rows")" = 4
check "run 6: attempt 5 refused" grep -Eq '^6 +FAILED +1:0 +5 .* refused$' <<<"$rows"
expect "state_dir and run_dir hold nothing" "$(find "$RB_STATE" "$RB_RUN_DIR" -type f 2>/dev/null | head -n 3)" ""
measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
