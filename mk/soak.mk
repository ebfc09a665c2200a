# mk/soak.mk - `make soak`: a randomized, seeded fault soak on a real private
# cluster (tests/soak/, docs/soak.md).  Jobs of three users (healthy,
# corrupt, flaky and buggy trials, several (M, R)), faults at seeded times
# (preemption, scontrol requeue, kill -9 of a batch slurmstepd, slurmd and
# slurmctld restarts, state_dir read-only, SOAK_FAULT_HOOKS; in the
# controller store also a kill -9 of slurmctld right after the plugin's
# write and slurmdbd down, on a cluster with accounting), then the
# invariants per job.  Ends with `soak: seed S, J jobs, F faults, A attempts,
# V violations` per seed and `soak: N passed, N failed`.
#
#   make soak                          a random seed (printed), SECONDS=600
#   make soak SEED=1234 SECONDS=1200   any seed, any deadline
#   make soak-ci                       the fixed seeds SOAK_SEEDS, short runs,
#                                      then SOAK_CONTROLLER_SEEDS with
#                                      store = "controller" (part of make
#                                      test; the legs' soak)
# Needs root (clusters, a tmpfs remounted read-only).

SEED        ?=
SECONDS     ?=
SOAK_JOBS   ?= 12
# the CI variant: small, fixed (docs/soak.md, "The CI seeds")
SOAK_SEEDS  ?= 11 31
# and in the controller store (docs/stores.md): one seed, 73, whose plan
# draws the controller's own faults early (ctld9 twice, dbd twice; seed 11
# drew ctld9 once, late, at a quiet moment: no write within 15 s to hit)
SOAK_CONTROLLER_SEEDS ?= 73
# SOAK_STALE=45: a job Slurm keeps RUNNING after the kill -9 of its stepd
# (seen on 26.05 in a leg) is requeued well before the 180 s deadline
SOAK_CI_ENV := SOAK_JOBS=6 SOAK_SECONDS=180 SOAK_FAULT_STOP=60 \
               SOAK_FAULT_GAP="2 6" SOAK_STEPS="6 14" SOAK_MAX_M=1 SOAK_MAX_R=2 \
               SOAK_STALE=45

.PHONY: soak soak-ci soak-replay-test
# the replay's slurmctld rollback allowance on made-up logs (no cluster;
# under a second)
soak-replay-test:
	/usr/bin/python3 -W error tests/soak/test_replay.py

soak: all
	RB_NO_BUILD=1 SEED="$(SEED)" SOAK_SECONDS="$(or $(SECONDS),600)" \
	SOAK_JOBS="$(SOAK_JOBS)" tests/soak/run.sh

soak-ci: all
	RB_NO_BUILD=1 SOAK_SEEDS="$(SOAK_SEEDS)" \
	SOAK_CONTROLLER_SEEDS="$(SOAK_CONTROLLER_SEEDS)" $(SOAK_CI_ENV) tests/soak/run.sh

TEST_EXTRA += soak-replay-test soak-ci

# tests/soak/replay_core.c: the replay through the core's engine, which
# tests/soak/replay.py cross-checks its own reading of docs/rule.md with
$(BUILD)/soak-replay: tests/soak/replay_core.c $(CORE_OBJ)
	$(CC) $(CFLAGS_ALL) $(TEST_INC) -o $@ $< $(CORE_OBJ) $(LDFLAGS_ALL) \
		$(LIBS_CORE)
soak soak-ci: $(BUILD)/soak-replay
