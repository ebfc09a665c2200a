# shellcheck shell=bash
# tests/integration/lib.sh - helpers for the bash integration tests.
# Source it:   . "$(dirname "$0")/lib.sh"
#
# Observed on this machine
# ========================
# Debian 12, slurm-wlm 22.05.8, 2 CPUs, root, no systemd; cluster from
# contrib/cluster/cluster.sh (KillWait=5, cred_expire=5, sched_interval=2).
# Times are from the submit/command to the batch script's first line.
#   cluster ready (munged+slurmctld+slurmd, ping UP, node idle)  0.2 s
#   cluster stop (scancel jobs, TERM daemons, munged)           3.8-4.2 s
#   preemption: high job (-c 2) submitted -> victim Restarts=1   0.5-1.1 s
#     (victim PENDING Reason=BeginTime at once) -> rerun starts  7.0 s
#     (RUNNING in squeue 6.1-7.2 s)
#   scontrol requeue -> Restarts bumped at once -> rerun         5.9 s
#   RequeueExit=42: exit 42 -> rerun                             7.0 s
#   rerun env: SLURM_RESTART_COUNT=1, =2, ... (unset on attempt 0)
#   A job preempted/requeued gets SIGTERM in the batch shell and its
#   children; output shows "CANCELLED ... DUE TO PREEMPTION" / "DUE TO JOB
#   REQUEUE".  A whole test with one preemption of trial.sh: ~20 s.
#
# SPANK, probed with a throwaway plugin (prolog/epilog ctx = S_CTX_JOB_SCRIPT,
# uid 0; batch step ctx = S_CTX_REMOTE):
#   job_prolog/job_epilog getenv(): SLURM_JOB_ID, SLURM_CLUSTER_NAME,
#     SLURM_JOB_PARTITION, SLURM_JOB_RESTART_COUNT, SLURM_JOB_WORK_DIR,
#     SLURM_JOB_UID, SLURM_JOB_USER, SLURM_CONF, SLURMD_NODENAME present;
#     SLURM_JOB_ACCOUNT absent (even with sbatch -A: accounting is off);
#     epilog only: SLURM_JOB_EXIT_CODE (raw), SLURM_JOB_EXIT_CODE2 ("42:0"),
#     SLURM_JOB_DERIVED_EC.  S_JOB_ID, S_JOB_UID work; S_JOB_STEPID and
#     S_SLURM_RESTART_COUNT -> 3009; spank_getenv -> 3006 (not remote).
#   epilog after preemption or scontrol requeue: SLURM_JOB_RESTART_COUNT is
#     the prolog's + 1; after RequeueExit=42 or scancel: not bumped.
#   remote init/init_post_opt/user_init: S_JOB_ID, S_JOB_UID ok, S_JOB_STEPID
#     = 0xfffffffb (SLURM_BATCH_SCRIPT); spank_getenv SLURM_CLUSTER_NAME,
#     SLURM_JOB_PARTITION ok; SLURM_JOB_ACCOUNT only with sbatch -A;
#     SLURM_RESTART_COUNT only from task_init on.  getenv() there is
#     slurmd's own environment (cluster.sh starts daemons with env -i).
#   Ordering: the prolog of attempt n ends before the batch step's remote
#     init of attempt n (even with a 2-3 s sleep in the prolog).
#   BUT: an attempt killed while its prolog still ran ("already killed, do
#     not launch batch job") can be followed by a rerun with NO job_prolog
#     at all (slurmd: "reissued job credential for job N"), with or without
#     PrologFlags=Alloc.  Its epilog still runs.
#
# Typical test:
#   . "$(dirname "$0")/lib.sh"
#   RB_PLUGSTACK_LINE="required $RB_ROOT/build/restore_budget.so" cluster_up
#   rb_workdir t1
#   j=$(submit_as_user -p low "$RB_ROOT/contrib/jobs/trial.sh")
#   wait_state "$j" RUNNING 20 && pass "runs" || fail "runs"
#   preempt "$j" && pass "preempted" || fail "preempted"
#   summary
#
# Every wait is bounded; a wait that times out prints what it saw on stderr
# and returns 1.  cluster_up installs an EXIT trap that stops the cluster,
# whatever happens to the test (set -e, a failed wait, Ctrl-C).

