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
  - a kill -9 of slurmctld (--rollback: its windows, [kill - 6 s, started
    again]) can take back what the controller had not saved: a run that
    told its start inside a window may be unseen by the ledger (its start
    taken back; Slurm may run the attempt again under the same number: the
    earlier run of a number seen twice must be such a run), or its end may
    land on the previous run, whose own end was taken back; a run whose
    end (did) falls inside a window may have no end on record.  A job may
    use each window for one such reading at most (one charge lost per
    rollback, docs/stores.md), each printed as a `rollback - ` line.
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
    """The runs in the log's order: (attempt, {told, ack, did}); a run is one
    attempt number and one pid (pid= tells two runs of one number apart)."""
    runs, by_key = [], {}
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
        key = (a, kv.get("pid"))
        if key not in by_key or (parts[0] == "told" and "told" in by_key[key]):
            by_key[key] = {}
            runs.append((a, by_key[key]))
        by_key[key][parts[0]] = kv
    return runs


def windows(path, pad_lo=0.0, pad_hi=0.0):
    """'START END' epochs, one pair a line."""
    wins = []
    if path:
        try:
            for ln in open(path):
                p = ln.split()
                if len(p) == 2:
                    wins.append((float(p[0]) - pad_lo, float(p[1]) + pad_hi))
        except (OSError, ValueError):
            pass
    return wins


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
        self.pid = (self.told or self.did or {}).get("pid", "?")

    def t(self, what):
        """Epoch of the told or did line; None without one."""
        rec = self.told if what == "told" else self.did
        try:
            return float(rec.get("t")) if rec else None
        except (TypeError, ValueError):
            return None

    def rollbacks(self, rwins):
        """Readings a slurmctld rollback allows (docs/stores.md): the start
        taken back (unseen), unseen with its end landing on the previous
        run ("moved": the controller still held the previous attempt
        RUNNING; "moved0": it held the job otherwise, no end written), or
        seen with its end taken back.  Each names its window."""
        out = []
        tt, td = self.t("told"), self.t("did")
        for w, (lo, hi) in enumerate(rwins):
            # (an untracked run too: it may have started while slurmctld
            # was down, and the job been recovered pending and run again)
            if tt is not None and lo <= tt <= hi:
                out += [(False, SKIP, False, ("start", w)), (False, SKIP, False, ("moved", w)),
                        (False, SKIP, False, ("moved0", w))]
            # the end is written up to ~1 s after the did line (task_exit)
            if self.tracked and td is not None and lo - 1.0 <= td <= hi:
                out.append((True, self.phase, False, ("end", w)))
        return out

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
            return [(True, self.phase, e, None) for e in ends]
        return [(False, SKIP, False, None)] + [(True, p, e, None) for p in (RESTORING, PLAIN) for e in ends]


def slots_of(runs, restarts):
    """Every attempt 0..last in order, each number's earlier runs (seen
    twice: the earlier ones were taken back by a rollback) before its last
    one: [(n, Attempt or None, superseded)], and last."""
    by_n = {}
    for n, rec in runs:
        by_n.setdefault(n, []).append(Attempt(n, rec))
    last = max([restarts] + list(by_n))
    slots = []
    for n in range(last + 1):
        rs = by_n.get(n, [])
        slots += [(n, a, True) for a in rs[:-1]]
        slots.append((n, rs[-1] if rs else None, False))
    return slots, last


def slot_readings(slot, races, rwins):
    n, a, sup = slot
    if a is None:
        return Attempt(n, {}).readings(races)
    if sup:
        # a number run twice: only a rollback explains the earlier run
        return a.rollbacks(rwins) or [(False, SKIP, False, ("twice", None))]
    return a.readings(races) + a.rollbacks(rwins)


def in_win(t, w, rwins):
    return t is not None and rwins[w][0] - 1.0 <= t <= rwins[w][1]


def end_window(a, rwins, used):
    """The rollback window, not yet used by this job, in which attempt a's
    end was written (up to ~1 s after its did line), or None."""
    td = a.t("did") if a is not None and a.tracked else None
    for w, (lo, hi) in enumerate(rwins):
        if td is not None and w not in used and lo - 1.0 <= td <= hi:
            return w
    return None


