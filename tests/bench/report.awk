# tests/bench/report.awk - build/bench/results.md from run.sh's notes and raw lines.
#   awk -f report.awk NOTES RAW   (env: SIZES_STR, RERUN)
# Raw lines: "<type> key=value key=\"quoted value\" ...".

function parse(line,    rest, k, v, m) {
	delete F
	F["_type"] = line; sub(/ .*/, "", F["_type"])
	rest = substr(line, length(F["_type"]) + 2)
	while (rest != "") {
		if (!match(rest, /^[A-Za-z0-9_+.]+=/)) {   # a bare word ("check")
			m = index(rest, " ")
			rest = m ? substr(rest, m + 1) : ""
			continue
		}
		k = substr(rest, 1, RLENGTH - 1)
		rest = substr(rest, RLENGTH + 1)
		if (substr(rest, 1, 1) == "\"") {
			m = index(substr(rest, 2), "\"")
			v = substr(rest, 2, m - 1)
			rest = substr(rest, m + 2)
		} else {
			m = index(rest, " ")
			if (m == 0) { v = rest; rest = "" }
			else { v = substr(rest, 1, m - 1); rest = substr(rest, m) }
		}
		sub(/^ +/, "", rest)
		F[k] = v
	}
}
function pct(a, b) { return b > 0 ? sprintf("%+.1f%%", (a / b - 1) * 100) : "n/a" }
function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
function yes(c) { return c ? "**met**" : "**not met**" }

