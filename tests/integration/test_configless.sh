#!/bin/bash
# test_configless.sh - a configless cluster (RB_CONFIGLESS=1 of cluster.sh:
# slurmctld with enable_configless, slurmd started with --conf-server and
# nothing of its own, running on what it fetched into its conf-cache), the
# plugin configured ONLY by plugstack.conf arguments: no restore_budget.conf
# anywhere (docs/rule.md, "Plugstack arguments (configless)").
#  - slurmd loaded the arguments (its log says so, with their state_dir);
#  - a corrupt-checkpoint trial in partition low, after one preemption, makes
#    exactly R x (M+1) restore attempts with M = max_failures=1 and R =
#    partitions.low.restore_retry_num=2 (over restore_retry_num=5), then is
#    refused naming the arguments (the built-in defaults would allow 9);
#  - `restore-budget check-config`, reading the plugstack.conf next to
#    slurm.conf as sbatch does, shows each argument's origin;
#  B. bad arguments (one not KEY=VALUE, an unknown key): slurmd logs them
#     naming the known ones and stays up, no node drains, a job runs
#     untracked; check-config exits 1 naming the line and the argument.
. "$(dirname "$0")/lib.sh"
T0=$SECONDS
M=1 R=2

rb_configless_up "store=dir state_dir=@STATE@ max_failures=$M restore_retry_num=5 partitions.low.restore_retry_num=$R restore_timeout=0 limits.max_failures=3 exit_rules.ignore=75" ||
    { fail "configless cluster up"; summary; }
log=$RB_CLUSTER_DIR/log/slurmd.log
cache=$RB_CLUSTER_DIR/spool/conf-cache

# ---- the cluster is configless, the plugin has no file --------------------
check "slurmd fetched plugstack.conf into its conf-cache" \
    grep -qF "$RB_PLUGIN_SO $RB_PLUGSTACK_ARGS" "$cache/plugstack.conf"
check "slurm.conf sets enable_configless and no PlugStackConfig" \
    bash -c "grep -qx 'SlurmctldParameters=enable_configless' '$SLURM_CONF' && ! grep -q '^PlugStackConfig' '$SLURM_CONF'"
expect "no restore_budget.conf in the cluster" "$(find "$RB_CLUSTER_DIR" -name 'restore_budget.conf*')" ""
check "no /etc/slurm/restore_budget.conf (the plugin's default path)" test ! -e /etc/slurm/restore_budget.conf
check "slurmd loaded the arguments alone (slurmd.log)" \
    grep -qF "restore_budget: config plugstack.conf arguments loaded (state_dir $RB_STATE)" "$log"

# ---- check-config shows where each setting comes from ----------------------
cli=$RB_ROOT/build/restore-budget
out=$(env -u RESTORE_BUDGET_CONFIG SLURM_CONF="$SLURM_CONF" "$cli" check-config 2>&1)
from="argument ($RB_CLUSTER_DIR/plugstack.conf:1)"
for kv in "max_failures=$M" "partitions.low.restore_retry_num=$R" "restore_retry_num=5" \
          "state_dir=$RB_STATE" "store=dir" "exit_rules.ignore=75" "limits.max_failures=3"; do
    check "check-config: $kv from the argument" grep -qE "^  $kv +${from//[()]/.}\$" <<<"$out"
done
check "check-config: restore_accounting=grouped, a default" grep -qE '^  restore_accounting=grouped +default$' <<<"$out"
check "check-config: the arguments alone are the config" \
    grep -qxF "$RB_CLUSTER_DIR/plugstack.conf:1 arguments: OK" <<<"$out"
[[ $RB_FAILED == 0 ]] || printf '%s\n' "$out" | sed 's/^/    check-config | /'