def simulate(slots, last, choice, lim, state, rwins=()):
    """Replay one reading; return (mismatches, final counters, feed)."""
    M, R, MI, cp = lim["M"], lim["R"], lim["MI"], lim["cp"]
    F = r = I = 0
    prev = None    # (Attempt, phase, end failed, confirmed, feed entry)
    bad = []
    refused_at = None
    feed = []
    used = {}
    for i, (n, a, sup) in enumerate(slots):
        seen, phase, failed, rb = choice[i]
        if rb is not None:
            if rb[0] == "twice":
                bad.append(f"attempt {n} ran twice (pid {a.pid} earlier) outside any slurmctld rollback window")
                continue
            used.setdefault(rb[1], []).append(n)
            if rb[0] in ("moved", "moved0"):
                # the controller held the previous run's attempt: this run's
                # end (or none) became that attempt's, whose own end was
                # taken back
                if prev is None:
                    bad.append(f"attempt {n}: read as ending the previous attempt, but none was seen")
                    continue
                pa = prev[0]
                if pa is not None and pa.did is not None and not in_win(pa.t("did"), rb[1], rwins):
                    bad.append(f"attempt {n}: read as ending attempt {pa.n}, whose own end is outside the window")
                own = rb[0] == "moved" and a.failed_code is not None
                conf = (pa is not None and pa.acked) or (rb[0] == "moved" and a.completed)
                end = ("none", 0) if rb[0] == "moved0" or a.did is None else feed_end(a, own)
                prev[4]["end"], prev[4]["ack"] = end, int(conf)
                prev = (pa, prev[1], own, conf, prev[4])
                continue
        if not seen:
            continue
        ent = feed_entry(n, a, phase, failed)
        if rb is not None and rb[0] == "end":
            ent["end"] = ("none", 0)
        feed.append(ent)
        if prev is not None:
            pa, pphase, end_failed, confirmed, _ = prev
            at_end = PLAIN if (pphase == RESTORING and confirmed) else pphase
            if pphase == RESTORING and confirmed:
                r = 0     # a confirmed restore (applied at its end: a rollback may take it back)
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
            if i != len(slots) - 1:
                bad.append(f"attempt {n}: refused by the rule, yet the job went on to attempt {last}")
            break
        if a is not None and a.tracked:
            got = (ival(a.told.get("F")), ival(a.told.get("r")), ival(a.told.get("intr")))
            if got != (F, r, I):
                bad.append(f"attempt {n} told F,r,I={got[0]},{got[1]},{got[2]}, replay {F},{r},{I}")
        lost_end = rb is not None and rb[0] == "end"
        # an end taken back loses the exit-0 confirmation; the ack stays
        conf = a is not None and (a.acked if lost_end else a.confirmed)
        prev = (a, phase, failed and not lost_end, conf, ent)
    if refused_at is None and prev is not None and prev[1] == RESTORING and prev[3]:
        r = 0
    for w, ns in sorted(used.items()):
        if len(ns) > 1:
            bad.append(f"slurmctld rollback window {w} read into {len(ns)} attempts ({ns}): one at most")
    tail = slots[-1][1]
    if state == "FAILED" and refused_at is None and (tail is None or tail.told is None):
        bad.append(f"the job FAILED at attempt {last} which never ran, but the rule refuses nothing")
    return bad, {"F": F, "r": r, "I": I, "refused": refused_at is not None}, feed


def feed_end(a, failed):
    d = a.did if a is not None else None
    if d is None:
        return ("none", 0)
    if failed:
        return ("failed", a.failed_code)
    if a.completed:
        return ("completed", 0)
    return ("interrupted", 0)


def feed_entry(n, a, phase, failed):
    """The attempt as tests/soak/replay_core.c reads it (formatted later:
    a rollback reading may still change its end)."""
    return {"n": n, "phase": phase or "RUNNING", "ack": 1 if a is not None and a.acked else 0,
            "end": feed_end(a, failed)}


def feed_line(e):
    return f"attempt {e['n']} {e['phase']} {e['ack']} {e['end'][0]} {e['end'][1]}"


