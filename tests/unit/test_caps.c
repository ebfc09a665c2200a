/*
 * test_caps.c - the cap rules (docs/rule.md, "Limits"; plugin/config/caps.h):
 * one table, judged by rb_cap_judge, and the same verdict for one value at
 * the three places that apply it: validating the config file, clamping a
 * job's values at run time and refusing them at sbatch.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "caps.h"
#include "config.h"
#include "fixture.h"

typedef ut_cfg_fixture fixture;

static int setup(void **state)
{
	return ut_cfg_setup(state);
}

static int teardown(void **state)
{
	return ut_cfg_teardown(state);
}

/* Write text to a fresh config file and load it: 0 or -1 as
 * rb_config_load; *out NULL when not wanted. */
static int load_text(fixture *f, const char *text, rb_config **out)
{
	rb_config *cfg = NULL;
	rb_err err = { "" };
	size_t len = strlen(text);
	int fd, rc;

	if (f->path[0])
		unlink(f->path);
	snprintf(f->path, sizeof(f->path), "%s/rb.conf.XXXXXX", f->dir);
	fd = mkstemp(f->path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	rc = rb_config_load(f->path, &cfg, &err);
	if (out)
		*out = cfg;
	else
		rb_config_free(cfg);
	return rc;
}

/* What each of the three places did with one value v of key. */
typedef struct {
	bool validated;  /* a partition's key = v in the file is accepted */
	bool refused;    /* sbatch refuses the job option = v */
	int clamped;     /* values rb_config_resolve clamped */
	int used;        /* the value in force after the clamp */
} three_places;

/* Judge v of key at the three places, the caps and accounting given by
 * base (a config text without partitions). */
static rb_cap_judgement judge_everywhere(fixture *f, const char *base,
					 rb_cap_key key, int v,
					 three_places *t)
{
	char text[512], warn[RB_ERR_MAX];
	rb_overrides job;
	rb_config *cfg = NULL;
	rb_err err = { "" };
	rb_limits l;
	rb_cap_judgement j;

	assert_int_equal(load_text(f, base, &cfg), 0);
	memset(&job, 0, sizeof(job));
	rb_cap_set(&job, key, v);
	t->refused = rb_config_check_caps(cfg, &job, &err) < 0;
	t->clamped = rb_config_resolve(cfg, NULL, NULL, &job, &l, warn,
				       sizeof(warn));
	t->used = *rb_cap_limit(&l, key);
	j = rb_cap_judge(cfg, key, v);
	rb_config_free(cfg);
	snprintf(text, sizeof(text), "%s\npartitions = { p = { %s = %d; }; };\n",
		 base, rb_cap_rule_of(key)->config_key, v);
	t->validated = load_text(f, text, NULL) == 0;
	return j;
}

typedef struct {
	int v;
	rb_cap_verdict verdict;
	int fit;
} case_row;

/* Every row: the judge's verdict and fit as stated, and the three places
 * agreeing with it (accepted as is, or refused, and clamped to the fit). */
static void same_at_three_places(fixture *f, const char *base,
				 rb_cap_key key, const case_row *rows,
				 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		three_places t;
		rb_cap_judgement j = judge_everywhere(f, base, key, rows[i].v,
						      &t);
		bool fits = rows[i].verdict == RB_CAP_FITS;

		print_message("%s = %d\n", rb_cap_rule_of(key)->config_key,
			      rows[i].v);
		assert_int_equal(j.verdict, rows[i].verdict);
		assert_int_equal(j.fit, rows[i].fit);
		assert_int_equal(t.validated, fits);
		assert_int_equal(t.refused, !fits);
		assert_int_equal(t.clamped, fits ? 0 : 1);
		assert_int_equal(t.used, rows[i].fit);
	}
}

#define ROWS(a) (a), sizeof(a) / sizeof((a)[0])

static void test_cap_rule_max_failures_same_at_validate_clamp_refuse(void **state)
{
	static const case_row capped[] = {
		{ -2, RB_CAP_BELOW_MIN, 0 },
		{ -1, RB_CAP_UNLIMITED_REFUSED, 5 },
		{ 0, RB_CAP_FITS, 0 },
		{ 5, RB_CAP_FITS, 5 },
		{ 6, RB_CAP_OVER_CAP, 5 },
		{ RB_MAX_FAILURES_MAX, RB_CAP_OVER_CAP, 5 },
		{ RB_MAX_FAILURES_MAX + 1, RB_CAP_OVER_BOUND, 5 },
	};
	static const case_row unlimited[] = {
		{ -2, RB_CAP_BELOW_MIN, 0 },
		{ -1, RB_CAP_FITS, -1 },
		{ 6, RB_CAP_OVER_CAP, 5 },
	};

	same_at_three_places(*state,
			     "limits = { max_failures = 5; allow_unlimited = false; };",
			     RB_CAP_MAX_FAILURES, ROWS(capped));
	same_at_three_places(*state,
			     "limits = { max_failures = 5; allow_unlimited = true; };",
			     RB_CAP_MAX_FAILURES, ROWS(unlimited));
}

static void test_cap_rule_restore_retries_same_at_validate_clamp_refuse(void **state)
{
	static const case_row grouped[] = {
		{ -1, RB_CAP_BELOW_MIN, 1 },
		{ 0, RB_CAP_BELOW_MIN, 1 },
		{ 1, RB_CAP_FITS, 1 },
		{ 4, RB_CAP_FITS, 4 },
		{ 5, RB_CAP_OVER_CAP, 4 },
		{ RB_RESTORE_RETRY_MAX + 1, RB_CAP_OVER_BOUND, 4 },
	};
	static const case_row ray[] = {
		{ -1, RB_CAP_BELOW_MIN, 0 },
		{ 0, RB_CAP_FITS, 0 },
		{ 5, RB_CAP_OVER_CAP, 4 },
	};

	same_at_three_places(*state,
			     "restore_accounting = \"grouped\"; limits = { restore_retry_num = 4; };",
			     RB_CAP_RESTORE_RETRIES, ROWS(grouped));
	same_at_three_places(*state,
			     "restore_accounting = \"ray\"; limits = { restore_retry_num = 4; };",
			     RB_CAP_RESTORE_RETRIES, ROWS(ray));
}