FILENAME == ARGV[1] { notes[++nnotes] = $0; next }
{
	parse($0)
	t = F["_type"]
	if (t == "machine") { nproc = F["nproc"]; cpu = F["cpu"]; kernel = F["kernel"]; mem = F["mem_kb"] }
	else if (t == "fs") { fsdir[F["label"]] = F["dir"]; fstype[F["label"]] = F["type"]; fsdev[F["label"]] = F["device"]; fss[++nfs] = F["label"] }
	else if (t == "result") {
		key = F["label"] SUBSEP F["kind"]
		for (f in F) R[key, f] = F[f]
		# "<fs>/<records>/old": the glue before one write per attempt
		if (split(F["label"], lp, "/") > 2) { old_glue[lp[1]] = F["label"] }
		else if (!((lp[1], lp[2]) in seen)) { seen[lp[1], lp[2]] = 1; sizes[lp[1]] = sizes[lp[1]] " " lp[2] }
	}
	else if (t == "floor") { floorbytes[F["label"]] = F["bytes"]; logbytes[F["label"]] = F["log_line_bytes"] }
	else if (t == "populate") { for (f in F) P[F["label"], f] = F[f] }
	else if (t == "cli") { ncli++; for (f in F) C[ncli, f] = F[f] }
	else if (t == "rss") { nrss++; rss_ev[nrss] = F["events"]; rss_kb[nrss] = F["rss_kb"] }
	else if (t == "valgrind") { for (f in F) VG[f] = F[f]; have_vg = 1 }
	else if (t == "e2e") {
		split($0, w, " ")
		if (w[2] == "ratio") { E_ratio[F["metric"]] = F["ratio"]; E_pair[F["metric"]] = F["paired_diff_med_ms"] }
		else if (w[2] == "check") { for (f in F) E_check[F["name"], f] = F[f]; E_checks[F["name"]] = $0 }
		else if (w[2] == "failures") E_fail = F["count"]
		else if (w[2] == "load") E_load = F["loadavg"] " (slurmctld processes on the machine: " F["other_slurmctlds"] ")"
		else if (w[2] == "calls") { for (f in F) EC[f] = F[f]; have_calls = 1 }
		else if (w[2] == "sdiag") { for (f in F) ES[F["variant"], f] = F[f] }
		else if (w[2] == "sdiag_diff") { for (f in F) ESD[f] = F[f] }
		else if (w[2] ~ /^store=/) E_store = F["store"]
		else if (F["metric"] != "") { for (f in F) E[F["metric"], F["variant"], f] = F[f]; have_e2e = 1 }
	}
	else if (t == "storm_method") { if (F["mode"] != "noop") { storm_how = F["counting"]; storm_cfg = F["config"] } }
	else if (t == "storm") {
		key = F["label"] SUBSEP F["nodes"]
		if (!(key in ST_seen)) { ST_seen[key] = 1; nst++; ST_key[nst] = key }
		for (f in F) ST[key, f] = F[f]
	}
	else if (t == "throughput") {
		split($0, w, " ")
		if (w[2] == "ratio") { TP_ratio = F["ratio"]; TP_rmed = F["round_ratio_med"]; TP_rounds = F["rounds"]; TP_per = F["per_batch"] }
		else if (w[2] == "total") { for (f in F) TP[F["variant"], f] = F[f]; have_tp = 1 }
		else if (w[2] == "check") TP_check = $0
		else if (w[2] == "failures") TP_fail = F["count"]
		else if (w[2] == "load") TP_load = F["loadavg"] " (slurmctld processes on the machine: " F["other_slurmctlds"] ")"
		else if (w[2] == "rpc") { for (f in F) TPRPC[F["variant"], f] = F[f] }
		else if (w[2] ~ /^store=/) TP_store = F["store"]
		else if (F["round"] != "") { TPR[F["round"], F["variant"]] = F["makespan_s"]; TPC[F["round"], F["variant"]] = F["completed"] "/" F["jobs"]; if (F["round"] > tp_nr) tp_nr = F["round"] }
	}
	else if (t == "throughput_array") {
		TAR[F["round"], F["variant"]] = (F["failed"] != "" ? "FAILED: " F["failed"] : F["makespan_s"])
		TAC[F["round"], F["variant"]] = (F["failed"] != "" ? "-" : F["completed"] "/" F["tasks"] " (records " F["records"] ")")
		if (F["round"] > ta_nr) ta_nr = F["round"]
	}
	else if (t == "throughput_array_total") {
		TA[F["variant"]] = (F["failed"] != "" ? "FAILED (" F["failed"] ")" : F["makespan_s"])
		TAT[F["variant"]] = F["tasks"]; TAP[F["variant"]] = (F["failed"] != "" ? "-" : F["tasks_per_s"]); have_ta = 1
	}
	else if (t == "throughput_array_ratio") { TA_ratio = F["ratio"]; TA_rmed = F["round_ratio_med"]; TA_n = F["tasks"]; TA_fail = F["failures"] }
	else if (t == "store") { store = F["name"] }
	else if (t == "loadavg_start") { la0 = substr($0, 15) }
	else if (t == "loadavg_end") { la1 = substr($0, 13) }
	else if (t == "elapsed_s") { elapsed = $2 }
	else if (t == "cleanup") { rm_s[F["label"]] = F["rm_s"] }
}
END {
	print "# restore_budget benchmark results"
	print ""
	printf "Machine: %s CPUs (`nproc`), %s, kernel %s, %.1f GiB RAM. ", nproc, cpu, kernel, mem / 1048576
	print "Load average at start " la0 ", at end " la1 "; the whole run took " elapsed " s."
	print ""
	print "Filesystems:"
	for (i = 1; i <= nfs; i++)
		printf "- %s: `%s` (%s, %s)\n", fss[i], fsdir[fss[i]], fstype[fss[i]], fsdev[fss[i]]
	print ""
	print "Rerun: `" ENVIRON["RERUN"] "`"
	print ""
	print "Store of the plugin on the private clusters (end to end, throughput): **" (store != "" ? store : "dir") "** (docs/stores.md)."
	print ""
	print "**Noise:** the load averages above, and the slurmctld processes seen on the"
	print "machine during the end-to-end runs (" (E_load != "" ? E_load : "not measured") "), say"
	print "what else ran. Every number is a median (with p99 or p10/p90 beside it) and"
	print "the end-to-end runs are interleaved; wall-clock p99s and disk fsync times are"
	print "the noisiest."
	print ""

	print "## Method"
	print ""
	print "- **Event** (`tests/bench/bench_events.c`, linked against `build/core/*/*.o`):"
	print "  the core calls the SPANK glue makes, in its order, each with the config"
	print "  loaded from a real file (libconfig) as the glue does, the notes in a"
	print "  run_dir on tmpfs (node-local, as `/run` in production):"
	print "  *prolog* = `rb_config_load` + `rb_note_write`;"
	print "  *batch* = user_init: `rb_config_load` + `rb_note_claim` + the store's load +"
	print "  `rb_lifecycle_preview`, then `rb_lifecycle_begin` (the start, the phase and"
	print "  the checkpoint handed out: one locked write); *epilog* = `rb_note_look` +"
	print "  `rb_config_load` + `rb_lifecycle_end_in` (through the store seam) +"
	print "  `rb_note_forget`. Each job runs attempts 0 (FRESH,"
	print "  preempted), 1 (RESTORING, preempted), 2 (RESTORING, exit 0): 9 events."
	print "  Not included: option parsing, the checkpoint-directory scan in user_init"
	print "  (a fixed path is handed out), spank_setenv, the controller RPCs, slurmstepd"
	print "  itself. 300 warm-up events are not counted. *Old glue* (`--old-glue`, at the"
	print "  smallest size): the glue before one write per attempt, the batch step's"
	print "  `rb_lifecycle_start` and then (task_post_fork) the handing alone"
	print "  (`rb_lifecycle_begin` for the attempt on record) as two locked writes."
	print "  CPU = `CLOCK_PROCESS_CPUTIME_ID` (user+sys), wall = `CLOCK_MONOTONIC`, per event."
	print "- **Floor**, paired with every event (run right after it, same filesystem):"
	print "  open+write the same record bytes (" floorbytes[fss[1] "/" sizes_first(fss[1])] " B) to a temp file, fsync, close, rename"
	print "  over the target, **fsync the directory**. *floor+log* adds one O_APPEND write of"
	print "  an event line (" logbytes[fss[1] "/" sizes_first(fss[1])] " B) and its fsync: the minimum the design asks per event."
	print "- **Scale**: job records already in `<state_dir>/<cluster>/<id%1000>/<id>.rec`,"
	print "  written with `rb_record_format`, each with a 3-line `<id>.log` and an"
	print "  `ack/<id>/` directory (what the prolog leaves for every job), ages 0-59 days."
	print "  The bench's own jobs use ids above 3,000,000,000 in fresh buckets-of-1000."
	print "- **End to end** (`tests/bench/e2e.sh`): one private cluster"
	print "  (tests/integration/lib.sh `rb_cluster_up`), `plugstack.conf` switched between"
	print "  empty and the plugin line before each run (slurmstepd and the clients read it"
	print "  afresh), ABBA order. Times from bash `$EPOCHREALTIME` as the job user."
	print "- **Prolog storm** (`tests/bench/bench_storm.c`): N pre-forked workers wait on a"
	print "  barrier (a pipe: all blocked in read() until the parent closes it), then each"
	print "  runs one node's prolog work for the same job (`--mode ledger`: the old prolog's"
	print "  `rb_lifecycle_start`; config " (storm_cfg != "" ? storm_cfg : "loaded once before the fork") ")."
	print "  Span = first worker's start to last worker's end (`CLOCK_MONOTONIC`, only that"
	print "  work); a fresh job per repetition. Ledger operations counted in-process by"
	print "  " (storm_how != "" ? storm_how : "link-time wrappers") " (no strace)."
	print "- **Throughput** (`tests/bench/throughput.sh`): the private cluster, short jobs"
	print "  (`sbatch --requeue -N1 -n1 --wrap true`) in batches alternating with/without"
	print "  the plugin (ABBA); a batch's makespan = its first sbatch to squeue empty"
	print "  (polled every 50 ms: every job ran, its epilog ended, it left COMPLETING)."
	print "  Then one job array per batch (`sbatch --array=0-N-1`), the same ABBA order; a"
	print "  batch counts only if every task ended COMPLETED with a record (with) or none (without)."
	print ""

	if (nnotes > 0) {
		print "Notes from this run:"
		for (i = 1; i <= nnotes; i++) print "- " notes[i]
		print ""
	}

	if (nfs > 0) {
	print "## 1. Cost per event"
	print ""
	print "| fs | records | event | n | wall median µs | wall p99 µs | CPU median µs | CPU p99 µs | config load CPU µs | floor wall µs | event / floor | floor+log wall µs | event / floor+log |"
	print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nfs; i++) {
		fs = fss[i]; k = sizes_first(fs); lab = fs "/" k
		if (!((lab SUBSEP "all", "n") in R)) continue
		fw = R[lab, "floor", "wall_med_us"]; flw = R[lab, "floor+log", "wall_med_us"]
		nk = split("prolog batch epilog all", kinds, " ")
		for (j = 1; j <= nk; j++) {
			kd = kinds[j]
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", fs, k,
				(kd == "all" ? "**all**" : kd), R[lab, kd, "n"],
				R[lab, kd, "wall_med_us"], R[lab, kd, "wall_p99_us"],
				R[lab, kd, "cpu_med_us"], R[lab, kd, "cpu_p99_us"], R[lab, kd, "cfg_cpu_med_us"],
				fw, ratio(R[lab, kd, "wall_med_us"], fw), flw, ratio(R[lab, kd, "wall_med_us"], flw)
		}
		printf "| %s | %s | *floor* | %s | %s | %s | %s | %s | | | | | |\n", fs, k, R[lab, "floor", "n"],
			R[lab, "floor", "wall_med_us"], R[lab, "floor", "wall_p99_us"], R[lab, "floor", "cpu_med_us"], R[lab, "floor", "cpu_p99_us"]
		printf "| %s | %s | *floor+log* | %s | %s | %s | %s | %s | | | | | |\n", fs, k, R[lab, "floor+log", "n"],
			R[lab, "floor+log", "wall_med_us"], R[lab, "floor+log", "wall_p99_us"], R[lab, "floor+log", "cpu_med_us"], R[lab, "floor+log", "cpu_p99_us"]
	}
	print ""
	print "Every event loads the config once (the config column)."
	print ""
	glue_section()
	print "## 2. Scale: job records already in state_dir"
	print ""
	print "| fs | records | populate s | sync s | state_dir size MiB | inodes used | wall median µs | wall p99 µs | CPU median µs | CPU p99 µs | wall vs smallest | CPU vs smallest | floor wall µs |"
	print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nfs; i++) {
		fs = fss[i]; k0 = sizes_first(fs)
		n = split(sizes[fs], ks, " ")
		for (j = 1; j <= n; j++) {
			k = ks[j]; lab = fs "/" k; b = fs "/" k0
			printf "| %s | %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |\n", fs, k,
				P[lab, "secs"], P[lab, "sync_s"], P[lab, "du_kb"] / 1024, P[lab, "inodes"],
				R[lab, "all", "wall_med_us"], R[lab, "all", "wall_p99_us"],
				R[lab, "all", "cpu_med_us"], R[lab, "all", "cpu_p99_us"],
				pct(R[lab, "all", "wall_med_us"], R[b, "all", "wall_med_us"]),
				pct(R[lab, "all", "cpu_med_us"], R[b, "all", "cpu_med_us"]),
				R[lab, "floor", "wall_med_us"]
			cg = R[lab, "all", "cpu_med_us"] / R[b, "all", "cpu_med_us"] - 1
			wg = R[lab, "all", "wall_med_us"] / (R[lab, "floor", "wall_med_us"] > 0 ? R[lab, "floor", "wall_med_us"] : 1)
			if (cg > maxcg[fs]) maxcg[fs] = cg
			last[fs] = k
		}
		if (rm_s[fs] != "") printf "| %s | (removing it all) | %s s | | | | | | | | | | |\n", fs, rm_s[fs]
	}
	print ""
	print "populate s = writing the records, logs and ack dirs (no fsync); sync s = `sync -f` afterwards."
	print "On disk the fsync latency of the shared virtual disk drifts by up to 2× between"
	print "stages (other work on the machine): compare each row's event time with its own"
	print "floor column; tmpfs (no I/O) is the clean test of whether the lookup cost grows."
	print ""
	}

	if (ncli > 0) {
		print "### The CLI over many records"
		print ""
		print "| fs | records | command | exit | wall s | user s | sys s | max RSS MiB | output lines | last line |"
		print "|---|---|---|---|---|---|---|---|---|---|"
		for (i = 1; i <= ncli; i++) {
			split(C[i, "label"], lp, "/")
			printf "| %s | %s | `%s` | %s | %s | %s | %s | %.1f | %s | %s |\n", lp[1], lp[2],
				(C[i, "cmd"] == "list" ? "restore-budget list" : "restore-budget gc --older-than 30 --dry-run"),
				C[i, "rc"], C[i, "wall_s"], C[i, "user_s"], C[i, "sys_s"], C[i, "maxrss_kb"] / 1024,
				C[i, "lines"], C[i, "last"]
		}
		print ""
		print "(The state_dir also holds the bench's own ~3,700 jobs per earlier stage; warm page cache.)"
		print ""
	}

	print "## 3. End to end on the private cluster"
	print ""
	if (have_e2e) {
		print "| metric | variant | n | median ms | p10 ms | p90 ms | min ms | max ms |"
		print "|---|---|---|---|---|---|---|---|"
		nm = split("job_start srun_step srun_job", ms, " ")
		for (j = 1; j <= nm; j++) for (vv = 1; vv <= 2; vv++) {
			var = vv == 1 ? "without" : "with"; m = ms[j]
			printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", m, var, E[m, var, "n"], E[m, var, "med_ms"],
				E[m, var, "p10_ms"], E[m, var, "p90_ms"], E[m, var, "min_ms"], E[m, var, "max_ms"]
		}
		print ""
		print "| metric | ratio of medians (with / without) | median of paired differences ms |"
		print "|---|---|---|"
		for (j = 1; j <= nm; j++) printf "| %s | %s | %s |\n", ms[j], E_ratio[ms[j]], E_pair[ms[j]]
		print ""
		print "job_start = sbatch to the batch script's first line; srun_step = `srun --jobid=J --overlap -n1 true` in a running"
		print "allocation; srun_job = `srun -n1 true` as a new job (scheduling, prolog, step; the epilog runs after srun returns)."
		print "Failed runs: " (E_fail == "" ? "?" : E_fail) ". Load at the end: " E_load "."
		print "job_start is bimodal (the job starts at once or waits for the controller's next"
		print "scheduling pass), so its ratio of medians mostly shows which mode the runs fell in;"
		print "the median of paired differences is the better estimate. With the plugin, slurmd"
		print "also has to fork a `slurmstepd spank prolog` for the job, which it skips when no"
		print "plugin has a job_prolog: part of the difference is that, not the plugin's own work."
		print ""
		print "Checks:"
		for (c in E_checks) print "- `" E_checks[c] "`"
		print ""
	} else print "Not run (BENCH_PARTS, BENCH_E2E_RUNS=0) or failed: see build/bench/e2e.log."
	print ""

	if (nrss > 0 || have_vg) {
	print "## 4. Memory"
	print ""
	if (nrss > 0) {
		printf "RSS of one process running %s events (sampled from /proc/self/statm every 10,000):\n\n", rss_ev[nrss]
		print "| events | RSS KiB |"
		print "|---|---|"
		for (i = 1; i <= nrss; i++) printf "| %s | %s |\n", rss_ev[i], rss_kb[i]
		print ""
		printf "First sample after warm-up %s KiB, last %s KiB (%s).\n\n", rss_kb[1], rss_kb[nrss], pct(rss_kb[nrss], rss_kb[1])
	}
	if (have_vg)
		printf "valgrind --leak-check=full, %s events: %s errors; definitely lost: %s; in use at exit: %s; leak records: %s (log: build/bench/valgrind.log).\n\n",
			VG["events"], VG["errors"], (VG["definitely_lost"] == "" ? "none reported" : VG["definitely_lost"]), VG["in_use_at_exit"], VG["leaks_found"]
	}

	storm_section()
	throughput_section()
	throughput_array_section()
	cost_section()

	print "## Targets"
	print ""
	print "| target | measured | verdict |"
	print "|---|---|---|"
	for (i = 1; i <= nfs; i++) {
		fs = fss[i]; lab = fs "/" sizes_first(fs)
		if (!((lab SUBSEP "all", "n") in R)) continue
		c = R[lab, "all", "cpu_med_us"] + 0
		fc = R[lab, "floor+log", "cpu_med_us"] + 0
		printf "| per event ≤ 50 µs CPU (%s) | median %s µs (prolog %s, batch %s, epilog %s; p99 %s); of it the floor+log's own CPU %s µs (fsync/journal work in the process), the rest %.1f µs | %s |\n", fs, c,
			R[lab, "prolog", "cpu_med_us"], R[lab, "batch", "cpu_med_us"], R[lab, "epilog", "cpu_med_us"], R[lab, "all", "cpu_p99_us"], fc, c - fc, yes(c <= 50)
		r = R[lab, "all", "wall_med_us"] / R[lab, "floor", "wall_med_us"]
		printf "| per event ≤ 2× floor wall (%s) | %s / %s µs = %.2f× (vs floor+log %.2f×) | %s |\n", fs,
			R[lab, "all", "wall_med_us"], R[lab, "floor", "wall_med_us"], r,
			R[lab, "all", "wall_med_us"] / R[lab, "floor+log", "wall_med_us"], yes(r <= 2)
	}
	storm_targets()
	if (have_tp)
		printf "| makespan(with) / makespan(without) ≤ 1.02 | %s (%s jobs per variant, %s rounds; median of the rounds' ratios %s) | %s |\n",
			TP_ratio, TP["with", "jobs"], TP_rounds, TP_rmed, yes(TP_ratio + 0 > 0 && TP_ratio + 0 <= 1.02)
	if (have_ta && TA_ratio ~ /^[0-9.]+$/)
		printf "| array makespan(with) / makespan(without) ≤ 1.02 | %s (%s tasks per batch; median of the rounds' ratios %s) | %s |\n",
			TA_ratio, TA_n, TA_rmed, yes(TA_ratio + 0 > 0 && TA_ratio + 0 <= 1.02)
	cost_targets()
	for (i = 1; i <= nfs; i++) {
		fs = fss[i]; k0 = sizes_first(fs); k1 = last[fs]
		if (k1 == "" || k1 == k0) continue
		a = fs "/" k0; b = fs "/" k1
		cg = R[b, "all", "cpu_med_us"] / R[a, "all", "cpu_med_us"] - 1
		wg = R[b, "all", "wall_med_us"] / R[a, "all", "wall_med_us"] - 1
		printf "| flat (≤ +10%%) from %s to %s records (%s) | CPU %s, wall %s (largest CPU rise over the smallest size %+.1f%%) | %s |\n", k0, k1, fs,
			pct(R[b, "all", "cpu_med_us"], R[a, "all", "cpu_med_us"]), pct(R[b, "all", "wall_med_us"], R[a, "all", "wall_med_us"]),
			maxcg[fs] * 100, yes(cg <= 0.10 && maxcg[fs] <= 0.10 && wg <= 0.10)
	}
	if (have_e2e) {
		pr = E["srun_step", "without", "med_ms"] > 0 ? 1 + E_pair["srun_step"] / E["srun_step", "without", "med_ms"] : 0
		printf "| srun step launch ratio ≤ 1.02 | ratio of medians %s; paired estimate 1 + median(with−without)/median(without) = %.3f (p10–p90 spread %s–%s ms without, %s–%s ms with) | %s by the paired estimate; %s by the ratio of medians |\n",
			E_ratio["srun_step"], pr, E["srun_step", "without", "p10_ms"], E["srun_step", "without", "p90_ms"],
			E["srun_step", "with", "p10_ms"], E["srun_step", "with", "p90_ms"], yes(pr > 0 && pr <= 1.02), yes(E_ratio["srun_step"] + 0 <= 1.02)
		nw = ("ledger_unchanged_by_srun_steps", "changed_lines") in E_check ? E_check["ledger_unchanged_by_srun_steps", "changed_lines"] : "?"
		sc = E_check["strace_srun_step", "stepd_config_opens"]; sd = E_check["strace_srun_step", "stepd_state_dir_calls"]
		printf "| no work in srun steps beyond option handling | ledger lines changed by 5 steps: %s; config opens / state_dir calls in slurmd+slurmstepd strace: %s / %s | %s |\n",
			nw, sc, sd, yes(nw == "0" && sc == "0" && sd == "0")
	}
	print ""
}
# Before/after one write per attempt: the same events at the smallest size
# with the glue as it is and as it was (bench_events --old-glue).
function glue_section(    i, fs, lab, old, j, kd, nk, kinds) {
	for (i = 1; i <= nfs; i++) if (fss[i] in old_glue) break
	if (i > nfs) return
	print "### Before/after: one write per attempt in the batch step"
	print ""
	print "| fs | records | event | wall median µs: old glue → now | change | CPU median µs: old glue → now | change | wall p99 µs: old glue → now |"
	print "|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nfs; i++) {
		fs = fss[i]
		if (!(fs in old_glue)) continue
		old = old_glue[fs]; lab = fs "/" sizes_first(fs)
		nk = split("prolog batch epilog all", kinds, " ")
		for (j = 1; j <= nk; j++) {
			kd = kinds[j]
			printf "| %s | %s | %s | %s → %s | %s | %s → %s | %s | %s → %s |\n", fs, sizes_first(fs),
				(kd == "all" ? "**all**" : kd),
				R[old, kd, "wall_med_us"], R[lab, kd, "wall_med_us"], pct(R[lab, kd, "wall_med_us"], R[old, kd, "wall_med_us"]),
				R[old, kd, "cpu_med_us"], R[lab, kd, "cpu_med_us"], pct(R[lab, kd, "cpu_med_us"], R[old, kd, "cpu_med_us"]),
				R[old, kd, "wall_p99_us"], R[lab, kd, "wall_p99_us"]
		}
	}
	print ""
	print "Old glue = the batch step before one write per attempt (`rb_lifecycle_start`,"
	print "then the handing alone: two locked writes, two fsynced replaces of"
	print "the record); now = one `rb_lifecycle_begin`. The prolog is the same code in"
	print "both, so its row shows the noise between the two runs (run one after the"
	print "other on the same state_dir)."
	print ""
}

