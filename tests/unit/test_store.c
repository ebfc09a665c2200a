/*
 * test_store.c - the store seam (store/seam.h): an in-memory store, with
 * no lock and no history, runs the lifecycle's rules as the
 * shared-directory ledger does; replayed and retried applies change
 * nothing (docs/architecture.md, "The store seam").
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "lifecycle.h"
#include "seam.h"
#include "fixture.h"

#define CLUSTER "testc"
#define CKPT "/home/u/ckpt/checkpoint-3"

/* --- a store in memory ------------------------------------------------------ */

#define MEM_JOBS 8

typedef struct {
	uint32_t job_id;
	rb_record rec;
	int saves;      /* records saved */
	int lines;      /* event lines it was handed (and dropped) */
} mem_job;

typedef struct {
	rb_store store;
	mem_job job[MEM_JOBS];
	int n;
	int conflicts;  /* this many applies are retried, as after a conflict */
	int calls;      /* steps called */
} mem_store;

static mem_job *mem_find(mem_store *m, uint32_t job_id)
{
	for (int i = 0; i < m->n; i++)
		if (m->job[i].job_id == job_id)
			return &m->job[i];
	return NULL;
}

static int mem_load(rb_store *s, uint32_t job_id, rb_record *rec, rb_err *err)
{
	mem_job *j = mem_find((mem_store *)s, job_id);

	(void)err;
	if (!j) {
		rb_record_init(rec);
		return 1;
	}
	*rec = j->rec;
	return 0;
}

/* Save as the ledger does: the job's id and cluster, seq, the times. */
static mem_job *mem_save(mem_store *m, uint32_t job_id, rb_record *rec,
			 const rb_events *ev)
{
	mem_job *j = mem_find(m, job_id);

	if (!j) {
		assert_true(m->n < MEM_JOBS);
		j = &m->job[m->n++];
		memset(j, 0, sizeof(*j));
		j->job_id = job_id;
	}
	if (rec->job_id == 0)
		rec->job_id = job_id;
	if (!rec->cluster[0])
		rb_strlcpy(rec->cluster, CLUSTER, sizeof(rec->cluster));
	rec->seq++;
	rec->updated = (int64_t)time(NULL);
	if (rec->created == 0)
		rec->created = rec->updated;
	j->rec = *rec;
	j->saves++;
	j->lines += ev->n;
	return j;
}

static int mem_apply(rb_store *s, uint32_t job_id, unsigned flags,
		     rb_apply_fn fn, void *ctx, rb_events *ev, rb_record *rec,
		     rb_err *err)
{
	mem_store *m = (mem_store *)s;
	int rc;

	if ((flags & RB_APPLY_IF_RECORDED) && !mem_find(m, job_id)) {
		rb_record_init(rec);
		return 1;
	}
	do {
		/* no lock: read, step, and save unless another wrote first */
		bool found = mem_load(s, job_id, rec, err) == 0;

		rb_events_clear(ev);
		m->calls++;
		rc = fn(rec, found, ev, ctx, err);
	} while (rc >= 0 && m->conflicts-- > 0);
	if (rc < 0)
		return -1;
	if (rc == 1 && ev->overflow)
		return rb_err_set(err, "event line too long for job %u", job_id);
	if (rc == 1)
		mem_save(m, job_id, rec, ev);
	return 0;
}

/* No history, listing or removal: those ops are optional. */
static const rb_store_ops mem_ops = { .load = mem_load, .apply = mem_apply };

static mem_store *mem_new(void)
{
	mem_store *m = calloc(1, sizeof(*m));

	m->store.ops = &mem_ops;
	m->store.where = "memory";
	return m;
}

/* --- fixture: both stores ------------------------------------------------------ */

typedef struct {
	char dir[64];
	rb_config *cfg;
	rb_store_dir d;
	rb_store *ledger;
	mem_store *mem;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f || ut_tmpdir(f->dir, sizeof(f->dir), "/tmp/rb-store-XXXXXX", 0755) < 0)
		return -1;
	f->cfg = ut_config_in(f->dir);
	f->ledger = rb_store_dir_init(&f->d, f->cfg->state_dir, CLUSTER);
	f->mem = mem_new();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	int rc = ut_rmtree(f->dir);

	rb_config_free(f->cfg);
	free(f->mem);
	free(f);
	return rc;
}

