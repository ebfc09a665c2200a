/*
 * record_parse.c - the strict parser of a record's text (see record.h; the
 * format itself is in record.c).
 *
 * The parser is written for hostile input (the ledger is shared over NFS and
 * the parser will be fuzzed): every read is bounded by `len`, integers are
 * parsed by a checked routine (no strtol, no overflow), and the whole text is
 * checked before the caller's record is touched, so a refused record never
 * leaves zeros or half a record behind.
 *
 * The accepted text is canonical: escapes are upper-case and only for bytes
 * that need them, integers have no sign or leading zeros beyond "-N" and
 * "0". So for any text that parses, formatting the result gives the same
 * bytes back (up to key order), a property a fuzzer can check.
 */
#include "record_int.h"

#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

/* Longest enum name we accept when parsing; longer is simply unknown. */
#define ENUM_NAME_MAX 32
/* How much of a bad key or value an error message quotes. */
#define SHOW_MAX 48

int rb_parse_u64(const char *s, size_t n, uint64_t *out)
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

int rb_parse_i64(const char *s, size_t n, int64_t min, int64_t max,
		 int64_t *out)
{
	bool neg = n > 0 && s[0] == '-';
	uint64_t mag;
	int64_t v;

	if (rb_parse_u64(s + neg, n - neg, &mag) < 0)
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
	bool cut = n > SHOW_MAX;

	if (rec_escape_bytes((const unsigned char *)s, cut ? SHOW_MAX : n, buf,
			     len) < 0)
		return "?";
	if (cut) {
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

/* F_STR: the escaped value is checked now and unescaped by store_value. */
static int parse_str(const field *f, const char *v, size_t n, value *val,
		     const char **why)
{
	if (rb_kv_unescape(v, n, NULL, f->size) < 0) {
		*why = "bad %-escape, unescaped byte or too long";
		return -1;
	}
	val->text = v;
	val->n = n;
	return 0;
}

static int parse_integer(const field *f, const char *v, size_t n,
			 value *val, const char **why)
{
	uint64_t u;
	int64_t i;

	switch (f->type) {
	case F_U32:
		if (rb_parse_u64(v, n, &u) < 0 || u > UINT32_MAX) {
			*why = "not a decimal integer in 0..4294967295";
			return -1;
		}
		val->v.u = u;
		return 0;
	case F_U64:
		if (rb_parse_u64(v, n, &u) < 0) {
			*why = "not a decimal integer in 0..2^64-1";
			return -1;
		}
		val->v.u = u;
		return 0;
	default: /* F_INT, F_I64 */
		if (rb_parse_i64(v, n, f->min, f->max, &i) < 0)
			return -1; /* why stays NULL: the caller names the range */
		val->v.i = i;
		return 0;
	}
}

static int parse_bool(const char *v, size_t n, value *val, const char **why)
{
	if (n == 4 && memcmp(v, "true", 4) == 0)
		val->v.b = true;
	else if (n == 5 && memcmp(v, "false", 5) == 0)
		val->v.b = false;
	else {
		*why = "not true or false";
		return -1;
	}
	return 0;
}

/* Enums: unescape into a small buffer, then the engine's parser. */
static int parse_enum(const field *f, const char *v, size_t n, value *val,
		      const char **why)
{
	char name[ENUM_NAME_MAX];
	int e;

	*why = "unknown name";
	if (rb_kv_unescape(v, n, name, sizeof(name)) < 0)
		return -1;
	if (rec_enum_value(f->type, name, &e) < 0)
		return -1;
	val->v.e = e;
	return 0;
}

/* Check one value of field f and keep it in val. Returns 0, or -1 with why
 * (NULL for an integer out of its field's range: the caller names the
 * range). Nothing is written to the caller's record here. */
static int parse_value(const field *f, const char *v, size_t n, value *val,
		       const char **why)
{
	switch (f->type) {
	case F_STR:
		return parse_str(f, v, n, val, why);
	case F_U32:
	case F_U64:
	case F_INT:
	case F_I64:
		return parse_integer(f, v, n, val, why);
	case F_BOOL:
		return parse_bool(v, n, val, why);
	default:
		return parse_enum(f, v, n, val, why);
	}
}

/* Put a checked value into its member of rec. */
static void store_value(const field *f, const value *val, rb_record *rec)
{
	char *p = (char *)rec + f->off;

	switch (f->type) {
	case F_STR:
		/* checked by parse_value: cannot fail */
		(void)rb_kv_unescape(val->text, val->n, p, f->size);
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

/* The field called key[0, n). Records are written in rec_fields[] order, so
 * the one after the previous line's (hint) is tried first. */
static const field *find_field(const char *key, size_t n, size_t hint,
			       size_t *index)
{
	size_t i;

	if (hint < REC_N_FIELDS && rec_fields[hint].klen == n &&
	    memcmp(rec_fields[hint].key, key, n) == 0) {
		*index = hint;
		return &rec_fields[hint];
	}
	for (i = 0; i < REC_N_FIELDS; i++) {
		if (rec_fields[i].klen == n && memcmp(rec_fields[i].key, key, n) == 0) {
			*index = i;
			return &rec_fields[i];
		}
	}
	return NULL;
}

/* What parse_fields has seen so far. */
typedef struct {
	unsigned lineno;   /* from 2: line 1 is the version */
	uint64_t seen;     /* bit i: rec_fields[i] had its line */
	size_t hint;       /* the field expected next (find_field) */
} line_walk;

/* The message for a bad value of f: why, or f's range (why NULL). */
static int bad_value(const field *f, unsigned lineno, const char *v,
		     size_t n, const char *why, rb_err *err)
{
	char q[SHOW_MAX * 3 + 8];

	show(v, n, q, sizeof(q));
	if (why)
		return rb_err_set(err, "line %u: bad value for %s: '%s' (%s)",
				  lineno, f->key, q, why);
	return rb_err_set(err, "line %u: bad value for %s: '%s' (expected a "
			  "decimal integer in %" PRId64 "..%" PRId64 ")", lineno,
			  f->key, q, f->min, f->max);
}

/* The field of the line text[p, e) into *f: known, not seen yet (then marked seen). *idx: its index, *eq: the offset of its
 * '='. 0, or -1 with err. */
static int line_field(const char *text, size_t p, size_t e, line_walk *w,
		      const field **f, size_t *idx, size_t *eq, rb_err *err)
{
	char q[SHOW_MAX * 3 + 8];
	const char *sep = memchr(text + p, '=', e - p);

	if (e == p)
		return rb_err_set(err, "line %u: empty line", w->lineno);
	if (!sep)
		return rb_err_set(err, "line %u: '%s' is not key=value",
				  w->lineno, show(text + p, e - p, q, sizeof(q)));
	*eq = (size_t)(sep - text);
	*f = find_field(text + p, *eq - p, w->hint, idx);
	if (!*f)
		return rb_err_set(err, "line %u: unknown key '%s'", w->lineno,
				  show(text + p, *eq - p, q, sizeof(q)));
	if (w->seen & (1ULL << *idx))
		return rb_err_set(err, "line %u: duplicate key '%s'", w->lineno,
				  (*f)->key);
	w->seen |= 1ULL << *idx;
	w->hint = *idx + 1;
	return 0;
}

/* Every field has had its line, or is optional (then it is read as empty,
 * or as its dflt). 0, or -1 naming the first one missing. */
static int check_all_seen(const line_walk *w, value *vals, rb_err *err)
{
	size_t i;

	for (i = 0; i < REC_N_FIELDS; i++) {
		if (w->seen & (1ULL << i))
			continue;
		if (rec_fields[i].optional) {
			memset(&vals[i], 0, sizeof(vals[i]));
			vals[i].text = "";
			vals[i].v.i = rec_fields[i].dflt;
			continue;
		}
		return rb_err_set(err, "missing key '%s'", rec_fields[i].key);
	}
	return 0;
}

/* An optional field is never written at its default (record.c), so a
 * line that holds it (v[0, n): "", or the decimal of its dflt) is not
 * canonical: refused, as the fuzzer demands. */
static bool optional_at_default(const field *f, const char *v, size_t n,
				const char **why)
{
	char d[24];
	size_t dn = rb_fmt_i64(f->dflt, d);
	bool dflt = f->optional &&
		    (n == 0 || (f->type != F_STR && n == dn &&
				memcmp(v, d, n) == 0));

	if (dflt)
		*why = "an optional key is not written at its default";
	return dflt;
}

/* Check the key=value lines in text[start, end), numbered from line 2, into
 * vals[] (one per field). */
static int parse_fields(const char *text, size_t start, size_t end,
			value *vals, rb_err *err)
{
	line_walk w = { .lineno = 2 };
	size_t p = start;

	while (p < end) {
		/* end is the start of the checksum line, so every line before
		 * it ends with '\n' inside [p, end). */
		const char *nl = memchr(text + p, '\n', end - p);
		size_t e = (size_t)(nl - text), idx = 0, eq = 0;
		const char *why = NULL;
		const field *f = NULL;

		if (line_field(text, p, e, &w, &f, &idx, &eq, err) < 0)
			return -1;
		if (parse_value(f, text + eq + 1, e - eq - 1, &vals[idx],
				&why) < 0 ||
		    optional_at_default(f, text + eq + 1, e - eq - 1, &why))
			return bad_value(f, w.lineno, text + eq + 1, e - eq - 1,
					 why, err);
		p = e + 1;
		w.lineno++;
	}
	return check_all_seen(&w, vals, err);
}

/* Check the first line; returns the offset just after it, or -1. Only
 * RB_RECORD_VERSION is read; any other (a newer one: a node still on an
 * older plugin during a rolling upgrade) is refused with both numbers, and
 * on_error decides (docs/security.md, "Record versions"). */
static ssize_t parse_version(const char *text, size_t len, rb_err *err)
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
	if (rb_parse_u64(text + plen, l1 - plen, &v) < 0)
		return rb_err_set(err, "bad version line (expected '"
				  VERSION_PREFIX "%d')", RB_RECORD_VERSION);
	if (v != RB_RECORD_VERSION)
		return rb_err_set(err, "unknown record version %" PRIu64
				  " (this plugin reads %d%s)", v,
				  RB_RECORD_VERSION, v > RB_RECORD_VERSION ?
				  "; a newer plugin wrote it: upgrade this node"
				  : "");
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
	if (rec_memo_checksum(text, (size_t)ck) != want)
		return rb_err_set(err, "checksum mismatch (record torn or "
				  "edited by hand)");
	return (ssize_t)ck;
}

int rb_record_parse(const char *text, size_t len, rb_record *rec, rb_err *err)
{
	value vals[REC_N_FIELDS];
	const char *nul;
	ssize_t body, ck;
	size_t i;

	if (!text || len == 0)
		return rb_err_set(err, "empty record");
	if (len > RB_RECORD_TEXT_MAX)
		return rb_err_set(err, "record of %zu bytes is larger than %ld",
				  len, RB_RECORD_TEXT_MAX);
	nul = memchr(text, '\0', len);
	if (nul)
		return rb_err_set(err, "NUL byte at offset %zu",
				  (size_t)(nul - text));
	body = parse_version(text, len, err);
	if (body < 0)
		return -1;
	ck = parse_checksum(text, len, (size_t)body, err);
	if (ck < 0)
		return -1;
	/* Every line is checked before rec is touched (a refused record
	 * leaves it as it was); then rec is cleared and filled. No scratch
	 * record: allocating, zeroing and copying some 25 KB per parse cost more
	 * than the parse. */
	if (parse_fields(text, (size_t)body, (size_t)ck, vals, err) < 0)
		return -1;
	memset(rec, 0, sizeof(*rec));
	for (i = 0; i < REC_N_FIELDS; i++)
		store_value(&rec_fields[i], &vals[i], rec);
	return 0;
}
