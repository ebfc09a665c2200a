/*
 * bench_events.c - cost of the plugin's per-event work, in-process.
 *
 * Drives the same core code the SPANK glue runs (plugin/spank/job_script.c,
 * plugin/spank/batch.c), with the glue's calls in the glue's order, against a
 * real config file, a real state_dir and a real run_dir (docs/architecture.md,
 * "Where each event happens" and "The store seam"):
 *
 *   prolog     rb_config_load + rb_note_write + free
 *   batch      user_init: rb_config_load + rb_store_dir_init + rb_note_claim
 *              + the store's load + rb_lifecycle_preview, then (the
 *              checkpoint chosen) rb_lifecycle_begin: the start, the phase
 *              and the checkpoint handed out in one locked write; + free
 *   epilog     rb_note_look + rb_config_load + rb_store_dir_init +
 *              rb_lifecycle_end_in + rb_note_forget + free
 *
 * (Left out, because they are not ledger or note work: option parsing, the
 * checkpoint directory scan in user_init (the bench hands out a fixed path),
 * the seteuid switches around it, spank_setenv, the controller RPCs (the
 * job's account when the config has `accounts`, the interruption question
 * in the epilog: a fixed "preempted" here).)
 *
 * Every job runs three attempts: 0 (FRESH, preempted), 1 (RESTORING,
 * preempted), 2 (RESTORING, exit 0): 9 events per job, each event kind a
 * third of them.
 *
 * Each event is paired with one "floor" operation on the same filesystem:
 * write the same record bytes to a temp file, fsync, close, rename over the
 * target, fsync the directory - the least an atomic durable replace costs.
 * "floor+log" adds one O_APPEND write of an event line and its fsync (what
 * the design demands per event: record replace + event append).
 *
 * Usage:
 *   bench_events run --state DIR --config FILE [--cluster C] [--events N]
 *                    [--warmup N] [--id-base N] [--label L] [--no-floor]
 *                    [--rss-every N] [--old-glue]
 *                    [--run-dir DIR]   (default <state>.run)
 *   bench_events populate --state DIR [--cluster C] --from A --to B
 *                    [--no-logs] [--no-ack]
 *   bench_events config --state DIR --out FILE     write the bench config
 *   bench_events append --state DIR [--events N] [--bytes B]
 *                    one job's log: N appends of a B-byte event (a report
 *                    naming a checkpoint path), each timed alone (under the
 *                    lock); with the 64 KiB cap (docs/architecture.md, "The
 *                    ledger") some of them fold the log: median, p99, max
 *                    and the log's final size show what that costs. The
 *                    same source builds against the code before the cap.
 *
 * By default the events follow the SPANK glue as it is. --old-glue measures
 * the glue before one write per attempt, for comparison in the same run:
 * the batch step's user_init claims the note and records the start
 * (rb_lifecycle_start, one locked write), task_post_fork records the phase
 * and the checkpoint handed out (old_report, the report step as it was,
 * with the config user_init kept, a second locked write). The prolog and the epilog
 * are the same in both.
 *
 * Output: "key=value" lines (see tests/bench/run.sh); nothing is asserted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "ledger.h"
#include "lifecycle.h"
#include "node_note.h"
#include "record.h"
#include "seam.h"

#define CKPT "/home/alice/run/ckpt/checkpoint-17"

enum { K_PROLOG, K_BATCH, K_EPILOG, K_ALL, K_FLOOR, K_FLOOR_LOG, K_N };
static const char *kind_name[K_N] = {
	"prolog", "batch", "epilog", "all", "floor", "floor+log",
};

typedef struct {
	double *wall, *cpu, *cfg_cpu;
	size_t n, cap;
} samples;

static samples S[K_N];

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "bench_events: %s: %s\n", what, msg);
	exit(1);
}

static double now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void push(int k, double wall, double cpu, double cfg_cpu)
{
	samples *s = &S[k];

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4096;
		s->wall = realloc(s->wall, s->cap * sizeof(double));
		s->cpu = realloc(s->cpu, s->cap * sizeof(double));
		s->cfg_cpu = realloc(s->cfg_cpu, s->cap * sizeof(double));
		if (!s->wall || !s->cpu || !s->cfg_cpu)
			die("push", "out of memory");
	}
	s->wall[s->n] = wall;
	s->cpu[s->n] = cpu;
	s->cfg_cpu[s->n] = cfg_cpu;
	s->n++;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* q-quantile of v (sorted in place), nearest rank. */
