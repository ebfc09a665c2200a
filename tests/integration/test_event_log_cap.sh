#!/bin/bash
# test_event_log_cap.sh - a job's event log stays within its 64 KiB cap
# (docs/architecture.md, "The ledger"; issue 19, "Bounded growth").
#   rbuser's job requeues itself (scontrol requeue: any user may) 8 times,
#   each attempt handed a checkpoint whose path is ~3.6 KB of '=' (~11 KB
#   once escaped; not '%', which --checkpoint-dir expands: %% is one '%'),
#   so the log crosses its cap by attempt 6.
#   On e9a1c74 the path was logged twice an attempt and the
#   log grew ~13 KB an attempt without bound: over 64 KiB by attempt 5. Now
#   the older attempts fold into one summary line: the log stays under the
#   cap, its first line is the summary, every attempt's checkpoint is named
#   once, and `explain` (as rbuser) shows the summary and the record's
#   totals.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
CLI=$RB_ROOT/build/restore-budget
LAST=8
CAP=65536

rb_cluster_up 'max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "cluster up"; summary; }
cli() { "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" "$@"; }

rb_workdir selfrq >/dev/null
# fifteen levels of 240 '=': the checkpoint path is ~3.6 KB (PATH_MAX is
# 4096), 3x once escaped
eq=$(printf '=%.0s' $(seq 240))
ck=ck$(printf "/$eq%.0s" $(seq 15))
check "rbuser makes a deep checkpoint dir" as_user mkdir -p "$ck"
j=$(RB_JOB_LAST=$LAST RB_JOB_CKDIR=$RB_WORKDIR/$ck submit_as_user -p low \
    --checkpoint-dir="$ck" "$RB_ROOT/tests/integration/jobs/selfrequeue.sh") ||
    { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
log=$(rb_evlog_path "$j")

# the log's size after each attempt (polled), the largest seen
most=0
t1=$SECONDS
while ((SECONDS - t1 < 240)); do
    s=$(stat -c %s "$log" 2>/dev/null || echo 0)
    ((s > most)) && most=$s
    grep -q "^trial\[$j\.$LAST\]: exiting 0" "$out" 2>/dev/null && break
    sleep 0.5
done
check "job $j ran its $((LAST + 1)) attempts" wait_grep "$out" "^trial\[$j\.$LAST\]: exiting 0\$" 5
check "job $j COMPLETED" wait_state "$j" COMPLETED 60
s=$(stat -c %s "$log" 2>/dev/null || echo 0)
((s > most)) && most=$s
rb_log "event log: ${most} bytes at most, ${s} at the end"
measure "log_bytes_max=$most log_bytes_end=$s attempts=$((LAST + 1))"
check "the event log never crossed the ${CAP}-byte cap (largest seen: $most bytes)" test "$most" -le "$CAP"
check "its first line is the one summary of the older attempts" \
    test "$(head -n 1 "$log" | grep -c ' kind=folded attempts=0-')" = 1 -a "$(grep -c ' kind=folded ' "$log")" = 1
# attempt n is handed checkpoint-(n-1), which attempt n-1 wrote: each is
# named once (its report, or the summary); e9a1c74 named it again in the
# next attempt's start event
twice=
for ((k = 0; k < LAST; k++)); do
    c=$(grep -o "checkpoint-$(printf %03d "$k")[ ]" "$log" | wc -l)
    ((c > 1)) && twice+=" checkpoint-$(printf %03d "$k")x$c"
done
expect "no checkpoint is named twice in the log" "${twice:-none}" none
expect "the newest one handed out is named once" \
    "$(grep -o "checkpoint-$(printf %03d $((LAST - 1)))[ ]" "$log" | wc -l)" 1
ev=$(as_user "$CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" explain "$j")
expect_match "rbuser's explain: the summary as one line" "$ev" \
    "attempts 0-[0-9]+ folded: [0-9]+ events; [0-9]+ starts \(0 refused\)"
expect_match "rbuser's explain: the totals are the record's" "$ev" \
    "totals, as the record counts them: failures charged $(rec_get "$j" failures_total) \(fatal exit codes 0\), restore failures $(rec_get "$j" restore_failures_total), interruptions $(rec_get "$j" interruptions), granted 0"
expect "the record counts every self-requeue an interruption" "$(rec_get "$j" interruptions)" "$LAST"

measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
