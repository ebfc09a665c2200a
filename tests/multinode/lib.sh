# shellcheck shell=bash
# tests/multinode/lib.sh - tests/integration/lib.sh on a TWO-node private
# cluster (contrib/cluster/multinode.sh).  Source it from a test:
#   . "$(dirname "$0")/lib.sh"
#   rb_cluster_up 'max_failures = 1;'     # as in the integration suite
#   read -r A B < <(mn_nodes)
#
# Observed on this machine (Debian 12, slurm-wlm 22.05.8, 2 CPUs, root):
#   two slurmd, each in its own UTS namespace (hostname = NodeName), both on
#   127.0.0.1 with per-node Port=; cluster ready in 0.3-0.5 s, stop ~4 s.
#   `slurmd -N NODE` also works with Debian's build (RB_MN_MODE=dashN).
#   A job's `hostname -s` prints its node's name (UTS), SLURMD_NODENAME too.
#   `scontrol update JobId=J ExcNodeList=N` on a job pending after a
#   requeue is accepted and decides where the rerun lands.
#
# The suite's summary line is "multinode: N passed, N failed" (RB_SUITE).

RB_SUITE=${RB_SUITE:-multinode}
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
RB_CLUSTER_SH=$RB_ROOT/contrib/cluster/multinode.sh
MN_JOB=$RB_ROOT/tests/lib/trial_job.sh
MN_PROBE=$RB_ROOT/tests/multinode/jobs/probe.sh
RB_CLI=${RB_CLI:-$RB_ROOT/build/restore-budget}

summary() {
    printf '%s: %d passed, %d failed\n' "$RB_SUITE" "$RB_PASSED" "$RB_FAILED"
    [[ $RB_FAILED -eq 0 ]] && exit 0
    exit 1
}

# mn_nodes - the cluster's node names on one line ("rbn1 rbn2").
mn_nodes() { "$RB_CLUSTER_SH" nodes "$RB_CLUSTER_DIR" | tr '\n' ' '; echo; }

# mn_other NODE - the other node of a two-node cluster.
mn_other() {
    local n
    for n in $("$RB_CLUSTER_SH" nodes "$RB_CLUSTER_DIR"); do
        [[ $n != "$1" ]] && { printf '%s\n' "$n"; return 0; }
    done
    return 1
}

# mn_preempt_on JOB NODE [TIMEOUT] [SECONDS] - a `high` job taking both CPUs
# of NODE (-w NODE) for SECONDS (3); wait until JOB's Restarts went up.
mn_preempt_on() {
    local job=$1 node=$2 tmo=${3:-30} secs=${4:-3} before hi
    before=$(job_field "$job" Restarts)
    [[ $before =~ ^[0-9]+$ ]] || { echo "mn_preempt_on: no job $job" >&2; return 1; }
    hi=$(submit_as_user -p high -w "$node" -c 2 -J preemptor -o /dev/null --wrap "sleep $secs") || return 1
    wait_restart_count "$job" $((before + 1)) "$tmo" || return 1
    wait_requeued "$job" "$tmo" || return 1
    printf '%s\n' "$hi"
}

# mn_exclude JOB NODE - the job's next attempt may not run on NODE.
mn_exclude() {
    timeout 10 scontrol update JobId="$1" ExcNodeList="$2" || return 1
    [[ $(job_field "$1" ExcNodeList) == "$2" ]]
}

# mn_wait_on JOB NODE TIMEOUT - wait until JOB is RUNNING on NODE.
mn_wait_on() {
    local job=$1 node=$2 tmo=${3:-60} t0=$SECONDS s n
    while :; do
        s=$(job_field "$job" JobState); n=$(job_field "$job" NodeList)
        [[ $s == RUNNING && $n == "$node" ]] && return 0
        if ((SECONDS - t0 >= tmo)); then
            echo "mn_wait_on: job $job is '$s' on '$n', not RUNNING on $node after ${tmo}s" >&2
            return 1
        fi
        sleep 0.2
    done
}

# mn_slurmd_pid NODE - pid of NODE's slurmd, if it runs.
mn_slurmd_pid() { rb_daemon_pid "slurmd-$1"; }

# probe_nodes KIND JOB N - the nodes (sorted, space-separated) on which the
# probe script ran in context KIND (prolog_slurmd, epilog_slurmd) for JOB
# with restart count N.
probe_nodes() {
    sed -n "s/^$1 node=\([^ ]*\) job=$2 restart=$3\$/\1/p" \
        "$RB_CLUSTER_DIR/log/probe.log" 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//'
}

# mn_final_checks - rb_final_checks for every node.
mn_final_checks() {
    local n errs drains
    check "no node drained, down or failing (sinfo: $(timeout 10 sinfo -h -N -o '%N:%T' 2>/dev/null | sort -u | tr '\n' ' '))" rb_nodes_ok
    for n in $("$RB_CLUSTER_SH" nodes "$RB_CLUSTER_DIR"); do
        checkq "slurmd of $n still running" mn_slurmd_pid "$n"
    done
    checkq "slurmctld still running" rb_daemon_pid slurmctld
    if [[ ${RB_EXPECT_PLUGIN_ERRORS:-0} != 1 ]]; then
        errs=$(grep -hE 'error: .*restore_budget: ' "$RB_CLUSTER_DIR"/log/slurmd-*.log 2>/dev/null | head -n 5)
        expect "no restore_budget error in any slurmd log" "$errs" ""
    fi
    drains=$(grep -iE 'drain|Prolog error|Epilog error|launch_failed' "$RB_CLUSTER_DIR"/log/slurmctld.log 2>/dev/null | head -n 3)
    expect "no drain/prolog/epilog failure in slurmctld.log" "$drains" ""
}

# mn_trace_start NODE - trace NODE's slurmd and everything it forks (the
# prolog, the epilog, slurmstepd) into log/strace-NODE.txt: the file calls
# only, with absolute paths as given.  Ends with the slurmd.
mn_trace_start() {
    local pid; pid=$(mn_slurmd_pid "$1") || return 1
    command -v strace >/dev/null || { echo "strace is not installed (make deps)" >&2; return 1; }
    strace -f -qq -e trace=%file -o "$RB_CLUSTER_DIR/log/strace-$1.txt" -p "$pid" 2>/dev/null &
    sleep 1
    kill -0 $! 2>/dev/null
}

# mn_batch_hosts JOB - the nodes whose slurmd launched JOB's batch script
# (any attempt): "Launching batch job J " (22.05, 24.11) or "Launching
# batch JobId=J " (26.05).
mn_batch_hosts() {
    local n
    for n in $("$RB_CLUSTER_SH" nodes "$RB_CLUSTER_DIR"); do
        grep -qE "Launching batch (job $1|JobId=$1) " "$RB_CLUSTER_DIR/log/slurmd-$n.log" 2>/dev/null &&
            printf '%s\n' "$n"
    done
}

# mn_trace_calls NODE PATH - lines of NODE's trace that name PATH.
mn_trace_calls() { grep -cF -- "$2" "$RB_CLUSTER_DIR/log/strace-$1.txt" 2>/dev/null; }
