# mk/python.mk - the job-side Python module (contrib/python/restore_budget).
#
#   make python-test   tests/python/run.py under Debian's /usr/bin/python3
#                      (unittest, standard library only); last line
#                      "python: N passed, N failed" (part of make test)
#
# /usr/bin/python3, not the python3 first on PATH: that may be a private
# interpreter, and the module must work with the one the nodes have.
# No bytecode is written into the tree.

PYTHON3 ?= /usr/bin/python3

.PHONY: python-test
TEST_EXTRA += python-test

python-test:
	@PYTHONDONTWRITEBYTECODE=1 $(PYTHON3) tests/python/run.py
