#!/bin/bash
# test_checkpoint_fallback.sh - checkpoint.fallback = true on real Slurm
# (docs/rule.md, "Checkpoint fallback"): a job writes three checkpoints and
# requeues itself; the newest is corrupt (TRIAL_CORRUPT: its restore exits
# 42, RequeueExit). After R = 2 failed restores of it the group is charged
# (F = 1), the ledger marks it bad, and the next attempt is handed the
# second newest with RESTORE_BUDGET_FALLBACK_FROM naming the bad one; it
# restores and completes. The checkpoint directory is byte-identical at the
# end (listing + sha256 of every file; the job writes no ack: TRIAL_NO_ACK).
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
cli() { "$RB_ROOT/build/restore-budget" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" "$@"; }

rb_cluster_up 'max_failures = 2; restore_retry_num = 2; restore_timeout = 0;
checkpoint = { fallback = true; };' || { fail "cluster up"; summary; }

rb_workdir fallback >/dev/null
finish=$RB_WORKDIR/finish
j=$(TRIAL_CORRUPT=checkpoint-3 TRIAL_NO_ACK=1 TRIAL_FINISH="$finish" TRIAL_STEPS=1000 \
    TRIAL_CKPT_EVERY=1 TRIAL_SELF_REQUEUE=0 TRIAL_REQUEUE_AFTER=3 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/tests/lib/trial_job.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
ck=$RB_WORKDIR/ckpt
checkq "job $j: attempt 0 wrote 3 checkpoints and requeued itself" \
    wait_grep "$out" "^trial\[$j\.0\]: self-requeue accepted" 60
# the attempts that restore find the finish flag at once: they write nothing
touch "$finish"
checkq "job $j: attempt 0 gone" wait_restart_count "$j" 1 30
checkq "job $j: attempt 1 started" wait_grep "$out" "^trial\[$j\.1\]: start " 60
snap=$(ckpt_snapshot "$ck")
expect "job $j: three checkpoints, latest -> checkpoint-3" \
    "$(cd "$ck" && ls | tr '\n' ' ')$(readlink "$ck/latest")" "checkpoint-1 checkpoint-2 checkpoint-3 latest checkpoint-3"

check "job $j ends" wait_state "$j" 'FAILED|COMPLETED|CANCELLED|TIMEOUT' 240
expect "job $j: JobState" "$(job_field "$j" JobState)" COMPLETED
expect "job $j: Restarts (attempts 0..3)" "$(job_field "$j" Restarts)" 3
check_attempts_recorded "$j" 3
for n in 1 2; do
    expect "attempt $n: handed the newest" "$(out_var "$out" "$n" RESTORE_BUDGET_CHECKPOINT)" "$ck/checkpoint-3"
    check "attempt $n: its restore failed" grep -q "^trial\[$j\.$n\]: TRIAL_CORRUPT=checkpoint-3: restore of " "$out"
    if out_var "$out" "$n" RESTORE_BUDGET_FALLBACK_FROM >/dev/null; then fail "attempt $n: RESTORE_BUDGET_FALLBACK_FROM set"
    else pass "attempt $n: no RESTORE_BUDGET_FALLBACK_FROM"; fi
done
expect "attempt 3: handed the second newest" "$(out_var "$out" 3 RESTORE_BUDGET_CHECKPOINT)" "$ck/checkpoint-2"
expect "attempt 3: RESTORE_BUDGET_FALLBACK_FROM" "$(out_var "$out" 3 RESTORE_BUDGET_FALLBACK_FROM)" "$ck/checkpoint-3"
expect "attempt 3: F=1 r=0" "F=$(out_var "$out" 3 RESTORE_BUDGET_FAILURES) r=$(out_var "$out" 3 RESTORE_BUDGET_RESTORE_FAILURES)" "F=1 r=0"
check "attempt 3: restored step 2" grep -q "^trial\[$j\.3\]: restored step 2\$" "$out"
check "attempt 3: completed" grep -q "^trial\[$j\.3\]: done: finish flag seen at step 2\$" "$out"
check "the job was told on its stderr" grep -q "restore_budget: checkpoint $ck/checkpoint-3 is marked bad: restoring from $ck/checkpoint-2" "$out"

now=$(ckpt_snapshot "$ck")
if [[ "$now" == "$snap" && -n $now ]]; then pass "job $j: checkpoint dir byte-identical (listing + sha256)"
else fail "job $j: checkpoint dir changed:"; diff <(echo "$snap") <(echo "$now") | sed 's/^/    /'; fi

# the ledger
expect "record: failures" "$(rec_get "$j" failures)" 1
expect "record: fallback.fallbacks" "$(rec_get "$j" fallback.fallbacks)" 1
check "record: checkpoint-3 marked bad (with its identity)" \
    bash -c "grep -qE '^fallback.bad=[0-9]+:[0-9]+:[0-9]+:[0-9]+:.*checkpoint-3\$' '$(rb_rec_path "$j")'"
expect "events: one marked_bad, at attempt 3's start" "$(ev_lines "$j" start 3 | grep -c ' marked_bad=')" 1
expect "events: one report with fallback_from" "$(ev_count "$j" ' kind=report .* fallback_from=')" 1

# the CLI
e=$(cli explain "$j")
rb_log "restore-budget explain $j:"
printf '%s\n' "$e" | sed 's/^/    /' >&2
expect_match "explain: the mark" "$e" "attempt 3 +start +run; .*checkpoint fallback: attempt 2's checkpoint $ck/checkpoint-3 marked bad"
expect_match "explain: the fallback" "$e" "attempt 3 +report +phase RESTORING, checkpoint $ck/checkpoint-2 \\(fallback: the newest, $ck/checkpoint-3, is marked bad\\)"
s=$(cli show "$j")
rb_log "restore-budget show $j:"
printf '%s\n' "$s" | sed 's/^/    /' >&2
expect_match "show: marked bad" "$s" "  bad: +$ck/checkpoint-3"
expect_match "show: fallbacks" "$s" "fallbacks: +1 attempts"
cli show --json "$j" | python3 -c '
import json, sys
f = json.load(sys.stdin)["fallback"]
assert f["fallbacks"] == 1, f
assert [b["path"] for b in f["bad"]] == [sys.argv[1] + "/checkpoint-3"], f
assert f["bad"][0]["ino"] > 0, f
' "$ck" && pass "show --json: the bad list" || fail "show --json: the bad list"
check "metrics: restore_budget_fallbacks_total 1" grep -qE '^restore_budget_fallbacks_total\{cluster="[^"]*"\} 1$' <<<"$(cli metrics)"

measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
