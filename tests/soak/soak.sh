#!/bin/bash
# tests/soak/soak.sh - one seeded fault soak on a private cluster (run by
# tests/soak/run.sh through tests/lib/runner.sh; docs/soak.md).
#
# SOAK_SEED drives every choice (bash RANDOM=SOAK_SEED): the jobs' kinds,
# users, (M, R) and options, which fault happens when and to which job.  The
# timing of Slurm itself is not seeded, so a seed replays the same plan, not
# necessarily the same interleaving.
#
# Knobs: SOAK_SEED (required), SOAK_JOBS=12, SOAK_SECONDS=600 (deadline),
#   SOAK_FAULT_GAP="2 8" (seconds between faults, min max),
#   SOAK_FAULT_STOP (stop injecting after this many seconds; default 2/3 of
#   the deadline), SOAK_STEPS="10 30" (trial length, min max),
#   SOAK_MAX_M=2 SOAK_MAX_R=3, SOAK_FAULTS (kinds to draw from, default
#   preempt requeue kill9 slurmd ctld ro; also untrusted: state_dir mode 0777
#   for a while; the default list stays as it is so that a seed keeps its
#   plan), SOAK_FAULT_HOOKS (executables, each a further fault kind, called
#   with the cluster dir), SOAK_ARRIVE="lo hi" (more jobs arrive every lo..hi
#   seconds until SOAK_FAULT_STOP; unset: none), SOAK_STORE (dir, or
#   controller: the budget in each job's AdminComment, docs/stores.md; its
#   default faults leave out ro, which has no state_dir to hit, and add
#   ctld9, a kill -9 of slurmctld right after one of the plugin's writes,
#   and dbd, slurmdbd down for 1..5 s), SOAK_ACCOUNTING (1: the cluster
#   has a private slurmdbd and MariaDB, RB_ACCOUNTING of cluster.sh, and dbd
#   is a default fault; default 1 with SOAK_STORE=controller, else 0).
RB_SUITE=${RB_SUITE:-soak}
# shellcheck source=tests/faults/lib.sh
. "$(dirname "$0")/../faults/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
# the replay through the core's engine (mk/soak.mk builds it in the checkout)
CORE_REPLAY=${RB_SRC_ROOT:-$RB_ROOT}/build/soak-replay
SEED=${SOAK_SEED:?SOAK_SEED}
NJOBS=${SOAK_JOBS:-12}
DEADLINE=${SOAK_SECONDS:-600}
read -r GAP_MIN GAP_MAX <<<"${SOAK_FAULT_GAP:-2 8}"
FAULT_STOP=${SOAK_FAULT_STOP:-$((DEADLINE * 2 / 3))}
read -r STEPS_MIN STEPS_MAX <<<"${SOAK_STEPS:-10 30}"
MAXM=${SOAK_MAX_M:-2} MAXR=${SOAK_MAX_R:-3}
STORE=${SOAK_STORE:-dir}
ACCT=${SOAK_ACCOUNTING:-0}
[[ $STORE == controller ]] && ACCT=${SOAK_ACCOUNTING:-1}
DEFAULT_FAULTS="preempt requeue kill9 slurmd ctld ro"
if [[ $STORE == controller ]]; then
    # the controller's own faults come last (a dir seed's plan is unchanged)
    DEFAULT_FAULTS="preempt requeue kill9 slurmd ctld ctld9"
    [[ $ACCT == 1 ]] && DEFAULT_FAULTS+=" dbd"
fi
read -r -a KINDS <<<"${SOAK_FAULTS:-$DEFAULT_FAULTS}"
read -r -a HOOKS <<<"${SOAK_FAULT_HOOKS:-}"
USERS=(rbuser rbsoak2 rbsoak3)
T_START=$SECONDS
RANDOM=$SEED
echo "soak: seed $SEED, $NJOBS jobs, deadline ${DEADLINE}s, faults until +${FAULT_STOP}s, store $STORE, accounting $ACCT, faults ${KINDS[*]}"

