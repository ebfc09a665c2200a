# shellcheck shell=bash
# tests/bench/cluster_variant.sh - what e2e.sh and throughput.sh share. Sourced
# first: it sources tests/integration/lib.sh (cluster name rbbench).
#
#   bench_begin NAME                OUT (BENCH_OUT, default build/bench),
#                                   bench_cluster_parent OUT, then
#                                   bench_private_plugin NAME
#   bench_cluster_parent OUT        set RB_CLUSTER_PARENT (where rb_cluster_up
#                                   makes the cluster's dir): BENCH_CLUSTER_PARENT,
#                                   else OUT/cluster (under build/, not a shared
#                                   path) if the job user can reach it, else /tmp
#   bench_private_plugin NAME       copy the plugin (BENCH_PLUGIN, default
#                                   build/restore_budget.so) to a fresh 0755
#                                   dir under RB_CLUSTER_PARENT (call after
#                                   bench_cluster_parent) and point
#                                   RB_PLUGIN_SO at it: a rebuild during the
#                                   run cannot change the plugin, and the job
#                                   user's sbatch can read it even when the
#                                   checkout is in a 0700 dir (a clone in
#                                   /root; the demo stages likewise,
#                                   contrib/cluster/cluster.sh stage)
#   bench_variant_init              remember the plugstack line rb_cluster_up
#                                   wrote and check that the job user can
#                                   read the plugin (call right after it)
#   bench_set_variant with|without [ARG...]  rewrite plugstack.conf
#                                   atomically: the plugin line (with ARGs
#                                   appended, e.g. slurm_bindir=DIR), or empty.
#                                   slurmstepd (prolog, batch step, epilog) and
#                                   the clients (sbatch, srun) read it afresh
#                                   for every job, so both variants share the
#                                   same daemons and node.
#   bench_count_budgets STORE ID... how many of these jobs have a budget: a
#                                   ledger record (dir), or a budget line in
#                                   their AdminComment (controller)
#   bench_sdiag_types               slurmctld's RPC counts by message type
#                                   (sdiag), "TYPE COUNT" lines, sorted

RB_CLUSTER_NAME=rbbench
export RB_CLUSTER_NAME
BENCH_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../integration/lib.sh
. "$BENCH_HERE/../integration/lib.sh"

bench_begin() {
    OUT=${BENCH_OUT:-$BENCH_HERE/../../build/bench}
    mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || return 1
    bench_cluster_parent "$OUT" && bench_private_plugin "$1"
}

bench_cluster_parent() {
    local p=${BENCH_CLUSTER_PARENT:-$1/cluster}
    mkdir -p "$p" && chmod 755 "$p" || return 1
    # shellcheck source=../../contrib/cluster/cluster.sh
    if [[ -z ${BENCH_CLUSTER_PARENT:-} ]] && ! (. "$RB_CLUSTER_SH" && rbc_reachable "$p"); then
        rb_log "bench: $p is not reachable by $RB_USER; the cluster goes under /tmp"
        p=/tmp
    fi
    RB_CLUSTER_PARENT=$p
    export RB_CLUSTER_PARENT
}

bench_private_plugin() {
    local name=$1 src=${BENCH_PLUGIN:-$RB_ROOT/build/restore_budget.so} d
    [[ $src == /* ]] || src=$RB_ROOT/$src
    d=$(mktemp -d "$RB_CLUSTER_PARENT/rbbench-plugin.XXXXXX") && chmod 755 "$d" ||
        { echo "bench: ERROR: cannot make a plugin dir under $RB_CLUSTER_PARENT" >&2; return 1; }
    RB_PLUGIN_SO=$d/$name
    # removed when the cluster stops (lib.sh's EXIT trap runs the hook)
    RB_EXIT_HOOK="rm -rf ${d@Q}${RB_EXIT_HOOK:+; $RB_EXIT_HOOK}"
    cp -f "$src" "$RB_PLUGIN_SO" && chmod 755 "$RB_PLUGIN_SO" ||
        { echo "bench: ERROR: cannot copy the plugin $src to $RB_PLUGIN_SO" >&2; return 1; }
}

bench_variant_init() {
    BENCH_PS=$RB_CLUSTER_DIR/plugstack.conf
    BENCH_PLUG_LINE=$(cat "$BENCH_PS")
    # the "with" variant measures nothing if the job user's sbatch cannot
    # load the plugin: refuse to start rather than count failed batches
    as_user test -r "$RB_PLUGIN_SO" || {
        echo "bench: ERROR: variant with: the job user $RB_USER cannot read the plugin $RB_PLUGIN_SO" >&2
        return 1
    }
}

bench_set_variant() {
    local tmp=$BENCH_PS.tmp var=$1
    shift
    if [[ $var == with ]]; then printf '%s\n' "$BENCH_PLUG_LINE${*:+ $*}" >"$tmp"; else : >"$tmp"; fi
    chmod 644 "$tmp" && mv -f "$tmp" "$BENCH_PS"
}

bench_count_budgets() {
    local store=$1 j n=0
    shift
    if [[ $store == controller ]]; then
        (($# == 0)) && { echo 0; return; }
        timeout 30 squeue -h -t all -j "$(IFS=,; echo "$*")" -O admin_comment:0 2>/dev/null |
            grep -c '^restore_budget\[state\]: v1 '
        return
    fi
    for j in "$@"; do [[ -f $(rb_rec_path "$j") ]] && n=$((n + 1)); done
    echo "$n"
}

# (only the "by message type" section: the "by user" one follows it)
bench_sdiag_types() {
    timeout 10 sdiag 2>/dev/null | awk '
        /by message type/ { on = 1; next }
        /by user/ { on = 0 }
        on && $1 ~ /^[A-Z][A-Z0-9_]+$/ {
            for (i = 2; i <= NF; i++) if ($i ~ /^count:/) { sub("count:", "", $i); print $1, $i }
        }' | sort
}
