#!/usr/bin/env bash
# tests/bench/throughput.sh - makespan of many short jobs, with the plugin
# and without, on a private cluster.
#
# One cluster (tests/integration/lib.sh rb_cluster_up: the plugin with its
# own config and state_dir; cluster name rbbench; its dir under
# $BENCH_OUT/cluster, i.e. build/bench/cluster: cluster_variant.sh).
# plugstack.conf is switched between the two variants (cluster_variant.sh)
# between batches, once the previous batch has left the controller's queue.
#
# THROUGHPUT_JOBS jobs per variant, in THROUGHPUT_ROUNDS rounds; each round
# runs one batch of JOBS/ROUNDS jobs of each variant, in ABBA order (round 1
# without then with, round 2 with then without, ...) so drift in the
# machine's load hits both. A job is `sbatch --requeue -N1 -n1 --wrap true`
# as the job user. A batch's makespan: from its first sbatch (the user's
# $EPOCHREALTIME) until squeue (polled every 50 ms) lists no job: every job
# has run, its epilog ended and it left COMPLETING. A variant's makespan is
# the sum over its batches. Each batch is preceded by one unmeasured job of
# its variant (the first job after a plugstack.conf switch is slow).
#
# Then a sweep: one job array of THROUGHPUT_ARRAY tasks per batch
# (`sbatch --array=0-N-1 --requeue -N1 -n1 --wrap true`, one sbatch call),
# THROUGHPUT_ARRAY_ROUNDS rounds in the same ABBA order; a batch's makespan is
# again its sbatch until squeue lists no job. Every task must end COMPLETED
# (and, with the plugin, have a record): anything less fails the batch.
#
# Knobs: THROUGHPUT_JOBS (300; e.g. 60 for a quick check; 0 = only the
# array), THROUGHPUT_ROUNDS (6), THROUGHPUT_ARRAY (300 tasks; 0 = no array
# part), THROUGHPUT_ARRAY_ROUNDS (4), THROUGHPUT_ARRAY_WRAP (true: what each
# task runs; `false` makes every array batch fail, to see that path),
# BENCH_OUT (build/bench), BENCH_PLUGIN (build/restore_budget.so),
# BENCH_STORE (dir, or controller: the budget in each job's AdminComment,
# docs/stores.md; a job "has a record" then when its comment has the line).
# Prints "throughput ..." and "throughput_array ..." key=value lines; no time
# is asserted. Exit 1 if the cluster could not start, the job user cannot
# read the plugin, or any batch failed: a failed variant is an error
# ("throughput: ERROR: variant V: ... cause" on stderr), never a total of 0.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
JOBS=${THROUGHPUT_JOBS:-300}
ROUNDS=${THROUGHPUT_ROUNDS:-6}
. "$here/cluster_variant.sh"

ARRAY=${THROUGHPUT_ARRAY:-300}
AROUNDS=${THROUGHPUT_ARRAY_ROUNDS:-4}
# what each task runs: `true`; `false` shows a failed batch (an error)
AWRAP=${THROUGHPUT_ARRAY_WRAP:-true}
((ROUNDS >= 1 && (JOBS == 0 || JOBS >= ROUNDS))) || { echo "throughput: need THROUGHPUT_JOBS = 0 or >= THROUGHPUT_ROUNDS >= 1" >&2; exit 2; }
((ARRAY == 0 || (AROUNDS >= 1 && ARRAY <= 1000))) || { echo "throughput: need THROUGHPUT_ARRAY 0..1000 (MaxArraySize) and THROUGHPUT_ARRAY_ROUNDS >= 1" >&2; exit 2; }
((JOBS + ARRAY > 0)) || { echo "throughput: THROUGHPUT_JOBS and THROUGHPUT_ARRAY are both 0" >&2; exit 2; }
PER=$((JOBS / ROUNDS))
CHUNK=20 # sbatch calls per as_user (its timeout is 30 s)

bench_begin throughput-restore_budget.so || exit 1
RB_TEST_NAME=bench-throughput
STORE=${BENCH_STORE:-dir}
rb_cluster_up "store = \"$STORE\"; max_failures = 2; restore_retry_num = 3; restore_timeout = 300;" || exit 1
# count_budgets ID... - how many of these jobs have a budget (cluster_variant.sh)
count_budgets() { bench_count_budgets "$STORE" "$@"; }
bench_variant_init || exit 1