# rnd VAR LO HI - VAR := a seeded integer in [LO, HI].  Never call RANDOM in
# a subshell ($(...)): bash reseeds it there, and the parent's sequence would
# not advance.
rnd() { printf -v "$1" '%d' $(($2 + RANDOM % ($3 - $2 + 1))); }
el() { echo $((SECONDS - T_START)); }

for u in "${USERS[@]}"; do "$RB_CLUSTER_SH" ensure-user "$u" || { fail "user $u"; summary; }; done
RB_ACCOUNTING=$ACCT rb_cluster_up 'max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;' || { fail "cluster up"; summary; }
SD=$RB_CLUSTER_DIR/rb/sd
check "state_dir on a 16 MiB tmpfs ($SD)" ft_mount_tmpfs "$SD" 16m
RB_STATE=$SD
rb_write_config "state_dir = \"$SD\";
store = \"$STORE\";
max_failures = 1;
restore_retry_num = 2;
restore_timeout = 0;" || { fail "config"; summary; }
# A kill -9 of slurmctld restarts it on its saved state.  A controller that
# has never saved it (this cluster is seconds old; slurmctld saves every few
# minutes and when it stops) lacks its association usage file, and 26.05
# with accounting refuses to start without it ("fatal: No Assoc usage file
# ... to recover"; sid leg, 2026-12-03).  One graceful restart first saves
# it, as on any cluster that has run a while.
if [[ " ${KINDS[*]} " == *" ctld9 "* && $ACCT == 1 ]]; then
    check "slurmctld restarted once gracefully (its state saved before any kill -9)" rb_restart_ctld TERM
fi
LOGD=$RB_CLUSTER_DIR/soak
mkdir -p "$LOGD" && chmod 755 "$LOGD"
FLOG=$LOGD/faults.log
: >"$FLOG"
: >"$LOGD/ro-windows"
: >"$LOGD/rollback-windows"
: >"$LOGD/replay.out"
: >"$LOGD/requeue-times"

# ---- the plan: jobs -----------------------------------------------------------
# Every job is drawn first (kind, M, R, options, user, length, arrival), so
# a seed's plan does not depend on Slurm's timing. SOAK_ARRIVE="lo hi": more
# jobs arrive every lo..hi seconds until FAULT_STOP (a long soak keeps
# work running while the faults go on); unset, all SOAK_JOBS start at once
# and no draw is added (the seeds found so far keep their plan).
declare -a J KIND M R MI USR WD STEPS AT
KLIST=(healthy corrupt flaky buggy)
plan_job() { # plan_job I AT
    local i=$1
    if ((i < 4)); then KIND[i]=${KLIST[i]}; else KIND[i]=${KLIST[RANDOM % 4]}; fi
    rnd "M[i]" 0 "$MAXM"; rnd "R[i]" 1 "$MAXR"
    MI[i]=unlimited
    ((RANDOM % 4 == 0)) && rnd "MI[i]" 3 8
    USR[i]=${USERS[RANDOM % 3]}
    rnd "STEPS[i]" "$STEPS_MIN" "$STEPS_MAX"
    AT[i]=$2
}
submit_job() { # submit_job I
    local i=$1 opts
    RB_USER=${USR[i]}
    WD[i]=$(rb_workdir "j$i") || { fail "workdir j$i"; return; }
    RB_WORKDIR=${WD[i]}
    opts=(-p low "--export=ALL,SOAK_KIND=${KIND[i]},SOAK_STEPS=${STEPS[i]},SOAK_SEED=$SEED,SOAK_INDEX=$i"
          --checkpoint-dir=ckpt --max-failures="${M[i]}" --restore-retries="${R[i]}")
    [[ ${MI[i]} != unlimited ]] && opts+=(--max-interruptions="${MI[i]}")
    J[i]=$(submit_as_user "${opts[@]}" "$RB_ROOT/tests/soak/trial.sh") || { fail "sbatch j$i"; J[i]=; }
    LAST_SUBMIT=$SECONDS
    [[ -n ${J[i]} ]] && printf 'job %s: j%d %s user %s M=%s R=%s max_interruptions=%s steps %s at +%ss\n' \
        "${J[i]}" "$i" "${KIND[i]}" "${USR[i]}" "${M[i]}" "${R[i]}" "${MI[i]}" "${STEPS[i]}" "$(el)" | tee -a "$LOGD/jobs"
    RB_USER=rbuser
}
for ((i = 0; i < NJOBS; i++)); do plan_job "$i" 0; done
NPLAN=$NJOBS
if [[ -n ${SOAK_ARRIVE:-} ]]; then
    read -r ARR_MIN ARR_MAX <<<"$SOAK_ARRIVE"
    t=0
    while :; do
        rnd gap "$ARR_MIN" "$ARR_MAX"
        t=$((t + gap))
        ((t < FAULT_STOP)) || break
        plan_job "$NPLAN" "$t"
        NPLAN=$((NPLAN + 1))
    done
    echo "soak: $((NPLAN - NJOBS)) more jobs arrive until +${FAULT_STOP}s"
