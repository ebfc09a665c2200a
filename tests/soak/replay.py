#!/usr/bin/python3
"""tests/soak/replay.py - one soak job's invariants (docs/soak.md).

Reads the trial's own log (tests/soak/trial.sh: a `told` and a `did` line per
attempt) and the ledger's view (`restore-budget show --json JOB`), replays the
trial log through the rule of docs/rule.md ("grouped" accounting) and prints
one `ok - ...`, `FAIL - ...` or `skip - ...` line per invariant.

What the trial log cannot know, and how the replay treats it:
  - an attempt with no `told` line (killed before its script ran, or the
    refused last attempt): the ledger may have seen its start or not, and its
    phase is unknown; it never ran, so its end is "interrupted" (no end);
  - an attempt with no `did` line (SIGKILL): no end, "interrupted";
  - an untracked attempt (a `told` line without RESTORE_BUDGET_*, on_error =
    "open"): the ledger may have recorded its start (only the batch step
    failed) or not (the prolog failed too).
Each such attempt has several readings; the replay tries every combination
(at most 4096) and passes if one of them explains every `told` line and the
ledger; otherwise it reports the reading with the fewest mismatches.
Standard library only.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys

SKIP, RESTORING, PLAIN = "skip", "RESTORING", "RUNNING"


def parse_log(path):
    att = {}
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        lines = []
    for ln in lines:
        parts = ln.split(" ")
        if not parts or parts[0] not in ("told", "ack", "did"):
            continue
        kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        try:
            a = int(kv.get("a", ""))
        except ValueError:
            continue
        att.setdefault(a, {})[parts[0]] = kv
    return att


def ival(s, default=None):
    try:
        return int(s)
    except (TypeError, ValueError):
        if s == "unlimited":
            return -1
        return default


class Attempt:
    """One attempt as the trial saw it."""

    def __init__(self, n, rec):
        self.n = n
        self.told = rec.get("told")
        self.did = rec.get("did")
        # tracked = told its counters; an untracked attempt may still get
        # RESTORE_BUDGET_ATTEMPT and _CHECKPOINT (the last known one)
        self.tracked = bool(self.told and self.told.get("F") and self.told.get("phase"))
        d = self.did or {}
        ex = d.get("exit")
        self.failed_code = ival(ex) if ex not in (None, "0") and not str(ex).startswith("sig") else None
        self.completed = ex == "0"
        self.acked = "ack" in rec or d.get("ack") == "yes"
        self.confirmed = self.acked or ex == "0"
        self.phase = self.told.get("phase") if self.tracked else None

    def readings(self, races):
        """(seen_by_ledger, phase, end_failed) this attempt may have had.
        end_failed: did it end failed as the ledger saw it; an attempt that
        exited by itself within 2 s of a preemption or requeue may have
        been recorded as interrupted by the controller (a race, not a
        defect)."""
        failed = self.failed_code is not None
        ends = [failed]
        if failed and any(abs(float(self.did.get("t", 0)) - t) <= 2.0 for t in races):
            ends.append(False)
        if self.tracked:
            return [(True, self.phase, e) for e in ends]
        return [(False, SKIP, False)] + [(True, p, e) for p in (RESTORING, PLAIN) for e in ends]


def simulate(atts, last, choice, lim, state):
    """Replay one reading; return (mismatches, final counters)."""
    M, R, MI, cp = lim["M"], lim["R"], lim["MI"], lim["cp"]
    F = r = I = 0
    prev = None
    bad = []
    refused_at = None
    feed = []
    for n in range(last + 1):
        a = atts.get(n)
        seen, phase, failed = choice[n]
        if not seen:
            continue
        feed.append(feed_line(n, a, phase, failed))
        if prev is not None:
            pa, pphase, end_failed = prev
            confirmed = pa is not None and pa.confirmed
            at_end = PLAIN if (pphase == RESTORING and confirmed) else pphase
            if not end_failed:
                I += 1
            if at_end == RESTORING:
                r += 1
                if r >= R:
                    F, r = F + 1, 0
            elif end_failed:
                F += 1
            elif cp:
                F += 1
        refused = (MI >= 0 and I > MI) or (M >= 0 and F > M)
        ran = a is not None and a.told is not None
        if refused:
            refused_at = n
            if ran:
                bad.append(f"attempt {n}: the rule refuses it (F={F} M={M} I={I} MI={MI}) but it ran")
            if n != last:
                bad.append(f"attempt {n}: refused by the rule, yet the job went on to attempt {last}")
            break
        if a is not None and a.tracked:
            got = (ival(a.told.get("F")), ival(a.told.get("r")), ival(a.told.get("intr")))
            if got != (F, r, I):
                bad.append(f"attempt {n} told F,r,I={got[0]},{got[1]},{got[2]}, replay {F},{r},{I}")
        if phase == RESTORING and a is not None and a.confirmed:
            r = 0
        prev = (a, phase, failed)
    if state == "FAILED" and refused_at is None and (last not in atts or atts[last].told is None):
        bad.append(f"the job FAILED at attempt {last} which never ran, but the rule refuses nothing")
    return bad, {"F": F, "r": r, "I": I, "refused": refused_at is not None}, feed


def feed_line(n, a, phase, failed):
    """The attempt as tests/soak/replay_core.c reads it."""
    d = a.did if a is not None else None
    ack = 1 if a is not None and a.acked else 0
    if d is None:
        end, code = "none", 0
    elif failed:
        end, code = "failed", a.failed_code
    elif a.completed:
        end, code = "completed", 0
    else:
        end, code = "interrupted", 0
    return f"attempt {n} {phase or 'RUNNING'} {ack} {end} {code}"


def core_check(core, lim, feed):
    """Run the core's engine over the same reading: (F, r, I, refused)."""
    text = f"limits {lim['M']} {lim['R']} {lim['MI']} {int(lim['cp'])}\n" + "\n".join(feed) + "\n"
    try:
        out = subprocess.run([core], input=text, capture_output=True, text=True, timeout=10)
        f, r, i, ref = out.stdout.split()
        return {"F": int(f), "r": int(r), "I": int(i), "refused": ref == "1"}
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        return {"error": str(e)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", required=True)
    ap.add_argument("--kind", required=True)
    ap.add_argument("--restarts", type=int, required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--out")
    ap.add_argument("--races", help="file of epochs: preemptions and requeues")
    ap.add_argument("--core", help="tests/soak/replay_core.c built: the core's engine, cross-checked")
    ap.add_argument("--ro", help="file of 'START END' epochs: state_dir read-only or untrusted")
    ap.add_argument("log")
    o = ap.parse_args()
    tag = o.tag
    res = []

    def ok(cond, what):
        res.append(("ok  " if cond else "FAIL") + f" - {tag}: {what}")

    try:
        led = json.load(open(o.json))
    except (OSError, ValueError) as e:
        print(f"FAIL - {tag}: the ledger's show --json does not parse: {e}")
        return 1
    limits = led.get("limits", {})
    lim = {"M": ival(limits.get("max_failures"), -1), "R": ival(limits.get("restore_retry_num"), 1),
           "MI": ival(limits.get("max_interruptions", -1), -1),
           "cp": bool(limits.get("count_preemptions", False))}
    atts_raw = parse_log(o.log)
    atts = {n: Attempt(n, rec) for n, rec in atts_raw.items()}
    last = max([o.restarts] + list(atts))

    races = []
    if o.races:
        try:
            races = [float(x) for x in open(o.races).read().split()]
        except (OSError, ValueError):
            pass

    # 0. an attempt runs untracked only if its batch step started while the
    #    state_dir was read-only (on_error = "open"); any other untracked
    #    attempt is the plugin losing a job
    wins = []
    if o.ro:
        try:
            for ln in open(o.ro):
                p = ln.split()
                if len(p) == 2:
                    wins.append((float(p[0]) - 0.5, float(p[1]) + 2.0))
        except (OSError, ValueError):
            pass
    for n, a in sorted(atts.items()):
        if a.told is None or a.tracked:
            continue
        t = float(a.told.get("t", "0") or 0)
        if any(lo <= t <= hi for lo, hi in wins):
            res.append(f"open - {tag}: attempt {n} ran untracked: it started while state_dir was unusable (read-only or untrusted)")
        else:
            ok(False, f"attempt {n} ran untracked (no counters in RESTORE_BUDGET_*) while state_dir was usable")

    # 1. a corrupt trial makes at most R x (M+1) restore attempts
    #    (tracked ones: an untracked attempt, on_error = "open" while the
    #    state_dir was unusable, is not the rule's to count; it is reported
    #    as the gain failing open allowed)
    restores = sum(1 for a in atts.values() if a.n >= 1 and a.tracked and a.told.get("ckpt"))
    untracked = sum(1 for a in atts.values() if a.n >= 1 and a.told is not None and
                    not a.tracked and a.told.get("seen"))
    if o.kind == "corrupt":
        bound = lim["R"] * (lim["M"] + 1) if lim["M"] >= 0 else None
        if bound is None:
            res.append(f"skip - {tag}: corrupt with M unlimited: no bound")
        else:
            ok(restores <= bound, f"corrupt: {restores} tracked restore attempts <= R x (M+1) = {bound}")
            if untracked:
                res.append(f"open - {tag}: corrupt: {untracked} more restore attempt(s) ran untracked "
                           f"(on_error = open), {restores + untracked} in all")

    # 2. an interruption costs nothing (count_preemptions off): F and r do not
    #    move across an interrupted RUNNING/FRESH attempt; with max
    #    interruptions only the interruption count does
    n_int = 0
    for n, a in sorted(atts.items()):
        b = atts.get(n + 1)
        if not (a.tracked and b is not None and b.tracked and a.did is not None):
            continue
        interrupted = a.did.get("exit", "").startswith("sig")
        running = a.phase != RESTORING or a.confirmed
        if interrupted and running and not lim["cp"]:
            n_int += 1
            same = (a.told.get("F"), ) == (b.told.get("F"), )
            ok(same, f"attempt {n} interrupted while {'RUNNING' if a.phase == RESTORING else a.phase}: "
                     f"F {a.told.get('F')} -> {b.told.get('F')} (costs nothing)")
    if n_int == 0:
        res.append(f"skip - {tag}: no interrupted RUNNING/FRESH attempt followed by a tracked one")

    # 2b. each end is charged as the job saw it: the next attempt's
    #     RESTORE_BUDGET_LAST_END says how the ledger charged this one
    n_end = 0
    for n, a in sorted(atts.items()):
        # the next tracked attempt; those between ran untracked (told, no
        # counters: the ledger never saw them), else the chain is unknown
        m = n + 1
        while m in atts and atts[m].told is not None and not atts[m].tracked:
            m += 1
        b = atts.get(m)
        if not (a.tracked and b is not None and b.tracked and a.did is not None):
            continue
        want = f"failed:{a.failed_code}" if a.failed_code is not None else "interrupted"
        got = b.told.get("last_end", "")
        n_end += 1
        between = f" (attempts {n + 1}..{m - 1} ran untracked)" if m > n + 1 else ""
        raced = len(a.readings(races)) > 1
        if got != want and not (raced and got == "interrupted"):
            ok(False, f"attempt {n} ended {a.did.get('exit')} (as the job saw it: {want}), "
                      f"but attempt {m} was told LAST_END={got}{between}: its end was charged wrongly")
    if n_end and not any("charged wrongly" in x for x in res):
        ok(True, f"{n_end} ends charged as the job saw them (LAST_END of the next attempt)")

    # 3. every rerun is handed the newest checkpoint it could see
    n_ck = 0
    for n, a in sorted(atts.items()):
        if n < 1 or not a.tracked:
            continue
        ck, seen = a.told.get("ckpt", ""), a.told.get("seen", "")
        if not seen and not ck:
            continue
        n_ck += 1
        same = bool(ck) and os.path.realpath(ck) == os.path.realpath(seen) if seen else True
        if not same:
            ok(False, f"attempt {n} handed '{ck}', newest it could see '{seen}'")
    if n_ck:
        if not any(x.startswith("FAIL") and "handed" in x for x in res):
            ok(True, f"{n_ck} reruns handed the newest checkpoint they could see")

    # 3b. a job Slurm ended has its end in the ledger: a record whose last
    #     attempt is Slurm's last one is not left "running"/"restoring"
    cur = led.get("current_attempt", {})
    if led.get("attempt") == last and o.state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
        ended = cur.get("refused") or cur.get("end") not in (None, "none")
        ok(bool(ended), f"Slurm says {o.state}; the ledger's attempt {last} has end "
                        f"'{cur.get('end')}' (state {led.get('state')})")

    # 4. the ledger equals the trial log replayed through the rule
    opts = [atts[n].readings(races) if n in atts else Attempt(n, {}).readings(races) for n in range(last + 1)]
    amb = [n for n in range(last + 1) if len(opts[n]) > 1]
    best = None
    combos = 1
    for n in amb:
        combos *= len(opts[n])
    if combos > 4096:
        res.append(f"skip - {tag}: {len(amb)} attempts without a tracked told line: too many readings")
    else:
        want = {"F": led.get("failures"), "r": led.get("restore_failures"),
                "I": led.get("totals", {}).get("interruptions"),
                "refused": bool(led.get("current_attempt", {}).get("refused"))}
        for choice in itertools.product(*opts):
            bad, fin, feed = simulate(atts, last, list(choice), lim, o.state)
            for k in ("F", "r", "I", "refused"):
                if fin[k] != want[k]:
                    bad.append(f"ledger {k}={want[k]}, replay {fin[k]}")
            if best is None or len(bad) < len(best[0]):
                best = (bad, fin, choice, feed)
            if not bad:
                break
        bad, fin, choice, feed = best
        if o.core and os.access(o.core, os.X_OK):
            got = core_check(o.core, lim, feed)
            show = lambda x: " ".join(f"{k}={v}" for k, v in x.items())
            ok(got == fin, f"the core's engine agrees with the replay's reading "
                           f"(engine {show(got)}; replay {show(fin)})")
        def label(n):
            seen, phase, failed = choice[n]
            a = atts.get(n)
            raced = seen and not failed and a is not None and a.failed_code is not None
            return f"{n}:{phase}" + ("/raced" if raced else "")
        unk = ",".join(label(n) for n in amb) or "none"
        ok(not bad, f"ledger F={want['F']} r={want['r']} I={want['I']} refused={want['refused']} "
                    f"equals the trial log replayed (attempts 0..{last}, unknown readings {unk})"
                    + ("" if not bad else ": " + "; ".join(bad[:4])))
    print("\n".join(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
