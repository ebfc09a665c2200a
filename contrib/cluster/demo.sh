#!/usr/bin/env bash
# demo.sh - `make demo`: restore_budget on a private one-node Slurm cluster.
#
#   1. a trial checkpoints, is preempted by a higher-priority job, and its
#      rerun restores from the newest checkpoint and acknowledges it;
#   2. the rescue: a trial is preempted and its newest checkpoint is
#      corrupted on disk before the rerun; the rerun's restore fails (exit 42
#      = RequeueExit) R = 2 times, the checkpoint fallback hands the one
#      before it, and the job completes;
#   3. a trial whose every restore fails: with max_failures=1 and
#      restore_retry_num=2 it gets exactly R x (M+1) = 4 restore attempts,
#      then the 5th is refused.
# At each attempt it prints what the job saw and where its budget stands.
# The store is the default, "controller": each job's budget is one line of
# its AdminComment (docs/stores.md); no shared directory, no prolog work.
# DEMO_TRIAL=torch (`make demo-torch`): parts 1 and 2 run the PyTorch trial
# (contrib/jobs/torch_trial.py; needs python3-torch) instead of
# contrib/jobs/trial.sh.  DEMO_PARTS="1 2" runs only those parts.
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
# The embedded default for the demo: the plugin's own defaults (store
# "controller") with limits small enough to exhaust in a minute.
cat >"$CONF" <<CONF
max_failures      = 1;
restore_retry_num = 2;
restore_timeout   = 0;    # only the job's acknowledgement confirms a restore
checkpoint        = { fallback = true; };  # a checkpoint R restores failed on is passed over
CONF
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

# budget JOB - where the job's budget stands (its AdminComment's line, read
# by the CLI)
budget() {
    "$CLI" --config "$CONF" --cluster rbtest show "$1" 2>/dev/null |
        grep -E '^ *(attempt|phase|failures F/M|restores r/R|restores_left|checkpoint|exhausted|last end):' |
        sed 's/^ */    /'
}

# attempts OUTFILE - what each attempt of the job saw
seen() {
    grep -E 'trial\[|RESTORE_BUDGET_(ATTEMPT|PHASE|CHECKPOINT|FAILURES|RESTORES_LEFT|LAST_END|RESTORE_FAILURES|FALLBACK_FROM)=|restore_budget:' "$1" |
        sed 's/^/    /'
}

PARTS=" ${DEMO_PARTS:-1 2 3} "
# The trial of parts 1 and 2: its script, its knobs, how it corrupts.
if [[ ${DEMO_TRIAL:-shell} == torch ]]; then
    /usr/bin/python3 -c 'import torch' 2>/dev/null ||
        { echo "demo: /usr/bin/python3 cannot import torch: make demo-torch installs python3-torch"; exit 1; }
    TRIAL=$ROOT/contrib/jobs/torch_trial.py FIRST=checkpoint-100
    export TRIAL_STEPS=200 TRIAL_CKPT_EVERY=50 TRIAL_STEP_SLEEP=0.03 \
        TRIAL_PYTHONPATH=$ROOT/contrib/python
else
    TRIAL=$ROOT/contrib/jobs/trial.sh FIRST=checkpoint-3
    export TRIAL_STEPS=6 TRIAL_CKPT_EVERY=1
fi

# wait_ckpt NAME - wait until the trial in $RB_WORKDIR wrote checkpoint NAME.
wait_ckpt() {
    for _ in $(seq 1 150); do [[ -e $RB_WORKDIR/ckpt/$1 ]] && return 0; sleep 0.2; done
    echo "demo: no $1 after 30s"; return 1
}

# corrupt FILE - what a crash in the middle of a write leaves: the torch
# trial's zip archive cut in half; the shell trial's step number garbled.
corrupt() {
    if [[ $TRIAL == *.py ]]; then truncate -s $(($(stat -c %s "$1") / 2)) "$1"
    else printf 'garbage\n' >"$1"; fi
}

# losses OUTFILE - the torch trial: its final loss next to the uninterrupted
# run's ($REF), the proof that the resume continued the same training.
REF=
losses() {
    [[ -n $REF ]] || return 0
    echo "    final loss $(sed -n 's/^trial\[[0-9.]*\]: final loss //p' "$1" | tail -n 1); uninterrupted run: $REF"
}
if [[ $TRIAL == *.py ]]; then
    rb_workdir reference >/dev/null
    REF=$(TRIAL_STEP_SLEEP=0 as_user /usr/bin/python3 "$TRIAL" 2>&1 | sed -n 's/^trial\[nojob\.0\]: final loss //p')
    say "0. the torch trial once without Slurm, uninterrupted: final loss ${REF:-?}"
