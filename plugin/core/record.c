/*
 * record.c - one job's ledger record as text (see record.h).
 *
 *   restore_budget-record 1
 *   cluster=c1
 *   job_id=42
 *   ...                       one key=value line per field, fixed order
 *   cur.limits.accounting=grouped
 *   cur.checkpoint=/home/a/ck/checkpoint-7
 *   checksum=0123456789abcdef  64-bit FNV-1a of every byte before this line
 *
 * The parser is written for hostile input (the ledger is shared over NFS and
 * the parser will be fuzzed): every read is bounded by `len`, integers are
 * parsed by a checked routine (no strtol, no overflow), and the whole text is
 * validated into a scratch record before the caller's record is touched, so
 * a refused record never leaves zeros or half a record behind.
 *
 * The accepted text is canonical: escapes are upper-case and only for bytes
 * that need them, integers have no sign or leading zeros beyond "-N" and
 * "0". So for any text that parses, formatting the result gives the same
 * bytes back (up to key order), a property a fuzzer can check.
 */
#include "record.h"

#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERSION_PREFIX "restore_budget-record "
#define CHECKSUM_KEY "checksum="
#define CHECKSUM_HEX 16
/* Longest enum name we accept when parsing; longer is simply unknown. */
#define ENUM_NAME_MAX 32
/* How much of a bad key or value an error message quotes. */
#define SHOW_MAX 48

typedef enum {
	F_STR,
	F_U32,
	F_INT,
	F_I64,
	F_U64,
	F_BOOL,
	F_PHASE,
	F_END,
	F_CONFIRM,
	F_ACCOUNTING,
} field_type;

typedef struct {
	const char *key;
	size_t klen;   /* strlen(key) */
	size_t off;
	size_t size;   /* F_STR: buffer size including the NUL */
	int64_t min;   /* F_INT, F_I64: accepted range */
	int64_t max;
	field_type type;
	int since;     /* the record version that added it; 0 = the first */
} field;

#define MEMBER_SIZE(m) sizeof(((rb_record *)0)->m)
#define FIELD(k, t, m, ...) { .key = k, .klen = sizeof(k) - 1, .type = t, .off = offsetof(rb_record, m), __VA_ARGS__ }
#define STR(k, m) FIELD(k, F_STR, m, .size = MEMBER_SIZE(m))
#define U32(k, m) FIELD(k, F_U32, m, .size = 0)
#define U64(k, m) FIELD(k, F_U64, m, .size = 0)
#define INT(k, m, lo) FIELD(k, F_INT, m, .min = (lo), .max = INT_MAX)
#define I64(k, m, lo) FIELD(k, F_I64, m, .min = (lo), .max = INT64_MAX)
#define TYPED(k, m, t) FIELD(k, t, m, .size = 0)
#define STR_SINCE(k, m, v) FIELD(k, F_STR, m, .size = MEMBER_SIZE(m), .since = (v))

/*
 * Every field of rb_record, its rb_budget and the budget's current attempt.
 * Ranges: counters and times are never negative; -1 means "none" for
 * attempt numbers and "unlimited" for max_failures; end_code is whatever the
 * epilog saw, so any int.
 */
static const field fields[] = {
	STR("cluster", cluster),
	U32("job_id", job_id),
	U32("uid", uid),
	U32("gid", gid),
	STR("user", user),
	STR("partition", partition),
	STR("account", account),
	STR("work_dir", work_dir),
	STR("checkpoint_dir", checkpoint_dir),
	STR_SINCE("submission", submission, 2),
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
};

#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

/* The parser tracks "seen" in one 64-bit mask. */
_Static_assert(N_FIELDS <= 64, "too many record fields for the seen mask");

/*
 * Tripwire: a field added to rb_record, rb_budget, rb_attempt or rb_limits
 * but not to fields[] above would be silently dropped by every write (the
 * ledger would forget it between the prolog and the epilog). When one of
 * these fails, add the new member to fields[] (and to fill_record in
 * tests/unit/test_record.c), then update the size here. LP64 sizes only.
 */
#if defined(__LP64__)
_Static_assert(sizeof(rb_limits) == 20, "rb_limits changed: update fields[]");
_Static_assert(sizeof(rb_attempt) == 4160,
	       "rb_attempt changed: update fields[]");
