#!/bin/sh
# probe.sh - slurm.conf Prolog= and Epilog= of the multinode suite: one line
# per run in <cluster dir>/log/probe.log, so a test can see on which nodes
# the prolog and the epilog of each attempt ran.  Always exits 0.
d=${SLURM_CONF%/*}
printf '%s node=%s job=%s restart=%s\n' "${SLURM_SCRIPT_CONTEXT:-?}" \
    "${SLURMD_NODENAME:-?}" "${SLURM_JOB_ID:-?}" "${SLURM_JOB_RESTART_COUNT:-0}" \
    >>"$d/log/probe.log" 2>/dev/null
exit 0
