#!/bin/bash
# tests/packaging/deb.sh - the .deb, end to end, on this machine (root).
#
#   1. make deb; check its control fields, contents and conffiles;
#   2. dpkg -i; check every file landed, the plugstack.conf.d fragment is
#      inert (commented out), the installed CLI and man pages work;
#   3. start a private cluster (tests/integration/lib.sh) whose plugstack
#      line points at the INSTALLED plugin, with the INSTALLED example config
#      (state_dir moved to a temp dir); sbatch sees the options, a job runs,
#      its ledger record exists, RESTORE_BUDGET_* are in its output, the
#      installed CLI reads the record;
#   4. stop the cluster, dpkg -r (plugin and CLI gone, conffiles kept),
#      dpkg -P (conffiles gone).
# The package is always removed again (EXIT trap), also when a step fails.
# Refuses to run if restore-budget is already installed (or its files exist):
# it would otherwise remove someone's installation.
# Last line: "packaging: N passed, N failed"; exit status 1 on any failure.
# shellcheck disable=SC2317  # pkg_remove, cleanup: called from the EXIT trap
set -u

cd "$(dirname "$0")/../.." || exit 2
if [[ $(id -u) != 0 ]]; then
	echo "packaging: must run as root (dpkg -i, a private Slurm cluster)" >&2
	exit 2
fi
# Nothing of the checkout is read by the cluster or the job user (the plugin
# and CLI are the installed ones, trial.sh is copied into the job's work
# dir): lib.sh need not stage the tree, wherever the checkout is.
RB_STAGED=1
. tests/integration/lib.sh

PKG=restore-budget
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
SO=/usr/lib/$MA/slurm-wlm/restore_budget.so
CLI=/usr/bin/restore-budget
FRAG=/etc/slurm/plugstack.conf.d/restore_budget.conf
EXAMPLE=/etc/slurm/restore_budget.conf.example
MAN1=/usr/share/man/man1/restore-budget.1.gz
MAN8=/usr/share/man/man8/restore_budget.8.gz
PYMOD=/usr/lib/python3/dist-packages/restore_budget/__init__.py
VERSION=$(sed -n 's/^#define RB_CLI_VERSION "\(.*\)"/\1/p' contrib/cli/cli.h)
INSTALLED=0
W=

st=$(dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null)
if [[ -n $st && $st != *not-installed* ]]; then
	echo "packaging: $PKG is already on this machine ($st); remove it first (dpkg -P $PKG)" >&2
	exit 2
fi
for f in "$SO" "$CLI" "$FRAG" "$EXAMPLE" "$PYMOD"; do
	if [[ -e $f ]]; then
		echo "packaging: $f exists and is not from our package; refusing to overwrite it" >&2
		exit 2
	fi
done

# dpkg -r, then dpkg -P, if we installed the package (idempotent, quiet).
pkg_remove() {
	[[ $INSTALLED == 1 ]] || return 0
	dpkg -r "$PKG" >/dev/null 2>&1
	dpkg -P "$PKG" >/dev/null 2>&1
	INSTALLED=0
}

# Whatever happens: stop the cluster, remove the package, drop the temp dir.
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	((rc != 0)) && RB_KEEP=1
	cluster_down
	pkg_remove
	[[ -n $W && ${RB_KEEP:-0} != 1 && $RB_FAILED == 0 ]] && rm -rf "$W"
	exit "$rc"
}
on_traps() {
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
}
on_traps

finish() {
	printf 'packaging: %d passed, %d failed\n' "$RB_PASSED" "$RB_FAILED"
	[[ $RB_FAILED == 0 ]]
	exit
}

# Own helpers: only the committed core of lib.sh (pass, fail, check,
# cluster_up/down, as_user, submit_as_user, wait_state) is relied on.
# want DESC GOT WANT / want_match DESC TEXT ERE / quiet CMD... /
# wait_file_grep FILE ERE TIMEOUT
want() { if [[ "$2" == "$3" ]]; then pass "$1"; else fail "$1 (got '$2', want '$3')"; fi; }
want_match() { if [[ $2 =~ $3 ]]; then pass "$1"; else fail "$1 ('${2:0:300}' does not match /$3/)"; fi; }
quiet() { "$@" >/dev/null 2>&1; }
wait_file_grep() {
	local t0=$SECONDS
	until grep -qE -- "$2" "$1" 2>/dev/null; do
		((SECONDS - t0 >= $3)) && { echo "no /$2/ in $1 after $3 s" >&2; return 1; }
		sleep 0.2
	done
}
# check_grep DESC FILE ERE
check_grep() { if grep -qE -- "$3" "$2" 2>/dev/null; then pass "$1"; else fail "$1 (no /$3/ in $2)"; fi; }

# ---- 1. build and inspect the .deb ---------------------------------------------
W=$(mktemp -d /tmp/rbpkg.XXXXXX) || exit 2
chmod 755 "$W"
if ! make --no-print-directory deb >"$W/make-deb.log" 2>&1; then
	fail "make deb (see $W/make-deb.log)"
	tail -n 20 "$W/make-deb.log"
	RB_KEEP=1
	finish
