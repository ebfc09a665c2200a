# mk/fuzz.mk - libFuzzer targets for the core's parsers of untrusted text.
#
#   make fuzz          build, then run each target FUZZ_SECONDS (default 600)
#   make fuzz-smoke    each target FUZZ_SMOKE_RUNS inputs from seed 1 (at
#                      most FUZZ_SMOKE_SECONDS); part of make test
#   make fuzz-build    only build build/fuzz/fuzz_*
#   make fuzz-one FUZZ_TARGET=record FUZZ_SECONDS=60
#   make fuzz-regress  replay tests/fuzz/regressions/<name>/* (inputs that
#                      once crashed a target); part of fuzz-smoke
#
# Targets (tests/fuzz/fuzz_<name>.c): config (rb_config_load), record
# (rb_record_parse + format/parse round trip), kv (rb_kv_escape/unescape),
# options (rb_options_parse, caps vs resolve), events (event log append and
# read back after torn writes), admin_comment (AdminComment parse and merge).
#
# Needs clang with libFuzzer (Debian: clang-14 libclang-rt-14-dev). The core
# is rebuilt with -fsanitize=fuzzer-no-link,address,undefined into
# build/fuzz/core/; UBSan findings abort (-fno-sanitize-recover), so they
# are saved as crashes. New corpus entries go to build/fuzz/corpus/<name>
# (the seeds in tests/fuzz/corpus/<name> and those tests/fuzz/mkseeds.c
# makes in build/fuzz/seeds/<name> are only read); a crash is saved
# as build/fuzz/artifacts/<name>-crash-* and fails the run.

FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 600
# The smoke is the same inputs on every run (fixed seed and count; the
# time is only a bound): CI fails for a change, never for a lucky draw. A
# new finding is the job of `make fuzz` (random seed, 600 s a target).
FUZZ_SMOKE_SECONDS ?= 60
FUZZ_SMOKE_RUNS    ?= 100000
FUZZ_NAMES    := config record kv options events admin_comment
FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_BINS     := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_NAMES))
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all \
                 -fno-omit-frame-pointer
# FUZZ_EXTRA_CFLAGS: e.g. -fno-sanitize=float-cast-overflow with
# FUZZ_DIR=build/fuzz-masked, to keep exploring past a known, reported bug.
FUZZ_EXTRA_CFLAGS ?=
FUZZ_CFLAGS   := -std=gnu11 -O1 -g -Wall -Wextra \
                 -iquote plugin $(TEST_INC) -Itests/fuzz $(FUZZ_SAN) $(FUZZ_EXTRA_CFLAGS)
FUZZ_CORE_OBJ := $(patsubst plugin/%.c,$(FUZZ_DIR)/core/%.o,$(CORE_SRC))
FUZZ_MAXLEN_config  := 8192
FUZZ_MAXLEN_record  := 16384
FUZZ_MAXLEN_kv      := 4096
FUZZ_MAXLEN_options := 64
FUZZ_MAXLEN_events  := 40000
FUZZ_MAXLEN_admin_comment := 8192
FUZZ_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fuzz/lsan.supp:print_suppressions=0

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-one fuzz-regress
TEST_EXTRA += fuzz-smoke

