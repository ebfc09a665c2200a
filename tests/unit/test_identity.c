/*
 * test_identity.c - a submission's identity (plugin/rule/identity.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "identity.h"
#include "record.h"

static void new_submission_identity_is_random_and_well_formed(void **state)
{
	char a[RB_SUBMISSION_MAX], b[RB_SUBMISSION_MAX];

	(void)state;
	assert_int_equal(rb_submission_new(a, sizeof(a)), 0);
	assert_int_equal(rb_submission_new(b, sizeof(b)), 0);
	assert_int_equal(strlen(a), 4 + 32);
	assert_memory_equal(a, "rb1:", 4);
	assert_int_equal(strspn(a + 4, "0123456789abcdef"), 32);
	assert_true(rb_submission_ok(a));
	assert_string_not_equal(a, b);
	assert_int_equal(rb_submission_new(a, 36), -1); /* no room for the NUL */
}

static void submission_identity_prefers_the_plugins_own(void **state)
{
	char buf[RB_SUBMISSION_MAX];

	(void)state;
	assert_string_equal(rb_submission_of("rb1:ab", "S123", buf, sizeof(buf)),
			    "rb1:ab");
	assert_string_equal(rb_submission_of(NULL, "S123", buf, sizeof(buf)),
			    "sluid:S123");
	/* a malformed value (the submitter controls it) is no identity */
	assert_string_equal(rb_submission_of("x y", "S1", buf, sizeof(buf)),
			    "sluid:S1");
	assert_null(rb_submission_of("x\ny", "", buf, sizeof(buf)));
	assert_string_equal(buf, "");
	assert_null(rb_submission_of(NULL, "bad sluid", buf, sizeof(buf)));
	assert_null(rb_submission_of(NULL, NULL, buf, sizeof(buf)));
}

/* Rule: a reused job id never continues an older submission's record, even
 * when the user sends the old identity again: the attempt order applies
 * whatever the identities say (docs/security.md, "Job identity"). */
static void reused_job_id_never_continues_an_older_submissions_record(void **state)
{
	rb_record r;
	const char *why;

	(void)state;
	rb_record_init(&r);
	r.uid = 5;
	strcpy(r.submission, "rb1:0123");
	r.budget.cur.attempt = 6;
	r.budget.cur.end = RB_END_FAILED;
	assert_true(rb_record_names_another_job(&r, 5, "rb1:0123", 0, &why));
	assert_string_equal(why, "attempt_below");
	assert_true(rb_record_names_another_job(&r, 5, "rb1:0123", 6, &why));
	assert_string_equal(why, "attempt_ended");
	/* the same job's next attempt, and the batch step (no attempt) */
	assert_false(rb_record_names_another_job(&r, 5, "rb1:0123", 7, &why));
	assert_false(rb_record_names_another_job(&r, 5, "rb1:0123", INT64_MAX,
						 &why));
	/* a repeated start of a running attempt is the same job */
	r.budget.cur.end = RB_END_NONE;
	assert_false(rb_record_names_another_job(&r, 5, "rb1:0123", 6, &why));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(new_submission_identity_is_random_and_well_formed),
		cmocka_unit_test(submission_identity_prefers_the_plugins_own),
		cmocka_unit_test(reused_job_id_never_continues_an_older_submissions_record),
	};
	return cmocka_run_group_tests_name("identity", tests, NULL, NULL);
}
