/*
 * test_record.c - the ledger record's text form (plugin/rule/record.c,
 * record_parse.c).
 *
 * A record must round-trip every field exactly, and every damaged, torn,
 * foreign or hand-edited text must be refused with a reason
 * (docs/architecture.md, "The ledger": "never read as a fresh budget").
 */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

#define TEXT_BUF (RB_RECORD_TEXT_MAX + 1)

/* A path with everything that must be escaped: space, '=', '%', newline,
 * tab, non-UTF-8 bytes. */
static const char tricky_path[] =
	"/home/al ice/runs=1/100%/new\nline\t/\xff\xfe\x80/ck";

static void fill_record(rb_record *r)
{
	rb_record_init(r);
	strcpy(r->cluster, "cluster-1.a_b");
	r->job_id = 4294967295u;
	r->array_job_id = 4294967290u;
	r->array_task_id = 999;
	r->uid = 1000;
	r->gid = 4294967294u;
	strcpy(r->user, "alice smith");
	strcpy(r->partition, "preempt");
	strcpy(r->account, "ml-team=%");
	strcpy(r->work_dir, tricky_path);
	strcpy(r->checkpoint_dir, "ck dir");
	strcpy(r->submission, "rb1:0123456789abcdef0123456789abcdef");
	r->created = 1700000000;
	r->updated = INT64_MAX;
	r->seq = UINT64_MAX;
	r->budget.failures = 1;
	r->budget.restore_failures = 2;
	r->budget.granted = INT_MAX;
	r->budget.last_charged = 6;
	r->budget.exhausted = true;
	r->budget.interruptions = 9;
	r->budget.restore_failures_total = 5;
	r->budget.failures_total = 4;
	r->budget.fatal_code = 3;
	r->budget.fatal_exits = 2;
	r->budget.interruption_cap_refusals = 8;
	r->budget.prev_end = RB_END_INTERRUPTED;
	r->budget.prev_end_code = 137;
	strcpy(r->budget.checkpoint, "/home/a/ck/checkpoint-7");
	r->budget.cur.attempt = 7;
	r->budget.cur.phase = RB_PHASE_RESTORING;
	r->budget.cur.confirmed = RB_CONFIRM_TIMEOUT;
	r->budget.cur.end = RB_END_FAILED;
	r->budget.cur.end_code = INT_MIN;
	r->budget.cur.start_time = 1700000100;
	r->budget.cur.end_time = 1700000200;
	r->budget.cur.refused = true;
	r->budget.cur.limits.max_failures = RB_UNLIMITED;
	r->budget.cur.limits.restore_retry_num = 3;
	r->budget.cur.limits.restore_timeout = 300;
	r->budget.cur.limits.accounting = RB_ACCOUNTING_RAY;
	r->budget.cur.limits.count_preemptions = true;
	r->budget.cur.limits.max_interruptions = 4;
	strcpy(r->budget.cur.checkpoint, tricky_path);
	/* the optional fallback fields (docs/rule.md, "Checkpoint fallback") */
	strcpy(r->fallback.cur_id, "2049:77:12:1700000000123456789");
	strcpy(r->fallback.from, "/home/a/ck/checkpoint-8");
	strcpy(r->fallback.streak_id, "2049:78:12:1700000000123456789");
	r->fallback.streak = 1;
	r->fallback.fallbacks = 2;
	strcpy(r->fallback.bad, "2049:78:12:1700000000123456789:/home/a/ck/checkpoint-8");
}

static void assert_record_equal(const rb_record *a, const rb_record *b)
{
	const rb_attempt *x = &a->budget.cur, *y = &b->budget.cur;

	assert_string_equal(a->cluster, b->cluster);
	assert_int_equal(a->job_id, b->job_id);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->gid, b->gid);
	assert_string_equal(a->user, b->user);
	assert_string_equal(a->partition, b->partition);
	assert_string_equal(a->account, b->account);
	assert_string_equal(a->work_dir, b->work_dir);
	assert_string_equal(a->checkpoint_dir, b->checkpoint_dir);
	assert_true(a->created == b->created);
	assert_true(a->updated == b->updated);
	assert_true(a->seq == b->seq);
	assert_int_equal(a->budget.failures, b->budget.failures);
	assert_int_equal(a->budget.restore_failures, b->budget.restore_failures);
	assert_int_equal(a->budget.granted, b->budget.granted);
	assert_true(a->budget.last_charged == b->budget.last_charged);
	assert_int_equal(a->budget.exhausted, b->budget.exhausted);
	assert_true(a->budget.interruptions == b->budget.interruptions);
	assert_true(a->budget.restore_failures_total ==
		    b->budget.restore_failures_total);
	assert_true(a->budget.failures_total == b->budget.failures_total);
	assert_int_equal(a->budget.prev_end, b->budget.prev_end);
	assert_int_equal(a->budget.prev_end_code, b->budget.prev_end_code);
	assert_string_equal(a->budget.checkpoint, b->budget.checkpoint);
	assert_true(x->attempt == y->attempt);
	assert_int_equal(x->phase, y->phase);
	assert_int_equal(x->confirmed, y->confirmed);
	assert_int_equal(x->end, y->end);
	assert_int_equal(x->end_code, y->end_code);
	assert_true(x->start_time == y->start_time);
	assert_true(x->end_time == y->end_time);
	assert_int_equal(x->refused, y->refused);
	assert_int_equal(x->limits.max_failures, y->limits.max_failures);
	assert_int_equal(x->limits.restore_retry_num,
			 y->limits.restore_retry_num);
	assert_int_equal(x->limits.restore_timeout, y->limits.restore_timeout);
	assert_int_equal(x->limits.accounting, y->limits.accounting);
	assert_int_equal(x->limits.count_preemptions,
			 y->limits.count_preemptions);
	assert_string_equal(x->checkpoint, y->checkpoint);
}

