#!/usr/bin/env bash
# tests/integration/run.sh - the integration suite on real private clusters.
#
#   tests/integration/run.sh                   every tests/integration/test_*.sh
#   RB_INTEGRATION_TESTS="clean corrupt_exhausts" tests/integration/run.sh
#
# Each test runs in its own process and starts its own cluster (lib.sh:
# rb_cluster_up / cluster_down).  run.sh sums their check counts, prints
# per-test durations and the scenarios' measurements, checks that no node was
# drained in any cluster, stops any cluster a test left running, and ends
# with the line `integration: N passed, N failed` (exit 1 on any failure).
#
# Knobs: RB_INTEGRATION_TESTS (names: clean, test_clean or test_clean.sh;
# space or comma separated), RB_TEST_TIMEOUT (seconds per test, default 300),
# RB_NO_BUILD=1 (do not run make for the plugin).  Needs root.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RB_ROOT=${RB_ROOT:-$(cd "$HERE/../.." && pwd)}
export RB_ROOT
RB_CLUSTER_SH=${RB_CLUSTER_SH:-$RB_ROOT/contrib/cluster/cluster.sh}
TMO=${RB_TEST_TIMEOUT:-300}

if [[ $(id -u) != 0 ]]; then
    echo "run.sh: the integration tests need root (they start munged, slurmctld, slurmd)" >&2
    echo "integration: 0 passed, 1 failed"
    exit 1
fi