fi
DEB=$(make -s --no-print-directory deb-name)
check "make deb built $DEB" test -s "$DEB"
want ".deb Package" "$(dpkg-deb -f "$DEB" Package)" "$PKG"
want ".deb Version is VERSION-1" "$(dpkg-deb -f "$DEB" Version)" "$VERSION-1"
want ".deb Architecture" "$(dpkg-deb -f "$DEB" Architecture)" "$(dpkg --print-architecture)"
deps=$(dpkg-deb -f "$DEB" Depends)
# The release of the spank.h the plugin was built against (22.05 on Debian
# 12, 24.11 on trixie, 26.05 on sid): slurmd (>= 22.05), slurmd (<< 22.06).
vhex=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' /usr/include/slurm/slurm_version.h)
series=$(printf '%d\\.%02d' $((vhex >> 16 & 255)) $((vhex >> 8 & 255)))
next=$(printf '%d\\.%02d' $((vhex >> 16 & 255)) $(((vhex >> 8 & 255) + 1)))
want_match ".deb Depends: slurmd of this Slurm release (${series//\\/})" "$deps" "slurmd \\(>= $series\\), slurmd \\(<< $next\\)"
# libconfig9 / libjson-c5 on Debian 12, libconfig11 on trixie and sid.
want_match ".deb Depends: libconfig and libjson-c (dpkg-shlibdeps)" "$deps" '(^|, )libconfig[0-9]+(,| |$).*libjson-c[0-9]+'
dpkg-deb -c "$DEB" >"$W/contents"
want "every file in the .deb is root/root" \
	"$(awk '$2 != "root/root"' "$W/contents")" ""
for f in "$SO" "$CLI" "$FRAG" "$EXAMPLE" "$MAN1" "$MAN8" "$PYMOD" /usr/share/doc/$PKG/copyright; do
	check_grep ".deb contains $f" "$W/contents" " \\.$f\$"
done
dpkg-deb -e "$DEB" "$W/DEBIAN"
want ".deb conffiles: the fragment and the example" \
	"$(LC_ALL=C sort "$W/DEBIAN/conffiles" | tr '\n' ' ')" \
	"$(printf '%s\n' "$FRAG" "$EXAMPLE" | LC_ALL=C sort | tr '\n' ' ')"
check "md5sums match the contents" \
	bash -c "mkdir -p '$W/x' && dpkg-deb -x '$DEB' '$W/x' && cd '$W/x' && md5sum --quiet -c '$W/DEBIAN/md5sums'"
# Debian's python3, not the first python3 on PATH (a private interpreter);
# -B: no bytecode written next to the module.
want "the packaged Python module imports with /usr/bin/python3" \
	"$(cd / && PYTHONPATH="$W/x/usr/lib/python3/dist-packages" /usr/bin/python3 -B -c \
		'import restore_budget as r; print(r.__file__)' 2>&1)" \
	"$W/x$PYMOD"

# ---- 2. install ------------------------------------------------------------------
INSTALLED=1
if ! dpkg -i "$DEB" >"$W/dpkg-i.log" 2>&1; then
	fail "dpkg -i $DEB"
	cat "$W/dpkg-i.log"
	RB_KEEP=1
	finish
fi
pass "dpkg -i $DEB"
want "dpkg status" "$(dpkg-query -W -f='${Status} ${Version}' "$PKG")" "install ok installed $VERSION-1"
want "plugin installed, mode 644" "$(stat -c %a "$SO" 2>&1)" 644
want "CLI installed, mode 755" "$(stat -c %a "$CLI" 2>&1)" 755
for f in "$FRAG" "$EXAMPLE" "$MAN1" "$MAN8"; do check "$f installed" test -f "$f"; done
want "python3 -c 'import restore_budget' finds the installed module" \
	"$(cd / && env -u PYTHONPATH /usr/bin/python3 -B -c \
		'import restore_budget as r; print(r.__file__)' 2>&1)" "$PYMOD"
want "the installed module as an unprivileged user, outside Slurm: FRESH, no checkpoint" \
	"$(cd / && runuser -u nobody -- env -i /usr/bin/python3 -B -c \
		'import restore_budget as r; print(r.phase(), r.checkpoint())' 2>&1)" "FRESH None"
want "the plugin links: no missing library" "$(ldd "$SO" 2>&1 | grep 'not found')" ""
want "the fragment is inert: no active line" "$(grep -vE '^[[:space:]]*(#|$)' "$FRAG")" ""
check_grep "the fragment names the installed plugin (commented out)" "$FRAG" \
	"^#required $SO config=/etc/slurm/restore_budget\\.conf\$"
check "installing created no /etc/slurm/restore_budget.conf" test ! -e /etc/slurm/restore_budget.conf
want_match "installed CLI: --version" "$("$CLI" --version 2>&1)" "^restore-budget $VERSION "
want "installed CLI: the example config is valid" \
	"$("$CLI" check-config "$EXAMPLE" >/dev/null 2>&1; echo $?)" 0
