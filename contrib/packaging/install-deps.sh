#!/bin/sh
# Install the named Debian packages that are not installed yet (needs root).
# Does nothing, and needs no network, when all are present.
set -eu
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
		|| missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "restore_budget: missing packages:$missing; run 'make deps' as root" >&2
	exit 1
fi
echo "restore_budget: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
