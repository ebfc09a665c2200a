#!/bin/bash
# exitjob.sh - a job that ends each attempt with the exit code the test
# chose (for exit_rules, docs/rule.md "Exit-code rules"); it prints the
# lines of contrib/jobs/trial.sh, so the suite's parsers (out_var,
# out_attempts) read it.
#
#SBATCH --job-name=exitjob
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=trial-%j.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#
# Knobs (environment):
#   TRIAL_EXIT_CODES="75 3"   attempt i exits with the i-th word (0 after the
#                          list ends), after one second
set -u
ATTEMPT=${SLURM_RESTART_COUNT:-0}
log() { printf 'trial[%s.%s]: %s\n' "${SLURM_JOB_ID:-nojob}" "$ATTEMPT" "$*"; }

log "start on $(hostname -s) at $(date +%T) as $(id -un), SLURM_RESTART_COUNT=${SLURM_RESTART_COUNT:-<unset>}"
env | grep '^RESTORE_BUDGET_' | sort | sed 's/^/trial:   /'
read -r -a codes <<<"${TRIAL_EXIT_CODES:-}"
code=${codes[$ATTEMPT]:-0}
sleep 1
log "exiting $code"
exit "$code"
