/*
 * budget_line.c - the budget as one line of the AdminComment
 * (budget_line.h; docs/stores.md, "The line").
 */
#include "budget_line.h"

#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#define SUM_KEY "sum="
#define SUM_HEX 16

typedef enum { T_INT, T_I64, T_U64, T_BOOL, T_STR } line_type;

typedef struct {
	const char *key;
	size_t off;
	size_t size;      /* T_STR: the buffer */
	int64_t min, max;
	line_type type;
	bool optional;    /* written only when not 0 / "" */
} line_field;

#define AT(m) offsetof(rb_record, m)
#define SZ(m) sizeof(((rb_record *)0)->m)
#define INT(k, m, lo, hi) { k, AT(m), 0, lo, hi, T_INT, false }
#define I64(k, m, lo) { k, AT(m), 0, lo, INT64_MAX, T_I64, false }
#define BOOL(k, m) { k, AT(m), 0, 0, 1, T_BOOL, false }
#define STR(k, m) { k, AT(m), SZ(m), 0, 0, T_STR, false }
#define OPT_INT(k, m) { k, AT(m), 0, INT_MIN, INT_MAX, T_INT, true }
#define OPT_I64(k, m) { k, AT(m), 0, 0, INT64_MAX, T_I64, true }
#define OPT_STR(k, m) { k, AT(m), SZ(m), 0, 0, T_STR, true }

/* In the order they are written. The identity of the job is not here: it
 * is the controller's record (budget_line.h). */
