#!/bin/bash
# test_job_id_reused.sh - a job id reused by the same user must not inherit
# the old job's record (docs/security.md: users "wait for job ids to be
# reused"; none of that may "hand one job another job's budget").
#   rbuser's job J (M=0, R=1) writes checkpoints, is requeued, its restore
#   fails (exit 42 = RequeueExit) and its attempt 2 is refused: the ledger
#   says J is exhausted.  Then the controller is rebuilt from scratch
#   (slurmctld stopped, StateSaveLocation wiped, started again with -c), so
#   job ids start over at FirstJobId, and rbuser submits new jobs until one
#   gets id J again.  That job is a new job: it runs its script at attempt 0
#   with a fresh budget (FAILURES=0, no checkpoint of the old job), it is not
#   refused, and J's event log records `kind=reset ... reason=job_id_reused`.
# On the plugin of d6936ee a reset happened only for a different uid: the
# same user's new job J was refused ("job J attempt 3 refused: restore budget
# exhausted") in task_init, before its script ran.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;
on_exhausted = "fail";' || { fail "cluster up"; summary; }

# restart_ctld_clean - stop this cluster's slurmctld (TERM, by pid), wipe its
# StateSaveLocation and start it again with -c (clean state): job ids start
# over at FirstJobId.  slurmd keeps running and re-registers.
restart_ctld_clean() {
    local pid i state
    state=$(sed -n 's/^StateSaveLocation=//p' "$SLURM_CONF")
    [[ -n $state && -d $state && $state == "$RB_CLUSTER_DIR"/* ]] ||
        { echo "restart_ctld_clean: StateSaveLocation '$state' not in $RB_CLUSTER_DIR" >&2; return 1; }
    pid=$(rb_daemon_pid slurmctld) || { echo "restart_ctld_clean: slurmctld not running" >&2; return 1; }
    kill -TERM "$pid"
    for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "restart_ctld_clean: slurmctld $pid did not stop" >&2; return 1; }
    find "$state" -mindepth 1 -delete || return 1
    rb_log "slurmctld $pid stopped; $state wiped: $(find "$state" -mindepth 1 | wc -l) entries left"
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        slurmctld -f "$SLURM_CONF" -c || return 1
    for ((i = 0; i < 300; i++)); do
        rb_daemon_pid slurmctld >/dev/null &&
            timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP' &&
            [[ $(timeout 10 sinfo -h -N -o %T 2>/dev/null | sort -u) == idle ]] && return 0
        sleep 0.1
    done
    echo "restart_ctld_clean: controller or node not ready after 30s" >&2
    return 1
}

# ---- 1. the old job J runs until it is exhausted -------------------------------------
rb_workdir old >/dev/null
old_dir=$RB_WORKDIR
j=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch old job"; summary; }
old_out=$old_dir/trial-$j.out
rb_log "old job: $j"
checkq "old job $j wrote 2 checkpoints" wait_grep "$old_out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
# scontrol requeue (not preempt): no other job takes an id before the reuse
check "old job $j requeued (root)" timeout 10 scontrol requeue "$j"
check "old job $j: attempt 2 refused in the ledger" wait_ev "$j" 'kind=start attempt=2 decision=refuse' 90
check "old job $j ends FAILED" wait_state "$j" FAILED 60
expect "old job $j: ExitCode" "$(job_field "$j" ExitCode)" "1:0"
check "old job $j: its restore ran and failed" grep -q "^trial\[$j\.1\]: TRIAL_FAIL_RESTORE=1" "$old_out"
expect "old job $j: record exhausted" "$(rec_get "$j" exhausted)" true
expect "old job $j: record failures" "$(rec_get "$j" failures)" 1
expect "old job $j: record uid is $RB_USER's" "$(rec_get "$j" uid)" "$(id -u "$RB_USER")"
old_ckpt=$(rec_get "$j" checkpoint)
check "old job $j: a checkpoint is on record" test -n "$old_ckpt"
check "old job $j: the event log has no reset yet" test "$(ev_count "$j" '(^| )kind=reset( |$)')" = 0
old_lines=$(wc -l <"$(rb_evlog_path "$j")")

# ---- 2. a rebuilt controller: job ids start over ----------------------------------------
check "slurmctld restarted with its state wiped" restart_ctld_clean
check "the old job $j is unknown to the new controller" bash -c "! timeout 10 scontrol -o show job $j >/dev/null 2>&1"

# ---- 3. rbuser submits until a job gets id J again -----------------------------------
rb_workdir new >/dev/null
first=$(timeout 10 scontrol show config | sed -n 's/^FirstJobId *= *//p')
rb_log "FirstJobId=$first; old job $j: $((j - ${first:-1})) filler job(s) before the reuse"
fillers=() new=
for ((id_want = ${first:-1}; id_want < j; id_want++)); do
    id=$(submit_as_user -p low -J filler -o /dev/null --wrap true) || break
    fillers+=("$id")
    [[ $id == "$id_want" ]] || { rb_log "filler got id $id, expected $id_want"; break; }
done
expect "filler jobs got the ids below $j in order" "${fillers[*]:-}" "$(seq -s ' ' "${first:-1}" $((j - 1)) 2>/dev/null)"
new=$(TRIAL_STEPS=2 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch new job"; summary; }
expect "the new trial job got the old job's id (ids started over)" "$new" "$j"
[[ $new == "$j" ]] || { rb_final_checks; summary; }
new_out=$RB_WORKDIR/trial-$j.out

check "new job $j ends" wait_state "$j" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 60
expect "new job $j: JobState (not refused)" "$(job_field "$j" JobState)" COMPLETED
expect "new job $j: ExitCode" "$(job_field "$j" ExitCode)" "0:0"
expect "new job $j: Restarts" "$(job_field "$j" Restarts)" 0
if grep -q "^trial\[$j\.0\]: start" "$new_out" 2>/dev/null; then
    pass "new job $j: its script ran (attempt 0)"
else
    fail "new job $j: its script never ran; its output: $(grep -m2 -E 'refused|error' "$new_out" 2>/dev/null | tr '\n' ' ')"
fi
check "new job $j: no refusal in its output" bash -c "! grep -q 'refused' '$new_out'"
expect "new job $j: attempts that ran" "$(out_attempts "$new_out" | tr '\n' ' ')" "0 "
expect "new job $j: RESTORE_BUDGET_ATTEMPT" "$(out_var "$new_out" 0 RESTORE_BUDGET_ATTEMPT)" 0
expect "new job $j: RESTORE_BUDGET_FAILURES" "$(out_var "$new_out" 0 RESTORE_BUDGET_FAILURES)" 0
expect "new job $j: RESTORE_BUDGET_RESTORE_FAILURES" "$(out_var "$new_out" 0 RESTORE_BUDGET_RESTORE_FAILURES)" 0
expect "new job $j: RESTORE_BUDGET_RESTORES_LEFT" "$(out_var "$new_out" 0 RESTORE_BUDGET_RESTORES_LEFT)" 1
expect "new job $j: RESTORE_BUDGET_PHASE" "$(out_var "$new_out" 0 RESTORE_BUDGET_PHASE)" FRESH
expect "new job $j: not handed the old job's checkpoint" "$(out_var "$new_out" 0 RESTORE_BUDGET_CHECKPOINT || echo '<not printed>')" ""
check "new job $j: trial finished" grep -q "^trial\[$j\.0\]: done: 2 steps" "$new_out"

# ---- 4. the ledger: a reset, then a fresh record --------------------------------------
evlog=$(rb_evlog_path "$j")
after=$(tail -n +"$((old_lines + 1))" "$evlog" 2>/dev/null)
rb_log "event log lines after the reuse:"; sed 's/^/    /' <<<"$after" >&2
reset=$(grep -E '(^| )kind=reset( |$)' <<<"$after" | head -n 1)
check "event log: a kind=reset line after the reuse" test -n "$reset"
expect_match "event log: the reset says reason=job_id_reused" "$reset" '(^| )reason=job_id_reused( |$)'
start0=$(grep -E '(^| )kind=start attempt=0( |$)' <<<"$after" | head -n 1)
expect_match "event log: the new attempt 0 started with decision=run" "$start0" '(^| )decision=run( |$)'
expect_match "event log: the new attempt 0 starts from failures 0" "$start0" '(^| )failures=0->0( |$)'
l_reset=$(grep -nE '(^| )kind=reset( |$)' <<<"$after" | head -n 1 | cut -d: -f1)
l_start=$(grep -nE '(^| )kind=start attempt=0( |$)' <<<"$after" | head -n 1 | cut -d: -f1)
check "event log: the reset (line ${l_reset:-none}) comes before the new start (line ${l_start:-none})" \
    test "${l_reset:-999999}" -lt "${l_start:-0}"
check "event log: no refused start after the reuse" bash -c "! grep -q ' decision=refuse' <<<\"\$1\"" _ "$after"
for kv in exhausted=false failures=0 restore_failures=0 cur.attempt=0 cur.end=completed \
          cur.refused=false "uid=$(id -u "$RB_USER")"; do
    expect "new record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done
check "new record: not the old job's checkpoint ($old_ckpt)" test "$(rec_get "$j" checkpoint)" != "$old_ckpt"

measure "job=$j fillers=${#fillers[@]} duration=$((SECONDS - T0))s"
rb_final_checks
summary
