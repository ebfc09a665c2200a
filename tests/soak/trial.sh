#!/bin/bash
# tests/soak/trial.sh - the soak's trial (tests/soak/soak.sh submits it).
# A requeueable job that checkpoints once a second like contrib/jobs/trial.sh
# and writes its own log, soak-trial.log in its work dir, two lines per
# attempt (and an ack line when it acknowledged):
#   told a=N pid=PID t=EPOCH phase=P ckpt=PATH F=.. M=.. r=.. R=.. left=.. last_end=..
#        intr=.. mi=.. seen=PATH    what restore_budget told it (RESTORE_BUDGET_*;
#                                   empty = not set: the attempt is untracked)
#                                   and seen, the newest checkpoint in its
#                                   directory when it started (the latest target)
#   ack  a=N pid=PID t=EPOCH         it touched RESTORE_BUDGET_ACK_FILE
#   did  a=N pid=PID t=EPOCH restore=ok|failed|none ack=yes|no exit=CODE|sig:TERM step=S
#                                   what it did; no did line = it was killed
#                                   (SIGKILL) before it could write one
# N is SLURM_RESTART_COUNT (0 on the first run); pid= tells two runs of one
# N apart (a kill -9 of slurmctld can take a start back, and Slurm runs that
# attempt again under the same N: the replay reads the earlier run as
# rolled back).  Lines are appended with one
# write each (short lines, O_APPEND), so a line is never torn.
#
#SBATCH --job-name=soak
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=trial-%j.out
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#
# Knobs (environment, from the driver):
#   SOAK_KIND    healthy  restores, acknowledges, runs to SOAK_STEPS, exit 0
#                corrupt  every restore fails (exit RESTORE_BUDGET_REQUEUE_EXIT)
#                flaky    a restore fails with SOAK_FLAKY_PCT % (seeded per
#                         attempt: SOAK_SEED, the job's index, the attempt)
#                buggy    restores and acknowledges, then fails: exit 42 after
#                         one more step
#   SOAK_STEPS=15  SOAK_SEED=0  SOAK_INDEX=0  SOAK_FLAKY_PCT=50
set -u
KIND=${SOAK_KIND:-healthy}
STEPS=${SOAK_STEPS:-15}
DIR=$PWD/ckpt
LOG=$PWD/soak-trial.log
A=${SLURM_RESTART_COUNT:-0}
RQ=${RESTORE_BUDGET_REQUEUE_EXIT:-42}
restored=none ack=no step=0

now() { date +%s.%N; }
line() { printf '%s\n' "$*" >>"$LOG"; }
# did CODE - the did line, then exit CODE
did() { line "did a=$A pid=$$ t=$(now) restore=$restored ack=$ack exit=$1 step=$step"; exit "$1"; }

seen=
[[ -L $DIR/latest ]] && seen=$DIR/$(readlink "$DIR/latest")
e() { local v="RESTORE_BUDGET_$1"; printf '%s' "${!v-}"; }
line "told a=$A pid=$$ t=$(now) phase=$(e PHASE) ckpt=$(e CHECKPOINT) F=$(e FAILURES)" \
    "M=$(e MAX_FAILURES) r=$(e RESTORE_FAILURES) R=$(e RESTORE_RETRY_NUM)" \
    "left=$(e RESTORES_LEFT) last_end=$(e LAST_END) intr=$(e INTERRUPTIONS)" \
    "mi=$(e MAX_INTERRUPTIONS) attempt=$(e ATTEMPT) seen=$seen"
echo "soak trial $KIND attempt $A: $(env | grep '^RESTORE_BUDGET_' | sort | tr '\n' ' ')"

# Preemption and `scontrol requeue` send SIGTERM: say so, then die of it.
trap 'line "did a=$A pid=$$ t=$(now) restore=$restored ack=$ack exit=sig:TERM step=$step"; trap - TERM; kill -TERM $$' TERM
mkdir -p "$DIR" || did 1

# restore_fails - 0 if this attempt's restore is to fail (by kind)
restore_fails() {
    case $KIND in
        corrupt) return 0 ;;
        flaky)
            RANDOM=$(( (${SOAK_SEED:-0} * 7919 + ${SOAK_INDEX:-0} * 104729 + A * 31) % 2147483647 ))
            (( RANDOM % 100 < ${SOAK_FLAKY_PCT:-50} )) ;;
        *) return 1 ;;
    esac
}

ckpt=${RESTORE_BUDGET_CHECKPOINT:-}
if [[ -n $ckpt ]]; then
    if restore_fails || ! read -r step <"$ckpt" || [[ ! $step =~ ^[0-9]+$ ]]; then
        restored=failed step=0
        did "$RQ"
    fi
    restored=ok
    # the ack line at once: a later SIGKILL leaves no did line, and the
    # replay must still know the restore was confirmed
    if [[ -n ${RESTORE_BUDGET_ACK_FILE:-} ]] && touch "$RESTORE_BUDGET_ACK_FILE"; then
        ack=yes
        line "ack a=$A pid=$$ t=$(now)"
    fi
elif [[ -n $seen ]]; then
    # untracked (no RESTORE_BUDGET_*): restore from what we see, unacknowledged
    if restore_fails || ! read -r step <"$seen" || [[ ! $step =~ ^[0-9]+$ ]]; then
        restored=failed step=0
        did "$RQ"
    fi
    restored=ok
fi

n=0
while ((step < STEPS)); do
    sleep 1 & wait $!
    step=$((step + 1)) n=$((n + 1))
    { tmp=$(mktemp "$DIR/.checkpoint-$step.XXXXXXXX.tmp") && printf '%s\n' "$step" >"$tmp" &&
        mv -f "$tmp" "$DIR/checkpoint-$step"; } || did 1
    { tmp=$(mktemp -u "$DIR/.latest.XXXXXXXX.tmp") && ln -sn "checkpoint-$step" "$tmp" &&
        mv -T "$tmp" "$DIR/latest"; } || did 1
    [[ $KIND == buggy && $restored == ok && $n -ge 1 ]] && did 42
done
did 0