static const line_field fields[] = {
	{ "seq", AT(seq), 0, 0, 0, T_U64, false },
	I64("t0", created, 0),
	I64("t", updated, 0),
	INT("F", budget.failures, 0, INT_MAX),
	INT("r", budget.restore_failures, 0, INT_MAX),
	INT("g", budget.granted, 0, INT_MAX),
	I64("lc", budget.last_charged, -1),
	BOOL("x", budget.exhausted),
	I64("i", budget.interruptions, 0),
	I64("rt", budget.restore_failures_total, 0),
	I64("ft", budget.failures_total, 0),
	INT("pe", budget.prev_end, 0, RB_END_COMPLETED),
	INT("pec", budget.prev_end_code, INT_MIN, INT_MAX),
	STR("ck", budget.checkpoint),
	I64("a", budget.cur.attempt, -1),
	INT("ph", budget.cur.phase, 0, RB_PHASE_RUNNING),
	INT("cf", budget.cur.confirmed, 0, RB_CONFIRM_EXIT0),
	INT("e", budget.cur.end, 0, RB_END_COMPLETED),
	INT("ec", budget.cur.end_code, INT_MIN, INT_MAX),
	I64("st", budget.cur.start_time, 0),
	I64("et", budget.cur.end_time, 0),
	BOOL("rf", budget.cur.refused),
	INT("M", budget.cur.limits.max_failures, RB_UNLIMITED, INT_MAX),
	INT("R", budget.cur.limits.restore_retry_num, 0, INT_MAX),
	INT("T", budget.cur.limits.restore_timeout, 0, INT_MAX),
	INT("acc", budget.cur.limits.accounting, 0, RB_ACCOUNTING_RAY),
	BOOL("cp", budget.cur.limits.count_preemptions),
	INT("MI", budget.cur.limits.max_interruptions, RB_UNLIMITED, INT_MAX),
	STR("cc", budget.cur.checkpoint),
	OPT_INT("fc", budget.fatal_code),
	OPT_I64("fx", budget.fatal_exits),
	OPT_I64("ir", budget.interruption_cap_refusals),
	OPT_STR("fi", fallback.cur_id),
	OPT_STR("ff", fallback.from),
	OPT_STR("fs", fallback.streak_id),
	OPT_INT("fn", fallback.streak),
	OPT_I64("fb", fallback.fallbacks),
	OPT_STR("fl", fallback.bad),
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

/* The line as it is written. */
typedef struct {
	char *out;
	size_t len, used;
	bool full;
} line_buf;

static void put(line_buf *b, const char *s, size_t n)
{
	if (b->full || b->used + n + 1 > b->len) {
		b->full = true;
		return;
	}
	memcpy(b->out + b->used, s, n);
	b->used += n;
	b->out[b->used] = '\0';
}

static int64_t int_of(const line_field *f, const rb_record *rec)
{
	const char *p = (const char *)rec + f->off;

	switch (f->type) {
	case T_INT:
		return *(const int *)p;
	case T_I64:
		return *(const int64_t *)p;
	case T_BOOL:
		return *(const bool *)p;
	default:
		return 0;
	}
}

static bool at_default(const line_field *f, const rb_record *rec)
{
	if (f->type == T_STR)
		return ((const char *)rec + f->off)[0] == '\0';
	return int_of(f, rec) == 0;
}

/* " key=value" of f. cc is "=" when it is ck (the usual case). */
static void put_field(line_buf *b, const line_field *f, const rb_record *rec)
{
	const char *p = (const char *)rec + f->off;
	char v[RB_FALLBACK_LIST_MAX * 3 + 32];
	ssize_t n;

	put(b, " ", 1);
	put(b, f->key, strlen(f->key));
	put(b, "=", 1);
	if (f->type == T_U64)
		n = (ssize_t)rb_fmt_u64(*(const uint64_t *)p, v);
	else if (f->type != T_STR)
		n = (ssize_t)rb_fmt_i64(int_of(f, rec), v);
	else if (strcmp(f->key, "cc") == 0 &&
		 strcmp(p, rec->budget.checkpoint) == 0 && p[0])
		n = (ssize_t)strlen(strcpy(v, "="));
	else
		n = rb_kv_escape(p, v, sizeof(v));
	if (n < 0)
		b->full = true;
	else
		put(b, v, (size_t)n);
}

ssize_t rb_budget_line_format(const rb_record *rec, char *out, size_t len,
			      rb_err *err)
{
	char buf[RB_BUDGET_LINE_MAX * 2];
	line_buf b = { buf, sizeof(buf), 0, false };
	size_t body;
	char sum[SUM_HEX + 1];

	put(&b, RB_BUDGET_TAG "v1", sizeof(RB_BUDGET_TAG "v1") - 1);
	for (size_t i = 0; i < N_FIELDS; i++)
		if (!fields[i].optional || !at_default(&fields[i], rec))
			put_field(&b, &fields[i], rec);
	body = sizeof(RB_BUDGET_TAG) - 1;
	put(&b, " " SUM_KEY, sizeof(" " SUM_KEY) - 1);
	rb_fmt_hex64(rb_checksum(buf + body, b.used - body), sum);
	put(&b, sum, SUM_HEX);
	if (b.full || b.used > RB_BUDGET_LINE_MAX)
		return rb_err_set(err, "the budget line would pass %d bytes (long checkpoint paths, or a long checkpoint.fallback bad list): store = \"controller\" cannot keep it",
				  RB_BUDGET_LINE_MAX);
	if (b.used + 1 > len)
		return rb_err_set(err, "no room for the budget line");
	memcpy(out, buf, b.used + 1);
	return (ssize_t)b.used;
}

/* ---- parsing --------------------------------------------------------------- */

/* The value v[0, n) of f into rec. 0 or -1. */
static int set_field(const line_field *f, const char *v, size_t n,
		     rb_record *rec)
{
	char *p = (char *)rec + f->off;
	int64_t x;

	if (f->type == T_U64)
		return rb_parse_u64(v, n, (uint64_t *)p);
	if (f->type == T_STR) {
		if (strcmp(f->key, "cc") == 0 && n == 1 && v[0] == '=') {
			if (!rec->budget.checkpoint[0])
				return -1;
			rb_strlcpy(p, rec->budget.checkpoint, f->size);
			return 0;
		}
		return rb_kv_unescape(v, n, p, f->size) < 0 ||
		       (f->optional && n == 0) ? -1 : 0;
	}
	if (rb_parse_i64(v, n, f->min, f->max, &x) < 0 ||
	    (f->optional && x == 0))
		return -1;
	if (f->type == T_INT)
		*(int *)p = (int)x;
	else if (f->type == T_I64)
		*(int64_t *)p = x;
	else
		*(bool *)p = x != 0;
	return 0;
}

/* The fields of body[0, n) (" key=value" each), in order. 0 or -1. */
static int parse_fields(const char *body, size_t n, rb_record *rec,
			rb_err *err)
{
	size_t p = 0, i = 0;

	while (p < n) {
		const char *tok = body + p + 1, *eq;
		size_t tn, kn;

		tn = strcspn(tok, " ");
		if (tn > n - p - 1)
			tn = n - p - 1;
		if (body[p] != ' ' || tn == 0)
			return rb_err_set(err, "budget line: two spaces, or a space missing, at byte %zu", p);
		eq = memchr(tok, '=', tn);
		if (!eq)
			return rb_err_set(err, "budget line: '%.*s' is not key=value", (int)(tn > 40 ? 40 : tn), tok);
		kn = (size_t)(eq - tok);
		while (i < N_FIELDS && (strlen(fields[i].key) != kn ||
					memcmp(fields[i].key, tok, kn) != 0)) {
			if (!fields[i].optional)
				return rb_err_set(err, "budget line: key '%s' missing (or a key out of order: '%.*s')",
						  fields[i].key, (int)(kn > 40 ? 40 : kn), tok);
			i++;
		}
		if (i == N_FIELDS)
			return rb_err_set(err, "budget line: unknown or repeated key '%.*s'", (int)(kn > 40 ? 40 : kn), tok);
		if (set_field(&fields[i], eq + 1, tn - kn - 1, rec) < 0)
			return rb_err_set(err, "budget line: bad value for '%s'", fields[i].key);
		i++;
		p += tn + 1;
	}
	for (; i < N_FIELDS; i++)
		if (!fields[i].optional)
			return rb_err_set(err, "budget line: key '%s' missing", fields[i].key);
	return 0;
}

/* Where " sum=" is in line[0, n), checked: the offset of its space, or -1. */
static ssize_t check_sum(const char *line, size_t n, rb_err *err)
{
	const size_t tag = sizeof(RB_BUDGET_TAG) - 1;
	const size_t tail = sizeof(" " SUM_KEY) - 1 + SUM_HEX;
	char want[SUM_HEX + 1];
	size_t at;

	if (n < tag + tail || memcmp(line + n - tail, " " SUM_KEY, tail - SUM_HEX) != 0)
		return rb_err_set(err, "budget line: no checksum at its end (cut short?)");
	at = n - tail;
	rb_fmt_hex64(rb_checksum(line + tag, at + tail - SUM_HEX - tag), want);
	if (memcmp(want, line + n - SUM_HEX, SUM_HEX) != 0)
		return rb_err_set(err, "budget line: checksum mismatch (edited by hand, or cut)");
	return (ssize_t)at;
}

int rb_budget_line_parse(const char *line, size_t n, rb_record *rec,
			 rb_err *err)
{
	static const char head[] = RB_BUDGET_TAG "v";
	const size_t hn = sizeof(head) - 1;
	rb_record tmp;
	ssize_t at;
	size_t vn;
	int64_t v;

	if (n < hn || memcmp(line, head, hn) != 0 || n > RB_BUDGET_LINE_MAX)
		return rb_err_set(err, "not a budget line (it must start '" RB_BUDGET_TAG "v%d' and be at most %d bytes)",
				  RB_BUDGET_LINE_VERSION, RB_BUDGET_LINE_MAX);
	vn = strcspn(line + hn, " ");
	if (vn > n - hn || rb_parse_i64(line + hn, vn, 0, INT_MAX, &v) < 0)
		return rb_err_set(err, "budget line: bad version");
	if (v != RB_BUDGET_LINE_VERSION)
		return rb_err_set(err, "budget line version %" PRId64 " (this plugin reads %d%s)",
				  v, RB_BUDGET_LINE_VERSION,
				  v > RB_BUDGET_LINE_VERSION ? ": a newer plugin wrote it; upgrade this node" : "");
	at = check_sum(line, n, err);
	if (at < 0)
		return -1;
	tmp = *rec;
	rb_budget_init(&tmp.budget);
	memset(&tmp.fallback, 0, sizeof(tmp.fallback));
	if (parse_fields(line + hn + vn, (size_t)at - hn - vn, &tmp, err) < 0)
		return -1;
	*rec = tmp;
	return 0;
}

int rb_budget_line_find(const char *comment, const char **at, size_t *n)
{
	const size_t tn = sizeof(RB_BUDGET_TAG) - 1;
	int found = 0;

	for (const char *p = comment; p; p = strchr(p, '\n')) {
		p += *p == '\n';
		if (strncmp(p, RB_BUDGET_TAG, tn) != 0)
			continue;
		if (found++)
			return -1;
		*at = p;
		*n = strcspn(p, "\n");
	}
	return found;
}
