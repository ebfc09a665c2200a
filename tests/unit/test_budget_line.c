/*
 * test_budget_line.c - store = "controller": the budget line's codec
 * (store/budget_line.h) and the line store behind the seam (seam.h), on a
 * comment kept in memory where the plugin has the controller's
 * (docs/stores.md).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "lifecycle.h"
#include "seam.h"
#include "budget_line.h"
#include "fixture.h"

#define CLUSTER "testc"
#define CKPT "/home/u/ckpt/checkpoint-3"
#define SITE "site: project 42\n" RB_PREFIX "refused: an older reason"

/* --- the codec ------------------------------------------------------------- */

static void full_record(rb_record *rec)
{
	rb_budget *b = &rec->budget;

	rb_record_init(rec);
	rec->seq = 9;
	rec->created = 1000;
	rec->updated = 1900;
	b->failures = 2;
	b->restore_failures = 1;
	b->granted = 3;
	b->last_charged = 4;
	b->interruptions = 7;
	b->restore_failures_total = 5;
	b->failures_total = 6;
	b->prev_end = RB_END_FAILED;
	b->prev_end_code = -2;
	b->fatal_code = 3;
	b->fatal_exits = 1;
	b->interruption_cap_refusals = 2;
	rb_strlcpy(b->checkpoint, "/home/u/a dir=x/ckpt\n%7", sizeof(b->checkpoint));
	b->cur.attempt = 5;
	b->cur.phase = RB_PHASE_RESTORING;
	b->cur.confirmed = RB_CONFIRM_ACK;
	b->cur.end = RB_END_FAILED;
	b->cur.end_code = 42;
	b->cur.start_time = 1500;
	b->cur.end_time = 1600;
	b->cur.limits = (rb_limits){ RB_UNLIMITED, 3, 60, RB_ACCOUNTING_RAY,
				     true, 8 };
	rb_strlcpy(b->cur.checkpoint, "/home/u/older", sizeof(b->cur.checkpoint));
	rb_strlcpy(rec->fallback.cur_id, "1:2:3:4", sizeof(rec->fallback.cur_id));
	rb_strlcpy(rec->fallback.bad, "1:2:3:5:%2Fx", sizeof(rec->fallback.bad));
	rec->fallback.streak = 1;
	rec->fallback.fallbacks = 2;
}

static void test_budget_line_round_trips_every_field(void **state)
{
	char line[RB_BUDGET_LINE_MAX + 1];
	rb_record a, b;
	rb_err err;
	ssize_t n;

	(void)state;
	full_record(&a);
	n = rb_budget_line_format(&a, line, sizeof(line), &err);
	assert_true(n > 0);
	assert_null(strchr(line, '\n'));
	assert_int_equal(strncmp(line, RB_BUDGET_TAG "v1 seq=9 ", 32), 0);
	rb_record_init(&b);
	rb_strlcpy(b.user, "kept", sizeof(b.user));
	assert_int_equal(rb_budget_line_parse(line, (size_t)n, &b, &err), 0);
	rb_strlcpy(a.user, "kept", sizeof(a.user));
	assert_memory_equal(&a, &b, sizeof(a));
}

static void test_budget_line_is_small(void **state)
{
	char line[RB_BUDGET_LINE_MAX + 1];
	rb_record rec;
	rb_err err;
	ssize_t n;

	(void)state;
	rb_record_init(&rec);
	rec.budget.cur.attempt = 12;
	rb_strlcpy(rec.budget.checkpoint, CKPT, sizeof(rec.budget.checkpoint));
	rb_strlcpy(rec.budget.cur.checkpoint, CKPT, sizeof(rec.budget.cur.checkpoint));
	n = rb_budget_line_format(&rec, line, sizeof(line), &err);
	/* DESIGN 14: well under 1 KB; the checkpoint handed out is the
	 * newest, written once ("cc==") */
	assert_true(n > 0 && n < 400);
	assert_non_null(strstr(line, " cc== "));
}

