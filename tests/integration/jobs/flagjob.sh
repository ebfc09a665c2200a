#!/bin/bash
# flagjob.sh - one short job for test_prologflags.sh; prints what trial.sh
# prints (start line, RESTORE_BUDGET_* variables) so out_var reads it.
#
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=flag-%j.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#
#   TRIAL_FLAG_MODE=complete    exit 0 after a second
#   TRIAL_FLAG_MODE=fail_once   attempt 0 exits 42 (RequeueExit: requeued), then 0
#   TRIAL_FLAG_MODE=preempt     attempt 0 runs until it is killed, then 0
ATTEMPT=${SLURM_RESTART_COUNT:-0}
printf 'trial[%s.%s]: start on %s\n' "$SLURM_JOB_ID" "$ATTEMPT" "$(hostname -s)"
env | grep '^RESTORE_BUDGET_' | sort | sed 's/^/trial:   /'
case ${TRIAL_FLAG_MODE:-complete}:$ATTEMPT in
    fail_once:0) sleep 1; exit 42 ;;
    preempt:0) while :; do sleep 1; done ;;
    *) sleep 1; exit 0 ;;
esac
