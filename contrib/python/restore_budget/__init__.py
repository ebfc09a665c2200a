"""restore_budget - the job's side of the restore_budget contract, in Python.

A trial job (a requeueable Slurm batch job that checkpoints) keeps three
promises (README, "What the job sees"; docs/rule.md):

1. it writes checkpoints atomically and points ``latest`` at the newest,
2. it restores from the checkpoint the plugin hands it and, when that
   restore fails, exits with the cluster's requeue code,
3. it acknowledges a restore that worked.

This module does each of them with the standard library only (Python >= 3.9)::

    import restore_budget as rb
    path = rb.checkpoint()            # None on a fresh start
    if path:
        try:
            state = load(path)
        except Exception as e:
            rb.restore_failed(str(e))  # exits with the requeue code
        rb.confirm()
    ...
    rb.save(lambda tmp: dump(state, tmp), step)

Outside Slurm (no ``RESTORE_BUDGET_PHASE``, which the plugin always sets)
every function does the local thing, so the same script runs on a laptop:
checkpoints go to ``$RESTORE_BUDGET_LOCAL_DIR`` or ``./ckpt``, ``checkpoint()``
is the newest one there, ``confirm()`` does nothing.
"""

import os
import re
import sys
from typing import Callable, NoReturn, Optional

__all__ = [
    "attempt",
    "checkpoint",
    "checkpoint_dir",
    "confirm",
    "phase",
    "restore_failed",
    "save",
]

PREFIX = "restore_budget: "
# The pointer entry the plugin follows first (config: checkpoint.latest).
LATEST = "latest"
# Saved names are checkpoint-<step>, matched by the plugin's default
# checkpoint.pattern "checkpoint*"; temp names start with "." and end in
# ".tmp", both skipped by the plugin's scan (docs/rule.md, "Finding the
# checkpoint"), so a half-written file is never handed to a job.
CHECKPOINT_NAME = re.compile(r"^checkpoint-([0-9]+)$")
DEFAULT_LOCAL_DIR = "ckpt"


def _env(name: str) -> str:
    """The value of RESTORE_BUDGET_<name>, "" when unset."""
    return os.environ.get("RESTORE_BUDGET_" + name, "")


def _under_plugin() -> bool:
    """True when the plugin set up this job (it always exports the phase)."""
    return _env("PHASE") != ""


def _int_or_none(text: str) -> Optional[int]:
    try:
        return int(text)
    except ValueError:
        return None


def attempt() -> int:
    """This attempt's number: 0 on the first run, n after n requeues.

    RESTORE_BUDGET_ATTEMPT, else Slurm's SLURM_RESTART_COUNT, else 0.
    """
    for text in (_env("ATTEMPT"), os.environ.get("SLURM_RESTART_COUNT", "")):
        value = _int_or_none(text)
        if value is not None:
            return value
    return 0


def phase() -> str:
    """The phase: "FRESH", "RESTORING" or "RUNNING" (RESTORE_BUDGET_PHASE);
    "FRESH" outside Slurm."""
    return _env("PHASE") or "FRESH"


def _local_dir() -> str:
    return _env("LOCAL_DIR") or DEFAULT_LOCAL_DIR