function sizes_first(fs,    a) { split(sizes[fs], a, " "); return a[1] }

function storm_section(    i, k) {
	if (nst == 0) return
	print "## 5. Prolog storm: one job's prolog on N nodes at once"
	print ""
	print "| fs-mode | mode | N | span median ms | span min ms | span max ms | release skew ms | work median ms | slowest worker ms | locks | lock busy retries | record reads | record writes | event appends | ledger ops per job | ops per node | failed |"
	print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nst; i++) {
		k = ST_key[i]
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			ST[k, "label"], ST[k, "mode"], ST[k, "nodes"], ST[k, "span_med_ms"], ST[k, "span_min_ms"], ST[k, "span_max_ms"],
			ST[k, "release_skew_med_ms"], ST[k, "work_med_ms"], ST[k, "work_max_med_ms"], ST[k, "locks"],
			ST[k, "lock_busy"], ST[k, "rec_reads"], ST[k, "rec_writes"], ST[k, "log_appends"],
			ST[k, "ops_per_job"], ST[k, "ops_per_node"], ST[k, "failed"]
	}
	print ""
	print "Medians over " ST[ST_key[1], "reps"] " repetitions (ledger counts: their mean). span = first worker's start to"
	print "the last one's end; release skew = first start to last start (how long waking N"
	print "processes on " nproc " CPUs takes: part of the span); work = one worker's own time."
	print "ledger ops = locks + record reads (lookups of `<id>.rec`, found or not) + record"
	print "writes (renames onto it) + event appends; lock busy retries are tries that found"
	print "the lock held (each followed by a sleep of 1-50 ms). Mode *noop* does no work:"
	print "its span is the harness's floor here (N processes woken on " nproc " CPUs; on a real"
	print "cluster each node has its own), to subtract from the other rows' spans."
	print "Mode *ledger* is the prolog before issue 12 (every node locks, reads and maybe"
	print "writes the job's record); mode *note* is the prolog after it (every node writes a"
	print "node-local note; node 0, the batch host, then claims it and records the attempt)."
	print ""
}