static void test_budget_line_too_long_is_refused(void **state)
{
	char line[RB_BUDGET_LINE_MAX + 1];
	rb_record rec;
	rb_err err;

	(void)state;
	rb_record_init(&rec);
	memset(rec.budget.checkpoint, 'x', 2000);
	memset(rec.budget.cur.checkpoint, 'y', 2000);
	assert_int_equal(rb_budget_line_format(&rec, line, sizeof(line), &err), -1);
	assert_non_null(strstr(err.msg, "would pass 3000 bytes"));
}

/* line with the first `from` replaced by `to`, its checksum made right
 * again when `resum`. */
static size_t edited(const char *from, const char *to, bool resum, char *out)
{
	char line[RB_BUDGET_LINE_MAX + 1], *p;
	rb_record rec;
	rb_err err;
	size_t n;

	full_record(&rec);
	assert_true(rb_budget_line_format(&rec, line, sizeof(line), &err) > 0);
	p = strstr(line, from);
	assert_non_null(p);
	n = (size_t)(p - line);
	memcpy(out, line, n);
	strcpy(out + n, to);
	strcat(out, p + strlen(from));
	n = strlen(out);
	if (resum) {
		size_t tag = strlen(RB_BUDGET_TAG), body = n - 16;

		rb_fmt_hex64(rb_checksum(out + tag, body - tag), out + body);
	}
	return n;
}

static void parse_fails(const char *from, const char *to, bool resum,
			const char *why)
{
	char line[2 * RB_BUDGET_LINE_MAX];
	size_t n = edited(from, to, resum, line);
	rb_record rec;
	rb_err err;

	rb_record_init(&rec);
	rec.budget.failures = 77;
	assert_int_equal(rb_budget_line_parse(line, n, &rec, &err), -1);
	if (!strstr(err.msg, why))
		fail_msg("'%s' -> '%s': got \"%s\", want \"%s\"", from, to,
			 err.msg, why);
	assert_int_equal(rec.budget.failures, 77); /* untouched */
}

static void test_budget_line_strict(void **state)
{
	(void)state;
	parse_fails(" F=2 ", " F=3 ", false, "checksum mismatch");
	parse_fails(" F=2 ", " F=-1 ", true, "bad value for 'F'");
	parse_fails(" F=2 ", " F=02 ", true, "bad value for 'F'");
	parse_fails(" F=2 ", "  F=2 ", true, "two spaces");
	parse_fails(" F=2 ", " Q=2 ", true, "key 'F' missing");
	parse_fails(" F=2 r=1 ", " r=1 F=2 ", true, "key 'F' missing");
	parse_fails(" fn=1 ", " fn=1 zz=1 ", true, "unknown or repeated key 'zz'");
	parse_fails(" fn=1 ", " fn=0 ", true, "bad value for 'fn'");
	parse_fails(" ph=2 ", " ph=4 ", true, "bad value for 'ph'");
	parse_fails("v1 ", "v2 ", true, "version 2 (this plugin reads 1: a newer plugin");
	parse_fails(" sum=", " sun=", false, "no checksum");
	parse_fails(RB_BUDGET_TAG, "restore_budget: ", false, "not a budget line");
}

static void test_budget_line_found_among_the_sites_lines(void **state)
{
	const char *at;
	size_t n;

	(void)state;
	assert_int_equal(rb_budget_line_find(SITE, &at, &n), 0);
	assert_int_equal(rb_budget_line_find(SITE "\n" RB_BUDGET_TAG "v1 x\nmore",
					     &at, &n), 1);
	assert_int_equal(n, strlen(RB_BUDGET_TAG "v1 x"));
	assert_int_equal(rb_budget_line_find(RB_BUDGET_TAG "a\n" RB_BUDGET_TAG "b",
					     &at, &n), -1);
}

