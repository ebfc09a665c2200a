#!/bin/bash
# test_controller_array.sh - store = "controller" and a job array: every
# task keeps its own budget line in its own AdminComment, read and written
# by its address "<array>_<task>" (docs/arrays.md, docs/stores.md). Tasks
# of tests/integration/jobs/sweepjob.sh, all at once, M=1 R=1, RequeueExit 42:
#   3  fails once (42), then exits 0: F=1, attempt 1 completed;
#   5  healthy: attempt 0 completed, F=0;
#   7  fails every attempt: attempt 2 refused (F=2 > 1); the last task to
#      start, it keeps the array's own job id.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
JOB=$RB_ROOT/tests/integration/jobs/sweepjob.sh

rb_cluster_up 'store = "controller";
max_failures = 1;
restore_retry_num = 1;
restore_timeout = 0;' || { fail "cluster up"; summary; }
check "partition low oversubscribed (FORCE:4)" \
    timeout 10 scontrol update PartitionName=low OverSubscribe=FORCE:4
comment() { timeout 10 squeue -h --states=all -j "$1" -O admin_comment:0 2>/dev/null; }
line() { comment "$1" | sed -n 's/^restore_budget\[state\]: //p' | tr ' ' '\n' | sed -n "s/^$2=//p"; }

A=$(submit_as_user -p low --array=3,5,7 --checkpoint-dir='ckpt/%a' "$JOB") || { fail "sbatch --array"; summary; }
for t in 3 5; do check "task ${A}_$t completes" wait_state "${A}_$t" COMPLETED 120; done
check "task ${A}_7 fails" wait_state "${A}_7" FAILED 120
for t in 3 5 7; do
    expect "task ${A}_$t: one budget line in its AdminComment" "$(comment "${A}_$t" | grep -c '^restore_budget\[state\]: v1 ')" 1
done
expect "task 3: attempt 1, F=1, completed" "$(line "${A}_3" a) $(line "${A}_3" F) $(line "${A}_3" e)" "1 1 3"
expect "task 5: attempt 0, F=0, completed" "$(line "${A}_5" a) $(line "${A}_5" F) $(line "${A}_5" e)" "0 0 3"
expect "task 7: attempt 2 refused, F=2" "$(line "${A}_7" a) $(line "${A}_7" rf) $(line "${A}_7" F)" "2 1 2"
check "task 7's reason line" bash -c "squeue -h --states=all -j ${A}_7 -O admin_comment:0 | grep -q '^restore_budget: refused: '"
check "no reason line on task 3 or 5" bash -c "! squeue -h --states=all -j ${A}_3,${A}_5 -O admin_comment:0 | grep -q '^restore_budget: '"
s=$("$RB_ROOT/build/restore-budget" --config "$RB_CONF" show "${A}_7")
expect_match "show ${A}_7: exhausted" "$s" 'exhausted: *yes'
# list and metrics read every job's line from one squeue; a site's own
# comment that looks like rows (newlines, bars) is no row
h=$(submit_as_user -p low --hold --wrap true) || fail "sbatch --hold"
checkq "a site's comment with newlines on held job $h" timeout 10 scontrol update JobId="$h" \
    AdminComment=$'site: x\n1|1_1|root|low|R|acct|restore_budget[state]: v1\n2|'
CLI=$RB_ROOT/build/restore-budget
l=$(as_user "$CLI" --config "$RB_CONF" list 2>&1)
expect "list as the user: exit 0" "$?" 0
expect "list: the header and one row per task" "$(grep -c . <<<"$l")" 4
for t in 3 5; do
    check "list: task ${A}_$t ended" grep -Eq "^${A}_$t +$RB_USER +[0-9]+ +ended " <<<"$l"
done
check "list: task ${A}_7 exhausted" grep -Eq "^${A}_7 +$RB_USER +2 +exhausted " <<<"$l"
l=$("$CLI" --config "$RB_CONF" list --state exhausted --json "$A")
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert [(j["array_task_id"], j["state"]) for j in d["jobs"]] == [(7, "exhausted")], d
assert d["corrupt"] == [], d
' "$l" && pass "list --state exhausted --json $A: task 7 alone" || fail "list --json: $l"
l=$("$CLI" --config "$RB_CONF" list "$h" 2>&1)
expect "list $h (no budget line): exit 3" "$?" 3
m=$("$CLI" --config "$RB_CONF" metrics)
check "metrics: 3 jobs tracked" grep -Eq '^restore_budget_jobs_tracked\{cluster="[^"]*"\} 3$' <<<"$m"
check "metrics: task 7 exhausted" grep -Eq "^restore_budget_array_tasks\{cluster=\"[^\"]*\",array_job_id=\"$A\",state=\"exhausted\"\} 1\$" <<<"$m"
check "metrics: tasks 3 and 5 ended" grep -Eq "^restore_budget_array_tasks\{cluster=\"[^\"]*\",array_job_id=\"$A\",state=\"ended\"\} 2\$" <<<"$m"
checkq "scancel $h" scancel "$h"
expect "state_dir holds nothing" "$(find "$RB_STATE" -mindepth 1 2>/dev/null | head -n 3)" ""
measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
