/*
 * record.c - one job's ledger record as text (see record.h).
 *
 *   restore_budget-record 2
 *   cluster=c1
 *   job_id=42
 *   ...                       one key=value line per field, fixed order
 *   cur.limits.accounting=grouped
 *   cur.checkpoint=/home/a/ck/checkpoint-7
 *   checksum=0123456789abcdef  64-bit FNV-1a of every byte before this line
 *
 * This file holds the format: the field table, escaping, checksums and
 * writing. The strict parser is in record_parse.c.
 */
#include "record_int.h"

#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMBER_SIZE(m) sizeof(((rb_record *)0)->m)
#define FIELD(k, t, m, ...) { .key = k, .klen = sizeof(k) - 1, .type = t, .off = offsetof(rb_record, m), __VA_ARGS__ }
#define STR(k, m) FIELD(k, F_STR, m, .size = MEMBER_SIZE(m))
#define U32(k, m) FIELD(k, F_U32, m, .size = 0)
#define U64(k, m) FIELD(k, F_U64, m, .size = 0)
#define INT(k, m, lo) FIELD(k, F_INT, m, .min = (lo), .max = INT_MAX)
#define I64(k, m, lo) FIELD(k, F_I64, m, .min = (lo), .max = INT64_MAX)
#define TYPED(k, m, t) FIELD(k, t, m, .size = 0)
#define OPT(k, t, m) FIELD(k, t, m, .size = MEMBER_SIZE(m), .min = 0, .max = INT64_MAX, .optional = true)
#define OPT_INT(k, m, lo, d) FIELD(k, F_INT, m, .min = (lo), .max = INT_MAX, .optional = true, .dflt = (d))

/*
 * Every field of rb_record, its rb_budget and the budget's current attempt.
 * Ranges: counters and times are never negative; -1 means "none" for
 * attempt numbers and "unlimited" for max_failures; end_code is whatever the
 * epilog saw, so any int.
 */
const field rec_fields[REC_N_FIELDS] = {
	STR("cluster", cluster),
	U32("job_id", job_id),
	U32("uid", uid),
	U32("gid", gid),
	STR("user", user),
	STR("partition", partition),
	STR("account", account),
	STR("work_dir", work_dir),
	STR("checkpoint_dir", checkpoint_dir),
	STR("submission", submission),
	I64("created", created, 0),
	I64("updated", updated, 0),
	U64("seq", seq),
	INT("failures", budget.failures, 0),
	INT("restore_failures", budget.restore_failures, 0),
	INT("granted", budget.granted, 0),
	I64("last_charged", budget.last_charged, -1),
	TYPED("exhausted", budget.exhausted, F_BOOL),
	I64("interruptions", budget.interruptions, 0),
	I64("restore_failures_total", budget.restore_failures_total, 0),
	I64("failures_total", budget.failures_total, 0),
	TYPED("prev_end", budget.prev_end, F_END),
	INT("prev_end_code", budget.prev_end_code, INT_MIN),
	STR("checkpoint", budget.checkpoint),
	I64("cur.attempt", budget.cur.attempt, -1),
	TYPED("cur.phase", budget.cur.phase, F_PHASE),
	TYPED("cur.confirmed", budget.cur.confirmed, F_CONFIRM),
	TYPED("cur.end", budget.cur.end, F_END),
	INT("cur.end_code", budget.cur.end_code, INT_MIN),
	I64("cur.start_time", budget.cur.start_time, 0),
	I64("cur.end_time", budget.cur.end_time, 0),
	TYPED("cur.refused", budget.cur.refused, F_BOOL),
	INT("cur.limits.max_failures", budget.cur.limits.max_failures,
	    RB_UNLIMITED),
	INT("cur.limits.restore_retry_num", budget.cur.limits.restore_retry_num,
	    0),
	INT("cur.limits.restore_timeout", budget.cur.limits.restore_timeout, 0),
	TYPED("cur.limits.accounting", budget.cur.limits.accounting,
	      F_ACCOUNTING),
	TYPED("cur.limits.count_preemptions",
	      budget.cur.limits.count_preemptions, F_BOOL),
	STR("cur.checkpoint", budget.cur.checkpoint),
	OPT("fallback.cur_id", F_STR, fallback.cur_id),
	OPT("fallback.from", F_STR, fallback.from),
	OPT("fallback.streak_id", F_STR, fallback.streak_id),
	OPT("fallback.streak", F_INT, fallback.streak),
	OPT("fallback.fallbacks", F_I64, fallback.fallbacks),
	OPT("fallback.bad", F_STR, fallback.bad),
	/* exit rules and the interruption cap (docs/rule.md): optional too,
	 * so a job that uses neither has the record it always had */
	OPT("fatal_code", F_INT, budget.fatal_code),
	OPT("fatal_exits", F_I64, budget.fatal_exits),
	OPT("interruption_cap_refusals", F_I64,
	    budget.interruption_cap_refusals),
	OPT_INT("cur.limits.max_interruptions",
		budget.cur.limits.max_interruptions, RB_UNLIMITED, RB_UNLIMITED),
	/* an array task (docs/arrays.md): its array's job id and its task id;
	 * absent for a job that is not an array task */
	OPT("array_job_id", F_U32, array_job_id),
	OPT("array_task_id", F_U32, array_task_id),
};