static rb_job_info job_info(uint32_t id, int64_t attempt)
{
	return ut_job_info(CLUSTER, id, attempt);
}

static rb_handout handout(int64_t n, const char *ckpt)
{
	rb_handout h = { n, rb_engine_start_phase(n, ckpt), { ckpt, { 0 }, NULL },
			 0 };
	return h;
}

/* The batch step's one write for attempt n, handed ckpt. */
static rb_start_result begin(fixture *f, rb_store *st, uint32_t id, int64_t n,
			     const char *ckpt)
{
	rb_job_info j = job_info(id, n);
	rb_handout h = handout(n, ckpt);
	rb_start_result res;
	rb_record rec;
	rb_err err;

	/* as the batch step: chosen on the record as read */
	if (st->ops->load(st, id, &rec, &err) == 0)
		h.seq = rec.seq;
	assert_int_equal(rb_lifecycle_begin(st, f->cfg, id, &j, &h, &res, &rec,
					    &err), 0);
	return res;
}

static void end(rb_store *st, uint32_t id, int64_t count, int code,
		int64_t now)
{
	rb_end_info e = { count, code, 0, NULL, NULL, now };
	rb_err err;

	assert_int_equal(rb_lifecycle_end_in(st, id, &e, &err), 0);
}

/* rec's text with the time of its last write left out (it differs). */
static void record_text(rb_store *st, uint32_t id, char *buf, size_t len)
{
	rb_record rec;
	rb_err err;

	assert_int_equal(st->ops->load(st, id, &rec, &err), 0);
	rec.updated = 0;
	assert_true(rb_record_format(&rec, buf, len) > 0);
}

/* Fresh, preempted, restoring and failing to exhaustion, granted, run. */
static void life(fixture *f, rb_store *st, uint32_t id)
{
	rb_err err;

	begin(f, st, id, 0, "");
	end(st, id, 1, 0, 1050);
	for (int64_t n = 1; n <= 4; n++) {
		begin(f, st, id, n, CKPT);
		end(st, id, n, 42, 1000 + n * 100 + 5);
	}
	assert_int_equal(begin(f, st, id, 5, CKPT).decision, RB_DECISION_REFUSE);
	end(st, id, 5, 1, 1505);
	assert_int_equal(rb_lifecycle_grant_in(st, id, 2, "root", &err), 0);
	assert_int_equal(begin(f, st, id, 6, CKPT).decision, RB_DECISION_RUN);
}

static void test_store_both_stores_keep_the_same_record(void **state)
{
	fixture *f = *state;
	static char a[RB_RECORD_TEXT_MAX], b[RB_RECORD_TEXT_MAX];

	life(f, f->ledger, 40);
	life(f, &f->mem->store, 40);
	record_text(f->ledger, 40, a, sizeof(a));
	record_text(&f->mem->store, 40, b, sizeof(b));
	assert_string_equal(a, b);
	/* one write per event: 7 begins, 6 ends, a grant */
	assert_int_equal(f->mem->job[0].saves, 14);
}

static void test_store_replayed_applies_change_nothing(void **state)
{
	fixture *f = *state;
	rb_store *st = &f->mem->store;
	rb_start_result res;
	mem_job *j;
	int saves;

	begin(f, st, 41, 0, "");
	end(st, 41, 1, 0, 1050);
	begin(f, st, 41, 1, CKPT);
	j = mem_find(f->mem, 41);
	saves = j->saves;
	res = begin(f, st, 41, 1, CKPT);   /* the batch step's, replayed */
	assert_true(res.duplicate);
	end(st, 41, 1, 3, 1200);
	end(st, 41, 1, 3, 1200);           /* the epilog's, replayed */
	assert_int_equal(j->saves, saves + 1);
	assert_int_equal(j->rec.budget.cur.end, RB_END_FAILED);
	assert_int_equal(j->rec.budget.cur.end_code, 3);
}

static void test_store_a_retried_apply_applies_once(void **state)
{
	fixture *f = *state;
	rb_store *st = &f->mem->store;
	rb_err err;
	mem_job *j;

	begin(f, st, 42, 0, "");
	end(st, 42, 0, 7, 1050);
	f->mem->conflicts = 1;
	begin(f, st, 42, 1, CKPT);
	f->mem->conflicts = 1;
	assert_int_equal(rb_lifecycle_grant_in(st, 42, 1, "root", &err), 0);
	j = mem_find(f->mem, 42);
	assert_int_equal(j->rec.budget.failures, 1);
	assert_int_equal(j->rec.budget.granted, 1);
	/* each step's lines once: start and report, then the grant */
	assert_int_equal(j->lines, 2 + 1 + 2 + 1);
	assert_int_equal(f->mem->calls, 2 + 2 + 2);
}

