/*
 * config.c - read and validate the admin's libconfig file (docs/rule.md,
 * "Limits").
 *
 * The file is read into memory first and scanned by a small lexer for two
 * things libconfig 1.5 gets wrong for us:
 *
 *  - `@include`: libconfig opens included files relative to the include dir,
 *    or to the process's working directory when none is set, and has no way
 *    to turn includes off (config_set_include_func only exists from 1.7).
 *    The file is read as root at every job start; an include would let a
 *    file outside the admin's reviewed config (or a relative path resolved
 *    in slurmd's cwd) change the limits. config_set_include_dir() cannot
 *    fix that: it only prefixes the path, "../" still escapes. So includes
 *    are refused outright, with file:line.
 *  - integer overflow: libconfig 1.5 stores a literal that does not fit in
 *    32 bits silently truncated (4294967295 becomes -1 = unlimited,
 *    4294967297 becomes 1). The lexer records every such literal; the value
 *    lookup reports it as out of range instead of using the wrapped value.
 *
 * Then the text is parsed with config_read_string() and every setting is
 * checked: unknown keys, wrong types and out-of-range values are errors
 * "file:line: message". Floats are never accepted for integer keys (2.0 is a
 * type error); 64-bit literals ("2L") are accepted when they fit.
 *
 * Setting names: libconfig names match [A-Za-z*][-A-Za-z0-9_*]*, so
 * partitions and accounts like "ml-team" or "gpu_a100" are written as-is.
 * A name that libconfig cannot express (starting with a digit, containing a
 * '.', ...) is given with the `name` key inside its group:
 *     accounts = { a2023 = { name = "2023.proj"; max_failures = 4; }; };
 * Account names match case-insensitively (Slurm stores them lowercased),
 * partition names exactly.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trust.h"

#define RB_CONFIG_MAX_BYTES (1024L * 1024)
#define RB_STATE_DIR_MAX 1024
/* the longest partition or account name: record.h's RB_NAME_MAX (256) is
 * the buffer, this plus its NUL */
#define NAME_LEN_MAX 255
#define FIX_HINT "fix the value, then run restore-budget check-config"
#define FILE_HINT "fix the file, then run restore-budget check-config"

/*
 * A setting of the file, as the checks below see it: a compact copy of
 * libconfig's tree (one allocation, members linked in file order), so that
 * lookups do not pay for libconfig's per-character name comparisons.
 */
typedef struct cnode cnode;
struct cnode {
	const char *name;       /* NULL for the root */
	int type;               /* CONFIG_TYPE_* */
	unsigned int line;      /* libconfig's source line */
	const cnode *parent;
	cnode *first, *last;    /* a group's members, in file order */
	cnode *next;
	int n;                  /* number of members */
	long long i;            /* INT, INT64 */
	double f;               /* FLOAT */
	int b;                  /* BOOL */
	const char *s;          /* STRING */
};

static const char *cn_name(const cnode *s) { return s->name; }
static int cn_type(const cnode *s) { return s->type; }
static int cn_int(const cnode *s) { return (int)s->i; }
static long long cn_int64(const cnode *s) { return s->i; }
static double cn_float(const cnode *s) { return s->f; }
static int cn_bool(const cnode *s) { return s->b; }
static const char *cn_string(const cnode *s) { return s->s; }
static int cn_length(const cnode *s) { return s->n; }
static unsigned int cn_line(const cnode *s) { return s->line; }

static const cnode *cn_elem(const cnode *g, unsigned int i)
{
	const cnode *c = g->first;

	while (c && i--)
		c = c->next;
	return c;
}

static void cn_add(cnode *g, cnode *c)
{
	c->parent = g;
	c->next = NULL;
	if (g->last)
		g->last->next = c;
	else
		g->first = c;
	g->last = c;
	g->n++;
}

/* An integer literal libconfig 1.5 would store wrapped (see top). */
typedef struct {
	unsigned int line;      /* where the literal is */
	unsigned int name_line; /* where its key is (libconfig's line) */
	char name[64];   /* the key it is assigned to ("" if none) */
	char text[48];   /* the literal as written (maybe truncated) */
	bool used;
} big_literal;

typedef struct {
	const char *path;   /* the file, for every message */
	rb_err *err;
	big_literal *big;
	size_t n_big;
} load_ctx;

/* An integer setting as read: the value, or that it did not fit. Its key
 * path and shown value are only built for a message (see iv_key, iv_shown):
 * doing it for every setting cost more than the checks themselves. */
typedef struct {
	const cnode *s;
	const char *big;    /* the literal as written, when it did not fit */
	long long v;
	bool overflow;      /* did not fit in an int: always out of range */
} int_value;

/* Buffers for one message about an int_value. */
typedef struct {
	char key[256];      /* dotted path, e.g. "partitions.preempt.max_failures" */
	char shown[64];     /* the value as it appears in messages */
} iv_text;

static const char *const top_keys[] = {
	"state_dir", "max_failures", "restore_retry_num", "restore_timeout",
	"restore_accounting", "count_preemptions", "track", "on_error",
	"on_exhausted", "limits", "checkpoint", "partitions", "accounts", NULL,
};
static const char *const limits_keys[] = {
	"max_failures", "restore_retry_num", "allow_unlimited", NULL,
};
static const char *const checkpoint_keys[] = { "pattern", "latest", NULL };
static const char *const override_keys[] = {
	"name", "max_failures", "restore_retry_num", "restore_timeout", NULL,
};

