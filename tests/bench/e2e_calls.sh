# shellcheck shell=bash
# tests/bench/e2e_calls.sh - e2e.sh's last part, sourced by it: the plugin's
# controller calls and slurmctld's RPCs per attempt (e2e.sh's header says
# how). Uses e2e.sh's STORE, CALL_JOBS, timed and the cluster of
# cluster_variant.sh. calls_phase prints "e2e calls", "e2e sdiag" and
# "e2e check name=calls_by_srun_steps" lines; it returns 1 (with an
# "e2e: ERROR: calls: ..." line) if any job or count failed: never a row of 0.

CALL_DIR=$RB_CLUSTER_DIR/rb/bin
CALL_LOG=$RB_CLUSTER_DIR/rb/calls.log
declare -A POLLS=([with]=0 [without]=0) CJOBS=([with]="" [without]="") DELTA=()

calls_error() { echo "e2e: ERROR: calls: $*" >&2; return 1; }

# The wrapper: one line per call (time, uid, tool, the job it names; only
# characters of a job id or a keyword kept), then the real tool.
# shellcheck disable=SC2016
CALL_WRAPPER='#!/bin/bash
# written by tests/bench/e2e_calls.sh: log this call, then run the real @TOOL@
if [[ @TOOL@ == squeue ]]; then a=$4; else a="$1 ${2#JobId=}"; fi
printf "%s %s @TOOL@ %s\n" "$EPOCHREALTIME" "$UID" "${a//[!A-Za-z0-9_ ]/?}" >>@LOG@ 2>/dev/null
exec @REAL@ "$@"
'