# ---- the rule, end to end: R x (M+1) restores, then refused ----------------
rb_workdir corrupt >/dev/null
j=$(TRIAL_FAIL_RESTORE=1 TRIAL_STEPS=1000 TRIAL_CKPT_EVERY=1 submit_as_user -p low \
    --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") || { fail "sbatch"; summary; }
out=$RB_WORKDIR/trial-$j.out
checkq "job $j wrote 2 checkpoints" wait_grep "$out" "^trial\[$j\.0\]: checkpoint step 2\$" 60
checkq "job $j preempted" preempt "$j" 30
n_restores=$((R * (M + 1)))
last=$((n_restores + 1))
check "job $j ends" wait_state "$j" 'FAILED|COMPLETED|CANCELLED|TIMEOUT' 90
expect "job $j: JobState" "$(job_field "$j" JobState)" FAILED
expect "job $j: ExitCode" "$(job_field "$j" ExitCode)" "1:0"
expect "job $j: Restarts (attempts 0..$last)" "$(job_field "$j" Restarts)" "$last"
expect "job $j: restore attempts = R x (M+1) = $n_restores" \
    "$(grep -c "^trial\[$j\.[0-9]*\]: restoring from " "$out")" "$n_restores"
msg=$(grep -m1 'refused' "$out")
for part in "M=$M" "R=$R" "plugstack.conf arguments"; do
    check "refusal names '$part'" grep -qF -- "$part" <<<"$msg"
done
rb_log "refusal: $msg"
for kv in failures=$((M + 1)) exhausted=true cur.refused=true cur.attempt=$last \
          cur.limits.max_failures=$M cur.limits.restore_retry_num=$R; do
    expect "record ${kv%%=*}" "$(rec_get "$j" "${kv%%=*}")" "${kv#*=}"
done

rb_final_checks

# ---- B. bad arguments: logged loudly, slurmd stays up, jobs run untracked -
# (on_error = "open", the default: a config that cannot be read cannot say
# "closed"; the same as an error in the file, test_broken_config.sh)
cluster_down
RB_EXPECT_PLUGIN_ERRORS=1   # read by rb_final_checks (lib.sh)
export RB_EXPECT_PLUGIN_ERRORS
rb_configless_up "store=dir state_dir=@STATE@ max_failures=1 verbose max_failur=2" || { fail "configless cluster up (bad arguments)"; summary; }
log=$RB_CLUSTER_DIR/log/slurmd.log
check "bad arguments: slurmd.log names the argument that is not KEY=VALUE and the known ones" \
    grep -qF 'error: restore_budget: plugstack.conf: unknown argument "verbose" (known: config=PATH, slurm_bindir=' "$log"
check "bad arguments: slurmd.log has the config error, naming the known keys" \
    grep -qF 'error: restore_budget: plugstack.conf: argument "verbose": not KEY=VALUE (known: config=PATH, slurm_bindir=DIR, run_dir=DIR, and every key of the config file' "$log"
j=$(TRIAL_STEPS=2 TRIAL_CKPT_EVERY=1 submit_as_user -p low --checkpoint-dir=ckpt "$RB_ROOT/contrib/jobs/trial.sh") ||
    fail "bad arguments: sbatch"
check "bad arguments: job $j ends" wait_state "$j" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' 60
expect "bad arguments: job $j ran untracked to the end" "$(job_field "$j" JobState) $(job_field "$j" ExitCode)" "COMPLETED 0:0"
check "bad arguments: no RESTORE_BUDGET_* in the job" bash -c "! grep -q '^trial:   RESTORE_BUDGET_' '$RB_WORKDIR/trial-$j.out'"
out=$(env -u RESTORE_BUDGET_CONFIG SLURM_CONF="$SLURM_CONF" "$cli" check-config 2>&1)
rc=$?
expect "bad arguments: check-config exits 1" "$rc" 1
check "bad arguments: check-config names the plugstack line and the argument" \
    grep -qF "restore-budget: $RB_CLUSTER_DIR/plugstack.conf:1: argument \"verbose\": not KEY=VALUE" <<<"$out"

measure "duration=$((SECONDS - T0))s restores=$n_restores"
rb_final_checks
summary
