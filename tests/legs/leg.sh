#!/usr/bin/env bash
# tests/legs/leg.sh - one CI leg: this checkout built and tested against
# another Debian release's Slurm, in a debootstrap chroot (tests/legs/chroot.sh).
#
#   tests/legs/leg.sh RELEASE          e.g. trixie (Slurm 24.11), sid (26.05)
#
# 1. the chroot build/legs/RELEASE (created, or reused if complete);
# 2. the source (git ls-files: tracked and untracked-but-not-ignored files;
#    without git, the tree minus build/ and .git) copied to /root/restore_budget
#    inside (root's home, mode 0700, like a clone in /root on the host), and
#    `make all` there, against that release's headers;
# 3. the real-Slurm suites inside, each in its own `chroot.sh run` (private
#    mount namespace; any process left behind is killed and counted as a
#    failure), against that release's daemons: LEG_SUITES (default
#    "integration faults multinode packaging soak peer" = make integration,
#    make faults, make multinode, make packaging-test, make soak-ci (the
#    fixed seeds), make peer-test (Slurm's own tests)).
# Each suite's output goes to build/legs/RELEASE.logs/SUITE.log (and to
# stdout unless LEG_QUIET=1).  The leg ends with one line per suite and
#   legs-RELEASE: N passed, N failed
# (the suites' counts summed; a build failure or a suite without its summary
# line counts 1 failed); exit 1 on any failure.
#
# Knobs: LEG_SUITES, LEG_QUIET=1, LEG_DIR (default build/legs), every
# RB_* variable (passed into the chroot: RB_TEST_TIMEOUT, RB_INTEGRATION_TESTS,
# ...), FAULTS_TESTS / MULTINODE_TESTS (passed to make).
set -uo pipefail

REL=${1:?usage: tests/legs/leg.sh RELEASE}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHROOT_SH=$ROOT/tests/legs/chroot.sh
LEG_DIR=${LEG_DIR:-$ROOT/build/legs}
CH=$LEG_DIR/$REL
LOGS=$LEG_DIR/$REL.logs
SRC=/root/restore_budget            # inside the chroot
SUITES=${LEG_SUITES:-integration faults multinode packaging soak peer}
NAME=legs-$REL
QUIET=${LEG_QUIET:-0}

say() { printf '%s: %s\n' "$NAME" "$*"; }
[[ $(id -u) == 0 ]] || { say "needs root (debootstrap, chroot, private clusters)" >&2; echo "$NAME: 0 passed, 1 failed"; exit 1; }

PASSED=0 FAILED=0
declare -a ROWS=()
T_LEG=$SECONDS
row() { ROWS+=("$(printf '%-12s %-7s %6s %6s %6ss  %s' "$@")"); }

finish() {
    printf '\n%s: %-12s %-7s %6s %6s %7s\n' "$NAME" step result passed failed time
    local r
    for r in "${ROWS[@]}"; do printf '%s: %s\n' "$NAME" "$r"; done
    say "total $((SECONDS - T_LEG))s; logs in $LOGS"
    echo "$NAME: $PASSED passed, $FAILED failed"
    ((FAILED == 0))
    exit
}
on_signal() {
    trap - INT TERM HUP
    say "interrupted"
    "$CHROOT_SH" kill-leftovers "$CH"
    FAILED=$((FAILED + 1))
    finish
}
trap on_signal INT TERM HUP

