#!/bin/bash
# upgradejob.sh - a trial for test_upgrade.sh that runs until the test tells
# it to finish, so a preemption, a slurmd restart and a plugin swap can be
# placed between its attempts without racing its end.  It prints what
# contrib/jobs/trial.sh prints (start line, RESTORE_BUDGET_* variables,
# restore/ack/checkpoint lines), so out_var and out_attempts read it.
#
#SBATCH --job-name=upgradejob
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=upgrade-%j.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#
# Knobs (environment):
#   TRIAL_DIR=$PWD/ckpt      checkpoint directory (one checkpoint a second)
#   TRIAL_FINISH=FILE        exit 0 at the first step after FILE exists
#   TRIAL_MAX_STEPS=300      exit 0 after this many steps in any case (a bound)

set -u
DIR=${TRIAL_DIR:-$PWD/ckpt}
MAX=${TRIAL_MAX_STEPS:-300}
ATTEMPT=${SLURM_RESTART_COUNT:-0}

log() { printf 'trial[%s.%s]: %s\n' "${SLURM_JOB_ID:-nojob}" "$ATTEMPT" "$*"; }

log "start on $(hostname -s) at $(date +%T) as $(id -un), SLURM_RESTART_COUNT=${SLURM_RESTART_COUNT:-<unset>}"
env | grep '^RESTORE_BUDGET_' | sort | sed 's/^/trial:   /'

step=0
trap 'log "got SIGTERM at step $step"; trap - TERM; kill -TERM $$' TERM
mkdir -p "$DIR" || exit 1

ckpt=${RESTORE_BUDGET_CHECKPOINT:-}
if [[ -n $ckpt ]]; then
    log "restoring from $ckpt"
    if ! read -r step <"$ckpt" || [[ ! $step =~ ^[0-9]+$ ]]; then
        log "cannot read a step number from $ckpt: restore failed"
        exit 42
    fi
    log "restored step $step"
    if [[ -n ${RESTORE_BUDGET_ACK_FILE:-} ]]; then
        if touch "$RESTORE_BUDGET_ACK_FILE"; then
            log "acknowledged restore ($RESTORE_BUDGET_ACK_FILE)"
        else
            log "cannot acknowledge: touch $RESTORE_BUDGET_ACK_FILE failed"
        fi
    fi
else
    log "no checkpoint to restore: starting fresh"
fi

n=0
while ((n < MAX)); do
    if [[ -n ${TRIAL_FINISH:-} && -e $TRIAL_FINISH ]]; then
        log "done: finish flag seen at step $step"
        exit 0
    fi
    sleep 1 & wait $!
    step=$((step + 1)) n=$((n + 1))
    printf '%s\n' "$step" >"$DIR/checkpoint-$step.tmp" &&
        mv -f "$DIR/checkpoint-$step.tmp" "$DIR/checkpoint-$step" || exit 1
    ln -sfn "checkpoint-$step" "$DIR/latest.tmp" &&
        mv -T "$DIR/latest.tmp" "$DIR/latest" || exit 1
    log "checkpoint step $step"
done
log "done: $MAX steps (TRIAL_MAX_STEPS)"
exit 0
