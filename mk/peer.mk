# mk/peer.mk - Slurm's own test suite against a private cluster without and
# with the plugin (tests/peer/peer.py; docs/peer-test.md).
#
#   make peer-test     the running release's source (apt-get source, cached
#                      in build/peer/), its ATF (testsuite/python, local-config
#                      mode) and a selection of its expect tests (requeue,
#                      hold/release, preemption, prolog/epilog), each run
#                      without and with restore_budget; a test whose outcomes
#                      in the two modes never meet (up to 3 reruns) fails.  Last line
#                      "peer: N passed, N failed".  Needs root.
#   make peer-test PEER_SELECTION=leg   the legs' shorter selection (the
#                      default inside a leg's chroot)
#   make peer-deps     the Debian packages it needs (make deps runs it)
#
# Knobs (environment): PEER_ATF, PEER_EXPECT, PEER_LANES, PEER_CACHE,
# PEER_KEEP=1, PEER_STRICT=1 (tests/peer/peer.py's header).  Measured here:
# host 3.2 min (22.05, full ATF + 13 expect tests), trixie leg 3.5 min
# (24.11), sid leg skipped (the mirror has no 26.05.5 source).

PEER_PKGS := python3-pytest python3-pexpect python3-pytest-timeout python3-requests \
             expect dpkg-dev
PEER_SELECTION ?=
# the plugin's stores, each a run of its own: the default ("controller")
# everywhere, the shared directory too on the host (a leg has 5 minutes)
PEER_STORES ?= $(if $(wildcard /.rb-leg-ready),controller,controller dir)

.PHONY: peer-test peer-deps
TEST_EXTRA += peer-test

peer-deps:
	@contrib/packaging/install-deps.sh $(PEER_PKGS)
deps: peer-deps

peer-test: peer-deps
	@rc=0; for s in $(PEER_STORES); do echo "peer: store $$s"; \
	  PEER_STORE=$$s PEER_SELECTION=$(PEER_SELECTION) PYTHONDONTWRITEBYTECODE=1 \
	    /usr/bin/python3 tests/peer/peer.py || rc=1; done; exit $$rc