static const char *const accounting_names[] = { "grouped", "ray", NULL };
static const char *const track_names[] = { "all", "opt-in", NULL };
static const char *const on_error_names[] = { "open", "closed", NULL };
static const char *const on_exhausted_names[] = { "fail", "hold", NULL };

/* ---- small helpers ------------------------------------------------------ */

/* (config.h) */
void rb_config_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	if (len < 4) {
		if (len)
			buf[0] = '\0';
		return;
	}
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char piece[8];
		size_t n;

		if (c == '"' || c == '\\')
			n = (size_t)snprintf(piece, sizeof(piece), "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			n = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", c);
		else
			n = (size_t)snprintf(piece, sizeof(piece), "%c", c);
		if (o + n > len - 4) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, piece, n);
		o += n;
	}
	buf[o] = '\0';
}

/* "a.b.c" from the root down to s. */
static void key_path(const cnode *s, char *buf, size_t len)
{
	const char *names[16];
	size_t n = 0, o = 0;

	buf[0] = '\0';
	for (; s && n < 16; s = s->parent) {
		const char *name = cn_name(s);

		if (name)
			names[n++] = name;
	}
	while (n-- > 0) {
		int w = snprintf(buf + o, len - o, "%s%s", o ? "." : "",
				 names[n]);

		if (w < 0 || (size_t)w >= len - o)
			return;
		o += (size_t)w;
	}
}

/* The value of s as it would appear in the file. */
static void describe(const cnode *s, char *buf, size_t len)
{
	char tmp[128];

	switch (cn_type(s)) {
	case CONFIG_TYPE_INT:
		snprintf(buf, len, "%d", cn_int(s));
		break;
	case CONFIG_TYPE_INT64:
		snprintf(buf, len, "%lldL", cn_int64(s));
		break;
	case CONFIG_TYPE_FLOAT: {
		double d = cn_float(s);

		/* keep the point: "2.0", not "2", or the message makes no sense */
		/* (range first: casting inf or nan to long long is undefined) */
		if (d > -1e15 && d < 1e15 && d == (double)(long long)d)
			snprintf(buf, len, "%.1f", d);
		else
			snprintf(buf, len, "%g", d);
		break;
	}
	case CONFIG_TYPE_BOOL:
		snprintf(buf, len, "%s",
			 cn_bool(s) ? "true" : "false");
		break;
	case CONFIG_TYPE_STRING:
		rb_config_quote(cn_string(s), tmp, sizeof(tmp));
		snprintf(buf, len, "\"%s\"", tmp);
		break;
	case CONFIG_TYPE_GROUP:
		snprintf(buf, len, "{ ... }");
		break;
	case CONFIG_TYPE_ARRAY:
		snprintf(buf, len, "[ ... ]");
		break;
	case CONFIG_TYPE_LIST:
		snprintf(buf, len, "( ... )");
		break;
	default:
		snprintf(buf, len, "?");
		break;
	}
}

static void join_names(const char *const *names, const char *quote,
		       char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; names[i]; i++) {
		int w = snprintf(buf + o, len - o, "%s%s%s%s",
				 i == 0 ? "" : names[i + 1] ? ", " : " or ",
				 quote, names[i], quote);

		if (w < 0 || (size_t)w >= len - o)
			return;
		o += (size_t)w;
	}
}

static void join_keys(const char *const *names, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; names[i]; i++) {
		int w = snprintf(buf + o, len - o, "%s%s", i ? ", " : "",
				 names[i]);

		if (w < 0 || (size_t)w >= len - o)
			return;
		o += (size_t)w;
	}
}

/* "path:line: message" for setting s. Always returns -1. */
static int fail_at(load_ctx *ctx, const cnode *s,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(load_ctx *ctx, const cnode *s,
		   const char *fmt, ...)
{
	char msg[RB_ERR_MAX];
	unsigned int line = s ? cn_line(s) : 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line)
		return rb_err_set(ctx->err, "%s:%u: %s", ctx->path, line, msg);
	return rb_err_set(ctx->err, "%s: %s", ctx->path, msg);
}

static int fail_type(load_ctx *ctx, const cnode *s,
		     const char *expected)
{
	char key[256], val[160];

	key_path(s, key, sizeof(key));
	describe(s, val, sizeof(val));
	fail_at(ctx, s, "%s = %s has the wrong type: expected %s (%s)",
		key, val, expected, FIX_HINT);
	/* fail_at's -1, spelled out: the static analyzer does not follow
	 * variadic calls, and read_string()'s callers rely on it */
	return -1;
}

static int replace_string(char **dst, const char *src)
{
	char *copy = strdup(src);

	if (!copy)
		return -1;
	free(*dst);
	*dst = copy;
	return 0;
}

/* ---- the lexer pre-scan ------------------------------------------------- */

static int add_big(load_ctx *ctx, unsigned int line, const char *name,
		   unsigned int name_line, const char *text, size_t len)
{
	big_literal *b;
	char lit[sizeof(b->text)];
	size_t n = len < sizeof(lit) - 1 ? len : sizeof(lit) - 1;

	b = realloc(ctx->big, (ctx->n_big + 1) * sizeof(*b));
	if (!b)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	ctx->big = b;
	b = &ctx->big[ctx->n_big++];
	memset(b, 0, sizeof(*b));
	b->line = line;
	b->name_line = name_line;
	rb_strlcpy(b->name, name, sizeof(b->name));
	memcpy(lit, text, n);
	lit[n] = '\0';
	if (n < len && n >= 3)
		memcpy(lit + n - 3, "...", 3);
	memcpy(b->text, lit, sizeof(lit));
	return 0;
}

