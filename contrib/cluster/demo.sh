#!/usr/bin/env bash
# demo.sh - `make demo`: restore_budget on a private one-node Slurm cluster.
#
#   1. a trial checkpoints, is preempted by a higher-priority job, and its
#      rerun restores from the newest checkpoint and acknowledges it;
#   2. a trial whose checkpoint is "corrupt" fails every restore (exit 42 =
#      RequeueExit): with max_failures=1 and restore_retry_num=2 it gets
#      exactly R x (M+1) = 4 restore attempts, then the 5th is refused.
# At each attempt it prints what the job saw and where its budget stands.
# Everything runs under a temporary directory and is torn down at the end.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RB_STAGED=1   # the demo stages the tree itself, below
. "$ROOT/tests/integration/lib.sh"

[[ $(id -u) == 0 ]] || { echo "demo: run as root (it starts munged, slurmctld, slurmd)"; exit 1; }
[[ -x $ROOT/build/restore_budget.so || -f $ROOT/build/restore_budget.so ]] ||
    { echo "demo: build first: make"; exit 1; }

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

STATE=$(mktemp -d /tmp/rbdemo-state.XXXXXX); chmod 755 "$STATE"
CONF=$STATE/restore_budget.conf
# The embedded default for the demo: the plugin's own defaults, with a
# private state_dir and limits small enough to exhaust in a minute.
cat >"$CONF" <<CONF
state_dir         = "$STATE/ledger";
max_failures      = 1;
restore_retry_num = 2;
restore_timeout   = 0;    # only the job's acknowledgement confirms a restore
CONF
mkdir -m 755 "$STATE/ledger"
RB_EXIT_HOOK='rm -rf "$STATE"'
# The plugin, the CLI and the job script, from a world-readable copy in
# $STATE/root (the daemons and the job user rbuser read them; the checkout
# may be where they cannot, e.g. a clone in /root, mode 0700).
"$RB_CLUSTER_SH" stage "$ROOT" "$STATE/root" >/dev/null || { rm -rf "$STATE"; exit 1; }
ROOT=$STATE/root

say "starting a private cluster with the plugin (config $CONF)"
RB_PLUGSTACK_LINE="required $ROOT/build/restore_budget.so config=$CONF" cluster_up || exit 1
CLI=$ROOT/build/restore-budget
export RESTORE_BUDGET_CONFIG=$CONF

# budget JOB - one line: where the job's budget stands (from its ledger record)
budget() {
    if [[ -x $CLI ]]; then
        "$CLI" --config "$CONF" --cluster rbtest show "$1" 2>/dev/null |
            grep -E '^ *(attempt|phase|failures F/M|restores r/R|restores_left|checkpoint|exhausted|last end):' |
            sed 's/^ */    /'
    else
        local rec
        rec=$(find "$STATE/ledger" -name "$1.rec" | head -1)
        [[ -n $rec ]] && grep -E '^(failures|restore_failures|cur.attempt|cur.phase|checkpoint)=' "$rec" | sed 's/^/    /'
    fi
}

# attempts OUTFILE - what each attempt of the job saw
seen() {
    grep -E 'trial\[|RESTORE_BUDGET_(ATTEMPT|PHASE|CHECKPOINT|FAILURES|RESTORES_LEFT|LAST_END|RESTORE_FAILURES)=|restore_budget:' "$1" |
        sed 's/^/    /'
}

# ---------------------------------------------------------------------------
say "1. a trial is preempted and restores from its newest checkpoint"
rb_workdir trial1 >/dev/null
t0=$(rb_now)
j1=$(TRIAL_STEPS=6 TRIAL_CKPT_EVERY=1 submit_as_user -p low -o out.txt \
     --checkpoint-dir=ckpt "$ROOT/contrib/jobs/trial.sh") || exit 1
wait_state "$j1" RUNNING 30 || exit 1
# let it write a few checkpoints, then preempt it
for _ in $(seq 1 50); do [[ -e $RB_WORKDIR/ckpt/checkpoint-3 ]] && break; sleep 0.2; done
echo "    job $j1 wrote: $(cd "$RB_WORKDIR/ckpt" && ls | tr '\n' ' ')"
echo "    submitting a high-priority job that needs the whole node..."
preempt "$j1" 30 >/dev/null || exit 1
wait_state "$j1" COMPLETED 90 || exit 1
echo "    job $j1 COMPLETED in $(rb_since "$t0")s; what its attempts saw:"
seen "$RB_WORKDIR/out.txt"
echo "    budget:"; budget "$j1"

# ---------------------------------------------------------------------------
say "2. a trial whose checkpoint is corrupt: R x (M+1) = 2 x 2 = 4 restore attempts, then refused"
rb_workdir trial2 >/dev/null
t0=$(rb_now)
j2=$(TRIAL_STEPS=30 TRIAL_CKPT_EVERY=1 TRIAL_FAIL_RESTORE=1 submit_as_user -p low \
     -o out.txt --checkpoint-dir=ckpt "$ROOT/contrib/jobs/trial.sh") || exit 1
wait_state "$j2" RUNNING 30 || exit 1
for _ in $(seq 1 50); do [[ -e $RB_WORKDIR/ckpt/checkpoint-2 ]] && break; sleep 0.2; done
preempt "$j2" 30 >/dev/null || exit 1
seen_attempt=0
while :; do
    s=$(job_field "$j2" JobState); r=$(job_field "$j2" Restarts)
    if [[ $r =~ ^[0-9]+$ ]] && ((r > seen_attempt)); then
        seen_attempt=$r
        echo "    attempt $r started (job $j2 $s)"; budget "$j2"
    fi
    [[ $s == FAILED || $s == COMPLETED ]] && break
    (( $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print int(b-a)}') > 150 )) && { echo "demo: timed out"; exit 1; }
    sleep 0.5
done
echo "    job $j2 ended $s ($(job_field "$j2" ExitCode)) after $(rb_since "$t0")s; what its attempts saw:"
seen "$RB_WORKDIR/out.txt"
echo "    budget:"; budget "$j2"
if [[ -x $CLI ]]; then
    say "restore-budget explain $j2"
    "$CLI" --config "$CONF" --cluster rbtest explain "$j2" | sed 's/^/    /'
fi
node_drained && { echo "demo: a node is drained!"; exit 1; }
say "done: no node drained; tearing down"