/* REC_N_FIELDS is the table's length, and the parser tracks "seen" in one
 * 64-bit mask. */
_Static_assert(sizeof(rec_fields) / sizeof(rec_fields[0]) == REC_N_FIELDS,
	       "REC_N_FIELDS is not the length of rec_fields[]");
_Static_assert(REC_N_FIELDS <= 64, "too many record fields for the seen mask");

/*
 * Tripwire: a field added to rb_record, rb_budget, rb_attempt or rb_limits
 * but not to rec_fields[] above would be silently dropped by every write (the
 * ledger would forget it between the prolog and the epilog). When one of
 * these fails, add the new member to rec_fields[] (and to fill_record in
 * tests/unit/test_record.c), then update the size here. LP64 sizes only.
 */
#if defined(__LP64__)
_Static_assert(sizeof(rb_limits) == 24, "rb_limits changed: update rec_fields[]");
_Static_assert(sizeof(rb_attempt) == 4168,
	       "rb_attempt changed: update rec_fields[]");
_Static_assert(sizeof(rb_budget) == 8344, "rb_budget changed: update rec_fields[]");
_Static_assert(sizeof(rb_fallback) == 8400,
	       "rb_fallback changed: update rec_fields[]");
_Static_assert(sizeof(rb_record) == 26088,
	       "rb_record changed: update rec_fields[]");
#endif

/* ---- checksum and escaping ----------------------------------------------- */

bool rb_cluster_name_ok(const char *s)
{
	size_t i;

	if (!s || !s[0] || s[0] == '.')
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (i >= RB_CLUSTER_NAME_MAX)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return false;
	}
	return true;
}

int rb_submission_ok(const char *s)
{
	size_t n = 0;

	for (; s && s[n]; n++) {
		char c = s[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == ':' || c == '-'))
			return 0;
	}
	return n > 0 && n < RB_SUBMISSION_MAX;
}

uint64_t rb_checksum(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 offset basis */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;      /* FNV-1a 64 prime */
	}
	return h;
}

static bool needs_escape(unsigned char c)
{
	return c < 0x21 || c > 0x7e || c == '%' || c == '=';
}

static int hex_value(char c)
{
	/* Upper case only: that is what we write, and accepting one spelling
	 * keeps the text canonical. */
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

ssize_t rec_escape_bytes(const unsigned char *in, size_t n, char *out,
			 size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t pos = 0;
	size_t i;

	if (outlen == 0)
		return -1;
	for (i = 0; i < n; i++) {
		size_t need = needs_escape(in[i]) ? 3 : 1;

		/* Keep one byte for the NUL. */
		if (need >= outlen - pos)
			goto fail;
		if (need == 3) {
			out[pos++] = '%';
			out[pos++] = hex[in[i] >> 4];
			out[pos++] = hex[in[i] & 0xf];
		} else {
			out[pos++] = (char)in[i];
		}
	}
	out[pos] = '\0';
	return (ssize_t)pos;
fail:
	out[0] = '\0';
	return -1;
}

ssize_t rb_kv_escape(const char *in, char *out, size_t outlen)
{
	return rec_escape_bytes((const unsigned char *)in, strlen(in), out, outlen);
}

/*
 * Strict inverse of rb_kv_escape: "%XX" with upper-case hex of a byte that
 * needs escaping; %00 is refused (it cannot come from a C string and would
 * silently cut the value); a raw byte that should have been escaped is
 * refused. With out NULL, only checks (the same rules, the same size limit)
 * and returns the length it would write.
 */
ssize_t rb_kv_unescape(const char *in, size_t inlen, char *out, size_t outlen)
{
	size_t pos = 0;
	size_t i;

	if (outlen == 0)
		return -1;
	for (i = 0; i < inlen; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == '%') {
			int hi, lo;

			if (inlen - i < 3)
				goto fail;
			hi = hex_value(in[i + 1]);
			lo = hex_value(in[i + 2]);
			if (hi < 0 || lo < 0)
				goto fail;
			c = (unsigned char)(hi * 16 + lo);
			if (c == 0 || !needs_escape(c))
				goto fail;
			i += 2;
		} else if (needs_escape(c)) {
			goto fail;
		}
		if (pos + 1 >= outlen)
			goto fail;
		if (out)
			out[pos] = (char)c;
		pos++;
	}
	if (out)
		out[pos] = '\0';
	return (ssize_t)pos;
fail:
	if (out)
		out[0] = '\0';
	return -1;
}

