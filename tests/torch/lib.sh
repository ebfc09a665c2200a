# shellcheck shell=bash
# tests/torch/lib.sh - tests/integration/lib.sh plus helpers for the PyTorch
# trial (contrib/jobs/torch_trial.py) on a real private cluster.  A suite of
# its own, run on the host only: the legs' chroots (tests/legs/) have no
# torch, and they run tests/integration/.
#
# Needs Debian's python3-torch for /usr/bin/python3 (`make deps` installs
# it); without it every test FAILS, naming the package: never a silent skip.
# The suite's summary line is "torch: N passed, N failed".

RB_SUITE=${RB_SUITE:-torch}
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
TT_JOB=$RB_ROOT/contrib/jobs/torch_trial.py
TT_PYTHONPATH=$RB_ROOT/contrib/python
# The trial: TT_STEPS steps, a checkpoint every TT_EVERY; TT_SLEEP seconds a
# step leave time to preempt it (a full run is ~TT_STEPS x TT_SLEEP s).
TT_STEPS=${TT_STEPS:-300}
TT_EVERY=${TT_EVERY:-50}
TT_SLEEP=${TT_SLEEP:-0.03}

summary() {
    printf '%s: %d passed, %d failed\n' "$RB_SUITE" "$RB_PASSED" "$RB_FAILED"
    [[ $RB_FAILED -eq 0 ]] && exit 0
    exit 1
}

# tt_require - fail (and end the test) unless /usr/bin/python3 imports torch
# and the restore_budget module is in the tree.
tt_require() {
    local v
    if ! v=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>&1); then
        fail "torch is not importable by /usr/bin/python3 (${v##*$'\n'}): \`make deps\` installs python3-torch"
        summary
    fi
    pass "/usr/bin/python3 imports torch $v"
    [[ -f $TT_PYTHONPATH/restore_budget/__init__.py ]] ||
        { fail "no restore_budget module in $TT_PYTHONPATH"; summary; }
}

# tt_submit ARGS... - the torch trial as $RB_USER from $RB_WORKDIR with its
# checkpoints in ckpt/; prints the job id.
tt_submit() {
    TRIAL_STEPS=$TT_STEPS TRIAL_CKPT_EVERY=$TT_EVERY TRIAL_STEP_SLEEP=$TT_SLEEP \
        TRIAL_PYTHONPATH=$TT_PYTHONPATH submit_as_user -p low --checkpoint-dir=ckpt "$@" "$TT_JOB"
}

# tt_local OUT - an uninterrupted run without Slurm, as $RB_USER in
# $RB_WORKDIR, output in OUT.
tt_local() {
    TRIAL_STEPS=$TT_STEPS TRIAL_CKPT_EVERY=$TT_EVERY TRIAL_STEP_SLEEP=0 \
        TRIAL_PYTHONPATH=$TT_PYTHONPATH as_user /usr/bin/python3 "$TT_JOB" >"$1" 2>&1
}

# tt_loss OUT [JOB.N] - the final loss the run printed (of attempt N).
tt_loss() {
    local who=${2:-[0-9a-z]*\.[0-9]*}
    sed -n "s/^trial\[$who\]: final loss //p" "$1" | tail -n 1
}

# tt_steps_run OUT - the training steps all attempts ran together.
tt_steps_run() {
    grep -oE 'ran [0-9]+ steps in this attempt' "$1" | awk '{ s += $2 } END { print s + 0 }'
}

# tt_ckpt_before DIR NAME - the checkpoint written before NAME (the second
# newest by mtime once NAME is the newest).
tt_ckpt_before() {
    local f best=
    for f in "$1"/checkpoint-*; do
        [[ -f $f && ${f##*/} != "$2" ]] || continue
        [[ -z $best || $f -nt $best ]] && best=$f
    done
    printf '%s\n' "${best##*/}"
}
