#!/usr/bin/env bash
# tests/bench/e2e.sh - end-to-end cost of the plugin on a private cluster.
#
# One cluster (tests/integration/lib.sh rb_cluster_up, the plugin with its own
# config and state_dir). plugstack.conf is switched between two variants
# before every run - slurmstepd (prolog, batch step, srun steps, epilog) and
# the clients (sbatch, srun) read it afresh each time, so both variants share
# the same daemons, caches and node:
#   without   an empty plugstack.conf
#   with      "required restore_budget.so config=..."
# Runs are interleaved in ABBA order (A B, B A, A B, ...). Per run:
#   job_start   sbatch -> the batch script's first line (both timestamps
#               from $EPOCHREALTIME, as the job user)
#   srun_step   `srun --jobid=J --overlap -n1 true` inside a running allocation J
#   srun_job    `srun -n1 true` as a new job (scheduling, prolog, step, exit)
# Then two checks that srun steps do no plugin work: the ledger is unchanged
# by 5 srun steps, and an strace of slurmd (and the slurmstepd it forks) during
# one srun step shows no open of the config or the state dir.
#
# Then the controller calls and slurmctld's RPCs per attempt: BENCH_E2E_CALL_JOBS
# (10) jobs without the plugin, then as many with it and slurm_bindir= a dir of
# wrappers that log each squeue / scontrol the plugin runs, then exec the real
# one. The job script writes its first and last line's time; a call before the
# first is the attempt's start, after the last its end; the start's span is
# its first call to the first line. sdiag before and after
# each variant counts slurmctld's RPCs by message type; the bench's own polls
# (`squeue -h -o %i`, all jobs: REQUEST_JOB_INFO, counted) are taken out and
# REQUEST_STATS_INFO (sdiag itself) is left out. Then 5 srun steps with the
# wrappers: they must log no call.
#
# BENCH_STORE: dir (default) or controller (the budget in each job's
# AdminComment, docs/stores.md): the plugin's config has store = that.
# Prints "e2e ..." key=value lines; nothing is asserted. Exit 1 if the job
# user cannot read the plugin or a measurement failed ("e2e: ERROR: ...").
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
RUNS=${BENCH_E2E_RUNS:-30}
CALL_JOBS=${BENCH_E2E_CALL_JOBS:-10}
STORE=${BENCH_STORE:-dir}
[[ $STORE == dir || $STORE == controller ]] || { echo "e2e: ERROR: BENCH_STORE=$STORE: want dir or controller" >&2; exit 2; }
if [[ ! $CALL_JOBS =~ ^[0-9]+$ ]] || ((CALL_JOBS < 1)); then echo "e2e: ERROR: BENCH_E2E_CALL_JOBS=$CALL_JOBS: want a number >= 1" >&2; exit 2; fi
. "$here/cluster_variant.sh"
bench_begin e2e-restore_budget.so || exit 1

RB_TEST_NAME=bench-e2e
rb_cluster_up "store = \"$STORE\"; max_failures = 2; restore_retry_num = 3; restore_timeout = 300;" || exit 1

bench_variant_init || exit 1
set_variant() { bench_set_variant "$1"; }

declare -A V=()   # V[metric.variant] = "v1 v2 ..." (ms)

# job_start VARIANT I - submit, wait for the first line, wait until gone.
job_start() {
    local var=$1 i=$2 f out j s t
    f=$RB_WORKDIR/first.$var.$i
    rm -f "$f"
    out=$(as_user bash -c 's=$EPOCHREALTIME; j=$(sbatch --parsable -o /dev/null -J "bench-$1" "$2" "$3"); echo "$s $j"' _ "$var" "$JOBSCRIPT" "$f") || { echo "sbatch failed" >&2; return 1; }
    read -r s j <<<"$out"
    j=${j%%;*}
    for ((t = 0; t < 1500; t++)); do grep -qE '^[0-9]+\.[0-9]+$' "$f" 2>/dev/null && break; sleep 0.02; done
    grep -qE '^[0-9]+\.[0-9]+$' "$f" 2>/dev/null || { echo "job $j ($var): no first line after 30 s" >&2; return 1; }
    V[job_start.$var]+="$(awk -v a="$s" -v b="$(cat "$f")" 'BEGIN { printf "%.1f", (b - a) * 1000 }') "
    wait_not_running "$j" 30 || return 1
    JOBS[$var]+="$j "
}

