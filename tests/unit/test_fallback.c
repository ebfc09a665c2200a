/*
 * test_fallback.c - checkpoint fallback (docs/rule.md, "Checkpoint
 * fallback"): which file is marked bad and when, what the next attempt is
 * handed, and the record's optional fields. Real files in a temporary
 * directory; the ledger for the lifecycle test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "config.h"
#include "fallback.h"
#include "lifecycle.h"
#include "../lib/handing.h"
#include "record.h"

#define CLUSTER "testc"
#define BASE_SEC 1700000000

/* the directory first: fixture.h, ut_teardown_dir */
typedef struct {
	char dir[64];       /* work_dir; checkpoints in dir/ck */
	char ck[3][128];    /* ck-1 (oldest) .. ck-3 (newest), real paths */
	rb_record rec;
} fixture;

/* Write name with its mtime at BASE_SEC + age; its real path into out. */
static void write_ckpt(const char *dir, const char *name, int age,
		       const char *content, char *out, size_t outlen)
{
	char path[256];
	struct timespec ts[2] = { { BASE_SEC + age, 0 }, { BASE_SEC + age, 0 } };
	FILE *fp;

	snprintf(path, sizeof(path), "%s/ck/%s", dir, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(content, fp);
	fclose(fp);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	assert_non_null(realpath(path, out));
	(void)outlen;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	char sub[128];

	if (!f || ut_tmpdir(f->dir, sizeof(f->dir), "/tmp/rb-fallback-XXXXXX", 0700) < 0)
		return -1;
	snprintf(sub, sizeof(sub), "%s/ck", f->dir);
	if (mkdir(sub, 0755) < 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "ck-%d", i + 1);
		write_ckpt(f->dir, name, i * 10, name, f->ck[i],
			   sizeof(f->ck[i]));
	}
	rb_record_init(&f->rec);
	f->rec.job_id = 5;
	rb_strlcpy(f->rec.work_dir, f->dir, sizeof(f->rec.work_dir));
	rb_strlcpy(f->rec.checkpoint_dir, "ck", sizeof(f->rec.checkpoint_dir));
	*state = f;
	return 0;
}

static rb_limits limits(int m, int r, rb_accounting acc)
{
	rb_limits l = { .max_failures = m, .restore_retry_num = r,
			.accounting = acc, .max_interruptions = RB_UNLIMITED };
	return l;
}

/* Attempt n starts (charging n - 1), with fallback on; true if the charge
 * marked n - 1's checkpoint bad. */
static bool start_attempt(fixture *f, int64_t n, const rb_limits *l)
{
	rb_fallback_prev prev;
	rb_charge c;

	rb_fallback_before_start(&f->rec, &prev);
	rb_engine_start(&f->rec.budget, n, l, BASE_SEC + n, &c, NULL, 0);
	return rb_fallback_after_charge(&f->rec, &prev, &c, l, true);
}

/* The batch step hands attempt n the checkpoint chosen; it fails its
 * restore (RequeueExit). */
static void handed_and_failed(fixture *f, int64_t n)
{
	rb_fallback_choice ch;
	rb_handed h;
	rb_err err;

	assert_true(rb_fallback_choose(&f->rec, "ck", "ck-*", "latest", &ch,
				       &err) >= 0);
	h.checkpoint = ch.path;
	h.id = ch.id;
	h.from = ch.from;
	rb_engine_set_phase(&f->rec.budget, n,
			    rb_engine_start_phase(n, ch.path), ch.path);
	rb_fallback_record_handed(&f->rec, &h);
	rb_engine_end(&f->rec.budget, n, RB_END_FAILED, 75, BASE_SEC + n);
}

/* Attempt 0 ran and was preempted; the job had written its checkpoints. */
static void first_attempt_preempted(fixture *f, const rb_limits *l)
{
	start_attempt(f, 0, l);
	handed_and_failed(f, 0);
	f->rec.budget.cur.end = RB_END_INTERRUPTED;
}

/* Attempt 0 preempted, attempt 1 fails its restore of the newest. */
static void newest_failed_once(fixture *f, const rb_limits *l)
{
	first_attempt_preempted(f, l);
	start_attempt(f, 1, l);
	handed_and_failed(f, 1);
}