static double quant(double *v, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(double), cmp_d);
	i = (size_t)(q * (double)n);
	if (i >= n)
		i = n - 1;
	return v[i];
}

static double mean(const double *v, size_t n)
{
	double t = 0;

	for (size_t i = 0; i < n; i++)
		t += v[i];
	return n ? t / (double)n : 0;
}

/* --- config ------------------------------------------------------------------ */

static void write_config(const char *state, const char *out)
{
	FILE *f = fopen(out, "w");

	if (!f)
		die(out, strerror(errno));
	/* No `accounts`: with accounts the real prolog asks the controller
	 * for the job's account (an RPC this bench cannot make). */
	fprintf(f,
		"# restore_budget bench config (tests/bench)\n"
		"state_dir          = \"%s\";\n"
		"max_failures       = 2;\n"
		"restore_retry_num  = 3;\n"
		"restore_timeout    = 300;\n"
		"restore_accounting = \"grouped\";\n"
		"count_preemptions  = false;\n"
		"track              = \"all\";\n"
		"on_error           = \"open\";\n"
		"limits = {\n"
		"  max_failures = 10; restore_retry_num = 10; allow_unlimited = false;\n"
		"};\n"
		"checkpoint = { pattern = \"checkpoint*\"; latest = \"latest\"; };\n"
		"partitions = {\n"
		"  preempt = { max_failures = 5; restore_retry_num = 5; };\n"
		"  low     = { max_failures = 3; };\n"
		"};\n", state);
	if (fclose(f) != 0)
		die(out, strerror(errno));
}

/* --- populate ---------------------------------------------------------------- */

static int open_dir_at(int at, const char *name, bool create)
{
	int fd;

	if (create && mkdirat(at, name, 0755) < 0 && errno != EEXIST)
		return -1;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && create)
		fchmod(fd, 0755);
	return fd;
}

