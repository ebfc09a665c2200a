#!/usr/bin/python3
# torch_trial.py - a real PyTorch "trial": a requeueable batch job that trains
# a tiny model on synthetic data, checkpoints with torch.save through the
# restore_budget Python helper and, when restore_budget hands it a checkpoint
# after a requeue, restores with torch.load.  Copy it and replace the model.
#
#   sbatch --checkpoint-dir=ckpt contrib/jobs/torch_trial.py
#   /usr/bin/python3 contrib/jobs/torch_trial.py      # no Slurm: runs locally
#
#SBATCH --job-name=torch_trial
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=trial-%j.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#
# The contract it keeps (see contrib/jobs/trial.sh and the project's
# docs/rule.md, "What the job sees"):
#   1. checkpoints are written atomically (restore_budget.save: temp file,
#      fsync, rename to checkpoint-<step>, `latest` replaced atomically);
#      never from a signal handler: SIGTERM only logs and ends the attempt,
#      the last complete checkpoint is what the rerun restores;
#   2. a checkpoint that torch.load cannot read ends the attempt with the
#      cluster's RequeueExit code (restore_budget.restore_failed), so Slurm
#      requeues it and the plugin charges a failed restore;
#   3. after a successful load the restore is confirmed (restore_budget.confirm).
# A checkpoint holds the model, the optimizer, the step and every RNG state
# the training draws from (torch's and Python's), so a resumed run draws the
# same batches and dropout masks and ends with exactly the loss of an
# uninterrupted run of the same seed.
#
# Knobs (environment, e.g. sbatch --export=ALL,...):
#   TRIAL_STEPS=300         steps in total
#   TRIAL_CKPT_EVERY=50     checkpoint every this many steps
#   TRIAL_STEP_SLEEP=0      seconds to sleep per step (tests: time to preempt)
#   TRIAL_SEED=1234         the seed of the data, the model and the RNGs
#   TRIAL_PYTHONPATH=DIR    where the restore_budget module is, if it is not
#                           installed (e.g. <checkout>/contrib/python)
import os
import random
import signal
import socket
import sys
import time

sys.stdout.reconfigure(line_buffering=True)
for _p in (os.environ.get("TRIAL_PYTHONPATH", ""),
           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")):
    if _p and os.path.isdir(os.path.join(_p, "restore_budget")):
        sys.path.insert(0, _p)
        break

import torch  # noqa: E402  (after the path set-up above)

import restore_budget as rb  # noqa: E402

STEPS = int(os.environ.get("TRIAL_STEPS", "300"))
CKPT_EVERY = int(os.environ.get("TRIAL_CKPT_EVERY", "50"))
STEP_SLEEP = float(os.environ.get("TRIAL_STEP_SLEEP", "0"))
SEED = int(os.environ.get("TRIAL_SEED", "1234"))
ATTEMPT = os.environ.get("SLURM_RESTART_COUNT", "0")


def log(msg):
    print("trial[%s.%s]: %s" % (os.environ.get("SLURM_JOB_ID", "nojob"), ATTEMPT, msg))


class Run:
    """What the attempt did so far: read by the SIGTERM handler."""
    step = 0
    first = 0


def on_sigterm(signum, frame):
    # Preemption and `scontrol requeue` send SIGTERM (SIGKILL after KillWait).
    # No checkpoint here: a save interrupted by the SIGKILL would leave a
    # half-written file.  Log, then die from the signal like an untrapped job.
    log("got SIGTERM at step %d (ran %d steps in this attempt)" % (Run.step, Run.step - Run.first))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def make_data():
    """A fixed synthetic regression set: y = sin(x . w) + noise."""
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(512, 8, generator=g)
    w = torch.randn(8, 1, generator=g)
    y = torch.sin(x @ w) + 0.05 * torch.randn(512, 1, generator=g)
    return x, y


def make_model():
    torch.manual_seed(SEED)
    random.seed(SEED)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(),
                                torch.nn.Dropout(0.1), torch.nn.Linear(32, 1))
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def load(path):
    """torch.load the whole checkpoint (it holds RNG states, not only
    weights: torch >= 2.6 would refuse it with its weights_only default)."""
    try:
        return torch.load(path, weights_only=False)
    except TypeError as e:  # a torch without the weights_only argument
        if "weights_only" not in str(e):
            raise
        return torch.load(path)


def restore(model, opt, path):
    log("restoring from %s" % path)
    try:
        state = load(path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])
        step = int(state["step"])
    except Exception as e:  # any unreadable checkpoint is a failed restore
        log("torch.load failed: %s: %s" % (type(e).__name__, e))
        rb.restore_failed("torch.load(%s): %s: %s" % (path, type(e).__name__, e))
        sys.exit(1)  # not reached: restore_failed exits
    log("restored step %d" % step)
    rb.confirm()
    if os.environ.get("RESTORE_BUDGET_ACK_FILE"):
        log("acknowledged restore (%s)" % os.environ["RESTORE_BUDGET_ACK_FILE"])
    return step


def save(model, opt, step):
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
             "torch_rng": torch.get_rng_state(), "python_rng": random.getstate()}
    path = rb.save(lambda tmp: torch.save(state, tmp), step)
    log("checkpoint step %d (%s)" % (step, os.path.basename(path)))


def train_step(model, opt, x, y):
    # Python's RNG picks the batch size, torch's the rows and the dropout mask.
    idx = torch.randint(0, x.shape[0], (random.choice((16, 32, 64)),))
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
    loss.backward()
    opt.step()


def final_loss(model, x, y):
    model.eval()
    with torch.no_grad():
        return torch.nn.functional.mse_loss(model(x), y).item()


def main():
    log("start on %s at %s, SLURM_RESTART_COUNT=%s, torch %s"
        % (socket.gethostname().split(".")[0], time.strftime("%H:%M:%S"),
           os.environ.get("SLURM_RESTART_COUNT", "<unset>"), torch.__version__))
    for k in sorted(k for k in os.environ if k.startswith("RESTORE_BUDGET_")):
        print("trial:   %s=%s" % (k, os.environ[k]))
    signal.signal(signal.SIGTERM, on_sigterm)
    torch.set_num_threads(1)
    x, y = make_data()
    model, opt = make_model()
    ckpt = rb.checkpoint()
    if ckpt:
        Run.step = Run.first = restore(model, opt, ckpt)
    else:
        log("no checkpoint to restore: starting fresh")
    model.train()
    while Run.step < STEPS:
        train_step(model, opt, x, y)
        Run.step += 1
        if Run.step % CKPT_EVERY == 0 or Run.step == STEPS:
            save(model, opt, Run.step)
        if STEP_SLEEP > 0:
            time.sleep(STEP_SLEEP)
    log("ran %d steps in this attempt (%d -> %d)" % (Run.step - Run.first, Run.first, Run.step))
    log("final loss %.6f" % final_loss(model, x, y))
    log("done: %d steps" % STEPS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
