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

The checkpoint directory must be one no other user can plant names in: a
directory others can write that is not sticky is refused, naming the fix (a
per-user subdirectory); see the README, "A shared checkpoint directory".

Outside Slurm (no ``RESTORE_BUDGET_PHASE``, which the plugin always sets)
every function does the local thing, so the same script runs on a laptop:
checkpoints go to ``$RESTORE_BUDGET_LOCAL_DIR`` or ``./ckpt``, ``checkpoint()``
is the newest one there, ``confirm()`` does nothing.
"""

import errno
import os
import re
import secrets
import stat
import struct
import sys
from typing import Callable, List, NoReturn, Optional

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
# checkpoint"), so a half-written file is never handed to a job. Temp names
# hold 128 random bits and are created exclusively, never through a link.
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


# Why a directory is refused, and what to do instead (README, "A shared
# checkpoint directory"; contrib/python/README.md).
_SHARED_FIX = ("use a per-user subdirectory only you can write, e.g. "
               "'mkdir -m 700 %s' and give it to --checkpoint-dir "
               "(or remove the others' write access, or make the directory "
               "sticky: chmod +t)")

# POSIX ACL xattr (linux/posix_acl_xattr.h): a 4-byte version, then entries
# of (tag u16, perm u16, id u32), little-endian.
_ACL_XATTR = "system.posix_acl_access"
_ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP, _ACL_MASK, _ACL_OTHER = (
    0x02, 0x04, 0x08, 0x10, 0x20)
_ACL_WRITE = 0x02


def _my_name() -> str:
    try:
        import pwd
        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return str(os.geteuid())


def _group_is_only_mine(gid: int) -> bool:
    """Is gid the user's private group (Debian's USERGROUPS: named as the
    user, the user's primary group, no other listed member)? Then its write
    bit lets no one else in."""
    try:
        import grp
        import pwd
        group = grp.getgrgid(gid)
        me = pwd.getpwuid(os.geteuid())
    except (ImportError, KeyError):
        return False
    return (group.gr_name == me.pw_name and me.pw_gid == gid
            and set(group.gr_mem) <= {me.pw_name})


def _acl_entries(fd: int):
    """The access ACL's (tag, perm, id) entries, or None without one."""
    if not hasattr(os, "getxattr"):
        return None
    try:
        data = os.getxattr(fd, _ACL_XATTR)
    except OSError:   # ENODATA (no ACL), ENOTSUP (no ACLs on this fs)
        return None
    if len(data) < 4:
        return None
    usable = 4 + (len(data) - 4) // 8 * 8
    return list(struct.iter_unpack("<HHI", data[4:usable]))


def _acl_writers(fd: int, st: os.stat_result) -> Optional[List[str]]:
    """Who other than the user may write, by the directory's ACL; None
    when it has none (the mode bits then say it)."""
    entries = _acl_entries(fd)
    if not entries:
        return None
    mask = next((p for t, p, _ in entries if t == _ACL_MASK), 0o7)
    who = []
    for tag, perm, ident in entries:
        if not perm & _ACL_WRITE:
            continue
        if tag == _ACL_USER and ident != os.geteuid() and mask & _ACL_WRITE:
            who.append("user %d (ACL)" % ident)
        elif (tag == _ACL_GROUP and mask & _ACL_WRITE
              and not _group_is_only_mine(ident)):
            who.append("group %d (ACL)" % ident)
        elif (tag == _ACL_GROUP_OBJ and mask & _ACL_WRITE
              and not _group_is_only_mine(st.st_gid)):
            who.append("group %d" % st.st_gid)
        elif tag == _ACL_OTHER:
            who.append("every user")
    return who


def _other_writers(fd: int, st: os.stat_result) -> List[str]:
    """Who other than the user may create, rename or remove entries in the
    directory (fd, st): its owner if that is another user, and whom its mode
    bits or its ACL let write."""
    who = []
    if st.st_uid not in (os.geteuid(), 0):
        who.append("its owner, uid %d" % st.st_uid)
    acl = _acl_writers(fd, st)
    if acl is not None:
        return who + acl
    if st.st_mode & stat.S_IWGRP and not _group_is_only_mine(st.st_gid):
        who.append("group %d" % st.st_gid)
    if st.st_mode & stat.S_IWOTH:
        who.append("every user")
    return who


def _refuse_shared(fd: int, directory: str) -> None:
    """Refuse a directory another user can plant names in: writable by
    others and not sticky, or owned by another user (who may always rename
    what is in it). A sticky directory lets nobody else rename or remove our
    entries, and every name written there is unpredictable and created
    exclusively."""
    st = os.fstat(fd)
    who = _other_writers(fd, st)
    owner_other = st.st_uid not in (os.geteuid(), 0)
    if not who or (st.st_mode & stat.S_ISVTX and not owner_other):
        return
    raise OSError(PREFIX + "checkpoint directory %s can be written by %s and "
                  "is not %s: another user could plant a link, a FIFO or a "
                  "newer checkpoint under the names this job writes; %s"
                  % (directory, ", ".join(who),
                     "yours" if owner_other else "sticky",
                     _SHARED_FIX % os.path.join(directory, _my_name())))


def _open_dir(directory: str) -> int:
    """An fd on directory, refused if another user could plant names in it;
    every later step works relative to it, so a path swapped after the
    check changes nothing."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _refuse_shared(fd, directory)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _tmp_name(base: str) -> str:
    """.<base>.<128 random bits>.tmp: hidden and ".tmp", so the plugin's
    scan skips it (docs/rule.md, "Finding the checkpoint"); unpredictable,
    so nobody can plant it beforehand (the pid was visible in ps)."""
    return ".%s.%s.tmp" % (base, secrets.token_hex(16))


def _remove_tree_at(dfd: int, name: str) -> None:
    """Remove dfd/name and what write_fn left in it, never following a link;
    quietly (the caller's own error, if any, is the one that matters)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                     | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return
    try:
        with os.scandir(fd) as entries:
            for entry in list(entries):
                if entry.is_dir(follow_symlinks=False):
                    _remove_tree_at(fd, entry.name)
                else:
                    os.unlink(entry.name, dir_fd=fd)
    except (OSError, RecursionError):
        pass
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=dfd)
    except OSError:
        pass


