#!/bin/bash
# tests/lib/trial_job.sh - the test suites' trial: contrib/jobs/trial.sh (the
# user-facing example) with the knobs the integration, multinode and faults
# suites need.  It prints the same lines as trial.sh, so the suites' parsers
# (tests/integration/lib.sh out_var, out_attempts) read both.
#
#SBATCH --job-name=trial_job
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=trial-%j.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#
# Knobs (environment):
#   TRIAL_STEPS=10, TRIAL_DIR=$PWD/ckpt   as in trial.sh
#   TRIAL_CKPT_EVERY=1      seconds per step (trial.sh: 2)
#   TRIAL_FAIL_AFTER_ACK=N  when restoring: exit N right after acknowledging
#   TRIAL_HOLD_ACK=FILE     when restoring: after reading the checkpoint, wait
#                           while FILE exists before acknowledging (the test
#                           removes FILE to let the restore finish; until then
#                           the attempt stays RESTORING)
#   TRIAL_FINISH=FILE       exit 0 at the first step after FILE exists (the
#                           test decides when the job ends; TRIAL_STEPS stays
#                           the bound)
#   TRIAL_SELF_REQUEUE="0 1"  in these attempts, after TRIAL_REQUEUE_AFTER (2)
#                           checkpoints, run `scontrol requeue $SLURM_JOB_ID`
#                           as the job's user, then wait to be killed
#   TRIAL_CORRUPT=NAME      the checkpoint called NAME is corrupt: restoring
#                           from it fails with the RequeueExit code (42)
#   TRIAL_NO_ACK=1          never write RESTORE_BUDGET_ACK_FILE (exit 0 still
#                           confirms; the checkpoint directory stays as is)
#   TRIAL_SRUN=1            first run `srun hostname` on every node of the
#                           allocation (launches a step, hence the prolog,
#                           on each node)

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

# restore CKPT - read the step from CKPT and acknowledge; exits on failure
restore() {
    local ckpt=$1
    log "restoring from $ckpt"
    if [[ -n ${TRIAL_CORRUPT:-} && ${ckpt##*/} == "$TRIAL_CORRUPT" ]]; then
        log "TRIAL_CORRUPT=$TRIAL_CORRUPT: restore of $ckpt failed"
        exit 42
    fi
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
    if [[ -n ${RESTORE_BUDGET_ACK_FILE:-} && ${TRIAL_NO_ACK:-0} != 1 ]]; then
        touch "$RESTORE_BUDGET_ACK_FILE" && log "acknowledged restore ($RESTORE_BUDGET_ACK_FILE)"
    fi
    if [[ -n ${TRIAL_FAIL_AFTER_ACK:-} ]]; then
        log "TRIAL_FAIL_AFTER_ACK: exiting $TRIAL_FAIL_AFTER_ACK after the restore"
        exit "$TRIAL_FAIL_AFTER_ACK"
    fi
}

if [[ -n ${RESTORE_BUDGET_CHECKPOINT:-} ]]; then
    restore "$RESTORE_BUDGET_CHECKPOINT"
else
    log "no checkpoint to restore: starting fresh"
fi

# self_requeue - after TRIAL_REQUEUE_AFTER checkpoints of a listed attempt
self_requeue() {
    ((done_here == ${TRIAL_REQUEUE_AFTER:-2})) && [[ " ${TRIAL_SELF_REQUEUE:-} " == *" $ATTEMPT "* ]] || return 0
    # Logged first: the requeue's SIGTERM may arrive before scontrol returns.
    log "requesting self-requeue"
    if msg=$(scontrol requeue "$SLURM_JOB_ID" 2>&1); then
        log "self-requeue accepted"
        while :; do sleep 1 & wait $!; done
    fi
    log "self-requeue refused: $msg"
    exit 3
}

done_here=0
while ((step < STEPS)); do
    if [[ -n ${TRIAL_FINISH:-} && -e $TRIAL_FINISH ]]; then
        log "done: finish flag seen at step $step"
        exit 0
    fi
    sleep "$CKPT_EVERY" & wait $!
    step=$((step + 1))
    printf '%s\n' "$step" >"$DIR/checkpoint-$step.tmp" &&
        mv -f "$DIR/checkpoint-$step.tmp" "$DIR/checkpoint-$step" || exit 1
    ln -sfn "checkpoint-$step" "$DIR/latest.tmp" &&
        mv -T "$DIR/latest.tmp" "$DIR/latest" || exit 1
    log "checkpoint step $step"
    done_here=$((done_here + 1))
    self_requeue
done

log "done: $STEPS steps"
exit 0
