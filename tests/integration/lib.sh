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
# Other releases (tests/legs/: Debian trixie 24.11.5, sid 26.05.5, chroots
# on the same machine; the same slurm.conf, unchanged):
#   prolog/epilog environment: the same variables as above (ACCOUNT with -A,
#     RESTART_COUNT bumped in the epilog after a preemption, EXIT_CODE2),
#     plus SLURM_JOB_{NODELIST,START_TIME,END_TIME,OVERSUBSCRIBE,
#     CORE_SPEC_COUNT,CORE_SPEC_TYPE} (24.11+) and SLURM_JOB_{SLUID,EXCLUSIVE}
#     (26.05).  slurmd 24.11+ exits without /sys/fs/cgroup, even with
#     proctrack/linuxproc; 26.05 warns "cgroup/v1 plugin is deprecated".
#   26.05 logs "Launching batch JobId=N SLUID=... for UID U" (was "Launching
#     batch job N for UID U").
#   Timings as above (preemption -> rerun ~7 s, suites as long as on 22.05).
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

# A test run directly (not by run.sh / runner.sh, which stage the tree and
# set RB_STAGED=1) from a checkout the job user cannot reach (a clone in
# /root, mode 0700): stage the tree in /tmp (cluster.sh stage) and point
# RB_ROOT at it, so "$RB_ROOT/contrib/jobs/trial.sh", the plugin and the CLI
# are readable by rbuser and the daemons.  Removed when the test exits
# (_rb_on_exit).
RB_OWN_STAGE=
if [[ ${RB_STAGED:-0} != 1 ]] && ! bash -c '. "$1" && rbc_reachable "$2"' _ "$RB_CLUSTER_SH" "$RB_ROOT"; then
    if RB_OWN_STAGE=$(mktemp -d /tmp/rbstage.XXXXXX) && chmod 755 "$RB_OWN_STAGE" &&
        "$RB_CLUSTER_SH" stage "$RB_ROOT" "$RB_OWN_STAGE/root"; then
        printf 'lib.sh: %s is not reachable by other users; running from a copy in %s\n' \
            "$RB_ROOT" "$RB_OWN_STAGE/root" >&2
        RB_ROOT=$RB_OWN_STAGE/root RB_STAGED=1
        export RB_ROOT RB_STAGED
    else
        echo "lib.sh: cannot stage $RB_ROOT (jobs will not find their scripts)" >&2
    fi
fi
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
    [[ -n $RB_OWN_STAGE ]] && rm -rf "$RB_OWN_STAGE"
    exit "$rc"
}

