#!/usr/bin/env bash
# layering.sh - the tree's rules (docs/architecture.md, "The tree"), checked
# by make lint:
#   1. only plugin/spank/ includes spank.h;
#   2. a file of plugin/<folder>/ or contrib/cli/ includes, of the project's
#      headers, its own folder's (plain "name.h") or another folder's public
#      header ("other/other.h"), nothing else;
#   3. every .c under plugin/ and contrib/cli/ is in a source list of the
#      Makefile, and every listed file exists.
#
# Usage: layering.sh ROOT SOURCE...   (make lint passes the Makefile's lists)
# Prints one "file:line: what" per finding; exits 1 if there is any.
set -u
root=$1
shift
cd "$root" || exit 2
bad=0
finding() { printf '%s\n' "$1"; bad=1; }

folders=$(cd plugin && for d in */; do printf '%s\n' "${d%/}"; done)
is_folder() { printf '%s\n' "$folders" | grep -qxF -- "$1"; }

check_file() {
	local f=$1 dir own line n=0 inc
	dir=$(dirname "$f")
	own=${dir#plugin/}
	while IFS= read -r line; do
		n=$((n + 1))
		case $line in
		*'#include'*'spank.h'*)
			[ "$dir" = plugin/spank ] ||
				finding "$f:$n: includes spank.h (only plugin/spank/ may)" ;;
		esac
		[[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]] ||
			continue
		inc=${BASH_REMATCH[1]}
		if [[ $inc == */* ]]; then
			local top=${inc%%/*}
			if ! is_folder "$top" || [ "$inc" != "$top/$top.h" ]; then
				finding "$f:$n: includes \"$inc\": another folder only by its public header (\"folder/folder.h\")"
			elif [ "$top" = "$own" ]; then
				finding "$f:$n: includes its own folder's public header \"$inc\": include the module's header"
			fi
		elif [ ! -e "$dir/$inc" ]; then
			finding "$f:$n: includes \"$inc\", which is not in $dir/"
		fi
	done <"$f"
}

for f in plugin/*/*.[ch] contrib/cli/*.[ch]; do
	check_file "$f"
done

listed=$(printf '%s\n' "$@" | sort -u)
present=$(ls plugin/*/*.c contrib/cli/*.c | sort -u)
while IFS= read -r f; do
	[ -n "$f" ] && finding "$f: not in any source list of the Makefile"
done < <(comm -13 <(printf '%s\n' "$listed") <(printf '%s\n' "$present"))
while IFS= read -r f; do
	[ -n "$f" ] && finding "$f: in a source list of the Makefile, but no such file"
done < <(comm -23 <(printf '%s\n' "$listed") <(printf '%s\n' "$present"))

if [ $bad = 0 ]; then echo "lint-layering: clean"; else echo "lint-layering: findings"; fi
exit $bad
