#!/bin/bash
# tests/packaging/lint.sh - both packages checked as a distribution would,
# on this Debian host (make packaging-lint; not in the legs' chroots, which
# have no rpm, rpmlint or lintian):
#
#   1. make deb and make rpm (rpmbuild --nodeps against the host's Slurm);
#   2. rpmlint on the .rpm and its spec, lintian on the .deb: no error, and
#      no warning that docs/packaging.md does not explain (the explained
#      ones are listed below; the suppressed checks are in
#      tests/packaging/rpmlint.toml and tests/packaging/lintian.suppress);
#   3. each package's file list: the plugin in the distribution's Slurm
#      plugin directory, the CLI, both man pages, the example config and
#      the plugstack.conf.d fragment (config files, kept on upgrade), the
#      Python module, the copyright; and nothing else (no build/ or tests/
#      path, no stray file); the RPM's Requires pin this Slurm release.
# Builds and logs in build/packaging-lint/. Nothing is installed.
# Last line: "packaging-lint: N passed, N failed"; exit status 1 on any failure.
set -u

cd "$(dirname "$0")/../.." || exit 2

PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); printf 'ok   - %s\n' "$*"; }
fail() { FAILED=$((FAILED + 1)); printf 'FAIL - %s\n' "$*"; }
finish() {
	printf 'packaging-lint: %d passed, %d failed\n' "$PASSED" "$FAILED"
	[[ $FAILED == 0 ]]
	exit
}
# want DESC GOT WANT
want() { if [[ "$2" == "$3" ]]; then pass "$1"; else fail "$1 (got '$2', want '$3')"; fi; }
# none DESC TEXT: pass when TEXT is empty, else fail and show it
none() {
	if [[ -z $2 ]]; then pass "$1"; else fail "$1:"; printf '       %s\n' "${2//$'\n'/$'\n'       }"; fi
}

# Warnings docs/packaging.md explains ("Warnings left"), one ERE each: real,
# but waiting for a decision of the project (a license, a home page).
RPMLINT_EXPLAINED=(
	'^restore-budget\.[^ :]+: W: no-url-tag$'
	'^restore-budget\.spec: W: invalid-url Source0: restore-budget-[^ ]+\.tar\.gz$'
	'^restore-budget\.[^ :]+: W: invalid-license Unspecified$'
)
LINTIAN_EXPLAINED=()

W=build/packaging-lint
# Its own build tree: packaging-test's build/deb and the legs' trees are
# never touched (and a stale object never ends up in a package).
B=$W/tree
rm -rf "$W"
mkdir -p "$W" || exit 2

missing=""
for t in rpmbuild rpmlint rpm2cpio cpio lintian dpkg-deb eu-strip; do
	command -v "$t" >/dev/null || missing="$missing $t"
done
if [[ -n $missing ]]; then
	fail "tools missing:$missing (make deps installs them: rpm rpmlint lintian elfutils)"
	finish
fi

# ---- 1. build both --------------------------------------------------------------
t0=$SECONDS
if make --no-print-directory BUILD="$B" deb >"$W/make-deb.log" 2>&1; then
	pass "make deb ($((SECONDS - t0)) s)"
else
	fail "make deb (see $W/make-deb.log)"
	tail -n 15 "$W/make-deb.log"
fi
t0=$SECONDS
if make --no-print-directory BUILD="$B" rpm >"$W/make-rpm.log" 2>&1; then
	pass "make rpm ($((SECONDS - t0)) s)"
else
	fail "make rpm (see $W/make-rpm.log)"
	tail -n 15 "$W/make-rpm.log"
fi
DEB=$(make -s --no-print-directory BUILD="$B" deb-name)
RPM=$(make -s --no-print-directory BUILD="$B" rpm-name)
SPEC=$B/rpm/SPECS/restore-budget.spec
[[ -s $DEB ]] || { fail "no $DEB"; finish; }
[[ -s $RPM ]] || { fail "no $RPM"; finish; }

# ---- 2. lint --------------------------------------------------------------------
# lint_report NAME LOG EXPLAINED...: no E: line, every W: line explained.
lint_report() {
	local name=$1 log=$2 line re ok unexplained=""
	shift 2
	none "$name: no error" "$(grep -E '^[^ ]+: E: |^E: ' "$log")"
	while IFS= read -r line; do
		ok=0
		for re in "$@"; do [[ $line =~ $re ]] && ok=1; done
		((ok)) || unexplained+="$line"$'\n'
	done < <(grep -E '^[^ ]+: W: |^W: ' "$log")
	none "$name: every warning is explained in docs/packaging.md" "${unexplained%$'\n'}"
}

