#!/bin/bash
# test_two_node_srun.sh - a 2-node job, each attempt charged exactly once:
# see two_node.sh (this variant: srun).
. "$(dirname "$0")/lib.sh"
MN_VARIANT=srun
. "$(dirname "$0")/two_node.sh"
