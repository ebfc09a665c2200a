# mk/reliability.mk - crash consistency, concurrency, hostile input and
# faults at the core level (tests/reliability), and valgrind memcheck.
#
#   make reliability   build and run tests/reliability/rel_*; last line
#                      "reliability: N passed, N failed" (root; part of
#                      make test)
#   make valgrind      tests/reliability/valgrind.sh: memcheck on the core
#                      lifecycle path (vg_driver) and the CLI (root)
#
# The programs link the plain core objects (build/core/*/*.o), like the unit
# tests, with their own small harness (tests/reliability/rel.h).

REL_DIR  := $(BUILD)/reliability
REL_SRC  := $(wildcard tests/reliability/rel_*.c)
REL_BIN  := $(patsubst tests/reliability/%.c,$(REL_DIR)/%,$(REL_SRC))
REL_CFLAGS = $(filter-out -Wmissing-prototypes,$(CFLAGS_ALL)) $(TEST_INC) \
             -Wno-format-truncation -Itests/reliability -pthread

.PHONY: reliability reliability-build valgrind
TEST_EXTRA += reliability valgrind

$(REL_DIR)/%: tests/reliability/%.c tests/reliability/rel.h $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -o $@ $< $(CORE_OBJ) $(LDFLAGS_ALL) -pthread \
		$(LIBS_CORE)

$(REL_DIR)/vg_driver: tests/reliability/vg_driver.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -o $@ $< $(CORE_OBJ) $(LDFLAGS_ALL) \
		$(LIBS_CORE)

# Loads the built plugin with stand-ins for the host's SPANK API.
$(REL_DIR)/vg_plugin: tests/reliability/vg_plugin.c $(PLUGIN)
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -o $@ $< $(LDFLAGS_ALL) -rdynamic -ldl

reliability-build: $(REL_BIN) $(REL_DIR)/vg_driver $(REL_DIR)/vg_plugin

reliability: reliability-build
	@tests/reliability/run.sh $(REL_DIR)

valgrind: all reliability-build
	@tests/reliability/valgrind.sh
