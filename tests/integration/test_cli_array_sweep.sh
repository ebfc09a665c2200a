#!/bin/bash
# test_cli_array_sweep.sh - the CLI on a real sweep (contrib/cli/README.md,
# "Job arrays"): rbuser submits one array of 7 tasks, at most 3 at a time,
# on an oversubscribed node:
#   0      exits 0 at once                       -> ended
#   1      exits 1 at once (M=0: charged later)  -> ended
#   2,3,4  run until the test cancels them       -> running
#   5,6    never start (the throttle)            -> pending, from squeue
# then `show`, `list`, `explain` on the array's id and on one task, and
# `metrics`, all as the user, read the records the plugin wrote (each with
# its array job id and task id) and the controller's pending set; after the
# array is cancelled and has left squeue's queue, `show` still gives every
# task with a record. Needs the plugin to record a task's array ids (the
# batch step's S_JOB_ARRAY_ID / S_JOB_ARRAY_TASK_ID, issue 19's arrays-plugin
# part).
. "$(dirname "$0")/lib.sh"
CLI=$RB_ROOT/build/restore-budget

rb_cluster_up 'max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;' || { fail "cluster up"; summary; }
checkq "partition low oversubscribed (FORCE:4)" \
    timeout 10 scontrol update PartitionName=low OverSubscribe=FORCE:4
cli_user() { as_user "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" "$@"; }

a=$(submit_as_user --array=0-6%3 --requeue -o /dev/null --wrap \
    'case $SLURM_ARRAY_TASK_ID in 0) exit 0 ;; 1) exit 1 ;; *) exec sleep 300 ;; esac') ||
    { fail "sbatch --array"; summary; }

# until 0 and 1 have ended and 2, 3, 4 run, each with its record
states() { timeout 10 squeue --noheader --jobs "$a" --Format='JobArrayID:0|,State:0|' 2>/dev/null | sort | tr '\n' ' '; }
want="${a}_2|RUNNING| ${a}_3|RUNNING| ${a}_4|RUNNING| ${a}_[5-6%3]|PENDING| "
ok=0
for _ in $(seq 1 150); do
    [[ $(states) == "$want" && $(cli_user list "$a" 2>/dev/null | grep -c "^${a}_[0-4] ") == 5 ]] && { ok=1; break; }
    sleep 0.3
done
expect "tasks 0-1 ended, 2-4 running, 5-6 pending, 5 records (squeue: $(states))" "$ok" 1

s=$(cli_user show "$a" 2>&1)
expect "show $a: exit 0" "$?" 0
check "show $a: the overview's counts" grep -qE \
    "^array $a on cluster $RB_CLUSTER_NAME_USED: 5 tasks with a record: 3 running, 0 restoring, 0 exhausted, 2 ended\$" <<<"$s"
expect "show $a: one row per task, by task id" \
    "$(grep -oE "^${a}_[0-9]+ +rbuser +[0-9]+ +[a-z]+" <<<"$s" | awk '{ print $1, $4 }' | tr '\n' ' ')" \
    "${a}_0 ended ${a}_1 ended ${a}_2 running ${a}_3 running ${a}_4 running "
check "show $a: tasks 5-6 pending, from the controller" grep -qE "^${a}_\\[5-6%3\\] +pending, not started\$" <<<"$s"
j2=$(timeout 10 squeue --noheader --jobs "${a}_2" --Format='JobID:0|' | tr -d '|')
s=$(cli_user show "${a}_2" 2>&1)
check "show ${a}_2: that task's record (job $j2)" grep -qE "^job: +$j2 \\(array task ${a}_2\\)\$" <<<"$s"
cli_user --json show "$a" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [t["array_task_id"] for t in d["tasks"]] == [0, 1, 2, 3, 4], d
assert all(t["array_job_id"] == int(sys.argv[1]) for t in d["tasks"]), d
assert d["counts"] == {"running": 3, "restoring": 0, "exhausted": 0, "ended": 2}, d
assert d["not_started"] == [{"tasks": sys.argv[1] + "_[5-6%3]", "state": "PENDING"}], d
' "$a" && pass "show --json $a: tasks, counts, not_started" || fail "show --json $a"
e=$(cli_user explain "$a" 2>&1)
expect "explain $a: a heading per task, by task id" \
    "$(grep -oE "^== ${a}_[0-9]+" <<<"$e" | tr '\n' ' ')" "== ${a}_0 == ${a}_1 == ${a}_2 == ${a}_3 == ${a}_4 "
m=$(as_user "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" metrics)
check "metrics: 3 of array $a's tasks running" grep -qx \
    "restore_budget_array_tasks{cluster=\"$RB_CLUSTER_NAME_USED\",array_job_id=\"$a\",state=\"running\"} 3" <<<"$m"
check "metrics: 2 of array $a's tasks ended" grep -qx \
    "restore_budget_array_tasks{cluster=\"$RB_CLUSTER_NAME_USED\",array_job_id=\"$a\",state=\"ended\"} 2" <<<"$m"

# cancelled, out of the queue: the records remain, nothing is pending
checkq "scancel $a" timeout 10 scancel "$a"
gone=0
for _ in $(seq 1 100); do
    [[ -z $(timeout 10 squeue --noheader --jobs "$a" --Format='JobID:0|' 2>/dev/null) ]] && { gone=1; break; }
    sleep 0.3
done
expect "array $a left the queue" "$gone" 1
s=$(cli_user show "$a" 2>&1)
check "show $a after the array left the queue: still 5 tasks, all ended" grep -qE \
    "^array $a on cluster $RB_CLUSTER_NAME_USED: 5 tasks with a record: 0 running, 0 restoring, 0 exhausted, 5 ended\$" <<<"$s"
check "show $a after: nothing pending" bash -c '! grep -q "not started" <<<"$1"' _ "$s"
summary
