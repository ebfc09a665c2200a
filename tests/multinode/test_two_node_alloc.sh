#!/bin/bash
# test_two_node_alloc.sh - a 2-node job, each attempt charged exactly once:
# see two_node.sh (this variant: alloc).
. "$(dirname "$0")/lib.sh"
MN_VARIANT=alloc
. "$(dirname "$0")/two_node.sh"