static void test_store_end_without_record_creates_nothing(void **state)
{
	fixture *f = *state;
	char log[256];
	struct stat st;
	rb_record rec;
	rb_err err;

	end(&f->mem->store, 43, 0, 0, 1);
	assert_int_equal(f->mem->n, 0);
	end(f->ledger, 43, 0, 0, 1);
	assert_int_equal(f->ledger->ops->load(f->ledger, 43, &rec, &err), 1);
	snprintf(log, sizeof(log), "%s/%s/043/43.log", f->dir, CLUSTER);
	assert_int_not_equal(lstat(log, &st), 0);
	assert_int_equal(rb_lifecycle_grant_in(&f->mem->store, 43, 1, "root",
					       &err), -1);
	assert_string_equal(err.msg, "job 43 has no record in memory");
}

static int count_line(const char *line, bool ok, void *ctx)
{
	(void)line;
	(void)ok;
	++*(int *)ctx;
	return 0;
}

/* The batch step records the start and what it handed out in one write:
 * one seq, the two event lines of before. */
static void test_store_begin_is_one_write(void **state)
{
	fixture *f = *state;
	rb_record rec;
	rb_err err;
	int lines = 0;

	begin(f, f->ledger, 44, 0, CKPT);
	assert_int_equal(f->ledger->ops->load(f->ledger, 44, &rec, &err), 0);
	assert_int_equal(rec.seq, 1);
	assert_int_equal(rec.budget.cur.phase, RB_PHASE_RUNNING);
	assert_string_equal(rec.budget.cur.checkpoint, CKPT);
	assert_int_equal(f->ledger->ops->history(f->ledger, 44, count_line,
						 &lines, &err), 0);
	assert_int_equal(lines, 2);
}

/* A handing the record cannot take (the attempt never started, or it
 * ended) is refused, naming the batch step. */
static void test_store_handing_out_needs_the_start(void **state)
{
	fixture *f = *state;
	rb_handout h = handout(3, CKPT);
	rb_start_result res;
	rb_record rec;
	rb_err err;

	assert_int_equal(rb_lifecycle_begin(f->ledger, f->cfg, 45, NULL, &h,
					    &res, &rec, &err), 0);
	assert_string_equal(res.report_err, "job 45 attempt 3 was not recorded at its start (batch step)");
	begin(f, &f->mem->store, 45, 3, "");
	end(&f->mem->store, 45, 3, 1, 1400);
	h.seq = 2; /* chosen on the record as its end left it */
	assert_int_equal(rb_lifecycle_begin(&f->mem->store, f->cfg, 45, NULL,
					    &h, &res, &rec, &err), 0);
	assert_string_equal(res.report_err, "job 45 attempt 3 already ended; not recording its phase");
}

/* What the batch step chooses the checkpoint on is the record its write
 * starts from: the preview of the start is the start written. */
static void test_store_the_preview_is_the_start_written(void **state)
{
	fixture *f = *state;
	static char a[RB_RECORD_TEXT_MAX], b[RB_RECORD_TEXT_MAX];
	rb_job_info j = job_info(46, 1);
	rb_start_result res;
	rb_record rec;
	rb_err err;

	begin(f, f->ledger, 46, 0, CKPT);
	end(f->ledger, 46, 0, 42, 1050);
	assert_int_equal(f->ledger->ops->load(f->ledger, 46, &rec, &err), 0);
	rb_lifecycle_preview(f->cfg, &j, true, &res, &rec);
	assert_int_equal(res.charge.kind, RB_CHARGE_FAILURE);
	rec.seq++;
	rec.updated = 0;
	assert_true(rb_record_format(&rec, a, sizeof(a)) > 0);
	begin(f, f->ledger, 46, 1, CKPT);   /* handed the one kept */
	record_text(f->ledger, 46, b, sizeof(b));
	assert_string_equal(a, b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_store_both_stores_keep_the_same_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_replayed_applies_change_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_a_retried_apply_applies_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_end_without_record_creates_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_begin_is_one_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_handing_out_needs_the_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_the_preview_is_the_start_written, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