static int write_file_at(int dir, const char *name, const char *buf,
			 size_t len)
{
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
			O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	if (write(fd, buf, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* A finished job's event log: three valid lines (t=, kind=..., crc=). */
static size_t make_log(char *buf, size_t cap, int64_t t)
{
	static const char *ev[] = {
		"kind=start attempt=0 decision=run charged=-1 charge=none "
		"failures=0->0 restore_failures=0->0 granted=0 max_failures=2 "
		"restore_retry_num=3 restore_timeout=300 accounting=grouped "
		"count_preemptions=0 checkpoint= reason=first%20attempt",
		"kind=report attempt=0 phase=FRESH checkpoint=",
		"kind=end attempt=0 end=completed phase=FRESH confirmed=exit0 ran=3600",
	};
	size_t pos = 0;

	for (size_t i = 0; i < 3; i++) {
		size_t start = pos;

		pos += (size_t)snprintf(buf + pos, cap - pos, "t=%lld %s",
					(long long)t, ev[i]);
		pos += (size_t)snprintf(buf + pos, cap - pos,
					" crc=%016" PRIx64 "\n",
					rb_checksum(buf + start, pos - start));
	}
	return pos;
}

static void fill_record(rb_record *rec, const char *cluster, uint32_t id,
			int64_t now)
{
	int64_t age = (int64_t)(id % 60) * 86400; /* 0..59 days old */
	rb_budget *b = &rec->budget;

	rb_record_init(rec);
	rb_strlcpy(rec->cluster, cluster, sizeof(rec->cluster));
	rec->job_id = id;
	rec->uid = rec->gid = 1000 + id % 50;
	snprintf(rec->user, sizeof(rec->user), "user%u", id % 50);
	rb_strlcpy(rec->partition, id % 3 ? "low" : "preempt",
		   sizeof(rec->partition));
	snprintf(rec->work_dir, sizeof(rec->work_dir), "/home/user%u/run%u",
		 id % 50, id % 7);
	rb_strlcpy(rec->checkpoint_dir, "ckpt", sizeof(rec->checkpoint_dir));
	rec->created = now - age - 3600;
	rec->updated = now - age;
	rec->seq = 3;
	b->last_charged = -1;
	b->cur.attempt = 0;
	b->cur.phase = RB_PHASE_FRESH;
	b->cur.confirmed = RB_CONFIRM_EXIT0;
	b->cur.end = RB_END_COMPLETED;
	b->cur.start_time = rec->created;
	b->cur.end_time = rec->updated;
	b->cur.limits.max_failures = 2;
	b->cur.limits.restore_retry_num = 3;
	b->cur.limits.restore_timeout = 300;
	b->cur.limits.accounting = RB_ACCOUNTING_GROUPED;
}

static int populate(const char *state, const char *cluster, uint32_t from,
		    uint32_t to, bool logs, bool ack)
{
	static char text[RB_RECORD_TEXT_MAX + 1];
	char logbuf[4096], name[64];
	int bucket_fd[1000];
	rb_record *rec = malloc(sizeof(*rec)), *check = malloc(sizeof(*check));
	int64_t now = (int64_t)time(NULL);
	size_t loglen = make_log(logbuf, sizeof(logbuf), now - 86400);
	double t0 = now_ns(CLOCK_MONOTONIC), t1;
	int sfd, cfd, afd = -1;
	uint64_t nrec = 0, bytes = 0;
	rb_err err;

	if (!rec || !check)
		die("populate", "out of memory");
	sfd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0)
		die(state, strerror(errno));
	cfd = open_dir_at(sfd, cluster, true);
	if (cfd < 0)
		die(cluster, strerror(errno));
	if (ack && (afd = open_dir_at(cfd, "ack", true)) < 0)
		die("ack", strerror(errno));
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "%03d", i);
		bucket_fd[i] = open_dir_at(cfd, name, true);
		if (bucket_fd[i] < 0)
			die(name, strerror(errno));
	}
	for (uint64_t id = from; id <= to; id++) {
		int b = (int)(id % 1000);
		ssize_t n;

		fill_record(rec, cluster, (uint32_t)id, now);
		n = rb_record_format(rec, text, sizeof(text));
		if (n < 0)
			die("populate", "rb_record_format failed");
		if (id == from && rb_record_parse(text, (size_t)n, check, &err) < 0)
			die("populate: the record does not parse back", err.msg);
		snprintf(name, sizeof(name), "%" PRIu64 ".rec", id);
		if (write_file_at(bucket_fd[b], name, text, (size_t)n) < 0)
			die(name, strerror(errno));
		nrec++;
		bytes += (uint64_t)n;
		if (logs) {
			snprintf(name, sizeof(name), "%" PRIu64 ".log", id);
			if (write_file_at(bucket_fd[b], name, logbuf, loglen) < 0)
				die(name, strerror(errno));
			bytes += loglen;
		}
		if (ack) {
			snprintf(name, sizeof(name), "%" PRIu64, id);
			if (mkdirat(afd, name, 0700) < 0 && errno != EEXIST)
				die("ack/<id> (mkdir)", strerror(errno));
		}
	}
	t1 = now_ns(CLOCK_MONOTONIC);
	printf("populate from=%u to=%u records=%" PRIu64 " bytes=%" PRIu64
	       " logs=%d ack=%d secs=%.2f\n", from, to, nrec, bytes, logs, ack,
	       (t1 - t0) / 1e9);
	for (int i = 0; i < 1000; i++)
		close(bucket_fd[i]);
	if (afd >= 0)
		close(afd);
	close(cfd);
	close(sfd);
	free(rec);
	free(check);
	return 0;
}

