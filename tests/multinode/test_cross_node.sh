#!/bin/bash
# test_cross_node.sh - a requeued job that restarts on ANOTHER node keeps its
# budget: one ledger record in the shared state_dir, counts that continue.
#
# M = 1, R = 3, restore_timeout = 0 (only the job's ack confirms).  A trial
# (tests/lib/trial_job.sh, checkpoints in a work dir both nodes see):
#   attempt 0 on A: FRESH, checkpoints; preempted on A   (rerun pinned to A)
#   attempt 1 on A: RESTORING, holds its ack; preempted   (rerun pinned to B)
#   attempt 2 on B: charged for 1 once: r 0->1; same checkpoint; holds;
#                   preempted on B                        (rerun pinned to A)
#   attempt 3 on A: r 1->2; acknowledges; completes; the ack resets r.
# Where a rerun lands is forced with `scontrol update ExcNodeList=` while the
# job pends after the requeue; the preemptor is pinned with -w.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
M=1 R=3

rb_cluster_up "max_failures = $M;
restore_retry_num = $R;
restore_timeout = 0;" || { fail "cluster up"; summary; }
rb_workdir cross >/dev/null
ck=$RB_WORKDIR/ckpt
hold=$RB_WORKDIR/hold-ack
: >"$hold"

j=$(TRIAL_STEPS=8 TRIAL_CKPT_EVERY=1 TRIAL_HOLD_ACK=$hold \
    submit_as_user -p low --checkpoint-dir=ckpt "$MN_JOB") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
check "attempt 0 runs" wait_state "$j" RUNNING 60
A=$(job_field "$j" NodeList)
B=$(mn_other "$A")
rb_log "job $j: attempt 0 on A=$A; B=$B"
check "two distinct nodes ($A, $B)" test -n "$A" -a -n "$B" -a "$A" != "$B"
checkq "attempt 0 writes 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60

# one_hop N FROM TO - preempt attempt N on FROM; its rerun N+1 must run on TO.
declare -a T_RERUN
one_hop() {
    local n=$1 from=$2 to=$3 t0 not
    not=$(mn_other "$to")
    t0=$(rb_now)
    checkq "attempt $n preempted on $from" mn_preempt_on "$j" "$from" 30
    check "attempt $n+1 pinned to $to (ExcNodeList=$not)" mn_exclude "$j" "$not"
    checkq "attempt $n got SIGTERM" wait_grep "$out" "^trial\[$j\.$n\]: got SIGTERM" 30
    check "attempt $((n + 1)) runs on $to" mn_wait_on "$j" "$to" 90
    checkq "attempt $((n + 1)) started (its output)" wait_grep "$out" "^trial\[$j\.$((n + 1))\]: start on " 30
    T_RERUN[n + 1]=$(rb_since "$t0")
    rb_log "attempt $((n + 1)) on $to, $(job_field "$j" NodeList), ${T_RERUN[n + 1]}s after the preemption"
}

one_hop 0 "$A" "$A"
c1=$ck/$(readlink "$ck/latest")       # what attempt 1 restores from
checkq "attempt 1 holds its ack (RESTORING)" wait_grep "$out" "^trial\[$j\.1\]: holding the acknowledgement" 30
one_hop 1 "$A" "$B"
checkq "attempt 2 holds its ack (RESTORING)" wait_grep "$out" "^trial\[$j\.2\]: holding the acknowledgement" 30
one_hop 2 "$B" "$A"
checkq "attempt 3 holds its ack (RESTORING)" wait_grep "$out" "^trial\[$j\.3\]: holding the acknowledgement" 30
rm -f "$hold"
check "job $j completes" wait_state "$j" COMPLETED 90
expect "ExitCode" "$(job_field "$j" ExitCode)" "0:0"
expect "Restarts" "$(job_field "$j" Restarts)" 3

# ---- what each attempt saw -------------------------------------------------------
want_node=([0]=$A [1]=$A [2]=$B [3]=$A)
for n in 0 1 2 3; do
    check "attempt $n ran on ${want_node[n]} (its hostname)" \
        grep -q "^trial\[$j\.$n\]: start on ${want_node[n]} " "$out"