static bool is_suffix_l(const char *p, const char *end)
{
	size_t n = (size_t)(end - p);

	return (n == 1 && p[0] == 'L') || (n == 2 && p[0] == 'L' && p[1] == 'L');
}

/* One numeric token text[0..len): record it if libconfig would wrap it. */
static int check_literal(load_ctx *ctx, unsigned int line, const char *name,
			 unsigned int name_line, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	const char *digits_end;
	bool hex, big = false;

	if (*p == '-' || *p == '+')
		p++;
	hex = p + 1 < end && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
	if (!hex && (memchr(text, '.', len) || memchr(text, 'e', len) ||
		     memchr(text, 'E', len)))
		return 0; /* a float */
	errno = 0;
	if (hex) {
		char *e;
		unsigned long long u = strtoull(p, &e, 16);

		digits_end = e;
		if (digits_end == end)
			big = errno == ERANGE || u > INT_MAX;
		else if (is_suffix_l(digits_end, end))
			big = errno == ERANGE || u > LLONG_MAX;
		else
			return 0; /* libconfig reports the syntax error */
	} else {
		char *e;
		long long v = strtoll(text, &e, 10);

		digits_end = e;
		if (digits_end == end)
			big = errno == ERANGE || v < INT_MIN || v > INT_MAX;
		else if (is_suffix_l(digits_end, end))
			big = errno == ERANGE;
		else
			return 0;
	}
	return big ? add_big(ctx, line, name, name_line, text, len) : 0;
}

static bool is_name_start(char c)
{
	return isalpha((unsigned char)c) || c == '*';
}

static bool is_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '*';
}

/*
 * Walk the text as libconfig's lexer would (comments, strings, names,
 * numbers): refuse `@include` and NUL bytes, record oversized integers.
 */
/* Past the comment that starts at text[i] ("/" "*"), counting lines. */
static size_t skip_block_comment(const char *text, size_t len, size_t i,
				 unsigned int *line)
{
	for (i += 2; i < len; i++) {
		if (text[i] == '*' && text[i + 1] == '/')
			return i + 2;
		*line += text[i] == '\n';
	}
	return i;
}

/* Past the string that starts at text[i] ('"'), counting lines. */
static size_t skip_string(const char *text, size_t len, size_t i,
			  unsigned int *line)
{
	for (i++; i < len && text[i] != '"'; i++) {
		if (text[i] == '\\' && i + 1 < len)
			i++;
		*line += text[i] == '\n';
	}
	return i + 1;
}

/* The end of the number literal that starts at text[i] (digits, letters,
 * '.', and a sign after an exponent's e). */
static size_t number_end(const char *text, size_t len, size_t i)
{
	size_t j = i + 1;

	while (j < len &&
	       (isalnum((unsigned char)text[j]) || text[j] == '.' ||
		((text[j] == '-' || text[j] == '+') &&
		 (text[j - 1] == 'e' || text[j - 1] == 'E'))))
		j++;
	return j;
}

static int prescan(load_ctx *ctx, const char *text, size_t len)
{
	unsigned int line = 1, last_line = 0, pending_line = 0;
	char last[64] = "", pending[64] = "";
	size_t i = 0;
	const char *nul = memchr(text, '\0', len);

	if (nul) {
		for (const char *p = text; p < nul; p++)
			/* p < nul < text + len: read_text() filled all of it
			 * (the analyzer does not model memchr's bound) */
			line += *p == '\n'; // NOLINT(clang-analyzer-core.UndefinedBinaryOperatorResult)
		return rb_err_set(ctx->err,
				  "%s:%u: syntax error: a NUL byte (%s)",
				  ctx->path, line, FILE_HINT);
	}
	while (i < len) {
		char c = text[i];

		if (c == '\n') {
			line++;
			i++;
		} else if (c == '#' || (c == '/' && text[i + 1] == '/')) {
			while (i < len && text[i] != '\n')
				i++;
		} else if (c == '/' && text[i + 1] == '*') {
			i = skip_block_comment(text, len, i, &line);
		} else if (c == '"') {
			i = skip_string(text, len, i, &line);
		} else if (c == '@') {
			if (strncmp(text + i + 1, "include", 7) == 0)
				return rb_err_set(ctx->err,
					"%s:%u: @include is not allowed: put every setting in this one file (an included file could change the limits from outside it; %s)",
					ctx->path, line, FILE_HINT);
			i++;
		} else if (is_name_start(c)) {
			size_t j = i, n;

			while (j < len && is_name_char(text[j]))
				j++;
			n = j - i < sizeof(last) - 1 ? j - i : sizeof(last) - 1;
			memcpy(last, text + i, n);
			last[n] = '\0';
			last_line = line;
			i = j;
		} else if (c == '=' || c == ':') {
			memcpy(pending, last, sizeof(pending));
			pending_line = last_line;
			i++;
		} else if (isdigit((unsigned char)c) ||
			   ((c == '-' || c == '+' || c == '.') &&
			    (isdigit((unsigned char)text[i + 1]) ||
			     text[i + 1] == '.'))) {
			size_t j = number_end(text, len, i);

			if (check_literal(ctx, line, pending, pending_line,
					  text + i, j - i))
				return -1;
			i = j;
		} else {
			i++;
		}
	}
	return 0;
}

/* ---- typed lookups ------------------------------------------------------ */

/* Every member of group must be one of known[]. One pass over the members
 * also files each under its name in slots[] (index of known[]; NULL when
 * absent): libconfig 1.5's config_setting_get_member compares names with
 * two strchr() per character, and was a fifth of a config load. Names are
 * unique in a group (libconfig refuses a duplicate at parse time). */