# submit VARIANT K - K jobs as the user; prints "T0 id id ..." (T0 = the
# first sbatch's start, $EPOCHREALTIME).
# A failure's cause (sbatch's last error line) goes to CAUSE[VARIANT].
submit() {
    local var=$1 k=$2 n out t0="" ids=() more err=$OUT/throughput-sbatch.err
    while ((k > 0)); do
        n=$((k < CHUNK ? k : CHUNK))
        out=$(as_user bash -c 'echo "$EPOCHREALTIME"
            for ((i = 0; i < $1; i++)); do
                sbatch --parsable --requeue -N1 -n1 -o /dev/null -J "tp-$2" --wrap true || exit 1
            done' _ "$n" "$var" 2>"$err") || {
            cat "$err" >&2
            [[ -z ${CAUSE[$var]:-} ]] && CAUSE[$var]="sbatch failed: $(grep . "$err" | head -n 1)"
            echo "throughput: sbatch failed ($var)" >&2
            return 1
        }
        [[ -z $t0 ]] && t0=$(head -n 1 <<<"$out")
        read -r -a more <<<"$(tail -n +2 <<<"$out" | cut -d';' -f1 | tr '\n' ' ')"
        ids+=("${more[@]}")
        k=$((k - n))
    done
    echo "$t0 ${ids[*]}"
}

# drained TIMEOUT - wait until squeue lists no job; prints that moment.
drained() {
    local tmo=$1 t0=$SECONDS
    while [[ -n $(timeout 10 squeue -h -o %i 2>/dev/null) ]]; do
        ((SECONDS - t0 >= tmo)) && { echo "throughput: jobs still queued after ${tmo}s" >&2; return 1; }
        sleep 0.05
    done
    date +%s.%N
}

declare -A MS=([with]="" [without]="") JOBIDS=([with]="" [without]="") CAUSE=() VFAILS=([with]=0 [without]=0)
# slurmctld's RPCs the plugin's calls cost (sdiag, over measured batches):
# scontrol update is REQUEST_UPDATE_JOB, `squeue --jobs ONE` is
# REQUEST_JOB_INFO_SINGLE; the bench's own polling is neither
declare -A RPC_U=([with]=0 [without]=0) RPC_S=([with]=0 [without]=0)
rpc_count() {
    timeout 10 sdiag 2>/dev/null | awk -v t="$1" '$1 == t {
        for (i = 2; i <= NF; i++) if ($i ~ /^count:/) { sub("count:", "", $i); print $i; exit } }' | grep . || echo 0
}
fails=0
# failed VARIANT CAUSE - count a failed batch of VARIANT, keep its first cause
failed() {
    fails=$((fails + 1))
    VFAILS[$1]=$((VFAILS[$1] + 1))
    [[ -z ${CAUSE[$1]:-} ]] && CAUSE[$1]=$2
    return 1
}
# batch VARIANT ROUND K - one measured batch.
batch() {
    local var=$1 r=$2 k=$3 line t0 t1 ids done_n u0 s0
    bench_set_variant "$var"
    # one unmeasured job first: the first job after plugstack.conf changed
    # starts ~0.4 s later (seen here), a cost of switching, not of either
    # variant; ABBA would balance it, but it would blur every batch
    submit "$var" 1 >/dev/null && drained 60 >/dev/null
    u0=$(rpc_count REQUEST_UPDATE_JOB) s0=$(rpc_count REQUEST_JOB_INFO_SINGLE)
    # not in $( ): submit's CAUSE must reach this shell
    submit "$var" "$k" >"$OUT/throughput-batch.ids" || { failed "$var" "sbatch failed"; drained 300 >/dev/null; return 1; }
    line=$(cat "$OUT/throughput-batch.ids")
    read -r t0 ids <<<"$line"
    t1=$(drained $((60 + 2 * k))) || { failed "$var" "jobs still queued after $((60 + 2 * k))s"; return 1; }
    RPC_U[$var]=$((RPC_U[$var] + $(rpc_count REQUEST_UPDATE_JOB) - u0))
    RPC_S[$var]=$((RPC_S[$var] + $(rpc_count REQUEST_JOB_INFO_SINGLE) - s0))
    done_n=$(timeout 10 squeue -h -t all -j "${ids// /,}" -o %T 2>/dev/null | grep -c '^COMPLETED$')
    ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    MS[$var]+="$ms "
    JOBIDS[$var]+="$ids "
    echo "throughput round=$r variant=$var jobs=$k makespan_s=$ms completed=$done_n"
}

