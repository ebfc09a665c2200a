# mk/legs.mk - CI legs: the plugin built and its real-Slurm suites run
# against other Debian releases' Slurm, each in a debootstrap chroot
# (tests/legs/chroot.sh, tests/legs/leg.sh).
#
#   make legs                 every leg in LEGS (default: trixie sid)
#   make leg-trixie           Debian 13, Slurm 24.11
#   make leg-sid              Debian sid, Slurm 26.05
#   make legs LEGS=trixie
#   make legs LEGS_PARALLEL=0   one leg after the other (default: at the same
#                               time; their clusters pick random free ports)
#
# A leg: the chroot build/legs/<release> (debootstrap --variant=minbase and
# the Slurm, munge and build packages; reused when complete, so a second run
# skips it), the source copied to /root/restore_budget inside and `make all`
# there against that release's spank.h, then inside: make integration,
# make faults, make multinode, make packaging-test, make soak-ci, make
# peer-test (LEG_SUITES), each in a
# private mount namespace with /proc, /dev, /sys; every daemon is stopped by
# its suite and anything left running in the chroot is killed and counted
# as a failure.  Sanitizers, fuzzing, valgrind and lint stay on the host.
# Ends with `legs-<release>: N passed, N failed` per leg and
# `legs: N passed, N failed`.  Logs: build/legs/<release>.logs/<suite>.log.
# Needs root, debootstrap (make deps installs it) and the host's Debian mirror (from its apt sources).
# On 2 cores: ~10 min per leg alone, ~11.5 min for both in parallel
# (chroot creation ~50 s of it the first time, ~0 s when reused).
# Part of `make test` (TEST_EXTRA).  `make clean` removes the chroots too.

LEGS          ?= trixie sid
LEGS_PARALLEL ?= 1
LEG_SUITES    ?=

.PHONY: legs legs-deps leg-trixie leg-sid

# debootstrap on the host: with the other packages of `make deps`.
legs-deps:
	@contrib/packaging/install-deps.sh debootstrap
deps: legs-deps

legs: legs-deps
	@LEGS_PARALLEL=$(LEGS_PARALLEL) LEG_SUITES="$(LEG_SUITES)" tests/legs/run.sh $(LEGS)

leg-trixie leg-sid: leg-%: legs-deps
	@LEG_SUITES="$(LEG_SUITES)" tests/legs/leg.sh $*

TEST_EXTRA += legs