function throughput_section(    r, a, b) {
	if (!have_tp) return
	print "## 6. Throughput: short jobs with the plugin vs without"
	print ""
	print "| variant | jobs | makespan s | jobs per s |"
	print "|---|---|---|---|"
	printf "| without | %s | %s | %s |\n", TP["without", "jobs"], TP["without", "makespan_s"], TP["without", "jobs_per_s"]
	printf "| with | %s | %s | %s |\n", TP["with", "jobs"], TP["with", "makespan_s"], TP["with", "jobs_per_s"]
	printf "| **ratio with / without** | | **%s** | |\n", TP_ratio
	print ""
	print "| round | without s | with s | with / without | completed (without, with) |"
	print "|---|---|---|---|---|"
	for (r = 1; r <= tp_nr; r++) {
		a = TPR[r, "without"]; b = TPR[r, "with"]
		printf "| %d | %s | %s | %s | %s, %s |\n", r, a, b, ratio(b, a), TPC[r, "without"], TPC[r, "with"]
	}
	print ""
	print "Each round runs " TP_per " jobs per variant (order alternating: without first in odd rounds)."
	print "Median of the rounds' ratios: " TP_rmed ". Failed batches: " (TP_fail == "" ? "?" : TP_fail) ". Load at the end: " TP_load "."
	print "Check: `" TP_check "`"
	print ""
}