/* Writing the reason keeps the budget line and the reverse (DESIGN 14). */
static void test_budget_line_and_reason_line_keep_each_other(void **state)
{
	char out[RB_ADMIN_COMMENT_MAX + 1], out2[RB_ADMIN_COMMENT_MAX + 1];
	char reason[RB_ADMIN_LINE_MAX + 1];

	(void)state;
	assert_int_equal(rb_admin_comment_merge_tagged(SITE, RB_BUDGET_TAG,
						       RB_BUDGET_TAG "v1 A",
						       out, sizeof(out)), 0);
	assert_string_equal(out, SITE "\n" RB_BUDGET_TAG "v1 A");
	rb_admin_comment_line("held", "spent", reason, sizeof(reason));
	assert_int_equal(rb_admin_comment_merge(out, reason, out2, sizeof(out2)), 0);
	assert_string_equal(out2, "site: project 42\n" RB_PREFIX "held: spent\n"
			    RB_BUDGET_TAG "v1 A");
	assert_int_equal(rb_admin_comment_merge_tagged(out2, RB_BUDGET_TAG,
						       RB_BUDGET_TAG "v1 B",
						       out, sizeof(out)), 0);
	assert_string_equal(out, "site: project 42\n" RB_PREFIX "held: spent\n"
			    RB_BUDGET_TAG "v1 B");
}

/* --- the line store on a comment in memory ------------------------------------ */

typedef struct {
	char comment[RB_ADMIN_COMMENT_MAX + 1];
	int reads, writes;
	bool refuse_writes;  /* as the controller, once the job is COMPLETING */
} mem_comment;

static int mem_read(void *ctx, char *out, size_t len, rb_err *err)
{
	mem_comment *m = ctx;

	(void)err;
	m->reads++;
	rb_strlcpy(out, m->comment, len);
	return 0;
}

static int mem_write(void *ctx, const char *comment, rb_err *err)
{
	mem_comment *m = ctx;

	if (m->refuse_writes)
		return rb_err_set(err, "Job has already finished");
	m->writes++;
	rb_strlcpy(m->comment, comment, sizeof(m->comment));
	return 0;
}

typedef struct {
	char dir[64];
	rb_config *cfg;
	rb_store_dir d;
	rb_store *ledger;
	rb_record ident;
	mem_comment mc;
	rb_store_line line;
	rb_store *ctl;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	if (!f || ut_tmpdir(f->dir, sizeof(f->dir), "/tmp/rb-line-XXXXXX", 0755) < 0)
		return -1;
	f->cfg = ut_config_in(f->dir);
	f->ledger = rb_store_dir_init(&f->d, f->cfg->state_dir, CLUSTER);
	rb_strlcpy(f->mc.comment, SITE, sizeof(f->mc.comment));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	int rc = ut_rmtree(f->dir);

	rb_config_free(f->cfg);
	free(f);
	return rc;
}

/* The line store for job id, its identity as the ledger records it. */
static rb_store *line_store(fixture *f, uint32_t id)
{
	rb_comment_io io = { mem_read, mem_write, &f->mc };
	rb_job_info j = ut_job_info(CLUSTER, id, 0);

	rb_record_init(&f->ident);
	rb_strlcpy(f->ident.cluster, CLUSTER, sizeof(f->ident.cluster));
	f->ident.job_id = id;
	f->ident.uid = j.uid;
	f->ident.gid = j.gid;
	rb_strlcpy(f->ident.user, j.user, sizeof(f->ident.user));
	rb_strlcpy(f->ident.partition, j.partition, sizeof(f->ident.partition));
	rb_strlcpy(f->ident.account, j.account, sizeof(f->ident.account));
	rb_strlcpy(f->ident.work_dir, j.work_dir, sizeof(f->ident.work_dir));
	rb_strlcpy(f->ident.checkpoint_dir, j.checkpoint_dir,
		   sizeof(f->ident.checkpoint_dir));
	f->ctl = rb_store_line_init(&f->line, &f->ident, &io);
	return f->ctl;
}

/* The batch step's one write for attempt n, handed ckpt; a new callback
 * (the comment is read afresh). */
