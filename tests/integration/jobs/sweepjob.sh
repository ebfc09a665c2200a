#!/bin/bash
# sweepjob.sh - one trial of a sweep for test_array_sweep.sh: an array task
# whose behaviour is chosen by its SLURM_ARRAY_TASK_ID (docs/arrays.md). It
# prints the lines of contrib/jobs/trial.sh, so the suite's parsers
# (out_var, out_attempts) read its output.
#
#SBATCH --job-name=sweep
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=sweep-%a.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#
#   task 0, 6  healthy, running until the file ./release exists (at most
#              TRIAL_WAIT seconds, default 90), then exit 0
#   task 1     checkpoints, then waits to be requeued (the test's `scontrol
#              requeue A_1`); restores from the checkpoint, acks, exit 0
#   task 2     checkpoints, exits 42 (a failure); restoring, it finds the
#              checkpoint corrupt: exit 42 (a failed restore)
#   task 3     attempt 0 exits 42 (an application failure), then exit 0
#   task 4     exits 3 (fatal in exit_rules)
#   task 5     healthy, short: exit 0 after a second
#   task 7     exits 42 on every attempt (spends the budget)
set -u
ATTEMPT=${SLURM_RESTART_COUNT:-0}
TASK=${SLURM_ARRAY_TASK_ID:-none}
# the task's own checkpoint directory: --checkpoint-dir=ckpt/%a, made
# absolute by the plugin
DIR=${RESTORE_BUDGET_CHECKPOINT_DIR:-ckpt/$TASK}
log() { printf 'trial[%s.%s]: %s\n' "${SLURM_JOB_ID:-nojob}" "$ATTEMPT" "$*"; }

log "start task $TASK of array ${SLURM_ARRAY_JOB_ID:-none} at $(date +%T)"
env | grep '^RESTORE_BUDGET_' | sort | sed 's/^/trial:   /'
mkdir -p "$DIR" || exit 1
# a checkpoint of this task: complete temp file, then rename
checkpoint() {
    printf '%s\n' "$1" >"$DIR/checkpoint-$TASK.tmp" &&
        mv -f "$DIR/checkpoint-$TASK.tmp" "$DIR/checkpoint-$TASK" && log "checkpoint step $1"
}
restore() {
    local step
    log "restoring from ${RESTORE_BUDGET_CHECKPOINT:-}"
    read -r step <"${RESTORE_BUDGET_CHECKPOINT:-/nonexistent}" || return 1
    log "restored step $step"
    touch "${RESTORE_BUDGET_ACK_FILE:?}" && log "acknowledged restore"
}
# wait for the test's go, bounded
wait_release() {
    local i
    for ((i = 0; i < ${TRIAL_WAIT:-90}; i++)); do
        [[ -e release ]] && return 0
        sleep 1
    done
}
case $TASK in
    0 | 6) wait_release; log "exiting 0"; exit 0 ;;
    1)
        if [[ -n ${RESTORE_BUDGET_CHECKPOINT:-} ]]; then
            restore || exit 42
            log "exiting 0"; exit 0
        fi
        checkpoint 5
        log "waiting to be requeued"
        while :; do sleep 1; done ;;
    2)
        if [[ -n ${RESTORE_BUDGET_CHECKPOINT:-} ]]; then
            log "the checkpoint is corrupt: exiting 42"; exit 42
        fi
        checkpoint 3; sleep 1; log "exiting 42"; exit 42 ;;
    3) sleep 1; code=$((ATTEMPT == 0 ? 42 : 0)); log "exiting $code"; exit "$code" ;;
    4) sleep 1; log "exiting 3"; exit 3 ;;
    7) sleep 1; log "exiting 42"; exit 42 ;;
    *) sleep 1; log "exiting 0"; exit 0 ;;
esac