function throughput_array_section(    r, a, b) {
	if (!have_ta) return
	print "## 6b. Throughput: a " TA_n "-task job array with the plugin vs without"
	print ""
	print "One `sbatch --array=0-" TA_n - 1 " --requeue --wrap true` per batch; makespan = the sbatch to the queue empty."
	print "A failed batch (sbatch refused, tasks left queued, a task not COMPLETED, a record missing with the plugin or present without) is FAILED, never a 0."
	print ""
	print "| variant | tasks | makespan s | tasks per s |"
	print "|---|---|---|---|"
	printf "| without | %s | %s | %s |\n", TAT["without"], TA["without"], TAP["without"]
	printf "| with | %s | %s | %s |\n", TAT["with"], TA["with"], TAP["with"]
	printf "| **ratio with / without** | | **%s** | |\n", TA_ratio
	print ""
	print "| round | without s | with s | with / without | completed (without, with) |"
	print "|---|---|---|---|---|"
	for (r = 1; r <= ta_nr; r++) {
		a = TAR[r, "without"]; b = TAR[r, "with"]
		printf "| %d | %s | %s | %s | %s, %s |\n", r, a, b, ((a ~ /^FAILED/ || b ~ /^FAILED/) ? "n/a" : ratio(b, a)), TAC[r, "without"], TAC[r, "with"]
	}
	print ""
	print "Median of the rounds' ratios: " (TA_rmed == "" ? "n/a" : TA_rmed) ". Failed batches: " TA_fail "."
	print ""
}

