#!/bin/bash
# test_exit_rules.sh - exit_rules on real Slurm (docs/rule.md, "Exit-code
# rules"): the codes are in slurm.conf's RequeueExit (RB_REQUEUE_EXIT), so
# Slurm requeues the job and the plugin's rule decides what the exit costs.
#   A: an ignored code (75) twice, then exit 0: nothing charged (F and r
#      stay 0, no interruption counted), the job completes.
#   B: a fatal code (3) with M=5: the very next attempt is refused, the rule
#      named in the job's output, the ledger's start event and `show`;
#      `restore-budget grant` lifts it and a requeue runs again.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
CLI=$RB_ROOT/build/restore-budget
JOB=$RB_ROOT/tests/integration/jobs/exitjob.sh

RB_REQUEUE_EXIT=42,3,75 rb_cluster_up 'max_failures = 5;
restore_retry_num = 3;
restore_timeout = 0;
exit_rules = ( { codes = [3, 4]; action = "fatal"; },
               { codes = [75]; action = "ignore"; } );' || { fail "cluster up"; summary; }
cli() { "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" "$@"; }
expect "slurm.conf requeues the rules' codes" \
    "$(grep '^RequeueExit=' "$RB_CLUSTER_DIR/slurm.conf")" "RequeueExit=42,3,75"

# ---- A: ignore ---------------------------------------------------------------------
rb_workdir ignore >/dev/null
ja=$(TRIAL_EXIT_CODES="75 75" submit_as_user -p low "$JOB") || { fail "A: sbatch"; summary; }
outa=$RB_WORKDIR/trial-$ja.out
check "A: job $ja completes after two ignored exits" wait_state "$ja" COMPLETED 120
expect "A: Restarts" "$(job_field "$ja" Restarts)" 2
check_attempts_recorded "$ja" 2 "A: job $ja"
for n in 1 2; do
    expect "A: attempt $((n - 1)) ended failed:75" "$(ev_get "$ja" end $((n - 1)) end)" failed:75
    expect "A: start $n: rule" "$(ev_get "$ja" start $n rule)" ignore
    expect "A: start $n: charge" "$(ev_get "$ja" start $n charge)" ignored_exit
    expect "A: start $n: failures unchanged" "$(ev_get "$ja" start $n failures)" "0->0"
    expect "A: start $n: restore_failures unchanged" "$(ev_get "$ja" start $n restore_failures)" "0->0"
    expect "A: start $n: runs" "$(ev_get "$ja" start $n decision)" run
done
expect "A: attempt 2 sees FAILURES 0" "$(out_var "$outa" 2 RESTORE_BUDGET_FAILURES)" 0
expect "A: attempt 2 sees LAST_END failed:75" "$(out_var "$outa" 2 RESTORE_BUDGET_LAST_END)" failed:75
expect "A: attempt 2 sees INTERRUPTIONS 0" "$(out_var "$outa" 2 RESTORE_BUDGET_INTERRUPTIONS)" 0
for kv in failures=0 restore_failures=0 interruptions=0 failures_total=0 restore_failures_total=0 exhausted=false; do
    expect "A: record ${kv%%=*}" "$(rec_get "$ja" "${kv%%=*}")" "${kv#*=}"
done
# optional fields: no line at their default (a job no rule made fatal)
expect "A: record has no fatal_code line" "$(grep -c '^fatal_code=' "$(rb_rec_path "$ja")")" 0

# ---- B: fatal ----------------------------------------------------------------------
rb_workdir fatal >/dev/null
jb=$(TRIAL_EXIT_CODES="3" submit_as_user -p low "$JOB") || { fail "B: sbatch"; summary; }
outb=$RB_WORKDIR/trial-$jb.out
check "B: attempt 1 refused in the ledger" wait_ev "$jb" 'kind=start attempt=1 decision=refuse' 90
check "B: job $jb ends FAILED (refused)" wait_state "$jb" FAILED 60
expect "B: ExitCode" "$(job_field "$jb" ExitCode)" "1:0"
expect "B: attempt 0 ended failed:3" "$(ev_get "$jb" end 0 end)" failed:3
expect "B: start 1: rule" "$(ev_get "$jb" start 1 rule)" fatal
expect "B: start 1: charge" "$(ev_get "$jb" start 1 charge)" fatal_exit
expect "B: start 1: one failure of M=5" "$(ev_get "$jb" start 1 failures)" "0->1"
check "B: the refusal names the rule in the job's output" \
    wait_grep "$outb" "restore_budget: job $jb attempt 1 refused: exit code 3 is fatal \(exit_rules\)" 10
expect "B: the refused attempt's script never ran" "$(out_attempts "$outb" | tr '\n' ' ')" "0 "
for kv in failures=1 fatal_code=3 fatal_exits=1 exhausted=true cur.refused=true; do
    expect "B: record ${kv%%=*}" "$(rec_get "$jb" "${kv%%=*}")" "${kv#*=}"
done
expect_match "B: AdminComment names the rule" "$(scontrol -o show job "$jb")" \
    'AdminComment=restore_budget: refused: exit code 3 is fatal \(exit_rules\): budget exhausted'
expect_match "B: show names the rule" "$(cli show "$jb")" \
    'exhausted: +yes \(attempt 1 was refused: exit code 3 is fatal \(exit_rules\)\)'
expect_match "B: explain names the rule" "$(cli explain "$jb")" \
    'attempt 1 +start +REFUSED; charged attempt 0 \(ended failed:3 while FRESH\) as a fatal exit code \(exit_rules: F \+= 1, exhausted now\) \(exit_rules: rule=fatal\)'
check "B: metrics count the fatal exit" grep -qx \
    "restore_budget_fatal_exit_total{cluster=\"$RB_CLUSTER_NAME_USED\"} 1" <<<"$(cli metrics)"

# a grant lifts it like any exhaustion
check "B: grant as root" cli grant "$jb" --failures 1
check "B: the grant lifted the fatal code" wait_ev "$jb" 'kind=grant .*fatal_lifted=3' 5
expect "B: no fatal_code line after the grant" "$(grep -c '^fatal_code=' "$(rb_rec_path "$jb")")" 0
check "B: scontrol requeue $jb" timeout 10 scontrol requeue "$jb"
check "B: job $jb completes after the grant" wait_state "$jb" COMPLETED 90
expect "B: start 2 runs" "$(ev_get "$jb" start 2 decision)" run
expect "B: failures kept across the grant" "$(rec_get "$jb" failures)" 1

measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
