#!/bin/bash
# mnjob.sh - contrib/jobs/trial.sh for the multinode and faults suites: it
# prints the same lines (tests/integration/lib.sh's out_var/out_attempts read
# them) plus the node it runs on.
#
#SBATCH --job-name=mnjob
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=trial-%j.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#
# Knobs (environment):
#   TRIAL_STEPS=10, TRIAL_CKPT_EVERY=1, TRIAL_DIR=$PWD/ckpt   as in trial.sh
#   TRIAL_HOLD_ACK=FILE      when restoring: after reading the checkpoint, wait
#                            while FILE exists before acknowledging (the attempt
#                            stays RESTORING until the test removes FILE)
#   TRIAL_FAIL_AFTER_ACK=N   when restoring: exit N right after acknowledging
#   TRIAL_SRUN=1             first run `srun hostname` on every node of the
#                            allocation (launches a step, hence the prolog,
#                            on each node)

set -u
STEPS=${TRIAL_STEPS:-10}
CKPT_EVERY=${TRIAL_CKPT_EVERY:-1}
DIR=${TRIAL_DIR:-$PWD/ckpt}
ATTEMPT=${SLURM_RESTART_COUNT:-0}

log() { printf 'trial[%s.%s]: %s\n' "${SLURM_JOB_ID:-nojob}" "$ATTEMPT" "$*"; }

log "start on $(hostname -s) at $(date +%T) as $(id -un), SLURM_RESTART_COUNT=${SLURM_RESTART_COUNT:-<unset>}"
log "node ${SLURMD_NODENAME:-?} of ${SLURM_JOB_NODELIST:-?}"
env | grep '^RESTORE_BUDGET_' | sort | sed 's/^/trial:   /'

step=0
trap 'log "got SIGTERM at step $step"; trap - TERM; kill -TERM $$' TERM
mkdir -p "$DIR" || exit 1

if [[ ${TRIAL_SRUN:-0} == 1 ]]; then
    out=$(srun -N "${SLURM_JOB_NUM_NODES:-1}" --ntasks-per-node=1 hostname -s 2>&1)
    log "srun on every node: $(tr '\n' ' ' <<<"$out")"
fi

ckpt=${RESTORE_BUDGET_CHECKPOINT:-}
if [[ -n $ckpt ]]; then
    log "restoring from $ckpt"
    if ! read -r step <"$ckpt" || [[ ! $step =~ ^[0-9]+$ ]]; then
        log "cannot read a step number from $ckpt: restore failed"
        exit 42
    fi
    log "read step $step from $ckpt"
    if [[ -n ${TRIAL_HOLD_ACK:-} && -e ${TRIAL_HOLD_ACK} ]]; then
        log "holding the acknowledgement while $TRIAL_HOLD_ACK exists"
        while [[ -e $TRIAL_HOLD_ACK ]]; do sleep 0.2 & wait $!; done
    fi
    log "restored step $step"
    if [[ -n ${RESTORE_BUDGET_ACK_FILE:-} ]]; then
        touch "$RESTORE_BUDGET_ACK_FILE" && log "acknowledged restore ($RESTORE_BUDGET_ACK_FILE)"
    fi
    if [[ -n ${TRIAL_FAIL_AFTER_ACK:-} ]]; then
        log "TRIAL_FAIL_AFTER_ACK: exiting $TRIAL_FAIL_AFTER_ACK after the restore"
        exit "$TRIAL_FAIL_AFTER_ACK"
    fi
else
    log "no checkpoint to restore: starting fresh"
fi

while ((step < STEPS)); do
    sleep "$CKPT_EVERY" & wait $!
    step=$((step + 1))
    printf '%s\n' "$step" >"$DIR/checkpoint-$step.tmp" &&
        mv -f "$DIR/checkpoint-$step.tmp" "$DIR/checkpoint-$step" || exit 1
    ln -sfn "checkpoint-$step" "$DIR/latest.tmp" &&
        mv -T "$DIR/latest.tmp" "$DIR/latest" || exit 1
    log "checkpoint step $step"
done

log "done: $STEPS steps"
exit 0