want "man -w restore-budget" "$(man -w restore-budget 2>&1)" "$MAN1"
want "man -w 8 restore_budget" "$(man -w 8 restore_budget 2>&1)" "$MAN8"
want "installed man pages format without warnings" \
	"$(for m in "$MAN1" "$MAN8"; do LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null; done)" ""

# ---- 3. a private cluster with the INSTALLED plugin ------------------------------
# The whole install (README "Install"): the package and one plugstack.conf
# line. No config file, no shared directory: the built-in defaults, store
# "controller" (each budget in its job's AdminComment).
check "no /etc/slurm/restore_budget.conf: the built-in defaults apply" test ! -e /etc/slurm/restore_budget.conf
RB_PLUGSTACK_LINE="required $SO" cluster_up
up=$?
on_traps   # cluster_up installed its own EXIT trap; ours also removes the package
if [[ $up != 0 ]]; then
	fail "cluster up with the installed plugin"
	finish
fi
pass "cluster up with plugstack line: required $SO"
check_grep "slurmd loaded the installed plugin: built-in defaults, store controller" \
	"$RB_CLUSTER_DIR/log/slurmd.log" \
	'restore_budget: config \(built-in defaults\) loaded \(store controller'

help=$(as_user sbatch --help 2>&1)
want_match "sbatch --help lists the plugin's options" "$help" \
	'--max-failures=N +restore_budget: fail the job after N failures'
# The option callback runs in sbatch (--test-only: no job either way).
out=$(as_user sbatch --test-only --max-failures=abc --wrap true 2>&1)
want_match "sbatch: the installed plugin checks its options" "$out" \
	'restore_budget: --max-failures=abc: not a number'

install -m 644 -o "$RB_USER" contrib/jobs/trial.sh "$RB_WORKDIR/trial.sh"
j=$(TRIAL_STEPS=2 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
	--max-failures=1 --restore-retries=2 trial.sh)
if [[ -z $j ]]; then
	fail "sbatch trial.sh"
	finish
fi
check "job $j completes" wait_state "$j" COMPLETED 60
jout=$RB_WORKDIR/trial-$j.out
check_grep "job output: RESTORE_BUDGET_ATTEMPT=0" "$jout" '^trial:   RESTORE_BUDGET_ATTEMPT=0$'
check_grep "job output: RESTORE_BUDGET_PHASE=FRESH" "$jout" '^trial:   RESTORE_BUDGET_PHASE=FRESH$'
check_grep "job output: its own limits (M=1, R=2)" "$jout" '^trial:   RESTORE_BUDGET_MAX_FAILURES=1$'
check_grep "job output: RESTORE_BUDGET_RESTORES_LEFT=4" "$jout" '^trial:   RESTORE_BUDGET_RESTORES_LEFT=4$'
check_grep "job output: the ack file is in the job's checkpoint dir" "$jout" \
	"^trial:   RESTORE_BUDGET_ACK_FILE=$RB_WORKDIR/ckpt/\\.restore_budget-ack\\.rbtest\\.$j\\.0\$"
check "the job's budget is a line of its AdminComment" bash -c \
	"timeout 10 squeue -h --states=all -j $j -O admin_comment:0 | grep -q '^restore_budget\[state\]: v1 '"
show=$("$CLI" --cluster rbtest show "$j" 2>&1)
want_match "installed CLI reads the record (show $j)" "$show" \
	"job: +$j"$'\n'".*failures F/M: +0/1"$'\n'"restores r/R: +0/2"
want_match "installed CLI: the attempt ended completed" "$show" 'ended: +completed'
met=$("$CLI" --cluster rbtest metrics 2>&1)
want_match "installed CLI: metrics count the job" "$met" \
	'restore_budget_jobs_tracked\{cluster="rbtest"\} 1'
check "no node drained, down or failing" bash -c '! timeout 10 sinfo -h -N -o %T | grep -Eq "drain|down|fail"'
want "no restore_budget error in slurmd.log" \
	"$(grep -E 'error: .*restore_budget' "$RB_CLUSTER_DIR/log/slurmd.log" | head -n 3)" ""

# ---- 4. stop, remove, purge -------------------------------------------------------
cluster_down
dpkg -r "$PKG" >"$W/dpkg-r.log" 2>&1
want "dpkg -r $PKG" "$?" 0
want "after dpkg -r: config-files only" "$(dpkg-query -W -f='${Status}' "$PKG" 2>&1)" \
	"deinstall ok config-files"
for f in "$SO" "$CLI" "$MAN1" "$MAN8" "$PYMOD" "${PYMOD%/*}"; do check "after dpkg -r: $f is gone" test ! -e "$f"; done
check "after dpkg -r: the conffiles stay (an admin may have enabled the line)" \
	test -f "$FRAG" -a -f "$EXAMPLE"
dpkg -P "$PKG" >"$W/dpkg-p.log" 2>&1
want "dpkg -P $PKG" "$?" 0
INSTALLED=0
check "after dpkg -P: the conffiles are gone" test ! -e "$FRAG" -a ! -e "$EXAMPLE"
check "after dpkg -P: dpkg does not know the package" \
	bash -c "! dpkg-query -W -f='\${Status}' $PKG 2>/dev/null | grep -q ok"
finish