def _fsync_written(tfd: int, name: str, shown: str) -> None:
    """Check that write_fn left a non-empty regular file at tfd/name (never
    following a link or opening a FIFO) and fsync it."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                     | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=tfd)
    except FileNotFoundError:
        raise OSError(PREFIX + "save: write_fn wrote no file at " + shown)
    except OSError as e:
        raise OSError(PREFIX + "save: write_fn left no regular file at %s: %s"
                      % (shown, e.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(PREFIX + "save: write_fn left no regular file at "
                          + shown)
        if st.st_size == 0:
            raise OSError(PREFIX + "save: write_fn wrote no file at %s "
                          "(it is empty)" % shown)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_checkpoint(dfd: int, directory: str, name: str,
                      write_fn: Callable[[str], object]) -> None:
    """write_fn writes <directory>/<.name.RANDOM.tmp>/<name>, in a directory
    made for this save (mode 0700, exclusive: mkdir never follows a link
    and fails if the name exists), where no other user can put anything; the
    file is made first with O_CREAT|O_EXCL|O_NOFOLLOW. Then it is fsynced
    and renamed to <directory>/<name>; the temp directory goes in any case."""
    tmp_dir = _tmp_name(name)
    os.mkdir(tmp_dir, 0o700, dir_fd=dfd)
    try:
        tfd = os.open(tmp_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                      | os.O_CLOEXEC, dir_fd=dfd)
        try:
            os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                             | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                             dir_fd=tfd))
            shown = os.path.join(directory, tmp_dir, name)
            write_fn(shown)
            _fsync_written(tfd, name, shown)
            os.replace(name, name, src_dir_fd=tfd, dst_dir_fd=dfd)
        finally:
            os.close(tfd)
    finally:
        _remove_tree_at(dfd, tmp_dir)


def _point_latest(dfd: int, name: str) -> None:
    """Replace latest by a symlink to name in one rename, so a reader sees
    the old target or the new one, never none. The link is made under an
    unpredictable name first (symlink(2) fails if the name exists and never
    follows one)."""
    tmp_link = _tmp_name(LATEST)
    os.symlink(name, tmp_link, dir_fd=dfd)
    try:
        os.replace(tmp_link, LATEST, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:
            os.unlink(tmp_link, dir_fd=dfd)
        except OSError:
            pass
        raise


def save(write_fn: Callable[[str], object], step: int) -> str:
    """Write checkpoint-<step> crash-safely; return its absolute path.

    write_fn(tmp_path) writes the whole checkpoint as one file at tmp_path
    (e.g. ``lambda p: torch.save(state, p)``): an empty file this call made
    in a fresh private directory (<dir>/.checkpoint-<step>.<random>.tmp/);
    write over it, or replace it. Then the file is fsynced, renamed to
    checkpoint-<step>, ``latest`` is pointed at it atomically and the
    directory is fsynced. If write_fn raises (or writes nothing), the temp
    directory is removed and the exception propagates: no checkpoint-<step>
    appears, and the previous checkpoint and ``latest`` are untouched.

    A checkpoint directory another user could write (group or other write
    bits, or an ACL) that is not sticky, or one owned by another user, is
    refused (OSError naming the fix: a per-user subdirectory). A directory
    save() makes is made writable by its user only.
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(PREFIX + "save: step must be an int >= 0, not %r"
                         % (step,))
    directory = os.path.abspath(checkpoint_dir())
    os.makedirs(directory, mode=0o755, exist_ok=True)
    name = "checkpoint-%d" % step
    dfd = _open_dir(directory)
    try:
        _write_checkpoint(dfd, directory, name, write_fn)
        _point_latest(dfd, name)
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return os.path.join(directory, name)


def _open_ack(dfd: int, name: str, path: str) -> int:
    """Create dfd/name exclusively, or open the one there without following
    a link or blocking on a FIFO."""
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        return os.open(name, flags | os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                       0o666, dir_fd=dfd)
    except FileExistsError:
        pass
    try:
        return os.open(name, flags | os.O_RDONLY, dir_fd=dfd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OSError(PREFIX + "confirm: %s is a symbolic link, not "
                          "followed: the restore is not confirmed; remove it "
                          "(did another user plant it?)" % path)
        raise


def confirm() -> None:
    """Acknowledge that the restore worked: touch RESTORE_BUDGET_ACK_FILE.

    From then on a failure of this attempt is charged as an ordinary failure,
    not as a failed restore. Outside Slurm (no ack file named) it does
    nothing. An error (e.g. the directory is gone) is raised, not hidden:
    an unacknowledged restore is charged as failed. It never follows a link
    or opens a FIFO, touches only a regular file of the user's own, and
    refuses a shared directory as save() does.
    """
    path = _env("ACK_FILE")
    if not path:
        return
    directory, name = os.path.split(os.path.abspath(path))
    dfd = _open_dir(directory)
    try:
        fd = _open_ack(dfd, name, path)
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise OSError(PREFIX + "confirm: %s is %s, not a regular file of "
                          "yours (did another user plant it?): the restore "
                          "is not confirmed; remove it"
                          % (path, "a regular file of uid %d" % st.st_uid
                             if stat.S_ISREG(st.st_mode) else
                             "not a regular file"))
        os.utime(fd)
    finally:
        os.close(fd)


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