# ---- which tests ---------------------------------------------------------------
declare -a TESTS=()
if [[ -n ${RB_INTEGRATION_TESTS:-} ]]; then
    for n in ${RB_INTEGRATION_TESTS//,/ }; do
        n=${n##*/}; n=${n%.sh}; n=test_${n#test_}
        if [[ -f $HERE/$n.sh ]]; then TESTS+=("$HERE/$n.sh")
        else echo "run.sh: no test $HERE/$n.sh" >&2; echo "integration: 0 passed, 1 failed"; exit 1; fi
    done
else
    for t in "$HERE"/test_*.sh; do [[ -f $t ]] && TESTS+=("$t"); done
fi
[[ ${#TESTS[@]} -gt 0 ]] || { echo "run.sh: no tests found" >&2; echo "integration: 0 passed, 1 failed"; exit 1; }

# ---- the plugin: build, then a private copy for the whole run ------------------------
RUN_DIR=$(mktemp -d /tmp/rbint.XXXXXX) || exit 1
chmod 755 "$RUN_DIR"
if [[ ${RB_NO_BUILD:-0} != 1 ]]; then
    if ! make -s -C "$RB_ROOT" build/restore_budget.so >"$RUN_DIR/build.log" 2>&1; then
        cat "$RUN_DIR/build.log" >&2
        echo "run.sh: make build/restore_budget.so failed" >&2
        echo "integration: 0 passed, 1 failed"
        exit 1
    fi
fi
[[ -r $RB_ROOT/build/restore_budget.so ]] || { echo "run.sh: no build/restore_budget.so" >&2; echo "integration: 0 passed, 1 failed"; exit 1; }
# The tests run from a world-readable copy of the tree in the run dir (the
# plugin, the CLI and the job scripts must be readable by the daemons and the
# job user wherever the checkout is, e.g. a clone in /root, mode 0700), and a
# rebuild by someone else during the run must not change the plugin under
# the tests' feet: every cluster loads this copy.
RB_SRC_ROOT=$RB_ROOT
"$RB_CLUSTER_SH" stage "$RB_SRC_ROOT" "$RUN_DIR/root" ||
    { echo "run.sh: cannot stage $RB_SRC_ROOT in $RUN_DIR/root" >&2; echo "integration: 0 passed, 1 failed"; exit 1; }
RB_ROOT=$RUN_DIR/root RB_STAGED=1
[[ $RB_CLUSTER_SH == "$RB_SRC_ROOT"/* ]] && RB_CLUSTER_SH=$RB_ROOT/${RB_CLUSTER_SH#"$RB_SRC_ROOT"/}
export RB_ROOT RB_STAGED RB_CLUSTER_SH RB_SRC_ROOT
export RB_PLUGIN_SO=$RB_ROOT/build/restore_budget.so
export RB_CLUSTER_REGISTRY=$RUN_DIR/clusters
: >"$RB_CLUSTER_REGISTRY"

# ---- cleanup -----------------------------------------------------------------------
CHILD=
# stop_leftovers - stop every cluster a test started that still has a daemon.
stop_leftovers() {
    local d
    while read -r d; do
        [[ -n $d && -d $d/run ]] || continue
        if compgen -G "$d/run/*.pid" >/dev/null; then
            echo "run.sh: stopping leftover cluster $d" >&2
            "$RB_CLUSTER_SH" stop "$d" >&2 || true
        fi
    done <"$RB_CLUSTER_REGISTRY"
}
on_signal() {
    trap - INT TERM HUP
    echo "run.sh: interrupted; stopping the running test and every cluster" >&2
    if [[ -n $CHILD ]] && kill -0 "$CHILD" 2>/dev/null; then
        kill -TERM "$CHILD" 2>/dev/null
        wait "$CHILD" 2>/dev/null
    fi
    stop_leftovers
    echo "integration: ${PASSED:-0} passed, $((${FAILED:-0} + 1)) failed"
    exit 130
}
trap on_signal INT TERM HUP

# ---- run ---------------------------------------------------------------------------
PASSED=0 FAILED=0
declare -a ROWS=() MEASURES=() FAIL_LINES=()
T_ALL=$(date +%s.%N)
printf 'run.sh: %d tests, plugin %s (copy of %s), logs in %s\n' \
    "${#TESTS[@]}" "$RB_PLUGIN_SO" "$RB_SRC_ROOT/build/restore_budget.so" "$RUN_DIR"
for t in "${TESTS[@]}"; do
    name=$(basename "$t" .sh)
    log=$RUN_DIR/$name.log
    printf '\n===== %s =====\n' "$name"
    t0=$(date +%s.%N)
    RB_TEST_NAME=$name RB_NODESTATE_FILE=$RUN_DIR/nodes-$name \
        timeout -k 30 "$TMO" bash "$RB_ROOT/tests/integration/$name.sh" >"$log" 2>&1 &
    CHILD=$!
    tail -n +1 -F --pid="$CHILD" "$log" 2>/dev/null &
    tailpid=$!
    wait "$CHILD"; rc=$?
    CHILD=
    wait "$tailpid" 2>/dev/null
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    stop_leftovers

    line=$(grep -E '^integration: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    p=0 f=0 note=""
    if [[ $line =~ ^integration:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
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

# ---- run.sh's own final checks ---------------------------------------------------------
# 1. No node drained/down in any cluster when it stopped (snapshots written by
#    lib.sh just before each cluster stopped).
bad=$(cat "$RUN_DIR"/nodes-* 2>/dev/null | grep -v '^#' | grep -Ei 'drain|down|fail|sinfo failed')
missing=()
for t in "${TESTS[@]}"; do
    n=$(basename "$t" .sh)
    [[ -s $RUN_DIR/nodes-$n ]] || missing+=("$n")
done
if [[ -z $bad && ${#missing[@]} -eq 0 ]]; then
    PASSED=$((PASSED + 1)); echo "ok   - run.sh: no node drained/down in any cluster at its stop"
else
    FAILED=$((FAILED + 1))
    echo "FAIL - run.sh: node state at cluster stop: ${bad:-ok}${missing[*]:+; no snapshot from: ${missing[*]}}"
fi
# 2. Every cluster of this run is stopped.
alive=()
while read -r d; do
    [[ -n $d ]] || continue
    for pf in "$d"/run/*.pid; do
        [[ -f $pf ]] || continue
        pid=$(tr -dc 0-9 <"$pf"); [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && alive+=("$pf:$pid")
    done
done <"$RB_CLUSTER_REGISTRY"
if [[ ${#alive[@]} -eq 0 ]]; then
    PASSED=$((PASSED + 1)); echo "ok   - run.sh: every cluster stopped ($(grep -c . "$RB_CLUSTER_REGISTRY") started)"
else
    FAILED=$((FAILED + 1)); echo "FAIL - run.sh: daemons still running: ${alive[*]}"
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
    echo "run.sh: test logs kept in $RUN_DIR; clusters of failed tests keep their logs in /tmp/rbcluster.*/log (see each test's output)"
fi
echo "integration: $PASSED passed, $FAILED failed"
((FAILED == 0))
