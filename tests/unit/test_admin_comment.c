/*
 * test_admin_comment.c - the plugin's line in a job's AdminComment
 * (admin_comment.c): the site's text is kept, only the plugin's own line is
 * replaced, the line is bounded and free of control bytes, and squeue's
 * answer is parsed strictly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "admin_comment.h"

#define REASON "restore 1 of 1 failed (attempt 1): failures 1 > max_failures 0: budget exhausted"
#define LINE "restore_budget: refused: " REASON

static void test_admin_comment_line_names_kind_and_reason(void **state)
{
	char line[RB_ADMIN_LINE_MAX + 1];

	(void)state;
	rb_admin_comment_line("refused", REASON, line, sizeof(line));
	assert_string_equal(line, LINE);
}

static void test_admin_comment_keeps_site_text(void **state)
{
	char out[RB_ADMIN_COMMENT_MAX + 1];

	(void)state;
	assert_int_equal(rb_admin_comment_merge("site-note", LINE, out,
						sizeof(out)), 0);
	assert_string_equal(out, "site-note\n" LINE);
	/* several lines, spaces, '|' and '=' are the site's: kept as they are */
	assert_int_equal(rb_admin_comment_merge("a b=c|d\n\nticket 42\n", LINE,
						out, sizeof(out)), 0);
	assert_string_equal(out, "a b=c|d\n\nticket 42\n" LINE);
	/* blank lines first and last are the site's too */
	assert_int_equal(rb_admin_comment_merge("\nsite\n\n", LINE, out,
						sizeof(out)), 0);
	assert_string_equal(out, "\nsite\n\n" LINE);
}

static void test_admin_comment_empty_is_the_line_alone(void **state)
{
	char out[RB_ADMIN_COMMENT_MAX + 1];

	(void)state;
	assert_int_equal(rb_admin_comment_merge("", LINE, out, sizeof(out)), 0);
	assert_string_equal(out, LINE);
}

static void test_admin_comment_replaces_own_line_only(void **state)
{
	char out[RB_ADMIN_COMMENT_MAX + 1];

	(void)state;
	/* the old line in place, whatever its kind (a hold's, say) */
	assert_int_equal(rb_admin_comment_merge(
				 "before\nrestore_budget: held: old reason\nafter",
				 LINE, out, sizeof(out)), 0);
	assert_string_equal(out, "before\n" LINE "\nafter");
	/* the old format (the whole comment was the plugin's) */
	assert_int_equal(rb_admin_comment_merge("restore_budget: held: x", LINE,
						out, sizeof(out)), 0);
	assert_string_equal(out, LINE);
	/* a second own line is dropped, not duplicated */
	assert_int_equal(rb_admin_comment_merge(
				 "restore_budget: a\nsite\nrestore_budget: b",
				 LINE, out, sizeof(out)), 0);
	assert_string_equal(out, LINE "\nsite");
	/* replaced in place, the newline after it kept */
	assert_int_equal(rb_admin_comment_merge("site\nrestore_budget: b\n\n",
						LINE, out, sizeof(out)), 0);
	assert_string_equal(out, "site\n" LINE "\n\n");
	/* a line merely mentioning the plugin is the site's */
	assert_int_equal(rb_admin_comment_merge("see restore_budget: docs", LINE,
						out, sizeof(out)), 0);
	assert_string_equal(out, "see restore_budget: docs\n" LINE);
}

static void test_admin_comment_merge_is_idempotent(void **state)
{
	char once[RB_ADMIN_COMMENT_MAX + 1], twice[RB_ADMIN_COMMENT_MAX + 1];

	(void)state;
	assert_int_equal(rb_admin_comment_merge("site-note", LINE, once,
						sizeof(once)), 0);
	assert_int_equal(rb_admin_comment_merge(once, LINE, twice,
						sizeof(twice)), 0);
	assert_string_equal(once, twice);
}