RB_ROOT=${RB_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
RB_CLUSTER_SH=${RB_CLUSTER_SH:-$RB_ROOT/contrib/cluster/cluster.sh}
RB_USER=${RB_USER:-rbuser}
RB_PASSED=0
RB_FAILED=0
RB_CLUSTER_DIR=${RB_CLUSTER_DIR:-}
RB_WORKDIR=${RB_WORKDIR:-}

rb_log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
rb_now() { date +%s.%N; }
# rb_since T0 - seconds since T0 (from rb_now), one decimal.
rb_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }'; }

# ---- results -------------------------------------------------------------
pass() { RB_PASSED=$((RB_PASSED + 1)); printf 'ok   - %s\n' "$*"; }
fail() { RB_FAILED=$((RB_FAILED + 1)); printf 'FAIL - %s\n' "$*"; }
# check DESC CMD... - pass or fail DESC by CMD's status.
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
summary() {
    printf 'integration: %d passed, %d failed\n' "$RB_PASSED" "$RB_FAILED"
    [[ $RB_FAILED -eq 0 ]] && exit 0
    exit 1
}

# ---- cluster lifecycle ---------------------------------------------------
# The EXIT trap installed by cluster_up.  Do not replace it in a test; put
# extra cleanup in RB_EXIT_HOOK (a command string run before the cluster stops).
_rb_on_exit() {
    local rc=$?
    trap - EXIT INT TERM HUP
    ((rc != 0)) && RB_KEEP=1
    [[ -n ${RB_EXIT_HOOK:-} ]] && eval "$RB_EXIT_HOOK"
    cluster_down
    exit "$rc"
}

# cluster_up - start a private cluster in a fresh dir under /tmp with the
# plugstack line $RB_PLUGSTACK_LINE (or none).  Exports SLURM_CONF,
# RB_CLUSTER_DIR and RB_WORKDIR (a job dir owned by $RB_USER).
cluster_up() {
    [[ $(id -u) == 0 ]] || { echo "integration tests need root" >&2; return 1; }
    RB_CLUSTER_DIR=$(mktemp -d /tmp/rbcluster.XXXXXX) || return 1
    chmod 755 "$RB_CLUSTER_DIR"
    export RB_CLUSTER_DIR
    trap _rb_on_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM HUP
    local t0; t0=$(rb_now)
    RB_TEST_USER=$RB_USER "$RB_CLUSTER_SH" start "$RB_CLUSTER_DIR" "${RB_PLUGSTACK_LINE:-}" || return 1
    export SLURM_CONF=$RB_CLUSTER_DIR/slurm.conf
    rb_log "cluster up in $(rb_since "$t0")s: $RB_CLUSTER_DIR"
    rb_workdir default >/dev/null
}

# cluster_down - stop the cluster (idempotent).  The dir is removed if every
# check passed, the test did not exit non-zero and RB_KEEP is not 1;
# otherwise it is kept for its logs.
cluster_down() {
    [[ -n $RB_CLUSTER_DIR && -d $RB_CLUSTER_DIR ]] || return 0
    "$RB_CLUSTER_SH" stop "$RB_CLUSTER_DIR"
    if [[ ${RB_KEEP:-0} == 1 || $RB_FAILED -gt 0 ]]; then
        rb_log "cluster stopped; logs kept in $RB_CLUSTER_DIR/log"
    else
        rm -rf "$RB_CLUSTER_DIR"
    fi
    RB_CLUSTER_DIR=
}

