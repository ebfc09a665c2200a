#!/bin/bash
# test_corrupt_exhausts.sh - every restore fails (TRIAL_FAIL_RESTORE=1: exit
# 42 = RequeueExit).  After one preemption a job makes exactly R x (M+1)
# restore attempts, all handed the same checkpoint, then the next attempt is
# refused: FAILED 1:0 with a message naming F, M, r, R and the config file.
# The checkpoint directory is never touched.  Two jobs run side by side:
# (M,R) = (1,2) and (0,3), given as sbatch options.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 2;
restore_retry_num = 3;
restore_timeout = 0;' || { fail "cluster up"; summary; }

declare -A M R J DIR OUT SNAP LATEST
for k in a b; do
    case $k in a) M[$k]=1 R[$k]=2 ;; b) M[$k]=0 R[$k]=3 ;; esac
    rb_workdir "corrupt-$k" >/dev/null
    DIR[$k]=$RB_WORKDIR
    J[$k]=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
        --checkpoint-dir=ckpt --max-failures="${M[$k]}" --restore-retries="${R[$k]}" \
        "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch job $k"; summary; }
    OUT[$k]=$RB_WORKDIR/trial-${J[$k]}.out
done
for k in a b; do
    checkq "job ${J[$k]} (M=${M[$k]},R=${R[$k]}) wrote 2 checkpoints" \
        wait_grep "${OUT[$k]}" "^trial\[${J[$k]}\.0\]: checkpoint step 2\$" 60
done
# One preemption (a -c 2 job in `high` preempts both).
checkq "preempted (job ${J[a]})" preempt "${J[a]}" 30
checkq "preempted (job ${J[b]})" wait_restart_count "${J[b]}" 1 30
for k in a b; do
    checkq "job ${J[$k]}: attempt 0 got SIGTERM" wait_grep "${OUT[$k]}" "^trial\[${J[$k]}\.0\]: got SIGTERM" 30
    checkq "job ${J[$k]}: attempt 0 gone" wait_not_running "${J[$k]}" 30
    # Nothing writes to the directory any more: snapshot it before the first restore.
    SNAP[$k]=$(ckpt_snapshot "${DIR[$k]}/ckpt")
    LATEST[$k]=${DIR[$k]}/ckpt/$(readlink "${DIR[$k]}/ckpt/latest")
    if out_attempts "${OUT[$k]}" | grep -qx 1; then
        fail "job ${J[$k]}: snapshot taken before attempt 1 started"
    fi
done

for k in a b; do
    j=${J[$k]} m=${M[$k]} r=${R[$k]} out=${OUT[$k]}
    n_restores=$((r * (m + 1)))
    last=$((n_restores + 1))          # the refused attempt
    tag="job $j (M=$m,R=$r)"
    check "$tag ends" wait_state "$j" 'FAILED|COMPLETED|CANCELLED|TIMEOUT' 240
    expect "$tag: JobState" "$(job_field "$j" JobState)" FAILED
    expect "$tag: ExitCode" "$(job_field "$j" ExitCode)" "1:0"
    expect "$tag: Restarts (attempts 0..$last)" "$(job_field "$j" Restarts)" "$last"
    check_attempts_recorded "$j" "$last" "$tag"
    expect "$tag: restore attempts = R x (M+1) = $n_restores" \
        "$(grep -c "^trial\[$j\.[0-9]*\]: restoring from " "$out")" "$n_restores"
    expect "$tag: attempts that ran the script" "$(out_attempts "$out" | tr '\n' ' ')" "$(seq -s ' ' 0 "$n_restores") "
    # every restore attempt was handed the same, non-empty checkpoint
    handed=$(for ((n = 1; n <= n_restores; n++)); do out_var "$out" "$n" RESTORE_BUDGET_CHECKPOINT || echo "<attempt $n: unset>"; done | sort | uniq -c | sed 's/^ *//')
    expect "$tag: every restore attempt handed the same checkpoint" "$handed" "$n_restores ${LATEST[$k]}"
    check "$tag: that checkpoint is non-empty" test -n "${LATEST[$k]##*/ckpt/}"
    for ((n = 1; n <= n_restores; n++)); do
        ff=$(((n - 1) / r)) rr=$(((n - 1) % r))
        le=failed:42; ((n == 1)) && le=interrupted
        got="$(out_var "$out" "$n" RESTORE_BUDGET_PHASE) F=$(out_var "$out" "$n" RESTORE_BUDGET_FAILURES) r=$(out_var "$out" "$n" RESTORE_BUDGET_RESTORE_FAILURES) left=$(out_var "$out" "$n" RESTORE_BUDGET_RESTORES_LEFT)"
        expect "$tag attempt $n: phase and counters" "$got" "RESTORING F=$ff r=$rr left=$((n_restores - n + 1))"
        expect "$tag attempt $n: LAST_END" "$(out_var "$out" "$n" RESTORE_BUDGET_LAST_END)" "$le"
    done
    # the refusal
    msg=$(grep -m1 'refused' "$out")
    check "$tag: refusal message in the job's output" test -n "$msg"
    for part in "F=$((m + 1))" "M=$m" "r=0" "R=$r" "$RB_CONF"; do
        check "$tag: refusal names '$part'" grep -qF -- "$part" <<<"$msg"
    done
    rb_log "$tag refusal: $msg"
    # the checkpoint directory is byte-identical
    now=$(ckpt_snapshot "${DIR[$k]}/ckpt")
    if [[ "$now" == "${SNAP[$k]}" && -n $now ]]; then pass "$tag: checkpoint dir unchanged (listing + sha256)"
    else fail "$tag: checkpoint dir changed:"; diff <(echo "${SNAP[$k]}") <(echo "$now") | sed 's/^/    /'; fi
    # the ledger
    for kv in failures=$((m + 1)) restore_failures=0 restore_failures_total=$n_restores \
              exhausted=true cur.refused=true cur.attempt=$last "checkpoint=${LATEST[$k]}" \
              cur.limits.max_failures=$m cur.limits.restore_retry_num=$r; do
        expect "$tag: record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
    done
    expect "$tag: start events that ran" "$(ev_count "$j" ' kind=start .* decision=run ')" "$last"
    expect "$tag: refused start event is attempt $last" "$(ev_lines "$j" start | grep ' decision=refuse ' | sed 's/.* attempt=\([0-9]*\) .*/\1/' | tr '\n' ' ')" "$last "
    expect "$tag: restore failures converted into failures" "$(ev_count "$j" ' charge=restore_failure_converted ')" "$((m + 1))"
    expect "$tag: restore failures charged in all" "$(ev_count "$j" ' charge=restore_failure(_converted)? ')" "$n_restores"
    measure "job=$j M=$m R=$r restore_attempts=$(grep -c "restoring from" "$out") attempts=$((last + 1)) refused_attempt=$last"
done

measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
