#!/bin/bash
# test_upgrade.sh - upgrading the plugin on a live cluster, both ways, on
# real daemons: one private cluster, the plugin in plugstack.conf swapped
# and slurmd restarted between the phases.
#
#   OLD = the plugin built here from git revision ${RB_UPGRADE_FROM:-d6936ee}
#         of the repository this test lives in (git archive | tar; make);
#   NEW = the tree under test (build/restore_budget.so, build/restore-budget:
#         run `make` first; run.sh builds only the plugin).
#
# Scenario 1, old -> new in the middle of a job: under OLD a tracked job
# with a checkpoint dir is preempted once (a version-1 record with attempts
# 0 and 1; OLD made <state_dir>/<cluster>/ack/<job>/, owned by the job's
# user).  The user plants in that directory symlinks to a root-owned file
# and directory outside state_dir, a few nested directories and one chain
# deeper than PATH_MAX.  Swap to NEW, restart slurmd, preempt again: NEW
# continues the same record (attempt 2, counters carried on, no reset) and
# writes it as version 2, and hands attempt 2 its acknowledgement file in the
# checkpoint dir.  The job finishes; NEW's `restore-budget gc --older-than 0`
# (root) removes the old ack/ tree without following the planted symlinks.
#
# Scenario 2, rolling back new -> old: a job whose record NEW wrote (v2) gets
# its next prolog from OLD (swap back, restart slurmd, scontrol requeue).
# OLD refuses the record ("unknown record version 2"), logs it in slurmd.log,
# never drains the node and never rewrites the record; on_error decides:
# "open" = the attempt runs untracked (no RESTORE_BUDGET_* at all, so it is
# not handed its checkpoint either), "closed" = task_init refuses it (FAILED
# 1:0, the reason on the job's stderr).  Both are checked, one requeue each.
#
# Without the git history (a staged copy, a CI leg's tarball) or without
# git, the test passes one "skipped" line.  Knobs: RB_UPGRADE_FROM (the old
# revision), RB_UPGRADE_GIT (a checkout of this repository to take it from),
# RB_UPGRADE_ACK_DEPTH (directories in the planted chain, default 1500).
UPG_REV=${RB_UPGRADE_FROM:-d6936ee}
UPG_DEPTH=${RB_UPGRADE_ACK_DEPTH:-1500}
# Where the git history may be: lib.sh (run directly) and run.sh replace
# RB_ROOT with a staged copy that has no .git, so look before sourcing it.
# RB_SRC_ROOT is the original checkout when run.sh started us.
UPG_GIT_CANDIDATES=("${RB_UPGRADE_GIT:-}" "${RB_SRC_ROOT:-}" "${RB_ROOT:-}"
    "$(cd "$(dirname "$0")/../.." 2>/dev/null && pwd)"
    "$(cd "$(dirname "$(readlink -f "$0")")/../.." 2>/dev/null && pwd)")
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

# upg_skip WHY - the one "skipped" line, a node-state line for run.sh's own
# check (no cluster was started), the summary.
upg_skip() {
    pass "skipped: $* (test_upgrade builds the old plugin from git revision $UPG_REV of this repository; set RB_UPGRADE_GIT=/path/to/checkout)"
    [[ -n ${RB_NODESTATE_FILE:-} ]] &&
        printf '# %s skipped: no cluster started\n' "$RB_TEST_NAME" >>"$RB_NODESTATE_FILE"
    measure "skipped=1"
    summary
}

# ---- OLD: build it from git ------------------------------------------------------
upg_git=
upg_why=
if ! command -v git >/dev/null 2>&1; then
    upg_why="git is not installed"
else
    declare -A upg_seen=()
    for c in "${UPG_GIT_CANDIDATES[@]}"; do
        [[ -n $c && -d $c && -z ${upg_seen[$c]:-} ]] || continue
        upg_seen[$c]=1
        if ! git -c safe.directory='*' -C "$c" rev-parse --git-dir >/dev/null 2>&1; then
            upg_why+="$c: not in a git repository; "
            continue
        fi
        # the right repository, and the revision is in its history
        if git -c safe.directory='*' -C "$c" cat-file -e "$UPG_REV:plugin/spank/restore_budget.c" 2>/dev/null; then
            upg_git=$c
            break
        fi
        upg_why+="$c: git repository without revision $UPG_REV (shallow clone?); "
        # a revision asked for by name and missing is a mistake, not a skip
        if [[ -n ${RB_UPGRADE_FROM:-} ]]; then
            fail "RB_UPGRADE_FROM=$RB_UPGRADE_FROM: no such revision (with plugin/spank/restore_budget.c) in $c"
            [[ -n ${RB_NODESTATE_FILE:-} ]] &&
                printf '# %s: no cluster started\n' "$RB_TEST_NAME" >>"$RB_NODESTATE_FILE"
            summary
        fi
    done
