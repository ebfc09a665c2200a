# mk/bench.mk - `make bench`: performance numbers, no time assertions.
#
#   make bench                       everything: event cost (tmpfs, disk), scale,
#                                    CLI over 100k records, memory, end to end,
#                                    the prolog storm, throughput
#   make bench BENCH_RECORDS="10 10000"  BENCH_E2E_RUNS=0   a quick run
#   make bench BENCH_PARTS="storm"   one part (or several: "storm throughput")
#   make bench BENCH_PARTS=throughput THROUGHPUT_JOBS=60    a quick throughput check
#   make bench BENCH_PARTS="e2e throughput" BENCH_STORE=controller
#                                    the cost of the controller store
#   make bench-events                the event cost alone (BENCH_PARTS=events):
#                                    the glue as it is and, at the smallest
#                                    size, the glue before one write per attempt
#   make bench-build                 build the bench programs only (-Werror)
#
# Results: build/bench/results.md (Markdown) and build/bench/*.log (raw).
# Knobs (environment or make variables):
#   BENCH_EVENTS       events per measurement                   (10000)
#   BENCH_RECORDS      job records already in state_dir         (10 10000 100000 1000000)
#   BENCH_FS           where: tmpfs and/or disk                 (tmpfs disk)
#   BENCH_DISK_DIR     parent dir on disk                       (/var/tmp)
#   BENCH_RSS_EVENTS   events of the memory run                 (100000)
#   BENCH_VALGRIND_EVENTS  events under valgrind                (300)
#   BENCH_CLI_RECORDS  records for `list` / `gc --dry-run`      (100000)
#   BENCH_E2E_RUNS     runs per variant on the private cluster  (30; 0 = skip)
#   BENCH_E2E_CALL_JOBS  jobs per variant counting the plugin's controller
#                      calls and slurmctld's RPCs per attempt     (10)
#   BENCH_STORE        the plugin's store in e2e and throughput: dir or
#                      controller (docs/stores.md)              (dir)
#   BENCH_PARTS        which parts: events memory e2e storm throughput  (all)
#   BENCH_STORM_NODES  prolog storm sizes (workers per job)     (1 16 64 256 1024)
#   BENCH_STORM_REPS   repetitions per size                     (5)
#   THROUGHPUT_JOBS    short jobs per variant (with, without)   (300; 0 = skip)
#   THROUGHPUT_ROUNDS  rounds they are interleaved in           (6)
#   THROUGHPUT_ARRAY   tasks of the job array per variant       (300; 0 = skip)
#   THROUGHPUT_ARRAY_ROUNDS  rounds of one array per variant    (4)
#   BENCH_OUT          where results go                         (build/bench)

BENCH_EVENTS          ?= 10000
BENCH_RECORDS         ?= 10 10000 100000 1000000
BENCH_FS              ?= tmpfs disk
BENCH_DISK_DIR        ?= /var/tmp
BENCH_RSS_EVENTS      ?= 100000
BENCH_VALGRIND_EVENTS ?= 300
BENCH_CLI_RECORDS     ?= 100000
BENCH_E2E_RUNS        ?= 30
BENCH_E2E_CALL_JOBS   ?= 10
BENCH_STORE           ?= dir
BENCH_PARTS           ?= events memory e2e storm throughput
BENCH_STORM_NODES     ?= 1 16 64 256 1024
BENCH_STORM_REPS      ?= 5
THROUGHPUT_JOBS       ?= 300
THROUGHPUT_ROUNDS     ?= 6
THROUGHPUT_ARRAY      ?= 300
THROUGHPUT_ARRAY_ROUNDS ?= 4
BENCH_OUT             ?= $(BUILD)/bench

BENCH_BIN := $(BUILD)/bench/bench_events
STORM_BIN := $(BUILD)/bench/bench_storm
# bench_storm counts the core's ledger calls by wrapping them at link time.
STORM_WRAP := -Wl,--wrap=fcntl,--wrap=openat,--wrap=__openat_2 \
              -Wl,--wrap=renameat,--wrap=write,--wrap=close

$(BENCH_BIN): tests/bench/bench_events.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(TEST_INC) -o $@ $< $(CORE_OBJ) $(LDFLAGS_ALL) $(LIBS_CORE)

$(STORM_BIN): tests/bench/bench_storm.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(TEST_INC) -o $@ $< $(CORE_OBJ) $(LDFLAGS_ALL) $(STORM_WRAP) \
		$(LIBS_CORE)

.PHONY: bench bench-events bench-build
bench-build: $(BENCH_BIN) $(STORM_BIN)

bench-events:
	$(MAKE) bench BENCH_PARTS=events

bench: $(BENCH_BIN) $(STORM_BIN) $(CLI) $(PLUGIN)
	BENCH_BIN=$(BENCH_BIN) BENCH_STORM_BIN=$(STORM_BIN) BENCH_CLI=$(CLI) BENCH_PLUGIN=$(PLUGIN) \
	BENCH_PARTS="$(BENCH_PARTS)" BENCH_STORM_NODES="$(BENCH_STORM_NODES)" \
	BENCH_STORM_REPS="$(BENCH_STORM_REPS)" THROUGHPUT_JOBS="$(THROUGHPUT_JOBS)" \
	THROUGHPUT_ROUNDS="$(THROUGHPUT_ROUNDS)" THROUGHPUT_ARRAY="$(THROUGHPUT_ARRAY)" \
	THROUGHPUT_ARRAY_ROUNDS="$(THROUGHPUT_ARRAY_ROUNDS)" \
	BENCH_OUT=$(BENCH_OUT) BENCH_EVENTS="$(BENCH_EVENTS)" \
	BENCH_RECORDS="$(BENCH_RECORDS)" BENCH_FS="$(BENCH_FS)" \
	BENCH_DISK_DIR="$(BENCH_DISK_DIR)" BENCH_RSS_EVENTS="$(BENCH_RSS_EVENTS)" \
	BENCH_VALGRIND_EVENTS="$(BENCH_VALGRIND_EVENTS)" \
	BENCH_CLI_RECORDS="$(BENCH_CLI_RECORDS)" BENCH_E2E_RUNS="$(BENCH_E2E_RUNS)" \
	BENCH_E2E_CALL_JOBS="$(BENCH_E2E_CALL_JOBS)" BENCH_STORE="$(BENCH_STORE)" \
	tests/bench/run.sh
