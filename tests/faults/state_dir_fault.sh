# shellcheck shell=bash
# state_dir_fault.sh - the body of test_state_dir_{full,readonly,gone}.sh
# (sourced; FT_FAULT = full, readonly or gone).
#
# For on_error = "open", then "closed": a trial runs attempt 0 (tracked),
# is requeued held (it "waits between attempts"), the state_dir breaks:
#   full:     state_dir is a 1 MiB tmpfs; a file fills it (ENOSPC)
#   readonly: the same tmpfs, remounted read-only (EROFS)
#   gone:     state_dir renamed away (ENOENT)
# then the job is released and attempt 1 starts.  As designed (docs/rule.md,
# "Limits"; docs/architecture.md, "Where each event happens";
# tests/faults/lib.sh): open -> attempt 1 runs untracked,
# COMPLETED, the error is in slurmd.log with the path and the cause; closed ->
# attempt 1 refused with a clear message in the job's stderr, FAILED 1:0.
# Always: slurmd up (same process), no node drained, and once the fault is
# undone the job's record is unchanged (nothing torn) and a new job is
# tracked again.
T0=$SECONDS
BASE='max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;'
case $FT_FAULT in
    full)     cause='No space left on device' ;;
    readonly) cause='Read-only file system' ;;
    gone)     cause='No such file or directory' ;;
    *) echo "state_dir_fault.sh: FT_FAULT must be full, readonly or gone" >&2; exit 2 ;;
esac

rb_cluster_up "$BASE" || { fail "cluster up"; summary; }
slog=$RB_CLUSTER_DIR/log/slurmd.log
slurmd0=$(rb_daemon_pid slurmd)
SD=$RB_CLUSTER_DIR/rb/sd
if [[ $FT_FAULT == gone ]]; then
    mkdir -m 755 "$SD"
else
    check "a 1 MiB tmpfs on $SD" ft_mount_tmpfs "$SD" 1m
fi
RB_STATE=$SD

break_it() {
    case $FT_FAULT in
        full)     ft_fill "$SD" ;;
        readonly) mount -o remount,ro "$SD" ;;
        gone)     mv "$SD" "$SD.gone" ;;
    esac
}
mend_it() {
    case $FT_FAULT in
        full)     rm -f "$SD/zz-fill" ;;
        readonly) mount -o remount,rw "$SD" ;;
        gone)     mv "$SD.gone" "$SD" ;;
    esac
}

declare -A T_OUTCOME
for mode in open closed; do
    rb_write_config "state_dir = \"$SD\";
$BASE
on_error = \"$mode\";"
    rb_workdir "$mode" >/dev/null     # its own checkpoint dir
    j=$(ft_submit) || { fail "$mode: sbatch"; continue; }
    out=$RB_WORKDIR/trial-$j.out
    checkq "$mode: attempt 0 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 1\$" 60
    check "$mode: attempt 0 tracked" test -n "$(attempt_env "$out" 0)"
    check "$mode: job $j parked between attempts (requeuehold)" ft_park "$j"
    expect "$mode: attempt 0's end recorded" "$(rec_get "$j" cur.end)" interrupted
    rec_sum=$(sha256sum <"$(rb_rec_path "$j")")
    n0=$(log_len "$slog")
    check "$mode: state_dir broken ($FT_FAULT)" break_it
    t0=$(rb_now)
    check "$mode: job released" ft_release "$j"
    checkq "$mode: job $j ends" wait_state "$j" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 90
    if [[ $mode == open ]]; then
        expect "$mode: JobState" "$(job_field "$j" JobState)" COMPLETED
        expect "$mode: ExitCode" "$(job_field "$j" ExitCode)" "0:0"
        check "$mode: attempt 1 ran" grep -q "^trial\[$j\.1\]: done: 3 steps" "$out"
        # untracked = no RESTORE_BUDGET_* at all (stale values would be worse
        # than none: they describe attempt 0)
        expect "$mode: attempt 1 untracked (no RESTORE_BUDGET_* in its environment)" \
            "$(attempt_env "$out" 1 | tr '\n' ' ')" ""
    else
        expect "$mode: JobState" "$(job_field "$j" JobState)" FAILED
        expect "$mode: ExitCode" "$(job_field "$j" ExitCode)" "1:0"
        check "$mode: attempt 1's script never ran" bash -c "! grep -q '^trial\[$j\.1\]: start' '$out'"
        msg=$(grep -m1 -E "restore_budget: job $j .*refused" "$out")
        check "$mode: the refusal is explained in the job's stderr" \
            grep -qE "restore_budget: job $j refused: .*on_error = \"closed\"" "$out"
        rb_log "$mode: job's stderr: ${msg:-(none)}"
    fi
    T_OUTCOME[$mode]=$(rb_since "$t0")
    wait_not_running "$j" 30 >/dev/null
    errs=$(new_log_lines "$slog" "$n0" | grep -E 'error: .*restore_budget: ')
    rb_log "$mode: slurmd.log restore_budget errors:"$'\n'"$errs"
    check "$mode: slurmd.log: an error naming $SD and '$cause'" \
        grep -qE "$SD.*$cause|$cause.*$SD" <<<"$errs"
    expect "$mode: slurmd is the same process" "$(rb_daemon_pid slurmd)" "$slurmd0"
    check "$mode: no node drained" rb_nodes_ok
    check "$mode: state_dir mended" mend_it
    expect "$mode: job $j's record unchanged by the failed attempt" \
        "$(sha256sum <"$(rb_rec_path "$j")")" "$rec_sum"
    checkq "$mode: restore-budget show $j reads it" \
        "$RB_CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" show "$j"
done

# After the fault: a new job is tracked again, with a fresh budget.
rb_workdir after >/dev/null
j=$(TRIAL_STEPS=2 ft_submit) || fail "after: sbatch"
out=$RB_WORKDIR/trial-$j.out
check "after: job $j completes" wait_state "$j" COMPLETED 60
expect "after: tracked (ATTEMPT)" "$(out_var "$out" 0 RESTORE_BUDGET_ATTEMPT)" 0
wait_not_running "$j" 30 >/dev/null
expect "after: its end recorded" "$(rec_get "$j" cur.end)" completed

measure "fault=$FT_FAULT release_to_end_open=${T_OUTCOME[open]:-?}s release_to_end_closed=${T_OUTCOME[closed]:-?}s duration=$((SECONDS - T0))s"
ft_final_checks
summary
