"""Unit tests of contrib/python/restore_budget (standard library only).

Run: /usr/bin/python3 -m unittest discover -s tests/python   (or make python-test)
Each test gets a temp dir as its working directory and an environment
without any RESTORE_BUDGET_* or SLURM_* variable, then sets what it needs.
"""

import contextlib
import fnmatch
import io
import os
import subprocess
import sys
import tempfile
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
        self.assertEqual(replace.call_args_list[0], mock.call(seen["tmp"], final))
        with open(final, encoding="utf-8") as f:
            self.assertEqual(f.read(), "state 3")
        self.assertFalse(os.path.exists(seen["tmp"]))

    def test_save_fsyncs_file_then_directory(self):
        order = []
        real_fsync_path = rb._fsync_path
        with mock.patch.object(rb, "_fsync_path",
                               side_effect=lambda p: (order.append(p),
                                                      real_fsync_path(p))), \
             mock.patch("os.replace",
                        side_effect=lambda a, b: (order.append("replace " + os.path.basename(b)),
                                                  os.rename(a, b))):
            rb.save(write_text("x"), 1)
        self.assertEqual(len(order), 4)
        self.assertTrue(os.path.basename(order[0]).startswith(".checkpoint-1."))
        self.assertEqual(order[1:], ["replace checkpoint-1", "replace latest",
                                     self.ckpt()])

    def test_save_points_latest(self):
        rb.save(write_text("5"), 5)
        self.assertEqual(os.readlink(self.ckpt("latest")), "checkpoint-5")
        rb.save(write_text("7"), 7)
        self.assertEqual(os.readlink(self.ckpt("latest")), "checkpoint-7")
        self.assertEqual(self.listing(), ["checkpoint-5", "checkpoint-7", "latest"])

    def test_save_temp_name_not_a_checkpoint(self):
        seen = []
        rb.save(lambda p: (seen.append(p), write_text("x")(p)), 12)
        name = os.path.basename(seen[0])
        self.assertEqual(os.path.dirname(seen[0]), self.ckpt())
        self.assertFalse(fnmatch.fnmatch(name, PLUGIN_PATTERN))
        # docs/rule.md: names starting with "." or ending in ".tmp" are skipped
        self.assertTrue(name.startswith("."))
        self.assertTrue(name.endswith(".tmp"))

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
