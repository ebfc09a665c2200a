#!/bin/bash
# test_state_dir_user_cannot_write.sh - "Nothing inside state_dir is writable
# by a user: neither a directory nor a file" (docs/security.md), with a
# real tracked job that acknowledges its restores.
#   A trial (M=0, R=1, restore_timeout=0) with a checkpoint dir is preempted,
#   its attempt 1 restores and acknowledges through $RESTORE_BUDGET_ACK_FILE,
#   is preempted again and attempt 2 restores, acknowledges and completes.
#   With M=0 and R=1 the ack is what lets attempt 2 run at all: an
#   unconfirmed restore that is interrupted is a failed restore, F=1 > M=0.
#   A second job without a checkpoint dir only shows its ACK_FILE.
#   While attempt 1 runs (after its ack) and again at the end, as rbuser:
#   creating a file or a directory in any directory under state_dir fails,
#   opening any file there for writing fails, nothing there is owned by
#   rbuser and nothing is group- or other-writable.
#   RESTORE_BUDGET_ACK_FILE is not under state_dir but in the job's own
#   checkpoint dir: <abs ckpt dir>/.restore_budget-ack.<cluster>.<job>.<attempt>
#   (<work dir>/.restore_budget-ack.... without a checkpoint dir).
# On the plugin of d6936ee the ack file was <state_dir>/<cluster>/ack/<job>/
# attempt-<n>, in a directory owned by the job's user (mode 0700).
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 0;
restore_retry_num = 1;
restore_timeout = 0;' || { fail "cluster up"; summary; }
C=$RB_CLUSTER_NAME_USED

# user_write_probe - as $RB_USER, for each input line "d DIR" try to create a
# file and a directory in DIR, for "f FILE" open FILE for writing (append,
# nothing written); print one line per success.  What it creates is named
# .rb-probe-*; the caller removes it.
user_write_probe() {
    timeout 60 runuser -u "$RB_USER" -- env -i PATH=/usr/bin:/bin bash -c '
        p=.rb-probe-$$
        while read -r t path; do
            case $t in
            d)  if (: >"$path/$p") 2>/dev/null; then echo "created a file in $path"; fi
                if mkdir "$path/$p.d" 2>/dev/null; then echo "created a directory in $path"; fi ;;
            f)  if (: >>"$path") 2>/dev/null; then echo "opened for writing: $path"; fi ;;
            *)  echo "not a file or directory: $path" ;;
            esac
        done' 2>&1
}

# probe_state_dir TAG - the four checks on everything under $RB_STATE.
probe_state_dir() {
    local tag=$1 list got n_d n_f
    list=$(cd / && find "$RB_STATE" \( -type d -printf 'd %p\n' \) -o \( -type f -printf 'f %p\n' \) \
        -o \( -type l -printf 'f %p\n' \) -o -printf 'x %p\n')
    n_d=$(grep -c '^d ' <<<"$list") n_f=$(grep -c '^f ' <<<"$list")
    rb_log "$tag: probing $n_d directories and $n_f files under $RB_STATE as $RB_USER"
    got=$(user_write_probe <<<"$list")
    # undo whatever the user managed to create
    find "$RB_STATE" -name '.rb-probe-*' -prune -exec rm -rf {} + 2>/dev/null
    check "$tag: state_dir has directories and files to probe ($n_d, $n_f)" test "$n_d" -ge 3 -a "$n_f" -ge 2
    expect "$tag: $RB_USER can create nothing in any directory under state_dir and open no file there for writing" \
        "$(printf '%s' "$got" | head -n 8 | tr '\n' ';')" ""
    expect "$tag: find state_dir -user $RB_USER" \
        "$(find "$RB_STATE" -user "$RB_USER" -printf '%p(%M) ' | head -c 600)" ""
    expect "$tag: nothing under state_dir is group- or other-writable" \
        "$(find "$RB_STATE" ! -type l -perm /022 -printf '%p(%u %M) ' | head -c 600)" ""
}

# The probe itself works: in the user's own work dir it succeeds.
rb_workdir control >/dev/null
: >"$RB_WORKDIR/mine" && chown "$RB_USER": "$RB_WORKDIR/mine"
ctl=$(printf 'd %s\nf %s\n' "$RB_WORKDIR" "$RB_WORKDIR/mine" | user_write_probe)
find "$RB_WORKDIR" -name '.rb-probe-*' -prune -exec rm -rf {} +
expect "control: the probe succeeds where $RB_USER may write" "$(printf '%s' "$ctl" | tr '\n' ';')" \
    "created a file in $RB_WORKDIR;created a directory in $RB_WORKDIR;opened for writing: $RB_WORKDIR/mine"