static void test_cap_rule_restore_timeout_same_at_validate_clamp_refuse(void **state)
{
	static const case_row rows[] = {
		{ -1, RB_CAP_BELOW_MIN, 0 },
		{ 0, RB_CAP_FITS, 0 },
		{ RB_RESTORE_TIMEOUT_MAX, RB_CAP_FITS, RB_RESTORE_TIMEOUT_MAX },
		{ RB_RESTORE_TIMEOUT_MAX + 1, RB_CAP_OVER_BOUND,
		  RB_RESTORE_TIMEOUT_MAX },
	};

	same_at_three_places(*state, "restore_timeout = 60;",
			     RB_CAP_RESTORE_TIMEOUT, ROWS(rows));
}

/* The table: each key's names as in the file and on sbatch, its bound, and
 * which rules it has (docs/rule.md, "Limits"). */
static void test_cap_rule_table_states_each_key(void **state)
{
	const rb_cap_rule *m = rb_cap_rule_of(RB_CAP_MAX_FAILURES);
	const rb_cap_rule *r = rb_cap_rule_of(RB_CAP_RESTORE_RETRIES);
	const rb_cap_rule *t = rb_cap_rule_of(RB_CAP_RESTORE_TIMEOUT);

	(void)state;
	assert_string_equal(m->config_key, "max_failures");
	assert_string_equal(m->option, "max-failures");
	assert_int_equal(m->bound, RB_MAX_FAILURES_MAX);
	assert_true(m->capped && m->unlimited && !m->one_when_grouped);
	assert_int_equal(m->cap_min, 0);
	assert_string_equal(r->config_key, "restore_retry_num");
	assert_string_equal(r->option, "restore-retries");
	assert_int_equal(r->bound, RB_RESTORE_RETRY_MAX);
	assert_true(r->capped && !r->unlimited && r->one_when_grouped);
	assert_int_equal(r->cap_min, 1);
	assert_string_equal(t->config_key, "restore_timeout");
	assert_string_equal(t->option, "restore-timeout");
	assert_int_equal(t->bound, RB_RESTORE_TIMEOUT_MAX);
	assert_true(!t->capped && !t->unlimited && !t->one_when_grouped);
	assert_string_equal(t->unit, " seconds");
}

/* A value is over its bound before it is over its cap: the config file
 * words the two differently ("out of range" / "exceeds the cap"). */
static void test_cap_rule_bound_is_judged_before_the_cap(void **state)
{
	rb_config *cfg = rb_config_defaults();
	rb_cap_judgement j;

	(void)state;
	assert_non_null(cfg);
	j = rb_cap_judge(cfg, RB_CAP_MAX_FAILURES, 11);
	assert_int_equal(j.verdict, RB_CAP_OVER_CAP);
	j = rb_cap_judge(cfg, RB_CAP_MAX_FAILURES, (long long)RB_MAX_FAILURES_MAX + 1);
	assert_int_equal(j.verdict, RB_CAP_OVER_BOUND);
	assert_int_equal(j.cap, 10);
	assert_int_equal(j.fit, 10);
	j = rb_cap_judge(cfg, RB_CAP_RESTORE_RETRIES, 1LL << 40);
	assert_int_equal(j.verdict, RB_CAP_OVER_BOUND);
	assert_true(rb_cap_over(j.verdict));
	assert_false(rb_cap_over(RB_CAP_BELOW_MIN));
	rb_config_free(cfg);
}

/* rb_cap_get/rb_cap_set/rb_cap_limit reach each key's own field. */
static void test_cap_keys_reach_their_own_fields(void **state)
{
	rb_overrides o;
	rb_limits l;
	int v = 0;

	(void)state;
	memset(&o, 0, sizeof(o));
	memset(&l, 0, sizeof(l));
	assert_false(rb_cap_get(&o, RB_CAP_RESTORE_RETRIES, &v));
	rb_cap_set(&o, RB_CAP_MAX_FAILURES, 7);
	rb_cap_set(&o, RB_CAP_RESTORE_RETRIES, 8);
	rb_cap_set(&o, RB_CAP_RESTORE_TIMEOUT, 9);
	assert_true(o.has_max_failures && o.max_failures == 7);
	assert_true(o.has_restore_retry_num && o.restore_retry_num == 8);
	assert_true(o.has_restore_timeout && o.restore_timeout == 9);
	assert_true(rb_cap_get(&o, RB_CAP_RESTORE_TIMEOUT, &v));
	assert_int_equal(v, 9);
	assert_ptr_equal(rb_cap_limit(&l, RB_CAP_MAX_FAILURES), &l.max_failures);
	assert_ptr_equal(rb_cap_limit(&l, RB_CAP_RESTORE_RETRIES),
			 &l.restore_retry_num);
	assert_ptr_equal(rb_cap_limit(&l, RB_CAP_RESTORE_TIMEOUT),
			 &l.restore_timeout);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_cap_rule_max_failures_same_at_validate_clamp_refuse),
		T(test_cap_rule_restore_retries_same_at_validate_clamp_refuse),
		T(test_cap_rule_restore_timeout_same_at_validate_clamp_refuse),
		T(test_cap_rule_table_states_each_key),
		T(test_cap_rule_bound_is_judged_before_the_cap),
		T(test_cap_keys_reach_their_own_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
