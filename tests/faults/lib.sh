# shellcheck shell=bash
# tests/faults/lib.sh - tests/integration/lib.sh plus helpers to break the
# plugin's environment on a real private cluster (contrib/cluster/cluster.sh)
# while a job waits between two attempts.  Source it from a test:
#   . "$(dirname "$0")/lib.sh"
#
# What "as designed" means after a fault (docs/rule.md, "Limits";
# docs/architecture.md, "Where each event happens" and "The ledger"):
#   on_error = "open":   the attempt runs untracked (no RESTORE_BUDGET_* in
#                        its environment) and slurmd.log has a restore_budget
#                        error naming the path and the cause;
#   on_error = "closed": the attempt is refused in task_init with a clear
#                        message in the job's stderr; the job ends FAILED 1:0;
#   always: slurmd stays up, no node is drained, the ledger record is never
#   torn (the CLI still reads it).
#
# Observed on this machine (Debian 12, slurm-wlm 22.05.8, 2 CPUs):
#   `scontrol requeuehold J` puts a running job back to PENDING (held) with
#   its restart count bumped (the plugin sees an interruption); the epilog
#   has run when the job leaves COMPLETING; `scontrol release J` starts the
#   next attempt 0-6 s later (cred_expire = 5 s since the requeue).
#   slurmd TERMed during a job: the job's slurmstepd keeps running; a new
#   slurmd re-attaches to it and the node shows allocated again in <1 s.
#
# The suite's summary line is "faults: N passed, N failed".

RB_SUITE=${RB_SUITE:-faults}
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
FT_JOB=$RB_ROOT/tests/lib/trial_job.sh
RB_CLI=${RB_CLI:-$RB_ROOT/build/restore-budget}
FT_MOUNTS=()

summary() {
    printf '%s: %d passed, %d failed\n' "$RB_SUITE" "$RB_PASSED" "$RB_FAILED"
    [[ $RB_FAILED -eq 0 ]] && exit 0
    exit 1
}

# ft_umount_all - undo every mount this test made (the EXIT hook calls it).
ft_umount_all() {
    local m
    for m in "${FT_MOUNTS[@]}"; do
        mountpoint -q "$m" 2>/dev/null || continue
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
            echo "ft_umount_all: cannot unmount $m" >&2
    done
    FT_MOUNTS=()
}

# ft_mount_tmpfs DIR SIZE - a root-owned 0755 tmpfs of SIZE (e.g. 512k) on DIR.
ft_mount_tmpfs() {
    mkdir -p "$1" || return 1
    mount -t tmpfs -o "size=$2,mode=0755,uid=0,gid=0" rbfault "$1" || return 1
    FT_MOUNTS+=("$1")
    [[ $RB_EXIT_HOOK == *ft_umount_all* ]] || RB_EXIT_HOOK="${RB_EXIT_HOOK:+$RB_EXIT_HOOK; }ft_umount_all"
}

# ft_fill DIR - fill the filesystem of DIR (a file DIR/zz-fill) until ENOSPC.
ft_fill() {
    dd if=/dev/zero of="$1/zz-fill" bs=4k 2>/dev/null
    sync -f "$1" 2>/dev/null
    [[ $(df --output=avail -k "$1" | tail -n 1 | tr -d ' ') == 0 ]]
}

# ft_submit ARGS... - a short trial (tests/lib/trial_job.sh, 3 steps of 1 s, checkpoints in
# ckpt/) as $RB_USER; prints its id.
ft_submit() {
    TRIAL_STEPS=${TRIAL_STEPS:-3} TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt "$@" "$FT_JOB"
}

# ft_park JOB - requeue JOB held ("waits between attempts") and wait until
# its epilog is done.
ft_park() {
    timeout 10 scontrol requeuehold "$1" || return 1
    wait_not_running "$1" 60 || return 1
    [[ $(job_field "$1" JobState) == PENDING ]]
}

# ft_release JOB - let the parked job start its next attempt.
ft_release() { timeout 10 scontrol release "$1"; }

# attempt_env FILE N - the RESTORE_BUDGET_* lines attempt N printed.
attempt_env() {
    awk -v n="$2" '
        /^trial\[[0-9]+\.[0-9]+\]: start / {
            s = $0; sub(/^trial\[[0-9]+\./, "", s); sub(/\].*/, "", s); a = s + 0; next }
        a == n + 0 && /^trial:   RESTORE_BUDGET_/ { print }' "$1" 2>/dev/null
}

# new_log_lines FILE FROM - lines of FILE after line FROM.
new_log_lines() { tail -n +"$(($2 + 1))" "$1" 2>/dev/null; }
log_len() { wc -l <"$1" 2>/dev/null || echo 0; }

# ft_restart_slurmd_busy - TERM this cluster's slurmd while a job runs and
# start it again; wait until the node answers (allocated, mixed or idle).
ft_restart_slurmd_busy() {
    local pid i s
    pid=$(rb_daemon_pid slurmd) || { echo "ft_restart_slurmd_busy: slurmd not running" >&2; return 1; }
    kill -TERM "$pid"
    for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "slurmd $pid did not stop" >&2; return 1; }
    FT_SLURMD_DOWN_AT=$(rb_now)
    [[ -n ${FT_WHILE_DOWN:-} ]] && eval "$FT_WHILE_DOWN"
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        slurmd -f "$RB_CLUSTER_DIR/slurm.conf" || return 1
    for ((i = 0; i < 300; i++)); do
        s=$(timeout 10 sinfo -h -N -o %T 2>/dev/null | sort -u)
        rb_daemon_pid slurmd >/dev/null && [[ $s =~ ^(allocated|mixed|idle|completing)$ ]] && return 0
        sleep 0.1
    done
    echo "ft_restart_slurmd_busy: node '$s' after 30s" >&2
    return 1
}

# ft_final_checks - rb_final_checks (errors in slurmd.log are expected here).
ft_final_checks() {
    RB_EXPECT_PLUGIN_ERRORS=1 rb_final_checks
}
