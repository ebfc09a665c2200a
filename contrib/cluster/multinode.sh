#!/usr/bin/env bash
# multinode.sh - a private Slurm cluster (22.05; also 24.11, 26.05) with TWO compute nodes on one
# machine, for the cross-node tests (tests/multinode/).
#
#   multinode.sh start  DIR [PLUGSTACK_LINE]   munged, slurmctld, one slurmd per node
#   multinode.sh stop   DIR                    stop everything started in DIR (idempotent)
#   multinode.sh env    DIR                    print `export SLURM_CONF=...` lines
#   multinode.sh status DIR                    daemons and node states; 0 = all up
#   multinode.sh nodes  DIR                    the node names, one a line
#   multinode.sh stop-node  DIR NODE           TERM one node's slurmd (by its pid file)
#   multinode.sh start-node DIR NODE           start one node's slurmd again
#
# How two slurmd run on one host: each slurmd runs in its own UTS namespace
# (`unshare --uts`) whose hostname is the node's name, so slurmd finds "its"
# NodeName by hostname as on a real node, and a job's `hostname` names the
# node it runs on.  The network namespace is NOT changed: every slurmd
# listens on 127.0.0.1 on its own port (slurm.conf `Port=` per node) and
# slurmctld reaches them there; nothing but loopback is used.  (Debian's
# 22.05 slurmd also accepts `slurmd -N NODE` in the host's UTS namespace:
# RB_MN_MODE=dashN uses that; jobs then all see the host's hostname.)
# Per-node files use slurm.conf's %n:
#   DIR/spool/<node>/  DIR/run/slurmd-<node>.pid  DIR/log/slurmd-<node>.log
# Everything else as contrib/cluster/cluster.sh (whose helpers are sourced):
#   DIR/slurm.conf DIR/plugstack.conf DIR/munge/ DIR/state/ DIR/work/ (shared
#   by both nodes: it is the same filesystem, like an NFS home)
#
# Knobs (environment):
#   RB_MN_NODES       node names                       (default "rbn1 rbn2")
#   RB_MN_CPUS        CPUs per node                    (default 2)
#   RB_MN_MODE        uts (default) or dashN (slurmd -N NODE, no namespace)
#   RB_MN_EXTRA_CONF  lines appended to slurm.conf (e.g. Prolog=/x/probe.sh)
#   RB_CLUSTER_NAME   ClusterName                      (default rbtest)
#   RB_SLURM_DEBUG    SlurmctldDebug/SlurmdDebug       (default info)
#   RB_PROLOGFLAGS    PrologFlags value, empty = unset (default empty)
#   RB_TEST_USER      user created by start if missing (default rbuser)
#   RB_START_TIMEOUT  seconds to wait for the cluster  (default 30)
#   RB_STOP_TIMEOUT   seconds to wait per TERM phase   (default 10)
#
# stop only signals processes it can prove belong to DIR (pid files whose
# process names DIR, slurmstepd holding a file under DIR open, and their
# descendants), never by name.

MN_SELF="${BASH_SOURCE[0]}"
MN_HERE="$(cd "$(dirname "$MN_SELF")" && pwd)"
# shellcheck source=contrib/cluster/cluster.sh
. "$MN_HERE/cluster.sh"

mn_log() { printf 'multinode.sh: %s\n' "$*" >&2; }
mn_die() { mn_log "error: $*"; return 1; }

mn_nodes() { printf '%s\n' ${RB_MN_NODES:-rbn1 rbn2}; }

# Nodes of an existing cluster: from its slurm.conf (the knob may differ).
mn_conf_nodes() {
    sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$1/slurm.conf" 2>/dev/null
}

mn_logtail() { rbc_logtail "$@"; }

# mn_slurmds_alive DIR - every node's slurmd runs.
mn_slurmds_alive() {
    local node
    for node in $(mn_conf_nodes "$1"); do
        rbc_pid_of "$1" "slurmd-$node" >/dev/null || { mn_die "slurmd $node died during startup"; return 1; }
    done
}

