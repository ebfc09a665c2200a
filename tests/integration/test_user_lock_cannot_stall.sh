#!/bin/bash
# test_user_lock_cannot_stall.sh - an unprivileged user holds a read lock on
# a running job's event log (readable by everyone) and never lets go. On the
# plugin of 2026-11-30 the job's lock WAS that file: the epilog, the next
# prolog and the CLI's grant each waited forever (no PrologEpilogTimeout by
# default), so the job never ran again. Now the job's lock is a root-only
# file and every wait has a deadline: the requeued job's end is recorded and
# its next attempt runs while the user still holds the log.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS

rb_cluster_up 'max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "cluster up"; summary; }

rb_workdir victim >/dev/null
j=$(TRIAL_STEPS=8 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt \
    "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "attempt 0 wrote a checkpoint" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 1\$" 60
log=$(rb_evlog_path "$j")
lock=${log%.log}.lock
check "the event log is readable by everyone (it is the user's view)" test -r "$log"
expect "the lock file is root's alone" "$(stat -c '%U %a' "$lock" 2>/dev/null)" "root 600"
check "the user cannot open the lock file" bash -c "! runuser -u '$RB_USER' -- cat '$lock' 2>/dev/null"
holder_out=$RB_CLUSTER_DIR/holder.out
runuser -u "$RB_USER" -- /usr/bin/python3 -c '
import fcntl, sys, time
f = open(sys.argv[1])
fcntl.lockf(f, fcntl.LOCK_SH)
print("locked", flush=True)
time.sleep(300)' "$log" >"$holder_out" 2>&1 &
holder=$!
RB_EXIT_HOOK="kill $holder 2>/dev/null; ${RB_EXIT_HOOK:-}"
checkq "the user holds a read lock on $log" wait_grep "$holder_out" '^locked$' 10
check "scontrol requeue $j" timeout 10 scontrol requeue "$j"
check "the epilog recorded the end despite the user's lock" wait_ev "$j" 'kind=end attempt=0' 30
check "attempt 1 starts despite the user's lock" wait_grep "$out" "^trial\[$j\.1\]: start" 60
check "the user still holds the lock (the attack was live throughout)" kill -0 "$holder"
check "job completes" wait_state "$j" COMPLETED 90
kill "$holder" 2>/dev/null
rb_final_checks
measure "duration=$((SECONDS - T0))s"
summary
