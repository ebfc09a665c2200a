#!/usr/bin/env bash
# test_layering.sh - layering.sh can fail: on a copy of the tree it is clean,
# then each rule broken once is reported with its file and line.
# Usage: test_layering.sh SOURCE...   (the Makefile's source lists)
set -u
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/contrib"
cp -r plugin "$T/plugin"
cp -r contrib/cli "$T/contrib/cli"
fail=0
expect() { # expect WHAT: the last run's output names it
	if grep -qF -- "$1" "$T/out"; then echo "ok   - reports: $1"
	else echo "FAIL - did not report: $1"; fail=1; fi
}

if "$here/layering.sh" "$T" "$@" >"$T/out"; then echo "ok   - the tree is clean"
else echo "FAIL - the tree itself:"; cat "$T/out"; fail=1; fi

printf '#include <slurm/spank.h>\n' >>"$T/plugin/rule/engine.c"
printf '#include "store/ledger_int.h"\n' >>"$T/plugin/lifecycle/lifecycle.c"
printf '#include "ledger.h"\n' >>"$T/plugin/rule/step.c"
printf '#include "rule/rule.h"\n' >>"$T/plugin/rule/fallback.c"
printf 'int x;\n' >"$T/plugin/rule/extra.c"
if "$here/layering.sh" "$T" "$@" >"$T/out"; then
	echo "FAIL - a broken tree passed"; fail=1
fi
expect "plugin/rule/engine.c:$(wc -l <"$T/plugin/rule/engine.c"): includes spank.h"
expect "plugin/lifecycle/lifecycle.c:$(wc -l <"$T/plugin/lifecycle/lifecycle.c"): includes \"store/ledger_int.h\""
expect "plugin/rule/step.c:$(wc -l <"$T/plugin/rule/step.c"): includes \"ledger.h\", which is not in plugin/rule/"
expect "plugin/rule/fallback.c:$(wc -l <"$T/plugin/rule/fallback.c"): includes its own folder's public header"
expect "plugin/rule/extra.c: not in any source list"
exit $fail
