#!/bin/bash
# test_cli_array_pending.sh - `restore-budget show ARRAY` on real Slurm: the
# tasks of a job array that have not started are asked of the controller
# (contrib/cli/README.md, "Job arrays"). A held array throttled to 2 at a
# time has no task started, so no record: the overview has no row, and the
# pending set as squeue names it, "A_[0-9%2]  pending, not started". Run as
# the job's user. Checks the squeue line format the CLI's parser expects
# (plugin/slurm/job_addr.c) on this release.
. "$(dirname "$0")/lib.sh"
CLI=$RB_ROOT/build/restore-budget

rb_cluster_up || { fail "cluster up"; summary; }
cli_user() { as_user "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" "$@"; }

a=$(submit_as_user --hold --array=0-9%2 -o /dev/null --wrap 'sleep 1') || { fail "sbatch --array"; summary; }
raw=$(timeout 10 squeue --noheader --jobs "$a" --Format='JobID:0|,JobArrayID:0|,ArrayTaskID:0|,State:0|')
expect_match "squeue names the held array's tasks as one pending set" "$raw" \
    "^$a\\|${a}_\\[0-9%2\\]\\|0-9%2\\|PENDING\\|\$"

s=$(cli_user show "$a" 2>&1)
expect "show $a as $RB_USER: exit 0" "$?" 0
expect_match "show $a: an array, no task with a record yet" "$s" \
    "^array $a on cluster $RB_CLUSTER_NAME_USED: 0 tasks with a record"
check "show $a: the pending set from the controller, throttle kept" \
    grep -qE "^${a}_\\[0-9%2\\] +pending, not started\$" <<<"$s"
cli_user --json show "$a" | python3 -c '
import json, sys
d = json.load(sys.stdin)
want = [{"tasks": sys.argv[1] + "_[0-9%2]", "state": "PENDING"}]
assert d["tasks"] == [] and d["not_started"] == want and d["controller_error"] is None, d
' "$a" && pass "show --json $a: not_started from the controller" || fail "show --json $a"
s=$(cli_user show "${a}_3" 2>&1)
expect "show ${a}_3 (not started): exit 3" "$?" 3
expect_match "show ${a}_3: says it may not have started yet" "$s" \
    "array task ${a}_3: no record on cluster $RB_CLUSTER_NAME_USED \\(not started yet"

timeout 10 scancel "$a"
summary
