#!/bin/bash
# test_state_dir_gone.sh - state_dir gone while a job waits between attempts,
# on_error open and closed: see state_dir_fault.sh.
. "$(dirname "$0")/lib.sh"
FT_FAULT=gone
. "$(dirname "$0")/state_dir_fault.sh"
