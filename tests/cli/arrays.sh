# shellcheck shell=bash
# tests/cli/arrays.sh - job arrays in the CLI (contrib/cli/README.md, "Job
# arrays"), sourced by tests/cli/run.sh (its $T, $CLI, run, expect,
# expect_json, expect_true, expect_metrics and mkledger). Its own cluster,
# so the other sections' listings, grants and gc counts stay as they were.
#
# Array 200, whose tasks started in another order than their ids (job ids
# and task ids cross on purpose), and the task that kept the array's own id
# (200 = 200_3), as Slurm gives it to the last task to start:
#   job 203 = 200_0 exhausted, 202 = 200_1 restoring, 201 = 200_2 running,
#   200 = 200_3 ended, 210 = 200_10 ended
# Array 220 has no record under its own id: 221 = 220_0 running,
# 222 = 220_1 ended. Job 230 is a plain job (ended).

AC=sweep
mka() { "$MKLEDGER" "$T/rb.conf" "$AC" "$@" || { echo "cli: mkledger $* failed" >&2; exit 2; }; }
mka task 203 200 0 exhausted
mka task 202 200 1 restoring
mka task 201 200 2 running
mka task 200 200 3 ended
mka task 210 200 10 ended
mka task 221 220 0 running
mka task 222 220 1 ended
mka clean 230

# a squeue that answers as 22.05 does for array 200 (tasks 11-999 pending,
# 4 at a time; 200_2 running, it has a record), and one that fails
mkdir -m 755 "$T/fakebin" "$T/failbin" "$T/hangbin"
cat >"$T/fakebin/squeue" <<'SQ'
#!/bin/sh
# --noheader --jobs ID --Format=...
case "$3" in
200) printf '211|200_[11-999%%4]|11-999%%4|PENDING|\n201|200_2|2|RUNNING|\n' ;;
240) printf '240|240_[0-49]|0-49|PENDING|\n' ;;
*) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1 ;;
esac
SQ
printf '#!/bin/sh\necho "slurm_load_jobs error: Unable to contact slurm controller (connect failure)" >&2\nexit 1\n' >"$T/failbin/squeue"
printf '#!/bin/sh\nexec sleep 30\n' >"$T/hangbin/squeue"
chmod 755 "$T/fakebin/squeue" "$T/failbin/squeue" "$T/hangbin/squeue"
printf 'ClusterName=sweep\n' >"$T/sweep-slurm.conf"
chmod 644 "$T/sweep-slurm.conf"
# with the controller: SLURM_CONF present, squeue from $1
ctl() { local bin=$1; shift; env SLURM_CONF="$T/sweep-slurm.conf" RESTORE_BUDGET_SLURM_BINDIR="$T/$bin" "$@"; }

ROW='+erin +[0-9]+ +'
# ---- show A_T: one task --------------------------------------------------------
run "$CLI" --cluster "$AC" show 200_1
expect "show 200_1: the task's record (job 202), restoring" 0 \
	'^job: +202 \(array task 200_1\)$' '^phase: +RESTORING$' \
	'^ended: +no end recorded \(running, or its node died\)$' '!^job: +20[013]'
run "$CLI" --cluster "$AC" show 200_3
expect "show 200_3: the task that kept the array's id" 0 '^job: +200 \(array task 200_3\)$'
run "$CLI" --cluster "$AC" show 200_10
expect "show 200_10: task 10, not task 1" 0 '^job: +210 \(array task 200_10\)$'
run "$CLI" --cluster "$AC" show 202
expect "show 202: a task by its own job id is that task alone" 0 '^job: +202 \(array task 200_1\)$'
run "$CLI" --cluster "$AC" --json show 200_0
expect_json "show --json 200_0: array_job_id and array_task_id" 0 \
	'd["job_id"] == 203 and d["array_job_id"] == 200 and d["array_task_id"] == 0 and d["state"] == "exhausted"'
run "$CLI" --cluster "$AC" show 200_7
expect "show 200_7: no such task, exit 3" 3 \
	'2>^restore-budget: array task 200_7: no record on cluster sweep \(not started yet' '!.'
run "$CLI" --cluster "$AC" show 230_0
expect "show 230_0: a plain job is no array, exit 3" 3 '2>array task 230_0: no record'

# ---- show A: one row per task, by task id -----------------------------------------
run "$CLI" --cluster "$AC" show 200
expect "show 200: the sweep overview, counts per state" 0 \
	'^array 200 on cluster sweep: 5 tasks with a record: 1 running, 1 restoring, 1 exhausted, 2 ended$' \
	'^JOB +USER +ATTEMPT +STATE +PHASE +F/M +r/R +LEFT$' \
	'^200_0 +alice +5 +exhausted +RESTORING ' "^200_1 ${ROW}restoring +RESTORING " \
	"^200_2 ${ROW}running +FRESH " "^200_3 ${ROW}ended +FRESH " "^200_10 ${ROW}ended " \
	'^tasks not started: unknown \(cannot ask the controller: no slurm.conf to reach it '
