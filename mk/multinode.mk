# mk/multinode.mk - `make multinode`: the cross-node suite on a TWO-node
# private cluster (contrib/cluster/multinode.sh: two slurmd on this machine,
# each in its own UTS namespace, both on 127.0.0.1 with their own ports).
#
#   make multinode                          tests/multinode/test_*.sh
#   make multinode MULTINODE_TESTS=cross_node
#
#   test_cross_node       a requeued job restarted on ANOTHER node keeps its
#                         budget: one record, r continues A -> B -> A
#   test_two_node_alloc   sbatch -N 2, PrologFlags=Alloc: prolog and epilog on
#   test_two_node_srun    both nodes (at allocation / via srun), each attempt
#                         charged once, exhaustion refused, FAILED 1:0
#
# Needs root and Debian's slurmctld slurmd slurm-client munge (make deps)
# plus unshare (util-linux, always installed).  ~1.5 min on 2 cores.  Ends
# with `multinode: N passed, N failed`.  Part of `make test` (TEST_EXTRA).

MULTINODE_TESTS ?=

.PHONY: multinode
multinode: all
	RB_NO_BUILD=1 tests/multinode/run.sh $(MULTINODE_TESTS)

TEST_EXTRA += multinode
