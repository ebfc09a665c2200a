#!/bin/bash
# test_account_env.sh - the job's account reaches the prolog in
# SLURM_JOB_ACCOUNT (from the job's credential, on every release), so an
# `accounts` limit applies without asking the controller: the plugin is
# given no squeue at all here (slurm_bindir= an empty directory), yet the
# account's max_failures is the one in force.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;
accounts = { ml = { max_failures = 4; }; };' || { fail "cluster up"; summary; }
EMPTY=$RB_CLUSTER_DIR/nobin
mkdir -p "$EMPTY"
sed -i "s|^required .*|& slurm_bindir=$EMPTY|" "$RB_CLUSTER_DIR/plugstack.conf"
check "slurmd restarted with slurm_bindir=$EMPTY" rb_restart_slurmd

rb_workdir acct >/dev/null; wa=$RB_WORKDIR
ja=$(TRIAL_STEPS=1 submit_as_user -p low -A ml "$RB_ROOT/contrib/jobs/trial.sh") || fail "sbatch -A ml"
rb_workdir noacct >/dev/null; wn=$RB_WORKDIR
jn=$(TRIAL_STEPS=1 submit_as_user -p low "$RB_ROOT/contrib/jobs/trial.sh") || fail "sbatch (no account)"
check "job with -A ml completes" wait_state "$ja" COMPLETED 60
check "job without an account completes" wait_state "$jn" COMPLETED 60
expect "-A ml: the account's max_failures" \
    "$(out_var "$wa/trial-$ja.out" 0 RESTORE_BUDGET_MAX_FAILURES)" 4
expect "-A ml: the ledger knows the account" "$(rec_get "$ja" account)" ml
expect "no account: the default max_failures" \
    "$(out_var "$wn/trial-$jn.out" 0 RESTORE_BUDGET_MAX_FAILURES)" 1
check "the prolog never needed squeue (no 'account unknown' in slurmd.log)" \
    bash -c "! grep -q 'job $ja: account unknown' '$RB_CLUSTER_DIR/log/slurmd.log'"
check "slurmd said at start that squeue is missing" \
    grep -q "restore_budget: $EMPTY/squeue: No such file" "$RB_CLUSTER_DIR/log/slurmd.log"
RB_EXPECT_PLUGIN_ERRORS=1 rb_final_checks
measure "duration=$((SECONDS - T0))s"
summary