# cluster_up - start a private cluster in a fresh dir under /tmp (or under
# $RB_CLUSTER_PARENT, as rb_cluster_up) with the plugstack line
# $RB_PLUGSTACK_LINE (or none).  Exports SLURM_CONF, RB_CLUSTER_DIR and
# RB_WORKDIR (a job dir owned by $RB_USER).
cluster_up() {
    [[ $(id -u) == 0 ]] || { echo "integration tests need root" >&2; return 1; }
    RB_CLUSTER_DIR=$(mktemp -d "${RB_CLUSTER_PARENT:-/tmp}/rbcluster.XXXXXX") || return 1
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

# wait_held JOB TIMEOUT - wait until JOB is PENDING with Priority=0 (held).
wait_held() {
    local job=$1 tmo=${2:-30} t0=$SECONDS
    until [[ $(job_field "$job" JobState) == PENDING && $(job_field "$job" Priority) == 0 ]]; do
        if ((SECONDS - t0 >= tmo)); then
            echo "wait_held: job $job is $(job_field "$job" JobState) Priority=$(job_field "$job" Priority) after ${tmo}s" >&2
            return 1
        fi
        sleep 0.3
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
    wait_requeued "$job" "$tmo" || return 1
    printf '%s\n' "$hi"
}

# wait_requeued JOB TIMEOUT - wait until a requeued JOB no longer shows
# JobState=COMPLETING.  Right after a preemption the restart count is
# already bumped while JobState is COMPLETING for 0.3-0.5 s (seen on 22.05,
# 24.11 and 26.05; hit more often on 26.05), then PENDING (Reason=BeginTime).
wait_requeued() {
    local job=$1 tmo=${2:-30} s t0=$SECONDS
    while :; do
        s=$(job_field "$job" JobState)
        [[ $s != COMPLETING ]] && return 0
        if ((SECONDS - t0 >= tmo)); then
            echo "wait_requeued: job $job still COMPLETING after ${tmo}s" >&2
            return 1
        fi
        sleep 0.1
    done
}

# node_drained - 0 if any node is drained, draining, down or failing.
node_drained() {
    timeout 10 sinfo -h -N -o %T 2>/dev/null | grep -Eq 'drain|down|fail'
}

# =========================================================================
# Helpers for the integration suite (tests/integration/test_*.sh, run.sh).
# Appended; the functions above keep their behaviour.
# =========================================================================
#
#   rb_cluster_up 'max_failures = 1; restore_retry_num = 2;'
#       like cluster_up, with the plugin loaded (config=$RB_CONF).  The config
#       and the ledger live in the cluster dir: $RB_CONF (0644) and $RB_STATE
#       (root 0755); state_dir is prepended unless the text sets it.
#   rb_write_config TEXT     rewrite $RB_CONF atomically (same rule)
#   rec_get JOB KEY          a key of the job's ledger record
#   ev_get JOB KIND N KEY    a key of the event line kind=KIND attempt=N
#   out_var FILE N VAR       VAR as printed by attempt N of a trial (exit 1
#                            if attempt N printed no such variable)
#   expect DESC GOT WANT     pass if GOT == WANT, else fail showing both
#   rb_final_checks          the checks every test ends with
#   measure KEY=VALUE...     a line run.sh collects into its report
#
# Knobs set by run.sh: RB_PLUGIN_SO (a private copy of the plugin, so a
# rebuild during the run cannot change it), RB_CLUSTER_REGISTRY (a file each
# started cluster dir is appended to, so run.sh can stop leftovers),
# RB_NODESTATE_FILE (the node states are written there just before the
# cluster stops: run.sh's own final drain check).

RB_PLUGIN_SO=${RB_PLUGIN_SO:-$RB_ROOT/build/restore_budget.so}
RB_CLUSTER_NAME_USED=${RB_CLUSTER_NAME:-rbtest}
RB_TEST_NAME=${RB_TEST_NAME:-$(basename "$0" .sh)}
RB_CONF=${RB_CONF:-}
RB_STATE=${RB_STATE:-}

# _rb_exit_snapshot - record the node states for run.sh (from the EXIT hook,
# while the cluster still runs).
_rb_exit_snapshot() {
    [[ -n ${RB_NODESTATE_FILE:-} && -n ${SLURM_CONF:-} ]] || return 0
    {
        printf '# %s %s\n' "$RB_TEST_NAME" "${RB_CLUSTER_DIR:-}"
        timeout 10 sinfo -h -N -o '%N %T %E' 2>&1 || echo "sinfo failed"
    } >>"$RB_NODESTATE_FILE"
}

# rb_write_config TEXT - write $RB_CONF atomically (temp + rename).
rb_write_config() {
    local text=$1 tmp
    tmp=$(mktemp "$RB_CONF.XXXXXX") || return 1
    {
        printf '# written by %s at %s\n' "$RB_TEST_NAME" "$(date +%T.%N)"
        grep -q '^[[:space:]]*state_dir' <<<"$text" ||
            printf 'state_dir = "%s";\n' "$RB_STATE"
        printf '%s\n' "$text"
    } >"$tmp" && chmod 644 "$tmp" && mv -f "$tmp" "$RB_CONF"
}

# _rb_cluster_dir - a fresh cluster dir with rb/state (RB_STATE) and the
# exit hooks; RB_CONF and RB_RUN_DIR named in it.
_rb_cluster_dir() {
    [[ $(id -u) == 0 ]] || { echo "integration tests need root" >&2; return 1; }
    [[ -r $RB_PLUGIN_SO ]] || { echo "no plugin at $RB_PLUGIN_SO (make build/restore_budget.so)" >&2; return 1; }
    RB_CLUSTER_DIR=$(mktemp -d "${RB_CLUSTER_PARENT:-/tmp}/rbcluster.XXXXXX") || return 1
    chmod 755 "$RB_CLUSTER_DIR"
    export RB_CLUSTER_DIR
    [[ -n ${RB_CLUSTER_REGISTRY:-} ]] && printf '%s\n' "$RB_CLUSTER_DIR" >>"$RB_CLUSTER_REGISTRY"
    trap _rb_on_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM HUP
    RB_EXIT_HOOK="_rb_exit_snapshot${RB_EXIT_HOOK:+; $RB_EXIT_HOOK}"
    RB_CONF=$RB_CLUSTER_DIR/rb/restore_budget.conf
    RB_STATE=$RB_CLUSTER_DIR/rb/state
    # run_dir: each private cluster's node notes apart from every other's
    RB_RUN_DIR=$RB_CLUSTER_DIR/rb/run
    mkdir -p "$RB_STATE" && chmod 755 "$RB_CLUSTER_DIR/rb" "$RB_STATE"
}

# rb_cluster_up CONFIG_TEXT - cluster_up with the plugin and its own config.
rb_cluster_up() {
    _rb_cluster_dir || return 1
    rb_write_config "${1:-}" || return 1
    local t0; t0=$(rb_now)
    RB_TEST_USER=$RB_USER "$RB_CLUSTER_SH" start "$RB_CLUSTER_DIR" \
        "required $RB_PLUGIN_SO config=$RB_CONF run_dir=$RB_RUN_DIR" || return 1
    export SLURM_CONF=$RB_CLUSTER_DIR/slurm.conf
    rb_log "cluster up in $(rb_since "$t0")s: $RB_CLUSTER_DIR (config $RB_CONF)"
    rb_workdir default >/dev/null
}

# rb_configless_up ARGS - rb_cluster_up without a config file, on a
# configless cluster (RB_CONFIGLESS=1 of cluster.sh): the plugin's
# plugstack.conf line carries ARGS (@STATE@ in them: $RB_STATE, made here
# under the cluster's dir) and run_dir=$RB_RUN_DIR; RB_PLUGSTACK_ARGS is
# the line's arguments as written.
rb_configless_up() {
    _rb_cluster_dir || return 1
    RB_CONF=
    RB_PLUGSTACK_ARGS="run_dir=$RB_RUN_DIR ${1//@STATE@/$RB_STATE}"
    RB_CONFIGLESS=1 RB_TEST_USER=$RB_USER "$RB_CLUSTER_SH" start "$RB_CLUSTER_DIR" \
        "required $RB_PLUGIN_SO $RB_PLUGSTACK_ARGS" || return 1
    export SLURM_CONF=$RB_CLUSTER_DIR/slurm.conf
    rb_workdir default >/dev/null
}

# ---- ledger ----------------------------------------------------------------
rb_rec_path() { printf '%s/%s/%03u/%s.rec\n' "$RB_STATE" "$RB_CLUSTER_NAME_USED" $(($1 % 1000)) "$1"; }
rb_evlog_path() { printf '%s/%s/%03u/%s.log\n' "$RB_STATE" "$RB_CLUSTER_NAME_USED" $(($1 % 1000)) "$1"; }
# rb_ack_path_of JOB N [DIR] - the job's acknowledgement file of attempt N,
# in its checkpoint dir DIR (default $RB_WORKDIR/ckpt): the job's own space.
rb_ack_path_of() { printf '%s/.restore_budget-ack.%s.%s.%s\n' "${3:-$RB_WORKDIR/ckpt}" "$RB_CLUSTER_NAME_USED" "$1" "$2"; }

# rec_get JOB KEY - value of KEY in the job's record ("" if absent).
rec_get() { sed -n "s/^$2=//p" "$(rb_rec_path "$1")" 2>/dev/null | head -n 1; }

# ev_lines JOB KIND [N] - the event lines of one kind (and attempt).
ev_lines() {
    local f; f=$(rb_evlog_path "$1")
    [[ -r $f ]] || return 0
    if [[ -n ${3:-} ]]; then grep -E " kind=$2 attempt=$3( |$)" "$f"
    else grep -E " kind=$2 " "$f"; fi
}

# ev_get JOB KIND N KEY - value of KEY in the first kind=KIND attempt=N line.
ev_get() {
    ev_lines "$1" "$2" "$3" | head -n 1 | tr ' ' '\n' | sed -n "s/^$4=//p" | head -n 1
}

# ev_count JOB ERE - number of event lines matching ERE.
ev_count() {
    local f; f=$(rb_evlog_path "$1")
    [[ -r $f ]] || { echo 0; return 0; }
    grep -cE -- "$2" "$f"
}

# ---- job output (trial.sh and tests/integration/jobs/*.sh format) -----------
# out_var FILE N VAR - the value attempt N printed for VAR ("trial:   VAR=v").
out_var() {
    awk -v n="$2" -v v="$3" '
        BEGIN { a = -1; p = "trial:   " v "=" }
        /^trial\[[0-9]+\.[0-9]+\]: start / {
            s = $0; sub(/^trial\[[0-9]+\./, "", s); sub(/\].*/, "", s); a = s + 0; next }
        a == n + 0 && index($0, p) == 1 { print substr($0, length(p) + 1); found = 1; exit }
        END { exit found ? 0 : 1 }' "$1" 2>/dev/null
}

# out_attempts FILE - attempt numbers that printed a start line, one a line.
out_attempts() {
    sed -n 's/^trial\[[0-9]*\.\([0-9]*\)\]: start .*/\1/p' "$1" 2>/dev/null
}

# wait_grep FILE ERE TIMEOUT - wait until FILE has a line matching ERE.
wait_grep() {
    local f=$1 re=$2 tmo=${3:-30} t0=$SECONDS
    while ! grep -qE -- "$re" "$f" 2>/dev/null; do
        if ((SECONDS - t0 >= tmo)); then
            echo "wait_grep: no line matching '$re' in $f after ${tmo}s" >&2
            return 1
        fi
        sleep 0.2
    done
}

# wait_ev JOB ERE TIMEOUT - wait for a matching line in the job's event log.
wait_ev() { wait_grep "$(rb_evlog_path "$1")" "$2" "${3:-30}"; }

# wait_job_gone_from_node JOB TIMEOUT - wait until JOB has no COMPLETING flag
# and is not RUNNING (its processes are gone).
wait_not_running() {
    local job=$1 tmo=${2:-30} t0=$SECONDS s
    while :; do
        s=$(timeout 10 squeue -h -j "$job" -o '%T' 2>/dev/null)
        [[ $s != RUNNING && $s != COMPLETING && $s != *COMPLETING* ]] && return 0
        if ((SECONDS - t0 >= tmo)); then
            echo "wait_not_running: job $job still '$s' after ${tmo}s" >&2
            return 1
        fi
        sleep 0.2
    done
}

# ---- results ------------------------------------------------------------------
# expect DESC GOT WANT - pass if GOT equals WANT (strings), else fail with both.
expect() {
    if [[ "$2" == "$3" ]]; then pass "$1"
    else fail "$1 (got '$2', want '$3')"; fi
}

# expect_match DESC TEXT ERE
expect_match() {
    if [[ $2 =~ $3 ]]; then pass "$1"
    else fail "$1 ('${2:0:300}' does not match /$3/)"; fi
}

# measure KEY=VALUE... - one "measure:" line for run.sh's report.
measure() { printf 'measure: %s %s\n' "$RB_TEST_NAME" "$*"; }

# ---- daemons and nodes ----------------------------------------------------------
# rb_daemon_pid NAME - pid of this cluster's daemon NAME (slurmd, slurmctld)
# if it runs, else fail.
rb_daemon_pid() {
    local pid
    pid=$( { tr -dc '0-9' <"$RB_CLUSTER_DIR/run/$1.pid"; } 2>/dev/null)
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$RB_CLUSTER_DIR/" || return 1
    printf '%s\n' "$pid"
}

# rb_nodes_ok - 0 if sinfo answers with at least one node and none is
# drained, draining, down or failing (node_drained alone also "passes" when
# sinfo does not answer).
rb_nodes_ok() {
    local s
    s=$(timeout 10 sinfo -h -N -o '%T' 2>/dev/null) || return 1
    [[ -n $s ]] || return 1
    ! grep -Eq 'drain|down|fail' <<<"$s"
}

# rb_restart_slurmd [busy] - stop this cluster's slurmd (TERM, by pid) and
# start it again with the same command line cluster.sh uses; wait until it is
# ready: the node idle, or with "busy" (jobs run across the restart) until
# the new slurmd logged its start and the node is idle, mixed or allocated.
rb_restart_slurmd() {
    local busy=${1:-} log=$RB_CLUSTER_DIR/log/slurmd.log pid i n0 s
    n0=$(grep -c 'slurmd started on' "$log" 2>/dev/null)
    pid=$(rb_daemon_pid slurmd) || { echo "rb_restart_slurmd: slurmd not running" >&2; return 1; }
    kill -TERM "$pid"
    for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "rb_restart_slurmd: slurmd $pid did not stop" >&2; return 1; }
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        slurmd -f "$RB_CLUSTER_DIR/slurm.conf" || return 1
    for ((i = 0; i < 300; i++)); do
        s=$(timeout 10 sinfo -h -N -o %T 2>/dev/null | sort -u)
        if rb_daemon_pid slurmd >/dev/null; then
            [[ -z $busy && $s == idle ]] && return 0
            [[ -n $busy && $s =~ ^(idle|mixed|allocated)$ ]] &&
                (($(grep -c 'slurmd started on' "$log" 2>/dev/null) > n0)) && return 0
        fi
        sleep 0.1
    done
    echo "rb_restart_slurmd: slurmd not back after 30s (node: ${s:-?})" >&2
    return 1
}

