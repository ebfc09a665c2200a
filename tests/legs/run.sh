#!/usr/bin/env bash
# tests/legs/run.sh - several CI legs (tests/legs/leg.sh), one per Debian
# release, and one line for all of them.
#
#   tests/legs/run.sh [RELEASE...]        default: trixie sid
#   LEGS_PARALLEL=1 tests/legs/run.sh     the legs at the same time (their
#                                         clusters use random free ports);
#                                         each leg's output then goes to
#                                         build/legs/RELEASE.out and is
#                                         printed when the leg ends
#
# Ends with each leg's `legs-RELEASE: N passed, N failed` line and
#   legs: N passed, N failed
# exit 1 on any failure.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LEG_DIR=${LEG_DIR:-$ROOT/build/legs}
export LEG_DIR
[[ $# -gt 0 ]] || set -- trixie sid

declare -A RC=() SECS=()
declare -a LINES=()
T0=$SECONDS
mkdir -p "$LEG_DIR" || exit 1

if [[ ${LEGS_PARALLEL:-0} == 1 ]]; then
    declare -A PID=() START=()
    for rel in "$@"; do
        START[$rel]=$SECONDS
        LEG_QUIET=1 "$HERE/leg.sh" "$rel" >"$LEG_DIR/$rel.out" 2>&1 &
        PID[$rel]=$!
        echo "legs: started $rel (pid ${PID[$rel]}, output in $LEG_DIR/$rel.out)"
    done
    for rel in "$@"; do
        wait "${PID[$rel]}"; RC[$rel]=$?
        SECS[$rel]=$((SECONDS - ${START[$rel]}))
        printf '\n===== legs-%s (%ss) =====\n' "$rel" "${SECS[$rel]}"
        cat "$LEG_DIR/$rel.out"
    done
else
    for rel in "$@"; do
        t=$SECONDS
        printf '\n===== legs-%s =====\n' "$rel"
        "$HERE/leg.sh" "$rel" 2>&1 | tee "$LEG_DIR/$rel.out"
        RC[$rel]=${PIPESTATUS[0]}
        SECS[$rel]=$((SECONDS - t))
    done
fi

P=0 F=0
for rel in "$@"; do
    l=$(grep -E "^legs-$rel: [0-9]+ passed, [0-9]+ failed\$" "$LEG_DIR/$rel.out" | tail -n 1)
    if [[ $l =~ ^legs-$rel:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
    else
        p=0 f=1 l="legs-$rel: no summary line (exit status ${RC[$rel]})"
    fi
    ((RC[$rel] != 0 && f == 0)) && f=1
    P=$((P + p)) F=$((F + f))
    LINES+=("$(printf '%-44s (%ss)' "$l" "${SECS[$rel]}")")
done
# The failing checks, named by leg, suite and test, last: CI keeps only the
# tail of a run's output, and a count alone does not say what to look at.
failure_digest() {
    local rel=$1 log
    for log in "$LEG_DIR/$rel.logs"/*.log; do
        [[ -f $log ]] || continue
        awk -v tag="legs-$rel: $(basename "$log" .log)" '
            /^===== .* =====$/ { t = $2 }
            /^FAIL - / || /^not ok / { printf "%s: %s: %s\n", tag, (t == "" ? "-" : t), substr($0, 1, 240) }
        ' "$log"
    done | head -n 40
}
echo
for rel in "$@"; do
    digest=$(failure_digest "$rel")
    [[ -n $digest ]] && printf 'legs: failing checks of %s:\n%s\n' "$rel" "$digest"
done
printf '%s\n' "${LINES[@]}"
echo "legs: total $((SECONDS - T0))s$([[ ${LEGS_PARALLEL:-0} == 1 ]] && echo " (in parallel)")"
echo "legs: $P passed, $F failed"
((F == 0))