expect_true "show 200: rows ordered by task id (0 1 2 3 10)" \
	test "$(grep -oE '^200_[0-9]+' <<<"$OUT" | tr '\n' ' ')" = "200_0 200_1 200_2 200_3 200_10 "
run "$CLI" --cluster "$AC" show 220
expect "show 220: an array with no record under its own id" 0 \
	'^array 220 on cluster sweep: 2 tasks with a record: 1 running, 0 restoring, 0 exhausted, 1 ended$' \
	'^220_0 ' '^220_1 '
run "$CLI" --cluster "$AC" show 230
expect "show 230: a plain job is unaffected" 0 '^job: +230$' '^user: +bob ' '!^array' '!not started'
run "$CLI" --cluster "$AC" --json show 230
expect_json "show --json 230: no array fields for a plain job" 0 \
	'd["job_id"] == 230 and "array_job_id" not in d and "array_task_id" not in d'
run "$CLI" --cluster "$AC" --json show 200
expect_json "show --json 200: tasks by task id with their ids, counts, controller error" 0 \
	'd["array_job_id"] == 200 and [t["array_task_id"] for t in d["tasks"]] == [0, 1, 2, 3, 10] and [t["job_id"] for t in d["tasks"]] == [203, 202, 201, 200, 210] and all(t["array_job_id"] == 200 for t in d["tasks"]) and d["counts"] == {"running": 1, "restoring": 1, "exhausted": 1, "ended": 2} and d["not_started"] is None and "slurm.conf" in d["controller_error"]'

# ---- tasks not started, from the controller -------------------------------------------
run ctl fakebin "$CLI" --cluster "$AC" show 200
expect "show 200: tasks not started from squeue (throttle kept), a task with a record not repeated" 0 \
	'^200_\[11-999%4\] +pending, not started$' '!^200_2 +running, not started' '!tasks not started: unknown'
run ctl fakebin "$CLI" --cluster "$AC" --json show 200
expect_json "show --json 200: not_started from squeue" 0 \
	'd["not_started"] == [{"tasks": "200_[11-999%4]", "state": "PENDING"}] and d["controller_error"] is None'
run ctl fakebin "$CLI" --cluster "$AC" show 240
expect "show 240: an array with no task started yet: from squeue alone" 0 \
	'^array 240 on cluster sweep: 0 tasks with a record' '^240_\[0-49\] +pending, not started$'
run ctl fakebin "$CLI" --cluster "$AC" show 220
expect "show 220: an array the controller has forgotten: no pending line, no error" 0 \
	'^220_0 ' '!not started'
run ctl failbin "$CLI" --cluster "$AC" show 200
expect "show 200 with squeue failing: one line says so, exit 0" 0 \
	'^200_0 ' '^tasks not started: unknown \(cannot ask the controller: .*Unable to contact slurm controller'
t0=$SECONDS
run ctl hangbin "$CLI" --cluster "$AC" show 200
expect "show 200 with squeue hanging: cut at the deadline, one line, exit 0" 0 \
	'^200_10 ' '^tasks not started: unknown \(cannot ask the controller: .*deadline'
expect_true "show 200 with squeue hanging: within the 5 s deadline (+3 s)" test $((SECONDS - t0)) -le 8

# ---- list -----------------------------------------------------------------------------
run "$CLI" --cluster "$AC" list
expect "list: each task as A_T, a plain job by its id" 0 \
	"^200_0 +alice " "^200_1 ${ROW}restoring " "^200_3 ${ROW}ended " "^220_0 ${ROW}running " \
	'^230 +bob ' '!^20[0-3] ' '!^210 '
run "$CLI" --cluster "$AC" list 200
expect "list 200: the array's tasks only, by task id" 0 \
	'^200_0 ' '^200_10 ' '!^220_' '!^230 ' '^tasks not started: unknown'
expect_true "list 200: rows ordered by task id" \
	test "$(grep -oE '^200_[0-9]+' <<<"$OUT" | tr '\n' ' ')" = "200_0 200_1 200_2 200_3 200_10 "
run "$CLI" --cluster "$AC" list 200 --state restoring
expect "list 200 --state restoring" 0 '^200_1 ' '!^200_[02-9]'
run "$CLI" --cluster "$AC" list --state running
expect "list --state running: not the restoring task" 0 '^200_2 ' '^220_0 ' '!^200_1 '
run "$CLI" --cluster "$AC" list 230
expect "list 230: a plain job alone" 0 '^230 +bob ' '!^2[0-2][0-9]_'
run "$CLI" --cluster "$AC" --json list
expect_json "list --json: array ids for tasks only" 0 \
	'[j for j in d["jobs"] if j["job_id"] == 202][0]["array_task_id"] == 1 and [j for j in d["jobs"] if j["job_id"] == 202][0]["array_job_id"] == 200 and "array_job_id" not in [j for j in d["jobs"] if j["job_id"] == 230][0]'
run ctl fakebin "$CLI" --cluster "$AC" --json list 200
expect_json "list --json 200: tasks and not_started" 0 \
	'[j["array_task_id"] for j in d["jobs"]] == [0, 1, 2, 3, 10] and d["not_started"][0]["tasks"] == "200_[11-999%4]"'
