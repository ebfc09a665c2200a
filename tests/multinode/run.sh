#!/usr/bin/env bash
# tests/multinode/run.sh - the multinode suite: a two-node private cluster
# (contrib/cluster/multinode.sh) per test.  Ends with
# `multinode: N passed, N failed`.
#
#   tests/multinode/run.sh                    every tests/multinode/test_*.sh
#   tests/multinode/run.sh cross_node         one test (names as in run.sh)
#
# Needs root, Debian's slurmctld slurmd slurm-client munge, and unshare
# (util-linux) for the per-node UTS namespaces.  About 1.5 minutes.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$HERE/../lib/runner.sh" multinode "$HERE" "$HERE/../../contrib/cluster/multinode.sh" "$@"