static bool is_bad(fixture *f, const char *path)
{
	rb_bad_list bad;
	rb_file_id id;

	rb_fallback_bad_list(&f->rec, &bad);
	if (rb_file_id_of(path, &id) < 0)
		return false;
	return rb_ckpt_marked(&(rb_ckpt_marks){ bad.mark, bad.n }, path, &id);
}

static void test_fallback_marks_bad_after_R_failed_restores(void **state)
{
	fixture *f = *state;
	rb_limits l = limits(3, 2, RB_ACCOUNTING_GROUPED);

	first_attempt_preempted(f, &l);
	assert_false(start_attempt(f, 1, &l));
	handed_and_failed(f, 1);
	assert_string_equal(f->rec.budget.cur.checkpoint, f->ck[2]);
	/* one failed restore of ck-3: not a group yet */
	assert_false(start_attempt(f, 2, &l));
	assert_false(is_bad(f, f->ck[2]));
	handed_and_failed(f, 2);
	/* the second: R = 2 charged as F += 1, and ck-3 is bad */
	assert_true(start_attempt(f, 3, &l));
	assert_int_equal(f->rec.budget.failures, 1);
	assert_true(is_bad(f, f->ck[2]));
	assert_false(is_bad(f, f->ck[1]));
	/* nothing on disk changed */
	assert_int_equal(access(f->ck[2], F_OK), 0);
}

static void test_fallback_hands_newest_not_bad(void **state)
{
	fixture *f = *state;
	rb_limits l = limits(3, 1, RB_ACCOUNTING_GROUPED);
	char link[256];

	snprintf(link, sizeof(link), "%s/ck/latest", f->dir);
	/* `latest` names the bad one: it is passed over too */
	assert_int_equal(symlink("ck-3", link), 0);
	newest_failed_once(f, &l);
	assert_true(start_attempt(f, 2, &l));
	handed_and_failed(f, 2);
	assert_string_equal(f->rec.budget.cur.checkpoint, f->ck[1]);
	assert_string_equal(f->rec.fallback.from, f->ck[2]);
	assert_int_equal(f->rec.fallback.fallbacks, 1);
	/* the budget is the engine's: F counted as without fallback */
	assert_int_equal(f->rec.budget.failures, 1);
	/* ck-2 fails too: ck-1 next, still from the bad newest ck-3 */
	assert_true(start_attempt(f, 3, &l));
	handed_and_failed(f, 3);
	assert_string_equal(f->rec.budget.cur.checkpoint, f->ck[0]);
	assert_string_equal(f->rec.fallback.from, f->ck[2]);
}

static void test_fallback_rewritten_file_is_new(void **state)
{
	fixture *f = *state;
	rb_limits l = limits(3, 1, RB_ACCOUNTING_GROUPED);
	char again[128];

	newest_failed_once(f, &l);
	assert_true(start_attempt(f, 2, &l));
	assert_true(is_bad(f, f->ck[2]));
	/* the job writes ck-3 again: same name, another file */
	write_ckpt(f->dir, "ck-3", 50, "written again, longer", again,
		   sizeof(again));
	assert_string_equal(again, f->ck[2]);
	assert_false(is_bad(f, f->ck[2]));
	handed_and_failed(f, 2);
	assert_string_equal(f->rec.budget.cur.checkpoint, f->ck[2]);
	assert_string_equal(f->rec.fallback.from, "");
}

static void test_fallback_none_left_keeps_last(void **state)
{
	fixture *f = *state;
	rb_limits l = limits(5, 1, RB_ACCOUNTING_GROUPED);

	first_attempt_preempted(f, &l);
	for (int64_t n = 1; n <= 3; n++) {
		start_attempt(f, n, &l);
		handed_and_failed(f, n);
		assert_string_equal(f->rec.budget.cur.checkpoint,
				    f->ck[3 - n]);
	}
	assert_true(start_attempt(f, 4, &l));
	assert_true(is_bad(f, f->ck[0]));
	handed_and_failed(f, 4);
	/* every one is bad: the last one handed out, never none */
	assert_string_equal(f->rec.budget.cur.checkpoint, f->ck[0]);
	assert_string_equal(f->rec.fallback.from, f->ck[2]);
	/* and the bound holds: M = 5, R = 1 */
	for (int64_t n = 5; n <= 6; n++) {
		start_attempt(f, n, &l);
		handed_and_failed(f, n);
	}
	assert_false(f->rec.budget.cur.refused);
	start_attempt(f, 7, &l);
	assert_true(f->rec.budget.cur.refused);
}

