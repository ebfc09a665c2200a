#!/bin/bash
# test_options_caps.sh - the four sbatch options: listed by --help, honoured
# within the caps, refused by sbatch over a cap (message names the cap and the
# config file), refused when garbage; over a cap that sbatch cannot check
# (config unreadable for the user) the value is clamped at run time with a
# warning in the job's stderr.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;
limits = { max_failures = 4; restore_retry_num = 5; allow_unlimited = false; };' || { fail "cluster up"; summary; }
rb_workdir options >/dev/null

njobs() { timeout 10 squeue -h -t all -o %i 2>/dev/null | wc -l; }

# --help
help=$(as_user sbatch --help 2>&1)
for o in max-failures restore-retries checkpoint-dir restore-timeout; do
    check "sbatch --help lists --$o" grep -qE -- "--$o=" <<<"$help"
done

# within the caps (at the caps): honoured
j=$(TRIAL_STEPS=0 submit_as_user -p low --max-failures=4 --restore-retries=5 --restore-timeout=77 \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || fail "sbatch within caps refused"
out=$RB_WORKDIR/trial-$j.out
check "job within caps completes" wait_state "$j" COMPLETED 60
expect "MAX_FAILURES = --max-failures" "$(out_var "$out" 0 RESTORE_BUDGET_MAX_FAILURES)" 4
expect "RESTORE_RETRY_NUM = --restore-retries" "$(out_var "$out" 0 RESTORE_BUDGET_RESTORE_RETRY_NUM)" 5
expect "RESTORES_LEFT = (4+1)*5" "$(out_var "$out" 0 RESTORE_BUDGET_RESTORES_LEFT)" 25
expect "ledger: restore_timeout = --restore-timeout" "$(rec_get "$j" cur.limits.restore_timeout)" 77
expect "ledger: max_failures" "$(rec_get "$j" cur.limits.max_failures)" 4
expect "ledger: restore_retry_num" "$(rec_get "$j" cur.limits.restore_retry_num)" 5
check "no clamp warning for values within the caps" bash -c "! grep -qiE 'clamp|exceeds' '$out'"

# over a cap: refused by sbatch, no job created
refused() {  # DESC OPTION WANT-ERE...
    local d=$1 opt=$2 before msg rc; shift 2
    before=$(njobs)
    msg=$(as_user sbatch -p low "$opt" --wrap true 2>&1); rc=$?
    check "$d: sbatch $opt exits non-zero" test "$rc" -ne 0
    expect "$d: sbatch $opt created no job" "$(njobs)" "$before"
    local re
    for re in "$@"; do
        check "$d: message matches /$re/" grep -qE -- "$re" <<<"$msg"
    done
    rb_log "sbatch $opt -> rc=$rc: $(tr '\n' ' ' <<<"$msg")"
}
conf_re=$(sed 's/[.]/\\./g' <<<"$RB_CONF")
refused "over cap" --max-failures=5 'limits\.max_failures = 4' "$conf_re"
refused "over cap" --restore-retries=6 'limits\.restore_retry_num = 5' "$conf_re"
refused "unlimited not allowed" --max-failures=unlimited 'allow_unlimited' "$conf_re"
# garbage
refused "garbage" --max-failures=abc -- '--max-failures=abc' 'not a number'
refused "garbage" --restore-retries=-3 -- '--restore-retries=-3'
refused "garbage" --restore-timeout=1x -- '--restore-timeout=1x'

# config unreadable where sbatch runs: accepted, clamped at run time
chmod 600 "$RB_CONF"
j2=$(TRIAL_STEPS=0 submit_as_user -p low --max-failures=9 --restore-retries=8 \
    "$RB_ROOT/contrib/jobs/trial.sh") || fail "sbatch over cap with an unreadable config refused"
chmod 644 "$RB_CONF"
if [[ -n $j2 ]]; then
    out2=$RB_WORKDIR/trial-$j2.out
    check "clamped job completes" wait_state "$j2" COMPLETED 60
    expect "clamped MAX_FAILURES" "$(out_var "$out2" 0 RESTORE_BUDGET_MAX_FAILURES)" 4
    expect "clamped RESTORE_RETRY_NUM" "$(out_var "$out2" 0 RESTORE_BUDGET_RESTORE_RETRY_NUM)" 5
    expect "ledger: clamped max_failures" "$(rec_get "$j2" cur.limits.max_failures)" 4
    w=$(grep 'restore_budget' "$out2" | grep -v '^trial')
    check "clamp warning in the job's stderr" test -n "$w"
    check "clamp warning names the cap (limits.max_failures)" grep -q 'max_failures' <<<"$w"
    check "clamp warning names the config file" grep -qF "$RB_CONF" <<<"$w"
    rb_log "clamp warning in job output: ${w:-<none>}"
fi
measure "duration=$((SECONDS - T0))s"
rb_final_checks
summary
