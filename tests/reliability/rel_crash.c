/*
 * rel_crash.c - crash consistency of the ledger (docs/architecture.md,
 * "The ledger"):
 * "a crash at any instant leaves the old or the new record, never a torn
 * one", and the event log keeps every event whose append returned.
 *
 * A child loops lock / read / counter+1 / write / append / unlock on one
 * job, telling the parent through shared memory what it is doing BEFORE and
 * AFTER each write and append. The parent SIGKILLs it after a random delay
 * of 0-2 ms from its first update, REL_CRASH_KILLS times (default 1000),
 * and after every kill
 * checks that:
 *   - the record parses (never torn, never corrupt);
 *   - its counter is the last committed value, or that + 1 if a write was
 *     in flight (the rename may have landed before the child could say so);
 *   - the event log holds every event whose append returned, in order, as
 *     an intact line; a damaged line may only be the torn line of an append
 *     that was in flight when a child died;
 *   - the lock is free again (the next child makes progress) and the temp
 *     files of killed writers never show up as records.
 * State lives on the real disk (/tmp, or REL_CRASH_DIR), so fsync and
 * rename cost what they cost in production.
 */
#include "rel.h"

#include <inttypes.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "ledger.h"
#include "record.h"

#define CLUSTER "crash"
#define JOB 1234
#define MAXN (1 << 20)

enum { PH_START = 0, PH_LOCKED, PH_WRITING, PH_APPENDING, PH_IDLE, PH_N };
static const char *const phase_names[PH_N] = {
	"before the lock", "locked/reading", "in write", "in append",
	"between updates",
};

typedef struct {
	volatile int64_t inflight;   /* value being written */
	volatile int64_t committed;  /* value whose write returned 0 */
	volatile int64_t appending;  /* value whose append is running */
	volatile int64_t logged;     /* value whose append returned 0 */
	volatile int phase;
	volatile int ready;          /* the child has opened the ledger */
	volatile int error;
	char msg[RB_ERR_MAX];
	uint8_t logged_set[MAXN];    /* n whose append returned 0 */
} shared;

static shared *sh;
static char state[128];

static void child(void)
{
	static rb_record rec;
	rb_ledger *l;
	rb_job *j;
	rb_err err;
	char ev[64];
	int64_t v;
	int r;

	if (rb_ledger_open(state, CLUSTER, RB_LEDGER_WRITE, &l, &err) < 0)
		goto fail;
	sh->ready = 1;
	for (;;) {
		sh->phase = PH_START;
		if (rb_ledger_lock(l, JOB, &j, &err) < 0)
			goto fail;
		sh->phase = PH_LOCKED;
		r = rb_ledger_read(l, JOB, &rec, &err);
		if (r < 0)
			goto fail;
		v = rec.budget.interruptions + 1;
		if (v >= MAXN)
			_exit(0);
		rec.budget.interruptions = v;
		sh->inflight = v;
		sh->phase = PH_WRITING;
		if (rb_ledger_write(j, &rec, &err) < 0)
			goto fail;
		sh->committed = v;
		sh->appending = v;
		sh->phase = PH_APPENDING;
		snprintf(ev, sizeof(ev), "kind=test n=%" PRId64, v);
		if (rb_ledger_append(j, ev, &err) < 0)
			goto fail;
		sh->logged_set[v] = 1;
		sh->logged = v;
		sh->phase = PH_IDLE;
		rb_ledger_unlock(j);
	}
fail:
	snprintf(sh->msg, sizeof(sh->msg), "%s", err.msg);
	sh->error = 1;
	_exit(3);
}

typedef struct {
	int64_t last_ok;     /* n of the last intact event */
	int64_t max_n;
	long ok, bad, out_of_order;
	bool bad_not_torn;   /* a damaged line that is not a torn append */
	char bad_line[160];
	uint8_t *present;
} walk;

