#!/bin/bash
# test_account_env.sh - the job's account reaches the prolog in
# SLURM_JOB_ACCOUNT (from the job's credential, on every release), so an
# `accounts` limit applies without asking the controller: the plugin is
# given no squeue at all here (slurm_bindir= an empty directory), yet the
# account's max_failures is the one in force.
# The job also sees RESTORE_BUDGET_REQUEUE_EXIT (docs/rule.md, "The requeue
# code"): without requeue_exit, the first of slurm.conf's RequeueExit (42
# here); with requeue_exit = 75, 75, and check-config warns that 75 is not
# in RequeueExit.
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
expect "no requeue_exit: the job sees RequeueExit's first code" \
    "$(out_var "$wa/trial-$ja.out" 0 RESTORE_BUDGET_REQUEUE_EXIT)" 42
expect "no requeue_exit, no account: the same code" \
    "$(out_var "$wn/trial-$jn.out" 0 RESTORE_BUDGET_REQUEUE_EXIT)" 42

rb_write_config 'max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;
requeue_exit = 75;
accounts = { ml = { max_failures = 4; }; };'
rb_workdir requeue >/dev/null; wr=$RB_WORKDIR
jr=$(TRIAL_STEPS=1 submit_as_user -p low -A ml --checkpoint-dir=ck "$RB_ROOT/contrib/jobs/trial.sh") || fail "sbatch (requeue_exit = 75)"
check "job with requeue_exit = 75 completes" wait_state "$jr" COMPLETED 60
expect "--checkpoint-dir=ck: the job sees it made absolute" \
    "$(out_var "$wr/trial-$jr.out" 0 RESTORE_BUDGET_CHECKPOINT_DIR)" "$wr/ck"
expect "no --checkpoint-dir: no RESTORE_BUDGET_CHECKPOINT_DIR" \
    "$(out_var "$wn/trial-$jn.out" 0 RESTORE_BUDGET_CHECKPOINT_DIR)" ""
expect "requeue_exit = 75: the job sees 75" \
    "$(out_var "$wr/trial-$jr.out" 0 RESTORE_BUDGET_REQUEUE_EXIT)" 75
cc_err=$(SLURM_CONF=$RB_CLUSTER_DIR/slurm.conf "$RB_ROOT/build/restore-budget" \
    check-config "$RB_CONF" 2>&1 >/dev/null)
expect_match "check-config warns: 75 is not in the cluster's RequeueExit=42" "$cc_err" \
    "warning: requeue_exit = 75 in $RB_CONF is not in RequeueExit=42 of $RB_CLUSTER_DIR/slurm.conf"
check "the prolog never needed squeue (no 'account unknown' in slurmd.log)" \
    bash -c "! grep -qE 'job ($ja|$jr): account unknown' '$RB_CLUSTER_DIR/log/slurmd.log'"
check "slurmd said at start that squeue is missing" \
    grep -q "restore_budget: $EMPTY/squeue: No such file" "$RB_CLUSTER_DIR/log/slurmd.log"
RB_EXPECT_PLUGIN_ERRORS=1 rb_final_checks
measure "duration=$((SECONDS - T0))s"
summary