/* --- events ------------------------------------------------------------------ */

typedef struct {
	const char *config;
	const char *cluster;
	const char *state;
	const char *run_dir;        /* node-local notes (node_note.h) */
	int floor_dir;              /* <state>/../floor, or -1 */
	int floor_log;              /* O_APPEND fd in floor_dir */
	char floor_bytes[8192];     /* a real record's bytes */
	size_t floor_len;
	char log_line[1024];        /* a real event line's size */
	size_t log_len;
	bool measure;
	bool old_glue;              /* --old-glue: two writes per attempt */
	long rss_every;
	long done;
} bench;

/* The host name the notes are kept under (one node: the batch host). */
#define HOST "batch-host"

static rb_config *load(const bench *bn, double *cfg_cpu)
{
	double c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	rb_config *cfg;
	rb_err err;

	if (rb_config_load(bn->config, &cfg, &err) < 0)
		die("rb_config_load", err.msg);
	*cfg_cpu += now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	return cfg;
}

static void rss_sample(bench *bn)
{
	long pages = 0, res = 0;
	FILE *f;

	if (bn->rss_every <= 0 || bn->done % bn->rss_every != 0)
		return;
	f = fopen("/proc/self/statm", "r");
	if (f && fscanf(f, "%ld %ld", &pages, &res) == 2)
		printf("rss events=%ld rss_kb=%ld vsz_kb=%ld\n", bn->done,
		       res * (sysconf(_SC_PAGESIZE) / 1024),
		       pages * (sysconf(_SC_PAGESIZE) / 1024));
	if (f)
		fclose(f);
	fflush(stdout);
}

/* One atomic durable replace of floor_bytes (+ optionally the log append). */
static void floor_op(bench *bn, bool with_log)
{
	double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	int fd;

	fd = openat(bn->floor_dir, "f.rec.tmp", O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, bn->floor_bytes, bn->floor_len) !=
	    (ssize_t)bn->floor_len || fsync(fd) < 0 || close(fd) < 0)
		die("floor", strerror(errno));
	if (renameat(bn->floor_dir, "f.rec.tmp", bn->floor_dir, "f.rec") < 0 ||
	    fsync(bn->floor_dir) < 0)
		die("floor rename", strerror(errno));
	if (with_log) {
		if (write(bn->floor_log, bn->log_line, bn->log_len) !=
		    (ssize_t)bn->log_len || fsync(bn->floor_log) < 0)
			die("floor log", strerror(errno));
	}
	if (bn->measure)
		push(with_log ? K_FLOOR_LOG : K_FLOOR,
		     now_ns(CLOCK_MONOTONIC) - w0,
		     now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0, 0);
}

static void event_done(bench *bn, int kind, double w0, double c0,
		       double cfg_cpu)
{
	double w = now_ns(CLOCK_MONOTONIC) - w0;
	double c = now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;

	if (bn->measure) {
		/* the RSS run keeps no samples: its memory must be the core's */
		if (bn->rss_every <= 0) {
			push(kind, w, c, cfg_cpu);
			push(K_ALL, w, c, cfg_cpu);
		}
		bn->done++;
		rss_sample(bn);
	}
	if (bn->floor_dir >= 0 && bn->floor_len > 0) {
		floor_op(bn, false);
		floor_op(bn, true);
	}
}

/* The prolog (job_script.c): the job as its environment describes it,
 * noted on this node. */
static void ev_prolog(bench *bn, uint32_t id, int64_t n)
{
	double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	double cc = 0;
	rb_config *cfg = load(bn, &cc);
	rb_job_info job = {
		.cluster = bn->cluster, .job_id = id, .attempt = n,
		.uid = 1000 + id % 50, .gid = 1000 + id % 50, .user = "alice",
		.partition = id % 3 ? "low" : "preempt", .account = NULL,
		.work_dir = "/home/alice/run", .checkpoint_dir = "ckpt",
		.now = (int64_t)time(NULL),
	};
	rb_err err;

	if (rb_note_write(bn->run_dir, HOST, &job, &err) < 0)
		die("rb_note_write", err.msg);
	rb_config_free(cfg);
	event_done(bn, K_PROLOG, w0, c0, cc);
}