static int check_known(load_ctx *ctx, const cnode *group,
		       const char *const *known, const cnode **slots)
{
	int n = cn_length(group);
	size_t k;

	for (k = 0; known[k]; k++)
		slots[k] = NULL;
	for (int i = 0; i < n; i++) {
		const cnode *s = cn_elem(group, i);
		const char *name = cn_name(s);
		char where[256], key[256], list[512];

		for (k = 0; known[k]; k++)
			if (name && name[0] == known[k][0] &&
			    strcmp(name, known[k]) == 0)
				break;
		if (known[k]) {
			if (!slots[k])
				slots[k] = s;
			continue;
		}
		key_path(group, where, sizeof(where));
		key_path(s, key, sizeof(key));
		join_keys(known, list, sizeof(list));
		if (where[0])
			return fail_at(ctx, s,
				       "unknown key \"%s\" (known keys in %s: %s)",
				       key, where, list);
		return fail_at(ctx, s, "unknown key \"%s\" (known keys: %s)",
			       key, list);
	}
	return 0;
}

/* The member called name, as filed by check_known (name is one of known). */
static const cnode *member(const char *const *known,
				      const cnode *const *slots,
				      const char *name)
{
	size_t k;

	/* name is a literal of this file, mostly the very one in known[]
	 * (identical literals are merged): try the pointers first */
	for (k = 0; known[k]; k++)
		if (known[k] == name)
			return slots[k];
	for (k = 0; known[k]; k++)
		if (strcmp(known[k], name) == 0)
			return slots[k];
	return NULL;
}

/* Read an integer setting (int, or int64 that fits); floats are errors. */
static int read_int(load_ctx *ctx, const cnode *s, int_value *iv)
{
	const char *name = cn_name(s);
	unsigned int line = cn_line(s);
	int type = cn_type(s);

	iv->s = s;
	iv->big = NULL;
	iv->v = 0;
	iv->overflow = false;
	if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
		return fail_type(ctx, s, "an integer");
	for (size_t i = 0; i < ctx->n_big; i++) {
		big_literal *b = &ctx->big[i];

		if (!b->used && (b->line == line || b->name_line == line) &&
		    name &&
		    strcmp(b->name, name) == 0) {
			b->used = true;
			iv->overflow = true;
			iv->big = b->text;
			return 0;
		}
	}
	if (type == CONFIG_TYPE_INT)
		iv->v = cn_int(s);
	else
		iv->v = cn_int64(s);
	iv->overflow = iv->v < INT_MIN || iv->v > INT_MAX;
	return 0;
}

/* The key path and value of iv, for a message. */
static const iv_text *iv_describe(const int_value *iv, iv_text *t)
{
	key_path(iv->s, t->key, sizeof(t->key));
	if (iv->big)
		rb_strlcpy(t->shown, iv->big, sizeof(t->shown));
	else
		snprintf(t->shown, sizeof(t->shown), "%lld", iv->v);
	return t;
}

static int read_bool(load_ctx *ctx, const cnode *s, bool *out)
{
	if (cn_type(s) != CONFIG_TYPE_BOOL)
		return fail_type(ctx, s, "true or false");
	*out = cn_bool(s) != 0;
	return 0;
}

static int read_string(load_ctx *ctx, const cnode *s,
		       const char **out)
{
	if (cn_type(s) != CONFIG_TYPE_STRING)
		return fail_type(ctx, s, "a string in double quotes");
	*out = cn_string(s);
	return 0;
}