# rb_batch_stepd JOB - the pid of this cluster's slurmstepd of JOB's batch
# step; 1 if there is none.
rb_batch_stepd() {
    local p
    for p in $(bash -c '. "$1"; rbc_stepds "$2"' _ "$RB_CLUSTER_SH" "$RB_CLUSTER_DIR"); do
        tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "[$1.batch]" && { echo "$p"; return 0; }
    done
    return 1
}

# rb_requeue_if_stale JOB [SECONDS] - after a slurmctld rollback: if the
# controller holds JOB RUNNING with no batch slurmstepd for SECONDS (20),
# requeue it, as an admin would, and say so.  Slurm 22.05 once kept such a
# job RUNNING for 14 min, 24.11 for the 90 s of a test (docs/stores.md,
# "When slurmctld dies"); returns at once once JOB is not RUNNING or its
# batch step is there.
rb_requeue_if_stale() {
    local j=$1 limit=${2:-20} since=$SECONDS
    while [[ $(job_field "$j" JobState) == RUNNING ]]; do
        rb_batch_stepd "$j" >/dev/null && return 0
        if ((SECONDS - since >= limit)); then
            rb_log "job $j RUNNING with no batch slurmstepd for ${limit}s after the rollback (Slurm's doing): scontrol requeue $j"
            timeout 10 scontrol requeue "$j"
            return 0
        fi
        sleep 1
    done
    return 0
}