static void test_admin_comment_bounded(void **state)
{
	char reason[2 * RB_ADMIN_LINE_MAX], line[RB_ADMIN_LINE_MAX + 1];
	char site[RB_ADMIN_COMMENT_MAX + 1], out[2 * RB_ADMIN_COMMENT_MAX];

	(void)state;
	memset(reason, 'r', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	rb_admin_comment_line("refused", reason, line, sizeof(line));
	assert_int_equal(strlen(line), RB_ADMIN_LINE_MAX);
	assert_string_equal(line + RB_ADMIN_LINE_MAX - 3, "...");
	/* a site text that leaves no room: nothing is cut, the merge fails */
	memset(site, 's', sizeof(site) - 1);
	site[sizeof(site) - 1] = '\0';
	assert_int_equal(rb_admin_comment_merge(site, LINE, out, sizeof(out)),
			 -1);
	/* nor does it overrun a small buffer */
	assert_int_equal(rb_admin_comment_merge("site-note", LINE, out, 16), -1);
}

static void test_admin_comment_cut_keeps_whole_characters(void **state)
{
	/* "x" first, so that the cut at RB_ADMIN_LINE_MAX - 3 falls inside a
	 * character */
	char reason[2 * RB_ADMIN_LINE_MAX] = "x", line[RB_ADMIN_LINE_MAX + 1];
	size_t n;

	(void)state;
	while (strlen(reason) + 2 < sizeof(reason))
		strcat(reason, "\xc3\xa9"); /* U+00E9, two bytes each */
	rb_admin_comment_line("refused", reason, line, sizeof(line));
	n = strlen(line) - 3;
	assert_int_equal(n, RB_ADMIN_LINE_MAX - 4);
	/* the byte before "..." ends a character: not a lead byte 110xxxxx */
	assert_int_not_equal((unsigned char)line[n - 1] & 0xe0, 0xc0);
	assert_true(strlen(line) <= RB_ADMIN_LINE_MAX);
}

static void test_admin_comment_strips_control_bytes(void **state)
{
	char line[RB_ADMIN_LINE_MAX + 1];

	(void)state;
	rb_admin_comment_line("refused", "ckpt/a\nb\r\tc\x1b[31m\x7f" "d", line,
			      sizeof(line));
	assert_string_equal(line, "restore_budget: refused: ckpt/a b  c [31m d");
	assert_null(strchr(line, '\n'));
}

static void test_admin_comment_parse_takes_the_last_field(void **state)
{
	char out[RB_ADMIN_COMMENT_MAX + 1];

	(void)state;
	assert_int_equal(rb_admin_comment_parse("42|42|site-note|\n", 42, "42", out,
						sizeof(out)), 0);
	assert_string_equal(out, "site-note");
	/* '|', spaces and newlines inside the comment are the comment's */
	assert_int_equal(rb_admin_comment_parse("42|42|a | b\nc=d|\n", 42, "42", out,
						sizeof(out)), 0);
	assert_string_equal(out, "a | b\nc=d");
	assert_int_equal(rb_admin_comment_parse("42|42|(null)|\n", 42, "42", out,
						sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(rb_admin_comment_parse("42|42||\n", 42, "42", out, sizeof(out)),
			 0);
	assert_string_equal(out, "");
}

static void test_admin_comment_parse_refuses_what_it_cannot_trust(void **state)
{
	char out[16];

	(void)state;
	assert_int_equal(rb_admin_comment_parse("420|420|x|\n", 42, "42", out,
						sizeof(out)), -1);
	assert_int_equal(rb_admin_comment_parse("4|4|x|\n", 42, "42", out, sizeof(out)),
			 -1);
	assert_int_equal(rb_admin_comment_parse("", 42, "42", out, sizeof(out)), -1);
	/* cut short (no closing '|'): never written back half */
	assert_int_equal(rb_admin_comment_parse("42|42|site-no", 42, "42", out,
						sizeof(out)), -1);
	assert_int_equal(rb_admin_comment_parse("42|42|", 42, "42", out, sizeof(out)),
			 -1);
	/* longer than the caller's buffer */
	assert_int_equal(rb_admin_comment_parse("42|42|0123456789abcdef|\n", 42, "42",
						out, sizeof(out)), -1);
}

/* --- array tasks (docs/arrays.md) --------------------------------------- */

/* `squeue --jobs 1` of an array 1: every task's record, comments with
 * '|' and newlines; task 7, the last to start, kept the array's id. */
static const char every_task[] = "2|1_0|(null)|\n"
				 "3|1_1|site\nline two | x|\n"
				 "1|1_7|restore_budget: held: a|\n";

static void test_admin_comment_parse_picks_the_tasks_record_alone(void **state)
{
	char out[RB_ADMIN_COMMENT_MAX + 1];

	(void)state;
	/* found among other tasks' records: 1 (never written back) */
	assert_int_equal(rb_admin_comment_parse(every_task, 1, "1_7", out,
						sizeof(out)), 1);
	assert_string_equal(out, "restore_budget: held: a");
	assert_int_equal(rb_admin_comment_parse(every_task, 3, "1_1", out,
						sizeof(out)), 1);
	assert_string_equal(out, "site\nline two | x");
	assert_int_equal(rb_admin_comment_parse(every_task, 2, "1_0", out,
						sizeof(out)), 1);
	assert_string_equal(out, "");
	/* the one task asked for (squeue --jobs 1_7): 0 */
	assert_int_equal(rb_admin_comment_parse("1|1_7|site\n2|(null)|\n", 1,
						"1_7", out, sizeof(out)), 0);
	assert_string_equal(out, "site\n2|(null)");
}

static void test_admin_comment_parse_refuses_an_absent_task(void **state)
{
	char out[RB_ADMIN_COMMENT_MAX + 1];

	(void)state;
	assert_int_equal(rb_admin_comment_parse(every_task, 6, "1_5", out,
						sizeof(out)), -1);
	/* the array's pending rest is no task */
	assert_int_equal(rb_admin_comment_parse("1|1_[5-7%2]|x|\n", 1, "1_7",
						out, sizeof(out)), -1);
	/* the bare array id (a job that is no task) reads no task's record:
	 * the clobbering of issue 19 */
	assert_int_equal(rb_admin_comment_parse(every_task, 1, "1", out,
						sizeof(out)), -1);
	/* listed twice */
	assert_int_equal(rb_admin_comment_parse("1|1_7|a|\n1|1_7|b|\n", 1,
						"1_7", out, sizeof(out)), -1);
}

static void test_squeue_head_shapes(void **state)
{
	(void)state;
	assert_true(rb_squeue_is_head("7|7|"));
	assert_true(rb_squeue_is_head("8|7_3|"));
	assert_true(rb_squeue_is_head("7|7_[4-9%2]|"));
	assert_true(rb_squeue_is_head("7|7+1|"));
	assert_false(rb_squeue_is_head("2|(null)"));
	assert_false(rb_squeue_is_head("(null)|"));
	assert_false(rb_squeue_is_head("7|7_[4-9|"));
	assert_false(rb_squeue_is_head("7|7_|"));
	assert_false(rb_squeue_is_head("7|"));
	assert_int_equal(rb_squeue_head("1|1_7|x|", 1, "1_7"), 6);
	assert_int_equal(rb_squeue_head("1|1_7|x|", 1, "1_70"), 0);
	assert_int_equal(rb_squeue_head("1|1_7|x|", 1, "1"), 0);
	assert_int_equal(rb_squeue_head("1|1+0|x|", 1, "1"), 6);
	assert_int_equal(rb_squeue_head("11|1_7|x|", 1, "1_7"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admin_comment_line_names_kind_and_reason),
		cmocka_unit_test(test_admin_comment_keeps_site_text),
		cmocka_unit_test(test_admin_comment_empty_is_the_line_alone),
		cmocka_unit_test(test_admin_comment_replaces_own_line_only),
		cmocka_unit_test(test_admin_comment_merge_is_idempotent),
		cmocka_unit_test(test_admin_comment_bounded),
		cmocka_unit_test(test_admin_comment_cut_keeps_whole_characters),
		cmocka_unit_test(test_admin_comment_strips_control_bytes),
		cmocka_unit_test(test_admin_comment_parse_takes_the_last_field),
		cmocka_unit_test(test_admin_comment_parse_refuses_what_it_cannot_trust),
		cmocka_unit_test(test_admin_comment_parse_picks_the_tasks_record_alone),
		cmocka_unit_test(test_admin_comment_parse_refuses_an_absent_task),
		cmocka_unit_test(test_squeue_head_shapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