static int read_enum(load_ctx *ctx, const cnode *s,
		     const char *const *names, int *out)
{
	const char *v = NULL;
	char key[256], shown[160], list[160];

	if (read_string(ctx, s, &v) < 0)
		return -1;
	for (int i = 0; names[i]; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	key_path(s, key, sizeof(key));
	rb_config_quote(v, shown, sizeof(shown));
	join_names(names, "\"", list, sizeof(list));
	return fail_at(ctx, s, "%s = \"%s\" is not valid: must be %s (%s)",
		       key, shown, list, FIX_HINT);
}

static int require_group(load_ctx *ctx, const cnode *s,
			 const char *expected)
{
	if (cn_type(s) != CONFIG_TYPE_GROUP)
		return fail_type(ctx, s, expected);
	return 0;
}

/* ---- value rules -------------------------------------------------------- */

static int check_range(load_ctx *ctx, const int_value *iv, long long min,
		       long long max, const char *unit)
{
	iv_text t;

	if (!iv->overflow && iv->v >= min && iv->v <= max)
		return 0;
	return fail_at(ctx, iv->s, "%s = %s is out of range: must be %lld..%lld%s (%s)",
		       iv_describe(iv, &t)->key, t.shown, min, max, unit, FIX_HINT);
}

/* M: 0..cap, or -1 with limits.allow_unlimited. */
static int check_max_failures(load_ctx *ctx, const int_value *iv,
			      const rb_config *cfg)
{
	iv_text t;

	if (!iv->overflow && iv->v == RB_UNLIMITED) {
		if (cfg->caps.allow_unlimited)
			return 0;
		return fail_at(ctx, iv->s,
			       "%s = -1 (unlimited) is not allowed: limits.allow_unlimited is false (set limits.allow_unlimited = true, or give a value 0..%d, then run restore-budget check-config)",
			       iv_describe(iv, &t)->key, cfg->caps.max_failures);
	}
	if (iv->overflow || iv->v < 0 || iv->v > RB_MAX_FAILURES_MAX)
		return fail_at(ctx, iv->s,
			       "%s = %s is out of range: must be 0..%d, or -1 for unlimited (%s)",
			       iv_describe(iv, &t)->key, t.shown, RB_MAX_FAILURES_MAX, FIX_HINT);
	if (iv->v > cfg->caps.max_failures)
		return fail_at(ctx, iv->s,
			       "%s = %s exceeds the cap limits.max_failures = %d (lower it to at most %d or raise the cap, then run restore-budget check-config)",
			       iv_describe(iv, &t)->key, t.shown, cfg->caps.max_failures,
			       cfg->caps.max_failures);
	return 0;
}

/* R: 1..cap in grouped mode, 0..cap in ray mode. */
static int check_retry(load_ctx *ctx, const int_value *iv,
		       const rb_config *cfg)
{
	int min = cfg->accounting == RB_ACCOUNTING_GROUPED ? 1 : 0;
	iv_text t;

	if (iv->overflow || iv->v < min || iv->v > RB_RESTORE_RETRY_MAX)
		return fail_at(ctx, iv->s,
			       "%s = %s is out of range: must be %d..%d with restore_accounting = \"%s\" (%s)",
			       iv_describe(iv, &t)->key, t.shown, min, RB_RESTORE_RETRY_MAX,
			       rb_accounting_name(cfg->accounting), FIX_HINT);
	if (iv->v > cfg->caps.restore_retry_num)
		return fail_at(ctx, iv->s,
			       "%s = %s exceeds the cap limits.restore_retry_num = %d (lower it to at most %d or raise the cap, then run restore-budget check-config)",
			       iv_describe(iv, &t)->key, t.shown, cfg->caps.restore_retry_num,
			       cfg->caps.restore_retry_num);
	return 0;
}

static int check_timeout(load_ctx *ctx, const int_value *iv)
{
	return check_range(ctx, iv, 0, (long long)RB_RESTORE_TIMEOUT_MAX,
			   " seconds");
}

/* A file name (checkpoint.pattern / checkpoint.latest). */
static int check_file_name(load_ctx *ctx, const cnode *s,
			   const char *v, bool no_dot)
{
	char key[256], shown[160];

	if (v[0] && !strchr(v, '/') && strlen(v) <= NAME_LEN_MAX &&
	    !(no_dot && v[0] == '.'))
		return 0;
	key_path(s, key, sizeof(key));
	rb_config_quote(v, shown, sizeof(shown));
	return fail_at(ctx, s,
		       "%s = \"%s\" is not valid: must be a non-empty file name of at most %d bytes without '/'%s (%s)",
		       key, shown, NAME_LEN_MAX,
		       no_dot ? " that does not start with '.'" : "", FIX_HINT);
}

/* ---- sections ----------------------------------------------------------- */

static int load_limits(load_ctx *ctx, const cnode *g,
		       rb_config *cfg)
{
	const cnode *s, *m[sizeof(limits_keys) / sizeof(*limits_keys)];
	int_value iv;

	if (require_group(ctx, g, "a group { max_failures = N; restore_retry_num = N; allow_unlimited = BOOL; }") < 0 ||
	    check_known(ctx, g, limits_keys, m) < 0)
		return -1;
	if ((s = member(limits_keys, m, "max_failures"))) {
		if (read_int(ctx, s, &iv) < 0 ||
		    check_range(ctx, &iv, 0, RB_MAX_FAILURES_MAX, "") < 0)
			return -1;
		cfg->caps.max_failures = (int)iv.v;
	}
	if ((s = member(limits_keys, m, "restore_retry_num"))) {
		if (read_int(ctx, s, &iv) < 0 ||
		    check_range(ctx, &iv, 1, RB_RESTORE_RETRY_MAX, "") < 0)
			return -1;
		cfg->caps.restore_retry_num = (int)iv.v;
	}
	if ((s = member(limits_keys, m, "allow_unlimited")) &&
	    read_bool(ctx, s, &cfg->caps.allow_unlimited) < 0)
		return -1;
	return 0;
}

static int load_checkpoint(load_ctx *ctx, const cnode *g,
			   rb_config *cfg)
{
	const cnode *s, *m[sizeof(checkpoint_keys) / sizeof(*checkpoint_keys)];
	const char *v = NULL;

	if (require_group(ctx, g, "a group { pattern = \"...\"; latest = \"...\"; }") < 0 ||
	    check_known(ctx, g, checkpoint_keys, m) < 0)
		return -1;
	if ((s = member(checkpoint_keys, m, "pattern"))) {
		if (read_string(ctx, s, &v) < 0 ||
		    check_file_name(ctx, s, v, false) < 0)
			return -1;
		if (replace_string(&cfg->checkpoint_pattern, v) < 0)
			return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	}
	if ((s = member(checkpoint_keys, m, "latest"))) {
		if (read_string(ctx, s, &v) < 0 ||
		    check_file_name(ctx, s, v, true) < 0)
			return -1;
		if (replace_string(&cfg->checkpoint_latest, v) < 0)
			return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	}
	return 0;
}

/* One partition or account group. out->name is set by the caller. */
static int load_overrides(load_ctx *ctx, const cnode *g,
			  const rb_config *cfg, rb_overrides *out,
			  const char **name)
{
	const cnode *s, *m[sizeof(override_keys) / sizeof(*override_keys)];
	int_value iv;

	*name = cn_name(g);
	if (require_group(ctx, g, "a group { max_failures = N; restore_retry_num = N; restore_timeout = SEC; }") < 0 ||
	    check_known(ctx, g, override_keys, m) < 0)
		return -1;
	if ((s = member(override_keys, m, "name"))) {
		char key[256], shown[160];

		if (read_string(ctx, s, name) < 0)
			return -1;
		if (!(*name)[0] || strlen(*name) > NAME_LEN_MAX) {
			key_path(s, key, sizeof(key));
			rb_config_quote(*name, shown, sizeof(shown));
			return fail_at(ctx, s,
				       "%s = \"%s\" is not valid: must be a non-empty name of at most %d bytes (%s)",
				       key, shown, NAME_LEN_MAX, FIX_HINT);
		}
	}
	if ((s = member(override_keys, m, "max_failures"))) {
		if (read_int(ctx, s, &iv) < 0 ||
		    check_max_failures(ctx, &iv, cfg) < 0)
			return -1;
		out->has_max_failures = true;
		out->max_failures = (int)iv.v;
	}
	if ((s = member(override_keys, m, "restore_retry_num"))) {
		if (read_int(ctx, s, &iv) < 0 || check_retry(ctx, &iv, cfg) < 0)
			return -1;
		out->has_restore_retry_num = true;
		out->restore_retry_num = (int)iv.v;
	}
	if ((s = member(override_keys, m, "restore_timeout"))) {
		if (read_int(ctx, s, &iv) < 0 || check_timeout(ctx, &iv) < 0)
			return -1;
		out->has_restore_timeout = true;
		out->restore_timeout = (int)iv.v;
	}
	return 0;
}

/* partitions = { NAME = { ... }; ... } or accounts = { ... }. */
static int load_named(load_ctx *ctx, const cnode *g,
		      const rb_config *cfg, bool ignore_case,
		      rb_named_overrides **arr, size_t *count)
{
	int n;
	const char *what = cn_name(g);

	if (require_group(ctx, g, "a group { NAME = { max_failures = N; ... }; ... }") < 0)
		return -1;
	n = cn_length(g);
	if (n == 0)
		return 0;
	*arr = calloc((size_t)n, sizeof(**arr));
	if (!*arr)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	for (int i = 0; i < n; i++) {
		const cnode *e = cn_elem(g, i);
		rb_named_overrides *o = &(*arr)[*count];
		const char *name;

		if (load_overrides(ctx, e, cfg, &o->values, &name) < 0)
			return -1;
		for (size_t k = 0; k < *count; k++) {
			const char *other = (*arr)[k].name;
			char shown[160];

			if (ignore_case ? strcasecmp(other, name) != 0 :
					  strcmp(other, name) != 0)
				continue;
			rb_config_quote(name, shown, sizeof(shown));
			return fail_at(ctx, e,
				       "%s.%s: \"%s\" is already configured by %s.%s at line %u (%skeep one group for it, then run restore-budget check-config)",
				       what, cn_name(e), shown, what,
				       cn_name(cn_elem(g, (unsigned int)k)),
				       cn_line(cn_elem(g, (unsigned int)k)),
				       ignore_case ? "account names match ignoring case; " : "");
		}
		o->name = strdup(name);
		if (!o->name)
			return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
		(*count)++;
	}
	return 0;
}

/* state_dir: an absolute path of at most RB_STATE_DIR_MAX bytes. */
static int load_state_dir(load_ctx *ctx, const cnode *s, rb_config *cfg)
{
	const char *v = NULL;
	char shown[160];

	if (read_string(ctx, s, &v) < 0)
		return -1;
	if (v[0] != '/') {
		rb_config_quote(v, shown, sizeof(shown));
		return fail_at(ctx, s,
			       "state_dir = \"%s\" is not an absolute path: must start with '/' (%s)",
			       shown, FIX_HINT);
	}
	if (strlen(v) > RB_STATE_DIR_MAX) {
		rb_config_quote(v, shown, sizeof(shown));
		return fail_at(ctx, s,
			       "state_dir = \"%s\" is too long: must be at most %d bytes (%s)",
			       shown, RB_STATE_DIR_MAX, FIX_HINT);
	}
	if (replace_string(&cfg->state_dir, v) < 0)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	return 0;
}

/* The top-level budget numbers (after limits: the caps bound them). */
static int load_numbers(load_ctx *ctx, const cnode *const *m, rb_config *cfg)
{
	const cnode *s;
	int_value iv;
	bool has_m = false, has_r = false;

	if ((s = member(top_keys, m, "max_failures"))) {
		if (read_int(ctx, s, &iv) < 0 ||
		    check_max_failures(ctx, &iv, cfg) < 0)
			return -1;
		cfg->max_failures = (int)iv.v;
		has_m = true;
	}
	if ((s = member(top_keys, m, "restore_retry_num"))) {
		if (read_int(ctx, s, &iv) < 0 || check_retry(ctx, &iv, cfg) < 0)
			return -1;
		cfg->restore_retry_num = (int)iv.v;
		has_r = true;
	}
	/* A built-in default the admin did not write follows a lower cap. */
	if (!has_m && cfg->max_failures > cfg->caps.max_failures)
		cfg->max_failures = cfg->caps.max_failures;
	if (!has_r && cfg->restore_retry_num > cfg->caps.restore_retry_num)
		cfg->restore_retry_num = cfg->caps.restore_retry_num;
	if ((s = member(top_keys, m, "restore_timeout"))) {
		if (read_int(ctx, s, &iv) < 0 || check_timeout(ctx, &iv) < 0)
			return -1;
		cfg->restore_timeout = (int)iv.v;
	}
	return 0;
}

/* The top-level choices: count_preemptions, track, on_error, on_exhausted. */
static int load_choices(load_ctx *ctx, const cnode *const *m, rb_config *cfg)
{
	const cnode *s;
	int e = 0;

	if ((s = member(top_keys, m, "count_preemptions")) &&
	    read_bool(ctx, s, &cfg->count_preemptions) < 0)
		return -1;
	if ((s = member(top_keys, m, "track"))) {
		if (read_enum(ctx, s, track_names, &e) < 0)
			return -1;
		cfg->track = (rb_track)e;
	}
	if ((s = member(top_keys, m, "on_error"))) {
		if (read_enum(ctx, s, on_error_names, &e) < 0)
			return -1;
		cfg->on_error = (rb_on_error)e;
	}
	if ((s = member(top_keys, m, "on_exhausted"))) {
		if (read_enum(ctx, s, on_exhausted_names, &e) < 0)
			return -1;
		cfg->on_exhausted = (rb_on_exhausted)e;
	}
	return 0;
}

/* Every oversized literal in a key we read was reported by then; one left
 * over sits where no integer belongs. Never let a wrapped value pass. */
static int no_big_left(load_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_big; i++)
		if (!ctx->big[i].used)
			return rb_err_set(ctx->err,
					  "%s:%u: %s%s%s is out of range: integers must fit in 32 bits (%s)",
					  ctx->path, ctx->big[i].line,
					  ctx->big[i].name,
					  ctx->big[i].name[0] ? " = " : "",
					  ctx->big[i].text, FIX_HINT);
	return 0;
}

