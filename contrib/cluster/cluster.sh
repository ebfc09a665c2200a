#!/usr/bin/env bash
# cluster.sh - a private single-node Slurm cluster for tests and `make demo`
# (Debian 12's 22.05; the same files work with 24.11 and 26.05, tests/legs/).
#
#   cluster.sh start  DIR [PLUGSTACK_LINE]   create DIR, start munged, slurmctld, slurmd
#   cluster.sh stop   DIR                    stop everything started in DIR (idempotent)
#   cluster.sh env    DIR                    print `export SLURM_CONF=...` lines
#   cluster.sh status DIR                    show daemons and node state; 0 = all up
#   cluster.sh ensure-user [NAME]            create the unprivileged test user (default rbuser)
#   cluster.sh stage  SRC DEST               world-readable copy of the checkout SRC for the cluster
#
# The script can also be sourced; it then only defines the rbc_* functions and
# changes no shell options.
#
# Everything lives under DIR (absolute; every directory on the path must be
# world-executable, because munge clients running as the job user must reach
# DIR/munge/munge.socket and read DIR/slurm.conf):
#   DIR/slurm.conf DIR/plugstack.conf DIR/munge/ DIR/state/ DIR/spool/
#   DIR/log/{slurmctld,slurmd,munged}.log DIR/run/*.pid DIR/work/ (job dirs)
#
# Knobs (environment):
#   RB_CLUSTER_NAME   ClusterName                      (default rbtest)
#   RB_SLURM_DEBUG    SlurmctldDebug/SlurmdDebug       (default info)
#   RB_PROLOGFLAGS    PrologFlags value, empty = unset (default empty)
#   RB_REQUEUE_EXIT   RequeueExit value, e.g. "42,3,75" (default 42)
#   RB_TEST_USER      user created by start if missing; empty = none (default rbuser)
#   RB_START_TIMEOUT  seconds to wait for the cluster  (default 30)
#   RB_STOP_TIMEOUT   seconds to wait per TERM phase   (default 10)
#   RB_ACCOUNTING     1: a private slurmdbd with its own MariaDB (accounting.sh)
#   RB_CONFIGLESS     1 = a configless cluster (default 0): slurmctld runs with
#                     SlurmctldParameters=enable_configless, slurmd gets
#                     --conf-server 127.0.0.1:PORT and no file of its own, and
#                     keeps what it fetched in DIR/spool/conf-cache (start
#                     fails unless slurmd runs on that copy).  DIR/slurm.conf
#                     and DIR/plugstack.conf are then the controller's and the
#                     clients' (sbatch, the CLI): no PlugStackConfig line, so
#                     each daemon reads the plugstack.conf next to its
#                     slurm.conf.  slurmd runs in a private mount namespace
#                     where Slurm's default munge socket (/run/munge) is
#                     DIR/munge: it fetches its config before it can know
#                     AuthInfo.
#
# The daemons and the unprivileged job user read the plugin, the CLI, config
# files and job scripts; a checkout may live where they cannot (a clone in
# /root, mode 0700).  `stage` copies the tree (without build/ and .git) plus
# build/restore_budget.so and build/restore-budget to DEST, every directory
# a+rx and every file a+r; the test runners and the demo run from that copy.
#
# stop only signals processes it can prove belong to DIR: a pid from DIR/run
# whose command line names DIR, slurmstepd processes holding a file under DIR
# open, and their descendants.  It never matches by process name alone.

RBC_SELF="${BASH_SOURCE[0]}"
RBC_HERE="$(cd "$(dirname "$RBC_SELF")" && pwd)"
# shellcheck source=contrib/cluster/accounting.sh
. "$RBC_HERE/accounting.sh"

rbc_log() { printf 'cluster.sh: %s\n' "$*" >&2; }
rbc_die() { rbc_log "error: $*"; return 1; }

rbc_conf() { printf '%s/slurm.conf\n' "$1"; }