_Static_assert(sizeof(rb_budget) == 8320, "rb_budget changed: update fields[]");
_Static_assert(sizeof(rb_record) == 17656,
	       "rb_record changed: update fields[]");
#endif

/* ---- checksum and escaping ---------------------------------------------- */

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

/* Escape n bytes of in into out (size outlen, NUL-terminated). */
static ssize_t escape_bytes(const unsigned char *in, size_t n, char *out,
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
	return escape_bytes((const unsigned char *)in, strlen(in), out, outlen);
}

/*
 * Strict inverse of rb_kv_escape: "%XX" with upper-case hex of a byte that
 * needs escaping; %00 is refused (it cannot come from a C string and would
 * silently cut the value); a raw byte that should have been escaped is
 * refused. With out NULL, only checks (the same rules, the same size limit)
 * and returns the length it would write.
 */
static ssize_t unescape(const char *in, size_t inlen, char *out, size_t outlen)
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

ssize_t rb_kv_unescape(const char *in, size_t inlen, char *out, size_t outlen)
{
	return unescape(in, inlen, out, outlen);
}

/* ---- enum names ---------------------------------------------------------- */

/*
 * The names themselves belong to engine.c (the environment and the CLI use
 * the same words). These wrappers only insist that a name parses back to the
 * same value, so that we never write a record we could not read.
 */
static const char *phase_name(rb_phase v)
{
	const char *n = rb_phase_name(v);
	rb_phase back;

	if (!n || rb_phase_parse(n, &back) != 0 || back != v)
		return NULL;
	return n;
}

static const char *end_name(rb_end v)
{
	const char *n = rb_end_name(v);
	rb_end back;

	if (!n || rb_end_parse(n, &back) != 0 || back != v)
		return NULL;
	return n;
}

static const char *confirm_name(rb_confirm v)
{
	const char *n = rb_confirm_name(v);
	rb_confirm back;

	if (!n || rb_confirm_parse(n, &back) != 0 || back != v)
		return NULL;
	return n;
}

static const char *accounting_name(rb_accounting v)
{
	const char *n = rb_accounting_name(v);
	rb_accounting back;

	if (!n || rb_accounting_parse(n, &back) != 0 || back != v)
		return NULL;
	return n;
}

