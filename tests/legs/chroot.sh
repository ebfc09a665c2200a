#!/usr/bin/env bash
# tests/legs/chroot.sh - a Debian chroot with another release's Slurm, for the
# CI legs (tests/legs/leg.sh).  Needs root.
#
#   chroot.sh create RELEASE DIR   debootstrap --variant=minbase RELEASE DIR, then
#                                  the packages the real-Slurm suites need; an
#                                  existing complete DIR is reused (DIR/.rb-leg-ready)
#   chroot.sh run DIR CMD...       CMD inside DIR, in a private mount namespace
#                                  with /proc, /dev, /sys mounted and /etc/hosts
#                                  copied in; every mount goes with the namespace.
#                                  Any process left running in DIR afterwards is
#                                  killed (and the status is then 125).
#   chroot.sh leftovers DIR        pids of processes whose root is DIR
#   chroot.sh kill-leftovers DIR   TERM, then KILL them (status 1 if there were any)
#   chroot.sh packages             the package list
#
# Knobs: LEG_MIRROR (default: the host's own Debian mirror, read from its apt
# sources at run time, ch_host_mirror), LEG_EXTRA_PKGS (more
# packages), LEG_ENV (names of extra variables passed into `run`; every RB_*
# and LEG_* variable and TERM always are).
#
# Nothing is cached outside DIR.  The host needs debootstrap (installed here
# with apt-get when missing, like `make deps`).  The chroot gets a
# policy-rc.d that forbids starting services, so installing munge or slurmd
# starts no daemon; the suites start and stop their own private clusters.
set -uo pipefail

CH_SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
CH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# ch_host_mirror - the URI of the host's Debian archive (not -security, not
# -updates' own host): the first `URIs:` of a deb822 source that names the
# host's release, else the first `deb URI ...` line of sources.list. No
# mirror's name is written in the tree; the machine says which it uses.
ch_host_mirror() {
    local f uri
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r $f ]] || continue
        uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
        [[ -n $uri ]] && { printf '%s\n' "$uri"; return 0; }
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r $f ]] || continue
        uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($i !~ /security/) { print $i; exit } ; break } }' "$f")
        [[ -n $uri ]] && { printf '%s\n' "$uri"; return 0; }
    done
    return 1
}
LEG_MIRROR=${LEG_MIRROR:-$(ch_host_mirror)}

# What the real-Slurm suites need inside (the Makefile's PKGS_BUILD, Slurm and
# munge, a compiler; dpkg-dev for make deb, man-db for deb.sh's man checks,
# python3 for the JSON checks of test_hold_grant_cli; for make peer-test:
# pytest, pexpect, pytest-timeout, requests (24.11+) and expect to run Slurm's own tests, bzip2
# and xz-utils for apt-get source, which reads the chroot's own apt sources).
# Sanitizers, fuzzing, valgrind and lint stay on the host.
CH_PKGS="libslurm-dev slurmd slurmctld slurm-client munge gcc make libc6-dev
libconfig-dev libcmocka-dev libjson-c-dev pkg-config iproute2 procps
dpkg-dev man-db python3 strace
python3-pytest python3-pexpect python3-pytest-timeout python3-requests expect bzip2
xz-utils slurmdbd mariadb-server
${LEG_EXTRA_PKGS:-}"

ch_log() { printf 'chroot.sh: %s\n' "$*" >&2; }
ch_die() { ch_log "error: $*"; exit 1; }

ch_pkgs() { printf '%s\n' $CH_PKGS | sort -u; }

# ch_leftovers DIR - pids of processes whose root directory is DIR.
ch_leftovers() {
    local dir=$1 want p
    want=$(stat -L -c %d:%i "$dir" 2>/dev/null) || return 0
    for p in /proc/[0-9]*; do
        [[ $(stat -L -c %d:%i "$p/root" 2>/dev/null) == "$want" ]] && printf '%s\n' "${p#/proc/}"
    done
}