# rb_workdir NAME - make $RB_CLUSTER_DIR/work/NAME owned by $RB_USER, make it
# the dir jobs are submitted from (RB_WORKDIR) and print it.
rb_workdir() {
    local d=$RB_CLUSTER_DIR/work/$1
    mkdir -p "$d" && chown "$RB_USER": "$d" && chmod 755 "$d" || return 1
    RB_WORKDIR=$d
    printf '%s\n' "$d"
}

# as_user CMD... - run a command as $RB_USER in $RB_WORKDIR with a clean
# login-like environment: SLURM_CONF plus the caller's TRIAL_*, SBATCH_*,
# SLURM_SPANK_* and RB_JOB_* variables (sbatch exports the submit environment
# into the job, so anything else would leak root's environment into it).
as_user() {
    local -a keep=() v
    for v in $(compgen -e); do
        [[ $v == TRIAL_* || $v == SBATCH_* || $v == SLURM_SPANK_* || $v == RB_JOB_* ]] &&
            keep+=("$v=${!v}")
    done
    (cd "${RB_WORKDIR:?no RB_WORKDIR}" &&
        timeout 30 runuser -u "$RB_USER" -- env -i \
            PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 HOME="$(getent passwd "$RB_USER" | cut -d: -f6)" \
            USER="$RB_USER" LOGNAME="$RB_USER" SHELL=/bin/bash SLURM_CONF="$SLURM_CONF" \
            "${keep[@]}" "$@")
}

# submit_as_user SBATCH-ARGS... - sbatch --parsable as $RB_USER from
# $RB_WORKDIR; prints the job id.
submit_as_user() {
    local out
    out=$(as_user sbatch --parsable "$@") || { echo "sbatch $* failed" >&2; return 1; }
    printf '%s\n' "${out%%;*}"
}

# ---- job state -----------------------------------------------------------
# job_field JOB FIELD - one field of `scontrol -o show job JOB`.
job_field() {
    timeout 10 scontrol -o show job "$1" 2>/dev/null |
        tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# wait_state JOB STATE TIMEOUT - wait until JobState matches STATE (an ERE
# such as 'COMPLETED|FAILED', matched whole).
wait_state() {
    local job=$1 want=$2 tmo=${3:-30} s t0=$SECONDS
    while :; do
        s=$(job_field "$job" JobState)
        [[ $s =~ ^($want)$ ]] && return 0
        if ((SECONDS - t0 >= tmo)); then
            echo "wait_state: job $job is '${s:-?}' ($(job_field "$job" Reason)), not '$want' after ${tmo}s" >&2
            return 1
        fi
        sleep 0.2
    done
}

# wait_restart_count JOB N TIMEOUT - wait until Restarts >= N.
wait_restart_count() {
    local job=$1 n=$2 tmo=${3:-30} r t0=$SECONDS
    while :; do
        r=$(job_field "$job" Restarts)
        [[ $r =~ ^[0-9]+$ ]] && ((r >= n)) && return 0
        if ((SECONDS - t0 >= tmo)); then
            echo "wait_restart_count: job $job has Restarts=${r:-?}, not >= $n after ${tmo}s" >&2
            return 1
        fi
        sleep 0.2
    done
}

# preempt JOB [TIMEOUT] [SECONDS] - submit a `high` job taking both CPUs that
# sleeps SECONDS (default 3), and wait until JOB was requeued (Restarts went
# up).  Prints the preemptor's job id.
preempt() {
    local job=$1 tmo=${2:-30} secs=${3:-3} before hi
    before=$(job_field "$job" Restarts)
    [[ $before =~ ^[0-9]+$ ]] || { echo "preempt: no job $job" >&2; return 1; }
    hi=$(submit_as_user -p high -c 2 -J preemptor -o /dev/null --wrap "sleep $secs") || return 1
    wait_restart_count "$job" $((before + 1)) "$tmo" || return 1
    printf '%s\n' "$hi"
}

# node_drained - 0 if any node is drained, draining, down or failing.
node_drained() {
    timeout 10 sinfo -h -N -o %T 2>/dev/null | grep -Eq 'drain|down|fail'
}