static const char *field_enum_name(const field *f, const rb_record *rec)
{
	const char *p = (const char *)rec + f->off;

	switch (f->type) {
	case F_PHASE:
		return phase_name(*(const rb_phase *)p);
	case F_END:
		return end_name(*(const rb_end *)p);
	case F_CONFIRM:
		return confirm_name(*(const rb_confirm *)p);
	case F_ACCOUNTING:
		return accounting_name(*(const rb_accounting *)p);
	default:
		return NULL;
	}
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

/* rb_checksum(text, len), from the memo when text is what it holds. */
static uint64_t memo_checksum(const char *text, size_t len)
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

/* Decimal text of an unsigned / signed value at out (no NUL), as "%" PRIu64
 * / "%" PRId64 would write it; returns its length. Formatting a record
 * with snprintf cost more than the rest of the formatting. */
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

/* Append one field's "key=value\n"; -1 if the value cannot be written. */
static int put_field(outbuf *o, const field *f, const rb_record *rec)
{
	const char *p = (const char *)rec + f->off;
	char num[32];
	const char *name;

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
		put(o, num, rb_fmt_u64(*(const uint32_t *)p, num));
		break;
	case F_INT:
		put(o, num, rb_fmt_i64(*(const int *)p, num));
		break;
	case F_I64:
		put(o, num, rb_fmt_i64(*(const int64_t *)p, num));
		break;
	case F_U64:
		put(o, num, rb_fmt_u64(*(const uint64_t *)p, num));
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
	for (i = 0; i < N_FIELDS; i++)
		if (put_field(&o, &fields[i], rec) < 0)
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

/* ---- parsing ------------------------------------------------------------- */

/* Canonical unsigned decimal: digits only, no leading zero but "0". */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || (s[0] == '0' && n > 1))
		return -1;
	for (i = 0; i < n; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -1;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Canonical signed decimal within [min, max]; "-0" is refused. */
static int parse_i64(const char *s, size_t n, int64_t min, int64_t max,
		     int64_t *out)
{
	bool neg = n > 0 && s[0] == '-';
	uint64_t mag;
	int64_t v;

	if (parse_u64(s + neg, n - neg, &mag) < 0)
		return -1;
	if (neg) {
		if (mag == 0 || mag > (uint64_t)INT64_MAX + 1)
			return -1;
		/* -(INT64_MAX + 1) cannot be negated in int64_t. */
		v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN
						   : -(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return -1;
		v = (int64_t)mag;
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Quote at most SHOW_MAX bytes of untrusted text for an error message. */
static const char *show(const char *s, size_t n, char *buf, size_t len)
{
	size_t take = n > SHOW_MAX ? SHOW_MAX : n;

	if (escape_bytes((const unsigned char *)s, take, buf, len) < 0)
		return "?";
	if (take < n) {
		size_t used = strlen(buf);

		if (used + sizeof("...") <= len)
			memcpy(buf + used, "...", sizeof("..."));
	}
	return buf;
}

/* One parsed value, held until the whole text has been checked. */
typedef struct {
	const char *text;  /* F_STR: the escaped value (checked) */
	size_t n;
	union {
		uint64_t u;
		int64_t i;
		bool b;
		int e;         /* enums */
	} v;
} value;

/* Check one value of field f and keep it in val. Returns 0, or -1 with why
 * (NULL for an integer out of its field's range: the caller names the
 * range). Nothing is written to the caller's record here. */
static int parse_value(const field *f, const char *v, size_t n, value *val,
		       const char **why)
{
	char name[ENUM_NAME_MAX];
	uint64_t u;
	int64_t i;

	switch (f->type) {
	case F_STR:
		if (unescape(v, n, NULL, f->size) < 0) {
			*why = "bad %-escape, unescaped byte or too long";
			return -1;
		}
		val->text = v;
		val->n = n;
		return 0;
	case F_U32:
		if (parse_u64(v, n, &u) < 0 || u > UINT32_MAX) {
			*why = "not a decimal integer in 0..4294967295";
			return -1;
		}
		val->v.u = u;
		return 0;
	case F_U64:
		if (parse_u64(v, n, &u) < 0) {
			*why = "not a decimal integer in 0..2^64-1";
			return -1;
		}
		val->v.u = u;
		return 0;
	case F_INT:
	case F_I64:
		if (parse_i64(v, n, f->min, f->max, &i) < 0)
			return -1; /* why stays NULL: the caller names the range */
		val->v.i = i;
		return 0;
	case F_BOOL:
		if (n == 4 && memcmp(v, "true", 4) == 0)
			val->v.b = true;
		else if (n == 5 && memcmp(v, "false", 5) == 0)
			val->v.b = false;
		else {
			*why = "not true or false";
			return -1;
		}
		return 0;
	default:
		break;
	}

	/* Enums: unescape into a small buffer, then the engine's parser. */
	*why = "unknown name";
	if (unescape(v, n, name, sizeof(name)) < 0)
		return -1;
	switch (f->type) {
	case F_PHASE: {
		rb_phase x;

		if (rb_phase_parse(name, &x) < 0)
			return -1;
		val->v.e = (int)x;
		return 0;
	}
	case F_END: {
		rb_end x;

		if (rb_end_parse(name, &x) < 0)
			return -1;
		val->v.e = (int)x;
		return 0;
	}
	case F_CONFIRM: {
		rb_confirm x;

		if (rb_confirm_parse(name, &x) < 0)
			return -1;
		val->v.e = (int)x;
		return 0;
	}
	case F_ACCOUNTING: {
		rb_accounting x;

		if (rb_accounting_parse(name, &x) < 0)
			return -1;
		val->v.e = (int)x;
		return 0;
	}
	default:
		return -1;
	}
}

/* Put a checked value into its member of rec. */
static void store_value(const field *f, const value *val, rb_record *rec)
{
	char *p = (char *)rec + f->off;

	switch (f->type) {
	case F_STR:
		/* checked by parse_value: cannot fail */
		(void)unescape(val->text, val->n, p, f->size);
		break;
	case F_U32:
		*(uint32_t *)p = (uint32_t)val->v.u;
		break;
	case F_U64:
		*(uint64_t *)p = val->v.u;
		break;
	case F_INT:
		*(int *)p = (int)val->v.i;
		break;
	case F_I64:
		*(int64_t *)p = val->v.i;
		break;
	case F_BOOL:
		*(bool *)p = val->v.b;
		break;
	case F_PHASE:
		*(rb_phase *)p = (rb_phase)val->v.e;
		break;
	case F_END:
		*(rb_end *)p = (rb_end)val->v.e;
		break;
	case F_CONFIRM:
		*(rb_confirm *)p = (rb_confirm)val->v.e;
		break;
	case F_ACCOUNTING:
		*(rb_accounting *)p = (rb_accounting)val->v.e;
		break;
	}
}

/* The field called key[0, n). Records are written in fields[] order, so
 * the one after the previous line's (hint) is tried first. */
static const field *find_field(const char *key, size_t n, size_t hint,
			       size_t *index)
{
	size_t i;

	if (hint < N_FIELDS && fields[hint].klen == n &&
	    memcmp(fields[hint].key, key, n) == 0) {
		*index = hint;
		return &fields[hint];
	}
	for (i = 0; i < N_FIELDS; i++) {
		if (fields[i].klen == n && memcmp(fields[i].key, key, n) == 0) {
			*index = i;
			return &fields[i];
		}
	}
	return NULL;
}

/* Check the key=value lines in text[start, end), numbered from line 2, into
 * vals[] (one per field). */
static int parse_fields(const char *text, size_t start, size_t end,
			int version, value *vals, rb_err *err)
{
	uint64_t seen = 0;
	unsigned lineno = 2;
	size_t p = start, hint = 0;
	char q[SHOW_MAX * 3 + 8];
	size_t i;

	while (p < end) {
		/* end is the start of the checksum line, so every line before
		 * it ends with '\n' inside [p, end). */
		const char *nl = memchr(text + p, '\n', end - p);
		size_t e = (size_t)(nl - text);
		const char *eq = memchr(text + p, '=', e - p);
		const char *why = NULL;
		const field *f;
		size_t idx = 0;
		size_t klen, vstart;

		if (e == p)
			return rb_err_set(err, "line %u: empty line", lineno);
		if (!eq)
			return rb_err_set(err, "line %u: '%s' is not key=value",
					  lineno, show(text + p, e - p, q,
						       sizeof(q)));
		klen = (size_t)(eq - (text + p));
		vstart = (size_t)(eq - text) + 1;
		f = find_field(text + p, klen, hint, &idx);
		if (!f)
			return rb_err_set(err, "line %u: unknown key '%s'",
					  lineno, show(text + p, klen, q,
						       sizeof(q)));
		if (f->since > version)
			return rb_err_set(err, "line %u: key '%s' is not part of "
					  "record version %d", lineno, f->key,
					  version);
		if (seen & (1ULL << idx))
			return rb_err_set(err, "line %u: duplicate key '%s'",
					  lineno, f->key);
		seen |= 1ULL << idx;
		hint = idx + 1;
		if (parse_value(f, text + vstart, e - vstart, &vals[idx],
				&why) < 0) {
			show(text + vstart, e - vstart, q, sizeof(q));
			if (why)
				return rb_err_set(err, "line %u: bad value for "
						  "%s: '%s' (%s)", lineno,
						  f->key, q, why);
			return rb_err_set(err, "line %u: bad value for %s: "
					  "'%s' (expected a decimal integer in "
					  "%" PRId64 "..%" PRId64 ")", lineno,
					  f->key, q, f->min, f->max);
		}
		p = e + 1;
		lineno++;
	}
	for (i = 0; i < N_FIELDS; i++) {
		if (seen & (1ULL << i))
			continue;
		if (fields[i].since > version) {
			/* an older record: the field is read as empty */
			memset(&vals[i], 0, sizeof(vals[i]));
			vals[i].text = "";
			continue;
		}
		return rb_err_set(err, "missing key '%s'", fields[i].key);
	}
	return 0;
}

/* Check the first line; returns the offset just after it (its version in
 * *version), or -1. Versions RB_RECORD_VERSION_OLDEST..RB_RECORD_VERSION
 * are read; a newer one (a node still on an older plugin during a rolling
 * upgrade) is refused with both numbers, and on_error decides. */
static ssize_t parse_version(const char *text, size_t len, int *version,
			     rb_err *err)
{
	const size_t plen = sizeof(VERSION_PREFIX) - 1;
	const char *nl = memchr(text, '\n', len);
	size_t l1;
	uint64_t v;

	if (!nl)
		return rb_err_set(err, "torn record: no complete first line");
	l1 = (size_t)(nl - text);
	if (l1 < plen || memcmp(text, VERSION_PREFIX, plen) != 0)
		return rb_err_set(err, "not a restore_budget record (the first "
				  "line is not '" VERSION_PREFIX "%d')",
				  RB_RECORD_VERSION);
	if (parse_u64(text + plen, l1 - plen, &v) < 0)
		return rb_err_set(err, "bad version line (expected '"
				  VERSION_PREFIX "%d')", RB_RECORD_VERSION);
	if (v < RB_RECORD_VERSION_OLDEST || v > RB_RECORD_VERSION)
		return rb_err_set(err, "unknown record version %" PRIu64
				  " (this plugin reads %d to %d; a newer "
				  "plugin wrote it: upgrade this node)", v,
				  RB_RECORD_VERSION_OLDEST, RB_RECORD_VERSION);
	*version = (int)v;
	return (ssize_t)l1 + 1;
}

/*
 * Find and check the checksum line. It is the first line that starts with
 * "checksum=" (no field is called that), it must be complete and the last
 * thing in the text. Returns its offset, or -1.
 */
static ssize_t parse_checksum(const char *text, size_t len, size_t body,
			      rb_err *err)
{
	const size_t klen = sizeof(CHECKSUM_KEY) - 1;
	size_t p = body;
	size_t ck, e, i;
	uint64_t want = 0;
	const char *nl;

	for (;;) {
		if (p >= len)
			return rb_err_set(err, "torn record: no checksum line");
		if (len - p >= klen && memcmp(text + p, CHECKSUM_KEY, klen) == 0)
			break;
		nl = memchr(text + p, '\n', len - p);
		if (!nl)
			return rb_err_set(err, "torn record: no checksum line");
		p = (size_t)(nl - text) + 1;
	}
	ck = p;
	nl = memchr(text + ck, '\n', len - ck);
	if (!nl)
		return rb_err_set(err, "torn record: checksum line incomplete");
	e = (size_t)(nl - text);
	if (e - ck != klen + CHECKSUM_HEX)
		return rb_err_set(err, "malformed checksum line");
	for (i = ck + klen; i < e; i++) {
		char c = text[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return rb_err_set(err, "malformed checksum line");
		want = want << 4 | d;
	}
	if (e + 1 != len)
		return rb_err_set(err, "%zu unexpected bytes after the checksum "
				  "line", len - e - 1);
	if (memo_checksum(text, (size_t)ck) != want)
		return rb_err_set(err, "checksum mismatch (record torn or "
				  "edited by hand)");
	return (ssize_t)ck;
}

int rb_record_parse(const char *text, size_t len, rb_record *rec, rb_err *err)
{
	value vals[N_FIELDS];
	ssize_t body, ck;
	size_t i;
	int version = 0, rc = -1;

	if (!text || len == 0) {
		rb_err_set(err, "empty record");
		goto fail;
	}
	if (len > RB_RECORD_TEXT_MAX) {
		rb_err_set(err, "record of %zu bytes is larger than %ld",
			   len, RB_RECORD_TEXT_MAX);
		goto fail;
	}
	if (memchr(text, '\0', len)) {
		rb_err_set(err, "NUL byte at offset %zu",
			   (size_t)((const char *)memchr(text, '\0', len) -
				    text));
		goto fail;
	}
	body = parse_version(text, len, &version, err);
	if (body < 0)
		goto fail;
	ck = parse_checksum(text, len, (size_t)body, err);
	if (ck < 0)
		goto fail;
	/* Every line is checked before rec is touched (a refused record
	 * leaves it as it was); then rec is cleared and filled. No scratch
	 * record: allocating, zeroing and copying 17.5 KB per parse cost more
	 * than the parse. */
	if (parse_fields(text, (size_t)body, (size_t)ck, version, vals,
			 err) < 0)
		goto fail;
	memset(rec, 0, sizeof(*rec));
	for (i = 0; i < N_FIELDS; i++)
		store_value(&fields[i], &vals[i], rec);
	rc = 0;
fail:
	return rc;
}