static rb_start_result begin(fixture *f, rb_store *st, uint32_t id, int64_t n,
			     const char *ckpt)
{
	rb_job_info j = ut_job_info(CLUSTER, id, n);
	rb_handout h = { n, rb_engine_start_phase(n, ckpt), { ckpt, { 0 }, NULL }, 0 };
	rb_start_result res;
	rb_record rec;
	rb_err err;

	if (st == f->ctl)
		rb_store_line_forget(&f->line);
	if (st->ops->load(st, id, &rec, &err) == 0)
		h.seq = rec.seq;
	assert_int_equal(rb_lifecycle_begin(st, f->cfg, id, &j, &h, &res, &rec,
					    &err), 0);
	return res;
}

static void end(fixture *f, rb_store *st, uint32_t id, int64_t count,
		int code, int64_t now)
{
	rb_end_info e = { count, code, 0, NULL, NULL, now };
	rb_err err;

	if (st == f->ctl)
		rb_store_line_forget(&f->line);
	assert_int_equal(rb_lifecycle_end_in(st, id, &e, &err), 0);
}

/* Fresh, preempted, a corrupt checkpoint to exhaustion, granted, run. */
static void life(fixture *f, rb_store *st, uint32_t id)
{
	rb_err err;

	begin(f, st, id, 0, "");
	end(f, st, id, 1, 0, 1050);
	for (int64_t n = 1; n <= 4; n++) {
		begin(f, st, id, n, CKPT);
		end(f, st, id, n, 42, 1000 + n * 100 + 5);
	}
	assert_int_equal(begin(f, st, id, 5, CKPT).decision, RB_DECISION_REFUSE);
	end(f, st, id, 5, 1, 1505);
	if (st == f->ctl)
		rb_store_line_forget(&f->line);
	assert_int_equal(rb_lifecycle_grant_in(st, id, 2, "root", &err), 0);
	assert_int_equal(begin(f, st, id, 6, CKPT).decision, RB_DECISION_RUN);
}

static void record_text(rb_store *st, uint32_t id, char *buf, size_t len)
{
	rb_record rec;
	rb_err err;

	assert_int_equal(st->ops->load(st, id, &rec, &err), 0);
	rec.updated = rec.created = 0;
	rec.submission[0] = '\0';
	assert_true(rb_record_format(&rec, buf, len) > 0);
}

/* The rule is the store's no matter: the controller's line ends as the
 * shared directory's record does, and the site's lines stay as they were. */
static void test_line_store_keeps_the_same_record_as_the_ledger(void **state)
{
	fixture *f = *state;
	static char a[RB_RECORD_TEXT_MAX], b[RB_RECORD_TEXT_MAX];

	life(f, f->ledger, 50);
	life(f, line_store(f, 50), 50);
	record_text(f->ledger, 50, a, sizeof(a));
	rb_store_line_forget(&f->line);
	record_text(f->ctl, 50, b, sizeof(b));
	assert_string_equal(a, b);
	assert_int_equal(strncmp(f->mc.comment, SITE "\n" RB_BUDGET_TAG,
				 strlen(SITE "\n" RB_BUDGET_TAG)), 0);
	/* one write per event (7 begins, 6 ends, a grant), one read each */
	assert_int_equal(f->mc.writes, 14);
	assert_int_equal(f->mc.reads, 14 + 1);
}

static void test_line_store_replayed_apply_writes_nothing(void **state)
{
	fixture *f = *state;
	rb_store *st = line_store(f, 51);
	int writes;

	begin(f, st, 51, 0, "");
	writes = f->mc.writes;
	assert_true(begin(f, st, 51, 0, "").duplicate);
	assert_int_equal(f->mc.writes, writes);
	end(f, st, 51, 0, 3, 1050);
	end(f, st, 51, 0, 3, 1050);
	assert_int_equal(f->mc.writes, writes + 1);
}

