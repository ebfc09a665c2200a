#!/bin/bash
# test_state_dir_readonly.sh - state_dir readonly while a job waits between attempts,
# on_error open and closed: see state_dir_fault.sh.
. "$(dirname "$0")/lib.sh"
FT_FAULT=readonly
. "$(dirname "$0")/state_dir_fault.sh"