done
step1=$(cat "$c1" 2>/dev/null)
for n in 1 2 3; do
    r=$((n - 1))
    expect "attempt $n: ATTEMPT" "$(out_var "$out" "$n" RESTORE_BUDGET_ATTEMPT)" "$n"
    expect "attempt $n: PHASE" "$(out_var "$out" "$n" RESTORE_BUDGET_PHASE)" RESTORING
    expect "attempt $n: CHECKPOINT (the same on both nodes)" "$(out_var "$out" "$n" RESTORE_BUDGET_CHECKPOINT)" "$c1"
    check "attempt $n read step $step1 from it" grep -q "^trial\[$j\.$n\]: read step $step1 from $c1\$" "$out"
    expect "attempt $n: FAILURES" "$(out_var "$out" "$n" RESTORE_BUDGET_FAILURES)" 0
    expect "attempt $n: MAX_FAILURES" "$(out_var "$out" "$n" RESTORE_BUDGET_MAX_FAILURES)" "$M"
    expect "attempt $n: RESTORE_FAILURES" "$(out_var "$out" "$n" RESTORE_BUDGET_RESTORE_FAILURES)" "$r"
    expect "attempt $n: RESTORE_RETRY_NUM" "$(out_var "$out" "$n" RESTORE_BUDGET_RESTORE_RETRY_NUM)" "$R"
    expect "attempt $n: RESTORES_LEFT" "$(out_var "$out" "$n" RESTORE_BUDGET_RESTORES_LEFT)" $(((M + 1) * R - r))
    expect "attempt $n: LAST_END" "$(out_var "$out" "$n" RESTORE_BUDGET_LAST_END)" interrupted
    expect "attempt $n: ACK_FILE" "$(out_var "$out" "$n" RESTORE_BUDGET_ACK_FILE)" "$(rb_ack_path_of "$j" "$n")"
done
check "attempt 3 restored and acknowledged" grep -q "^trial\[$j\.3\]: acknowledged restore" "$out"
check "attempt 3 finished" grep -q "^trial\[$j\.3\]: done: 8 steps" "$out"

# ---- the ledger: one record, every attempt charged once ------------------------------
# (the preemptors are jobs too, with records of their own)
recs=$(find "$RB_STATE" -name "$j.rec" | sort)
expect "exactly one record of job $j in the shared state_dir" "$recs" "$(rb_rec_path "$j")"
for n in 0 1 2 3; do
    expect "attempt $n: one kind=start event" "$(ev_count "$j" " kind=start attempt=$n( |$)")" 1
    expect "attempt $n: one kind=end event" "$(ev_count "$j" " kind=end attempt=$n( |$)")" 1
done
expect "start 1: charge" "$(ev_get "$j" start 1 charge)" none
expect "start 1: charged attempt" "$(ev_get "$j" start 1 charged)" 0
expect "start 2 (on $B): charged attempt" "$(ev_get "$j" start 2 charged)" 1
expect "start 2 (on $B): charge" "$(ev_get "$j" start 2 charge)" restore_failure
expect "start 2 (on $B): restore_failures" "$(ev_get "$j" start 2 restore_failures)" "0->1"
expect "start 3 (back on $A): charged attempt" "$(ev_get "$j" start 3 charged)" 2
expect "start 3 (back on $A): charge" "$(ev_get "$j" start 3 charge)" restore_failure
expect "start 3 (back on $A): restore_failures" "$(ev_get "$j" start 3 restore_failures)" "1->2"
for n in 1 2 3; do
    expect "report $n: checkpoint" "$(ev_get "$j" report "$n" checkpoint)" "$c1"
done
for n in 0 1 2; do
    expect "end $n: interrupted" "$(ev_get "$j" end "$n" end)" interrupted
done
expect "end 3: completed" "$(ev_get "$j" end 3 end)" completed
expect "end 3: confirmed" "$(ev_get "$j" end 3 confirmed)" ack
for kv in failures=0 restore_failures=0 restore_failures_total=2 failures_total=0 \
          interruptions=3 exhausted=false cur.attempt=3 cur.end=completed \
          "checkpoint=$c1"; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done
if [[ -x $RB_CLI ]]; then
    show=$("$RB_CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" show "$j" 2>&1)
    check "restore-budget show $j works" test $? -eq 0
    rb_log "restore-budget show $j:"$'\n'"$show"
    expl=$("$RB_CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" explain "$j" 2>&1)
    rb_log "restore-budget explain $j:"$'\n'"$expl"
fi

measure "rerun_after_preempt=${T_RERUN[1]}s,${T_RERUN[2]}s,${T_RERUN[3]}s nodes=$A,$A,$B,$A duration=$((SECONDS - T0))s"
mn_final_checks
summary
