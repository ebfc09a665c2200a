# mk/faults.mk - `make faults`: the plugin's environment broken on a real
# private cluster (contrib/cluster/cluster.sh), checking the designed outcome
# (docs/rule.md, "Limits"; docs/architecture.md, "Where each event happens"
# and "The ledger"; on_error open/closed).
#
#   make faults                             tests/faults/test_*.sh
#   make faults FAULTS_TESTS="state_dir_full config_deleted"
#
#   test_state_dir_full      state_dir a 1 MiB tmpfs, filled (ENOSPC)
#   test_state_dir_readonly  the tmpfs remounted read-only (EROFS)
#   test_state_dir_gone      state_dir renamed away (ENOENT)
#       ... each while a job waits between attempts, on_error open and closed
#   test_config_deleted      the config file removed while a job runs
#   test_slurmd_restart      slurmd TERMed and started again during a job (3x)
#
# Needs root with CAP_SYS_ADMIN (it mounts a tmpfs under the cluster dir and
# always unmounts it) and Debian's slurmctld slurmd slurm-client munge
# (make deps).  ~2.5 min on 2 cores.  Ends with `faults: N passed, N failed`.
# Part of `make test` (TEST_EXTRA).

FAULTS_TESTS ?=

.PHONY: faults
faults: all
	RB_NO_BUILD=1 tests/faults/run.sh $(FAULTS_TESTS)

TEST_EXTRA += faults