/* The batch step's note, claimed and completed as user_init completes it
 * (batch.c, plan_from_note). */
static void claim(const bench *bn, uint32_t id, rb_note_job *note)
{
	rb_err err;

	if (rb_note_claim(bn->run_dir, HOST, bn->cluster, id, note, &err) != 0)
		die("rb_note_claim", "no note (bench scenario broken)");
	note->job.checkpoint_dir = "ckpt";
	note->job.now = (int64_t)time(NULL);
}

/* The batch step now (batch.c): read as root (note, record, the start
 * previewed), the checkpoint chosen on the preview, then one write. */
static void batch_now(const bench *bn, const rb_config *cfg, uint32_t id,
		      const char *ck, rb_record *rec)
{
	static rb_note_job note;
	static rb_record seen;
	rb_store_dir dir;
	rb_store *st = rb_store_dir_init(&dir, cfg->state_dir, bn->cluster);
	rb_start_result res;
	rb_handout h;
	rb_err err;
	int found;

	claim(bn, id, &note);
	found = st->ops->load(st, id, &seen, &err);
	if (found < 0)
		die("load (user_init)", err.msg);
	*rec = seen;
	rb_lifecycle_preview(cfg, &note.job, found == 0, &res, rec);
	h = (rb_handout){ rec->budget.cur.attempt,
			  rb_engine_start_phase(rec->budget.cur.attempt, ck),
			  { ck, { 0 }, "" }, found == 0 ? seen.seq : 0 };
	if (rb_lifecycle_begin(st, cfg, id, &note.job, &h, &res, rec, &err) < 0)
		die("rb_lifecycle_begin", err.msg);
	if (res.decision != RB_DECISION_RUN || res.report_err[0])
		die("rb_lifecycle_begin", "attempt refused or not handed (bench scenario broken)");
}

/* The old glue's second write, task_post_fork's (the lifecycle's report
 * step as it was): attempt h->attempt was handed h's checkpoint, one
 * report event. */
static int old_report(rb_record *rec, bool found, rb_events *e, void *ctx,
		      rb_err *err)
{
	const rb_handout *h = ctx;
	char esc[3 * RB_PATH_MAX + 1];

	if (!found || rec->budget.cur.attempt != h->attempt ||
	    rec->budget.cur.end != RB_END_NONE)
		return rb_err_set(err, "attempt %" PRId64 " not started or ended",
				  h->attempt);
	rb_engine_set_phase(&rec->budget, h->attempt, h->phase,
			    h->handed.checkpoint);
	rb_fallback_record_handed(rec, &h->handed);
	if (rb_kv_escape(rec->budget.cur.checkpoint, esc, sizeof(esc)) < 0)
		return rb_err_set(err, "checkpoint too long");
	e->line = 0;
	e->n = 1;
	e->len = (size_t)snprintf(e->buf, RB_EVENT_LINE_MAX,
				  "kind=report attempt=%" PRId64 " phase=%s checkpoint=%s",
				  h->attempt, rb_phase_name(h->phase), esc);
	return 1;
}

/* The batch step before one write per attempt: user_init recorded the
 * start, task_post_fork (the same config) what was handed. */
static void batch_before(const bench *bn, const rb_config *cfg, uint32_t id,
			 const char *ck, rb_record *rec)
{
	static rb_note_job note;
	static rb_events ev;
	rb_handout h = { 0, RB_PHASE_NONE, { ck, { 0 }, "" }, 0 };
	rb_start_result res;
	rb_store_dir d;
	rb_err err;

	claim(bn, id, &note);
	if (rb_lifecycle_start(cfg, &note.job, &res, rec, &err) < 0)
		die("rb_lifecycle_start", err.msg);
	if (res.decision != RB_DECISION_RUN)
		die("rb_lifecycle_start", "attempt refused (bench scenario broken)");
	h.attempt = rec->budget.cur.attempt;
	h.phase = rb_engine_start_phase(h.attempt, ck);
	rb_events_clear(&ev);
	if (rb_store_dir_init(&d, cfg->state_dir, bn->cluster)->ops->apply(
		    &d.store, id, 0, old_report, &h, &ev, rec, &err) < 0)
		die("the old report", err.msg);
}