rb_workdir ackjob >/dev/null
ck=$RB_WORKDIR/ckpt
j=$(TRIAL_STEPS=12 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch trial"; summary; }
out=$RB_WORKDIR/trial-$j.out
ack_of() { printf '%s/.restore_budget-ack.%s.%s.%s\n' "$ck" "$C" "$j" "$1"; }

checkq "attempt 0 wrote 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
checkq "attempt 0 preempted" preempt "$j" 30
checkq "attempt 1 acknowledged its restore" wait_grep "$out" "^trial\[$j\.1\]: acknowledged restore" 60
a1=$(out_var "$out" 1 RESTORE_BUDGET_ACK_FILE)
expect "attempt 1: ACK_FILE is in the job's checkpoint dir" "$a1" "$(ack_of 1)"
check "attempt 1: ACK_FILE is not under state_dir ($a1)" test -n "$a1" -a "${a1#"$RB_STATE"/}" = "$a1"
check "attempt 1: the ack file exists" test -e "$a1"
expect "attempt 1: the ack file is the job user's" "$(stat -c %U "$a1" 2>/dev/null)" "$RB_USER"
probe_state_dir "while attempt 1 runs"

# the ack confirmed attempt 1's restore: interrupted now, it costs nothing
checkq "attempt 1 still running when preempted" wait_state "$j" RUNNING 5
checkq "attempt 1 preempted after its ack" preempt "$j" 30
check "attempt 1's end is recorded" wait_ev "$j" 'kind=end attempt=1 ' 30
expect "event end 1: end" "$(ev_get "$j" end 1 end)" interrupted
expect "event end 1: phase" "$(ev_get "$j" end 1 phase)" RESTORING
c1=$(ev_get "$j" end 1 confirmed) c1p=$(ev_get "$j" start 2 confirmed_previous)
rb_log "attempt 1: end confirmed=$c1, attempt 2 start confirmed_previous=${c1p:-<none>}"
check "attempt 1's restore confirmed by the ack (end confirmed=$c1, start 2 confirmed_previous=${c1p:-none})" \
    test "$c1" = ack -o "$c1p" = ack
check "job $j completes" wait_state "$j" COMPLETED 90
expect "event start 2: decision" "$(ev_get "$j" start 2 decision)" run
expect "event start 2: charge" "$(ev_get "$j" start 2 charge)" none
expect "event start 2: failures" "$(ev_get "$j" start 2 failures)" "0->0"
check "attempt 2 acknowledged its restore" grep -q "^trial\[$j\.2\]: acknowledged restore" "$out"
expect "attempt 2: ACK_FILE" "$(out_var "$out" 2 RESTORE_BUDGET_ACK_FILE)" "$(ack_of 2)"
expect "event end 2: end" "$(ev_get "$j" end 2 end)" completed
expect "event end 2: confirmed by the ack (before the exit 0)" "$(ev_get "$j" end 2 confirmed)" ack
expect "attempt 0: ACK_FILE" "$(out_var "$out" 0 RESTORE_BUDGET_ACK_FILE)" "$(ack_of 0)"
expect "attempts that ran" "$(out_attempts "$out" | tr '\n' ' ')" "0 1 2 "
for kv in failures=0 restore_failures=0 exhausted=false cur.attempt=2 cur.end=completed; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done

# a job without a checkpoint dir: the ack file is in its work dir
rb_workdir nockpt >/dev/null
k=$(TRIAL_FLAG_MODE=complete submit_as_user -p low "$RB_ROOT/tests/integration/jobs/flagjob.sh") ||
    { fail "sbatch flagjob"; summary; }
check "job $k (no checkpoint dir) completes" wait_state "$k" COMPLETED 60
expect "job $k: ACK_FILE is in its work dir" "$(out_var "$RB_WORKDIR/flag-$k.out" 0 RESTORE_BUDGET_ACK_FILE)" \
    "$RB_WORKDIR/.restore_budget-ack.$C.$k.0"

probe_state_dir "after both jobs"
rb_log "state_dir at the end:"; find "$RB_STATE" -printf '    %M %u:%g %p\n' >&2

measure "job=$j attempts=3 duration=$((SECONDS - T0))s"
rb_final_checks
summary
