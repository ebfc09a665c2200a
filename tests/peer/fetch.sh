#!/usr/bin/env bash
# tests/peer/fetch.sh - the running Slurm release's own source (its
# testsuite/), fetched once with `apt-get source` and reused afterwards.
#
#   tests/peer/fetch.sh CACHE     prints the source tree's path (CACHE/src/slurm-wlm-*)
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

A=$CACHE/apt
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" || exit 1
deb_src_lists "$A/sources.list.d" || exit 1
APT=(apt-get -q -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$A/sources.list.d"
     -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache" -o "APT::Sandbox::User=root"
     -o "Acquire::Check-Valid-Until=false")
say "apt-get update (deb-src of $(cat "$A"/sources.list.d/* | awk '/^URIs:|^deb-src/ { printf "%s ", ($1 == "URIs:" ? $2 : $2) }'))"
"${APT[@]}" update >"$CACHE/apt-update.log" 2>&1 || { tail -n 20 "$CACHE/apt-update.log" >&2; say "apt-get update failed"; exit 1; }
rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp" || exit 1
say "apt-get source slurm-wlm=$VER"
if ! (cd "$DEST.tmp" && "${APT[@]}" source "slurm-wlm=$VER") >"$CACHE/apt-source.log" 2>&1; then
    tail -n 20 "$CACHE/apt-source.log" >&2
    say "apt-get source slurm-wlm=$VER failed"
    exit 1
fi
tree=$(find "$DEST.tmp" -mindepth 1 -maxdepth 1 -type d -name "slurm-wlm-*" | head -n 1)
[[ -n $tree && -d $tree/testsuite/python && -d $tree/testsuite/expect ]] || { say "no testsuite/ in the source of $VER"; exit 1; }
rm -f "$DEST.tmp"/*.orig.tar.* "$DEST.tmp"/*.debian.tar.*     # the tree is what we keep
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST" || exit 1
printf '%s\n' "$DEST/${tree##*/}" >"$DEST/.ready"
say "slurm-wlm $VER (upstream $UPVER) in $DEST/${tree##*/}"
cat "$DEST/.ready"
