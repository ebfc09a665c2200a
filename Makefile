# restore_budget - a Slurm SPANK plugin giving requeued jobs a restore-retry budget.
#
#   make            build/restore_budget.so and build/restore-budget
#   make check      unit tests (cmocka), plain and under ASan+UBSan
#   make test       everything CI runs: check + integration on a private cluster
#   make demo       the main job: a private cluster, a trial preempted and
#                   restored, the rescue of a corrupt checkpoint, a run to exhaustion
#   make deps       install the Debian packages needed to build and test (root)
#
# Our flags first; the packager's CFLAGS/CPPFLAGS/LDFLAGS are appended.

CC      ?= cc
prefix  ?= /usr
BUILD   := build

PKGS_BUILD := libslurm-dev libconfig-dev libcmocka-dev libjson-c-dev pkg-config
PKGS_TEST  := slurmctld slurmd slurm-client munge clang libclang-rt-14-dev \
              valgrind cppcheck clang-tidy python3 iproute2 dpkg-dev strace \
              python3-torch rpm rpmlint lintian elfutils slurmdbd mariadb-server

WARN    := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wmissing-prototypes \
           -Wstrict-prototypes
HARDEN  := -D_FORTIFY_SOURCE=2 -fstack-protector-strong
# pkg-config names the include and link flags (make deps installs it; the
# fallbacks are Debian's paths, for a first `make deps` run without it)
PKG_CFLAGS := $(shell pkg-config --cflags json-c libconfig 2>/dev/null || echo -I/usr/include/json-c)
PKG_CORE   := $(shell pkg-config --libs libconfig 2>/dev/null || echo -lconfig)
PKG_CLI    := $(shell pkg-config --libs libconfig json-c 2>/dev/null || echo -lconfig -ljson-c)
PKG_TEST   := $(shell pkg-config --libs cmocka libconfig json-c 2>/dev/null || echo -lcmocka -lconfig -ljson-c)
BASE_CFLAGS := -std=gnu11 -O2 -g -fPIC $(WARN) $(HARDEN) -MMD -MP \
               -iquote plugin $(PKG_CFLAGS)
# -z noexecstack: the .so and the CLI never ask for an executable stack
# (tests/unit/test_exports.c checks the .so's GNU_STACK)
HARDEN_LD   := -Wl,-z,relro,-z,now,-z,noexecstack
override CFLAGS_ALL  = $(BASE_CFLAGS) $(CPPFLAGS) $(CFLAGS)
override LDFLAGS_ALL = $(HARDEN_LD) $(LDFLAGS)

SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
             -fno-omit-frame-pointer
# _FORTIFY_SOURCE and ASan do not mix well; drop -O2 for clearer reports.
SAN_CFLAGS := $(filter-out -D_FORTIFY_SOURCE=2 -O2,$(BASE_CFLAGS)) -O1 $(SAN_FLAGS)

# One source list per folder of plugin/ (docs/architecture.md, "The tree");
# make lint checks that every .c is in one. Product code includes another
# folder's public header as "folder/folder.h" (-iquote plugin: only quoted
# includes look there, so <slurm/slurm.h> stays Slurm's); the tests, which
# reach inside the folders, also get each folder on their include path.
BASE_SRC   := plugin/base/diag.c
CONFIG_SRC := $(addprefix plugin/config/,caps.c config.c config_args.c config_lex.c \
                limits.c)
RULE_SRC   := $(addprefix plugin/rule/,engine.c fallback.c identity.c \
                record.c record_parse.c step.c)
STORE_SRC  := $(addprefix plugin/store/,admin_comment.c eventlog.c \
                eventlog_fold.c eventsum.c ledger.c ledger_fs.c ledger_lock.c \
                ledger_scan.c ledger_seam.c line_store.c budget_line.c \
                node_note.c)
USER_SRC   := $(addprefix plugin/user/,ack.c checkpoint.c checkpoint_id.c)
SLURM_SRC  := $(addprefix plugin/slurm/,child.c job_addr.c scontrol.c \
                slurmconf.c)
LIFECYCLE_SRC := plugin/lifecycle/lifecycle.c
SPANK_SRC  := $(addprefix plugin/spank/,allocator.c batch.c controller.c \
                job_script.c options.c plugin.c slurmd.c)
# contrib/cli/: one file per command (cli_<command>.c), then what they share
CLI_SRC    := $(addprefix contrib/cli/,cli_show.c cli_explain.c cli_list.c cli_controller.c \
                cli_ctl_rows.c cli_check_config.c cli_grant.c cli_gc.c cli_metrics.c \
                main.c cli_array.c cli_env.c cli_events.c cli_fallback.c \
                cli_folded.c cli_json.c cli_requeue.c cli_util.c)