# The storm's targets, per filesystem: the largest N's span ≤ 5 ms; ledger
# operations per job the same at the largest N as at the smallest.
function storm_targets(    i, k, lab, n, lo, hi, klo, khi, fl) {
	for (i = 1; i <= nst; i++) {
		k = ST_key[i]; lab = ST[k, "label"]; n = ST[k, "nodes"] + 0
		if (!(lab in lo) || n < lo[lab]) { lo[lab] = n; klo[lab] = k }
		if (!(lab in hi) || n > hi[lab]) { hi[lab] = n; khi[lab] = k }
	}
	for (lab in hi) {
		if (lab == "noop") continue
		fl = ("noop" SUBSEP hi[lab]) in ST_seen ? ST["noop", hi[lab], "span_med_ms"] : ""
		printf "| last node of a %d-node job within 5 ms of the first (%s) | span median %s ms (min %s, max %s)%s | %s |\n",
			hi[lab], lab, ST[khi[lab], "span_med_ms"], ST[khi[lab], "span_min_ms"], ST[khi[lab], "span_max_ms"],
			(fl != "" ? sprintf("; harness floor (noop) %s ms, span above it %.2f ms", fl, ST[khi[lab], "span_med_ms"] - fl) : ""),
			yes(ST[khi[lab], "span_med_ms"] + 0 <= 5)
		printf "| ledger ops per attempt independent of N (%s) | %s at N=%d, %s at N=%d | %s |\n", lab,
			ST[klo[lab], "ops_per_job"], lo[lab], ST[khi[lab], "ops_per_job"], hi[lab],
			yes(ST[khi[lab], "ops_per_job"] + 0 <= ST[klo[lab], "ops_per_job"] + 0)
	}
}

