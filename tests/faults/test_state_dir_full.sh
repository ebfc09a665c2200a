#!/bin/bash
# test_state_dir_full.sh - state_dir full while a job waits between attempts,
# on_error open and closed: see state_dir_fault.sh.
. "$(dirname "$0")/lib.sh"
FT_FAULT=full
. "$(dirname "$0")/state_dir_fault.sh"