CORE_DIRS  := base rule config store user slurm lifecycle
# the core: every folder but spank/ (no spank.h), linked into the .so,
# the CLI and every test
CORE_SRC   := $(BASE_SRC) $(RULE_SRC) $(CONFIG_SRC) $(STORE_SRC) $(USER_SRC) \
              $(SLURM_SRC) $(LIFECYCLE_SRC)
CORE_OBJ   := $(patsubst plugin/%.c,$(BUILD)/core/%.o,$(CORE_SRC))
SAN_OBJ    := $(patsubst plugin/%.c,$(BUILD)/san/%.o,$(CORE_SRC))
SPANK_OBJ  := $(patsubst plugin/spank/%.c,$(BUILD)/spank/%.o,$(SPANK_SRC))
CLI_OBJ    := $(patsubst contrib/cli/%.c,$(BUILD)/cli/%.o,$(CLI_SRC))
TEST_INC   := $(addprefix -iquote plugin/,$(CORE_DIRS))

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRC))
UNIT_SAN  := $(patsubst tests/unit/%.c,$(BUILD)/unit-san/%,$(UNIT_SRC))

LIBS_CORE := $(PKG_CORE)
LIBS_CLI  := $(PKG_CLI)
LIBS_TEST := $(PKG_TEST)

PLUGIN := $(BUILD)/restore_budget.so
CLI    := $(BUILD)/restore-budget

.PHONY: all check unit unit-san integration cli-test test demo deps clean
all: $(PLUGIN) $(CLI)

$(BUILD)/core/%.o: plugin/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@
$(BUILD)/san/%.o: plugin/%.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
$(BUILD)/spank/%.o: plugin/spank/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@
$(BUILD)/cli/%.o: contrib/cli/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

# Only plugin_* and slurm_spank_* are exported (plugin/spank/exports.map).
$(PLUGIN): $(SPANK_OBJ) $(CORE_OBJ) plugin/spank/exports.map
	$(CC) -shared -o $@ $(SPANK_OBJ) $(CORE_OBJ) $(LDFLAGS_ALL) \
		-Wl,--version-script=plugin/spank/exports.map $(LIBS_CORE)

$(CLI): $(CLI_OBJ) $(CORE_OBJ)
	$(CC) -o $@ $(CLI_OBJ) $(CORE_OBJ) $(LDFLAGS_ALL) $(LIBS_CLI)

# Each unit test links the whole core (small, pure) and its own driver.
$(BUILD)/unit/%: tests/unit/%.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(TEST_INC) -o $@ $< $(CORE_OBJ) $(LDFLAGS_ALL) \
		-rdynamic $(LIBS_TEST)
$(BUILD)/unit-san/%: tests/unit/%.c $(SAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(TEST_INC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(SAN_OBJ) \
		$(SAN_FLAGS) -rdynamic $(LIBS_TEST)

# The sanitizer objects are kept between runs (make would delete them as
# intermediates after every unit-san, so every make test rebuilt them).
.SECONDARY: $(SAN_OBJ)

# test_exports dlopens the built plugin.
$(BUILD)/unit/test_exports $(BUILD)/unit-san/test_exports: $(PLUGIN)

unit: $(UNIT_BIN)
	@tests/unit/run.sh plain $(UNIT_BIN)
unit-san: $(UNIT_SAN)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	 tests/unit/run.sh sanitized $(UNIT_SAN)

check: all unit unit-san

integration: all
	tests/integration/run.sh

# tests/cli/mkledger.c writes the CLI tests' ledgers through the core
$(BUILD)/mkledger: tests/cli/mkledger.c $(CORE_OBJ)
	$(CC) $(CFLAGS_ALL) $(TEST_INC) -o $@ $< $(CORE_OBJ) $(LDFLAGS_ALL) \
		$(LIBS_CORE)

cli-test: all $(BUILD)/mkledger
	tests/cli/run.sh

# What CI runs (the README's test command). TEST_EXTRA collects the suites
# that mk/*.mk fragments add (fuzz smoke, reliability, ...).
TEST_EXTRA :=

demo: deps-demo all
	contrib/cluster/demo.sh

deps:
	@contrib/packaging/install-deps.sh $(PKGS_BUILD) $(PKGS_TEST)

clean:
	rm -rf $(BUILD)

# One fragment per concern (fuzzing, reliability, benchmarks, packaging).
include $(wildcard mk/*.mk)

# deps first: on a fresh machine `make test` alone installs what it needs.
# The legs (mk/legs.mk) run alongside the host's suites (tests/lib/
# alongside.sh); `make test-host` is the host's part alone.
.PHONY: test test-host
test: deps
	@tests/lib/alongside.sh "$(MAKE) --no-print-directory legs" \
		"$(MAKE) --no-print-directory test-host"
test-host: check cli-test $(filter-out legs,$(TEST_EXTRA)) integration

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/core/*/*.d $(BUILD)/san/*/*.d)
