#!/usr/bin/env bash
# tests/lib/runner.sh - run one suite of cluster tests (test_*.sh in a
# directory), each in its own process with its own private cluster, and end
# with `SUITE: N passed, N failed` (exit 1 on any failure).  The one runner
# of tests/integration/run.sh, tests/multinode/run.sh, tests/faults/run.sh
# and tests/torch/run.sh:
#
#   runner.sh SUITE TESTDIR CLUSTER_SCRIPT [NAMES...]
#
# NAMES: clean, test_clean or test_clean.sh; space or comma separated.
# Builds once, runs the tests from a world-readable copy of the tree in its
# run dir (cluster.sh stage: the daemons and the job user read the plugin,
# CLI and job scripts there wherever the checkout is, e.g. a clone in /root,
# mode 0700, and a rebuild during the run cannot change them), sums the
# tests' check counts, prints per-test durations and `measure:` lines,
# checks that no node was drained in any cluster and that every cluster (and
# any mount a test made under its cluster dir) is gone at the end.
# Knobs: RB_TEST_TIMEOUT (seconds per test, default 300), RB_NO_BUILD=1.
set -uo pipefail

SUITE=${1:?usage: runner.sh SUITE TESTDIR CLUSTER_SCRIPT [NAMES...]}
TESTDIR=$(cd "${2:?}" && pwd)
RB_CLUSTER_SH=${3:?}
shift 3
RB_ROOT=${RB_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export RB_ROOT RB_SUITE=$SUITE
TMO=${RB_TEST_TIMEOUT:-300}

die0() { echo "runner.sh: $*" >&2; echo "$SUITE: 0 passed, 1 failed"; exit 1; }
[[ $(id -u) == 0 ]] || die0 "the $SUITE tests need root (they start munged, slurmctld, slurmd)"

declare -a TESTS=()
if [[ $# -gt 0 ]]; then
    for n in ${*//,/ }; do
        n=${n##*/}; n=${n%.sh}; n=test_${n#test_}
        [[ -f $TESTDIR/$n.sh ]] || die0 "no test $TESTDIR/$n.sh"
        TESTS+=("$TESTDIR/$n.sh")
    done
else
    for t in "$TESTDIR"/test_*.sh; do [[ -f $t ]] && TESTS+=("$t"); done
fi
[[ ${#TESTS[@]} -gt 0 ]] || die0 "no tests in $TESTDIR"

RUN_DIR=$(mktemp -d "/tmp/rb$SUITE.XXXXXX") || exit 1
chmod 755 "$RUN_DIR"
if [[ ${RB_NO_BUILD:-0} != 1 ]]; then
    make -s -C "$RB_ROOT" build/restore_budget.so build/restore-budget >"$RUN_DIR/build.log" 2>&1 ||
        { cat "$RUN_DIR/build.log" >&2; die0 "make build/restore_budget.so failed"; }
fi
[[ -r $RB_ROOT/build/restore_budget.so ]] || die0 "no build/restore_budget.so"
# The tests run from a world-readable copy of the tree in the run dir: the
# plugin, the CLI and the job scripts must be readable by the daemons and the
# job user wherever the checkout is (e.g. a clone in /root, mode 0700), and a
# rebuild during the run cannot change them.
RB_SRC_ROOT=$RB_ROOT
"$RB_SRC_ROOT/contrib/cluster/cluster.sh" stage "$RB_SRC_ROOT" "$RUN_DIR/root" || die0 "cannot stage $RB_SRC_ROOT in $RUN_DIR/root"
RB_ROOT=$RUN_DIR/root RB_STAGED=1
# Tests, cluster script: their copies, if they are part of the checkout.
[[ $TESTDIR == "$RB_SRC_ROOT"/* ]] && TESTDIR=$RB_ROOT/${TESTDIR#"$RB_SRC_ROOT"/}
RB_CLUSTER_SH=$(cd "$(dirname "$RB_CLUSTER_SH")" && pwd)/$(basename "$RB_CLUSTER_SH")
[[ $RB_CLUSTER_SH == "$RB_SRC_ROOT"/* ]] && RB_CLUSTER_SH=$RB_ROOT/${RB_CLUSTER_SH#"$RB_SRC_ROOT"/}
export RB_ROOT RB_STAGED RB_SRC_ROOT RB_CLUSTER_SH
export RB_PLUGIN_SO=$RB_ROOT/build/restore_budget.so
if [[ -x $RB_ROOT/build/restore-budget ]]; then
    export RB_CLI=$RB_ROOT/build/restore-budget
fi
export RB_CLUSTER_REGISTRY=$RUN_DIR/clusters
: >"$RB_CLUSTER_REGISTRY"

# mounts_under DIR - mount points at or below DIR, deepest first.
mounts_under() {
    findmnt -rn -o TARGET 2>/dev/null | awk -v d="$1" 'index($0, d "/") == 1' | sort -r
}
CHILD=
stop_leftovers() {
    local d m
    while read -r d; do
        [[ -n $d && -d $d ]] || continue
        if compgen -G "$d/run/*.pid" >/dev/null; then
            echo "runner.sh: stopping leftover cluster $d" >&2
            "$RB_CLUSTER_SH" stop "$d" >&2 || true
        fi
        for m in $(mounts_under "$d"); do
            echo "runner.sh: unmounting leftover $m" >&2
            umount "$m" 2>/dev/null || umount -l "$m"
        done
    done <"$RB_CLUSTER_REGISTRY"
}
on_signal() {
    trap - INT TERM HUP
    echo "runner.sh: interrupted; stopping the running test and every cluster" >&2
    if [[ -n $CHILD ]] && kill -0 "$CHILD" 2>/dev/null; then
        kill -TERM "$CHILD" 2>/dev/null
        wait "$CHILD" 2>/dev/null
    fi
    stop_leftovers
    echo "$SUITE: ${PASSED:-0} passed, $((${FAILED:-0} + 1)) failed"
    exit 130
}
trap on_signal INT TERM HUP

PASSED=0 FAILED=0
declare -a ROWS=() MEASURES=() FAIL_LINES=()
T_ALL=$(date +%s.%N)
printf 'runner.sh: %s: %d tests, plugin %s (copy of %s), logs in %s\n' "$SUITE" "${#TESTS[@]}" \
    "$RB_PLUGIN_SO" "$RB_SRC_ROOT/build/restore_budget.so" "$RUN_DIR"
for t in "${TESTS[@]}"; do
    name=$(basename "$t" .sh)
    log=$RUN_DIR/$name.log
    printf '\n===== %s =====\n' "$name"
    t0=$(date +%s.%N)
    RB_TEST_NAME=$name RB_NODESTATE_FILE=$RUN_DIR/nodes-$name \
        timeout -k 30 "$TMO" bash "$TESTDIR/$name.sh" >"$log" 2>&1 &
    CHILD=$!
    tail -n +1 -F --pid="$CHILD" "$log" 2>/dev/null &
    tailpid=$!
    wait "$CHILD"; rc=$?
    CHILD=
    wait "$tailpid" 2>/dev/null
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    stop_leftovers

    line=$(grep -E "^$SUITE: [0-9]+ passed, [0-9]+ failed\$" "$log" | tail -n 1)
    p=0 f=0 note=""
    if [[ $line =~ ^$SUITE:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
    else
        f=1 note="no summary line"
    fi
    if ((rc == 124 || rc == 137)); then note="timed out after ${TMO}s"; ((f == 0)) && f=1
    elif ((rc != 0 && f == 0)); then note="exit status $rc"; f=1
    fi
    PASSED=$((PASSED + p)) FAILED=$((FAILED + f))
    result=ok; ((f > 0)) && result=FAIL
    ROWS+=("$(printf '%-32s %-5s %6d %6d %8ss  %s' "$name" "$result" "$p" "$f" "$secs" "$note")")
    while IFS= read -r m; do MEASURES+=("$m"); done < <(grep '^measure: ' "$log")
    # the failing checks again at the end: a run's tail is what CI keeps
    while IFS= read -r m; do FAIL_LINES+=("$name: ${m:0:240}"); done < <(grep -E '^FAIL - ' "$log" | head -n 10)
    [[ -n $note ]] && FAIL_LINES+=("$name: $note")
done

# 1. No node drained/down in any cluster when it stopped.
bad=$(cat "$RUN_DIR"/nodes-* 2>/dev/null | grep -v '^#' | grep -Ei 'drain|down|fail|sinfo failed')
missing=()
for t in "${TESTS[@]}"; do
    n=$(basename "$t" .sh)
    [[ -s $RUN_DIR/nodes-$n ]] || missing+=("$n")
done
if [[ -z $bad && ${#missing[@]} -eq 0 ]]; then
    PASSED=$((PASSED + 1)); echo "ok   - runner.sh: no node drained/down in any cluster at its stop"
else
    FAILED=$((FAILED + 1))
    echo "FAIL - runner.sh: node state at cluster stop: ${bad:-ok}${missing[*]:+; no snapshot from: ${missing[*]}}"
fi
# 2. Every cluster of this run is stopped, nothing is left mounted.
alive=() mounted=()
while read -r d; do
    [[ -n $d ]] || continue
    for pf in "$d"/run/*.pid; do
        [[ -f $pf ]] || continue
        pid=$(tr -dc 0-9 <"$pf"); [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && alive+=("$pf:$pid")
    done
    mapfile -t -O "${#mounted[@]}" mounted < <(mounts_under "$d")
done <"$RB_CLUSTER_REGISTRY"
if [[ ${#alive[@]} -eq 0 && ${#mounted[@]} -eq 0 ]]; then
    PASSED=$((PASSED + 1)); echo "ok   - runner.sh: every cluster stopped, nothing left mounted ($(grep -c . "$RB_CLUSTER_REGISTRY") clusters started)"
else
    FAILED=$((FAILED + 1)); echo "FAIL - runner.sh: still running: ${alive[*]:-none}; still mounted: ${mounted[*]:-none}"
fi

total=$(awk -v a="$T_ALL" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
printf '\n%-32s %-5s %6s %6s %9s\n' test result passed failed duration
printf '%s\n' "${ROWS[@]}"
printf '%-32s %-5s %6s %6s %8ss\n' total "" "" "" "$total"
if [[ ${#MEASURES[@]} -gt 0 ]]; then
    echo
    printf '%s\n' "${MEASURES[@]}"
fi
if [[ ${#FAIL_LINES[@]} -gt 0 ]]; then
    echo
    echo "failing checks:"
    printf '  %s\n' "${FAIL_LINES[@]}"
fi
echo
if ((FAILED == 0)); then
    rm -rf "$RUN_DIR"
else
    echo "runner.sh: test logs kept in $RUN_DIR; clusters of failed tests keep their logs in /tmp/rbcluster.*/log"
fi
echo "$SUITE: $PASSED passed, $FAILED failed"
((FAILED == 0))