static void ev_batch(bench *bn, uint32_t id, int64_t n, rb_record *rec)
{
	double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	double cc = 0;
	const char *ck = n > 0 ? CKPT : "";
	rb_config *cfg = load(bn, &cc);

	if (bn->old_glue)
		batch_before(bn, cfg, id, ck, rec);
	else
		batch_now(bn, cfg, id, ck, rec);
	rb_config_free(cfg);
	event_done(bn, K_BATCH, w0, c0, cc);
}

/* The controller's answer for an interruption (an RPC the bench cannot
 * make): attempts 0 and 1 are preempted. */
static const char *preempted(void *ctx)
{
	(void)ctx;
	return "preempted";
}

/* The epilog (job_script.c) on the node whose batch step claimed the
 * note. */
static void ev_epilog(bench *bn, uint32_t id, int64_t restart_count)
{
	double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	double cc = 0;
	rb_config *cfg;
	rb_store_dir dir;
	rb_end_info end = { restart_count, 0, 0, preempted, NULL,
			    (int64_t)time(NULL) };
	rb_err err;

	if (rb_note_look(bn->run_dir, HOST, bn->cluster, id) != RB_NOTE_CLAIMED)
		die("rb_note_look", "the note is not claimed (bench scenario broken)");
	cfg = load(bn, &cc);
	if (rb_lifecycle_end_in(rb_store_dir_init(&dir, cfg->state_dir,
						  bn->cluster),
				id, &end, &err) < 0)
		die("the epilog's end", err.msg);
	rb_note_forget(bn->run_dir, HOST, bn->cluster, id);
	rb_config_free(cfg);
	event_done(bn, K_EPILOG, w0, c0, cc);
}

/* Attempts 0..2 of one job: 9 events. */
static void one_job(bench *bn, uint32_t id, rb_record *rec, long *left)
{
	for (int64_t n = 0; n < 3 && *left > 0; n++) {
		ev_prolog(bn, id, n);
		ev_batch(bn, id, n, rec);
		/* attempts 0 and 1 are preempted (count bumped), 2 exits 0 */
		ev_epilog(bn, id, n < 2 ? n + 1 : n);
		*left -= 3;
	}
}

static void report(const char *label, int k)
{
	samples *s = &S[k];
	size_t n = s->n;
	double wm, cm;

	if (n == 0)
		return;
	wm = mean(s->wall, n);
	cm = mean(s->cpu, n);
	printf("result label=%s kind=%s n=%zu wall_med_us=%.1f wall_p99_us=%.1f "
	       "wall_mean_us=%.1f cpu_med_us=%.1f cpu_p99_us=%.1f "
	       "cpu_mean_us=%.1f cfg_cpu_med_us=%.1f\n",
	       label, kind_name[k], n,
	       quant(s->wall, n, 0.5) / 1e3, quant(s->wall, n, 0.99) / 1e3,
	       wm / 1e3, quant(s->cpu, n, 0.5) / 1e3,
	       quant(s->cpu, n, 0.99) / 1e3, cm / 1e3,
	       quant(s->cfg_cpu, n, 0.5) / 1e3);
}