/* Format r into a fresh buffer; returns it, *len = its length. */
static char *format_new(const rb_record *r, size_t *len)
{
	char *buf = malloc(TEXT_BUF);
	ssize_t n;

	assert_non_null(buf);
	n = rb_record_format(r, buf, TEXT_BUF);
	assert_true(n > 0);
	*len = (size_t)n;
	return buf;
}

static char *format_full(size_t *len)
{
	rb_record *r = malloc(sizeof(*r));
	char *text;

	assert_non_null(r);
	fill_record(r);
	text = format_new(r, len);
	free(r);
	return text;
}

/* Recompute the checksum line, as a hand edit that knows the format
 * would: the refusal must then come from the field checks. */
static void reseal(char *text, size_t *len)
{
	char *ck = strstr(text, "\nchecksum=");

	assert_non_null(ck);
	ck++;
	sprintf(ck, "checksum=%016" PRIx64 "\n",
		rb_checksum(text, (size_t)(ck - text)));
	*len = strlen(text);
}

/* Replace the first `from` in text with `to`. */
static void edit_raw(char *text, size_t *len, const char *from, const char *to)
{
	char *at = strstr(text, from);
	size_t fl = strlen(from), tl = strlen(to);

	assert_non_null(at);
	assert_true(*len - fl + tl < TEXT_BUF);
	memmove(at + tl, at + fl, strlen(at + fl) + 1);
	memcpy(at, to, tl);
	*len = strlen(text);
}

/* The same, then reseal. */
static void edit(char *text, size_t *len, const char *from, const char *to)
{
	edit_raw(text, len, from, to);
	reseal(text, len);
}

/* Parse must refuse; the message must contain `want` (if not NULL). */
static void assert_refused(const char *text, size_t len, const char *want)
{
	rb_record *r = malloc(sizeof(*r));
	rb_err err = { "" };

	assert_non_null(r);
	assert_int_equal(rb_record_parse(text, len, r, &err), -1);
	assert_true(err.msg[0] != '\0');
	if (want && !strstr(err.msg, want))
		fail_msg("message '%s' lacks '%s'", err.msg, want);
	free(r);
}

static void assert_edit_refused(const char *from, const char *to,
				const char *want)
{
	size_t len;
	char *text = format_full(&len);

	edit(text, &len, from, to);
	assert_refused(text, len, want);
	free(text);
}

/* ---- checksum and escaping ---------------------------------------------- */

