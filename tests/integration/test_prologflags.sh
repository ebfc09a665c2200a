#!/bin/bash
# test_prologflags.sh - the plugin under each PrologFlags variant the
# release has (Alloc, Contain; RunInJob from 24.05): on a cluster started
# with that flag, a job that completes, one that fails once and is requeued
# (RequeueExit=42), and one that is preempted. The end of each attempt must
# be told apart on every variant: completed, failed (charged F += 1) and
# interrupted (not charged). Under RunInJob the epilog sees neither the exit
# code nor a bumped restart count, so the batch step records the end.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
JOB=$RB_ROOT/tests/integration/jobs/flagjob.sh

ver=$(sinfo --version | awk '{print $2}')
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
    if [[ $flag == RunInJob ]]; then
        check "$flag: slurmd says so at start" grep -q 'restore_budget: PrologFlags=RunInJob: the epilog cannot see' \
            "$RB_CLUSTER_DIR/log/slurmd.log"
    fi
}

for flag in "${FLAGS[@]}"; do
    t1=$SECONDS
    RB_PROLOGFLAGS=$flag rb_cluster_up 'max_failures = 2;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "$flag: cluster up"; continue; }
    check "$flag: slurm.conf has PrologFlags=$flag" grep -q "^PrologFlags=$flag" "$RB_CLUSTER_DIR/slurm.conf"
    run_flag "$flag"
    rb_final_checks
    measure "flag=$flag duration=$((SECONDS - t1))s"
    _rb_exit_snapshot
    cluster_down
    trap - EXIT
done
measure "duration=$((SECONDS - T0))s"
summary
