# mk/lint.mk - static analysis over plugin/ and contrib/cli/.
#
#   make lint           clang-tidy (checks in .clang-tidy, every warning an
#                       error) and cppcheck (warning, style, performance,
#                       portability; suppressions in tests/lint/); exits
#                       non-zero on any finding
#   make lint-tidy      only clang-tidy
#   make lint-cppcheck  only cppcheck
#   make lint-layering  the tree's rules (tests/lint/layering.sh): spank.h
#                       only in plugin/spank/, another folder only through
#                       its public header, every .c in a source list; and
#                       the check's own test on a broken copy
#
# Needs clang-tidy (Debian: clang-tidy-14) and cppcheck. Both get the same
# preprocessor view as the build (-iquote plugin, json-c, _FORTIFY_SOURCE).

CLANG_TIDY  ?= clang-tidy
CPPCHECK    ?= cppcheck
LINT_JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
LINT_SRC     = $(CORE_SRC) $(SPANK_SRC) $(CLI_SRC)
LINT_CFLAGS := -std=gnu11 -O2 -D_FORTIFY_SOURCE=2 -iquote plugin \
               $(PKG_CFLAGS)
CPPCHECK_FLAGS := --enable=warning,style,performance,portability \
                  --error-exitcode=1 --inline-suppr --std=c11 --quiet \
                  -Iplugin -D_GNU_SOURCE \
                  --suppressions-list=tests/lint/cppcheck.supp \
                  --template='{file}:{line}: {severity}: {message} [{id}]'

.PHONY: lint lint-tidy lint-cppcheck lint-layering
TEST_EXTRA += lint

# Both always run (a cppcheck finding does not hide clang-tidy's).
lint:
	@rc=0; \
	$(MAKE) --no-print-directory lint-layering || rc=1; \
	$(MAKE) --no-print-directory lint-cppcheck || rc=1; \
	$(MAKE) --no-print-directory lint-tidy || rc=1; \
	if [ $$rc = 0 ]; then echo "lint: clean"; else echo "lint: findings"; fi; \
	exit $$rc

# One clang-tidy per file, LINT_JOBS at a time; any finding fails.
lint-tidy:
	@mkdir -p $(BUILD)
	@printf '%s\n' $(LINT_SRC) | xargs -P $(LINT_JOBS) -I{} \
		$(CLANG_TIDY) --quiet {} -- $(LINT_CFLAGS) 2>&1 | \
		grep -v -E '^[0-9]+ (warnings?|errors?) generated\.$$' | \
		tee $(BUILD)/lint-tidy.log; \
	if grep -q -E ': (warning|error):' $(BUILD)/lint-tidy.log; then \
		echo "lint-tidy: $$(grep -c -E ': (warning|error):' \
			$(BUILD)/lint-tidy.log) findings"; exit 1; \
	fi; echo "lint-tidy: clean"

lint-cppcheck:
	@$(CPPCHECK) $(CPPCHECK_FLAGS) plugin contrib/cli && \
		echo "lint-cppcheck: clean"

lint-layering:
	@tests/lint/layering.sh . $(CORE_SRC) $(SPANK_SRC) $(CLI_SRC)
	@tests/lint/test_layering.sh $(CORE_SRC) $(SPANK_SRC) $(CLI_SRC) >$(BUILD)/lint-layering-test.log || \
		{ cat $(BUILD)/lint-layering-test.log; exit 1; }