fi
[[ -n $upg_git ]] || upg_skip "no git history found (${upg_why:-no candidate checkout})"
UPG_REV_FULL=$(git -c safe.directory='*' -C "$upg_git" rev-parse --short=12 "$UPG_REV^{commit}")

# Readable by the daemons and by the job user (sbatch loads the plugin too).
UPG_OLD=$(mktemp -d /tmp/rbupg-old.XXXXXX) || { fail "mktemp for the old build"; summary; }
chmod 755 "$UPG_OLD"
t_build=$(rb_now)
if ! { mkdir "$UPG_OLD/src" &&
       git -c safe.directory='*' -C "$upg_git" archive "$UPG_REV" | tar -x -C "$UPG_OLD/src" &&
       make -s -j2 -C "$UPG_OLD/src" build/restore_budget.so >"$UPG_OLD/build.log" 2>&1; }; then
    tail -n 30 "$UPG_OLD/build.log" >&2
    fail "OLD plugin builds from $UPG_REV ($upg_git)"
    rm -rf "$UPG_OLD"
    summary
fi
chmod -R a+rX "$UPG_OLD"
OLD_SO=$UPG_OLD/src/build/restore_budget.so
NEW_SO=$RB_PLUGIN_SO
NEW_CLI=$RB_ROOT/build/restore-budget
rb_log "OLD = $UPG_REV ($UPG_REV_FULL from $upg_git), built in $(rb_since "$t_build")s: $OLD_SO"
rb_log "NEW = $NEW_SO, CLI $NEW_CLI"
RB_EXIT_HOOK='rm -rf "$UPG_OLD"'

# Preemptions of RUNNING attempts are charged (count_preemptions), so the
# counters move on every attempt and a reset would show; attempt 1 is
# confirmed by restore_timeout (3 s) whichever ack location NEW reads.
UPG_CONF='max_failures = 5;
restore_retry_num = 2;
restore_timeout = 3;
count_preemptions = true;
on_error = "open";'
RB_NO_RUN_DIR=1 RB_PLUGIN_SO=$OLD_SO rb_cluster_up "$UPG_CONF" || { fail "cluster up with the OLD plugin"; summary; }
CL=$RB_CLUSTER_NAME_USED
ACK_TOP=$RB_STATE/$CL/ack
SLURMD_LOG=$RB_CLUSTER_DIR/log/slurmd.log
RB_UID=$(id -u "$RB_USER")

# upg_slurmd_has SO - the running slurmd has SO mapped (it loaded it at start).
upg_slurmd_has() {
    local pid; pid=$(rb_daemon_pid slurmd) || return 1
    grep -qF -- "$1" "/proc/$pid/maps"
}

# upg_use OLD|NEW - point plugstack.conf at that plugin and restart slurmd.
upg_use() {
    local so
    local arg=
    case $1 in OLD) so=$OLD_SO ;; NEW) so=$NEW_SO; arg=" run_dir=$RB_CLUSTER_DIR/rb/run" ;; esac
    printf 'required %s config=%s%s\n' "$so" "$RB_CONF" "$arg" >"$RB_CLUSTER_DIR/plugstack.conf"
    checkq "swap to the $1 plugin: slurmd restarted" rb_restart_slurmd busy
    check "swap to the $1 plugin: the running slurmd has $so loaded" upg_slurmd_has "$so"
}

rec_version() { head -n 1 "$(rb_rec_path "$1")" 2>/dev/null; }
# upg_stat PATH - owner, mode, size, mtime, inode and content hash of PATH.
upg_stat() { stat -c '%u:%g:%a:%s:%Y:%i' "$1" 2>&1; [[ -f $1 ]] && sha256sum <"$1"; }
# upg_log_since N ERE - lines of slurmd.log after line N that match ERE.
upg_log_since() { tail -n +"$(($1 + 1))" "$SLURMD_LOG" | grep -E -- "$2"; }
# upg_attempt_lines FILE J N - what attempt N of job J printed.
upg_attempt_lines() {
    awk -v s="trial[$2.$3]: start" 'index($0, s) == 1 { on = 1 } /^trial\[/ && index($0, s) != 1 { on = 0 } on' "$1"
}