# The cost of the plugin in one table (section 7): what issue 22 asks of the
# controller store, for whichever store this run used.
function cost_section(    st) {
	if (!have_calls && !have_e2e && !have_tp && !have_ta) return
	st = E_store != "" ? E_store : (TP_store != "" ? TP_store : store)
	print "## 7. Cost of the plugin, store = " st
	print ""
	print "| measure | without | with | with / without | median of the rounds' ratios |"
	print "|---|---|---|---|---|"
	if (have_e2e)
		printf "| batch start (`job_start`) median ms, %s runs | %s | %s | %s (paired: %+.1f ms, %.3f) | |\n", E["job_start", "with", "n"],
			E["job_start", "without", "med_ms"], E["job_start", "with", "med_ms"], E_ratio["job_start"],
			E_pair["job_start"], paired_ratio("job_start")
	if (have_tp)
		printf "| makespan s, %s jobs | %s | %s | %s | %s |\n", TP["with", "jobs"], TP["without", "makespan_s"],
			TP["with", "makespan_s"], TP_ratio, TP_rmed
	if (have_ta)
		printf "| makespan s, %s-task array × %s | %s | %s | %s | %s |\n", TA_n, ta_nr, TA["without"], TA["with"], TA_ratio, TA_rmed
	if (have_calls) {
		printf "| the plugin's controller calls per attempt | 0 | %s: start %s read + %s write, end %s read + %s write | | |\n",
			EC["per_attempt"], EC["start_reads"], EC["start_writes"], EC["end_reads"], EC["end_writes"]
		if (EC["start_span_med_ms"] != "")
			printf "| the start's first call to the script's first line, ms (an upper bound of the start's cost) | | median %s (max %s) | | |\n",
				EC["start_span_med_ms"], EC["start_span_max_ms"]
		printf "| slurmctld RPCs per attempt (sdiag) | %s | %s | +%s (REQUEST_UPDATE_JOB +%s, REQUEST_JOB_INFO_SINGLE +%s) | |\n",
			ES["without", "rpcs_per_attempt"], ES["with", "rpcs_per_attempt"], ESD["rpcs_per_attempt"],
			ESD["update_job"], ESD["job_info_single"]
	}
	if (("with", "per_job") in TPRPC)
		printf "| sdiag during the %s-job batches: update_job + job_info_single per job | %s | %s | | |\n",
			TP["with", "jobs"], TPRPC["without", "per_job"], TPRPC["with", "per_job"]
	print ""
	if (have_calls) {
		print "Calls: " EC["attempts"] " jobs through wrappers of `squeue` and `scontrol` (plugstack.conf"
		print "`slurm_bindir=`) that log each call; a call before the job script's first line is the"
		print "attempt's start, after its last line its end (" EC["during"] " per attempt in between, " EC["other"] " other"
		print "scontrol commands, " EC["as_user"] " as a non-root user). RPCs: sdiag by message type before and"
		print "after as many jobs of each variant, the bench's own polls (" ES["with", "poll_rpcs"] " each,"
		print "measured) and sdiag's own REQUEST_STATS_INFO left out. Per attempt with the plugin: " ES["with", "types"] "."
		print "Without: " ES["without", "types"] "."
		print ""
	}
}