static int on_event(const char *line, bool ok, void *ctx)
{
	walk *w = ctx;
	const char *p = strstr(line, " kind=test n=");
	long long n;

	if (!ok) {
		w->bad++;
		/* A torn append: a prefix of "t=<time> kind=test n=<n> crc=". */
		if (strncmp(line, "t=", 2) != 0)
			w->bad_not_torn = true;
		snprintf(w->bad_line, sizeof(w->bad_line), "%s", line);
		return 0;
	}
	if (!p || sscanf(p, " kind=test n=%lld", &n) != 1 || n <= 0 ||
	    n >= MAXN) {
		w->bad_not_torn = true;
		snprintf(w->bad_line, sizeof(w->bad_line), "%s", line);
		return 0;
	}
	w->ok++;
	if (n <= w->last_ok)
		w->out_of_order++;
	w->last_ok = n;
	if (n > w->max_n)
		w->max_n = n;
	w->present[n] = 1;
	return 0;
}

static int count_tmp(const char *bucket)
{
	char cmd[512];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd),
		 "ls -A '%s' 2>/dev/null | grep -c '\\.rec\\.tmp\\.'", bucket);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

static int count_job(uint32_t id, void *ctx)
{
	(void)id;
	(*(int *)ctx)++;
	return 0;
}