static void test_fallback_off_by_default(void **state)
{
	fixture *f = *state;
	rb_config *cfg = rb_config_defaults();
	rb_limits l = limits(3, 1, RB_ACCOUNTING_GROUPED);
	rb_fallback_prev prev;
	rb_charge c;
	char text[RB_RECORD_TEXT_MAX];

	assert_non_null(cfg);
	assert_false(cfg->checkpoint_fallback);
	rb_config_free(cfg);
	newest_failed_once(f, &l);
	rb_fallback_before_start(&f->rec, &prev);
	rb_engine_start(&f->rec.budget, 2, &l, BASE_SEC, &c, NULL, 0);
	assert_int_equal(c.kind, RB_CHARGE_RESTORE_CONVERTED);
	assert_false(rb_fallback_after_charge(&f->rec, &prev, &c, &l, false));
	assert_string_equal(f->rec.fallback.bad, "");
	/* off: the record is written as it always was */
	memset(&f->rec.fallback, 0, sizeof(f->rec.fallback));
	assert_true(rb_record_format(&f->rec, text, sizeof(text)) > 0);
	assert_null(strstr(text, "fallback."));
}

static void test_fallback_ray_mode(void **state)
{
	fixture *f = *state;
	rb_limits l = limits(3, 1, RB_ACCOUNTING_RAY);

	newest_failed_once(f, &l);
	/* the first R failed restores are free: nothing marked */
	assert_false(start_attempt(f, 2, &l));
	assert_int_equal(f->rec.budget.failures, 0);
	handed_and_failed(f, 2);
	/* the next one is a failure (RB_CHARGE_RESTORE_OVER): marked */
	assert_true(start_attempt(f, 3, &l));
	assert_int_equal(f->rec.budget.failures, 1);
	assert_true(is_bad(f, f->ck[2]));
	handed_and_failed(f, 3);
	assert_string_equal(f->rec.budget.cur.checkpoint, f->ck[1]);
	/* no free restores left: ck-2's first failed restore marks it */
	assert_true(start_attempt(f, 4, &l));
	assert_true(is_bad(f, f->ck[1]));
}

static void test_fallback_group_of_two_files_marks_none(void **state)
{
	fixture *f = *state;
	rb_limits l = limits(3, 2, RB_ACCOUNTING_GROUPED);
	char again[128];

	newest_failed_once(f, &l);
	write_ckpt(f->dir, "ck-3", 50, "rewritten", again, sizeof(again));
	start_attempt(f, 2, &l);
	handed_and_failed(f, 2);
	/* R failed restores, but not of the same file */
	assert_false(start_attempt(f, 3, &l));
	assert_int_equal(f->rec.budget.failures, 1);
	assert_string_equal(f->rec.fallback.bad, "");
}

static void test_fallback_bad_list_keeps_16_oldest_dropped(void **state)
{
	fixture *f = *state;
	rb_bad_list bad;
	char path[64];

	for (int i = 0; i < RB_FALLBACK_BAD_MAX + 3; i++) {
		rb_file_id id = { 1, (uint64_t)i + 1, 10, 20 };

		snprintf(path, sizeof(path), "/c/ck %d", i);
		assert_int_equal(rb_fallback_mark_bad(&f->rec, path, &id), 1);
		assert_int_equal(rb_fallback_mark_bad(&f->rec, path, &id), 0);
	}
	rb_fallback_bad_list(&f->rec, &bad);
	assert_int_equal(bad.n, RB_FALLBACK_BAD_MAX);
	assert_string_equal(bad.mark[0].path, "/c/ck 3");
	assert_string_equal(bad.mark[RB_FALLBACK_BAD_MAX - 1].path, "/c/ck 18");
	assert_int_equal(bad.mark[0].id.ino, 4);
}