/* A real record's bytes and a real event line's length, for the floor. */
static void capture_floor_bytes(bench *bn, uint32_t id)
{
	char path[RB_PATH_MAX + 64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%03u/%u.rec", bn->state,
		 bn->cluster, id % 1000, id);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path, strerror(errno));
	n = read(fd, bn->floor_bytes, sizeof(bn->floor_bytes));
	close(fd);
	if (n <= 0)
		die(path, "empty record");
	bn->floor_len = (size_t)n;
	snprintf(path, sizeof(path), "%s/%s/%03u/%u.log", bn->state,
		 bn->cluster, id % 1000, id);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path, strerror(errno));
	n = read(fd, bn->log_line, sizeof(bn->log_line));
	close(fd);
	if (n <= 0)
		die(path, "empty log");
	/* the first line's length */
	{
		char *nl = memchr(bn->log_line, '\n', (size_t)n);

		bn->log_len = nl ? (size_t)(nl - bn->log_line) + 1 : (size_t)n;
	}
}

static int run(const char *state, const char *config, const char *cluster,
	       long events, long warmup, uint32_t id_base, const char *label,
	       const char *run_dir, bool floor, long rss_every, bool old_glue)
{
	bench bn = {
		.old_glue = old_glue, .run_dir = run_dir,
		.config = config, .cluster = cluster, .state = state,
		.floor_dir = -1, .floor_log = -1, .rss_every = rss_every,
	};
	rb_record *rec = malloc(sizeof(*rec));
	uint32_t id = id_base;
	long left;

	if (!rec)
		die("run", "out of memory");
	/* warm-up (not measured): page cache, dentries, the allocator */
	left = warmup;
	while (left > 0)
		one_job(&bn, id++, rec, &left);
	if (floor) {
		char fdir[RB_PATH_MAX];

		capture_floor_bytes(&bn, id_base);
		snprintf(fdir, sizeof(fdir), "%s/../floor", state);
		mkdir(fdir, 0755);
		bn.floor_dir = open(fdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (bn.floor_dir < 0)
			die(fdir, strerror(errno));
		bn.floor_log = openat(bn.floor_dir, "f.log", O_WRONLY | O_CREAT |
				      O_APPEND | O_CLOEXEC, 0644);
		if (bn.floor_log < 0)
			die("floor log", strerror(errno));
		printf("floor bytes=%zu log_line_bytes=%zu\n", bn.floor_len,
		       bn.log_len);
	}
	bn.measure = true;
	rss_sample(&bn);
	left = events;
	while (left > 0)
		one_job(&bn, id++, rec, &left);
	printf("jobs first=%u last=%u\n", id_base, id - 1);
	for (int k = 0; k < K_N; k++)
		report(label, k);
	free(rec);
	if (bn.floor_log >= 0)
		close(bn.floor_log);
	if (bn.floor_dir >= 0)
		close(bn.floor_dir);
	for (int k = 0; k < K_N; k++) {
		free(S[k].wall);
		free(S[k].cpu);
		free(S[k].cfg_cpu);
	}
	return 0;
}

/* --- append: one job's event log, appended to N times ------------------------ */

static void append_one(rb_ledger *l, const char *ev, double *us)
{
	rb_job *j = NULL;
	rb_err err;
	double w0;

	if (rb_ledger_lock(l, 7, &j, &err) < 0)
		die("lock", err.msg);
	w0 = now_ns(CLOCK_MONOTONIC);
	if (rb_ledger_append(j, ev, &err) < 0)
		die("append", err.msg);
	*us = (now_ns(CLOCK_MONOTONIC) - w0) / 1000.0;
	rb_ledger_unlock(j);
}

static int append_bench(const char *state, long events, long bytes)
{
	double *us = calloc((size_t)events, sizeof(*us));
	char *ev = malloc((size_t)bytes + 64), path[RB_PATH_MAX + 64];
	rb_ledger *l = NULL;
	struct stat st;
	rb_err err;
	int n;

	if (!us || !ev)
		die("append", "out of memory");
	if (rb_ledger_open(state, "bench", RB_LEDGER_WRITE, &l, &err) < 0)
		die(state, err.msg);
	for (long i = 0; i < events; i++) {
		n = snprintf(ev, (size_t)bytes + 64,
			     "kind=report attempt=%ld phase=RUNNING checkpoint=/c/", i);
		memset(ev + n, 'x', (size_t)(bytes > n ? bytes - n : 1));
		ev[bytes > n ? bytes : n + 1] = '\0';
		append_one(l, ev, &us[i]);
	}
	rb_ledger_close(l);
	snprintf(path, sizeof(path), "%s/bench/007/7.log", state);
	st.st_size = stat(path, &st) == 0 ? st.st_size : -1;
	printf("append events=%ld event_bytes=%ld mean_us=%.1f", events, bytes,
	       mean(us, (size_t)events));
	printf(" median_us=%.1f p99_us=%.1f max_us=%.1f log_bytes=%lld\n",
	       quant(us, (size_t)events, 0.5), quant(us, (size_t)events, 0.99),
	       quant(us, (size_t)events, 1.0), (long long)st.st_size);
	free(us);
	free(ev);
	return 0;
}

/* --- main -------------------------------------------------------------------- */

static void usage(void)
{
	fputs("usage: bench_events run --state DIR --config FILE [--cluster C] "
	      "[--events N] [--warmup N] [--id-base N] [--label L] [--no-floor] "
	      "[--rss-every N] [--old-glue] [--run-dir DIR]\n"
	      "       bench_events populate --state DIR [--cluster C] --from A "
	      "--to B [--no-logs] [--no-ack]\n"
	      "       bench_events config --state DIR --out FILE\n"
	      "       bench_events append --state DIR [--events N] [--bytes B]\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *state = NULL, *config = NULL, *cluster = "bench";
	const char *label = "run", *out = NULL;
	long events = 10000, warmup = 300, rss_every = 0, bytes = 4000;
	unsigned long long id_base = 10000001, from = 0, to = 0;
	bool floor = true, logs = true, ack = true, old_glue = false;
	char run_dir[RB_PATH_MAX] = "";

	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

#define ARG(name) (strcmp(a, name) == 0 && v && ++i)
		if (ARG("--state"))
			state = v;
		else if (ARG("--config"))
			config = v;
		else if (ARG("--cluster"))
			cluster = v;
		else if (ARG("--events"))
			events = atol(v);
		else if (ARG("--warmup"))
			warmup = atol(v);
		else if (ARG("--id-base"))
			id_base = strtoull(v, NULL, 10);
		else if (ARG("--label"))
			label = v;
		else if (ARG("--rss-every"))
			rss_every = atol(v);
		else if (ARG("--from"))
			from = strtoull(v, NULL, 10);
		else if (ARG("--to"))
			to = strtoull(v, NULL, 10);
		else if (ARG("--out"))
			out = v;
		else if (ARG("--bytes"))
			bytes = atol(v);
		else if (strcmp(a, "--no-floor") == 0)
			floor = false;
		else if (ARG("--run-dir"))
			rb_strlcpy(run_dir, v, sizeof(run_dir));
		else if (strcmp(a, "--old-glue") == 0)
			old_glue = true;
		else if (strcmp(a, "--no-logs") == 0)
			logs = false;
		else if (strcmp(a, "--no-ack") == 0)
			ack = false;
		else
			usage();
#undef ARG
	}
	if (!state)
		usage();
	if (!run_dir[0])
		snprintf(run_dir, sizeof(run_dir), "%s.run", state);
	if (strcmp(argv[1], "config") == 0 && out) {
		write_config(state, out);
		return 0;
	}
	if (strcmp(argv[1], "append") == 0 && events > 0 && bytes >= 64 &&
	    bytes <= 16000)
		return append_bench(state, events, bytes);
	if (strcmp(argv[1], "populate") == 0 && from >= 1 && to >= from &&
	    to <= UINT32_MAX)
		return populate(state, cluster, (uint32_t)from, (uint32_t)to,
				logs, ack);
	if (strcmp(argv[1], "run") == 0 && config && events > 0 &&
	    id_base >= 1 && id_base + (unsigned long long)(events + warmup) <
	    UINT32_MAX)
		return run(state, config, cluster, events, warmup,
			   (uint32_t)id_base, label, run_dir, floor,
			   rss_every, old_glue);
	usage();
	return 2;
}
