#!/bin/bash
# test_end_unwritten.sh - the epilog cannot write an attempt's end (state_dir
# read-only just then, a 1 MiB tmpfs remounted): the end is kept on the
# batch host and recorded later (docs/architecture.md, "An end not written";
# issue 21, found by the soak):
#   1. a real failure is never free: max_failures = 0; attempt 1 restores,
#      acknowledges, exits 43 (RequeueExitHold) while state_dir is read-only;
#      once it is writable again, attempt 2's batch step records that end
#      first and refuses the job (before the fix: charged as an
#      interruption, attempt 2 ran and the job COMPLETED);
#   2. a lost final end does not leave the record running: a job's last
#      attempt exits 0 while state_dir is read-only; the next tracked job's
#      epilog on the node records it (before: `state: running` forever);
#      until then `restore-budget show` says its end was lost, since Slurm
#      no longer lists the job.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
BASE='max_failures = 0;
restore_retry_num = 2;
restore_timeout = 0;'

rb_cluster_up "$BASE" || { fail "cluster up"; summary; }
slog=$RB_CLUSTER_DIR/log/slurmd.log
SD=$RB_CLUSTER_DIR/rb/sd
check "a 1 MiB tmpfs on $SD" ft_mount_tmpfs "$SD" 1m
RB_STATE=$SD
rb_write_config "state_dir = \"$SD\";
$BASE"

# the epilog said it kept job $1's end (since log line $2)
end_kept() { new_log_lines "$slog" "$2" | grep -q "epilog: job $1: its end is kept"; }
wait_end_kept() {
    local i
    for ((i = 0; i < 300; i++)); do end_kept "$1" "$2" && return 0; sleep 0.1; done
    return 1
}

# ---- 1. a failure whose end could not be written ---------------------------
rb_workdir failure >/dev/null
hold=$RB_WORKDIR/hold-ack
j=$(TRIAL_STEPS=30 TRIAL_HOLD_ACK=$hold TRIAL_FAIL_AFTER_ACK=43 ft_submit) || fail "sbatch"
out=$RB_WORKDIR/trial-$j.out
checkq "attempt 0 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 1\$" 60
check "job $j parked between attempts (requeuehold)" ft_park "$j"
touch "$hold"
check "job released" ft_release "$j"
checkq "attempt 1 restores and waits to acknowledge" \
    wait_grep "$out" "^trial\[$j\.1\]: holding the acknowledgement" 60
n0=$(log_len "$slog")
check "state_dir read-only" mount -o remount,ro "$SD"
rm -f "$hold"          # attempt 1 acknowledges, then exits 43 (held)
check "the epilog keeps attempt 1's end on the node" wait_end_kept "$j" "$n0"
check "state_dir writable again" mount -o remount,rw "$SD"
checkq "job $j held by RequeueExitHold (SPECIAL_EXIT)" wait_state "$j" SPECIAL_EXIT 60
expect "attempt 1 has no end on record yet" "$(rec_get "$j" cur.end)" none
check "job released" ft_release "$j"
checkq "job $j ends" wait_state "$j" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 90
expect "JobState (attempt 2 refused: attempt 1's failure counted)" \
    "$(job_field "$j" JobState)" FAILED
check "attempt 2's script never ran" bash -c "! grep -q '^trial\[$j\.2\]: start' '$out'"
check "the refusal is in the job's stderr" \
    grep -qE "restore_budget: job $j attempt 2 refused: restore budget exhausted" "$out"
check "the event log has attempt 1's end, carried late" \
    grep -qE "^t=[0-9]+ kind=end attempt=1 .*end=failed:43 late=1" "$(rb_evlog_path "$j")"
expect "failures" "$(rec_get "$j" failures)" 1

# ---- 2. a final end that could not be written ------------------------------
rb_workdir final >/dev/null
finish=$RB_WORKDIR/finish
j=$(TRIAL_STEPS=60 TRIAL_FINISH=$finish ft_submit) || fail "sbatch"
out=$RB_WORKDIR/trial-$j.out
checkq "job $j runs" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 1\$" 60
n0=$(log_len "$slog")
check "state_dir read-only" mount -o remount,ro "$SD"
touch "$finish"
check "the epilog keeps job $j's final end" wait_end_kept "$j" "$n0"
check "state_dir writable again" mount -o remount,rw "$SD"
checkq "job $j COMPLETED" wait_state "$j" COMPLETED 60
expect "its record has no end yet" "$(rec_get "$j" cur.end)" none
check "restore-budget show $j: its end was lost (Slurm no longer lists it)" \
    bash -c "'$RB_CLI' --config '$RB_CONF' --cluster '$RB_CLUSTER_NAME_USED' show '$j' | grep -q 'its end was lost'"
rb_workdir next >/dev/null
k=$(TRIAL_STEPS=1 ft_submit) || fail "sbatch"
checkq "another job $k completes" wait_state "$k" COMPLETED 60
wait_not_running "$k" 30 >/dev/null
expect "job $j's end recorded by job $k's epilog" "$(rec_get "$j" cur.end)" completed
check "restore-budget show $j: not running" bash -c \
    "! '$RB_CLI' --config '$RB_CONF' --cluster '$RB_CLUSTER_NAME_USED' show '$j' | grep -q 'state: running'"

measure "duration=$((SECONDS - T0))s"
ft_final_checks
summary