rpmlint -c tests/packaging/rpmlint.toml "$RPM" "$SPEC" >"$W/rpmlint.log" 2>&1
want "rpmlint exits 0" "$?" 0
lint_report rpmlint "$W/rpmlint.log" "${RPMLINT_EXPLAINED[@]}"
grep -E '^ [0-9]+ packages? and' "$W/rpmlint.log" | sed 's/^ */       rpmlint: /'

# -I --pedantic: the I: and P: tags are shown (and listed in the docs), not
# counted. lintian refuses nothing as root here; it only says so.
lintian --suppress-tags-from-file tests/packaging/lintian.suppress \
	--display-info --pedantic "$DEB" >"$W/lintian.log" 2>&1
want "lintian exits 0" "$?" 0
lint_report lintian "$W/lintian.log" "${LINTIAN_EXPLAINED[@]}"
grep -E '^[IPX]: ' "$W/lintian.log" | sed 's/^/       lintian: /'

# ---- 3. file lists --------------------------------------------------------------
# check_list NAME LISTFILE REQUIRED-ARRAY-NAME ALLOWED-ERE
check_list() {
	local name=$1 list=$2 ere=$4 f
	local -n req=$3
	for f in "${req[@]}"; do
		if grep -qxF -- "$f" "$list"; then pass "$name contains $f"; else fail "$name lacks $f"; fi
	done
	none "$name: no build/ or tests/ path" "$(grep -E '(^|/)(build|tests)(/|$)' "$list")"
	none "$name: nothing unexpected" "$(grep -vxE -- "$ere" "$list")"
}

# The RPM: %{_libdir}/slurm as EPEL's and SchedMD's Slurm packages.
LIBDIR=$(rpm --eval '%{_libdir}')
rpm -qp --qf '[%{FILENAMES}\n]' "$RPM" >"$W/rpm.list"
RPM_REQ=(
	"$LIBDIR/slurm/restore_budget.so"
	/usr/bin/restore-budget
	/usr/share/man/man1/restore-budget.1.gz
	/usr/share/man/man8/restore_budget.8.gz
	/etc/slurm/restore_budget.conf.example
	/etc/slurm/plugstack.conf.d/restore_budget.conf
	/usr/share/licenses/restore-budget/copyright
	/usr/share/doc/restore-budget/README.md
)
PYRE='/usr/lib/python3\.[0-9]+/site-packages/restore_budget'
RPM_OK="/etc/slurm/plugstack\\.conf\\.d(/restore_budget\\.conf)?|/etc/slurm/restore_budget\\.conf\\.example"
RPM_OK+="|/usr/bin/restore-budget|${LIBDIR//./\\.}/slurm/restore_budget\\.so"
RPM_OK+="|/usr/share/man/man1/restore-budget\\.1\\.gz|/usr/share/man/man8/restore_budget\\.8\\.gz"
RPM_OK+="|/usr/share/doc/restore-budget(/README\\.md|/restore-budget-cli\\.md)?"
RPM_OK+="|/usr/share/licenses/restore-budget(/copyright)?"
RPM_OK+="|$PYRE(/__init__\\.py|/__pycache__(/__init__\\.[a-z0-9.-]+\\.pyc)?)?"
RPM_OK+="|/usr/lib/\\.build-id(/[0-9a-f]{2}(/[0-9a-f]+)?)?"
check_list ".rpm" "$W/rpm.list" RPM_REQ "$RPM_OK"
want ".rpm: the Python module, once" "$(grep -cE "^$PYRE/__init__\\.py\$" "$W/rpm.list")" 1

# %config(noreplace): an admin's edits survive an upgrade (flags "cn").
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$RPM" >"$W/rpm.flags"
for f in /etc/slurm/restore_budget.conf.example /etc/slurm/plugstack.conf.d/restore_budget.conf; do
	want ".rpm: $f is %config(noreplace)" "$(awk -v f="$f" '$2 == f { print $1 }' "$W/rpm.flags")" cn