/* The top level, in dependency order: accounting and caps first. */
static int load_root(load_ctx *ctx, const cnode *root,
		     rb_config *cfg)
{
	const cnode *s, *m[sizeof(top_keys) / sizeof(*top_keys)];
	int e = 0;

	if (check_known(ctx, root, top_keys, m) < 0)
		return -1;
	if ((s = member(top_keys, m, "restore_accounting"))) {
		if (read_enum(ctx, s, accounting_names, &e) < 0)
			return -1;
		cfg->accounting = (rb_accounting)e;
	}
	if ((s = member(top_keys, m, "limits")) &&
	    load_limits(ctx, s, cfg) < 0)
		return -1;
	if ((s = member(top_keys, m, "state_dir")) &&
	    load_state_dir(ctx, s, cfg) < 0)
		return -1;
	if (load_numbers(ctx, m, cfg) < 0 || load_choices(ctx, m, cfg) < 0)
		return -1;
	if ((s = member(top_keys, m, "checkpoint")) &&
	    load_checkpoint(ctx, s, cfg) < 0)
		return -1;
	if ((s = member(top_keys, m, "partitions")) &&
	    load_named(ctx, s, cfg, false, &cfg->partitions,
		       &cfg->n_partitions) < 0)
		return -1;
	if ((s = member(top_keys, m, "accounts")) &&
	    load_named(ctx, s, cfg, true, &cfg->accounts,
		       &cfg->n_accounts) < 0)
		return -1;
	return no_big_left(ctx);
}