# mn_ready DIR - the controller answers and every node is idle.
mn_ready() {
    local dir=$1 want have
    rbc_client "$dir" scontrol ping 2>/dev/null | grep -q 'is UP' || return 1
    want=$(mn_conf_nodes "$dir" | wc -l)
    have=$(rbc_client "$dir" sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
    [[ $want -gt 0 && $have == "$want" ]]
}

# mn_start_slurmd DIR NODE - slurmd for NODE in a UTS namespace named NODE.
mn_start_slurmd() {
    local dir=$1 node=$2
    if rbc_pid_of "$dir" "slurmd-$node" >/dev/null; then
        mn_die "slurmd for $node already running"; return 1
    fi
    mkdir -p "$dir/spool/$node" && chmod 755 "$dir/spool/$node" || return 1
    # hostname(1) changes only the new UTS namespace; slurmd daemonizes and
    # keeps it.  The clean environment is the one cluster.sh gives daemons.
    if [[ ${RB_MN_MODE:-uts} == dashN ]]; then
        rbc_daemon slurmd -N "$node" -f "$dir/slurm.conf"
    else
        rbc_daemon unshare --uts -- /bin/sh -c 'hostname "$1" && exec slurmd -f "$2"' \
            sh "$node" "$dir/slurm.conf"
    fi
}

mn_start() {
    local dir=${1:-} line=${2:-}
    rbc_start_args "$dir" "multinode.sh start DIR [PLUGSTACK_LINE]" || return
    dir=${dir%/}
    if [[ ${RB_MN_MODE:-uts} != dashN ]]; then
        command -v unshare >/dev/null || { mn_die "unshare (util-linux) not found"; return 1; }
        unshare --uts -- true 2>/dev/null ||
            { mn_die "unshare --uts fails here (no CAP_SYS_ADMIN?); try RB_MN_MODE=dashN"; return 1; }
    fi
    local p node
    for p in munged slurmctld; do
        if rbc_pid_of "$dir" "$p" >/dev/null; then
            mn_die "$p already running for $dir (multinode.sh stop $dir first)"; return 1
        fi
    done
    local host cluster=${RB_CLUSTER_NAME:-rbtest} debug=${RB_SLURM_DEBUG:-info}
    local cpus=${RB_MN_CPUS:-2} t0=$SECONDS tmo=${RB_START_TIMEOUT:-30} i
    local -a nodes
    mapfile -t nodes < <(mn_nodes)
    [[ ${#nodes[@]} -ge 1 ]] || { mn_die "RB_MN_NODES is empty"; return 1; }
    host=$(hostname -s) || return 1
    for node in "${nodes[@]}"; do
        [[ $node == "$host" ]] && { mn_die "node name $node is this host's name"; return 1; }
    done
    rbc_prepare "$dir" || { mn_stop "$dir"; return 1; }

    # Ports: one for slurmctld, one per slurmd.
    local cport plf="" nodelist used=() port
    cport=$(rbc_free_port) || { mn_stop "$dir"; return 1; }
    used=("$cport")
    [[ -n ${RB_PROLOGFLAGS:-} ]] && plf="PrologFlags=$RB_PROLOGFLAGS"
    nodelist=$(IFS=,; echo "${nodes[*]}")
    (
        # The single-node template, minus its node/partition lines and with
        # per-node slurmd files (%n = the node's name).
        sed -e "s|@DIR@|$dir|g" -e "s|@HOST@|$host|g" -e "s|@CLUSTER@|$cluster|g" \
            -e "s|@CTLD_PORT@|$cport|g" -e "s|@DEBUG@|$debug|g" \
            -e "s|@PROLOGFLAGS_LINE@|$plf|g" \
            -e '/^SlurmdPort=/d' -e '/^NodeName=/d' -e '/^PartitionName=/d' \
            -e "s|^SlurmdSpoolDir=.*|SlurmdSpoolDir=$dir/spool/%n|" \
            -e "s|^SlurmdPidFile=.*|SlurmdPidFile=$dir/run/slurmd-%n.pid|" \
            -e "s|^SlurmdLogFile=.*|SlurmdLogFile=$dir/log/slurmd-%n.log|" \
            -e "s|^# slurm.conf for a private single-node.*|# slurm.conf for a private $((${#nodes[@]}))-node test cluster (Slurm 22.05).|" \
            -e "s|^# Generated by contrib/cluster/cluster.sh.*|# Generated by contrib/cluster/multinode.sh from contrib/cluster/slurm.conf.in.|" \
            "$RBC_HERE/slurm.conf.in" || exit 1
        echo
        echo "# One slurmd per node, each in its own UTS namespace (hostname = NodeName),"
        echo "# all on 127.0.0.1 with distinct ports."
        for node in "${nodes[@]}"; do
            port=$(rbc_free_port "${used[@]}") || exit 1
            used+=("$port")
            echo "NodeName=$node NodeHostname=$node NodeAddr=127.0.0.1 Port=$port CPUs=$cpus RealMemory=1000 State=UNKNOWN"
        done
        echo "PartitionName=low  Nodes=$nodelist PriorityTier=1  Default=YES MaxTime=INFINITE State=UP"
        echo "PartitionName=high Nodes=$nodelist PriorityTier=10 Default=NO  MaxTime=INFINITE State=UP"
        if [[ -n ${RB_MN_EXTRA_CONF:-} ]]; then printf '%s\n' "$RB_MN_EXTRA_CONF"; fi
    ) >"$dir/slurm.conf" || { mn_stop "$dir"; return 1; }
    rbc_write_plugstack "$dir" "$line"

    rbc_start_ctld "$dir" "$tmo" || { mn_stop "$dir"; return 1; }
    for node in "${nodes[@]}"; do
        mn_start_slurmd "$dir" "$node" \
            || { mn_logtail "$dir"; mn_die "slurmd $node failed to start"; mn_stop "$dir"; return 1; }
    done
    rbc_wait_ready "$dir" "$t0" "$tmo" mn_ready mn_slurmds_alive || { mn_stop "$dir"; return 1; }
    mn_log "cluster $cluster up in $dir: nodes ${nodes[*]} (ctld port $cport, slurmd ports $(sed -n 's/^NodeName=.* Port=\([0-9]*\) .*/\1/p' "$dir/slurm.conf" | tr '\n' ' '); $((SECONDS - t0))s)"
}

mn_stop() {
    local dir=${1:-} node pid
    local -a slurmds=()
    [[ -n $dir ]] || { mn_die "usage: multinode.sh stop DIR"; return 2; }
    dir=${dir%/}
    for node in $(mn_conf_nodes "$dir"); do
        pid=$(rbc_pid_of "$dir" "slurmd-$node") && slurmds+=("$pid")
    done
    rbc_stop_daemons "$dir" "${slurmds[@]}"
}

# mn_stop_node DIR NODE - TERM that node's slurmd and wait until it is gone.
mn_stop_node() {
    local dir=${1:?} node=${2:?} pid i
    dir=${dir%/}
    pid=$(rbc_pid_of "$dir" "slurmd-$node") || { mn_die "slurmd $node not running"; return 1; }
    kill -TERM "$pid"
    for ((i = 0; i < ${RB_STOP_TIMEOUT:-10} * 10; i++)); do
        rbc_alive "$pid" || return 0
        sleep 0.1
    done
    mn_die "slurmd $node (pid $pid) did not stop"
}

mn_env() { rbc_env "$@"; }

mn_status() {
    local dir=${1:?usage: multinode.sh status DIR}
    dir=${dir%/}
    # shellcheck disable=SC2046
    rbc_status_of "$dir" munged slurmctld $(mn_conf_nodes "$dir" | sed 's/^/slurmd-/')
}

mn_main() {
    local cmd=${1:-}; shift || true
    case $cmd in
        start)      mn_start "$@" ;;
        stop)       mn_stop "$@" ;;
        env)        mn_env "$@" ;;
        status)     mn_status "$@" ;;
        nodes)      if [[ -n ${1:-} ]]; then mn_conf_nodes "${1%/}"; else mn_nodes; fi ;;
        stop-node)  mn_stop_node "$@" ;;
        start-node) mn_start_slurmd "${1%/}" "${2:?usage: multinode.sh start-node DIR NODE}" ;;
        *) sed -n '2,11s/^# \{0,1\}//p' "$MN_SELF" >&2; return 2 ;;
    esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -uo pipefail
    mn_main "$@"
    exit $?
fi