done
want ".rpm: the copyright is %license" \
	"$(awk '$2 == "/usr/share/licenses/restore-budget/copyright" { print $1 }' "$W/rpm.flags")" l
# The fragment names the packaged plugin, and stays inert (commented out).
frag=$(rpm2cpio "$RPM" | cpio -i --quiet --to-stdout ./etc/slurm/plugstack.conf.d/restore_budget.conf 2>&1)
want ".rpm: the fragment's line names $LIBDIR/slurm/restore_budget.so, commented out" \
	"$(grep -E 'restore_budget\.so' <<<"$frag")" \
	"#required $LIBDIR/slurm/restore_budget.so config=/etc/slurm/restore_budget.conf"
none ".rpm: the fragment has no active line" "$(grep -vE '^[[:space:]]*(#|$)' <<<"$frag")"

# Requires: the Slurm release of the spank.h built against, as the .deb.
vhex=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' /usr/include/slurm/slurm_version.h)
series=$(printf '%d.%02d' $((vhex >> 16 & 255)) $((vhex >> 8 & 255)))
next=$(printf '%d.%02d' $((vhex >> 16 & 255)) $(((vhex >> 8 & 255) + 1)))
want ".rpm Requires: slurm of this Slurm release ($series)" \
	"$(rpm -qp --requires "$RPM" | grep -E '^slurm( |$)' | LC_ALL=C sort | tr '\n' ';')" \
	"slurm < $next;slurm >= $series;"

# The .deb: Debian's Slurm plugin directory, /usr/lib/<multiarch>/slurm-wlm.
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
dpkg-deb -c "$DEB" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' | grep -v '^$' >"$W/deb.list"
DEB_REQ=(
	"/usr/lib/$MA/slurm-wlm/restore_budget.so"
	/usr/bin/restore-budget
	/usr/share/man/man1/restore-budget.1.gz
	/usr/share/man/man8/restore_budget.8.gz
	/etc/slurm/restore_budget.conf.example
	/etc/slurm/plugstack.conf.d/restore_budget.conf
	/usr/share/doc/restore-budget/copyright
	/usr/share/doc/restore-budget/changelog.Debian.gz
	/usr/lib/python3/dist-packages/restore_budget/__init__.py
)
# Every directory on the way to a file is listed too.
DEB_OK="/etc(/slurm(/plugstack\\.conf\\.d(/restore_budget\\.conf)?|/restore_budget\\.conf\\.example)?)?"
DEB_OK+="|/usr|/usr/bin(/restore-budget)?|/usr/lib(/$MA(/slurm-wlm(/restore_budget\\.so)?)?)?"
DEB_OK+="|/usr/lib/python3(/dist-packages(/restore_budget(/__init__\\.py)?)?)?"
DEB_OK+="|/usr/share(/man(/man1(/restore-budget\\.1\\.gz)?|/man8(/restore_budget\\.8\\.gz)?)?)?"
DEB_OK+="|/usr/share/doc(/restore-budget(/README\\.md|/restore-budget-cli\\.md|/copyright|/changelog\\.Debian\\.gz)?)?"
check_list ".deb" "$W/deb.list" DEB_REQ "$DEB_OK"
# That directory is the one Debian's Slurm loads its own plugins from.
slurm_own=$(find "/usr/lib/$MA/slurm-wlm" -maxdepth 1 -name '*.so' ! -name restore_budget.so 2>/dev/null | head -n 1)
if [[ -n $slurm_own ]]; then
	pass ".deb: /usr/lib/$MA/slurm-wlm is Slurm's plugin directory here (${slurm_own##*/})"
else
	fail ".deb: /usr/lib/$MA/slurm-wlm holds no Slurm plugin on this host"
fi
want ".deb conffiles: the fragment and the example" \
	"$(dpkg-deb -I "$DEB" conffiles | LC_ALL=C sort | tr '\n' ' ')" \
	"/etc/slurm/plugstack.conf.d/restore_budget.conf /etc/slurm/restore_budget.conf.example "
frag=$(dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - ./etc/slurm/plugstack.conf.d/restore_budget.conf 2>&1)
want ".deb: the fragment's line names /usr/lib/$MA/slurm-wlm/restore_budget.so, commented out" \
	"$(grep -E 'restore_budget\.so' <<<"$frag")" \
	"#required /usr/lib/$MA/slurm-wlm/restore_budget.so config=/etc/slurm/restore_budget.conf"
finish