/* ---- the setting tree, copied from libconfig's ---------------------------- */

static size_t lc_count(const config_setting_t *s)
{
	size_t n = 1;

	if (config_setting_type(s) == CONFIG_TYPE_GROUP)
		for (int i = 0; i < config_setting_length(s); i++)
			n += lc_count(config_setting_get_elem(s, (unsigned)i));
	return n;
}

/* Copy libconfig's setting s (and a group's members) into nodes[*used..].
 * Names and strings stay libconfig's: the tree lives no longer than it. */
static cnode *lc_copy(const config_setting_t *s, cnode *nodes, size_t *used)
{
	cnode *c = &nodes[(*used)++];

	memset(c, 0, sizeof(*c));
	c->name = config_setting_name(s);
	c->type = config_setting_type(s);
	c->line = config_setting_source_line(s);
	switch (c->type) {
	case CONFIG_TYPE_INT:
		c->i = config_setting_get_int(s);
		break;
	case CONFIG_TYPE_INT64:
		c->i = config_setting_get_int64(s);
		break;
	case CONFIG_TYPE_FLOAT:
		c->f = config_setting_get_float(s);
		break;
	case CONFIG_TYPE_BOOL:
		c->b = config_setting_get_bool(s);
		break;
	case CONFIG_TYPE_STRING:
		c->s = config_setting_get_string(s);
		break;
	case CONFIG_TYPE_GROUP:
		for (int i = 0; i < config_setting_length(s); i++)
			cn_add(c, lc_copy(config_setting_get_elem(s, (unsigned)i),
					  nodes, used));
		break;
	default:
		/* arrays and lists: only ever shown as "[ ... ]" / "( ... )" */
		c->n = config_setting_length(s);
		break;
	}
	return c;
}

