#!/usr/bin/env bash
# tests/integration/run.sh - the integration suite on real private clusters.
#
#   tests/integration/run.sh                   every tests/integration/test_*.sh
#   RB_INTEGRATION_TESTS="clean corrupt_exhausts" tests/integration/run.sh
#
# Each test runs in its own process and starts its own cluster (lib.sh:
# rb_cluster_up / cluster_down).  The runner (tests/lib/runner.sh, shared with
# the multinode, faults and torch suites) sums their check counts, prints
# per-test durations and the scenarios' measurements, checks that no node was
# drained in any cluster, stops any cluster a test left running, and ends
# with the line `integration: N passed, N failed` (exit 1 on any failure).
#
# Knobs: RB_INTEGRATION_TESTS (names: clean, test_clean or test_clean.sh;
# space or comma separated), RB_TEST_TIMEOUT (seconds per test, default 300),
# RB_NO_BUILD=1 (do not run make for the plugin), RB_CLUSTER_SH (the cluster
# script, default contrib/cluster/cluster.sh).  Needs root.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2086 # the names are words
exec "$HERE/../lib/runner.sh" integration "$HERE" "${RB_CLUSTER_SH:-$HERE/../../contrib/cluster/cluster.sh}" \
    ${RB_INTEGRATION_TESTS:-}