# Warm-up (not measured): clients, page cache, the plugin's first load.
for var in without with; do
    bench_set_variant "$var"
    submit "$var" 2 >/dev/null && drained 60 >/dev/null
done
sum() { tr ' ' '\n' <<<"$1" | awk 'NF { s += $1 } END { printf "%.3f", s }'; }
# median over rounds of makespan(with) / makespan(without), round by round
round_ratio_med() {
    paste <(tr ' ' '\n' <<<"$1" | grep .) <(tr ' ' '\n' <<<"$2" | grep .) |
        awk '$2 > 0 { print $1 / $2 }' | sort -g |
        awk '{ v[NR] = $1 } END { n = NR; if (!n) print "nan"; else printf "%.3f", (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }'
}

# array_batch VARIANT ROUND N - one measured job array of N tasks.
afails=0
declare -A AMS=([with]="" [without]="") ATASKS=([with]=0 [without]=0)
array_batch() {
    local var=$1 r=$2 n=$3 out t0 aid t1 ms states done_n ids recs=0 j why=""
    bench_set_variant "$var"
    submit "$var" 1 >/dev/null && drained 60 >/dev/null
    out=$(as_user bash -c 'echo "$EPOCHREALTIME"
        sbatch --parsable --array="0-$(($1 - 1))" --requeue -N1 -n1 -o /dev/null -J "tpa-$2" --wrap "$3"' _ "$n" "$var" "$AWRAP") ||
        why="sbatch --array failed"
    t0=$(head -n 1 <<<"$out")
    aid=$(tail -n +2 <<<"$out" | cut -d';' -f1)
    [[ -z $why && ! $aid =~ ^[0-9]+$ ]] && why="sbatch printed no array id"
    if [[ -z $why ]] && ! t1=$(drained $((60 + 2 * n))); then why="tasks still queued after $((60 + 2 * n))s"; fi
    if [[ -z $why ]]; then
        # %A: each task's own job id (its ledger record's key), %T: its state
        states=$(timeout 10 squeue -h -t all -j "$aid" -o '%A %T' 2>/dev/null)
        done_n=$(grep -c ' COMPLETED$' <<<"$states")
        ((done_n == n)) || why="$done_n of $n tasks COMPLETED"
    fi
    if [[ -z $why ]]; then
        # the plugin ran in every task of "with" and in none of "without"
        ids=$(awk '{ print $1 }' <<<"$states")
        # shellcheck disable=SC2086
        recs=$(count_budgets $ids)
        [[ $var == with ]] && ((recs != n)) && why="$recs of $n tasks have a ledger record"
        [[ $var == without ]] && ((recs != 0)) && why="$recs tasks have a ledger record without the plugin"
    fi
    if [[ -n $why ]]; then
        afails=$((afails + 1))
        echo "throughput_array round=$r variant=$var tasks=$n failed=\"$why\""
        echo "throughput: ERROR: array variant $var, round $r: $why" >&2
        drained 300 >/dev/null
        return 1
    fi
    ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    AMS[$var]+="$ms "
    ATASKS[$var]=$((ATASKS[$var] + n))
    echo "throughput_array round=$r variant=$var tasks=$n makespan_s=$ms completed=$done_n records=$recs array_id=$aid"
}

if ((JOBS > 0)); then
rb_log "throughput: $ROUNDS rounds of $PER jobs per variant, ABBA order"

for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then order=(without with); else order=(with without); fi
    for var in "${order[@]}"; do batch "$var" "$r" "$PER"; done
    rb_log "round $r of $ROUNDS done"
done

n_with=$(wc -w <<<"${JOBIDS[with]}")
n_without=$(wc -w <<<"${JOBIDS[without]}")
w=$(sum "${MS[with]}")
wo=$(sum "${MS[without]}")
# a variant with a failed batch has no total (never a row of 0 jobs): an
# error line names it and its first cause, and the script exits 1
for var in with without; do
    ((VFAILS[$var] == 0)) && continue
    echo "throughput error variant=$var failed_batches=${VFAILS[$var]}/$ROUNDS cause=\"${CAUSE[$var]//\"/\'}\""
    echo "throughput: ERROR: variant $var: ${VFAILS[$var]} of $ROUNDS batches failed: ${CAUSE[$var]}" >&2
done
if ((fails == 0)); then
echo "throughput total variant=with jobs=$n_with makespan_s=$w jobs_per_s=$(awk -v n="$n_with" -v s="$w" 'BEGIN { printf "%.2f", (s > 0 ? n / s : 0) }')"
echo "throughput total variant=without jobs=$n_without makespan_s=$wo jobs_per_s=$(awk -v n="$n_without" -v s="$wo" 'BEGIN { printf "%.2f", (s > 0 ? n / s : 0) }')"
echo "throughput ratio ratio=$(awk -v a="$w" -v b="$wo" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }') round_ratio_med=$(round_ratio_med "${MS[with]}" "${MS[without]}") rounds=$ROUNDS per_batch=$PER"
fi
for var in with without; do
    n=$(wc -w <<<"${JOBIDS[$var]}")
    echo "throughput rpc variant=$var jobs=$n update_job=${RPC_U[$var]} job_info_single=${RPC_S[$var]} per_job=$(awk -v u="${RPC_U[$var]}" -v s="${RPC_S[$var]}" -v n="$n" 'BEGIN { if (n > 0) printf "%.2f+%.2f", u / n, s / n; else print "nan" }')"
done
echo "throughput failures count=$fails"
fi

if ((ARRAY > 0)); then
    rb_log "throughput: $AROUNDS rounds of one $ARRAY-task array per variant, ABBA order"
    for ((r = 1; r <= AROUNDS; r++)); do
        if ((r % 2)); then order=(without with); else order=(with without); fi
        for var in "${order[@]}"; do array_batch "$var" "$r" "$ARRAY"; done
        rb_log "array round $r of $AROUNDS done"
    done
    for var in with without; do
        s=$(sum "${AMS[$var]}")
        # a variant with a failed batch has no total: it says so instead
        if [[ -z ${AMS[$var]} ]] || ((ATASKS[$var] != ARRAY * AROUNDS)); then
            echo "throughput_array_total variant=$var tasks=${ATASKS[$var]} failed=\"$((AROUNDS - $(wc -w <<<"${AMS[$var]}"))) of $AROUNDS batches failed\""
        else
            echo "throughput_array_total variant=$var tasks=${ATASKS[$var]} makespan_s=$s tasks_per_s=$(awk -v n="${ATASKS[$var]}" -v s="$s" 'BEGIN { printf "%.2f", n / s }')"
        fi
    done
    if ((afails == 0)); then
        echo "throughput_array_ratio ratio=$(awk -v a="$(sum "${AMS[with]}")" -v b="$(sum "${AMS[without]}")" 'BEGIN { printf "%.3f", a / b }') round_ratio_med=$(round_ratio_med "${AMS[with]}" "${AMS[without]}") rounds=$AROUNDS tasks=$ARRAY failures=0"
    else
        echo "throughput_array_ratio ratio=failed rounds=$AROUNDS tasks=$ARRAY failures=$afails"
    fi
fi

# Did the plugin run in the "with" jobs only? (their ledger records)
if ((JOBS > 0)); then
r_with=0; r_without=0
# shellcheck disable=SC2086
r_with=$(count_budgets ${JOBIDS[with]})
# shellcheck disable=SC2086
r_without=$(count_budgets ${JOBIDS[without]})
echo "throughput check name=records_written with=$r_with/$n_with without=$r_without/$n_without"
fi
echo "throughput store=$STORE"
echo "throughput load loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\" other_slurmctlds=$(pgrep -c -x slurmctld)"
((fails + afails == 0)) || { echo "throughput: $fails job batches and $afails array batches failed" >&2; exit 1; }
exit 0