int main(void)
{
	static rb_record rec;
	static uint8_t present[MAXN];
	const char *kills_env = getenv("REL_CRASH_KILLS");
	const char *base = getenv("REL_CRASH_DIR");
	long kills = kills_env ? atol(kills_env) : 1000;
	long by_phase[PH_N] = { 0 }, torn_window = 0, write_landed = 0;
	long read_errors = 0, count_errors = 0, lost_events = 0;
	long child_errors = 0, invented = 0, unparsed_log = 0;
	int64_t committed = 0;
	char bucket[256], first_err[RB_ERR_MAX] = "";
	struct timespec t0, t1;
	rb_ledger *l;
	rb_err err;
	walk w;
	long k;
	int jobs = 0, tmp_left;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (base) {
		snprintf(state, sizeof(state), "%s/rb-rel-crash-XXXXXX", base);
		MUST(mkdtemp(state) && chmod(state, 0755) == 0, "%s", state);
	} else {
		rel_tmpdir(state, sizeof(state), "crash");
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	MUST(sh != MAP_FAILED, "mmap");
	memset(sh, 0, sizeof(*sh));
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	/* Every appended event is looked for below: no fold (the log's cap,
	 * docs/architecture.md "The ledger") may summarize them. A fold's
	 * own crash safety: tests/unit/test_eventlog.c. */
	rb_ledger_set_log_cap((size_t)1 << 30);
	MUST(rb_ledger_open(state, CLUSTER, RB_LEDGER_WRITE, &l, &err) == 0,
	     "open: %s", err.msg);
	snprintf(bucket, sizeof(bucket), "%s/%s/%03d", state, CLUSTER,
		 JOB % 1000);

	rel_begin("sigkill_leaves_the_old_or_the_new_record_never_a_torn_one");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (k = 0; k < kills; k++) {
		long delay = random() % 2001; /* microseconds */
		int status, r;
		pid_t pid;

		sh->phase = PH_START;
		sh->ready = 0;
		sh->inflight = sh->committed = sh->appending = committed;
		pid = fork();
		MUST(pid >= 0, "fork");
		if (pid == 0)
			child();
		/* The delay runs from the child's first update, not from
		 * fork(): on a loaded machine the fork alone can take 2 ms. */
		{
			struct timespec w0, w1;

			clock_gettime(CLOCK_MONOTONIC, &w0);
			do {
				sched_yield();
				clock_gettime(CLOCK_MONOTONIC, &w1);
			} while (!sh->ready && w1.tv_sec - w0.tv_sec < 5);
		}
		if (delay)
			usleep((useconds_t)delay);
		kill(pid, SIGKILL);
		MUST(waitpid(pid, &status, 0) == pid, "waitpid");
		if (!WIFSIGNALED(status)) {
			child_errors++;
			if (!first_err[0])
				snprintf(first_err, sizeof(first_err),
					 "child exited %d: %s",
					 WEXITSTATUS(status), sh->msg);
			continue;
		}
		by_phase[sh->phase]++;
		if (sh->phase == PH_APPENDING)
			torn_window++;

		r = rb_ledger_read(l, JOB, &rec, &err);
		if (r < 0) {
			read_errors++;
			if (!first_err[0])
				snprintf(first_err, sizeof(first_err),
					 "after kill %ld (%s): %s", k,
					 phase_names[sh->phase], err.msg);
			/* nothing sensible to compare against any more */
			break;
		}
		{
			int64_t c = r == 1 ? 0 : rec.budget.interruptions;
			int64_t C = sh->committed;

			if (c == C + 1 && sh->inflight == C + 1) {
				write_landed++;
			} else if (c != C) {
				count_errors++;
				if (!first_err[0])
					snprintf(first_err, sizeof(first_err),
						 "kill %ld: counter %" PRId64
						 ", committed %" PRId64
						 ", in flight %" PRId64, k, c, C,
						 sh->inflight);
			}
			committed = c;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(read_errors == 0, "%ld reads failed: %s", read_errors, first_err);
	CHECK(count_errors == 0, "%ld wrong counters: %s", count_errors,
	      first_err);
	CHECK(child_errors == 0, "%ld children failed: %s", child_errors,
	      first_err);
	CHECK(committed > 0, "no update ever committed");
	rel_end();

	rel_begin("event_log_keeps_every_appended_event_in_order");
	memset(&w, 0, sizeof(w));
	w.present = present;
	if (rb_ledger_events(l, JOB, on_event, &w, &err) < 0)
		unparsed_log = 1;
	CHECK(!unparsed_log, "events: %s", err.msg);
	for (k = 1; k < MAXN; k++) {
		if (sh->logged_set[k] && !present[k])
			lost_events++;
		if (present[k] && k > committed)
			invented++;
	}
	CHECK(lost_events == 0, "%ld appended events are missing", lost_events);
	CHECK(invented == 0, "%ld events for changes that never happened",
	      invented);
	CHECK(w.out_of_order == 0, "%ld events out of order", w.out_of_order);
	CHECK(!w.bad_not_torn, "damaged line that is no torn append: '%s'",
	      w.bad_line);
	CHECK(w.bad <= torn_window,
	      "%ld damaged lines, but only %ld kills hit an append", w.bad,
	      torn_window);
	rel_end();

	rel_begin("temp_files_of_killed_writers_are_never_records");
	CHECK(rb_ledger_jobs(l, count_job, &jobs, &err) == 0, "jobs: %s",
	      err.msg);
	CHECK(jobs == 1, "%d jobs listed, want 1", jobs);
	tmp_left = count_tmp(bucket);
	rel_end();

	printf("crash: %ld kills in %.1f s (%ld %s, %ld %s, %ld %s, %ld %s, "
	       "%ld %s); %" PRId64 " updates committed; %ld writes landed "
	       "before the child could say so; %ld intact events, %ld torn "
	       "lines; %d temp files of killed writers left in %s\n",
	       kills, (double)(t1.tv_sec - t0.tv_sec) +
			      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	       by_phase[PH_START], phase_names[PH_START], by_phase[PH_LOCKED],
	       phase_names[PH_LOCKED], by_phase[PH_WRITING],
	       phase_names[PH_WRITING], by_phase[PH_APPENDING],
	       phase_names[PH_APPENDING], by_phase[PH_IDLE],
	       phase_names[PH_IDLE], committed, write_landed, w.ok, w.bad,
	       tmp_left, bucket);
	rb_ledger_close(l);
	if (!getenv("REL_KEEP"))
		rel_rm_rf(state);
	return rel_summary("crash");
}