/* The controller refuses the end's write once the job is COMPLETING (it
 * was requeued or preempted): no end is on record, and the next start
 * charges the attempt as interrupted (docs/stores.md). */
static void test_line_store_a_refused_end_is_an_interruption(void **state)
{
	fixture *f = *state;
	rb_store *st = line_store(f, 52);
	rb_end_info e = { 1, 143, 0, NULL, NULL, 1150 };
	rb_start_result res;
	rb_err err;

	begin(f, st, 52, 0, "");
	end(f, st, 52, 0, 0, 1050);
	begin(f, st, 52, 1, CKPT);
	f->mc.refuse_writes = true;
	rb_store_line_forget(&f->line);
	assert_int_equal(rb_lifecycle_end_in(st, 52, &e, &err), -1);
	assert_string_equal(err.msg, "Job has already finished");
	f->mc.refuse_writes = false;
	res = begin(f, st, 52, 2, CKPT);
	assert_int_equal(res.charge.attempt, 1);
	assert_int_equal(res.charge.end, RB_END_INTERRUPTED);
	assert_int_equal(res.charge.failures_after, 0);
}

/* No epilog ends a requeued attempt in this store: the next start ends it
 * at the requeue's time (SubmitTime), so restore_timeout confirms it. */
static void test_line_store_restore_timeout_confirms_a_requeued_attempt(void **state)
{
	fixture *f = *state;
	rb_store *st = line_store(f, 55);
	rb_job_info j = ut_job_info(CLUSTER, 55, 2);
	rb_handout h = { 2, RB_PHASE_RESTORING, { CKPT, { 0 }, NULL }, 0 };
	rb_start_result res;
	rb_record rec;
	rb_err err;

	f->cfg->restore_timeout = 60;
	begin(f, st, 55, 0, "");
	end(f, st, 55, 0, 0, 1050);
	begin(f, st, 55, 1, CKPT);          /* starts at 1100 */
	j.requeued_at = 1100 + 59;          /* too early: a failed restore */
	rb_store_line_forget(&f->line);
	assert_int_equal(rb_lifecycle_begin(st, f->cfg, 55, &j, &h, &res, &rec, &err), 0);
	assert_int_equal(res.charge.restore_failures_after, 1);
	assert_int_equal(rec.budget.prev_end, RB_END_INTERRUPTED);
	j = ut_job_info(CLUSTER, 55, 3);
	j.requeued_at = 1200 + 60;          /* attempt 2 ran 60 s: confirmed */
	h.attempt = 3;
	rb_store_line_forget(&f->line);
	assert_int_equal(rb_lifecycle_begin(st, f->cfg, 55, &j, &h, &res, &rec, &err), 0);
	assert_int_equal(res.charge.restore_failures_after, 0);
	assert_int_equal(res.charge.kind, RB_CHARGE_NONE);
}

static void test_line_store_refuses_a_broken_line(void **state)
{
	fixture *f = *state;
	rb_store *st = line_store(f, 53);
	rb_record rec;
	rb_err err;

	strcat(f->mc.comment, "\n" RB_BUDGET_TAG "v1 seq=1 F=x sum=0");
	assert_int_equal(st->ops->load(st, 53, &rec, &err), -1);
	assert_non_null(strstr(err.msg, "job 53: AdminComment: budget line:"));
	assert_int_equal(st->ops->load(st, 54, &rec, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_line_round_trips_every_field),
		cmocka_unit_test(test_budget_line_is_small),
		cmocka_unit_test(test_budget_line_too_long_is_refused),
		cmocka_unit_test(test_budget_line_strict),
		cmocka_unit_test(test_budget_line_found_among_the_sites_lines),
		cmocka_unit_test(test_budget_line_and_reason_line_keep_each_other),
		cmocka_unit_test_setup_teardown(test_line_store_keeps_the_same_record_as_the_ledger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_store_replayed_apply_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_store_a_refused_end_is_an_interruption, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_store_refuses_a_broken_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_store_restore_timeout_confirms_a_requeued_attempt, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
