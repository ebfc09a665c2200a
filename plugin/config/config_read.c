/*
 * config_read.c - the config file's typed reads (integer, boolean, string,
 * one of a list) and the "file:line: message" texts every check words its
 * errors with (docs/rule.md, "Limits": strict, file:line errors).
 *
 * Floats are never accepted for integer keys (2.0 is a type error); 64-bit
 * literals ("2L") are accepted when they fit.
 */
#include "config_int.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- message text ------------------------------------------------------- */

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

/* (config_int.h) */
void cf_key_path(const cnode *s, char *buf, size_t len)
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

/* (config_int.h) */
int cf_fail_at(load_ctx *ctx, const cnode *s, const char *fmt, ...)
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

int cf_fail_type(load_ctx *ctx, const cnode *s, const char *expected)
{
	char key[256], val[160];

	cf_key_path(s, key, sizeof(key));
	describe(s, val, sizeof(val));
	cf_fail_at(ctx, s, "%s = %s has the wrong type: expected %s (%s)",
		   key, val, expected, FIX_HINT);
	/* cf_fail_at's -1, spelled out: the static analyzer does not follow
	 * variadic calls, and cf_read_string()'s callers rely on it */
	return -1;
}

/* ---- typed lookups ------------------------------------------------------ */

/* Every member of group must be one of known[]. One pass over the members
 * also files each under its name in slots[] (index of known[]; NULL when
 * absent): libconfig 1.5's config_setting_get_member compares names with
 * two strchr() per character, and was a fifth of a config load. Names are
 * unique in a group (libconfig refuses a duplicate at parse time). */
int cf_check_known(load_ctx *ctx, const cnode *group,
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
		cf_key_path(group, where, sizeof(where));
		cf_key_path(s, key, sizeof(key));
		join_keys(known, list, sizeof(list));
		if (where[0])
			return cf_fail_at(ctx, s,
					  "unknown key \"%s\" (known keys in %s: %s)",
					  key, where, list);
		return cf_fail_at(ctx, s, "unknown key \"%s\" (known keys: %s)",
				  key, list);
	}
	return 0;
}

/* The member called name, as filed by cf_check_known (name is one of
 * known). */
const cnode *cf_member(const char *const *known, const cnode *const *slots,
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
int cf_read_int(load_ctx *ctx, const cnode *s, int_value *iv)
{
	const char *name = cn_name(s);
	unsigned int line = cn_line(s);
	int type = cn_type(s);

	iv->s = s;
	iv->big = NULL;
	iv->v = 0;
	iv->overflow = false;
	if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
		return cf_fail_type(ctx, s, "an integer");
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
const iv_text *cf_iv_describe(const int_value *iv, iv_text *t)
{
	cf_key_path(iv->s, t->key, sizeof(t->key));
	if (iv->big)
		rb_strlcpy(t->shown, iv->big, sizeof(t->shown));
	else
		snprintf(t->shown, sizeof(t->shown), "%lld", iv->v);
	return t;
}

int cf_read_bool(load_ctx *ctx, const cnode *s, bool *out)
{
	if (cn_type(s) != CONFIG_TYPE_BOOL)
		return cf_fail_type(ctx, s, "true or false");
	*out = cn_bool(s) != 0;
	return 0;
}

int cf_read_string(load_ctx *ctx, const cnode *s, const char **out)
{
	if (cn_type(s) != CONFIG_TYPE_STRING)
		return cf_fail_type(ctx, s, "a string in double quotes");
	*out = cn_string(s);
	return 0;
}

int cf_read_enum(load_ctx *ctx, const cnode *s, const char *const *names,
		 int *out)
{
	const char *v = NULL;
	char key[256], shown[160], list[160];

	if (cf_read_string(ctx, s, &v) < 0)
		return -1;
	for (int i = 0; names[i]; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	cf_key_path(s, key, sizeof(key));
	rb_config_quote(v, shown, sizeof(shown));
	join_names(names, "\"", list, sizeof(list));
	return cf_fail_at(ctx, s, "%s = \"%s\" is not valid: must be %s (%s)",
			  key, shown, list, FIX_HINT);
}

int cf_require_group(load_ctx *ctx, const cnode *s, const char *expected)
{
	if (cn_type(s) != CONFIG_TYPE_GROUP)
		return cf_fail_type(ctx, s, expected);
	return 0;
}

int cf_check_range(load_ctx *ctx, const int_value *iv, long long min,
		   long long max, const char *unit)
{
	iv_text t;

	if (!iv->overflow && iv->v >= min && iv->v <= max)
		return 0;
	return cf_fail_at(ctx, iv->s,
			  "%s = %s is out of range: must be %lld..%lld%s (%s)",
			  cf_iv_describe(iv, &t)->key, t.shown, min, max, unit,
			  FIX_HINT);
}