fi
for ((i = 0; i < NJOBS; i++)); do submit_job "$i"; done
# the jobs that have arrived (NJOBS grows up to NPLAN)
arrive() { while ((NJOBS < NPLAN && $(el) >= AT[NJOBS])); do submit_job "$NJOBS"; NJOBS=$((NJOBS + 1)); done; }
RB_USER=rbuser

# ---- faults -------------------------------------------------------------------
TERMINAL='COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED'
flog() { printf '+%ss fault %s\n' "$(el)" "$*" | tee -a "$FLOG"; }
# race - note now as a requeue's time: an attempt that exits by itself at
# that moment may be recorded as interrupted by the controller (the replay
# reads such an end both ways)
race() { date +%s.%N >>"$LOGD/requeue-times"; }
NFAULTS=0
running_jobs() {
    local i s
    for ((i = 0; i < NJOBS; i++)); do
        [[ -n ${J[i]} ]] || continue
        s=$(timeout 10 squeue -h -j "${J[i]}" -o %T 2>/dev/null)
        [[ $s == RUNNING ]] && echo "${J[i]}"
    done
}
# A job's end as first seen (its state and restart count): the controller
# forgets a job MinJobAge (600 s here) after it ends, which a long soak
# outlasts, so the final checks read what was seen then.
declare -A FINAL_STATE FINAL_RESTARTS
# Every job is looked at on every pass (not up to the first one still
# running): one that ends while an earlier one runs would otherwise be
# forgotten by the controller before it is seen.
all_terminal() {
    local i s left=0
    ((NJOBS < NPLAN)) && left=1
    for ((i = 0; i < NJOBS; i++)); do
        [[ -n ${J[i]} && -z ${FINAL_STATE[$i]:-} ]] || continue
        s=$(job_field "${J[i]}" JobState)
        [[ $s =~ ^($TERMINAL)$ ]] || { left=1; continue; }
        timeout 10 squeue -h -j "${J[i]}" -o %T 2>/dev/null | grep -q COMPLETING && { left=1; continue; }
        FINAL_STATE[$i]=$s FINAL_RESTARTS[$i]=$(job_field "${J[i]}" Restarts)
        # the controller's line goes with the job (MinJobAge): read it now
        [[ $STORE == controller ]] && "$RB_CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" \
            show --json "${J[i]}" >"$LOGD/show-${J[i]}.json" 2>"$LOGD/show-${J[i]}.err"
    done
    return "$left"
}
# pick_running - PICK := a seeded choice among the running soak jobs
pick_running() {
    local -a r
    PICK=
    mapfile -t r < <(running_jobs)
    ((${#r[@]} > 0)) || return 1
    PICK=${r[RANDOM % ${#r[@]}]}
}

# fault KIND - inject one fault; the seed chooses the victim and durations
fault() {
    local k=$1 j p kids secs rc=0 hi t
    case $k in
        preempt)
            kids=$(running_jobs | tr '\n' ' ')
            [[ -n $kids ]] || return 2
            race
            hi=$(RB_WORKDIR=$RB_CLUSTER_DIR/work/j0 RB_USER=${USR[0]} \
                submit_as_user -p high -c 2 -J preemptor -o /dev/null --wrap "sleep 2") || rc=1
            flog "preempt: high job ${hi:-?} preempts the running $kids(rc $rc)" ;;
        requeue)
            pick_running || return 2
            j=$PICK
            race
            timeout 10 scontrol requeue "$j" 2>&1 || rc=1
            flog "requeue: scontrol requeue $j (rc $rc)" ;;
        kill9)
            pick_running || return 2
            j=$PICK
            p=$(rb_batch_stepd "$j") || return 2
            kids=$(rbc_descendants_of "$p" | tr '\n' ' ')
            # shellcheck disable=SC2086
            kill -KILL "$p" $kids 2>/dev/null
            flog "kill9: slurmstepd $p of $j.batch and its processes ($kids), then slurmd restart"
            ft_restart_slurmd_busy || { rc=1; flog "kill9: slurmd restart failed"; } ;;
        slurmd)
            ft_restart_slurmd_busy || rc=1
            flog "slurmd: restarted (rc $rc)" ;;
        ctld)
            t=$(date +%s.%N)
            rb_restart_ctld || rc=1
            flog "ctld: slurmctld restarted (rc $rc)"
            # the controller store is out of reach meanwhile: an attempt
            # starting then runs untracked (on_error = "open"), as in a
            # read-only window of state_dir
            [[ $STORE == controller ]] && echo "$t $(date +%s.%N)" >>"$LOGD/ro-windows" ;;
        ctld9)
            fault_ctld9 || return 2 ;;
        dbd)
            [[ $ACCT == 1 ]] || { flog "dbd: the cluster has no slurmdbd (SOAK_ACCOUNTING=0): nothing done"; return 0; }
            rnd secs 1 5
            rbc_acct_call rbc_acct_dbd_stop 10 || rc=1
            flog "dbd: slurmdbd stopped for ${secs}s (rc $rc)"
            sleep "$secs"
            rbc_acct_call rbc_acct_dbd_start || { rc=1; flog "dbd: slurmdbd start FAILED"; }
            # the plugin never talks to slurmdbd: no window, nothing allowed
            ;;
        ro)
            rnd secs 1 5
            t=$(date +%s.%N)
            mount -o remount,ro "$SD" || rc=1
            flog "ro: state_dir read-only for ${secs}s (rc $rc)"
            sleep "$secs"
            mount -o remount,rw "$SD" || { rc=1; flog "ro: remount rw FAILED"; }
            # the window, for the replay: an attempt may run untracked only
            # if it started inside one
            echo "$t $(date +%s.%N)" >>"$LOGD/ro-windows" ;;
        untrusted)
            # others may write it: the plugin's trust check refuses it
            rnd secs 1 5
            t=$(date +%s.%N)
            chmod 0777 "$SD" || rc=1
            flog "untrusted: state_dir mode 0777 for ${secs}s (rc $rc)"
            sleep "$secs"
            chmod 0755 "$SD" || { rc=1; flog "untrusted: chmod 0755 FAILED"; }
            echo "$t $(date +%s.%N)" >>"$LOGD/ro-windows" ;;
        *)
            timeout 60 "$k" "$RB_CLUSTER_DIR" >>"$LOGD/hooks.log" 2>&1 || rc=$?
            flog "hook: $k $RB_CLUSTER_DIR (rc $rc)" ;;
    esac
    NFAULTS=$((NFAULTS + 1))
    return 0
}
rbc_descendants_of() { bash -c '. "$1"; rbc_descendants "$2"' _ "$RB_CLUSTER_SH" "$1" 2>/dev/null; }
# rbc_acct_call FN ARGS... - contrib/cluster/accounting.sh's FN on this cluster
rbc_acct_call() { bash -c '. "$1"; "$2" "$3" "${@:4}"' _ "$RB_CLUSTER_SH" "$1" "$RB_CLUSTER_DIR" "${@:2}"; }

