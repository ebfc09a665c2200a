/*
 * rel_concurrency.c - many nodes, one job (docs/rule.md, "The rule": "Charging
 * is idempotent per attempt: each attempt is charged at most once, however
 * many nodes or callbacks see its start").
 *
 * REL_CONC_PROCS processes (default 32) play the nodes of REL_CONC_JOBS
 * multi-node jobs (default 4) that all run at once. For every attempt, in
 * lock step (a process-shared barrier between phases):
 *   1. every node runs the prolog: rb_lifecycle_start(attempt n);
 *   2. node 0 runs the batch step: its handing, rbt_report(phase,
 *      checkpoint) (tests/lib/handing.h),
 *      while every other node runs its prolog a second time (a repeated
 *      callback: must change nothing);
 *   3. every node runs the epilog: rb_lifecycle_epilog(restart count, exit
 *      code, signal) for the scripted end (preempted, failed, killed by a
 *      signal, completed).
 * Each process walks the jobs in its own random order, so the prologs and
 * epilogs of all nodes and all jobs race for the same locks.
 *
 * Then the ledger must equal a sequential model built from the engine alone
 * (rb_engine_start / set_phase / end on one rb_budget per job): the same
 * counters, last_charged, totals and current attempt; every node got the
 * model's decision; the event log holds exactly one start, one report and
 * one end per attempt, and each attempt n >= 1 charged attempt n-1 once.
 */
#include "rel.h"

#include <inttypes.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "config.h"
#include "engine.h"
#include "ledger.h"
#include "lifecycle.h"
#include "../lib/handing.h"
#include "record.h"

#define CLUSTER "conc"
#define MAX_PROCS 64
#define MAX_JOBS 16
#define MAX_ATTEMPTS 16
#define T0 1700000000

typedef enum { O_PREEMPT, O_FAIL, O_SIGNAL, O_COMPLETE } outcome;

typedef struct {
	outcome out[MAX_ATTEMPTS];
	int ran[MAX_ATTEMPTS];
	int attempts;                      /* attempts the job makes */
	rb_decision want[MAX_ATTEMPTS];    /* the model's decisions */
	rb_budget model;
} script;

typedef struct {
	pthread_barrier_t barrier;
	int decision[MAX_JOBS][MAX_ATTEMPTS][MAX_PROCS];
	int dup_decision[MAX_JOBS][MAX_ATTEMPTS][MAX_PROCS];
	int errors;
	char first_error[RB_ERR_MAX];
} shared;

static shared *sh;
static script scripts[MAX_JOBS];
static rb_config *cfg;
static int nprocs = 32, njobs = 6, rounds = 10;
static uint32_t job_base;

static int64_t start_time(int a) { return T0 + (int64_t)a * 1000; }

static void ckpt_of(uint32_t id, int a, char *buf, size_t len)
{
	snprintf(buf, len, "/home/u/%u/ckpt/checkpoint-%d", id, a);
}

static void note_error(const char *what, const rb_err *err)
{
	if (__sync_fetch_and_add(&sh->errors, 1) == 0)
		snprintf(sh->first_error, sizeof(sh->first_error), "%s: %s",
			 what, err->msg);
}

static rb_job_info info(uint32_t id, int a)
{
	rb_job_info j = {
		.cluster = CLUSTER, .job_id = id, .attempt = a,
		.uid = 1000, .gid = 1000, .user = "u", .partition = "batch",
		.account = "acct", .work_dir = "/home/u", .checkpoint_dir = "ckpt",
		.now = start_time(a),
	};
	return j;
}