# Run a Slurm client against the cluster in DIR, bounded in time.
rbc_client() {
    local dir=$1; shift
    SLURM_CONF="$(rbc_conf "$dir")" timeout 10 "$@"
}

# rbc_free_port EXCLUDE... - print a TCP port nobody uses (listening or not).
rbc_free_port() {
    local p used
    for _ in $(seq 1 200); do
        p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
        for used in "$@"; do [[ $p == "$used" ]] && continue 2; done
        if [[ -z "$(ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null)" ]]; then
            printf '%s\n' "$p"; return 0
        fi
    done
    rbc_die "no free TCP port found"
}

# rbc_pid_of DIR NAME - print the pid from DIR/run/NAME.pid if that process
# is alive and its command line names DIR (so a recycled pid is never ours).
rbc_pid_of() {
    local dir=$1 name=$2 pf pid
    pf="$dir/run/$name.pid"
    [[ -r $pf ]] || return 1
    pid=$(tr -dc '0-9' <"$pf")
    [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/" || return 1
    printf '%s\n' "$pid"
}

rbc_alive() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null; }

# rbc_kill_wait TIMEOUT PID... - TERM, wait up to TIMEOUT s, then KILL.
rbc_kill_wait() {
    local t=$1 pid left i; shift
    [[ $# -gt 0 ]] || return 0
    kill -TERM "$@" 2>/dev/null
    for ((i = 0; i < t * 10; i++)); do
        left=0
        for pid in "$@"; do rbc_alive "$pid" && left=1; done
        [[ $left == 0 ]] && return 0
        sleep 0.1
    done
    for pid in "$@"; do
        if rbc_alive "$pid"; then
            rbc_log "pid $pid ignored TERM for ${t}s, sending KILL"
            kill -KILL "$pid" 2>/dev/null
        fi
    done
    sleep 0.2
}

# rbc_descendants PID... - print all descendants of the given pids.
rbc_descendants() {
    local -A kids=()
    local stat pid ppid rest
    for stat in /proc/[0-9]*/stat; do
        read -r pid _ rest <"$stat" 2>/dev/null || continue
        rest=${rest##*) }            # skip "(comm)", which may contain spaces
        read -r _ ppid _ <<<"$rest"
        kids[$ppid]+="$pid "
    done
    local queue=("$@") p c
    while [[ ${#queue[@]} -gt 0 ]]; do
        p=${queue[0]}; queue=("${queue[@]:1}")
        for c in ${kids[$p]:-}; do printf '%s\n' "$c"; queue+=("$c"); done
    done
}

# rbc_stepds DIR - slurmstepd processes of this cluster: they keep the slurmd
# log (under DIR) open.
rbc_stepds() {
    local dir=$1 p fd
    for p in /proc/[0-9]*; do
        [[ $(cat "$p/comm" 2>/dev/null) == slurmstepd ]] || continue
        for fd in "$p"/fd/*; do
            if [[ $(readlink "$fd" 2>/dev/null) == "$dir"/* ]]; then
                printf '%s\n' "${p#/proc/}"; break
            fi
        done
    done
}

# rbc_check_path DIR - every directory from / to DIR must be o+x.
rbc_check_path() {
    local d=$1
    while [[ -n $d ]]; do
        if [[ -d $d && $(stat -c %A "$d") != ?????????[xt] ]]; then
            rbc_die "$d is not world-executable (munge clients and job users must traverse it)"
            return 1
        fi
        d=${d%/*}
    done
}

# rbc_reachable PATH - 0 if every directory from / to PATH is o+x (quiet).
rbc_reachable() {
    local d=$1
    while [[ -n $d ]]; do
        [[ -d $d && $(stat -c %A "$d") != ?????????[xt] ]] && return 1
        d=${d%/*}
    done
    return 0
}

# rbc_stage SRC DEST - copy the checkout SRC (without build/ and .git) and
# its built plugin and CLI to DEST (created; must not exist or be empty),
# readable and traversable by everyone, not writable by them.
rbc_stage() {
    local src=${1:-} dest=${2:-} f
    [[ -n $src && -n $dest ]] || { rbc_die "usage: cluster.sh stage SRC DEST"; return 2; }
    [[ -d $src ]] || { rbc_die "stage: no directory $src"; return 1; }
    mkdir -p "$dest/build" || return 1
    tar -C "$src" --exclude=./build --exclude=./.git -cf - . | tar -C "$dest" -xf - \
        || { rbc_die "stage: copying $src to $dest failed"; return 1; }
    for f in restore_budget.so restore-budget; do
        if [[ -f $src/build/$f ]]; then
            cp "$src/build/$f" "$dest/build/$f" || { rbc_die "stage: cp $src/build/$f failed"; return 1; }
        fi
    done
    chmod -R u+rwX,go+rX,go-w "$dest" || return 1
    rbc_check_path "$dest"
}

rbc_ensure_user() {
    local u=${1:-rbuser}
    id "$u" >/dev/null 2>&1 && return 0
    [[ $(id -u) == 0 ]] || { rbc_die "user $u missing and not root"; return 1; }
    useradd -m -s /bin/bash "$u" || { rbc_die "useradd $u failed"; return 1; }
    rbc_log "created user $u"
}

# rbc_daemon CMD... - run a daemon with a minimal environment.
rbc_daemon() {
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 "$@"
}

rbc_logtail() {
    local dir=$1 f
    for f in "$dir"/log/munged.log "$dir"/log/slurmctld.log "$dir"/log/slurmd*.log; do
        [[ -f $f ]] || continue
        printf -- '----- tail %s -----\n' "$f" >&2
        tail -n 25 "$f" >&2
    done
}

# rbc_ready DIR - 0 when the controller answers and the node is idle.
rbc_ready() {
    local dir=$1
    rbc_client "$dir" scontrol ping 2>/dev/null | grep -q 'is UP' || return 1
    [[ $(rbc_client "$dir" sinfo -h -N -o %T 2>/dev/null | sort -u) == idle ]]
}

# ---- start steps shared with multinode.sh ---------------------------------
# rbc_prepare DIR - the cluster's directories, its job user and a munged
# with a private key, its socket up.
rbc_prepare() {
    local dir=$1 i
    [[ -n ${RB_TEST_USER-rbuser} ]] && { rbc_ensure_user "${RB_TEST_USER-rbuser}" || return 1; }
    mkdir -p "$dir" && chmod 755 "$dir" || return 1
    rbc_check_path "$dir" || return 1
    mkdir -p "$dir"/{munge,state,spool,log,run,work} || return 1
    chmod 755 "$dir"/{munge,state,spool,log,run}
    chmod 1777 "$dir/work"

    rm -f "$dir/munge/munge.key"
    mungekey --create --keyfile="$dir/munge/munge.key" 2>"$dir/log/mungekey.err" \
        || { cat "$dir/log/mungekey.err" >&2; rbc_die "mungekey failed"; return 1; }
    rbc_daemon munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --log-file="$dir/log/munged.log" --pid-file="$dir/run/munged.pid" \
        --seed-file="$dir/munge/munged.seed" \
        || { rbc_logtail "$dir"; rbc_die "munged failed to start"; return 1; }
    for ((i = 0; i < 50; i++)); do [[ -S $dir/munge/munge.socket ]] && break; sleep 0.1; done
    [[ -S $dir/munge/munge.socket ]] || { rbc_logtail "$dir"; rbc_die "munge socket did not appear"; return 1; }
}

# rbc_write_plugstack DIR LINE - plugstack.conf with LINE (or empty).
rbc_write_plugstack() {
    if [[ -n $2 ]]; then printf '%s\n' "$2" >"$1/plugstack.conf"; else : >"$1/plugstack.conf"; fi
    chmod 644 "$1/slurm.conf" "$1/plugstack.conf"
}

# rbc_start_ctld DIR TIMEOUT - slurmctld (clean state), until it answers.
rbc_start_ctld() {
    local i
    rbc_daemon slurmctld -f "$1/slurm.conf" -c \
        || { rbc_logtail "$1"; rbc_die "slurmctld failed to start"; return 1; }
    for ((i = 0; i < $2 * 10; i++)); do
        rbc_client "$1" scontrol ping 2>/dev/null | grep -q 'is UP' && break
        sleep 0.1
    done
}

# rbc_slurmd_alive DIR - the single node's slurmd runs.
rbc_slurmd_alive() {
    rbc_pid_of "$1" slurmd >/dev/null || { rbc_die "slurmd died during startup"; return 1; }
}

# rbc_wait_ready DIR T0 TIMEOUT READY_FN ALIVE_FN - until READY_FN DIR; fail
# if ALIVE_FN DIR fails after 3 s or TIMEOUT passes since T0.
rbc_wait_ready() {
    local dir=$1 t0=$2 tmo=$3 t1=$SECONDS
    while ! "$4" "$dir"; do
        if ((SECONDS - t1 >= 3)) && ! "$5" "$dir"; then
            rbc_logtail "$dir"; return 1
        fi
        if ((SECONDS - t0 >= tmo)); then
            rbc_client "$dir" scontrol ping >&2; rbc_client "$dir" sinfo -N >&2
            rbc_logtail "$dir"
            rbc_die "cluster in $dir not ready after ${tmo}s"
            return 1
        fi
        sleep 0.1
    done
}

# rbc_start_args DIR USAGE - DIR is given and absolute, and we are root
# (2 = usage, 1 = not root).
rbc_start_args() {
    [[ -n $1 ]] || { rbc_die "usage: $2"; return 2; }
    [[ $1 == /* ]] || { rbc_die "DIR must be absolute: $1"; return 2; }
    [[ $(id -u) == 0 ]] || { rbc_die "start needs root"; return 1; }
}

rbc_start() {
    local dir=${1:-} line=${2:-}
    rbc_start_args "$dir" "cluster.sh start DIR [PLUGSTACK_LINE]" || return
    dir=${dir%/}
    local p
    for p in munged slurmctld slurmd; do
        if rbc_pid_of "$dir" "$p" >/dev/null; then
            rbc_die "$p already running for $dir (cluster.sh stop $dir first)"; return 1
        fi
    done
    local host cluster=${RB_CLUSTER_NAME:-rbtest} debug=${RB_SLURM_DEBUG:-info}
    local t0=$SECONDS tmo=${RB_START_TIMEOUT:-30} i
    host=$(hostname -s) || return 1
    if ! getent hosts "$host" >/dev/null; then
        rbc_log "warning: $(hostname -s) does not resolve; Slurm uses NodeAddr/SlurmctldHost addr 127.0.0.1"
    fi
    rbc_prepare "$dir" || { rbc_stop "$dir"; return 1; }

    # slurm.conf and plugstack.conf.
    local cport sport plf=""
    cport=$(rbc_free_port) && sport=$(rbc_free_port "$cport") || { rbc_stop "$dir"; return 1; }
    [[ -n ${RB_PROLOGFLAGS:-} ]] && plf="PrologFlags=$RB_PROLOGFLAGS"
    sed -e "s|@DIR@|$dir|g" -e "s|@HOST@|$host|g" -e "s|@CLUSTER@|$cluster|g" \
        -e "s|@CTLD_PORT@|$cport|g" -e "s|@SLURMD_PORT@|$sport|g" \
        -e "s|@DEBUG@|$debug|g" -e "s|@PROLOGFLAGS_LINE@|$plf|g" \
        "$RBC_HERE/slurm.conf.in" >"$dir/slurm.conf" || { rbc_stop "$dir"; return 1; }
    # exit_rules matter only for codes Slurm requeues (docs/rule.md)
    if [[ -n ${RB_REQUEUE_EXIT:-} ]]; then
        sed -i "s|^RequeueExit=.*|RequeueExit=$RB_REQUEUE_EXIT|" "$dir/slurm.conf" || { rbc_stop "$dir"; return 1; }
    fi
    rbc_write_plugstack "$dir" "$line"
    if [[ ${RB_CONFIGLESS:-0} == 1 ]]; then
        sed -i -e '/^PlugStackConfig=/d' -e '$a SlurmctldParameters=enable_configless' \
            "$dir/slurm.conf" || { rbc_stop "$dir"; return 1; }
    fi
    if [[ ${RB_ACCOUNTING:-0} == 1 ]]; then
        rbc_acct_start "$dir" "$cluster" || { rbc_stop "$dir"; return 1; }
    fi

    # Daemons: the controller first, -c = clean state.  Both daemonize.  They
    # get a clean environment, as under systemd: slurmd's environment is what
    # slurmstepd and the plugin's remote callbacks see through getenv().
    rbc_start_ctld "$dir" "$tmo" || { rbc_stop "$dir"; return 1; }
    if [[ ${RB_CONFIGLESS:-0} == 1 ]]; then
        rbc_start_slurmd_configless "$dir" "$cport"
    else
        rbc_daemon slurmd -f "$dir/slurm.conf"
    fi || { rbc_logtail "$dir"; rbc_die "slurmd failed to start"; rbc_stop "$dir"; return 1; }
    rbc_wait_ready "$dir" "$t0" "$tmo" rbc_ready rbc_slurmd_alive || { rbc_stop "$dir"; return 1; }
    if [[ ${RB_CONFIGLESS:-0} == 1 ]]; then
        rbc_check_configless "$dir" || { rbc_logtail "$dir"; rbc_stop "$dir"; return 1; }
    fi
    rbc_log "cluster $cluster up in $dir (ctld port $cport, slurmd port $sport, $((SECONDS - t0))s)"
}

# rbc_start_slurmd_configless DIR CTLD_PORT - slurmd with no slurm.conf: it
# fetches one from the controller (-L names DIR on its command line, which
# rbc_pid_of needs).  It runs in a private mount namespace where
#  - DIR/slurm.conf and DIR/plugstack.conf are empty (/dev/null): on one
#    machine slurmd could otherwise read the controller's files by their
#    path, and a test would pass without configless working;
#  - /run/munge is DIR/munge (munge.socket.2 -> munge.socket): its first
#    request is signed before it knows AuthInfo, through Slurm's default
#    munge socket.
# The host's mounts are left as they are.
# In a chroot (tests/legs/) "/" is no mount point and its propagation cannot
# change; there the namespace chroot.sh made is private already.
rbc_start_slurmd_configless() {
    local dir=$1 port=$2 prop=private
    ln -sfn munge.socket "$dir/munge/munge.socket.2" || return 1
    unshare --mount --propagation private true 2>/dev/null || prop=unchanged
    # shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
    rbc_daemon unshare --mount --propagation "$prop" sh -c '
        mkdir -p /run/munge && mount --bind "$1/munge" /run/munge &&
        mount --bind /dev/null "$1/slurm.conf" &&
        mount --bind /dev/null "$1/plugstack.conf" &&
        exec slurmd --conf-server "127.0.0.1:$2" -L "$1/log/slurmd.log"' \
        sh "$dir" "$port"
}

# rbc_check_configless DIR - slurmd fetched its files: the copies in
# DIR/spool/conf-cache are the controller's slurm.conf and plugstack.conf
# (and it cannot read the originals: rbc_start_slurmd_configless).
rbc_check_configless() {
    local dir=$1 cache=$1/spool/conf-cache f
    for f in slurm.conf plugstack.conf; do
        cmp -s "$dir/$f" "$cache/$f" ||
            { rbc_die "configless: $cache/$f is not the controller's $dir/$f"; return 1; }
    done
    rbc_log "configless: slurmd runs on $cache, fetched from the controller"
}

rbc_stop() {
    local dir=${1:-} slurmd
    [[ -n $dir ]] || { rbc_die "usage: cluster.sh stop DIR"; return 2; }
    dir=${dir%/}
    slurmd=$(rbc_pid_of "$dir" slurmd)
    # shellcheck disable=SC2086
    rbc_stop_daemons "$dir" $slurmd
}

# rbc_stop_daemons DIR SLURMD_PID... - stop what runs for DIR, given its
# slurmd pids (one here, one per node in multinode.sh).
rbc_stop_daemons() {
    local dir=$1 tmo=${RB_STOP_TIMEOUT:-10}
    shift
    local ctld munge i jobs stepds=() extra=() p
    ctld=$(rbc_pid_of "$dir" slurmctld)
    munge=$(rbc_pid_of "$dir" munged)

    # 1. Cancel the jobs while the daemons still run, so they end cleanly
    #    (epilogs run).  Bounded; whatever is left is killed below.
    if [[ -n $ctld && $# -gt 0 ]]; then
        jobs=$(rbc_client "$dir" squeue -h -o %i -t PD,R,CG,S,CF,RQ,RS,SE 2>/dev/null)
        if [[ -n $jobs ]]; then
            # shellcheck disable=SC2086
            rbc_client "$dir" scancel $jobs 2>/dev/null
            for ((i = 0; i < tmo * 10; i++)); do
                [[ -z $(rbc_client "$dir" squeue -h -o %i -t R,CG,CF,S 2>/dev/null) ]] && break
                sleep 0.1
            done
        fi
    fi
    # 2. Remember the job processes before their slurmstepd goes away.
    mapfile -t stepds < <(rbc_stepds "$dir")
    if [[ ${#stepds[@]} -gt 0 ]]; then
        mapfile -t extra < <(rbc_descendants "${stepds[@]}")
    fi
    # 3. Daemons, then leftover steps and job processes, then munge last
    #    (the others need it to shut down cleanly).
    # shellcheck disable=SC2086
    rbc_kill_wait "$tmo" "$@" $ctld
    p=("${stepds[@]}" "${extra[@]}")
    if [[ ${#p[@]} -gt 0 ]]; then
        local live=() q
        for q in "${p[@]}"; do rbc_alive "$q" && live+=("$q"); done
        [[ ${#live[@]} -gt 0 ]] && { rbc_log "killing leftover job processes: ${live[*]}"; rbc_kill_wait 3 "${live[@]}"; }
    fi
    rbc_acct_stop "$dir" "$tmo"
    # shellcheck disable=SC2086
    rbc_kill_wait "$tmo" $munge
    rm -f "$dir"/run/*.pid 2>/dev/null
    return 0
}

rbc_env() {
    local dir=${1:?usage: cluster.sh env DIR}
    dir=${dir%/}
    printf 'export SLURM_CONF=%q\n' "$dir/slurm.conf"
    printf 'export RB_CLUSTER_DIR=%q\n' "$dir"
}

rbc_status() {
    local dir=${1:?usage: cluster.sh status DIR}
    rbc_status_of "${dir%/}" munged slurmctld slurmd
}

# rbc_status_of DIR DAEMON... - which of DIR's daemons run; then the
# controller's view.  0 = all up.
rbc_status_of() {
    local dir=$1 rc=0 p pid
    shift
    for p in "$@"; do
        if pid=$(rbc_pid_of "$dir" "$p"); then echo "$p: running (pid $pid)"
        else echo "$p: not running"; rc=1; fi
    done
    if [[ $rc == 0 ]]; then
        rbc_client "$dir" scontrol ping || rc=1
        rbc_client "$dir" sinfo -N -o '%N %P %T %E' || rc=1
    fi
    return $rc
}

rbc_main() {
    local cmd=${1:-}; shift || true
    case $cmd in
        start)  rbc_start "$@" ;;
        stop)   rbc_stop "$@" ;;
        env)    rbc_env "$@" ;;
        status) rbc_status "$@" ;;
        ensure-user) rbc_ensure_user "$@" ;;
        stage)  rbc_stage "$@" ;;
        *) sed -n '2,11s/^# \{0,1\}//p' "$RBC_SELF" >&2; return 2 ;;
    esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -uo pipefail
    rbc_main "$@"
    exit $?
fi