# fault_ctld9 - kill -9 slurmctld right after the plugin's next write to a
# job's line (slurmctld logs each; up to 15 s for one), inside the ~5 s in
# which the controller has not saved it yet, and start it again on its
# saved state; then slurmd restarted and the soak's preemptors cancelled,
# as an admin would (docs/stores.md, "When slurmctld dies": a rollback can
# bring back as RUNNING a job the node has finished).  The rollback window,
# [kill - 6 s, started again], goes to soak/rollback-windows: the replay
# allows a job at most one lost charge per window (docs/soak.md).  1 = no
# write to hit.
fault_ctld9() {
    local clog=$RB_CLUSTER_DIR/log/slurmctld.log off w new t t1 rc=0
    # A job the controller has not saved yet is lost whole by a kill -9
    # (24.11 and 26.05 legs: "Purged files for defunct batch JobId=2", its id
    # given out again): Slurm losing a submission, not a rollback of a known
    # job's line, which is what this fault is for.  Wait until the last
    # submission is older than the save window.
    while ((SECONDS - ${LAST_SUBMIT:-0} < 8)); do sleep 0.5; done
    off=$(stat -c %s "$clog") || return 1
    for ((w = 0; w < 60; w++)); do
        new=$(tail -c +"$((off + 1))" "$clog" | grep -a -m 1 'setting admin_comment to restore_budget\[state\]: ')
        [[ -n $new ]] && break
        sleep 0.25
    done
    [[ -n $new ]] || return 1
    t=$(date +%s.%N)
    if ! rb_restart_ctld KILL; then
        # nothing after this can work: say why and end the soak (each
        # later sinfo would wait out its timeout)
        fail "slurmctld did not start again after the kill -9: $(tail -n 1 "$clog")"
        summary
    fi
    ft_restart_slurmd_busy || rc=1
    timeout 10 scancel --name=preemptor 2>/dev/null
    t1=$(date +%s.%N)
    flog "ctld9: kill -9 slurmctld right after the plugin's write (${new##* for }), started again; slurmd restarted, preemptors cancelled (rc $rc)"
    # the controller was away: an attempt starting then may run untracked
    echo "$t $t1" >>"$LOGD/ro-windows"
    awk -v t="$t" -v e="$t1" 'BEGIN { printf "%.3f %s\n", t - 6, e }' >>"$LOGD/rollback-windows"
}

