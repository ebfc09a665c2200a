# shellcheck shell=bash
# tests/bench/cluster_variant.sh - what e2e.sh and throughput.sh share, sourced
# after tests/integration/lib.sh.
#
#   bench_private_plugin OUT NAME   copy the plugin (BENCH_PLUGIN, default
#                                   build/restore_budget.so) to OUT/NAME and
#                                   point RB_PLUGIN_SO at it: a rebuild during
#                                   the run cannot change the plugin
#   bench_variant_init              remember the plugstack line rb_cluster_up
#                                   wrote (call right after it)
#   bench_set_variant with|without  rewrite plugstack.conf atomically: the
#                                   plugin line, or empty. slurmstepd (prolog,
#                                   batch step, epilog) and the clients (sbatch,
#                                   srun) read it afresh for every job, so both
#                                   variants share the same daemons and node.

bench_private_plugin() {
    local out=$1 name=$2 src=${BENCH_PLUGIN:-$RB_ROOT/build/restore_budget.so}
    [[ $src == /* ]] || src=$RB_ROOT/$src
    RB_PLUGIN_SO=$out/$name
    cp -f "$src" "$RB_PLUGIN_SO" && chmod 755 "$RB_PLUGIN_SO"
}

bench_variant_init() {
    BENCH_PS=$RB_CLUSTER_DIR/plugstack.conf
    BENCH_PLUG_LINE=$(cat "$BENCH_PS")
}

bench_set_variant() {
    local tmp=$BENCH_PS.tmp
    if [[ $1 == with ]]; then printf '%s\n' "$BENCH_PLUG_LINE" >"$tmp"; else : >"$tmp"; fi
    chmod 644 "$tmp" && mv -f "$tmp" "$BENCH_PS"
}
