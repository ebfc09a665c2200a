#!/bin/bash
# test_prologflags.sh - the plugin under each PrologFlags variant the
# release has (Alloc, Contain; RunInJob from 24.05): on a cluster started
# with that flag, a job that completes, one that fails once and is requeued
# (RequeueExit=42), and one that is preempted. The end of each attempt must
# be told apart on Alloc and Contain: completed, failed (charged F += 1)
# and interrupted (not charged).
# Under RunInJob (24.05+) Slurm runs no SPANK prolog or epilog at all (the
# extern step never loads them), so the plugin cannot count attempts: it
# says so at slurmd start, and every job runs untracked, told so on its
# stderr, and is requeued and completes as without the plugin.
# With store = "controller" (docs/stores.md) the batch step does it all:
# under RunInJob the budget counts (a failure charged, a preemption free).
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
JOB=$RB_ROOT/tests/integration/jobs/flagjob.sh

ver=$(slurmd -V | awk '{print $2}')  # sinfo needs a config on 24.11+
[[ $ver =~ ^[0-9]+\.[0-9]+ ]] || { fail "cannot tell the Slurm release (slurmd -V: $ver)"; summary; }
major=${ver%%.*}; minor=${ver#*.}; minor=${minor%%.*}
FLAGS=(Alloc Contain)
(( major * 100 + 10#$minor >= 2405 )) && FLAGS+=(RunInJob)
rb_log "Slurm $ver: PrologFlags variants ${FLAGS[*]}"

run_flag() {
    local flag=$1 jc jf jp
    rb_workdir "flag-$flag" >/dev/null
    jc=$(TRIAL_FLAG_MODE=complete submit_as_user -p low "$JOB") || { fail "$flag: sbatch complete"; return; }
    jf=$(TRIAL_FLAG_MODE=fail_once submit_as_user -p low "$JOB") || { fail "$flag: sbatch fail_once"; return; }
    check "$flag: the completing job completes" wait_state "$jc" COMPLETED 60
    check "$flag: the failing job completes on its rerun" wait_state "$jf" COMPLETED 90
    expect "$flag: complete: end recorded" "$(ev_get "$jc" end 0 end)" completed
    expect "$flag: complete: failures" "$(rec_get "$jc" failures)" 0
    expect "$flag: fail_once: attempt 0 end" "$(ev_get "$jf" end 0 end)" failed:42
    expect "$flag: fail_once: attempt 1 LAST_END" \
        "$(out_var "$RB_WORKDIR/flag-$jf.out" 1 RESTORE_BUDGET_LAST_END)" failed:42
    expect "$flag: fail_once: attempt 1 FAILURES" \
        "$(out_var "$RB_WORKDIR/flag-$jf.out" 1 RESTORE_BUDGET_FAILURES)" 1
    jp=$(TRIAL_FLAG_MODE=preempt submit_as_user -p low "$JOB") || { fail "$flag: sbatch preempt"; return; }
    checkq "$flag: the preempted job runs" wait_grep "$RB_WORKDIR/flag-$jp.out" "^trial\[$jp\.0\]: start" 60
    checkq "$flag: job $jp preempted" preempt "$jp" 30
    check "$flag: the preempted job completes on its rerun" wait_state "$jp" COMPLETED 90
    expect "$flag: preempt: attempt 0 end" "$(ev_get "$jp" end 0 end)" interrupted
    expect "$flag: preempt: attempt 1 LAST_END" \
        "$(out_var "$RB_WORKDIR/flag-$jp.out" 1 RESTORE_BUDGET_LAST_END)" interrupted
    expect "$flag: preempt: attempt 1 FAILURES" \
        "$(out_var "$RB_WORKDIR/flag-$jp.out" 1 RESTORE_BUDGET_FAILURES)" 0
}

# RunInJob: untracked, loudly; the jobs behave as without the plugin.
run_untracked() {
    local flag=$1 jf jp errs
    rb_workdir "flag-$flag" >/dev/null
    check "$flag: slurmd says at start that jobs run untracked" \
        grep -q 'error: restore_budget: PrologFlags=RunInJob is not supported: .* every job runs untracked' \
        "$RB_CLUSTER_DIR/log/slurmd.log"
    jf=$(TRIAL_FLAG_MODE=fail_once submit_as_user -p low "$JOB") || { fail "$flag: sbatch fail_once"; return; }
    check "$flag: the failing job completes on its rerun" wait_state "$jf" COMPLETED 90
    expect "$flag: it was requeued once" "$(job_field "$jf" Restarts)" 1
    check "$flag: the job was told it runs untracked" \
        grep -q "restore_budget: this cluster runs PrologFlags=RunInJob.*job $jf runs without a restore budget" \
        "$RB_WORKDIR/flag-$jf.out"
    check "$flag: the job saw no RESTORE_BUDGET_ variables" \
        bash -c "! grep -q 'RESTORE_BUDGET_' '$RB_WORKDIR/flag-$jf.out'"
    jp=$(TRIAL_FLAG_MODE=preempt submit_as_user -p low "$JOB") || { fail "$flag: sbatch preempt"; return; }
    checkq "$flag: the preempted job runs" wait_grep "$RB_WORKDIR/flag-$jp.out" "^trial\[$jp\.0\]: start" 60
    checkq "$flag: job $jp preempted" preempt "$jp" 30
    check "$flag: the preempted job completes on its rerun" wait_state "$jp" COMPLETED 90
    check "$flag: nothing was written to the ledger" \
        bash -c "[[ -z \$(find '$RB_STATE' -type f | head -n 1) ]]"
    errs=$(grep -E 'error: .*restore_budget: ' "$RB_CLUSTER_DIR/log/slurmd.log" | grep -v 'PrologFlags=RunInJob is not supported' | head -n 3)
    expect "$flag: no other restore_budget error in slurmd.log" "$errs" ""
}

# RunInJob with store = "controller": tracked, no prolog or epilog needed.
run_controller() {
    local jf jp out
    rb_workdir flag-RunInJob-controller >/dev/null
    check "RunInJob+controller: slurmd says RunInJob is supported" \
        grep -q 'restore_budget: PrologFlags=RunInJob: supported (store = "controller"' \
        "$RB_CLUSTER_DIR/log/slurmd.log"
    jf=$(TRIAL_FLAG_MODE=fail_once submit_as_user -p low "$JOB") || { fail "sbatch fail_once"; return; }
    check "RunInJob+controller: the failing job completes on its rerun" wait_state "$jf" COMPLETED 90
    out=$RB_WORKDIR/flag-$jf.out
    expect "RunInJob+controller: fail_once: attempt 1 LAST_END" "$(out_var "$out" 1 RESTORE_BUDGET_LAST_END)" failed:42
    expect "RunInJob+controller: fail_once: attempt 1 FAILURES" "$(out_var "$out" 1 RESTORE_BUDGET_FAILURES)" 1
    jp=$(TRIAL_FLAG_MODE=preempt submit_as_user -p low "$JOB") || { fail "sbatch preempt"; return; }
    checkq "RunInJob+controller: the preempted job runs" wait_grep "$RB_WORKDIR/flag-$jp.out" "^trial\[$jp\.0\]: start" 60
    checkq "RunInJob+controller: job $jp preempted" preempt "$jp" 30
    check "RunInJob+controller: the preempted job completes on its rerun" wait_state "$jp" COMPLETED 90
    out=$RB_WORKDIR/flag-$jp.out
    expect "RunInJob+controller: preempt: attempt 1 LAST_END" "$(out_var "$out" 1 RESTORE_BUDGET_LAST_END)" interrupted
    expect "RunInJob+controller: preempt: attempt 1 FAILURES" "$(out_var "$out" 1 RESTORE_BUDGET_FAILURES)" 0
}

for flag in "${FLAGS[@]}"; do
    t1=$SECONDS
    RB_PROLOGFLAGS=$flag rb_cluster_up 'max_failures = 2;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "$flag: cluster up"; continue; }
    check "$flag: slurm.conf has PrologFlags=$flag" grep -q "^PrologFlags=$flag" "$RB_CLUSTER_DIR/slurm.conf"
    if [[ $flag == RunInJob ]]; then
        run_untracked "$flag"
        RB_EXPECT_PLUGIN_ERRORS=1 rb_final_checks
    else
        run_flag "$flag"
        rb_final_checks
    fi
    measure "flag=$flag duration=$((SECONDS - t1))s"
    _rb_exit_snapshot
    cluster_down
    trap - EXIT
done
if [[ " ${FLAGS[*]} " == *" RunInJob "* ]]; then
    t1=$SECONDS
    if RB_PROLOGFLAGS=RunInJob rb_cluster_up 'store = "controller";
max_failures = 2;
restore_retry_num = 2;
restore_timeout = 0;'; then
        run_controller
        rb_final_checks
        measure "flag=RunInJob store=controller duration=$((SECONDS - t1))s"
    else
        fail "RunInJob+controller: cluster up"
    fi
fi
measure "duration=$((SECONDS - T0))s"
summary