$(FUZZ_DIR)/core/%.o: plugin/%.c $(wildcard plugin/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h \
		tests/fuzz/limits_check.h $(FUZZ_CORE_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CORE_OBJ) \
		$(LIBS_CORE)

# Seeds made by the current code (tests/fuzz/mkseeds.c): never stale when a
# record field is added. Linked against the same instrumented core.
$(FUZZ_DIR)/mkseeds: tests/fuzz/mkseeds.c $(FUZZ_CORE_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -o $@ $< \
		$(FUZZ_CORE_OBJ) $(LIBS_CORE)

$(FUZZ_DIR)/seeds/.made: $(FUZZ_DIR)/mkseeds
	@rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)/seeds
	@$(FUZZ_ENV) $(FUZZ_DIR)/mkseeds $(FUZZ_DIR)/seeds
	@for n in $(FUZZ_NAMES); do mkdir -p $(FUZZ_DIR)/seeds/$$n; done
	@touch $@

# Kept between runs (make would delete them as intermediates).
.SECONDARY: $(FUZZ_CORE_OBJ)

fuzz-build: $(FUZZ_BINS) $(FUZZ_DIR)/seeds/.made

# run-fuzz NAME SECONDS: one target; its stats line and any crash are kept
# in build/fuzz/logs/NAME.log.
define run-fuzz
	@mkdir -p $(FUZZ_DIR)/corpus/$(1) $(FUZZ_DIR)/artifacts $(FUZZ_DIR)/logs
	@echo "fuzz: $(1) for $(2) s"
	@$(FUZZ_ENV) $(FUZZ_DIR)/fuzz_$(1) -max_total_time=$(2) \
		-max_len=$(FUZZ_MAXLEN_$(1)) -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=2048 \
		-print_final_stats=1 $(FUZZ_RUN_FLAGS) \
		$(if $(wildcard tests/fuzz/$(1).dict),-dict=tests/fuzz/$(1).dict) \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/$(1)- \
		$(FUZZ_DIR)/corpus/$(1) tests/fuzz/corpus/$(1) \
		$(FUZZ_DIR)/seeds/$(1) \
		>$(FUZZ_DIR)/logs/$(1).log 2>&1; \
	rc=$$?; \
	sed -n 's/^stat::number_of_executed_units: */  execs: /p; s/^stat::average_exec_per_sec: */  execs\/s: /p' \
		$(FUZZ_DIR)/logs/$(1).log; \
	if [ $$rc -ne 0 ]; then \
		echo "fuzz: $(1) FAILED (exit $$rc); see $(FUZZ_DIR)/logs/$(1).log"; \
		grep -m5 -E 'ERROR|property failed|runtime error|Test unit written' \
			$(FUZZ_DIR)/logs/$(1).log; \
		exit 1; \
	fi
endef

# One rule per target run (not .PHONY: make skips pattern rules for phony
# targets; no file of that name is ever made, so they always run). The
# seconds come from the goal: target-specific variables reach prerequisites.
fuzz-run-%: fuzz-build
	$(call run-fuzz,$*,$(FUZZ_RUN_SECONDS))

fuzz: FUZZ_RUN_SECONDS = $(FUZZ_SECONDS)
fuzz: $(addprefix fuzz-run-,$(FUZZ_NAMES))
	@echo "fuzz: all targets passed"

fuzz-smoke: FUZZ_RUN_SECONDS = $(FUZZ_SMOKE_SECONDS)
fuzz-smoke: FUZZ_RUN_FLAGS = -seed=1 -runs=$(FUZZ_SMOKE_RUNS)
fuzz-smoke: $(addprefix fuzz-run-,$(FUZZ_NAMES)) fuzz-regress
	@echo "fuzz-smoke: all targets passed"

fuzz-one: FUZZ_RUN_SECONDS = $(FUZZ_SECONDS)
fuzz-one: fuzz-run-$(FUZZ_TARGET)

# Every input that once crashed a target stays a test: replayed as is (a
# target run on files executes each once, no fuzzing).
fuzz-regress: fuzz-build
	@fail=0; for n in $(FUZZ_NAMES); do \
		files=$$(ls tests/fuzz/regressions/$$n/* 2>/dev/null) || continue; \
		[ -n "$$files" ] || continue; \
		for f in $$files; do \
			if $(FUZZ_ENV) $(FUZZ_DIR)/fuzz_$$n $$f \
				>$(FUZZ_DIR)/regress.log 2>&1; then \
				echo "fuzz-regress: $$n $$(basename $$f): ok"; \
			else \
				echo "fuzz-regress: $$n $$(basename $$f): FAILED"; \
				grep -m3 -E 'runtime error|ERROR|property failed' \
					$(FUZZ_DIR)/regress.log; \
				fail=1; \
			fi; \
		done; \
	done; exit $$fail
