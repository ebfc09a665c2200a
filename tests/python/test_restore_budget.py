"""Unit tests of contrib/python/restore_budget (standard library only).

Run: /usr/bin/python3 -m unittest discover -s tests/python   (or make python-test)
Each test gets a temp dir as its working directory and an environment
without any RESTORE_BUDGET_* or SLURM_* variable, then sets what it needs.
"""

import contextlib
import fnmatch
import io
import os
import re
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_DIR = os.path.join(HERE, "..", "..", "contrib", "python")
sys.path.insert(0, os.path.abspath(MODULE_DIR))

import restore_budget as rb  # noqa: E402

# The plugin's default checkpoint.pattern (config/restore_budget.conf).
PLUGIN_PATTERN = "checkpoint*"


def clean_env(**extra):
    """os.environ without the plugin's or Slurm's variables, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RESTORE_BUDGET_", "SLURM_"))}
    env.update(extra)
    return env


def write_text(text):
    """A write_fn that writes text to the path it is given."""
    def write(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return write


def start_child(fn, creds=None, ready=None):
    """fn() in a forked child, as creds = (uid, gid, groups) if given; the
    child waits for a byte on ready (a pipe's read end) first when given.
    Returns (pid, the read end of what it says): see wait_child."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: never returns into unittest
        code, said = 1, ""
        try:
            os.close(rfd)
            if creds:
                os.setgroups(creds[2])
                os.setgid(creds[1])
                os.setuid(creds[0])
            if ready is not None:
                os.read(ready, 1)
            said, code = str(fn() or ""), 0
        except BaseException as e:  # noqa: B036 - report everything
            said = "%s: %s" % (type(e).__name__, e)
        finally:
            os.write(wfd, said.encode("utf-8", "replace")[:60000])
            os._exit(code)
    os.close(wfd)
    return pid, rfd


def wait_child(pid, rfd, timeout=10.0):
    """(exit status, what it said): 0 and fn's return value, 1 and the
    exception, or ("timeout", "") when it ran past timeout (then killed)."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(rfd)
            return "timeout", ""
        time.sleep(0.01)
    chunks = []
    while True:
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(rfd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode()


def run_child(fn, creds=None, timeout=10.0):
    return wait_child(*start_child(fn, creds), timeout=timeout)

class Case(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = os.path.realpath(self.tmp.name)
        old_cwd = os.getcwd()
        os.chdir(self.dir)
        self.addCleanup(os.chdir, old_cwd)
        self.set_env()

    def set_env(self, **extra):
        patcher = mock.patch.dict(os.environ, clean_env(**extra), clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)

    def ckpt(self, *names):
        return os.path.join(self.dir, "ckpt", *names)

    def listing(self):
        return sorted(os.listdir(self.ckpt()))


class TestSave(Case):
    def test_save_is_atomic_rename(self):
        seen = {}

        def write(path):
            seen["tmp"] = path
            seen["final_during_write"] = os.path.exists(self.ckpt("checkpoint-3"))
            write_text("state 3")(path)

        with mock.patch("os.replace", wraps=os.replace) as replace:
            final = rb.save(write, 3)
        self.assertEqual(final, self.ckpt("checkpoint-3"))
        self.assertFalse(seen["final_during_write"])
        # renamed from inside its private temp directory, by directory fds
        call = replace.call_args_list[0]
        self.assertEqual(call.args, ("checkpoint-3", "checkpoint-3"))
        self.assertEqual(os.path.basename(seen["tmp"]), "checkpoint-3")
        with open(final, encoding="utf-8") as f:
            self.assertEqual(f.read(), "state 3")
        self.assertFalse(os.path.exists(seen["tmp"]))
        self.assertFalse(os.path.exists(os.path.dirname(seen["tmp"])))

    def test_save_fsyncs_file_then_directory(self):
        order = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd):
            st = os.fstat(fd)
            order.append("fsync dir" if stat.S_ISDIR(st.st_mode) else
                         "fsync file %d" % st.st_size)
            real_fsync(fd)

        def replace(a, b, **kw):
            order.append("replace " + b)
            real_replace(a, b, **kw)

        with mock.patch("os.fsync", side_effect=fsync), \
             mock.patch("os.replace", side_effect=replace):
            rb.save(write_text("x"), 1)
        self.assertEqual(order, ["fsync file 1", "replace checkpoint-1",
                                 "replace latest", "fsync dir"])

    def test_save_points_latest(self):
        rb.save(write_text("5"), 5)
        self.assertEqual(os.readlink(self.ckpt("latest")), "checkpoint-5")
        rb.save(write_text("7"), 7)
        self.assertEqual(os.readlink(self.ckpt("latest")), "checkpoint-7")
        self.assertEqual(self.listing(), ["checkpoint-5", "checkpoint-7", "latest"])

    def test_save_temp_name_not_a_checkpoint(self):
        seen = []
        rb.save(lambda p: (seen.append(p), write_text("x")(p)), 12)
        # the entry in the checkpoint directory is the temp directory
        name = os.path.basename(os.path.dirname(seen[0]))
        self.assertEqual(os.path.dirname(os.path.dirname(seen[0])), self.ckpt())
        self.assertFalse(fnmatch.fnmatch(name, PLUGIN_PATTERN))
        # docs/rule.md: names starting with "." or ending in ".tmp" are skipped
        self.assertTrue(name.startswith("."))
        self.assertTrue(name.endswith(".tmp"))

    def test_save_hands_write_fn_a_new_file_in_a_fresh_private_dir(self):
        seen = []

        def write(path):
            tmp_dir = os.path.dirname(path)
            st_dir, st_file = os.lstat(tmp_dir), os.lstat(path)
            seen.append((path, stat.S_IMODE(st_dir.st_mode), st_dir.st_uid,
                         stat.S_ISREG(st_file.st_mode), st_file.st_size,
                         st_file.st_uid, sorted(os.listdir(tmp_dir))))
            write_text("x")(path)

        rb.save(write, 3)
        rb.save(write, 3)   # the same step again: another name
        for path, mode, dir_uid, regular, size, uid, names in seen:
            self.assertRegex(path, "^" + re.escape(self.ckpt()) +
                             r"/\.checkpoint-3\.[0-9a-f]{32}\.tmp/checkpoint-3$")
            self.assertEqual((mode & 0o077, dir_uid), (0, os.geteuid()))
            self.assertEqual((regular, size, uid), (True, 0, os.geteuid()))
            self.assertEqual(names, ["checkpoint-3"])
        self.assertNotEqual(seen[0][0], seen[1][0])
        self.assertEqual(self.listing(), ["checkpoint-3", "latest"])

    def test_save_latest_temp_name_is_unpredictable(self):
        with mock.patch("os.symlink", wraps=os.symlink) as symlink:
            rb.save(write_text("1"), 1)
            rb.save(write_text("2"), 2)
        names = [c.args[1] for c in symlink.call_args_list]
        for name in names:
            self.assertRegex(name, r"^\.latest\.[0-9a-f]{32}\.tmp$")
        self.assertNotEqual(names[0], names[1])

    def test_save_write_fn_may_replace_the_file(self):
        def write(path):
            write_text("via rename")(path + ".part")
            os.replace(path + ".part", path)

        final = rb.save(write, 6)
        with open(final, encoding="utf-8") as f:
            self.assertEqual(f.read(), "via rename")
        self.assertEqual(self.listing(), ["checkpoint-6", "latest"])

    def test_save_write_fn_leaving_a_link_is_an_error(self):
        write_text("elsewhere")(os.path.join(self.dir, "other"))

        def write(path):
            os.unlink(path)
            os.symlink(os.path.join(self.dir, "other"), path)

        with self.assertRaisesRegex(OSError, "left no regular file"):
            rb.save(write, 2)
        self.assertEqual(self.listing(), [])

    def test_save_refuses_a_directory_others_can_write(self):
        os.makedirs(self.ckpt())
        for mode in (0o777, 0o757):
            os.chmod(self.ckpt(), mode)
            with self.assertRaisesRegex(
                    OSError, "^restore_budget: checkpoint directory .* can be "
                    "written by .*every user.* and is not sticky: .*"
                    "per-user subdirectory"):
                rb.save(write_text("x"), 1)
            self.assertEqual(self.listing(), [])
        os.chmod(self.ckpt(), 0o1777)   # sticky: others cannot rename ours
        rb.save(write_text("x"), 1)
        self.assertEqual(self.listing(), ["checkpoint-1", "latest"])

    def test_save_makes_a_missing_directory_only_its_user_can_write(self):
        old = os.umask(0o002)
        self.addCleanup(os.umask, old)
        rb.save(write_text("x"), 1)
        self.assertEqual(stat.S_IMODE(os.stat(self.ckpt()).st_mode) & 0o022, 0)

    def test_save_crash_in_write_fn_leaves_nothing(self):
        rb.save(write_text("old"), 1)

        def crash(path):
            write_text("half a checkpo")(path)
            raise RuntimeError("disk full")

        with self.assertRaisesRegex(RuntimeError, "disk full"):
            rb.save(crash, 2)
        self.assertEqual(self.listing(), ["checkpoint-1", "latest"])
        self.assertEqual(os.readlink(self.ckpt("latest")), "checkpoint-1")

    def test_save_interrupt_in_write_fn_leaves_nothing(self):
        def interrupted(path):
            write_text("half")(path)
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            rb.save(interrupted, 4)
        self.assertEqual(self.listing(), [])

    def test_save_write_fn_wrote_nothing_is_an_error(self):
        with self.assertRaisesRegex(OSError, "^restore_budget: save: write_fn wrote no file"):
            rb.save(lambda p: None, 1)
        with self.assertRaisesRegex(OSError, "^restore_budget: save: write_fn wrote no file"):
            rb.save(os.unlink, 1)
        self.assertEqual(self.listing(), [])

    def test_save_rejects_bad_step(self):
        for step in (-1, "3", 2.0, True):
            with self.assertRaisesRegex(ValueError, "^restore_budget: save: step"):
                rb.save(write_text("x"), step)

    def test_save_under_plugin_writes_next_to_checkpoint(self):
        os.makedirs(os.path.join(self.dir, "run", "ck"))
        handed = os.path.join(self.dir, "run", "ck", "checkpoint-3")
        write_text("3")(handed)
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING",
                     RESTORE_BUDGET_CHECKPOINT=handed)
        self.assertEqual(rb.save(write_text("4"), 4),
                         os.path.join(self.dir, "run", "ck", "checkpoint-4"))

    def test_save_uses_checkpoint_dir_variable(self):
        self.set_env(RESTORE_BUDGET_PHASE="FRESH", RESTORE_BUDGET_CHECKPOINT="",
                     RESTORE_BUDGET_CHECKPOINT_DIR=os.path.join(self.dir, "mine"))
        self.assertEqual(rb.save(write_text("1"), 1),
                         os.path.join(self.dir, "mine", "checkpoint-1"))

    def test_save_local_dir_variable(self):
        self.set_env(RESTORE_BUDGET_LOCAL_DIR="elsewhere")
        self.assertEqual(rb.checkpoint_dir(), "elsewhere")
        self.assertEqual(rb.save(write_text("1"), 1),
                         os.path.join(self.dir, "elsewhere", "checkpoint-1"))


class TestCheckpoint(Case):
    def test_checkpoint_outside_slurm_is_newest_local(self):
        self.assertIsNone(rb.checkpoint())
        os.makedirs(self.ckpt())
        for name in ("checkpoint-2", "checkpoint-10", ".checkpoint-11.9.tmp",
                     "checkpoint-x"):
            write_text(name)(self.ckpt(name))
        self.assertEqual(rb.checkpoint(), self.ckpt("checkpoint-10"))

    def test_checkpoint_outside_slurm_follows_latest(self):
        rb.save(write_text("9"), 9)
        rb.save(write_text("3"), 3)   # restarted from an older one
        self.assertEqual(rb.checkpoint(), self.ckpt("checkpoint-3"))
        os.unlink(self.ckpt("checkpoint-3"))   # a dangling latest is ignored
        self.assertEqual(rb.checkpoint(), self.ckpt("checkpoint-9"))

    def test_checkpoint_under_plugin_is_the_variable(self):
        rb.save(write_text("9"), 9)   # the plugin's choice wins over the scan
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING",
                     RESTORE_BUDGET_CHECKPOINT="/shared/run/ckpt/checkpoint-7")
        self.assertEqual(rb.checkpoint(), "/shared/run/ckpt/checkpoint-7")

    def test_checkpoint_under_plugin_empty_is_none(self):
        rb.save(write_text("9"), 9)
        self.set_env(RESTORE_BUDGET_PHASE="FRESH", RESTORE_BUDGET_CHECKPOINT="")
        self.assertIsNone(rb.checkpoint())
        self.assertEqual(rb.checkpoint_dir(), "ckpt")


class TestAttemptPhase(Case):
    def test_attempt_from_variable_then_restart_count_then_zero(self):
        self.assertEqual(rb.attempt(), 0)
        self.set_env(SLURM_RESTART_COUNT="3")
        self.assertEqual(rb.attempt(), 3)
        self.set_env(SLURM_RESTART_COUNT="3", RESTORE_BUDGET_ATTEMPT="4")
        self.assertEqual(rb.attempt(), 4)
        self.set_env(SLURM_RESTART_COUNT="junk")
        self.assertEqual(rb.attempt(), 0)

    def test_phase_outside_slurm_is_fresh(self):
        rb.save(write_text("1"), 1)
        self.assertEqual(rb.phase(), "FRESH")
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING")
        self.assertEqual(rb.phase(), "RESTORING")


class TestConfirmRestoreFailed(Case):
    def test_confirm_touches_ack_file(self):
        ack = os.path.join(self.dir, ".restore_budget-ack.c1.123.2")
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING", RESTORE_BUDGET_ACK_FILE=ack)
        rb.confirm()
        self.assertTrue(os.path.isfile(ack))
        os.utime(ack, (1, 1))
        rb.confirm()   # twice is fine, and refreshes it
        self.assertGreater(os.stat(ack).st_mtime, 1)

    def test_confirm_outside_slurm_is_noop(self):
        rb.confirm()
        self.assertEqual(os.listdir(self.dir), [])

    def test_confirm_error_is_raised(self):
        self.set_env(RESTORE_BUDGET_ACK_FILE=os.path.join(self.dir, "gone", "ack"))
        with self.assertRaises(OSError):
            rb.confirm()

    def test_confirm_never_follows_a_link(self):
        target = os.path.join(self.dir, "target")
        write_text("not an ack")(target)
        os.utime(target, (1, 1))
        ack = os.path.join(self.dir, ".restore_budget-ack.c1.7.1")
        os.symlink(target, ack)
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING", RESTORE_BUDGET_ACK_FILE=ack)
        with self.assertRaisesRegex(OSError, "^restore_budget: confirm: .* is a "
                                    "symbolic link, not followed"):
            rb.confirm()
        self.assertEqual(os.stat(target).st_mtime, 1)

    def test_confirm_never_opens_a_fifo(self):
        ack = os.path.join(self.dir, ".restore_budget-ack.c1.7.1")
        os.mkfifo(ack)
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING", RESTORE_BUDGET_ACK_FILE=ack)
        status, out = run_child(rb.confirm, timeout=5)
        self.assertEqual(status, 1, "confirm() on a FIFO: " + out)
        self.assertIn("not a regular file", out)

    def test_confirm_refuses_a_shared_directory(self):
        os.chmod(self.dir, 0o777)
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING", RESTORE_BUDGET_ACK_FILE=
                     os.path.join(self.dir, ".restore_budget-ack.c1.7.1"))
        with self.assertRaisesRegex(OSError, "not sticky: .*per-user subdirectory"):
            rb.confirm()
        self.assertEqual(os.listdir(self.dir), [])

    def restore_failed(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
            rb.restore_failed("torch.load: invalid load key")
        return cm.exception.code, err.getvalue()

    def test_restore_failed_exits_with_requeue_code(self):
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING", RESTORE_BUDGET_REQUEUE_EXIT="42")
        code, err = self.restore_failed()
        self.assertEqual(code, 42)
        self.assertEqual(err, "restore_budget: restore failed: torch.load: invalid load key\n")

    def test_restore_failed_without_requeue_code_exits_1(self):
        code, err = self.restore_failed()
        self.assertEqual(code, 1)
        self.assertRegex(err, "^restore_budget: restore failed: torch.load: invalid load key\n"
                         "restore_budget: no requeue exit code is known "
                         r"\(RESTORE_BUDGET_REQUEUE_EXIT is unset\); exiting 1")

    def test_restore_failed_bad_requeue_code_exits_1(self):
        for bad in ("abc", "0", "256"):
            self.set_env(RESTORE_BUDGET_REQUEUE_EXIT=bad)
            code, err = self.restore_failed()
            self.assertEqual(code, 1)
            self.assertIn("RESTORE_BUDGET_REQUEUE_EXIT is '%s'" % bad, err)


# The attack of issue 19, defect 3, run for real: the tests run as root, so a
# victim (rbuser, else uid 1001) and an attacker (nobody) share a project
# group; each runs in a forked child with only its own credentials.
SHARED_GID = 4219
ATTACKER = (65534, 65534, [SHARED_GID])


def victim_creds():
    try:
        import pwd
        entry = pwd.getpwnam("rbuser")
        return (entry.pw_uid, entry.pw_gid, [SHARED_GID])
    except (ImportError, KeyError):
        return (1001, 1001, [SHARED_GID])


@unittest.skipUnless(hasattr(os, "geteuid") and os.geteuid() == 0,
                     "needs root to run the victim and the attacker as two "
                     "other users (fork + setuid); run make python-test as root")
class TestSharedDirectory(Case):
    """A project directory (setgid, group-writable, not sticky, as in the
    issue) and a sticky one, shared by the victim and the attacker."""

    def setUp(self):
        super().setUp()
        self.victim = victim_creds()
        os.chmod(self.dir, 0o755)
        self.home = os.path.join(self.dir, "home")
        os.mkdir(self.home, 0o755)
        self.secret = os.path.join(self.home, "secret")
        write_text("the victim's own data\n")(self.secret)
        os.chown(self.secret, self.victim[0], self.victim[1])
        os.chmod(self.secret, 0o600)
        os.utime(self.secret, (1, 1))
        self.proj = self.shared_dir("proj", 0o2770)
        self.sticky = self.shared_dir("sticky", 0o3770)

    def shared_dir(self, name, mode):
        path = os.path.join(self.dir, name)
        os.mkdir(path)
        os.chown(path, 0, SHARED_GID)
        os.chmod(path, mode)
        return path

    def assert_secret_untouched(self):
        with open(self.secret, encoding="utf-8") as f:
            self.assertEqual(f.read(), "the victim's own data\n")
        self.assertEqual(os.stat(self.secret).st_mtime, 1)

    def assert_not_the_attackers(self, path):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        self.assertNotEqual(st.st_uid, ATTACKER[0], path + " is the attacker's")
        self.assertFalse(stat.S_ISLNK(st.st_mode) and
                         os.path.realpath(path) == self.secret, path)

    def victim_saves_after_the_attacker_plants(self, directory, names):
        """The victim's save() of step 5 in directory, started first (its pid
        is what ps shows) and let go once the attacker has planted every
        name in names (formatted with the victim's pid) as a symlink to the
        victim's file. (status, what the victim said)."""
        self.set_env(RESTORE_BUDGET_PHASE="RUNNING",
                     RESTORE_BUDGET_CHECKPOINT_DIR=directory)
        go_r, go_w = os.pipe()
        pid, out = start_child(
            lambda: rb.save(write_text("checkpoint bytes"), 5),
            self.victim, ready=go_r)
        os.close(go_r)

        def plant():
            for name in names:
                os.symlink(self.secret, os.path.join(directory, name % pid))

        planted = run_child(plant, ATTACKER)
        os.write(go_w, b"g")
        os.close(go_w)
        self.assertEqual(planted, (0, ""))
        return wait_child(pid, out)

    def test_issue19_planted_temp_link_in_a_shared_dir_is_not_written_through(self):
        status, said = self.victim_saves_after_the_attacker_plants(
            self.proj, [".checkpoint-5.%d.tmp", ".latest.%d.tmp"])
        self.assert_secret_untouched()
        self.assert_not_the_attackers(os.path.join(self.proj, "checkpoint-5"))
        self.assert_not_the_attackers(os.path.join(self.proj, "latest"))
        self.assertEqual(status, 1, said)
        self.assertIn("per-user subdirectory", said)

    def test_issue19_planted_temp_link_in_a_sticky_dir_is_never_used(self):
        status, said = self.victim_saves_after_the_attacker_plants(
            self.sticky, [".checkpoint-5.%d.tmp", ".latest.%d.tmp"])
        self.assert_secret_untouched()
        self.assertEqual(status, 0, said)
        final = os.path.join(self.sticky, "checkpoint-5")
        st = os.lstat(final)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual(st.st_uid, self.victim[0])
        with open(final, encoding="utf-8") as f:
            self.assertEqual(f.read(), "checkpoint bytes")
        latest = os.path.join(self.sticky, "latest")
        self.assertEqual((os.readlink(latest), os.lstat(latest).st_uid),
                         ("checkpoint-5", self.victim[0]))

    def test_issue19_shared_non_sticky_dir_is_refused_naming_the_fix(self):
        self.set_env(RESTORE_BUDGET_PHASE="RUNNING",
                     RESTORE_BUDGET_CHECKPOINT_DIR=self.proj)
        status, said = run_child(lambda: rb.save(write_text("x"), 1), self.victim)
        self.assertEqual(status, 1, said)
        self.assertRegex(said, "^OSError: restore_budget: checkpoint directory %s "
                         "can be written by group %d and is not sticky: .*"
                         "use a per-user subdirectory only you can write, "
                         "e.g. 'mkdir -m 700 %s/" % (self.proj, SHARED_GID,
                                                       self.proj))
        self.assertEqual(os.listdir(self.proj), [])
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING", RESTORE_BUDGET_ACK_FILE=
                     os.path.join(self.proj, ".restore_budget-ack.c1.7.1"))
        status, said = run_child(rb.confirm, self.victim)
        self.assertEqual(status, 1, said)
        self.assertIn("per-user subdirectory", said)
        self.assertEqual(os.listdir(self.proj), [])

    def test_issue19_dir_writable_through_an_acl_is_refused(self):
        mine = os.path.join(self.dir, "mine")
        os.mkdir(mine, 0o700)
        os.chown(mine, self.victim[0], self.victim[1])
        # user::rwx group::r-x group:<SHARED_GID>:rwx mask::rwx other::---
        acl = struct.pack("<I", 2) + b"".join(
            struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in (
                (0x01, 7, 0xFFFFFFFF), (0x04, 5, 0xFFFFFFFF),
                (0x08, 7, SHARED_GID), (0x10, 7, 0xFFFFFFFF),
                (0x20, 0, 0xFFFFFFFF)))
        try:
            os.setxattr(mine, "system.posix_acl_access", acl)
        except OSError as e:
            self.skipTest("no POSIX ACLs on %s: %s" % (self.dir, e))
        self.set_env(RESTORE_BUDGET_PHASE="RUNNING",
                     RESTORE_BUDGET_CHECKPOINT_DIR=mine)
        status, said = run_child(lambda: rb.save(write_text("x"), 1), self.victim)
        self.assertEqual(status, 1, said)
        self.assertIn("can be written by group %d (ACL)" % SHARED_GID, said)
        self.assertIn("per-user subdirectory", said)
        os.removexattr(mine, "system.posix_acl_access")
        os.chmod(mine, 0o700)
        self.assertEqual(run_child(lambda: rb.save(write_text("x"), 1),
                                   self.victim)[0], 0)

    def test_issue19_confirm_never_follows_a_planted_link_or_fifo(self):
        def plant():
            os.symlink(self.secret, os.path.join(self.sticky, "ack-link"))
            os.mkfifo(os.path.join(self.sticky, "ack-fifo"), 0o666)
            write_text("")(os.path.join(self.sticky, "ack-file"))
            os.chmod(os.path.join(self.sticky, "ack-file"), 0o666)

        self.assertEqual(run_child(plant, ATTACKER), (0, ""))
        for name, why in (("ack-link", "symbolic link, not followed"),
                          ("ack-fifo", "not a regular file"),
                          ("ack-file", "a regular file of uid %d" % ATTACKER[0])):
            self.set_env(RESTORE_BUDGET_PHASE="RESTORING",
                         RESTORE_BUDGET_ACK_FILE=os.path.join(self.sticky, name))
            status, said = run_child(rb.confirm, self.victim, timeout=5)
            self.assertEqual(status, 1, "%s: %s" % (name, said))
            self.assertIn(why, said)
            self.assert_secret_untouched()
        # the victim's own ack in the same sticky directory works
        self.set_env(RESTORE_BUDGET_PHASE="RESTORING", RESTORE_BUDGET_ACK_FILE=
                     os.path.join(self.sticky, ".restore_budget-ack.c1.7.1"))
        self.assertEqual(run_child(rb.confirm, self.victim), (0, ""))
        self.assertEqual(os.stat(os.path.join(
            self.sticky, ".restore_budget-ack.c1.7.1")).st_uid, self.victim[0])


