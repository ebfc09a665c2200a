#!/usr/bin/env bash
# tests/soak/run.sh - the soak (docs/soak.md): one tests/soak/soak.sh run per
# seed, each on its own private cluster, through tests/lib/runner.sh (staged
# tree, leftover clusters and mounts stopped, no node drained).  Ends with
# `soak: N passed, N failed`.
#
#   SEED=S tests/soak/run.sh          one seed (default: a random one, printed)
#   SOAK_SEEDS="1 2 3" tests/soak/run.sh    a fixed list (the CI variant)
#   SOAK_CONTROLLER_SEEDS="1"       and these with SOAK_STORE=controller
# Other knobs (SOAK_SECONDS, SOAK_JOBS, ...) are soak.sh's.  Needs root.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
seeds=${SOAK_SEEDS:-${SEED:-}}
if [[ -z $seeds ]]; then
    seeds=$(( (RANDOM << 15 | RANDOM) % 1000000 ))
    echo "soak: no SEED given; random seed $seeds"
fi
case " $seeds " in *[!0-9\ ]*) echo "soak: seeds must be numbers: $seeds" >&2
    echo "soak: 0 passed, 1 failed"; exit 1 ;; esac
echo "soak: seeds $seeds (reproduce one: make soak SEED=S SECONDS=${SOAK_SECONDS:-600})"
# one test file per seed, for the runner (outside the tree: not staged)
TD=$(mktemp -d /tmp/rbsoakseeds.XXXXXX) || exit 1
trap 'rm -rf "$TD"' EXIT
for s in $seeds; do
    # shellcheck disable=SC2016 # RB_ROOT is the runner's, expanded in the test
    printf '#!/bin/bash\nSOAK_SEED=%s exec bash "$RB_ROOT/tests/soak/soak.sh"\n' "$s" >"$TD/test_seed_$s.sh"
done
for s in ${SOAK_CONTROLLER_SEEDS:-}; do
    [[ $s =~ ^[0-9]+$ ]] || { echo "soak: seeds must be numbers: $s" >&2; exit 1; }
    # shellcheck disable=SC2016
    printf '#!/bin/bash\nSOAK_STORE=controller SOAK_SEED=%s exec bash "$RB_ROOT/tests/soak/soak.sh"\n' "$s" >"$TD/test_controller_seed_$s.sh"
done
chmod 755 "$TD"
export RB_TEST_TIMEOUT=${RB_TEST_TIMEOUT:-$(( ${SOAK_SECONDS:-600} + 240 ))}
"$HERE/../lib/runner.sh" soak "$TD" "$HERE/../../contrib/cluster/cluster.sh"