run "$CLI" --cluster "$AC" list 299
expect "list 299: nothing, exit 3" 3 '2>job 299: no record' '!.'

# ---- explain ------------------------------------------------------------------------------
run "$CLI" --cluster "$AC" explain 200_1
expect "explain 200_1: the task's log (job 202), named" 0 \
	'^job 202 \(array task 200_1\)$' "${TS}attempt 1 +report +phase RESTORING" '!attempt 5'
run "$CLI" --cluster "$AC" explain 200
expect "explain 200: each task's log under its heading, by task id" 0 \
	'^== 200_0 \(job 203\) ==$' '^== 200_1 \(job 202\) ==$' '^== 200_10 \(job 210\) ==$' \
	"${TS}attempt 5 +start +REFUSED" '^tasks not started: unknown'
expect_true "explain 200: headings ordered by task id" \
	test "$(grep -oE '^== 200_[0-9]+' <<<"$OUT" | tr '\n' ' ')" = "== 200_0 == 200_1 == 200_2 == 200_3 == 200_10 "
run "$CLI" --cluster "$AC" --json explain 200_2
expect_json "explain --json 200_2: array ids" 0 \
	'd["job_id"] == 201 and d["array_job_id"] == 200 and d["array_task_id"] == 2 and len(d["events"]) == 2'
run "$CLI" --cluster "$AC" --json explain 200
expect_json "explain --json 200: one entry per task" 0 \
	'd["array_job_id"] == 200 and [t["array_task_id"] for t in d["tasks"]] == [0, 1, 2, 3, 10] and len(d["tasks"][0]["events"]) == 17'
run "$CLI" --cluster "$AC" explain 230
expect "explain 230: a plain job as before" 0 "${TS}attempt 0 +end +completed" '!^=='

# ---- bad ids --------------------------------------------------------------------------------
for bad in 200_x 200_ _4 200_1_2 '200_[5]' 200_-1; do
	run "$CLI" --cluster "$AC" show "$bad"
	expect "show $bad: refused with a clear message, exit 2" 2 \
		"2>^restore-budget: '$(sed 's/[][]/\\&/g' <<<"$bad")' is not a job id \\(a job id is a decimal number 1..4294967295; an array task is ARRAY_TASK, e.g. 123_4\\)" '!.'
done
run "$CLI" --cluster "$AC" explain 200_x
expect "explain 200_x: refused, exit 2" 2 "2>'200_x' is not a job id"
run "$CLI" --cluster "$AC" list 200_
expect "list 200_: refused, exit 2" 2 "2>'200_' is not a job id"

# ---- grant ------------------------------------------------------------------------------------
run "$CLI" --cluster "$AC" grant 200 --failures 1
expect "grant 200 (an array): refused, one task at a time, exit 2" 2 \
	'2>200 is job array 200 \(5 tasks with a record\): each task has its own budget; grant one task, e.g. 200_0' '!.'
run env SUDO_USER=tester "$CLI" --cluster "$AC" grant 200_0 --failures 1
expect "grant 200_0: the task's budget (job 203), addressed as 200_0" 0 \
	'^job 203 \(array task 200_0\): granted 0 -> 1; ' '\(scontrol requeue 200_0\)' '\(scontrol release 200_0\)'
run "$CLI" --cluster "$AC" show 200_3
expect "grant 200_0 left the task that kept the array's id alone" 0 '^granted: +0$'

# ---- metrics ------------------------------------------------------------------------------------
run "$CLI" --cluster "$AC" metrics
expect_metrics "metrics: per array and state" 0 \
	'{"cluster": "sweep", "jobs_tracked": 8, "jobs_exhausted": 1, "interruptions_total": 2, "restore_failures_total": 4, "failures_total": 2, "fallbacks_total": 0, "ledger_corrupt_records": 0, "array_tasks": {"200": {"running": 1, "restoring": 1, "exhausted": 1, "ended": 2}, "220": {"running": 1, "restoring": 0, "exhausted": 0, "ended": 1}}}'
expect "metrics: the sample lines" 0 \
	'^restore_budget_array_tasks\{cluster="sweep",array_job_id="200",state="ended"\} 2$' \
	'^restore_budget_array_tasks\{cluster="sweep",array_job_id="220",state="exhausted"\} 0$'

# ---- as another user ------------------------------------------------------------------------------
run runuser -u nobody -- "$CLI" --cluster "$AC" show 200_1
expect "show 200_1 as another user: not found, and says records were not readable" 3 \
	'2>array task 200_1: no record' "2>[0-9]+ records of other users' jobs not read" '!.'
run runuser -u nobody -- "$CLI" --cluster "$AC" list
expect "list as another user: no task shown" 0 '!^200_' '2>records of other users. jobs not shown'

# ---- gc names a task as A_T -------------------------------------------------------------------------
run "$CLI" --cluster "$AC" gc --older-than 0 --dry-run
expect "gc --dry-run: a task's line names it as A_T" 0 \
	'^would remove job 210 \(array task 200_10, user erin, state ended, updated ' \
	'^would remove job 230 \(user bob, state ended, updated '