# paired estimate of a ratio: 1 + median(with - without) / median(without)
function paired_ratio(m) {
	return E[m, "without", "med_ms"] > 0 ? 1 + E_pair[m] / E[m, "without", "med_ms"] : 0
}

function cost_targets(    pr, ok) {
	if (have_e2e) {
		pr = paired_ratio("job_start")
		printf "| batch start latency ratio ≤ 1.02 (store %s) | ratio of medians %s; paired estimate %.3f (%+.1f ms)%s | %s by the paired estimate; %s by the ratio of medians |\n",
			E_store, E_ratio["job_start"], pr, E_pair["job_start"],
			(EC["start_span_med_ms"] != "" && E["job_start", "without", "med_ms"] > 0 ?
				sprintf("; the start's calls to the first line: median %s ms = %.3f of the median without", EC["start_span_med_ms"],
					1 + EC["start_span_med_ms"] / E["job_start", "without", "med_ms"]) : ""),
			yes(pr > 0 && pr <= 1.02), yes(E_ratio["job_start"] + 0 <= 1.02)
	}
	if (have_calls) {
		# strict: a read at the end is not in the aim (it tells a self-ended
		# attempt from one the controller ended: docs/stores.md)
		ok = EC["start_reads"] + 0 <= 1 && EC["start_writes"] + 0 <= 1 && EC["end_reads"] + 0 == 0 &&
			EC["end_writes"] + 0 <= 1 && EC["during"] + 0 == 0
		printf "| controller calls: 1 read + 1 write at start, ≤ 1 write at a self-ended end (store %s) | start %s + %s, end %s read + %s write, %s in between | %s%s |\n",
			EC["store"], EC["start_reads"], EC["start_writes"], EC["end_reads"], EC["end_writes"], EC["during"], yes(ok),
			(EC["end_reads"] + 0 > 0 ? " (writes within it; " EC["end_reads"] " read at the end beyond it)" : "")
	}
}