def _newest_local(directory: str) -> Optional[str]:
    """The target of <directory>/latest if it is a checkpoint-N there, else
    the checkpoint-N with the highest N; None when there is none."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return None
    steps = {}
    for name in names:
        match = CHECKPOINT_NAME.match(name)
        if match and os.path.isfile(os.path.join(directory, name)):
            steps[name] = int(match.group(1))
    try:
        target = os.readlink(os.path.join(directory, LATEST))
    except OSError:
        target = ""
    if target in steps:
        return os.path.abspath(os.path.join(directory, target))
    if not steps:
        return None
    newest = max(steps, key=lambda n: steps[n])
    return os.path.abspath(os.path.join(directory, newest))


def checkpoint() -> Optional[str]:
    """The path to restore from, or None when there is nothing to restore.

    Under the plugin: RESTORE_BUDGET_CHECKPOINT (the plugin chose it, maybe
    an older one after a fallback). Outside Slurm: the newest checkpoint-N
    in the local directory.
    """
    if _under_plugin():
        return _env("CHECKPOINT") or None
    return _newest_local(_local_dir())


def checkpoint_dir() -> str:
    """Where save() writes.

    RESTORE_BUDGET_CHECKPOINT_DIR when set, else the directory of
    checkpoint(), else $RESTORE_BUDGET_LOCAL_DIR or ./ckpt. Give sbatch
    --checkpoint-dir the same directory, so the plugin finds what you save.
    """
    explicit = _env("CHECKPOINT_DIR")
    if explicit:
        return explicit
    current = checkpoint()
    if current:
        return os.path.dirname(current)
    return _local_dir()


def _fsync_path(path: str, flags: int = os.O_RDONLY) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _point_latest(directory: str, name: str) -> None:
    """Replace <directory>/latest by a symlink to name in one rename, so a
    reader sees the old target or the new one, never none."""
    tmp_link = os.path.join(directory, ".%s.%d.tmp" % (LATEST, os.getpid()))
    _remove_quietly(tmp_link)
    os.symlink(name, tmp_link)
    try:
        os.replace(tmp_link, os.path.join(directory, LATEST))
    except OSError:
        _remove_quietly(tmp_link)
        raise


def save(write_fn: Callable[[str], object], step: int) -> str:
    """Write checkpoint-<step> crash-safely; return its absolute path.

    write_fn(tmp_path) writes the whole checkpoint as one file at tmp_path
    (e.g. ``lambda p: torch.save(state, p)``). Then the file is fsynced,
    renamed to checkpoint-<step>, ``latest`` is pointed at it atomically and
    the directory is fsynced. If write_fn raises, its temp file is removed
    and the exception propagates: no checkpoint-<step> appears, and the
    previous checkpoint and ``latest`` are untouched.
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(PREFIX + "save: step must be an int >= 0, not %r"
                         % (step,))
    directory = os.path.abspath(checkpoint_dir())
    os.makedirs(directory, exist_ok=True)
    name = "checkpoint-%d" % step
    tmp_path = os.path.join(directory, ".%s.%d.tmp" % (name, os.getpid()))
    try:
        write_fn(tmp_path)
        if not os.path.isfile(tmp_path):
            raise OSError(PREFIX + "save: write_fn wrote no file at "
                          + tmp_path)
        _fsync_path(tmp_path)
        final = os.path.join(directory, name)
        os.replace(tmp_path, final)
    except BaseException:
        _remove_quietly(tmp_path)
        raise
    _point_latest(directory, name)
    _fsync_path(directory)
    return final


def confirm() -> None:
    """Acknowledge that the restore worked: touch RESTORE_BUDGET_ACK_FILE.

    From then on a failure of this attempt is charged as an ordinary failure,
    not as a failed restore. Outside Slurm (no ack file named) it does
    nothing. An error (e.g. the directory is gone) is raised, not hidden:
    an unacknowledged restore is charged as failed.
    """
    path = _env("ACK_FILE")
    if not path:
        return
    with open(path, "a", encoding="utf-8"):
        pass
    os.utime(path)


def restore_failed(reason: str) -> NoReturn:
    """Log "restore_budget: restore failed: <reason>" and exit with the
    requeue code, so Slurm requeues the job and the plugin charges a failed
    restore (RESTORE_BUDGET_REQUEUE_EXIT). Without that variable (outside
    Slurm, or a plugin that does not export it) exit 1 and say so."""
    sys.stderr.write(PREFIX + "restore failed: %s\n" % reason)
    code = _int_or_none(_env("REQUEUE_EXIT"))
    if code is None or not 0 < code < 256:
        sys.stderr.write(
            PREFIX + "no requeue exit code is known (RESTORE_BUDGET_REQUEUE_EXIT "
            "is %s); exiting 1, which Slurm does not requeue\n"
            % (repr(_env("REQUEUE_EXIT")) if _env("REQUEUE_EXIT") else "unset"))
        code = 1
    sys.stderr.flush()
    sys.exit(code)