mkdir -p "$LOGS" || exit 1
rm -f "$LOGS"/*.log

# ---- 1. the chroot ------------------------------------------------------------
t0=$SECONDS
say "chroot $CH"
if ! "$CHROOT_SH" create "$REL" "$CH" 2>&1 | tee "$LOGS/chroot.log"; then
    FAILED=$((FAILED + 1)); row chroot FAIL 0 1 $((SECONDS - t0)) "see $LOGS/chroot.log"
    finish
fi
[[ -f $CH/.rb-leg-ready ]] || { FAILED=$((FAILED + 1)); row chroot FAIL 0 1 $((SECONDS - t0)) "not ready"; finish; }
SLURM_VER=$("$CHROOT_SH" run "$CH" dpkg-query -W -f='${Version}' slurmd 2>/dev/null)
row chroot ok - - $((SECONDS - t0)) "Debian $REL, slurmd $SLURM_VER"

# ---- 2. the source, and make all inside ---------------------------------------
t0=$SECONDS
# Old run dirs and clusters of a previous leg run (kept logs) go: no process
# runs in the chroot now (chroot.sh run kills leftovers).
rm -rf --one-file-system "$CH$SRC" "$CH"/tmp/rb* 2>/dev/null
mkdir -p "$CH$SRC" || exit 1
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [[ -f $f || -L $f ]] && printf '%s\0' "$f"; done |
        tar --null -T - -cf -) | tar -C "$CH$SRC" -xf -
else
    tar -C "$ROOT" --exclude=./build --exclude=./.git -cf - . | tar -C "$CH$SRC" -xf -
fi
cp_rc=$?
if ((cp_rc != 0)) || [[ ! -f $CH$SRC/Makefile ]]; then
    FAILED=$((FAILED + 1)); row build FAIL 0 1 $((SECONDS - t0)) "copying the source failed"
    finish
fi
vhex=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' "$CH/usr/include/slurm/slurm_version.h")
say "building in $SRC (chroot) against Slurm $(printf '%d.%02d.%d' $((vhex >> 16 & 255)) $((vhex >> 8 & 255)) $((vhex & 255)))'s headers"
if "$CHROOT_SH" run "$CH" make -C "$SRC" all >"$LOGS/build.log" 2>&1; then
    row build ok - - $((SECONDS - t0)) "make all"
else
    tail -n 30 "$LOGS/build.log"
    FAILED=$((FAILED + 1)); row build FAIL 0 1 $((SECONDS - t0)) "make all failed: $(grep -m1 -E 'error' "$LOGS/build.log" | cut -c1-150)"
    for s in $SUITES; do row "$s" skipped - - 0 "no build"; done
    finish
fi

# ---- 3. the suites ----------------------------------------------------------------
for s in $SUITES; do
    case $s in
        integration) target=integration  line=integration ;;
        faults)      target=faults       line=faults ;;
        multinode)   target=multinode    line=multinode ;;
        packaging)   target=packaging-test line=packaging ;;
        peer)        target=peer-test    line=peer ;;
        soak)        target=soak-ci      line=soak ;;
        *) say "unknown suite $s"; FAILED=$((FAILED + 1)); row "$s" FAIL 0 1 0 "unknown suite"; continue ;;
    esac
    log=$LOGS/$s.log
    t0=$SECONDS
    printf '\n===== %s: %s (make %s in the %s chroot) =====\n' "$NAME" "$s" "$target" "$REL"
    margs=()
    [[ -n ${FAULTS_TESTS:-} ]] && margs+=("FAULTS_TESTS=$FAULTS_TESTS")
    [[ -n ${MULTINODE_TESTS:-} ]] && margs+=("MULTINODE_TESTS=$MULTINODE_TESTS")
    if [[ $QUIET == 1 ]]; then
        "$CHROOT_SH" run "$CH" make --no-print-directory -C "$SRC" "$target" "${margs[@]}" >"$log" 2>&1
        rc=$?
    else
        "$CHROOT_SH" run "$CH" make --no-print-directory -C "$SRC" "$target" "${margs[@]}" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
    fi
    secs=$((SECONDS - t0))
    sl=$(grep -E "^$line: [0-9]+ passed, [0-9]+ failed\$" "$log" | tail -n 1)
    p=0 f=0 note=""
    if [[ $sl =~ ^$line:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
    else
        f=1 note="no summary line"
    fi
    if grep -q '^chroot.sh: processes were left running' "$log"; then
        f=$((f + 1)) note="${note:+$note; }processes left running (killed)"
    elif ((rc != 0 && f == 0)); then
        f=1 note="exit status $rc"
    fi
    PASSED=$((PASSED + p)) FAILED=$((FAILED + f))
    result=ok; ((f > 0)) && result=FAIL
    row "$s" "$result" "$p" "$f" "$secs" "$note"
    say "$s: $p passed, $f failed (${secs}s)"
done

# ---- nothing may be left behind -------------------------------------------------------
left=$("$CHROOT_SH" leftovers "$CH" | tr '\n' ' ')
mnt=$(findmnt -rn -o TARGET 2>/dev/null | awk -v d="$CH" 'index($0, d "/") == 1' | tr '\n' ' ')
if [[ -z $left && -z $mnt ]]; then
    PASSED=$((PASSED + 1)); row cleanup ok 1 0 0 "no process in the chroot, nothing mounted under it"
else
    FAILED=$((FAILED + 1)); row cleanup FAIL 0 1 0 "processes: ${left:-none}; mounts: ${mnt:-none}"
fi
finish
