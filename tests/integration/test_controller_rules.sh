#!/bin/bash
# test_controller_rules.sh - the rest of the rule in the default store,
# "controller" (docs/stores.md; no store named in the config, no state_dir:
# the budget lives in each job's AdminComment):
#   f: checkpoint fallback (docs/rule.md, "Checkpoint fallback"): preempted,
#      its newest checkpoint corrupted before the rerun; after R = 2 failed
#      restores of it the next attempt is handed the one before it and the
#      job completes; the line keeps the bad checkpoint and the count;
#   x: a fatal exit code (exit_rules, 3 in RequeueExit): the next attempt
#      is refused at once (exhausted, one failure), the line names the code;
#   i: the interruption cap (--max-interruptions=1): preempted twice, the
#      third attempt is refused with no failure charged.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

# rb_write_config adds a state_dir (every suite's private one), which
# would select "dir": name the store (nothing is written there: checked)
RB_REQUEUE_EXIT=42,3 rb_cluster_up 'store = "controller";
max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;
checkpoint = { fallback = true; };
exit_rules = ( { codes = [3]; action = "fatal"; } );' || { fail "cluster up"; summary; }
comment() { timeout 10 squeue -h --states=all -j "$1" -O admin_comment:0 2>/dev/null; }
line() { comment "$1" | sed -n 's/^restore_budget\[state\]: //p' | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# ---- f: fallback --------------------------------------------------------------------
rb_workdir fallback >/dev/null
ck=$RB_WORKDIR/ckpt
jf=$(TRIAL_STEPS=6 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
     "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch f"; summary; }
outf=$RB_WORKDIR/trial-$jf.out
checkq "f: job $jf wrote checkpoint 3" wait_grep "$outf" "^trial\[$jf\.0\]: checkpoint step 3\$" 60
checkq "f: job $jf preempted" preempt "$jf" 30
checkq "f: job $jf waits for its rerun" wait_not_running "$jf" 30
bad=$(readlink "$ck/latest")
printf 'garbage\n' >"$ck/$bad"
check "f: job $jf completes" wait_state "$jf" COMPLETED 150
expect "f: two restores of $bad failed" "$(grep -c "^trial\[$jf\.[12]\]: restoring from $ck/$bad\$" "$outf")" 2
check "f: attempt 3 is handed the one before it" grep -q "^trial:   RESTORE_BUDGET_FALLBACK_FROM=$ck/$bad\$" "$outf"
expect "f: the line keeps the bad checkpoint and counts one fallback" "$(line "$jf" ff) $(line "$jf" fb)" "$ck/$bad 1"
expect "f: attempt 3 completed, F=1" "$(line "$jf" a) $(line "$jf" e) $(line "$jf" F)" "3 3 1"

# ---- x: a fatal exit code -------------------------------------------------------------
rb_workdir fatal >/dev/null
jx=$(TRIAL_EXIT_CODES="3" submit_as_user -p low "$RB_ROOT/tests/integration/jobs/exitjob.sh") ||
    { fail "sbatch x"; summary; }
check "x: job $jx fails" wait_state "$jx" FAILED 90
check "x: its attempt 1 is refused, naming the rule" \
    wait_grep "$RB_WORKDIR/trial-$jx.out" "restore_budget: job $jx attempt 1 refused: exit code 3 is fatal \(exit_rules\)" 10
expect "x: the line: attempt 1 refused, exhausted, F=1, fatal code 3, one fatal exit" \
    "$(line "$jx" a) $(line "$jx" rf) $(line "$jx" x) $(line "$jx" F) $(line "$jx" fc) $(line "$jx" fx)" "1 1 1 1 3 1"

# ---- i: the interruption cap ------------------------------------------------------------
rb_workdir cap >/dev/null
ji=$(TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
     --max-interruptions=1 "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch i"; summary; }
outi=$RB_WORKDIR/trial-$ji.out
checkq "i: job $ji running" wait_grep "$outi" "^trial\[$ji\.0\]: checkpoint step 1\$" 60
checkq "i: job $ji preempted once" preempt "$ji" 30
checkq "i: attempt 1 restores" wait_grep "$outi" "^trial\[$ji\.1\]: restoring from " 90
checkq "i: job $ji preempted twice" preempt "$ji" 30
check "i: job $ji fails" wait_state "$ji" FAILED 90
check "i: attempt 2 refused, naming the cap" \
    wait_grep "$outi" "restore_budget: job $ji attempt 2 refused: interruptions 2 > max_interruptions 1 " 10
expect "i: the line: attempt 2 refused, 2 interruptions, F=0, one cap refusal" \
    "$(line "$ji" a) $(line "$ji" rf) $(line "$ji" i) $(line "$ji" F) $(line "$ji" ir)" "2 1 2 0 1"

expect "state_dir and run_dir hold nothing" "$(find "$RB_STATE" "$RB_RUN_DIR" -type f 2>/dev/null | head -n 3)" ""
measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