# timed VARIANT METRIC CMD... - run CMD as the user, timed inside.
timed() {
    local var=$1 metric=$2 out; shift 2
    out=$(as_user bash -c 's=$EPOCHREALTIME; "$@" >/dev/null 2>&1; rc=$?; e=$EPOCHREALTIME; echo "$s $e $rc"' _ "$@")
    read -r s e rc <<<"$out"
    [[ $rc == 0 ]] || { echo "$metric ($var): exit $rc: $*" >&2; return 1; }
    V[$metric.$var]+="$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.1f", (b - a) * 1000 }') "
}

declare -A JOBS=([with]="" [without]="")
# The batch script: its first line writes the time (bash: $EPOCHREALTIME).
JOBSCRIPT=$RB_WORKDIR/first-line.sh
printf '#!/bin/bash\necho "$EPOCHREALTIME" > "$1"\n' >"$JOBSCRIPT"
chmod 755 "$JOBSCRIPT"

# The allocation for srun steps: one CPU, running all along.
set_variant without
alloc=$(submit_as_user -o /dev/null -J bench-alloc --wrap "sleep 3600") || exit 1
wait_state "$alloc" RUNNING 30 || exit 1
rb_log "allocation $alloc running; $RUNS runs per variant, ABBA order"

# Warm-up (not measured): first client runs, page cache, munge.
for var in without with; do
    set_variant $var
    job_start $var 0 >/dev/null 2>&1
    timed $var warm srun --jobid="$alloc" --overlap -n1 true
    timed $var warm srun -n1 true
done
V=()
JOBS=([with]="" [without]="")

fails=0
declare -A VFAILS=([with]=0 [without]=0 [calls]=0)
# failed VARIANT - count a failed measurement of VARIANT
failed() { fails=$((fails + 1)); VFAILS[$1]=$((VFAILS[$1] + 1)); }
for ((i = 1; i <= RUNS; i++)); do
    if ((i % 2)); then order=(without with); else order=(with without); fi
    for var in "${order[@]}"; do
        set_variant "$var"
        job_start "$var" "$i" || failed "$var"
        timed "$var" srun_step srun --jobid="$alloc" --overlap -n1 true || failed "$var"
        timed "$var" srun_job srun -n1 true || failed "$var"
    done
    ((i % 10 == 0)) && rb_log "run $i of $RUNS"
done

# stats NAME "values" -> n med p10 p90 min max (ms)
stats() {
    tr ' ' '\n' <<<"$2" | grep -E '^[0-9.]+$' | sort -g | awk -v name="$1" '
        { v[NR] = $1 }
        END {
            n = NR; if (n == 0) { print name " n=0"; exit }
            printf "%s n=%d med_ms=%.1f p10_ms=%.1f p90_ms=%.1f min_ms=%.1f max_ms=%.1f\n", name, n,
                (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2),
                v[int(0.1 * (n - 1)) + 1], v[int(0.9 * (n - 1)) + 1], v[1], v[n]
        }'
}
med() { tr ' ' '\n' <<<"$1" | grep -E '^[0-9.]+$' | sort -g | awk '{ v[NR] = $1 } END { n = NR; print (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }'; }
# median of the paired differences with - without (run i of each)
paired() {
    paste <(tr ' ' '\n' <<<"$1" | grep -E '^[0-9.]+$') <(tr ' ' '\n' <<<"$2" | grep -E '^[0-9.]+$') |
        awk '{ print $1 - $2 }' | sort -g | awk '{ v[NR] = $1 } END { n = NR; printf "%.1f", (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }'
}

