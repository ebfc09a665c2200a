#!/bin/bash
# test_workdir_names.sh - a job is never untracked, nor refused, because of
# the names it chose (docs/security.md, "Names"; issue 19, defect 2).
#   A: max_failures = 0.  Three jobs that exit 42 (RequeueExit) on every
#      attempt, submitted by rbuser with --chdir: a control dir, a dir whose
#      name holds a newline, and a dir of more than 4096 bytes.  Each must be
#      tracked and refused at attempt 1 (FAILED 1:0) like the control; before
#      the fix the prolog's note refused the newline (and could not read
#      back the long dir), on_error = "open" let every attempt run untracked
#      and the job requeued itself without end.
#   B: on_error = "closed".  The same two names with a job that exits 0: the
#      first attempt runs and completes (before: refused as an internal
#      error).
#   C: on_error = "closed", and no prolog can note a job (run_dir made
#      0755, an admin's slip): the batch step finds neither a note nor a
#      record and begins the record itself; the next attempt is caught up
#      and refused like the control (before: attempt 0 refused as an
#      internal error).
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;' || { fail "cluster up"; summary; }

# Where the jobs write their output: a plain dir (the odd dirs are only
# their work dirs).
OUT=$(rb_workdir out)
NL=$RB_CLUSTER_DIR/work/nl$'\n'attempt=0
# LONG: exactly 4096 bytes, the longest work dir slurmctld takes (it
# refuses one longer than PATH_MAX with "Pathname ... too long"), one byte
# more than a path the kernel takes: the job's own chdir fails there and
# Slurm runs it in /tmp; the plugin must still count it.
seg=$(printf 'd%.0s' $(seq 1 200))
LONG=$RB_CLUSTER_DIR/work/long
while ((${#LONG} + 1 + 200 < 4095)); do LONG=$LONG/$seg; done
LONG=$LONG/$(printf 'e%.0s' $(seq 1 $((4096 - ${#LONG} - 1))))
mkdir -p "$NL" && chown "$RB_USER": "$NL" || fail "mkdir the newline dir"
# mkdir -p as the user: each component is made relative to its parent
(cd "$RB_CLUSTER_DIR/work" && mkdir -p long && chown "$RB_USER": long &&
    cd long && runuser -u "$RB_USER" -- mkdir -p "${LONG#"$RB_CLUSTER_DIR/work/long/"}") ||
    fail "mkdir the long dir"
rb_log "long work dir: ${#LONG} bytes"
expect "the long work dir's length" "${#LONG}" 4096

# submit TAG DIR CODES [SBATCH-ARGS...] - a job in DIR exiting with CODES
# (exitjob.sh); prints its id.
submit() {
    local tag=$1 dir=$2 codes=$3; shift 3
    TRIAL_EXIT_CODES=$codes submit_as_user -p low --chdir="$dir" \
        --output="$OUT/$tag-%j.out" "$@" "$RB_ROOT/tests/integration/jobs/exitjob.sh"
}

# refused_at_1 TAG JOB - the job's budget is spent by attempt 0's failure:
# attempt 1 is refused, the job ends FAILED 1:0, its script ran once.
refused_at_1() {
    local tag=$1 j=$2 out=$OUT/$1-$2.out
    check "A $tag: job $j ends FAILED" wait_state "$j" 'FAILED|COMPLETED|CANCELLED' 60
    expect "A $tag: JobState" "$(job_field "$j" JobState)" FAILED
    expect "A $tag: ExitCode (refused)" "$(job_field "$j" ExitCode)" "1:0"
    expect "A $tag: Restarts" "$(job_field "$j" Restarts)" 1
    expect "A $tag: attempt 0 recorded" "$(ev_get "$j" start 0 decision)" run
    expect "A $tag: attempt 1 refused in the ledger" "$(ev_get "$j" start 1 decision)" refuse
    expect "A $tag: attempt 1 charged attempt 0's exit" "$(ev_get "$j" start 1 charged_end)" failed:42
    expect "A $tag: record exhausted" "$(rec_get "$j" exhausted)" true
    expect "A $tag: attempts whose script ran" "$(out_attempts "$out" | tr '\n' ' ')" "0 "
    check "A $tag: the refusal reached the job's output" \
        grep -q "restore_budget: job $j attempt 1 refused: restore budget exhausted" "$out"
}

jc=$(submit control "$RB_CLUSTER_DIR/work/default" 42) || fail "A: sbatch control"
# (the newline job also names a checkpoint dir with a newline)
jn=$(submit newline "$NL" 42 --checkpoint-dir=$'ck\nx') || fail "A: sbatch newline"
jl=$(submit long "$LONG" 42) || fail "A: sbatch long"
rb_log "A: control $jc, newline $jn, long $jl"
refused_at_1 control "$jc"
refused_at_1 newline "$jn"
refused_at_1 long "$jl"
# the names as the record keeps them: the newline escaped, the long dir as
# its digest (a cut path could name another directory)
expect "A newline: the record's work_dir" "$(rec_get "$jn" work_dir)" \
    "$RB_CLUSTER_DIR/work/nl%0Aattempt%3D0"
expect "A newline: the record's checkpoint_dir" "$(rec_get "$jn" checkpoint_dir)" "ck%0Ax"
expect_match "A long: the record's work_dir is a digest" "$(rec_get "$jl" work_dir)" \
    "^rb-digest:[0-9a-f]{16}:${#LONG}\$"
check "A long: slurmd.log says the work dir was replaced" \
    grep -q "job $jl: its work_dir of ${#LONG} bytes is longer than the ledger keeps" \
    "$RB_CLUSTER_DIR/log/slurmd.log"
for j in "$jc" "$jn" "$jl"; do timeout 10 scancel "$j" 2>/dev/null; done

# ---- B: on_error = "closed": a first attempt runs --------------------------------
check "B: config switched to on_error = closed" rb_write_config 'max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;
on_error = "closed";'
# The newline job of B also finds a checkpoint whose name holds a newline
# in its checkpoint dir: it is handed out, recorded and reported escaped.
CK=$NL/ck$'\n'y
CKF=$CK/checkpoint-1$'\n'attempt=0
runuser -u "$RB_USER" -- mkdir "$CK" && runuser -u "$RB_USER" -- touch "$CKF" ||
    fail "B: plant the checkpoint"
CKF_ESC="$RB_CLUSTER_DIR/work/nl%0Aattempt%3D0/ck%0Ay/checkpoint-1%0Aattempt%3D0"
for tag in newline long; do
    dir=$NL args=(--checkpoint-dir=$'ck\ny')
    [[ $tag == long ]] && dir=$LONG args=()
    j=$(submit "closed-$tag" "$dir" 0 "${args[@]}") || { fail "B $tag: sbatch"; continue; }
    check "B $tag: job $j ends" wait_state "$j" 'FAILED|COMPLETED|CANCELLED' 60
    expect "B $tag: JobState" "$(job_field "$j" JobState)" COMPLETED
    expect "B $tag: ExitCode" "$(job_field "$j" ExitCode)" "0:0"
    expect "B $tag: attempt 0 recorded" "$(ev_get "$j" start 0 decision)" run
    expect "B $tag: attempt 0 ended completed" "$(ev_get "$j" end 0 end)" completed
    expect "B $tag: its script ran" "$(out_attempts "$OUT/closed-$tag-$j.out" | tr '\n' ' ')" "0 "
    [[ $tag == newline ]] || continue
    expect "B newline: attempt 0 handed the checkpoint" "$(ev_get "$j" report 0 checkpoint)" "$CKF_ESC"
    expect "B newline: the record's cur.checkpoint" "$(rec_get "$j" cur.checkpoint)" "$CKF_ESC"
    check "B newline: the job's RESTORE_BUDGET_CHECKPOINT names it whole" \
        grep -qxF "trial:   RESTORE_BUDGET_CHECKPOINT=$CK/checkpoint-1" "$OUT/closed-$tag-$j.out"
done

# Up to here the plugin logged no error; C makes it log some (run_dir).
errs=$(grep -E 'error: .*restore_budget: ' "$RB_CLUSTER_DIR"/log/slurmd.log 2>/dev/null | head -n 5)
expect "A, B: no restore_budget error in slurmd.log" "$errs" ""
RB_EXPECT_PLUGIN_ERRORS=1

# ---- C: neither a note nor a record --------------------------------------------
check "C: run_dir made 0755: no prolog can note a job" chmod 0755 "$RB_RUN_DIR"
j=$(submit no-note "$RB_CLUSTER_DIR/work/default" "42 42") || fail "C: sbatch"
check "C: job $j ends" wait_state "$j" 'FAILED|COMPLETED|CANCELLED' 60
expect "C: JobState" "$(job_field "$j" JobState)" FAILED
expect "C: ExitCode (refused)" "$(job_field "$j" ExitCode)" "1:0"
expect "C: attempt 0 recorded by the batch step" "$(ev_get "$j" start 0 decision)" run
expect "C: attempt 0's end recorded" "$(ev_get "$j" end 0 end)" failed:42
expect "C: attempt 1 refused in the ledger" "$(ev_get "$j" start 1 decision)" refuse
expect "C: record's uid" "$(rec_get "$j" uid)" "$(id -u "$RB_USER")"
expect "C: attempts whose script ran" "$(out_attempts "$OUT/no-note-$j.out" | tr '\n' ' ')" "0 "
check "C: slurmd.log says the batch step began the record" \
    grep -q "job $j: no note from the prolog and no record: the batch step begins the record" \
    "$RB_CLUSTER_DIR/log/slurmd.log"
# an array task begun the same way keeps its array's ids
ja=$(submit no-note-task "$RB_CLUSTER_DIR/work/default" 0 --array=5) || fail "C: sbatch --array=5"
check "C: array task $ja ends" wait_state "$ja" 'FAILED|COMPLETED|CANCELLED' 60
expect "C: array task: JobState" "$(job_field "$ja" JobState)" COMPLETED
expect "C: array task: attempt 0 recorded by the batch step" "$(ev_get "$ja" start 0 decision)" run
expect "C: array task: record's array_job_id" "$(rec_get "$ja" array_job_id)" "$(job_field "$ja" ArrayJobId)"
expect "C: array task: record's array_task_id" "$(rec_get "$ja" array_task_id)" 5
chmod 0700 "$RB_RUN_DIR"

measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