SCRIPT = """
import sys, restore_budget as rb
path = rb.checkpoint()
step = 0
if path:
    try:
        step = int(open(path).read())
    except ValueError as e:
        rb.restore_failed(str(e))
    rb.confirm()
for step in range(step + 1, step + 3):
    rb.save(lambda p: open(p, "w").write(str(step)), step)
print(rb.phase(), rb.attempt(), step)
"""


class TestScript(Case):
    """A trial script, in a fresh interpreter: Debian's, as on the nodes."""

    def run_script(self, **extra):
        env = clean_env(PYTHONPATH=os.path.abspath(MODULE_DIR),
                        PYTHONDONTWRITEBYTECODE="1", **extra)
        return subprocess.run(["/usr/bin/python3", "-c", SCRIPT], env=env,
                              cwd=self.dir, capture_output=True, text=True,
                              timeout=60, check=False)

    def test_script_runs_unchanged_on_a_laptop(self):
        first = self.run_script()
        self.assertEqual((first.returncode, first.stdout), (0, "FRESH 0 2\n"))
        again = self.run_script()   # resumes from the local checkpoint-2
        self.assertEqual((again.returncode, again.stdout), (0, "FRESH 0 4\n"))

    def test_script_restore_failed_exit_status(self):
        os.makedirs(self.ckpt())
        write_text("garbage")(self.ckpt("checkpoint-1"))
        proc = self.run_script(RESTORE_BUDGET_PHASE="RESTORING",
                               RESTORE_BUDGET_CHECKPOINT=self.ckpt("checkpoint-1"),
                               RESTORE_BUDGET_REQUEUE_EXIT="42")
        self.assertEqual(proc.returncode, 42)
        self.assertRegex(proc.stderr, "^restore_budget: restore failed: invalid literal")


if __name__ == "__main__":
    unittest.main()
