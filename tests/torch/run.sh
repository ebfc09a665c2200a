#!/usr/bin/env bash
# tests/torch/run.sh - the PyTorch suite (contrib/jobs/torch_trial.py on a
# real private cluster, tests/torch/test_*.sh).  Host only: it needs
# Debian's python3-torch (`make deps`).  Ends with `torch: N passed, N failed`.
#
#   tests/torch/run.sh                 every tests/torch/test_*.sh
#   tests/torch/run.sh torch_trial     one test
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$HERE/../lib/runner.sh" torch "$HERE" "$HERE/../../contrib/cluster/cluster.sh" "$@"