def core_check(core, lim, feed):
    """Run the core's engine over the same reading: (F, r, I, refused)."""
    text = f"limits {lim['M']} {lim['R']} {lim['MI']} {int(lim['cp'])}\n" + "\n".join(map(feed_line, feed)) + "\n"
    try:
        out = subprocess.run([core], input=text, capture_output=True, text=True, timeout=10)
        f, r, i, ref = out.stdout.split()
        return {"F": int(f), "r": int(r), "I": int(i), "refused": ref == "1"}
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        return {"error": str(e)}


def best_reading(slots, last, races, rwins, lim, state, want):
    """The reading that explains the most: (mismatches, final, choice,
    feed, ambiguous slot indexes), or None when there are too many."""
    opts = [slot_readings(sl, races, rwins) for sl in slots]
    amb = [i for i in range(len(slots)) if len(opts[i]) > 1]
    combos = 1
    for i in amb:
        combos *= len(opts[i])
    if combos > 4096:
        return None, amb
    best = None
    # the fewest rollback readings first: a rollback explains only what no
    # plain reading does
    order = sorted(itertools.product(*opts), key=lambda c: sum(1 for x in c if x[3] is not None))
    for choice in order:
        bad, fin, feed = simulate(slots, last, list(choice), lim, state, rwins)
        for k in ("F", "r", "I", "refused"):
            if fin[k] != want[k]:
                bad.append(f"ledger {k}={want[k]}, replay {fin[k]}")
        if best is None or len(bad) < len(best[0]):
            best = (bad, fin, choice, feed)
        if not bad:
            break
    return best, amb


