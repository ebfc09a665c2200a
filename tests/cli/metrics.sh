# shellcheck shell=bash
# tests/cli/metrics.sh - `restore-budget metrics`, sourced by tests/cli/run.sh
# (it uses run.sh's $T, $CLI, run, expect, expect_true, report and the
# mkledger driver built there). Its own cluster name, so the other sections'
# grants, gc and corruption do not change what it expects.
#
# A small parser (metrics_parse.py, written below) checks the text format
# the node_exporter textfile collector accepts: every family has one # HELP
# and one # TYPE line before its samples, names and labels are well formed,
# counters end in _total, values are integers; then it compares the values.

MC=metrics
MP=$T/metrics_parse.py
cat >"$MP" <<'PYEOF'
import json, re, sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(" + NAME + r")\{(.*)\} (-?[0-9]+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')
WANT_TYPES = {
    "restore_budget_jobs_tracked": "gauge",
    "restore_budget_jobs_exhausted": "gauge",
    "restore_budget_interruptions_total": "counter",
    "restore_budget_restore_failures_total": "counter",
    "restore_budget_failures_total": "counter",
    "restore_budget_fallbacks_total": "counter",
    "restore_budget_ledger_corrupt_records": "gauge",
    "restore_budget_fatal_exit_total": "counter",
    "restore_budget_interruption_cap_refusals_total": "counter",
    "restore_budget_array_tasks": "gauge",
}
# one sample per job array and state; every other family has one sample
PER_ARRAY = "restore_budget_array_tasks"
STATES = ("running", "restoring", "exhausted", "ended")

def fail(msg):
    print("metrics_parse: " + msg)
    sys.exit(1)

def parse(text):
    if not text.endswith("\n"):
        fail("output does not end with a newline")
    helps, types, samples, arrays = {}, {}, {}, {}
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("# HELP "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not re.fullmatch(NAME, parts[2]) or not parts[3]:
                fail("line %d: bad HELP line: %r" % (n, line))
            if parts[2] in helps:
                fail("line %d: second HELP for %s" % (n, parts[2]))
            if parts[2] in samples:
                fail("line %d: HELP for %s after its samples" % (n, parts[2]))
            helps[parts[2]] = parts[3]
        elif line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or parts[3] not in ("counter", "gauge", "untyped"):
                fail("line %d: bad TYPE line: %r" % (n, line))
            if parts[2] in types:
                fail("line %d: second TYPE for %s" % (n, parts[2]))
            if parts[2] in samples:
                fail("line %d: TYPE for %s after its samples" % (n, parts[2]))
            types[parts[2]] = parts[3]
        elif line.startswith("#") or not line.strip():
            fail("line %d: unexpected comment or blank line: %r" % (n, line))
        else:
            m = SAMPLE.match(line)
            if not m:
                fail("line %d: bad sample line: %r" % (n, line))
            name, labels, value = m.groups()
            lab, pos = {}, 0
            while pos < len(labels):
                lm = LABEL.match(labels, pos)
                if not lm:
                    fail("line %d: bad labels: %r" % (n, labels))
                lab[lm.group(1)] = lm.group(2)
                pos = lm.end()
            if name not in helps or name not in types:
                fail("line %d: sample of %s before its HELP and TYPE" % (n, name))
            if types[name] == "counter" and not name.endswith("_total"):
                fail("line %d: counter %s does not end in _total" % (n, name))
            if int(value) < 0:
                fail("line %d: negative value" % n)
            if name == PER_ARRAY:
                if set(lab) != {"cluster", "array_job_id", "state"} or lab["state"] not in STATES:
                    fail("line %d: %s labels %r" % (n, name, lab))
                per = arrays.setdefault(lab["array_job_id"], {})
                if lab["state"] in per:
                    fail("line %d: second sample of array %s state %s" % (n, lab["array_job_id"], lab["state"]))
                per[lab["state"]] = int(value)
                continue
            if name in samples:
                fail("line %d: second sample of %s" % (n, name))
            samples[name] = (lab, int(value))
    if types != WANT_TYPES:
        fail("families/types %r, wanted %r" % (types, WANT_TYPES))
    if set(helps) != set(types):
        fail("HELP and TYPE lines do not name the same metrics")
    for a, per in arrays.items():
        if set(per) != set(STATES):
            fail("array %s: states %r, wanted all of %r" % (a, sorted(per), STATES))
    return samples, arrays

samples, arrays = parse(sys.stdin.read())
want = json.loads(sys.argv[1])
cluster = want.pop("cluster")
# the exit rules' counters are 0 unless a check names them
want.setdefault("fatal_exit_total", 0)
want.setdefault("interruption_cap_refusals_total", 0)
# per array: {"ARRAY_ID": {"running": N, ...}}, none unless a check names them
want_arrays = want.pop("array_tasks", {})
if arrays != want_arrays:
    fail("array tasks %r, wanted %r" % (arrays, want_arrays))
for name, (lab, value) in samples.items():
    if lab != {"cluster": cluster}:
        fail("%s has labels %r, wanted cluster=%r only" % (name, lab, cluster))
got = {k[len("restore_budget_"):]: v for k, (l, v) in samples.items()}
if got != want:
    fail("values %r, wanted %r" % (got, want))
PYEOF

# expect_metrics NAME RC JSON: exit status RC, stdout well formed, values JSON
expect_metrics() {
	local name=$1 want=$2 vals=$3 ok=0 why=""
	if [ "$RC" != "$want" ]; then
		ok=1
		why="exit $RC, wanted $want"
	fi
	if ! why2=$(python3 "$MP" "$vals" <<<"$OUT" 2>&1); then
		ok=1
		why="$why${why:+; }$why2"
	fi
	[ $ok = 0 ] || why=$(printf '%s\n--- stdout:\n%s\n--- stderr:\n%s' \
		"$why" "$OUT" "$ERR")
	report "$name" $ok "$why"
}

mkm() { "$MKLEDGER" "$T/rb.conf" "$MC" "$@" || { echo "cli: mkledger $* failed" >&2; exit 2; }; }
mkm exhaust 301      # 1 interruption, 4 failed restores, 2 failures; refused
mkm confirmed 302    # 2 interruptions, nothing charged
mkm clean 303
mkm inprogress 304
MS=$T/state/$MC

# exhaust 301 + confirmed 302: the totals `show` prints, summed
M_ALL='"jobs_tracked": 4, "jobs_exhausted": 1, "interruptions_total": 3, "restore_failures_total": 4, "failures_total": 2, "fallbacks_total": 0, "ledger_corrupt_records": 0'

run "$CLI" --cluster "$MC" metrics
expect_metrics "metrics: format and sums over 4 records" 0 "{\"cluster\": \"$MC\", $M_ALL}"
expect "metrics: HELP and TYPE lines, cluster label" 0 \
	'^# HELP restore_budget_jobs_tracked ' \
	'^# TYPE restore_budget_failures_total counter$' \
	"^restore_budget_jobs_exhausted\\{cluster=\"$MC\"\\} 1$"
expect_true "metrics: nothing on stderr" test -z "$ERR"
run "$CLI" --cluster "$MC" show 301
expect "metrics: the same totals as show" 0 \
	'^totals: +1 interruptions, 4 failed restores, 2 failures charged$'
run "$CLI" --cluster nothing-here metrics
expect_metrics "metrics: a cluster with no ledger is all zeros" 0 \
	'{"cluster": "nothing-here", "jobs_tracked": 0, "jobs_exhausted": 0, "interruptions_total": 0, "restore_failures_total": 0, "failures_total": 0, "fallbacks_total": 0, "ledger_corrupt_records": 0}'
run runuser -u nobody -- "$CLI" --cluster "$MC" metrics
expect_metrics "metrics as a user: only the records it may read (none of other groups' jobs), not corrupt" 0 \
	"{\"cluster\": \"$MC\", \"jobs_tracked\": 0, \"jobs_exhausted\": 0, \"interruptions_total\": 0, \"restore_failures_total\": 0, \"failures_total\": 0, \"fallbacks_total\": 0, \"ledger_corrupt_records\": 0}"

# ---- --output --------------------------------------------------------------
mkdir -m 755 "$T/textfile"
P=$T/textfile/restore_budget.prom
echo "stale" >"$P"
exec 7<"$P"            # a reader holding the old file open
run "$CLI" --cluster "$MC" metrics --output "$P"
expect "metrics --output: exit 0, nothing on stdout" 0 '!.'
expect_true "metrics --output: nothing on stderr" test -z "$ERR"
OUT=$(cat "$P")
expect_metrics "metrics --output: the file parses, same values" 0 "{\"cluster\": \"$MC\", $M_ALL}"
expect_true "metrics --output: mode 0644 (node_exporter reads it)" \
	test "$(stat -c %a "$P")" = 644
expect_true "metrics --output: replaced by rename (an open reader keeps the old file)" \
	test "$(cat <&7)" = stale
exec 7<&-
expect_true "metrics --output: no temporary file left behind" \
	test "$(ls -A "$T/textfile")" = restore_budget.prom
run "$CLI" --cluster "$MC" metrics --output="$T/no-such-dir/x.prom"
expect "metrics --output into a missing directory: exit 1" 1 \
	"2>^restore-budget: $T/no-such-dir/x.prom: cannot create a temporary file"
mkdir -m 777 "$T/mopen" "$T/mopen/$MC"
chmod 777 "$T/mopen"
sed "s|$T/state|$T/mopen|" "$T/rb.conf" >"$T/mopen.conf"
cp "$P" "$T/before.prom"
run "$CLI" --config "$T/mopen.conf" --cluster "$MC" metrics --output "$P"
expect "metrics: an untrusted state_dir exits 1" 1 "2>state_dir $T/mopen is owned by uid 0 with mode 0777"
expect_true "metrics: a failed run leaves the published file untouched" \
	cmp -s "$P" "$T/before.prom"

# ---- usage -------------------------------------------------------------------
run "$CLI" metrics --output
expect "metrics --output without a value: exit 2" 2 "2>option '--output' needs a value"
run "$CLI" metrics --output=
expect "metrics --output= (empty): exit 2" 2 '2>--output needs a file name'
run "$CLI" metrics --json
expect "metrics does not take --json: exit 2" 2 '2>metrics does not take --json'
run "$CLI" list --output "$P"
expect "list does not take --output: exit 2" 2 '2>list does not take --output'
run "$CLI" metrics 301
expect "metrics takes no argument: exit 2" 2 "2>unexpected argument '301'"
run "$CLI" --help
expect "--help lists metrics" 0 '^  metrics \[--output FILE\] '

# ---- a corrupt record ------------------------------------------------------------
echo "failures=0" >>"$MS/301/301.rec"
run "$CLI" --cluster "$MC" metrics
expect_metrics "metrics: a corrupt record is counted, not summed; exit 0" 0 \
	"{\"cluster\": \"$MC\", \"jobs_tracked\": 3, \"jobs_exhausted\": 0, \"interruptions_total\": 2, \"restore_failures_total\": 0, \"failures_total\": 0, \"fallbacks_total\": 0, \"ledger_corrupt_records\": 1}"
