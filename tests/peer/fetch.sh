#!/usr/bin/env bash
# tests/peer/fetch.sh - the running Slurm release's own source (its
# testsuite/), fetched once with `apt-get source` and reused afterwards.
#
#   tests/peer/fetch.sh CACHE     prints the source tree's path (CACHE/src/slurm-wlm-*)
#
# Exit 0: fetched (or cached); 3: the mirror has no source for this version
# at all (seen for sid's 26.05.5-1: .dsc, tarball and diff all 404); 1: any
# other failure.
#
# The version is the installed slurmd's source version (dpkg), so the tests
# are the ones of the daemons that run.  apt runs with a private state under
# CACHE/apt: its deb-src list is the machine's own apt sources with every
# `deb` made `deb-src` (read at run time: the tree names no mirror); the
# machine's apt configuration and lists are not touched.  Needs dpkg-dev.
set -uo pipefail

CACHE=${1:?usage: fetch.sh CACHE}
mkdir -p "$CACHE" || exit 1
CACHE=$(cd "$CACHE" && pwd)
say() { printf 'peer: fetch: %s\n' "$*" >&2; }

VER=$(dpkg-query -W -f='${source:Version}' slurmd 2>/dev/null) || { say "slurmd is not installed"; exit 1; }
[[ -n $VER ]] || { say "no version for slurmd"; exit 1; }
UPVER=${VER#*:}; UPVER=${UPVER%-*}
DEST=$CACHE/src/$VER
if [[ -f $DEST/.ready ]]; then
    cat "$DEST/.ready"
    exit 0
fi

# deb_src_lists DIR - the machine's sources as deb-src, into DIR.
deb_src_lists() {
    local out=$1 f n=0
    mkdir -p "$out" || return 1
    rm -f "$out"/*
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r $f ]] || continue
        n=$((n + 1))
        sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$out/$n.sources"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r $f ]] || continue
        n=$((n + 1))
        sed -nE 's/^[[:space:]]*deb([[:space:]])/deb-src\1/p' "$f" >"$out/$n.list"
    done
    ((n > 0)) || { say "no apt sources in /etc/apt"; return 1; }
}

# orig_tarball DIR - the upstream tarball apt-get source left in DIR,
# checked against the Sources index and unpacked there.
orig_tarball() {
    local dir=$1 uri="" name="" size="" sum="" f
    # shellcheck disable=SC2034
    read -r uri name size sum < <(cd / && "${APT[@]}" source --print-uris "slurm-wlm=$VER" 2>/dev/null |
        awk '$2 ~ /\.orig\.tar\./')
    f=$dir/$name
    if [[ -n ${name:-} && ! -f $f ]] && grep -qF "${name//+/%2b}  404" "$CACHE/apt-source.log"; then
        say "the mirror has no source of slurm-wlm $VER (404 for $name too)"
        return 3
    fi
    [[ -n ${name:-} && -f $f && $sum == SHA256:* ]] || { say "no upstream tarball either"; return 1; }
    [[ $(sha256sum <"$f" | cut -d' ' -f1) == "${sum#SHA256:}" ]] ||
        { say "$name: SHA256 differs from the Sources index"; return 1; }
    tar -C "$dir" -xf "$f" || { say "cannot unpack $name"; return 1; }
    say "using $name alone (upstream source, SHA256 checked; without Debian's patches)"
}

A=$CACHE/apt
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" || exit 1
deb_src_lists "$A/sources.list.d" || exit 1
APT=(apt-get -q -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$A/sources.list.d"
     -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache" -o "APT::Sandbox::User=root"
     -o "Acquire::Check-Valid-Until=false")
say "apt-get update (deb-src of $(awk '/^URIs:|^deb-src/ { printf "%s ", $2 }' "$A"/sources.list.d/*))"
"${APT[@]}" update >"$CACHE/apt-update.log" 2>&1 || { tail -n 20 "$CACHE/apt-update.log" >&2; say "apt-get update failed"; exit 1; }
rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp" || exit 1
say "apt-get source slurm-wlm=$VER"
if ! (cd "$DEST.tmp" && "${APT[@]}" source "slurm-wlm=$VER") >"$CACHE/apt-source.log" 2>&1; then
    tail -n 20 "$CACHE/apt-source.log" >&2
    say "apt-get source slurm-wlm=$VER failed"
    # A mirror may serve the upstream tarball but not the .dsc and Debian's
    # diff (seen for trixie's 24.11.5-4+deb13u1): the testsuite is upstream's,
    # so the tarball alone will do, once its SHA256 matches the one in the
    # signed Sources index.
    orig_tarball "$DEST.tmp" || exit
fi
tree=$(find "$DEST.tmp" -mindepth 1 -maxdepth 1 -type d -name "slurm-*" | head -n 1)
[[ -n $tree && -d $tree/testsuite/python && -d $tree/testsuite/expect ]] || { say "no testsuite/ in the source of $VER"; exit 1; }
rm -f "$DEST.tmp"/*.orig.tar.* "$DEST.tmp"/*.debian.tar.*     # the tree is what we keep
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST" || exit 1
printf '%s\n' "$DEST/${tree##*/}" >"$DEST/.ready"
say "slurm-wlm $VER (upstream $UPVER) in $DEST/${tree##*/}"
cat "$DEST/.ready"
