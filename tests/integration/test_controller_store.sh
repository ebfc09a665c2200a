#!/bin/bash
# test_controller_store.sh - store = "controller" (docs/stores.md): the
# budget lives in one line of each job's AdminComment, written by the batch
# step alone; nothing is written under state_dir or run_dir, no prolog or
# epilog does any work.  Two jobs side by side, preempted once:
#   a: every restore fails (exit 42 = RequeueExit), M=1 R=2: exactly
#      R x (M+1) = 4 restore attempts, then attempt 5 is refused (FAILED 1:0);
#      the site's own AdminComment line is kept byte for byte, next to the
#      reason line and the budget line; its user can neither write the
#      AdminComment nor move the budget with Comment;
#   b: restores and acknowledges, M=0: its preemption costs nothing, it
#      completes, and its line says so (a self-ended attempt's end is written
#      before the step reports completion);
#   c: (after them) restores and never acknowledges, --restore-timeout=4,
#      M=0 R=1, preempted twice: attempt 1 ran past 4 s, and although no
#      epilog wrote its end, the next start ends it at the requeue's time
#      (SubmitTime) and restore_timeout confirms it: attempt 2 runs, r=0.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'store = "controller";
max_failures = 2;
restore_retry_num = 3;
restore_timeout = 0;' || { fail "cluster up"; summary; }

# comment JOB - the job's whole AdminComment ("(null)": none)
comment() { timeout 10 squeue -h --states=all -j "$1" -O admin_comment:0 2>/dev/null; }
# line JOB KEY - one key of the job's budget line
line() { comment "$1" | sed -n 's/^restore_budget\[state\]: //p' | tr ' ' '\n' | sed -n "s/^$2=//p"; }

SITE='site: project=42 | keep me'
rb_workdir corrupt >/dev/null
DA=$RB_WORKDIR
A=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt --max-failures=1 --restore-retries=2 \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch a"; summary; }
rb_workdir healthy >/dev/null
DB=$RB_WORKDIR
B=$(TRIAL_STEPS=16 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    --max-failures=0 "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch b"; summary; }
OA=$DA/trial-$A.out OB=$DB/trial-$B.out
check "root sets the site's AdminComment of job $A" timeout 10 scontrol update JobId="$A" AdminComment="$SITE"

checkq "job $A wrote 2 checkpoints" wait_grep "$OA" "^trial\[$A\.0\]: checkpoint step 2\$" 60
checkq "job $B wrote a checkpoint" wait_grep "$OB" "^trial\[$B\.0\]: checkpoint step 2\$" 60
expect "attempt 0 of job $A is on its line" "$(line "$A" a)" 0
# the job's own user: no AdminComment; Comment is the user's, never read
if as_user scontrol update JobId="$A" AdminComment="restore_budget[state]: v1 F=0" 2>/dev/null; then
    fail "the job's user set its AdminComment"
else
    pass "the job's user cannot set its AdminComment"
fi
check "the job's user may set Comment (ignored: docs/stores.md)" \
    as_user scontrol update JobId="$A" Comment="restore_budget[state]: v1 seq=1 F=0 g=100"
checkq "preempted (job $A)" preempt "$A" 30
checkq "preempted (job $B)" wait_restart_count "$B" 1 30

check "job $A ends" wait_state "$A" 'FAILED|COMPLETED|CANCELLED' 240
expect "job $A: JobState" "$(job_field "$A" JobState)" FAILED
expect "job $A: ExitCode" "$(job_field "$A" ExitCode)" "1:0"
expect "job $A: Restarts (attempts 0..5)" "$(job_field "$A" Restarts)" 5
expect "job $A: restore attempts = R x (M+1) = 4" "$(grep -c "^trial\[$A\.[0-9]*\]: restoring from " "$OA")" 4
for ((n = 1; n <= 4; n++)); do
    got="$(out_var "$OA" "$n" RESTORE_BUDGET_PHASE) F=$(out_var "$OA" "$n" RESTORE_BUDGET_FAILURES) r=$(out_var "$OA" "$n" RESTORE_BUDGET_RESTORE_FAILURES)"
    expect "job $A attempt $n: phase and counters" "$got" "RESTORING F=$(((n - 1) / 2)) r=$(((n - 1) % 2))"
done
msg=$(grep -m1 'refused' "$OA")
check "job $A: the refusal names F=2 and M=1" grep -q 'F=2.*M=1' <<<"$msg"
c=$(comment "$A")
rb_log "job $A AdminComment: $c"
expect "job $A: the site's line first, byte for byte" "$(head -n 1 <<<"$c")" "$SITE"
check "job $A: the reason line" grep -q '^restore_budget: refused: ' <<<"$c"
expect "job $A: one budget line" "$(grep -c '^restore_budget\[state\]: v1 ' <<<"$c")" 1
for kv in a=5 rf=1 F=2 x=1 rt=4 M=1 R=2; do
    expect "job $A: line ${kv%%=*}" "$(line "$A" "${kv%%=*}")" "${kv#*=}"
done
check "job $A: the line is under 1 KB" test "$(grep '^restore_budget\[state\]' <<<"$c" | wc -c)" -lt 1024

check "job $B completes" wait_state "$B" COMPLETED 120
expect "job $B: Restarts" "$(job_field "$B" Restarts)" 1
check "job $B attempt 1 acknowledged" grep -q "^trial\[$B\.1\]: acknowledged restore" "$OB"
for kv in a=1 F=0 r=0 i=1 ph=2 e=3 cf=1; do
    expect "job $B: line ${kv%%=*} (preemption free, ack, exit 0)" "$(line "$B" "${kv%%=*}")" "${kv#*=}"
done

rb_workdir timeout >/dev/null
C=$(TRIAL_NO_ACK=1 TRIAL_STEPS=14 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    --max-failures=0 --restore-retries=1 --restore-timeout=4 "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch c"; summary; }
OC=$RB_WORKDIR/trial-$C.out
checkq "job $C wrote a checkpoint" wait_grep "$OC" "^trial\[$C\.0\]: checkpoint step 2\$" 120
checkq "job $C attempt 0 preempted" preempt "$C" 30
checkq "job $C attempt 1 restored" wait_grep "$OC" "^trial\[$C\.1\]: restored step" 60
sleep 6
checkq "job $C attempt 1 preempted after 6 s" preempt "$C" 30
check "job $C completes" wait_state "$C" COMPLETED 120
expect "job $C attempt 2: RESTORE_FAILURES (attempt 1 confirmed by restore_timeout)" \
    "$(out_var "$OC" 2 RESTORE_BUDGET_RESTORE_FAILURES)" 0
expect "job $C attempt 2: LAST_END" "$(out_var "$OC" 2 RESTORE_BUDGET_LAST_END)" interrupted
for kv in a=2 F=0 r=0 i=2; do
    expect "job $C: line ${kv%%=*}" "$(line "$C" "${kv%%=*}")" "${kv#*=}"
done

# nothing on any file system, no prolog or epilog work
expect "state_dir holds nothing" "$(find "$RB_STATE" -mindepth 1 2>/dev/null | head -n 3)" ""
expect "run_dir holds nothing" "$(find "$RB_RUN_DIR" -type f 2>/dev/null | head -n 3)" ""
measure "duration=$((SECONDS - T0))s line_bytes=$(grep '^restore_budget\[state\]' <<<"$c" | wc -c)"
rb_final_checks
summary