for m in job_start srun_step srun_job; do
    for var in without with; do
        echo "e2e $(stats "metric=$m variant=$var" "${V[$m.$var]:-}")"
    done
    a=$(med "${V[$m.without]:-}"); b=$(med "${V[$m.with]:-}")
    echo "e2e ratio metric=$m ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.3f", b / a; else print "nan" }') paired_diff_med_ms=$(paired "${V[$m.with]:-}" "${V[$m.without]:-}")"
done
echo "e2e failures count=$fails"

# Did the plugin run in the "with" jobs only? (their records, or budget lines)
# shellcheck disable=SC2086
n_with=$(bench_count_budgets "$STORE" ${JOBS[with]})
# shellcheck disable=SC2086
n_without=$(bench_count_budgets "$STORE" ${JOBS[without]})
echo "e2e check name=records_written with=$n_with/$(wc -w <<<"${JOBS[with]}") without=$n_without/$(wc -w <<<"${JOBS[without]}")"

# ---- srun steps do no plugin work ----------------------------------------------
set_variant with
snap() { find "$RB_STATE" -printf '%p %s %T@\n' | sort; }
before=$(snap)
for ((k = 0; k < 5; k++)); do timed with check srun --jobid="$alloc" --overlap -n1 true; done
after=$(snap)
changed=$(diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | grep -c '^[<>]')
echo "e2e check name=ledger_unchanged_by_srun_steps steps=5 changed_lines=$changed"

if command -v strace >/dev/null; then
    spid=$(rb_daemon_pid slurmd)
    trace=$OUT/e2e-strace-srun-step.txt
    strace -f -qq -e trace=open,openat,stat,newfstatat,access,fsync,rename,renameat,mkdir,mkdirat \
        -o "$trace" -p "$spid" &
    st=$!
    sleep 1
    timed with check srun --jobid="$alloc" --overlap -n1 true
    sleep 0.5
    kill -INT "$st" 2>/dev/null
    wait "$st" 2>/dev/null
    # also the client side: srun as the job user
    as_user strace -f -qq -e trace=open,openat,stat,newfstatat,access -o /tmp/rb-bench-srun-client.$$ \
        srun --jobid="$alloc" --overlap -n1 true >/dev/null 2>&1
    mv -f /tmp/rb-bench-srun-client.$$ "$OUT/e2e-strace-srun-client.txt" 2>/dev/null
    so=$(grep -c 'restore_budget.so' "$trace")
    conf=$(grep -c "$RB_CONF" "$trace")
    state=$(grep -c "$RB_STATE" "$trace")
    cso=$(grep -c 'restore_budget.so' "$OUT/e2e-strace-srun-client.txt" 2>/dev/null)
    cconf=$(grep -c "$RB_CONF" "$OUT/e2e-strace-srun-client.txt" 2>/dev/null)
    echo "e2e check name=strace_srun_step stepd_plugin_opens=$so stepd_config_opens=$conf stepd_state_dir_calls=$state client_plugin_opens=$cso client_config_opens=$cconf lines=$(wc -l <"$trace")"
fi

. "$here/e2e_calls.sh"
calls_phase "$alloc" || failed calls

scancel "$alloc" 2>/dev/null
echo "e2e store=$STORE"
echo "e2e load loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\" other_slurmctlds=$(pgrep -c -x slurmctld)"
# a variant with a failed measurement is an error, never a short table row
# (the causes are the lines above: "sbatch failed", "exit N: srun ...")
for var in with without; do
    ((VFAILS[$var] == 0)) || echo "e2e: ERROR: variant $var: ${VFAILS[$var]} of $((3 * RUNS)) measurements failed (see the lines above)" >&2
done
((VFAILS[calls] == 0)) || echo "e2e: ERROR: the controller calls per attempt were not measured (see the lines above)" >&2
((fails == 0))