# unstick - a job RUNNING with no batch slurmstepd for STALE seconds is
# requeued, as an admin would: Slurm 22.05 once kept a job RUNNING for 14
# min after the kill -9 of its stepd, through two slurmd restarts, its
# controller never told (docs/soak.md).  Not drawn from RANDOM: the plan
# stays the seed's.  Checked every 10 s.
STALE=${SOAK_STALE:-120}
declare -A NOSTEP_SINCE
NEXT_UNSTICK=0
unstick() {
    local j now
    now=$(el)
    ((now >= NEXT_UNSTICK)) || return 0
    NEXT_UNSTICK=$((now + 10))
    for j in $(running_jobs); do
        if rb_batch_stepd "$j" >/dev/null; then unset "NOSTEP_SINCE[$j]"; continue; fi
        [[ -n ${NOSTEP_SINCE[$j]:-} ]] || { NOSTEP_SINCE[$j]=$now; continue; }
        ((now - NOSTEP_SINCE[$j] >= STALE)) || continue
        race
        timeout 10 scontrol requeue "$j" 2>&1
        flog "stale: job $j RUNNING with no batch slurmstepd for $((now - NOSTEP_SINCE[$j]))s (Slurm); scontrol requeue $j (rc $?)"
        unset "NOSTEP_SINCE[$j]"
        NSTALE=$((NSTALE + 1))
    done
}
NSTALE=0

