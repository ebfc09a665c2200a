# mk/torch.mk - `make torch-test`: contrib/jobs/torch_trial.py, a real
# PyTorch job, on a private cluster (tests/torch/test_*.sh): preempted
# twice it ends with exactly the loss of an uninterrupted run; with its
# newest checkpoint corrupted on disk, torch.load fails R times, the
# checkpoint fallback hands the previous one and it completes with the same
# loss.  Prints the losses and the wasted steps (measure: lines).
#
#   make torch-test                       tests/torch/test_*.sh
#   make torch-test TORCH_TESTS=torch_trial
#   make demo-torch                       `make demo` with the torch trial
#
# Host only (the legs' chroots have no torch).  Needs root and Debian's
# python3-torch for /usr/bin/python3 (`make deps` installs it: a large
# package, installed once; without it the suite FAILS saying so).  ~1.5 min
# on 2 cores.  Ends with `torch: N passed, N failed`.  Part of `make test`
# (TEST_EXTRA).

TORCH_TESTS ?=

.PHONY: torch-test demo-torch deps-demo
torch-test: all
	RB_NO_BUILD=1 tests/torch/run.sh $(TORCH_TESTS)

# `make demo` installs everything `make deps` does but torch, so it stays
# fast on a fresh machine; `make demo-torch` installs torch too.
deps-demo:
	@contrib/packaging/install-deps.sh $(PKGS_BUILD) $(filter-out python3-torch,$(PKGS_TEST))

demo-torch: deps all
	DEMO_TRIAL=torch contrib/cluster/demo.sh

TEST_EXTRA += torch-test
