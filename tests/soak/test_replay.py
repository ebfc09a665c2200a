#!/usr/bin/python3
"""tests/soak/test_replay.py - the replay's slurmctld rollback allowance
(tests/soak/replay.py, docs/soak.md "A slurmctld rollback") on small
made-up trial logs: what a window allows, and that nothing more passes.
`make soak-replay-test`; standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPLAY = os.path.join(HERE, "replay.py")


def ledger(F, r, I, attempt, end, M=1, R=1, refused=False):
    return {"attempt": attempt, "failures": F, "restore_failures": r,
            "limits": {"max_failures": M, "restore_retry_num": R, "count_preemptions": False},
            "totals": {"interruptions": I},
            "current_attempt": {"attempt": attempt, "end": end, "refused": refused}}


def told(a, pid, t, phase, F, r, I, last_end, ckpt=""):
    return (f"told a={a} pid={pid} t={t} phase={phase} ckpt={ckpt} F={F} M=1 r={r} R=1 left=1 "
            f"last_end={last_end} intr={I} mi=unlimited attempt={a} seen={ckpt}")


def did(a, pid, t, ex, restore="none"):
    return f"did a={a} pid={pid} t={t} restore={restore} ack=no exit={ex} step=3"


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class Replay(unittest.TestCase):
    def run_replay(self, lines, led, windows, restarts, state, kind="buggy", extra=()):
        with tempfile.TemporaryDirectory() as d:
            paths = {k: os.path.join(d, k) for k in ("log", "json", "rb", "ro", "races")}
            write(paths["log"], "\n".join(lines) + "\n")
            write(paths["json"], json.dumps(led))
            write(paths["rb"], "".join(f"{lo} {hi}\n" for lo, hi in windows))
            write(paths["ro"], "")
            write(paths["races"], "")
            out = subprocess.run([sys.executable, REPLAY, *extra, "--store", "controller", "--tag", "j",
                                  "--kind", kind, "--restarts", str(restarts), "--state", state,
                                  "--json", paths["json"], "--ro", paths["ro"], "--rollback", paths["rb"],
                                  "--races", paths["races"], paths["log"]],
                                 capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.splitlines()

    def fails(self, out):
        return [x for x in out if x.startswith("FAIL")]

    def rollbacks(self, out):
        return [x for x in out if x.startswith("rollback")]

    # an attempt run twice (its first start taken back, Slurm ran it again)
    twice = [told(0, 10, 100.0, "FRESH", 0, 0, 0, "none"), did(0, 10, 101.0, "sig:TERM"),
             told(0, 11, 120.0, "FRESH", 0, 0, 0, "none"), did(0, 11, 125.0, "0")]

    def test_a_run_taken_back_inside_a_window_passes(self):
        out = self.run_replay(self.twice, ledger(0, 0, 0, 0, "completed"), [(95, 110)], 0, "COMPLETED")
        self.assertEqual(self.fails(out), [], out)
        self.assertEqual(len(self.rollbacks(out)), 1, out)

    def test_an_untracked_run_taken_back_inside_a_window_passes(self):
        # started while slurmctld was down (on_error = "open": no counters)
        lines = [f"told a=0 pid=10 t=105.0 phase= ckpt= F= M= r= R= left= last_end= intr= mi= attempt=0 seen="]
        lines += self.twice[2:]
        out = self.run_replay(lines, ledger(0, 0, 0, 0, "completed"), [(95, 110)], 0, "COMPLETED")
        self.assertEqual([x for x in self.fails(out) if "untracked" not in x], [], out)
        out = self.run_replay(lines, ledger(0, 0, 0, 0, "completed"), [(106, 110)], 0, "COMPLETED")
        self.assertTrue(any("ran twice" in x for x in self.fails(out)), out)

    def test_an_attempt_run_twice_outside_any_window_fails(self):
        out = self.run_replay(self.twice, ledger(0, 0, 0, 0, "completed"), [(130, 140)], 0, "COMPLETED")
        self.assertTrue(any("ran twice" in x for x in self.fails(out)), out)

    def test_one_window_cannot_explain_two_runs_of_a_job(self):
        lines = [told(0, 10, 100.0, "FRESH", 0, 0, 0, "none"),
                 told(0, 11, 101.0, "FRESH", 0, 0, 0, "none"),
                 told(0, 12, 120.0, "FRESH", 0, 0, 0, "none"), did(0, 12, 125.0, "0")]
        out = self.run_replay(lines, ledger(0, 0, 0, 0, "completed"), [(95, 110)], 0, "COMPLETED")
        self.assertTrue(any("one at most" in x for x in self.fails(out)), out)
        out = self.run_replay(lines, ledger(0, 0, 0, 0, "completed"), [(95, 100.5), (100.6, 110)], 0, "COMPLETED")
        self.assertEqual(self.fails(out), [], out)

    # attempt 0 fails by itself (exit 42) in a window; its end is taken back:
    # attempt 1 is told it was interrupted, nothing charged
    lost_end = [told(0, 10, 90.0, "FRESH", 0, 0, 0, "none"), did(0, 10, 100.0, "42"),
                told(1, 11, 130.0, "RUNNING", 0, 0, 1, "interrupted"), did(1, 11, 140.0, "0")]

    def test_an_end_taken_back_inside_a_window_passes(self):
        out = self.run_replay(self.lost_end, ledger(0, 0, 1, 1, "completed"), [(95, 110)], 1, "COMPLETED")
        self.assertEqual(self.fails(out), [], out)
        self.assertTrue(any("end taken back" in x for x in self.rollbacks(out)), out)

    def test_an_end_lost_outside_any_window_fails(self):
        out = self.run_replay(self.lost_end, ledger(0, 0, 1, 1, "completed"), [(120, 125)], 1, "COMPLETED")
        self.assertNotEqual(self.fails(out), [], out)

    def test_a_window_never_allows_an_over_charge(self):
        # the ledger charged more than the trial's runs: no reading explains it
        out = self.run_replay(self.lost_end, ledger(2, 0, 0, 1, "completed"), [(95, 110)], 1, "COMPLETED")
        self.assertTrue(any("ledger F=2" in x for x in self.fails(out)), out)

    # attempt 0 is preempted while the controller's save is pending; the
    # rollback brings it back as running attempt 0, so the end of the run
    # that started as attempt 1 (exit 42) is recorded as attempt 0's; Slurm
    # requeues and runs attempt 1 again, told one failure
    moved = [told(0, 10, 90.0, "FRESH", 0, 0, 0, "none"), did(0, 10, 100.0, "sig:TERM"),
             told(1, 11, 103.0, "RUNNING", 0, 0, 1, "interrupted"), did(1, 11, 104.0, "42"),
             told(1, 12, 130.0, "RUNNING", 1, 0, 0, "failed:42"), did(1, 12, 140.0, "0")]

    def test_an_end_recorded_on_the_previous_attempt_inside_a_window_passes(self):
        out = self.run_replay(self.moved, ledger(1, 0, 0, 1, "completed"), [(95, 110)], 1, "COMPLETED")
        self.assertEqual(self.fails(out), [], out)
        self.assertTrue(any("recorded as the previous attempt's" in x for x in self.rollbacks(out)), out)
        out = self.run_replay(self.moved, ledger(1, 0, 0, 1, "completed"), [(102, 110)], 1, "COMPLETED")
        self.assertNotEqual(self.fails(out), [], out)

    # a corrupt trial (M=1, R=1: bound 2 restores) whose restore at attempt 1
    # ran twice: 3 restores, within 2 + 1 window, not within 2 without it
    corrupt = [told(0, 10, 50.0, "FRESH", 0, 0, 0, "none"), did(0, 10, 55.0, "sig:TERM"),
               told(1, 11, 100.0, "RESTORING", 0, 0, 1, "interrupted", "/c/1"), did(1, 11, 100.5, "sig:TERM", "failed"),
               told(1, 12, 120.0, "RESTORING", 0, 0, 1, "interrupted", "/c/1"), did(1, 12, 120.5, "42", "failed"),
               told(2, 13, 140.0, "RESTORING", 1, 0, 1, "failed:42", "/c/1"), did(2, 13, 140.5, "42", "failed")]

    def test_a_corrupt_job_gets_one_more_restore_per_window_used(self):
        led = ledger(2, 0, 1, 3, "none", refused=True)
        out = self.run_replay(self.corrupt, led, [(95, 110)], 3, "FAILED", kind="corrupt")
        self.assertEqual(self.fails(out), [], out)
        self.assertTrue(any("3 tracked restore attempts <= R x (M+1) + rollback windows used = 2 + 1" in x
                            for x in out), out)
        out = self.run_replay(self.corrupt, led, [], 3, "FAILED", kind="corrupt")
        self.assertTrue(any("3 tracked restore attempts <= R x (M+1) = 2" in x for x in self.fails(out)), out)

    # an end written inside a window that no other reading needed (a fresh
    # attempt's exit 0 changes no count), the job then COMPLETED by Slurm
    # (24.11 leg, seed 73)
    def test_an_end_taken_back_that_changes_no_count_passes_inside_a_window_only(self):
        lines = [told(0, 10, 100.0, "FRESH", 0, 0, 0, "none"), did(0, 10, 111.0, "0")]
        led = ledger(0, 0, 0, 0, "none")
        out = self.run_replay(lines, led, [(105, 115)], 0, "COMPLETED")
        self.assertEqual(self.fails(out), [], out)
        self.assertTrue(any("its end (pid 10) written in slurmctld rollback window 0" in x
                            for x in self.rollbacks(out)), out)
        out = self.run_replay(lines, led, [(113, 115)], 0, "COMPLETED")
        self.assertTrue(any("has end 'none'" in x for x in self.fails(out)), out)

    # no budget line at all (24.11 leg, seed 73: the rollback took back the
    # only start's write; Slurm then killed the job as non-startable)
    def no_line(self, lines, windows):
        return self.run_replay(lines, {}, windows, 0, "FAILED", extra=("--no-line",))

    def test_no_line_passes_when_every_run_started_in_a_window(self):
        out = self.no_line(self.twice[:2], [(95, 110)])
        self.assertEqual(self.fails(out), [], out)
        self.assertEqual(len(self.rollbacks(out)), 1, out)
        self.assertTrue(any(x.startswith("ok ") for x in out), out)

    def test_no_line_fails_for_a_run_outside_every_window(self):
        out = self.no_line(self.twice, [(95, 110)])
        self.assertTrue(any("outside every slurmctld rollback window" in x for x in self.fails(out)), out)
        out = self.no_line(self.twice[:2], [])
        self.assertNotEqual(self.fails(out), [], out)

    def test_no_line_fails_for_two_runs_in_one_window(self):
        out = self.no_line(self.twice, [(95, 130)])
        self.assertTrue(any("which another run used" in x for x in self.fails(out)), out)


if __name__ == "__main__":
    unittest.main()