static void checksum_is_fnv1a_64(void **state)
{
	(void)state;
	assert_true(rb_checksum("", 0) == 0xcbf29ce484222325ULL);
	assert_true(rb_checksum("a", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(rb_checksum("foobar", 6) == 0x85944171f73967e8ULL);
}

static void escape_encodes_space_percent_equals_and_non_printable(void **state)
{
	char out[128];

	(void)state;
	assert_int_equal(rb_kv_escape("a b=c%d\n\t\x7f\xff~!", out, sizeof(out)),
			 strlen("a%20b%3Dc%25d%0A%09%7F%FF~!"));
	assert_string_equal(out, "a%20b%3Dc%25d%0A%09%7F%FF~!");
	assert_int_equal(rb_kv_escape("", out, sizeof(out)), 0);
	assert_string_equal(out, "");
}

static void escape_refuses_output_that_does_not_fit(void **state)
{
	char out[8];

	(void)state;
	/* "abc%20d" is 7 bytes + NUL: fits exactly in 8, not in 7. */
	assert_int_equal(rb_kv_escape("abc d", out, 8), 7);
	assert_int_equal(rb_kv_escape("abc d", out, 7), -1);
	assert_int_equal(rb_kv_escape("abc d", out, 5), -1);
	assert_int_equal(rb_kv_escape("x", out, 0), -1);
	assert_int_equal(rb_kv_escape("", out, 1), 0);
}

static void unescape_inverts_escape_for_every_byte(void **state)
{
	char in[256], esc[256 * 3 + 1], out[256];
	int i;

	(void)state;
	for (i = 1; i < 256; i++)
		in[i - 1] = (char)i;
	in[255] = '\0';
	assert_true(rb_kv_escape(in, esc, sizeof(esc)) > 0);
	assert_int_equal(rb_kv_unescape(esc, strlen(esc), out, sizeof(out)),
			 255);
	assert_memory_equal(in, out, 256);
	/* Exact fit and one byte short. */
	assert_int_equal(rb_kv_unescape("a%20b", 5, out, 4), 3);
	assert_int_equal(rb_kv_unescape("a%20b", 5, out, 3), -1);
}

static void unescape_refuses_malformed_escapes(void **state)
{
	static const char *const bad[] = {
		"%", "%4", "ab%", "%G1", "%1g",
		"%00",      /* would cut the value short */
		"%3d",      /* lower-case hex: not what we write */
		"%41",      /* 'A' needs no escape: not canonical */
		"a b",      /* raw space */
		"a=b",      /* raw '=' */
		"\xff",     /* raw non-ASCII */
		"a\nb",     /* raw newline */
	};
	char out[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rb_kv_unescape(bad[i], strlen(bad[i]), out, sizeof(out)) !=
		    -1)
			fail_msg("accepted malformed '%s'", bad[i]);
	}
	/* The length bounds the input: bytes after it are never read. */
	assert_int_equal(rb_kv_unescape("ab%2", 2, out, sizeof(out)), 2);
	assert_string_equal(out, "ab");
}

/* ---- format -------------------------------------------------------------- */

static void format_is_readable_key_value_text(void **state)
{
	rb_record *r = malloc(sizeof(*r));
	char *text, *last;
	size_t len;

	(void)state;
	assert_non_null(r);
	rb_record_init(r);
	r->budget.failures = 1;
	r->budget.restore_failures = 2;
	r->budget.cur.attempt = 3;
	r->budget.cur.phase = RB_PHASE_RESTORING;
	r->budget.cur.limits.max_failures = 1;
	r->budget.cur.limits.accounting = RB_ACCOUNTING_GROUPED;
	strcpy(r->budget.checkpoint, "/home/a/ck/checkpoint-7");
	text = format_new(r, &len);
	assert_int_equal(strlen(text), len);
	assert_memory_equal(text, "restore_budget-record 2\n", 24);
	assert_non_null(strstr(text, "\nfailures=1\n"));
	assert_non_null(strstr(text, "\nsubmission=\n"));
	assert_non_null(strstr(text, "\nrestore_failures=2\n"));
	assert_non_null(strstr(text, "\ncur.attempt=3\n"));
	assert_non_null(strstr(text, "\ncur.phase=RESTORING\n"));
	assert_non_null(strstr(text, "\ncur.limits.max_failures=1\n"));
	assert_non_null(strstr(text, "\ncur.limits.accounting=grouped\n"));
	assert_non_null(strstr(text, "\ncheckpoint=/home/a/ck/checkpoint-7\n"));
	assert_non_null(strstr(text, "\nexhausted=false\n"));
	/* Last line: checksum=<16 hex> over every byte before it. */
	last = strstr(text, "\nchecksum=") + 1;
	assert_int_equal(strlen(last), strlen("checksum=") + 16 + 1);
	{
		char want[64];

		snprintf(want, sizeof(want), "checksum=%016" PRIx64 "\n",
			 rb_checksum(text, (size_t)(last - text)));
		assert_string_equal(last, want);
	}
	free(text);
	free(r);
}

static void format_refuses_too_small_buffer(void **state)
{
	size_t len, n;
	char *text = format_full(&len);
	char *buf = malloc(len + 1);
	rb_record *r = malloc(sizeof(*r));

	(void)state;
	assert_non_null(buf);
	assert_non_null(r);
	fill_record(r);
	for (n = 0; n <= len; n++)
		assert_int_equal(rb_record_format(r, buf, n), -1);
	assert_int_equal(rb_record_format(r, buf, len + 1), (ssize_t)len);
	assert_string_equal(buf, text);
	free(r);
	free(buf);
	free(text);
}

static void format_refuses_enum_without_name(void **state)
{
	rb_record *r = malloc(sizeof(*r));
	char *buf = malloc(TEXT_BUF);

	(void)state;
	assert_non_null(r);
	assert_non_null(buf);
	fill_record(r);
	r->budget.cur.phase = (rb_phase)77;
	assert_int_equal(rb_record_format(r, buf, TEXT_BUF), -1);
	free(buf);
	free(r);
}

/* ---- round trips --------------------------------------------------------- */

static void round_trip_fully_populated_record(void **state)
{
	rb_record *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	rb_err err = { "" };
	char *text, *again;
	size_t len, len2;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	fill_record(a);
	text = format_new(a, &len);
	/* One line per field: escaping kept the newline out of the text. */
	assert_null(strstr(text, "new\nline"));
	assert_non_null(strstr(text, "%0Aline%09/%FF%FE%80/ck\n"));
	memset(b, 0x5a, sizeof(*b));
	if (rb_record_parse(text, len, b, &err) != 0)
		fail_msg("parse: %s", err.msg);
	assert_record_equal(a, b);
	/* And the text is canonical: formatting again gives the same bytes. */
	again = format_new(b, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(text, again, len);
	free(again);
	free(text);
	free(b);
	free(a);
}

static void round_trip_initialized_record(void **state)
{
	rb_record *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	rb_err err = { "" };
	char *text;
	size_t len;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	rb_record_init(a);
	assert_true(a->budget.cur.attempt == -1);
	assert_true(a->budget.last_charged == -1);
	text = format_new(a, &len);
	if (rb_record_parse(text, len, b, &err) != 0)
		fail_msg("parse: %s", err.msg);
	assert_record_equal(a, b);
	free(text);
	free(b);
	free(a);
}

static void keys_in_any_order_are_accepted(void **state)
{
	rb_record *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	rb_err err = { "" };
	size_t len;
	char *text;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	fill_record(a);
	text = format_full(&len);
	/* Swap the "seq" and "failures" lines. */
	edit(text, &len, "\nseq=18446744073709551615\nfailures=1\n",
	     "\nfailures=1\nseq=18446744073709551615\n");
	if (rb_record_parse(text, len, b, &err) != 0)
		fail_msg("parse: %s", err.msg);
	assert_record_equal(a, b);
	free(text);
	free(b);
	free(a);
}

static void largest_record_fits_text_max(void **state)
{
	rb_record *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	rb_err err = { "" };
	char *text;
	size_t len;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	fill_record(a);
	/* Every string at its longest, made of bytes that escape to 3. */
	memset(a->cluster, '\xff', sizeof(a->cluster) - 1);
	memset(a->user, '%', sizeof(a->user) - 1);
	memset(a->partition, '=', sizeof(a->partition) - 1);
	memset(a->account, ' ', sizeof(a->account) - 1);
	memset(a->work_dir, '\n', sizeof(a->work_dir) - 1);
	memset(a->checkpoint_dir, '\x80', sizeof(a->checkpoint_dir) - 1);
	memset(a->budget.checkpoint, '\x01', sizeof(a->budget.checkpoint) - 1);
	memset(a->budget.cur.checkpoint, '\t',
	       sizeof(a->budget.cur.checkpoint) - 1);
	/* and the fallback's: the bad newest's path, and the bad list at its
	 * longest of '%' (escaped again by the record: 3 bytes a byte) */
	memset(a->fallback.from, '\x7f', sizeof(a->fallback.from) - 1);
	memset(a->fallback.bad, '%', sizeof(a->fallback.bad) - 1);
	memset(a->fallback.cur_id, '\xfe', sizeof(a->fallback.cur_id) - 1);
	memset(a->fallback.streak_id, '\xfd',
	       sizeof(a->fallback.streak_id) - 1);
	a->budget.cur.end_code = INT_MIN;
	a->budget.interruptions = INT64_MAX;
	text = format_new(a, &len);
	assert_true(len <= RB_RECORD_TEXT_MAX);
	if (rb_record_parse(text, len, b, &err) != 0)
		fail_msg("parse: %s", err.msg);
	assert_record_equal(a, b);
	free(text);
	free(b);
	free(a);
}

/* ---- corruption ---------------------------------------------------------- */

static void every_bit_flip_is_refused(void **state)
{
	size_t len, i;
	char *text = format_full(&len);
	rb_record *r = malloc(sizeof(*r));
	int bit;

	(void)state;
	assert_non_null(r);
	for (i = 0; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			rb_err err = { "" };

			text[i] ^= (char)(1 << bit);
			if (rb_record_parse(text, len, r, &err) != -1)
				fail_msg("accepted with byte %zu bit %d "
					 "flipped", i, bit);
			assert_true(err.msg[0] != '\0');
			text[i] ^= (char)(1 << bit);
		}
	}
	/* Inside the fields, the checksum is what catches it. */
	text[len / 2] ^= 1;
	assert_refused(text, len, "checksum mismatch (record torn or edited "
		       "by hand)");
	free(r);
	free(text);
}

static void every_truncation_is_refused(void **state)
{
	size_t len, n;
	char *text = format_full(&len);
	rb_record *r = malloc(sizeof(*r));

	(void)state;
	assert_non_null(r);
	for (n = 0; n < len; n++) {
		/* A copy of exactly n bytes, so that ASan sees any read past
		 * the given length. */
		char *cut = malloc(n ? n : 1);
		rb_err err = { "" };

		assert_non_null(cut);
		memcpy(cut, text, n);
		if (rb_record_parse(cut, n, r, &err) != -1)
			fail_msg("accepted when cut to %zu of %zu bytes", n,
				 len);
		assert_true(err.msg[0] != '\0');
		free(cut);
	}
	free(r);
	free(text);
}

static void a_record_of_another_version_is_refused(void **state)
{
	(void)state;
	assert_edit_refused("restore_budget-record 2\n",
			    "restore_budget-record 7\n",
			    "unknown record version 7 (this plugin reads 2; a newer plugin wrote it: upgrade this node)");
	assert_edit_refused("restore_budget-record 2\n",
			    "restore_budget-record 0\n",
			    "unknown record version 0 (this plugin reads 2)");
	assert_edit_refused("restore_budget-record 2\n",
			    "restore_budget-record 1\n",
			    "unknown record version 1 (this plugin reads 2)");
	assert_edit_refused("restore_budget-record 2\n",
			    "restore_budget-record 02\n", "bad version line");
}

/* Remove the line of key (which must be there) from text. */
static void drop_line(char *text, const char *key)
{
	char *line = strstr(text, key);

	assert_non_null(line);
	line++; /* key starts with the '\n' before its line */
	memmove(line, strchr(line, '\n') + 1, strlen(strchr(line, '\n') + 1) + 1);
}

/* The exit rules' and the interruption cap's lines (optional fields). */
static void drop_exit_rule_lines(char *text, size_t *len)
{
	drop_line(text, "\nfatal_code=");
	drop_line(text, "\nfatal_exits=");
	drop_line(text, "\ninterruption_cap_refusals=");
	drop_line(text, "\ncur.limits.max_interruptions=");
	*len = strlen(text);
}

/* The full record without the exit rules' optional lines, parsed into r
 * (it must be accepted). */
static void parse_without_exit_rules(rb_record *r)
{
	size_t len;
	char *text = format_full(&len);
	rb_err err = { "" };

	drop_exit_rule_lines(text, &len);
	reseal(text, &len);
	if (rb_record_parse(text, len, r, &err) != 0)
		fail_msg("refused: %s", err.msg);
	free(text);
}

/* The exit rules' fields are optional: a record written before them (or
 * by a job that uses neither) reads with no fatal code, zero totals and an
 * unlimited interruption cap. */
static void test_exit_rule_fields_are_optional(void **state)
{
	rb_record *r = malloc(sizeof(*r));
	size_t len;
	char *text;

	(void)state;
	assert_non_null(r);
	rb_record_init(r);
	text = format_new(r, &len);
	assert_null(strstr(text, "fatal"));
	assert_null(strstr(text, "interruption_cap"));
	assert_null(strstr(text, "max_interruptions"));
	free(text);
	parse_without_exit_rules(r);
	assert_int_equal(r->budget.fatal_code, 0);
	assert_int_equal(r->budget.fatal_exits, 0);
	assert_int_equal(r->budget.interruption_cap_refusals, 0);
	assert_int_equal(r->budget.cur.limits.max_interruptions, RB_UNLIMITED);
	assert_int_equal(r->budget.interruptions, 9);
	free(r);
}

/* An array task's record names its array and task; a plain job's record
 * has neither line, and task 0 (the default) reads back as task 0. */
static void array_task_ids_are_optional_fields(void **state)
{
	rb_record *r = malloc(sizeof(*r)), *back = malloc(sizeof(*back));
	rb_err err;
	size_t len;
	char *text;

	(void)state;
	assert_non_null(r);
	assert_non_null(back);
	rb_record_init(r);
	text = format_new(r, &len);
	assert_null(strstr(text, "array_"));
	free(text);
	r->job_id = 17;
	r->array_job_id = 12;
	r->array_task_id = 0;
	text = format_new(r, &len);
	assert_non_null(strstr(text, "\narray_job_id=12\n"));
	assert_null(strstr(text, "array_task_id"));
	assert_int_equal(rb_record_parse(text, len, back, &err), 0);
	assert_int_equal(back->array_job_id, 12);
	assert_int_equal(back->array_task_id, 0);
	free(text);
	free(back);
	free(r);
}

/* Slurm's commands address a task as ARRAY_TASK: a bare array id means
 * every task of the array (docs/arrays.md). */
static void job_addr_names_one_task_of_an_array(void **state)
{
	char addr[RB_JOB_ADDR_MAX];

	(void)state;
	assert_string_equal(rb_job_addr(17, 12, 5, addr), "12_5");
	assert_string_equal(rb_job_addr(12, 12, 0, addr), "12_0");
	assert_string_equal(rb_job_addr(17, 0, 0, addr), "17");
	assert_string_equal(rb_job_addr(4294967295u, 4294967295u, 4294967295u,
					addr), "4294967295_4294967295");
}

/* An optional field is never written at its default (-1 for the
 * interruption cap): a line that holds it is not canonical. */
static void test_max_interruptions_at_its_default_is_refused(void **state)
{
	(void)state;
	assert_edit_refused("\ncur.limits.max_interruptions=4\n",
			    "\ncur.limits.max_interruptions=-1\n",
			    "bad value for cur.limits.max_interruptions: '-1' (an optional key is not written at its default)");
}

/* The one cluster-name rule (record.h), which the ledger, the node note
 * and the CLI all apply: 1 to 63 of [A-Za-z0-9_.-], not starting with '.'. */
static void cluster_name_is_1_to_63_of_alnum_underscore_dot_dash_not_dot_first(
	void **state)
{
	char longest[RB_CLUSTER_NAME_MAX + 2];

	(void)state;
	assert_true(rb_cluster_name_ok("c1"));
	assert_true(rb_cluster_name_ok("Big-Cluster_2.a"));
	assert_true(rb_cluster_name_ok("a.."));
	assert_false(rb_cluster_name_ok(NULL));
	assert_false(rb_cluster_name_ok(""));
	assert_false(rb_cluster_name_ok("."));
	assert_false(rb_cluster_name_ok(".."));
	assert_false(rb_cluster_name_ok(".hidden"));
	assert_false(rb_cluster_name_ok("a/b"));
	assert_false(rb_cluster_name_ok("a b"));
	assert_false(rb_cluster_name_ok("a\nb"));
	assert_false(rb_cluster_name_ok("caf\xc3\xa9"));
	memset(longest, 'a', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	assert_false(rb_cluster_name_ok(longest)); /* 64 bytes */
	longest[RB_CLUSTER_NAME_MAX] = '\0';
	assert_true(rb_cluster_name_ok(longest)); /* 63 bytes */
}

static void submission_identity_is_checked(void **state)
{
	char longest[RB_SUBMISSION_MAX + 1];

	(void)state;
	assert_true(rb_submission_ok("rb1:00ff"));
	assert_true(rb_submission_ok("sluid:s0123ABC.x_y-z"));
	assert_false(rb_submission_ok(""));
	assert_false(rb_submission_ok(NULL));
	assert_false(rb_submission_ok("a b"));
	assert_false(rb_submission_ok("a\nb"));
	assert_false(rb_submission_ok("a/b"));
	memset(longest, 'a', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	assert_false(rb_submission_ok(longest));
	assert_false(rb_submission_ok(longest)); /* RB_SUBMISSION_MAX bytes */
	longest[sizeof(longest) - 2] = '\0';
	assert_true(rb_submission_ok(longest));
}

static void text_that_is_not_a_record_is_refused(void **state)
{
	static const char junk[] = "hello=world\nchecksum=0000000000000000\n";

	(void)state;
	assert_refused(junk, sizeof(junk) - 1, "not a restore_budget record");
	assert_refused("", 0, "empty");
}

static void missing_key_is_refused(void **state)
{
	(void)state;
	assert_edit_refused("\ngranted=2147483647\n", "\n",
			    "missing key 'granted'");
	assert_edit_refused("\ncur.checkpoint=", "\ncur.checkpointX=",
			    "unknown key 'cur.checkpointX'");
}

static void duplicate_key_is_refused(void **state)
{
	(void)state;
	assert_edit_refused("\nfailures=1\n", "\nfailures=1\nfailures=1\n",
			    "duplicate key 'failures'");
}

static void unknown_key_is_refused(void **state)
{
	(void)state;
	assert_edit_refused("\nfailures=1\n", "\nfailures=1\ncolour=blue\n",
			    "unknown key 'colour'");
	assert_edit_refused("\nfailures=1\n", "\nfailures=1\n\n",
			    "empty line");
	assert_edit_refused("\nfailures=1\n", "\nfailures=1\nnoequals\n",
			    "not key=value");
}

static void bad_enum_name_is_refused(void **state)
{
	(void)state;
	assert_edit_refused("\ncur.phase=RESTORING\n", "\ncur.phase=SLEEPING\n",
			    "bad value for cur.phase");
	assert_edit_refused("\ncur.limits.accounting=ray\n",
			    "\ncur.limits.accounting=\n",
			    "bad value for cur.limits.accounting");
	assert_edit_refused("\ncur.end=", "\ncur.end=%FF", "cur.end");
	assert_edit_refused("\nexhausted=true\n", "\nexhausted=yes\n",
			    "bad value for exhausted");
}

static void overflowing_integer_is_refused(void **state)
{
	(void)state;
	assert_edit_refused("\nfailures=1\n", "\nfailures=2147483648\n",
			    "bad value for failures");
	assert_edit_refused("\njob_id=4294967295\n", "\njob_id=4294967296\n",
			    "bad value for job_id");
	assert_edit_refused("\nseq=18446744073709551615\n",
			    "\nseq=18446744073709551616\n",
			    "bad value for seq");
	assert_edit_refused("\nseq=18446744073709551615\n",
			    "\nseq=99999999999999999999999999\n",
			    "bad value for seq");
	assert_edit_refused("\nupdated=9223372036854775807\n",
			    "\nupdated=9223372036854775808\n",
			    "bad value for updated");
	assert_edit_refused("\ncur.end_code=-2147483648\n",
			    "\ncur.end_code=-2147483649\n",
			    "bad value for cur.end_code");
}

static void integer_out_of_range_is_refused(void **state)
{
	(void)state;
	assert_edit_refused("\nfailures=1\n", "\nfailures=-1\n",
			    "expected a decimal integer in 0..2147483647");
	assert_edit_refused("\ncur.attempt=7\n", "\ncur.attempt=-2\n",
			    "cur.attempt");
	assert_edit_refused("\ncur.limits.max_failures=-1\n",
			    "\ncur.limits.max_failures=-2\n",
			    "cur.limits.max_failures");
	assert_edit_refused("\nuid=1000\n", "\nuid=-1\n", "bad value for uid");
}

static void non_canonical_integer_is_refused(void **state)
{
	(void)state;
	assert_edit_refused("\nfailures=1\n", "\nfailures=01\n", "failures");
	assert_edit_refused("\nfailures=1\n", "\nfailures=+1\n", "failures");
	assert_edit_refused("\nfailures=1\n", "\nfailures= 1\n", "failures");
	assert_edit_refused("\nfailures=1\n", "\nfailures=1x\n", "failures");
	assert_edit_refused("\nfailures=1\n", "\nfailures=\n", "failures");
	assert_edit_refused("\ncur.attempt=7\n", "\ncur.attempt=-0\n",
			    "cur.attempt");
	assert_edit_refused("\ncur.attempt=7\n", "\ncur.attempt=-\n",
			    "cur.attempt");
}

static void bad_string_value_is_refused(void **state)
{
	char from[64], to[400];

	(void)state;
	/* Raw space, malformed escape, %00. */
	assert_edit_refused("\nuser=alice%20smith\n", "\nuser=alice smith\n",
			    "bad value for user");
	assert_edit_refused("\nuser=alice%20smith\n", "\nuser=alice%2\n",
			    "bad value for user");
	assert_edit_refused("\nuser=alice%20smith\n", "\nuser=a%00b\n",
			    "bad value for user");
	/* Longer than the field (RB_NAME_MAX - 1 bytes). */
	snprintf(from, sizeof(from), "\npartition=preempt\n");
	memset(to, 'x', sizeof(to));
	memcpy(to, "\npartition=", 11);
	to[11 + RB_NAME_MAX] = '\n';
	to[12 + RB_NAME_MAX] = '\0';
	assert_edit_refused(from, to, "bad value for partition");
}

static void trailing_garbage_is_refused(void **state)
{
	size_t len;
	char *text = format_full(&len);
	char *more = malloc(len + 32);

	(void)state;
	assert_non_null(more);
	memcpy(more, text, len);
	memcpy(more + len, "x\n", 2);
	assert_refused(more, len + 2, "unexpected bytes after the checksum");
	memcpy(more + len, "\n", 1);
	assert_refused(more, len + 1, "unexpected bytes after the checksum");
	/* A second checksum line is trailing garbage too. */
	memcpy(more + len, "checksum=0000000000000000\n", 26);
	assert_refused(more, len + 26, "unexpected bytes after the checksum");
	free(more);
	free(text);
}

static void checksum_line_must_be_well_formed(void **state)
{
	static const char *const to[] = {
		"\nchecksum=X", "\nchecksum=0", "\nchecksum=\n", "\nchecksum==",
	};
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(to) / sizeof(to[0]); i++) {
		char *text = format_full(&len);

		edit_raw(text, &len, "\nchecksum=", to[i]);
		assert_refused(text, len, "checksum line");
		free(text);
	}
}

static void nul_byte_is_refused(void **state)
{
	size_t len;
	char *text = format_full(&len);

	(void)state;
	/* Resealed, so only the NUL check can refuse it. */
	edit(text, &len, "alice%20smith", "alice%20smith");
	text[40] = '\0';
	assert_refused(text, len, "NUL byte at offset 40");
	free(text);
}

static void text_over_the_maximum_is_refused(void **state)
{
	char *big = malloc(RB_RECORD_TEXT_MAX + 2);

	(void)state;
	assert_non_null(big);
	memset(big, 'a', RB_RECORD_TEXT_MAX + 1);
	assert_refused(big, RB_RECORD_TEXT_MAX + 1, "larger than");
	free(big);
}

static void refused_parse_leaves_record_untouched(void **state)
{
	rb_record *r = malloc(sizeof(*r)), *before = malloc(sizeof(*before));
	rb_err err = { "" };
	size_t len;
	char *text = format_full(&len);

	(void)state;
	assert_non_null(r);
	assert_non_null(before);
	/* Break the last field, after all others have been parsed. */
	edit(text, &len, "\ncur.checkpoint=", "\ncur.checkpoint=%");
	memset(r, 0x5a, sizeof(*r));
	memcpy(before, r, sizeof(*r));
	assert_int_equal(rb_record_parse(text, len, r, &err), -1);
	assert_memory_equal(r, before, sizeof(*r));
	free(text);
	free(before);
	free(r);
}

/*
 * A cheap stand-in for the fuzzer, run under the sanitizers: random edits
 * of a valid record never crash the parser, and whatever it accepts formats
 * back to exactly the same text (the format is canonical).
 */
static void random_mutations_are_refused_or_canonical(void **state)
{
	size_t len, i;
	char *orig = format_full(&len);
	char *text = malloc(TEXT_BUF), *again = malloc(TEXT_BUF);
	rb_record *r = malloc(sizeof(*r));
	unsigned seed = 12345;
	int round;

	(void)state;
	assert_non_null(text);
	assert_non_null(again);
	assert_non_null(r);
	for (round = 0; round < 20000; round++) {
		size_t n = len;
		int edits = 1 + (int)(rand_r(&seed) % 4);
		rb_err err;

		memcpy(text, orig, len);
		for (i = 0; i < (size_t)edits; i++) {
			size_t at = (size_t)rand_r(&seed) % n;

			switch (rand_r(&seed) % 3) {
			case 0:
				text[at] = (char)rand_r(&seed);
				break;
			case 1:
				n = at;
				break;
			default:
				text[at] = "\n=%0-\0"[rand_r(&seed) % 6];
				break;
			}
			if (n == 0)
				n = 1;
		}
		/* Reseal half of them so that the field checks get fuzzed
		 * too, not only the checksum. */
		if (round % 2 && n > 30) {
			char *ck = memmem(text, n, "\nchecksum=", 10);

			if (ck && (size_t)(ck - text) + 27 <= n) {
				char line[32];

				snprintf(line, sizeof(line),
					 "checksum=%016" PRIx64,
					 rb_checksum(text, (size_t)(ck + 1 -
								   text)));
				memcpy(ck + 1, line, 25);
			}
		}
		if (rb_record_parse(text, n, r, &err) == 0) {
			ssize_t m = rb_record_format(r, again, TEXT_BUF);

			/* Accepted edits may only reorder nothing here: the
			 * text must come back byte for byte. */
			assert_true(m == (ssize_t)n);
			assert_memory_equal(again, text, n);
		}
	}
	free(r);
	free(again);
	free(text);
	free(orig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(checksum_is_fnv1a_64),
		cmocka_unit_test(escape_encodes_space_percent_equals_and_non_printable),
		cmocka_unit_test(escape_refuses_output_that_does_not_fit),
		cmocka_unit_test(unescape_inverts_escape_for_every_byte),
		cmocka_unit_test(unescape_refuses_malformed_escapes),
		cmocka_unit_test(format_is_readable_key_value_text),
		cmocka_unit_test(format_refuses_too_small_buffer),
		cmocka_unit_test(format_refuses_enum_without_name),
		cmocka_unit_test(round_trip_fully_populated_record),
		cmocka_unit_test(round_trip_initialized_record),
		cmocka_unit_test(keys_in_any_order_are_accepted),
		cmocka_unit_test(largest_record_fits_text_max),
		cmocka_unit_test(every_bit_flip_is_refused),
		cmocka_unit_test(every_truncation_is_refused),
		cmocka_unit_test(a_record_of_another_version_is_refused),
		cmocka_unit_test(test_exit_rule_fields_are_optional),
		cmocka_unit_test(test_max_interruptions_at_its_default_is_refused),
		cmocka_unit_test(array_task_ids_are_optional_fields),
		cmocka_unit_test(job_addr_names_one_task_of_an_array),
		cmocka_unit_test(submission_identity_is_checked),
		cmocka_unit_test(cluster_name_is_1_to_63_of_alnum_underscore_dot_dash_not_dot_first),
		cmocka_unit_test(text_that_is_not_a_record_is_refused),
		cmocka_unit_test(missing_key_is_refused),
		cmocka_unit_test(duplicate_key_is_refused),
		cmocka_unit_test(unknown_key_is_refused),
		cmocka_unit_test(bad_enum_name_is_refused),
		cmocka_unit_test(overflowing_integer_is_refused),
		cmocka_unit_test(integer_out_of_range_is_refused),
		cmocka_unit_test(non_canonical_integer_is_refused),
		cmocka_unit_test(bad_string_value_is_refused),
		cmocka_unit_test(trailing_garbage_is_refused),
		cmocka_unit_test(checksum_line_must_be_well_formed),
		cmocka_unit_test(nul_byte_is_refused),
		cmocka_unit_test(text_over_the_maximum_is_refused),
		cmocka_unit_test(refused_parse_leaves_record_untouched),
		cmocka_unit_test(random_mutations_are_refused_or_canonical),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