ALLK=("${KINDS[@]}" "${HOOKS[@]}")
NEXT_SCAN=0
gap=0
rnd gap "$GAP_MIN" "$GAP_MAX"
next=$(($(el) + gap))
while ((SECONDS - T_START < DEADLINE)); do
    arrive
    # every job's state every 5 s (all_terminal asks about each)
    if (($(el) >= NEXT_SCAN)); then
        NEXT_SCAN=$(($(el) + 5))
        all_terminal && break
    fi
    unstick
    if (($(el) >= next && $(el) < FAULT_STOP)); then
        k=${ALLK[RANDOM % ${#ALLK[@]}]}
        if fault "$k"; then
            rnd gap "$GAP_MIN" "$GAP_MAX"
            next=$(($(el) + gap))
        else
            next=$(($(el) + 1))      # no running job to hit: draw again soon
        fi
    fi
    sleep 0.5
done
mountpoint -q "$SD" && mount -o remount,rw "$SD"
chmod 0755 "$SD"
T_END=$(el)
echo "soak: loop ended at +${T_END}s, $NFAULTS faults"
for ((i = 0; i < NJOBS; i++)); do [[ -n ${J[i]} ]] && wait_not_running "${J[i]}" 30 >/dev/null; done

# ---- invariants -----------------------------------------------------------------
check "no node drained or down (sinfo: $(timeout 10 sinfo -h -N -o '%N:%T' 2>/dev/null | tr '\n' ' '))" rb_nodes_ok
NATT=0 NVIOL=0 NOPEN=0
for ((i = 0; i < NJOBS; i++)); do
    j=${J[i]}
    [[ -n $j ]] || continue
    tag="job $j (${KIND[i]}, ${USR[i]}, M=${M[i]} R=${R[i]} MI=${MI[i]})"
    st=$(job_field "$j" JobState) restarts=$(job_field "$j" Restarts)
    [[ -z $st && -n ${FINAL_STATE[$i]:-} ]] && st=${FINAL_STATE[$i]} restarts=${FINAL_RESTARTS[$i]}
    if [[ $st =~ ^($TERMINAL)$ ]]; then pass "$tag: terminal ($st, Restarts=$restarts)"
    else fail "$tag: not terminal: $st ($(job_field "$j" Reason))"; NVIOL=$((NVIOL + 1)); fi
    json=$LOGD/show-$j.json tl=${WD[i]}/soak-trial.log
    cp "$tl" "$LOGD/trial-$j.log" 2>/dev/null
    NATT=$((NATT + $(grep -c '^told ' "$tl" 2>/dev/null)))
    if [[ $STORE == controller && -s $json ]]; then
        rc=0    # read when the job ended (all_terminal)
    else
        "$RB_CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" show --json "$j" >"$json" 2>"$LOGD/show-$j.err"
        rc=$?
    fi
    if ((rc == 0)); then
        pass "$tag: show --json reads its record"
    elif ((rc == 3)) && ! grep -q '^told .* F=[0-9]' "$tl" 2>/dev/null; then
        # on_error = "open": a job whose every attempt started while the
        # state_dir was unusable runs untracked and has no record
        echo "skip - $tag: untracked throughout (no record; every attempt untracked: on_error = open)"
        continue
    elif ((rc == 3)) && [[ $STORE == controller ]]; then
        # no line at all: right only if a slurmctld rollback took back the
        # start of every run the job had (replay.py, no_line)
        out=$(/usr/bin/python3 "$HERE/replay.py" --no-line --tag "$tag" --kind "${KIND[i]}" \
            --restarts "${restarts:-0}" --state "$st" --json "$json" --rollback "$LOGD/rollback-windows" \
            --store "$STORE" "$tl" 2>&1)
        printf '%s\n' "$out" | tee -a "$LOGD/replay.out"
        p=$(grep -c '^ok ' <<<"$out") f=$(grep -c '^FAIL ' <<<"$out")
        RB_PASSED=$((RB_PASSED + p)) RB_FAILED=$((RB_FAILED + f)) NVIOL=$((NVIOL + f))
        ((p + f)) || { fail "$tag: no budget line, and the replay gave no verdict"; NVIOL=$((NVIOL + 1)); }
        continue
    else
        fail "$tag: show --json (exit $rc): $(head -c 300 "$LOGD/show-$j.err")"; NVIOL=$((NVIOL + 1))
        continue
    fi
    # the replay: every per-attempt and ledger invariant, as ok/FAIL lines
    out=$(/usr/bin/python3 "$HERE/replay.py" --tag "$tag" --kind "${KIND[i]}" \
        --restarts "${restarts:-0}" --state "$st" --json "$json" --ro "$LOGD/ro-windows" --rollback "$LOGD/rollback-windows" --store "$STORE" --races "$LOGD/requeue-times" --core "$CORE_REPLAY" \
        --out "${WD[i]}/trial-$j.out" "${WD[i]}/soak-trial.log" 2>&1)
    printf '%s\n' "$out" | tee -a "$LOGD/replay.out"
    NOPEN=$((NOPEN + $(grep -c '^open .*: corrupt: ' <<<"$out")))
    p=$(grep -c '^ok ' <<<"$out") f=$(grep -c '^FAIL ' <<<"$out")
    RB_PASSED=$((RB_PASSED + p)) RB_FAILED=$((RB_FAILED + f)) NVIOL=$((NVIOL + f))
done
if [[ $STORE == controller ]]; then
    echo "skip - nothing torn: the controller store has no list (every job's line was read above)"
elif "$RB_CLI" --config "$RB_CONF" --cluster "$RB_CLUSTER_NAME_USED" list --state all >"$LOGD/list" 2>&1; then
    pass "nothing torn: list --state all reads every record ($(wc -l <"$LOGD/list") lines)"
else
    fail "list --state all: $(tail -n 3 "$LOGD/list" | tr '\n' ' ')"; NVIOL=$((NVIOL + 1))
fi
errs=$(grep -E 'error: .*restore_budget: ' "$RB_CLUSTER_DIR"/log/slurmd.log | grep -vc 'Read-only file system')
echo "soak: slurmd.log: $errs restore_budget errors other than EROFS"
measure "seed=$SEED jobs=$NJOBS faults=$NFAULTS attempts=$NATT violations=$NVIOL duration=$(el)s"
[[ $RB_FAILED -gt 0 || ${SOAK_KEEP:-0} == 1 ]] && RB_KEEP=1
echo "soak: faults: $(awk '{print $3}' "$FLOG" | sed 's/:$//' | sort | uniq -c | tr -s ' ' | tr '\n' ',')"
NRB=$(grep -c '^rollback ' "$LOGD"/replay.out 2>/dev/null)
echo "soak: $(wc -l <"$LOGD/rollback-windows") slurmctld rollback windows (ctld9), $NRB runs read as rolled back (rollback - lines: at most one per job and window)"
NUNTR=$(cat "$LOGD"/trial-*.log 2>/dev/null | grep -c '^told .* F= ')
echo "soak: $NUNTR attempts ran untracked (on_error = open), $NOPEN corrupt jobs restored more often for it"
echo "soak: $NSTALE jobs requeued by the soak: RUNNING with no batch slurmstepd for ${STALE}s"
echo "soak: seed $SEED, $NJOBS jobs, $NFAULTS faults, $NATT attempts, $NVIOL violations"
[[ $RB_FAILED -gt 0 ]] && echo "soak: reproduce: make soak SEED=$SEED SECONDS=$DEADLINE (cluster logs kept in $RB_CLUSTER_DIR)"
summary