fi

# ---------------------------------------------------------------------------
if [[ $PARTS == *" 1 "* ]]; then
say "1. a trial is preempted and restores from its newest checkpoint"
rb_workdir trial1 >/dev/null
t0=$(rb_now)
j1=$(submit_as_user -p low -o out.txt --checkpoint-dir=ckpt "$TRIAL") || exit 1
wait_state "$j1" RUNNING 30 || exit 1
# let it write a few checkpoints, then preempt it
wait_ckpt "$FIRST" || exit 1
echo "    job $j1 wrote: $(cd "$RB_WORKDIR/ckpt" && ls | tr '\n' ' ')"
echo "    submitting a high-priority job that needs the whole node..."
preempt "$j1" 30 >/dev/null || exit 1
wait_state "$j1" COMPLETED 90 || exit 1
echo "    job $j1 COMPLETED in $(rb_since "$t0")s; what its attempts saw:"
seen "$RB_WORKDIR/out.txt"
echo "    budget:"; budget "$j1"
losses "$RB_WORKDIR/out.txt"
fi

# ---------------------------------------------------------------------------
if [[ $PARTS == *" 2 "* ]]; then
say "2. the rescue: the newest checkpoint is corrupt; after R = 2 failed restores the one before it is handed out"
rb_workdir trial2 >/dev/null
ck=$RB_WORKDIR/ckpt
t0=$(rb_now)
j2=$(submit_as_user -p low -o out.txt --checkpoint-dir=ckpt "$TRIAL") || exit 1
wait_state "$j2" RUNNING 30 || exit 1
wait_ckpt "$FIRST" || exit 1
preempt "$j2" 30 >/dev/null || exit 1
wait_not_running "$j2" 30 || exit 1
bad=$(readlink "$ck/latest")
echo "    job $j2 preempted; it wrote: $(cd "$ck" && ls | tr '\n' ' ')"
echo "    corrupting $bad (latest) on disk before the rerun, as a crash mid-write would"
corrupt "$ck/$bad"
wait_state "$j2" 'COMPLETED|FAILED' 120 || exit 1
echo "    job $j2 $(job_field "$j2" JobState) in $(rb_since "$t0")s after $(job_field "$j2" Restarts) requeues; what its attempts saw:"
seen "$RB_WORKDIR/out.txt"
echo "    budget:"; budget "$j2"
losses "$RB_WORKDIR/out.txt"
[[ $(job_field "$j2" JobState) == COMPLETED ]] || { echo "demo: job $j2 was not rescued"; exit 1; }
fi

# ---------------------------------------------------------------------------
if [[ $PARTS == *" 3 "* ]]; then
say "3. a trial whose every restore fails: R x (M+1) = 2 x 2 = 4 restore attempts, then refused"
rb_workdir trial3 >/dev/null
t0=$(rb_now)
j3=$(TRIAL_STEPS=30 TRIAL_CKPT_EVERY=1 TRIAL_FAIL_RESTORE=1 submit_as_user -p low \
     -o out.txt --checkpoint-dir=ckpt "$ROOT/contrib/jobs/trial.sh") || exit 1
wait_state "$j3" RUNNING 30 || exit 1
for _ in $(seq 1 50); do [[ -e $RB_WORKDIR/ckpt/checkpoint-2 ]] && break; sleep 0.2; done
preempt "$j3" 30 >/dev/null || exit 1
seen_attempt=0
while :; do
    s=$(job_field "$j3" JobState); r=$(job_field "$j3" Restarts)
    if [[ $r =~ ^[0-9]+$ ]] && ((r > seen_attempt)); then
        seen_attempt=$r
        echo "    attempt $r started (job $j3 $s)"; budget "$j3"
    fi
    [[ $s == FAILED || $s == COMPLETED ]] && break
    (( $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print int(b-a)}') > 150 )) && { echo "demo: timed out"; exit 1; }
    sleep 0.5
done
echo "    job $j3 ended $s ($(job_field "$j3" ExitCode)) after $(rb_since "$t0")s; what its attempts saw:"
seen "$RB_WORKDIR/out.txt"
echo "    budget:"; budget "$j3"
say "the budget line in job $j3's AdminComment (scontrol show job $j3)"
timeout 10 squeue -h --states=all -j "$j3" -O admin_comment:0 | sed 's/^/    /'
fi
say "restore-budget list: every job the controller holds"
"$CLI" --config "$CONF" --cluster rbtest list | sed 's/^/    /'

node_drained && { echo "demo: a node is drained!"; exit 1; }
say "done: no node drained; tearing down"