# rb_restart_ctld [SIGNAL [ARG...]] - stop slurmctld (TERM, or KILL: what
# it had not saved is lost) and start it again with ARGs (none: on its saved
# state; -c: with none, every job forgotten); until it answers.
rb_restart_ctld() {
    local pid i sig=${1:-TERM}
    (($# > 0)) && shift
    pid=$(rb_daemon_pid slurmctld) || return 1
    kill "-$sig" "$pid"
    for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && return 1
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        slurmctld -f "$RB_CLUSTER_DIR/slurm.conf" "$@" || return 1
    for ((i = 0; i < 300; i++)); do
        timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
        sleep 0.1
    done
    return 1
}

# rb_final_checks - every test ends with these.  RB_EXPECT_PLUGIN_ERRORS=1
# skips the "no plugin error in slurmd.log" check (tests that cause errors).
rb_final_checks() {
    check "no node drained, down or failing (sinfo: $(timeout 10 sinfo -h -N -o '%N:%T' 2>/dev/null | tr '\n' ' '))" rb_nodes_ok
    checkq "slurmd still running" rb_daemon_pid slurmd
    checkq "slurmctld still running" rb_daemon_pid slurmctld
    if [[ ${RB_EXPECT_PLUGIN_ERRORS:-0} != 1 ]]; then
        local errs
        errs=$(grep -E 'error: .*restore_budget: ' "$RB_CLUSTER_DIR"/log/slurmd.log 2>/dev/null | head -n 5)
        expect "no restore_budget error in slurmd.log" "$errs" ""
    fi
    local drains
    # RB_DRAINS_ALLOWED: a regex of drain lines a test has accounted for
    # itself (test_controller_ctld_kill.sh: Slurm's "Duplicate jobid")
    drains=$(grep -iE 'drain|Prolog error|Epilog error|launch_failed' "$RB_CLUSTER_DIR"/log/slurmctld.log 2>/dev/null |
        grep -vE "${RB_DRAINS_ALLOWED:-^\$}" | head -n 3)
    expect "no drain/prolog/epilog failure in slurmctld.log" "$drains" ""
}

# ckpt_snapshot DIR - listing (full-iso times, without the '..' line) and the
# sha256 of every file, to prove nothing in DIR changed.
ckpt_snapshot() {
    (cd "$1" 2>/dev/null || exit 1
     ls -la --time-style=full-iso . | grep -v ' \.\.$'
     find . -type f -print0 | sort -z | xargs -0r sha256sum)
}

# checkq DESC CMD... - check, with CMD's stdout discarded (stderr kept: the
# waits explain there why they gave up).
checkq() { local d=$1; shift; if "$@" >/dev/null; then pass "$d"; else fail "$d"; fi; }

# check_attempts_recorded JOB LAST [TAG] - the ledger has a start event for
# every attempt 0..LAST (the job_prolog ran and charged each of them).  On
# failure it says how often slurmd logged "reissued job credential" for the
# job: such a rerun can start with no job_prolog at all (see the top).
check_attempts_recorded() {
    local j=$1 last=$2 tag=${3:-job $1} n missing=()
    for ((n = 0; n <= last; n++)); do
        [[ -n $(ev_lines "$j" start "$n") ]] || missing+=("$n")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        pass "$tag: the ledger recorded the start of every attempt 0..$last"
    else
        fail "$tag: no start event for attempt(s) ${missing[*]} (no job_prolog? slurmd.log has $(grep -c "reissued job credential for job $j\$" "$RB_CLUSTER_DIR/log/slurmd.log" 2>/dev/null) 'reissued job credential for job $j')"
    fi
}
