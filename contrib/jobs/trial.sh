#!/bin/bash
# trial.sh - an example "trial": a requeueable batch job that checkpoints and,
# when restore_budget hands it a checkpoint after a requeue, restores from it.
# Copy this file and replace the "work" part with your own program.
#
#   sbatch contrib/jobs/trial.sh
#
#SBATCH --job-name=trial
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=trial-%j.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#
# --requeue         lets Slurm requeue the job (preemption, `scontrol requeue`,
#                   RequeueExit) instead of ending it.
# --open-mode=append keeps the output of every attempt in one file (the default
#                   truncates it on each rerun).
#
# What restore_budget gives the job (all RESTORE_BUDGET_*; see the project's
# docs/rule.md, "What the job sees"):
#   RESTORE_BUDGET_CHECKPOINT  path of the checkpoint to restore from ("" = none)
#   RESTORE_BUDGET_ACK_FILE    touch it once the restore worked: that confirms
#                              the restore, so a later failure is no longer
#                              charged as a failed restore
#   RESTORE_BUDGET_ATTEMPT, _PHASE, _FAILURES, _RESTORES_LEFT, ... informative
#
# The contract a trial keeps:
#   1. Write checkpoints atomically (write a temp name, then rename), and point
#      "latest" at the newest one atomically too.  restore_budget never writes,
#      renames or deletes anything in the checkpoint directory.
#   2. If RESTORE_BUDGET_CHECKPOINT is set, restore from it; if that fails,
#      exit with the cluster's RequeueExit code (RESTORE_BUDGET_REQUEUE_EXIT
#      when the plugin exports it, else 42) so Slurm requeues it and the
#      plugin charges a failed restore.
#   3. After a successful restore, touch "$RESTORE_BUDGET_ACK_FILE".
#
# Knobs for tests (environment, passed with sbatch --export=ALL,...):
#   TRIAL_STEPS=10          steps to run in total
#   TRIAL_CKPT_EVERY=2      seconds per step (one checkpoint per step)
#   TRIAL_DIR=$PWD/ckpt     checkpoint directory
#   TRIAL_FAIL_RESTORE=1    when restoring, fail (exit 42) before acknowledging:
#                           simulates a corrupt checkpoint
#   TRIAL_FAIL_AFTER_ACK=N  when restoring, exit N right after acknowledging

set -u

STEPS=${TRIAL_STEPS:-10}
CKPT_EVERY=${TRIAL_CKPT_EVERY:-2}
DIR=${TRIAL_DIR:-$PWD/ckpt}
RESTORE_FAILED_EXIT=${RESTORE_BUDGET_REQUEUE_EXIT:-42}   # RequeueExit in slurm.conf

log() { printf 'trial[%s.%s]: %s\n' "${SLURM_JOB_ID:-nojob}" "${SLURM_RESTART_COUNT:-0}" "$*"; }

log "start on $(hostname -s) at $(date +%T) as $(id -un), SLURM_RESTART_COUNT=${SLURM_RESTART_COUNT:-<unset>}"
env | grep '^RESTORE_BUDGET_' | sort | sed 's/^/trial:   /'

# Preemption and `scontrol requeue` send SIGTERM first (SIGKILL after KillWait).
# Say so in the log, then die from the signal like an untrapped job would.
step=0
trap 'log "got SIGTERM at step $step"; trap - TERM; kill -TERM $$' TERM

mkdir -p "$DIR" || exit 1

# ---- restore ----------------------------------------------------------------
ckpt=${RESTORE_BUDGET_CHECKPOINT:-}
if [[ -n $ckpt ]]; then
    log "restoring from $ckpt"
    if [[ ${TRIAL_FAIL_RESTORE:-0} == 1 ]]; then
        log "TRIAL_FAIL_RESTORE=1: pretending the checkpoint is corrupt"
        exit "$RESTORE_FAILED_EXIT"
    fi
    if ! read -r step <"$ckpt" || [[ ! $step =~ ^[0-9]+$ ]]; then
        log "cannot read a step number from $ckpt: restore failed"
        exit "$RESTORE_FAILED_EXIT"
    fi
    log "restored step $step"
    # Confirm the restore to restore_budget.
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

# ---- work + checkpoints -----------------------------------------------------
while ((step < STEPS)); do
    sleep "$CKPT_EVERY" & wait $!          # wait is interruptible by the trap
    step=$((step + 1))
    # Atomic checkpoint: complete temp file, then rename.  (*.tmp names are
    # ignored by restore_budget.)  The temp names are mktemp's, created
    # exclusively under a random name, so a name another user planted in a
    # shared directory is never written through (README, "A shared
    # checkpoint directory").
    tmp=$(mktemp "$DIR/.checkpoint-$step.XXXXXXXXXX.tmp") &&
        printf '%s\n' "$step" >"$tmp" &&
        mv -f "$tmp" "$DIR/checkpoint-$step" || exit 1
    # Atomic "latest": a new symlink under a temp name, renamed over the old
    # (mktemp -u: a name no entry has; ln without -f fails if one appears).
    tmp=$(mktemp -u "$DIR/.latest.XXXXXXXXXX.tmp") &&
        ln -sn "checkpoint-$step" "$tmp" &&
        mv -T "$tmp" "$DIR/latest" || exit 1
    log "checkpoint step $step"
done

log "done: $STEPS steps"
exit 0