/* Read the whole file. Keeps errno of the failure for the caller. */
static int read_text(const char *path, char **out, size_t *outlen,
		     rb_err *err)
{
	int fd = -1, saved = 0;
	char *buf = NULL;
	size_t len = 0;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0)
		goto fail_errno;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail_errno;
	}
	if (!S_ISREG(st.st_mode)) {
		saved = EINVAL;
		rb_err_set(err, "%s: cannot read: not a regular file", path);
		goto fail;
	}
	if (st.st_mode & S_IWOTH) {
		saved = EPERM;
		rb_err_set(err,
			   "%s: refusing a file every user may write: anyone could change the limits (run chmod o-w %s)",
			   path, path);
		goto fail;
	}
	/* Only root may be able to change it, or its owner could raise
	 * everyone's caps. Whatever our euid: the batch step reads it as the
	 * job's user and then writes the ledger as root with it. */
	if (!rb_root_trusted(&st)) {
		saved = EPERM;
		rb_err_set(err,
			   "%s: refusing a file owned by uid %u with mode %04o: only root may be able to change the limits (run chown root %s; chmod go-w %s)",
			   path, (unsigned)st.st_uid,
			   (unsigned)(st.st_mode & 07777), path, path);
		goto fail;
	}
	if (st.st_size > RB_CONFIG_MAX_BYTES) {
		saved = EFBIG;
		rb_err_set(err, "%s: cannot read: larger than %ld bytes", path,
			   RB_CONFIG_MAX_BYTES);
		goto fail;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		goto fail_errno;
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail_errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	*out = buf;
	*outlen = len;
	return 0;

fail_errno:
	saved = errno;
	rb_err_set(err, "%s: cannot read: %s", path, strerror(saved));
fail:
	free(buf);
	if (fd >= 0)
		close(fd);
	errno = saved;
	return -1;
}

/* ---- public API --------------------------------------------------------- */

rb_config *rb_config_defaults(void)
{
	rb_config *cfg = calloc(1, sizeof(*cfg));

	if (!cfg)
		return NULL;
	cfg->path = strdup("(built-in defaults)");
	cfg->state_dir = strdup(RB_DEFAULT_STATE_DIR);
	cfg->checkpoint_pattern = strdup("checkpoint*");
	cfg->checkpoint_latest = strdup("latest");
	if (!cfg->path || !cfg->state_dir || !cfg->checkpoint_pattern ||
	    !cfg->checkpoint_latest)
		goto fail;
	cfg->max_failures = 2;
	cfg->restore_retry_num = 3;
	cfg->restore_timeout = 300;
	cfg->accounting = RB_ACCOUNTING_GROUPED;
	cfg->count_preemptions = false;
	cfg->track = RB_TRACK_ALL;
	cfg->on_error = RB_ON_ERROR_OPEN;
	cfg->on_exhausted = RB_ON_EXHAUSTED_FAIL;
	cfg->caps.max_failures = 10;
	cfg->caps.restore_retry_num = 10;
	cfg->caps.allow_unlimited = false;
	return cfg;

fail:
	rb_config_free(cfg);
	return NULL;
}

static void free_named(rb_named_overrides *arr, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(arr[i].name);
	free(arr);
}

void rb_config_free(rb_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->path);
	free(cfg->state_dir);
	free(cfg->checkpoint_pattern);
	free(cfg->checkpoint_latest);
	free_named(cfg->partitions, cfg->n_partitions);
	free_named(cfg->accounts, cfg->n_accounts);
	free(cfg);
}

/* The checks over a parsed tree: a fresh rb_config, or NULL with err set
 * (*saved: the errno to leave). */
static rb_config *load_tree(load_ctx *ctx, const cnode *root, int *saved)
{
	rb_config *cfg = rb_config_defaults();

	if (!cfg || replace_string(&cfg->path, ctx->path) < 0) {
		rb_err_set(ctx->err, "%s: out of memory", ctx->path);
		*saved = ENOMEM;
		rb_config_free(cfg);
		return NULL;
	}
	if (load_root(ctx, root, cfg) < 0) {
		rb_config_free(cfg);
		return NULL;
	}
	return cfg;
}

int rb_config_load(const char *path, rb_config **out, rb_err *err)
{
	load_ctx ctx = { .path = path, .err = err };
	config_t lc;
	bool lc_init = false;
	char *text = NULL;
	size_t len = 0, used = 0;
	cnode *root = NULL, *nodes = NULL;
	rb_config *cfg = NULL;
	int saved = 0;

	*out = NULL;
	if (!path || !path[0]) {
		saved = EINVAL;
		rb_err_set(err, "(no path): cannot read: no config file given");
		goto fail;
	}
	if (read_text(path, &text, &len, err) < 0) {
		saved = errno;
		goto fail;
	}
	saved = EINVAL;
	if (prescan(&ctx, text, len) < 0)
		goto fail;
	config_init(&lc);
	lc_init = true;
	/* No autoconvert: a float is never silently an integer. Includes are
	 * refused by prescan(), so none is ever opened (see top of file); the
	 * include dir stays unset (config_set_include_dir(NULL) crashes 1.5). */
	config_set_options(&lc, 0);
	if (config_read_string(&lc, text) != CONFIG_TRUE) {
		const char *f = config_error_file(&lc);

		rb_err_set(err, "%s:%d: syntax error: %s (%s)", f ? f : path,
			   config_error_line(&lc),
			   config_error_text(&lc) ? config_error_text(&lc) :
						    "unknown error",
			   FILE_HINT);
		goto fail;
	}
	nodes = malloc(lc_count(config_root_setting(&lc)) * sizeof(*nodes));
	if (!nodes) {
		rb_err_set(err, "%s: out of memory", path);
		saved = ENOMEM;
		goto fail;
	}
	root = lc_copy(config_root_setting(&lc), nodes, &used);
	cfg = load_tree(&ctx, root, &saved);
	if (!cfg)
		goto fail;
	config_destroy(&lc);
	free(nodes);
	free(text);
	free(ctx.big);
	*out = cfg;
	return 0;

fail:
	if (lc_init)
		config_destroy(&lc);
	free(nodes);
	free(text);
	free(ctx.big);
	errno = saved;
	return -1;
}
