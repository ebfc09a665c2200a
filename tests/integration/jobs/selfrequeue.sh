#!/bin/bash
# selfrequeue.sh - a job that requeues itself (`scontrol requeue`, which any
# user may do to their own job) until attempt RB_JOB_LAST, leaving a
# checkpoint named for each attempt in RB_JOB_CKDIR and acknowledging each
# restore: with no max_interruptions nothing ever refuses it. tests/integration/
# test_event_log_cap.sh uses it to grow the job's event log. Prints the
# lines of contrib/jobs/trial.sh, so the suite's parsers read it.
#
#SBATCH --job-name=selfrq
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=trial-%j.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
set -u
ATTEMPT=${SLURM_RESTART_COUNT:-0}
log() { printf 'trial[%s.%s]: %s\n' "${SLURM_JOB_ID:-nojob}" "$ATTEMPT" "$*"; }

log "start on $(hostname -s) at $(date +%T) as $(id -un), SLURM_RESTART_COUNT=${SLURM_RESTART_COUNT:-<unset>}"
: >"$RB_JOB_CKDIR/checkpoint-$(printf %03d "$ATTEMPT")"
# restored: acknowledge it (a restore never confirmed is a failed one)
if [ -n "${RESTORE_BUDGET_ACK_FILE:-}" ]; then
    : >"$RESTORE_BUDGET_ACK_FILE" && log "acknowledged restore"
fi
if [ "$ATTEMPT" -lt "${RB_JOB_LAST:-0}" ]; then
    log "requeueing myself"
    scontrol requeue "$SLURM_JOB_ID"
    sleep 300
fi
log "exiting 0"
exit 0
