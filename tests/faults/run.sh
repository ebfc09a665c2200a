#!/usr/bin/env bash
# tests/faults/run.sh - the faults suite: each test breaks the plugin's
# environment on its own private cluster (contrib/cluster/cluster.sh) and
# checks the designed outcome.  Ends with `faults: N passed, N failed`.
#
#   tests/faults/run.sh                       every tests/faults/test_*.sh
#   tests/faults/run.sh state_dir_full        one test
#
# Needs root (it mounts tmpfs under the cluster dir, remounts it read-only,
# and unmounts it whatever happens).
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$HERE/../lib/runner.sh" faults "$HERE" "$HERE/../../contrib/cluster/cluster.sh" "$@"