/* The sequential model: the engine alone, the same inputs. */
static void build_model(script *s, uint32_t id, unsigned seed)
{
	rb_limits lim;
	char ck[128];
	int a;

	rb_budget_init(&s->model);
	rb_config_resolve(cfg, "batch", "acct", NULL, &lim, NULL, 0);
	for (a = 0; a < MAX_ATTEMPTS; a++) {
		int r = (int)(rand_r(&seed) % 100);
		rb_end end;
		int code = 0;

		s->out[a] = r < 40 ? O_PREEMPT : r < 70 ? O_FAIL :
			    r < 90 ? O_SIGNAL : O_COMPLETE;
		s->ran[a] = rand_r(&seed) % 2 ? 10 : 200; /* timeout is 100 */
		s->want[a] = rb_engine_start(&s->model, a, &lim, start_time(a),
					     NULL, NULL, 0);
		s->attempts = a + 1;
		if (s->want[a] == RB_DECISION_REFUSE) {
			/* task_init refuses: the job ends FAILED 1:0 */
			rb_engine_end(&s->model, a, RB_END_FAILED, 1,
				      start_time(a) + 1);
			break;
		}
		ckpt_of(id, a, ck, sizeof(ck));
		rb_engine_set_phase(&s->model, a, rb_engine_start_phase(a, ck),
				    ck);
		switch (s->out[a]) {
		case O_PREEMPT: end = RB_END_INTERRUPTED; break;
		case O_FAIL: end = RB_END_FAILED; code = 1; break;
		case O_SIGNAL: end = RB_END_FAILED; code = 128 + 9; break;
		default: end = RB_END_COMPLETED; break;
		}
		rb_engine_end(&s->model, a, end, code,
			      start_time(a) + s->ran[a]);
		if (s->out[a] == O_COMPLETE)
			break;
	}
}

static void shuffle(int *order, int n, unsigned *seed)
{
	int i;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		int k = (int)(rand_r(seed) % (unsigned)(i + 1)), t = order[i];

		order[i] = order[k];
		order[k] = t;
	}
}

static void node(int me)
{
	unsigned seed = (unsigned)me * 7919u + (unsigned)time(NULL);
	int order[MAX_JOBS];
	int a, k;

	for (a = 0; a < MAX_ATTEMPTS; a++) {
		/* 1. prolog on every node */
		pthread_barrier_wait(&sh->barrier);
		shuffle(order, njobs, &seed);
		for (k = 0; k < njobs; k++) {
			int jx = order[k];
			uint32_t id = job_base + (uint32_t)jx;
			rb_job_info j = info(id, a);
			rb_start_result res;
			rb_err err;

			if (a >= scripts[jx].attempts)
				continue;
			if (rb_lifecycle_start(cfg, &j, &res, NULL, &err) < 0) {
				note_error("start", &err);
				sh->decision[jx][a][me] = -1;
			} else {
				sh->decision[jx][a][me] = (int)res.decision;
			}
		}
		/* 2. batch step on node 0; a repeated prolog everywhere else */
		pthread_barrier_wait(&sh->barrier);
		shuffle(order, njobs, &seed);
		for (k = 0; k < njobs; k++) {
			int jx = order[k];
			uint32_t id = job_base + (uint32_t)jx;
			rb_err err;

			if (a >= scripts[jx].attempts)
				continue;
			if (me == 0) {
				char ck[128];

				if (scripts[jx].want[a] == RB_DECISION_REFUSE)
					continue;
				ckpt_of(id, a, ck, sizeof(ck));
				if (rbt_report(cfg, CLUSTER, id, a,
					rb_engine_start_phase(a, ck), ck,
					&err) < 0)
					note_error("report", &err);
			} else {
				rb_job_info j = info(id, a);
				rb_start_result res;

				if (rb_lifecycle_start(cfg, &j, &res, NULL, &err) < 0) {
					note_error("repeated start", &err);
					sh->dup_decision[jx][a][me] = -1;
				} else {
					sh->dup_decision[jx][a][me] =
						(int)res.decision;
				}
			}
		}
		/* 3. epilog on every node */
		pthread_barrier_wait(&sh->barrier);
		shuffle(order, njobs, &seed);
		for (k = 0; k < njobs; k++) {
			int jx = order[k];
			uint32_t id = job_base + (uint32_t)jx;
			const script *s = &scripts[jx];
			int64_t restart = a, now;
			int code = 0, sig = 0;
			rb_err err;

			if (a >= s->attempts)
				continue;
			if (s->want[a] == RB_DECISION_REFUSE) {
				code = 1;
				now = start_time(a) + 1;
			} else {
				now = start_time(a) + s->ran[a];
				if (s->out[a] == O_PREEMPT)
					restart = a + 1;
				else if (s->out[a] == O_FAIL)
					code = 1;
				else if (s->out[a] == O_SIGNAL)
					sig = 9;
			}
			if (rb_lifecycle_epilog(cfg, CLUSTER, id, restart, code,
						sig, restart > a ? "preempted" :
						NULL, now, &err) < 0)
				note_error("epilog", &err);
		}
	}
	pthread_barrier_wait(&sh->barrier);
	_exit(0);
}