static void test_fallback_fields_are_optional_in_the_record(void **state)
{
	fixture *f = *state;
	rb_file_id id = { 2049, 77, 12, 1700000000123456789LL };
	char text[RB_RECORD_TEXT_MAX], *line;
	rb_record back;
	rb_err err;
	ssize_t n;

	/* a record without them (every record before) parses */
	n = rb_record_format(&f->rec, text, sizeof(text));
	assert_true(n > 0);
	assert_int_equal(rb_record_parse(text, (size_t)n, &back, &err), 0);
	assert_string_equal(back.fallback.bad, "");
	/* with them, they round-trip */
	rb_fallback_mark_bad(&f->rec, "/c/a b=c", &id);
	rb_file_id_format(&id, f->rec.fallback.cur_id,
			  sizeof(f->rec.fallback.cur_id));
	f->rec.fallback.fallbacks = 2;
	n = rb_record_format(&f->rec, text, sizeof(text));
	assert_int_equal(rb_record_parse(text, (size_t)n, &back, &err), 0);
	assert_memory_equal(&back.fallback, &f->rec.fallback,
			    sizeof(back.fallback));
	/* never written at its default: such a line is refused */
	line = strstr(text, "fallback.fallbacks=2");
	assert_non_null(line);
	line[sizeof("fallback.fallbacks=") - 1] = '0';
	assert_int_equal(rb_record_parse(text, (size_t)n, &back, &err), -1);
}

/* Through the ledger: the prolog marks, the batch step's report records. */
static void test_fallback_lifecycle_marks_bad_in_the_ledger(void **state)
{
	fixture *f = *state;
	rb_config *cfg = rb_config_defaults();
	rb_job_info j = { .cluster = CLUSTER, .job_id = 9, .uid = 1000,
			  .user = "u", .work_dir = f->dir,
			  .checkpoint_dir = "ck" };
	rb_handed h = { .checkpoint = f->ck[2] };
	rb_start_result res;
	rb_record rec;
	rb_err err;

	free(cfg->state_dir);
	cfg->state_dir = strdup(f->dir);
	chmod(f->dir, 0755);
	cfg->restore_retry_num = 1;
	cfg->checkpoint_fallback = true;
	assert_int_equal(rb_file_id_of(f->ck[2], &h.id), 0);
	for (j.attempt = 0; j.attempt <= 2; j.attempt++) {
		j.now = BASE_SEC + j.attempt;
		assert_int_equal(rb_lifecycle_start(cfg, &j, &res, &rec, &err), 0);
		if (j.attempt == 2)
			break;
		assert_int_equal(rbt_hand(cfg, CLUSTER, 9,
							    j.attempt,
							    j.attempt ? RB_PHASE_RESTORING : RB_PHASE_RUNNING,
							    &h, &err), 0);
		assert_int_equal(rb_lifecycle_epilog(cfg, CLUSTER, 9, j.attempt + 1,
						     0, 0, NULL, j.now, &err), 0);
	}
	assert_int_equal(rec.budget.failures, 1);
	f->rec = rec;
	assert_true(is_bad(f, f->ck[2]));
	assert_string_equal(rec.fallback.cur_id, "");
	rb_config_free(cfg);
}

/* checkpoint.fallback is read with the group's other keys; a wrong type
 * names the file and line. */
static void test_fallback_config_key(void **state)
{
	fixture *f = *state;
	char path[128];
	rb_config *cfg = NULL;
	rb_err err;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/rb.conf", f->dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("checkpoint = { latest = \"latest\"; fallback = true; };\n", fp);
	fclose(fp);
	assert_int_equal(rb_config_load(path, &cfg, &err), 0);
	assert_true(cfg->checkpoint_fallback);
	rb_config_free(cfg);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("\ncheckpoint = { fallback = 1; };\n", fp);
	fclose(fp);
	assert_int_equal(rb_config_load(path, &cfg, &err), -1);
	assert_non_null(strstr(err.msg, "rb.conf:2:"));
	assert_non_null(strstr(err.msg, "checkpoint.fallback"));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, ut_teardown_dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fallback_marks_bad_after_R_failed_restores),
		T(test_fallback_hands_newest_not_bad),
		T(test_fallback_rewritten_file_is_new),
		T(test_fallback_none_left_keeps_last),
		T(test_fallback_off_by_default),
		T(test_fallback_ray_mode),
		T(test_fallback_group_of_two_files_marks_none),
		T(test_fallback_bad_list_keeps_16_oldest_dropped),
		T(test_fallback_fields_are_optional_in_the_record),
		T(test_fallback_lifecycle_marks_bad_in_the_ledger),
		T(test_fallback_config_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