/* ---- enum names ---------------------------------------------------------- */

/* The engine's name for enum value v of a field of this type, or NULL. */
static const char *enum_name(field_type type, int v)
{
	switch (type) {
	case F_PHASE:
		return rb_phase_name((rb_phase)v);
	case F_END:
		return rb_end_name((rb_end)v);
	case F_CONFIRM:
		return rb_confirm_name((rb_confirm)v);
	case F_ACCOUNTING:
		return rb_accounting_name((rb_accounting)v);
	default:
		return NULL;
	}
}

int rec_enum_value(field_type type, const char *name, int *out)
{
	rb_phase phase = RB_PHASE_NONE;
	rb_end end = RB_END_NONE;
	rb_confirm confirm = RB_CONFIRM_NONE;
	rb_accounting accounting = RB_ACCOUNTING_GROUPED;
	int rc;

	if (type == F_PHASE)
		rc = rb_phase_parse(name, &phase);
	else if (type == F_END)
		rc = rb_end_parse(name, &end);
	else if (type == F_CONFIRM)
		rc = rb_confirm_parse(name, &confirm);
	else if (type == F_ACCOUNTING)
		rc = rb_accounting_parse(name, &accounting);
	else
		return -1;
	if (rc != 0)
		return -1;
	*out = type == F_PHASE ? (int)phase : type == F_END ? (int)end :
	       type == F_CONFIRM ? (int)confirm : (int)accounting;
	return 0;
}

/* The enum member at p, of a field of this type. */
static int enum_member(field_type type, const char *p)
{
	switch (type) {
	case F_PHASE:
		return (int)*(const rb_phase *)p;
	case F_END:
		return (int)*(const rb_end *)p;
	case F_CONFIRM:
		return (int)*(const rb_confirm *)p;
	default: /* F_ACCOUNTING */
		return (int)*(const rb_accounting *)p;
	}
}

/*
 * The names themselves belong to engine.c (the environment and the CLI use
 * the same words). Here a name is only taken if it parses back to the same
 * value, so that we never write a record we could not read.
 */
static const char *field_enum_name(const field *f, const rb_record *rec)
{
	int v = enum_member(f->type, (const char *)rec + f->off), back;
	const char *n = enum_name(f->type, v);

	if (!n || rec_enum_value(f->type, n, &back) != 0 || back != v)
		return NULL;
	return n;
}

/*
 * The ledger parses every record it has just formatted (rb_ledger_write: it
 * never writes a record that would not read back), which checksummed the
 * same bytes twice; FNV-1a runs at ~1 ns a byte, the largest single cost of
 * a parse. So rb_record_format keeps, per thread, a copy of the bytes it
 * checksummed and the sum; the next parse takes that sum only if its text
 * is byte for byte that copy (memcmp: exact, so the check is the same), and
 * forgets it either way. Any other parse computes the checksum.
 */
#define MEMO_MAX 4096
static __thread struct {
	size_t len;                 /* 0: nothing remembered */
	uint64_t sum;
	char text[MEMO_MAX];
} memo;

static void memo_remember(const char *text, size_t len, uint64_t sum)
{
	if (len == 0 || len > MEMO_MAX) {
		memo.len = 0;
		return;
	}
	memcpy(memo.text, text, len);
	memo.len = len;
	memo.sum = sum;
}

uint64_t rec_memo_checksum(const char *text, size_t len)
{
	bool same = memo.len == len && memcmp(text, memo.text, len) == 0;
	uint64_t sum = same ? memo.sum : rb_checksum(text, len);

	memo.len = 0;
	return sum;
}

/* ---- formatting ---------------------------------------------------------- */

typedef struct {
	char *buf;
	size_t len;
	size_t pos;
	bool full;
} outbuf;

static void put(outbuf *o, const char *s, size_t n)
{
	/* Keep one byte for the NUL. */
	if (o->full || n >= o->len - o->pos) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->pos, s, n);
	o->pos += n;
	o->buf[o->pos] = '\0';
}