typedef struct {
	int starts[MAX_ATTEMPTS], reports[MAX_ATTEMPTS], ends[MAX_ATTEMPTS];
	int charged[MAX_ATTEMPTS + 1];
	int bad, other;
} event_count;

static int count_event(const char *line, bool ok, void *ctx)
{
	event_count *c = ctx;
	const char *k = strstr(line, " kind=");
	const char *at = strstr(line, " attempt=");
	const char *ch = strstr(line, " charged=");
	long long a = -1, n = -2;

	if (!ok) {
		c->bad++;
		return 0;
	}
	if (!k || !at || sscanf(at, " attempt=%lld", &a) != 1 || a < 0 ||
	    a >= MAX_ATTEMPTS) {
		c->other++;
		return 0;
	}
	if (!strncmp(k, " kind=start ", 12)) {
		c->starts[a]++;
		if (ch && sscanf(ch, " charged=%lld", &n) == 1 && n >= 0 &&
		    n < MAX_ATTEMPTS)
			c->charged[n]++;
	} else if (!strncmp(k, " kind=report ", 13)) {
		c->reports[a]++;
	} else if (!strncmp(k, " kind=end ", 10)) {
		c->ends[a]++;
	} else {
		c->other++;
	}
	return 0;
}

static void check_job(int jx, rb_ledger *l)
{
	static rb_record rec;
	const script *s = &scripts[jx];
	const rb_budget *m = &s->model, *b = &rec.budget;
	uint32_t id = job_base + (uint32_t)jx;
	event_count c;
	rb_err err;
	int a, p, wrong = 0;

	memset(&c, 0, sizeof(c));
	CHECK(rb_ledger_read(l, id, &rec, &err) == 0, "job %u: %s", id,
	      err.msg);
	CHECK(b->failures == m->failures && b->restore_failures ==
	      m->restore_failures, "job %u: F/r %d/%d, model %d/%d", id,
	      b->failures, b->restore_failures, m->failures,
	      m->restore_failures);
	CHECK(b->last_charged == m->last_charged,
	      "job %u: last_charged %" PRId64 ", model %" PRId64, id,
	      b->last_charged, m->last_charged);
	CHECK(b->interruptions == m->interruptions &&
	      b->restore_failures_total == m->restore_failures_total &&
	      b->failures_total == m->failures_total,
	      "job %u: totals %" PRId64 "/%" PRId64 "/%" PRId64 ", model %"
	      PRId64 "/%" PRId64 "/%" PRId64, id, b->interruptions,
	      b->restore_failures_total, b->failures_total, m->interruptions,
	      m->restore_failures_total, m->failures_total);
	CHECK(b->exhausted == m->exhausted && b->prev_end == m->prev_end &&
	      b->prev_end_code == m->prev_end_code,
	      "job %u: exhausted/prev_end differ from the model", id);
	CHECK(b->cur.attempt == m->cur.attempt && b->cur.phase == m->cur.phase &&
	      b->cur.confirmed == m->cur.confirmed && b->cur.end == m->cur.end &&
	      b->cur.end_code == m->cur.end_code &&
	      b->cur.refused == m->cur.refused &&
	      b->cur.start_time == m->cur.start_time &&
	      b->cur.end_time == m->cur.end_time,
	      "job %u: current attempt %" PRId64 " differs from the model's %"
	      PRId64, id, b->cur.attempt, m->cur.attempt);
	CHECK(!strcmp(b->checkpoint, m->checkpoint),
	      "job %u: checkpoint '%s', model '%s'", id, b->checkpoint,
	      m->checkpoint);

	for (a = 0; a < s->attempts; a++)
		for (p = 0; p < nprocs; p++) {
			if (sh->decision[jx][a][p] != (int)s->want[a])
				wrong++;
			if (p && sh->dup_decision[jx][a][p] != (int)s->want[a])
				wrong++;
		}
	CHECK(wrong == 0, "job %u: %d node decisions differ from the model",
	      id, wrong);

	CHECK(rb_ledger_events(l, id, count_event, &c, &err) == 0,
	      "job %u events: %s", id, err.msg);
	CHECK(c.bad == 0 && c.other == 0, "job %u: %d damaged, %d unknown "
	      "event lines", id, c.bad, c.other);
	for (a = 0; a < s->attempts; a++) {
		int want_report = s->want[a] == RB_DECISION_RUN;

		CHECK(c.starts[a] == 1, "job %u attempt %d: %d start events",
		      id, a, c.starts[a]);
		CHECK(c.reports[a] == want_report,
		      "job %u attempt %d: %d report events", id, a,
		      c.reports[a]);
		CHECK(c.ends[a] == 1, "job %u attempt %d: %d end events", id,
		      a, c.ends[a]);
		if (a + 1 < s->attempts)
			CHECK(c.charged[a] == 1,
			      "job %u: attempt %d charged %d times", id, a,
			      c.charged[a]);
	}
}