check "the OLD plugin is loaded by slurmd" upg_slurmd_has "$OLD_SO"

# =================================================================================
# Scenario 1: old -> new in the middle of a job
# =================================================================================
rb_log "scenario 1: old -> new, mid-job"
rb_workdir upgrade >/dev/null
ck=$RB_WORKDIR/ckpt
fin1=$RB_WORKDIR/finish-1
j=$(TRIAL_DIR=$ck TRIAL_FINISH=$fin1 TRIAL_STEPS=300 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/tests/integration/jobs/rbjob.sh") || { fail "sbatch the job"; summary; }
out=$RB_WORKDIR/trial-$j.out
ackdir=$ACK_TOP/$j
checkq "S1 OLD: attempt 0 writes a checkpoint" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step" 60
checkq "S1 OLD: attempt 0 preempted" preempt "$j" 30
checkq "S1 OLD: attempt 1 restores and acknowledges" \
    wait_grep "$out" "^trial\[$j\.1\]: acknowledged restore" 60
t_a1=$SECONDS

expect "S1 OLD: the record is version 1 (first line)" "$(rec_version "$j")" "restore_budget-record 1"
expect "S1 OLD: record cur.attempt" "$(rec_get "$j" cur.attempt)" 1
expect "S1 OLD: record failures (attempt 0's preemption charged: count_preemptions)" "$(rec_get "$j" failures)" 1
expect "S1 OLD: record interruptions" "$(rec_get "$j" interruptions)" 1
created0=$(rec_get "$j" created) seq0=$(rec_get "$j" seq)
expect "S1 OLD: attempt 1 ACK_FILE is in the old ack tree" \
    "$(out_var "$out" 1 RESTORE_BUDGET_ACK_FILE)" "$ackdir/attempt-1"
expect "S1 OLD: the OLD plugin made ack/$j owned by $RB_USER, mode 700" \
    "$(stat -c '%U %a' "$ackdir" 2>&1)" "$RB_USER 700"
check "S1 OLD: attempt 1's acknowledgement is in ack/$j" test -f "$ackdir/attempt-1"

# What the user plants in the directory the old plugin gave them.
precious=$RB_CLUSTER_DIR/precious
mkdir -p "$precious/dir" && chmod 755 "$precious" "$precious/dir"
printf 'root-owned file outside state_dir %s\n' "$RANDOM$RANDOM" >"$precious/file"
printf 'root-owned file in a directory outside state_dir\n' >"$precious/dir/inner"
chmod 644 "$precious/file" "$precious/dir/inner"
st_file=$(upg_stat "$precious/file") st_dir=$(upg_stat "$precious/dir") st_inner=$(upg_stat "$precious/dir/inner")
plant='set -e; a=$1 p=$2 depth=$3
ln -s "$p/file" "$a/link-to-root-file"
ln -s "$p/dir" "$a/link-to-root-dir"
mkdir -p "$a/n1/n2/n3"
echo plain >"$a/n1/n2/plain"
ln -s "$p/file" "$a/n1/n2/n3/link-to-root-file"
ln -s "$p/dir" "$a/n1/n2/n3/link-to-root-dir"
ln -s "$p" "$a/n1/link-to-parent"
cd "$a"; mkdir deep; cd deep
seg=$(printf "dddddddddd/%.0s" $(seq 100))
for ((i = 0; i < depth / 100; i++)); do mkdir -p "$seg"; cd "$seg"; done
ln -s "$p/file" link-to-root-file
echo bottom >plain'
check "S1 OLD: $RB_USER plants symlinks to root's files, nested dirs and a $UPG_DEPTH-deep chain in ack/$j" \
    as_user bash -c "$plant" _ "$ackdir" "$precious" "$UPG_DEPTH"
n_dirs=$(find "$ackdir" -type d 2>/dev/null | wc -l)
check "S1 OLD: the planted tree is there ($n_dirs directories)" test "$n_dirs" -ge "$((UPG_DEPTH / 100 * 100 + 4))"

# ---- swap to NEW while attempt 1 runs --------------------------------------------
upg_use NEW
expect "S1: the job still runs attempt 1 across the slurmd restart" \
    "$(job_field "$j" JobState) $(job_field "$j" Restarts)" "RUNNING 1"
# attempt 1 past restore_timeout (3 s) before its preemption
while ((SECONDS - t_a1 < 5)); do sleep 0.2; done
checkq "S1 NEW: attempt 1 preempted" preempt "$j" 30
checkq "S1 NEW: attempt 2 starts and restores" wait_grep "$out" "^trial\[$j\.2\]: restored step" 60
wait_grep "$out" "^trial\[$j\.2\]: acknowledged" 10 >/dev/null

expect "S1 NEW: the record is now version 2 (first line)" "$(rec_version "$j")" "restore_budget-record 2"
expect "S1 NEW: same record continued: created unchanged" "$(rec_get "$j" created)" "$created0"
check "S1 NEW: same record continued: seq went up from $seq0 (got $(rec_get "$j" seq))" \
    test "$(rec_get "$j" seq)" -gt "${seq0:-999999}"
for kv in "job_id=$j" "uid=$RB_UID" cur.attempt=2 failures=2 failures_total=2 \
          restore_failures=0 restore_failures_total=0 interruptions=2 exhausted=false \
          cur.refused=false cur.phase=RESTORING; do
    expect "S1 NEW: record ${kv%%=*} (continued from attempts 0 and 1)" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done
check_attempts_recorded "$j" 2 "S1 job $j"
expect "S1 NEW: no reset event in the event log" "$(ev_count "$j" ' kind=reset ')" 0
expect "S1 NEW: start 2 charged attempt 1" "$(ev_get "$j" start 2 charged)" 1
expect "S1 NEW: start 2 decision" "$(ev_get "$j" start 2 decision)" run
expect "S1 NEW: start 2 charged_end" "$(ev_get "$j" start 2 charged_end)" interrupted
expect "S1 NEW: start 2 charged_phase (attempt 1 was confirmed)" "$(ev_get "$j" start 2 charged_phase)" RUNNING
expect "S1 NEW: start 2 failures (1 from attempt 0, +1 for attempt 1)" "$(ev_get "$j" start 2 failures)" "1->2"
expect "S1 NEW: start 2 restore_failures" "$(ev_get "$j" start 2 restore_failures)" "0->0"
conf1=$(ev_get "$j" end 1 confirmed)
rb_log "attempt 1 (acked in the old ack tree) was confirmed by: ${conf1:-?}"
expect_match "S1 NEW: end 1 confirmed by the old-location ack or by restore_timeout" "$conf1" '^(ack|timeout)$'
for kv in ATTEMPT=2 PHASE=RESTORING FAILURES=2 MAX_FAILURES=5 RESTORE_FAILURES=0 \
          RESTORE_RETRY_NUM=2 RESTORES_LEFT=8 LAST_END=interrupted; do
    expect "S1 NEW: attempt 2 sees RESTORE_BUDGET_${kv%%=*}" \
        "$(out_var "$out" 2 "RESTORE_BUDGET_${kv%%=*}")" "${kv#*=}"
done
handed=$(out_var "$out" 2 RESTORE_BUDGET_CHECKPOINT)
expect_match "S1 NEW: attempt 2 is handed a checkpoint in its dir" "$handed" "^$ck/checkpoint-[0-9]+\$"
expect "S1 NEW: attempt 2's ACK_FILE is in its checkpoint dir" \
    "$(out_var "$out" 2 RESTORE_BUDGET_ACK_FILE)" "$ck/.restore_budget-ack.$CL.$j.2"
check "S1 NEW: the NEW plugin put nothing new in the old ack tree (no ack/$j/attempt-2)" \
    test ! -e "$ackdir/attempt-2" -a ! -L "$ackdir/attempt-2"
errs=$(grep -E 'error: .*restore_budget: ' "$SLURMD_LOG" | head -n 5)
expect "S1: no restore_budget error in slurmd.log across the old -> new switch" "$errs" ""
check "S1 NEW: no node drained, down or failing" rb_nodes_ok

# ---- the job finishes; NEW gc removes the old ack tree ----------------------------
touch "$fin1"
check "S1 NEW: the job completes" wait_state "$j" COMPLETED 60
checkq "S1 NEW: end 2 recorded" wait_ev "$j" " kind=end attempt=2( |\$)" 30
expect "S1 NEW: end 2 end" "$(ev_get "$j" end 2 end)" completed
expect "S1 NEW: end 2 confirmed by the ack in the checkpoint dir" "$(ev_get "$j" end 2 confirmed)" ack
expect "S1 NEW: after the epilog the record is still version 2" "$(rec_version "$j")" "restore_budget-record 2"
expect "S1 NEW: record cur.end" "$(rec_get "$j" cur.end)" completed

if [[ ! -x $NEW_CLI ]]; then
    fail "S1 gc: no NEW CLI at $NEW_CLI (run make: run.sh builds only the plugin)"
else
    sleep 1.2 # --older-than 0: records updated before now
    gc_out=$(timeout 120 "$NEW_CLI" --config "$RB_CONF" --cluster "$CL" gc --older-than 0 2>&1)
    gc_rc=$?
    printf '%s\n' "$gc_out" | sed 's/^/gc: /' | head -n 20 >&2
    expect "S1 gc: 'restore-budget gc --older-than 0' as root exits 0 (output: $(printf '%s' "$gc_out" | tr '\n' '|' | cut -c1-300))" "$gc_rc" 0
    check "S1 gc: the finished job's record is removed" test ! -e "$(rb_rec_path "$j")"
    left=$(find "$ACK_TOP" -maxdepth 2 2>/dev/null | head -n 5 | tr '\n' ' ')
    check "S1 gc: the old ack/ tree is gone ($ACK_TOP; left: ${left:-nothing})" \
        test ! -e "$ACK_TOP" -a ! -L "$ACK_TOP"
    expect "S1 gc: the planted symlink's target file is intact (owner, mode, size, mtime, inode, content)" \
        "$(upg_stat "$precious/file")" "$st_file"
    expect "S1 gc: the planted symlink's target directory is intact" "$(upg_stat "$precious/dir")" "$st_dir"
    expect "S1 gc: the file in that directory is intact" "$(upg_stat "$precious/dir/inner")" "$st_inner"
    check "S1 gc: no node drained, down or failing" rb_nodes_ok
fi

# =================================================================================
# Scenario 2: rolling back new -> old on a job whose record NEW wrote
# =================================================================================
rb_log "scenario 2: new -> old, a version-2 record read by the old plugin"
rb_workdir rollback >/dev/null
ck2=$RB_WORKDIR/ckpt
j2=$(TRIAL_DIR=$ck2 TRIAL_STEPS=300 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/tests/integration/jobs/rbjob.sh") || { fail "sbatch the job"; summary; }
out2=$RB_WORKDIR/trial-$j2.out
checkq "S2 NEW: attempt 0 writes a checkpoint" wait_grep "$out2" "^trial\[$j2\.0\]: checkpoint step" 60
expect "S2 NEW: the NEW plugin wrote a version 2 record" "$(rec_version "$j2")" "restore_budget-record 2"
expect "S2 NEW: attempt 0's ACK_FILE is in its checkpoint dir" \
    "$(out_var "$out2" 0 RESTORE_BUDGET_ACK_FILE)" "$ck2/.restore_budget-ack.$CL.$j2.0"
check "S2 NEW: the NEW plugin made no ack directory for job $j2 (no $ACK_TOP/$j2)" \
    test ! -e "$ACK_TOP/$j2" -a ! -L "$ACK_TOP/$j2"

upg_use OLD
expect "S2: the job still runs attempt 0 across the slurmd restart" \
    "$(job_field "$j2" JobState) $(job_field "$j2" Restarts)" "RUNNING 0"
rec2=$(rb_rec_path "$j2")
sum2=$(sha256sum <"$rec2" 2>&1) evn2=$(wc -l <"$(rb_evlog_path "$j2")" 2>&1)
ctld_n=$(wc -l <"$RB_CLUSTER_DIR/log/slurmctld.log")

# ---- on_error = "open" -----------------------------------------------------------
logn=$(wc -l <"$SLURMD_LOG")
check "S2 OLD open: scontrol requeue" timeout 10 scontrol requeue "$j2"
checkq "S2 OLD open: requeued" wait_restart_count "$j2" 1 30
checkq "S2 OLD open: attempt 1 starts" wait_grep "$out2" "^trial\[$j2\.1\]: (no checkpoint|restoring)" 60
expect "S2 OLD open: the job runs attempt 1 (not held)" \
    "$(job_field "$j2" JobState) $(job_field "$j2" Restarts) $(job_field "$j2" Reason)" "RUNNING 1 None"
check "S2 OLD open: no node drained, down or failing" rb_nodes_ok
v2err='unknown record version 2'
expect_match "S2 OLD open: the epilog logs the version error for job $j2" \
    "$(upg_log_since "$logn" "error: .*restore_budget: epilog: job $j2: .*$v2err" | head -n 1)" "$v2err"
expect_match "S2 OLD open: the prolog logs the version error for attempt 1" \
    "$(upg_log_since "$logn" "error: .*restore_budget: prolog: job $j2 attempt 1: .*$v2err" | head -n 1)" "$v2err"
expect_match "S2 OLD open: the batch step logs it and lets the job run untracked (on_error = open)" \
    "$(upg_log_since "$logn" "error: .*restore_budget: job $j2: .*$v2err.*" | head -n 1)" \
    "$v2err.*\(on_error = open: the job runs untracked\)"
expect "S2 OLD open: attempt 1 gets no RESTORE_BUDGET_* variable (untracked)" \
    "$(upg_attempt_lines "$out2" "$j2" 1 | grep -c '^trial:   RESTORE_BUDGET_')" 0
check "S2 OLD open: so attempt 1 is not handed its checkpoint and starts fresh" \
    grep -q "^trial\[$j2\.1\]: no checkpoint to restore: starting fresh" "$out2"
expect_match "S2 OLD open: the job's own output carries the batch step's error" \
    "$(grep -F "restore_budget: job $j2: " "$out2" | head -n 1)" "$v2err.*on_error = open: the job runs untracked"
expect "S2 OLD open: the OLD plugin did not rewrite the version 2 record" "$(sha256sum <"$rec2" 2>&1)" "$sum2"
expect "S2 OLD open: the OLD plugin appended nothing to the event log" "$(wc -l <"$(rb_evlog_path "$j2")" 2>&1)" "$evn2"

# ---- on_error = "closed" ---------------------------------------------------------
rb_write_config "${UPG_CONF/on_error = \"open\";/on_error = \"closed\";}"
check "S2 OLD closed: config now says on_error = closed" grep -q '^on_error = "closed";' "$RB_CONF"
logn=$(wc -l <"$SLURMD_LOG")
check "S2 OLD closed: scontrol requeue" timeout 10 scontrol requeue "$j2"
checkq "S2 OLD closed: requeued" wait_restart_count "$j2" 2 30
# refused: FAILED; not refused: attempt 2 starts (do not wait the full minute)
for ((i = 0; i < 300; i++)); do
    s=$(job_field "$j2" JobState)
    [[ $s == FAILED ]] && break
    grep -q "^trial\[$j2\.2\]: start" "$out2" && { sleep 1; break; }
    sleep 0.2
done
expect "S2 OLD closed: attempt 2 refused in task_init (JobState ExitCode Restarts)" \
    "$(job_field "$j2" JobState) $(job_field "$j2" ExitCode) $(job_field "$j2" Restarts)" "FAILED 1:0 2"
check "S2 OLD closed: attempt 2's script never ran" bash -c "! grep -q '^trial\[$j2\.2\]' '$out2'"
expect_match "S2 OLD closed: the job's stderr names the refusal and its cause" \
    "$(grep -F "restore_budget: job $j2 refused:" "$out2" | head -n 1)" \
    "$v2err.*on_error = \"closed\""
check "S2 OLD closed: no node drained, down or failing" rb_nodes_ok
expect_match "S2 OLD closed: the prolog logs the version error for attempt 2" \
    "$(upg_log_since "$logn" "error: .*restore_budget: prolog: job $j2 attempt 2: .*$v2err" | head -n 1)" "$v2err"
expect_match "S2 OLD closed: the batch step logs it and refuses the attempt (on_error = closed)" \
    "$(upg_log_since "$logn" "error: .*restore_budget: job $j2: .*$v2err.*" | head -n 1)" \
    "$v2err.*\(on_error = closed: attempt refused\)"
expect "S2 OLD closed: the OLD plugin did not rewrite the version 2 record" "$(sha256sum <"$rec2" 2>&1)" "$sum2"
expect "S2 OLD closed: the OLD plugin appended nothing to the event log" "$(wc -l <"$(rb_evlog_path "$j2")" 2>&1)" "$evn2"
expect "S2: no drain, prolog or epilog failure in slurmctld.log" \
    "$(tail -n +"$((ctld_n + 1))" "$RB_CLUSTER_DIR/log/slurmctld.log" | grep -iE 'drain|Prolog error|Epilog error|launch_failed' | head -n 3)" ""
[[ $(job_field "$j2" JobState) =~ ^(RUNNING|PENDING)$ ]] && timeout 10 scancel "$j2"

measure "old=$UPG_REV_FULL ack_depth=$UPG_DEPTH duration=$((SECONDS - T0))s"
RB_EXPECT_PLUGIN_ERRORS=1 # scenario 2 causes them on purpose (checked above)
rb_final_checks
summary