static void put_str(outbuf *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_escaped(outbuf *o, const char *s)
{
	ssize_t n;

	if (o->full)
		return;
	n = rb_kv_escape(s, o->buf + o->pos, o->len - o->pos);
	if (n < 0) {
		o->buf[o->pos] = '\0';
		o->full = true;
		return;
	}
	o->pos += (size_t)n;
}

/* Not snprintf: formatting a record with it cost more than the rest of the
 * formatting. */
size_t rb_fmt_u64(uint64_t v, char *out)
{
	char digits[20];
	size_t n = 0, i;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		out[i] = digits[n - 1 - i];
	return n;
}

size_t rb_fmt_i64(int64_t v, char *out)
{
	if (v < 0) {
		out[0] = '-';
		return 1 + rb_fmt_u64((uint64_t)0 - (uint64_t)v, out + 1);
	}
	return rb_fmt_u64((uint64_t)v, out);
}

size_t rb_fmt_hex64(uint64_t v, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 15; i >= 0; i--) {
		out[i] = hex[v & 0xf];
		v >>= 4;
	}
	return 16;
}

/* The decimal text of the integer field member at p, at num: its length. */
static size_t format_integer(field_type type, const char *p, char *num)
{
	switch (type) {
	case F_U32:
		return rb_fmt_u64(*(const uint32_t *)p, num);
	case F_INT:
		return rb_fmt_i64(*(const int *)p, num);
	case F_I64:
		return rb_fmt_i64(*(const int64_t *)p, num);
	default: /* F_U64 */
		return rb_fmt_u64(*(const uint64_t *)p, num);
	}
}

bool rec_field_is_default(const field *f, const rb_record *rec)
{
	const char *p = (const char *)rec + f->off;

	switch (f->type) {
	case F_STR:
		return p[0] == '\0';
	case F_INT:
		return *(const int *)p == f->dflt;
	case F_I64:
		return *(const int64_t *)p == f->dflt;
	case F_U32:
		return *(const uint32_t *)p == (uint32_t)f->dflt;
	default:
		return false;
	}
}

/* Append one field's "key=value\n"; -1 if the value cannot be written. */
static int put_field(outbuf *o, const field *f, const rb_record *rec)
{
	const char *p = (const char *)rec + f->off;
	char num[32];
	const char *name;

	if (f->optional && rec_field_is_default(f, rec))
		return 0;
	put(o, f->key, f->klen);
	put(o, "=", 1);
	switch (f->type) {
	case F_STR:
		/* A string field that lost its NUL would make us read past
		 * the member; refuse it instead. */
		if (!memchr(p, '\0', f->size))
			return -1;
		put_escaped(o, p);
		break;
	case F_U32:
	case F_INT:
	case F_I64:
	case F_U64:
		put(o, num, format_integer(f->type, p, num));
		break;
	case F_BOOL:
		put_str(o, *(const bool *)p ? "true" : "false");
		break;
	default:
		name = field_enum_name(f, rec);
		if (!name)
			return -1;
		put_escaped(o, name);
		break;
	}
	put(o, "\n", 1);
	return 0;
}

ssize_t rb_record_format(const rb_record *rec, char *buf, size_t len)
{
	outbuf o = { buf, len, 0, false };
	char line[sizeof(CHECKSUM_KEY) + CHECKSUM_HEX + 2];
	size_t i, n;
	uint64_t sum;

	if (len == 0)
		return -1;
	buf[0] = '\0';
	put_str(&o, VERSION_PREFIX);
	n = rb_fmt_i64(RB_RECORD_VERSION, line);
	line[n++] = '\n';
	put(&o, line, n);
	for (i = 0; i < REC_N_FIELDS; i++)
		if (put_field(&o, &rec_fields[i], rec) < 0)
			return -1;
	if (o.full)
		return -1;
	/* CHECKSUM_KEY "%016" PRIx64 "\n" */
	sum = rb_checksum(buf, o.pos);
	memo_remember(buf, o.pos, sum);
	n = sizeof(CHECKSUM_KEY) - 1;
	memcpy(line, CHECKSUM_KEY, n);
	n += rb_fmt_hex64(sum, line + n);
	line[n++] = '\n';
	put(&o, line, n);
	if (o.full)
		return -1;
	return (ssize_t)o.pos;
}

void rb_record_init(rb_record *rec)
{
	memset(rec, 0, sizeof(*rec));
	rb_budget_init(&rec->budget);
}

const char *rb_job_addr(uint32_t job_id, uint32_t array_job_id,
			uint32_t array_task_id, char *out)
{
	if (array_job_id != 0)
		snprintf(out, RB_JOB_ADDR_MAX, "%" PRIu32 "_%" PRIu32,
			 array_job_id, array_task_id);
	else
		snprintf(out, RB_JOB_ADDR_MAX, "%" PRIu32, job_id);
	return out;
}