int main(void)
{
	const char *e;
	char state[128];
	pthread_barrierattr_t ba;
	rb_ledger *l;
	rb_err err;
	struct timespec t0, t1;
	long calls = 0;
	int r, p, jx, a;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((e = getenv("REL_CONC_PROCS")))
		nprocs = atoi(e);
	if ((e = getenv("REL_CONC_JOBS")))
		njobs = atoi(e);
	if ((e = getenv("REL_CONC_ROUNDS")))
		rounds = atoi(e);
	MUST(nprocs >= 2 && nprocs <= MAX_PROCS && njobs >= 1 &&
	     njobs <= MAX_JOBS, "REL_CONC_PROCS 2..%d, REL_CONC_JOBS 1..%d",
	     MAX_PROCS, MAX_JOBS);
	rel_tmpdir(state, sizeof(state), "conc");
	cfg = rb_config_defaults();
	free(cfg->state_dir);
	cfg->state_dir = strdup(state);
	cfg->max_failures = 3;
	cfg->restore_retry_num = 2;
	cfg->restore_timeout = 100;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	MUST(sh != MAP_FAILED, "mmap");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (r = 0; r < rounds; r++) {
		unsigned seed = (unsigned)time(NULL) + (unsigned)r * 104729u;
		char name[96];

		memset(sh, 0, sizeof(*sh));
		pthread_barrierattr_init(&ba);
		pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
		MUST(pthread_barrier_init(&sh->barrier, &ba, (unsigned)nprocs)
		     == 0, "barrier");
		job_base = 5000 + (uint32_t)r * 100;
		for (jx = 0; jx < njobs; jx++)
			build_model(&scripts[jx], job_base + (uint32_t)jx,
				    seed + (unsigned)jx);
		for (p = 0; p < nprocs; p++) {
			pid_t pid = fork();

			MUST(pid >= 0, "fork");
			if (pid == 0)
				node(p);
		}
		for (p = 0; p < nprocs; p++) {
			int status;

			MUST(wait(&status) > 0, "wait");
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				sh->errors++;
		}
		snprintf(name, sizeof(name),
			 "round_%d_%d_nodes_%d_jobs_match_the_sequential_model",
			 r, nprocs, njobs);
		rel_begin(name);
		CHECK(sh->errors == 0, "%d errors: %s", sh->errors,
		      sh->first_error);
		MUST(rb_ledger_open(state, CLUSTER, RB_LEDGER_READ, &l, &err)
		     == 0, "open: %s", err.msg);
		for (jx = 0; jx < njobs; jx++) {
			check_job(jx, l);
			for (a = 0; a < scripts[jx].attempts; a++)
				calls += 3L * nprocs;
		}
		rb_ledger_close(l);
		rel_end();
		{
			int total = 0;

			for (jx = 0; jx < njobs; jx++)
				total += scripts[jx].attempts;
			printf("  round %d: %d processes, %d jobs, %d attempts"
			       " (seed %u)\n", r, nprocs, njobs, total, seed);
		}
		pthread_barrier_destroy(&sh->barrier);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("concurrency: %d processes x %d jobs x %d rounds, %ld lifecycle "
	       "calls in %.1f s\n", nprocs, njobs, rounds, calls,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	rb_config_free(cfg);
	if (!getenv("REL_KEEP"))
		rel_rm_rf(state);
	return rel_summary("concurrency");
}