def no_line(tag, log, rwins, state, restarts):
    """store = "controller", the job has no budget line at all: right only if
    every run the trial saw told its start inside a slurmctld rollback window
    (one run per window): the rollback took the start's write back, and
    Slurm ended the job without another start (24.11 kills such a job as
    non-startable, "Job credential revoked").  Returns the lines to print."""
    runs = [Attempt(n, rec) for n, rec in parse_log(log)]
    told_at = [(a, a.t("told")) for a in runs if a.told]
    used, res = set(), []
    for a, t in told_at:
        w = next((i for i, (lo, hi) in enumerate(rwins) if t is not None and lo <= t <= hi), None)
        if w is None or w in used:
            where = "outside every slurmctld rollback window" if w is None else f"in window {w}, which another run used"
            return [f"FAIL - {tag}: no budget line, yet attempt {a.n} (pid {a.pid}) told its start {where}"]
        used.add(w)
        res.append(f"rollback - {tag}: attempt {a.n} (pid {a.pid}): its start taken back, and with it the job's "
                   f"only line, in slurmctld rollback window {w}; Slurm ended the job ({state}, Restarts={restarts}) "
                   f"without another start")
    if not told_at:
        return [f"FAIL - {tag}: no budget line and no run told its start"]
    return res + [f"ok   - {tag}: no budget line: each of its {len(told_at)} run(s) started in a slurmctld "
                  f"rollback window of its own"]


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
    ap.add_argument("--rollback", help="file of 'START END' epochs: slurmctld killed -9 (kill - 6 s, started again)")
    ap.add_argument("--store", default="dir", help="dir or controller (docs/stores.md)")
    ap.add_argument("--no-line", action="store_true",
                    help="the job has no budget line (store = controller): check that rollbacks explain it")
    ap.add_argument("log")
    o = ap.parse_args()
    tag = o.tag
    res = []
    if o.no_line:
        out = no_line(tag, o.log, windows(o.rollback), o.state, o.restarts) if o.store == "controller" else \
            [f"FAIL - {tag}: no record in store {o.store}"]
        print("\n".join(out))
        return 0

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
    slots, last = slots_of(parse_log(o.log), o.restarts)
    # the attempts: each number's last run (an earlier run of a number was
    # taken back by a slurmctld rollback, read in 4 below)
    atts = {n: a for n, a, sup in slots if a is not None and not sup}
    runs = [a for n, a, sup in slots if a is not None]

    races = []
    if o.races:
        try:
            races = [float(x) for x in open(o.races).read().split()]
        except (OSError, ValueError):
            pass
    rwins = windows(o.rollback)

    # 4 first (printed last): the reading of the trial log that explains the
    # ledger; the checks before it leave out what a rollback reading there
    # explains
    want = {"F": led.get("failures"), "r": led.get("restore_failures"),
            "I": led.get("totals", {}).get("interruptions"),
            "refused": bool(led.get("current_attempt", {}).get("refused"))}
    best, amb = best_reading(slots, last, races, rwins, lim, o.state, want)
    rolled = set()  # attempts whose record a rollback reading changed
    used = set()    # the rollback windows the reading used
    if best is not None:
        prev_seen = None
        for i, (seen, phase, failed, rb) in enumerate(best[2]):
            n, a, sup = slots[i]
            if rb is not None and rb[1] is not None:
                what = {"start": "its start taken back (unseen by the ledger)",
                        "moved": "its start taken back, its end recorded as the previous attempt's",
                        "moved0": "its start taken back, and the previous attempt's end",
                        "end": "its end taken back (none on record)"}[rb[0]]
                used.add(rb[1])
                res.append(f"rollback - {tag}: attempt {n} (pid {a.pid}){' (run again)' if sup else ''}: "
                           f"{what}, in slurmctld rollback window {rb[1]}")
                # a run taken back whose number ran again changes nothing
                # of that number's own record
                if not (sup and rb[0] == "start"):
                    rolled.add(n)
                if rb[0] in ("moved", "moved0") and prev_seen is not None:
                    rolled.add(prev_seen)
            if seen:
                prev_seen = n

    # 0. an attempt runs untracked only if its batch step started while the
    #    state_dir was read-only (on_error = "open"); any other untracked
    #    attempt is the plugin losing a job
    wins = windows(o.ro, 0.5, 2.0)
    for a in runs:
        if a.told is None or a.tracked:
            continue
        t = a.t("told") or 0
        if any(lo <= t <= hi for lo, hi in wins):
            res.append(f"open - {tag}: attempt {a.n} ran untracked: it started while state_dir was unusable (read-only or untrusted)")
        else:
            ok(False, f"attempt {a.n} ran untracked (no counters in RESTORE_BUDGET_*) while state_dir was usable")

    # 1. a corrupt trial makes at most R x (M+1) restore attempts
    #    (tracked ones: an untracked attempt, on_error = "open" while the
    #    state_dir was unusable, is not the rule's to count; it is reported
    #    as the gain failing open allowed), plus one per slurmctld rollback
    #    window the reading used (a start taken back runs a restore again)
    restores = sum(1 for a in runs if a.n >= 1 and a.tracked and a.told.get("ckpt"))
    untracked = sum(1 for a in runs if a.n >= 1 and a.told is not None and
                    not a.tracked and a.told.get("seen"))
    if o.kind == "corrupt":
        bound = lim["R"] * (lim["M"] + 1) if lim["M"] >= 0 else None
        nrb = len(used)
        if bound is None:
            res.append(f"skip - {tag}: corrupt with M unlimited: no bound")
        elif nrb:
            ok(restores <= bound + nrb, f"corrupt: {restores} tracked restore attempts <= R x (M+1) + "
                                        f"rollback windows used = {bound} + {nrb}")
        else:
            ok(restores <= bound, f"corrupt: {restores} tracked restore attempts <= R x (M+1) = {bound}")
        if bound is not None and untracked:
            res.append(f"open - {tag}: corrupt: {untracked} more restore attempt(s) ran untracked "
                       f"(on_error = open), {restores + untracked} in all")

    # 2. an interruption costs nothing (count_preemptions off): F and r do not
    #    move across an interrupted RUNNING/FRESH attempt; with max
    #    interruptions only the interruption count does.  2 and 2b leave out
    #    a pair a rollback reading touches (4 checks those against the ledger)
    def touched(n, m):
        return any(k in rolled for k in range(n, m + 1))
    n_int = 0
    for n, a in sorted(atts.items()):
        b = atts.get(n + 1)
        if not (a.tracked and b is not None and b.tracked and a.did is not None) or touched(n, n + 1):
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
        if not (a.tracked and b is not None and b.tracked and a.did is not None) or touched(n, m):
            continue
        want_end = f"failed:{a.failed_code}" if a.failed_code is not None else "interrupted"
        got = b.told.get("last_end", "")
        n_end += 1
        between = f" (attempts {n + 1}..{m - 1} ran untracked)" if m > n + 1 else ""
        raced = len(a.readings(races)) > 1
        if got != want_end and not (raced and got == "interrupted"):
            ok(False, f"attempt {n} ended {a.did.get('exit')} (as the job saw it: {want_end}), "
                      f"but attempt {m} was told LAST_END={got}{between}: its end was charged wrongly")
    if n_end and not any("charged wrongly" in x for x in res):
        ok(True, f"{n_end} ends charged as the job saw them (LAST_END of the next attempt)")

    # 3. every rerun is handed the newest checkpoint it could see
    n_ck = 0
    for a in runs:
        if a.n < 1 or not a.tracked:
            continue
        ck, seen = a.told.get("ckpt", ""), a.told.get("seen", "")
        if not seen and not ck:
            continue
        n_ck += 1
        same = bool(ck) and os.path.realpath(ck) == os.path.realpath(seen) if seen else True
        if not same:
            ok(False, f"attempt {a.n} handed '{ck}', newest it could see '{seen}'")
    if n_ck:
        if not any(x.startswith("FAIL") and "handed" in x for x in res):
            ok(True, f"{n_ck} reruns handed the newest checkpoint they could see")

    # 3b. a job Slurm ended has its end in the ledger: a record whose last
    #     attempt is Slurm's last one is not left "running"/"restoring"
    #     (unless the reading took that end back in a rollback window)
    cur = led.get("current_attempt", {})
    if led.get("attempt") == last and o.state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
        ended = cur.get("refused") or cur.get("end") not in (None, "none")
        tail = atts.get(last)
        self_end = tail is not None and tail.did is not None and not tail.did.get("exit", "").startswith("sig")
        if not ended and o.store == "controller" and not self_end:
            # no epilog in this store: an attempt the controller ended
            # (killed, requeued, a launch it failed) keeps no end, by design
            res.append(f"skip - {tag}: Slurm says {o.state}; the controller ended attempt {last} "
                       f"(no exit of its own): no end on record (docs/stores.md)")
        elif not ended and last in rolled:
            res.append(f"rollback - {tag}: Slurm says {o.state}; the ledger's attempt {last} has no end: "
                       f"taken back (above)")
        elif not ended and o.store == "controller" and end_window(tail, rwins, used) is not None:
            # its end was written inside a window the reading above did not
            # need (an end of a fresh attempt changes no count), and the
            # controller kept the job to see it complete (24.11 leg, seed 73)
            w = end_window(tail, rwins, used)
            used.add(w)
            res.append(f"rollback - {tag}: Slurm says {o.state}; the ledger's attempt {last} has no end: "
                       f"its end (pid {tail.pid}) written in slurmctld rollback window {w}, taken back")
        else:
            ok(bool(ended), f"Slurm says {o.state}; the ledger's attempt {last} has end "
                            f"'{cur.get('end')}' (state {led.get('state')})")

    # 4. the ledger equals the trial log replayed through the rule
    if best is None:
        res.append(f"skip - {tag}: {len(amb)} attempts without a tracked told line: too many readings")
    else:
        bad, fin, choice, feed = best
        if o.core and os.access(o.core, os.X_OK):
            got = core_check(o.core, lim, feed)
            show = lambda x: " ".join(f"{k}={v}" for k, v in x.items())
            ok(got == fin, f"the core's engine agrees with the replay's reading "
                           f"(engine {show(got)}; replay {show(fin)})")

        def label(i):
            n, a, sup = slots[i]
            seen, phase, failed, rb = choice[i]
            raced = seen and not failed and a is not None and a.failed_code is not None and rb is None
            return f"{n}:{phase}" + ("/raced" if raced else "") + (f"/{rb[0]}" if rb else "")
        unk = ",".join(label(i) for i in amb) or "none"
        ok(not bad, f"ledger F={want['F']} r={want['r']} I={want['I']} refused={want['refused']} "
                    f"equals the trial log replayed (attempts 0..{last}, unknown readings {unk})"
                    + ("" if not bad else ": " + "; ".join(bad[:4])))
    print("\n".join(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