# calls_wrappers - CALL_DIR/squeue and CALL_DIR/scontrol, and an empty log
calls_wrappers() {
    local tool real text
    mkdir -p "$CALL_DIR" && chmod 755 "$CALL_DIR" || return 1
    for tool in squeue scontrol; do
        real=$(command -v "$tool") || { calls_error "no $tool in PATH"; return 1; }
        text=${CALL_WRAPPER//@TOOL@/$tool}
        text=${text//@LOG@/$(printf '%q' "$CALL_LOG")}
        printf '%s' "${text//@REAL@/$(printf '%q' "$real")}" >"$CALL_DIR/$tool" &&
            chmod 755 "$CALL_DIR/$tool" || return 1
    done
    # any uid may append: a call as the job's user is counted too
    : >"$CALL_LOG" && chmod 666 "$CALL_LOG"
}

# gone VARIANT JOB - poll `squeue -h -o %i` (all jobs; POLLS counts them)
# until JOB is not listed (it ran, its end was written, it left the node).
gone() {
    local var=$1 j=$2 t out
    for ((t = 0; t < 300; t++)); do
        POLLS[$var]=$((POLLS[$var] + 1))
        out=$(timeout 10 squeue -h -o %i 2>/dev/null) || { calls_error "squeue failed"; return 1; }
        grep -qx "$j" <<<"$out" || return 0
        sleep 0.1
    done
    calls_error "job $j ($var) still listed after 30 s"
}

# call_job VARIANT I - one job: submit, wait for both lines, wait until gone.
call_job() {
    local var=$1 i=$2 f j t
    f=$RB_WORKDIR/calls.$var.$i
    rm -f "$f"
    j=$(submit_as_user -o /dev/null -J "bench-calls-$var" "$CALLSCRIPT" "$f") || { calls_error "sbatch failed ($var)"; return 1; }
    for ((t = 0; t < 1500; t++)); do
        [[ -f $f ]] && (($(wc -l <"$f") >= 2)) && break
        sleep 0.02
    done
    [[ -f $f ]] && (($(wc -l <"$f") >= 2)) || { calls_error "job $j ($var): no last line after 30 s"; return 1; }
    gone "$var" "$j" || return 1
    CJOBS[$var]+="$j "
    CFILE[$j]=$f
}

# sdiag_delta BEFORE AFTER - "TYPE N" for every type whose count changed
sdiag_delta() {
    join -a 2 -e 0 -o 0,1.2,2.2 <(printf '%s\n' "$1") <(printf '%s\n' "$2") |
        awk '$3 != $2 { print $1, $3 - $2 }'
}

# calls_variant VARIANT - CALL_JOBS jobs one after the other, sdiag around
# them; "with" runs the plugin through the wrappers.
calls_variant() {
    local var=$1 i s0 s1 extra=()
    [[ $var == with ]] && extra=("slurm_bindir=$CALL_DIR")
    bench_set_variant "$var" "${extra[@]}"
    # one unmeasured job: the first after a switch of plugstack.conf
    call_job "$var" 0 || return 1
    CJOBS[$var]="" POLLS[$var]=0
    : >"$CALL_LOG"
    s0=$(bench_sdiag_types)
    [[ -n $s0 ]] || { calls_error "sdiag printed no RPC counts"; return 1; }
    for ((i = 1; i <= CALL_JOBS; i++)); do call_job "$var" "$i" || return 1; done
    s1=$(bench_sdiag_types)
    DELTA[$var]=$(sdiag_delta "$s0" "$s1")
}

# poll_cost - the RPCs of one of the bench's polls, by type (POLL_COST:
# "TYPE N" for 5 polls; on 22.05 each is a REQUEST_JOB_INFO and a
# REQUEST_PARTITION_INFO), measured on the idle queue
poll_cost() {
    local s0 s1 k
    s0=$(bench_sdiag_types)
    for ((k = 0; k < 5; k++)); do timeout 10 squeue -h -o %i >/dev/null 2>&1; done
    s1=$(bench_sdiag_types)
    POLL_COST=$(sdiag_delta "$s0" "$s1" | grep -v '^REQUEST_STATS_INFO ')
    [[ -n $POLL_COST ]]
}

# sdiag_report VARIANT - its RPCs per attempt, the bench's polls taken out
sdiag_report() {
    awk -v var="$1" -v n="$CALL_JOBS" -v polls="${POLLS[$1]}" '
        NR == FNR { cost[$1] = $2 / 5; pc = pc (pc ? "," : "") $1 "=" $2 / 5; next }
        $1 == "REQUEST_STATS_INFO" { next }
        $1 in cost { $2 -= polls * cost[$1]; seen[$1] = 1 }
        $2 < 0 { bad = 1 }
        { tot += $2; c[$1] = $2; if ($2) types = types (types ? "," : "") $1 "=" sprintf("%.2f", $2 / n) }
        END {
            for (t in cost) if (polls > 0 && cost[t] > 0 && !(t in seen)) bad = 1
            if (bad) exit 1
            printf "e2e sdiag variant=%s attempts=%d rpcs_per_attempt=%.2f update_job=%.2f job_info_single=%.2f bench_polls=%d poll_rpcs=\"%s\" types=\"%s\"\n",
                var, n, tot / n, c["REQUEST_UPDATE_JOB"] / n, c["REQUEST_JOB_INFO_SINGLE"] / n, polls, pc, types
        }' <(printf '%s\n' "$POLL_COST") <(printf '%s\n' "${DELTA[$1]}")
}

# calls_report - the wrappers' log, each call put at its job's start (before
# the script's first line), end (after its last) or during
calls_report() {
    local j ts te
    for j in ${CJOBS[with]}; do
        { read -r ts && read -r te; } <"${CFILE[$j]}" || return 1
        echo "$j $ts $te"
    done | awk -v n="$CALL_JOBS" -v store="$STORE" '
        NR == FNR { ts[$1] = $2; te[$1] = $3; next }
        { id = ($3 == "squeue" ? $4 : $5) }
        !(id in ts) { other_jobs++; next }
        {
            when = ($1 < ts[id] ? "start" : ($1 > te[id] ? "end" : "during"))
            kind = ($3 == "squeue" ? "reads" : ($4 == "update" ? "writes" : "other"))
            c[when, kind]++; total++; if ($2 != 0) as_user++
            if (when == "start" && (!(id in first) || $1 < first[id])) first[id] = $1
        }
        END {
            # start span: the first start call to the first line of the job
            # script (user_init from its first call on, then the exec);
            # sorted by insertion (no gawk asort)
            for (id in first) {
                v = (ts[id] - first[id]) * 1000
                for (i = ++k; i > 1 && span[i - 1] > v; i--) span[i] = span[i - 1]
                span[i] = v
            }
            med = k ? (k % 2 ? span[(k + 1) / 2] : (span[k / 2] + span[k / 2 + 1]) / 2) : 0
            printf "e2e calls store=%s attempts=%d per_attempt=%.2f start_reads=%.2f start_writes=%.2f end_reads=%.2f end_writes=%.2f during=%.2f other=%.2f as_user=%d other_jobs=%d start_span_med_ms=%.1f start_span_max_ms=%.1f\n",
                store, n, total / n, c["start", "reads"] / n, c["start", "writes"] / n, c["end", "reads"] / n, c["end", "writes"] / n,
                (c["during", "reads"] + c["during", "writes"] + c["during", "other"]) / n,
                (c["start", "other"] + c["end", "other"]) / n, as_user, other_jobs, med, (k ? span[k] : 0)
        }' - "$CALL_LOG"
}

# calls_phase ALLOC - the whole part (ALLOC: the running allocation for the
# srun steps); 1 on any failure (an ERROR line says which)
calls_phase() {
    local alloc=$1 out wo w b0 l0 k var
    declare -gA CFILE=()
    CALLSCRIPT=$RB_WORKDIR/two-lines.sh
    printf '#!/bin/bash\necho "$EPOCHREALTIME" > "$1"\necho "$EPOCHREALTIME" >> "$1"\n' >"$CALLSCRIPT"
    chmod 755 "$CALLSCRIPT"
    calls_wrappers || { calls_error "cannot write the wrappers in $CALL_DIR"; return 1; }
    poll_cost || { calls_error "sdiag saw no RPC of 5 \`squeue -h -o %i\`"; return 1; }
    for var in without with; do calls_variant "$var" || return 1; done
    # shellcheck disable=SC2086
    b0=$(bench_count_budgets "$STORE" ${CJOBS[with]})
    ((b0 == CALL_JOBS)) ||
        { calls_error "$b0 of $CALL_JOBS jobs with the plugin have a budget"; return 1; }
    # shellcheck disable=SC2086
    b0=$(bench_count_budgets "$STORE" ${CJOBS[without]})
    [[ $b0 == 0 ]] ||
        { calls_error "$b0 jobs without the plugin have a budget"; return 1; }
    out=$(calls_report) || { calls_error "a job's two lines are unreadable"; return 1; }
    echo "$out"
    # the controller store must ask the controller: no call = no wrapper used
    [[ $STORE != controller || ! $out =~ per_attempt=0\.00 ]] ||
        { calls_error "no controller call logged (the wrappers in $CALL_DIR were not run)"; return 1; }
    wo=$(sdiag_report without) && w=$(sdiag_report with) ||
        { calls_error "sdiag counts went down (slurmctld restarted, or sdiag -r ran)"; return 1; }
    printf '%s\n%s\n' "$wo" "$w"
    out=""
    for k in rpcs_per_attempt update_job job_info_single; do
        out+=" $k=$(awk -v a="$(sed -n "s/.* $k=\([0-9.]*\).*/\1/p" <<<"$w")" \
            -v b="$(sed -n "s/.* $k=\([0-9.]*\).*/\1/p" <<<"$wo")" 'BEGIN { printf "%.2f", a - b }')"
    done
    echo "e2e sdiag_diff$out"
    # srun steps through the wrappers: no call
    l0=$(wc -l <"$CALL_LOG")
    for ((k = 0; k < 5; k++)); do timed with check srun --jobid="$alloc" --overlap -n1 true || return 1; done
    echo "e2e check name=calls_by_srun_steps steps=5 calls=$(($(wc -l <"$CALL_LOG") - l0))"
    bench_set_variant with
}