# ch_kill_leftovers DIR - TERM, then KILL, every process rooted in DIR.
# Prints what it killed; 0 if there was nothing to kill.
ch_kill_leftovers() {
    local dir=$1 i
    local -a pids
    mapfile -t pids < <(ch_leftovers "$dir")
    [[ ${#pids[@]} -eq 0 ]] && return 0
    for p in "${pids[@]}"; do
        ch_log "leftover process in $dir: $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-120)"
    done
    kill -TERM "${pids[@]}" 2>/dev/null
    for ((i = 0; i < 50; i++)); do
        [[ -z $(ch_leftovers "$dir") ]] && return 1
        sleep 0.2
    done
    mapfile -t pids < <(ch_leftovers "$dir")
    [[ ${#pids[@]} -gt 0 ]] && kill -KILL "${pids[@]}" 2>/dev/null
    sleep 0.5
    return 1
}

# ch_host_mounts DIR - mount points at or below DIR seen by the host (none is
# expected: the chroot's mounts live in private namespaces).
ch_host_mounts() {
    findmnt -rn -o TARGET 2>/dev/null | awk -v d="$1" '$0 == d || index($0, d "/") == 1'
}

# ch_run DIR CMD... - see the top.
ch_run() {
    local dir=${1:?usage: chroot.sh run DIR CMD...}; shift
    [[ $# -gt 0 ]] || ch_die "usage: chroot.sh run DIR CMD..."
    [[ -x $dir/bin/sh ]] || ch_die "$dir is not a chroot (no bin/sh)"
    local -a envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
                   HOME=/root LANG=C.UTF-8 USER=root LOGNAME=root SHELL=/bin/bash)
    local v
    for v in $(compgen -e); do
        [[ $v == RB_* || $v == LEG_* || $v == TERM || " ${LEG_ENV:-} " == *" $v "* ]] &&
            envs+=("$v=${!v}")
    done
    cp /etc/hosts "$dir/etc/hosts" || return 1
    [[ -r /etc/resolv.conf ]] && cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null
    local rc
    unshare -m --propagation private -- /bin/bash -c '
        d=$1; shift
        mount -t proc proc "$d/proc" || exit 125
        mount --rbind /dev "$d/dev" || exit 125
        mount --rbind /sys "$d/sys" || exit 125
        exec chroot "$d" /usr/bin/env -i "$@"' chroot-run "$dir" "${envs[@]}" "$@"
    rc=$?
    if ! ch_kill_leftovers "$dir"; then
        ch_log "processes were left running in $dir after: $*"
        ((rc == 0)) && rc=125
    fi
    return $rc
}

# ch_ensure_debootstrap - install debootstrap on the host if missing.
ch_ensure_debootstrap() {
    command -v debootstrap >/dev/null && return 0
    "$CH_ROOT/contrib/packaging/install-deps.sh" debootstrap || return 1
    command -v debootstrap >/dev/null
}

# ch_create RELEASE DIR - see the top.
ch_create() {
    local rel=${1:-} dir=${2:-} want t0=$SECONDS
    [[ -n $rel && -n $dir ]] || ch_die "usage: chroot.sh create RELEASE DIR"
    [[ $dir == /* ]] || dir=$PWD/$dir
    [[ $(id -u) == 0 ]] || ch_die "create needs root"
    [[ -n $LEG_MIRROR ]] || ch_die "no Debian mirror in the host's apt sources (/etc/apt/sources.list.d/*.sources, /etc/apt/sources.list); set LEG_MIRROR=URI"
    want=$(printf 'release=%s\nmirror=%s\n' "$rel" "$LEG_MIRROR"; ch_pkgs)
    if [[ -f $dir/.rb-leg-ready ]]; then
        if [[ $(cat "$dir/.rb-leg-ready") == "$want" ]]; then
            ch_log "reusing the $rel chroot in $dir"
            return 0
        fi
        if [[ $(head -n 2 "$dir/.rb-leg-ready") == "$(head -n 2 <<<"$want")" ]]; then
            ch_log "$dir: package list changed; installing what is missing"
            ch_install "$dir" || return 1
            printf '%s\n' "$want" >"$dir/.rb-leg-ready"
            return 0
        fi
    fi
    if [[ -e $dir ]]; then
        [[ -z $(ch_host_mounts "$dir") ]] || ch_die "something is mounted under $dir; not removing it"
        ch_kill_leftovers "$dir" || true
        ch_log "removing the incomplete or different chroot $dir"
        rm -rf --one-file-system "$dir" || ch_die "cannot remove $dir"
    fi
    ch_ensure_debootstrap || ch_die "debootstrap is missing and could not be installed"
    mkdir -p "$(dirname "$dir")" || return 1
    ch_log "debootstrap --variant=minbase $rel $dir $LEG_MIRROR"
    if ! debootstrap --variant=minbase "$rel" "$dir" "$LEG_MIRROR" >"$dir.debootstrap.log" 2>&1; then
        tail -n 20 "$dir.debootstrap.log" >&2
        ch_die "debootstrap $rel failed (log: $dir.debootstrap.log)"
    fi
    # No service may start in the chroot (munge's and slurm's postinst).
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d" && chmod 755 "$dir/usr/sbin/policy-rc.d"
    ch_install "$dir" || return 1
    printf '%s\n' "$want" >"$dir/.rb-leg-ready"
    ch_log "$rel chroot ready in $dir ($((SECONDS - t0))s; $(ch_run "$dir" sh -c 'dpkg-query -W -f="\${Version}" slurmd') slurmd)"
}

# ch_install DIR - apt-get update and install the package list.
ch_install() {
    local dir=$1
    # shellcheck disable=SC2046
    if ! LEG_ENV="DEBIAN_FRONTEND" DEBIAN_FRONTEND=noninteractive ch_run "$dir" sh -c '
            apt-get -q -o Acquire::Check-Valid-Until=false update &&
            apt-get -q -y --no-install-recommends install "$@" &&
            apt-get clean' apt $(ch_pkgs) >"$dir.apt.log" 2>&1; then
        tail -n 20 "$dir.apt.log" >&2
        ch_log "error: apt-get in $dir failed (log: $dir.apt.log)"
        return 1
    fi
}

case ${1:-} in
    create)    shift; ch_create "$@" ;;
    run)       shift; ch_run "$@" ;;
    leftovers) ch_leftovers "${2:?usage: chroot.sh leftovers DIR}" ;;
    kill-leftovers) ch_kill_leftovers "${2:?usage: chroot.sh kill-leftovers DIR}" ;;
    packages)  ch_pkgs ;;
    *) sed -n '2,17s/^# \{0,1\}//p' "$CH_SELF" >&2; exit 2 ;;
esac
